"""DP preprocessing: exact releases and noise scales, the protocol, privacy_spent of pipelines."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_dp import DPLogisticRegression, PrivacyBudget, privacy_spent
from sklearn_dp._bounds import GRID, upper_bound_utilities
from sklearn_dp.accounting import (
    EXPONENTIAL_MECHANISM,
    PureEpsilonDpEvent,
    epsilon_of_event,
    epsilon_of_events,
)
from sklearn_dp.exceptions import PrivacyLeakWarning
from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler, PublicRangeScaler
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
    # Each feature bound: the upper-bound mechanism on |X[:, j]|.
    bounds = []
    for j in range(d):
        r = releases[1 + j]
        assert r.mechanism == "exponential" and r.sensitivity == 1.0
        np.testing.assert_array_equal(r.value, upper_bound_utilities(np.abs(X[:, j]), count))
        bounds.append(GRID[r.used])
    bounds = np.array(bounds)
    # The sums of u = clip(x / B, -1, 1) and u^2, written out here.
    u = np.clip(X / bounds, -1, 1)
    sums = np.concatenate([u.sum(axis=0), (u * u).sum(axis=0)])
    last = releases[-1]
    np.testing.assert_allclose(last.value, sums, rtol=1e-12)
    events = scaler.dp_event_.events
    if delta == 0:
        assert last.mechanism == "laplace" and last.sensitivity == 2 * d
        multiplier = events[-1].noise_multiplier
        assert last.scale == pytest.approx(multiplier * 2 * d)
        assert epsilon_of_event(scaler.dp_event_, 0.0) <= epsilon * (1 + 1e-9)
    else:
        assert last.mechanism == "gaussian" and last.sensitivity == pytest.approx(math.sqrt(2 * d))
        multiplier = events[-1].noise_multiplier
        assert last.scale == pytest.approx(multiplier * math.sqrt(2 * d))
        assert epsilon_of_event(scaler.dp_event_, delta) <= epsilon * (1 + 1e-9)
        # Tight: 1% less noise breaks the claim.
        tighter = dpe.ComposedDpEvent(events[:-1] + [dpe.GaussianDpEvent(0.99 * multiplier)])
        assert epsilon_of_event(tighter, delta) > epsilon
    assert events[0] == dpe.LaplaceDpEvent(1.0 / (0.05 * epsilon))
    assert all(
        isinstance(e, PureEpsilonDpEvent) and e.mechanism.startswith(EXPONENTIAL_MECHANISM)
        for e in events[1 : 1 + d]
    )
    # The statistics are these released values, post-processed.
    noisy = last.used
    mean_u = np.clip(noisy[:d] / count, -1, 1)
    np.testing.assert_allclose(scaler.mean_, bounds * mean_u)
    assert np.all(scaler.var_ > 0)
    np.testing.assert_allclose(scaler.scale_, np.sqrt(scaler.var_))
    np.testing.assert_allclose(scaler.bounds_, np.column_stack([-bounds, bounds]))
    # Utility: many rows, a few features: close to the exact statistics.
    assert np.all(np.abs(scaler.mean_ - X.mean(axis=0)) <= 0.1 * X.std(axis=0))
    np.testing.assert_allclose(scaler.scale_, X.std(axis=0), rtol=0.2)


def test_standard_scaler_given_bounds_spend_on_sums_only_and_inf_is_exact():
    X = _data(500)
    lo, hi = X.min(axis=0) - 1, X.max(axis=0) + 1
    bounds = np.column_stack([lo, hi])
    with trace_releases() as trace:
        scaler = DPStandardScaler(epsilon=1.0, bounds=bounds, random_state=0).fit(X)
    assert [r.label for r in trace.releases] == ["row count", "feature sums and sums of squares"]
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
    assert sums.mechanism == "gaussian" and sums.sensitivity == pytest.approx(math.sqrt(d))
    bounds = np.array([GRID[r.used] for r in trace.releases[1 : 1 + d]])
    np.testing.assert_allclose(sums.value, np.clip(X / bounds, -1, 1).sum(axis=0), rtol=1e-12)
    centers = bounds * np.clip(sums.used / trace.releases[0].used, -1, 1)
    for j in range(d):
        r = trace.releases[2 + d + j]
        np.testing.assert_array_equal(
            r.value, upper_bound_utilities(np.abs(X[:, j] - centers[j]), trace.releases[0].used)
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
    budget = PrivacyBudget(1.0, 1e-5)
    model = make_pipeline(
        DPStandardScaler(epsilon=0.3, delta=5e-6, budget=budget, random_state=1),
        DPLogisticRegression(
            epsilon=0.7, delta=5e-6, classes=[0, 1], budget=budget, random_state=2
        ),
    ).fit(X, y)
    assert [e.estimator for e in budget.ledger] == ["DPStandardScaler", "DPLogisticRegression"]
    assert budget.spent == pytest.approx((1.0, 1e-5))
    epsilon, delta = privacy_spent(model)
    events = [step.dp_event_ for _, step in model.steps]
    assert delta == pytest.approx(1e-5)
    assert epsilon == pytest.approx(min(1.0, epsilon_of_events(events, 1e-5)))
    assert epsilon <= 1.0
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
        ]
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
