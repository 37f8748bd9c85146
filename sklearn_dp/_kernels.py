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

__all__ = [
    "clip_scale",
    "clipped_gradient_sum",
]


def clip_scale(norms, clip_norm):
    """Per-row factors ``min(1, clip_norm / norms)`` (1 where the norm is 0 or within the clip).

    ``clip_norm`` None or inf gives ones.  Only rows over the clip are
    divided, so zero norms never divide.
    """
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
