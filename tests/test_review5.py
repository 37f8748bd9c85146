"""Regression tests of the fifth privacy review (session 4, after 445ca9d).

Under review: the honest warnings (``solvers/_honesty.py`` and their call
sites), the default epochs of dp_svrg / dp_svrg_pp on regression losses
(``quiet_svrg_epochs``), the epsilon=inf-only schedules (dp_cd's actual
curvature and reshuffling, the SVRG stop), frank_wolfe's penalty-ball refusal
(only with delta > 0) and the estimators' share rule under released bounds.
No leak was found; the guards below pin what the review checked, and the
xfail test records the (non-privacy) defect it found.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
import test_substitution as substitution

import sklearn_dp
from sklearn_dp import DPLasso
from sklearn_dp.budget import PrivacyBudget
from sklearn_dp.solvers import SOLVERS
from sklearn_dp.testing import trace_releases


def _regression(n, scale_x=1.0, scale_y=1.0, seed=0, d=5):
    rng = np.random.default_rng(seed)
    X = scale_x * rng.uniform(-1.0, 1.0, size=(n, d))
    y = scale_y * (X / scale_x) @ np.linspace(0.5, -0.5, d) + 0.1 * scale_y * rng.normal(size=n)
    return X, y


# ---------------------------------------------------------------------------
# Finding 1 (low, not a leak): the penalty-ball refusal of frank_wolfe is
# evaluated in the placeholder label units when y_bound="auto".
# ---------------------------------------------------------------------------


def test_frank_wolfe_loose_ball_with_auto_y_bound_is_refused_or_warned():
    """Review5 finding 1: the ball refusal ran on the placeholder label scale with y_bound='auto'."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(2000, 4))
    y = 0.05 * (X @ np.array([1.0, -1.0, 0.5, 0.0])) + 0.01 * rng.normal(size=2000)
    params = dict(
        epsilon=1.0, delta=1e-5, solver="frank_wolfe", radius=1.0, alpha=0.3, feature_bound=1.0
    )
    # Given the label bound, the configuration is refused before any spend.
    budget = PrivacyBudget(10.0, 1e-3)
    with pytest.raises(ValueError, match="ball its penalty implies"):
        DPLasso(y_bound=0.1, budget=budget, random_state=0, **params).fit(X, y)
    assert budget.ledger == []
    # With the label bound released, the same loose ball must not pass silently.
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLasso(y_bound="auto", budget=budget, random_state=0, **params)
    refused = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y)
        except ValueError:
            refused = True
    if refused:
        return
    assert model.y_bound_ < 0.2  # the released bound: the ball is loose in the fit's units
    assert any("ball" in str(w.message) for w in caught), [str(w.message) for w in caught]


# ---------------------------------------------------------------------------
# Guards: what the review checked and found sound.
# ---------------------------------------------------------------------------

_SVRG_CASES = [
    ("DPLasso", "dp_svrg_pp", dict(alpha=0.1)),
    ("DPLasso", "dp_svrg_pp", dict(alpha=0.1, fit_intercept=False)),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5)),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5, loss="huber")),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5, penalty="elasticnet", l1_ratio=0.5)),
    ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l1")),
    ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l2", y_bound=100.0, data_norm=10.0)),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator, solver, params", _SVRG_CASES)
@pytest.mark.parametrize("epsilon", [0.1, 5.0])
def test_svrg_default_epochs_run_exactly_the_recorded_plan(estimator, solver, params, epsilon):
    """The quiet default epochs: the plan the estimator makes is the plan the solver runs and records."""
    spec = SOLVERS[solver]
    original_plan, original_function = spec.plan, spec.function
    estimator_plans, results = [], []

    @functools.wraps(original_plan)
    def plan(n_samples, *args, **kwargs):
        made = original_plan(n_samples, *args, **kwargs)
        if n_samples is not None and made is not None:
            estimator_plans.append(made)
        return made

    def function(*args, **kwargs):
        result = original_function(*args, **kwargs)
        results.append(result)
        return result

    object.__setattr__(spec, "plan", plan)
    object.__setattr__(spec, "function", function)
    try:
        X, y = _regression(2000)
        model = getattr(sklearn_dp, estimator)(
            epsilon=epsilon, delta=1e-5, solver=solver, random_state=0, **params
        )
        with trace_releases() as trace:
            model.fit(X, y)
    finally:
        object.__setattr__(spec, "plan", original_plan)
        object.__setattr__(spec, "function", original_function)
    (result,) = results
    lengths = result.plan.details["epoch_lengths"]
    # The estimator's last in-phase plan (the share rule's) is the solver's.
    assert estimator_plans[-1].details["epoch_lengths"] == lengths
    assert estimator_plans[-1].event == result.plan.event
    # Every epoch planned runs (no stop with noise), each release traced once.
    assert model.n_iter_ == len(lengths)
    svrg = [r for r in trace.releases if "svrg" in (r.label or "")]
    assert len(svrg) == len(lengths) + sum(lengths)
    assert model.dp_event_.events[-1] == result.plan.event


_DEFAULT_SCHEDULES = [
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5)),
    ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l1")),
    ("DPLasso", "dp_svrg_pp", dict(alpha=0.1)),
    ("DPLasso", "frank_wolfe", dict(alpha=0.1, delta=0.0)),
    ("DPLasso", "vr_frank_wolfe", dict()),
    ("DPSCORegressor", "dp_sgd", dict()),
    ("DPSCORegressor", "dp_gd", dict()),
    ("DPLasso", "dp_cd", dict(alpha=0.1)),
]


@pytest.mark.parametrize("estimator, solver, params", _DEFAULT_SCHEDULES)
def test_default_schedules_and_honest_warnings_under_substitution(estimator, solver, params):
    """Default (count-dependent) schedules at a small epsilon, where the honest warnings fire:
    D and D + a hostile row are indistinguishable once the releases are substituted."""
    pair = substitution._hostile_pair(estimator, "huge")
    seen = substitution._run_pair(estimator, solver, dict(params, epsilon=0.05), pair)
    if solver != "dp_cd":
        assert seen["warnings"], "the warning under test did not fire"


@pytest.mark.parametrize(
    "estimator, solver, params",
    [
        ("DPSCORegressor", "dp_svrg", dict(alpha=0.5)),
        ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l2")),
        ("DPLasso", "dp_cd", dict(alpha=0.1)),
        ("DPSCORegressor", "dp_cd", dict(feature_bound=1.0)),
    ],
)
def test_noiseless_stops_never_run_in_a_private_fit(estimator, solver, params):
    """A private fit runs its planned steps whatever the data (here: data a noiseless run
    solves at once, y = 0), so n_iter_ does not reveal convergence."""
    X, _ = _regression(1500)
    iterations = []
    for y in (np.zeros(X.shape[0]), _regression(1500)[1]):
        model = getattr(sklearn_dp, estimator)(
            epsilon=1.0, delta=1e-5, solver=solver, random_state=0, y_bound=1.0, **params
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with trace_releases(substitute=lambda r: np.zeros(np.shape(r.output))) as trace:
                model.fit(X, y)
        iterations.append((model.n_iter_, len(trace.releases)))
    assert iterations[0] == iterations[1]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "estimator, solver, params",
    [
        ("DPSCORegressor", "dp_gd", dict(max_iter=5)),
        ("DPSCORegressor", "dp_newton", dict(max_iter=3)),
        ("DPSCORegressor", "dp_accmd", dict(penalty=None, radius=2.0, max_iter=5)),
        ("DPLasso", "frank_wolfe", dict(max_iter=5)),
        ("DPLasso", "dp_cd", dict(alpha=0.1, max_iter=2)),
        ("DPSCORegressor", "dp_ssp", dict()),
    ],
)
def test_the_solver_share_does_not_depend_on_released_bounds(estimator, solver, params):
    """test_share_rule varies n; here the released bounds (auto, data of very different scales)."""
    from test_share_rule import solver_epsilons

    with solver_epsilons(solver) as seen:
        for scale_x, scale_y in [(0.01, 0.01), (1.0, 1.0), (100.0, 1.0), (1.0, 1000.0)]:
            X, y = _regression(1000, scale_x, scale_y, d=3)
            getattr(sklearn_dp, estimator)(
                epsilon=1.0, delta=1e-5, solver=solver, random_state=0, **params
            ).fit(X, y)
    assert len(set(seen)) == 1, seen


def test_frank_wolfe_penalty_ball_refusal_precedes_any_spend_in_a_search():
    """DPGridSearchCV over alpha: a candidate on the implied ball is refused while planning."""
    from sklearn_dp.model_selection import DPGridSearchCV

    X, y = _regression(500)
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    search = DPGridSearchCV(
        DPLasso(solver="frank_wolfe", max_iter=5, y_bound=1.0, feature_bound=1.0),
        {"alpha": [0.1, 1.0]},
        epsilon=1.0,
        delta=1e-5,
        budget=budget,
        random_state=0,
    )
    with pytest.raises(ValueError, match="ball its penalty implies"):
        search.fit(X, y)
    assert budget.ledger == []


def test_a_tight_ball_with_auto_y_bound_is_not_refused_on_the_placeholder_scale():
    """Review5 finding 1, other direction: radius 10 with alpha 0.3 fits when the label scale is released."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(2000, 4))
    y = 5.0 * (X @ np.array([1.0, -1.0, 0.5, 0.0])) + rng.normal(size=2000)
    model = DPLasso(
        epsilon=1.0,
        delta=1e-5,
        solver="frank_wolfe",
        radius=10.0,
        alpha=0.3,
        feature_bound=1.0,
        y_bound="auto",
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    assert model.solver_ == "frank_wolfe"
    assert 10.0 * 0.3 / model.y_bound_**2 < 0.5  # tight in the fit's units: no ball warning
    assert not any("at least as loose" in str(w.message) for w in caught)
