"""Private Newton steps on a released low-rank sketch of the curvature (``dp_nystrom``).

``dp_newton`` releases the d x d Gram matrix once and decomposes it: O(n d^2)
flops, d^2 / 2 noisy entries and an O(d^3) decomposition, which beyond a few
hundred columns cost more than a sketch (``AUTO_NEWTON_MAX_COLUMNS``).  ``dp_nystrom`` releases
instead the Gram matrix times a public random matrix ``Omega`` with ``k``
orthonormal columns (``X^T X Omega``: two products of X with ``k`` columns,
``d k`` noisy entries), builds from it the Nystrom approximation of the Gram
matrix (Halko, Martinsson and Tropp 2011; with the eigenvalue floor of
Frangella, Tropp and Udell 2023's Nystrom preconditioner), and takes a few
Newton-type steps with it: the curvature of the sketched directions is the
released one, that of the others the smallest sketched eigenvalue.  With
``k >= d`` the sketch is the whole Gram matrix and the steps are dp_newton's
bound-Hessian steps.  Its cost grows like ``n d k``, not ``n d^2``: it works on
wide dense and on sparse X (CSR products).

All releases are full-batch Gaussian mechanisms and compose exactly into one
Gaussian, as dp_newton's.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from .. import _noise, accounting
from .._clipped_sums import curvature_bound, gram_sketch, newton_sums
from .._data import row_sum
from ._common import PrivacyPlan, Progress, make_rng
from ._gradient_descent import gradient_bound
from ._noisy_steps import noisy_steps, plan_of_call, release, solver_result
from ._second_order import DEFAULT_HESSIAN_SHARE, RELATIVE_FLOOR, newton_multipliers

#: Default rank of the sketch (columns of ``Omega``).  Measured (logistic,
#: epsilon 1 and 5, benchmarks/bench_speed.py data): at 1e5 x 1001 dense,
#: ranks 16 / 32 / 64 reach the same test accuracy (0.810 / 0.809 / 0.810 at
#: epsilon 5, lbfgs 0.811) at 0.81x / 0.96x / 1.14x lbfgs's time; on CSR
#: 1e5 x 1e4 rank 16 costs 0.9-1.05x lbfgs and rank 64 2.2x, at the same
#: accuracy: beyond the few directions the noise leaves, the floor decides.
DEFAULT_RANK = 16
#: Widest dense design (features plus intercept) for which ``solver="auto"``
#: keeps dp_newton; dp_nystrom beyond.  Measured (benchmarks/results/
#: width_switch.md; CPU time over scikit-learn's, one thread, and test score,
#: epsilon 1; dp_newton / dp_nystrom): at 200 features dp_newton is the faster
#: on 1e5 rows (logistic 0.77x / 0.98x, ridge 0.63x / 0.79x) and about as
#: accurate (logistic 0.811 / 0.809, ridge 0.788 / 0.766); at 256 the times
#: are within 1.5x of each other either way; from 500 dp_nystrom is the faster
#: everywhere and as accurate, within 0.02 at 1e4 rows, and far ahead on ridge
#: at 1e5 rows (1e5 x 500: logistic 1.01x / 0.70x, 0.809 / 0.810; ridge 0.65x
#: / 0.46x, R^2 0.570 / 0.742).  Switching where the times cross leaves no
#: step in time or accuracy; the old switch at 1000 columns dropped the time
#: 2.7x.  The width is public; the row count is not consulted.
AUTO_NEWTON_MAX_COLUMNS = 256
#: Default steps with noise and without it (epsilon is public).
DEFAULT_STEPS = 10
DEFAULT_STEPS_NOISELESS = 30
#: Floor on the curvature, in units of the spectral norm of its noise.
FLOOR_SCALE = 1.0
#: With noise, the momentum restarts at least every this many steps.
RESTART_STEPS = 5


def plan_dp_nystrom(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_nystrom``: ``T`` gradient releases and one sketch release.

    ``noise_multiplier`` is the gradient releases' multiplier,
    ``details["hessian_multiplier"]`` the sketch's; the two kinds compose
    exactly into one Gaussian (:func:`~._second_order.newton_multipliers`).
    """
    default_steps = DEFAULT_STEPS_NOISELESS if math.isinf(epsilon) else DEFAULT_STEPS
    n_steps = int(call.max_iter or default_steps)  # a given max_iter is at least 1
    share = DEFAULT_HESSIAN_SHARE if call.hessian_share is None else float(call.hessian_share)
    details = dict(hessian_share=share, rank=int(call.rank), hessian_multiplier=0.0)
    if math.isinf(epsilon):
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    sg, sh, total = newton_multipliers(epsilon, delta, n_steps, 1, share)
    details.update(hessian_multiplier=sh, total_multiplier=total)
    parts = [accounting.gaussian_steps_event(sg, n_steps), dpe.GaussianDpEvent(sh)]
    return PrivacyPlan(dpe.ComposedDpEvent(parts), sg, n_steps, details)


def public_sketch(n_columns, rank, rng, intercept):
    """A public ``(n_columns, min(rank, n_columns))`` matrix with orthonormal columns.

    Drawn from the solver's generator, independently of the data; the
    identity when the rank covers every column.  With ``intercept`` its
    first column is the intercept's coordinate: the intercept is a direction
    of large curvature (every row has it) that a random sketch captures only
    in part, and the steps would overshoot along what it misses.  Scaled so
    its computed spectral norm is at most 1, which the sketch's sensitivity
    assumes.
    """
    if rank >= n_columns:
        return np.eye(n_columns)
    draws = rng.standard_normal((n_columns, rank))
    if intercept:
        draws[:, 0] = 0.0
        draws[-1, 0] = 1.0
    Q, _ = np.linalg.qr(draws)
    return Q / max(1.0, float(np.linalg.norm(Q, 2)) * (1.0 + 1e-12))


def nystrom_curvature(sketched, sketch, floor):
    """``(values, vectors)``: the Nystrom approximation of a Gram matrix from its sketch.

    ``sketched`` is the (noisy, scaled) ``G Omega``.  The core ``Omega^T G
    Omega`` is symmetrised and its eigenvalues raised to ``floor``; the
    approximation ``A core^{-1} A^T = U diag(values) U^T`` comes from the SVD
    of ``A core^{-1/2}``.  Every value is at least ``floor``.
    Post-processing of released values.
    """
    core = sketch.T @ sketched
    core = 0.5 * (core + core.T)
    lam, Q = np.linalg.eigh(core)
    factor = sketched @ (Q / np.sqrt(np.maximum(lam, floor)))
    U, s, _ = np.linalg.svd(factor, full_matrices=False)
    return np.maximum(s**2, floor), U


def dp_nystrom(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    clip_norm=None,
    rank=DEFAULT_RANK,
    hessian_share=None,
    coef_init=None,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Private Newton steps preconditioned by a released Nystrom sketch of the Gram matrix.

    Minimises ``mean_i l(x_i @ W, y_i) + alpha / 2 * ||W[penalized]||^2``
    with ``max_iter`` steps ``W <- V - P^{-1} g~(V)`` from ``W = 0`` (Nesterov
    look-ahead ``V`` with O'Donoghue and Candes's restart, as dp_newton),
    where ``g~`` is the noisy sum of clipped per-sample gradients divided by
    the public ``data.normalizer`` plus the penalty's gradient, and ``P`` is
    ``curvature_bound(loss)`` times the Nystrom approximation of the Gram
    matrix ``X~^T X~`` from one noisy release of ``X~^T X~ Omega`` (``Omega``
    public, ``rank`` orthonormal columns), divided by the normaliser, plus
    ``alpha``; directions outside the sketch get its smallest eigenvalue;
    every eigenvalue is raised to the floor ``max(nu, 1e-8 *
    beta R^2)`` (``nu`` the expected spectral norm of the sketch's noise).

    Parameters
    ----------
    data : BoundedData
        Rows bounded in L2 by ``data.row_norm_bound`` (intercept included).
    loss : GLMLoss
        A smooth GLM loss (``log_loss``, binary or multinomial, ``squared``
        with a residual bound or ``clip_norm``, ``huber``).
    n_outputs : int
    alpha : float
        L2 penalty on the average loss (0 for none).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` takes the same steps without noise.
    max_iter : int, optional
        Steps; default ``DEFAULT_STEPS`` (10), ``DEFAULT_STEPS_NOISELESS``
        (30) at ``epsilon=inf``.
    clip_norm : float, optional
        Per-sample gradient clip, at most the loss's bound; default half of
        it when private, none without noise.
    rank : int, default=16
        Columns of the sketch (all columns, an exact Gram matrix, when at
        least their number).
    hessian_share : float in (0, 1), optional
        Share of the precision spent on the sketch; default 0.25.
    coef_init : ndarray of shape (n_columns, n_outputs), optional
        Starting point (a released model: post-processing).
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_nystrom` computed it; None plans here.

    Returns
    -------
    SolverResult

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one neighbouring; public: the row
    bound ``R``, the loss's bounds, alpha, the rank, the number of steps and
    ``Omega`` (drawn independently of the data).  The sketch release is
    ``X~^T X~ Omega`` (:func:`sklearn_dp._clipped_sums.gram_sketch`): one row
    adds ``x x^T Omega``, of Frobenius norm ``||x|| ||Omega^T x|| <= R^2``
    (``Omega`` has spectral norm at most 1), so its sensitivity is ``R^2``
    and it gets ``N(0, (sigma_h R^2)^2)`` per entry.  Each step releases the
    sum of per-sample gradients clipped to ``C`` (sensitivity ``C``) with
    ``N(0, (sigma_g C)^2)`` per entry.  The releases compose exactly into one
    Gaussian of multiplier ``sigma`` (analytic Gaussian mechanism); the
    public ``hessian_share`` of ``1 / sigma^2`` goes to the sketch.  With
    ``data.sample_weight`` (weights in ``[0, max_weight]``) both
    sensitivities are multiplied by ``max_weight``.  Averages divide by
    ``data.normalizer`` (the estimators' DP count), and the floor is a
    function of public values and that count.  The Nystrom approximation,
    the steps, the momentum and its restarts and the verbose lines (norms
    of noisy gradients and steps) are post-processing.
    """
    beta = curvature_bound(loss)
    if beta is None:
        raise ValueError(f"dp_nystrom needs a smooth GLM loss; got {loss.name!r}.")
    plan = plan_of_call("dp_nystrom", locals())
    private = not math.isinf(epsilon)
    clip = gradient_bound(loss, data.row_norm_bound, clip_norm, private=private)
    R, normalizer = float(data.row_norm_bound), float(data.normalizer)
    R2 = R**2
    weight_bound = float(getattr(data, "weight_bound", 1.0))
    gradient_std = plan.noise_multiplier * weight_bound * clip
    sketch_std = plan.details["hessian_multiplier"] * weight_bound * R2
    rng = make_rng(random_state)
    progress = Progress("dp_nystrom", plan.n_steps, verbose)
    sketch = public_sketch(data.design.n_columns, int(rank), rng, data.fit_intercept)
    m, k = sketch.shape
    # The expected spectral norm of the scaled sketch's noise (k times in a group fit).
    nu = beta * sketch_std / normalizer * (math.sqrt(m) + math.sqrt(k)) * _noise.group_rows()
    floor = max(FLOOR_SCALE * nu, RELATIVE_FLOOR * beta * R2)

    def sketch_sum(part):
        return gram_sketch(part.design, sketch, R, getattr(part, "sample_weight", None))

    sketched = release(row_sum(data, sketch_sum), weight_bound * R2, sketch_std, rng, "sketch")
    progress.note(f"{m} x {k} curvature sketch released")
    values, vectors = nystrom_curvature(sketched * (beta / normalizer), sketch, floor)
    # Directions outside the sketch: its smallest eigenvalue (none when k = m).
    rest = values.min() + alpha if k < m else math.inf
    values = values + alpha

    def gradient_sum(part, V):
        weight = getattr(part, "sample_weight", None)
        return newton_sums(
            part.design, part.y, V, loss, clip, part.row_norms, hessian=False, sample_weight=weight
        )[0]

    momentum = dict(previous=None, run=0)

    def step(t, W):
        run = momentum["run"]
        V = W + run / (run + 3.0) * (W - momentum["previous"]) if run else W
        g_sum = row_sum(data, lambda part: gradient_sum(part, V))
        grad = release(g_sum, weight_bound * clip, gradient_std, rng) / normalizer
        grad[data.penalized] += alpha * V[data.penalized]
        inside = vectors.T @ grad
        W_next = V - vectors @ (inside / values[:, None]) - (grad - vectors @ inside) / rest
        # Restart when the step goes uphill for the noisy gradient, and with
        # noise every RESTART_STEPS steps (momentum would pile up the noise).
        uphill = float(np.sum(grad * (W_next - W))) > 0
        run = 0 if uphill or (private and run + 1 >= RESTART_STEPS) else run + 1
        momentum.update(previous=W, run=run)
        return W_next, float(np.linalg.norm(grad))

    # A warm start is a released model (post-processing).
    W = np.zeros((m, n_outputs)) if coef_init is None else np.array(coef_init, dtype=float)
    W, _ = noisy_steps(step, W.reshape(m, -1), plan.n_steps, name="dp_nystrom", progress=progress)
    details = dict(clip_norm=clip, noise_std=gradient_std, sketch_noise_std=sketch_std, floor=floor)
    return solver_result(
        "dp_nystrom", plan, W, loss, epsilon, sketch_sensitivity=weight_bound * R2, **details
    )
