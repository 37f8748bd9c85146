"""Regression tests of the second privacy review (auto bounds, second-order solvers, design, search)."""

import numpy as np
import pytest

import sklearn_dp
from sklearn_dp import DPLogisticRegression
from sklearn_dp._data import bound_data
from sklearn_dp.testing import trace_releases


def _separable(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


def test_float32_hostile_row_score_overflow():
    # A float32 row near the float32 maximum: X @ W overflowed in float32
    # (inf - inf = NaN) before the row factor, so the row's clipped gradient
    # was NaN and the fit on D + row failed while the fit on D succeeded.
    X, y = _separable()
    hostile = np.array([[3.0e38, -3.0e38]], dtype=np.float32)
    data = bound_data(np.vstack([X, hostile]), np.append(y, 1), fit_intercept=True, data_norm=2.0)
    W = np.array([3.0, 3.0, 0.5])
    Z = data.design.matmul(W)
    reference = data.design.toarray() @ W
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z, reference, rtol=1e-5, atol=1e-5)

    def fit(X, y):
        with trace_releases(
            substitute=lambda r: (
                np.zeros_like(np.asarray(r.output, float))
                if r.mechanism != "exponential"
                else r.output
            )
        ) as trace:
            DPLogisticRegression(epsilon=1.0, classes=[0, 1], data_norm=2.0, random_state=0).fit(
                X, y
            )
        return trace.releases

    base = fit(X, y)
    neighbour = fit(np.vstack([X, hostile]), np.append(y, 1))
    assert len(base) == len(neighbour)
    for a, b in zip(base, neighbour):
        if a.value is None or a.mechanism == "exponential":
            continue
        assert np.all(np.isfinite(b.value)), a.label
        diff = np.asarray(b.value, float) - np.asarray(a.value, float)
        assert np.linalg.norm(diff.ravel()) <= a.sensitivity * (1 + 1e-9), a.label


def test_float32_hostile_row_fit_is_finite():
    X, y = _separable(2000)
    hostile = np.array([[3.0e38, -3.0e38]], dtype=np.float32)
    for seed in range(2):
        model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=seed)
        model.fit(np.vstack([X, hostile]), np.append(y, 1))
        assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize(
    "make",
    [
        lambda: sklearn_dp.DPSCORegressor(fit_intercept=False, random_state=0),
        lambda: sklearn_dp.DPLasso(fit_intercept=False, alpha=0.1, random_state=0),
    ],
)
def test_no_intercept_means_no_released_label_centre(make):
    """fit_intercept=False used to add the released label centre to intercept_."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + 50.0
    model = make().fit(X, y)
    assert model.intercept_ == 0.0 and model.y_center_ == 0.0
    np.testing.assert_array_equal(model.predict(X), X @ model.coef_)
    labels = [e for e in model.dp_event_.events if "label range" in getattr(e, "mechanism", "")]
    assert [e.mechanism.split(": ")[-1] for e in labels] == ["label range (half-width)"]
