"""Bounding private data: row clipping, label clipping, intercept handling.

Every bound here is a public parameter chosen by the user (or a public default);
none is read off the data.  Clipping is applied to every row, so a row of any
norm contributes at most the bound to any noisy sum.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._design import EXCESS_FACTOR, Design, _rounded_up, block_ranges, fine_block_ranges

__all__ = [
    "BoundedData",
    "clip_rows_l2",
    "clip_rows_linf",
    "clip_labels",
    "scale_labels",
    "row_l2_norms",
    "bound_data",
    "check_feature_bound",
    "row_sum",
    "clip_weights",
]

#: Range of public bounds (see sklearn_dp.linear_model._base.MIN_SCALE).
_MIN_BOUND, _MAX_BOUND = 1e-30, 1e30


def check_feature_bound(feature_bound, n_features):
    """``feature_bound`` as one public bound per feature, or a ValueError that says why not."""
    try:
        bound = np.asarray(feature_bound, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            "feature_bound must be a float or a list of floats (one per feature); "
            f"got {feature_bound!r}."
        ) from None
    if bound.ndim > 1 or (bound.ndim == 1 and bound.shape[0] != n_features):
        raise ValueError(
            f"feature_bound has shape {bound.shape}; pass a float or one bound per feature "
            f"(shape ({n_features},)) for X with {n_features} features."
        )
    bound = np.broadcast_to(bound, (n_features,)).copy()
    if not np.all((bound >= _MIN_BOUND) & (bound <= _MAX_BOUND)):
        raise ValueError(
            f"feature_bound must be finite and in [{_MIN_BOUND:g}, {_MAX_BOUND:g}] for every "
            "feature (a public bound on |X[:, j]|)."
        )
    return bound


#: Below this, a norm computed as ``sqrt(sum x^2)`` may have lost digits (or
#: everything) to the underflow of the squares; such rows are recomputed.
_UNDERFLOW_NORM = 1e-140


def _row_norm_factors(X):
    """``(scale, norms)`` with ``||x_i||_2 = scale[i] * norms[i]``, free of under- and overflow.

    Computed as ``sqrt(sum x^2)`` (``scale = 1``); rows where the squares
    underflow (entries below ~1e-154: the clip would see a zero-norm row, and
    a per-sample gradient with a huge derivative would escape it) or
    overflow (entries beyond ~1e154: the row would be clipped to zero instead
    of to the bound) are recomputed divided by their largest entry, which
    becomes their ``scale``.  Other rows are unaffected.
    """
    norms, redo, row_max = _row_norms_rescaled(X)
    scale = np.ones_like(norms)
    scale[redo] = row_max
    return scale, norms


#: float32 rows whose float32 sum of squares is below this (or not finite) get
#: their norm from float64 arithmetic instead (see :func:`_float32_norm_bounds`).
_FLOAT32_SMALL_SQUARES = 2.0**-100
#: Widest rows whose norms are bounded in float32 arithmetic.  The bound
#: below is valid up to ``d * 2**-24 <= 1/2``, but it overstates every norm
#: by ``(d + 2) 2**-23`` relative (0.1% at this width, 12.5% at 2**20), which
#: would shrink wide rows and bias an "auto" row bound; wider rows use float64.
_FLOAT32_MAX_WIDTH = 2**13


def _float32_norm_bounds(block):
    """Upper bounds on the L2 norms of the rows of a dense float32 block, from float32 sums.

    Returns float64 bounds, NaN for the rows to compute in float64 instead
    (sum of squares below ``_FLOAT32_SMALL_SQUARES`` or not finite).

    Why it is a bound, whatever the order of the float32 operations: the
    computed sum of squares ``s^`` of a row of ``d`` entries satisfies ``s <=
    (s^ + e) / (1 - g)``, with ``s`` the exact sum, ``g = d u / (1 - d u) <=
    d 2**-23`` (``u = 2**-24``; each product and each addition rounds by at
    most ``u``) and ``e <= 2 d 2**-150`` from squares in the subnormal
    range, ``e <= d 2**-49 s^`` once ``s^ >= 2**-100``.  So ``s <= s^ / (1 -
    delta)`` with ``delta = (d + 1) 2**-23`` and ``sqrt(s) <= sqrt(s^) (1 +
    delta)`` (``delta <= 1/2``); ``sqrt`` and the product by ``1 + (d + 2)
    2**-23`` are done in float64 (``s^`` exactly converted; two roundings of
    ``2**-53``, inside the last ``2**-23``).  A row's factor and its gradient
    clip computed from the bound keep the row within the bound, as with the
    exact norm; the bound exceeds the norm by at most ``(d + 2) 2**-23 +
    2 d 2**-23`` relative, which only scales rows a hair more than needed.
    """
    d = block.shape[1]
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        squares = np.einsum("ij,ij->i", block, block)
    squares = squares.astype(np.float64)
    slow = ~(squares >= _FLOAT32_SMALL_SQUARES) | np.isinf(squares)
    np.sqrt(squares, out=squares)
    squares *= 1.0 + (d + 2) * 2.0**-23
    squares[slow] = np.nan
    return squares


def _row_norms_rescaled(X):
    """``(norms, redo, row_max)``: :func:`_row_norm_factors` with its scale kept sparse.

    ``scale`` is 1 but on the rows ``redo``, where it is ``row_max``: one
    n-vector instead of two.  For a dense float32 X the norms are upper
    bounds computed in float32 (:func:`_float32_norm_bounds`; half the
    memory traffic of a float64 pass), exact norms for the rows that bound
    cannot serve.
    """
    # Sparse and float64 X in float64, by blocks of rows, so no converted copy
    # of X is made.
    norms = np.empty(X.shape[0])
    in_float32 = (
        not sp.issparse(X) and X.dtype == np.float32 and 0 < X.shape[1] <= _FLOAT32_MAX_WIDTH
    )
    with np.errstate(over="ignore"):
        for start, stop in block_ranges(
            *X.shape, X.nnz if sp.issparse(X) else None, X.dtype.itemsize
        ):
            block = X[start:stop]
            if in_float32:
                part = _float32_norm_bounds(block)
                slow = np.flatnonzero(np.isnan(part))
                if slow.size:
                    rows = np.asarray(block[slow], dtype=np.float64)
                    part[slow] = np.sqrt(np.einsum("ij,ij->i", rows, rows))
                norms[start:stop] = part
            elif sp.issparse(block):
                squares = np.asarray(block.data, dtype=np.float64) ** 2
                rows = np.repeat(np.arange(stop - start), np.diff(block.indptr))
                norms[start:stop] = np.sqrt(
                    np.bincount(rows, weights=squares, minlength=stop - start)
                )
            else:
                block = np.asarray(block, dtype=np.float64)
                norms[start:stop] = np.sqrt(np.einsum("ij,ij->i", block, block))
    redo = np.flatnonzero((norms < _UNDERFLOW_NORM) | np.isinf(norms))
    row_max = np.ones(redo.size)
    if redo.size:
        rows = (
            sp.csr_matrix(X[redo], dtype=float, copy=True)
            if sp.issparse(X)
            else np.asarray(X[redo], dtype=np.float64)
        )
        if sp.issparse(X):
            row_max = abs(rows).max(axis=1).toarray().ravel()
        else:
            row_max = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(redo.size)
        row_max = np.where(row_max > 0, row_max, 1.0)
        # Divide (1 / row_max overflows for subnormal rows).
        if sp.issparse(X):
            rows.data /= np.repeat(row_max, np.diff(rows.indptr))
            norms[redo] = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
        else:
            scaled = rows / row_max[:, None]
            norms[redo] = np.sqrt(np.einsum("ij,ij->i", scaled, scaled))
    return norms, redo, row_max


def row_l2_norms(X):
    """``||x_i||_2`` for each row of a dense array or a sparse matrix (see :func:`_row_norm_factors`).

    For a dense float32 array, upper bounds within ``3 (d + 1) 2**-23``
    (relative) of the norms, computed in float32 (:func:`_float32_norm_bounds`).
    """
    scale, norms = _row_norm_factors(X)
    with np.errstate(over="ignore"):  # a norm beyond the float range is inf
        return scale * norms


def clip_rows_l2(X, bound):
    """Scale down every row whose L2 norm exceeds ``bound`` (a copy; X untouched)."""
    scale, norms = _row_norm_factors(X)
    with np.errstate(over="ignore"):  # bound / (a subnormal row's scale) is inf: factor 1
        factor = np.minimum(1.0, (float(bound) / scale) / np.maximum(norms, np.finfo(float).tiny))
    if sp.issparse(X):
        return sp.csr_matrix(sp.diags(factor) @ X)
    return X * factor[:, None]


def clip_rows_linf(X, bound):
    """Clip every entry to ``[-bound, bound]``; ``bound`` is a scalar or one value per column."""
    bound = np.asarray(bound, dtype=float)
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        column_bound = np.broadcast_to(bound, (X.shape[1],))[X.indices]
        np.clip(X.data, -column_bound, column_bound, out=X.data)
        return X
    return np.clip(X, -bound, bound)


def clip_labels(y, bound):
    """Clip regression labels to ``[-bound, bound]``."""
    return np.clip(np.asarray(y, dtype=float), -float(bound), float(bound))


def scale_labels(y, center, scale, dtype=np.float64):
    """Labels clipped to ``[center - scale, center + scale]``, centred and divided by ``scale``.

    Computed in float64 block by block (no float64 temporaries of n rows) and
    stored as ``dtype``: float32 for float32 X (values in ``[-1, 1]`` stay
    there under rounding, so the label bound holds exactly).
    """
    y = np.asarray(y)
    out = np.empty(y.shape, dtype=dtype)
    step = 4096  # float64 temporaries of a few pages
    for start in range(0, y.shape[0], step):
        part = np.asarray(y[start : start + step], dtype=np.float64) - center
        np.clip(part, -float(scale), float(scale), out=part)
        part /= scale
        out[start : start + step] = part
    return out


class BoundedData:
    """Private data after bounding, with the public bounds that hold for it.

    Parameters and attributes
    -------------------------
    design : Design
        The bounded rows (and the intercept column) as an operator on the
        caller's ``X``, without a copy (see :class:`sklearn_dp._design.Design`).
        Solvers compute with it: ``design.matmul(W)``, ``design.rmatmul(V)``,
        ``design.rows(batch)``, ``design.gram(weights)``, ``design.columns(cols)``.
    X : ndarray or CSR matrix of shape (n_samples, n_columns), read-only property
        ``design`` materialised (a full copy, made on first access): for
        tests and reference computations.  A ``BoundedData`` may also be
        built from an already bounded ``X`` (``BoundedData(X=..., ...)``).
    y : ndarray of shape (n_samples,)
        Encoded (classification) or clipped (regression) labels.
    row_norms : ndarray of shape (n_samples,)
        L2 norms of the rows of ``X~`` (private; used only inside clipping),
        computed on first access.
    row_norm_bound : float
        Public bound on ``row_norms`` (L2), intercept column included.
    feature_bound : ndarray of shape (n_columns,) or None
        Public bound on each column, ``|X~[i, j]| <= feature_bound[j]``
        (intercept column included), when the rows were bounded entrywise
        (``geometry="linf"``), else None.
    n_public : float
        What solvers may use in place of the number of rows for
        hyper-parameters (sampling rates, step counts, penalty scaling).  The
        true n is private under add/remove neighbouring: estimators set this
        to a DP count (see :class:`~sklearn_dp._protocol.PrivateCount`).  Direct
        solver calls that leave it unset treat the row count as public.
    normalizer : float
        What solvers divide noisy sums by to average them (an upper
        confidence bound on n when n_public is a DP count).
    penalized : ndarray of bool of shape (n_columns,)
        Which coefficients the penalty applies to (not the intercept).
    fit_intercept : bool
    intercept_scaling : float
    sample_weight : ndarray of shape (n_samples,) or None
        Per-row weights in ``[0, weight_bound]`` (private), multiplying each
        row's contribution to every sum the solvers release; None for
        weights 1 (the unweighted fit, unchanged).
    weight_bound : float
        Public bound on ``sample_weight`` (1.0 without weights): every
        per-row term of a released sum, hence every sensitivity, is
        multiplied by it.
    """

    def __init__(
        self,
        X=None,
        y=None,
        row_norms=None,
        row_norm_bound=None,
        penalized=None,
        fit_intercept=False,
        intercept_scaling=1.0,
        feature_bound=None,
        n_public=None,
        normalizer=None,
        *,
        design=None,
        sample_weight=None,
        weight_bound=1.0,
    ):
        if design is None:
            if X is None:
                raise TypeError("BoundedData needs X or design.")
            design = Design(X)
            self._X = X
        else:
            self._X = None
        self.design = design
        self.y = y
        self._row_norms = row_norms  # computed on first use (L2 solvers need them, others not)
        self.row_norm_bound = row_norm_bound
        self.penalized = penalized
        self.fit_intercept = bool(fit_intercept)
        self.intercept_scaling = float(intercept_scaling)
        self.feature_bound = feature_bound
        # Unset: the row count is treated as public (direct solver calls).
        self.n_public = float(design.n_rows) if n_public is None else n_public
        self.normalizer = float(self.n_public) if normalizer is None else normalizer
        self.sample_weight = sample_weight
        self.weight_bound = float(weight_bound)

    @property
    def row_norms(self):
        if self._row_norms is None:
            # float32 X: the norms rounded up to float32 (upper bounds: clips
            # computed from them still hold; half the memory of float64).
            dtype = np.float32 if self.design.dtype == np.float32 else np.float64
            self._row_norms = self.design.row_norms(dtype=dtype)
        return self._row_norms

    @row_norms.setter
    def row_norms(self, value):
        self._row_norms = value

    @property
    def X(self):
        if self._X is None:
            self._X = self.design.materialize()
        return self._X

    @property
    def n_samples(self):
        return self.design.n_rows

    @property
    def n_columns(self):
        return self.design.n_columns

    def split_coef(self, W):
        """(coef of shape (n_outputs, n_features), intercept of shape (n_outputs,))."""
        if self.fit_intercept:
            return W[:-1].T.copy(), W[-1] * self.intercept_scaling
        return W.T.copy(), np.zeros(W.shape[1])


def row_sum(data, kernel):
    """``kernel(data)``, summed over the row chunks of data that lives in chunks.

    ``kernel(part)`` computes a sum over the rows of ``part`` (a
    :class:`BoundedData`): an array, or a tuple of arrays (and None).  For
    in-memory data this is ``kernel(data)``; data whose rows are split in
    chunks (:class:`sklearn_dp._dask.DaskBoundedData`) applies the kernel to
    each chunk, bounded the same way, where the chunk lives and adds the
    results up: a sum over rows is the sum of its chunks' sums, so the
    pre-noise value (and its sensitivity) is the same.
    """
    reduce = getattr(data, "sum_over_chunks", None)
    return kernel(data) if reduce is None else reduce(kernel)


def _entrywise(X, bound):
    """``(excess, patch_rows, patch)`` of X clipped to ``[-bound, bound]`` per column, no copy of X.

    Entries beyond ``EXCESS_FACTOR`` times their bound make their row a
    patched row (its clipped values stored exactly); other entries beyond the
    bound go to ``excess`` (amount beyond the bound, with its sign).
    """
    n, d = X.shape
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), (d,))
    indptr, cols, values, huge_rows = None, [], [], []
    # Block by block of rows: temporaries are the size of a block, not of X.
    # Entries come row by row, so the excess is built as CSR directly.
    ranges = (
        fine_block_ranges(n, d, X.nnz)
        if sp.issparse(X)
        else block_ranges(n, d, None, X.dtype.itemsize)
    )
    for start, stop in ranges:
        if sp.issparse(X):
            lo, hi = X.indptr[start], X.indptr[stop]
            data = X.data[lo:hi]  # a view: compared in its own dtype (exact)
            index = X.indices[lo:hi]
            column_bound = bound[index]
            magnitude = np.abs(data)
            over = magnitude > column_bound
            if not np.any(over):
                magnitude = over = None
                continue
            entry_rows = np.repeat(np.arange(start, stop), np.diff(X.indptr[start : stop + 1]))
            huge = np.unique(entry_rows[magnitude > EXCESS_FACTOR * column_bound])
            huge_rows.append(huge)
            moderate = over & ~np.isin(entry_rows, huge)
            r, c = entry_rows[moderate], index[moderate]
            v, b = np.asarray(data[moderate], dtype=np.float64), column_bound[moderate]
        else:
            # |x| in X's own dtype (exact) compared with the float64 bounds
            # (numpy compares in float64): a float32 X gets no float64 copy
            # of its block, only the few values beyond the bound are converted.
            block = X[start:stop]
            magnitude = np.abs(block)
            over = magnitude > bound
            if not np.any(over):
                magnitude = over = None
                continue
            huge = np.any(magnitude > EXCESS_FACTOR * bound, axis=1)
            huge_rows.append(start + np.flatnonzero(huge))
            over[huge] = False
            r, c = np.nonzero(over)
            v, b = np.asarray(block[r, c], dtype=np.float64), bound[c]
            r = r + start
        if indptr is None:
            # Entries per row, then their cumulative sum; int32 when every index
            # fits, so scipy keeps the array instead of converting a copy.
            index_dtype = np.int32 if n * d < 2**31 - 1 else np.int64
            indptr = np.zeros(n + 1, dtype=index_dtype)
        indptr[start + 1 : stop + 1] += np.bincount(r - start, minlength=stop - start)
        cols.append(c.astype(np.int32))
        values.append(v - np.clip(v, -b, b))
        magnitude = over = None  # freed before the next block's are made
    cols = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int32)
    values = np.concatenate(values) if values else np.zeros(0)
    huge_rows = np.concatenate(huge_rows) if huge_rows else np.zeros(0, dtype=np.intp)
    excess = None
    if len(values):
        np.cumsum(indptr, out=indptr)
        excess = sp.csr_matrix((values, cols, indptr), shape=(n, d))
    patch_rows = patch = None
    if len(huge_rows):
        patch_rows = np.asarray(huge_rows, dtype=np.intp)
        raw = X[patch_rows]
        if sp.issparse(X):
            # Clip the stored entries only (zeros stay zeros): densifying the
            # rows would cost 8 d bytes per patched row, a memory use (and a
            # MemoryError) that one row with a huge entry controls.
            patch = sp.csr_matrix(raw, dtype=np.float64, copy=True)
            column_bound = bound[patch.indices]
            np.clip(patch.data, -column_bound, column_bound, out=patch.data)
        else:
            patch = np.clip(np.asarray(raw, dtype=np.float64), -bound, bound)
    return excess, patch_rows, patch


def _l2_scaling(X, bound, intercept=None):
    """``(row_scale, patch_rows, patch, norms)`` scaling every row of X to L2 norm at most ``bound``.

    Rows whose norm over- or underflows (see :func:`_row_norm_factors`) are
    patched: their values divided by their largest entry, with that entry
    folded into their scale.  ``norms`` are the L2 norms of the rows of the
    design (``X~``: the scaled rows, then the ``intercept`` column when it is
    not None), from the same pass over X: the values
    :meth:`sklearn_dp._design.Design.row_norms` computes (each row's norm
    before its factor, times the factor as stored), bit for bit, in float32
    (rounded up) for float32 X, so a fit makes one row-norm pass, not two.
    """
    norms, redo, row_max = _row_norms_rescaled(X)
    float32 = X.dtype == np.float32
    design_norms = np.empty(norms.shape, dtype=np.float32 if float32 else np.float64)
    # row_scale = min(scale, bound / max(norms, tiny)), in the norms' buffer
    # (one n-vector: the same values as with a dense scale vector), block by
    # block, each block's design norms taken from its norms before they are
    # overwritten.
    row_scale = norms
    low = np.empty(norms.shape, dtype=np.float32) if float32 else None
    tiny = np.finfo(float).tiny
    for start, stop in block_ranges(*X.shape, X.nnz if sp.issparse(X) else None, X.dtype.itemsize):
        part = row_scale[start:stop]
        before = part.copy()  # each row's norm before its factor (a block's temporary)
        with np.errstate(over="ignore", divide="ignore"):
            np.maximum(part, tiny, out=part)
            np.divide(float(bound), part, out=part)
            np.minimum(part, 1.0, out=part)
            lo, hi = np.searchsorted(redo, [start, stop])
            if hi > lo:
                part[redo[lo:hi] - start] = np.minimum(
                    row_max[lo:hi], float(bound) / np.maximum(before[redo[lo:hi] - start], tiny)
                )
        stored = part
        if float32:
            # float32 factors for float32 X (half the memory), each rounded *down*
            # to a float32: a scaled row's norm stays within the bound.
            rounded = part.astype(np.float32)
            np.nextafter(rounded, np.float32(0.0), out=rounded, where=rounded > part)
            low[start:stop] = stored = rounded
        with np.errstate(over="ignore"):
            np.multiply(before, stored, out=before)
        if intercept is not None:
            np.hypot(before, intercept, out=before)
        design_norms[start:stop] = _rounded_up(before, design_norms.dtype)
    patch_rows = patch = None
    if redo.size:
        patch_rows = redo
        raw = X[redo]
        if sp.issparse(X):
            raw = sp.csr_matrix(raw, dtype=np.float64)
            raw.data /= np.repeat(row_max, np.diff(raw.indptr))
            patch = raw
        else:
            patch = np.asarray(raw, dtype=np.float64) / row_max[:, None]
    # A factor of 1 everywhere needs no vector (and leaves the norms as they are).
    if np.all(row_scale == 1.0):
        return None, patch_rows, patch, design_norms
    return (low if float32 else row_scale), patch_rows, patch, design_norms


def bound_data(
    X,
    y,
    *,
    fit_intercept,
    intercept_scaling=1.0,
    geometry="l2",
    data_norm=None,
    feature_bound=None,
    n_public=None,
    normalizer=None,
    sample_weight=None,
    max_weight=1.0,
):
    """Bound the rows of ``X`` in the geometry a solver needs, append the intercept column.

    ``geometry="l2"`` scales every row to L2 norm at most ``data_norm`` (without
    ``data_norm``, it clips entries to ``feature_bound``, whose L2 norm then
    bounds the rows);
    ``geometry="linf"`` clips every entry to ``[-feature_bound, feature_bound]``
    (a scalar, or one bound per feature).  The intercept column is constant
    (public) and not clipped, so rows of the result are bounded by
    ``sqrt(data_norm**2 + intercept_scaling**2)`` in L2 (for ``"linf"``:
    ``sqrt(sum_j feature_bound_j**2 + intercept_scaling**2)``), and column j
    entrywise by ``feature_bound[j]`` (``intercept_scaling`` for the intercept).
    ``n_public`` and ``normalizer`` are what solvers use in place of the row
    count (see :class:`BoundedData`); None treats the row count as public.
    ``sample_weight`` (finite, non-negative; checked by the caller) is
    clipped to ``[0, max_weight]`` (a float64 copy); the result's
    ``weight_bound`` is then ``max_weight`` (1.0 without weights).
    """
    n_features = X.shape[1]
    row_scale = excess = patch_rows = patch = design_norms = None
    if geometry == "l2" and data_norm is None and feature_bound is not None:
        # Entrywise bounds imply the L2 bound sqrt(sum_j feature_bound_j^2):
        # the L2 solvers also run on data with per-feature bounds only.
        entry_bound = check_feature_bound(feature_bound, n_features)
        excess, patch_rows, patch = _entrywise(X, entry_bound)
        norm_bound = float(np.sqrt(np.sum(entry_bound**2)))
    elif geometry == "l2":
        if data_norm is None:
            raise ValueError(
                "This solver bounds rows in L2: pass data_norm (a public bound on "
                "||X[i]||_2; longer rows are scaled down) or feature_bound (public bounds "
                "on |X[i, j]|, which imply one)."
            )
        row_scale, patch_rows, patch, design_norms = _l2_scaling(
            X, data_norm, float(intercept_scaling) if fit_intercept else None
        )
        norm_bound = float(data_norm)
        entry_bound = None
    elif geometry == "linf":
        if feature_bound is None:
            raise ValueError(
                "This solver bounds rows entrywise: pass feature_bound (a public bound "
                "on |X[i, j]|; larger entries are clipped)."
            )
        entry_bound = check_feature_bound(feature_bound, n_features)
        excess, patch_rows, patch = _entrywise(X, entry_bound)
        norm_bound = float(np.sqrt(np.sum(entry_bound**2)))
    else:
        raise ValueError(f"Unknown geometry {geometry!r}.")
    design = Design(
        X,
        row_scale=row_scale,
        excess=excess,
        entry_bound=entry_bound,
        patch_rows=patch_rows,
        patch=patch,
        intercept=float(intercept_scaling) if fit_intercept else None,
        row_norms=design_norms,
    )
    if fit_intercept:
        norm_bound = float(np.hypot(norm_bound, intercept_scaling))
        if entry_bound is not None:
            entry_bound = np.append(entry_bound, float(intercept_scaling))
    penalized = np.ones(design.n_columns, dtype=bool)
    if fit_intercept:
        penalized[-1] = False
    weights, weight_bound = clip_weights(sample_weight, max_weight)
    return BoundedData(
        design=design,
        y=y,
        row_norm_bound=norm_bound,
        penalized=penalized,
        fit_intercept=bool(fit_intercept),
        intercept_scaling=float(intercept_scaling),
        feature_bound=entry_bound,
        n_public=n_public,
        normalizer=normalizer,
        sample_weight=weights,
        weight_bound=weight_bound,
    )


def clip_weights(sample_weight, max_weight):
    """``(weights, weight_bound)``: weights clipped to ``[0, max_weight]`` (float64), or ``(None, 1.0)``."""
    if sample_weight is None:
        return None, 1.0
    weights = np.clip(np.asarray(sample_weight, dtype=np.float64), 0.0, float(max_weight))
    return weights, float(max_weight)
