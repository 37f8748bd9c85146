"""A block of columns of a bounded design matrix, as an operator (no copy).

:class:`ColumnView` serves columns of a :class:`~sklearn_dp._design.Design`
(or of a scaled design) through the whole design's products, for blocks of
columns too large to copy.  Re-exported by ``sklearn_dp._design``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _as_2d(V):
    V = np.asarray(V)
    return (V[:, None], True) if V.ndim == 1 else (V, False)


class ColumnView:
    """Columns ``cols`` of a :class:`~sklearn_dp._design.Design` as an operator, without a copy.

    For blocks of columns too large to copy: products go through the whole
    design (``matmul`` pads the coefficients with zeros, ``rmatmul`` keeps
    the rows of the full product that belong to ``cols``), so they cost a
    product with X.  ``cols`` is sorted, the intercept (column
    ``n_features``) last if present.
    """

    def __init__(self, design, cols):
        cols = np.asarray(cols, dtype=np.intp).ravel()
        if np.any(np.diff(cols) <= 0):
            raise ValueError("ColumnView needs sorted, distinct columns.")
        self.design = design
        self.cols = cols
        self.features = cols[cols < design.n_features]
        self.has_intercept = self.features.size < cols.size
        self.n_rows = design.n_rows
        self.n_columns = cols.size
        self.shape = (self.n_rows, self.n_columns)
        self.sparse = design.sparse
        self.dtype = design.dtype

    def matmul(self, W):
        """``X~[:, cols] @ W`` (float64)."""
        W2, flat = _as_2d(np.asarray(W, dtype=np.float64))
        if not self.features.size:  # the intercept column alone
            Z = np.repeat(self.design.intercept * W2[-1:], self.n_rows, axis=0)
            return Z[:, 0] if flat else Z
        full = np.zeros((self.design.n_columns, W2.shape[1]))
        full[self.cols] = W2
        Z = self.design.matmul(full)
        return Z[:, 0] if flat else Z

    def rmatmul(self, V):
        """``X~[:, cols]^T @ V`` (float64)."""
        if not self.features.size:  # the intercept column alone
            V2, flat = _as_2d(np.asarray(V, dtype=np.float64))
            out = self.design.intercept * V2.sum(axis=0, keepdims=True)
            return out[:, 0] if flat else out
        return self.design.rmatmul(V)[self.cols]

    def row_norms(self, ord=2):
        """Norms of the rows of ``X~[:, cols]`` (see :meth:`~sklearn_dp._design.Design.row_norms`)."""
        if not self.features.size:  # the intercept column alone (read-only, no n-vector)
            return np.broadcast_to(abs(self.design.intercept), (self.n_rows,))
        return self.design._row_norms(self.features, ord, self.has_intercept)

    def toarray(self):
        """``X~[:, cols]`` as a dense float64 array."""
        block = self.design.columns(self.cols)
        return block.toarray() if sp.issparse(block) else block
