"""Full-batch noisy gradient descent (``dp_gd``).

Each step adds Gaussian noise to the sum of clipped per-sample gradients and
takes a gradient step on the L2-penalised average loss.  T full-batch Gaussian
steps compose exactly into one Gaussian mechanism, so the calibration is a
closed form (analytic Gaussian mechanism), with no accountant slack.
"""

from __future__ import annotations

import math

import numpy as np

from .. import accounting
from .._losses import clipped_gradient_sum
from ._common import PrivacyPlan, Progress, SolverResult, check_finite_iterate, make_rng

__all__ = ["dp_gd", "plan_dp_gd", "gradient_bound", "DEFAULT_CLIP_FRACTION", "DEFAULT_GD_ITERATIONS"]


#: Default clip as a fraction of the loss's own gradient bound.  Most
#: per-sample gradients of a fitted GLM are far below the worst case, so a
#: tighter clip buys much less noise for a small bias (see benchmarks/).
DEFAULT_CLIP_FRACTION = 0.5

#: Default number of noisy steps of dp_gd (with Nesterov momentum).
DEFAULT_GD_ITERATIONS = 100


def gradient_bound(loss, row_norm_bound, clip_norm, private=True):
    """Public bound on a per-sample gradient norm: the clip, or the loss's own bound.

    The loss alone bounds the gradient by ``derivative_bound * row_norm_bound``.
    ``clip_norm=None`` clips at ``DEFAULT_CLIP_FRACTION`` of that bound when
    the fit is private and not at all when it is not (no noise, nothing to
    protect); a given ``clip_norm`` is used as it is, capped at the loss's
    bound.  A loss whose derivative is unbounded (squared loss) needs an
    explicit ``clip_norm``.
    """
    natural = None
    if loss.derivative_bound is not None:
        natural = float(loss.derivative_bound) * float(row_norm_bound)
    if clip_norm is None:
        if natural is None:
            raise ValueError(
                f"The {loss.name!r} loss has an unbounded derivative: pass clip_norm "
                "(a public bound on each per-sample gradient) so the noise can be calibrated."
            )
        return DEFAULT_CLIP_FRACTION * natural if private else natural
    if not clip_norm > 0 or not math.isfinite(clip_norm):
        raise ValueError(f"clip_norm must be a finite float > 0, got {clip_norm!r}.")
    return float(clip_norm) if natural is None else min(float(clip_norm), natural)


def project_l2_ball(W, radius):
    """Euclidean projection of ``W`` (all entries, intercept included) onto the ball of ``radius``."""
    if radius is None:
        return W
    norm = np.linalg.norm(W)
    return W if norm <= radius else W * (radius / norm)


def noisy_descent(
    gradient_sum,
    *,
    shape,
    n_steps,
    normalizer,
    noise_std,
    step_size,
    alpha,
    penalized,
    momentum,
    rng,
    progress,
    radius=None,
):
    """The iteration shared by dp_gd and dp_sgd: noisy sums in, iterates out.

    Each step asks ``gradient_sum(V)`` for a (clipped) gradient sum at the
    look-ahead point ``V``, adds ``N(0, noise_std^2)`` to it, divides by the
    public ``normalizer``, adds the penalty gradient ``alpha * V`` and steps.
    Everything after the noisy sum is post-processing, so the momentum, the
    projection onto the L2 ball of ``radius`` (when given) and the averaging
    do not change privacy.

    Returns
    -------
    last : ndarray
        The last iterate.
    tail_average : ndarray
        The average of the iterates of the second half of the run.
    """
    if momentum not in ("nesterov", None):
        raise ValueError(f"momentum must be 'nesterov' or None, got {momentum!r}.")
    momentum_cap = 0.0
    if momentum == "nesterov":
        kappa = (1.0 / step_size) / alpha if alpha > 0 else math.inf
        momentum_cap = 1.0 if math.isinf(kappa) else (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)

    W = np.zeros(shape)
    W_previous = W
    W_sum = np.zeros(shape)
    tail_start = n_steps // 2
    for t in range(n_steps):
        beta = min(t / (t + 3.0), momentum_cap)
        V = W + beta * (W - W_previous) if beta > 0 else W
        grad = gradient_sum(V)
        if noise_std > 0:
            grad = grad + rng.normal(0.0, noise_std, size=shape)
        grad = grad / normalizer
        grad[penalized] += alpha * V[penalized]
        W_previous, W = W, project_l2_ball(V - step_size * grad, radius)
        if t >= tail_start:
            W_sum += W
        progress(t + 1, grad_norm=float(np.linalg.norm(grad)))
    return W, W_sum / (n_steps - tail_start)


def plan_dp_gd(n_samples, n_params, epsilon, delta, *, max_iter=None):
    """Privacy plan of ``dp_gd``: ``max_iter`` full-batch Gaussian steps.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (unused: the plan does not depend on it).
    n_params : int
        Number of coefficients, all outputs (unused).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` gives a noiseless plan.
    max_iter : int, optional
        Number of steps; default ``DEFAULT_GD_ITERATIONS``.
    """
    if max_iter is None:
        max_iter = DEFAULT_GD_ITERATIONS
    max_iter = int(max_iter)
    if math.isinf(epsilon):
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, max_iter)
    sigma = accounting.gaussian_noise_multiplier(epsilon, delta, max_iter)
    return PrivacyPlan(accounting.gaussian_steps_event(sigma, max_iter), sigma, max_iter)


def dp_gd(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    step_size=None,
    clip_norm=None,
    output="tail_average",
    momentum="nesterov",
    radius=None,
    random_state=None,
    verbose=0,
):
    """Noisy full-batch gradient descent on the L2-penalised average loss.

    Minimises ``mean_i l(x_i @ W, y_i) + alpha / 2 * ||W[penalized]||^2``.

    Parameters
    ----------
    data : BoundedData
        Clipped rows (L2 norm at most ``data.row_norm_bound``) and labels.
    loss : GLMLoss
        A smooth loss (``loss.smoothness`` is not None).
    n_outputs : int
        Columns of the coefficient matrix (1, or K for a multinomial model).
    alpha : float
        L2 penalty strength on the average loss (0 for none).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same iterations with no noise.
    max_iter : int, optional
        Number of full-batch steps; default ``DEFAULT_GD_ITERATIONS`` (100).
    step_size : float, optional
        Default ``1 / L`` with ``L = loss.smoothness * row_norm_bound**2 + alpha``,
        the smoothness of the objective, from public bounds only.
    clip_norm : float, optional
        Per-sample gradient clip, at most the loss's own bound
        ``loss.derivative_bound * row_norm_bound``; default half that bound
        when private, no clipping when ``epsilon=inf``.
    momentum : {"nesterov", None}
        Nesterov's accelerated gradient (momentum ``(t - 1) / (t + 2)``, capped
        at ``(sqrt(kappa) - 1) / (sqrt(kappa) + 1)`` with the public condition
        number ``kappa = L / alpha``) or plain gradient descent.  Momentum only
        post-processes the noisy gradients, so privacy is the same; it needs
        far fewer steps because the public step size ``1 / L`` is
        conservative.
    radius : float, optional
        Constrain the coefficients (intercept included) to the L2 ball of this
        radius by projection after every step.
    output : {"tail_average", "last"}
        Return the average of the iterates of the second half (less noise,
        same privacy: post-processing) or the last iterate (the iterate the PL
        analysis of Wang et al. 2017 covers).
    random_state : None, int, RandomState or Generator
        Source of the noise; ``None`` draws fresh OS entropy.
    verbose : int
        Progress lines on stderr when > 0.

    Returns
    -------
    SolverResult

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Each step
    releases the sum of per-sample gradients, each clipped to L2 norm ``C``
    (so adding or removing a row moves the sum by at most ``C``: sensitivity
    ``C``), plus ``N(0, (sigma C)^2 I)``.  The T steps are adaptive Gaussian
    mechanisms and compose exactly into one Gaussian mechanism with
    multiplier ``sigma / sqrt(T)``; sigma is the smallest value for which the
    analytic Gaussian mechanism meets (epsilon, delta).  The noisy sums are
    averaged with ``data.normalizer``, never the true row count, which is
    private (estimators pass a DP count; a direct call without one treats
    the row count as public).  Public: the number of coefficients, the
    bounds, alpha, the step size, T; everything else is post-processing.
    """
    X, y = data.X, data.y
    n_columns = X.shape[1]
    if loss.smoothness is None:
        raise ValueError(f"dp_gd needs a smooth loss; {loss.name!r} is not smooth.")
    plan = plan_dp_gd(data.n_public, n_columns * n_outputs, epsilon, delta, max_iter=max_iter)
    bound = gradient_bound(loss, data.row_norm_bound, clip_norm, private=not math.isinf(epsilon))
    if step_size is None:
        step_size = 1.0 / (loss.smoothness * data.row_norm_bound**2 + alpha)
    if output not in ("tail_average", "last"):
        raise ValueError(f"output must be 'tail_average' or 'last', got {output!r}.")
    rng = make_rng(random_state)
    noise_std = plan.noise_multiplier * bound

    W, W_tail = noisy_descent(
        lambda V: clipped_gradient_sum(X, y, V, loss, bound, data.row_norms),
        shape=(n_columns, n_outputs),
        n_steps=plan.n_steps,
        normalizer=data.normalizer,
        noise_std=noise_std,
        step_size=step_size,
        alpha=alpha,
        penalized=data.penalized,
        momentum=momentum,
        rng=rng,
        progress=Progress("dp_gd", plan.n_steps, verbose),
        radius=radius,
    )
    check_finite_iterate(W, "dp_gd")
    coef = W_tail if output == "tail_average" else W
    details = dict(
        step_size=step_size, clip_norm=bound, noise_std=noise_std, output=output, momentum=momentum
    )
    plan.details.update(details)
    return SolverResult(coef=coef, n_iter=plan.n_steps, plan=plan)
