"""A block of columns of a bounded design matrix, as an operator (no copy).

:class:`ColumnView` serves columns of a :class:`~sklearn_dp._design.Design`
(or of a scaled design) through the whole design's products, for blocks of
columns too large to copy.  Re-exported by ``sklearn_dp._design``.

Sums over rows that want the columns themselves (a Gram matrix, ``X~^T y``
on a support) go block by block of rows instead: a block of rows is small
(the design sizes its blocks by bytes at full width), so its columns are
copied, with the bounded values of :meth:`~sklearn_dp._design.Design.columns`.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._blocks import BLOCK_ROWS


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

    def blocks(self):
        """``(start, stop)`` of the row blocks of a blockwise pass over the copied columns.

        A block of the view copies about the bytes of a block of the whole
        design (the design's rows per block times the ratio of its width,
        stored entries for sparse X, to the view's), at most ``BLOCK_ROWS``
        rows: a narrow view makes few blocks, a view of every column the
        design's own.
        """
        full = self.design.blocks()
        if len(full) <= 1:
            return full
        rows = full[0][1] - full[0][0]
        if self.sparse:
            counts = self.design._column_counts()
            stored = int(counts[self.features].sum()) + self.n_rows * self.has_intercept
            ratio = max(1, self.design.X.nnz) / max(1, stored)
        else:
            ratio = self.design.n_features / self.n_columns
        step = max(rows, min(BLOCK_ROWS, int(rows * ratio)))
        return [(start, min(start + step, self.n_rows)) for start in range(0, self.n_rows, step)]

    def row_block(self, start, stop):
        """Rows ``start:stop`` of ``X~[:, cols]``, copied: a matrix (dense, Fortran-ordered, or CSR).

        The values of :meth:`~sklearn_dp._design.Design.columns` on those
        rows, bit for bit (each row bounded exactly, patched rows replaced,
        then scaled); products with the copy cost ``len(cols)`` a row, not
        ``n_features``.  The functions of :mod:`sklearn_dp._clipped_sums`
        take a matrix wherever they take a design.
        """
        whole = start == 0 and stop == self.n_rows  # the design's own (cached) column index
        return (self.design if whole else self.design.row_block(start, stop)).columns(self.cols)

    def gram(self, weights=None):
        """``X~[:, cols]^T diag(weights) X~[:, cols]`` of shape (n_columns, n_columns), float64.

        Block by block of rows (:meth:`row_block`), each block's product
        added in float64: every term of the sum is a bounded row's term
        ``w_i z_i z_i^T`` (no correction is subtracted from a sum that held
        raw entries), so one row moves the result by its own term, which is
        what the sensitivity of a Gram release covers.  ``weights`` may have
        any sign.
        """
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        G = np.zeros((self.n_columns, self.n_columns))
        for start, stop in self.blocks():
            Z = self.row_block(start, stop)
            if w is None:
                weighted = Z
            elif sp.issparse(Z):
                weighted = sp.csr_matrix(sp.diags(w[start:stop]) @ Z)
            else:
                weighted = Z * w[start:stop, None]
            part = Z.T @ weighted
            G += part.toarray() if sp.issparse(part) else part
            Z = weighted = part = None  # one block alive at a time
        return G

    def row_norms(self, ord=2):
        """Norms of the rows of ``X~[:, cols]`` (see :meth:`~sklearn_dp._design.Design.row_norms`)."""
        if not self.features.size:  # the intercept column alone (read-only, no n-vector)
            return np.broadcast_to(abs(self.design.intercept), (self.n_rows,))
        return self.design._row_norms(self.features, ord, self.has_intercept)

    def toarray(self):
        """``X~[:, cols]`` as a dense float64 array."""
        block = self.design.columns(self.cols)
        return block.toarray() if sp.issparse(block) else block
