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
descent); coordinate blocks (``dp_cd``); ReSQue sums (``resque``); second-order and
sufficient statistics (``dp_newton``, ``dp_ssp``).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = [
    "clip_scale",
    "clipped_gradient_sum",
    "svec",
    "unsvec",
    "curvature_bound",
    "curvature_weights",
    "newton_sums",
    "clip_labels_to",
    "sufficient_statistics",
    "smallest_eigenvalue",
]


def clip_scale(norms, clip_norm, out=None):
    """Per-row factors ``min(1, clip_norm / norms)`` (1 where the norm is 0 or within the clip).

    ``clip_norm`` None or inf gives ones.  Only rows over the clip are
    divided, so zero norms never divide.  With ``out`` (a float array, which
    may be ``norms`` itself) the factors are written there without other
    allocations, as ``clip_norm / fmax(norms, clip_norm)``: the same values
    (exactly 1 within the clip and for NaN norms).
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


# --------------------------------------------------------------------------
# Coordinate blocks: dp_cd
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# ReSQue sums: resque
# --------------------------------------------------------------------------


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
    order of the upper triangle; ``m (m + 1) / 2`` entries.
    """
    M = np.asarray(M, dtype=float)
    m = M.shape[0]
    upper = np.triu_indices(m, 1)
    return np.concatenate([np.diag(M), _SQRT2 * M[upper]])


def unsvec(v, m):
    """The symmetric ``(m, m)`` matrix of :func:`svec` (its inverse; any vector is accepted).

    Each off-diagonal entry is read once from the vector and mirrored, so a
    vector of independent noise gives a symmetric matrix with noise variance
    ``s^2`` on the diagonal and ``s^2 / 2`` off it.
    """
    v = np.asarray(v, dtype=float)
    M = np.zeros((m, m))
    M[np.diag_indices(m)] = v[:m]
    upper = np.triu_indices(m, 1)
    M[upper] = v[m:] / _SQRT2
    M.T[upper] = M[upper]
    return M


def curvature_bound(loss):
    """Public bound on the Frobenius norm of ``d^2 l / dz^2`` of one sample, or None.

    * binary log-loss: ``sigma(z) (1 - sigma(z)) <= 1/4``;
    * multinomial log-loss: ``A = diag(p) - p p^T`` has
      ``||A||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2 <= sum p^2 - sum p^3
      = sum p_k^2 (1 - p_k) <= max_k p_k (1 - p_k) <= 1/4`` (Cauchy-Schwarz
      gives ``(sum p^2)^2 <= sum p^3``), so ``||A||_F <= 1/2``;
    * squared loss: 1; Huber: 1 inside its threshold, 0 outside.

    The per-sample Hessian in the coefficients is ``A (x) x x^T``, of
    Frobenius norm ``||A||_F ||x||^2``.
    """
    name = getattr(loss, "name", None)
    if name == "log_loss":
        return 0.5 if loss.multi_output else 0.25
    if name in ("squared", "huber"):
        return 1.0
    return None


def curvature_weights(loss, Z, y):
    """Per-sample curvature of a single-output loss, ``d^2 l / dz^2`` at ``Z[:, 0]`` (n,)."""
    name = loss.name
    z = Z[:, 0]
    if name == "log_loss":
        h = 1.0 / (1.0 + np.exp(-np.clip(z, -700.0, 700.0)))
        h *= 1.0 - h
        return h
    if name == "squared":
        return np.ones_like(z)
    if name == "huber":
        return (np.abs(z - y) <= loss.epsilon_huber).astype(float)
    raise ValueError(f"No curvature for the {name!r} loss.")


def _multinomial_hessian(design, P):
    """``sum_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` in the class-major order of ``W.ravel("F")``."""
    m, K = design.n_columns, P.shape[1]
    H = np.zeros((m * K, m * K))
    for k in range(K):
        for l in range(k, K):
            weights = P[:, k] * ((k == l) - P[:, l])
            block = design.gram(weights)
            H[k * m:(k + 1) * m, l * m:(l + 1) * m] = block
            if l != k:
                H[l * m:(l + 1) * m, k * m:(k + 1) * m] = block
    return H


def newton_sums(design, y, W, loss, clip_norm, row_norms, *, hessian=True):
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
    # At W = 0 (the first step) every score is 0: no pass over X.
    Z = design.matmul(W) if np.any(W) else np.zeros((design.n_rows, W.shape[1]))
    H = None
    if hessian:
        if loss.multi_output:
            P = Z - Z.max(axis=1, keepdims=True)
            np.exp(P, out=P)
            P /= P.sum(axis=1, keepdims=True)
            H = _multinomial_hessian(design, P)
            del P
        else:
            h = curvature_weights(loss, Z, y)
            H = design.gram(h)
            del h
    if loss.name == "log_loss" and not loss.multi_output:
        # -y sigmoid(-y z), in the scores' own buffer (no n-vector temporaries).
        D = Z
        D[:, 0] *= y
        np.negative(D, out=D)
        expit(D, out=D)
        D[:, 0] *= y
        np.negative(D, out=D)
    else:
        D = loss.derivative(Z, y)
    del Z
    if clip_norm is not None and np.isfinite(clip_norm):
        norms = np.sqrt(np.einsum("ij,ij->i", D, D)) if D.shape[1] > 1 else np.abs(D[:, 0])
        norms *= row_norms
        D *= clip_scale(norms, clip_norm, out=norms)[:, None]
        del norms
    return design.rmatmul(D), H


def clip_labels_to(y, y_bound):
    """Labels clipped to ``[-y_bound, y_bound]`` as float64 (a new array)."""
    return np.clip(np.asarray(y, dtype=np.float64), -float(y_bound), float(y_bound))


def sufficient_statistics(design, y, y_bound):
    """``(X~^T X~, X~^T y)`` with the labels clipped to ``y_bound``: what dp_ssp releases.

    Add/remove-one sensitivities: ``R^2`` for the Gram matrix in Frobenius
    norm (the L2 norm of its ``svec``; one row adds ``x x^T``, of Frobenius
    norm ``||x||^2``), and ``R * y_bound`` for ``X~^T y`` in L2, where ``R``
    bounds the rows of the design (intercept column included).
    """
    return design.gram(), design.rmatmul(clip_labels_to(y, y_bound))


def smallest_eigenvalue(gram):
    """``lambda_min`` of a symmetric PSD matrix: AdaSSP's scalar release.

    Add/remove-one sensitivity ``R^2``: the matrices of neighbouring data sets
    differ by ``x x^T`` with ``||x|| <= R``, and ``A <= A + x x^T <= A +
    ||x||^2 I`` moves every eigenvalue by at most ``||x||^2`` (Weyl).
    """
    if gram.shape[0] == 0:
        return 0.0
    return float(np.linalg.eigvalsh(gram)[0])
