"""The bounded design matrix of a fit, as an operator on the caller's X (no copy).

A fit needs the rows of ``X`` bounded (scaled down to an L2 norm, or clipped
entrywise) and a constant intercept column appended.  Materialising that
matrix copies X once or twice; :class:`Design` represents it instead as

    X~ = [diag(row_scale) (X - excess  with the patched rows replaced), intercept * 1]

* ``row_scale``: one factor per row (L2 clipping scales a whole row);
* ``excess``: a sparse matrix holding, for the entries beyond an entrywise
  bound by a moderate factor, how far beyond they are (usually few entries);
* *patched rows*: the few rows that cannot be handled by a factor or a
  moderate correction without losing digits (an entry millions of times its
  bound, a norm that over- or underflows): their bounded values are stored
  exactly, and products overwrite those rows' results;
* ``intercept``: the public value of the constant intercept column.

Products then cost what products with X cost, plus n-vectors:

    X~ W   = row_scale * (X W[:d] - excess W[:d], patched rows recomputed) + intercept * W[d]
    X~^T V = [X^T U - excess^T U + patch^T (row_scale V)[patched];  intercept * sum(V)]
             with U = row_scale * V, zero on the patched rows.

float32 input stays float32: scores (``X W``, a short sum per row) are
computed in float32, and sums over rows (gradient sums, Gram matrices)
accumulate in float64, block by block, so a sum over a million rows is as
exact as in float64.  The bounds of a row are computed in float64 from its
float32 values, so clipping holds as in float64.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["Design", "BLOCK_ROWS", "EXCESS_FACTOR", "GRAM_BLOCK_BYTES", "block_rows"]

#: Rows per block when a product accumulates in float64 or a bound is
#: computed (65536 x 100 float64 is 52 MB, far below the X it comes from).
BLOCK_ROWS = 65536

#: Bytes of one float64 block of rows in a Gram product (4 MiB): the BLAS
#: symmetric update is as fast on such blocks as on the whole matrix, and
#: the block costs no memory to speak of next to X.
GRAM_BLOCK_BYTES = 1 << 22

#: Entries beyond ``EXCESS_FACTOR`` times their bound (and rows whose norm
#: over- or underflows) are patched exactly instead of corrected by
#: subtraction, whose cancellation would lose digits.
EXCESS_FACTOR = 1e6


def block_rows(n_rows, n_features, nnz=None):
    """Rows per block of a blockwise pass over X.

    About ``GRAM_BLOCK_BYTES`` of float64 (for a sparse X with ``nnz`` stored
    entries, of its CSR rows: 12 bytes an entry) and at most a sixteenth of
    the rows (at least 256, at most ``BLOCK_ROWS``): a block's copy stays
    small next to X whatever its shape (a fixed count of rows would copy all
    of a small X, and a wide block most of a float32 one), and sparse blocks
    are not so small that per-block overhead dominates.
    """
    if nnz is None:
        per_row = 8 * max(1, int(n_features))
    else:
        per_row = 12 * max(1.0, nnz / max(1, int(n_rows)))
    return int(max(256, min(BLOCK_ROWS, GRAM_BLOCK_BYTES // per_row, -(-int(n_rows) // 16))))


def _as_2d(V):
    V = np.asarray(V)
    return (V[:, None], True) if V.ndim == 1 else (V, False)


def _float64(block):
    if sp.issparse(block):
        return sp.csr_matrix(block, dtype=np.float64)
    return np.asarray(block, dtype=np.float64)


class Design:
    """The bounded rows of ``X`` plus an intercept column, without copying ``X``.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
        The caller's features (float32 or float64; CSR canonical).  Not
        copied, never modified.
    row_scale : ndarray of shape (n,) or None
        Per-row factors (L2 clipping); None for ones.
    excess : CSR matrix of shape (n, d) or None
        Amounts to subtract from entries beyond their entrywise bound (zero
        on the patched rows).
    patch_rows : ndarray of int or None
        Rows whose values before ``row_scale`` are given exactly by ``patch``.
    patch : ndarray or CSR matrix of shape (len(patch_rows), d), float64
    intercept : float or None
        Value of the constant intercept column; None for none.
    """

    def __init__(self, X, *, row_scale=None, excess=None, patch_rows=None, patch=None,
                 intercept=None):
        self.X = X
        self.n_rows, self.n_features = X.shape
        self.row_scale = None if row_scale is None else np.asarray(row_scale, dtype=np.float64)
        self.excess = excess if excess is None or excess.nnz else None
        if patch_rows is not None and len(patch_rows) == 0:
            patch_rows, patch = None, None
        self.patch_rows = None if patch_rows is None else np.asarray(patch_rows, dtype=np.intp)
        self.patch = patch
        self.intercept = None if intercept is None else float(intercept)
        self.n_columns = self.n_features + (self.intercept is not None)
        self.shape = (self.n_rows, self.n_columns)
        self.sparse = sp.issparse(X)
        self.dtype = X.dtype

    # -- products ----------------------------------------------------------------

    def _features_dot(self, W):
        """Bounded (before ``row_scale``) features times W, (n, k) float64."""
        # Overflow here is repaired in matmul (rows recomputed from bounded values).
        with np.errstate(over="ignore", invalid="ignore"):
            if self.dtype == np.float32:
                Z = np.asarray(self.X @ W.astype(np.float32)).astype(np.float64)
            else:
                Z = np.asarray(self.X @ W, dtype=np.float64)
        if self.excess is not None:
            Z -= np.asarray(self.excess @ W)
        if self.patch_rows is not None:
            Z[self.patch_rows] = np.asarray(self.patch @ W)
        return Z

    def matmul(self, W):
        """``X~ @ W`` for W of shape (n_columns,) or (n_columns, k), as float64."""
        W2, flat = _as_2d(np.asarray(W, dtype=np.float64))
        Z = self._features_dot(W2[: self.n_features])
        if self.row_scale is not None:
            Z *= self.row_scale[:, None]
        if self.intercept is not None:
            Z += self.intercept * W2[self.n_features]
        # X W is computed before the row factors (in float32 for float32 X):
        # a long row (entries near the float32 maximum, or beyond ~1e154 in
        # float64 times a large W) overflows there although its bounded row
        # (norm at most the bound) has a finite score.  A non-finite score
        # would turn that row's clipped gradient into NaN, and one hostile
        # row would change the whole release.  Such rows are recomputed from
        # their bounded float64 values (the factor applied first).
        bad = np.flatnonzero(~np.all(np.isfinite(Z), axis=1))
        if bad.size and np.all(np.isfinite(W2)):
            bounded = self.rows(bad).materialize()
            Z[bad] = np.asarray(bounded @ W2, dtype=np.float64)
        return Z[:, 0] if flat else Z

    def _x_transpose_dot(self, U):
        """``X^T U`` for U of shape (n, k), accumulated in float64."""
        if self.dtype == np.float64:
            return np.asarray(self.X.T @ U)
        # Converted blocks of about GRAM_BLOCK_BYTES, not BLOCK_ROWS rows: a
        # 65536-row float64 copy of a float32 X is most of X's own size until
        # X has millions of rows.
        out = np.zeros((self.n_features, U.shape[1]))
        step = self._gram_block_rows()
        for start in range(0, self.n_rows, step):
            stop = min(start + step, self.n_rows)
            out += np.asarray(_float64(self.X[start:stop]).T @ U[start:stop])
        return out

    def rmatmul(self, V):
        """``X~^T @ V`` for V of shape (n,) or (n, k), as float64."""
        V2, flat = _as_2d(np.asarray(V, dtype=np.float64))
        scaled = V2 * self.row_scale[:, None] if self.row_scale is not None else V2
        U = scaled
        if self.patch_rows is not None:
            U = scaled.copy()
            U[self.patch_rows] = 0.0
        out = self._x_transpose_dot(U)
        if self.excess is not None:
            out -= np.asarray(self.excess.T @ U)
        if self.patch_rows is not None:
            out += np.asarray(self.patch.T @ scaled[self.patch_rows])
        if self.intercept is not None:
            out = np.vstack([out, self.intercept * V2.sum(axis=0, keepdims=True)])
        return out[:, 0] if flat else out

    def _bounded_block(self, start, stop):
        """Rows start:stop bounded (before ``row_scale``), float64 (dense or CSR)."""
        block = _float64(self.X[start:stop])
        if self.excess is not None:
            block = block - self.excess[start:stop]
            block = sp.csr_matrix(block) if sp.issparse(block) else np.asarray(block)
        if self.patch_rows is not None:
            inside = (self.patch_rows >= start) & (self.patch_rows < stop)
            if np.any(inside):
                local = self.patch_rows[inside] - start
                values = self.patch[np.flatnonzero(inside)]
                if sp.issparse(block):
                    keep = np.ones(stop - start)
                    keep[local] = 0.0
                    block = sp.diags(keep) @ block
                    rows = sp.csr_matrix(
                        (np.ones(local.size), (local, np.arange(local.size))),
                        shape=(stop - start, local.size),
                    )
                    block = sp.csr_matrix(block + rows @ sp.csr_matrix(values))
                else:
                    block = block.copy() if block is not None else block
                    block[local] = values.toarray() if sp.issparse(values) else values
        return block

    def _gram_block_rows(self):
        """Rows per block of a blockwise product (see :func:`block_rows`)."""
        return block_rows(self.n_rows, self.n_features, self.X.nnz if self.sparse else None)

    def gram(self, weights=None):
        """``X~^T diag(weights) X~`` of shape (n_columns, n_columns), float64.

        With nonnegative weights (or none) each block of rows is scaled by
        ``sqrt(weights) * row_scale`` and multiplied by its own transpose (a
        symmetric rank-k update: half the flops of a general product); blocks
        hold about ``GRAM_BLOCK_BYTES`` whatever the size of X.
        """
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        if w is not None and np.any(w < 0):
            return self._gram_general(w)
        d = self.n_features
        G = np.zeros((self.n_columns, self.n_columns))
        column = np.zeros(d)
        total = 0.0
        step = self._gram_block_rows()
        for start in range(0, self.n_rows, step):
            stop = min(start + step, self.n_rows)
            block = self._bounded_block(start, stop)
            root = None if w is None else np.sqrt(w[start:stop])
            factor = root
            if self.row_scale is not None:
                scale = self.row_scale[start:stop]
                factor = scale if root is None else root * scale
            if sp.issparse(block):
                if factor is not None:
                    block = sp.csr_matrix(sp.diags(factor) @ block)
                G[:d, :d] += np.asarray((block.T @ block).toarray())
            else:
                if factor is not None:
                    block = block * factor[:, None]
                G[:d, :d] += block.T @ block
            if self.intercept is not None:
                # sum_i w_i s_i x_i = sum_i (sqrt(w_i) s_i x_i) sqrt(w_i)
                weight_root = np.ones(stop - start) if root is None else root
                column += np.asarray(block.T @ weight_root).ravel()
                total += float(stop - start) if w is None else float(w[start:stop].sum())
        if self.intercept is not None:
            G[:d, d] = self.intercept * column
            G[d, :d] = self.intercept * column
            G[d, d] = self.intercept**2 * total
        return G

    def _gram_general(self, w):
        """``X~^T diag(w) X~`` for weights of any sign (a general product per block)."""
        # Features-features: w s^2; features-intercept: w s; intercept-intercept: w.
        cross = w if self.row_scale is None else w * self.row_scale
        square = w if self.row_scale is None else cross * self.row_scale
        d = self.n_features
        G = np.zeros((self.n_columns, self.n_columns))
        column = np.zeros(d)
        step = self._gram_block_rows()
        for start in range(0, self.n_rows, step):
            stop = min(start + step, self.n_rows)
            block = self._bounded_block(start, stop)
            weight = square[start:stop]
            if sp.issparse(block):
                G[:d, :d] += np.asarray((block.T @ (sp.diags(weight) @ block)).toarray())
                column += np.asarray(block.T @ cross[start:stop]).ravel()
            else:
                G[:d, :d] += block.T @ (weight[:, None] * block)
                column += block.T @ cross[start:stop]
        if self.intercept is not None:
            G[:d, d] = self.intercept * column
            G[d, :d] = self.intercept * column
            G[d, d] = self.intercept**2 * w.sum()
        return G

    # -- rows, columns, norms ------------------------------------------------------------

    def rows(self, index):
        """The design restricted to the rows ``index`` (copies those rows only)."""
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        patch_rows = patch = None
        if self.patch_rows is not None:
            position = np.full(self.n_rows, -1, dtype=np.intp)
            position[self.patch_rows] = np.arange(self.patch_rows.size)
            chosen = position[index]
            inside = chosen >= 0
            patch_rows = np.flatnonzero(inside)
            patch = self.patch[chosen[inside]]
        return Design(
            self.X[index],
            row_scale=None if self.row_scale is None else self.row_scale[index],
            excess=None if self.excess is None else self.excess[index],
            patch_rows=patch_rows,
            patch=patch,
            intercept=self.intercept,
        )

    def columns(self, cols):
        """Columns ``cols`` of ``X~`` (the intercept is column ``n_features``), float64.

        A dense (n, len(cols)) array, or CSR for sparse X: a copy of the block.
        """
        cols = np.asarray(cols, dtype=np.intp)
        features = cols[cols < self.n_features]
        if self.sparse:
            block = sp.csr_matrix(self.X[:, features], dtype=np.float64)
        else:
            block = np.asarray(self.X[:, features], dtype=np.float64)
        if self.excess is not None:
            block = block - self.excess[:, features]
            block = sp.csr_matrix(block) if self.sparse else np.asarray(block)
        if self.patch_rows is not None:
            values = self.patch[:, features]
            if self.sparse:
                keep = np.ones(self.n_rows)
                keep[self.patch_rows] = 0.0
                rows = sp.csr_matrix(
                    (np.ones(self.patch_rows.size),
                     (self.patch_rows, np.arange(self.patch_rows.size))),
                    shape=(self.n_rows, self.patch_rows.size),
                )
                block = sp.csr_matrix(sp.diags(keep) @ block + rows @ sp.csr_matrix(values))
            else:
                block[self.patch_rows] = values.toarray() if sp.issparse(values) else values
        if self.row_scale is not None:
            block = sp.csr_matrix(sp.diags(self.row_scale) @ block) if self.sparse else (
                block * self.row_scale[:, None]
            )
        if features.size == cols.size:
            return block
        # The intercept column, at its place in cols.
        order = np.argsort(np.argsort(cols))
        constant = np.full((self.n_rows, 1), self.intercept)
        if self.sparse:
            block = sp.hstack([block, sp.csr_matrix(constant)], format="csr")
            return block[:, order]
        return np.hstack([block, constant])[:, order]

    def row_norms(self):
        """L2 norm of each row of ``X~`` (intercept included), float64, under/overflow-safe."""
        from ._data import row_l2_norms

        norms = np.empty(self.n_rows)
        step = self._gram_block_rows()
        for start in range(0, self.n_rows, step):
            stop = min(start + step, self.n_rows)
            norms[start:stop] = row_l2_norms(self._bounded_block(start, stop))
        if self.row_scale is not None:
            with np.errstate(over="ignore"):
                norms = norms * self.row_scale
        if self.intercept is not None:
            norms = np.hypot(norms, self.intercept)
        return norms

    def materialize(self):
        """``X~`` as a float64 matrix of the input's kind: a CSR matrix for sparse X, else dense.

        A full copy: for tests, references and code not yet written against
        the operator.
        """
        if not self.sparse:
            return self.toarray()
        blocks = [sp.csr_matrix(self._bounded_block(s, min(s + BLOCK_ROWS, self.n_rows)))
                  for s in range(0, self.n_rows, BLOCK_ROWS)]
        X = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, self.n_features))
        if self.row_scale is not None:
            X = sp.csr_matrix(sp.diags(self.row_scale) @ X)
        if self.intercept is not None:
            column = sp.csr_matrix(np.full((self.n_rows, 1), self.intercept))
            X = sp.hstack([X, column], format="csr")
        return X

    def toarray(self):
        """``X~`` as a dense float64 array (for tests and references only)."""
        blocks = [self._bounded_block(s, min(s + BLOCK_ROWS, self.n_rows))
                  for s in range(0, self.n_rows, BLOCK_ROWS)]
        blocks = [b.toarray() if sp.issparse(b) else b for b in blocks]
        X = np.vstack(blocks) if blocks else np.zeros((0, self.n_features))
        if self.row_scale is not None:
            X = X * self.row_scale[:, None]
        if self.intercept is not None:
            X = np.hstack([X, np.full((self.n_rows, 1), self.intercept)])
        return X

    @property
    def nbytes_beyond_X(self):
        """Memory this design holds beyond ``X`` itself (bytes)."""
        total = 0 if self.row_scale is None else self.row_scale.nbytes
        for matrix in (self.excess, self.patch):
            if matrix is None:
                continue
            if sp.issparse(matrix):
                total += matrix.data.nbytes + matrix.indices.nbytes + matrix.indptr.nbytes
            else:
                total += matrix.nbytes
        if self.patch_rows is not None:
            total += self.patch_rows.nbytes
        return total
