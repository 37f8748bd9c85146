"""Private bounds ("auto"): exact utilities, sensitivities, noise scales, DP of the output law, audit.

The bound mechanisms are exponential mechanisms over public grids, so their
output distribution is explicit: the tests compute it exactly on
neighbouring data sets (add/remove one row) and check the privacy-loss ratio
of every output against the claim, beside the sensitivity and scale checks
and a statistical audit.
"""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget, _bounds
from sklearn_dp._bounds import (
    CENTER_GRID,
    GRID,
    LABEL_WINDOW,
    SIGNED_PREFERENCE,
    capped_utilities,
    center_candidates,
    center_counts_on,
    center_utilities,
    center_utilities_from_counts,
    planned_events,
    release_center,
    release_range,
    release_upper_bound,
    row_linf_norms,
    signed_magnitude_counts,
    upper_bound_utilities,
)
from sklearn_dp._data import row_l2_norms
from sklearn_dp.accounting import EXPONENTIAL_MECHANISM, PureEpsilonDpEvent, epsilon_of_event
from sklearn_dp.testing import audit_mechanism, trace_releases


def brute_upper_utilities(scores, n_public, window=None):
    """The utility of the module docstring, written out candidate by candidate."""
    scores = np.asarray(scores, dtype=float)
    window = _bounds.WINDOW if window is None else window
    K = GRID.size
    out = np.empty(K)
    for k, b in enumerate(GRID):
        clipped = np.sum(scores > b)
        small = np.sum(scores < b / window)
        out[k] = -(clipped + small) - _bounds.TILT * n_public * k / K
    return out


def brute_center_utilities(values):
    values = np.asarray(values, dtype=float)
    return np.array([-abs(np.sum(values <= c) - values.size / 2) for c in CENTER_GRID])


def em_log_probabilities(utilities, scale):
    from scipy.special import logsumexp

    z = np.asarray(utilities, dtype=float) / scale
    return z - logsumexp(z)


def em_probabilities(utilities, scale):
    return np.exp(em_log_probabilities(utilities, scale))


SCORES = st.lists(
    st.one_of(
        st.floats(0, 1e12, allow_nan=False),
        st.sampled_from([0.0, 1e-300, 5e-324, 1e-8, 1.0, 1e8, 1e300, math.inf]),
    ),
    min_size=0,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(scores=SCORES, n_public=st.floats(0, 1e4), window=st.sampled_from([None, 2.0, 4.0]))
def test_upper_bound_utilities_are_exact(scores, n_public, window):
    np.testing.assert_allclose(
        upper_bound_utilities(scores, n_public, window=window),
        brute_upper_utilities(scores, n_public, window),
        rtol=1e-12,
    )


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-1e12, 1e12), max_size=30))
def test_center_utilities_are_exact(values):
    np.testing.assert_allclose(center_utilities(values), brute_center_utilities(values))


@settings(max_examples=100, deadline=None)
@given(
    scores=SCORES,
    row=SCORES.map(lambda s: s[:1] or [0.0]),
    # Negative: the lean to larger bounds at low evidence (tilt_weight).
    n_public=st.floats(-1e4, 1e4),
    window=st.sampled_from([1.5, 2.0, 4.0, 10.0]),
)
def test_upper_bound_utility_sensitivity_one_and_monotone(scores, row, n_public, window):
    # Adding a row (the public count is the same: a released value) lowers
    # every utility by 0 or 1: sensitivity 1, monotone (for any window > 1).
    before = upper_bound_utilities(scores, n_public, window=window)
    after = upper_bound_utilities(list(scores) + row, n_public, window=window)
    change = after - before
    assert np.all(change <= 1e-9) and np.all(change >= -1 - 1e-9)


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.floats(-1e12, 1e12), max_size=30), row=st.floats(-1e300, 1e300))
def test_center_utility_sensitivity_one_half(values, row):
    change = center_utilities(list(values) + [row]) - center_utilities(values)
    assert np.max(np.abs(change)) <= 0.5 + 1e-12


@pytest.mark.parametrize("epsilon", [0.05, 0.5, 2.0])
def test_releases_go_through_the_gateway_with_exact_scales(epsilon):
    rng = np.random.default_rng(0)
    scores = rng.lognormal(size=50)
    with trace_releases() as trace:
        bound = release_upper_bound(scores, epsilon=epsilon, n_public=50.0, rng=rng, label="x")
        center = release_center(scores, epsilon=epsilon, rng=rng, label="c")
    upper, middle = trace.releases
    assert upper.mechanism == middle.mechanism == "exponential"
    # Monotone utility of sensitivity 1: scale 1 / epsilon.
    assert upper.sensitivity == 1.0 and upper.scale == pytest.approx(1.0 / epsilon, rel=1e-15)
    np.testing.assert_array_equal(upper.value, upper_bound_utilities(scores, 50.0))
    assert bound.value == GRID[upper.output]
    # Median: sensitivity 1/2, not monotone: scale 2 * (1/2) / epsilon.
    assert middle.sensitivity == 0.5 and middle.scale == pytest.approx(1.0 / epsilon, rel=1e-15)
    assert center.value == CENTER_GRID[middle.output]
    assert bound.events == [PureEpsilonDpEvent(epsilon, f"{EXPONENTIAL_MECHANISM}: x")]
    assert center.events == [PureEpsilonDpEvent(epsilon, f"{EXPONENTIAL_MECHANISM}: c")]


def test_infinite_epsilon_is_the_argmax_without_event():
    scores = np.linspace(1.0, 3.0, 100)
    bound = release_upper_bound(scores, epsilon=math.inf, n_public=100, rng=None, label="x")
    assert bound.events == [] and 3.0 <= bound.value <= 3.0 * 10 ** (1 / 8)


def test_output_law_matches_the_claimed_probabilities():
    # 20000 draws against exp(epsilon * u) / Z: the noise scale is the claimed one.
    rng = np.random.default_rng(1)
    scores = rng.lognormal(size=30)
    epsilon = 0.3
    expected = em_probabilities(upper_bound_utilities(scores, 30.0), 1.0 / epsilon)
    draws = [
        release_upper_bound(scores, epsilon=epsilon, n_public=30.0, rng=rng, label="x").value
        for _ in range(20000)
    ]
    counts = np.array([np.sum(np.asarray(draws) == b) for b in GRID])
    keep = expected * 20000 >= 5
    observed = np.append(counts[keep], counts[~keep].sum())
    wanted = np.append(expected[keep], expected[~keep].sum()) * 20000
    if wanted[-1] == 0:
        observed, wanted = observed[:-1], wanted[:-1]
    assert stats.chisquare(observed, wanted).pvalue > 1e-3


HOSTILE_SCORES = [0.0, 5e-324, 1e-9, 1.0, 3.0, 1e6, 1e9, 1e300, math.inf]


@pytest.mark.parametrize("hostile", HOSTILE_SCORES)
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("n", [1, 5, 200])
@pytest.mark.parametrize("window", [2.0, 10.0])
def test_upper_bound_is_epsilon_dp_and_bounded_range_exactly(hostile, epsilon, n, window):
    # The exact output law on D and on D plus one hostile row: every
    # log-ratio within [-epsilon, epsilon], and its range at most epsilon
    # (epsilon-bounded range, hence epsilon^2 / 8-zCDP).
    rng = np.random.default_rng(n)
    scores = rng.lognormal(mean=0.5, sigma=1.0, size=n)
    # A released count, the same on both (adaptive composition); below the
    # tilt's evidence the public lean to larger bounds.
    n_public = _bounds.tilt_weight(float(n), epsilon)
    log_p = em_log_probabilities(
        upper_bound_utilities(scores, n_public, window=window), 1.0 / epsilon
    )
    log_q = em_log_probabilities(
        upper_bound_utilities(np.append(scores, hostile), n_public, window=window), 1.0 / epsilon
    )
    ratio = log_p - log_q
    assert np.max(np.abs(ratio)) <= epsilon * (1 + 1e-9)
    assert np.max(ratio) - np.min(ratio) <= epsilon * (1 + 1e-9)


@pytest.mark.parametrize("hostile", [-1e300, -5.0, 0.0, 1.0, 1e12])
@pytest.mark.parametrize("epsilon", [0.1, 1.0])
def test_center_is_epsilon_dp_exactly(hostile, epsilon):
    rng = np.random.default_rng(0)
    values = rng.normal(3.0, 2.0, size=21)
    log_p = em_log_probabilities(center_utilities(values), 1.0 / epsilon)
    log_q = em_log_probabilities(center_utilities(np.append(values, hostile)), 1.0 / epsilon)
    assert np.max(np.abs(log_p - log_q)) <= epsilon * (1 + 1e-9)


def test_release_range_spends_a_third_on_each_part_with_enough_evidence():
    rng = np.random.default_rng(0)
    y = rng.normal(300.0, 50.0, size=2000)
    with trace_releases() as trace:
        center, width, events = release_range(y, epsilon=0.6, n_public=2000.0, rng=rng, label="r")
    assert [r.label for r in trace.releases] == ["r (magnitude)", "r (centre)", "r (half-width)"]
    assert [r.scale for r in trace.releases] == [pytest.approx(1 / 0.2)] * 3
    assert all(r.sensitivity == s for r, s in zip(trace.releases, (1.0, 0.5, 1.0)))
    # One event of the whole epsilon: three pure epsilon/3 releases compose to it.
    assert [(e.epsilon, e.mechanism) for e in events] == [
        (pytest.approx(0.6), "exponential mechanism: r")
    ]
    magnitude = GRID[trace.releases[0].output]
    # The magnitude bounds |y|; the centre is a median among the centres within it.
    np.testing.assert_array_equal(trace.releases[0].value, upper_bound_utilities(np.abs(y), 2000.0))
    candidates = center_candidates(magnitude)
    assert np.all(np.abs(candidates) <= magnitude) and candidates.size > 100
    assert center == candidates[trace.releases[1].output]
    np.testing.assert_array_equal(
        trace.releases[1].value,
        np.abs(np.searchsorted(np.sort(y), candidates, "right") - 1000.0) * -1,
    )
    # About 2 standard deviations (see the module docstring of _bounds).
    assert 200 < center < 400 and 80 < width < 1000
    # The half-width bounds the distances to the released centre, up to M + |c|.
    np.testing.assert_array_equal(
        trace.releases[2].value,
        capped_utilities(upper_bound_utilities(np.abs(y - center), 2000.0), magnitude + center),
    )


def test_tilt_weight_is_the_count_from_the_tilt_evidence_and_a_lean_below():
    assert _bounds.TILT_MIN_EVIDENCE == 30.0 and _bounds.LOW_EVIDENCE_LEAN == 4.0
    assert _bounds.tilt_weight(300.0, 0.1) == 300.0  # 30 rows times epsilon
    assert _bounds.tilt_weight(300.0, math.inf) == 300.0
    lean = _bounds.tilt_weight(299.0, 0.1)
    assert lean == pytest.approx(-4.0 / (0.5 * 0.1))
    # The public term of the utilities rises by LOW_EVIDENCE_LEAN temperatures across the grid.
    utilities = upper_bound_utilities([], lean)
    assert 0.1 * (utilities[-1] - utilities[0]) == pytest.approx(4.0 * (GRID.size - 1) / GRID.size)


def _raw_diabetes_norms():
    from sklearn.datasets import load_diabetes

    return row_l2_norms(load_diabetes(return_X_y=True, scaled=False)[0][:309])


@pytest.mark.parametrize("epsilon", [0.03, 0.1])
def test_regressor_row_bound_is_tilted_only_from_the_tilt_evidence(epsilon):
    norms = _raw_diabetes_norms()
    X = np.diag(norms)  # rows with these norms
    with trace_releases() as trace:
        for lean in (True, False):
            _bounds.release_row_norm_bound(
                X,
                epsilon=epsilon,
                n_public=309.0,
                rng=np.random.default_rng(0),
                window=4.0,
                lean=lean,
            )
    release, unleaning = trace.releases
    assert release.sensitivity == 1.0 and release.scale == pytest.approx(1.0 / epsilon)
    k = np.arange(GRID.size) / GRID.size
    counts = np.array([np.sum(norms > b) + np.sum(norms < b / 4.0) for b in GRID])
    if 309 * epsilon < _bounds.TILT_MIN_EVIDENCE:
        expected = -counts + _bounds.LOW_EVIDENCE_LEAN * k / epsilon
    else:
        expected = -counts - _bounds.TILT * 309.0 * k
    np.testing.assert_allclose(release.value, expected, rtol=1e-12, atol=1e-9)
    # Without the lean (classifiers, PCA) the tilt at every evidence.
    np.testing.assert_allclose(
        unleaning.value, -counts - _bounds.TILT * 309.0 * k, rtol=1e-12, atol=1e-9
    )


def test_row_norm_bound_at_low_evidence_rarely_falls_below_the_rows():
    """Raw diabetes at 9 rows times epsilon: the tilt drew bounds of 1e-5 against norms of 300."""
    norms = _raw_diabetes_norms()
    epsilon, n_public = 0.03, 309.0
    far_below = GRID < norms.min() / 10

    def law(weight):
        utilities = upper_bound_utilities(norms, weight, window=4.0)
        return em_probabilities(utilities, 1.0 / epsilon)

    assert law(n_public)[far_below].sum() > 0.015  # the tilt to smaller bounds
    leaning = law(_bounds.tilt_weight(n_public, epsilon))
    assert leaning[far_below].sum() < 0.001
    assert leaning[GRID > 10 * norms.max()].sum() < 0.005


def test_center_candidates_lie_within_the_magnitude():
    for magnitude in (1e-9, 0.37, 250.0, 1e12):
        candidates = center_candidates(magnitude)
        assert 0.0 in candidates
        assert np.all(np.abs(candidates) <= magnitude)
        np.testing.assert_array_equal(candidates, -candidates[::-1])
    # Most candidates are small: a centre released without a clear median lands near 0.
    candidates = center_candidates(250.0)
    assert np.mean(np.abs(candidates) < 25.0) > 0.85


def test_capped_utilities_keep_the_candidates_up_to_the_cap():
    utilities = -np.arange(GRID.size, dtype=float)
    capped = capped_utilities(utilities, 10.0)
    np.testing.assert_array_equal(capped, utilities[GRID <= 10.0])
    # A cap below the grid keeps the smallest candidate.
    np.testing.assert_array_equal(capped_utilities(utilities, 0.0), utilities[:1])


def test_label_range_never_releases_a_range_far_beyond_the_magnitude():
    """A centre far off the labels is what gave a half-width of 1e6 on labels in the hundreds."""
    rng = np.random.default_rng(0)
    y = rng.uniform(25.0, 346.0, size=300)
    for seed in range(100):
        magnitude_rng = np.random.default_rng(seed)
        with trace_releases() as trace:
            center, width, _ = release_range(
                y, epsilon=0.4, n_public=300.0, rng=magnitude_rng, label="labels"
            )
        magnitude = GRID[trace.releases[0].output]
        assert abs(center) <= magnitude
        assert width <= magnitude + abs(center)


def test_release_range_below_the_refine_evidence_is_one_signed_magnitude():
    rng = np.random.default_rng(0)
    y = rng.uniform(25.0, 346.0, size=309)
    epsilon = 0.05  # 309 rows x 0.05 = 15.5 < RANGE_REFINE_EVIDENCE
    with trace_releases() as trace:
        center, width, events = release_range(
            y, epsilon=epsilon, n_public=309.0, rng=rng, label="r", window=LABEL_WINDOW
        )
    (release,) = trace.releases
    assert release.label == "r (signed magnitude)"
    assert release.mechanism == "exponential"
    # The whole epsilon on one monotone, sensitivity-1 utility: scale 1 / epsilon.
    assert release.sensitivity == 1.0 and release.scale == pytest.approx(1 / epsilon)
    assert [(e.epsilon, e.mechanism) for e in events] == [
        (pytest.approx(epsilon), "exponential mechanism: r")
    ]
    # 15.5 rows times epsilon: below LOW_RANGE_EVIDENCE, the wider window.
    counts = signed_magnitude_counts(y, window=_bounds.LOW_EVIDENCE_WINDOW)
    expected = -counts.astype(float)
    expected[0] -= SIGNED_PREFERENCE * 309.0
    np.testing.assert_array_equal(release.value, expected.ravel())
    sign, k = divmod(release.output, GRID.size)
    assert (center, width) == [
        (0.0, GRID[k]),
        (GRID[k] / 2, GRID[k] / 2),
        (-GRID[k] / 2, GRID[k] / 2),
    ][sign]


def test_signed_magnitude_window_widens_below_the_low_range_evidence():
    assert _bounds.LOW_RANGE_EVIDENCE == 20.0
    assert _bounds.LOW_EVIDENCE_WINDOW == 6.0
    assert _bounds.signed_magnitude_window(309.0, 0.05, LABEL_WINDOW) == 6.0
    assert _bounds.signed_magnitude_window(400.0, 0.05, LABEL_WINDOW) == LABEL_WINDOW
    y = np.random.default_rng(0).uniform(25.0, 346.0, size=400)
    with trace_releases() as trace:
        release_range(
            y,
            epsilon=0.1,
            n_public=400.0,
            rng=np.random.default_rng(0),
            label="r",
            window=LABEL_WINDOW,
        )
    (release,) = trace.releases  # 40 rows times epsilon: one release, the labels' window
    counts = signed_magnitude_counts(y, window=LABEL_WINDOW).astype(float)
    counts[0] += SIGNED_PREFERENCE * 400.0
    np.testing.assert_array_equal(release.value, -counts.ravel())


def test_signed_magnitude_counts_each_side():
    v = np.array([-30.0, -2.0, 0.0, 1.0, 5.0, 50.0])
    counts = signed_magnitude_counts(v, window=4.0)
    k = int(np.searchsorted(GRID, 10.0))  # b = 10, b / 4 = 2.5
    b = GRID[k]
    assert b == pytest.approx(10.0)
    # [-10, 10]: |v| > 10 (-30, 50), |v| < 2.5 (-2, 0, 1).
    assert counts[0, k] == 5
    # [0, 10]: v > 10 (50), v < 2.5 (-30, -2, 0, 1).
    assert counts[1, k] == 5
    # [-10, 0]: v < -10 (-30), v > -2.5 (-2, 0, 1, 5, 50).
    assert counts[2, k] == 6
    # Labels of one sign: the one-signed range clips none and counts as [-b, b] does.
    positive = np.random.default_rng(0).uniform(25.0, 346.0, 300)
    counts = signed_magnitude_counts(positive, window=4.0)
    np.testing.assert_array_equal(counts[1], counts[0])
    # [-b, 0] holds none of them: every row lies above -b / 4.
    np.testing.assert_array_equal(counts[2], 300)


@pytest.mark.parametrize("hostile", [-1e300, -3.0, 0.0, 1e-300, 7.0, 1e300])
def test_signed_magnitude_is_epsilon_dp_exactly(hostile):
    """Sensitivity 1 and monotone: adding a row lowers each utility by 0 or 1."""
    values = np.random.default_rng(1).normal(2.0, 5.0, size=31)
    before = signed_magnitude_counts(values, window=4.0)
    after = signed_magnitude_counts(np.append(values, hostile), window=4.0)
    moved = after - before
    assert set(np.unique(moved).tolist()) <= {0, 1}
    epsilon = 0.7
    log_p = em_log_probabilities(-before.ravel().astype(float), 1.0 / epsilon)
    log_q = em_log_probabilities(-after.ravel().astype(float), 1.0 / epsilon)
    assert np.max(np.abs(log_p - log_q)) <= epsilon * (1 + 1e-9)


def test_label_range_at_low_evidence_covers_labels_in_the_hundreds():
    """Labels in 25..346 at 309 rows x 0.0525: three releases of a third missed them in most fits."""
    y = np.random.default_rng(0).uniform(25.0, 346.0, size=309)
    covered = 0
    for seed in range(60):
        center, width, _ = release_range(
            y,
            epsilon=0.0525,
            n_public=309.0,
            rng=np.random.default_rng(seed),
            label="r",
            window=LABEL_WINDOW,
        )
        assert width < 1e4
        covered += np.mean(np.abs(y - center) <= width) > 0.5
    assert covered >= 55


def test_label_range_is_epsilon_dp_in_each_part():
    """Each release is an exponential mechanism over public candidates (given the releases before)."""
    values = np.random.default_rng(0).normal(3.0, 2.0, size=21)
    hostile = 1e6
    candidates = center_candidates(10.0)
    for utility in (
        lambda v: center_utilities_from_counts(*center_counts_on(v, candidates)),
        lambda v: capped_utilities(upper_bound_utilities(np.abs(v - 3.0), 21.0), 13.0),
    ):
        before, after = utility(values), utility(np.append(values, hostile))
        # The same candidates on both data sets (the cap is public).
        assert before.shape == after.shape
        assert np.max(np.abs(before - after)) <= 1.0
    # The centre's utilities move by at most 1/2 per added row, as release_center_on declares.
    a = center_utilities_from_counts(*center_counts_on(values, candidates))
    b = center_utilities_from_counts(*center_counts_on(np.append(values, hostile), candidates))
    assert np.max(np.abs(a - b)) <= 0.5


def test_row_linf_norms_dense_and_sparse():
    import scipy.sparse as sp

    X = np.array([[1.0, -5.0, 0.0], [0.0, 0.0, 0.0], [-7.0, 2.0, 3.0]])
    np.testing.assert_array_equal(row_linf_norms(X), [5.0, 0.0, 7.0])
    np.testing.assert_array_equal(row_linf_norms(sp.csr_matrix(X)), [5.0, 0.0, 7.0])
    assert row_linf_norms(np.zeros((2, 0))).tolist() == [0.0, 0.0]


def test_audit_of_the_bound_mechanism_stays_below_the_claim():
    # D: no rows; D': one row of norm 1e4.  On D the output is nearly
    # uniform; on D' every candidate outside [1e4, 1e5) loses one unit of
    # utility, so P(1e4 <= bound < 1e5) rises by about e^epsilon: the
    # statistic is that event.  Positive control: three times less noise.
    epsilon = 1.0

    def statistic(bound):
        return 1.0 if 1e4 <= bound < 1e5 else 0.0

    def gateway(with_canary, seed):
        rng = np.random.default_rng(seed)
        scores = np.array([1e4]) if with_canary else np.zeros(0)
        return statistic(
            release_upper_bound(scores, epsilon=epsilon, n_public=1.0, rng=rng, label="x").value
        )

    def under_noised(with_canary, seed):
        rng = np.random.default_rng(seed)
        scores = np.array([1e4]) if with_canary else np.zeros(0)
        utilities = upper_bound_utilities(scores, 1.0)
        index = int(np.argmax(3.0 * epsilon * utilities + rng.gumbel(size=utilities.shape)))
        return statistic(GRID[index])

    result = audit_mechanism(gateway, claimed_epsilon=epsilon, delta=0.0, n_runs=4000)
    assert result.epsilon_lower_bound <= epsilon
    assert result.epsilon_lower_bound > 0.3  # the audit has power at the claim's scale
    control = audit_mechanism(under_noised, claimed_epsilon=epsilon, delta=0.0, n_runs=4000)
    assert control.epsilon_lower_bound > epsilon


# --------------------------------------------------------------------------
# Estimators with "auto" bounds
# --------------------------------------------------------------------------


def _classification(n=400, scale=1000.0):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) * scale + scale
    y = (X[:, 0] > scale).astype(int)
    return X, y


def test_logistic_auto_bound_is_released_and_accounted():
    X, y = _classification()
    budget = PrivacyBudget(2.0, 1e-5)
    with trace_releases() as trace:
        model = DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], budget=budget, random_state=0, feature_scaling=False
        ).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert labels[:2] == ["row count", "row norm bound"]
    bound = trace.releases[1]
    epsilon_rest = 1.0
    share = _bounds.BOUNDS_EPSILON_FRACTION * epsilon_rest
    assert bound.scale == pytest.approx(1.0 / share) and bound.sensitivity == 1.0
    np.testing.assert_array_equal(
        bound.value,
        upper_bound_utilities(
            row_l2_norms(X), trace.releases[0].used, window=_bounds.CLASSIFIER_ROW_WINDOW
        ),
    )
    assert model.data_norm_ == GRID[bound.output]
    assert model.intercept_scaling_ == model.data_norm_
    assert model.feature_bound_ is None
    events = model.dp_event_.events
    assert events[1] == PureEpsilonDpEvent(share, f"{EXPONENTIAL_MECHANISM}: row norm bound")
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert [e.status for e in budget.ledger] == ["completed"]
    assert planned_events(("data_norm", False), (share, 0.0)) == [events[1]]
    # Raw features in the thousands: the old default (data_norm=1) clipped
    # every row to nothing; the released bound is of the rows' size.
    assert 1e3 < model.data_norm_ < 1e5


def test_given_bounds_cost_nothing_and_release_nothing():
    X, y = _classification(scale=1.0)
    with trace_releases() as trace:
        model = DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], data_norm=2.0, random_state=0
        ).fit(X, y)
    assert [r.label for r in trace.releases][:1] == ["row count"]
    assert all("bound" not in r.label for r in trace.releases)
    assert model.data_norm_ == 2.0 and model.intercept_scaling_ == 2.0
    assert not any(isinstance(e, PureEpsilonDpEvent) for e in model.dp_event_.events)


def test_regressor_auto_label_range_centres_and_scales_labels():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    y = 250.0 + X @ np.array([30.0, -20.0, 10.0, 0.0]) + rng.normal(0, 5, size=3000)
    with trace_releases() as trace:
        model = DPSCORegressor(epsilon=2.0, random_state=0, feature_scaling=False).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert labels[:5] == [
        "row count",
        "row norm bound",
        "label range (magnitude)",
        "label range (centre)",
        "label range (half-width)",
    ]
    share = _bounds.LABEL_RANGE_EPSILON_FRACTION * 2.0
    for release in trace.releases[2:5]:
        assert release.scale == pytest.approx(3.0 / share)
    n_public = trace.releases[0].used
    np.testing.assert_array_equal(
        trace.releases[2].value,
        upper_bound_utilities(np.abs(y), n_public, window=_bounds.LABEL_WINDOW),
    )
    magnitude = GRID[trace.releases[2].output]
    candidates = center_candidates(magnitude)
    np.testing.assert_array_equal(
        trace.releases[3].value, center_utilities_from_counts(*center_counts_on(y, candidates))
    )
    spread = np.abs(y - model.y_center_)
    np.testing.assert_array_equal(
        trace.releases[4].value,
        capped_utilities(
            upper_bound_utilities(spread, n_public, window=_bounds.LABEL_WINDOW),
            magnitude + abs(model.y_center_),
        ),
    )
    assert model.y_center_ == candidates[trace.releases[3].output]
    assert model.y_bound_ == GRID[trace.releases[4].output]
    assert 150 < model.y_center_ < 350 and model.y_bound_ < 1000
    assert model.score(X, y) > 0.8
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 2.0 + 1e-9
    # Labels in natural units: the old default y_bound=1 clipped every label.
    old = DPSCORegressor(epsilon=2.0, data_norm=1.0, y_bound=1.0, random_state=0).fit(X, y)
    assert old.score(X, y) < 0


def test_lasso_auto_feature_bound_is_one_release():
    rng = np.random.default_rng(0)
    X = rng.uniform(-30, 30, size=(2000, 5))
    y = X[:, 0] / 30 + 0.1 * rng.normal(size=2000)
    with trace_releases() as trace:
        model = DPLasso(epsilon=2.0, radius=0.1, random_state=0).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert labels[:5] == [
        "row count",
        "feature bound",
        "label range (magnitude)",
        "label range (centre)",
        "label range (half-width)",
    ]
    np.testing.assert_array_equal(
        trace.releases[1].value,
        upper_bound_utilities(
            np.max(np.abs(X), axis=1), trace.releases[0].used, window=_bounds.REGRESSOR_ROW_WINDOW
        ),
    )
    assert np.all(model.feature_bound_ == GRID[trace.releases[1].output])
    assert 20 < model.feature_bound_[0] < 300


def test_zcdp_budget_reserves_the_bound_release():
    # The bound's epsilon is known before the data: a zCDP budget charges
    # its epsilon^2 / 8 in the reservation, and the completed event costs no more.
    from sklearn_dp.accounting import zcdp_rho

    X, y = _classification()
    budget = PrivacyBudget(5.0, 1e-5, composition="zcdp")
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget, random_state=0).fit(
        X, y
    )
    entry = budget.ledger[0]
    assert entry.status == "completed"
    assert entry.rho == pytest.approx(zcdp_rho(model.dp_event_), rel=1e-9)


# --------------------------------------------------------------------------
# Without an intercept no label centre is released
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: DPSCORegressor(fit_intercept=False, random_state=0),
        lambda: DPLasso(fit_intercept=False, alpha=0.1, random_state=0),
    ],
)
def test_no_intercept_means_no_released_label_centre(make):
    """fit_intercept=False releases only the label half-width; intercept_ stays 0."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + 50.0
    model = make().fit(X, y)
    assert model.intercept_ == 0.0 and model.y_center_ == 0.0
    np.testing.assert_array_equal(model.predict(X), X @ model.coef_)
    labels = [e for e in model.dp_event_.events if "label range" in getattr(e, "mechanism", "")]
    assert [e.mechanism.split(": ")[-1] for e in labels] == ["label range (half-width)"]


def test_small_regression_at_a_small_epsilon_is_never_a_catastrophe():
    """A label centre released far off the labels scored R^2 in the millions below zero."""
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    X, y = load_diabetes(return_X_y=True)
    scores = []
    for seed in range(10):
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = DPSCORegressor(epsilon=0.5, random_state=seed).fit(X_train, y_train)
        assert abs(model.y_center_) + model.y_bound_ < 1e4
        scores.append(model.score(X_test, y_test))
    assert min(scores) > -10
