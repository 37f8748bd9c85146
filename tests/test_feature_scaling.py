"""Per-feature scaling (``feature_scaling``): releases, the standardised design, the fit.

The per-feature releases are exponential mechanisms over public grids: their
utilities are checked against a brute-force count, their output law exactly
on neighbouring data (add/remove one row), their noise scales through the
gateway's trace, and their events against the planned ones.  The vector
releases of many features (a histogram of magnitudes, the clipped sums and
sums of squares) likewise: their exact values, sensitivities, noise and
events.  The
standardised design is checked product by product against the matrix it
stands for; the fit against scikit-learn without noise.
"""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.preprocessing import StandardScaler

from sklearn_dp import DPLogisticRegression, DPSCORegressor, PrivacyBudget, _bounds, _feature_scales
from sklearn_dp._bounds import GRID, WINDOW
from sklearn_dp._feature_scales import (
    CENTERED_NOISE_FACTOR,
    FEATURE_GRID,
    FEATURE_HALF_WIDTH_WINDOW,
    FEATURE_PRIOR,
    FEATURE_TILT,
    FEATURE_UNIT_MAGNITUDE,
    MAGNITUDE_EDGES,
    SCALE_REACH,
    SCALES_DELTA_FRACTION,
    VECTOR_MIN_FEATURES,
    centered_count_noise,
    centered_scale_events,
    centered_scale_multiplier,
    feature_center_candidates,
    feature_scale_utilities,
    planned_scale_events,
    release_centered_scales,
    release_feature_scales,
)
from sklearn_dp._protocol import COUNT_EPSILON_FRACTION
from sklearn_dp._scaled_design import (
    scaled_design,
    standardized_norms,
    to_caller_units,
    to_fit_units,
)
from sklearn_dp.accounting import (
    EXPONENTIAL_MECHANISM,
    PureEpsilonDpEvent,
    accountant_epsilon,
    epsilon_of_event,
    epsilon_of_zcdp,
    largest_share,
    mixture_delta,
)
from sklearn_dp.testing import trace_releases


def _raw_table(n=600, seed=0):
    """Columns in natural units: an income, an offset latitude, a 0/1 flag, a rare category."""
    rng = np.random.default_rng(seed)
    income = rng.lognormal(np.log(30_000), 0.5, n)
    latitude = rng.normal(36.0, 1.5, n)
    flag = (rng.random(n) < 0.4).astype(float)
    rare = (rng.random(n) < 0.03).astype(float)
    X = np.column_stack([income, latitude, flag, rare])
    score = 2.0 * (income - 30_000) / 15_000 - 1.5 * (latitude - 36.0) + flag - 0.5
    return X, score


def brute_feature_utilities(values, n_public, window=WINDOW):
    scores = np.abs(np.asarray(values, dtype=float))
    scores = scores[scores > 0]
    K = GRID.size
    return np.array(
        [
            -(np.sum(scores > b) + np.sum(scores < b / window)) - FEATURE_TILT * n_public * k / K
            for k, b in enumerate(GRID)
        ]
    )


def _prior(size, epsilon):
    """The base measure of the first ``size`` candidates of FEATURE_GRID, in utility units."""
    return -FEATURE_PRIOR * np.abs(np.log10(FEATURE_GRID[:size])) / epsilon


def _log_law(utilities, epsilon):
    from scipy.special import logsumexp

    z = np.asarray(utilities, dtype=float) * epsilon
    return z - logsumexp(z)


# -- the releases ------------------------------------------------------------------


def test_feature_scale_utilities_are_exact_and_ignore_zeros():
    rng = np.random.default_rng(0)
    values = np.concatenate([np.zeros(50), rng.normal(3.0, 2.0, 40)])
    np.testing.assert_allclose(
        feature_scale_utilities(values, 90.0), brute_feature_utilities(values, 90.0)
    )
    # A rare 0/1 column: the zeros do not push the scale below the ones.
    rare = np.r_[np.zeros(990), np.ones(10)]
    assert GRID[np.argmax(feature_scale_utilities(rare, 1000.0))] == 1.0
    # Half-widths: candidates beyond GRID, up to the cap.
    wide = feature_scale_utilities(np.full(10, 3e8), 10.0, cap=4e8)
    assert FEATURE_GRID[np.argmax(wide)] >= 3e8


@pytest.mark.parametrize("hostile", [-1e300, -130.0, -120.0, -119.97, 0.0, 1e300])
def test_interval_centre_utilities_move_by_at_most_one_half(hostile):
    rng = np.random.default_rng(2)
    values = -120.0 + 0.05 * rng.normal(size=200)
    candidates = feature_center_candidates(128.0)
    before = _bounds.interval_center_utilities(*_bounds.center_counts_on(values, candidates))
    after = _bounds.interval_center_utilities(
        *_bounds.center_counts_on(np.append(values, hostile), candidates)
    )
    assert before.shape == (candidates.size - 1,)
    assert np.max(np.abs(before - after)) <= 0.5


def test_narrow_feature_far_from_zero_is_centred_within_one_interval():
    # A longitude near -120 with a spread far below the grid's spacing: the
    # median of single candidates was flat outside the data and drew a
    # centre anywhere in [-2M, 2M]; the interval holding the data wins.
    rng = np.random.default_rng(3)
    X = (-120.0 + 0.05 * rng.normal(size=2000))[:, None]
    scales, _ = release_feature_scales(
        X, epsilon=3.0, n_public=2000.0, rng=np.random.default_rng(4), centered=True
    )
    spacing = 2.0 * scales.clip[0] / _feature_scales.FEATURE_CENTER_STEPS
    assert abs(scales.center[0] + 120.0) <= spacing


def test_two_modes_are_centred_between_them_under_a_wide_magnitude():
    # A longitude of two regions (near -122 and -118): its median lies in
    # the gap.  A magnitude drawn six times too wide (the prior prefers wide
    # bounds where the data do not decide) must still leave a grid fine
    # enough to centre it within a fraction of its spread.
    rng = np.random.default_rng(5)
    north = rng.random(12_000) < 0.5
    values = np.where(north, rng.normal(-122.0, 0.7, 12_000), rng.normal(-118.2, 0.6, 12_000))
    candidates = feature_center_candidates(749.9)
    center = _bounds.release_interval_center(
        *_bounds.center_counts_on(values, candidates),
        candidates,
        epsilon=math.inf,
        rng=np.random.default_rng(0),
        label="feature scales (centre)",
    ).value
    assert abs(center - np.median(values)) <= 0.5


@pytest.mark.parametrize("hostile", [-1e300, -3.0, 0.0, 1e-300, 2.0, 1e12, 1e300])
@pytest.mark.parametrize("epsilon", [0.05, 1.0])
def test_feature_scale_release_is_epsilon_dp_exactly(hostile, epsilon):
    # With the prior (data-independent) the law on D and on D plus a hostile
    # row differ by at most epsilon in log-probability, for every output.
    rng = np.random.default_rng(1)
    values = rng.normal(5.0, 2.0, 30)
    prior = _prior(GRID.size, epsilon)
    log_p = _log_law(feature_scale_utilities(values, 30.0) + prior, epsilon)
    log_q = _log_law(feature_scale_utilities(np.append(values, hostile), 30.0) + prior, epsilon)
    assert np.max(np.abs(log_p - log_q)) <= epsilon * (1 + 1e-9)


@pytest.mark.parametrize("hostile", [-1e300, -2.0, 0.5, 1.0, 7.0, 1e300])
def test_two_sided_half_width_is_one_epsilon_release(hostile):
    # Given the released centre, a row lies above it, below it or on it: it
    # moves one of the two utilities, so the pair's joint law moves by at
    # most epsilon (parallel composition), not 2 epsilon.
    epsilon, center, magnitude = 0.7, 1.0, 10.0
    rng = np.random.default_rng(2)
    column = np.clip(rng.normal(1.0, 1.5, 25), -magnitude, magnitude)
    cap = 2.0 * magnitude + abs(center)

    def joint(values):
        values = np.clip(values, -magnitude, magnitude)
        laws = [
            _log_law(
                feature_scale_utilities(side, 25.0, cap=cap)
                + _prior(np.sum(FEATURE_GRID <= cap), epsilon),
                epsilon,
            )
            for side in (np.maximum(values - center, 0.0), np.maximum(center - values, 0.0))
        ]
        return laws[0][:, None] + laws[1][None, :]

    ratio = joint(column) - joint(np.append(column, hostile))
    assert np.max(np.abs(ratio)) <= epsilon * (1 + 1e-9)


@pytest.mark.parametrize("centered", [True, False])
def test_release_feature_scales_noise_scales_and_events(centered):
    X, _ = _raw_table(300)
    epsilon = 0.6
    d = X.shape[1]
    parts = 3 if centered else 1
    each = epsilon / (d * parts)
    with trace_releases() as trace:
        scales, events = release_feature_scales(
            X, epsilon=epsilon, n_public=300.0, rng=np.random.default_rng(0), centered=centered
        )
    releases = trace.releases
    # Centred: magnitude, centre, and the two sides (one release together),
    # the last three only for features not on the unit scale already.
    scaled = scales.clip > FEATURE_UNIT_MAGNITUDE if centered else np.ones(d, dtype=bool)
    assert 0 < np.sum(scaled) < d or not centered
    assert len(releases) == d + (3 * np.sum(scaled) if centered else 0)
    for record in releases:
        assert record.mechanism == "exponential"
        assert record.scale == pytest.approx(1.0 / each, rel=1e-12)
        assert record.sensitivity == (0.5 if "centre" in record.label else 1.0)
    magnitudes = [r for r in releases if "magnitude" in r.label]
    for j, record in enumerate(magnitudes):
        expected = feature_scale_utilities(X[:, j], 300.0)
        expected = expected + _prior(GRID.size, each)
        np.testing.assert_allclose(record.value, expected)
        magnitude = FEATURE_GRID[record.output]
        assert scales.clip[j] == (magnitude if scaled[j] else FEATURE_UNIT_MAGNITUDE)
    if centered:
        centres = [r for r in releases if "centre" in r.label]
        for j, record in zip(np.flatnonzero(scaled), centres, strict=True):
            candidates = feature_center_candidates(scales.clip[j])
            assert scales.center[j] == candidates[record.output + 1]
        np.testing.assert_array_equal(scales.scale[~scaled], 1.0)
        np.testing.assert_array_equal(scales.center[~scaled], 0.0)
    else:
        np.testing.assert_array_equal(scales.scale, scales.clip)
        np.testing.assert_array_equal(scales.center, 0.0)
    assert events == planned_scale_events(d, epsilon, centered)
    assert events == [
        dpe.SelfComposedDpEvent(
            PureEpsilonDpEvent(each, f"{EXPONENTIAL_MECHANISM}: feature scales ({part})"), d
        )
        for part in (("magnitude", "centre", "half-width") if centered else ("magnitude",))
    ]
    assert epsilon_of_event(dpe.ComposedDpEvent(events), 0.0) == pytest.approx(epsilon)


def test_half_widths_use_the_tighter_window():
    # A 0/1 column's distances to its centre are one value: with the
    # magnitude's window (10) every candidate up to ten times it would be as
    # good, and a draw would shrink the column's signal as much.
    X, _ = _raw_table(300)
    epsilon, d = 0.6, X.shape[1]
    each = epsilon / (3 * d)
    with trace_releases() as trace:
        scales, _ = release_feature_scales(
            X, epsilon=epsilon, n_public=300.0, rng=np.random.default_rng(1), centered=True
        )
    sides = [r for r in trace.releases if "half-width" in r.label]
    scaled = np.flatnonzero(scales.clip > FEATURE_UNIT_MAGNITUDE)
    assert len(sides) == 2 * scaled.size > 0
    for i, j in enumerate(scaled):
        column = np.clip(X[:, j], -scales.clip[j], scales.clip[j])
        cap = 2.0 * scales.clip[j] + abs(scales.center[j])
        for record, side in zip(
            sides[2 * i : 2 * i + 2],
            (
                np.maximum(column - scales.center[j], 0.0),
                np.maximum(scales.center[j] - column, 0.0),
            ),
        ):
            expected = feature_scale_utilities(
                side, 300.0, window=FEATURE_HALF_WIDTH_WINDOW, cap=cap
            )
            expected = expected + _prior(expected.size, each)
            np.testing.assert_allclose(record.value, expected)
    assert FEATURE_HALF_WIDTH_WINDOW == 4.0 < WINDOW


def test_rare_flag_never_gets_a_scale_that_blows_it_up():
    # Few rows per release: the prior draws large scales, never tiny ones.
    X, _ = _raw_table(200)
    small = []
    for seed in range(20):
        scales, _ = release_feature_scales(
            X[:, 3:], epsilon=0.01, n_public=200.0, rng=np.random.default_rng(seed), centered=True
        )
        small.append(scales.clip[0] < 0.1 or scales.scale[0] < 0.1)
    assert sum(small) <= 2


# -- the standardised design --------------------------------------------------------


def _reference(X, center, scale, clip, geometry, row_bound, intercept):
    Z = np.clip(np.asarray(X.toarray() if sp.issparse(X) else X, float), -clip, clip) - center
    Z = Z / scale
    if geometry == "l2":
        norms = np.linalg.norm(Z, axis=1)
        Z = Z * np.minimum(1.0, row_bound / np.maximum(norms, 1e-300))[:, None]
    if intercept is not None:
        Z = np.hstack([Z, np.full((Z.shape[0], 1), intercept)])
    return Z


@pytest.mark.parametrize("kind", ["dense", "float32", "sparse"])
@pytest.mark.parametrize("geometry", ["l2", "linf"])
@pytest.mark.parametrize("intercept", [None, 1.7])
def test_standardized_design_products_match_the_matrix(kind, geometry, intercept):
    rng = np.random.default_rng(3)
    X = rng.normal([30.0, 0.0, 5.0, 0.0], [5.0, 1.0, 0.1, 1e3], size=(300, 4))
    X[rng.random(X.shape) < 0.3] = 0.0
    X[5] = [1e12, -1e12, 1e30, 0.0]  # far beyond every clip: patched rows
    centered = kind != "sparse" and geometry == "l2"
    center = np.array([30.0, 0.0, 5.0, 0.0]) if centered else np.zeros(4)
    clip = np.array([60.0, 3.0, 6.0, 3e3])
    scale = np.array([10.0, 2.0, 0.3, 2e3]) if centered else clip
    if kind == "sparse":
        X = sp.csr_matrix(X)
    elif kind == "float32":
        X = X.astype(np.float32)
    design, used = scaled_design(
        X,
        center=center,
        scale=scale,
        clip=clip,
        geometry=geometry,
        row_bound=1.5,
        intercept=intercept,
    )
    np.testing.assert_array_equal(used, clip)
    S = _reference(X, center, scale, clip, geometry, 1.5, intercept)
    np.testing.assert_allclose(design.toarray(), S, rtol=1e-6, atol=1e-9)
    # float32 X: scores are float32 products (sums over rows accumulate in float64).
    loose = dict(rtol=1e-4, atol=1e-5) if kind == "float32" else dict(rtol=1e-6, atol=1e-8)
    W = rng.normal(size=(S.shape[1], 2))
    V = rng.normal(size=(S.shape[0], 2))
    weights = rng.uniform(0, 2, S.shape[0])
    np.testing.assert_allclose(design.matmul(W), S @ W, **loose)
    np.testing.assert_allclose(design.matmul(W[:, 0]), S @ W[:, 0], **loose)
    np.testing.assert_allclose(design.rmatmul(V), S.T @ V, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(design.gram(), S.T @ S, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        design.gram(weights), S.T @ (weights[:, None] * S), rtol=1e-6, atol=1e-8
    )
    np.testing.assert_allclose(design.row_norms(), np.linalg.norm(S, axis=1), rtol=1e-6)
    cols = [0, 2] + ([4] if intercept is not None else [])
    block = design.columns(cols)
    block = block.toarray() if sp.issparse(block) else block
    np.testing.assert_allclose(block, S[:, cols], rtol=1e-6, atol=1e-9)
    view = design.column_view(cols)
    np.testing.assert_allclose(view.matmul(W[: len(cols)]), S[:, cols] @ W[: len(cols)], **loose)
    np.testing.assert_allclose(view.row_norms(), np.linalg.norm(S[:, cols], axis=1), rtol=1e-6)
    rows = [5, 0, 17]
    np.testing.assert_allclose(design.rows(rows).toarray(), S[rows], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(design.row_block(10, 40).matmul(W), S[10:40] @ W, **loose)
    materialized = design.materialize()
    assert sp.issparse(materialized) == (kind == "sparse")
    if geometry == "l2":
        assert np.all(np.linalg.norm(S[:, :4], axis=1) <= 1.5 * (1 + 1e-12))
        np.testing.assert_allclose(
            standardized_norms(X, center, scale, clip)[:3],
            np.linalg.norm(_reference(X, center, scale, clip, "linf", 0, None)[:3], axis=1),
        )
    else:
        assert np.all(np.abs(S[:, :4]) <= 1.0 + 1e-12)


def test_centred_sums_over_rows_hold_only_standardised_terms():
    # A column far from zero with a small spread: a centre subtracted from
    # the raw sum (X^T v - c sum(v)) would carry the raw sum's rounding,
    # about n * 2**-53 * m / h, into the result; summing standardised rows
    # keeps the error at the size of the standardised terms.
    rng = np.random.default_rng(0)
    n = 20_000
    X = np.column_stack([1e9 + rng.uniform(-1.0, 1.0, n), rng.normal(size=n)])
    center, scale, clip = np.array([1e9, 0.0]), np.array([1.0, 1.0]), np.array([2e9, 5.0])
    design, _ = scaled_design(
        X, center=center, scale=scale, clip=clip, geometry="l2", row_bound=10.0, intercept=1.0
    )
    V = rng.uniform(-1.0, 1.0, n)
    exact_standardised = np.array(
        [math.fsum((X[:, 0] - 1e9) * V), math.fsum(X[:, 1] * V), math.fsum(V)]
    )
    np.testing.assert_allclose(design.rmatmul(V), exact_standardised, rtol=0, atol=1e-9)


def test_caller_units_are_the_same_model():
    rng = np.random.default_rng(4)
    X = rng.normal([30.0, -120.0], [5.0, 1.0], size=(50, 2))
    center, scale, a = np.array([30.0, -120.0]), np.array([10.0, 3.0]), 2.5
    W = rng.normal(size=(3, 2))
    S = np.hstack([(X - center) / scale, np.full((50, 1), a)])
    raw = to_caller_units(W, center, scale, a, True)
    np.testing.assert_allclose(np.hstack([X, np.full((50, 1), a)]) @ raw, S @ W, rtol=1e-10)
    np.testing.assert_allclose(to_fit_units(raw, center, scale, a, True), W, rtol=1e-10)
    np.testing.assert_allclose(
        to_fit_units(to_caller_units(W[:2], center, scale, a, False), center, scale, a, False),
        W[:2],
    )


# -- the estimators -------------------------------------------------------------------


def test_infinite_epsilon_reaches_the_standardised_non_private_fit():
    X, score = _raw_table(2000)
    y = (score > 0).astype(int)
    model = DPLogisticRegression(epsilon=math.inf, feature_scaling=True, C=1e4).fit(X, y)
    # The same problem without privacy: the rows bounded as the fit bounds
    # them (and as its predictions do), standardised.  The default solver
    # runs a fixed number of Newton steps on this nearly separable table:
    # within 1.5 points of the converged reference.
    bounded = StandardScaler().fit_transform(_bounded_like_fit(model, X))
    reference = LogisticRegression(C=1e4, max_iter=1000).fit(bounded, y)
    assert model.score(X, y) >= reference.score(bounded, y) - 0.015
    regressor = DPSCORegressor(epsilon=math.inf, feature_scaling=True, alpha=1e-6).fit(X, score)
    # The fit also clips the labels to their (noise-free) released range.
    bounded = _bounded_like_fit(regressor, X)
    ridge = Ridge(alpha=1e-6).fit(bounded, score)
    assert regressor.score(X, score) >= ridge.score(bounded, score) - 0.02


def _bounded_like_fit(model, rows):
    """Rows clipped to ``feature_bound_``, then brought to the fit's standardised row bound."""
    clipped = np.clip(rows, -model.feature_bound_, model.feature_bound_)
    offset = clipped - model.feature_center_
    norms = np.linalg.norm(offset / model.feature_scale_, axis=1)
    factor = np.minimum(1.0, model._standardized_row_bound / norms)
    return model.feature_center_ + factor[:, None] * offset


@pytest.mark.parametrize("sparse", [False, True])
def test_predictions_bound_rows_as_the_fit_did(sparse):
    # The model is linear in the rows clipped to feature_bound_ and scaled to
    # the standardised row bound: a row far beyond them must not multiply a
    # standardised coefficient by its raw value.
    X, score = _raw_table(2000)
    y = (score > 0).astype(int)
    classifier = DPLogisticRegression(
        epsilon=math.inf, feature_scaling=True, classes=[0, 1], C=1e4
    ).fit(X, y)
    regressor = DPSCORegressor(epsilon=math.inf, feature_scaling=True, alpha=1e-6).fit(X, score)
    far = X[:50] * 1e6
    far[:5] = X[:5]  # rows within the bounds predict as the linear model
    for model in (classifier, regressor):
        if sparse:
            # Sparse X is never centred: refit so that the centres are 0.
            model = clone(model).fit(sp.csr_matrix(X), y if model is classifier else score)
        rows = sp.csr_matrix(far) if sparse else far
        bounded = _bounded_like_fit(model, far)
        scores = (
            model.decision_function(rows) if hasattr(model, "classes_") else model.predict(rows)
        )
        expected = bounded @ np.ravel(model.coef_) + np.ravel(model.intercept_)
        np.testing.assert_allclose(scores, expected, rtol=1e-10, atol=1e-8)
        inside = X[:5] @ np.ravel(model.coef_) + np.ravel(model.intercept_)
        np.testing.assert_allclose(scores[:5], inside, rtol=1e-10, atol=1e-8)


def test_a_tiny_released_scale_never_makes_predictions_explode():
    # The rare 0/1 column's half-width released as the smallest candidate
    # (what an unlucky draw at few rows per release can give): its ones are
    # huge in standardised units.  The fit scaled those rows down to the row
    # bound; predictions must do the same, not extrapolate by 1e8.
    X, score = _raw_table(3000)
    X_test, score_test = _raw_table(1000, seed=1)
    magnitudes = []
    rare = 3

    def substitute(release):
        if release.mechanism != "exponential":
            return release.value
        ours = "feature scales" in release.label
        if ours and "magnitude" in release.label:
            magnitudes.append(release.label)
            if len(magnitudes) == rare + 1:
                # Drawn above the unit scale, so the column gets a half-width.
                return int(np.searchsorted(FEATURE_GRID, 10.0))
        if ours and "half-width" in release.label and len(magnitudes) == rare + 1:
            return 0
        return int(np.argmax(release.value))

    with trace_releases(substitute=substitute):
        model = DPSCORegressor(epsilon=1.0, feature_scaling=True, random_state=0).fit(X, score)
    assert model.feature_scale_[3] < 1e-6
    assert model.score(X_test, score_test) > 0.5


def _scale_each(d, share, delta_rest, epsilon_rest, bound_shares, centered=True):
    """The per-release epsilon a fit plans, from its documented shares."""
    count = COUNT_EPSILON_FRACTION * epsilon_rest
    remainder = epsilon_rest - count - sum(bound_shares) * epsilon_rest - share
    most = share + _feature_scales.SCALING_FLOOR_PART * remainder
    return _feature_scales.scale_release_epsilon(d, share, centered, delta_rest, count, most)


@pytest.mark.parametrize("d, centered", [(4, True), (13, True), (13, False), (30, True)])
def test_scale_release_epsilon_composes_the_releases_as_zcdp(d, centered):
    share, delta, count = 0.2, 1e-5, 0.05
    releases = d * (3 if centered else 1)
    basic = share / releases
    assert _feature_scales.scale_release_epsilon(d, share, centered) == basic
    assert _feature_scales.scale_release_epsilon(d, share, centered, 0.0, count) == basic
    each = _feature_scales.scale_release_epsilon(d, share, centered, delta, count)
    # Bounded range: each release is each^2 / 8-zCDP (Cesar and Rogers
    # 2021), the count (Laplace) count^2 / 2-zCDP; together they cost the
    # count's epsilon plus the share, converted at delta.
    rho = count**2 / 2 + releases * each**2 / 8
    assert epsilon_of_zcdp(rho, delta) == pytest.approx(count + share, rel=1e-6)
    assert epsilon_of_zcdp(rho, delta) <= count + share
    assert each > basic
    if releases >= 39:
        assert each > 2.5 * basic
    # The cap on the summed epsilons (what a solver planned from released
    # values is certified with), never below basic composition.
    capped = _feature_scales.scale_release_epsilon(d, share, centered, delta, count, 1.5 * share)
    assert releases * capped == pytest.approx(min(releases * each, 1.5 * share))
    assert _feature_scales.scale_release_epsilon(d, share, centered, delta, count, 0.0) == basic


def test_feature_scaling_composed_releases_keep_the_guarantee():
    """The whole event and the basic-composition floor both stay within epsilon."""
    X, score = _raw_table(3000)
    y = (score > 0).astype(int)
    d = X.shape[1]
    for solver in ("dp_gd", "dp_sgd"):
        model = DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], feature_scaling=True, solver=solver, random_state=0
        )
        plan = model._fit_plan(X, y)
        each = _scale_each(d, plan.shares["scales"], 1e-5, 1.0, (0.1, 0.0))
        assert each > plan.shares["scales"] / (3 * d)
        # Basic composition of every part: what certifies a solver whose
        # noise is planned from released values (the floor).
        floor = plan.context["planner"].floor
        basic = plan.shares["count"] + sum(plan.shares["bounds"]) + 3 * d * each
        assert basic + floor == pytest.approx(1.0)
        assert floor >= 0.5 * (1.0 - plan.shares["count"] - 0.1 - plan.shares["scales"])
        model.fit(X, y)
        assert (
            planned_scale_events(d, plan.shares["scales"], True, each)
            == (model.dp_event_.events[1:4])
        )
        assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
        # dp_accounting's own RDP accountant reads the whole event.
        assert math.isfinite(accountant_epsilon(model.dp_event_, 1e-5, "rdp"))


def test_feature_scaling_fit_releases_accounts_and_reports_raw_units():
    X, score = _raw_table(3000)
    y = (score > 0).astype(int)
    budget = PrivacyBudget(2.0, 1e-5)
    with trace_releases() as trace:
        model = DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], feature_scaling=True, budget=budget, random_state=0
        ).fit(X, y)
    labels = [r.label for r in trace.releases]
    d = X.shape[1]
    assert labels[0] == "row count"
    # Four releases per feature, fewer where a released magnitude says the
    # feature has unit scale (it skips its centre and half-width).
    assert d < sum("feature scales" in label for label in labels) <= 4 * d
    assert labels.index("row norm bound") > max(
        i for i, label in enumerate(labels) if "feature scales" in label
    )
    assert [e.status for e in budget.ledger] == ["completed"]
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    share = _bounds.SCALING_EPSILON_FRACTION * 1.0
    each = _scale_each(d, share, 1e-5, 1.0, (0.1, 0.0))
    assert planned_scale_events(d, share, True, each) == model.dp_event_.events[1:4]
    assert model.feature_center_.shape == model.feature_scale_.shape == (d,)
    np.testing.assert_array_equal(model.feature_bound_, model.feature_bound_)
    assert model.data_norm_ == pytest.approx(np.linalg.norm(model.feature_bound_))
    # Raw units: predictions from coef_ and intercept_ as scikit-learn's, on
    # the rows bounded as the fit bounded them.
    assert model.score(X, y) > 0.85
    bounded = _bounded_like_fit(model, X)
    np.testing.assert_allclose(
        model.decision_function(X), bounded @ model.coef_.ravel() + model.intercept_[0]
    )


def test_feature_scaling_with_dp_cd_scales_without_centring():
    X, score = _raw_table(2000)
    y = (score > 0).astype(int)
    with trace_releases() as trace:
        model = DPLogisticRegression(
            epsilon=2.0, classes=[0, 1], solver="dp_cd", feature_scaling=True, random_state=0
        ).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert not any("centre" in label or label == "feature bound" for label in labels)
    np.testing.assert_array_equal(model.feature_center_, 0.0)
    np.testing.assert_array_equal(model.feature_scale_, model.feature_bound_)
    assert model.score(X, y) > 0.6  # well above chance (0.5); one seeded fit


def test_feature_scaling_sparse_weighted_and_warm_start():
    X, score = _raw_table(1500)
    y = (score > 0).astype(int)
    weights = np.random.default_rng(0).uniform(0, 1, X.shape[0])
    model = DPLogisticRegression(
        epsilon=2.0, classes=[0, 1], feature_scaling=True, random_state=0, warm_start=True
    )
    model.fit(sp.csr_matrix(X), y, sample_weight=weights)
    np.testing.assert_array_equal(model.feature_center_, 0.0)  # sparse: never centred
    model.fit(X, y)  # a warm start from the previous raw-unit model
    assert model.score(X, y) > 0.7


def test_few_rows_per_release_fall_back_to_one_bound_from_the_released_count():
    X, score = _raw_table(200)
    y = (score > 0).astype(int)
    kwargs = dict(epsilon=1.0, classes=[0, 1], feature_scaling=True, random_state=0)
    with trace_releases() as trace, pytest.warns(UserWarning, match="fell back to one bound"):
        model = DPLogisticRegression(**kwargs).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert labels == ["row count", "row norm bound"] + [
        label for label in labels[2:] if label not in ("row count", "row norm bound")
    ]
    assert not any("feature scales" in label for label in labels)
    assert not hasattr(model, "feature_scale_")
    # The same event as the scaled branch: the branch is not part of the plan.
    big_X, big_score = _raw_table(20000)
    scaled = DPLogisticRegression(**kwargs).fit(big_X, (big_score > 0).astype(int))
    assert hasattr(scaled, "feature_scale_")
    assert model.dp_event_ == scaled.dp_event_
    assert model.privacy_spent_ == scaled.privacy_spent_


def test_given_bounds_and_dask_keep_the_single_bound():
    X, score = _raw_table(300)
    model = DPSCORegressor(epsilon=1.0, data_norm=1e5, feature_scaling=True, random_state=0)
    with trace_releases() as trace:
        model.fit(X, score)
    assert not any("feature scales" in r.label for r in trace.releases)
    assert not hasattr(model, "feature_scale_")


def test_feature_scaling_refuses_inference_before_the_spend():
    X, score = _raw_table(300)
    budget = PrivacyBudget(1.0, 1e-5)
    model = DPSCORegressor(
        epsilon=1.0,
        solver="dp_ssp",
        feature_scaling=True,
        solver_options={"inference": True},
        budget=budget,
    )
    with pytest.raises(ValueError, match="feature_scaling"):
        model.fit(X, score)
    assert budget.ledger == []


def test_feature_scaling_is_auto_by_default_and_a_public_parameter():
    assert DPLogisticRegression().feature_scaling == "auto"
    assert DPSCORegressor().get_params()["feature_scaling"] == "auto"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception, match="feature_scaling"):
            DPSCORegressor(feature_scaling="yes").fit(*_raw_table(50))


# -- feature_scaling="auto" ------------------------------------------------------------


def _unit_table(n, seed=0):
    """Already-scaled data: standard-normal columns beside one-hot 0/1 columns."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n, 3))
    category = rng.choice(4, n, p=[0.5, 0.3, 0.19, 0.01])
    X = np.column_stack([numeric, np.eye(4)[category]])
    score = numeric @ np.array([1.0, -0.5, 0.3]) + np.array([0.0, 0.5, -0.5, 1.0])[category]
    return X, score


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("epsilon", [0.05, 0.7])
def test_auto_scaling_decision_is_one_laplace_count_of_rows_with_a_large_entry(sparse, epsilon):
    X, _ = _raw_table(500)
    unit, _ = _unit_table(500)
    # Income above the threshold in every row; the rest only here and there.
    X = np.vstack([X[:200], unit[:300, : X.shape[1]]])
    expected = np.count_nonzero(np.any(np.abs(X) > _feature_scales.AUTO_SCALING_MAGNITUDE, axis=1))
    assert expected == 200
    data = sp.csr_matrix(X) if sparse else X
    with trace_releases() as trace:
        decision = _feature_scales.release_needs_scaling(
            data, epsilon=epsilon, n_public=500.0, rng=np.random.default_rng(0)
        )
    (record,) = trace.releases
    assert record.mechanism == "laplace"
    assert record.value == expected
    assert record.sensitivity == 1.0
    assert record.scale == pytest.approx(1.0 / epsilon, rel=1e-12)
    assert decision == (record.output >= _feature_scales.AUTO_SCALING_ROWS * 500.0)
    assert _feature_scales.auto_scaling_event(epsilon) == dpe.LaplaceDpEvent(1.0 / epsilon)
    # Without noise, the exact count decides.
    assert _feature_scales.release_needs_scaling(
        data, epsilon=math.inf, n_public=500.0, rng=None
    ) == (200 >= _feature_scales.AUTO_SCALING_ROWS * 500.0)


def _auto_events(model):
    return [
        e for e in model.dp_event_.events if "feature scales" in repr(e) or "Laplace" in repr(e)
    ]


def test_auto_scaling_keeps_one_bound_on_unit_scale_data_and_pays_the_same():
    X, score = _unit_table(4000)
    raw, raw_score = _raw_table(4000)
    raw = np.column_stack([raw, raw[:, :3]])  # the same number of features
    kwargs = dict(epsilon=1.0, random_state=0)
    with trace_releases() as trace:
        model = DPSCORegressor(**kwargs).fit(X, score)
    labels = [r.label for r in trace.releases]
    scaling = [label for label in labels if "feature scales" in label]
    assert scaling == ["feature scales (rows with a large entry)"]
    assert labels.index(scaling[0]) == labels.index("row count") + 1
    assert not hasattr(model, "feature_scale_")
    assert model.score(X, score) > 0.6
    # The branch is not part of the plan: a raw table of the same shape is
    # scaled, with the same event and spend.
    scaled = DPSCORegressor(**kwargs).fit(raw, raw_score)
    assert hasattr(scaled, "feature_scale_")
    assert scaled.dp_event_ == model.dp_event_
    assert scaled.privacy_spent_ == model.privacy_spent_
    share = _bounds.AUTO_SCALING_EPSILON_FRACTION * (1.0 - 0.0)
    assert model.dp_event_.events[1] == dpe.LaplaceDpEvent(1.0 / share)
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9


def test_auto_scaling_scales_raw_tables_in_the_callers_units():
    X, score = _raw_table(3000)
    y = (score > 0).astype(int)
    with trace_releases() as trace:
        model = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    labels = [r.label for r in trace.releases]
    probe = labels.index("feature scales (rows with a large entry)")
    assert probe < labels.index("feature scales (magnitude)")
    assert model.feature_scale_.shape == (X.shape[1],)
    assert model.score(X, y) > 0.85
    np.testing.assert_allclose(
        model.decision_function(X),
        _bounded_like_fit(model, X) @ model.coef_.ravel() + model.intercept_[0],
    )


@pytest.mark.parametrize("decide", [0.0, 1e6])
def test_auto_scaling_decides_from_the_released_count_only(decide):
    # The released count swapped for a value independent of the data: the
    # decision follows it on raw and unit-scale tables alike.
    def substitute(release):
        if release.label == "feature scales (rows with a large entry)":
            return decide
        if release.mechanism == "exponential":
            return int(np.argmax(release.value))
        return release.value

    for X, score in (_raw_table(3000), _unit_table(3000)):
        with trace_releases(substitute=substitute):
            model = DPSCORegressor(epsilon=1.0, random_state=0).fit(X, score)
        assert hasattr(model, "feature_scale_") == (decide > 0)


def test_auto_scaling_keeps_one_bound_quietly_with_few_rows_or_inference():
    X, score = _raw_table(200)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with trace_releases() as trace:
            model = DPSCORegressor(epsilon=1.0, y_bound=10.0, random_state=0).fit(X, score)
    # The decision is released (every charged noise multiplier has its
    # release), the scales are not: too few rows per release.
    scaling = [r.label for r in trace.releases if "feature scales" in r.label]
    assert scaling == ["feature scales (rows with a large entry)"]
    assert not hasattr(model, "feature_scale_")
    # Inference needs the caller's units: "auto" keeps one bound (True refuses).
    X, score = _raw_table(3000)
    model = DPSCORegressor(
        epsilon=1.0, solver="dp_ssp", solver_options={"inference": True}, random_state=0
    )
    with trace_releases() as trace, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, score)
    assert not any("feature scales" in r.label for r in trace.releases)
    assert hasattr(model, "bse_")


@pytest.mark.parametrize("setting", [True, "auto"])
def test_dp_accounting_reads_the_event_of_a_scaled_fit(setting):
    from sklearn_dp.accounting import accountant_epsilon

    X, score = _raw_table(3000)
    model = DPLogisticRegression(epsilon=1.0, feature_scaling=setting, random_state=0)
    model.fit(X, (score > 0).astype(int))
    assert hasattr(model, "feature_scale_")
    assert accountant_epsilon(model.dp_event_, 1e-5, "pld") <= 1.0 + 1e-3
    # RDP (the pure parts as zCDP) is a valid but looser bound: finite.
    assert math.isfinite(accountant_epsilon(model.dp_event_, 1e-5, "rdp"))


def test_zero_one_column_stays_on_the_unit_scale_with_few_rows_per_release():
    # A 0/1 column's utility is flat over [1, 10) and equally bad elsewhere;
    # with little evidence (rows of ones times epsilon small) the base
    # measure decides, and must keep it near 1 (left as it is, the single
    # row bound's treatment) rather than spread it over the grid's decades,
    # where it is shrunk to nothing or has its ones clipped away.
    rng = np.random.default_rng(3)
    column = (rng.random(3000) < 0.3).astype(float)
    each = 0.003
    with trace_releases() as trace:
        scales, _ = release_feature_scales(
            column[:, None], epsilon=3 * each, n_public=3000.0, rng=rng, centered=True
        )
    (record,) = trace.releases
    law = np.exp(_log_law(record.value, each))
    unit = (FEATURE_GRID[: law.size] >= 1.0) & (FEATURE_GRID[: law.size] <= FEATURE_UNIT_MAGNITUDE)
    assert law[unit].sum() > 0.5
    if scales.clip[0] == FEATURE_UNIT_MAGNITUDE:
        assert (scales.center[0], scales.scale[0]) == (0.0, 1.0)


def test_unit_scale_features_keep_their_units_and_skip_centre_and_half_width():
    # Standard-normal and 0/1 columns need no scaling: they are used as the
    # single row bound uses them (clipped to the public unit magnitude), and
    # only their magnitude is released; the income column is standardised.
    rng = np.random.default_rng(4)
    n = 4000
    X = np.column_stack(
        [rng.normal(size=n), (rng.random(n) < 0.4).astype(float), rng.lognormal(10, 0.5, n)]
    )
    with trace_releases() as trace:
        scales, _ = release_feature_scales(
            X, epsilon=3.0, n_public=float(n), rng=np.random.default_rng(0), centered=True
        )
    np.testing.assert_array_equal(scales.clip[:2], FEATURE_UNIT_MAGNITUDE)
    np.testing.assert_array_equal(scales.scale[:2], 1.0)
    np.testing.assert_array_equal(scales.center[:2], 0.0)
    assert scales.clip[2] > FEATURE_UNIT_MAGNITUDE and scales.center[2] > 1e4
    labels = [r.label for r in trace.releases]
    assert sum("magnitude" in label for label in labels) == 3
    assert sum("centre" in label for label in labels) == 1
    assert sum("half-width" in label for label in labels) == 2
    # Without centres every feature is scaled by its magnitude into [-1, 1].
    scales, _ = release_feature_scales(
        X, epsilon=3.0, n_public=float(n), rng=np.random.default_rng(0), centered=False
    )
    np.testing.assert_array_equal(scales.scale, scales.clip)
    np.testing.assert_array_equal(scales.center, 0.0)


# -- the vector releases of many features (release_centered_scales) --------------------


def _centered_trace(X, multiplier, pure=False, n_public=None, seed=0):
    with trace_releases() as trace:
        scales = release_centered_scales(
            X,
            multiplier=multiplier,
            pure=pure,
            n_public=float(X.shape[0] if n_public is None else n_public),
            rng=np.random.default_rng(seed),
        )
    return scales, trace.releases


def _magnitude_counts(X):
    """Brute force: the counts of each feature's nonzero |x| in the bins of MAGNITUDE_EDGES."""
    edges = np.r_[0.0, MAGNITUDE_EDGES, np.inf]
    counts = np.zeros((X.shape[1], edges.size - 1))
    for j in range(X.shape[1]):
        for value in np.abs(X[:, j]):
            if value > 0:
                counts[j, np.flatnonzero((edges[:-1] <= value) & (value < edges[1:]))[0]] += 1
    return counts


@pytest.mark.parametrize("pure", [False, True])
def test_centred_scales_release_exact_values_sensitivities_and_noise(pure):
    X, _ = _raw_table(300)
    d, multiplier = X.shape[1], 3.0
    scales, (histogram, sums, about) = _centered_trace(X, multiplier, pure)
    # The histogram: a row adds 1 to one bin of each feature (zeros to none).
    np.testing.assert_array_equal(histogram.value, _magnitude_counts(X))
    # Features whose noisy mode is the bin of 1 keep their units.
    mode = np.argmax(histogram.output, axis=1)
    unit = mode == np.searchsorted(MAGNITUDE_EDGES, 1.0, side="right")
    assert unit[2] and not unit[0] and not unit[1]
    top = MAGNITUDE_EDGES[np.minimum(mode + 1, MAGNITUDE_EDGES.size - 1)]
    np.testing.assert_array_equal(scales.clip, np.where(unit, FEATURE_UNIT_MAGNITUDE, top))
    # The sums of w and w^2 of the other features: first w = clip(x / M),
    # then about that centre in units of SCALE_REACH of that spread.
    k = int(np.sum(~unit))
    n = float(X.shape[0])
    floor = centered_count_noise(multiplier, 2 * k, pure) / n
    clipped = np.clip(X[:, ~unit], -top[~unit], top[~unit])

    def moments(record, center, reach):
        w = np.clip((clipped - center) / reach, -1.0, 1.0)
        np.testing.assert_allclose(record.value, np.vstack([w.sum(axis=0), (w * w).sum(axis=0)]))
        mean = np.clip(record.output[0] / n, -1.0, 1.0)
        second = np.clip(record.output[1] / n - mean**2, floor, 1.0)
        return center + reach * mean, reach * np.sqrt(second)

    center, spread = moments(sums, 0.0, top[~unit])
    center, spread = moments(about, center, SCALE_REACH * spread)
    np.testing.assert_allclose(scales.center[~unit], center)
    np.testing.assert_allclose(scales.scale[~unit], spread)
    np.testing.assert_array_equal(scales.center[unit], 0.0)
    np.testing.assert_array_equal(scales.scale[unit], 1.0)
    for record, sensitivity in ((histogram, d), (sums, 2 * k), (about, 2 * k)):
        if pure:
            assert record.mechanism == "laplace"
            assert record.sensitivity == sensitivity
            assert record.scale == pytest.approx(multiplier * sensitivity, rel=1e-12)
        else:
            assert record.mechanism == "gaussian"
            assert record.sensitivity == pytest.approx(math.sqrt(sensitivity), rel=1e-12)
            assert record.scale == pytest.approx(multiplier * math.sqrt(sensitivity), rel=1e-12)
    assert centered_scale_events(multiplier, pure) == [
        dpe.SelfComposedDpEvent(
            (dpe.LaplaceDpEvent if pure else dpe.GaussianDpEvent)(multiplier), 3
        )
    ]


@pytest.mark.parametrize("hostile", [-1e300, -130.0, 0.0, 1e-300, 1.0, 3e4, 1e300])
def test_centred_scales_sensitivities_hold_for_a_hostile_row(hostile):
    # Adding one row moves the histogram by at most one count per feature
    # and the sums of u and u^2 by at most 1 each: L2 sqrt(d) and sqrt(2 k),
    # L1 d and 2 k, with the sums taken at the same released magnitudes.
    X, _ = _raw_table(300)
    d = X.shape[1]
    Y = np.vstack([X, np.full((1, d), hostile)])
    before, after = _magnitude_counts(X), _magnitude_counts(Y)
    assert np.sum(np.abs(after - before)) <= d
    assert np.linalg.norm(after - before) <= math.sqrt(d) + 1e-12
    magnitudes = np.array([1e5, 1e2, 10.0, 1e-3])
    for center, reach in ((0.0, magnitudes), (np.array([3e4, 36.0, 0.5, 0.0]), magnitudes / 7)):
        u = np.clip((np.clip(X, -magnitudes, magnitudes) - center) / reach, -1, 1)
        v = np.clip((np.clip(Y, -magnitudes, magnitudes) - center) / reach, -1, 1)
        change = np.r_[v.sum(0) - u.sum(0), (v * v).sum(0) - (u * u).sum(0)]
        assert np.sum(np.abs(change)) <= 2 * d + 1e-12
        assert np.linalg.norm(change) <= math.sqrt(2 * d) + 1e-12


def test_features_far_from_zero_are_centred_and_scaled_in_their_magnitudes_units():
    # A longitude near -120 with a spread of 2 and an income in dollars:
    # with little noise the centre lands within the spread and the scale
    # near it, however far the values lie from 0 (the first moments, in
    # units of the magnitude, see the longitude's spread as noise; the
    # second, about their centre, resolve it).  A longitude of spread 0.05
    # is centred within about its spread, and its scale is never narrower
    # than its spread (the noise of the second moment bounds it below).
    rng = np.random.default_rng(3)
    n = 4000
    X = np.column_stack(
        [
            -120.0 + 2.0 * rng.normal(size=n),
            rng.lognormal(10, 0.5, n),
            -120.0 + 0.05 * rng.normal(size=n),
        ]
    )
    for seed in range(3):
        scales, _ = _centered_trace(X, 0.5, seed=seed)
        for j in range(2):
            assert abs(scales.center[j] - X[:, j].mean()) < 0.2 * X[:, j].std()
            assert 0.7 < scales.scale[j] / X[:, j].std() < 1.4
        assert abs(scales.center[2] + 120.0) < 0.05
        assert scales.scale[2] > X[:, 2].std()


@pytest.mark.parametrize("seed", range(5))
def test_standardised_values_stay_bounded_whatever_the_noise(seed):
    # Few rows, much noise: the magnitude M may come out anywhere, but the
    # centres and spreads are in its units and each spread is floored at
    # sqrt(floor) times its units (the noise of the mean): the first spread
    # at M sqrt(floor), the scale at 4 times that times sqrt(floor), while
    # |clip(x) - c| stays below 6 M.  No standardised value exceeds 1.5 / floor.
    X, _ = _raw_table(200)
    multiplier = 30.0
    scales, _ = _centered_trace(X, multiplier, seed=seed)
    scaled = scales.clip != FEATURE_UNIT_MAGNITUDE
    floor = centered_count_noise(multiplier, 2 * int(np.sum(scaled)), False) / 200.0
    Z = (np.clip(X, -scales.clip, scales.clip) - scales.center) / scales.scale
    assert np.all(np.abs(Z[:, scaled]) <= 1.5 / min(floor, 1.0) + 1e-9)


def _centred_multiplier(share, delta_rest, epsilon_rest, bound_shares, count=True):
    """The noise multiplier of a centred fit's scales, and their basic cost, from its shares."""
    count = COUNT_EPSILON_FRACTION * epsilon_rest if count else 0.0
    remainder = epsilon_rest - count - sum(bound_shares) * epsilon_rest - share
    most = share + _feature_scales.SCALING_FLOOR_PART * remainder
    return centered_scale_multiplier(share, epsilon_rest, delta_rest, count or None, most)


@pytest.mark.parametrize("count", [None, 0.05])
def test_centred_scale_multiplier_takes_its_share_as_gaussians_compose(count):
    from sklearn_dp.accounting import calibrate_noise_multiplier

    share, total, delta = 0.2, 1.0, 1e-5
    prefix = [] if count is None else [dpe.LaplaceDpEvent(1.0 / count)]

    def gaussian(target):
        return calibrate_noise_multiplier(
            lambda s: dpe.ComposedDpEvent(prefix + [dpe.GaussianDpEvent(s)]), target, delta
        )

    # Uncapped: the least noise the share allows is that of the releases
    # which, with a Gaussian meeting total - share, compose into the
    # Gaussian meeting total (Gaussians compose exactly); the releases take
    # CENTERED_NOISE_FACTOR times it.
    multiplier, cost = centered_scale_multiplier(share, total, delta, count, 10.0)
    least = multiplier / CENTERED_NOISE_FACTOR
    combined = (3.0 / least**2 + gaussian(total - share) ** -2) ** -0.5
    assert combined == pytest.approx(gaussian(total), rel=1e-3)
    releases = dpe.ComposedDpEvent(centered_scale_events(multiplier, False))
    assert cost == pytest.approx(epsilon_of_event(releases, SCALES_DELTA_FRACTION * delta))
    # The basic-composition cost is capped (before the factor), and the
    # noise never exceeds what the share alone needs at the scales' delta.
    capped, capped_cost = centered_scale_multiplier(share, total, delta, count, 0.3)
    assert capped >= multiplier
    at_cap = dpe.ComposedDpEvent(centered_scale_events(capped / CENTERED_NOISE_FACTOR, False))
    assert epsilon_of_event(at_cap, SCALES_DELTA_FRACTION * delta) <= 0.3 + 1e-6
    most, _ = centered_scale_multiplier(share, total, delta, count, 0.0)
    alone = dpe.ComposedDpEvent(centered_scale_events(most / CENTERED_NOISE_FACTOR, False))
    assert epsilon_of_event(alone, SCALES_DELTA_FRACTION * delta) == pytest.approx(share, rel=1e-6)
    # Pure DP: three Laplace mechanisms whose epsilons sum to the share over
    # the factor.
    pure, pure_cost = centered_scale_multiplier(share, total, 0.0)
    assert pure == pytest.approx(CENTERED_NOISE_FACTOR * 3.0 / share)
    assert pure_cost == pytest.approx(share / CENTERED_NOISE_FACTOR)
    assert epsilon_of_event(
        dpe.ComposedDpEvent(centered_scale_events(pure, True)), 0.0
    ) == pytest.approx(pure_cost)


def test_vector_releases_keep_a_zero_one_column_on_the_unit_scale():
    # A 0/1 column's nonzero entries all lie in the bin of 1, its mode
    # whatever the share of ones: it keeps its units, as the single row
    # bound keeps it, clipped to the public unit magnitude.
    rng = np.random.default_rng(3)
    for share in (0.03, 0.3, 0.9):
        column = (rng.random(3000) < share).astype(float)
        scales, releases = _centered_trace(column[:, None], 1.0, seed=1)
        assert (scales.clip[0], scales.center[0], scales.scale[0]) == (
            FEATURE_UNIT_MAGNITUDE,
            0.0,
            1.0,
        )
        assert len(releases) == 1  # no sums: nothing to standardise


def test_vector_releases_sum_only_the_features_off_the_unit_scale():
    # Standard-normal and 0/1 columns need no scaling: they are used as the
    # single row bound uses them (clipped to the public unit magnitude); the
    # income column is standardised, and so is a column of tiny values.
    rng = np.random.default_rng(4)
    n = 4000
    X = np.column_stack(
        [
            rng.normal(size=n),
            (rng.random(n) < 0.4).astype(float),
            rng.lognormal(10, 0.5, n),
            0.01 * rng.normal(size=n),
        ]
    )
    scales, (_, sums, _) = _centered_trace(X, 0.5)
    np.testing.assert_array_equal(scales.clip[:2], FEATURE_UNIT_MAGNITUDE)
    np.testing.assert_array_equal(scales.scale[:2], 1.0)
    np.testing.assert_array_equal(scales.center[:2], 0.0)
    assert scales.clip[2] > FEATURE_UNIT_MAGNITUDE and scales.center[2] > 1e4
    assert scales.clip[3] < 1.0 and 0.005 < scales.scale[3] < 0.02
    assert sums.value.shape == (2, 2)


def _wide_table(n, d=120, seed=0):
    """Many features in natural units: offsets, scales from 0.01 to 10^4, 0/1 flags."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d))
    scales = 10.0 ** rng.uniform(-2, 4, d)
    X = Z * scales + np.where(rng.random(d) < 0.3, 5.0, 0.0) * scales
    X[:, : d // 4] = (Z[:, : d // 4] > 0.5).astype(float)
    return X, (Z[:, :10] @ rng.normal(size=10) > 0).astype(int)


@pytest.mark.parametrize("setting", [True, "auto"])
def test_many_features_take_the_vector_releases_and_keep_the_guarantee(setting):
    X, y = _wide_table(4000)
    d = X.shape[1]
    assert d >= VECTOR_MIN_FEATURES
    model = DPLogisticRegression(epsilon=1.0, feature_scaling=setting, random_state=0)
    plan = model._fit_plan(X, y)
    scaling = plan.context["scaling"]
    assert scaling["vector"] and scaling["multiplier"] > 0
    # The label set comes with its count: no count release before the scales.
    epsilon_rest = 1.0 - plan.shares["labels"][0]
    delta_rest = 1e-5 - plan.shares["labels"][1]
    share = plan.shares["scales"]
    bounds = sum(plan.shares["bounds"])
    remainder = epsilon_rest - bounds - share - scaling["probe"]
    most = share + _feature_scales.SCALING_FLOOR_PART * remainder
    multiplier, cost = centered_scale_multiplier(share, epsilon_rest, delta_rest, None, most)
    assert scaling["multiplier"] == multiplier
    planner = plan.context["planner"]
    assert planner.floor == pytest.approx(epsilon_rest - bounds - scaling["probe"] - cost)
    assert planner.floor > 0.3 * epsilon_rest
    assert (
        plan.shares["solver"][1]
        == planner.delta
        == pytest.approx((1 - SCALES_DELTA_FRACTION) * delta_rest)
    )
    with trace_releases() as trace:
        model.fit(X, y)
    labels = [r.label for r in trace.releases]
    assert [label for label in labels if label.startswith("feature scales (")][-3:] == [
        "feature scales (magnitudes)",
        "feature scales (sums)",
        "feature scales (sums about the centres)",
    ]
    assert hasattr(model, "feature_scale_")
    scale_events = centered_scale_events(multiplier, False)
    assert all(repr(e) in repr(model.dp_event_) for e in scale_events)
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    # dp_accounting's own accountants read the whole event: the Gaussian
    # releases exactly, so the PLD reading stays at the claim.
    assert accountant_epsilon(model.dp_event_, 1e-5, "pld") <= 1.0 + 1e-3
    assert math.isfinite(accountant_epsilon(model.dp_event_, 1e-5, "rdp"))
    assert (
        model.score(X, y) > 0.62
    )  # well above chance (0.5); the DP scaler pipeline gets about 0.65


# -- the scales' share when none are released ------------------------------------------


def _digits_fit(substitute=None, **params):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    params = {"random_state": 0, **params}
    model = DPLogisticRegression(epsilon=1.0, **params)
    plan = model._fit_plan(X, y)
    with trace_releases(substitute=substitute) as trace:
        model.fit(X, y)
    return model, plan, trace


def test_a_fit_without_scales_gives_their_share_to_its_solver():
    model, plan, trace = _digits_fit()
    labels = [r.label for r in trace.releases]
    # Pixel intensities up to 16: "auto" decides against the scales.
    assert "feature scales (rows with a large entry)" in labels
    assert not any("feature scales (magnitude)" in label for label in labels)
    _, decision, bound, solver = model.dp_event_.events
    rest = 1.0 - plan.shares["labels"][0]  # what the label set leaves
    decision_epsilon = _bounds.AUTO_SCALING_EPSILON_FRACTION * rest
    assert decision == dpe.LaplaceDpEvent(1.0 / decision_epsilon)
    assert bound == _bounds.selection_event(
        _bounds.BOUNDS_EPSILON_FRACTION * rest, "row norm bound"
    )
    # The charged plan: the scales' releases too.
    charged = plan.event.events
    assert charged[1] == decision and charged[-2] == bound
    scales = charged[2:-2]
    assert scales == _feature_scales.planned_scale_events(
        64, plan.shares["scales"], True, plan.context["scaling"]["each"]
    )
    # The solver's share: the largest whose composition with what ran is
    # certified (dp_accounting's PLD), from the planner's own search on the
    # released label set's problem; the charged branch's, with the scales.
    planner = plan.context["planner"]
    arguments = planner._arguments(model._problem(10), None, planner._planned_bounds, plan.options)

    def make_event(share):
        return planner._event(arguments, None, share)

    delta = plan.shares["solver"][1]
    share = largest_share(
        make_event, dpe.ComposedDpEvent([decision, bound]), rest, delta, planner.floor
    )
    charged_share = largest_share(
        make_event, dpe.ComposedDpEvent([decision, *scales, bound]), rest, delta, planner.floor
    )
    assert share > charged_share
    assert solver == make_event(share)
    # The gateway's Gaussian noise is the event's.
    multipliers = [e.noise_multiplier for e in (solver.events[0].event, solver.events[1])]
    gaussians = [r for r in trace.releases if r.mechanism == "gaussian"]
    np.testing.assert_allclose(
        sorted(r.scale / r.sensitivity for r in gaussians),
        sorted([multipliers[0]] * solver.events[0].count + [multipliers[1]]),
        rtol=1e-9,
    )
    # Both branches, picked by the decision (pure DP) after the label set
    # (composed by basic composition), meet what the label set leaves.
    bound_delta = mixture_delta(
        decision,
        dpe.ComposedDpEvent([bound, solver]),
        dpe.ComposedDpEvent([*scales, bound, make_event(charged_share)]),
        rest,
        decision_epsilon,
    )
    assert bound_delta <= delta
    assert model.privacy_spent_ == (1.0, 1e-5)
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert math.isfinite(accountant_epsilon(model.dp_event_, 1e-5, "rdp"))


def test_a_fit_with_public_classes_keeps_its_fixed_event_without_scales():
    # Its event is fixed before the data (privacy_report shows its curve): a
    # mixture of two branches would lose that, so it keeps the charge.
    model, plan, trace = _digits_fit(classes=np.arange(10))
    assert not any(r.label == "feature scales (magnitude)" for r in trace.releases)
    assert plan.fixed
    assert model.dp_event_ == plan.event


def test_a_fit_with_scales_keeps_the_charged_event():
    X, score = _raw_table(3000)
    y = (score > 0).astype(int)
    model = DPLogisticRegression(epsilon=1.0, random_state=0)
    plan = model._fit_plan(X, y)
    model.fit(X, y)
    assert hasattr(model, "feature_scale_")
    # The plan's solver is the placeholder problem's; the rest as charged
    # (the label set's event is named by its mechanism once it ran).
    assert model.dp_event_.events[1:-1] == plan.event.events[1:-1]
    assert model.privacy_spent_ == (1.0, 1e-5)


@pytest.mark.parametrize("where", ["zcdp budget", "search run"])
def test_zcdp_budgets_and_search_runs_keep_the_charged_share_without_scales(where):
    # A zCDP budget reserves the planned event's rho, which a larger share
    # would exceed; a private search accounts each run as its planned event.
    from sklearn_dp import _random

    if where == "zcdp budget":
        budget = PrivacyBudget(2.0, 1e-4, composition="zcdp")
        model, plan, trace = _digits_fit(budget=budget)
        assert budget.spent[0] <= 2.0
    else:
        stream = _random.SecretStream(np.random.default_rng(0), _random._SEARCH_TOKEN)
        model, plan, trace = _digits_fit(random_state=stream)
    assert not any(r.label == "feature scales (magnitude)" for r in trace.releases)
    assert "feature scales (magnitude)" in repr(model.dp_event_)


def test_unscaled_branch_of_a_wide_table_gives_the_vector_releases_share_to_the_solver():
    # Many features: the charged scales are the vector releases, and the
    # branch that releases none composes against those (not per-feature ones).
    rng = np.random.default_rng(0)
    d = _feature_scales.VECTOR_MIN_FEATURES + 20
    X = rng.normal(size=(1500, d))
    y = (X[:, 0] + rng.logistic(size=1500) > 0).astype(int)
    with trace_releases() as trace:
        model = DPLogisticRegression(epsilon=1.0, random_state=0).fit(X, y)
    labels = [r.label for r in trace.releases]
    assert not any(label.startswith("feature scales (magnitude") for label in labels)
    assert "feature scales" not in repr(model.dp_event_).replace(
        "feature scales (rows with a large entry)", ""
    )
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert model.privacy_spent_ == (1.0, 1e-5)
