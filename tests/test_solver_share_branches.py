"""The solver's share picks its branch from released values: the mixture of the branches meets the guarantee.

After a fit releases its count and bounds (pure ``epsilon - floor``-DP), the
solver runs either the mechanism certified numerically with them (fixed for
the public inputs) or, when the plan from released values is another one,
its plan at the basic-composition ``floor``.  Which one runs depends on the
released values, so the fit is a mixture of the two; these tests compute
that mixture's delta exactly (dp_accounting's privacy-loss distributions),
not by sampling.
"""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant

from sklearn_dp._bounds import selection_event
from sklearn_dp._dp_accounting_compat import accountant_pld, pld_directions, pmf_atoms
from sklearn_dp._labels import label_candidates
from sklearn_dp._protocol import SolverPlanner
from sklearn_dp.accounting import NEIGHBORING_RELATION
from sklearn_dp.exceptions import PrivateFitError
from sklearn_dp.solvers import SolverCall
from sklearn_dp.solvers._noisy_steps import gaussian_plan

EPSILON, DELTA = 1.0, 1e-5
COUNT_EPSILON, BOUND_EPSILON = 0.05, 0.1
FLOOR = EPSILON - COUNT_EPSILON - BOUND_EPSILON
PREFIX = dpe.ComposedDpEvent(
    [dpe.LaplaceDpEvent(1.0 / COUNT_EPSILON), selection_event(BOUND_EPSILON, "row norm bound")]
)
PUBLIC_BOUND = 1.0


def _planner(other):
    """A planner whose solver plans one Gaussian step at the public bound, ``other`` at any other."""

    def plan(n_samples, n_params, epsilon, delta, call):
        if call.row_norm_bound == PUBLIC_BOUND:
            return gaussian_plan(epsilon, delta, 1)
        return other(epsilon, delta)

    def arguments(problem, n_public, bounds, options):
        return 3, SolverCall({"row_norm_bound": bounds})

    planner = SolverPlanner(plan, arguments, epsilon=EPSILON, delta=DELTA, floor=FLOOR)
    planner.before_data(None, PUBLIC_BOUND, None, PREFIX)
    return planner


def _pld(event):
    accountant = pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION, 1e-4)
    accountant.compose(event)
    return accountant_pld(accountant)


def _direction(pld, index):
    """Direction ``index`` (0: remove, 1: add) of ``pld``: both are one for a symmetric one."""
    directions = pld_directions(pld)
    return directions[min(index, len(directions) - 1)]


def _worst_mixture_delta(fixed, other):
    """Delta at EPSILON of the prefix followed by either event, whichever its output picks.

    For neighbours ``D, D'`` the divergence is ``sum_o p(o) delta_{M(o)}(epsilon
    - L(o))`` (``o`` the prefix's output, ``L(o)`` its privacy loss), so no
    choice of branches exceeds the prefix's pair composed with the pointwise
    larger of the two curves (a valid privacy curve: Zhu, Dong and Wang 2022).
    Computed from the pessimistic distributions, in both directions.
    """
    prefix, curves = _pld(PREFIX), [_pld(fixed), _pld(other)]
    worst = 0.0
    for direction in (0, 1):
        losses, probabilities, infinity_mass = pmf_atoms(_direction(prefix, direction))
        # Merged on a grid of 1e-3, each loss rounded up: the curves fall, so
        # the sum only grows.
        keys, inverse = np.unique(np.ceil(losses / 1e-3 - 1e-9), return_inverse=True)
        masses = np.bincount(inverse, weights=probabilities)
        total = infinity_mass
        for loss, mass in zip(keys * 1e-3, masses):
            if mass > 0:
                total += mass * max(
                    _direction(c, direction).get_delta_for_epsilon(EPSILON - loss) for c in curves
                )
        worst = max(worst, total)
    return worst


def _subsampled(epsilon, delta):
    # One step on a Poisson sample of 0.1%: its curve falls more slowly than
    # a Gaussian's and crosses the numerical share's above the floor.
    return gaussian_plan(epsilon, delta, 1, rate=0.001)


def _more_steps(epsilon, delta):
    return gaussian_plan(epsilon, delta, 7)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_branch_of_another_profile_at_the_floor_keeps_the_mixture_within_delta():
    share, fixed = _planner(_subsampled).after_release(None, 100.0, PUBLIC_BOUND, None, PREFIX)
    assert share > FLOOR  # the numerical branch at the public bound
    floor_share, other = _planner(_subsampled).after_release(None, 100.0, 5.0, None, PREFIX)
    assert floor_share == FLOOR
    # At the floor's full delta the mixture would reach about 1.3 delta.
    naive = _subsampled(FLOOR, DELTA).event
    assert _worst_mixture_delta(fixed.event, naive) > 1.2 * DELTA
    assert _worst_mixture_delta(fixed.event, other.event) <= DELTA


def test_a_gaussian_branch_at_the_floor_keeps_its_delta():
    """Gaussian curves are ordered by their one parameter: the floor's lies below, unchanged."""
    _, fixed = _planner(_more_steps).after_release(None, 100.0, PUBLIC_BOUND, None, PREFIX)
    floor_share, other = _planner(_more_steps).after_release(None, 100.0, 5.0, None, PREFIX)
    assert floor_share == FLOOR
    assert other == _more_steps(FLOOR, DELTA)
    assert _worst_mixture_delta(fixed.event, other.event) <= DELTA


class _Extremes:
    """Data-independent releases: the row count and each bound's index at one extreme."""

    def __init__(self, count, position):
        self.count, self.position, self.calls = count, position, 0

    def __call__(self, release):
        self.calls += 1
        if release.label == "label set (candidates)":
            # The public candidate labels' noisy counts: 0 and 1 hold the rows.
            candidates = label_candidates(np.int64).tolist()
            counts = np.zeros(np.shape(release.output))
            counts[[candidates.index(0), candidates.index(1)]] = max(
                self.count / 2, 100.0 * release.scale
            )
            return counts
        if release.mechanism == "thresholded_laplace":
            keys = np.asarray([0, 1], dtype=np.asarray(release.output).dtype)
            if release.released_counts is not None:
                return keys, np.full(keys.size, self.count / keys.size)
            return keys
        if release.label == "row count":
            return float(self.count)
        if release.mechanism == "exponential":
            return 0 if self.position == "low" else np.size(release.value) // 2
        shape = np.shape(release.output)
        noise = 0.05 * np.random.default_rng(self.calls).standard_normal(shape)
        return noise if shape else float(noise)


def _configs():
    from solver_configs import CONFIGS

    from sklearn_dp._protocol import GROUP_SOLVERS

    cases = []
    for (estimator, solver), params in sorted(CONFIGS.items()):
        name = f"{estimator}-{solver}"
        cases.append(pytest.param(estimator, solver, params, False, id=name))
        if estimator == "DPLogisticRegression":
            released = dict(params, classes=None)
            cases.append(pytest.param(estimator, solver, released, False, id=f"{name}-labels"))
        if solver in GROUP_SOLVERS:
            grouped = dict(params, max_group_rows=2)
            cases.append(pytest.param(estimator, solver, grouped, True, id=f"{name}-groups"))
        if solver in ("dp_gd", "dp_newton") and estimator != "DPLasso":
            bounds = {k: v for k, v in params.items() if k not in ("feature_bound", "data_norm")}
            for epsilon in (20.0, 1.0):  # per-feature scales, and their fallback
                scaled = dict(bounds, feature_scaling=True, epsilon=epsilon)
                cases.append(
                    pytest.param(estimator, solver, scaled, False, id=f"{name}-scaled{epsilon:g}")
                )
    return cases


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("estimator, solver, params, grouped", _configs())
def test_each_builtin_solver_takes_one_branch_whatever_the_released_values(
    monkeypatch, estimator, solver, params, grouped
):
    """The built-in solvers are never a mixture: the share and its delta follow public inputs only.

    A plan made before the count reads no released value into its event
    (``event_reads_bounds=False``), so the branch is decided by public inputs
    (and a released label set, composed before by basic composition); no
    fit's delta is cut.
    """
    from solver_configs import _ESTIMATORS

    from sklearn_dp.testing import trace_releases

    seen = []
    after_release = SolverPlanner._after_release

    def recording(self, *args):
        share, delta = after_release(self, *args)
        seen.append((share, delta == self.delta))
        return share, delta

    monkeypatch.setattr(SolverPlanner, "_after_release", recording)
    after_skipped = SolverPlanner.after_skipped_releases

    def recording_skipped(self, *args):
        # A fit that released no scales and gives their share to the solver
        # (the other mixture, of the scales' branches: tests/test_feature_scaling.py).
        found = after_skipped(self, *args)
        if found is not None:
            seen.append((found[0], True))
        return found

    monkeypatch.setattr(SolverPlanner, "after_skipped_releases", recording_skipped)
    cls, base = _ESTIMATORS[estimator]
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 3))
    y = np.arange(40) % 2 if estimator == "DPLogisticRegression" else X @ [0.5, 0.0, -0.5]
    for count in (3.0, 1e4):
        for position in ("low", "middle"):
            model = cls(random_state=0, solver=solver, **{"epsilon": 1.0, **base, **params})
            fit_params = dict(groups=np.arange(40) % 13) if grouped else {}
            with trace_releases(substitute=_Extremes(count, position)):
                try:
                    model.fit(X, y, **fit_params)
                except (ValueError, PrivateFitError):
                    pass  # a refusal from the released values (public)
    assert seen
    assert len({share for share, _ in seen}) == 1, seen
    assert all(kept for _, kept in seen), seen
