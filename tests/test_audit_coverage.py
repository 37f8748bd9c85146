"""Fast privacy audits of every registered solver, driven by the registry.

* Every solver in ``sklearn_dp.solvers.SOLVERS`` must have a canary audit
  configuration (``sklearn_dp/testing/_audit_configs.py``) at solver level (the solver
  function on bounded data, n public) and at estimator level; a new solver
  without one fails :func:`test_every_registered_solver_has_both_audits`.
* Each level's fast audit runs here, or in the solver's own test file
  (``SOLVER_AUDITS_ELSEWHERE``, ``ESTIMATOR_AUDITS_ELSEWHERE``: checked to
  exist and not to be slow), or is listed as too slow for the default run
  with the reason (``SLOW_SOLVER_AUDITS``, ``SLOW_ESTIMATOR_AUDITS``: they
  run in ``benchmarks/bench_audit.py`` and under ``-m slow``); every solver
  has a fast audit at one level at least.
* Every audit run here has a positive control: the same audit with the noise
  off must exceed the claim.  The noise-off control also runs for every
  solver-level configuration audited elsewhere (those files have their own
  under-noised controls too).
* :func:`~sklearn_dp.testing.check_dp_event` recomputes the ``dp_event_`` of a
  fit of every estimator with every solver it accepts.

The thorough version (thousands of runs, tight bounds, table of results) is
``benchmarks/bench_audit.py``; see ``docs/audits.md``.
"""

import importlib
import math
import warnings

import pytest
from _helpers import binary_data, regression_data
from solver_configs import CONFIGS

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.accounting import epsilon_of_event
from sklearn_dp.solvers import SOLVERS
from sklearn_dp.testing import audit_mechanism, check_dp_event
from sklearn_dp.testing._audit_configs import solver_audits

FAST_RUNS = 200  # per data set: 100 choose the threshold, 100 give the bound
#: The noise-off controls are (nearly) deterministic: 60 bound runs can refute
#: epsilon = 2 (max_epsilon_lower_bound(60, 1e-5) = 2.8); dp_sgd's control
#: misses the canary when it is never sampled, and localized_mirror_descent's
#: when the canary falls outside its single phase's block (probability 1/2):
#: they need more.
CONTROL_RUNS = {"dp_sgd": 200, "localized_mirror_descent": 300}

#: Solver-level audits too slow for the default run (the solver's
#: estimator-level audit is fast), with the reason.
SLOW_SOLVER_AUDITS = {}

#: Solver-level audits of these solvers already run in the default suite.
SOLVER_AUDITS_ELSEWHERE = {
    "dp_svrg": "test_erm_revisited::test_audit_does_not_exceed_claimed_epsilon",
    "dp_svrg_pp": "test_erm_revisited::test_audit_does_not_exceed_claimed_epsilon",
    "dp_accmd": "test_erm_revisited::test_audit_does_not_exceed_claimed_epsilon",
    "objective_perturbation": "test_perturbation_audit::test_audit_stays_below_the_claim",
    "output_perturbation": "test_perturbation_audit::test_audit_stays_below_the_claim",
}

#: Estimator-level audits of these solvers already run in the default suite.
ESTIMATOR_AUDITS_ELSEWHERE = {
    "dp_gd": "test_privacy_statistical::test_audit_does_not_exceed_claimed_epsilon",
    "dp_sgd": "test_privacy_statistical::test_audit_does_not_exceed_claimed_epsilon",
    "dp_cd": "test_coordinate_descent::test_audit_does_not_exceed_claimed_epsilon",
    "frank_wolfe": "test_l1_privacy::test_audit_does_not_exceed_claimed_epsilon",
    "vr_frank_wolfe": "test_l1_privacy::test_audit_does_not_exceed_claimed_epsilon",
    "mirror_descent": "test_l1_privacy::test_audit_does_not_exceed_claimed_epsilon",
    "resque": "test_resque::test_audit_on_neighbouring_data_stays_below_epsilon",
}

#: Estimator-level audits too slow for the default run, with the reason.
#: (None at present: the strong configurations of localized_mirror_descent,
#: dp_svrg and dp_svrg_pp run one full-batch phase or epoch whose calibration
#: does not depend on the noisy row count, about 1 ms per fit.)
SLOW_ESTIMATOR_AUDITS = {}


FAST_SOLVER_AUDITS = [
    a
    for a in solver_audits("solver")
    if a.solver not in SOLVER_AUDITS_ELSEWHERE and a.solver not in SLOW_SOLVER_AUDITS
]


FAST_ESTIMATOR_AUDITS = [
    a
    for a in solver_audits("estimator")
    if a.solver not in ESTIMATOR_AUDITS_ELSEWHERE and a.solver not in SLOW_ESTIMATOR_AUDITS
]


def _audit(audit, epsilon, n_runs=None):
    n_runs = n_runs or FAST_RUNS
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_mechanism(
            audit.make_run(epsilon),
            claimed_epsilon=audit.epsilon,
            delta=max(audit.delta, 1e-12),
            n_runs=n_runs,
            include_observed=True,
        )


def test_every_registered_solver_has_both_audits():
    # A solver without a configuration of its own gets a generic one from its registry entry.
    levels = {(a.solver, a.level) for a in solver_audits()}
    for solver in SOLVERS:
        assert (solver, "solver") in levels and (solver, "estimator") in levels, solver
        fast_here = solver not in ESTIMATOR_AUDITS_ELSEWHERE and solver not in SLOW_ESTIMATOR_AUDITS
        elsewhere = solver in ESTIMATOR_AUDITS_ELSEWHERE
        slow = solver in SLOW_ESTIMATOR_AUDITS
        assert fast_here + elsewhere + slow == 1, solver
    # Every solver has a fast audit in the default run, at one level at least.
    fast_solver_level = {a.solver for a in FAST_SOLVER_AUDITS} | set(SOLVER_AUDITS_ELSEWHERE)
    fast_estimator_level = {a.solver for a in FAST_ESTIMATOR_AUDITS} | set(
        ESTIMATOR_AUDITS_ELSEWHERE
    )
    assert fast_solver_level | set(SLOW_SOLVER_AUDITS) == set(SOLVERS)
    assert fast_solver_level | fast_estimator_level == set(SOLVERS)


@pytest.mark.parametrize(
    "reference",
    sorted(set(ESTIMATOR_AUDITS_ELSEWHERE.values()) | set(SOLVER_AUDITS_ELSEWHERE.values())),
)
def test_audits_elsewhere_exist_and_are_not_slow(reference):
    module_name, function_name = reference.split("::")
    function = getattr(importlib.import_module(module_name), function_name)
    marks = {mark.name for mark in getattr(function, "pytestmark", [])}
    assert "slow" not in marks


@pytest.mark.parametrize("audit", FAST_SOLVER_AUDITS + FAST_ESTIMATOR_AUDITS, ids=lambda a: a.id)
def test_fast_audit_and_noise_off_control(audit):
    result = _audit(audit, audit.epsilon)
    assert result.consistent, f"{audit.id}: {result}"
    control = _audit(audit, math.inf, n_runs=CONTROL_RUNS.get(audit.solver, 120))
    assert not control.consistent, f"{audit.id}: the noise-off control was not caught: {control}"


@pytest.mark.parametrize(
    "audit",
    [a for a in solver_audits("solver") if a.solver in SOLVER_AUDITS_ELSEWHERE],
    ids=lambda a: a.id,
)
def test_noise_off_control_of_audits_elsewhere(audit):
    control = _audit(audit, math.inf, n_runs=120)
    assert not control.consistent, f"{audit.id}: the noise-off control was not caught: {control}"


@pytest.mark.slow
@pytest.mark.parametrize("audit", solver_audits(), ids=lambda a: a.id)
def test_thorough_audit(audit):
    n_runs = 200 if audit.solver in SLOW_ESTIMATOR_AUDITS and audit.level == "estimator" else 2000
    result = _audit(audit, audit.epsilon, n_runs=n_runs)
    assert result.consistent, f"{audit.id}: {result}"


# --------------------------------------------------------------------------
# check_dp_event on a fit of every estimator with every solver it accepts
# --------------------------------------------------------------------------


@pytest.mark.parametrize("audit", solver_audits("solver"), ids=lambda a: a.id)
def test_solver_plan_event_meets_the_claim(audit):
    """The event a solver records, recomputed with dp_accounting (n public)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit.make_run.fit(audit.epsilon, True, 0)
    recomputed = epsilon_of_event(result.plan.event, audit.delta)
    assert recomputed <= audit.epsilon * (1 + 1e-6), (audit.id, recomputed)


def _data(estimator, n=300, seed=0):
    if estimator is DPLogisticRegression:
        return binary_data(n, 3, seed=seed, noise=0.3)
    return regression_data(n, 3, seed=seed, coef=(0.5,), clip=1.0)


#: Settings that make each solver cheap and acceptable to the estimators.
#: Parameters every fit of an estimator takes here (the pairs' own: CONFIGS).
ESTIMATOR_PARAMS = {DPLogisticRegression: dict(classes=[0, 1])}

_ESTIMATORS = [DPLogisticRegression, DPSCORegressor, DPLasso]

#: Solvers whose estimator fits calibrate by PLD for every noisy row count
#: (5-25 s per fit, cold): their estimator fits are checked under -m slow; the
#: default run checks their solver-level events above.
PLD_HEAVY = {
    "dp_sgd",
    "dp_svrg",
    "dp_svrg_pp",
    "mirror_descent",
    "localized_mirror_descent",
    "resque",
}

#: Known failures (not privacy), expected to raise: none at present.
KNOWN_FAILURES = {}


def _pairs():
    """The configured pairs (``CONFIGS``: every pair the registry accepts; the
    refusal of the others is tested in test_substitution.py and test_fuzz.py)."""
    for estimator in _ESTIMATORS:
        for solver in sorted(SOLVERS):
            if (estimator.__name__, solver) not in CONFIGS:
                continue
            marks = [pytest.mark.slow] if solver in PLD_HEAVY else []
            reason = KNOWN_FAILURES.get((estimator.__name__, solver))
            if reason:
                marks.append(pytest.mark.xfail(raises=ValueError, strict=True, reason=reason))
            yield pytest.param(estimator, solver, marks=marks, id=f"{estimator.__name__}-{solver}")


def _build(estimator, solver):
    # A pair without a configuration must be refused by the registry (skipped below).
    params = {
        **ESTIMATOR_PARAMS.get(estimator, {}),
        **CONFIGS.get((estimator.__name__, solver), {}),
    }
    return estimator(
        epsilon=1.0,
        delta=1e-5 if SOLVERS[solver].approximate_dp else 0.0,
        solver=solver,
        random_state=0,
        **params,
    )


@pytest.mark.parametrize("estimator, solver", list(_pairs()))
def test_check_dp_event_on_every_estimator_and_solver(estimator, solver):
    model = _build(estimator, solver)
    X, y = _data(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    assert model.solver_ == solver
    recomputed = check_dp_event(model)
    assert recomputed <= model.privacy_spent_[0] * (1 + 1e-6)


def test_every_solver_is_fitted_by_some_estimator():
    # From the parametrization above, not from what an earlier test recorded:
    # every registered solver has a configured pair, and one that runs (not
    # expected to fail) in the default run unless the solver is PLD-heavy.
    def marks(param):
        return {mark.name for mark in param.marks}

    pairs = list(_pairs())
    configured = {param.values[1] for param in pairs}
    assert configured == set(SOLVERS), sorted(set(SOLVERS) - configured)
    in_default_run = {param.values[1] for param in pairs if not marks(param) & {"slow", "xfail"}}
    missing = set(SOLVERS) - PLD_HEAVY - in_default_run
    assert not missing, f"no estimator fits these solvers in the default run: {sorted(missing)}"
    assert PLD_HEAVY <= set(SOLVERS), sorted(PLD_HEAVY - set(SOLVERS))
