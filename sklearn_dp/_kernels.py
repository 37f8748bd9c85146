"""Clipped-sum kernels: the per-sample bounded sums that every noisy release adds noise to.

Every pre-noise quantity of the package is computed by a function of this
module, so that its add/remove-one sensitivity is stated (and tested, in
``tests/test_sensitivity.py`` and ``tests/test_sensitivity_properties.py``)
in one place.  The kernels never add noise (the noise gateway,
:mod:`sklearn_dp._noise`, does) and never build an n x d matrix of per-sample
gradients: for a GLM the gradient of row i is ``outer(x_i, dl/dz_i)``, so a
clipped sum is ``X.T @ (scale * D)`` with one scalar per row.

Sections, one per family of solvers: L2 gradient sums (``dp_gd``,
``dp_sgd``, the SVRG family, ``dp_accmd``); l1 geometry (Frank-Wolfe, mirror
descent); coordinate blocks (``dp_cd``); ReSQue sums (``resque``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._data import row_l2_norms

__all__ = [
    "clip_scale",
    "clipped_gradient_sum",
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
]


def clip_scale(norms, clip_norm, out=None):
    """Per-row factors ``min(1, clip_norm / norms)`` (1 where the norm is 0 or within the clip).

    ``clip_norm`` None or inf gives ones.  A zero (or NaN) norm gives 1, an
    infinite norm 0; rows over the clip get ``clip_norm / norms`` exactly.
    ``out`` (float64, may be ``norms`` itself) receives the factors, so a
    kernel needs no extra n-vector.
    """
    if clip_norm is None or not np.isfinite(clip_norm):
        if out is None:
            return np.ones_like(norms, dtype=float)
        out[...] = 1.0
        return out
    with np.errstate(divide="ignore", invalid="ignore"):
        # clip / norm >= 1 exactly when norm <= clip (and inf or NaN for a zero norm,
        # which fmin turns into 1, as it does a NaN norm).
        scale = np.divide(float(clip_norm), norms, out=out, dtype=np.float64)
    return np.fmin(scale, 1.0, out=scale)


# --------------------------------------------------------------------------
# L2 gradient sums: dp_gd, dp_sgd, the SVRG family, dp_accmd
# --------------------------------------------------------------------------


def clipped_gradient_sum(X, y, W, loss, clip_norm, row_norms, sample_weight=None):
    """Sum over rows of per-sample loss gradients, each clipped to ``clip_norm``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    W : ndarray of shape (n_features, n_outputs)
    loss : GLMLoss
    clip_norm : float or None
        L2 (Frobenius) bound on each per-sample gradient; ``None`` or ``inf``
        sums the raw gradients.
    row_norms : ndarray of shape (n_samples,)
        ``||x_i||_2``, precomputed once per fit.
    sample_weight : ndarray of shape (n_samples,), optional
        Multiplies each (clipped) per-sample term; must lie in [0, 1] for the
        sensitivity to stay ``clip_norm``.

    Returns
    -------
    grad_sum : ndarray of shape (n_features, n_outputs)

    Notes
    -----
    The gradient of sample i is ``outer(x_i, D_i)`` with ``D = dl/dz``; its
    norm is ``||D_i|| * ||x_i||``, so clipping rescales ``D_i`` by a scalar.
    The cost is ``X @ W`` and ``X.T @ D``, whatever ``n_outputs``.
    """
    D = loss.derivative(np.asarray(X @ W), y)
    if clip_norm is not None and np.isfinite(clip_norm):
        norms = np.sqrt(np.einsum("ij,ij->i", D, D)) * row_norms
        D = D * clip_scale(norms, clip_norm)[:, None]
    if sample_weight is not None:
        D = D * sample_weight[:, None]
    return np.asarray(X.T @ D)



# --------------------------------------------------------------------------
# l1 geometry: Frank-Wolfe, mirror descent
# --------------------------------------------------------------------------


def clipped_derivative(X, y, w, loss, clip, row_scale):
    """Per-sample derivatives ``D_i`` scaled so that ``|D_i| * row_scale_i <= clip``.

    For one output the gradient of row i is ``D_i x_i``; with ``row_scale =
    ||x_i||_inf`` (Frank-Wolfe) it is clipped in l-infinity, with ``row_scale =
    ||x_i||_2`` (mirror descent) in L2.  ``clip`` None or inf leaves ``D`` as it is.
    """
    D = loss.derivative(np.asarray(X @ w)[:, None], y)[:, 0]
    if clip is not None and np.isfinite(clip):
        D = D * clip_scale(np.abs(D) * row_scale, clip)
    return D


def clipped_sum(X, y, w, loss, clip, row_scale):
    """Sum of per-sample gradients ``D_i x_i``, each clipped to ``clip`` (in the norm of ``row_scale``).

    One row moves the sum by at most ``clip`` in that norm: the pre-noise
    quantity of a ``mirror_descent`` step (L2, ``row_scale = ||x_i||_2``) and the
    gradient sums of the Frank-Wolfe solvers (l-infinity, ``row_scale =
    ||x_i||_inf``).  The gradient of a GLM loss is a scalar times the row, so
    clipping rescales the scalar: two mat-vecs, no n x d matrix.
    """
    return np.asarray(X.T @ clipped_derivative(X, y, w, loss, clip, row_scale)).ravel()


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
    return np.asarray(X.T @ difference).ravel() / size


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


def block_clipped_gradient_sum(X_block, Z_rows, y_rows, loss, block_bound):
    """Sum over rows of the block-restricted per-sample gradients, each clipped to ``block_bound``.

    The gradient of row i restricted to the block's columns is ``outer(X_block[i], D_i)``
    with ``D = dl/dz`` at the scores ``Z_rows``; its norm is ``||D_i|| * ||X_block[i]||``,
    so clipping rescales ``D_i``.  Adding or removing a row moves the sum by at most
    ``block_bound`` in L2 (the pre-noise quantity of a ``dp_cd`` step).  ``X_block`` is a
    copy of the block's columns, which may hold only the rows where the block is non-zero
    (sparse data; the others contribute nothing), or an operator on the block's columns of
    the bounded design (:class:`~sklearn_dp._design.ColumnView`: no copy, products through
    the whole design).

    Returns
    -------
    ndarray of shape (X_block.shape[1], n_outputs)
    """
    D = loss.derivative(Z_rows, y_rows)  # a new array (losses never return a view)
    if X_block.shape[0] == 0:
        return np.zeros((X_block.shape[1], D.shape[1]))
    # In place where possible: a step holds few n-vectors at once.
    if D.shape[1] == 1 and isinstance(X_block, np.ndarray) and X_block.shape[1] == 1:
        # One column: |D_i| * |x_i| = |D_i x_i| exactly (rounding is symmetric in sign).
        norms = np.multiply(D[:, 0], X_block[:, 0])
        np.abs(norms, out=norms)
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
