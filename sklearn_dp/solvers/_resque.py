"""ReSQue estimators, ball acceleration and the ``resque`` solver.

Carmon, Jambulapati, Jin, Lee, Liu, Sidford and Tian (2023), "ReSQue-ing
parallel and private stochastic convex optimization" (docs:
``docs/solvers/resque.md``).

The ReSQue estimator
--------------------
For a loss ``f`` and its Gaussian smoothing ``f_rho = f * N(0, rho^2 I)``,

    w_xi(x) * g(c + xi),   xi ~ N(0, rho^2 I),
    w_xi(x) = exp((2 <x - c, xi> - ||x - c||^2) / (2 rho^2)),

is an unbiased estimate of ``grad f_rho(x)`` at *every* ``x``, where ``g`` is
a subgradient of ``f`` queried at the perturbed reference point ``c + xi``.
``w`` is the likelihood ratio of ``N(x - c, rho^2 I)`` to ``N(0, rho^2 I)``,
so ``E w = 1`` and ``E w^2 = exp(||x - c||^2 / rho^2)``: the estimate is well
behaved within about ``rho`` of ``c``.  The queries do not depend on ``x``,
so every gradient a solver needs inside a ball around ``c`` comes from one
batch of queries made at once (one parallel "round"); later iterates only
re-weight the stored answers.

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

Where privacy is decided
------------------------
The Poisson batches come from :func:`sklearn_dp._noise.poisson_sample` and
every inner step's noisy sum from :func:`sklearn_dp._noise.gaussian`, in the
calling thread, once per step; joblib workers only evaluate the queries'
derivatives.  The pre-noise sums are computed by the clipped sums of the ReSQue
section of :mod:`sklearn_dp._clipped_sums` (:func:`resque_query_derivatives`,
:func:`capped_resque_sum`).  The perturbations ``xi`` are public randomness:
each step's are drawn from a stream keyed by (round, step, chunk of
``QUERY_CHUNK`` positions in the step's sorted batch), independent of the data
and of ``n_jobs``.
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from joblib import Parallel, delayed

from .. import _noise, accounting
from .._clipped_sums import capped_resque_sum, resque_query_derivatives
from .._losses import loss_names
from ..exceptions import public_error
from ._common import PrivacyPlan, Progress, SolverResult, check_finite_iterate, make_rng

__all__ = [
    "resque_log_weights",
    "resque_weights",
    "resque_gradient",
    "gaussian_queries",
    "project_two_balls",
    "epoch_lengths",
    "outer_iterations",
    "default_tolerance",
    "ball_acceleration",
    "check_resque",
    "check_resque_arguments",
    "plan_resque",
    "resque",
]

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
#: Length of EpochSGD's first epoch (docs/solvers/resque.md).
FIRST_EPOCH = 16
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
#: Smooth losses on which no public default schedule was found: at
#: its defaults resque stops near zero on the logistic loss (a 248% objective
#: gap at epsilon=inf on breast cancer, the majority class at every epsilon);
#: larger balls and smaller targets reach 2-3% without noise but fall below
#: the trivial predictor at epsilon 0.1 (benchmarks/results/resque.md, the
#: docs' exceptions).  Refused unless the caller gives both ``radius`` and
#: ``tol`` (a schedule of their own), before any spend.
SMOOTH_LOSSES_WITHOUT_DEFAULT = frozenset({"log_loss"})
#: Restart the acceleration (A = 0, v = x) when the momentum points uphill,
#: i.e. when the new prox gradient ``lam (y - x_new)`` has a positive inner
#: product with the step ``x_new - x`` (O'Donoghue and Candes' gradient
#: restart).  Not in the paper: without it the last iterate of the
#: inexact, noisy acceleration overshoots and oscillates around the optimum.
RESTART = True
#: Queries per random stream of perturbations (a step's batch is cut into runs
#: of this many) and, at least, per joblib task of a query round.  Fixed, so
#: results do not depend on n_jobs.
QUERY_CHUNK = 4096
#: Label of the inner steps' releases in traces.
STEP_LABEL = "resque step sum"


# --------------------------------------------------------------------------
# The ReSQue estimator
# --------------------------------------------------------------------------


def resque_log_weights(x, center, xi, rho):
    """Logarithm of the ReSQue weights ``w_xi(x)`` for each row of ``xi``.

    ``log w = (2 <x - c, xi> - ||x - c||^2) / (2 rho^2)``: the log-likelihood
    ratio of ``N(x - c, rho^2 I)`` to ``N(0, rho^2 I)`` at ``xi``.  Computed in
    closed form, never as a ratio of two Gaussian densities (whose
    ``(2 pi rho^2)^(-d/2)`` factors under- or overflow).

    Parameters
    ----------
    x, center : ndarray of shape (d,)
    xi : ndarray of shape (m, d)
        The Gaussian perturbations the queries were made at (``center + xi``).
    rho : float
        Smoothing radius (standard deviation of each coordinate of ``xi``).

    Returns
    -------
    ndarray of shape (m,)
    """
    offset = np.asarray(x, dtype=float) - np.asarray(center, dtype=float)
    return (2.0 * (xi @ offset) - offset @ offset) / (2.0 * rho**2)


def resque_weights(x, center, xi, rho, max_weight=None):
    """ReSQue weights ``w_xi(x)``, capped at ``max_weight`` if given (see resque_log_weights)."""
    log_weights = resque_log_weights(x, center, xi, rho)
    if max_weight is None or not math.isfinite(max_weight):
        return np.exp(log_weights)
    # Cap in log space (no overflow), then exactly: exp(log(3)) rounds above 3.
    np.minimum(log_weights, math.log(max_weight), out=log_weights)
    return np.minimum(np.exp(log_weights), max_weight)


def resque_gradient(x, center, xi, subgradients, rho, *, max_weight=None, average=True):
    """ReSQue estimates of the gradient of the Gaussian-smoothed loss at ``x``.

    Parameters
    ----------
    x : ndarray of shape (d,)
        Point at which the gradient of ``f_rho = f * N(0, rho^2 I)`` is wanted.
    center : ndarray of shape (d,)
        Reference point the queries were made around.
    xi : ndarray of shape (m, d)
        Perturbations, ``xi ~ N(0, rho^2 I)`` i.i.d. (see :func:`gaussian_queries`).
    subgradients : ndarray of shape (m, d)
        ``g(center + xi_i)``: (stochastic) subgradients of ``f`` at the query
        points.
    rho : float
        Smoothing radius.
    max_weight : float, optional
        Cap on the weights (biased, but bounds each term by ``max_weight``
        times ``||g||``); ``None`` for the exact, unbiased estimator.
    average : bool, default=True
        Return the mean of the m estimates, or all of them.

    Returns
    -------
    ndarray of shape (d,) or (m, d)
        ``mean_i w_i(x) g_i`` or the rows ``w_i(x) g_i``.

    Notes
    -----
    Unbiased for ``grad f_rho(x)`` for every ``x`` and ``center`` (Lemma 1 of
    the paper): substituting ``z = center + xi`` gives
    ``E w g = int N(z; x, rho^2 I) E g(z) dz``.  Its second moment is at most
    ``L^2 exp(||x - center||^2 / rho^2)`` when ``E ||g||^2 <= L^2`` (at most
    ``3 L^2`` within ``rho`` of the centre), with equality when ``||g|| = L``.
    """
    weights = resque_weights(x, center, xi, rho, max_weight)
    if average:
        return weights @ subgradients / len(weights)
    return weights[:, None] * subgradients


def gaussian_queries(center, rho, n_queries, rng):
    """Query points ``center + xi`` and the perturbations ``xi ~ N(0, rho^2 I)``."""
    rng = make_rng(rng)
    center = np.asarray(center, dtype=float)
    xi = rho * rng.standard_normal((int(n_queries), center.size))
    return center + xi, xi


# --------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------


def _project_ball(u, center, radius):
    offset = u - center
    norm = math.sqrt(offset @ offset)
    return u if norm <= radius else center + offset * (radius / norm)


def project_two_balls(u, c1, r1, c2, r2):
    """Euclidean projection of ``u`` onto ``B_r1(c1) ∩ B_r2(c2)`` (assumed non-empty).

    Either a projection onto one ball lies in the other, or the answer lies
    on the intersection's boundary circle (the (d-2)-sphere where both
    spheres meet), where it is the point closest to ``u``.
    """
    u = np.asarray(u, dtype=float)
    c1 = np.asarray(c1, dtype=float)
    c2 = np.asarray(c2, dtype=float)
    tolerance = 1e-12 * (1.0 + r1 + r2)
    if np.linalg.norm(u - c1) <= r1 and np.linalg.norm(u - c2) <= r2:
        return u
    p1 = _project_ball(u, c1, r1)
    if np.linalg.norm(p1 - c2) <= r2 + tolerance:
        return p1
    p2 = _project_ball(u, c2, r2)
    if np.linalg.norm(p2 - c1) <= r1 + tolerance:
        return p2
    distance = float(np.linalg.norm(c2 - c1))
    if distance + min(r1, r2) <= max(r1, r2):  # one ball inside the other
        return p1 if r1 <= r2 else p2
    e = (c2 - c1) / distance
    t = (distance**2 + r1**2 - r2**2) / (2.0 * distance)
    h = math.sqrt(max(r1**2 - t**2, 0.0))
    circle_center = c1 + t * e
    w = (u - circle_center) - ((u - circle_center) @ e) * e
    norm_w = float(np.linalg.norm(w))
    if norm_w == 0.0:  # u on the axis: every point of the circle is closest
        w = np.zeros_like(u)
        w[np.argmin(np.abs(e))] = 1.0
        w -= (w @ e) * e
        norm_w = float(np.linalg.norm(w))
    return circle_center + h * w / norm_w


class _Domain:
    """Projection onto ``B_r(center)``, intersected with ``B_R(0)`` when constrained."""

    def __init__(self, center, r, domain_radius):
        self.center = center
        self.r = r
        self.domain_radius = domain_radius

    def __call__(self, u):
        if self.domain_radius is None:
            return _project_ball(u, self.center, self.r)
        if u @ u <= self.domain_radius**2:
            return _project_ball(u, self.center, self.r)
        return project_two_balls(u, self.center, self.r, np.zeros_like(u), self.domain_radius)


# --------------------------------------------------------------------------
# Public option checks (estimators run them before the reservation)
# --------------------------------------------------------------------------

#: Options ``check_resque`` reads (the registry's ``options`` of ``resque``).
OPTION_NAMES = (
    "radius",
    "constraint",
    "tol",
    "passes",
    "batch_size",
    "n_probes",
    "max_weight",
    "schedule",
    "max_inner",
    "restart",
    "n_jobs",
)


def _check_schedule_options(*, tol, passes, batch_size, n_probes, schedule, private):
    if tol is not None and (not isinstance(tol, Real) or not 0 < tol < math.inf):
        raise ValueError(f"tol must be a float > 0 (a fraction of L * R), got {tol!r}.")
    if passes is not None and (not isinstance(passes, Real) or not 0 < passes < math.inf):
        raise ValueError(f"passes must be a float > 0, got {passes!r}.")
    if batch_size is not None and (not isinstance(batch_size, Integral) or batch_size < 1):
        raise ValueError(f"batch_size must be an integer >= 1, got {batch_size!r}.")
    if not isinstance(n_probes, Integral) or n_probes < 1:
        raise ValueError(f"n_probes must be an integer >= 1, got {n_probes!r}.")
    if schedule not in ("budget", "theory"):
        raise ValueError(f"schedule must be 'budget' or 'theory', got {schedule!r}.")
    if schedule == "theory" and private:
        raise ValueError(
            "schedule='theory' sizes each subproblem from a proximal weight chosen on the "
            "data, so its number of noisy steps is not public; it is only available with "
            "epsilon=inf. Use schedule='budget' for private fits."
        )


def check_resque_arguments(
    *,
    loss_name,
    n_outputs,
    private,
    multi_output=False,
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
    n_jobs=None,
):
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
    multi_output : bool, default=False
        Whether the loss is a multi-output one (direct calls pass
        ``loss.multi_output``).
    radius, constraint, tol, passes, batch_size, n_probes, max_weight, schedule, \
max_inner, restart, n_jobs
        The solver's options (see :func:`resque`).
    """
    if n_outputs != 1:
        raise ValueError("resque fits single-output losses only (binary, regression).")
    if loss_name not in GLOBALLY_LIPSCHITZ_LOSSES or multi_output:
        raise ValueError(
            f"resque needs a Lipschitz single-output loss ({sorted(GLOBALLY_LIPSCHITZ_LOSSES)}); "
            f"{loss_name!r} is not: its derivative is bounded at most on a ball of scores, "
            "and ReSQue queries lie far outside any ball."
        )
    if loss_name in SMOOTH_LOSSES_WITHOUT_DEFAULT and (radius is None or tol is None):
        raise ValueError(
            f"resque has no default schedule that converges on the smooth {loss_name!r} "
            "loss: its ball acceleration moves too little per outer iteration to reach the "
            "optimum (on breast cancer it predicts the majority class at every epsilon, "
            "including epsilon=inf). Use solver='dp_newton', 'dp_gd' or 'dp_sgd' (or "
            "solver='auto'), which converge on it; or, to run resque anyway on a schedule "
            "of your own, pass both radius= (the L2 ball) and solver_options={'tol': ...}."
        )
    if constraint not in (None, "l2"):
        raise ValueError(
            f"resque supports only an L2-ball constraint, got constraint={constraint!r}: "
            "its smoothing and ball subproblems are Euclidean."
        )
    if radius is not None and not (isinstance(radius, Real) and 0 < radius < math.inf):
        raise ValueError(f"radius must be a finite float > 0, got {radius!r}.")
    if not (isinstance(max_weight, Real) and max_weight >= 1):
        raise ValueError(f"max_weight must be a float >= 1, got {max_weight!r}.")
    if private and math.isinf(max_weight):
        raise ValueError("A private fit needs a finite max_weight (it sets the sensitivity).")
    if max_inner is not None and not (isinstance(max_inner, Integral) and max_inner >= 1):
        raise ValueError(f"max_inner must be an integer >= 1, got {max_inner!r}.")
    if not isinstance(restart, (bool, np.bool_)):
        raise ValueError(f"restart must be a bool, got {restart!r}.")
    if n_jobs is not None and (
        isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, Integral) or n_jobs == 0
    ):
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}.")
    _check_schedule_options(
        tol=tol,
        passes=passes,
        batch_size=batch_size,
        n_probes=n_probes,
        schedule=schedule,
        private=private,
    )


def check_resque(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """The registry's public check of ``resque`` (``SolverSpec.check``).

    Runs :func:`check_resque_arguments` on the estimator's public problem and
    the options it will pass; ``penalty``, ``alpha`` and ``l1_ratio`` are
    checked by the registry's support checks and the estimators.
    """
    check_resque_arguments(
        loss_name=loss_name,
        n_outputs=n_outputs,
        private=not math.isinf(public.epsilon),
        **{key: value for key, value in options.items() if key in OPTION_NAMES},
    )


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


def epoch_lengths(n_steps, first=FIRST_EPOCH):
    """EpochSGD epochs: ``first, 2 first, 4 first, ...`` and a shorter last one with the rest.

    The paper stops at the last full epoch; using the leftover steps (as one
    more epoch when there are at least ``first`` of them, else in the last
    epoch) spends every step the privacy budget paid for.
    """
    n_steps = int(n_steps)
    lengths = []
    length = min(first, n_steps)
    remaining = n_steps
    while length > 0 and remaining >= length:
        lengths.append(length)
        remaining -= length
        length *= 2
    if remaining >= first:
        lengths.append(remaining)
    elif remaining:
        lengths[-1] += remaining
    return lengths


def plan_resque(
    n_samples,
    n_params,
    epsilon,
    delta,
    *,
    tol=None,
    passes=None,
    batch_size=None,
    n_probes=1,
    schedule="budget",
):
    """Privacy plan and public schedule of ``resque``, from public inputs only.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (the estimators' DP count); None
        (before it is released) returns None.
    n_params : int
        Number of coefficients (the intercept column included).
    epsilon, delta : float
    tol : float, optional
        Target accuracy as a fraction of ``L R``; default
        :func:`default_tolerance`.
    passes : float, optional
        Expected passes over the data (gradient budget ``passes * n``); default
        ``DEFAULT_PASSES``.  Raised when needed so that every ball subproblem
        gets at least ``MIN_INNER_STEPS`` steps.
    batch_size : int, optional
        Expected Poisson batch of an inner step; default ``min(32, n)``.
    n_probes : int, default=1
        Ball subproblems solved per outer iteration (line-search probes).
    schedule : {"budget", "theory"}
        ``"budget"`` fixes the inner steps from the gradient budget (private
        or not); ``"theory"`` (non-private only) sizes each subproblem as the
        paper's EpochSGD does, from its proximal weight.

    Returns
    -------
    PrivacyPlan
        ``event`` is ``n_steps = K * n_probes * T_in`` Poisson-subsampled
        Gaussian steps at rate ``batch_size / n``, noise multiplier relative
        to the per-sample bound ``max_weight * L``.  ``details`` holds the
        schedule: ``tol``, ``n_outer`` (K), ``inner_steps`` (T_in),
        ``batch_size``, ``sampling_probability``, ``n_probes``, ``schedule``.
    """
    private = not math.isinf(epsilon)
    _check_schedule_options(
        tol=tol,
        passes=passes,
        batch_size=batch_size,
        n_probes=n_probes,
        schedule=schedule,
        private=private,
    )
    if n_samples is None:
        return None  # the schedule needs the (not yet released) public row count
    if tol is None:
        tol = default_tolerance(n_samples, n_params, epsilon, delta)
    if batch_size is None:
        batch_size = max(1, min(DEFAULT_BATCH_SIZE, math.floor(n_samples)))
    batch_size = max(1, min(batch_size, math.floor(n_samples)))
    if passes is None:
        passes = DEFAULT_PASSES
    n_outer = outer_iterations(n_params, tol)
    # Two significant digits: n_samples is a noisy count, and a rounded rate
    # lets fits share one (cached) calibration.
    rate = min(1.0, float(f"{batch_size / n_samples:.2g}"))
    inner_steps = max(
        MIN_INNER_STEPS, math.floor(passes * n_samples / (batch_size * n_outer * n_probes))
    )
    details = dict(
        tol=float(tol),
        n_outer=n_outer,
        n_probes=int(n_probes),
        batch_size=int(batch_size),
        sampling_probability=rate,
        schedule=schedule,
    )
    if schedule == "theory":
        details["inner_steps"] = None
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, 0, details)
    details["inner_steps"] = inner_steps
    n_steps = n_outer * n_probes * inner_steps
    if not private:
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    sigma = accounting.subsampled_gaussian_noise_multiplier(epsilon, delta, rate, n_steps)
    event = accounting.subsampled_gaussian_steps_event(sigma, rate, n_steps)
    return PrivacyPlan(event, sigma, n_steps, details)


# --------------------------------------------------------------------------
# Public constants of a fit
# --------------------------------------------------------------------------


def _default_radius(data):
    return DEFAULT_RADIUS_SCALE / data.row_norm_bound


@dataclass(frozen=True)
class _Setting:
    """Everything public a fit runs with: its plan, the geometry and the noise.

    Computed from the public stand-in for the row count (``data.n_public``),
    the public bounds and the options, before the data is touched.
    """

    plan: PrivacyPlan
    schedule: str
    n_outer: int
    n_probes: int
    inner_steps: int | None
    batch: int
    rate: float
    radius: float
    constrained: bool
    rho: float
    r: float
    lipschitz: float
    lambda_min: float
    lambda_max: float
    sensitivity: float
    noise_std: float
    max_weight: float
    max_inner: int
    alpha_mask: np.ndarray | None


def _public_setting(
    data,
    loss,
    *,
    alpha,
    epsilon,
    delta,
    radius,
    tol,
    passes,
    batch_size,
    n_probes,
    max_weight,
    schedule,
    max_inner,
    plan,
):
    """The plan and the constants of :func:`resque` (see its docstring), from public inputs."""
    n_params = data.n_columns
    if plan is None:
        # The schedule comes from the public stand-in for the row count (a DP
        # count from the estimators): the true n is private under add/remove.
        plan = plan_resque(
            data.n_public,
            n_params,
            epsilon,
            delta,
            tol=tol,
            passes=passes,
            batch_size=batch_size,
            n_probes=n_probes,
            schedule=schedule,
        )
    details = plan.details
    n_outer = details["n_outer"]
    constrained = radius is not None
    R = float(radius) if constrained else _default_radius(data)
    lipschitz_data = float(loss.derivative_bound) * data.row_norm_bound
    # The public L2 penalty adds at most alpha * R to the Lipschitz constant on B_R.
    lipschitz = lipschitz_data + alpha * R
    rho = details["tol"] * R / math.sqrt(n_params)
    r = BALL_TO_SMOOTHING * rho
    lambda_max = 2.0 * lipschitz / r
    lambda_min = min(details["tol"] * lipschitz * n_outer**2 / R, lambda_max)
    sensitivity = max_weight * lipschitz_data
    noise_std = plan.noise_multiplier * sensitivity
    details.update(
        noise_std=noise_std,
        sensitivity=sensitivity,
        max_weight=float(max_weight),
        smoothing_radius=rho,
        ball_radius=r,
        radius=R,
        constrained=constrained,
        lipschitz=lipschitz,
        lambda_min=lambda_min,
        lambda_max=lambda_max,
    )
    return _Setting(
        plan=plan,
        schedule=schedule,
        n_outer=n_outer,
        n_probes=details["n_probes"],
        inner_steps=details["inner_steps"],
        batch=details["batch_size"],
        rate=details["sampling_probability"],
        radius=R,
        constrained=constrained,
        rho=rho,
        r=r,
        lipschitz=lipschitz,
        lambda_min=lambda_min,
        lambda_max=lambda_max,
        sensitivity=sensitivity,
        noise_std=noise_std,
        max_weight=float(max_weight),
        max_inner=DEFAULT_MAX_INNER if max_inner is None else int(max_inner),
        alpha_mask=alpha * data.penalized.astype(float) if alpha > 0 else None,
    )


# --------------------------------------------------------------------------
# One round of queries (the paper's parallel round)
# --------------------------------------------------------------------------


class _QueryRound:
    """The answers of one ball subproblem's queries, made at once.

    For GLMs a query of sample i at ``center + xi`` returns the scalar
    ``l'(<x_i, center + xi>, y_i)``; the subgradient is that scalar times
    ``x_i``.  The round stores the scalars, the perturbations and the rows
    (never per-query gradient vectors).  ``starts[t]:starts[t + 1]`` are the
    queries of inner step t.
    """

    def __init__(self, center, rows, starts, xi, features, derivative):
        self.center = center
        self.rows = rows
        self.starts = starts
        self.xi = xi
        self.features = features
        self.derivative = derivative


def _round_pieces(starts, round_index):
    """``(lo, hi, key)``: each step's queries in runs of at most ``QUERY_CHUNK``.

    ``key = (round, step, run)`` names the random stream of the run's
    perturbations.  Keyed by position in the step's (sorted) batch, not in
    the round: when a row is added at the end of the data and the batch holds
    every row (the coupling of a substituting trace), the other rows keep
    their perturbations (the streams are prefix-consistent), so one step's
    sum moves by the added row's term only.
    """
    pieces = []
    for step in range(len(starts) - 1):
        lo, hi = int(starts[step]), int(starts[step + 1])
        for run, first in enumerate(range(lo, hi, QUERY_CHUNK)):
            pieces.append((first, min(first + QUERY_CHUNK, hi), (round_index, step, run)))
    return pieces


def _round_tasks(pieces):
    """Consecutive pieces grouped into tasks of at least ``QUERY_CHUNK`` queries (but the last)."""
    tasks, current, size = [], [], 0
    for piece in pieces:
        current.append(piece)
        size += piece[1] - piece[0]
        if size >= QUERY_CHUNK:
            tasks.append(current)
            current, size = [], 0
    if current:
        tasks.append(current)
    return tasks


class _Perturbations:
    """Counter-based streams of standard normals for the perturbations ``xi`` (public randomness).

    Stream ``(round, step, run)`` is NumPy's Philox with the fit's key (from
    ``entropy``) and counter ``(0, run, step, round)``: distinct streams never
    overlap (a run uses far fewer than 2^64 blocks), any stream can be
    started in O(1), and a stream does not depend on which task or thread
    draws it.  Each task makes its own instance (not thread-safe).
    """

    def __init__(self, entropy):
        key = np.random.SeedSequence(entropy).generate_state(2, np.uint64)
        self._bits = np.random.Philox(key=key)
        self._normal = np.random.Generator(self._bits)
        self._fresh = self._bits.state  # a fresh generator: empty buffer, counter 0

    def fill(self, out, key):
        """Fill ``out`` (C-contiguous float64) with the first draws of stream ``key``."""
        round_index, step, run = key
        state = dict(self._fresh)
        state["state"] = dict(
            self._fresh["state"],
            counter=np.array([0, run, step, round_index], dtype=np.uint64),
        )
        # Same as Generator(Philox(key=..., counter=...)), without building one per step.
        self._bits.state = state
        self._normal.standard_normal(out=out)


def _evaluate_task(design, y, loss, center, rows, pieces, rho, entropy):
    """Perturbations, rows and clipped derivatives of consecutive pieces of a round.

    ``design`` is the zero-copy bounded design (:class:`sklearn_dp._design.Design`):
    only the task's rows are copied (dense float64, clipped, intercept column
    included; ``xi`` is dense anyway, so a dense copy of them costs no more).
    Only exact, noiseless quantities: no noise is added here (joblib workers
    run this).
    """
    lo, hi = pieces[0][0], pieces[-1][1]
    batch = rows[lo:hi]
    features = design.rows(batch).toarray()
    xi = np.empty((hi - lo, design.n_columns))
    perturbations = _Perturbations(entropy)
    for first, last, key in pieces:
        perturbations.fill(xi[first - lo : last - lo], key)
    xi *= rho
    return xi, features, resque_query_derivatives(features, y[batch], loss, center, xi)


def _query_round(design, y, loss, center, rows, starts, rho, entropy, round_index, parallel):
    """Evaluate every query of a ball subproblem (one parallel round).

    ``parallel`` is a running :class:`joblib.Parallel` (or None): its tasks
    return exact derivatives only; the noise is added later, in the caller.
    """
    tasks = _round_tasks(_round_pieces(starts, round_index))
    if parallel is None or len(tasks) <= 1:
        parts = [
            _evaluate_task(design, y, loss, center, rows, task, rho, entropy) for task in tasks
        ]
    else:
        parts = parallel(
            delayed(_evaluate_task)(design, y, loss, center, rows, task, rho, entropy)
            for task in tasks
        )
    if not parts:
        empty = np.zeros((0, design.n_columns))
        return _QueryRound(center, rows, starts, empty, empty, np.zeros(0))
    xi, features, derivative = (np.concatenate(part) for part in zip(*parts))
    return _QueryRound(center, rows, starts, xi, features, derivative)


# --------------------------------------------------------------------------
# Inner solver: EpochSGD on ReSQue gradients over one ball
# --------------------------------------------------------------------------


def _epoch_sgd(
    round_,
    *,
    lam,
    start,
    project,
    epochs,
    rho,
    max_weight,
    normalizer,
    release,
    alpha_mask,
):
    """EpochSGD (docs/solvers/resque.md) for ``F_rho(x) + lam / 2 ||x - c||^2`` over the ball.

    Step t uses the queries ``starts[t]:starts[t + 1]`` of the round: the
    gradient estimate is ``release(sum_i min(w_i(x), w_max) l'_i x_i) /
    normalizer`` plus the exact gradient of the public L2 penalty, where
    ``release`` is the step's noisy release (one call per step, empty
    batches included, so the number of releases is public).  Epoch k has
    step size ``1 / (4 lam 2^(k-1))`` and returns the average of its
    iterates; the next epoch starts with a regularisation-only step from it.
    """
    center = round_.center
    xi, features, derivative, starts = round_.xi, round_.features, round_.derivative, round_.starts
    scale = 1.0 / (2.0 * rho**2)
    max_log_weight = math.log(max_weight)
    eta = 1.0 / (4.0 * lam)
    x = start
    step = 0
    for length in epochs:
        shrink = 1.0 / (1.0 + eta * lam)
        pull = eta * lam * center
        x = project((x + pull) * shrink)
        total = np.zeros_like(x)
        for _ in range(length):
            lo, hi = starts[step], starts[step + 1]
            exact = capped_resque_sum(
                xi[lo:hi],
                derivative[lo:hi],
                features[lo:hi],
                x - center,
                scale,
                max_log_weight,
                max_weight,
            )
            gradient = release(exact) / normalizer
            if alpha_mask is not None:
                gradient = gradient + alpha_mask * x
            x = project((x - eta * gradient + pull) * shrink)
            total += x
            step += 1
        x = total / length
        eta *= 0.5
    return x


class _BallOracle:
    """``solve_ball(center, lam, start)`` of :func:`ball_acceleration` for one fit.

    Each call is one round: the Poisson batches of its steps (through the
    gateway), the queries (one batched evaluation, over joblib workers when
    ``parallel`` is given), then EpochSGD with one Gaussian release per step,
    drawn here in the calling thread.  Counts rounds, steps and releases.
    """

    def __init__(self, data, loss, setting, rng, parallel):
        # The zero-copy design: a round copies the rows it queries, never all of X.
        self.design, self.y, self.loss = data.design, data.y, loss
        self.setting = setting
        self.rng = rng
        self.parallel = parallel
        # Seeds the (public) perturbation streams: drawn before any data is read.
        self.entropy = int(rng.integers(2**63))
        self.rounds = 0
        self.steps = 0
        self.releases = 0

    def n_steps(self, lam):
        """Inner steps of a subproblem with proximal weight ``lam`` (public)."""
        s = self.setting
        if s.schedule == "budget":
            return s.inner_steps
        # The paper's T queries (capped), in steps of the public expected batch.
        n_queries = min(math.ceil(768.0 * s.lipschitz**2 / (lam**2 * s.r**2)), s.max_inner)
        return math.ceil(n_queries / s.batch)

    def sample(self, n_steps):
        """Concatenated Poisson batches of ``n_steps`` steps and where each starts."""
        # n_rows only indexes rows: the gateway samples them.
        batches = [
            _noise.poisson_sample(self.design.n_rows, self.setting.rate, self.rng)
            for _ in range(n_steps)
        ]
        sizes = [len(batch) for batch in batches]
        rows = np.concatenate(batches) if batches else np.zeros(0, dtype=np.intp)
        starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)
        return rows, starts

    def release(self, exact):
        """The Gaussian mechanism on one step's exact sum (sensitivity ``w_max L``)."""
        self.releases += 1
        s = self.setting
        return _noise.gaussian(
            exact,
            sensitivity=s.sensitivity,
            noise_std=s.noise_std,
            rng=self.rng,
            label=STEP_LABEL,
        )

    def __call__(self, center, lam, start):
        s = self.setting
        n_steps = self.n_steps(lam)
        rows, starts = self.sample(n_steps)
        round_ = _query_round(
            self.design,
            self.y,
            self.loss,
            center,
            rows,
            starts,
            s.rho,
            self.entropy,
            self.rounds,
            self.parallel,
        )
        self.rounds += 1
        self.steps += n_steps
        domain = _Domain(center, s.r, s.radius if s.constrained else None)
        return _epoch_sgd(
            round_,
            lam=lam,
            start=domain(start),
            project=domain,
            epochs=epoch_lengths(n_steps),
            rho=s.rho,
            max_weight=s.max_weight,
            # The public expected batch, never the realised batch size (it
            # would reveal the row count).
            normalizer=float(s.batch),
            release=self.release,
            alpha_mask=s.alpha_mask,
        )


# --------------------------------------------------------------------------
# Outer loop: Monteiro-Svaiter ball acceleration
# --------------------------------------------------------------------------


def ball_acceleration(
    solve_ball,
    x0,
    *,
    ball_radius,
    lambda_min,
    lambda_max,
    n_outer,
    n_probes=1,
    domain_radius=None,
    lambda_start=None,
    restart=RESTART,
    progress=None,
):
    """Monteiro-Svaiter acceleration with ball-constrained proximal steps (docs/solvers/resque.md).

    Parameters
    ----------
    solve_ball : callable
        ``solve_ball(y, lam, start) -> x``: an (approximate) minimiser of
        ``F(x) + lam / 2 ||x - y||^2`` over ``B_r(y)`` (intersected with
        ``B_R``), started from ``start``.
    x0 : ndarray of shape (d,)
    ball_radius : float
        r.
    lambda_min, lambda_max : float
        Range of the proximal weight (``lambda_*`` and ``2 L / r``).
    n_outer : int
        Number of outer iterations (fixed, public).
    n_probes : int
        Subproblems per iteration.  Every probe is solved (fixed count, so
        the cost and privacy are public); lambda moves by ``LAMBDA_FACTOR``
        (or bisects once bracketed) when the step ``||x - y||`` leaves
        ``STEP_WINDOW * r``, and the last probe is accepted.  The adjusted
        lambda warm-starts the next iteration.
    domain_radius : float, optional
        R: keep ``v`` (and, through ``solve_ball``, ``x``) in ``B_R``.
    lambda_start : float, optional
        First lambda; default ``sqrt(lambda_min * lambda_max)``.
    restart : bool
        Reset ``A = 0, v = x`` after an iteration whose step goes uphill
        along the new prox gradient (``<lam (y - x_new), x_new - x> > 0``).
    progress : callable, optional

    Returns
    -------
    x : ndarray
        The last iterate ``x_K``.
    trace : dict
        Per outer iteration: ``A``, accepted ``lambda`` and step length; and
        the number of ``restarts``.
    """
    x = np.array(x0, dtype=float)
    v = x.copy()
    A = 0.0
    lam = math.sqrt(lambda_min * lambda_max) if lambda_start is None else float(lambda_start)
    low, high = STEP_WINDOW[0] * ball_radius, STEP_WINDOW[1] * ball_radius
    trace = {"A": [], "lambda": [], "step": [], "restarts": 0}
    for k in range(n_outer):
        bracket = [lambda_min, lambda_max]
        start = None
        for _ in range(n_probes):
            a = (1.0 + math.sqrt(1.0 + 4.0 * lam * A)) / (2.0 * lam)
            y = (A * x + a * v) / (A + a)
            x_new = solve_ball(y, lam, y if start is None else start)
            step = float(np.linalg.norm(x_new - y))
            accepted = (lam, a, y, x_new, step)
            start = x_new
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
        lam_k, a, y, x_new, step = accepted
        # lam (y - x_new) approximates a (sub)gradient of F at the prox point.
        gradient = lam_k * (y - x_new)
        restarted = restart and A > 0 and gradient @ (x_new - x) > 0
        x = x_new
        if restarted:
            A, v = 0.0, x.copy()
        else:
            v = v - a * gradient
            if domain_radius is not None:
                v = _project_ball(v, np.zeros_like(v), domain_radius)
            A += a
        trace["restarts"] += int(restarted)
        trace["A"].append(A)
        trace["lambda"].append(lam_k)
        trace["step"].append(step)
        if progress is not None:
            progress(k + 1, step_over_r=step / ball_radius, lam=lam_k)
    return x, trace


# --------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------


def _workers(n_jobs):
    """joblib's public context manager for the query rounds (threads), or none for one job."""
    if n_jobs is None or n_jobs == 1:
        return nullcontext(None)
    return Parallel(n_jobs=n_jobs, prefer="threads")


def _check_release_count(oracle, setting):
    """The steps run are the steps accounted for (the budget schedule) and each was released once.

    Both sides are public: the loops of :func:`ball_acceleration` and
    :func:`_epoch_sgd` run a fixed number of times (``n_outer * n_probes``
    rounds of ``inner_steps`` steps, or theory-schedule steps sized from
    released values), so this fires on a bug only, never on data.
    """
    expected = setting.plan.n_steps if setting.schedule == "budget" else oracle.steps
    if oracle.releases != oracle.steps or oracle.steps != expected:
        raise public_error(
            AssertionError(
                f"resque ran {oracle.steps} noisy steps with {oracle.releases} releases but "
                f"accounted for {expected} (a bug)."
            )
        )


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
        the sensitivity ``max_weight * L``); ``inf`` (non-private only) gives
        the unbiased estimator.
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
        the plain Monteiro-Svaiter recursion of the spec.
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
        ``n_iter`` is the number of inner steps (noisy releases).  ``info``
        holds ``query_depth`` (rounds of queries: one per subproblem,
        ``K * n_probes``), ``n_queries`` (the nominal number of per-sample
        gradient evaluations, steps times the public expected batch size:
        the realised Poisson batch sizes would reveal the row count),
        ``n_outer``, ``inner_steps``, ``smoothing_radius``, ``ball_radius``,
        ``radius``, ``restarts`` and the accepted ``lambdas``,
        ``step_lengths`` and ``A`` per outer iteration.

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
    noisy sums.

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
    private = not math.isinf(epsilon)
    check_resque_arguments(
        loss_name=loss.name,
        multi_output=loss.multi_output,
        n_outputs=n_outputs,
        private=private,
        radius=radius,
        constraint=constraint,
        tol=tol,
        passes=passes,
        batch_size=batch_size,
        n_probes=n_probes,
        max_weight=max_weight,
        schedule=schedule,
        max_inner=max_inner,
        restart=restart,
        n_jobs=n_jobs,
    )
    setting = _public_setting(
        data,
        loss,
        alpha=alpha,
        epsilon=epsilon,
        delta=delta,
        radius=radius,
        tol=tol,
        passes=passes,
        batch_size=batch_size,
        n_probes=n_probes,
        max_weight=max_weight,
        schedule=schedule,
        max_inner=max_inner,
        plan=plan,
    )
    rng = make_rng(random_state)
    with _workers(n_jobs) as parallel:
        oracle = _BallOracle(data, loss, setting, rng, parallel)
        coef, trace = ball_acceleration(
            oracle,
            np.zeros(data.n_columns),
            ball_radius=setting.r,
            lambda_min=setting.lambda_min,
            lambda_max=setting.lambda_max,
            n_outer=setting.n_outer,
            n_probes=setting.n_probes,
            domain_radius=setting.radius if setting.constrained else None,
            restart=bool(restart),
            progress=Progress("resque", setting.n_outer, verbose),
        )
    check_finite_iterate(coef, "resque")
    _check_release_count(oracle, setting)
    info = dict(
        query_depth=oracle.rounds,
        n_queries=oracle.steps * setting.batch,
        n_outer=setting.n_outer,
        inner_steps=setting.inner_steps,
        smoothing_radius=setting.rho,
        ball_radius=setting.r,
        radius=setting.radius,
        lambdas=trace["lambda"],
        step_lengths=trace["step"],
        A=trace["A"],
        restarts=trace["restarts"],
    )
    return SolverResult(coef=coef[:, None], n_iter=oracle.steps, plan=setting.plan, info=info)
