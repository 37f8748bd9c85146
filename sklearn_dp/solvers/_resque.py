"""The ``resque`` solver: its option checks, plan and schedule, and ball acceleration.

Carmon, Jambulapati, Jin, Lee, Liu, Sidford and Tian (2023), "ReSQue-ing
parallel and private stochastic convex optimization" (docs:
``docs/solvers/resque.md``).  The ReSQue estimator (an unbiased estimate of
the gradient of the Gaussian-smoothed loss at every point near the centre of
its queries), the query rounds, EpochSGD and the ball oracle are in
:mod:`._resque_oracle`, which also says where privacy is decided: the
Poisson batches and the Gaussian release of every inner step, and the public
perturbations of the queries.

The solver
----------
``resque`` runs Monteiro-Svaiter "ball acceleration" on the smoothed
empirical risk: each outer iteration picks a proximal weight ``lambda`` and
solves ``min F_rho(x) + lambda / 2 ||x - y||^2`` over the small ball
``B_r(y)`` (intersected with the constraint ball ``B_R``) with EpochSGD on
ReSQue gradients centred at ``y``; the queries of one ball subproblem are one
batched NumPy operation (split over joblib threads with ``n_jobs``).  The
private version is the mechanism docs/solvers/resque.md recommends: every inner
step is a Poisson-subsampled Gaussian mechanism on the sum of weight-capped
ReSQue gradients, so the fit is "ReSQue-smoothed, ball-accelerated DP-SGD",
not the paper's own private algorithm (see ``docs/solvers/resque.md`` for why
the paper's mechanism is not offered).
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from types import SimpleNamespace

import numpy as np
from joblib import Parallel

from .. import _noise
from .._losses import loss_names
from .._public_errors import public_error
from ._common import Progress, SolverResult, check_finite_iterate, make_rng
from ._noisy_steps import gaussian_plan, plan_of_call
from ._registry import SOLVERS, check_declared_options
from ._resque_oracle import _BallOracle, _project_ball

#: Cap on the ReSQue weight in private fits; it bounds each per-sample term by
#: ``max_weight * L`` (the sensitivity).  3 matches the paper's 3 L^2 second
#: moment bound; with r = rho / 2 the capping bias is below 0.005 L.
DEFAULT_MAX_WEIGHT = 3.0
#: The default target accuracy is this fraction of the DP-SCO rate (1: the
#: docs/solvers/resque.md's choice).  The ball-acceleration parameters (rho, r, K, lambda_*)
#: are derived from the target and the method stops near it by design: with
#: the short-step weight lambda_* its guarantee is about
#: ``2 lambda_* ||x*||^2 / K^2 = 2 tol L ||x*||^2 / R``.  Smaller targets mean
#: more outer iterations, and private fits then accumulate more noise: in the
#: ablation of benchmarks/results/resque.md, 1 is within 2x of the best private
#: setting at epsilon 0.5 and 1, while noiseless fits gain from a smaller ``tol``.
DEFAULT_TOL_FACTOR = 1.0
#: Ball radius of a subproblem as a fraction of the smoothing radius rho.
BALL_TO_SMOOTHING = 0.5
#: Expected passes over the data of a private fit (the gradient budget).
DEFAULT_PASSES = 20
#: Expected Poisson batch of one inner step.
DEFAULT_BATCH_SIZE = 32
#: Fewest inner steps per ball subproblem (two EpochSGD epochs).
MIN_INNER_STEPS = 32
#: Unconstrained fits use R = DEFAULT_RADIUS_SCALE / row_norm_bound as the
#: (public) distance scale of the acceleration: coefficients of that norm
#: reach scores of DEFAULT_RADIUS_SCALE label units.
DEFAULT_RADIUS_SCALE = 4.0
#: Cap on the queries of one ball subproblem in the non-private "theory"
#: schedule (the paper's count grows like kappa^2 / K).
DEFAULT_MAX_INNER = 100_000
#: Line search: accepted step lengths ||x_lambda - y|| / r, and the factor by
#: which lambda moves when the step falls outside that window.
STEP_WINDOW = (0.5, 0.75)
LAMBDA_FACTOR = 1.5
#: Losses whose derivative in the score is bounded by ``derivative_bound``
#: everywhere (the squared loss's bound holds only on a ball of scores), as
#: the loss classes declare it (``GLMLoss.lipschitz``).
GLOBALLY_LIPSCHITZ_LOSSES = loss_names(lipschitz=True)
#: Smooth classification losses, on which no public default schedule was
#: found (their minimiser may lie far out): at its defaults resque stops
#: near zero on the logistic loss (a 248% objective
#: gap at epsilon=inf on breast cancer, the majority class at every epsilon);
#: larger balls and smaller targets reach 2-3% without noise but fall below
#: the trivial predictor at epsilon 0.1 (benchmarks/results/resque.md, the
#: docs' exceptions).  Refused unless the caller gives both ``radius`` and
#: ``tol`` (a schedule of their own), before any spend.
SMOOTH_LOSSES_WITHOUT_DEFAULT = loss_names(smooth=True, classification=True)
#: Restart the acceleration (A = 0, v = x) when the momentum points uphill,
#: i.e. when the new prox gradient ``lam (y - x_new)`` has a positive inner
#: product with the step ``x_new - x`` (O'Donoghue and Candes' gradient
#: restart).  Not in the paper: without it the last iterate of the
#: inexact, noisy acceleration overshoots and oscillates around the optimum.
RESTART = True


# --------------------------------------------------------------------------
# Public option checks (estimators run them before the reservation)
# --------------------------------------------------------------------------


def check_resque_arguments(loss_name, n_outputs, private, options, multi_output=False):
    """Raise a ValueError for a problem or an option ``resque`` refuses; public inputs only.

    Shared by the registry's :func:`check_resque` (estimators call it before
    they reserve the spend, so a refused configuration costs nothing) and by
    :func:`resque` itself (direct callers).

    Parameters
    ----------
    loss_name : str
    n_outputs : int
    private : bool
        Whether epsilon is finite.
    options : mapping
        The solver's options (see :func:`resque`) among other names, which
        are ignored (an estimator's options, or a direct call's
        ``locals()``); those not given take the defaults of its signature
        (the registry's ``call_defaults``).
    multi_output : bool, default=False
        Whether the loss is a multi-output one (direct calls pass
        ``loss.multi_output``).
    """
    spec = SOLVERS["resque"]
    options = {
        **spec.call_defaults,
        **{key: options[key] for key in spec.options if key in options},
    }
    max_weight, n_jobs = options["max_weight"], options["n_jobs"]
    if n_outputs != 1:
        raise ValueError("resque fits single-output losses only (binary, regression).")
    if loss_name not in GLOBALLY_LIPSCHITZ_LOSSES or multi_output:
        raise ValueError(
            f"resque needs a Lipschitz single-output loss ({sorted(GLOBALLY_LIPSCHITZ_LOSSES)}); "
            f"{loss_name!r} is not: its derivative is bounded at most on a ball of scores, "
            "and ReSQue queries lie far outside any ball."
        )
    if loss_name in SMOOTH_LOSSES_WITHOUT_DEFAULT and None in (options["radius"], options["tol"]):
        raise ValueError(
            f"resque has no default schedule that converges on the smooth {loss_name!r} "
            "loss: its ball acceleration moves too little per outer iteration to reach the "
            "optimum (on breast cancer it predicts the majority class at every epsilon, "
            "including epsilon=inf). Use solver='dp_newton', 'dp_gd' or 'dp_sgd' (or "
            "solver='auto'), which converge on it; or, to run resque anyway on a schedule "
            "of your own, pass both radius= (the L2 ball) and solver_options={'tol': ...}."
        )
    # Before the declared range [1, MAX_SCALE], which refuses inf in every fit: why a private one.
    if private and max_weight == math.inf:
        raise ValueError("A private fit needs a finite max_weight (it sets the sensitivity).")
    if n_jobs is not None and (isinstance(n_jobs, (bool, np.bool_)) or n_jobs == 0):
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    # The other options' types and ranges, as the registry declares them (the
    # schedule and the ball oracle are checked by the plan, which every fit makes
    # before the spend).
    check_declared_options("resque", options)


def check_resque(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """The registry's public check of ``resque`` (``SolverSpec.check``).

    Runs :func:`check_resque_arguments` on the estimator's public problem and
    the options it will pass; ``penalty``, ``alpha`` and ``l1_ratio`` are
    checked by the registry's support checks and the estimators.
    """
    check_resque_arguments(loss_name, n_outputs, not math.isinf(public.epsilon), options)


# --------------------------------------------------------------------------
# Public parameter schedule
# --------------------------------------------------------------------------


def default_tolerance(n_samples, n_params, epsilon, delta):
    """Target accuracy as a fraction of ``L R``: ``DEFAULT_TOL_FACTOR`` times the DP-SCO rate.

    The rate is ``1/sqrt(n) + sqrt(d log(1/delta)) / (n epsilon)`` (the
    optimal one without logarithmic factors, docs/solvers/resque.md; ``1/sqrt(n)``
    when ``epsilon`` is infinite).  Public inputs only.
    """
    tol = 1.0 / math.sqrt(n_samples)
    if not math.isinf(epsilon):
        tol += math.sqrt(n_params * math.log(1.0 / delta)) / (n_samples * epsilon)
    return DEFAULT_TOL_FACTOR * tol


def outer_iterations(n_params, tol):
    """Outer iterations ``K = ceil((R / r)^(2/3))`` with ``R / r = 2 sqrt(d) / tol``.

    With ``rho = tol R / sqrt(d)`` (smoothing bias ``L rho sqrt(d) = tol L R``)
    and ``r = rho / 2``.  Ball acceleration needs about ``(R / r)^(2/3)``
    subproblems of radius r (its rate is tight), so this is never capped.
    """
    ratio = 2.0 * math.sqrt(n_params) / tol
    # Guard against 4.0000000001 -> 5 from floating point.
    return max(1, math.ceil(ratio ** (2.0 / 3.0) * (1.0 - 1e-12)))


def multilevel_counts(n_outer):
    """Proposition 2's extra ball calls: ``(j, floor(K / 2^j))`` for ``j = 1 .. ceil(log2 K) + 1``.

    For each level j, that many of the K outer iterations make one more
    ball-oracle call, ``2^j`` times as accurate (the paper's ``C_ba^2 2^(-j)
    K log(R kappa / r)`` with ``C_ba = 1`` and no logarithm; its levels run
    to ``ceil(log2 K + C_ba)``).  Levels with no call are left out.  At most
    ``K`` iterations in all (the fractions ``2^(-j)`` sum to less than 1).
    """
    top = math.ceil(math.log2(n_outer)) + 1 if n_outer > 1 else 1
    return [(j, n_outer >> j) for j in range(1, top + 1) if n_outer >> j]


def plan_resque(n_samples, n_params, epsilon, delta, call):
    """Privacy plan and public schedule of ``resque``, from public inputs only.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (the estimators' DP count); None
        (before it is released) returns None.
    n_params : int
        Number of coefficients (the intercept column included).
    epsilon, delta : float
    call : SolverCall
        The arguments of the run (a :class:`~sklearn_dp.solvers.SolverCall`).
        The schedule reads ``tol`` (target accuracy as a fraction of ``L
        R``; default :func:`default_tolerance`), ``passes`` (expected passes
        over the data, a gradient budget ``passes * n``; default
        ``DEFAULT_PASSES``, raised when needed so that every ball subproblem
        gets at least ``MIN_INNER_STEPS`` steps), ``batch_size`` (expected
        Poisson batch of an inner step; default ``min(32, n)``),
        ``n_probes`` (ball subproblems solved per outer iteration) and
        ``schedule`` (``"budget"`` fixes the inner steps from the gradient
        budget, private or not; ``"theory"``, non-private only, sizes each
        subproblem as the paper's EpochSGD does, from its proximal weight),
        ``inner`` and ``multilevel`` (the extra calls of
        :func:`multilevel_counts`, each ``2^j`` subproblems' steps, share the
        gradient budget) and ``sco`` (``P = max(1, floor(log2(n /
        batch_size)))`` localisation phases on disjoint data, each scheduled
        as a fit on the first phase's ``n_1 = n / (2 (1 - 2^-P))`` rows).

    Returns
    -------
    PrivacyPlan
        ``event`` is ``n_steps = K * n_probes * T_in`` Poisson-subsampled
        Gaussian steps at rate ``batch_size / n`` (``/ n_1`` with ``sco``:
        one phase's event), noise multiplier relative to the per-sample bound
        ``max_weight * L``.  ``details`` holds the schedule: ``tol``,
        ``n_outer`` (K), ``inner_steps`` (T_in), ``batch_size``,
        ``sampling_probability``, ``n_probes``, ``schedule``, ``n_phases``.
    """
    private, schedule, n_probes = not math.isinf(epsilon), call.schedule, call.n_probes
    if schedule == "theory" and private:
        raise ValueError(
            "schedule='theory' sizes each subproblem from a proximal weight chosen on the "
            "data, so its number of noisy steps is not public; it is only available with "
            "epsilon=inf. Use schedule='budget' for private fits."
        )
    if call.multilevel and call.inner != "epoch_sgd":
        raise ValueError(
            "multilevel=True needs inner='epoch_sgd': its extra calls take two coupled "
            "points from one EpochSGD run (the averages at half and at all of its steps)."
        )
    if n_samples is None:
        return None  # the schedule needs the (not yet released) public row count
    batch_size = DEFAULT_BATCH_SIZE if call.batch_size is None else call.batch_size
    batch_size = max(1, min(batch_size, math.floor(n_samples)))
    passes = DEFAULT_PASSES if call.passes is None else call.passes
    n_phases = max(1, math.floor(math.log2(n_samples / batch_size))) if call.sco else 1
    if call.sco:  # the first phase (the largest share, 2^-1 / (1 - 2^-P)) sets the schedule
        n_samples = n_samples / (2.0 * (1.0 - 0.5**n_phases))
    tol = default_tolerance(n_samples, n_params, epsilon, delta) if call.tol is None else call.tol
    n_outer = outer_iterations(n_params, tol)
    # Two significant digits: n_samples is a noisy count, and a rounded rate
    # lets fits share one (cached) calibration.
    rate = min(1.0, float(f"{batch_size / n_samples:.2g}"))
    levels = multilevel_counts(n_outer) if call.multilevel else []
    # Ball calls, in units of one subproblem's steps.
    calls = n_outer * n_probes + sum(count * 2**level for level, count in levels)
    inner_steps = max(MIN_INNER_STEPS, math.floor(passes * n_samples / (batch_size * calls)))
    # The theory schedule (never private) sizes its subproblems as it runs.
    theory = schedule == "theory"
    details = dict(
        tol=float(tol),
        n_outer=n_outer,
        n_probes=int(n_probes),
        batch_size=int(batch_size),
        sampling_probability=rate,
        schedule=schedule,
        inner_steps=None if theory else inner_steps,
        inner=call.inner,
        multilevel_counts=levels,
        n_phases=n_phases,
    )
    return gaussian_plan(epsilon, delta, 0 if theory else calls * inner_steps, details, rate)


# --------------------------------------------------------------------------
# Public constants of a fit
# --------------------------------------------------------------------------


def _public_setting(data, loss, plan, *, alpha, radius, max_weight, max_inner):
    """Everything public a fit of ``plan`` runs with: the geometry and the noise.

    Computed from the public stand-in for the row count (``data.n_public``),
    the public bounds and the options of :func:`resque`, before the data is
    touched.  Returns the plan's ``details``, where the constants of
    :func:`resque` are recorded (see its docstring), as a namespace with
    ``plan``, ``max_inner`` and ``alpha_mask`` (the L2 penalty's weight per
    coordinate, or None).
    """
    details = plan.details
    constrained = radius is not None
    R = float(radius) if constrained else DEFAULT_RADIUS_SCALE / data.row_norm_bound
    lipschitz_data = float(loss.derivative_bound) * data.row_norm_bound
    # The public L2 penalty adds at most alpha * R to the Lipschitz constant on B_R.
    lipschitz = lipschitz_data + alpha * R
    rho = details["tol"] * R / math.sqrt(data.n_columns)
    r = BALL_TO_SMOOTHING * rho
    lambda_max = 2.0 * lipschitz / r
    sensitivity = max_weight * lipschitz_data
    details.update(
        noise_std=plan.noise_multiplier * sensitivity,
        sensitivity=sensitivity,
        max_weight=float(max_weight),
        smoothing_radius=rho,
        ball_radius=r,
        radius=R,
        constrained=constrained,
        lipschitz=lipschitz,
        lambda_min=min(details["tol"] * lipschitz * details["n_outer"] ** 2 / R, lambda_max),
        lambda_max=lambda_max,
    )
    return SimpleNamespace(
        **details,
        plan=plan,
        domain_radius=R if constrained else None,
        max_inner=DEFAULT_MAX_INNER if max_inner is None else int(max_inner),
        alpha_mask=alpha * data.penalized.astype(float) if alpha > 0 else None,
        # ACSA's step sizes: F_rho is (L / rho)-smooth, plus the public penalty.
        smoothness=lipschitz_data / rho + alpha,
        anchor=None,
        anchor_weight=0.0,
    )


# --------------------------------------------------------------------------
# Outer loop: Monteiro-Svaiter ball acceleration
# --------------------------------------------------------------------------


def ball_acceleration(
    solve_ball, x0, setting, *, restart=RESTART, progress=None, proximal_point=None
):
    """Monteiro-Svaiter acceleration with ball-constrained proximal steps (docs/solvers/resque.md).

    Parameters
    ----------
    solve_ball : callable
        ``solve_ball(y, lam, start) -> x``: an (approximate) minimiser of
        ``F(x) + lam / 2 ||x - y||^2`` over ``B_r(y)`` (intersected with
        ``B_R``), started from ``start``.
    x0 : ndarray of shape (d,)
    setting : namespace
        The fit's public setting (:func:`_public_setting`); read here:
        ``ball_radius`` (r); ``lambda_min`` and ``lambda_max``, the range of
        the proximal weight (``lambda_*`` and ``2 L / r``); ``n_outer``, the
        number of outer iterations (fixed, public); ``n_probes``, the
        subproblems per iteration (every probe is solved: a fixed count, so
        the cost and privacy are public; lambda moves by ``LAMBDA_FACTOR``,
        or bisects once bracketed, when the step ``||x - y||`` leaves
        ``STEP_WINDOW * r``, and the last probe is accepted; the adjusted
        lambda warm-starts the next iteration); ``domain_radius``, R or
        None: keep ``v`` (and, through ``solve_ball``, ``x``) in ``B_R``.
    restart : bool
        Reset ``A = 0, v = x`` after an iteration whose step goes uphill
        along the new prox gradient (``<lam (y - x_new), x_new - x> > 0``).
    progress : callable, optional
    proximal_point : callable, optional
        ``proximal_point(k, y, lam, x_new) -> point or None``, called once per
        outer iteration after the accepted probe: an estimate of the exact
        prox point for the ``v`` update (Proposition 2's multilevel calls);
        None (or a None answer) uses the accepted probe's solution.  It is
        called at every iteration, restart or not, so its cost is public.

    Returns
    -------
    x : ndarray
        The last iterate ``x_K``.
    trace : dict
        Per outer iteration, the accepted ``lambdas`` and ``step_lengths``
        and ``A``; and the number of ``restarts``.
    """
    ball_radius = setting.ball_radius
    lambda_min, lambda_max = setting.lambda_min, setting.lambda_max
    x = np.array(x0, dtype=float)
    v, A = x.copy(), 0.0
    lam = math.sqrt(lambda_min * lambda_max)  # the first probe's weight
    low, high = STEP_WINDOW[0] * ball_radius, STEP_WINDOW[1] * ball_radius
    trace = {"lambdas": [], "step_lengths": [], "A": [], "restarts": 0}
    for k in range(setting.n_outer):
        bracket = [lambda_min, lambda_max]
        x_new = None
        for _ in range(setting.n_probes):
            lam_k = lam  # this probe's weight (lam moves on below)
            a = (1.0 + math.sqrt(1.0 + 4.0 * lam_k * A)) / (2.0 * lam_k)
            y = (A * x + a * v) / (A + a)
            # Warm-started from the previous probe's solution.
            x_new = solve_ball(y, lam_k, y if x_new is None else x_new)
            step = float(np.linalg.norm(x_new - y))
            # Long step: the ball may bind, so more regularisation; short
            # step: less.  Post-processing of the (noisy) solution only.
            if step > high:
                bracket[0] = lam
                bracketed = bracket[1] < lambda_max
                lam = math.sqrt(lam * bracket[1]) if bracketed else lam * LAMBDA_FACTOR
            elif step < low:
                bracket[1] = lam
                bracketed = bracket[0] > lambda_min
                lam = math.sqrt(lam * bracket[0]) if bracketed else lam / LAMBDA_FACTOR
            lam = min(max(lam, lambda_min), lambda_max)
        # The last probe is accepted: lam_k (y - x_new) approximates a
        # (sub)gradient of F at the prox point.
        gradient = lam_k * (y - x_new)
        estimate = None if proximal_point is None else proximal_point(k, y, lam_k, x_new)
        restarted = restart and A > 0 and gradient @ (x_new - x) > 0
        x = x_new
        if restarted:
            A, v = 0.0, x.copy()
        else:
            if estimate is not None:
                gradient = lam_k * (y - estimate)
            v = v - a * gradient
            if setting.domain_radius is not None:
                v = _project_ball(v, np.zeros_like(v), setting.domain_radius)
            A += a
        trace["restarts"] += int(restarted)
        trace["lambdas"].append(lam_k)
        trace["step_lengths"].append(step)
        trace["A"].append(A)
        if progress is not None:
            progress(k + 1, step_over_r=step / ball_radius, lam=lam_k)
    return x, trace


# --------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------


def _multilevel_estimator(oracle, setting, rng):
    """``proximal_point`` of :func:`ball_acceleration` for Proposition 2's extra calls.

    The iterations of each level are a uniformly random set (a permutation
    drawn once, from the fit's generator, independently of the data), so
    iteration k has level j with probability ``p_j = count_j / K`` and the
    estimate ``x + (x_j - x_{j-1}) / p_j`` has the mean of the most accurate
    level when the call's first level is distributed as the accepted probe.
    """
    n_outer = setting.n_outer
    levels = [level for level, count in setting.multilevel_counts for _ in range(count)]
    level_of = np.zeros(n_outer, dtype=np.int64)
    level_of[rng.permutation(n_outer)[: len(levels)]] = levels

    def proximal_point(k, y, lam, x_new):
        level = int(level_of[k])
        if level == 0:
            return None
        coarse, fine = oracle.multilevel_pair(y, lam, level)
        probability = dict(setting.multilevel_counts)[level] / n_outer
        return x_new + (fine - coarse) / probability

    return proximal_point


def _phase_rows(data, setting, rng):
    """The rows of each localisation phase: row i goes to phase k with probability ``~2^-k``.

    Independently of the other rows, through the noise gateway's allocation
    (public probabilities ``2^-k / (1 - 2^-P)``, k = 1..P), so a row added or
    removed changes the data of one phase only.
    """
    shares = 0.5 ** np.arange(1, setting.n_phases + 1)
    slots = _noise.allocate_rows(data.design.n_rows, shares / shares.sum(), rng)
    return [np.flatnonzero(slots == phase) for phase in range(setting.n_phases)]


def resque(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    radius=None,
    constraint=None,
    tol=None,
    passes=None,
    batch_size=None,
    n_probes=1,
    max_weight=DEFAULT_MAX_WEIGHT,
    schedule="budget",
    max_inner=None,
    restart=RESTART,
    inner="epoch_sgd",
    multilevel=False,
    sco=False,
    n_jobs=None,
    random_state=None,
    verbose=0,
    plan=None,
):
    """ReSQue ball acceleration for Lipschitz losses (parallel queries; DP-SGD-style privacy).

    Minimises the Gaussian-smoothed empirical risk
    ``F_rho(w) = E_z mean_i l(x_i @ (w + z), y_i)``, ``z ~ N(0, rho^2 I)``
    (plus ``alpha / 2 * ||w[penalized]||^2``), over the L2 ball of ``radius``
    (or unconstrained).  ``|F_rho - F| <= L rho sqrt(d) = tol L R``, so this is
    the original objective up to the target accuracy.

    Algorithm (docs/solvers/resque.md):

    * ``K = ceil((R / r)^(2/3))`` outer iterations of Monteiro-Svaiter ball
      acceleration (:func:`ball_acceleration`), with ``rho = tol R / sqrt(d)``,
      ``r = rho / 2``, ``lambda`` in ``[tol L K^2 / R, 2 L / r]``;
    * each ball subproblem ``min F_rho(x) + lambda / 2 ||x - y||^2`` over
      ``B_r(y) ∩ B_R`` is solved by EpochSGD on ReSQue gradients centred at
      ``y``; all its queries ``x_i @ (y + xi)`` are drawn and evaluated in
      one batched round before the first step (query depth = number of
      subproblems);
    * the acceleration restarts (``A = 0``, ``v = x``) when its momentum
      points uphill (``restart``);
    * every inner step sums ``min(w_i(x), max_weight) * l'_i * x_i`` over a
      Poisson sample of rate ``q = batch_size / n`` and adds Gaussian noise.

    Parameters
    ----------
    data : BoundedData
        Rows clipped to L2 norm ``data.row_norm_bound`` (B) and labels; CSR
        rows are densified a chunk of queries at a time.
    loss : GLMLoss
        A Lipschitz single-output loss (``derivative_bound`` not None):
        absolute, quantile, Huber, hinge, binary logistic.  ``L = derivative_bound * B``.
    n_outputs : int
        Must be 1.
    alpha : float
        L2 penalty on the penalised coefficients (added exactly, not smoothed).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same algorithm without noise.
    radius : float, optional
        R, the radius of the L2 constraint ball.  Without it the fit is
        unconstrained and R = ``DEFAULT_RADIUS_SCALE / B`` only sets the
        solver's scale (smoothing radius, ball radius, number of outer
        iterations).
    constraint : {None, "l2"}
        Only the L2 ball is supported (ReSQue smoothing and the ball
        subproblems are Euclidean).
    tol : float, optional
        Target accuracy as a fraction of ``L R`` (it fixes rho, r and K);
        default ``1/sqrt(n) + sqrt(d log(1/delta)) / (n epsilon)``.  Smaller
        values mean more, smaller balls (K grows like ``tol^(-2/3)``).
    passes : float, optional
        Gradient budget in expected passes over the data (default 20); raised
        when needed so each subproblem gets at least 32 inner steps.
    batch_size : int, optional
        Expected Poisson batch per inner step; default ``min(32, n)``.
    n_probes : int, default=1
        Line-search probes (subproblems) per outer iteration.
    max_weight : float, default=3.0
        Cap on the ReSQue weights.  Private fits need a finite cap (it sets
        the sensitivity ``max_weight * L``); at most ``1e30``, like every
        scale option (at ``epsilon=inf`` a cap that large gives, in effect,
        the unbiased estimator).
    schedule : {"budget", "theory"}, default="budget"
        ``"theory"`` (epsilon=inf only): each subproblem makes the paper's
        ``T = ceil(768 L^2 / (lambda^2 r^2))`` queries (EpochSGD with
        ``phi = lambda r^2 / 16``), capped at ``max_inner``, in
        ``ceil(T / batch_size)`` steps on Poisson batches of expected size
        ``batch_size`` (the paper samples ``batch_size`` rows uniformly with
        replacement; Poisson batches go through the same gateway sampler as
        the budget schedule).
    max_inner : int, optional
        Cap on the queries of one subproblem in the theory schedule (default
        100000).
    restart : bool, default=True
        Gradient restart of the acceleration (see ``RESTART``); ``False`` runs
        the plain Monteiro-Svaiter recursion.
    inner : {"epoch_sgd", "acsa"}, default="epoch_sgd"
        Ball oracle: EpochSGD (the paper's Algorithm 1, Theorem 1) or ACSA
        (Algorithm 2, Theorem 2: Ghadimi and Lan's multi-stage accelerated
        stochastic approximation).  ACSA makes the same releases (the same
        privacy event) in fewer sequential steps: stages of
        ``T = ceil(4 sqrt(L / (rho lambda) + 1))`` steps, each step
        averaging ``2^(k-1)`` releases (Poisson batches) in stage k, the
        releases left over joining the last stage.
    multilevel : bool, default=False
        Proposition 2's extra high-accuracy ball calls (EpochSGD only): for
        each level ``j = 1 .. ceil(log2 K) + 1``, ``floor(K / 2^j)`` outer
        iterations (drawn at random, independently of the data) make one more
        call with ``2^j`` times the steps, and their ``v`` update uses the
        multilevel Monte Carlo estimate ``x + (x_j - x_{j-1}) / p_j`` of the
        exact prox point (``x_j``, ``x_{j-1}``: that call's averages at
        ``2^j`` and ``2^(j-1)`` times the steps; ``p_j = floor(K / 2^j) / K``),
        whose bias is that of the most accurate level.  The extra steps
        share the gradient budget (``passes``).
    sco : bool, default=False
        The paper's ERM-to-SCO reduction (Theorem 4, iterative localisation):
        ``P = max(1, floor(log2(n / batch_size)))`` phases on disjoint data,
        each row allocated to phase ``i`` with probability ``2^-i / (1 -
        2^-P)`` independently of the others.  Phase i minimises its own rows'
        empirical risk plus ``1 / (2 eta_i n_i) ||x - x_(i-1)||^2``, centred at
        the previous phase's output (``x_0 = 0``), ``eta_i = 4^-i R / (L n_1
        tol)``, with the whole ball acceleration of a fit on the first
        phase's rows (tol, K, inner steps and the sampling rate; later phases
        sample their fewer rows at that rate, so their expected batch halves
        from phase to phase).  Returns the last phase's output.  Targets the
        population risk rather than the empirical risk; the query depth is
        ``P`` times a single fit's.
    n_jobs : int, optional
        joblib threads that evaluate the queries of a round in tasks of at
        least ``QUERY_CHUNK`` queries; results do not depend on it.
    random_state : None, int, RandomState or Generator
    verbose : int
        Progress lines per outer iteration: the accepted step length over r
        and the accepted lambda (functions of the noisy releases).
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_resque` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        ``n_iter`` is the number of sequential inner steps (EpochSGD: one
        noisy release each; ACSA: one or more, ``info["n_releases"]`` in
        all).  ``info`` holds ``query_depth`` (rounds of queries: one per
        subproblem, ``K * n_probes`` per phase), ``n_queries`` (the nominal
        number of per-sample gradient evaluations, steps times the public
        expected batch size: the realised Poisson batch sizes would reveal
        the row count), ``n_outer``, ``inner_steps``, ``smoothing_radius``,
        ``ball_radius``, ``radius``, ``n_phases`` (1 without ``sco``),
        ``restarts`` and the accepted ``lambdas``, ``step_lengths`` and ``A``
        per outer iteration (of every phase, in order).

    Raises
    ------
    ValueError
        For options or a loss it refuses (:func:`check_resque_arguments`),
        before the data is read.
    ConvergenceError
        If the coefficients, computed from the noisy releases only, are not
        finite (a public error).

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Inner step t
    releases, through :func:`sklearn_dp._noise.gaussian`,
    ``sum_{i in S_t} min(w_i, w_max) l'(x_i @ (y + xi_i), y_i) x_i +
    N(0, (sigma w_max L)^2 I)`` (:func:`sklearn_dp._clipped_sums.capped_resque_sum`)
    with ``S_t`` a Poisson sample of rate q from
    :func:`sklearn_dp._noise.poisson_sample`.  Each term has norm at most
    ``w_max * L`` whatever the query point (the loss is L-Lipschitz on all of
    R^d, the derivative is clipped to its bound and rows are clipped), the
    perturbations ``xi`` are drawn independently of the data, and a row
    added or removed contributes at most one term: sensitivity ``w_max * L``
    (L2).  The ``K * n_probes * T_in`` steps are adaptive Poisson-subsampled
    Gaussian mechanisms (PLD accounting, :func:`plan_resque`); the line
    search, projections, averaging and acceleration only post-process the
    noisy sums.  With ``sco``, the phases run on disjoint data (the
    allocation is public randomness drawn through
    :func:`sklearn_dp._noise.allocate_rows`), each makes the same steps at
    the same rate and noise, and a row added or removed changes the data of
    its own phase only: by joint convexity of the hockey-stick divergence
    over the allocation (parallel composition), the fit is as private as one
    phase, and its ``DpEvent`` is one phase's event.

    Every observable is a function of public values and the releases: all
    counts (``n_iter``, ``query_depth``, ``n_queries``) are fixed from public
    inputs before the data is touched (or, in the non-private theory
    schedule, from released lambdas), ``lambdas``, ``step_lengths``, ``A``,
    ``restarts`` and the verbose lines are computed from the noisy
    iterates, there is no early stop, and the only exceptions after the
    data is read are raised on released values or on a bug
    (:func:`check_finite_iterate`, the release count check), both public.
    Public: d, B, R, tol, q, every count and option; the row count is
    private: the estimators pass a DP count (``data.n_public``,
    ``data.normalizer``); a direct call on data without one treats n as
    public.
    """
    arguments = locals()
    private = not math.isinf(epsilon)
    check_resque_arguments(loss.name, n_outputs, private, arguments, loss.multi_output)
    # A direct call's schedule comes from the public stand-in for the row count
    # (a DP count from the estimators): the true n is private under add/remove.
    plan = plan_of_call("resque", arguments)
    setting = _public_setting(
        data, loss, plan, alpha=alpha, radius=radius, max_weight=max_weight, max_inner=max_inner
    )
    # joblib's context manager for the query rounds (threads), or none for one job.
    one_job = n_jobs is None or n_jobs == 1
    with nullcontext(None) if one_job else Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
        rng = make_rng(random_state)
        oracle = _BallOracle(data, loss, setting, rng, parallel)
        estimate = _multilevel_estimator(oracle, setting, rng) if multilevel else None
        coef, traces = np.zeros(data.n_columns), []
        for phase, rows in enumerate(_phase_rows(data, setting, rng) if sco else [None]):
            if rows is not None:
                oracle.start_phase(phase, rows, coef)
            progress = Progress("resque", setting.n_outer, verbose)
            coef, trace = ball_acceleration(
                oracle, coef, setting, restart=restart, progress=progress, proximal_point=estimate
            )
            traces.append(trace)
    check_finite_iterate(coef, "resque")
    # The steps run are the steps accounted for (the budget schedule) and each was
    # released once.  Both sides are public: the loops of ball_acceleration and
    # _epoch_sgd run a fixed number of times (n_outer * n_probes rounds of
    # inner_steps steps, or theory-schedule steps sized from released values), so
    # this fires on a bug only, never on data.
    expected = setting.plan.n_steps * setting.n_phases
    expected = expected if setting.schedule == "budget" else oracle.steps
    if oracle.releases != oracle.steps or oracle.steps != expected:
        message = (
            f"resque ran {oracle.steps} noisy steps with {oracle.releases} releases but "
            f"accounted for {expected} (a bug)."
        )
        raise public_error(AssertionError(message))
    info = dict(query_depth=oracle.rounds, n_queries=round(oracle.queries), n_releases=oracle.steps)
    for key in ("n_outer", "inner_steps", "smoothing_radius", "ball_radius", "radius", "n_phases"):
        info[key] = getattr(setting, key)
    info.update({key: sum((t[key] for t in traces), type(value)()) for key, value in trace.items()})
    return SolverResult(coef=coef[:, None], n_iter=oracle.updates, plan=setting.plan, info=info)
