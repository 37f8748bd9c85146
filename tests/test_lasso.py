"""DPLasso (constrained and penalised), and the l1 solvers on DPSCORegressor."""

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import without_bound_fallback
from sklearn.linear_model import Lasso

from sklearn_dp import BudgetExceededError, DPLasso, DPSCORegressor, PrivacyBudget
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.accounting import epsilon_of_event
from sklearn_dp.linear_model._lasso import alpha_for_l1_radius, l1_radius_for_alpha
from sklearn_dp.solvers import (
    PrivacyPlan,
    SolverResult,
    SolverSpec,
    register_solver,
    unregister_solver,
)
from sklearn_dp.solvers._l1_geometry import make_domain
from sklearn_dp.testing._l1_reference import reference_solve

L1_SOLVERS = ["frank_wolfe", "vr_frank_wolfe", "mirror_descent", "localized_mirror_descent"]


@pytest.fixture
def sparse_data():
    rng = np.random.default_rng(0)
    n, d = 600, 30
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.zeros(d)
    w[:3] = [0.6, -0.4, 0.3]
    y = X @ w + 0.3 + 0.05 * rng.normal(size=n)
    return X, y


def _constrained_reference(X, y, radius, y_bound, fit_intercept=True, alpha=0.0):
    """High-precision minimiser over the same ball, in original units (non-private)."""
    data = bound_data(
        X,
        np.clip(y, -y_bound, y_bound) / y_bound,
        fit_intercept=fit_intercept,
        geometry="linf",
        feature_bound=1.0,
    )
    domain = make_domain(
        data,
        radius=radius / y_bound,
        intercept_bound=(1 + radius / y_bound) if fit_intercept else None,
        alpha=alpha / y_bound,
        l1_ratio=1.0,
        solver="reference",
    )
    loss = get_loss("squared")
    w = reference_solve(data, loss, domain) * y_bound
    residual = data.X @ (w / y_bound) - data.y
    assert np.max(np.abs(residual)) < 2.0  # the residual clip at 2 y_bound never binds
    return (w[:-1], w[-1]) if fit_intercept else (w, 0.0)


# --------------------------------------------------------------------------
# API and fitted attributes
# --------------------------------------------------------------------------


@pytest.mark.parametrize("solver", L1_SOLVERS)
def test_fitted_attributes(sparse_data, solver, monkeypatch):
    X, y = sparse_data
    # Past the fallbacks (the zero model where a public bound is vacuous, tested in
    # tests/test_noise_warnings.py): their fitted attributes come from a run.
    without_bound_fallback(monkeypatch, "vr_frank_wolfe", "localized_mirror_descent")
    # Basic composition: the subsampled and count-dependent solvers have no
    # cheap zCDP charge, and this test is about the fitted attributes.
    budget = PrivacyBudget(3.0, 1e-5, composition="basic")
    model = DPLasso(
        feature_bound=1.0,
        epsilon=2.0,
        delta=1e-6,
        radius=1.5,
        y_bound=2.0,
        solver=solver,
        budget=budget,
        max_iter=None if solver == "vr_frank_wolfe" else 100,  # one pass: no step count
        random_state=0,
    ).fit(X, y)
    assert model.coef_.shape == (30,)
    assert isinstance(model.intercept_, float)
    assert model.solver_ == solver
    assert model.n_features_in_ == 30 and model.n_iter_ >= 1
    assert model.privacy_spent_ == (2.0, 1e-6)
    assert epsilon_of_event(model.dp_event_, 1e-6) <= 2.0 * (1 + 1e-9)
    assert len(budget.ledger) == 1 and budget.ledger[0].solver == solver
    assert np.abs(model.coef_).sum() <= 1.5 * (1 + 1e-9)
    assert abs(model.intercept_) <= model.intercept_bound_ * (1 + 1e-9)
    assert model.radius_ == 1.5
    assert model.intercept_bound_ == pytest.approx(2.0 + 1.5 * 1.0)
    assert np.all(np.isfinite(model.predict(X)))
    assert model.score(X, y) <= 1.0


def test_auto_solver_and_pure_dp(sparse_data):
    X, y = sparse_data
    model = DPLasso(
        feature_bound=1.0, epsilon=1.0, delta=0.0, radius=1.0, y_bound=2.0, random_state=0
    ).fit(X, y)
    assert model.solver_ == "frank_wolfe"
    assert model.privacy_spent_ == (1.0, 0.0)
    assert epsilon_of_event(model.dp_event_, 0.0) <= 1.0
    vr = DPLasso(
        feature_bound=1.0,
        epsilon=1.0,
        delta=0.0,
        radius=1.0,
        y_bound=2.0,
        solver="vr_frank_wolfe",
        random_state=0,
    ).fit(X, y)
    assert epsilon_of_event(vr.dp_event_, 0.0) <= 1.0


@pytest.mark.parametrize("solver", ["mirror_descent", "localized_mirror_descent"])
def test_gaussian_solvers_refuse_pure_dp_and_spend_nothing(sparse_data, solver):
    X, y = sparse_data
    budget = PrivacyBudget(5.0, 0.0)
    model = DPLasso(epsilon=1.0, delta=0.0, radius=1.0, solver=solver, budget=budget)
    with pytest.raises(ValueError, match="delta=0"):
        model.fit(X, y)
    assert budget.ledger == [] and not hasattr(model, "coef_")


def test_budget_exceeded_leaves_model_unchanged(sparse_data):
    X, y = sparse_data
    budget = PrivacyBudget(0.5, 1e-5)
    model = DPLasso(epsilon=1.0, radius=1.0, budget=budget)
    with pytest.raises(BudgetExceededError):
        model.fit(X, y)
    assert budget.ledger == [] and not hasattr(model, "coef_")


def test_reproducible_and_sparse_input_equals_dense(sparse_data):
    X, y = sparse_data
    a = DPLasso(feature_bound=1.0, epsilon=1.0, radius=1.0, y_bound=2.0, random_state=3).fit(X, y)
    b = DPLasso(feature_bound=1.0, epsilon=1.0, radius=1.0, y_bound=2.0, random_state=3).fit(X, y)
    c = DPLasso(feature_bound=1.0, epsilon=1.0, radius=1.0, y_bound=2.0, random_state=3).fit(
        sp.csr_matrix(X), y
    )
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_allclose(a.coef_, c.coef_, atol=1e-12)
    assert a.intercept_ == pytest.approx(c.intercept_, abs=1e-12)


def test_outlying_entries_and_labels_are_clipped(sparse_data):
    X, y = sparse_data
    X_out, y_out = X.copy(), y.copy()
    X_out[0, :5] = [1e6, -1e6, 40.0, -3.0, 2.0]
    y_out[1] = -1e9
    X_clip, y_clip = np.clip(X_out, -1, 1), np.clip(y_out, -2, 2)
    for solver in ("frank_wolfe", "mirror_descent"):
        a = DPLasso(
            feature_bound=1.0,
            epsilon=1.0,
            radius=1.0,
            y_bound=2.0,
            solver=solver,
            max_iter=50,
            random_state=0,
        )
        b = DPLasso(
            feature_bound=1.0,
            epsilon=1.0,
            radius=1.0,
            y_bound=2.0,
            solver=solver,
            max_iter=50,
            random_state=0,
        )
        np.testing.assert_allclose(
            a.fit(X_out, y_out).coef_, b.fit(X_clip, y_clip).coef_, atol=1e-12
        )


def test_unused_options_warn(sparse_data):
    X, y = sparse_data
    with pytest.warns(UserWarning, match="max_iter=100 is not used by solver='vr_frank_wolfe'"):
        DPLasso(epsilon=1.0, solver="vr_frank_wolfe", max_iter=100, random_state=0).fit(X, y)


def test_refused_solvers_say_what_fits(sparse_data):
    X, y = sparse_data
    with pytest.raises(ValueError, match="constraint='l1'.*frank_wolfe"):
        DPLasso(solver="dp_gd").fit(X, y)


def test_bad_input(sparse_data):
    X, y = sparse_data
    with pytest.raises(ValueError, match="radius"):
        DPLasso(radius=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="feature_bound"):
        DPLasso(feature_bound=np.zeros(30)).fit(X, y)
    y_nan = y.copy()
    y_nan[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPLasso().fit(X, y_nan)


# --------------------------------------------------------------------------
# epsilon = inf reaches the non-private optimum
# --------------------------------------------------------------------------


def test_constrained_epsilon_inf_reaches_reference(sparse_data):
    X, y = sparse_data
    radius, y_bound = 0.8, 2.0
    coef, intercept = _constrained_reference(X, y, radius, y_bound)
    model = DPLasso(
        feature_bound=1.0, epsilon=math.inf, radius=radius, y_bound=y_bound, max_iter=20_000
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, coef, atol=3e-3)
    assert model.intercept_ == pytest.approx(intercept, abs=3e-3)
    assert model.privacy_spent_ == (math.inf, 0.0)
    # The ball constrains the coefficients, not the intercept: a constrained
    # model with intercept 0.3 in its labels keeps it.
    assert model.intercept_ == pytest.approx(0.3, abs=0.02)


def test_penalised_epsilon_inf_matches_sklearn_lasso(sparse_data):
    X, y = sparse_data
    alpha, y_bound = 0.02, 2.0
    reference = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(
        X, np.clip(y, -y_bound, y_bound)
    )
    radius = 1.2
    assert np.abs(reference.coef_).sum() < radius  # the ball does not bind
    model = DPLasso(
        feature_bound=1.0,
        epsilon=math.inf,
        alpha=alpha,
        radius=radius,
        y_bound=y_bound,
        max_iter=20_000,
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=3e-3)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=3e-3)
    assert np.sum(model.coef_ != 0) <= 20_000


def test_penalised_form_uses_the_implied_ball(sparse_data):
    X, y = sparse_data
    # solver="auto" solves the penalised form with dp_ssp up to 128 features
    # and with dp_cd (no ball needed) beyond; Frank-Wolfe works on
    # the implied public ball with delta=0 (where no Gaussian solver fits; with
    # delta > 0 it is refused there).
    assert (
        DPLasso(epsilon=1.0, alpha=0.5, y_bound=2.0, feature_bound=1.0, random_state=0)
        .fit(X, y)
        .solver_
        == "dp_ssp"
    )
    wide = np.hstack([X, np.zeros((X.shape[0], 130 - X.shape[1]))])
    assert (
        DPLasso(epsilon=1.0, alpha=0.5, y_bound=2.0, feature_bound=1.0, random_state=0)
        .fit(wide, y)
        .solver_
        == "dp_cd"
    )
    model = DPLasso(
        feature_bound=1.0,
        epsilon=1.0,
        delta=0.0,
        alpha=0.5,
        y_bound=2.0,
        solver="frank_wolfe",
        random_state=0,
    ).fit(X, y)
    assert model.radius_ == pytest.approx(l1_radius_for_alpha(0.5, 2.0)) == pytest.approx(4.0)
    assert model.intercept_bound_ == pytest.approx(2.0 + 4.0)


def test_radius_alpha_mapping_is_public_and_valid():
    assert alpha_for_l1_radius(l1_radius_for_alpha(0.3, 2.0), 2.0) == pytest.approx(0.3)
    rng = np.random.default_rng(1)
    for _ in range(10):
        X = rng.normal(size=(80, 40)) * rng.uniform(0.1, 3)
        y = np.clip(rng.normal(size=80) * 2, -1.5, 1.5)
        for alpha in (1e-3, 1e-2, 0.1, 1.0):
            coef = Lasso(alpha=alpha, max_iter=10_000).fit(X, y).coef_
            assert np.abs(coef).sum() <= l1_radius_for_alpha(alpha, 1.5) * (1 + 1e-9)


def test_no_intercept(sparse_data):
    X, y = sparse_data
    model = DPLasso(
        feature_bound=1.0,
        epsilon=math.inf,
        radius=1.0,
        y_bound=2.0,
        fit_intercept=False,
        max_iter=2000,
    ).fit(X, y - 0.3)
    assert model.intercept_ == 0.0 and model.intercept_bound_ == 0.0


# --------------------------------------------------------------------------
# The penalised form dispatches generically through the registry
# --------------------------------------------------------------------------


def test_penalised_form_dispatches_to_an_unconstrained_l1_solver(sparse_data):
    X, y = sparse_data
    seen = {}

    def fake_cd(
        data,
        loss,
        *,
        n_outputs,
        alpha,
        epsilon,
        delta,
        random_state,
        verbose,
        l1_ratio=0.0,
        max_iter=None,
    ):
        seen.update(alpha=alpha, options={"l1_ratio": l1_ratio}, loss=loss.name)
        return SolverResult(
            coef=np.zeros((data.n_columns, 1)), n_iter=1, plan=fake_plan(1, 1, epsilon, delta)
        )

    def fake_plan(n_samples, n_params, epsilon, delta, call=None):
        from sklearn_dp.accounting import gaussian_noise_multiplier, gaussian_steps_event

        sigma = gaussian_noise_multiplier(epsilon, delta, 1)
        return PrivacyPlan(gaussian_steps_event(sigma, 1), sigma, 1)

    register_solver(
        SolverSpec(
            name="fake_l1_cd",
            run=fake_cd,
            plan=fake_plan,
            losses=frozenset({"squared"}),
            penalties=frozenset({"l1", "elasticnet"}),
            geometry="linf",
            constraints=frozenset({None}),
        )
    )
    try:
        DPLasso(epsilon=1.0, alpha=0.1, y_bound=2.0, solver="fake_l1_cd").fit(X, y)
        # alpha in scaled units (labels / y_bound), an L1 penalty, and no ball.
        assert seen["alpha"] == pytest.approx(0.1 / 2.0)
        assert seen["options"] == {"l1_ratio": 1.0}
        assert seen["loss"] == "squared"
        with pytest.raises(ValueError, match="constraint='l1'"):
            DPLasso(epsilon=1.0, radius=1.0, solver="fake_l1_cd").fit(X, y)
    finally:
        unregister_solver("fake_l1_cd")


# --------------------------------------------------------------------------
# DPSCORegressor in l1 geometry
# --------------------------------------------------------------------------


def test_regressor_l1_constraint_auto_solvers(sparse_data):
    X, y = sparse_data
    smooth = DPSCORegressor(
        epsilon=1.0, constraint="l1", radius=1.5, feature_bound=1.0, y_bound=2.0, random_state=0
    ).fit(X, y)
    assert smooth.solver_ == "frank_wolfe"
    # Here the intercept is part of the ball (DPSCORegressor's documented constraint).
    assert np.abs(smooth.coef_).sum() + abs(smooth.intercept_) <= 1.5 * (1 + 1e-9)
    absolute = DPSCORegressor(
        epsilon=1.0,
        loss="absolute",
        penalty=None,
        constraint="l1",
        radius=1.5,
        feature_bound=1.0,
        y_bound=2.0,
        max_iter=200,
        random_state=0,
    ).fit(X, y)
    assert absolute.solver_ == "mirror_descent"
    assert epsilon_of_event(absolute.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert np.abs(absolute.coef_).sum() + abs(absolute.intercept_) <= 1.5 * (1 + 1e-9)


def test_regressor_l1_needs_feature_bound(sparse_data):
    X, y = sparse_data
    budget = PrivacyBudget(5.0, 1e-4)
    with pytest.raises(ValueError, match="feature_bound"):
        DPSCORegressor(
            constraint="l1", radius=1.0, solver="frank_wolfe", feature_bound=None, budget=budget
        ).fit(X, y)
    assert budget.ledger == []
    # The default "auto" releases one bound on max_j |X[i, j]| (a share of epsilon).
    model = DPSCORegressor(
        constraint="l1", radius=1.0, solver="frank_wolfe", random_state=0, budget=budget
    ).fit(X, y)
    assert model.feature_bound_.shape == (X.shape[1],)
    assert np.all(model.feature_bound_ == model.feature_bound_[0])
    assert len(budget.ledger) == 1


def test_regressor_absolute_loss_mirror_descent_epsilon_inf_improves(sparse_data):
    X, y = sparse_data
    model = DPSCORegressor(
        epsilon=math.inf,
        loss="absolute",
        penalty=None,
        constraint="l1",
        radius=1.5,
        feature_bound=1.0,
        y_bound=2.0,
        solver="mirror_descent",
        batch_size=600,
        max_iter=400,
        random_state=0,
    ).fit(X, y)
    baseline = np.mean(np.abs(y - np.median(y)))
    assert np.mean(np.abs(model.predict(X) - y)) < 0.5 * baseline


def test_l2_geometry_solvers_use_the_bound_implied_by_feature_bound():
    # DPLasso has no data_norm: dp_svrg_pp bounds rows in L2 with
    # sqrt(sum_j feature_bound_j^2), after clipping entries to feature_bound.
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(300, 4))
    y = X @ np.array([1.0, -1.0, 0.0, 0.0])
    model = DPLasso(
        solver="dp_svrg_pp",
        alpha=0.01,
        feature_bound=[1.0, 1.0, 2.0, 2.0],
        y_bound=3.0,
        epsilon=math.inf,
        random_state=0,
    ).fit(X, y)
    assert model.solver_ == "dp_svrg_pp"
    assert np.all(np.isfinite(model.coef_))


def test_feature_bound_implies_the_l2_row_bound():
    from sklearn_dp._data import bound_data

    X = np.array([[3.0, -0.5, 9.0], [0.1, 0.2, -0.3]])
    bounds = np.array([1.0, 2.0, 2.0])
    data = bound_data(X, np.zeros(2), fit_intercept=True, geometry="l2", feature_bound=bounds)
    assert np.array_equal(data.X[:, :3], np.clip(X, -bounds, bounds))
    assert data.row_norm_bound == pytest.approx(
        math.hypot(3.0, 1.0)
    )  # sqrt(1 + 4 + 4), intercept 1
    assert np.all(data.row_norms <= data.row_norm_bound + 1e-12)


@pytest.mark.parametrize(
    "solver, options, message",
    [
        ("frank_wolfe", dict(output="median"), "'output' parameter of .*frank_wolfe"),
        ("vr_frank_wolfe", dict(schedule="fast"), "'schedule' parameter of .*vr_frank_wolfe"),
        ("vr_frank_wolfe", dict(output="median"), "'output' parameter of .*vr_frank_wolfe"),
        ("mirror_descent", dict(strongly_convex=True), "strongly convex from public"),
        ("localized_mirror_descent", dict(strongly_convex=True), "strongly convex from public"),
    ],
)
def test_public_option_refusals_spend_nothing(sparse_data, solver, options, message):
    """The l1 solvers' SolverSpec.check refuses public options before the reservation."""
    X, y = sparse_data
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLasso(epsilon=1.0, radius=1.0, solver=solver, budget=budget, solver_options=options)
    with pytest.raises(ValueError, match=message):
        model.fit(X, y)
    assert budget.ledger == [] and not hasattr(model, "coef_")


def test_too_few_rows_is_a_public_error_on_the_released_count(sparse_data):
    """vr_frank_wolfe's schedule needs the (released) row count: a count too small for it is
    refused after the reservation with a message about the DP count (a released value), and
    the fit keeps its failed ledger entry."""
    X, y = sparse_data
    budget = PrivacyBudget(100.0, 1e-3, composition="basic")
    model = DPLasso(
        epsilon=50.0, radius=1.0, solver="vr_frank_wolfe", budget=budget, random_state=0
    )
    with pytest.raises(ValueError, match="DP row count") as raised:
        model.fit(X[:2], y[:2])
    assert "PrivateFitError" not in type(raised.value).__name__
    assert [entry.status for entry in budget.ledger] == ["failed"]


# --------------------------------------------------------------------------
# frank_wolfe's penalty-ball refusal in the fit's label units (y_bound="auto")
# --------------------------------------------------------------------------


def test_frank_wolfe_loose_ball_with_auto_y_bound_is_refused_or_warned():
    """With y_bound='auto' the ball check runs in the released label units, not a placeholder's."""
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


def test_a_tight_ball_with_auto_y_bound_is_not_refused_on_the_placeholder_scale():
    """Radius 10 with alpha 0.3 is tight in the released label units: it fits, with no ball warning."""
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


def test_dplasso_refits_frank_wolfe_by_default_on_wide_x_only():
    from sklearn_dp.testing import trace_releases

    rng = np.random.default_rng(0)
    for n_features, delta, refits in [(150, 1e-5, True), (150, 0.0, False), (20, 1e-5, False)]:
        X = rng.uniform(-1, 1, size=(300, n_features))
        y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=300)
        model = DPLasso(epsilon=2.0, delta=delta, solver="frank_wolfe", max_iter=5, random_state=0)
        with trace_releases() as trace:
            model.fit(X, y)
        labels = {r.label for r in trace.releases}
        assert ("refit gram matrix" in labels) is refits, (n_features, delta)
        # One ledger entry's event covers the refit's releases too.
        gaussians = repr(model.dp_event_).count("GaussianDpEvent")
        assert (gaussians == 2) is refits
    # The user's share wins, and refit=0 turns it off.
    model = DPLasso(epsilon=2.0, solver="frank_wolfe", max_iter=5, solver_options={"refit": 0.0})
    with trace_releases() as trace:
        model.fit(X[:, :5].repeat(30, axis=1), y)
    assert not any(r.label.startswith("refit") for r in trace.releases)


def test_dplasso_refit_with_pure_dp_is_refused_before_the_spend(sparse_data):
    X, y = sparse_data
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLasso(
        epsilon=1.0,
        delta=0.0,
        radius=1.0,
        solver="frank_wolfe",
        budget=budget,
        solver_options={"refit": 0.3},
    )
    with pytest.raises(ValueError, match="needs delta > 0"):
        model.fit(X, y)
    assert budget.ledger == []


def test_frank_wolfe_refit_with_a_loss_other_than_squared_is_refused_before_the_spend(sparse_data):
    # The refit is least squares on the support: with the Huber loss it would
    # silently fit another model.
    X, y = sparse_data
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPSCORegressor(
        epsilon=1.0,
        loss="huber",
        radius=1.0,
        constraint="l1",
        solver="frank_wolfe",
        budget=budget,
        solver_options={"refit": 0.4},
    )
    with pytest.raises(ValueError, match="needs loss='squared'"):
        model.fit(X, y)
    assert budget.ledger == []
