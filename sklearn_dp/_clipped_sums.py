"""Clipped sums: the per-sample bounded sums that every noisy release adds noise to.

Every pre-noise quantity of the package is computed by a function of this
module, so that its add/remove-one sensitivity is stated (and tested, in
``tests/test_sensitivity.py`` and ``tests/test_sensitivity_properties.py``)
in one place.  These functions never add noise (the noise gateway,
:mod:`sklearn_dp._noise`, does) and never build an n x d matrix of per-sample
gradients: for a GLM the gradient of row i is ``outer(x_i, dl/dz_i)``, so a
clipped sum is ``X.T @ (scale * D)`` with one scalar per row.

Sections, one per family of solvers: L2 gradient sums (``dp_gd``,
``dp_sgd``, the SVRG family, ``dp_accmd``); l1 geometry (Frank-Wolfe, mirror
descent); coordinate blocks (``dp_cd``); ReSQue sums (``resque``); second-order and
sufficient statistics (``dp_newton``, ``dp_ssp``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._data import row_l2_norms

__all__ = [
    "clip_scale",
    "clipped_gradient_sum",
    "l2_clipped_derivatives",
    "svrg_snapshot_sum",
    "svrg_difference_sum",
    "clipped_derivative",
    "clipped_sum",
    "frank_wolfe_gradient",
    "vr_root_estimate",
    "vr_correction",
    "vertex_scores",
    "block_row_norms",
    "block_clipped_gradient_sum",
    "resque_query_derivatives",
    "capped_resque_sum",
    "svec",
    "unsvec",
    "curvature_bound",
    "newton_sums",
    "clip_labels_to",
    "sufficient_statistics",
    "smallest_eigenvalue",
    "clipped_residual_squares",
]


def clip_scale(norms, clip_norm, out=None):
    """Per-row factors ``min(1, clip_norm / norms)`` (1 where the norm is 0 or within the clip).

    ``clip_norm`` None or inf gives ones.  Only rows over the clip are
    divided, so zero norms never divide (a zero or NaN norm gives 1, an
    infinite norm 0).  With ``out`` (a float array, which may be ``norms``
    itself) the factors are written there without other allocations, as
    ``clip_norm / fmax(norms, clip_norm)``: the same values (exactly 1 within
    the clip and for NaN norms), so a kernel needs no extra n-vector.
    """
    if out is not None:
        if clip_norm is None or not np.isfinite(clip_norm):
            out[...] = 1.0
            return out
        np.fmax(norms, clip_norm, out=out)
        np.divide(clip_norm, out, out=out)
        return out
    scale = np.ones_like(norms, dtype=float)
    if clip_norm is None or not np.isfinite(clip_norm):
        return scale
    over = norms > clip_norm
    scale[over] = clip_norm / norms[over]
    return scale


# --------------------------------------------------------------------------
# L2 gradient sums: dp_gd, dp_sgd, the SVRG family, dp_accmd
# --------------------------------------------------------------------------


def _product(X, W):
    """``X @ W`` for a matrix or a bounded design (:class:`~sklearn_dp._design.Design`)."""
    if hasattr(X, "matmul"):
        return X.matmul(W)
    return np.asarray(X @ W)


def _transpose_product(X, D):
    """``X.T @ D`` for a matrix or a bounded design (accumulated in float64)."""
    if hasattr(X, "rmatmul"):
        return X.rmatmul(D)
    return np.asarray(X.T @ D)


def l2_clipped_derivatives(X, y, W, loss, clip_norm, row_norms):
    """Per-sample ``dl/dz``, each scaled so that the gradient ``outer(x_i, D_i)`` has norm <= ``clip_norm``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    W : ndarray of shape (n_features, n_outputs)
    loss : GLMLoss
    clip_norm : float or None
        L2 (Frobenius) bound on each per-sample gradient; ``None`` or ``inf``
        leaves the derivatives as they are.
    row_norms : ndarray of shape (n_samples,)
        ``||x_i||_2``, precomputed once per fit.

    Returns
    -------
    D : ndarray of shape (n_samples, n_outputs)
        The clipped derivatives: ``||D_i|| * ||x_i|| <= clip_norm`` (private;
        the SVRG solvers keep the snapshot's for their inner steps).

    Notes
    -----
    The gradient of sample i is ``outer(x_i, D_i)``; its norm is
    ``||D_i|| * ||x_i||``, so clipping it rescales ``D_i`` by the scalar
    :func:`clip_scale` gives.
    """
    D = loss.derivative(_product(X, W), y)
    if clip_norm is not None and np.isfinite(clip_norm):
        norms = np.sqrt(np.einsum("ij,ij->i", D, D)) * row_norms
        D = D * clip_scale(norms, clip_norm)[:, None]
    return D


def clipped_gradient_sum(X, y, W, loss, clip_norm, row_norms, sample_weight=None):
    """Sum over rows of per-sample loss gradients, each clipped to ``clip_norm``.

    The pre-noise quantity of ``dp_gd`` (every step), ``dp_sgd`` (on the
    Poisson batch) and ``dp_accmd`` (at the coupling point): add/remove-one
    sensitivity ``clip_norm`` in L2, ``max_weight * clip_norm`` with
    ``sample_weight`` in ``[0, max_weight]``.

    Parameters
    ----------
    X : ndarray, sparse matrix or Design of shape (n_samples, n_features)
        A bounded design (:class:`~sklearn_dp._design.Design`) is used
        through its products, without a copy of the caller's X.
    y : ndarray of shape (n_samples,)
    W : ndarray of shape (n_features, n_outputs)
    loss : GLMLoss
    clip_norm : float or None
        L2 (Frobenius) bound on each per-sample gradient; ``None`` or ``inf``
        sums the raw gradients.
    row_norms : ndarray of shape (n_samples,)
        ``||x_i||_2``, precomputed once per fit.
    sample_weight : ndarray of shape (n_samples,), optional
        Multiplies each (clipped) per-sample term; with weights in ``[0,
        max_weight]`` the sensitivity is ``max_weight * clip_norm``.

    Returns
    -------
    grad_sum : ndarray of shape (n_features, n_outputs)

    Notes
    -----
    The gradient of sample i is ``outer(x_i, D_i)`` with ``D = dl/dz``; its
    norm is ``||D_i|| * ||x_i||``, so clipping rescales ``D_i`` by a scalar
    (:func:`l2_clipped_derivatives`).  The cost is ``X @ W`` and ``X.T @ D``,
    whatever ``n_outputs``.
    """
    D = l2_clipped_derivatives(X, y, W, loss, clip_norm, row_norms)
    if sample_weight is not None:
        D = D * sample_weight[:, None]
    return _transpose_product(X, D)


def svrg_snapshot_sum(X, y, W_snapshot, loss, clip_norm, row_norms):
    """The SVRG snapshot's clipped gradient sum, and the clipped derivatives it sums.

    ``grad_sum`` is :func:`clipped_gradient_sum` at the snapshot (the
    pre-noise value of ``dp_svrg`` / ``dp_svrg_pp``'s snapshot release,
    sensitivity ``clip_norm``); ``D`` (private) is kept for the epoch's
    inner steps, which use it only inside :func:`svrg_difference_sum`.

    Returns
    -------
    grad_sum : ndarray of shape (n_features, n_outputs)
    D : ndarray of shape (n_samples, n_outputs)
    """
    D = l2_clipped_derivatives(X, y, W_snapshot, loss, clip_norm, row_norms)
    return _transpose_product(X, D), D


def svrg_difference_sum(X, y, W, loss, clip_norm, row_norms, D_snapshot, bound):
    """Sum over rows of per-sample gradient differences, each clipped to ``bound``.

    ``d_i = clip_C(grad f(W, z_i)) - clip_C(grad f(W_snap, z_i))`` (``C =
    clip_norm``; the snapshot's clipped derivatives ``D_snapshot`` come from
    :func:`svrg_snapshot_sum`), re-clipped to L2 norm ``bound``.  The
    pre-noise value of an SVRG inner step on its Poisson batch: sensitivity
    ``bound`` (at most ``2 C``) in L2, whatever the rows.

    Parameters
    ----------
    X, y, row_norms
        The rows of the batch.
    W : ndarray of shape (n_features, n_outputs)
        The inner iterate.
    loss : GLMLoss
    clip_norm : float or None
    D_snapshot : ndarray of shape (n_batch, n_outputs)
        The batch's rows of the snapshot's clipped derivatives.
    bound : float
        The public bound on each difference (the step's sensitivity).

    Returns
    -------
    diff_sum : ndarray of shape (n_features, n_outputs)
    """
    if X.shape[0] == 0:
        return np.zeros(np.shape(W))
    diff = l2_clipped_derivatives(X, y, W, loss, clip_norm, row_norms) - D_snapshot
    norms = np.sqrt(np.einsum("ij,ij->i", diff, diff)) * row_norms
    diff = diff * clip_scale(norms, bound)[:, None]
    return _transpose_product(X, diff)


# --------------------------------------------------------------------------
# l1 geometry: Frank-Wolfe, mirror descent
# --------------------------------------------------------------------------


def clipped_derivative(X, y, w, loss, clip, row_scale):
    """Per-sample derivatives ``D_i`` scaled so that ``|D_i| * row_scale_i <= clip``.

    For one output the gradient of row i is ``D_i x_i``; with ``row_scale =
    ||x_i||_inf`` (Frank-Wolfe) it is clipped in l-infinity, with ``row_scale =
    ||x_i||_2`` (mirror descent) in L2.  ``clip`` None or inf leaves ``D`` as it is.
    ``X`` may be a bounded design (:class:`~sklearn_dp._design.Design`): its
    products, no copy of the caller's X.
    """
    D = loss.derivative(np.asarray(_product(X, w))[:, None], y)[:, 0]
    if clip is not None and np.isfinite(clip):
        # In place (one n-vector of factors): the values of
        # ``D * clip_scale(|D| * row_scale, clip)``.
        factors = np.abs(D)
        factors *= row_scale
        clip_scale(factors, clip, out=factors)
        D *= factors  # D is a new array (the loss's derivative)
    return D


def clipped_sum(X, y, w, loss, clip, row_scale):
    """Sum of per-sample gradients ``D_i x_i``, each clipped to ``clip`` (in the norm of ``row_scale``).

    One row moves the sum by at most ``clip`` in that norm: the pre-noise
    quantity of a ``mirror_descent`` step (L2, ``row_scale = ||x_i||_2``) and the
    gradient sums of the Frank-Wolfe solvers (l-infinity, ``row_scale =
    ||x_i||_inf``).  The gradient of a GLM loss is a scalar times the row, so
    clipping rescales the scalar: two mat-vecs, no n x d matrix.
    """
    D = clipped_derivative(X, y, w, loss, clip, row_scale)
    return np.asarray(_transpose_product(X, D)).ravel()


def frank_wolfe_gradient(X, y, w, loss, clip, row_scale, normalizer, domain):
    """The gradient estimate a ``frank_wolfe`` step scores the vertices with.

    ``(sum of per-sample gradients clipped to C in l-infinity) / normalizer``
    plus the (data-independent) L2 penalty's gradient: one row moves it by at
    most ``C / normalizer`` in l-infinity.
    """
    gradient = clipped_sum(X, y, w, loss, clip, row_scale) / normalizer
    gradient += domain.l2_penalty * w
    return gradient


def vr_root_estimate(X, y, w, loss, clip, row_scale, size):
    """Root estimate of a ``vr_frank_wolfe`` phase: clipped gradient sum over its rows / ``size``.

    ``size`` is the slot's public expected size; one row moves the estimate by
    at most ``clip / size`` in l-infinity.
    """
    return clipped_sum(X, y, w, loss, clip, row_scale) / size


def vr_correction(X, y, w_now, w_parent, loss, clip, row_scale, size):
    """SPIDER correction of a right child: ``sum_i clip_C(g_i(w_now) - g_i(w_parent)) / size``.

    Each row's correction term is clipped as a whole to ``clip`` in l-infinity
    (seed erratum E12), so one row moves the correction by at most ``clip / size``.
    """
    difference = clipped_derivative(X, y, w_now, loss, clip, row_scale) - clipped_derivative(
        X, y, w_parent, loss, clip, row_scale
    )
    if clip is not None and np.isfinite(clip):
        difference = difference * clip_scale(np.abs(difference) * row_scale, clip)
    return np.asarray(_transpose_product(X, difference)).ravel() / size


def vertex_scores(gradient, domain):
    """Scores of the vertices of an l1 polytope: the exponential mechanisms of Frank-Wolfe minimise them.

    ``domain`` is an :class:`~sklearn_dp.solvers._l1_geometry.L1Domain`.  The
    selection releases an index drawn with probability proportional to
    ``exp(-score / scale)``, i.e. the gateway's utilities are minus these.

    Returns
    -------
    ball_scores : ndarray of shape (2 k,) or (2 k + 1,)
        ``radius * gradient_j + penalty_j`` then ``-radius * gradient_j + penalty_j``
        for the k ball coordinates, and 0 (the origin) with an L1 penalty.
    box_scores : list of ndarray of shape (2,)
        ``(box_j * gradient_j, -box_j * gradient_j)`` per box coordinate j.

    When the gradient estimate moves by ``u`` in l-infinity, the ball scores
    move by at most ``radius * u`` and box coordinate j's by ``box_j * u`` (the
    penalty terms are data-independent).
    """
    ball_index = np.flatnonzero(domain.ball)
    radius = domain.radius
    g = gradient[ball_index]
    penalty = domain.l1_penalty[ball_index] * radius
    scores = np.concatenate([radius * g + penalty, -radius * g + penalty])
    if domain.has_l1_penalty:
        scores = np.append(scores, 0.0)
    box_scores = [
        np.array([domain.box[j] * gradient[j], -domain.box[j] * gradient[j]])
        for j in np.flatnonzero(~domain.ball)
    ]
    return scores, box_scores


# --------------------------------------------------------------------------
# Coordinate blocks: dp_cd
# --------------------------------------------------------------------------


def block_row_norms(X_block):
    """``||x_{i,U}||_2`` of each row of a column block (underflow-safe, dense or sparse).

    ``X_block`` is a matrix (a copy of the block's columns) or an operator on
    them (a :class:`~sklearn_dp._design.ColumnView` of the bounded design).
    """
    if hasattr(X_block, "row_norms"):
        return X_block.row_norms()
    if not sp.issparse(X_block) and X_block.shape[1] == 1:
        return np.abs(X_block[:, 0])
    # Underflow-safe: a row whose squares underflow must not look like a zero row to the clip.
    return row_l2_norms(X_block)


#: Rows per chunk of a pass that needs no n-vector (the intercept column of dp_cd).
_CHUNK_ROWS = 8192


def block_clipped_gradient_sum(X_block, Z_rows, y_rows, loss, block_bound):
    """Sum over rows of the block-restricted per-sample gradients, each clipped to ``block_bound``.

    The gradient of row i restricted to the block's columns is ``outer(X_block[i], D_i)``
    with ``D = dl/dz`` at the scores ``Z_rows``; its norm is ``||D_i|| * ||X_block[i]||``,
    so clipping rescales ``D_i``.  Adding or removing a row moves the sum by at most
    ``block_bound`` in L2 (the pre-noise quantity of a ``dp_cd`` step).  ``X_block`` is a
    copy of the block's columns, which may hold only the rows where the block is non-zero
    (sparse data; the others contribute nothing), or an operator on the block's columns of
    the bounded design (:class:`~sklearn_dp._design.ColumnView`: no copy, products through
    the whole design).  For one column and one output the per-sample gradient
    is the scalar ``D_i x_i`` and its clip is ``np.clip`` to ``[-block_bound,
    block_bound]`` (the same value up to rounding, and within the bound exactly).

    Returns
    -------
    ndarray of shape (X_block.shape[1], n_outputs)
    """
    if (
        Z_rows.shape[1] == 1
        and X_block.shape[1] == 1
        and getattr(X_block, "features", None) is not None
        and not X_block.features.size
    ):
        # The intercept column alone (a ColumnView of the constant column c):
        # the per-sample gradient is D_i c, clipped as below, by chunks of rows
        # (no n-vector).
        total = 0.0
        for start in range(0, Z_rows.shape[0], _CHUNK_ROWS):
            stop = start + _CHUNK_ROWS
            terms = loss.derivative(Z_rows[start:stop], y_rows[start:stop])[:, 0]
            terms *= X_block.design.intercept
            if block_bound is not None and np.isfinite(block_bound):
                np.clip(terms, -block_bound, block_bound, out=terms)
            total += terms.sum()
        return np.array([[total]])
    D = loss.derivative(Z_rows, y_rows)  # a new array (losses never return a view)
    if X_block.shape[0] == 0:
        return np.zeros((X_block.shape[1], D.shape[1]))
    # In place where possible: a step holds few n-vectors at once.
    if D.shape[1] == 1 and isinstance(X_block, np.ndarray) and X_block.shape[1] == 1:
        # One column, one output: the per-sample gradient is the scalar D_i x_i,
        # clipped to [-block_bound, block_bound] (every term within the bound
        # exactly, so the sum moves by at most block_bound when a row is added
        # or removed), summed pairwise in float64 (no BLAS call, whose threads
        # cost more than an n-vector pass on a busy machine).
        terms = D[:, 0]
        np.multiply(terms, X_block[:, 0], out=terms)
        if block_bound is not None and np.isfinite(block_bound):
            np.clip(terms, -block_bound, block_bound, out=terms)
        return np.array([[terms.sum()]])
    else:
        if D.shape[1] == 1:
            norms = np.abs(D[:, 0])
        else:
            norms = np.sqrt(np.einsum("ij,ij->i", D, D))
        norms *= block_row_norms(X_block)
    D *= clip_scale(norms, block_bound, out=norms)[:, None]
    if hasattr(X_block, "rmatmul"):
        return X_block.rmatmul(D)
    return np.asarray(X_block.T @ D)


# --------------------------------------------------------------------------
# ReSQue sums: resque
# --------------------------------------------------------------------------


def resque_query_derivatives(features, y, loss, center, xi):
    """Derivatives ``l'(x_i @ (center + xi_i), y_i)`` of ReSQue queries, clipped to the loss's bound.

    Parameters
    ----------
    features : ndarray of shape (m, d)
        The queried rows ``x_i`` (dense; clipped to the public row bound by
        the data layer).
    y : ndarray of shape (m,)
        Their labels.
    loss : GLMLoss
        A loss with a finite ``derivative_bound`` (Lipschitz in the score).
    center : ndarray of shape (d,)
        Reference point of the round.
    xi : ndarray of shape (m, d)
        The perturbations (data-independent draws, ``N(0, rho^2 I)``).

    Returns
    -------
    ndarray of shape (m,)
        ``clip(l'(<x_i, center + xi_i>, y_i), -derivative_bound, derivative_bound)``.
        The clip is already a no-op for the globally Lipschitz losses resque
        accepts; it makes ``|l'_i| <= derivative_bound`` hold by construction
        whatever the query point (``np.clip`` is exact: no rounding above the bound).
    """
    margins = features @ center + np.einsum("ij,ij->i", features, xi)
    derivative = loss.derivative(margins[:, None], y)[:, 0]
    bound = loss.derivative_bound
    return np.clip(derivative, -bound, bound)


def capped_resque_sum(xi, derivative, features, offset, scale, max_log_weight, max_weight):
    """``sum_i min(w_i, max_weight) l'_i x_i``: the pre-noise sum of one resque inner step.

    ``w_i = exp((2 <offset, xi_i> - ||offset||^2) * scale)`` with ``offset = x -
    center`` and ``scale = 1 / (2 rho^2)`` (the ReSQue weight, capped in log
    space first so that it cannot overflow, then exactly: ``exp(log 3)`` may
    round above 3), ``l'_i`` the query's derivative (clipped to the loss's
    bound, :func:`resque_query_derivatives`) and ``x_i`` the row.

    Parameters
    ----------
    xi : ndarray of shape (m, d)
    derivative : ndarray of shape (m,)
    features : ndarray of shape (m, d)
    offset : ndarray of shape (d,)
        ``x - center``: where the gradient is estimated, relative to the round's centre.
    scale : float
        ``1 / (2 rho^2)``.
    max_log_weight, max_weight : float
        ``log(max_weight)`` and ``max_weight`` (>= 1, finite).

    Returns
    -------
    ndarray of shape (d,)

    Notes
    -----
    Sensitivity: each term has norm at most ``max_weight * derivative_bound *
    ||x_i|| <= max_weight * L`` whatever ``xi_i`` and ``offset``; the
    perturbations are drawn independently of the data, so a row added or
    removed moves the sum by one term: at most ``max_weight * L`` in L2.
    """
    log_w = (2.0 * (xi @ offset) - offset @ offset) * scale
    np.minimum(log_w, max_log_weight, out=log_w)
    weights = np.exp(log_w, out=log_w)
    np.minimum(weights, max_weight, out=weights)
    return (weights * derivative) @ features


# --------------------------------------------------------------------------
# Second-order and sufficient statistics: dp_newton, dp_ssp
# --------------------------------------------------------------------------
#
# Sums over the rows of the bounded design ``X~`` (a ``Design``: the caller's X
# with row factors and an intercept column, never copied), each stated with its
# add/remove-one sensitivity:
#
# * ``newton_sums``: the clipped gradient sum (sensitivity: the clip, L2) and
#   the Hessian sum ``sum_i x_i x_i^T (x) A_i`` with ``A_i = d^2 l / dz^2``
#   (``k x k``, ``k`` outputs), released as ``svec``: its L2 norm is the
#   Frobenius norm, and one row's term has Frobenius norm
#   ``||A_i||_F ||x_i||^2 <= curvature_bound(loss) * R^2``.
# * ``sufficient_statistics``: ``svec(X~^T X~)`` (sensitivity ``R^2``, L2),
#   ``X~^T y`` with labels clipped to ``y_bound`` (sensitivity ``R y_bound``,
#   L2) and ``lambda_min(X~^T X~)`` (sensitivity ``R^2``: adding ``x x^T``
#   moves every eigenvalue up by at most ``||x||^2``, Weyl).
#
# Symmetric matrices are released through ``svec``: the diagonal, then the
# strict upper triangle times sqrt(2) (row by row).  ``||svec(M)||_2 =
# ||M||_F`` exactly, so a Frobenius sensitivity is the L2 sensitivity of the
# released vector.  (Releasing the plain upper triangle would have the same
# worst-case L2 sensitivity, reached by a row along one axis, but twice the
# noise variance on every off-diagonal entry once mirrored back.)


_SQRT2 = float(np.sqrt(2.0))


def svec(M):
    """The isometric vector of a symmetric ``(m, m)`` matrix: ``||svec(M)||_2 = ||M||_F``.

    The diagonal first, then ``sqrt(2) * M[i, j]`` for ``i < j`` in row-major
    order of the upper triangle; ``m (m + 1) / 2`` entries.  Filled row by
    row (no index arrays of the triangle's size).
    """
    M = np.asarray(M, dtype=float)
    m = M.shape[0]
    out = np.empty(m * (m + 1) // 2)
    out[:m] = np.diagonal(M)
    at = m
    for i in range(m - 1):
        np.multiply(M[i, i + 1 :], _SQRT2, out=out[at : at + m - 1 - i])
        at += m - 1 - i
    return out


def unsvec(v, m):
    """The symmetric ``(m, m)`` matrix of :func:`svec` (its inverse; any vector is accepted).

    Each off-diagonal entry is read once from the vector and mirrored, so a
    vector of independent noise gives a symmetric matrix with noise variance
    ``s^2`` on the diagonal and ``s^2 / 2`` off it.
    """
    v = np.asarray(v, dtype=float)
    M = np.empty((m, m))
    M[np.diag_indices(m)] = v[:m]
    at = m
    for i in range(m - 1):
        row = M[i, i + 1 :]
        np.divide(v[at : at + m - 1 - i], _SQRT2, out=row)
        M[i + 1 :, i] = row
        at += m - 1 - i
    return M


def curvature_bound(loss):
    """Public bound on the Frobenius norm of ``d^2 l / dz^2`` of one sample, or None.

    The loss's ``curvature_frobenius_bound``: ``1/4`` for the binary
    log-loss (``sigma(z) (1 - sigma(z))``), ``1/2`` for the multinomial one
    (``||diag(p) - p p^T||_F``), 1 for the squared loss and Huber; None for a
    loss that is not smooth.  The per-sample Hessian in the coefficients is
    ``A (x) x x^T``, of Frobenius norm ``||A||_F ||x||^2``.
    """
    return getattr(loss, "curvature_frobenius_bound", None)


def _multinomial_hessian(design, P, sample_weight=None):
    """``sum_i w_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` in the class-major order of ``W.ravel("F")``."""
    m, K = design.n_columns, P.shape[1]
    H = np.zeros((m * K, m * K))
    for k in range(K):
        for l in range(k, K):
            weights = P[:, k] * ((k == l) - P[:, l])
            if sample_weight is not None:
                weights = weights * sample_weight
            block = design.gram(weights)
            H[k * m : (k + 1) * m, l * m : (l + 1) * m] = block
            if l != k:
                H[l * m : (l + 1) * m, k * m : (k + 1) * m] = block
    return H


def newton_sums(design, y, W, loss, clip_norm, row_norms, *, hessian=True, sample_weight=None):
    """The gradient sum and the Hessian sum of dp_newton at ``W``, through the design (no copy of X).

    Parameters
    ----------
    design : Design
        The bounded rows (L2 norm at most ``R``) and the intercept column.
    y : ndarray of shape (n,)
    W : ndarray of shape (n_columns, k)
    loss : GLMLoss
        A smooth GLM loss (:func:`curvature_bound` not None).
    clip_norm : float or None
        L2 (Frobenius) clip of each per-sample gradient ``outer(x_i, dl/dz)``;
        None or inf for none.
    row_norms : ndarray of shape (n,)
        ``||x~_i||_2``.
    hessian : bool
        Also compute the Hessian sum (else None).
    sample_weight : ndarray of shape (n,), optional
        Per-row weights in ``[0, max_weight]``, multiplying each row's
        (clipped) gradient and its Hessian term: both sensitivities are then
        multiplied by ``max_weight``.

    Returns
    -------
    gradient_sum : ndarray of shape (n_columns, k)
        Add/remove-one sensitivity ``clip_norm`` (L2).
    hessian_sum : ndarray of shape (n_columns * k, n_columns * k) or None
        ``sum_i A_i (x) x_i x_i^T`` (coefficients in the order of
        ``W.ravel("F")``: class-major).  Add/remove-one sensitivity in
        Frobenius norm (the L2 norm of its ``svec``):
        ``curvature_bound(loss) * R^2``.  Not clipped: the loss bounds it.
    """
    # Block by block of rows (Design.row_block): scores, derivatives, clip
    # factors and curvature weights exist for one block at a time, and each
    # block's sums are added to the d-vector / Gram matrix (no n-vector).
    m, k = design.n_columns, W.shape[1]
    gradient = np.zeros((m, k))
    H = None
    if hessian:
        H = np.zeros((m * k, m * k)) if loss.multi_output else np.zeros((m, m))
    zero = not np.any(W)  # at W = 0 (the first step) every score is 0: no product
    blocks = design.blocks() if hasattr(design, "row_block") else [(0, design.n_rows)]
    for start, stop in blocks:
        part = design.row_block(start, stop) if hasattr(design, "row_block") else design
        if part.dtype != np.float64 and not zero and hasattr(part, "in_float64"):
            # One exact float64 copy of the block's bounded rows serves every
            # product of the block (a float32 design converts its rows in each
            # of them: two or three conversions a block instead of one).
            part = part.in_float64()
        y_part = y[start:stop]
        weight = None if sample_weight is None else sample_weight[start:stop]
        Z = np.zeros((stop - start, k)) if zero else part.matmul(W)
        if hessian:
            if loss.multi_output:
                P = Z - Z.max(axis=1, keepdims=True)
                np.exp(P, out=P)
                P /= P.sum(axis=1, keepdims=True)
                H += _multinomial_hessian(part, P, weight)
                del P
            else:
                h = loss.curvature(Z, y_part)
                if weight is not None:
                    h *= weight
                H += part.gram(h)
                del h
        D = loss.derivative_in_place(Z, y_part)
        del Z
        if clip_norm is not None and np.isfinite(clip_norm):
            norms = np.sqrt(np.einsum("ij,ij->i", D, D)) if D.shape[1] > 1 else np.abs(D[:, 0])
            norms *= row_norms[start:stop]
            D *= clip_scale(norms, clip_norm, out=norms)[:, None]
            del norms
        if weight is not None:
            D *= weight[:, None]
        gradient += part.rmatmul(D)
        del D, part
    return gradient, H


def clip_labels_to(y, y_bound):
    """Labels clipped to ``[-y_bound, y_bound]`` as float64 (a new array)."""
    return np.clip(np.asarray(y, dtype=np.float64), -float(y_bound), float(y_bound))


def sufficient_statistics(design, y, y_bound, sample_weight=None):
    """``(X~^T X~, X~^T y)`` with the labels clipped to ``y_bound``: what dp_ssp releases.

    Add/remove-one sensitivities: ``R^2`` for the Gram matrix in Frobenius
    norm (the L2 norm of its ``svec``; one row adds ``x x^T``, of Frobenius
    norm ``||x||^2``), and ``R * y_bound`` for ``X~^T y`` in L2, where ``R``
    bounds the rows of the design (intercept column included).  With
    ``sample_weight`` in ``[0, max_weight]`` the statistics are ``X~^T W X~``
    and ``X~^T W y`` (``W = diag(sample_weight)``) and both sensitivities are
    multiplied by ``max_weight`` (one row adds ``w x x^T`` and ``w y x``).
    ``design`` may be a :class:`~sklearn_dp._design.ColumnView` (the
    statistics of a support, ``R`` the bound of the rows restricted to it).
    """
    if not hasattr(design, "row_block"):
        labels = clip_labels_to(y, y_bound)
        if sample_weight is None:
            return design.gram(), design.rmatmul(labels)
        return design.gram(sample_weight), design.rmatmul(labels * sample_weight)
    gram = design.gram(sample_weight)
    # X~^T y block by block: the clipped (weighted) labels of one block at a time.
    cross = np.zeros(design.n_columns)
    for start, stop in design.blocks():
        labels = clip_labels_to(y[start:stop], y_bound)
        if sample_weight is not None:
            labels *= sample_weight[start:stop]
        cross += _transpose_product(design.row_block(start, stop), labels)
    return gram, cross


def smallest_eigenvalue(gram):
    """``lambda_min`` of a symmetric PSD matrix: AdaSSP's scalar release.

    Add/remove-one sensitivity ``R^2``: the matrices of neighbouring data sets
    differ by ``x x^T`` with ``||x|| <= R``, and ``A <= A + x x^T <= A +
    ||x||^2 I`` moves every eigenvalue by at most ``||x||^2`` (Weyl).
    """
    if gram.shape[0] == 0:
        return 0.0
    return float(np.linalg.eigvalsh(gram)[0])


def clipped_residual_squares(design, y, coef, residual_bound, y_bound=None, sample_weight=None):
    """``sum_i min(r_i^2, b^2)`` with ``r_i = y_i - x~_i @ coef``: the residual scale for inference.

    ``coef`` is a released model (public), ``b = residual_bound`` public and
    the labels are first clipped to ``y_bound`` when it is given.  Each row
    adds at most ``b^2``: add/remove-one sensitivity ``b^2`` (times
    ``max_weight`` with ``sample_weight`` in ``[0, max_weight]``, which
    multiplies each row's term).
    """
    coef = np.asarray(coef, dtype=float).reshape(-1, 1)
    bound = float(residual_bound) ** 2
    total = 0.0
    blocks = design.blocks() if hasattr(design, "row_block") else [(0, design.n_rows)]
    for start, stop in blocks:
        part = design.row_block(start, stop) if hasattr(design, "row_block") else design
        labels = np.asarray(y[start:stop], dtype=np.float64)
        if y_bound is not None:
            labels = clip_labels_to(labels, y_bound)
        with np.errstate(over="ignore"):  # a square beyond the float range is clipped anyway
            squares = np.minimum(np.square(labels - part.matmul(coef)[:, 0]), bound)
        if sample_weight is not None:
            squares *= sample_weight[start:stop]
        total += float(np.sum(squares))
    return np.array([total])


def gram_sketch(design, sketch, row_bound, sample_weight=None):
    """``X~^T diag(w) Z``, ``Z ~ X~ Omega``: the Gram matrix times a public sketch, without it.

    Parameters
    ----------
    design : Design
        The bounded rows (L2 norm at most ``R``) and the intercept column.
    sketch : ndarray of shape (n_columns, k)
        A public matrix of spectral norm at most 1 (orthonormal columns).
    row_bound : float
        The public row bound ``R``.
    sample_weight : ndarray of shape (n,), optional
        Per-row weights in ``[0, max_weight]``.

    Returns
    -------
    ndarray of shape (n_columns, k)
        Add/remove-one sensitivity in Frobenius norm (the L2 norm of the
        array): ``max_weight * R^2``.  One row adds ``w x z^T``, of norm
        ``w ||x|| ||z||``, where ``z = Omega^T x`` (of norm at most
        ``||x|| <= R``) is computed in float64 (float32 rows converted
        exactly) and then scaled to L2 norm at most ``R``: the bound holds
        whatever the rounding of ``z``.
    """
    bound = float(row_bound)
    out = np.zeros((design.n_columns, sketch.shape[1]))
    blocks = design.blocks() if hasattr(design, "row_block") else [(0, design.n_rows)]
    for start, stop in blocks:
        part = design.row_block(start, stop) if hasattr(design, "row_block") else design
        if part.dtype != np.float64:
            # One exact float64 copy of the block's bounded rows serves both
            # products (a float32 design converts its rows in each of them).
            part = part.in_float64()
        Z = part.matmul(sketch)
        norms = np.linalg.norm(Z, axis=1)
        factor = np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))
        if sample_weight is not None:
            factor *= np.asarray(sample_weight[start:stop], dtype=np.float64)
        Z *= factor[:, None]
        out += part.rmatmul(Z)
        del Z, part
    return out
