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
from sklearn_dp.linear_model._lasso import DEFAULT_RADIUS_ERROR_BOUND, default_l1_radius
from sklearn_dp.solvers._frank_wolfe import fw_public_error_bound
from sklearn_dp.testing import trace_releases

#: Nine uniform features on [-0.5, 0.5], three of which enter the label.
_regression = functools.partial(
    regression_data, n=300, d=9, half_width=0.5, coef=(1.0, -1.0, 0.5), clip=2.0
)


def test_default_l1_radius_is_capped_at_sqrt_d_times_the_worst_case_radius():
    # Before the row count is released, and without noise: the dense cap.
    assert default_l1_radius(2.0, 0.5, 9) == pytest.approx(12.0)
    assert default_l1_radius(2.0, 0.5, 9, n_samples=1e3, epsilon=math.inf) == pytest.approx(12.0)
    # Many rows: the noise allows the whole cap.
    assert default_l1_radius(2.0, 0.5, 9, n_samples=1e9, epsilon=1.0, delta=1e-5) == (
        pytest.approx(12.0)
    )
    X, y = _regression(d=9)
    model = DPLasso(
        epsilon=math.inf,
        solver="frank_wolfe",
        feature_bound=0.5,
        y_bound=2.0,
        max_iter=5,
        random_state=0,
    ).fit(X, y)
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


@pytest.mark.parametrize(
    "n, d, epsilon, delta", [(5000, 2000, 0.7, 1e-5), (442, 10, 0.7, 1e-5), (800, 1000, 3.0, 0.0)]
)
def test_default_l1_radius_is_the_largest_ball_within_the_frank_wolfe_bound(n, d, epsilon, delta):
    radius = default_l1_radius(1.0, 1.0, d, n_samples=n, epsilon=epsilon, delta=delta)
    assert radius < math.sqrt(d)
    bound = functools.partial(fw_public_error_bound, n, d, epsilon, delta)
    assert bound(radius) <= DEFAULT_RADIUS_ERROR_BOUND < bound(radius * 1.001)
    # In the units of y_bound / feature_bound.
    scaled = default_l1_radius(3.0, 0.5, d, n_samples=n, epsilon=epsilon, delta=delta)
    assert scaled == pytest.approx(6.0 * radius)


def test_default_radius_is_planned_from_the_released_row_count():
    rng = np.random.default_rng(0)
    n, d, y_bound = 2000, 300, 1.5
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    y = X[:, :4] @ np.array([0.3, -0.3, 0.2, -0.2]) + 0.1 * rng.normal(size=n)
    settings = dict(
        epsilon=1.0,
        feature_bound=1.0,
        y_bound=y_bound,
        fit_intercept=False,
        solver="frank_wolfe",
        random_state=0,
    )
    with trace_releases() as default_fit:
        model = DPLasso(**settings).fit(X, y)
    count = default_fit.releases[0]
    assert count.label == "row count"
    # Given bounds: the solver's floor is what the count's 5% leaves.
    expected = default_l1_radius(y_bound, 1.0, d, n_samples=count.output, epsilon=0.95, delta=1e-5)
    assert expected < math.sqrt(d) * y_bound
    assert model.radius_ == pytest.approx(expected, rel=1e-12)
    # Every selection's (and the refit's) sensitivity and scale are those of
    # the same radius given.
    with trace_releases() as given_fit:
        DPLasso(radius=model.radius_, **settings).fit(X, y)
    pairs = list(zip(default_fit.releases, given_fit.releases, strict=True))
    assert len(pairs) > 2
    for default, given in pairs[1:]:
        assert default.mechanism == given.mechanism
        assert default.mechanism == (
            "gaussian" if default.label.startswith("refit") else "exponential"
        )
        assert default.sensitivity == given.sensitivity
        assert default.scale == given.scale


def test_defaults_recover_a_sparse_support_in_high_dimension():
    # d >> the rows' worth of signal, a 5-sparse truth, epsilon 1 and every
    # bound "auto": the dense cap sqrt(d) y_bound / feature_bound let the
    # noise of each Frank-Wolfe step dominate (none of the 5 recovered).
    rng = np.random.default_rng(1)
    n, d = 4000, 1500
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    support = rng.choice(d, 5, replace=False)
    w = np.zeros(d)
    w[support] = rng.choice([-0.2, 0.2], 5)
    y = X @ w + 0.1 * rng.normal(size=n)
    for solver in ("auto", "frank_wolfe"):
        model = DPLasso(epsilon=1.0, solver=solver, random_state=0).fit(X, y)
        assert model.solver_ == "frank_wolfe"
        top = np.argsort(-np.abs(model.coef_))[:5]
        assert len(set(top) & set(support)) >= 4


def test_auto_steers_the_penalised_form_to_coordinate_descent():
    # Wider than dp_ssp's 128 features: alpha without a radius is dp_cd's
    # penalised form (no ball).
    X, y = _regression(n=200, d=130)
    model = DPLasso(
        epsilon=1.0, alpha=0.05, feature_bound=0.5, y_bound=2.0, max_iter=2, random_state=0
    ).fit(X, y)
    assert model.solver_ == "dp_cd"
    assert math.isinf(model.radius_)
    # Neither radius nor alpha: Frank-Wolfe on the default ball.
    model = DPLasso(epsilon=1.0, feature_bound=0.5, y_bound=2.0, max_iter=5, random_state=0).fit(
        X, y
    )
    assert model.solver_ == "frank_wolfe"
    assert model.radius_ <= default_l1_radius(2.0, 0.5, 130)
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
    assert model.radius_ <= default_l1_radius(2.0, 0.5, 130)


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
