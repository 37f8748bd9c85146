"""Regression tests of the third privacy review (float32 memory work, l1 solvers, SVRG, auto)."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget
from sklearn_dp.testing import trace_releases


def _duplicates_overflow(dtype):
    """CSR X whose last row stores two finite duplicates of one cell summing beyond the range."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 3)).astype(dtype)
    big = np.finfo(dtype).max
    row = sp.csr_matrix(
        (np.array([big, big], dtype=dtype), np.array([0, 0], dtype=np.int32), np.array([0, 2])),
        shape=(1, 3),
    )
    X_prime = sp.vstack([sp.csr_matrix(X), row], format="csr")
    # vstack may canonicalise: rebuild with the duplicates stored as given.
    X_prime = sp.csr_matrix((X_prime.data, X_prime.indices, X_prime.indptr), shape=X_prime.shape)
    assert not X_prime.has_canonical_format
    assert np.all(np.isfinite(X_prime.data))
    return X_prime


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "estimator, params, labels",
    [
        (DPLogisticRegression, dict(classes=[0, 1], max_iter=3, solver="dp_newton"), "binary"),
        (DPSCORegressor, dict(max_iter=3, solver="dp_gd"), "regression"),
        (DPLasso, dict(alpha=0.1), "regression"),
    ],
)
def test_sparse_duplicates_summing_to_infinity_are_refused_before_the_spend(
    estimator, params, labels, dtype
):
    # Finite duplicate entries of one cell whose sum overflows: scikit-learn's
    # finiteness check ran on the stored entries, then summing the duplicates
    # made the cell inf, every release of the fit on D + row was NaN (the fit
    # on D finite): an infinite privacy loss for that row.
    X = _duplicates_overflow(dtype)
    y = np.arange(X.shape[0]) % 2 if labels == "binary" else np.linspace(-1, 1, X.shape[0])
    budget = PrivacyBudget(10.0, 1e-3)
    with trace_releases() as trace:
        with pytest.raises(ValueError, match="infinity"):
            estimator(epsilon=1.0, random_state=0, budget=budget, **params).fit(X, y)
    assert budget.ledger == []
    assert trace.releases == []
