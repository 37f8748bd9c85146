"""Full-batch noisy gradient descent (``dp_gd``).

Each step adds Gaussian noise to the sum of clipped per-sample gradients and
takes a gradient step on the L2-penalised average loss.  T full-batch Gaussian
steps compose exactly into one Gaussian mechanism, so the calibration is a
closed form (analytic Gaussian mechanism), with no accountant slack.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .. import accounting
from .._clipped_sums import clipped_gradient_sum
from .._data import row_sum
from ._common import Progress, make_rng
from ._noise_warnings import noise_excess_proxy
from ._noisy_steps import gaussian_plan, noisy_steps, plan_of_call, release, solver_result

#: Default clip as a fraction of the loss's own gradient bound.  Most
#: per-sample gradients of a fitted GLM are far below the worst case, so a
#: tighter clip buys much less noise for a small bias (see benchmarks/).
DEFAULT_CLIP_FRACTION = 0.5

#: Default number of noisy steps of dp_gd (with Nesterov momentum).
DEFAULT_GD_ITERATIONS = 100

#: Default steps without noise (epsilon = inf; epsilon is public).  A private
#: step pays for its noise, a noiseless one only for time: 100 steps stopped
#: 1.6% (logistic, breast cancer) and 1.04% (ridge, diabetes) above the
#: optimum (bench_solvers.py); 400 reach 0.0% and 0.24%.
DEFAULT_GD_ITERATIONS_NOISELESS = 400

#: Cap on the step counts of the paper's schedules (``schedule="pl"`` and
#: ``"gradient_norm"``), whose formulas grow with n and the condition number.
MAX_SCHEDULE_ITERATIONS = 5000


def _pl_constant(schedule, pl_constant, alpha):
    """The PL constant of ``schedule='pl'`` (default ``alpha``); refuses none > 0.

    ``alpha`` None stands for a strength > 0 not known yet (one that scales
    with the private row count).
    """
    if schedule == "pl" and pl_constant is None:
        if alpha is not None and not alpha > 0:
            raise ValueError(
                "schedule='pl' needs a Polyak-Lojasiewicz constant: pass pl_constant > 0 "
                "(a public lower bound), or use an L2 penalty (alpha is then the default)."
            )
        return alpha
    return pl_constant


def check_dp_gd(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public check of a ``dp_gd`` fit (registered as ``SolverSpec.check``).

    The registry's constraints check each option; this checks that
    ``schedule="pl"`` has a PL constant.
    """
    alpha = 0.0 if penalty is None else alpha
    _pl_constant(options.get("schedule"), options.get("pl_constant"), alpha)


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


def noisy_descent(name, a, normalizer):
    """The steps of dp_gd and dp_sgd on the engine (:func:`~._noisy_steps.noisy_steps`).

    ``a`` holds the solver's arguments and settings (``data``,
    ``n_outputs``, ``plan``, ``alpha``, ``momentum``, ``radius``,
    ``coef_init``, ``verbose``, ``gradient_sum``, ``sensitivity``,
    ``noise_std``, ``rng``, ``step_size`` and an optional ``callback`` for
    the engine).  Each step asks ``gradient_sum(V)`` for a (clipped)
    gradient sum at the look-ahead point ``V``, of add/remove-one
    sensitivity ``sensitivity``, releases it with ``N(0, noise_std^2)``
    noise through the noise gateway, divides by the public ``normalizer``,
    adds the penalty gradient ``alpha * V`` and steps from ``coef_init`` (a
    released or public point: a warm start; default 0).  Everything after
    the noisy sum is post-processing, so the momentum, the projection onto
    the L2 ball of ``radius`` (when given) and the averaging do not change
    privacy.  Returns the last iterate and the average of the second half of
    the run.
    """
    alpha, n_steps = a.alpha, a.plan.n_steps
    momentum_cap = 0.0
    if a.momentum == "nesterov":
        kappa = (1.0 / a.step_size) / alpha if alpha > 0 else math.inf
        momentum_cap = 1.0 if math.isinf(kappa) else (math.sqrt(kappa) - 1) / (math.sqrt(kappa) + 1)
    shape, initial = (a.data.design.n_columns, a.n_outputs), a.coef_init
    W = np.zeros(shape) if initial is None else np.array(initial, dtype=float).reshape(shape)
    previous = [W]
    penalized = a.data.penalized

    def step(t, W):
        beta = min(t / (t + 3.0), momentum_cap)
        V = W + beta * (W - previous[0]) if beta > 0 else W
        grad = release(a.gradient_sum(V), a.sensitivity, a.noise_std, a.rng) / normalizer
        grad[penalized] += alpha * V[penalized]
        previous[0] = W
        return project_l2_ball(V - a.step_size * grad, a.radius), float(np.linalg.norm(grad))

    progress = Progress(name, n_steps, a.verbose)
    callback = getattr(a, "callback", None)
    return noisy_steps(
        step, W, n_steps, name=name, progress=progress, tail_start=n_steps // 2, callback=callback
    )


def initial_gap_bound(loss, n_outputs=1):
    """Public bound on ``F(0) - F*`` for a nonnegative loss: ``sup_y l(0, y)``.

    ``ln 2`` for the logistic loss, ``ln K`` for the multinomial loss, and
    ``l(0, 1)`` for regression losses on labels scaled to [-1, 1] (0.5 for
    the squared loss).  Penalties are nonnegative and vanish at 0.
    """
    if loss.multi_output:
        return math.log(max(2, int(n_outputs)))
    scores = np.zeros((2, 1))
    return float(np.max(loss.value(scores, np.array([-1.0, 1.0]))))


def schedule_iterations(
    schedule, n_samples, n_params, epsilon, delta, smoothness, clip, initial_gap, pl_constant=None
):
    """Steps of DP-GD's ``schedule`` (with the exact noise), at most ``MAX_SCHEDULE_ITERATIONS``.

    ``"pl"`` (Theorem 6.2): with step ``1 / L``, ``E F(x_T) - F* <= (1 -
    mu/L)^T e_0 + d s^2 / (2 mu)`` where ``s^2 = T sigma_1^2 C^2 / n^2`` is
    the per-coordinate noise variance of the averaged gradient (``sigma_1``
    the exact one-step multiplier, ``mu`` the ``pl_constant``); the minimiser
    over T is ``(L / mu) ln(2 mu^2 n^2 e_0 / (L d sigma_1^2 C^2))``
    (docs/solvers/gradient_descent.md: the tighter geometric sum, not the
    paper's loose one).

    ``"gradient_norm"`` (Theorem 6.3): ``E ||grad F(x_tau)||^2 <= 2 L e_0 / T
    + d s^2`` (B.9, eqs. 85-87), minimised at ``T = (n / (sigma_1 C)) sqrt(2
    L e_0 / d)``.

    Without noise (``epsilon=inf``): ``(L / mu) ln(1e12)`` steps for ``"pl"``,
    the cap for ``"gradient_norm"``.
    """
    if schedule != "pl":
        if math.isinf(epsilon):
            return MAX_SCHEDULE_ITERATIONS
        single = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
        value = n_samples / (single * clip) * math.sqrt(2.0 * smoothness * initial_gap / n_params)
    elif math.isinf(epsilon):
        value = (smoothness / pl_constant) * math.log(1e12)
    else:
        single = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
        noise = smoothness * n_params * single**2 * clip**2
        ratio = 2.0 * pl_constant**2 * n_samples**2 * initial_gap / noise
        value = (smoothness / pl_constant) * math.log(max(ratio, math.e))
    return int(min(MAX_SCHEDULE_ITERATIONS, max(1, math.ceil(value))))


def plan_dp_gd(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_gd``: ``max_iter`` full-batch Gaussian steps.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (a DP count from the estimator).
        Only the step counts of the ``schedule`` use it; without ``max_iter``
        they cannot be planned before the count is released, and the plan
        is then None.
    n_params : int
        Number of coefficients, all outputs.
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` gives a noiseless plan.
    call : SolverCall
        The arguments of the run (a :class:`~sklearn_dp.solvers.SolverCall`).
        The number of steps is ``max_iter``; without it,
        ``DEFAULT_GD_ITERATIONS``, or the step count of the paper's
        ``schedule`` (:func:`schedule_iterations`), which need the public ``loss``,
        ``row_norm_bound``, ``alpha`` and ``clip_norm``.
    """
    max_iter, schedule = call.max_iter, call.schedule
    if max_iter is None and schedule is None:
        max_iter = DEFAULT_GD_ITERATIONS_NOISELESS if math.isinf(epsilon) else DEFAULT_GD_ITERATIONS
    elif max_iter is None:
        loss, row_norm_bound, alpha = call.loss, call.row_norm_bound, call.alpha
        if n_samples is None or alpha is None:
            return None
        if loss is None or row_norm_bound is None:
            raise ValueError(f"schedule={schedule!r} needs the public loss and row_norm_bound.")
        private, gap = not math.isinf(epsilon), call.initial_gap
        constants = dict(
            smoothness=loss.smoothness * row_norm_bound**2 + alpha,
            clip=gradient_bound(loss, row_norm_bound, call.clip_norm, private=private),
            initial_gap=initial_gap_bound(loss, call.n_outputs) if gap is None else gap,
        )
        if schedule == "pl":
            constants["pl_constant"] = _pl_constant(schedule, call.pl_constant, alpha)
        max_iter = schedule_iterations(schedule, n_samples, n_params, epsilon, delta, **constants)
    return gaussian_plan(epsilon, delta, max_iter)


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
    output="auto",
    momentum="auto",
    schedule=None,
    pl_constant=None,
    initial_gap=None,
    radius=None,
    coef_init=None,
    random_state=None,
    verbose=0,
    plan=None,
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
        Target guarantee; ``epsilon=inf`` runs the same iterations with no noise
        (with more of them by default, see ``max_iter``).
    max_iter : int, optional
        Number of full-batch steps; default ``DEFAULT_GD_ITERATIONS`` (100;
        ``DEFAULT_GD_ITERATIONS_NOISELESS`` = 400 at ``epsilon=inf``),
        or the step count of ``schedule``.
    step_size : float, optional
        Default ``1 / L`` with ``L = loss.smoothness * row_norm_bound**2 + alpha``,
        the smoothness of the objective, from public bounds only.
    clip_norm : float, optional
        Per-sample gradient clip, at most the loss's own bound
        ``loss.derivative_bound * row_norm_bound``; default half that bound
        when private, no clipping when ``epsilon=inf``.
    output : {"auto", "tail_average", "last", "random"}
        The average of the iterates of the second half (less noise, same
        privacy: post-processing), the last iterate ``x_T`` (what Theorem 6.2,
        the PL analysis of Wang et al. 2017, covers), or a random iterate
        ``x_tau`` with ``tau`` uniform on {0, ..., T-1} (what Theorem 6.3, the
        gradient-norm guarantee, covers; ``x_0 = 0`` can be drawn).  ``"auto"``
        is ``"tail_average"``, or what the ``schedule`` analyses.
    momentum : {"auto", "nesterov", None}
        Nesterov's accelerated gradient (momentum ``(t - 1) / (t + 2)``, capped
        at ``(sqrt(kappa) - 1) / (sqrt(kappa) + 1)`` with the public condition
        number ``kappa = L / alpha``) or plain gradient descent.  Momentum only
        post-processes the noisy gradients, so privacy is the same; it needs
        far fewer steps because the public step size ``1 / L`` is
        conservative.  ``"auto"`` is ``"nesterov"`` without a ``schedule``
        and plain gradient descent (Algorithm 4 of the paper) with one.
    schedule : {None, "pl", "gradient_norm"}, default=None
        Algorithm 4 of Wang, Ye and Xu (2017) with the step count its
        analysis prescribes, computed from public inputs and the exact noise
        multiplier (not the paper's constant):

        * ``"pl"`` (Theorem 6.2): assumes the objective satisfies the
          Polyak-Lojasiewicz inequality ``||grad F||^2 >= 2 mu (F - F*)``
          with the public ``pl_constant`` mu (default ``alpha``: an L2
          penalty makes a convex objective mu-strongly convex, hence PL;
          the loss need not be convex), and is L-smooth.  Plain steps of
          ``1 / L``, last iterate, ``T = (L / mu) ln(2 mu^2 n^2 e_0 / (L d
          sigma_1^2 C^2))`` (see :func:`schedule_iterations`).
        * ``"gradient_norm"`` (Theorem 6.3): any L-smooth loss, possibly
          non-convex; bounds ``E ||grad F(x_tau)||^2``.  Plain steps of
          ``1 / L``, random iterate, ``T = (n / (sigma_1 C)) sqrt(2 L e_0 /
          d)`` (see :func:`schedule_iterations`).

        Both are capped at ``MAX_SCHEDULE_ITERATIONS`` steps.  ``max_iter``,
        ``output`` and ``momentum`` override what the schedule sets.
    pl_constant : float, optional
        Public PL constant for ``schedule="pl"``.
    initial_gap : float, optional
        Public bound ``e_0`` on ``F(0) - F*`` for the schedules; default
        :func:`initial_gap_bound` (``ln 2`` for the logistic loss).
    radius : float, optional
        Constrain the coefficients (intercept included) to the L2 ball of this
        radius by projection after every step.
    coef_init : ndarray of shape (n_columns, n_outputs), optional
        Starting point instead of 0 (a warm start from a released model:
        post-processing, it costs nothing).
    random_state : None, int, RandomState or Generator
        Source of the noise (and of ``tau``); ``None`` draws fresh OS entropy.
    verbose : int
        Progress lines on stderr when > 0.
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_gd` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        ``n_iter`` is T; ``info["gradient_evaluations"]`` is ``n_public * T``
        (from the public stand-in for n, not the true row count).
        Each step is two products with the bounded design (``data.design``:
        an operator on the caller's X, no clipped or intercept-augmented
        copy; float32 stays float32, sums accumulate in float64).

    Raises
    ------
    ValueError
        For an option it refuses (before reading the data; estimators run
        the same checks, the registry's constraints and :func:`check_dp_gd`,
        before they reserve the spend).
    ConvergenceError
        When the iterates diverge: they are computed from the noisy releases
        only, so the error is a function of released values (marked public).

    Privacy
    -------
    ``info["warnings"]`` (the noise-dominated warning, see
    :mod:`sklearn_dp.solvers._noise_warnings`) is computed from the step size, the
    noise, the released row count and the number of parameters only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Each step
    releases, through the noise gateway (:func:`sklearn_dp._noise.gaussian`,
    label ``"clipped gradient sum"``), the sum of per-sample gradients, each
    clipped to L2 norm ``C`` (:func:`sklearn_dp._clipped_sums.clipped_gradient_sum`;
    adding or removing a row moves the sum by at most ``C``: sensitivity
    ``C``), plus ``N(0, (sigma C)^2 I)``.  The T steps are adaptive Gaussian
    mechanisms and compose exactly into one Gaussian mechanism with
    multiplier ``sigma / sqrt(T)``; sigma is the smallest value for which the
    analytic Gaussian mechanism meets (epsilon, delta).  The noisy sums are
    averaged with ``data.normalizer``, never the true row count, which is
    private (estimators pass a DP count; a direct call without one treats
    the row count as public); the schedules' step counts use
    ``data.n_public``.  Public: the number of coefficients, the bounds,
    alpha, the step size, T; everything else (momentum, averaging, the
    random index tau, drawn independently of the data) is post-processing.
    Every observable (the coefficients, ``n_iter``, the details and info,
    the progress lines, which print the norm of the noisy averaged gradient,
    and any exception) is a function of public values and of the releases.
    With ``data.sample_weight`` (weights in ``[0, data.weight_bound]``, the
    public ``max_weight``) each clipped per-sample gradient is multiplied by
    its row's weight: the sensitivity, and the noise, are ``max_weight * C``.
    On data split in row chunks (Dask arrays, ``sklearn_dp._dask``; unweighted)
    each clipped gradient sum is the sum of its chunks' sums, computed where
    the chunks live; the noise is added once to the total, here.
    """
    # The bounded design as an operator on the caller's X: no clipped,
    # scaled or intercept-augmented copy (float32 stays float32).
    if loss.smoothness is None:
        raise ValueError(f"dp_gd needs a smooth loss; {loss.name!r} is not smooth.")
    plan = plan_of_call("dp_gd", locals())
    _pl_constant(schedule, pl_constant, alpha)
    if output == "auto":
        output = {None: "tail_average", "pl": "last", "gradient_norm": "random"}[schedule]
    if momentum == "auto":
        momentum = "nesterov" if schedule is None else None
    bound = gradient_bound(loss, data.row_norm_bound, clip_norm, private=not math.isinf(epsilon))
    if step_size is None:
        step_size = 1.0 / (loss.smoothness * data.row_norm_bound**2 + alpha)
    rng = make_rng(random_state)
    sensitivity = float(getattr(data, "weight_bound", 1.0)) * bound
    noise_std = plan.noise_multiplier * sensitivity

    chosen, random_index = {}, {}
    callback = None
    if output == "random":
        # tau is drawn before the run from the solver's own randomness, so it
        # is independent of the data.
        tau = int(rng.integers(plan.n_steps))
        random_index["random_index"] = tau

        def callback(t, W):
            if t == tau:
                chosen["random"] = W.copy()

    def gradient_sum(V):
        # Over the rows of data (or of each of its chunks, summed: row_sum).
        def part_sum(part):
            weights = getattr(part, "sample_weight", None)
            return clipped_gradient_sum(
                part.design, part.y, V, loss, bound, part.row_norms, weights
            )

        return row_sum(data, part_sum)

    W, W_tail = noisy_descent("dp_gd", SimpleNamespace(**locals()), data.normalizer)
    # chosen["random"] is x_tau, kept by the callback when output="random".
    coef = {"tail_average": W_tail, "last": W, **chosen}[output]
    # Public values only (step, noise, released row count): the honest warning.
    proxy = noise_excess_proxy(step_size, noise_std, data.n_public, coef.size)
    # Per-sample gradient evaluations from the public stand-in for n (the
    # true row count is private): exact for a direct call without a DP count.
    info = dict(gradient_evaluations=float(data.n_public * plan.n_steps))
    details = dict(
        step_size=step_size,
        clip_norm=bound,
        noise_std=noise_std,
        output=output,
        momentum=momentum,
        schedule=schedule,
        **random_index,
    )
    return solver_result("dp_gd", plan, coef, loss, epsilon, proxy=proxy, info=info, **details)
