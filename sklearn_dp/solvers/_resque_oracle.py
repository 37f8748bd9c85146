"""The ReSQue estimator and the ball oracle of the ``resque`` solver.

Carmon, Jambulapati, Jin, Lee, Liu, Sidford and Tian (2023), "ReSQue-ing
parallel and private stochastic convex optimization" (docs:
``docs/solvers/resque.md``).  The outer loop, the schedule and the solver are
in :mod:`._resque`.

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

The ball oracle
---------------
Each ball subproblem ``min F_rho(x) + lambda / 2 ||x - y||^2`` over the
small ball ``B_r(y)`` (intersected with the constraint ball ``B_R``) is solved
by EpochSGD on ReSQue gradients centred at ``y``; its queries are one batched
NumPy operation (split over joblib threads with ``n_jobs``).

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
from functools import partial
from typing import NamedTuple

import numpy as np
from joblib import delayed

from .. import _noise
from .._clipped_sums import capped_resque_sum, resque_query_derivatives
from ._noisy_steps import noisy_steps
from ._noisy_steps import release as gateway_release

#: Length of EpochSGD's first epoch (docs/solvers/resque.md).
FIRST_EPOCH = 16
#: Queries per random stream of perturbations (a step's batch is cut into runs
#: of this many) and, at least, per joblib task of a query round.  Fixed, so
#: results do not depend on n_jobs.
QUERY_CHUNK = 4096
#: Label of the inner steps' releases in traces.
STEP_LABEL = "resque step sum"


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
    u, c1, c2 = (np.asarray(a, dtype=float) for a in (u, c1, c2))
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


def _project_domain(u, center, r, R):
    """Projection onto ``B_r(center)``, intersected with ``B_R(0)`` unless ``R`` is None."""
    if R is None or u @ u <= R**2:
        return _project_ball(u, center, r)
    return project_two_balls(u, center, r, np.zeros_like(u), R)


def epoch_lengths(n_steps, first=FIRST_EPOCH):
    """EpochSGD epochs: ``first, 2 first, 4 first, ...`` and a shorter last one with the rest.

    The paper stops at the last full epoch; using the leftover steps (as one
    more epoch when there are at least ``first`` of them, else in the last
    epoch) spends every step the privacy budget paid for.
    """
    remaining = int(n_steps)
    lengths = []
    length = min(first, remaining)
    while length > 0 and remaining >= length:
        lengths.append(length)
        remaining -= length
        length *= 2
    if remaining >= first:
        lengths.append(remaining)
    elif remaining:
        lengths[-1] += remaining
    return lengths


# --------------------------------------------------------------------------
# One round of queries (the paper's parallel round)
# --------------------------------------------------------------------------


class _QuerySource(NamedTuple):
    """What every query of a fit reads.

    ``design`` is the zero-copy bounded design
    (:class:`sklearn_dp._design.Design`), ``y`` the (clipped) labels, ``rho``
    the smoothing radius and ``entropy`` the seed of the (public)
    perturbation streams.
    """

    design: object
    y: np.ndarray
    loss: object
    rho: float
    entropy: int


class _QueryRound(NamedTuple):
    """The answers of one ball subproblem's queries, made at once.

    For GLMs a query of sample i at ``center + xi`` returns the scalar
    ``l'(<x_i, center + xi>, y_i)``; the subgradient is that scalar times
    ``x_i``.  The round stores the scalars, the perturbations and the rows'
    features (never per-query gradient vectors).  ``starts[t]:starts[t + 1]`` are the
    queries of inner step t.
    """

    center: np.ndarray
    starts: np.ndarray
    xi: np.ndarray
    features: np.ndarray
    derivative: np.ndarray


def _round_tasks(starts, round_index):
    """A round's queries as pieces ``(lo, hi, key)``, grouped into tasks.

    Each step's queries are cut into runs (pieces) of at most
    ``QUERY_CHUNK``; consecutive pieces make a task of at least
    ``QUERY_CHUNK`` queries (but the last).  ``key = (round, step, run)``
    names the random stream of the run's perturbations.  Keyed by position
    in the step's (sorted) batch, not in the round: when a row is added at
    the end of the data and the batch holds every row (the coupling of a
    substituting trace), the other rows keep their perturbations (the
    streams are prefix-consistent), so one step's sum moves by the added
    row's term only.
    """
    tasks, current, size = [], [], 0
    for step in range(len(starts) - 1):
        lo, hi = int(starts[step]), int(starts[step + 1])
        for run, first in enumerate(range(lo, hi, QUERY_CHUNK)):
            last = min(first + QUERY_CHUNK, hi)
            current.append((first, last, (round_index, step, run)))
            size += last - first
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
        counter = np.array([0, run, step, round_index], dtype=np.uint64)
        # Same as Generator(Philox(key=..., counter=...)), without building one per step.
        self._bits.state = dict(self._fresh, state=dict(self._fresh["state"], counter=counter))
        self._normal.standard_normal(out=out)


def _evaluate_task(source, center, rows, pieces):
    """Perturbations, rows and clipped derivatives of consecutive pieces of a round.

    Only the task's rows of the design are copied (dense float64, clipped, intercept column
    included; ``xi`` is dense anyway, so a dense copy of them costs no more).
    Only exact, noiseless quantities: no noise is added here (joblib workers
    run this).
    """
    lo, hi = pieces[0][0], pieces[-1][1]
    batch = rows[lo:hi]
    features = source.design.rows(batch).toarray()
    xi = np.empty((hi - lo, source.design.n_columns))
    perturbations = _Perturbations(source.entropy)
    for first, last, key in pieces:
        perturbations.fill(xi[first - lo : last - lo], key)
    xi *= source.rho
    derivative = resque_query_derivatives(features, source.y[batch], source.loss, center, xi)
    return xi, features, derivative


def _query_round(source, center, rows, starts, round_index, parallel):
    """Evaluate every query of a ball subproblem (one parallel round).

    ``source`` is a :class:`_QuerySource`; ``parallel`` is a running
    :class:`joblib.Parallel` (or None): its tasks return exact derivatives
    only; the noise is added later, in the caller.
    """
    tasks = _round_tasks(starts, round_index)
    calls = [delayed(_evaluate_task)(source, center, rows, task) for task in tasks]
    if parallel is None or len(calls) <= 1:
        parts = [function(*args, **kwargs) for function, args, kwargs in calls]
    else:
        parts = parallel(calls)
    if not parts:  # every batch is empty
        empty = np.zeros((0, source.design.n_columns))
        parts = [(empty, empty, np.zeros(0))]
    xi, features, derivative = (np.concatenate(part) for part in zip(*parts))
    return _QueryRound(center, starts, xi, features, derivative)


# --------------------------------------------------------------------------
# Inner solver: EpochSGD on ReSQue gradients over one ball
# --------------------------------------------------------------------------


def _step_sum(round_, index, point, setting):
    """The exact sum of inner step ``index``'s capped ReSQue gradients at ``point`` (not released).

    The queries ``starts[index]:starts[index + 1]`` of the round, weighted
    ``min(w_i(point), w_max)`` (``rho`` and ``w_max`` are the ``setting``'s).
    """
    batch = slice(round_.starts[index], round_.starts[index + 1])
    queries = (round_.xi[batch], round_.derivative[batch], round_.features[batch])
    scale = 1.0 / (2.0 * setting.smoothing_radius**2)
    cap = setting.max_weight
    return capped_resque_sum(*queries, point - round_.center, scale, math.log(cap), cap)


def _penalised(gradient, x, setting):
    """``gradient`` plus the exact gradients at ``x`` of the public penalties of the ``setting``.

    The L2 penalty (``alpha_mask``) and, in a localisation phase, the pull
    ``anchor_weight * (x - anchor)`` towards the previous phase's output.
    """
    if setting.alpha_mask is not None:
        gradient = gradient + setting.alpha_mask * x
    if setting.anchor is not None:
        gradient = gradient + setting.anchor_weight * (x - setting.anchor)
    return gradient


def _epoch_sgd(round_, *, lam, start, project, epochs, setting, normalizer, release, averages=None):
    """EpochSGD (docs/solvers/resque.md) for ``F_rho(x) + lam / 2 ||x - c||^2`` over the ball.

    Starts from ``project(start)``.  Step t uses the queries
    ``starts[t]:starts[t + 1]`` of the round: the gradient estimate is
    ``release(sum_i min(w_i(x), w_max) l'_i x_i) / normalizer`` plus the
    exact gradient of the public L2 penalty (``rho``, ``w_max`` and the
    penalty are the ``setting``'s), where ``release`` is the step's noisy
    release (one call per step, empty batches included, so the number of
    releases is public).  Epoch k has step size ``1 / (4 lam 2^(k-1))`` and
    returns the average of its iterates; the next epoch starts with a
    regularisation-only step from it.  ``averages``, a list when given,
    receives every epoch's average (the last is the returned point).
    """
    center = round_.center
    eta = 1.0 / (4.0 * lam)
    x = project(start)
    done = 0  # the steps of the earlier epochs

    def sgd_step(t, x):
        gradient = release(_step_sum(round_, done + t, x, setting)) / normalizer
        return project((x - eta * _penalised(gradient, x, setting) + pull) * shrink), None

    for length in epochs:
        shrink = 1.0 / (1.0 + eta * lam)
        pull = eta * lam * center
        # The epoch's average, from a regularisation-only step.
        _, x = noisy_steps(sgd_step, project((x + pull) * shrink), length, name="resque")
        if averages is not None:
            averages.append(x)
        done += length
        eta *= 0.5
    return x


# --------------------------------------------------------------------------
# Inner solver: ACSA (accelerated stochastic approximation) over one ball
# --------------------------------------------------------------------------


def acsa_stage_steps(lam, smoothness):
    """Steps of one ACSA stage, ``T = ceil(4 sqrt(smoothness / lam))``.

    ``smoothness`` is that of the whole subproblem, ``L / rho + lam`` (plus the
    public L2 penalty): the paper's ``4 sqrt(L / (rho lam) + 1)``, enough for a
    stage to halve the squared distance to the prox point up to its noise.
    """
    return max(1, math.ceil(4.0 * math.sqrt(smoothness / lam) * (1.0 - 1e-12)))


def acsa_budget_layout(n_releases, n_steps):
    """Releases per step of ACSA's stages within a fixed number of releases.

    Stage k (from 1) has ``n_steps`` steps of ``2^(k-1)`` releases each (the
    paper's minibatch doubles from stage to stage), as many stages as fit;
    the releases left over join the last stage's steps (one more each for
    the first of them), so every release the plan paid for is used and their
    number is exactly ``n_releases``.  With fewer releases than ``n_steps``,
    one stage of ``n_releases`` single-release steps.
    """
    n_releases, n_steps = int(n_releases), int(n_steps)
    if n_releases <= n_steps:
        return [[1] * n_releases]
    n_stages = max(1, int(math.floor(math.log2(n_releases / n_steps + 1.0))))
    while n_steps * (2**n_stages - 1) > n_releases:  # guard the floating-point log
        n_stages -= 1
    stages = [[2 ** (k - 1)] * n_steps for k in range(1, n_stages + 1)]
    extra, rest = divmod(n_releases - n_steps * (2**n_stages - 1), n_steps)
    stages[-1] = [m + extra + (t < rest) for t, m in enumerate(stages[-1])]
    return stages


def acsa_theory_layout(n_steps, lam, lipschitz, ball_radius, batch_size, max_queries):
    """Releases per step of the paper's ACSA for accuracy ``phi = lam r^2 / 16`` (noiseless only).

    ``K_s = ceil(log2(lam r^2 / phi)) = 4`` stages of ``n_steps`` steps; a
    step of stage k averages ``N_k = ceil(96 2^k L^2 / (lam^2 r^2 T))``
    queries (each stage halves the squared distance to the prox point),
    made as ``ceil(N_k / batch_size)`` releases of a Poisson batch of
    expected size ``batch_size``; all counts shrink in proportion when the
    queries of the call would exceed ``max_queries``.
    """
    n_stages = 4
    queries = [
        math.ceil(96.0 * 2**k * lipschitz**2 / (lam**2 * ball_radius**2 * n_steps))
        for k in range(1, n_stages + 1)
    ]
    shrink = min(1.0, max_queries / (n_steps * sum(queries)))
    return [[max(1, math.ceil(shrink * q / batch_size))] * n_steps for q in queries]


def _acsa(round_, *, lam, start, project, stages, smoothness, setting, normalizer, release):
    """ACSA (Ghadimi and Lan's multi-stage AC-SA) for ``F_rho(x) + lam / 2 ||x - c||^2`` on the ball.

    Starts from ``project(start)``.  ``stages`` lists, per stage, the releases
    of each step: a step averages that many releases of the round (each the
    noisy sum of one Poisson batch's capped ReSQue gradients at the step's
    point ``x_md``, divided by ``normalizer``), so its noise shrinks like the
    paper's growing minibatch.  Within a stage of T steps (t = 1..T):
    ``a_t = 2 / (t + 1)``, ``g_t = 4 smoothness / (t (t + 1))``,

        x_md = ((1 - a)(lam + g) x_ag + a ((1 - a) lam + g) x) / (g + (1 - a^2) lam)
        x    = argmin_{B} a <G + lam (x_md - c), u> + ((1 - a) lam + g) / 2 ||u - x||^2
                                                    + a lam / 2 ||u - x_md||^2
        x_ag = a x + (1 - a) x_ag

    (the argmin is the projection of the unconstrained minimiser: both
    quadratics are isotropic); each stage restarts ``x`` from the last
    ``x_ag``, which it returns.  Every point stays in the ball (convex
    combinations and projections), so every weight is taken within ``r`` of
    the centre, as for EpochSGD.
    """
    center = round_.center
    x_ag = project(start)
    first = 0  # the first release of the current step

    def gradient_at(point, n_releases):
        total = np.zeros_like(point)
        for index in range(first, first + n_releases):
            total += release(_step_sum(round_, index, point, setting))
        gradient = total / (normalizer * n_releases) + lam * (point - center)
        return _penalised(gradient, point, setting)

    for releases in stages:

        def acsa_step(t, W):
            nonlocal first
            x, aggregate = W
            a = 2.0 / (t + 2.0)
            g = 4.0 * smoothness / ((t + 1.0) * (t + 2.0))
            c1 = (1 - a) * lam + g
            middle = ((1 - a) * (lam + g) * aggregate + a * c1 * x) / (g + (1 - a * a) * lam)
            gradient = gradient_at(middle, releases[t])
            first += releases[t]
            x = project((c1 * x + a * lam * middle - a * gradient) / (c1 + a * lam))
            return np.stack([x, a * x + (1 - a) * aggregate]), None

        W, _ = noisy_steps(acsa_step, np.stack([x_ag, x_ag]), len(releases), name="resque")
        x_ag = W[1]
    return x_ag


class _BallOracle:
    """``solve_ball(center, lam, start)`` of :func:`ball_acceleration` for one fit.

    Each call is one round: the Poisson batches of its steps (through the
    gateway), the queries (one batched evaluation, over joblib workers when
    ``parallel`` is given), then EpochSGD with one Gaussian release per step,
    drawn here in the calling thread.  Counts rounds, steps and releases.
    """

    def __init__(self, data, loss, setting, rng, parallel):
        self.setting, self.rng, self.parallel = setting, rng, parallel
        # The zero-copy design: a round copies the rows it queries, never all of
        # X.  The entropy of the (public) perturbations is drawn before any data
        # is read.
        entropy = int(rng.integers(2**63))
        self.source = _QuerySource(data.design, data.y, loss, setting.smoothing_radius, entropy)
        self.rounds = self.steps = self.releases = self.updates = 0
        self.rows = np.arange(data.design.n_rows)
        self.normalizer, self.queries = setting.batch_size, 0.0

    def start_phase(self, phase, rows, anchor):
        """Solve the next ball subproblems on ``rows`` only, pulled towards ``anchor`` (localisation).

        Phase ``phase`` (from 0) samples its rows at the plan's rate, so its
        public expected batch is ``batch_size / 2^phase``, and adds the public
        pull ``anchor_weight * (x - anchor)`` to every gradient: phase i (from 1)
        weighs it ``1 / (eta_i n_i)`` with ``eta_i = 4^-i eta``, ``eta = R / (L n_1
        tol)`` and ``n_i = 2^(1 - i) n_1``.
        """
        s = self.setting
        self.rows, self.normalizer = rows, s.batch_size * 0.5**phase
        s.anchor = anchor.copy()
        s.anchor_weight = 8.0 ** (phase + 1) * s.tol * s.lipschitz / (2 * s.radius)

    def n_steps(self, lam):
        """Inner steps of a subproblem with proximal weight ``lam`` (public)."""
        s = self.setting
        if s.schedule == "budget":
            return s.inner_steps
        # The paper's T queries (capped), in steps of the public expected batch.
        n_queries = math.ceil(768.0 * s.lipschitz**2 / (lam**2 * s.ball_radius**2))
        return math.ceil(min(n_queries, s.max_inner) / s.batch_size)

    def release(self, exact):
        """The Gaussian mechanism on one step's exact sum (sensitivity ``w_max L``)."""
        self.releases += 1
        s = self.setting
        return gateway_release(exact, s.sensitivity, s.noise_std, self.rng, STEP_LABEL)

    def multilevel_pair(self, center, lam, level):
        """Proposition 2's extra ball call at ``2^level`` times the accuracy: two coupled points.

        One round of ``2^level`` times the subproblem's steps (EpochSGD's
        accuracy is proportional to its steps), started from the centre: the
        epochs of an ordinary call, then epochs of 1, 2, ..., ``2^(level-1)``
        times its steps at halving step sizes.  Returns the averages at
        ``2^(level-1)`` and at ``2^level`` times the steps (levels
        ``level - 1`` and ``level``), from the same run, so their difference
        has the small variance multilevel Monte Carlo needs.
        """
        base = self.n_steps(lam)
        round_ = self._round(center, base * 2**level, base * 2**level)
        head = epoch_lengths(base)
        averages = []
        _epoch_sgd(
            round_,
            epochs=head + [base * 2**m for m in range(level)],
            averages=averages,
            **self._ball_arguments(center, lam, center),
        )
        return averages[len(head) + level - 2], averages[-1]

    def _round(self, center, n_steps, n_updates):
        """The Poisson batches and evaluated queries of one round of ``n_steps`` steps (counted)."""
        # len(rows) only indexes rows (the phase's, or all): the gateway samples them.
        rows, rate = self.rows, self.setting.sampling_probability
        batches = [rows[_noise.poisson_sample(len(rows), rate, self.rng)] for _ in range(n_steps)]
        starts = np.cumsum([0] + [len(batch) for batch in batches], dtype=np.int64)
        rows = np.concatenate(batches) if batches else np.zeros(0, dtype=np.intp)
        round_ = _query_round(self.source, center, rows, starts, self.rounds, self.parallel)
        self.rounds += 1
        self.steps += n_steps
        self.queries += n_steps * self.normalizer
        self.updates += n_updates
        return round_

    def _ball_arguments(self, center, lam, start):
        """The keywords :func:`_epoch_sgd` and :func:`_acsa` share for the ball around ``center``."""
        s = self.setting
        return dict(
            lam=lam,
            start=start,
            project=partial(_project_domain, center=center, r=s.ball_radius, R=s.domain_radius),
            setting=s,
            # The public expected batch, never the realised batch size (it
            # would reveal the row count).
            normalizer=self.normalizer,
            release=self.release,
        )

    def __call__(self, center, lam, start):
        s = self.setting
        arguments = self._ball_arguments(center, lam, start)
        if s.inner == "epoch_sgd":
            n_steps = self.n_steps(lam)
            round_ = self._round(center, n_steps, n_steps)
            return _epoch_sgd(round_, epochs=epoch_lengths(n_steps), **arguments)
        # ACSA: releases per step of each stage (public).
        smoothness = s.smoothness + s.anchor_weight + lam
        n_steps = acsa_stage_steps(lam, smoothness)
        if s.schedule == "budget":
            stages = acsa_budget_layout(s.inner_steps, n_steps)
        else:
            stages = acsa_theory_layout(
                n_steps, lam, s.lipschitz, s.ball_radius, s.batch_size, s.max_inner
            )
        round_ = self._round(center, sum(map(sum, stages)), sum(map(len, stages)))
        return _acsa(round_, stages=stages, smoothness=smoothness, **arguments)
