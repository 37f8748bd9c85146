"""Noisy Frank-Wolfe over an l1 ball: ``frank_wolfe``, and what ``vr_frank_wolfe`` shares with it.

Both take Frank-Wolfe steps ``x <- (1 - eta) x + eta * vertex`` over the
polytope of :mod:`._l1_geometry` (an l1 ball, times an interval per
coordinate kept out of it), so every iterate is feasible and gains at most
one new non-zero coefficient per step.  The vertex is chosen privately with
the **exponential mechanism** of the noise gateway
(:func:`sklearn_dp._noise.exponential`), sampled exactly as report-noisy-max
with Gumbel noise: ``argmin_v <v, g> / lambda - Gumbel``.  Scores change by at most
``Delta = vertex_radius * C / N`` when a row is added or removed (``C``: the
l-infinity clip of each per-sample gradient, ``N``: the public normaliser), so
one selection with ``lambda = 2 Delta / eps0`` is ``eps0``-DP, and it is
``eps0``-bounded-range, hence ``eps0^2 / 8``-zCDP (Cesar and Rogers 2021).
dp_accounting has no exponential-mechanism event, so a selection is recorded
as ``PureEpsilonDpEvent(eps0)`` (composition: epsilons add) or, when
``delta > 0`` and it is tighter, as ``ZCDpEvent(eps0^2 / 8)`` (composed
numerically by dp_accounting's RDP accountant).

``frank_wolfe`` (Talwar, Thakurta and Zhang 2015) uses the full data at every
step.  Over an lp ball (``constraint="lp"``, which has no finite vertex set)
it releases the clipped gradient sum with Gaussian noise instead and steps
towards the exact minimiser of the noisy linear term over the ball.
``vr_frank_wolfe`` (:mod:`._vr_frank_wolfe`) is Algorithm 3 of Asi, Feldman,
Koren and Talwar (2021): a single pass, with variance-reduced (SPIDER-style)
gradient estimates on a binary tree per phase.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from .. import _noise, accounting
from .._clipped_sums import clipped_sum, frank_wolfe_gradient, sufficient_statistics, vertex_scores
from .._data import row_sum
from .._memo import memoize
from ..accounting import PureEpsilonDpEvent
from ._common import (
    PrivacyPlan,
    Progress,
    SolverResult,
    add_warnings,
    check_finite_iterate,
    make_rng,
)
from ._gradient_descent import gradient_bound
from ._l1_geometry import (
    check_l1_options,
    check_strongly_convex,
    checked_domain,
    linf_gradient_bound,
    public_setup,
)
from ._mirror_descent import _noise_q_norm_sq
from ._noise_warnings import frank_wolfe_warning
from ._noisy_steps import gaussian_plan, plan_of_call, release, release_symmetric
from ._objective_accounting import bisect
from ._pnorm import pnorm
from ._ssp import repair_gram, solve_statistics

#: Frank-Wolfe steps without noise (epsilon=inf) unless max_iter says otherwise.
DEFAULT_NONPRIVATE_ITERATIONS = 1000
#: Upper end of the search for the number of private steps.
MAX_DEFAULT_ITERATIONS = 2000

_EM_NAME = "exponential mechanism (Gumbel report-noisy-max) over the vertices of an l1 polytope"


# --------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------


@memoize(maxsize=256)
def zcdp_budget(epsilon, delta):
    """Largest rho such that rho-zCDP is (epsilon, delta)-DP by dp_accounting's RDP conversion."""
    epsilon, delta = float(epsilon), float(delta)

    def eps_of(rho):
        return accounting.epsilon_of_event(accounting.dpe.ZCDpEvent(rho), delta)

    lo, hi = 0.0, max(epsilon, 1.0)
    while eps_of(hi) <= epsilon:
        lo, hi = hi, 2.0 * hi
    return bisect(lambda rho: eps_of(rho) <= epsilon, lo, hi, 1e-10, max_halvings=100)


@memoize(maxsize=1024)
def frank_wolfe_step_epsilon(epsilon, delta, n_steps):
    """(eps0, event) for ``n_steps`` exponential mechanisms meeting (epsilon, delta).

    Pure composition gives ``eps0 = epsilon / T``; with ``delta > 0`` the zCDP
    composition (``T eps0^2 / 8``, converted by the RDP accountant) gives
    ``eps0 = sqrt(8 rho / T)``.  The larger eps0 (less noise) is used, and the
    event records the accounting that certified it.
    """
    n_steps = int(n_steps)
    # A hair below epsilon / T so that T * eps0 cannot round above epsilon.
    best = epsilon / n_steps * (1.0 - 1e-12)
    step = PureEpsilonDpEvent(best, _EM_NAME)
    if delta > 0:
        eps_zcdp = math.sqrt(8.0 * zcdp_budget(epsilon, delta) / n_steps)
        if eps_zcdp > best:
            best, step = eps_zcdp, accounting.dpe.ZCDpEvent(eps_zcdp**2 / 8.0)
    return best, step if n_steps == 1 else accounting.dpe.SelfComposedDpEvent(step, n_steps)


# --------------------------------------------------------------------------
# Private linear minimisation over the polytope
# --------------------------------------------------------------------------


def select_vertex(gradient, domain, scales, rng, *, unit, label="vertex"):
    """Vertex of the polytope minimising ``<vertex, gradient>`` (plus its penalty), privately.

    The polytope is a product: the l1 ball, and an interval per box
    coordinate.  The ball part's candidates are ``+-radius e_j`` (scores
    ``+-radius gradient_j``, plus ``l1_penalty_j * radius`` for the epigraph
    height of a penalised coordinate) and, with an L1 penalty, the origin
    (score 0); each box coordinate chooses ``+-box_j``
    (:func:`sklearn_dp._clipped_sums.vertex_scores`).  Each part is one release
    of the noise gateway's exponential mechanism
    (:func:`sklearn_dp._noise.exponential`, utilities ``-score``,
    ``P(v) ~ exp(-score(v) / scale)``) with its own scale (``scales =
    (ball_scale, box_scales)``, see :func:`vertex_scales`); a zero scale is
    the exact argmin.

    Parameters
    ----------
    gradient : ndarray of shape (n_columns,)
        The gradient estimate (exact: private).
    domain : L1Domain
    scales : tuple
        ``(ball_scale, box_scales)``.
    rng : numpy.random.Generator
    unit : float
        Public bound on the l-infinity change of ``gradient`` when one row is
        added or removed: the ball scores then move by at most ``radius *
        unit`` and box coordinate j's by ``box_j * unit``, the sensitivities
        each release declares.
    label : str
        Prefix of the releases' labels.

    Returns
    -------
    vertex : ndarray of shape (n_columns,)
        The chosen vertex.  Its epigraph coordinate (the penalty at the
        vertex) enters the scores only: a step does not need it.
    """
    ball_scale, box_scales = scales
    ball_index = np.flatnonzero(domain.ball)
    radius = domain.radius
    scores, box_scores = vertex_scores(gradient, domain)
    choice = _noise.exponential(
        -scores, sensitivity=radius * unit, scale=ball_scale, rng=rng, label=f"{label} (l1 ball)"
    )
    vertex = np.zeros_like(gradient)
    k = ball_index.size
    if choice < 2 * k:  # else the origin (with an L1 penalty)
        vertex[ball_index[choice % k]] = radius if choice < k else -radius
    for j, box_scale, scores_j in zip(np.flatnonzero(~domain.ball), box_scales, box_scores):
        box = domain.box[j]
        side = _noise.exponential(
            -scores_j, sensitivity=box * unit, scale=box_scale, rng=rng, label=f"{label} (box {j})"
        )
        vertex[j] = box if side == 0 else -box
    return vertex


def vertex_scales(domain, unit, eps0):
    """Gumbel scales of the parts of :func:`select_vertex` for an ``eps0``-DP selection.

    ``unit`` bounds the change of the gradient estimate in l-infinity when one
    row is added or removed (``C / N``).  The ball part's scores then move by at
    most ``Delta_0 = radius * unit`` and box coordinate k's by ``Delta_k = box_k *
    unit``; part i drawn with scale ``2 Delta_i / eps_i`` is ``eps_i``-DP (and
    ``eps_i``-bounded-range), so the product is ``sum_i eps_i``-DP and
    ``sum_i eps_i^2 / 8 <= eps0^2 / 8``-zCDP whenever ``sum_i eps_i = eps0``.  The
    split ``eps_i ~ sqrt(Delta_i ln m_i)`` (m_i candidates) minimises the
    expected excess score ``sum_i scale_i ln m_i``; it is public.  For the
    intercept of ``DPLasso`` (two candidates, a large box) this is about half
    the noise of one mechanism over the whole product.
    """
    box_index = np.flatnonzero(~domain.ball)
    if math.isinf(eps0) or unit == 0:
        return 0.0, np.zeros(box_index.size)
    n_candidates = 2 * int(domain.ball.sum()) + int(domain.has_l1_penalty)
    deltas = np.concatenate([[domain.radius * unit], domain.box[box_index] * unit])
    logs = np.concatenate(
        [[math.log(max(n_candidates, 2))], np.full(box_index.size, math.log(2.0))]
    )
    weights = np.sqrt(deltas * logs)
    shares = eps0 * weights / weights.sum()
    scales = 2.0 * deltas / shares
    return float(scales[0]), scales[1:]


class FrankWolfeSteps:
    """The steps of a Frank-Wolfe run towards private vertices, and its result.

    Step k moves the iterate to ``(1 - eta) w + eta vertex`` with ``eta = 2 /
    (k + 1)`` and the vertex of :func:`select_vertex`; the run keeps the
    running average of the iterates ``k > K / 2`` of its ``K`` steps (the
    ``output="tail_average"``).  ``args`` is a namespace of the solver's
    arguments.
    """

    def __init__(self, solver, args, domain, plan):
        self.solver, self.args, self.plan = solver, args, plan
        self.rng = make_rng(args.random_state)
        self.progress = Progress(solver, plan.n_steps, args.verbose)
        self.count = 0  # steps of every run so far: the progress lines and release labels
        self.restart(domain, plan.n_steps)

    def restart(self, domain, n_steps, centre=None):
        """Start a run of ``n_steps`` steps over ``domain`` (shifted to ``centre``)."""
        self.domain, self.centre, self.k = domain, centre, 0
        self.tail_start, self.tail_total, self.tail_count = n_steps // 2 + 1, None, 0

    def step(self, w, gradient, scales, unit):
        """One step from ``w`` along ``gradient`` (exact: private) with :func:`select_vertex`."""
        self.k += 1
        self.count += 1
        # The vertex's epigraph height is not needed: the penalty is in its score.
        label = f"{self.solver} vertex {self.count}"
        if self.args.constraint == "lp":  # the gradient is a release: exact minimisation
            vertex = lp_ball_vertex(gradient, self.args.p, self.domain.radius)
        else:
            vertex = select_vertex(gradient, self.domain, scales, self.rng, unit=unit, label=label)
        if self.centre is not None:
            # The scores of centre + vertex differ from the vertex's by <centre, gradient>,
            # the same for every candidate: the exponential mechanism is unchanged.
            vertex = vertex + self.centre
        eta = 2.0 / (self.k + 1.0)
        w = (1.0 - eta) * w + eta * vertex
        if self.k >= self.tail_start:
            self.tail_total = w.copy() if self.tail_total is None else self.tail_total + w
            self.tail_count += 1
        # Released quantities only: the iterate is a function of the chosen vertices.
        l1_norm = float(np.abs(w).sum())
        self.progress(self.count, eta=eta, nonzeros=np.count_nonzero(w), l1_norm=l1_norm)
        return w

    def output(self, w):
        """The run's output: the tail average of its iterates or its last iterate ``w``."""
        check_finite_iterate(w, self.solver)
        return self.tail_total / self.tail_count if self.args.output == "tail_average" else w

    def result(self, w, info, **details):
        """The :class:`SolverResult` of the output ``w`` (:meth:`output`), with its honest warnings.

        ``details`` go into the plan's details.  The warnings: the public
        error bound (:func:`~sklearn_dp.solvers._noise_warnings.frank_wolfe_warning`:
        released row count ``data.n_public``, d, epsilon, delta, radius) and
        the loose-ball check (:func:`penalty_ball_warning`: alpha and radius in
        the fit's units).
        """
        a, name, plan = self.args, self.solver, self.plan
        if plan.details.get("refit_multiplier") is not None:
            w = refit_support(a, w, self.domain, plan, self.rng)
        plan.details.update(details)
        # One output: d = n_columns.  The warning's bound is the exponential mechanism's.
        public = (a.data.n_public, a.data.n_columns, a.epsilon, a.delta, a.radius)
        bound = frank_wolfe_warning(name, a.loss.name, *public) if a.constraint == "l1" else None
        add_warnings(info, bound, penalty_ball_warning(name, a.alpha, a.l1_ratio, a.radius))
        return SolverResult(coef=w[:, None], n_iter=plan.n_steps, plan=plan, info=info)


def frank_wolfe_setup(solver, args):
    """The polytope, plan and clip of a Frank-Wolfe fit (l-infinity; L2 over an lp ball), publicly.

    Checks the options of a direct call (``args``: a namespace of the
    solver's arguments), and plans it as the estimators would unless
    ``args.plan`` is the plan to run.
    """
    domain = checked_domain(solver, args)
    plan = plan_of_call(solver, vars(args))
    private = not math.isinf(args.epsilon)
    if args.constraint == "lp":  # Gaussian noise: the clip is in L2
        clip = gradient_bound(args.loss, args.data.row_norm_bound, args.clip_norm, private)
    else:
        clip = linf_gradient_bound(args.loss, args.data, args.clip_norm, private, solver)
    return domain, plan, clip


def lp_ball_vertex(gradient, p, radius):
    """``argmin_{||v||_p <= radius} <v, gradient>``: ``-radius sign(g) |g|^(q-1) / ||g||_q^(q-1)``."""
    q = p / (p - 1.0)
    norm = max(pnorm(gradient, q), np.finfo(float).tiny)  # a zero gradient gives the centre
    return -radius * np.sign(gradient) * (np.abs(gradient) / norm) ** (q - 1.0)


def check_frank_wolfe(
    *, loss_name=None, n_outputs, penalty=None, alpha=None, l1_ratio=None, public, options
):
    """Refuse ``frank_wolfe`` options from public inputs only (``SolverSpec.check``).

    Called by the estimators before they reserve the spend (a direct call of
    :func:`frank_wolfe` checks its options through its plan and its domain).
    """
    check_l1_options("frank_wolfe", n_outputs=n_outputs, options=options)
    _check_refit(options.get("refit"), public.delta, loss_name)
    if public.delta > 0:
        # With delta = 0 no other solver fits the penalised Lasso (dp_cd and
        # dp_ssp add Gaussian noise): frank_wolfe stays, and warns when its
        # public error bound is large (see _noise_warnings.frank_wolfe_warning).
        check_penalty_ball("frank_wolfe", penalty, alpha, l1_ratio, options.get("radius"))


def check_vr_frank_wolfe(*, n_outputs, penalty, alpha, l1_ratio, public, options, **_):
    """Refuse ``vr_frank_wolfe`` options from public inputs only (``SolverSpec.check``).

    The loss (``loss_name``) does not enter its checks.  ``strongly_convex=True``
    needs a public L2 penalty on every coefficient, no intercept and no L1 part.
    """
    check_l1_options("vr_frank_wolfe", n_outputs=n_outputs, options=options)
    check_penalty_ball("vr_frank_wolfe", penalty, alpha, l1_ratio, options.get("radius"))
    check_strongly_convex("vr_frank_wolfe", penalty, alpha, l1_ratio, public, options, False)


def _ball_is_loose(alpha, l1_ratio, radius):
    """Whether the l1 ball of ``radius`` is at least the penalty's own ball ``1 / (2 l1_strength)``.

    ``l1_strength`` is ``alpha * l1_ratio`` (``alpha`` when ``l1_ratio`` is None).
    """
    l1_strength = float(alpha) * (1.0 if l1_ratio is None else float(l1_ratio))
    return l1_strength > 0 and float(radius) * l1_strength >= 0.5 * (1 - 1e-9)


def check_penalty_ball(name, penalty, alpha, l1_ratio, radius):
    """Refuse a Frank-Wolfe solver on an l1 ball at least as loose as the penalty's own ball.

    With an l1 penalty of strength ``a`` on labels scaled to ``[-1, 1]``, the
    ball that provably holds the penalised solution has radius ``1 / (2 a)``
    (``DPLasso`` uses it when only ``alpha`` is given).  For the usual
    penalties it is tens to thousands of times the label scale, and the
    Frank-Wolfe steps over its vertices (each a single coefficient at that
    radius) do not come near the solution: ``vr_frank_wolfe`` even without
    noise (diabetes with ``alpha=1``: R^2 -690 at epsilon = inf,
    -6000 at epsilon = 1), ``frank_wolfe`` not without noise on the 30k-row
    sparse regression (``alpha=0.01``: R^2 -0.05 at epsilon = inf) and far
    below R^2 0 with it on diabetes (``alpha=1``: -107 / -9.5 / -2.0 at
    epsilon 0.1 / 0.5 / 1).  No default fixes that, so the configuration is
    refused before any spend (``frank_wolfe`` only when ``delta > 0``, where
    ``dp_cd`` and ``dp_ssp`` fit the penalised form; with ``delta = 0`` it is
    the only solver that does).  Public values only (penalty, alpha, l1_ratio
    and the radius in the solver's units).
    """
    if penalty not in ("l1", "elasticnet") or alpha is None or radius is None:
        return
    if _ball_is_loose(alpha, None if penalty == "l1" else l1_ratio, radius):
        raise ValueError(
            f"{name} does not fit the penalised Lasso over the ball its penalty implies "
            f"(radius {float(radius):.3g}, at least 1 / (2 alpha)): its steps over that "
            "ball's vertices stay far from the solution (below the mean-label predictor). Use "
            "solver='dp_cd' or 'dp_ssp' (or 'auto') for the penalised form, or pass a "
            f"radius (the constrained form) to use {name}."
        )


def penalty_ball_warning(name, alpha, l1_ratio, radius):
    """In-fit counterpart of :func:`check_penalty_ball`: a warning text, or None.

    Estimators whose label scale is released (``y_bound="auto"``) cannot
    tell before the data whether a given ``radius`` is as loose as the
    penalty's own ball (both scale with the labels), so they skip the refusal
    and the solver warns instead, from ``alpha`` and ``radius`` in the fit's
    units (public: the user's values over the released scale).
    """
    if alpha is None or radius is None or not math.isfinite(float(radius)):
        return None
    if not _ball_is_loose(alpha, l1_ratio, radius):
        return None
    return (
        f"{name}: the l1 ball (radius {float(radius):.3g} in the fit's label units) is at "
        "least as loose as the ball the penalty implies (1 / (2 alpha)); Frank-Wolfe steps "
        "over its vertices stay far from the solution (likely below the mean-label predictor). "
        "Use solver='dp_cd' or 'dp_ssp' for the penalised form, or a smaller radius."
    )


# --------------------------------------------------------------------------
# frank_wolfe
# --------------------------------------------------------------------------


#: Fewest default private steps: a Frank-Wolfe iterate after T steps is an average
#: of T vertices (each a single coefficient at +-radius), and measured fits
#: need a few tens of them before the noise matters: on diabetes (d = 10 and an
#: intercept interval, n = 353; benchmarks/bench_lasso.py's settings, 25 splits)
#: 32 steps fit within 0.04 R^2 of 40 at epsilon 0.5 to 32, 25 steps lose
#: 0.03 to 0.04 at epsilon 4 to 16, and 20 lose 0.1 at epsilon 5.
MIN_DEFAULT_ITERATIONS = 32


#: The worst-case Frank-Wolfe bound 2 beta D^2 / (T + 2) overstates the
#: optimisation error of measured sparse regressions about tenfold (their
#: non-private fits are near-optimal after ~40 steps); the public constant
#: below damps it in the **error bound** (the default radius and the honest
#: warning are calibrated against this bound at its own minimising T, in
#: [40, 2000]).
OPTIMISATION_WEIGHT = 0.1
#: Fewest steps of the error bound's own schedule (see OPTIMISATION_WEIGHT).
BOUND_MIN_ITERATIONS = 40

#: The **step count** damps the curvature term further: every step spends a
#: share of the budget, and where the selection noise dominates (d in the
#: thousands) the bound's T is about twice what measured fits want.  At n =
#: 5000, d = 2000, a 5-sparse truth and epsilon 1 (benchmarks/bench_regimes.py)
#: the bound's T = 63 gave R^2 0.57, this weight's 39 steps 0.71 (median of 5
#: seeds; single fits at 20 to 30 steps reach 0.71 to 0.83).  A weight of 0.03
#: (27 steps there, R^2 0.74) cost diabetes 0.03 to 0.04 R^2 at epsilon 4 to 16.
STEP_CURVATURE_WEIGHT = 0.05


def _fw_error_bound(n_samples, n_params, epsilon, delta, radius, weight, n_steps):
    """Public proxy of the excess risk of T noisy FW steps (unit feature bound and clip).

    ``weight * 2 beta D^2 / (T + 2)`` (deterministic FW, ``beta = 1``, ``D = 2
    radius``; ``weight``: :data:`OPTIMISATION_WEIGHT` or
    :data:`STEP_CURVATURE_WEIGHT`) plus the expected excess score of one
    exponential mechanism over ``m = 2 d`` vertices, ``scale * ln(m)`` with
    ``scale = 2 radius C / (n eps0)``, ``C = 1`` (a residual clipped at the
    label bound) and ``eps0`` the per-step epsilon of
    :func:`frank_wolfe_step_epsilon`.  ``n_steps``: an array of step counts.
    """
    optimisation = weight * 8.0 * radius**2 / (n_steps + 2.0)
    if math.isinf(epsilon):
        return optimisation
    rho = zcdp_budget(float(epsilon), float(delta)) if delta > 0 else 0.0
    eps0 = np.maximum(epsilon / n_steps * (1.0 - 1e-12), np.sqrt(8.0 * rho / n_steps))
    return optimisation + 2.0 * radius / (n_samples * eps0) * math.log(2 * max(n_params, 1))


@memoize(maxsize=1024)
def _minimising_iterations(n_samples, n_params, epsilon, delta, radius, weight, fewest):
    """The first T in ``[fewest, 2000]`` minimising :func:`_fw_error_bound` with ``weight``."""
    t = np.arange(fewest, MAX_DEFAULT_ITERATIONS + 1, dtype=float)
    bounds = _fw_error_bound(n_samples, n_params, epsilon, delta, radius, weight, t)
    return fewest + int(np.argmin(bounds))


@memoize(maxsize=1024)
def default_frank_wolfe_iterations(n_samples, n_params, epsilon, delta, radius=1.0):
    """Default number of private steps: in [32, 2000] (1000 without noise).

    The T minimising :func:`_fw_error_bound` with the curvature weighted by
    :data:`STEP_CURVATURE_WEIGHT`, at least :data:`MIN_DEFAULT_ITERATIONS`.
    Public inputs only.
    """
    if math.isinf(epsilon):
        return DEFAULT_NONPRIVATE_ITERATIONS
    return _minimising_iterations(
        n_samples, n_params, epsilon, delta, radius, STEP_CURVATURE_WEIGHT, MIN_DEFAULT_ITERATIONS
    )


def default_lp_iterations(n_samples, n_params, epsilon, delta, call):
    """Default number of noisy-gradient steps over an lp ball: in [1, 2000] (1000 without noise).

    The T minimising the public bound ``w 2 beta D^2 / (T + 2) + D E||xi||_q``
    of Frank-Wolfe with an inexact linear minimisation, the curvature damped
    by the l1 ball's ``w =`` :data:`STEP_CURVATURE_WEIGHT` (the worst case
    overstates it: over the unit l1.5 ball at n = 10^4, d = 20, 10 to 30
    steps fit better than the undamped bound's 301 / 802 at epsilon 1 / 5,
    benchmarks/results/regimes_lp.md) (``D = 2 radius``, the
    lp diameter; ``beta = l'' ||A||_q^2 + alpha_2``, the smoothness in
    ||.||_p from the public feature bounds A; ``xi``, the noise of one
    normalised step, ``N(0, (sqrt(T) sigma_1 C / n)^2 I)`` with ``sigma_1``
    the multiplier of one Gaussian step meeting (epsilon, delta): a step's
    minimiser over the ball is off by at most ``D ||xi||_q``).  Public inputs only.
    """
    if math.isinf(epsilon):
        return DEFAULT_NONPRIVATE_ITERATIONS
    loss, q, diameter = call.loss, call.p / (call.p - 1.0), 2.0 * call.radius
    clip = gradient_bound(loss, call.row_norm_bound, call.clip_norm)
    # The penalty has no L1 part (refused over an lp ball): alpha is its L2 strength.
    smoothness = loss.smoothness * pnorm(call.feature_bound, q) ** 2 + (call.alpha or 0.0)
    sigma = accounting.gaussian_noise_multiplier(epsilon, delta, 1) * clip / n_samples
    t = np.arange(1.0, MAX_DEFAULT_ITERATIONS + 1)
    noise = diameter * np.sqrt(t * _noise_q_norm_sq(sigma, n_params, q))
    curvature = STEP_CURVATURE_WEIGHT * 2.0 * smoothness * diameter**2 / (t + 2.0)
    return 1 + int(np.argmin(curvature + noise))


def fw_public_error_bound(n_samples, n_params, epsilon, delta, radius):
    """:func:`_fw_error_bound` at its own minimising T in [40, 2000] (public inputs).

    The T is the first minimiser with :data:`OPTIMISATION_WEIGHT` (not the
    default step count, whose curvature weight is smaller): the default radius
    (:func:`sklearn_dp.linear_model.default_l1_radius`) and the honest warning
    (:func:`~sklearn_dp.solvers._noise_warnings.frank_wolfe_warning`) compare
    this bound with thresholds measured against it.
    """
    public = (float(n_samples), int(n_params), float(epsilon), float(delta), float(radius))
    t = DEFAULT_NONPRIVATE_ITERATIONS
    if not math.isinf(epsilon):
        t = _minimising_iterations(*public, OPTIMISATION_WEIGHT, BOUND_MIN_ITERATIONS)
    return float(_fw_error_bound(*public, OPTIMISATION_WEIGHT, np.array([float(t)]))[0])


@public_setup()  # a plan reads public inputs (and the released row count) only
def plan_frank_wolfe(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``frank_wolfe``: ``max_iter`` exponential mechanisms on the full data.

    ``noise_multiplier`` is the Gumbel scale relative to the score
    sensitivity, ``2 / eps0``.  The default T (without ``call.max_iter``)
    depends on public inputs only (n, d, epsilon, delta and the radius).
    """
    lp, max_iter = call.constraint == "lp", call.max_iter
    if lp and not delta > 0 and not math.isinf(epsilon):
        raise ValueError("frank_wolfe over an lp ball adds Gaussian noise: it needs delta > 0.")
    if lp and (call.alpha or 0.0) * (call.l1_ratio or 0.0) > 0:
        raise ValueError("frank_wolfe over an lp ball takes an L2 penalty or none, no L1 part.")
    if max_iter is None:
        if n_samples is None:
            return None  # the default T needs the (not yet released) public row count
        public = (n_samples, n_params, float(epsilon), float(delta))
        if lp:
            max_iter = default_lp_iterations(*public, call)
        else:
            max_iter = default_frank_wolfe_iterations(*public, float(call.radius or 1.0))
    max_iter = int(max_iter)
    if lp:
        return gaussian_plan(float(epsilon), float(delta), max_iter, dict(accounting="gaussian"))
    if math.isinf(epsilon):
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, max_iter)
    if call.refit:
        _check_refit(call.refit, delta, getattr(call.loss, "name", None))
        return _refit_plan(float(epsilon), float(delta), max_iter, float(call.refit))
    eps0, event = frank_wolfe_step_epsilon(float(epsilon), float(delta), max_iter)
    accounting_name = "pure" if accounting.is_pure_event(event) else "zcdp"
    details = dict(step_epsilon=eps0, accounting=accounting_name)
    return PrivacyPlan(event, 2.0 / eps0, max_iter, details)


#: A refit keeps the coordinates whose weight in the released iterate is at
#: least this fraction of the largest: at n = 5000, d = 2000, a 5-sparse truth
#: and epsilon 1 (benchmarks/bench_regimes.py) the default fit's iterate has
#: 15 to 19 non-zero coefficients, the true 5 above 0.6 of the largest and
#: the rest mostly below 0.3; a Gram release on every non-zero coordinate is
#: noisier (its sensitivity grows with the support) and fits worse.
REFIT_THRESHOLD = 0.3


def _refit_plan(epsilon, delta, n_steps, share):
    """The plan of T selections and the refit's two Gaussian releases, ``share`` of the zCDP budget.

    With ``rho`` the zCDP budget of (epsilon, delta) (:func:`zcdp_budget`),
    the selections get ``(1 - share) rho`` (``eps0 = sqrt(8 (1 - share) rho /
    T)``) and the Gram matrix and ``X_S^T y`` of the refit ``share * rho / 2``
    each: a Gaussian of multiplier ``1 / sqrt(share * rho)`` is ``share * rho /
    2``-zCDP.  The composition is ``rho``-zCDP, which dp_accounting's RDP
    accountant converts to at most (epsilon, delta).
    """
    rho = zcdp_budget(epsilon, delta)
    eps0 = math.sqrt(8.0 * (1.0 - share) * rho / n_steps)
    steps = accounting.dpe.SelfComposedDpEvent(accounting.dpe.ZCDpEvent(eps0**2 / 8.0), n_steps)
    multiplier = 1.0 / math.sqrt(share * rho)
    gaussian = accounting.dpe.GaussianDpEvent(multiplier)
    event = accounting.dpe.ComposedDpEvent([steps, gaussian, gaussian])
    details = dict(step_epsilon=eps0, accounting="zcdp", refit_multiplier=multiplier)
    return PrivacyPlan(event, 2.0 / eps0, n_steps, details)


def _check_refit(refit, delta, loss_name=None):
    if refit and delta <= 0:
        raise ValueError(
            "frank_wolfe's refit releases Gaussian statistics and needs delta > 0; "
            "use refit=0 for pure epsilon-DP."
        )
    if refit and loss_name not in (None, "squared"):
        # The refit is least squares on the support: with another loss it
        # would silently change the model, not debias it.
        raise ValueError(
            f"frank_wolfe's refit is a least-squares refit and needs loss='squared', got "
            f"{loss_name!r}; use refit=0 with this loss."
        )


def refit_support(args, w, domain, plan, rng):
    """Least squares on the support of the released iterate ``w``, from released statistics.

    The relaxed Lasso: the support ``S`` (the ball coordinates of weight at
    least :data:`REFIT_THRESHOLD` times the largest, and the coordinates out
    of the ball) is a function of the released vertices.  The gateway
    releases ``X_S^T X_S`` (:func:`~sklearn_dp.solvers._noisy_steps.release_symmetric`)
    and ``X_S^T y`` (labels clipped to ``[-1, 1]``), dp_ssp's
    :func:`~sklearn_dp._clipped_sums.sufficient_statistics` of the columns
    ``S`` (block by block of rows, no copy of ``X_S``), with the plan's
    multiplier; rows restricted to ``S`` have L2 norm at most ``R_S =
    sqrt(sum_{j in S} feature_bound_j^2)``, so the sensitivities are ``R_S^2``
    and ``R_S``.  Then, as post-processing, the PSD repair and the penalised
    least squares over the fit's polytope
    (:func:`~sklearn_dp.solvers._ssp.solve_statistics`).
    """
    weight = np.where(domain.ball, np.abs(w), 0.0)
    support = np.flatnonzero((weight > 0) & (weight >= REFIT_THRESHOLD * weight.max()))
    support = np.union1d(support, np.flatnonzero(~domain.ball))
    if support.size == 0:
        return w  # nothing to refit (a public decision: the iterate is released)
    bound_sq = float(np.sum(args.data.feature_bound[support] ** 2))
    gram, xty = row_sum(
        args.data,
        lambda part: sufficient_statistics(part.design.column_view(support), part.y, 1.0),
    )
    multiplier = plan.details["refit_multiplier"]
    gram = release_symmetric(gram, bound_sq, multiplier * bound_sq, rng, "refit gram matrix")
    root = math.sqrt(bound_sq)
    xty = release(xty, root, multiplier * root, rng, "refit X^T y")
    # No ridge: the l1 ball already bounds the solution, and a ridge of the
    # Gram noise's expected spectral norm (dp_ssp's) shrank the sparse
    # regime's refit (R^2 0.77 against 0.84 without; n = 5000, d = 2000).
    coef, _ = solve_statistics(
        repair_gram(gram),
        xty,
        normalizer=float(args.data.normalizer),
        alpha=args.alpha or 0.0,
        l1_ratio=args.l1_ratio or 0.0,
        penalized=args.data.penalized[support],
        constraint="l1",
        radius=domain.radius,
        intercept_bound=args.intercept_bound,
    )
    plan.details["refit_support"] = support.size
    refitted = np.zeros_like(w)
    refitted[support] = coef
    return refitted


def frank_wolfe(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    clip_norm=None,
    radius=None,
    constraint="l1",
    p=None,
    l1_ratio=0.0,
    intercept_bound=None,
    output="tail_average",
    refit=0.0,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Noisy Frank-Wolfe over an l1 ball (Talwar, Thakurta and Zhang 2015), or an lp ball.

    Minimises ``mean_i l(x_i @ w, y_i) + alpha * (l1_ratio ||w||_1 + (1 - l1_ratio)
    / 2 ||w||^2)`` (penalty on the penalised coordinates) over the polytope
    ``||w_ball||_1 <= radius`` (times ``|w_j| <= intercept_bound`` for the
    unpenalised intercept when ``intercept_bound`` is given).  Each step
    computes the full-batch clipped gradient, picks a vertex with the
    exponential mechanism and moves towards it with step ``2 / (t + 2)``.

    Parameters
    ----------
    data : BoundedData
        Rows bounded entrywise (``geometry="linf"``).
    loss : GLMLoss
        A smooth loss (convergence needs smoothness; privacy does not).
    n_outputs : int
        Must be 1.
    alpha : float
        Penalty strength.  An L1 part is handled exactly with the epigraph
        lift ``{(w, t) : ||w||_1 <= t <= radius}`` (vertices ``(+-radius e_j,
        radius)`` and the origin), so the objective stays smooth and the
        penalty costs no privacy; an L2 part enters the gradient exactly.
    epsilon, delta : float
        Target guarantee; ``delta=0`` gives pure epsilon-DP.  ``epsilon=inf``
        runs the same steps with an exact linear minimisation.
    max_iter : int, optional
        Number of steps T; by default the T in [32, 2000] that minimises a
        public bound (a damped deterministic FW error ``0.4 radius^2 / (T +
        2)`` plus the selection noise, for unit feature bound and clip; see
        :func:`default_frank_wolfe_iterations`); 1000 when ``epsilon=inf``.
    clip_norm : float, optional
        l-infinity clip ``C`` of each per-sample gradient; default half the
        loss's own bound ``derivative_bound * max(feature_bound)`` when private.
    radius : float
        Radius of the l1 ball (required), or of the lp ball.
    constraint : {"l1", "lp"}, default="l1"
        ``"lp"``: minimise over ``||w||_p <= radius`` (every coordinate, the
        intercept too).  Asi et al. (2021) give no private Frank-Wolfe over
        an lp ball (their vertex selection needs a polytope's finitely many
        vertices), so each step instead releases the full-data gradient sum,
        per-sample gradients clipped to L2 norm ``C`` (default half the
        loss's bound ``derivative_bound * ||feature_bound||_2``), with
        Gaussian noise, and moves towards the exact minimiser of the noisy
        linear term over the ball, ``-radius sign(g) |g|^(q-1) /
        ||g||_q^(q-1)`` (:func:`lp_ball_vertex`).  Needs ``delta > 0`` and
        ``p``; refuses an L1 penalty part, ``intercept_bound`` and ``refit``.
        The default T minimises a public bound (:func:`default_lp_iterations`).
    p : float in (1, 2], optional
        Exponent of the lp ball (``constraint="lp"`` only).
    l1_ratio : float
        L1 share of the penalty.
    intercept_bound : float, optional
        Keep the unpenalised coordinates (the intercept) out of the l1 ball,
        in ``[-intercept_bound, intercept_bound]`` instead.
    output : {"tail_average", "last"}, default="tail_average"
        Return the average of the iterates of the second half of the run, or
        the last iterate.  On an interval (the intercept) Frank-Wolfe zigzags
        between the two ends with amplitude ``~ 2 box eta_t``; the average
        removes most of it, keeps the support of the last iterate (supports
        only grow) and keeps the ``O(1/T)`` guarantee (convexity:
        ``F(average) <= max`` of the tail's values).  Post-processing: no
        privacy cost.
    refit : float in [0, 1), default=0.0
        Share of the zCDP budget spent on a debiasing refit (the relaxed
        Lasso, :func:`refit_support`): after the T steps, least squares on
        the support of the output, solved over the same polytope from two
        Gaussian releases of the support's sufficient statistics (labels
        clipped to ``[-1, 1]``, the scale of ``DPLasso``'s labels).  0: no
        refit.  Needs ``delta > 0``; ignored with ``epsilon=inf`` (the T steps
        then reach the optimum).
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_frank_wolfe` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        A convex combination of at most T vertices.

    Privacy
    -------
    Released: at each step, the vertex chosen by the exponential mechanism of
    the noise gateway (:func:`sklearn_dp._noise.exponential`), one release
    for the l1 ball's candidates and one per box coordinate (the intercept
    of ``DPLasso``).  Under add/remove-one-row neighbouring, one row changes
    the gradient average (sum over the rows of gradients clipped to ``C`` in
    l-infinity, divided by the public normaliser N) by at most ``C / N`` in
    l-infinity, so the ball scores change by at most ``Delta_0 = radius * C /
    N`` and box coordinate j's by ``Delta_j = box_j * C / N``: those are the
    declared sensitivities.  Part i drawn with temperature ``2 Delta_i /
    eps_i`` is ``eps_i``-DP and ``eps_i``-bounded-range, with ``sum_i eps_i =
    eps0`` (:func:`vertex_scales`), so a step is ``eps0``-DP and
    ``eps0^2/8``-zCDP.  The T steps are adaptive compositions: pure
    composition gives epsilon with ``eps0 = epsilon / T`` (delta = 0); with
    ``delta > 0`` the zCDP composition is used when it allows a larger eps0
    (PureEpsilonDpEvent or ZCDpEvent in ``dp_event``).  With ``refit > 0``
    the steps get ``(1 - refit)`` of the zCDP budget ``rho`` of (epsilon,
    delta) and two Gaussian releases on the support ``S`` of the output (a
    function of the released vertices) the rest: ``X_S^T X_S`` (Frobenius
    sensitivity ``R_S^2``, ``R_S^2 = sum_{j in S} feature_bound_j^2``) and
    ``X_S^T y`` (sensitivity ``R_S``), each ``refit * rho / 2``-zCDP; the event
    composes the steps' ZCDpEvent with two GaussianDpEvents.  The iterates, the
    tail average, the progress lines (the step size and the iterate's
    support and l1 norm), ``n_iter`` (T) and every exception are functions
    of public values and of the released vertices only.  Public:
    ``data.n_public`` and ``data.normalizer`` (the estimators' DP row count),
    the bounds, the radius, alpha, T.

    Over an lp ball the releases are the T gradient sums instead: one row
    moves each by at most ``C`` in L2 (its gradient is clipped to ``C``), the
    declared sensitivity, and the noise is ``N(0, (sigma C)^2 I)``.  T
    full-data Gaussian mechanisms of multiplier sigma compose exactly into
    one of multiplier ``sigma / sqrt(T)``, calibrated to (epsilon, delta) by
    the analytic Gaussian mechanism (GaussianDpEvent, self-composed T
    times).  Dividing by the public normaliser, the L2 penalty's gradient,
    the minimisation over the ball, the step and the average are
    post-processing of the releases.
    """
    args = SimpleNamespace(**locals())
    # The bounded design as an operator on the caller's X (no clipped or
    # intercept-augmented copy; float32 stays float32).
    X = data.design
    with public_setup():  # public inputs only: a refusal here says nothing about the data
        domain, plan, clip = frank_wolfe_setup("frank_wolfe", args)
        # l-inf change of the gradient average from one row: averages divide by
        # the public normaliser, never the private row count.
        unit = clip / data.normalizer
        scales = vertex_scales(domain, unit, plan.details.get("step_epsilon", math.inf))
    row_scale = X.row_norms(np.inf)  # each row's ||x_i||_inf, without a copy of X
    steps = FrankWolfeSteps("frank_wolfe", args, domain, plan)
    w = np.zeros(X.n_columns)
    noise_std = plan.noise_multiplier * clip  # over an lp ball
    for _ in range(plan.n_steps):
        if constraint == "lp":
            total = clipped_sum(X, data.y, w, loss, clip, data.row_norms)
            label = f"frank_wolfe gradient sum {steps.count + 1}"
            total = release(total, clip, noise_std, steps.rng, label)
            gradient = total / data.normalizer + domain.l2_penalty * w
        else:
            gradient = frank_wolfe_gradient(
                X, data.y, w, loss, clip, row_scale, data.normalizer, domain
            )
        w = steps.step(w, gradient, scales, unit)
    details = dict(clip_norm=clip, sensitivity=domain.vertex_radius * unit, gumbel_scales=scales)
    if constraint == "lp":
        details = dict(clip_norm=clip, sensitivity=clip, noise_std=noise_std)
    return steps.result(steps.output(w), {}, **details, n_vertices_max=plan.n_steps)
