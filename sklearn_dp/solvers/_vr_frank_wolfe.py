"""One-pass private variance-reduced Frank-Wolfe over an l1 ball: ``vr_frank_wolfe``.

Algorithm 3 of Asi, Feldman, Koren and Talwar (2021): Frank-Wolfe steps over
the polytope of :mod:`._l1_geometry`, with variance-reduced (SPIDER-style)
gradient estimates on a binary tree per phase, each row used at one tree
vertex only.  The vertex selection, its accounting and the option checks are
:func:`frank_wolfe`'s (:mod:`._frank_wolfe`); see :func:`vr_frank_wolfe`.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np

from .. import accounting
from .._clipped_sums import vr_correction, vr_root_estimate
from .._design import block_rows
from .._memo import memoize
from ..accounting import PureEpsilonDpEvent
from ._common import PrivacyPlan
from ._frank_wolfe import (
    FrankWolfeSteps,
    frank_wolfe_setup,
    vertex_scales,
    zcdp_budget,
)
from ._l1_geometry import (
    allocate_rows,
    project_l1_ball,
    public_setup,
    strong_convexity,
    strongly_convex_rounds,
    zero_model_result,
)
from ._noise_warnings import frank_wolfe_warning

#: vr_frank_wolfe's phases without noise (every vertex on every row): 2^10 - 2 = 1022
#: Frank-Wolfe steps, about frank_wolfe's DEFAULT_NONPRIVATE_ITERATIONS.
NONPRIVATE_VR_PHASES = 9


def _samples_per_root(n_samples, n_phases):
    """Root batch b(T) using (almost) every row: b (T + T(T+1)/4) <= n, b a multiple of 2^T."""
    per_sample = n_phases + n_phases * (n_phases + 1) / 4.0
    unit = 2**n_phases
    return unit * int(math.floor(n_samples / (unit * per_sample)))


def _vr_selection_epsilon(epsilon, delta, schedule):
    """The single-selection epsilon the accounting allows (see :func:`vr_frank_wolfe`)."""
    if math.isinf(epsilon):
        return math.inf, "none"
    if schedule == "pure" or delta == 0:
        return float(epsilon), "pure"
    eps_zcdp = math.sqrt(8.0 * zcdp_budget(float(epsilon), float(delta)))
    return (eps_zcdp, "zcdp") if eps_zcdp > epsilon else (float(epsilon), "pure")


def _vr_error_bound(
    root_batch, n_params, eps_selection, n_phases, diameter=2.0, lipschitz=2.0, smoothness=1.0
):
    """Public pre-tuning bound of the seed (section 4.1), by default for unit bounds.

    ``D (L + beta D) sqrt(ln d / b) + beta D^2 / 2^T + lambda_T ln m`` with
    ``lambda_T = 2^T D L / (b eps)`` the Gumbel scale of the last phase; the
    defaults ``D = 2``, ``L = C = 2``, ``beta = 1`` are |x_ij| <= 1, |y| <= 1
    and radius 1.  ``root_batch`` is inf when every vertex uses every row.
    """
    d = max(n_params, 2)
    sampling = diameter * (lipschitz + smoothness * diameter) * math.sqrt(math.log(d) / root_batch)
    optimisation = smoothness * diameter**2 / 2**n_phases
    noise = 2**n_phases * diameter * lipschitz / (root_batch * eps_selection) * math.log(2 * d)
    return sampling + optimisation + noise


def _leaf_epsilons(eps_selection, n_phases, schedule):
    """Epsilon of one leaf's selection in each phase for a row of the root batch."""
    if schedule == "pure":
        # lambda_t = 2^(t+1) R C / (b eps): each row is eps-DP whatever its depth.
        return [eps_selection / 2.0**t for t in range(1, n_phases + 1)]
    # One scale for every leaf (seed Theorem 7), set by the deepest slots.
    return [eps_selection / 2.0**n_phases] * n_phases


@memoize(maxsize=1024)
def vr_frank_wolfe_schedule(n_samples, n_params, epsilon, delta, schedule="pure", n_phases=None):
    """(T, b): phases and root batch, from public inputs only.

    ``b(T)`` fills the data (docs/solvers/lasso.md) instead of the seed's
    ``b = n / log2(n)^2``, which leaves most of it unused; T minimises the
    pre-tuning bound (:func:`_vr_error_bound`) unless given.
    """
    # Every T whose root batch holds a slot per leaf (its bound is then finite):
    # the given one, or the first minimiser of the bound.
    first = 1 if n_phases is None else int(n_phases)
    candidates = itertools.count(first) if n_phases is None else [first]
    feasible = itertools.takewhile(lambda t: _samples_per_root(n_samples, t) >= 2**t, candidates)
    eps_selection, _ = _vr_selection_epsilon(epsilon, delta, schedule)

    def bound(t):
        return _vr_error_bound(_samples_per_root(n_samples, t), n_params, eps_selection, t)

    best_t = min(feasible, key=bound, default=None)
    if best_t is None:
        given = "" if n_phases is None else f" with n_phases={first}"
        rows = math.ceil(2**first * (first + first * (first + 1) / 4))
        raise ValueError(
            f"vr_frank_wolfe{given} needs at least {rows} rows; got n_samples = "
            f"{n_samples:.4g} (the public row count: the fit's DP row count)."
        )
    return best_t, _samples_per_root(n_samples, best_t)


@public_setup()  # a plan reads public inputs (and the released row count) only
def plan_vr_frank_wolfe(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``vr_frank_wolfe`` (see its Privacy section).

    ``details["leaf_epsilons"][t - 1]`` is the epsilon of one leaf's selection
    in phase t for a row of the root batch (sensitivity ``C / b``); a row at
    depth j has ``2^j`` times that at each of its ``2^(t-j)`` leaves.
    ``noise_multiplier`` is ``2 / leaf_epsilons[0]`` (Gumbel scale over
    sensitivity).  ``call`` holds the arguments of the run
    (a :class:`~sklearn_dp.solvers.SolverCall`).
    """
    schedule, n_phases = call.schedule, call.n_phases
    if n_samples is None:
        return None  # the schedule needs the (not yet released) public row count
    every_row = math.isinf(epsilon)
    blocks = strongly_convex_rounds(n_samples) if call.strongly_convex else [float(n_samples)]
    if every_row:
        # Without noise nothing is spent and the one-pass split has no purpose:
        # every tree vertex uses every row (its estimates are exact gradients),
        # over enough phases for about as many steps as frank_wolfe takes.
        n_phases = NONPRIVATE_VR_PHASES if n_phases is None else int(n_phases)
        rounds = [(n_phases, float(n_samples))] * len(blocks)
        used = float(n_samples)
    else:
        public = (n_params, float(epsilon), float(delta), schedule, n_phases)
        rounds = [vr_frank_wolfe_schedule(block, *public) for block in blocks]
        used = sum(b * (t + t * (t + 1) / 4.0) for t, b in rounds)
    n_steps = sum(2 ** (t + 1) - 2 for t, _ in rounds)
    eps_selection, how = _vr_selection_epsilon(epsilon, delta, schedule)
    leaf = _leaf_epsilons(eps_selection, rounds[0][0], schedule)
    details = dict(
        n_phases=rounds[0][0],
        root_batch=rounds[0][1],
        rounds=rounds,
        samples_used=used,
        n_fw_steps=n_steps,
        schedule=schedule,
        leaf_epsilons=leaf,
        accounting=how,
        selection_epsilon=eps_selection,
    )
    if every_row:  # infinite leaf epsilons: exact selections
        details.update(every_row_at_every_vertex=True)
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    # The rounds of the strongly convex reduction hold disjoint rows, each round is
    # calibrated alone: parallel composition, the event of a single round.
    if how == "zcdp":
        event = accounting.dpe.ZCDpEvent(eps_selection**2 / 8.0)
    else:
        event = PureEpsilonDpEvent(
            float(epsilon) * (1.0 - 1e-12),
            "vr_frank_wolfe: one pass, random allocation of rows to tree vertices; "
            "per-row composition of exponential mechanisms",
        )
    return PrivacyPlan(event, 2.0 / leaf[0], n_steps, details)


def vr_frank_wolfe(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    clip_norm=None,
    radius=None,
    constraint="l1",
    l1_ratio=0.0,
    intercept_bound=None,
    schedule="pure",
    n_phases=None,
    output="tail_average",
    strongly_convex=False,
    random_state=None,
    verbose=0,
    plan=None,
):
    """One-pass private variance-reduced Frank-Wolfe (Asi, Feldman, Koren, Talwar 2021, Alg. 3).

    Same objective and polytope as :func:`frank_wolfe`.  T phases; phase t
    owns a complete binary tree of depth t whose 2^t leaves each take one
    Frank-Wolfe step (2^(T+1) - 2 steps in all, step ``2 / (k + 1)`` on a
    global counter k: seed erratum E11).  The root estimates the gradient
    at the phase's first iterate on a fresh batch of b rows; each right child
    at depth j corrects its parent's estimate with
    ``mean_{i in S} clip_C(g_i(x_now) - g_i(x_parent))`` on b / 2^j fresh rows
    (SPIDER); left children inherit.  Every row is used at one tree vertex
    only: once at a root, twice (at two points) at a right child.

    Parameters
    ----------
    data, loss, n_outputs, alpha, epsilon, delta, clip_norm, radius, constraint,
    l1_ratio, intercept_bound, random_state, verbose
        As in :func:`frank_wolfe`.
    schedule : {"pure", "approximate"}, default="pure"
        ``"pure"``: the Gumbel scale doubles per phase, ``lambda_t = 2^(t+1)
        R C / (b epsilon)`` (seed Theorem 6).  ``"approximate"``: one scale for
        every leaf of every phase and T chosen for (epsilon, delta) (seed
        Theorem 7), calibrated by an accountant (see Privacy).  The pure
        schedule is the default whatever delta, because it is never noisier.
    n_phases : int, optional
        T; by default the T minimising the seed's pre-tuning bound for unit
        bounds.  The root batch b is then the largest multiple of 2^T with
        ``b (T + T (T + 1) / 4) <= n``: the tree's vertices use (almost) all
        the data, instead of the seed's wasteful ``b = n / log2(n)^2``.
    output : {"tail_average", "last"}, default="tail_average"
        As in :func:`frank_wolfe` (the seed returns the last iterate).
    strongly_convex : bool, default=False
        The reduction of seed section 5 (Theorem 9) for an objective that is
        strongly convex from public knowledge (an L2 penalty on every
        coefficient, no intercept, no L1 part): ``ceil(log2 log2 n)`` rounds
        on disjoint blocks of ``2^(i-2) n / log2 n`` rows, each a whole run
        (its own T and b) started at the previous round's output.  Round i + 1
        runs over the l1 ball of radius ``R = 2 sqrt(2 Delta_i / lambda)``
        around that output (``Delta_i``: the round's public pre-tuning bound,
        ``lambda = alpha / d``: the l1 modulus), when R is below ``radius``:
        the vertices ``x_i +- R e_j`` (the spec's approximation of the
        intersection with the polytope), then the output projected back onto
        the polytope.  ``plan.details["rounds"]`` holds each round's (T, b),
        ``details["round_radii"]`` each round's R (inf: the polytope).
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_vr_frank_wolfe` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    With ``epsilon=inf`` nothing is spent and the one-pass split (whose only
    purpose is to divide the privacy cost among the rows) is dropped: every
    tree vertex uses every row, so its estimates are exact gradients, over
    ``NONPRIVATE_VR_PHASES`` phases unless ``n_phases`` is given (1022
    Frank-Wolfe steps, about ``frank_wolfe``'s 1000).

    **Fallback.**  Where the public error bound of its honest warning
    (:func:`~sklearn_dp.solvers._noise_warnings.frank_wolfe_warning`: the
    released row count, d, epsilon, delta and the radius, against the
    registry's ``bound_warning``) is vacuous, every measured fit predicted
    worse than the zero model (docs/solvers/lasso.md), so the solver returns
    that model (every coefficient 0; the estimators then predict the label
    centre) with ``n_iter = 0`` and a warning naming what to do instead
    (``frank_wolfe``, more rows, a larger epsilon), before it reads a row or
    draws any noise.

    Returns
    -------
    SolverResult
        ``info["sample_uses"]`` counts the gradient evaluations of each row
        (at most 2 when private: the one-pass property; 0 for the fallback).

    Privacy
    -------
    Released, all through the noise gateway: the allocation of the rows to
    the tree vertices (:func:`sklearn_dp._noise.allocate_rows`, public
    probabilities) and, at each leaf, the vertex chosen by the exponential
    mechanism (:func:`sklearn_dp._noise.exponential`; one release for the l1
    ball, one per box coordinate, as in :func:`frank_wolfe`).  A leaf's
    estimate is its phase's root estimate plus the corrections of the right
    children on its path; a row sits in one slot, so it moves the estimate
    by at most ``clip / size`` of the smallest slot on the path in
    l-infinity, and each release declares that bound times ``radius`` (the
    ball) or ``box_j`` (box coordinate j) as its sensitivity.  The iterates,
    the progress lines (step size, support and l1 norm of the iterate),
    ``n_iter`` and every exception are functions of public values, of the
    released row count and of the released vertices only.

    Add/remove-one-row neighbouring.  Rows are allocated to the tree vertices
    independently at random (vertex k with probability ``size_k / n``, where
    the sizes are public, or to no vertex), and every estimate is normalised
    by its vertex's public expected size.  A row allocated to a depth-j vertex
    of phase t (expected size ``b / 2^j``) changes the estimates, by at most
    ``2^j C / b`` in l-infinity, only at the 2^(t-j) leaves under that vertex:
    correction terms are clipped as a whole to ``C`` (seed erratum E12, resolved
    by clipping, so the seed's noise is not doubled), and add/remove halves
    the seed's replace-one sensitivity.  With Gumbel scale ``lambda`` each of
    those leaves is ``2 * 2^j R C / (b lambda)``-DP (R = ``vertex_radius``), so
    given the allocation of the other rows the run with the row differs from
    the run without it by a composition of 2^(t-j) exponential mechanisms:
    ``2^(t+1) R C / (b lambda)``-DP, whatever j (the pure schedule sets this
    to epsilon in every phase), and ``2^(t+j) (R C / (b lambda))^2 / 2``-zCDP.
    Mixing over the random allocation keeps the worst case (hockey-stick and
    Renyi divergences are jointly (quasi-)convex), so the fit is epsilon-DP
    (``PureEpsilonDpEvent``) or rho-zCDP with the deepest slot's rho
    (``ZCDpEvent``), whichever the accountant finds tighter at delta.  The
    seed's (epsilon, delta) analysis also amplifies by shuffling the rows of
    each depth; we do not claim that (its local-randomizer argument needs
    each vertex's computation to be private against a change of the whole
    vertex batch, not of one row), so the approximate schedule is certified
    by composition alone and is never less noisy than the pure one.
    With ``strongly_convex`` the allocation spans the slots of every round,
    so a row sits in one slot of one round; each round is calibrated to the
    whole guarantee, the rounds after it see the row only through released
    outputs (their centres) and public radii, and the fit's event is the
    single run's (parallel composition: every round has the same event).  A
    local round's scores ``<x_i +- R e_j, g>`` move by ``R`` times the
    estimate's change (the common term cancels in the mechanism), the
    sensitivity it declares.
    The fallback's decision reads public values and the released row count
    only, and releases nothing; its fit keeps the whole planned charge and
    ``dp_event`` (the reservation stands once made, even though the
    solver's share is not drawn), so the guarantee is the planned one.
    Public: the bounds, radius, alpha, T and b; the row count is private: the estimators pass a
    DP count (``data.n_public``, ``data.normalizer``); a direct call on data without one treats
    n as public.
    """
    args = SimpleNamespace(**locals())
    # The bounded design as an operator on the caller's X: a slot's rows are
    # copied a block at a time (``design.rows``), never the whole matrix.
    X, y = data.design, data.y
    n_rows, n_columns = X.shape
    with public_setup():  # public inputs and the released row count only
        domain, plan, clip = frank_wolfe_setup("vr_frank_wolfe", args)
        # The fallback: where the honest warning's public bound is vacuous, the
        # zero model, decided from released values before any row is read.
        public = (data.n_public, data.n_columns, epsilon, delta, radius)
        vacuous = frank_wolfe_warning("vr_frank_wolfe", loss.name, *public)
        if vacuous is not None:
            return zero_model_result(n_rows, n_columns, plan, vacuous)
        if strongly_convex:
            modulus = strong_convexity("vr_frank_wolfe", domain, l1_part=False)  # in ||.||_1
            feature_bound = float(np.max(data.feature_bound))
            smoothness = (loss.smoothness or 1.0) * feature_bound**2 + np.max(domain.l2_penalty)
        rounds, eps0 = plan.details["rounds"], plan.details["selection_epsilon"]
        # Public slot sizes in DFS order, round after round: per phase the root (b),
        # then the right children at depth j (b / 2^j each) in traversal order.
        sizes = [s for T, b in rounds for t in range(1, T + 1) for s in _phase_sizes(t, b)]
        sizes = np.asarray(sizes, dtype=float)
        every_row = plan.details.get("every_row_at_every_vertex", False)
        if every_row:
            sizes[:] = data.normalizer  # every vertex averages over every row
    row_scale = X.row_norms(np.inf)  # each row's ||x_i||_inf, without a copy of X
    steps = FrankWolfeSteps("vr_frank_wolfe", args, domain, plan)
    uses = np.zeros(n_rows, dtype=np.int64)
    allocation = None  # epsilon=inf: no allocation, every vertex's slot is the whole data
    if not every_row:
        # Every row draws its slot (the gateway's allocation, public probabilities):
        # the rounds of the strongly convex reduction get disjoint rows.
        allocation = allocate_rows(steps.rng, n_rows, data.n_public, sizes)
        order = np.argsort(allocation, kind="stable")
        starts = np.searchsorted(allocation[order], np.arange(len(sizes) + 2))
    chunk = block_rows(n_rows, X.n_features, X.X.nnz if X.sparse else None)

    def estimate(slot, kernel, *points):
        # The kernel summed over the slot's rows (one gradient per row and point),
        # block by block of rows (the copy of a block stays small next to X): the
        # slot's estimate up to rounding.
        if every_row:
            uses[:] += len(points)
            return kernel(X, y, *points, loss, clip, row_scale, sizes[slot])  # no copy
        index = order[starts[slot] : starts[slot + 1]]
        uses[index] += len(points)
        total = np.zeros(n_columns)
        for start in range(0, index.size, chunk):
            part = index[start : start + chunk]
            total += kernel(
                X.rows(part), y[part], *points, loss, clip, row_scale[part], sizes[slot]
            )
        return total

    slots = iter(range(len(sizes)))

    def visit(depth, t, w_node, v_node, v_unit):
        # v_unit: public bound on the l-inf change of v_node from one row, the
        # largest clip / size over the slots on the path (a row is in one slot).
        if depth == t:
            gradient = v_node + domain.l2_penalty * w_node
            return steps.step(w_node, gradient, phase_scales[t - 1], v_unit)
        w_left = visit(depth + 1, t, w_node, v_node, v_unit)
        slot = next(slots)
        v_right = v_node + estimate(slot, vr_correction, w_left, w_node)
        return visit(depth + 1, t, w_left, v_right, max(v_unit, clip / sizes[slot]))

    w, local_radius, all_scales, radii = np.zeros(n_columns), math.inf, [], []
    for T, b in rounds:
        # A later round of the strongly convex reduction runs over the l1 ball of
        # the public radius around the previous output (released), when that ball
        # is smaller than the polytope's.
        local = local_radius < radius
        round_domain = dataclasses.replace(domain, radius=local_radius) if local else domain
        leaf = _leaf_epsilons(eps0, T, schedule)
        phase_scales = [vertex_scales(round_domain, clip / b, eps) for eps in leaf]
        all_scales.append(phase_scales)
        radii.append(local_radius if local else math.inf)
        steps.restart(round_domain, 2 ** (T + 1) - 2, w.copy() if local else None)
        for t in range(1, T + 1):
            slot = next(slots)
            w = visit(0, t, w, estimate(slot, vr_root_estimate, w), clip / sizes[slot])
        w = steps.output(w)
        if local:  # back into the polytope (the ball may leave it): post-processing
            w = project_l1_ball(w, radius)
        if strongly_convex:
            # modulus-strong convexity in ||.||_1: ||x - x*||_1^2 <= 2 (F(x) - F*) / modulus;
            # twice that radius for slack against the bound's expectation.
            batch, diameter = math.inf if every_row else b, 2.0 * min(local_radius, radius)
            error = _vr_error_bound(batch, n_columns, eps0, T, diameter, clip, smoothness)
            local_radius = min(local_radius, 2.0 * math.sqrt(2.0 * error / modulus))
    # Per-row diagnostics (private: for tests of the one-pass property; no
    # estimator exposes them).
    info = dict(sample_uses=uses, allocation=allocation, slot_sizes=sizes)
    unit = clip / rounds[0][1]  # l-inf change of a root estimate from one row
    details = dict(clip_norm=clip, sensitivity_root=domain.vertex_radius * unit, round_radii=radii)
    scales = all_scales[0] if len(all_scales) == 1 else all_scales
    return steps.result(w, info, **details, gumbel_scales=scales)


def _phase_sizes(t, b):
    """Slot sizes of a phase's depth-t tree in depth-first order: the root's, then the right children's.

    Each internal vertex, met in order (left subtree, the vertex's right
    child, right subtree), is the i-th of ``2^t - 1``; i with ``z`` trailing
    zero bits is at depth ``t - 1 - z``, so its right child (depth ``t - z``)
    gets ``b / 2^(t - z)`` rows.
    """
    return [b, *(b / 2 ** (t - ((i & -i).bit_length() - 1)) for i in range(1, 2**t))]
