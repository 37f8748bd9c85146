"""Non-private references for the l1-geometry solvers: the objective, its minimiser, a divergence.

For tests and benchmarks only: they read the data without noise (a reference,
not a private solver), so no estimator or solver of the library calls them.
"""

from __future__ import annotations

import math

import numpy as np

from ..solvers._l1_geometry import project_l1_ball
from ..solvers._pnorm import pnorm, pnorm_mirror_gradient

__all__ = ["l1_objective", "reference_solve", "pnorm_bregman_divergence", "in_domain"]


def l1_objective(data, loss, w, domain):
    """Mean loss plus the penalty (no clipping, no noise): for references and tests."""
    value = float(np.mean(loss.value(data.design.matmul(w)[:, None], data.y)))
    return value + float(domain.l1_penalty @ np.abs(w) + 0.5 * domain.l2_penalty @ (w * w))


def reference_solve(data, loss, domain, *, max_iter=100_000, tol=1e-13):
    """Non-private high-precision minimiser over the polytope (accelerated proximal gradient).

    For smooth losses: FISTA with step ``1 / L``, ``L = smoothness * ||X||_2^2 / n
    + max l2`` (read off the data: this is a reference, not a private
    solver), prox = soft-threshold by the L1 penalty then projection onto the
    l1 ball (exact for this pair) and clipping to the boxes; restarts when
    the objective goes up.  Stops when an iterate moves less than ``tol``.
    """
    import scipy.sparse.linalg as spla

    design, y = data.design, data.y
    n, n_columns = design.shape
    if loss.smoothness is None:
        raise ValueError("reference_solve needs a smooth loss.")
    if min(design.shape) > 1:
        operator = spla.LinearOperator(
            design.shape, matvec=design.matmul, rmatvec=design.rmatmul, dtype=np.float64
        )
        top = spla.svds(operator, k=1, return_singular_vectors=False)[0]
    else:
        top = math.sqrt(float(np.sum(design.row_norms() ** 2)))
    lipschitz = loss.smoothness * top**2 / n + float(np.max(domain.l2_penalty, initial=0.0))
    step = 1.0 / lipschitz

    def grad(w):
        return (
            design.rmatmul(loss.derivative(design.matmul(w)[:, None], y)[:, 0]) / n
            + domain.l2_penalty * w
        )

    def prox(v):
        w = np.sign(v) * np.maximum(np.abs(v) - step * domain.l1_penalty, 0.0)
        w[domain.ball] = project_l1_ball(w[domain.ball], domain.radius)
        w[~domain.ball] = np.clip(
            w[~domain.ball], -domain.box[~domain.ball], domain.box[~domain.ball]
        )
        return w

    w = np.zeros(n_columns)
    z, t, value = w.copy(), 1.0, l1_objective(data, loss, w, domain)
    stalled = 0
    for _ in range(max_iter):
        w_next = prox(z - step * grad(z))
        value_next = l1_objective(data, loss, w_next, domain)
        if value_next > value:  # adaptive restart (O'Donoghue and Candes)
            z, t = w.copy(), 1.0
            stalled += 1
            if stalled > 50:
                break
            continue
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        z = w_next + (t - 1.0) / t_next * (w_next - w)
        moved = np.max(np.abs(w_next - w))
        stalled = stalled + 1 if value - value_next <= 1e-16 * abs(value) else 0
        w, t, value = w_next, t_next, value_next
        if moved < tol or stalled > 50:
            break
    return w


def pnorm_bregman_divergence(x, y, center, p, kappa):
    """``D(x, y) = psi(x) - psi(y) - <grad psi(y), x - y>``, ``psi = kappa ||. - center||_p^2``."""
    ux, uy = np.asarray(x) - center, np.asarray(y) - center
    return float(
        kappa * pnorm(ux, p) ** 2
        - kappa * pnorm(uy, p) ** 2
        - pnorm_mirror_gradient(uy, p, kappa) @ (ux - uy)
    )


def in_domain(domain, x, rtol=1e-9):
    """Whether ``x`` is in the polytope of an :class:`~sklearn_dp.solvers._l1_geometry.L1Domain`.

    Up to a relative tolerance: the l1 ball on the ``ball`` coordinates and
    the box bound on the others.
    """
    inside_ball = np.sum(np.abs(x[domain.ball])) <= domain.radius * (1 + rtol)
    inside_box = np.all(np.abs(x[~domain.ball]) <= domain.box[~domain.ball] * (1 + rtol))
    return bool(inside_ball and inside_box)
