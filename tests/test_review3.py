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


def _stale_flag_pair(unsorted):
    """D, and D plus a row storing one cell many times, flagged canonical by a stale cache.

    scipy caches ``has_canonical_format``; a caller that rewrites ``indices``
    in place (feature hashing, say) keeps the stale ``True``, and scikit-learn's
    validation returns the same object.
    """
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.uniform(-0.5, 0.5, size=(40, 3)))
    if unsorted:
        data, index = np.full(900, 5.0), np.tile(np.array([0, 1, 0], dtype=np.int32), 300)
    else:
        data, index = np.full(1000, 5.0), np.zeros(1000, dtype=np.int32)
    X_prime = sp.csr_matrix(
        (
            np.concatenate([X.data, data]),
            np.concatenate([X.indices, index]),
            np.append(X.indptr, X.indptr[-1] + data.size),
        ),
        shape=(41, 3),
    )
    X_prime.has_canonical_format = True  # stale: the last row stores cells repeatedly
    return X, X_prime


@pytest.mark.parametrize("unsorted", [False, True])
@pytest.mark.parametrize(
    "estimator, params",
    [
        (DPLogisticRegression, dict(classes=[0, 1], solver="dp_gd", max_iter=3, data_norm=1.0)),
        (DPSCORegressor, dict(solver="dp_ssp", data_norm=1.0, y_bound=1.0)),
    ],
)
def test_stale_canonical_flag_does_not_skip_summing_duplicates(estimator, params, unsorted):
    # The fit trusted scipy's cached has_canonical_format: each duplicate of a
    # cell was bounded on its own (the row's norm read as sqrt(k) * 5 instead
    # of k * 5) and the row moved dp_gd's gradient sum by 22x and dp_ssp's
    # Gram matrix by 500x their declared sensitivities.
    X, X_prime = _stale_flag_pair(unsorted)
    y = np.arange(41) % 2 if estimator is DPLogisticRegression else np.linspace(-1, 1, 41)
    traces = []
    for features, labels in ((X, y[:40]), (X_prime, y)):
        with trace_releases(substitute=lambda release: np.zeros(np.shape(release.output))) as t:
            estimator(epsilon=1.0, random_state=0, **params).fit(features, labels)
        traces.append(t.releases)
    assert X_prime.has_canonical_format  # the caller's matrix is untouched
    assert len(traces[0]) == len(traces[1])
    for a, b in zip(*traces):
        if a.value is None or a.label == "row count":
            continue
        moved = np.linalg.norm(np.ravel(np.asarray(b.value, float) - np.asarray(a.value, float)))
        assert moved <= a.sensitivity * (1 + 1e-6), (a.label, moved, a.sensitivity)
