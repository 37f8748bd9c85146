"""The bounded design matrix of a fit, as an operator on the caller's X (no copy).

A fit needs the rows of ``X`` bounded (scaled down to an L2 norm, or clipped
entrywise) and a constant intercept column appended.  Materialising that
matrix copies X once or twice; :class:`Design` represents it instead as

    X~ = [diag(row_scale) (X clipped to entry_bound, the patched rows replaced), intercept * 1]

* ``row_scale``: one factor per row (L2 clipping scales a whole row);
* ``excess``: a sparse matrix holding, for the entries beyond their entrywise
  bound ``entry_bound`` by a moderate factor, how far beyond they are
  (usually few entries); their bounded value is ``copysign(entry_bound, x)``;
* *patched rows*: the few rows that cannot be handled by a factor or a
  moderate correction without losing digits (an entry millions of times its
  bound, a norm that over- or underflows): their bounded values are stored
  exactly, and products overwrite those rows' results;
* ``intercept``: the public value of the constant intercept column.

Products then cost what products with X cost, plus n-vectors:

    X~ W   = row_scale * (X W[:d] - excess W[:d], patched rows recomputed) + intercept * W[d]
    X~^T V = [X^T U + bounded(E)^T (row_scale V)[E] + patch^T (row_scale V)[patched];
              intercept * sum(V)]
             with U = row_scale * V, zero on the patched rows and on the rows E
             that have an entry beyond its bound (block by block of rows; a
             block where E is dense is bounded as a whole instead).

Sums over rows never subtract the excess from a sum that holds the raw
entries (``X^T U - excess^T U``): an entry a million times its bound puts
terms a million times a row's bounded term into the running sum, and the
rounding of that sum (which grows with n) does not cancel in the
subtraction, so a row's pre-noise contribution would exceed what its
bounded values allow.  The rows E are summed from their exactly clipped
values instead, so every term of a sum over rows is a bounded row's term.

float32 input stays float32, and what is computed in float32 follows one
rule: a per-row quantity may be rounded, a sum over rows that is released
may not.

* Per row, in float32: the L2 norms that bound a row
  (``sklearn_dp._data.row_l2_norms``: a float32 sum of squares turned into
  a proven upper bound).  Whatever their rounding, each row's term is
  clipped or scaled afterwards from a bound at least its norm (factors
  rounded down, norms rounded up), so one row moves a release by at most
  its sensitivity.
* The scores ``X W`` are float64 products of converted blocks: BLAS rounds a
  row's dot product by where the row falls in its block, so an added row
  changes the other rows' rounding (in float32 by 5 times the gateway's
  margin on a release; in float64 below 1e-15 of the sensitivity).
* Over rows, in float64: gradient sums ``X~^T v`` and Gram matrices.  A
  float32 sum of ``n`` bounded terms is off by up to about ``n 2**-24``
  times the sum of ``|terms|``, data-dependent and far beyond any
  sensitivity (a row's term is at most the sensitivity; a million rows
  make the error up to 6% of the sum): no release may carry that.  Each
  block of float32 rows is converted to float64 (exactly; a float32
  factor times a float32 entry is exact in float64 too) and multiplied
  with float64 BLAS, so a float32 pass reads half the bytes of a float64
  one from memory and does the arithmetic of a float64 pass.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._blocks import (
    BLOCK_ROWS,
    GRAM_BLOCK_BYTES,
    MIN_BLOCK_ROWS,
    block_ranges,
    block_rows,
    fine_block_ranges,
)
from ._column_view import ColumnView, _as_2d

__all__ = [
    "Design",
    "ColumnView",
    "as_design",
    "block_rows",
    "block_ranges",
    "fine_block_ranges",
    "BLOCK_ROWS",
    "EXCESS_FACTOR",
    "GRAM_BLOCK_BYTES",
]


def as_design(X):
    """``X`` itself if it is a :class:`Design` or :class:`ColumnView`, else a plain design over it."""
    if isinstance(X, (Design, ColumnView)):
        return X
    return Design(X)


#: Entries beyond ``EXCESS_FACTOR`` times their bound (and rows whose norm
#: over- or underflows) are patched exactly instead of corrected by
#: subtraction, whose cancellation would lose digits.
EXCESS_FACTOR = 1e6


#: Share of a sparse X's bytes that the temporaries of one slab of a Gram
#: update may take: ``block^T @ block`` of a sparse block is a nearly dense
#: d x d matrix, stored sparse (12 bytes an entry) and then dense (8), which
#: for a sparse X of few entries a row is a sizeable part of X itself.
SPARSE_GRAM_SHARE = 1.0 / 32.0


def _add_sparse_gram(G, left, right, width):
    """``G[:d, :d] += left^T @ right`` for CSR blocks, ``width`` output columns at a time.

    Each slab's product (at most ``d * width`` entries, sparse then dense)
    is the only temporary, so the update never holds a d x d temporary.
    """
    d = left.shape[1]
    left_t = left.T.tocsr()  # (d, rows): one conversion of the block
    if width >= d:
        G[:d, :d] += np.asarray((left_t @ right).toarray())
        return
    right = right.tocsc()  # column slabs of CSC are contiguous slices
    for j0 in range(0, d, width):
        j1 = min(d, j0 + width)
        G[:d, j0:j1] += np.asarray((left_t @ right[:, j0:j1]).toarray())


def _nonfinite_rows(Z):
    """Indices of the rows of ``Z`` with an inf or NaN entry.

    One sum first: it is finite when every entry is (the common case), and a
    sum that overflows only costs the full check.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.sum(Z)):
            return np.zeros(0, dtype=np.intp)
    return np.flatnonzero(~np.all(np.isfinite(Z), axis=1))


def _row_slice(X, start, stop):
    """Rows ``start:stop`` of X: a view (for CSR, of its arrays: scipy's slicing copies them).

    Callers that modify a block in place check ``np.may_share_memory`` first (a
    bounds check: conservative, and cheap where ``np.shares_memory`` solves for overlap).
    """
    if not sp.issparse(X):
        return X[start:stop]
    lo, hi = X.indptr[start], X.indptr[stop]
    return sp.csr_matrix(
        (X.data[lo:hi], X.indices[lo:hi], X.indptr[start : stop + 1] - lo),
        shape=(stop - start, X.shape[1]),
        copy=False,
    )


def _rounded_up(values, dtype):
    """float64 ``values`` as ``dtype``; for float32, each rounded *up* (an upper bound)."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return values
    with np.errstate(over="ignore"):
        rounded = values.astype(dtype)
    # In place where the conversion rounded down (no gather of those rows).
    np.nextafter(rounded, dtype.type(np.inf), out=rounded, where=rounded < values)
    return rounded


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
        Per-row factors (L2 clipping); None for ones.  float64, or float32
        (for float32 X: factors rounded *down*, so scaled rows stay within
        their bound; half the memory).
    excess : CSR matrix of shape (n, d) or None
        Amounts by which entries lie beyond their entrywise bound (zero on
        the patched rows): it locates them, and corrects scores.
    entry_bound : ndarray of shape (d,) or None
        The entrywise bounds (required with ``excess``): an entry beyond its
        bound stands for ``copysign(entry_bound[j], x)``, exactly.
    patch_rows : ndarray of int or None
        Rows whose values before ``row_scale`` are given exactly by ``patch``.
    patch : ndarray or CSR matrix of shape (len(patch_rows), d), float64
    intercept : float or None
        Value of the constant intercept column; None for none.
    row_norms : ndarray of shape (n,) or None
        The L2 norms of the rows of ``X~`` (intercept included) as
        :meth:`row_norms` computes them, float64 or (for float32 X) float32
        rounded up, when the pass that bounded the rows has them already
        (``bound_data``): a fit then makes one row-norm pass, not two.
    """

    def __init__(
        self,
        X,
        *,
        row_scale=None,
        excess=None,
        entry_bound=None,
        patch_rows=None,
        patch=None,
        intercept=None,
        row_norms=None,
    ):
        self.X = X
        self.n_rows, self.n_features = X.shape
        if row_scale is not None:
            row_scale = np.asarray(row_scale)
            if row_scale.dtype != np.float32:  # float32 factors (of a float32 X) stay so
                row_scale = row_scale.astype(np.float64, copy=False)
        self.row_scale = row_scale
        self.excess = excess if excess is None or excess.nnz else None
        if self.excess is not None and entry_bound is None:
            raise ValueError("A design with excess entries needs their entry_bound.")
        self.entry_bound = (
            None
            if entry_bound is None
            else np.broadcast_to(np.asarray(entry_bound, dtype=np.float64), (self.n_features,))
        )
        self._excess_row_index = None
        if patch_rows is not None and len(patch_rows) == 0:
            patch_rows, patch = None, None
        if patch_rows is not None:
            patch_rows = np.asarray(patch_rows, dtype=np.intp)
            if np.any(np.diff(patch_rows) < 0):  # kept sorted: rows() looks them up
                order = np.argsort(patch_rows, kind="stable")
                patch_rows, patch = patch_rows[order], patch[order]
        self.patch_rows = patch_rows
        self.patch = patch
        self.intercept = None if intercept is None else float(intercept)
        self.n_columns = self.n_features + (self.intercept is not None)
        self.shape = (self.n_rows, self.n_columns)
        self.sparse = sp.issparse(X)
        self.dtype = X.dtype
        self._l2_norms = row_norms
        # A float64 buffer that the products X^T U convert dense float32
        # blocks into (None: a fresh array per block).  Set by callers that
        # make many passes in a process whose allocator returns every large
        # free to the system (Dask workers): each fresh block is then paged
        # in again, which costs more than the product itself.
        self.workspace = None

    def _blocks(self):
        """``(start, stop)`` of the row blocks of a pass over X (see :func:`block_rows`)."""
        if getattr(self, "_one_block", False):  # a block of a larger design: one pass
            return [(0, self.n_rows)] if self.n_rows else []
        return block_ranges(*self._block_shape())

    def blocks(self):
        """``(start, stop)`` of the row blocks of a blockwise pass over ``X~``.

        Kernels that form per-row vectors (scores, derivatives, clip factors)
        form them block by block (:meth:`row_block`), so a pass holds no
        n-vector beyond what the fit keeps.
        """
        return self._blocks()

    def row_block(self, start, stop):
        """Rows ``start:stop`` of the design as a design (a view of dense X; no n-vector).

        Its own passes treat it as one block.  Products with it equal the
        rows ``start:stop`` of products with the whole design.
        """
        patch_rows = patch = None
        if self.patch_rows is not None:
            lo, hi = np.searchsorted(self.patch_rows, [start, stop])
            if hi > lo:
                patch_rows = self.patch_rows[lo:hi] - start
                patch = self.patch[lo:hi]
        block = Design(
            _row_slice(self.X, start, stop),
            row_scale=None if self.row_scale is None else self.row_scale[start:stop],
            excess=None if self.excess is None else self.excess[start:stop],
            entry_bound=self.entry_bound,
            patch_rows=patch_rows,
            patch=patch,
            intercept=self.intercept,
            row_norms=None if self._l2_norms is None else self._l2_norms[start:stop],
        )
        block._one_block = True
        block.workspace = getattr(self, "workspace", None)
        return block

    def _gram_block_rows(self):
        """Rows per block of a blockwise product (see :func:`block_rows`)."""
        return block_rows(*self._block_shape())

    def _block_shape(self):
        """``(n_rows, n_features, nnz, itemsize)``: what :func:`block_rows` sizes blocks from."""
        nnz = self.X.nnz if self.sparse else None
        return self.n_rows, self.n_features, nnz, self.X.dtype.itemsize

    # -- products ----------------------------------------------------------------

    def _features_dot(self, W):
        """Bounded (before ``row_scale``) features times W, (n, k) float64."""
        if self.dtype == np.float32:
            # Converted blocks, float64 products: a float32 BLAS product rounds a
            # row's score differently by where the row falls in its block, so one
            # added row would move the other rows' scores (and their clipped
            # terms) by float32 roundings, beyond the release's sensitivity.
            # Half the usual rows a block: float64 copies of about 1/16 of X's bytes.
            step = max(MIN_BLOCK_ROWS, block_rows(self.n_rows, self.n_features) // 2)
            Z = np.empty((self.n_rows, W.shape[1]))
            with np.errstate(over="ignore", invalid="ignore"):
                for start in range(0, self.n_rows, step):
                    stop = min(start + step, self.n_rows)
                    Z[start:stop] = np.asarray(self._float64_rows(start, stop) @ W)
        else:
            # Overflow here is repaired in matmul (rows recomputed from bounded values).
            with np.errstate(over="ignore", invalid="ignore"):
                Z = np.asarray(self.X @ W, dtype=np.float64)
        if self.excess is not None:
            # By blocks of rows: no second (n, k) temporary.
            excess = self.excess
            for start, stop in block_ranges(self.n_rows, self.n_features, excess.nnz):
                lo, hi = excess.indptr[start], excess.indptr[stop]
                if hi > lo:
                    Z[start:stop] -= np.asarray(excess[start:stop] @ W)
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
        bad = _nonfinite_rows(Z)
        if bad.size and np.all(np.isfinite(W2)):
            bounded = self.rows(bad).materialize()
            Z[bad] = np.asarray(bounded @ W2, dtype=np.float64)
        return Z[:, 0] if flat else Z

    def _float64_rows(self, start, stop):
        """Rows ``start:stop`` of X as float64, for a product used at once (no copy for float64 X).

        A converted dense block is written into ``workspace`` when it is set
        and large enough: it is overwritten by the next block.
        """
        block = _row_slice(self.X, start, stop)
        space = getattr(self, "workspace", None)
        if space is None or sp.issparse(block) or block.dtype == np.float64:
            return _float64(block)
        if space.size < block.size:
            return _float64(block)
        out = space[: block.size].reshape(block.shape)
        np.copyto(out, block)
        return out

    def _x_transpose_dot(self, U):
        """``X^T U`` for U of shape (n, k), accumulated in float64."""
        if self.dtype == np.float64:
            return np.asarray(self.X.T @ U)
        # Converted blocks of about GRAM_BLOCK_BYTES, not BLOCK_ROWS rows: a
        # 65536-row float64 copy of a float32 X is most of X's own size until
        # X has millions of rows.
        out = np.zeros((self.n_features, U.shape[1]))
        for start, stop in self._blocks():
            out += np.asarray(self._float64_rows(start, stop).T @ U[start:stop])
        return out

    def rmatmul(self, V):
        """``X~^T @ V`` for V of shape (n,) or (n, k), as float64."""
        V2, flat = _as_2d(np.asarray(V, dtype=np.float64))
        scaled = V2 * self.row_scale[:, None] if self.row_scale is not None else V2
        if self.excess is not None:
            out = self._clipped_rmatmul(scaled)
        else:
            U = scaled
            if self.patch_rows is not None:
                U = scaled.copy()
                U[self.patch_rows] = 0.0
            out = self._x_transpose_dot(U)
            if self.patch_rows is not None:
                out += np.asarray(self.patch.T @ scaled[self.patch_rows])
        if self.intercept is not None:
            out = np.vstack([out, self.intercept * V2.sum(axis=0, keepdims=True)])
        return out[:, 0] if flat else out

    def _excess_rows(self):
        """Rows with an entry beyond its bound (not patched), sorted (made once)."""
        if self._excess_row_index is None:
            self._excess_row_index = np.flatnonzero(np.diff(self.excess.indptr))
        return self._excess_row_index

    def _clip_entries(self, block, sub):
        """``block`` (float64 rows, a copy) with the entries of ``sub`` (their excess) clipped exactly.

        ``x - e`` rounds (by up to half an ulp of x, beyond the bound for an
        x far beyond it); ``copysign(bound, x)`` is the bounded value itself.
        """
        if sp.issparse(block):
            # The stored entries beyond their bound are those of sub: clip them all.
            column_bound = self.entry_bound[block.indices]
            np.clip(block.data, -column_bound, column_bound, out=block.data)
        elif sub.nnz:
            rows = np.repeat(np.arange(block.shape[0]), np.diff(sub.indptr))
            block[rows, sub.indices] = np.copysign(self.entry_bound[sub.indices], sub.data)
        return block

    def _clipped_rmatmul(self, scaled):
        """``(X clipped)^T scaled`` (patched rows replaced), block by block of rows.

        No sum ever holds a raw entry beyond its bound: a block where many
        rows have such an entry is bounded as a whole (a float64 copy,
        clipped exactly: :meth:`_bounded_block`); in the others those rows
        are left out of the product with X and added from clipped copies of
        those rows only.
        """
        rows = self._excess_rows()
        patched = self.patch_rows if self.patch_rows is not None else np.zeros(0, dtype=np.intp)
        out = np.zeros((self.n_features, scaled.shape[1]))
        for start, stop in self._blocks():
            part = scaled[start:stop]
            lo, hi = np.searchsorted(rows, [start, stop])
            if 8 * (hi - lo) > stop - start:
                out += np.asarray(self._bounded_block(start, stop, scratch=True).T @ part)
                continue
            p_lo, p_hi = np.searchsorted(patched, [start, stop])
            U = part
            if hi > lo or p_hi > p_lo:
                U = part.copy()
                U[rows[lo:hi] - start] = 0.0
                U[patched[p_lo:p_hi] - start] = 0.0
            out += np.asarray(self._float64_rows(start, stop).T @ U)
            if hi > lo:
                index = rows[lo:hi]
                raw = self.X[index]  # fancy indexing: a copy of these rows only
                if sp.issparse(raw):
                    block = sp.csr_matrix(raw, dtype=np.float64, copy=True)
                else:
                    block = np.array(raw, dtype=np.float64)
                block = self._clip_entries(block, self.excess[index])
                out += np.asarray(block.T @ scaled[index])
            if p_hi > p_lo:
                out += np.asarray(self.patch[p_lo:p_hi].T @ scaled[patched[p_lo:p_hi]])
        return out

    def _bounded_block(self, start, stop, scratch=False):
        """Rows start:stop bounded (before ``row_scale``), float64 (dense or CSR).

        ``scratch``: for a block used at once, a dense float32 block may be
        converted into ``workspace`` (see :meth:`_float64_rows`), which the
        next such block overwrites.
        """
        if scratch:
            block = self._float64_rows(start, stop)
        else:
            block = _float64(_row_slice(self.X, start, stop))
        if self.excess is not None:
            sub = self.excess[start:stop]
            if sub.nnz:
                if sp.issparse(block):
                    if np.may_share_memory(block.data, self.X.data):
                        block = block.copy()
                elif np.may_share_memory(block, self.X):
                    block = block.copy()
                block = self._clip_entries(block, sub)
        if self.patch_rows is not None:
            lo, hi = np.searchsorted(self.patch_rows, [start, stop])
            if hi > lo:
                local = self.patch_rows[lo:hi] - start
                values = self.patch[lo:hi]
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
                    if np.may_share_memory(block, self.X):
                        block = block.copy()
                    block[local] = values.toarray() if sp.issparse(values) else values
        return block

    def in_float64(self):
        """The same bounded rows over a float64 copy of X, for products used at once (a block's).

        float32 entries (and their factors) convert exactly; the copy may be
        written into ``workspace`` (see :meth:`_float64_rows`).
        """
        if self.dtype == np.float64:
            return self
        block = self._bounded_block(0, self.n_rows, scratch=True)
        return Design(block, row_scale=self.row_scale, intercept=self.intercept)

    def _gram_slab(self, d):
        """Columns per slab of a sparse Gram update (see :func:`_add_sparse_gram`)."""
        # Temporaries of a slab: at most SPARSE_GRAM_SHARE of X, or half the size
        # of the dense d x d result itself (which the fit holds anyway): narrower
        # slabs would only multiply the sparse products' fixed costs.
        nbytes = self.X.data.nbytes + self.X.indices.nbytes + self.X.indptr.nbytes
        budget = max(nbytes * SPARSE_GRAM_SHARE, 4.0 * d * d)
        return max(1, int(budget / (20 * max(1, d))))

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
        for start, stop in self._blocks():
            block = self._bounded_block(start, stop, scratch=True)
            root = None if w is None else np.sqrt(w[start:stop])
            factor = root
            if self.row_scale is not None:
                # float64 (a float32 row_scale would make numpy cast through a buffer
                # of its own, as large as a block of a small X).
                scale = self.row_scale[start:stop].astype(np.float64, copy=False)
                factor = scale if root is None else root * scale
            if sp.issparse(block):
                if factor is not None:
                    block = sp.csr_matrix(sp.diags(factor) @ block)
                _add_sparse_gram(G, block, block, self._gram_slab(d))
            else:
                if factor is not None:
                    if np.may_share_memory(block, self.X):
                        block = block * factor[:, None]
                    else:  # already a copy (a converted float32 block): scale it in place
                        block *= factor[:, None]
                G[:d, :d] += block.T @ block
            if self.intercept is not None:
                # sum_i w_i s_i x_i = sum_i (sqrt(w_i) s_i x_i) sqrt(w_i)
                weight_root = np.ones(stop - start) if root is None else root
                column += np.asarray(block.T @ weight_root).ravel()
                total += float(stop - start) if w is None else float(w[start:stop].sum())
            block = None  # freed before the next block is made (one block alive at a time)
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
        for start, stop in self._blocks():
            block = self._bounded_block(start, stop)
            weight = square[start:stop]
            if sp.issparse(block):
                _add_sparse_gram(
                    G, block, sp.csr_matrix(sp.diags(weight) @ block), self._gram_slab(d)
                )
                column += np.asarray(block.T @ cross[start:stop]).ravel()
            else:
                G[:d, :d] += block.T @ (weight[:, None] * block)
                column += block.T @ cross[start:stop]
            block = None  # one block alive at a time
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
        index = index.astype(np.intp, copy=False)
        patch_rows = patch = None
        if self.patch_rows is not None and index.size:
            # patch_rows is sorted: look the chosen rows up (no n-vector).
            where = np.minimum(np.searchsorted(self.patch_rows, index), self.patch_rows.size - 1)
            inside = self.patch_rows[where] == index
            patch_rows = np.flatnonzero(inside)
            patch = self.patch[where[inside]]
        return Design(
            self.X[index],
            row_scale=None if self.row_scale is None else self.row_scale[index],
            excess=None if self.excess is None else self.excess[index],
            entry_bound=self.entry_bound,
            patch_rows=patch_rows,
            patch=patch,
            intercept=self.intercept,
            row_norms=None if self._l2_norms is None else self._l2_norms[index],
        )

    def columns(self, cols, format=None, out=None):
        """Columns ``cols`` of ``X~`` (the intercept is column ``n_features``), float64.

        A copy of these columns only, made block of rows by block of rows (no
        temporary of the size of X), with the values of :meth:`materialize`
        bit for bit: for dense X a Fortran-ordered (n, len(cols)) array (each
        column contiguous; written into ``out``, a float64 buffer of at least
        ``n * len(cols)`` entries, when given); for sparse X a CSR matrix, or
        CSC with ``format="csc"``.
        """
        cols = np.asarray(cols, dtype=np.intp).ravel()
        if self.sparse:
            block = self._sparse_columns(cols)
            return block if format == "csc" else block.tocsr()
        is_feature = cols < self.n_features
        features = cols[is_feature]
        where = np.flatnonzero(is_feature)
        if out is None:
            out = np.empty((self.n_rows, cols.size), order="F")
        else:
            out = out[: self.n_rows * cols.size].reshape((self.n_rows, cols.size), order="F")
        all_features = where.size == cols.size
        span = None
        if features.size and np.all(np.diff(features) == 1):
            span = slice(int(features[0]), int(features[-1]) + 1)  # a view, no fancy copy
        if features.size:
            # Row chunks of at most about 1 MB (and a small share of X): the row-major X
            # is read once, in cache-sized pieces.
            step = min(
                max(MIN_BLOCK_ROWS, 2**17 // features.size),
                block_rows(self.n_rows, self.n_features),
            )
            for start in range(0, self.n_rows, step):
                stop = min(start + step, self.n_rows)
                chunk = (
                    self.X[start:stop, span]
                    if span is not None
                    else (self.X[start:stop][:, features])
                )
                if all_features:
                    out[start:stop] = chunk
                else:
                    out[start:stop, where] = chunk
        if self.excess is not None and features.size:
            sub = self._excess_by_column()[:, features].tocoo()
            bound = self.entry_bound[features[sub.col]]
            out[sub.row, where[sub.col]] = np.copysign(bound, sub.data)  # the clipped value
        if self.patch_rows is not None and features.size:
            values = self.patch[:, features]
            values = values.toarray() if sp.issparse(values) else np.asarray(values)
            out[self.patch_rows[:, None], where[None, :]] = values
        if self.row_scale is not None:
            if all_features:
                out *= self.row_scale[:, None]
            else:
                for j in where:
                    out[:, j] *= self.row_scale
        if not all_features:
            out[:, np.flatnonzero(~is_feature)] = self.intercept
        return out

    def _excess_by_column(self):
        """``excess`` in CSC (made once: column blocks read it by column)."""
        if getattr(self, "_excess_csc", None) is None:
            self._excess_csc = self.excess.tocsc()
        return self._excess_csc

    def _column_counts(self):
        """Stored entries of each column of (sparse) X (made once, one pass over X)."""
        if getattr(self, "_counts", None) is None:
            counts = np.zeros(self.n_features, dtype=np.int64)
            indices, indptr = self.X.indices, self.X.indptr
            for start, stop in self._blocks():  # bincount makes an int64 copy: by blocks
                piece = indices[indptr[start] : indptr[stop]]
                counts += np.bincount(piece, minlength=self.n_features)
            self._counts = counts
        return self._counts

    def _sparse_columns(self, cols):
        """Columns ``cols`` of ``X~`` for CSR X, as CSC: one scan of X's entries, block by block.

        The CSC arrays are allocated at their final size (from the column
        counts) and filled block by block of rows, so the temporaries are
        the size of a block.
        """
        n, m = self.n_rows, cols.size
        is_feature = cols < self.n_features
        features = cols[is_feature]
        where = np.flatnonzero(is_feature)
        lookup = np.full(self.n_features, -1, dtype=np.int32 if m < 2**31 else np.intp)
        lookup[features] = where
        X = self.X
        counts = np.zeros(m, dtype=np.int64)
        counts[where] = self._column_counts()[features]
        if self.patch_rows is not None:
            # The patched rows' stored entries are replaced by their exact bounded values.
            position = lookup[X[self.patch_rows].indices]
            counts -= np.bincount(position[position >= 0], minlength=m)
        counts[~is_feature] = n
        indptr = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(counts, out=indptr[1:])
        index_dtype = np.int32 if max(n, int(indptr[-1])) < 2**31 else np.int64
        indices = np.empty(int(indptr[-1]), dtype=index_dtype)
        data = np.zeros(int(indptr[-1]))
        intercepts = np.flatnonzero(~is_feature)
        for k in intercepts:  # the intercept column(s) hold every row
            indices[indptr[k] : indptr[k + 1]] = np.arange(n)
        fill = indptr[:-1].copy()  # next free slot of each column
        # Finer blocks than a product's: this scan holds several index arrays
        # (8 bytes an entry each) per entry of its block.
        for start, stop in fine_block_ranges(n, self.n_features, X.nnz):
            lo, hi = int(X.indptr[start]), int(X.indptr[stop])
            position = lookup[X.indices[lo:hi]]
            keep = np.flatnonzero(position >= 0)
            if not keep.size:
                continue
            rows = start + np.searchsorted(X.indptr[start + 1 : stop + 1], lo + keep, side="right")
            if self.patch_rows is not None:
                at = np.minimum(np.searchsorted(self.patch_rows, rows), self.patch_rows.size - 1)
                outside = self.patch_rows[at] != rows
                keep, rows = keep[outside], rows[outside]
            position = position[keep]
            # Group by column; rows stay ascending within a column (stable sort).
            # (16-bit keys sort by radix: several times faster than timsort on int32.)
            key = position.astype(np.uint16) if m <= 65535 else position
            order = np.argsort(key, kind="stable")
            position = position[order]
            block_counts = np.bincount(position, minlength=m)
            first = np.cumsum(block_counts) - block_counts
            slot = fill[position] + (np.arange(position.size) - first[position])
            indices[slot] = rows[order]
            data[slot] = X.data[lo + keep[order]]
            fill += block_counts
        if self.excess is not None and features.size:
            # The clipped value at the entries beyond their bound, column by column.
            sub = self._excess_by_column()[:, features]
            for k in np.flatnonzero(np.diff(sub.indptr)):
                a, b = indptr[where[k]], indptr[where[k] + 1]
                e_lo, e_hi = sub.indptr[k], sub.indptr[k + 1]
                at = a + np.searchsorted(indices[a:b], sub.indices[e_lo:e_hi])
                data[at] = np.copysign(self.entry_bound[features[k]], sub.data[e_lo:e_hi])
        if self.row_scale is not None:
            data *= self.row_scale[indices]  # the intercept column's data is 0 here
        for k in intercepts:  # unscaled
            data[indptr[k] : indptr[k + 1]] = self.intercept
        block = sp.csc_matrix((data, indices, indptr), shape=(n, m))
        if self.patch_rows is not None and features.size:
            sub = sp.coo_matrix(self.patch[:, features])
            values = np.asarray(sub.data, dtype=np.float64)
            if self.row_scale is not None:
                values = values * self.row_scale[self.patch_rows[sub.row]]
            patched = sp.csc_matrix(
                (values, (self.patch_rows[sub.row], where[sub.col])), shape=(n, m)
            )
            block = sp.csc_matrix(block + patched)  # disjoint entries: no rounding
        return block

    def column_view(self, cols):
        """Columns ``cols`` of ``X~`` as an operator (no copy): see :class:`ColumnView`."""
        return ColumnView(self, cols)

    def _row_norms(self, features, ord, with_intercept=False, dtype=np.float64):
        """Norms (``ord`` 2 or inf) of the rows of ``X~`` restricted to ``features``.

        Each block is finished (``row_scale``, then the intercept column when
        ``with_intercept``) before the next is read, so no float64 n-vector
        beyond the result is made.  ``dtype=np.float32`` stores every norm
        rounded *up* to the next float32 (a bound at least the float64 norm:
        a clip computed from it still bounds each row's term), half the
        memory of a float64 vector.
        """
        from ._data import row_l2_norms

        if ord not in (2, np.inf):
            raise ValueError(f"ord must be 2 or inf, got {ord!r}.")
        dtype = np.dtype(dtype)
        norms = np.empty(self.n_rows, dtype=dtype)
        every = features is None or (
            features.size == self.n_features and np.all(features == np.arange(self.n_features))
        )
        # float32 rows not clipped entrywise: L2 norms from the float32 values
        # (the bounds row_l2_norms computes there, those of the bounding pass).
        in_float32 = ord == 2 and self.dtype == np.float32 and not self.sparse
        in_float32 = in_float32 and self.excess is None
        for start, stop in self._blocks():
            if in_float32:
                block = _row_slice(self.X, start, stop)
                part = row_l2_norms(block if every else block[:, features])
                if self.patch_rows is not None:
                    lo, hi = np.searchsorted(self.patch_rows, [start, stop])
                    if hi > lo:
                        values = np.asarray(self.patch[lo:hi], dtype=np.float64)
                        part[self.patch_rows[lo:hi] - start] = row_l2_norms(
                            values if every else values[:, features]
                        )
                part = self._finish_norms(part, ord, with_intercept, start, stop)
                norms[start:stop] = _rounded_up(part, dtype)
                continue
            block = self._bounded_block(start, stop)
            if not every:
                block = block[:, features]
            if ord == 2:
                part = row_l2_norms(block)
            elif sp.issparse(block):
                part = abs(block).max(axis=1).toarray().ravel()
            else:
                part = np.max(np.abs(block), axis=1) if block.shape[1] else np.zeros(stop - start)
            block = None  # one block alive at a time
            part = self._finish_norms(part, ord, with_intercept, start, stop)
            norms[start:stop] = _rounded_up(part, dtype)
        return norms

    def row_norms(self, ord=2, dtype=np.float64):
        """Norm of each row of ``X~`` (intercept included).

        ``ord=2``: L2, under/overflow-safe; ``ord=np.inf``: largest absolute
        entry (exactly that of the materialised row).  float64 by default;
        ``dtype=np.float32`` gives each norm rounded up to a float32 (an upper
        bound, for clip factors: half the memory).  The norms the bounding
        pass computed (``row_norms=``) are returned when they are those asked
        for (the same values: no second pass over X).
        """
        cached = self._l2_norms
        if ord == 2 and cached is not None and cached.dtype == np.dtype(dtype):
            return cached
        return self._row_norms(None, ord, self.intercept is not None, dtype)

    def _finish_norms(self, norms, ord, with_intercept, start=0, stop=None):
        """Row norms of rows ``start:stop`` before scaling -> of ``X~`` (in place)."""
        if ord not in (2, np.inf):
            raise ValueError(f"ord must be 2 or inf, got {ord!r}.")
        if self.row_scale is not None:
            with np.errstate(over="ignore"):
                np.multiply(norms, self.row_scale[start:stop], out=norms)
        if with_intercept:
            if ord == 2:
                np.hypot(norms, self.intercept, out=norms)
            else:
                np.maximum(norms, abs(self.intercept), out=norms)
        return norms

    def materialize(self):
        """``X~`` as a float64 matrix of the input's kind: a CSR matrix for sparse X, else dense.

        A full copy: for tests, references and code not yet written against
        the operator.
        """
        if not self.sparse:
            return self.toarray()
        blocks = [sp.csr_matrix(self._bounded_block(s, e)) for s, e in self._blocks()]
        X = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, self.n_features))
        if self.row_scale is not None:
            X = sp.csr_matrix(sp.diags(self.row_scale) @ X)
        if self.intercept is not None:
            column = sp.csr_matrix(np.full((self.n_rows, 1), self.intercept))
            X = sp.hstack([X, column], format="csr")
        return X

    def toarray(self):
        """``X~`` as a dense float64 array (for tests and references only)."""
        blocks = [self._bounded_block(s, e) for s, e in self._blocks()]
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
