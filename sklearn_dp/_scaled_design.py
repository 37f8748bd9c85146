"""A fit's design in standardised units, as an operator on the caller's X (no copy).

With per-feature scaling (``feature_scaling=True``) a fit works on

    S = [diag(r) (clip(X, +-m) - 1 c^T) diag(1 / h), a 1]

* ``c`` (centres) and ``h`` (scales): one released value per feature
  (:func:`sklearn_dp._feature_scales.release_feature_scales`); ``c = 0`` for sparse
  X, for a model without intercept, for the entrywise geometries and for
  the features on the unit scale already (``h = 1``);
* ``m``: the entrywise clip of the raw values (the released magnitudes,
  on whose clipped values ``c`` and ``h`` were released), applied by the
  :class:`~sklearn_dp._design.Design` of X (its exact, zero-copy entrywise
  clipping), so no raw value beyond ``m`` enters any product;
* ``r``: per-row factors scaling each standardised row to L2 norm at most
  the released row bound (L2 geometry), or none (entrywise geometries: the
  standardised entries lie in ``[-1, 1]`` when ``c = 0`` and ``h = m``);
* ``a``: the intercept column.

Products cost those of the inner design plus d- and n-vectors:

    S W   = r * (clip(X) (W[:d] / h) - c . (W[:d] / h)) + a W[d]
    S^T V = [(clip(X)^T (r V) - c sum(r V)) / h ; a sum(V)]

Everything else (columns, norms, Gram matrices, materialisation) is computed
block by block of rows from the standardised bounded block, so every term of
a sum over rows is a bounded standardised row's term.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._design import ColumnView, Design, _as_2d

__all__ = [
    "StandardizedDesign",
    "standardized_row_norms",
    "standardized_norms",
    "scaled_design",
    "to_caller_units",
    "to_fit_units",
    "bound_like_fit",
]


def _standardize_block(block, center, scale):
    """A bounded float64 block (dense or CSR, a copy or not) in standardised units (a new array)."""
    if sp.issparse(block):
        # Sparse X is never centred (a centre would fill every implicit zero).
        return sp.csr_matrix(block @ sp.diags(1.0 / scale))
    return (block - center) / scale


def standardized_row_norms(design, center, scale):
    """L2 norms of the rows of ``(design's bounded X - c) / h`` (intercept and row scale left out)."""
    from ._data import row_l2_norms

    norms = np.empty(design.n_rows)
    for start, stop in design._blocks():
        block = _standardize_block(design._bounded_block(start, stop), center, scale)
        norms[start:stop] = row_l2_norms(block)
    return norms


class StandardizedDesign(Design):
    """The standardised bounded design ``S`` (see the module docstring), without copying X.

    A :class:`~sklearn_dp._design.Design` to the code that takes one (it
    overrides every public method); it holds none of the attributes of the
    inner design's bounding (``row_scale``, ``excess``, ...), so a method it
    did not override fails loudly instead of reading raw values.

    Parameters
    ----------
    inner : Design
        The design of the caller's X clipped entrywise to ``m`` (its
        ``row_scale`` the factors ``r``, its ``intercept`` the column ``a``).
    center, scale : ndarray of shape (n_features,)
        Public (released) centres and scales; ``scale > 0``.
    """

    def __init__(self, inner, center, scale):  # no Design.__init__: see the class docstring
        self.inner = inner
        self.center = np.asarray(center, dtype=np.float64)
        self.scale = np.asarray(scale, dtype=np.float64)
        self.centered = bool(np.any(self.center != 0.0))
        if self.centered and inner.sparse:
            raise ValueError("A sparse design is scaled, never centred.")
        self.n_rows, self.n_features = inner.n_rows, inner.n_features
        self.n_columns = inner.n_columns
        self.shape = inner.shape
        self.sparse = inner.sparse
        self.dtype = inner.dtype
        self.intercept = inner.intercept
        self.X = inner.X

    # -- structure ---------------------------------------------------------------

    def _blocks(self):
        return self.inner._blocks()

    def blocks(self):
        """``(start, stop)`` of the row blocks of a blockwise pass (those of the inner design)."""
        return self.inner.blocks()

    def row_block(self, start, stop):
        """Rows ``start:stop`` as a standardised design (one block)."""
        return StandardizedDesign(self.inner.row_block(start, stop), self.center, self.scale)

    def rows(self, index):
        """The design restricted to the rows ``index`` (copies those rows only)."""
        return StandardizedDesign(self.inner.rows(index), self.center, self.scale)

    def _column_counts(self):
        return self.inner._column_counts()

    def _row_factor(self, start, stop):
        r = self.inner.row_scale
        return None if r is None else np.asarray(r[start:stop], dtype=np.float64)

    def _bounded_block(self, start, stop):
        """Rows start:stop of ``S`` without the intercept column, float64 (dense or CSR)."""
        block = _standardize_block(self.inner._bounded_block(start, stop), self.center, self.scale)
        factor = self._row_factor(start, stop)
        if factor is not None:
            if sp.issparse(block):
                block = sp.csr_matrix(sp.diags(factor) @ block)
            else:
                block *= factor[:, None]
        return block

    def in_float64(self):
        """The same rows of ``S`` as a float64 design (for a block of rows: a copy of it)."""
        if self.dtype == np.float64:
            return self
        return Design(self._bounded_block(0, self.n_rows), intercept=self.intercept)

    # -- products ----------------------------------------------------------------

    def matmul(self, W):
        """``S @ W`` for W of shape (n_columns,) or (n_columns, k), as float64."""
        W2, flat = _as_2d(np.asarray(W, dtype=np.float64))
        inner_W = W2.copy()
        inner_W[: self.n_features] /= self.scale[:, None]
        Z = self.inner.matmul(inner_W)
        if self.centered:
            shift = self.center @ inner_W[: self.n_features]
            r = self.inner.row_scale
            if r is None:
                Z -= shift
            else:
                Z -= np.asarray(r, dtype=np.float64)[:, None] * shift
        return Z[:, 0] if flat else Z

    def rmatmul(self, V):
        """``S^T @ V`` for V of shape (n,) or (n, k), as float64."""
        V2, flat = _as_2d(np.asarray(V, dtype=np.float64))
        d = self.n_features
        if not self.centered:
            out = self.inner.rmatmul(V2)
            out[:d] /= self.scale[:, None]
            return out[:, 0] if flat else out
        # A centre subtracted from a sum over the raw rows (X^T V - c sum(V))
        # would leave that sum's rounding, which grows with the raw magnitude
        # (up to m, against a standardised row's h), in the result: a row's
        # pre-noise contribution could then exceed what its standardised
        # bounded values allow.  Every term is a standardised row's instead.
        out = np.zeros((self.n_columns, V2.shape[1]))
        for start, stop in self._blocks():
            block = self._bounded_block(start, stop)
            out[:d] += block.T @ V2[start:stop]
            block = None  # one block alive at a time
        if self.intercept is not None:
            out[d] = self.intercept * V2.sum(axis=0)
        return out[:, 0] if flat else out

    def gram(self, weights=None):
        """``S^T diag(weights) S`` (n_columns, n_columns), float64, block by block of rows."""
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        d = self.n_features
        G = np.zeros((self.n_columns, self.n_columns))
        column = np.zeros(d)
        for start, stop in self._blocks():
            block = self._bounded_block(start, stop)
            part = np.ones(stop - start) if w is None else w[start:stop]
            weighted = (
                sp.csr_matrix(sp.diags(part) @ block)
                if sp.issparse(block)
                else block * part[:, None]
            )
            G[:d, :d] += np.asarray(
                (block.T @ weighted).toarray() if sp.issparse(block) else block.T @ weighted
            )
            column += np.asarray(block.T @ part).ravel()
            block = weighted = None  # one block alive at a time
        if self.intercept is not None:
            total = float(self.n_rows if w is None else w.sum())
            G[:d, d] = self.intercept * column
            G[d, :d] = self.intercept * column
            G[d, d] = self.intercept**2 * total
        return G

    # -- columns, norms ----------------------------------------------------------

    def columns(self, cols, format=None, out=None):
        """Columns ``cols`` of ``S`` (the intercept is column ``n_features``), float64.

        Dense X: a Fortran-ordered (n, len(cols)) array (in ``out`` when
        given); sparse X: CSR, or CSC with ``format="csc"``.
        """
        cols = np.asarray(cols, dtype=np.intp).ravel()
        if self.sparse:
            block = self.inner.columns(cols, format="csc")
            factors = np.append(1.0 / self.scale, 1.0)[np.minimum(cols, self.n_features)]
            block = sp.csc_matrix(block @ sp.diags(factors))
            return block if format == "csc" else block.tocsr()
        block = self.inner.columns(cols, out=out)
        r = self.inner.row_scale
        for k, j in enumerate(cols):
            if j >= self.n_features:
                continue
            if self.center[j] != 0.0:
                block[:, k] -= (
                    self.center[j]
                    if r is None
                    else self.center[j] * np.asarray(r, dtype=np.float64)
                )
            block[:, k] /= self.scale[j]
        return block

    def column_view(self, cols):
        """Columns ``cols`` of ``S`` as an operator (no copy): see :class:`~sklearn_dp._design.ColumnView`."""
        return ColumnView(self, cols)

    def _row_norms(self, features, ord, with_intercept=False, dtype=np.float64):
        """Norms (``ord`` 2 or inf) of the rows of ``S`` restricted to ``features``."""
        from ._data import row_l2_norms

        if ord not in (2, np.inf):
            raise ValueError(f"ord must be 2 or inf, got {ord!r}.")
        dtype = np.dtype(dtype)
        norms = np.empty(self.n_rows, dtype=dtype)
        for start, stop in self._blocks():
            block = self._bounded_block(start, stop)
            if features is not None:
                block = block[:, features]
            if ord == 2:
                part = row_l2_norms(block)
            elif sp.issparse(block):
                part = abs(block).max(axis=1).toarray().ravel()
            else:
                part = np.max(np.abs(block), axis=1) if block.shape[1] else np.zeros(stop - start)
            if with_intercept:
                part = (
                    np.hypot(part, self.intercept)
                    if ord == 2
                    else np.maximum(part, abs(self.intercept))
                )
            if dtype == np.float64:
                norms[start:stop] = part
            else:
                rounded = part.astype(dtype)
                low = rounded < part
                rounded[low] = np.nextafter(rounded[low], dtype.type(np.inf))
                norms[start:stop] = rounded
        return norms

    def row_norms(self, ord=2, dtype=np.float64):
        """Norm of each row of ``S`` (intercept included); see :meth:`Design.row_norms`."""
        return self._row_norms(None, ord, self.intercept is not None, dtype)

    def toarray(self):
        """``S`` as a dense float64 array (for tests and references only)."""
        blocks = [self._bounded_block(s, e) for s, e in self._blocks()]
        blocks = [b.toarray() if sp.issparse(b) else b for b in blocks]
        S = np.vstack(blocks) if blocks else np.zeros((0, self.n_features))
        if self.intercept is not None:
            S = np.hstack([S, np.full((self.n_rows, 1), self.intercept)])
        return S

    def materialize(self):
        """``S`` as a float64 matrix of the input's kind (a full copy: tests and references)."""
        if not self.sparse:
            return self.toarray()
        blocks = [sp.csr_matrix(self._bounded_block(s, e)) for s, e in self._blocks()]
        S = sp.vstack(blocks, format="csr") if blocks else sp.csr_matrix((0, self.n_features))
        if self.intercept is not None:
            S = sp.hstack(
                [S, sp.csr_matrix(np.full((self.n_rows, 1), self.intercept))], format="csr"
            )
        return S

    @property
    def nbytes_beyond_X(self):
        """Memory this design holds beyond ``X`` itself (bytes)."""
        return self.inner.nbytes_beyond_X + self.center.nbytes + self.scale.nbytes


def to_caller_units(W, center, scale, intercept_scaling, fit_intercept):
    """Coefficients fitted on ``S`` -> the same model on the raw design ``[X, a 1]`` (a copy).

    ``sum_j w~_j (x_j - c_j) / h_j + a b~ = sum_j (w~_j / h_j) x_j + a (b~ - (c . w) / a)``.
    """
    W = np.array(W, dtype=np.float64, copy=True)
    d = center.size
    W[:d] /= np.reshape(scale, (-1,) + (1,) * (W.ndim - 1))
    if fit_intercept:
        W[d] -= np.tensordot(center, W[:d], axes=1) / float(intercept_scaling)
    return W


def to_fit_units(W, center, scale, intercept_scaling, fit_intercept):
    """The inverse of :func:`to_caller_units` (a warm start in the fit's units; a copy)."""
    W = np.array(W, dtype=np.float64, copy=True)
    d = center.size
    if fit_intercept:
        W[d] += np.tensordot(center, W[:d], axes=1) / float(intercept_scaling)
    W[:d] *= np.reshape(scale, (-1,) + (1,) * (W.ndim - 1))
    return W


def _clipped_design(X, clip):
    """The design of X clipped entrywise to ``clip`` (no row scale, no intercept)."""
    from ._data import _entrywise

    clip = np.asarray(clip, dtype=np.float64)
    excess, patch_rows, patch = _entrywise(X, clip)
    design = Design(X, excess=excess, entry_bound=clip, patch_rows=patch_rows, patch=patch)
    return design, clip


def standardized_norms(X, center, scale, clip):
    """L2 norms of the rows of ``(clip(X, +-m) - c) / h``: what the row bound bounds."""
    center = np.asarray(center, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    return standardized_row_norms(_clipped_design(X, clip)[0], center, scale)


def scaled_design(X, *, center, scale, clip, geometry, row_bound, intercept):
    """The :class:`StandardizedDesign` of X for the released ``center`` and ``scale``.

    ``geometry="l2"``: rows scaled to L2 norm at most ``row_bound`` in
    standardised units; otherwise (entrywise geometries, ``center = 0``)
    every standardised entry lies in ``[-1, 1]``.  Returns the design and
    the entrywise clip ``m`` of the raw values (float64).
    """
    center = np.asarray(center, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    clipped, clip = _clipped_design(X, clip)
    row_scale = None
    if geometry == "l2":
        norms = standardized_row_norms(clipped, center, scale)
        with np.errstate(divide="ignore"):
            row_scale = np.minimum(1.0, float(row_bound) / np.maximum(norms, np.finfo(float).tiny))
        if np.all(row_scale == 1.0):
            row_scale = None
    inner = Design(
        X,
        row_scale=row_scale,
        excess=clipped.excess,
        entry_bound=clip,
        patch_rows=clipped.patch_rows,
        patch=clipped.patch,
        intercept=intercept,
    )
    return StandardizedDesign(inner, center, scale), clip


def bound_like_fit(X, *, center, scale, clip, row_bound=None):
    """Rows to predict on, bounded as the fit bounded its rows, in the caller's units.

    The fit used ``c + r (clip(x, +-m) - c)`` for a row ``x``, with ``r``
    the factor that brings the standardised row ``(clip(x) - c) / h`` to L2
    norm at most ``row_bound`` (none when it is None: the entrywise
    geometries).  The fitted model is linear in these rows; a row beyond
    them (a rare 0/1 column whose released scale is tiny, a feature far off
    its released centre) would otherwise have its standardised values, and
    the prediction, blown up by orders of magnitude the fit never saw.
    All the inputs are released values.  Returns a new array (CSR for
    sparse ``X``, whose centre is always 0) of ``X``'s dtype.
    """
    clip = np.asarray(clip, dtype=np.float64)
    center = np.asarray(center, dtype=np.float64)
    scale = np.asarray(scale, dtype=np.float64)
    if sp.issparse(X):
        X = X.tocsr(copy=True)
        bound = clip[X.indices]
        data = np.clip(np.asarray(X.data, dtype=np.float64), -bound, bound)
        if row_bound is not None:
            standardized = sp.csr_matrix((data / scale[X.indices], X.indices, X.indptr), X.shape)
            factor = _row_factors(standardized, row_bound)
            data *= np.repeat(factor, np.diff(X.indptr))
        X.data = data.astype(X.dtype, copy=False)
        return X
    clipped = np.clip(np.asarray(X, dtype=np.float64), -clip, clip)
    if row_bound is not None:
        offset = clipped - center
        factor = _row_factors(offset / scale, row_bound)
        clipped = center + factor[:, None] * offset
    return clipped.astype(X.dtype, copy=False)


def _row_factors(standardized, row_bound):
    """``min(1, row_bound / ||row||_2)`` per row of a standardised block (dense or CSR)."""
    from ._data import row_l2_norms

    norms = row_l2_norms(standardized)
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, float(row_bound) / np.maximum(norms, np.finfo(float).tiny))
