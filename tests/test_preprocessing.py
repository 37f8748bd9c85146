"""DP preprocessing: exact releases and noise scales, the protocol, privacy_spent of pipelines."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import FeatureUnion
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    StandardScaler,
)

from sklearn_dp import DPLogisticRegression, PrivacyBudget, privacy_spent
from sklearn_dp._bounds import GRID, upper_bound_utilities
from sklearn_dp.accounting import (
    EXPONENTIAL_MECHANISM,
    PureEpsilonDpEvent,
    epsilon_of_event,
    epsilon_of_zcdp,
    zcdp_rho,
)
from sklearn_dp.decomposition import DPPCA
from sklearn_dp.exceptions import PrivacyLeakWarning
from sklearn_dp.pipeline import make_pipeline
from sklearn_dp.preprocessing import (
    DPMinMaxScaler,
    DPStandardScaler,
    PublicRangeScaler,
    RowWiseTransformer,
)
from sklearn_dp.preprocessing._base import leaning_bound_utilities
from sklearn_dp.testing import trace_releases


def _data(n=3000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    scales = np.array([1.0, 100.0, 0.01, 5.0])[:d]
    return rng.normal(size=(n, d)) * scales + 2 * scales


# --------------------------------------------------------------------------
# DPStandardScaler
# --------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_standard_scaler_releases_exactly_what_it_claims(delta):
    X = _data()
    n, d = X.shape
    epsilon = 1.0
    with trace_releases() as trace:
        scaler = DPStandardScaler(epsilon=epsilon, delta=delta, random_state=1).fit(X)
    releases = trace.releases
    assert [r.label for r in releases] == (
        ["row count"]
        + [f"feature {j} bound" for j in range(d)]
        + ["feature sums and sums of squares"]
    )
    count = releases[0].used
    # Each feature bound: the upper-bound mechanism on |X[:, j]|, its counts
    # written out here, with the scaler's weaker tilt to smaller candidates
    # and its base measure leaning to larger ones (epsilon-independent of the
    # data, so sensitivity 1 still).
    each = scaler.dp_event_.events[1].epsilon
    k = np.arange(GRID.size) / GRID.size
    bounds = []
    for j in range(d):
        r = releases[1 + j]
        assert r.mechanism == "exponential" and r.sensitivity == 1.0
        s = np.abs(X[:, j])
        counts = np.array([np.sum(s > b) + np.sum(s < b / 10) for b in GRID], dtype=float)
        expected = -counts - 0.3 * 0.5 * count * k + 4.0 * k / each
        np.testing.assert_allclose(r.value, expected, rtol=1e-12, atol=1e-9)
        bounds.append(GRID[r.used])
    bounds = np.array(bounds)
    # The sums of u = clip(x / B, -1, 1) and u^2, and the row count (a
    # constant column), written out here.
    u = np.clip(X / bounds, -1, 1)
    sums = np.concatenate([u.sum(axis=0), (u * u).sum(axis=0), [n]])
    last = releases[-1]
    np.testing.assert_allclose(last.value, sums, rtol=1e-12)
    events = scaler.dp_event_.events
    if delta == 0:
        assert last.mechanism == "laplace" and last.sensitivity == 2 * d + 1
        multiplier = events[-1].noise_multiplier
        assert last.scale == pytest.approx(multiplier * (2 * d + 1))
        noise_std = last.scale * math.sqrt(2)
        assert epsilon_of_event(scaler.dp_event_, 0.0) <= epsilon * (1 + 1e-9)
    else:
        assert last.mechanism == "gaussian"
        assert last.sensitivity == pytest.approx(math.sqrt(2 * d + 1))
        multiplier = events[-1].noise_multiplier
        assert last.scale == pytest.approx(multiplier * math.sqrt(2 * d + 1))
        noise_std = last.scale
        assert epsilon_of_event(scaler.dp_event_, delta) <= epsilon * (1 + 1e-9)
        # Tight: 1% less noise breaks the claim.
        tighter = dpe.ComposedDpEvent(events[:-1] + [dpe.GaussianDpEvent(0.99 * multiplier)])
        assert epsilon_of_event(tighter, delta) > epsilon
    assert events[0] == dpe.LaplaceDpEvent(1.0 / (0.05 * epsilon))
    assert all(
        isinstance(e, PureEpsilonDpEvent) and e.mechanism.startswith(EXPONENTIAL_MECHANISM)
        for e in events[1 : 1 + d]
    )
    # The statistics are these released values, post-processed: the count
    # is the inverse-variance average of the Laplace count (scale
    # 1 / (0.05 epsilon)) and the sums' constant column; the means are
    # shrunk towards their average (positive-part James-Stein, s the noise
    # of each); the variance is the second moment about that mean, clipped
    # at its noise level.
    noisy = last.used
    laplace_var = 2 * (1 / (0.05 * epsilon)) ** 2
    w = (1 / laplace_var) / (1 / laplace_var + 1 / noise_std**2)
    n_hat = w * count + (1 - w) * noisy[2 * d]
    mean_hat = np.clip(noisy[:d] / n_hat, -1, 1)
    s = noise_std / n_hat
    g = mean_hat.mean()
    mean_u = g + (mean_hat - g) * max(0.0, 1 - (d - 3) * s**2 / np.sum((mean_hat - g) ** 2))
    np.testing.assert_allclose(scaler.mean_, bounds * mean_u)
    square = np.clip(noisy[d : 2 * d] / n_hat, 0, 1)
    var_u = np.clip(square - 2 * mean_u * mean_hat + mean_u**2, s, 1)
    np.testing.assert_allclose(scaler.var_, bounds**2 * var_u)
    np.testing.assert_allclose(scaler.scale_, np.sqrt(scaler.var_))
    np.testing.assert_allclose(scaler.bounds_, np.column_stack([-bounds, bounds]))
    # Utility: many rows, a few features: close to the exact statistics (the
    # largest of the four mean errors is below 0.18 standard deviations in 99%
    # of seeds with delta = 0).
    assert np.all(np.abs(scaler.mean_ - X.mean(axis=0)) <= 0.25 * X.std(axis=0))
    # The spreads are noisier (the largest relative error of the four is
    # below 0.23 with delta > 0 and 0.51 with delta = 0 in 99% of seeds).
    np.testing.assert_allclose(scaler.scale_, X.std(axis=0), rtol=0.3 if delta else 0.6)


def test_standard_scaler_given_bounds_spend_on_sums_only_and_inf_is_exact():
    X = _data(500)
    lo, hi = X.min(axis=0) - 1, X.max(axis=0) + 1
    bounds = np.column_stack([lo, hi])
    with trace_releases() as trace:
        scaler = DPStandardScaler(epsilon=1.0, bounds=bounds, random_state=0).fit(X)
    # The row count is the sums' last coordinate: no release of its own.
    assert [r.label for r in trace.releases] == ["feature sums and sums of squares"]
    assert trace.releases[0].value[-1] == X.shape[0]
    assert len(scaler.dp_event_.events) == 1
    exact = DPStandardScaler(epsilon=math.inf, bounds=bounds).fit(X)
    np.testing.assert_allclose(exact.mean_, X.mean(axis=0), rtol=1e-10)
    np.testing.assert_allclose(exact.var_, X.var(axis=0), rtol=1e-9)
    assert exact.privacy_spent_ == (math.inf, 0.0)
    np.testing.assert_allclose(exact.transform(X), StandardScaler().fit_transform(X), atol=1e-8)
    assert scaler.privacy_spent_ == (1.0, 1e-5)


def test_standard_scaler_spends_once_before_reading_and_transform_is_free():
    X = _data(400)
    budget = PrivacyBudget(2.0, 1e-5)
    seen = []
    original = budget.reserve

    def reserve(*args, **kwargs):
        seen.append(len(trace.releases))
        return original(*args, **kwargs)

    budget.reserve = reserve
    with trace_releases() as trace:
        scaler = DPStandardScaler(epsilon=0.5, budget=budget, random_state=0).fit(X)
        before = len(trace.releases)
        scaler.transform(X)
        scaler.inverse_transform(scaler.transform(X))
    assert seen == [0]
    assert len(trace.releases) == before  # transform costs nothing
    assert [(e.estimator, e.status, e.epsilon) for e in budget.ledger] == [
        ("DPStandardScaler", "completed", 0.5)
    ]
    assert budget.ledger[0].event == scaler.dp_event_


def test_standard_scaler_refuses_before_spending():
    X = _data(100)
    budget = PrivacyBudget(0.1, 1e-5)
    with pytest.raises(Exception, match="exceed"):
        DPStandardScaler(epsilon=0.5, budget=budget).fit(X)
    assert budget.ledger == []
    with pytest.raises(ValueError, match="sparse"):
        DPStandardScaler(budget=PrivacyBudget(5.0, 1e-5)).fit(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="inf"):
        DPStandardScaler(epsilon=math.inf, budget=budget).fit(X)
    assert budget.ledger == []


def test_standard_scaler_sparse_without_centring():
    X = sp.random(300, 5, density=0.3, random_state=0, format="csr") * 10
    dense = DPStandardScaler(epsilon=1.0, with_mean=False, random_state=3).fit(X.toarray())
    sparse = DPStandardScaler(epsilon=1.0, with_mean=False, random_state=3).fit(X)
    np.testing.assert_allclose(dense.scale_, sparse.scale_)
    out = sparse.transform(X)
    assert sp.issparse(out)
    np.testing.assert_allclose(out.toarray(), dense.transform(X.toarray()))


def test_standard_scaler_count_and_mean_post_processing():
    from sklearn_dp.preprocessing._scalers import combined_count, pooled_mean, shrunk_mean

    # Inverse-variance average of a Laplace count (variance 2 b^2) and the
    # sums' constant column (variance s^2); an exact count wins; at least 1.
    assert combined_count(100.0, 10.0, 130.0, 20.0) == pytest.approx(
        (100 / 200 + 130 / 400) / (1 / 200 + 1 / 400)
    )
    assert combined_count(None, 0.0, 130.0, 20.0) == 130.0
    assert combined_count(100.0, 0.0, 130.0, 0.0) == 100.0
    assert combined_count(None, 0.0, -5.0, 20.0) == 1.0
    # Shrinkage to the range's centre: the posterior mean under a normal
    # prior of spread 0.3 (in units of the bound) around it.
    assert shrunk_mean(0.5, 0.0) == 0.5
    assert shrunk_mean(0.5, 0.3) == pytest.approx(0.25)
    np.testing.assert_allclose(shrunk_mean(np.array([0.2, -0.4]), 0.6), [0.04, -0.08])
    # From four features on, towards their average instead: by the factor
    # 1 - (d - 3) s^2 / sum((m - g)^2), at least 0.
    m = np.array([0.1, 0.3, 0.5, 0.7])  # average 0.4, sum of squares 0.2
    np.testing.assert_allclose(pooled_mean(m, 0.0), m)
    np.testing.assert_allclose(pooled_mean(m, 0.2), 0.4 + (m - 0.4) * (1 - 0.04 / 0.2))
    np.testing.assert_allclose(pooled_mean(m, 1.0), [0.4] * 4)
    np.testing.assert_allclose(pooled_mean(np.full(5, 0.3), 0.5), [0.3] * 5)
    # Fewer: shrunk_mean.
    np.testing.assert_allclose(pooled_mean(np.array([0.2, -0.4]), 0.6), [0.04, -0.08])


def _exponential_probabilities(utilities, epsilon):
    weights = np.exp(epsilon * (utilities - utilities.max()))
    return weights / weights.sum()


@pytest.mark.parametrize("scaler", [DPStandardScaler, DPMinMaxScaler])
@pytest.mark.parametrize("delta", [1e-5, 0.0])
def test_scalers_noise_std_of_their_sums_is_the_gateways(scaler, delta):
    from sklearn_dp.preprocessing._scalers import summed_noise_std

    # Gaussian: the std is multiplier * L2 sensitivity; Laplace: sqrt(2) times
    # its scale, multiplier * L1 sensitivity.
    assert summed_noise_std(0.5, 3.0, 9.0, False) == 1.5
    assert summed_noise_std(0.5, 3.0, 9.0, True) == 0.5 * (9.0 * math.sqrt(2.0))
    X = _data(500)
    d = X.shape[1]
    with trace_releases() as trace:
        fitted = scaler(epsilon=1.0, delta=delta, random_state=0).fit(X)
    (sums,) = [r for r in trace.releases if r.label.startswith("feature sums")]
    width = 2 * d + 1 if scaler is DPStandardScaler else d + 1
    multiplier = fitted.dp_event_.events[-1].noise_multiplier
    noise_std = summed_noise_std(multiplier, math.sqrt(width), float(width), delta == 0)
    if delta == 0:
        assert sums.mechanism == "laplace" and sums.sensitivity == width
        assert noise_std == pytest.approx(math.sqrt(2.0) * sums.scale, rel=1e-15)
    else:
        assert sums.mechanism == "gaussian" and sums.sensitivity == math.sqrt(width)
        assert noise_std == sums.scale


def test_standard_scaler_bound_the_rows_cannot_decide_leans_large():
    # 398 rows of a positive feature and the epsilon each bound gets at 30
    # features and epsilon 0.3: the exponential mechanism is then nearly
    # blind, and a candidate far below the data (which clips the feature to
    # a constant off its centre) must be less likely than one far above it.
    rng = np.random.default_rng(0)
    scores = rng.uniform(7.0, 28.0, size=398)
    epsilon = 0.0104
    top = scores.max()
    below, above = GRID < top / 3, GRID > 3 * top
    leaning = _exponential_probabilities(leaning_bound_utilities(scores, 398, epsilon), epsilon)
    plain = _exponential_probabilities(upper_bound_utilities(scores, 398), epsilon)
    assert plain[below].sum() > plain[above].sum()  # the tilt alone clips
    assert leaning[below].sum() < 0.5 * leaning[above].sum()
    assert leaning[below].sum() < 0.5 * plain[below].sum()
    # Where the rows decide, the data's best candidates keep the mass.
    many = rng.uniform(7.0, 28.0, size=100_000)
    decided = _exponential_probabilities(leaning_bound_utilities(many, 1e5, 0.1), 0.1)
    good = (GRID >= many.max()) & (GRID <= 10 * many.min())
    assert decided[good].sum() > 0.99
    # The base measure reads no data: the utilities of two data sets differ
    # by their counts only (sensitivity 1, monotone).
    one_more = np.append(scores, 1e4)
    difference = leaning_bound_utilities(scores, 398, epsilon) - leaning_bound_utilities(
        one_more, 398, epsilon
    )
    assert set(np.unique(difference)) <= {0.0, 1.0}


@pytest.mark.slow
def test_standard_scaler_on_few_rows_keeps_the_model_above_the_majority_class():
    # Breast cancer as loaded (398 training rows, 30 features), the scaler
    # at 30% of a total epsilon of 0.5 and the model at the rest: before the
    # public defaults (the leaning bounds, the shrunk means), the median
    # accuracy over these 30 seeds was 0.64, the majority class 0.63; 0.77 after.
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split

    X, y = load_breast_cancer(return_X_y=True)
    scores = []
    for seed in range(30):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=seed % 5, stratify=y
        )
        scaler = DPStandardScaler(epsilon=0.15, delta=3e-6, random_state=1000 + seed)
        Z = scaler.fit(X_train).transform(X_train)
        model = DPLogisticRegression(epsilon=0.35, delta=7e-6, classes=[0, 1], random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(Z, y_train)
        scores.append(np.mean(model.predict(scaler.transform(X_test)) == y_test))
    majority = max(np.mean(y), 1 - np.mean(y))
    assert np.median(scores) > majority + 0.08


def test_clip_keeps_a_bad_bound_harmless():
    # A released bound far below the data would make (x - mean) / scale
    # explode; with clip=True the feature becomes (at worst) constant.
    X = _data(200)
    scaler = DPStandardScaler(epsilon=math.inf, bounds=[(-1e-3, 1e-3)] * 4).fit(X)
    out = scaler.transform(X)
    assert np.all(np.isfinite(out)) and np.max(np.abs(out)) <= 1e3


# --------------------------------------------------------------------------
# DPMinMaxScaler and PublicRangeScaler
# --------------------------------------------------------------------------


def test_minmax_scaler_releases_and_range():
    X = _data()
    n, d = X.shape
    with trace_releases() as trace:
        scaler = DPMinMaxScaler(epsilon=1.0, random_state=0).fit(X)
    labels = [r.label for r in trace.releases]
    assert labels == (
        ["row count"]
        + [f"feature {j} bound" for j in range(d)]
        + ["feature sums"]
        + [f"feature {j} half-width" for j in range(d)]
    )
    sums = trace.releases[1 + d]
    # The sums and the row count (a constant column): sensitivity sqrt(d + 1).
    assert sums.mechanism == "gaussian" and sums.sensitivity == pytest.approx(math.sqrt(d + 1))
    assert sums.scale == pytest.approx(
        scaler.dp_event_.events[-1].noise_multiplier * math.sqrt(d + 1)
    )
    bounds = np.array([GRID[r.used] for r in trace.releases[1 : 1 + d]])
    expected = np.append(np.clip(X / bounds, -1, 1).sum(axis=0), n)
    np.testing.assert_allclose(sums.value, expected, rtol=1e-12)
    # The count: the Laplace count (scale 1 / (0.05 epsilon)) and the
    # constant column, averaged by inverse variance.
    laplace_var, column_var = 2 * 20.0**2, sums.scale**2
    w = (1 / laplace_var) / (1 / laplace_var + 1 / column_var)
    n_hat = w * trace.releases[0].used + (1 - w) * sums.used[d]
    centers = bounds * np.clip(sums.used[:d] / n_hat, -1, 1)
    for j in range(d):
        r = trace.releases[2 + d + j]
        np.testing.assert_allclose(
            r.value, upper_bound_utilities(np.abs(X[:, j] - centers[j]), n_hat), rtol=1e-12
        )
    assert epsilon_of_event(scaler.dp_event_, 1e-5) <= 1.0 * (1 + 1e-9)
    # A robust range: most of the data inside, not far wider than the data.
    inside = np.mean((X >= scaler.data_min_) & (X <= scaler.data_max_), axis=0)
    assert np.all(inside > 0.9)
    assert np.all(scaler.data_range_ < 4 * (X.max(axis=0) - X.min(axis=0)))
    out = scaler.transform(X)
    assert out.min() >= 0 and out.max() <= 1


def test_minmax_scaler_public_bounds_cost_nothing_and_pure_mode():
    X = _data(300)
    with trace_releases() as trace:
        scaler = DPMinMaxScaler(bounds=(-1000, 1000), feature_range=(-1, 1)).fit(X)
    assert trace.releases == []
    assert scaler.privacy_spent_ == (0.0, 0.0) and isinstance(scaler.dp_event_, dpe.NoOpDpEvent)
    np.testing.assert_allclose(scaler.transform(X), X / 1000)
    pure = DPMinMaxScaler(epsilon=0.5, delta=0.0, random_state=0).fit(X)
    assert epsilon_of_event(pure.dp_event_, 0.0) <= 0.5 * (1 + 1e-9)


def test_public_range_scaler_maps_ranges_and_spends_nothing():
    X = np.array([[0.0, 10.0], [5.0, 20.0], [12.0, 0.0]])
    with trace_releases() as trace:
        scaler = PublicRangeScaler([(0, 10), (0, 20)]).fit(X)
        out = scaler.transform(X)
    assert trace.releases == []
    np.testing.assert_allclose(out, [[-1, 0], [0, 1], [1, -1]])
    np.testing.assert_allclose(scaler.inverse_transform(np.array([[0.0, 0.0]])), [[5, 10]])
    assert scaler.privacy_spent_ == (0.0, 0.0)
    symmetric = PublicRangeScaler((-4, 4)).fit(sp.csr_matrix(X))
    np.testing.assert_allclose(
        symmetric.transform(sp.csr_matrix(X)).toarray(), np.clip(X / 4, -1, 1)
    )
    with pytest.raises(ValueError, match="symmetric"):
        scaler.transform(sp.csr_matrix(X))
    with pytest.raises(ValueError, match="shape"):
        PublicRangeScaler([(0, 1)] * 3).fit(X)
    with pytest.raises(ValueError, match="min < max"):
        PublicRangeScaler((1, 1)).fit(X)


# --------------------------------------------------------------------------
# privacy_spent of pipelines
# --------------------------------------------------------------------------


def _classification(n=600):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) * [1, 50, 0.1] + [0, 100, 1]
    y = (X[:, 0] + (X[:, 1] - 100) / 50 > 0).astype(int)
    return X, y


def test_pipeline_spends_each_step_on_one_budget():
    X, y = _classification()
    # Basic composition: the two steps' epsilons and deltas add up to the budget.
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    model = make_pipeline(
        DPStandardScaler(epsilon=0.3, delta=5e-6, budget=budget, random_state=1),
        DPLogisticRegression(
            epsilon=0.7, delta=5e-6, classes=[0, 1], budget=budget, random_state=2
        ),
    ).fit(X, y)
    assert [e.estimator for e in budget.ledger] == ["DPStandardScaler", "DPLogisticRegression"]
    assert budget.spent == pytest.approx((1.0, 1e-5))
    epsilon, delta = privacy_spent(model)
    # The budget's own rule (basic composition here), not a numerical
    # composition of adaptively chosen events.
    assert (epsilon, delta) == pytest.approx(budget.spent)
    assert model.score(X, y) > 0.8
    # predict costs nothing.
    with trace_releases() as trace:
        model.predict(X)
    assert trace.releases == []


def test_privacy_spent_column_transformer_and_public_steps():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=400) * 10, rng.integers(0, 3, size=400)])
    y = (X[:, 0] > 0).astype(int)
    column = ColumnTransformer(
        [
            ("num", DPStandardScaler(epsilon=0.4, random_state=0), [0]),
            ("cat", OneHotEncoder(categories=[[0, 1, 2]], handle_unknown="ignore"), [1]),
        ],
        sparse_threshold=0,
    )
    model = make_pipeline(column, DPLogisticRegression(epsilon=0.6, classes=[0, 1], random_state=1))
    model.fit(X, y)
    epsilon, delta = privacy_spent(model)
    assert epsilon <= 1.0 and delta == pytest.approx(2e-5)
    assert (
        privacy_spent(model.steps[0][1])
        == pytest.approx(model.steps[0][1].named_transformers_["num"].privacy_spent_)
        or privacy_spent(model.steps[0][1])[0] <= 0.4
    )
    # A scikit-learn scaler read the data outside the guarantee.
    leaky = make_pipeline(StandardScaler(), DPLogisticRegression(classes=[0, 1], random_state=0))
    leaky.fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="StandardScaler"):
        assert privacy_spent(leaky) == (math.inf, 0.0)
    # Categories read off the data are a release too.
    auto_categories = make_pipeline(
        ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore"), [1])]),
        DPLogisticRegression(classes=[0, 1], random_state=0),
    ).fit(X, y)
    with pytest.warns(PrivacyLeakWarning):
        privacy_spent(auto_categories)
    # Non-private steps.
    exact = make_pipeline(
        DPStandardScaler(epsilon=math.inf),
        DPLogisticRegression(epsilon=math.inf, classes=[0, 1], max_iter=5),
    ).fit(X, y)
    assert privacy_spent(exact) == (math.inf, 0.0)
    public = make_pipeline(
        PublicRangeScaler((-50, 50)),
        DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0),
    ).fit(X, y)
    assert privacy_spent(public)[0] <= 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(public.steps[0][1]) == (0.0, 0.0)


def _observed(step, X):
    """What a fit of ``step`` on ``X`` shows: its warnings and the output's format and values."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = clone(step).fit_transform(X)
    dense = out.toarray() if sp.issparse(out) else np.asarray(out)
    return [str(w.message) for w in caught], sp.issparse(out), dense.shape, dense[:3].tolist()


# Each step lets one row change what a fit shows with certainty (the second
# data set is the first plus that row), so privacy_spent must not vouch for it.
_LEAKY_STEPS = {
    "one_hot_min_frequency": (
        OneHotEncoder(
            categories=[[0.0, 1.0, 2.0]], handle_unknown="infrequent_if_exist", min_frequency=3
        ),
        np.array([[0.0]] * 5 + [[1.0]] * 5 + [[2.0]] * 2),
        [[2.0]],
    ),
    "one_hot_ignore_drop_first": (
        OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="ignore", drop="first"),
        np.array([[0.0], [1.0], [2.0]] * 4),
        [[7.0]],
    ),
    "imputer_indicator": (
        SimpleImputer(strategy="constant", add_indicator=True),
        np.arange(12.0).reshape(6, 2),
        [[np.nan, 1.0]],
    ),
    "imputer_drops_empty_columns": (
        SimpleImputer(strategy="constant"),
        np.column_stack([np.arange(6.0), np.full(6, np.nan)]),
        [[1.0, 1.0]],
    ),
    "function_check_inverse": (
        FunctionTransformer(np.floor, inverse_func=lambda Z: Z),
        np.arange(12.0).reshape(6, 2),
        [[0.5, 1.0]],
    ),
    "function_not_row_wise": (
        FunctionTransformer(lambda Z: Z - Z.mean(axis=0), check_inverse=False),
        np.arange(12.0).reshape(6, 2),
        [[100.0, 100.0]],
    ),
    "column_transformer_sparse_threshold": (
        ColumnTransformer(
            [("cat", OneHotEncoder(categories=[[0.0, 1.0]], handle_unknown="ignore"), [0])]
        ),
        np.array([[0.0]] * 6 + [[5.0]] * 4),
        [[5.0]],
    ),
}


@pytest.mark.parametrize("name", sorted(_LEAKY_STEPS))
def test_privacy_spent_refuses_steps_whose_fit_one_row_changes(name):
    step, X, row = _LEAKY_STEPS[name]
    assert _observed(step, X) != _observed(step, np.vstack([X, row]))
    y = np.arange(len(X)) % 2
    if isinstance(step, ColumnTransformer):
        model = make_pipeline(step, DPLogisticRegression(classes=[0, 1], random_state=0))
    else:
        model = make_pipeline(
            ColumnTransformer([("suspect", step, list(range(X.shape[1])))], sparse_threshold=0),
            DPLogisticRegression(classes=[0, 1], random_state=0),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match=type(step).__name__) as record:
        assert privacy_spent(model) == (math.inf, 0.0)
    assert "epsilon=inf" in str(record[0].message)


def _allowed_pipeline():
    return make_pipeline(
        FeatureUnion(
            [
                (
                    "columns",
                    ColumnTransformer(
                        [
                            (
                                "onehot",
                                OneHotEncoder(categories=[[0, 1, 2]], handle_unknown="ignore"),
                                [1],
                            ),
                            (
                                "ordinal",
                                OrdinalEncoder(
                                    categories=[[0, 1, 2]],
                                    handle_unknown="use_encoded_value",
                                    unknown_value=-1,
                                ),
                                [1],
                            ),
                            (
                                "impute",
                                SimpleImputer(strategy="constant", keep_empty_features=True),
                                [0],
                            ),
                            # Given no column: never fitted, reads nothing.
                            ("unused", DPStandardScaler(), []),
                        ],
                        remainder=make_pipeline(FunctionTransformer(), RowWiseTransformer(np.tanh)),
                        sparse_threshold=0,
                    ),
                ),
                ("scaled", PublicRangeScaler((-50, 150))),
            ]
        ),
        DPLogisticRegression(epsilon=0.5, classes=[0, 1], random_state=0),
    )


def test_privacy_spent_vouches_for_allow_listed_steps():
    X, y = _classification()
    X[:, 1] = np.round(np.abs(X[:, 1] - 100) / 40)
    model = _allowed_pipeline().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(model) == model[-1].privacy_spent_


def test_privacy_spent_refuses_unchecked_scikit_learn_release_and_unknown_parameters(
    monkeypatch,
):
    import sklearn_dp._composition as composition

    X, y = _classification()
    X[:, 1] = np.round(np.abs(X[:, 1] - 100) / 40)
    model = _allowed_pipeline().fit(X, y)
    encoder = model[0].transformer_list[0][1].named_transformers_["onehot"]
    known = encoder.get_params(deep=False)
    monkeypatch.setattr(encoder, "get_params", lambda deep=False: {**known, "new_option": 1})
    with pytest.warns(PrivacyLeakWarning, match="new_option"):
        assert privacy_spent(model) == (math.inf, 0.0)
    monkeypatch.undo()
    monkeypatch.setattr(composition, "CHECKED_SKLEARN", ("0.1",))
    with pytest.warns(PrivacyLeakWarning, match="checked against scikit-learn 0.1"):
        assert privacy_spent(model) == (math.inf, 0.0)
    # Steps of this package alone need no scikit-learn check.
    alone = model[-1]
    assert privacy_spent(alone) == alone.privacy_spent_


def test_row_wise_transformer_asserts_a_function_and_costs_nothing():
    X, y = _classification()
    step = RowWiseTransformer(np.log1p, feature_names_out="one-to-one").fit(np.abs(X))
    np.testing.assert_array_equal(step.transform(np.abs(X)), np.log1p(np.abs(X)))
    assert step.privacy_spent_ == (0.0, 0.0)
    assert list(step.get_feature_names_out()) == ["x0", "x1", "x2"]
    assert not hasattr(RowWiseTransformer(np.log1p), "get_feature_names_out")


def test_privacy_spent_of_a_scikit_learn_search_points_to_the_dp_searches():
    X, y = _classification(200)
    search = GridSearchCV(
        DPLogisticRegression(classes=[0, 1], random_state=0), {"epsilon": [0.5, 1.0]}, cv=2
    ).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="DPGridSearchCV") as record:
        assert privacy_spent(search) == (math.inf, 0.0)
    assert "preprocessing" not in str(record[0].message)


def test_privacy_spent_composes_by_the_shared_budgets_rule():
    X, y = _classification()
    budget = PrivacyBudget(2.0, 1e-5, composition="zcdp")
    model = make_pipeline(
        DPStandardScaler(epsilon=0.5, delta=0.0, budget=budget, random_state=1),
        DPLogisticRegression(
            epsilon=0.5, delta=5e-6, classes=[0, 1], budget=budget, random_state=2
        ),
    ).fit(X, y)
    epsilon, delta = privacy_spent(model)
    assert (epsilon, delta) == pytest.approx(budget.spent)
    # No approximate-DP part: the guarantee is the conversion at the budget's
    # conversion delta (half of its delta; the other half is the unused pool).
    assert delta == pytest.approx(budget.delta - budget.delta_pool)
    # The other rule on request; basic adds the steps' spends.
    basic = privacy_spent(model, composition="basic")
    assert basic == pytest.approx((1.0, 5e-6))
    rhos = [zcdp_rho(step.dp_event_) for step in model]
    assert epsilon == pytest.approx(epsilon_of_zcdp(sum(rhos), budget.delta - budget.delta_pool))
    # Without a shared budget: basic composition.
    alone = make_pipeline(
        DPStandardScaler(epsilon=0.5, delta=0.0, random_state=1),
        DPLogisticRegression(epsilon=0.5, delta=5e-6, classes=[0, 1], random_state=2),
    ).fit(X, y)
    assert privacy_spent(alone) == pytest.approx((1.0, 5e-6))
    with pytest.raises(ValueError, match="below the sum"):
        privacy_spent(alone, delta=1e-6)
    with pytest.raises(ValueError, match="composition must be"):
        privacy_spent(alone, composition="pld")


def test_privacy_spent_charges_a_released_label_set_to_the_delta_pool_as_the_budget_does():
    X, y = _classification()
    budget = PrivacyBudget(4.0, 1e-5)
    model = make_pipeline(
        DPStandardScaler(epsilon=1.0, budget=budget, random_state=1),
        DPLogisticRegression(epsilon=2.0, budget=budget, random_state=2),
    ).fit(X, y)
    assert budget.delta_pool_spent > 0
    assert privacy_spent(model) == pytest.approx(budget.spent)


@pytest.mark.parametrize(
    "scaler",
    [
        DPStandardScaler(epsilon=0.5, random_state=0),
        DPStandardScaler(epsilon=0.5, bounds=(-1, 1), with_mean=False, random_state=0),
        DPMinMaxScaler(epsilon=0.5, delta=0.0, random_state=0),
        DPMinMaxScaler(bounds=(-1, 1)),
    ],
)
def test_scalers_plan_from_public_inputs_and_fit_reserves_that_plan(scaler):
    X = _data(400)
    with trace_releases() as trace:
        plan = scaler._fit_plan(X)
    assert trace.releases == []
    assert not hasattr(scaler, "n_features_in_")  # left as it was
    assert scaler._fit_plan(X[:2]) == plan  # the row count is not an input
    budget = PrivacyBudget(2.0, 1e-5)
    reserved = []
    original = budget.reserve

    def reserve(*args, **kwargs):
        reserved.append(kwargs.get("event"))
        return original(*args, **kwargs)

    budget.reserve = reserve
    fitted = clone(scaler).set_params(budget=budget).fit(X)
    assert fitted.privacy_spent_ == plan.privacy_spent
    if isinstance(fitted.dp_event_, dpe.NoOpDpEvent):  # public ranges: nothing reserved
        assert reserved == [] and plan.event == fitted.dp_event_
    else:
        assert reserved == [plan.event]


@pytest.mark.slow
def test_standard_scaler_with_given_bounds_audit_stays_below_the_claim():
    # The count is a coordinate of the sums: adding the canary moves every
    # released value, the count included; the audit must not see more than
    # the claimed epsilon.
    from sklearn_dp.testing import audit_mechanism

    epsilon, delta = 2.0, 1e-5
    base = np.zeros((20, 2))
    canary = np.vstack([base, [[1.0, 1.0]]])

    def run(with_canary, seed):
        scaler = DPStandardScaler(
            epsilon=epsilon, delta=delta, bounds=(-1.0, 1.0), random_state=seed
        ).fit(canary if with_canary else base)
        return float(np.sum(scaler.mean_))

    result = audit_mechanism(run, claimed_epsilon=epsilon, delta=delta, n_runs=1000)
    assert result.epsilon_lower_bound <= epsilon


# -- validation messages show no private value ------------------------------------


def _malformed_rows():
    import pandas as pd

    secret = "ALICE-SSN-123-45-6789"
    return {
        "string-cell": (np.array([[0.1, 0.2], [0.3, secret]], dtype=object), secret),
        "complex-cell": (np.array([[0.1, 0.2], [31337.25 + 2j, 0.5]]), "31337"),
        "dataframe": (pd.DataFrame({"a": [0.1, 0.3], "b": ["0.2", secret]}), secret),
    }


def _fitted_steps():
    X = np.random.default_rng(0).normal(size=(200, 2))
    return {
        "PublicRangeScaler": PublicRangeScaler((-3.0, 3.0)).fit(X),
        "RowWiseTransformer": RowWiseTransformer(np.tanh).fit(X),
        "DPStandardScaler": DPStandardScaler(epsilon=1.0, random_state=0).fit(X),
        "DPMinMaxScaler": DPMinMaxScaler(epsilon=1.0, random_state=0).fit(X),
        "DPPCA": DPPCA(1, epsilon=1.0, random_state=0).fit(X),
    }


@pytest.mark.parametrize("rows", sorted(_malformed_rows()))
@pytest.mark.parametrize("step", sorted(_fitted_steps()))
def test_validation_messages_show_no_private_value(step, rows):
    fitted = _fitted_steps()[step]
    X, secret = _malformed_rows()[rows]
    methods = [fitted.transform]
    if hasattr(fitted, "inverse_transform"):
        methods.append(fitted.inverse_transform)
    if step in ("PublicRangeScaler", "RowWiseTransformer"):
        methods.append(clone(fitted).fit)
    for method in methods:
        with pytest.raises(ValueError) as raised:
            method(X)
        message = str(raised.value)
        assert secret not in message and "[[" not in message, (method, message)
        assert message.startswith(f"{step}: "), message


@pytest.mark.parametrize("bounds", [(-1e300, 1e300), (0.0, 1e-300), (-1e308, 1e308)])
@pytest.mark.parametrize("make", [DPStandardScaler, DPMinMaxScaler, PublicRangeScaler])
def test_ranges_outside_the_public_scales_are_refused_before_any_spend(make, bounds):
    X = np.random.default_rng(0).normal(size=(50, 3))
    if make is PublicRangeScaler:
        model = make(ranges=bounds)
    else:
        model = make(bounds=bounds, budget=PrivacyBudget(10.0, 1e-4))
    with pytest.raises(ValueError, match="rescale the data by a public constant"):
        model.fit(X)
    if make is not PublicRangeScaler:
        assert model.budget.ledger == []


# --------------------------------------------------------------------------
# Finite rows stay finite: the next DP step never refuses a finite private row
# --------------------------------------------------------------------------

_HUGE = np.finfo(np.float64).max


@pytest.mark.parametrize(
    "transformer",
    [
        pytest.param(PublicRangeScaler(ranges=(-0.1, 0.1), clip=False), id="public-range"),
        pytest.param(DPStandardScaler(epsilon=1.0, clip=False, random_state=0), id="standard"),
        pytest.param(DPMinMaxScaler(epsilon=1.0, clip=False, random_state=0), id="minmax"),
        pytest.param(RowWiseTransformer(np.square), id="row-wise"),
    ],
)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_transform_maps_finite_rows_to_finite_rows(transformer, dtype):
    X = (_data(n=400, d=3) * 0.01).astype(dtype)
    fitted = clone(transformer).fit(X)
    huge = np.finfo(dtype).max
    rows = np.array([[huge, -huge, huge / 3], [-huge, 0.0, 1.0]], dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fitted.transform(rows)
    assert np.all(np.isfinite(out))


def test_pipeline_fits_whether_or_not_a_row_overflows_an_unclipped_scaler():
    X = _data(n=400, d=3) * 0.01
    y = (X[:, 0] > X[:, 0].mean()).astype(int)
    for A, b in ((X, y), (np.vstack([X, [_HUGE, 0.0, -_HUGE]]), np.append(y, 1))):
        model = make_pipeline(
            DPStandardScaler(epsilon=1.0, clip=False, random_state=0),
            DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=5, random_state=0),
        ).fit(A, b)
        assert np.all(np.isfinite(model[-1].coef_))


def test_row_wise_function_on_a_sparse_matrix_keeps_each_row_to_itself():
    # A scipy sparse matrix multiplies as a matrix (np.square(X) is X @ X):
    # the function must see elementwise operations, or every row would mix
    # with the others (and n != d would raise, depending on the row count).
    rng = np.random.default_rng(0)
    for n in (4, 6):
        X = sp.csr_matrix(rng.normal(size=(n, 4)))
        changed = X.tolil()
        changed[n - 1, :] = 1e200
        changed = changed.tocsr()
        transformer = RowWiseTransformer(np.square).fit(X)
        out, out_changed = transformer.transform(X), transformer.transform(changed)
        assert sp.issparse(out) and not isinstance(out, sp.sparray)
        np.testing.assert_array_equal(out.toarray(), X.toarray() ** 2)
        np.testing.assert_array_equal(out.toarray()[:-1], out_changed.toarray()[:-1])
        assert np.all(np.isfinite(out_changed.toarray()))
