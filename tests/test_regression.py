"""DPSCORegressor with the foundation solvers (dp_gd, dp_sgd)."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.datasets import make_regression
from sklearn.linear_model import Ridge

from sklearn_dp import BudgetExceededError, DPSCORegressor, PrivacyBudget
from sklearn_dp.accounting import epsilon_of_event


@pytest.fixture
def data():
    X, y = make_regression(n_samples=300, n_features=4, noise=5.0, bias=3.0, random_state=0)
    return X / 6.0, y / 60.0


def test_epsilon_inf_squared_reaches_ridge(data):
    X, y = data
    alpha = 1e-2
    model = DPSCORegressor(
        epsilon=math.inf, alpha=alpha, data_norm=10.0, y_bound=10.0, max_iter=3000
    ).fit(X, y)
    # mean(r^2)/2 + alpha/2 ||w||^2 is Ridge's ||r||^2 + n*alpha ||w||^2, halved and divided by n.
    reference = Ridge(alpha=len(y) * alpha).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-5)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-5)
    assert model.privacy_spent_ == (math.inf, 0.0)


def _huber_reference(X, y, threshold, alpha):
    n = len(y)
    A = np.hstack([X, np.ones((n, 1))])

    def f(w):
        r = A @ w - y
        small = np.abs(r) <= threshold
        value = np.where(small, 0.5 * r**2, threshold * np.abs(r) - 0.5 * threshold**2)
        grad_r = np.where(small, r, threshold * np.sign(r))
        return value.mean() + 0.5 * alpha * w[:-1] @ w[:-1], (
            A.T @ grad_r / n + alpha * np.append(w[:-1], 0.0)
        )

    return minimize(f, np.zeros(A.shape[1]), jac=True, method="L-BFGS-B", tol=1e-14).x


def test_epsilon_inf_huber_reaches_reference(data):
    X, y = data
    model = DPSCORegressor(
        epsilon=math.inf,
        loss="huber",
        huber_threshold=0.2,
        alpha=1e-3,
        data_norm=10.0,
        y_bound=10.0,
        intercept_scaling=1.0,
        max_iter=5000,
    ).fit(X, y)
    reference = _huber_reference(X, y, 0.2, 1e-3)
    np.testing.assert_allclose(np.append(model.coef_, model.intercept_), reference, atol=1e-4)


def test_labels_are_clipped_to_y_bound(data):
    X, y = data
    y_outlier = y.copy()
    y_outlier[0] = 1e9
    clipped = y.copy()
    clipped[0] = 2.0
    a = DPSCORegressor(epsilon=1.0, y_bound=2.0, random_state=0).fit(X, y_outlier)
    b = DPSCORegressor(epsilon=1.0, y_bound=2.0, random_state=0).fit(X, clipped)
    np.testing.assert_allclose(a.coef_, b.coef_)


def test_radius_constrains_coefficients(data):
    X, y = data
    model = DPSCORegressor(epsilon=math.inf, radius=0.5, y_bound=5.0, max_iter=500).fit(X, y)
    assert np.linalg.norm(np.append(model.coef_, model.intercept_)) <= 0.5 + 1e-9


@pytest.mark.parametrize("loss", ["squared", "huber", "absolute"])
def test_private_fit_records_event(data, loss):
    X, y = data
    # Basic composition: dp_sgd (absolute loss) has no cheap zCDP charge.
    budget = PrivacyBudget(5.0, 1e-5, composition="basic")
    model = DPSCORegressor(epsilon=1.0, loss=loss, y_bound=2.0, budget=budget, random_state=0)
    model.fit(X, y)
    assert model.solver_ == ("dp_sgd" if loss == "absolute" else "dp_newton")
    assert len(budget.ledger) == 1
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert np.all(np.isfinite(model.predict(X)))


def test_absolute_loss_refused_by_dp_gd(data):
    X, y = data
    with pytest.raises(ValueError, match="does not support loss='absolute'.*dp_sgd"):
        DPSCORegressor(loss="absolute", solver="dp_gd").fit(X, y)


def test_budget_exhausted_regressor_unchanged(data):
    X, y = data
    budget = PrivacyBudget(0.5, 1e-5)
    model = DPSCORegressor(epsilon=1.0, budget=budget)
    with pytest.raises(BudgetExceededError):
        model.fit(X, y)
    assert not hasattr(model, "coef_")
    assert budget.ledger == []


def test_bad_regression_input(data):
    X, y = data
    with pytest.raises(ValueError, match="y_bound"):
        DPSCORegressor(y_bound=0).fit(X, y)
    y_nan = y.copy()
    y_nan[1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPSCORegressor().fit(X, y_nan)


def _natural_units_table(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    income = rng.lognormal(np.log(30_000), 0.5, n)
    latitude = rng.normal(36.0, 1.5, n)
    flag = (rng.random(n) < 0.4).astype(float)
    X = np.column_stack([income, latitude, flag])
    y = 2e4 * (income - 30_000) / 15_000 - 1.5e4 * (latitude - 36.0) + rng.normal(0, 1e4, n)
    return X, y


def test_scaled_fit_gives_the_intercept_column_one_standardised_unit():
    from sklearn_dp.testing import trace_releases

    X, y = _natural_units_table()
    with trace_releases() as trace:
        model = DPSCORegressor(epsilon=2.0, feature_scaling=True, random_state=0).fit(X, y)
    assert hasattr(model, "feature_scale_")
    assert model.intercept_scaling_ == 1.0
    # The Gram matrix's sensitivity is the squared row bound of the fit's
    # rows: the standardised rows' released bound, and the column of 1.
    (gram,) = [r for r in trace.releases if r.label == "gram matrix"]
    assert gram.sensitivity == pytest.approx(model._standardized_row_bound**2 + 1.0, rel=1e-12)
    # A given intercept_scaling is used as it is; without scaling "auto" is the rows' bound.
    given = DPSCORegressor(
        epsilon=2.0, feature_scaling=True, intercept_scaling=3.0, random_state=0
    ).fit(X, y)
    assert hasattr(given, "feature_scale_") and given.intercept_scaling_ == 3.0
    unscaled = DPSCORegressor(epsilon=2.0, feature_scaling=False, random_state=0).fit(X, y)
    assert unscaled.intercept_scaling_ == unscaled.data_norm_


def test_scaled_classifier_keeps_the_rows_bound_as_intercept_column():
    from sklearn_dp import DPLogisticRegression

    X, y = _natural_units_table()
    model = DPLogisticRegression(
        epsilon=2.0, feature_scaling=True, classes=[0, 1], random_state=0
    ).fit(X, (y > np.median(y)).astype(int))
    assert hasattr(model, "feature_scale_")
    assert model.intercept_scaling_ == model._standardized_row_bound
