"""Bounding private data: row clipping, label clipping, intercept handling.

Every bound here is a public parameter chosen by the user (or a public default);
none is read off the data.  Clipping is applied to every row, so a row of any
norm contributes at most the bound to any noisy sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

__all__ = [
    "BoundedData",
    "clip_rows_l2",
    "clip_rows_linf",
    "clip_labels",
    "row_l2_norms",
    "bound_data",
]


def row_l2_norms(X):
    """``||x_i||_2`` for each row of a dense array or a sparse matrix."""
    if sp.issparse(X):
        return np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def clip_rows_l2(X, bound):
    """Scale down every row whose L2 norm exceeds ``bound`` (a copy; X untouched)."""
    bound = float(bound)
    norms = row_l2_norms(X)
    scale = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(scale) @ X)
    return X * scale[:, None]


def clip_rows_linf(X, bound):
    """Clip every entry to ``[-bound, bound]`` (the L-infinity row bound)."""
    bound = float(bound)
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        np.clip(X.data, -bound, bound, out=X.data)
        return X
    return np.clip(X, -bound, bound)


def clip_labels(y, bound):
    """Clip regression labels to ``[-bound, bound]``."""
    return np.clip(np.asarray(y, dtype=float), -float(bound), float(bound))


@dataclass(frozen=True)
class BoundedData:
    """Private data after bounding, with the public bounds that hold for it.

    Attributes
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features + fit_intercept)
        Clipped rows, with a constant column ``intercept_scaling`` appended
        when ``fit_intercept``.
    y : ndarray of shape (n_samples,)
        Encoded (classification) or clipped (regression) labels.
    row_norms : ndarray of shape (n_samples,)
        L2 norms of the rows of ``X`` (private; used only inside clipping).
    row_norm_bound : float
        Public bound on ``row_norms``: ``sqrt(data_norm**2 + intercept_scaling**2)``
        with an intercept, ``data_norm`` without.
    penalized : ndarray of bool of shape (n_columns,)
        Which coefficients the penalty applies to (not the intercept).
    fit_intercept : bool
    intercept_scaling : float
    """

    X: object
    y: np.ndarray
    row_norms: np.ndarray
    row_norm_bound: float
    penalized: np.ndarray
    fit_intercept: bool
    intercept_scaling: float

    @property
    def n_samples(self):
        return self.X.shape[0]

    @property
    def n_columns(self):
        return self.X.shape[1]

    def split_coef(self, W):
        """(coef of shape (n_outputs, n_features), intercept of shape (n_outputs,))."""
        if self.fit_intercept:
            return W[:-1].T.copy(), W[-1] * self.intercept_scaling
        return W.T.copy(), np.zeros(W.shape[1])


def bound_data(X, y, *, data_norm, fit_intercept, intercept_scaling=1.0):
    """Clip rows of ``X`` to L2 norm ``data_norm`` and append the intercept column.

    The intercept column is constant (public) and not clipped, so every row of
    the result has L2 norm at most ``sqrt(data_norm**2 + intercept_scaling**2)``.
    """
    X = clip_rows_l2(X, data_norm)
    n_samples, n_features = X.shape
    if fit_intercept:
        column = np.full((n_samples, 1), float(intercept_scaling), dtype=X.dtype)
        X = sp.hstack([X, sp.csr_matrix(column)], format="csr") if sp.issparse(X) else np.hstack([X, column])
        bound = float(np.hypot(data_norm, intercept_scaling))
    else:
        bound = float(data_norm)
    penalized = np.ones(X.shape[1], dtype=bool)
    if fit_intercept:
        penalized[-1] = False
    return BoundedData(
        X=X,
        y=y,
        row_norms=row_l2_norms(X),
        row_norm_bound=bound,
        penalized=penalized,
        fit_intercept=bool(fit_intercept),
        intercept_scaling=float(intercept_scaling),
    )
