"""Public defaults of the l1 solvers, auto's steering, and honest refusals.

A configuration no default can make work is refused by a public check before
the budget is touched (``budget.spent == (0, 0)``, no ledger entry), with a
message that names what to use instead.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from _helpers import regression_data

from sklearn_dp import DPLasso, PrivacyBudget
from sklearn_dp.linear_model._lasso import default_l1_radius

#: Nine uniform features on [-0.5, 0.5], three of which enter the label.
_regression = functools.partial(
    regression_data, n=300, d=9, half_width=0.5, coef=(1.0, -1.0, 0.5), clip=2.0
)


def test_default_l1_radius_is_sqrt_d_times_the_worst_case_radius():
    X, y = _regression(d=9)
    model = DPLasso(
        epsilon=1.0,
        solver="frank_wolfe",
        feature_bound=0.5,
        y_bound=2.0,
        max_iter=5,
        random_state=0,
    ).fit(X, y)
    assert default_l1_radius(2.0, 0.5, 9) == pytest.approx(12.0)
    assert model.radius_ == pytest.approx(12.0)
    # A radius the user gives is kept.
    model = DPLasso(
        epsilon=1.0,
        solver="frank_wolfe",
        radius=1.5,
        feature_bound=0.5,
        y_bound=2.0,
        max_iter=5,
        random_state=0,
    ).fit(X, y)
    assert model.radius_ == 1.5


def test_auto_steers_away_from_the_default_ball():
    # Wider than dp_ssp's 128 features, no radius: dp_cd without a ball.
    X, y = _regression(n=200, d=130)
    model = DPLasso(epsilon=1.0, feature_bound=0.5, y_bound=2.0, max_iter=2, random_state=0).fit(
        X, y
    )
    assert model.solver_ == "dp_cd"
    assert math.isinf(model.radius_)
    # The user's radius is the constrained form: Frank-Wolfe.
    model = DPLasso(
        epsilon=1.0, radius=2.0, feature_bound=0.5, y_bound=2.0, max_iter=5, random_state=0
    ).fit(X, y)
    assert model.solver_ == "frank_wolfe"
    # Pure epsilon-DP: Frank-Wolfe on the default ball (dp_cd is Gaussian).
    model = DPLasso(
        epsilon=1.0, delta=0.0, feature_bound=0.5, y_bound=2.0, max_iter=5, random_state=0
    ).fit(X, y)
    assert model.solver_ == "frank_wolfe"
    assert model.radius_ == pytest.approx(default_l1_radius(2.0, 0.5, 130))


@pytest.mark.parametrize("solver", ["vr_frank_wolfe", "frank_wolfe"])
@pytest.mark.parametrize("kwargs", [dict(alpha=1.0), dict(alpha=0.01), dict(alpha=0.5, radius=1e6)])
def test_frank_wolfe_on_the_penalty_ball_is_refused_before_any_spend(solver, kwargs):
    # With delta > 0 (dp_cd and dp_ssp fit the penalised form); frank_wolfe
    # stays with delta = 0 (tests/test_noise_warnings.py).
    X, y = _regression()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLasso(
        epsilon=1.0,
        solver=solver,
        feature_bound=0.5,
        y_bound=2.0,
        budget=budget,
        random_state=0,
        **kwargs,
    )
    with pytest.raises(ValueError, match="solver='dp_cd' or 'dp_ssp'.*pass a radius"):
        model.fit(X, y)
    assert budget.spent == (0, 0)
    assert len(budget.ledger) == 0


@pytest.mark.parametrize("solver", ["vr_frank_wolfe", "frank_wolfe"])
def test_frank_wolfe_with_a_radius_and_a_penalty_still_fits(solver):
    X, y = _regression()
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    model = DPLasso(
        epsilon=1.0,
        solver=solver,
        alpha=0.01,
        radius=2.0,
        feature_bound=0.5,
        y_bound=2.0,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    assert model.radius_ == 2.0
    assert budget.spent[0] == pytest.approx(1.0)


@pytest.mark.parametrize("epsilon", [1.0, math.inf])
def test_resque_on_the_logistic_loss_at_its_defaults_is_refused_before_any_spend(epsilon):
    # No public default schedule makes resque converge on the smooth logistic
    # loss (majority class at every epsilon on breast cancer, a 248% objective
    # gap at epsilon=inf): refused, naming the solvers that converge on it.
    from sklearn_dp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(100, 4))
    y = (X[:, 0] > 0).astype(int)
    budget = PrivacyBudget(10.0, 1e-3) if math.isfinite(epsilon) else None
    model = DPLogisticRegression(
        epsilon=epsilon, solver="resque", classes=[0, 1], budget=budget, random_state=0
    )
    with pytest.raises(ValueError, match="solver='dp_newton', 'dp_gd' or 'dp_sgd'"):
        model.fit(X, y)
    if budget is not None:
        assert budget.spent == (0, 0)
        assert len(budget.ledger) == 0
