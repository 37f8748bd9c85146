"""Noisy mirror descent in l1 / lp geometry: ``mirror_descent`` and ``localized_mirror_descent``.

Asi, Feldman, Koren and Talwar (2021), Algorithms 1, 2, 5 and 6.  The mirror
map is ``psi(x) = kappa ||x - c||_p^2`` with ``kappa = 1 / (2 (p - 1))``
(1-strongly convex w.r.t. ||.||_p) and ``p = 1 + 1 / ln(d)`` for l1 geometry
(an erratum, docs/solvers/lasso.md: with ln the norm-equivalence constant is e instead of the
seed's 2 with log2; only constants change).  Each step is the exact Bregman
(composite) step of :func:`._pnorm.bregman_step` over the l1 ball (times the
intercept's interval) intersected, in the localised algorithm, with an lp
ball: no projection shortcut, so the seed's guarantee is not silently lost.

Privacy comes from the Gaussian mechanism on Poisson-subsampled sums of
per-sample gradients clipped in L2 (the norm Gaussian noise needs; for rows
bounded entrywise by ``A`` this is the seed's ``sqrt(d) * L``), accounted
with dp_accounting's PLD accountant.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from scipy.special import gammaln

from .. import _noise, accounting
from .._clipped_sums import clipped_sum
from .._memo import memoize
from ._common import (
    PrivacyPlan,
    Progress,
    SolverResult,
    check_finite_iterate,
    make_rng,
)
from ._gradient_descent import gradient_bound
from ._l1_geometry import (
    allocate_rows,
    check_l1_options,
    check_strongly_convex,
    checked_domain,
    public_setup,
    strong_convexity,
    strongly_convex_rounds,
    zero_model_result,
)
from ._noisy_steps import plan_of_call
from ._pnorm import bregman_step, default_p, pnorm, pnorm_mirror_gradient

#: Cap on the number of steps of one (sub)run unless ``max_iter`` is given;
#: the seed's T = n^2 / b^2 is 10^4 to 10^6 without noise.
DEFAULT_MAX_STEPS = 2000


@dataclass(frozen=True)
class Phase:
    """Public sizes of one run of noisy mirror descent on one block of rows.

    ``block`` is the expected number of rows allocated to it, ``batch`` the
    expected Poisson batch, ``steps`` the number of steps, ``weight`` its noise
    multiplier relative to the calibrated scale, ``round`` the index of the
    strongly convex round it belongs to (0 without the wrapper) and ``index``
    its localisation phase (1-based; 0 for plain mirror descent).
    """

    block: float
    batch: int
    steps: int
    weight: float
    round: int = 0
    index: int = 0

    @property
    def sampling_probability(self):
        return min(1.0, self.batch / self.block)


# --------------------------------------------------------------------------
# Public schedules
# --------------------------------------------------------------------------


def _log_d(n_params):
    return math.log(max(n_params, 3))


def _default_batch(n_rows, n_params, epsilon, max_steps=None):
    """The seed's ``b = max(sqrt(n / ln d), sqrt(d) / epsilon)``, in [1, n].

    With a cap T on the steps, b is raised to at least ``n / sqrt(T)``: the
    seed's ``T = n^2 / b^2`` (sampling rate times sqrt(T) equal to 1, the
    balance its analysis uses) then still holds instead of the run stopping
    after a fraction of an epoch.
    """
    b = math.sqrt(n_rows / _log_d(n_params))
    if not math.isinf(epsilon):
        b = max(b, math.sqrt(n_params) / epsilon)
    cap = DEFAULT_MAX_STEPS if max_steps is None else int(max_steps)
    b = max(b, n_rows / math.sqrt(cap))
    return int(min(max(math.ceil(b), 1), max(int(n_rows), 1)))


def _steps(n_rows, batch, max_iter):
    steps = math.ceil((n_rows / batch) ** 2)
    cap = DEFAULT_MAX_STEPS if max_iter is None else int(max_iter)
    return max(1, min(steps, cap))


def _rounds(n_samples, strongly_convex):
    """Expected block sizes of the strongly convex reduction (seed section 5), or [n]."""
    return strongly_convex_rounds(n_samples) if strongly_convex else [float(n_samples)]


@memoize(maxsize=512)
def mirror_descent_phases(
    kind, n_samples, n_params, epsilon, max_iter=None, batch_size=None, strongly_convex=False
):
    """The runs of noisy mirror descent a fit makes, from public inputs only.

    ``kind="plain"`` (Algorithm 1/5): one run on all rows (per round of the
    strongly convex wrapper), batch ``max(sqrt(n / ln d), sqrt(d) / epsilon,
    n / sqrt(T_max))`` and ``T = ceil(n^2 / b^2)`` steps, ``T_max`` being
    ``max_iter`` or ``DEFAULT_MAX_STEPS``.
    ``kind="localized"`` (Algorithm 2/6): phases i = 1, 2, ... on disjoint
    blocks of ``n / 2^i`` rows with ``epsilon_i = epsilon / 2^i`` in the batch
    formula (seed erratum E9: ``sqrt(d) / epsilon_i``, not ``sqrt(d /
    epsilon_i)``) and noise weights ``2^(i-1)`` (the seed's epsilon_i
    schedule); phases stop once a block is below 2 rows or a single
    full-batch step would do (seed: the late phases only add O(1/n^2)).
    """
    phases = []
    for r, block_total in enumerate(_rounds(n_samples, strongly_convex)):
        if kind == "plain":
            if math.isinf(epsilon) and batch_size is None:
                # Without noise nothing is spent: every step uses every row (exact
                # gradients; the seed's batch only balances sampling against noise).
                batch = max(int(block_total), 1)
                steps = int(max_iter) if max_iter is not None else DEFAULT_MAX_STEPS
            else:
                batch = batch_size or _default_batch(block_total, n_params, epsilon, max_iter)
                batch = int(min(batch, block_total))
                steps = int(max_iter) if max_iter is not None else _steps(block_total, batch, None)
            phases.append(Phase(block_total, batch, steps, 1.0, r, 0))
            continue
        for i in itertools.count(1):
            block = math.floor(block_total / 2**i)
            if block < 2:
                break
            eps_i = epsilon / 2**i
            batch = _default_batch(block, n_params, eps_i, max_iter)
            steps = _steps(block, batch, max_iter)
            if steps <= 1 and i > 1:
                break
            phases.append(Phase(float(block), batch, steps, float(2 ** (i - 1)), r, i))
        if not any(ph.round == r for ph in phases):
            raise ValueError(
                "localized_mirror_descent needs at least 4 rows (per round); got n_samples = "
                f"{n_samples:.4g} (the public row count: the fit's DP row count)."
            )
    return tuple(phases)


def _phases_event(phases, scale):
    steps_event = accounting.subsampled_gaussian_steps_event
    events = [steps_event(scale * ph.weight, ph.sampling_probability, ph.steps) for ph in phases]
    return events[0] if len(events) == 1 else accounting.dpe.ComposedDpEvent(events)


@memoize(maxsize=512)
def _calibrate_phases(phases, epsilon, delta):
    """Scale s such that the phases (multipliers s * weight) compose to (epsilon, delta)-DP."""
    if len(phases) == 1:
        ph = phases[0]
        return accounting.subsampled_gaussian_noise_multiplier(
            epsilon, delta, ph.sampling_probability, ph.steps
        )
    return accounting.calibrate_noise_multiplier(lambda s: _phases_event(phases, s), epsilon, delta)


@public_setup()  # a plan reads public inputs (and the released row count) only
def _plan(kind, n_samples, n_params, epsilon, delta, call, batch_size):
    max_iter, strongly_convex = call.max_iter, call.strongly_convex
    if n_samples is None:
        return None  # the phases need the (not yet released) public row count
    public = (int(n_samples), int(n_params), float(epsilon))  # hashable, for the memo
    phases = mirror_descent_phases(kind, *public, max_iter, batch_size, bool(strongly_convex))
    n_steps = sum(ph.steps for ph in phases)
    # The rounds' expected block sizes: the solver allocates the rows with them.
    details = dict(phases=phases, round_sizes=_rounds(n_samples, strongly_convex))
    if math.isinf(epsilon):
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    if delta <= 0:
        raise ValueError(
            f"{kind} mirror descent adds Gaussian noise and needs delta > 0; use frank_wolfe or "
            "vr_frank_wolfe for pure epsilon-DP."
        )
    scale = _calibrate_phases(phases, float(epsilon), float(delta))
    details["noise_multipliers"] = [scale * ph.weight for ph in phases]
    return PrivacyPlan(_phases_event(phases, scale), scale, n_steps, details)


def plan_mirror_descent(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``mirror_descent``: T Poisson-subsampled Gaussian steps per round."""
    return _plan("plain", n_samples, n_params, epsilon, delta, call, call.batch_size)


def plan_localized_mirror_descent(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``localized_mirror_descent``: the composition of its phases."""
    return _plan("localized", n_samples, n_params, epsilon, delta, call, None)


# --------------------------------------------------------------------------
# Public constants of the geometry
# --------------------------------------------------------------------------


def _resolve_p(p, n_columns, constraint="l1"):
    """The mirror-map exponent: 1 + 1/ln d for l1 geometry (``p=None`` or p below it).

    Over an lp ball (``constraint="lp"``) the map's exponent is the ball's
    own ``p``: the exact Bregman step handles an lp ball only in the map's
    exponent, and ``||x||_p^2 / (2 (p - 1))`` is 1-strongly convex in
    ``||.||_p`` for every ``1 < p <= 2``.
    """
    if constraint == "lp":
        return float(p)
    l1_p = default_p(n_columns)
    # p is in [1, 2] (the registry's declared range, checked before).  Below
    # 1 + 1/ln d the lp and l1 norms are within a factor e: the l1 map is better
    # there (seed section 2.4), and p = 1 itself has no strongly convex p-norm map.
    return l1_p if p is None else max(float(p), l1_p)


def _noise_q_norm_sq(noise_std, n_columns, q):
    """``E ||N(0, noise_std^2 I_d)||_q^2`` bound: ``d^(2/q) (E|Z|^q)^(2/q) noise_std^2``."""
    # log E|Z|^q for a standard normal Z.
    log_moment = 0.5 * q * math.log(2.0) + gammaln((q + 1) / 2) - 0.5 * math.log(math.pi)
    return n_columns ** (2.0 / q) * math.exp(2.0 / q * log_moment) * noise_std**2


# --------------------------------------------------------------------------
# The shared loop
# --------------------------------------------------------------------------


class _Runs:
    """Runs of noisy mirror descent on blocks of rows, with the public constants of one fit.

    ``offset`` counts the steps run so far (for the progress lines and the
    release labels).  ``args`` is a namespace of the solver's arguments.
    """

    def __init__(self, solver, args, domain, plan, *, p, clip2, lipschitz, smoothness):
        # The bounded design as an operator on the caller's X: each step copies its
        # Poisson batch's rows only (``design.rows``), never the whole matrix.
        self.X, self.y, self.row_norms = args.data.design, args.data.y, args.data.row_norms
        self.solver, self.args, self.domain, self.plan = solver, args, domain, plan
        self.loss = args.loss
        self.scale, self.clip2, self.p, self.q = plan.noise_multiplier, clip2, p, p / (p - 1.0)
        self.kappa = 1.0 / (2.0 * (p - 1.0))
        # The fixed arguments of every Bregman step: the exponent and the polytope.
        self.geometry = dict(p=p, ball=domain.ball, radius=domain.radius, box=domain.box)
        if args.constraint == "lp":
            # The lp ball around 0 instead of the l1 ball.  Its domain (no
            # intercept_bound: every coordinate in ``ball``, no boxes) has the lp
            # radius as ``vertex_radius``, the largest ||x||_p on it (so D_psi(x*, 0)
            # <= kappa radius^2 and ||x||_q <= radius), and twice it as ``diameter``.
            self.geometry.update(radius=math.inf, outer=domain.radius)
        self.lipschitz, self.smoothness = lipschitz, smoothness
        self.private = not math.isinf(args.epsilon)
        self.rng = make_rng(args.random_state)
        self.progress = Progress(solver, plan.n_steps, args.verbose)
        self.offset = 0

    def noise_std(self, phase):
        """Standard deviation of the phase's Gaussian noise (0 without noise: scale 0)."""
        return self.scale * phase.weight * self.clip2

    def run(self, rows, phase, center, regularization, p_radius, label, eta=None):
        """Noisy (composite) mirror descent on the rows ``rows``, started at ``center``.

        Each step: ``g = (clipped gradient sum over a Poisson batch + N(0,
        noise_std^2 I)) / batch + l2 part``, then the exact Bregman step with
        the mirror map centred at ``center``, the L1 penalty as a prox term
        and the regulariser ``regularization * psi`` (the localised
        objective) folded into the map.  Step k has size ``eta``; without
        ``eta`` (a localised phase) ``2 / (regularization (k + 1))``.  Returns
        the last iterate and the average of the iterates (without ``eta``,
        weighted by the step number).
        """
        X, domain, p, kappa, clip2 = self.X, self.domain, self.p, self.kappa, self.clip2
        rate = phase.sampling_probability
        noise_std = self.noise_std(phase)
        fixed = dict(p_radius=p_radius, **self.geometry)  # the run's fixed step arguments
        x = center.copy()
        total = np.zeros(len(center))
        weight_total = 0.0
        warm = None
        for k in range(1, phase.steps + 1):
            # A Poisson sample of the rows (the gateway's sampler) and the Gaussian
            # mechanism on their clipped gradient sum (sensitivity clip2 in L2).
            batch = rows[_noise.poisson_sample(rows.size, rate, self.rng)]
            if batch.size == X.n_rows:  # every row (rate 1): the design itself, no copy
                X_batch, y_batch, norms_batch = X, self.y, self.row_norms
            else:
                X_batch, y_batch, norms_batch = X.rows(batch), self.y[batch], self.row_norms[batch]
            total_k = clipped_sum(X_batch, y_batch, x, self.loss, clip2, norms_batch)
            release = f"{label} gradient sum {self.offset + k}"
            gradient = _noise.gaussian(
                total_k, sensitivity=clip2, noise_std=noise_std, rng=self.rng, label=release
            )
            gradient = gradient / phase.batch + domain.l2_penalty * x
            eta_k = eta if eta is not None else 2.0 / (regularization * (k + 1.0))
            s = pnorm_mirror_gradient(x - center, p, kappa) - eta_k * gradient
            # The composite step: the L1 penalty as a prox term, the regulariser in the map.
            kappa_k, l1 = kappa * (1.0 + eta_k * regularization), eta_k * domain.l1_penalty
            warm = bregman_step(s, center, kappa=kappa_k, l1_weights=l1, warm=warm, **fixed)
            x = warm.x
            weight = 1.0 if eta is not None else float(k)
            total += weight * x
            weight_total += weight
            # The noisy gradient: a function of the release and the public iterate.
            self.progress(self.offset + k, grad_norm=float(np.linalg.norm(gradient)))
        self.offset += phase.steps
        return x.copy(), total / weight_total

    def plain_round(self, rows, phases, center, r, round_radius):
        """Algorithm 1/5: one run at the mirror-descent step; its output and public error bound."""
        phase, first = phases[0], r == 0
        lipschitz, smoothness, step_size = self.lipschitz, self.smoothness, self.args.step_size
        # D_psi(x*, centre) = kappa ||x* - centre||_p^2: the centre is 0 in the first
        # round (||x*||_p <= ||x*||_1 <= vertex_radius), x_{r-1} afterwards.
        reach = self.domain.vertex_radius if first else min(self.domain.diameter, round_radius)
        d_psi = self.kappa * reach**2
        noise_sq = _noise_q_norm_sq(self.noise_std(phase) / phase.batch, len(center), self.q)
        g_sq = lipschitz**2 + noise_sq
        eta = math.sqrt(2.0 * d_psi / (phase.steps * g_sq))
        # Without noise on every row (epsilon=inf, full batch) the gradient is
        # exact: deterministic mirror descent.
        exact = not self.private and phase.sampling_probability >= 1.0
        if smoothness is not None:
            # Smooth objective: stochastic mirror descent only pays for the
            # gradient's variance (sampling L^2 / b plus noise) with a step <= 1 / (2 beta).
            variance = lipschitz**2 / phase.batch + noise_sq
            eta = min(1.0 / (2.0 * smoothness), math.sqrt(2.0 * d_psi / (phase.steps * variance)))
            if exact:
                # Deterministic mirror descent: step 1 / beta (beta-smooth relative
                # to the 1-strongly convex map) decreases the objective every step.
                eta = 1.0 / smoothness
        if step_size is not None:
            eta = float(step_size)
        last, average = self.run(rows, phase, center, 0.0, round_radius, self.solver, eta=eta)
        self.plan.details.setdefault("step_sizes", []).append(eta)
        # Exact steps of 1 / beta descend: the last iterate is the best one.
        x = last if exact and smoothness is not None and step_size is None else average
        # Public excess-risk bound of this round (expected, mirror descent lemma).
        return x, d_psi / (eta * phase.steps) + eta * g_sq / 2.0

    def localized_round(self, rows, phases, start, r, round_radius):
        """Algorithm 2/6: phases on disjoint blocks, each a regularised, localised run.

        Returns the last phase's output and the round's public error bound.
        """
        n_rows = self.plan.details["round_sizes"][r]
        args, lipschitz, p, n_columns = self.args, self.lipschitz, self.p, len(start)
        diameter = min(self.domain.diameter, 2 * round_radius)
        # Base step (Theorem 4 / 13):
        # (D / L) min{1 / sqrt((p - 1) n), eps / sqrt(d ln(1/delta) (1 + ln d [p < 2]))}.
        eta = diameter / (lipschitz * math.sqrt((p - 1.0) * n_rows))
        if self.smoothness is not None:
            # The theorem's constants make phase 1's regulariser (lambda_1 kappa =
            # 32 kappa / (eta n)) far stronger than the data's curvature, and later
            # phases never leave its bias: its statistical term is raised to cap that
            # weight at a public 1% of the smoothness; its privacy term still caps eta.
            eta = max(eta, 3200.0 * self.kappa / (self.smoothness * n_rows))
        if self.private:
            noise_term = _noise_term(n_columns, args.delta, p)
            eta = min(eta, args.epsilon * diameter / (lipschitz * noise_term))
        if args.step_size is not None:
            eta = float(args.step_size)
        self.plan.details.setdefault("step_sizes", []).append(eta)
        # Rows of the round go to phase i with probability block_i / n_rows (public), so
        # overall each row lands in (round, phase) independently with a public probability.
        blocks = _allocate(self.rng, rows.size, n_rows, [ph.block for ph in phases])
        x = start
        for ph, block in zip(phases, blocks):
            eta_i = eta * 2.0 ** (-4 * ph.index)
            lam_i = 2.0 / (eta_i * ph.block)  # F_i = F + lam_i * kappa ||x - x_prev||_p^2
            # The minimiser of F_i lies within L eta_i n_i (p - 1) of the centre (strong
            # convexity); the seed's radius has a factor 2 of slack.
            p_radius = 2.0 * lipschitz * eta_i * ph.block * (p - 1.0)
            if ph.index == 1:
                p_radius = min(p_radius, round_radius)
            _, x = self.run(rows[block], ph, x, lam_i, p_radius, f"{self.solver} phase {ph.index}")
        return x, _localized_bound(lipschitz, diameter, p, n_rows, n_columns, args)


def _noise_term(n_columns, delta, p):
    """``sqrt(d ln(1/delta) (1 + ln d [p < 2]))``, the privacy term of Theorems 4 and 13."""
    return math.sqrt(n_columns * math.log(1.0 / delta) * (1.0 + _log_d(n_columns) * (p < 2)))


def _localized_bound(lipschitz, diameter, p, n_rows, n_columns, args):
    """Theorem 4 / 13's rate with constant 1 (public): ``L D (1 / sqrt((p-1) n) + noise / ((p-1) n eps))``."""
    bound = lipschitz * diameter / math.sqrt((p - 1.0) * n_rows)
    if not math.isinf(args.epsilon):
        noise = _noise_term(n_columns, args.delta, p)
        bound += lipschitz * diameter * noise / ((p - 1.0) * n_rows * args.epsilon)
    return bound


def _allocate(rng, n_rows, n_public, blocks):
    """Independent random allocation of rows to blocks of public expected sizes (rest unused).

    The probabilities come from the public stand-in for the row count
    (``n_public``); every one of the ``n_rows`` actual rows draws its block,
    through the noise gateway's allocation (:func:`._l1_geometry.allocate_rows`).
    """
    allocation = allocate_rows(rng, n_rows, n_public, blocks)
    return [np.flatnonzero(allocation == i) for i in range(len(blocks))]


def check_options(solver, *, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Refuse the options of ``solver`` (either mirror-descent solver) from public inputs only.

    The registry's check of both (``SolverSpec.check``, with the solver's
    name bound), which the estimators call before they reserve the spend.
    """
    check_l1_options(solver, n_outputs=n_outputs, options=options)
    check_strongly_convex(solver, penalty, alpha, l1_ratio, public, options)


def _mirror_descent_fit(solver, kind, args):
    """The fit of :func:`mirror_descent` (``kind="plain"``) or its localised form.

    ``args``: the solver's arguments (a namespace of its parameters).
    """
    n_rows, n_columns = args.data.design.shape
    data, loss, epsilon = args.data, args.loss, args.epsilon
    strongly_convex = args.strongly_convex
    with public_setup():  # public inputs and the released row count only
        domain = checked_domain(solver, args)
        p = _resolve_p(args.p, n_columns, args.constraint)
        # Public stand-in for the row count (a DP count from the estimators): the
        # true n is private under add/remove and only indexes rows.
        n_samples = data.n_public
        q = p / (p - 1.0)
        lam = strong_convexity(solver, domain, p) if strongly_convex else 0.0
        plan = plan_of_call(solver, vars(args))
        private = not math.isinf(epsilon)
        clip2 = gradient_bound(loss, data.row_norm_bound, args.clip_norm, private=private)
        # Public bound on ||clipped per-sample gradient||_q (q >= 2): ||g||_q <= ||g||_2 <= clip2.
        lipschitz = clip2
        if loss.derivative_bound is not None and data.feature_bound is not None:
            lipschitz = min(lipschitz, float(loss.derivative_bound) * pnorm(data.feature_bound, q))
        # The l2 part of the penalty adds at most l2 * ||x||_q <= l2 * vertex_radius.
        l2_part = float(np.max(domain.l2_penalty, initial=0.0))
        lipschitz += l2_part * domain.vertex_radius
        # Smoothness w.r.t. ||.||_p (dual ||.||_q) from public bounds, or None:
        # ||grad f(w) - grad f(v)||_q <= l'' ||x||_q |x @ (w - v)| <= l'' ||x||_q^2 ||w - v||_p.
        smoothness = None
        if loss.smoothness is not None and data.feature_bound is not None:
            smoothness = float(loss.smoothness) * pnorm(data.feature_bound, q) ** 2 + l2_part
        warning = None
        if kind != "plain" and private:
            # The fallback: where its public bound is far above vacuous and the ball
            # sets the scale (a penalty, not the ball, confines penalised fits), the
            # zero model, decided from released values before any row is read.
            bound = _localized_bound(lipschitz, domain.diameter, p, n_samples, n_columns, args)
            fallback = bound >= FALLBACK_BOUND and not domain.has_l1_penalty
            warning = _localized_bound_warning(solver, loss.name, bound, epsilon, fallback)
            if fallback and warning is not None:
                return zero_model_result(n_rows, n_columns, plan, warning)
    phases, round_sizes = plan.details["phases"], plan.details["round_sizes"]
    runs = _Runs(
        solver, args, domain, plan, p=p, clip2=clip2, lipschitz=lipschitz, smoothness=smoothness
    )
    round_blocks = [np.arange(n_rows)]
    if strongly_convex:  # disjoint random blocks, one per round (the gateway's allocation)
        round_blocks = _allocate(runs.rng, n_rows, n_samples, round_sizes)
    run_round = runs.plain_round if kind == "plain" else runs.localized_round
    x = np.zeros(n_columns)
    round_radius = math.inf
    for r in sorted({ph.round for ph in phases}):
        round_phases = [ph for ph in phases if ph.round == r]
        x, bound = run_round(round_blocks[r], round_phases, x, r, round_radius)
        if strongly_convex:
            # lambda-strong convexity: F(x) - F* >= lambda/2 ||x - x*||_p^2, so the next
            # round can be restricted to the lp ball of radius sqrt(2 bound / lambda)
            # around x (a public bound; twice it for slack against its expectation).
            round_radius = min(round_radius, 2.0 * math.sqrt(2.0 * bound / lam))
    check_finite_iterate(x, solver)
    plan.details.update(clip_norm=clip2, p=p, lipschitz=lipschitz, strong_convexity=lam)
    info = {} if warning is None else dict(warnings=[warning])
    return SolverResult(coef=x[:, None], n_iter=plan.n_steps, plan=plan, info=info)


#: localized_mirror_descent returns the zero model where its public bound (in
#: the fit's label units) is at least this, on the constrained form (DPLasso
#: defaults, one seed): n = 5000, d = 2000 (benchmarks/bench_regimes.py) 105 /
#: 70 / 31 at epsilon 0.5 / 1 / 5 with R^2 0.00 / 0.00 / 0.06 against 0.00 for
#: the zero model; below it the fits beat the zero model (the label centre,
#: R^2 -0.19 on diabetes): diabetes 11 ... 5.5 with R^2 -0.16 ... 0.00, the
#: 30k-row, d = 30 sparse regression 4.9 at epsilon 0.1 with R^2 0.21.
FALLBACK_BOUND = 20.0


def _localized_bound_warning(solver, loss_name, bound, epsilon, fallback=False):
    """The honest warning of ``localized_mirror_descent``: its public error bound is vacuous.

    ``bound`` is the seed's Theorem 4 / 13 rate with constant 1 (public:
    the released row count, d, the bounds, the radius, epsilon, delta), in
    the units of the fit's (scaled) labels, where the zero model's loss is
    of order 1.  Above the registry's ``bound_warning`` the paper's
    guarantee says nothing at this size, and the base step it prescribes
    keeps the output near its start (the zero model); with ``fallback`` the
    solver returns that model without running, and the text says so.
    """
    from ._noise_warnings import _threshold, is_classification

    threshold = _threshold(solver, "bound_warning")
    if threshold is None or is_classification(loss_name) or bound < threshold:
        return None
    what, charge = "its", ""
    if fallback:
        what = "returned the zero model (the model predicts its label centre) without running: its"
        charge = ". The fit's charge stands"
    return (
        f"{solver}: {what} public error bound (Asi et al. 2021, Theorem 4, constant 1) at "
        f"epsilon={epsilon:g} with this row count, radius and number of features ({bound:.3g}, "
        f"above {threshold:g}) is vacuous{charge}. Use solver='frank_wolfe' or 'mirror_descent' "
        "(or 'dp_ssp' / 'dp_cd' for the penalised form), more rows, a larger epsilon or a "
        "smaller radius."
    )


def mirror_descent(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    batch_size=None,
    step_size=None,
    clip_norm=None,
    radius=None,
    constraint="l1",
    l1_ratio=0.0,
    intercept_bound=None,
    p=None,
    strongly_convex=False,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Noisy minibatch mirror descent with a p-norm map (seed Algorithms 1 and 5).

    Minimises ``mean_i l(x_i @ w, y_i) + alpha * (l1_ratio ||w||_1 + (1 - l1_ratio)
    / 2 ||w||^2)`` over the polytope of :func:`~sklearn_dp.solvers.frank_wolfe`
    (an l1 ball of ``radius``; the intercept in ``[-intercept_bound,
    intercept_bound]`` when given).  Works for non-smooth Lipschitz losses
    (absolute, Huber) as well as smooth ones.

    Each step draws a Poisson batch (rate ``b / n``), sums the per-sample
    gradients clipped to L2 norm C, adds ``N(0, (sigma C)^2 I)``, divides by
    ``b`` and takes the exact composite Bregman step
    ``argmin_x <eta g, x> + eta alpha l1_ratio ||x||_1 + D_psi(x, x_k)`` over the
    polytope, ``psi = ||x||_p^2 / (2 (p - 1))`` (:func:`._pnorm.bregman_step`:
    nested monotone root finds, solved to machine precision).  Returns the
    average of the iterates.

    Parameters
    ----------
    data, loss, n_outputs, alpha, epsilon, delta, clip_norm, radius, constraint,
    l1_ratio, intercept_bound, random_state, verbose
        As in :func:`~sklearn_dp.solvers.frank_wolfe`, except that ``clip_norm``
        bounds each per-sample gradient in L2 (the Gaussian mechanism's norm);
        its default is half the loss's own bound ``derivative_bound *
        row_norm_bound`` (``row_norm_bound = ||feature_bound||_2`` with the
        intercept column).  ``delta`` must be > 0.
    max_iter : int, optional
        Number of steps T; default ``ceil(n^2 / b^2)`` (seed Theorem 3), at
        most ``DEFAULT_MAX_STEPS`` (2000).
    batch_size : int, optional
        Expected batch b; default ``max(sqrt(n / ln d), sqrt(d) / epsilon)``
        (the seed's balance of optimisation and noise, Theorem 4).  With
        ``epsilon=inf`` (nothing spent) the default is every row at every
        step, ``DEFAULT_MAX_STEPS`` steps of ``1 / beta_p`` for smooth losses
        (beta_p: the public smoothness in ``||.||_p``) and the last iterate
        as output: deterministic mirror descent.
    step_size : float, optional
        Default ``sqrt(2 D_psi / (T G^2))``, the mirror-descent optimum with
        ``D_psi = kappa * radius^2`` and ``G^2`` the public bound on
        ``E ||g||_q^2`` (clipped gradient plus noise, ``E ||N(0, s^2 I)||_q^2 <=
        d^(2/q) (E|Z|^q)^(2/q) s^2``).
    p : float in [1, 2], optional
        Geometry.  Default (and any p below it) ``1 + 1 / ln(d)``: l1 geometry.
        ``p = 2`` is Euclidean (noisy projected SGD on the l1 ball).
    strongly_convex : bool, default=False
        The reduction of seed section 5 for a lambda-strongly convex objective
        (lambda public: the L2 part of an elastic-net penalty on every
        coefficient, no intercept): ``ceil(log2 log2 n)`` rounds on disjoint
        blocks of ``2^(i-2) n / log2 n`` rows, round i started at round i-1's
        output and restricted to the lp ball of radius ``2 sqrt(2 Delta /
        lambda)`` around it (Delta: the previous round's public error bound).

    Returns
    -------
    SolverResult

    Privacy
    -------
    Released, all through the noise gateway: at each step, a Poisson sample
    of the rows (:func:`sklearn_dp._noise.poisson_sample`, public rate) and
    the Gaussian mechanism (:func:`sklearn_dp._noise.gaussian`) on the sum
    of their per-sample gradients clipped to L2 norm C (sensitivity C, noise
    standard deviation ``sigma C``); with ``strongly_convex``, the
    allocation of the rows to the rounds (:func:`sklearn_dp._noise.allocate_rows`,
    public probabilities).  The iterates, the progress lines (the norm of
    the noisy gradient), ``n_iter`` and every exception are functions of
    public values, of the released row count and of these releases only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Every step is
    the Gaussian mechanism with multiplier sigma on the sum of per-sample
    gradients clipped to L2 norm C over a Poisson sample of rate ``b / n``
    (sensitivity C), so the fit is ``SelfComposed(PoissonSampled(b/n,
    Gaussian(sigma)), T)``, calibrated with the PLD accountant (seed erratum
    E7: the seed samples with replacement but cites a Poisson-sampling
    accountant; we sample as we account).  The penalty, the projection and
    the averaging are post-processing.  With ``strongly_convex`` the rounds
    use disjoint random blocks (each row goes to round i with a public
    probability, independently), and their events are composed; that is an
    upper bound of the guarantee (parallel composition would give the
    maximum), recorded because DpEvents must compose in a budget.  Public:
    d, the bounds, radius, alpha, p, b, T; the row count is private: the estimators pass a DP
    count (``data.n_public``, ``data.normalizer``); a direct call on data without one treats n
    as public.
    """
    return _mirror_descent_fit("mirror_descent", "plain", SimpleNamespace(**locals()))


def localized_mirror_descent(
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
    radius=None,
    constraint="l1",
    l1_ratio=0.0,
    intercept_bound=None,
    p=None,
    strongly_convex=False,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Localized noisy mirror descent (seed Algorithms 2 and 6): optimal DP-SCO rates in l1 / lp.

    Phase i = 1, 2, ... runs noisy mirror descent (Algorithm 1/5, strongly
    convex variant) on a fresh disjoint block of about ``n / 2^i`` rows (seed
    erratum E8: fresh data, not a reused prefix), on the regularised objective
    ``F(x) + ||x - x_{i-1}||_p^2 / (eta_i n_i (p - 1))`` centred at the previous
    phase's output, over the polytope (or the ``constraint="lp"`` ball)
    intersected with the lp ball of radius ``R_i = 2 L eta_i n_i (p - 1)``
    around it (which contains the regularised minimiser); each step is exact
    over that intersection.  Steps ``2 / (lambda_i (k + 1))`` with ``lambda_i = 2 / (eta_i
    n_i)``, the regulariser folded exactly into each Bregman step (composite
    step), and a weighted average ``sum_k k x_k`` as the phase output.  The
    base step is ``eta = (D / L) min{1 / sqrt((p-1) n), epsilon / sqrt(d
    ln(1/delta) (1 + ln d [p < 2]))}`` (Theorem 13) and ``eta_i = eta / 16^i``.
    One mirror map ``||x - c||_p^2 / (2 (p - 1))`` serves every p (seed erratum
    E10: the seed's A2 and A6 differ by a factor 2; constants only).

    Parameters
    ----------
    data, loss, n_outputs, alpha, epsilon, delta, clip_norm, radius, constraint,
    l1_ratio, intercept_bound, p, strongly_convex, random_state, verbose
        As in :func:`mirror_descent`.
    max_iter : int, optional
        Cap on the steps of each phase (default ``DEFAULT_MAX_STEPS``); phase
        i takes ``ceil(n_i^2 / b_i^2)`` steps with batch ``b_i = max(sqrt(n_i /
        ln d), sqrt(d) / epsilon_i)``, ``epsilon_i = epsilon / 2^i`` (seed
        erratum E9: ``sqrt(d) / epsilon_i``, not ``sqrt(d / epsilon_i)``).
    step_size : float, optional
        Overrides the base step eta.  Default: the theorem's eta, whose
        statistical term is raised for smooth losses to at least ``3200 kappa /
        (beta_p n)`` (``beta_p``: the public smoothness in ``||.||_p``), which
        keeps phase 1's regulariser weight ``32 kappa / (eta n)`` at most 1% of
        the smoothness (the theorem's constants otherwise keep the output near
        its start, even at ``epsilon=inf``); its privacy term still caps it.
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_localized_mirror_descent` computed it
        for these arguments (estimators hand down the plan their budget was
        charged for); None plans here.

    **Honest warning and fallback.**  Where its public error bound (Theorem
    4 / 13's rate with constant 1 from the released row count, d, the
    bounds, the radius, epsilon and delta) reaches the registry's
    ``bound_warning``, the fit warns.  Where it reaches ``FALLBACK_BOUND``
    without an L1 penalty (the ball, not a penalty, sets the scale), the fit
    returns the zero model (every coefficient 0; the estimators then predict
    the label centre) with ``n_iter = 0`` and a warning naming the
    alternatives, before it reads a row or draws any noise, as
    :func:`~sklearn_dp.solvers.vr_frank_wolfe` does; the planned charge and
    ``dp_event`` stand.

    Returns
    -------
    SolverResult
        The last phase's output.

    Privacy
    -------
    Released, all through the noise gateway: the allocation of the rows to
    the phases (:func:`sklearn_dp._noise.allocate_rows`, public
    probabilities), and at each step of phase i a Poisson sample of its
    block and the Gaussian mechanism on the sum of the sampled rows'
    per-sample gradients clipped to L2 norm C (sensitivity C, noise standard
    deviation ``sigma 2^(i-1) C``).  The iterates, the progress lines (the
    norm of the noisy gradient), ``n_iter`` and every exception are
    functions of public values, of the released row count and of these
    releases only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Each row is
    allocated independently to phase i with the public probability
    ``n_i / n`` (or to none); phase i is the Poisson-subsampled Gaussian
    mechanism on its block (rate ``b_i / n_i``, ``T_i`` steps, multiplier
    ``sigma * 2^(i-1)``, the seed's ``epsilon_i = 2^-i epsilon`` shape), and a
    row's presence changes only its own phase, so each phase as a mechanism
    on the whole data set is dominated by its event (joint convexity of the
    hockey-stick divergence over the allocation).  The fit records the
    composition of the phase events and sigma is calibrated so that the
    composition meets (epsilon, delta) with the PLD accountant.  Phases on
    disjoint data would allow the maximum instead of the composition
    (parallel composition); a DpEvent cannot express that, and the recorded
    event must compose with other fits in a budget.  The regulariser is
    data-independent and needs no noise.  Public: d, the bounds, radius,
    alpha, p and the schedule; the row count is private: the estimators pass a DP count
    (``data.n_public``, ``data.normalizer``); a direct call on data without one treats n as
    public.
    """
    return _mirror_descent_fit("localized_mirror_descent", "localized", SimpleNamespace(**locals()))
