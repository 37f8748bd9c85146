"""Confidence intervals of private fits (``conf_int``, ``bse_``): exactness, privacy, coverage."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest
from dp_accounting import pld, rdp
from sklearn.linear_model import LogisticRegression

from sklearn_dp import DPLogisticRegression, DPSCORegressor, PrivacyBudget, accounting
from sklearn_dp._clipped_sums import clipped_residual_squares
from sklearn_dp._design import Design
from sklearn_dp.linear_model._inference import (
    AVERAGED_FROM,
    newton_averaged_step,
    newton_noise_covariance,
)
from sklearn_dp.solvers import plan_call
from sklearn_dp.solvers._second_order import INFERENCE_SHARE as NEWTON_SHARE
from sklearn_dp.solvers._ssp import INFERENCE_SHARE as SSP_SHARE
from sklearn_dp.testing import trace_releases

D = 3
BETA = np.array([1.0, -0.5, 0.25])
DATA_NORM = math.sqrt(3.0 * D)
INFERENCE = {"inference": True}


def _simulate(model, n, rng):
    X = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=(n, D))
    score = X @ BETA + 0.5
    if model == "squared":
        return X, score + rng.normal(size=n)
    return X, (rng.random(n) < 1.0 / (1.0 + np.exp(-score))).astype(int)


def _model(model, solver, epsilon, seed=0, **params):
    params = {
        **dict(epsilon=epsilon, solver=solver, data_norm=DATA_NORM, random_state=seed),
        **dict(solver_options=dict(INFERENCE)),
        **params,
    }
    if model == "squared":
        return DPSCORegressor(y_bound=8.0, **params)
    return DPLogisticRegression(**{"classes": [0, 1], **params})


def _ols(X, y):
    A = np.column_stack([np.ones(len(X)), X])
    w = np.linalg.lstsq(A, y, rcond=None)[0]
    r = y - A @ w
    return w, float(r @ r) * np.linalg.inv(A.T @ A)


def _logit(X, y):
    A = np.column_stack([np.ones(len(X)), X])
    fit = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-12, max_iter=1000)
    w = fit.fit(A, y).coef_.ravel()
    p = 1.0 / (1.0 + np.exp(-(A @ w)))
    return w, np.linalg.inv((A * (p * (1.0 - p))[:, None]).T @ A)


# -- the plans: the extra release is charged in the same Gaussian -------------------------


@pytest.mark.parametrize("ridge", ["adaptive", 1.0])
def test_ssp_inference_release_shares_the_one_gaussian(ridge):
    plain = plan_call("dp_ssp", 1000, 4, 1.0, 1e-5, ridge=ridge)
    plan = plan_call("dp_ssp", 1000, 4, 1.0, 1e-5, ridge=ridge, inference=True)
    total = accounting.gaussian_noise_multiplier(1.0, 1e-5, 1)
    multipliers = [*plan.details["multipliers"], plan.details["inference_multiplier"]]
    precision = sum(1.0 / s**2 for s in multipliers if math.isfinite(s))
    assert precision == pytest.approx(1.0 / total**2, rel=1e-12)
    assert plan.details["inference_multiplier"] == pytest.approx(total / math.sqrt(SSP_SHARE))
    # The statistics keep their proportions, on what the extra release leaves.
    for a, b in zip(plan.details["multipliers"], plain.details["multipliers"]):
        if math.isfinite(b):
            assert a == pytest.approx(b / math.sqrt(1.0 - SSP_SHARE))
    assert len(plan.event.events) == len(plain.event.events) + 1


@pytest.mark.parametrize("loss", ["log_loss", "squared"])
def test_newton_inference_release_shares_the_one_gaussian(loss):
    from sklearn_dp._losses import get_loss

    glm = get_loss(loss) if loss == "log_loss" else get_loss(loss, residual_bound=2.0)
    plan = plan_call("dp_newton", 1000, 4, 1.0, 1e-5, loss=glm, inference=True)
    total = accounting.gaussian_noise_multiplier(1.0, 1e-5, 1)
    details = plan.details
    precision = (
        plan.n_steps / plan.noise_multiplier**2
        + details["hessian_releases"] / details["hessian_multiplier"] ** 2
        + 1.0 / details["inference_multiplier"] ** 2
    )
    assert precision == pytest.approx(1.0 / total**2, rel=1e-12)
    assert details["inference_multiplier"] == pytest.approx(total / math.sqrt(NEWTON_SHARE[loss]))
    # The log-loss takes more steps by default (the intervals assume convergence).
    assert plan.n_steps == (10 if loss == "log_loss" else 5)
    epsilon = pld.PLDAccountant().compose(plan.event).get_epsilon(1e-5)
    assert epsilon == pytest.approx(1.0, rel=1e-3)
    assert rdp.RdpAccountant().compose(plan.event).get_epsilon(1e-5) >= epsilon


def test_clipped_residual_squares_and_its_sensitivity():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = 3.0 * rng.normal(size=30)
    coef = np.array([0.5, -1.0, 2.0])
    design = Design(X)
    exact = np.sum(np.minimum((np.clip(y, -2.0, 2.0) - X @ coef) ** 2, 1.5**2))
    value = clipped_residual_squares(design, y, coef, 1.5, y_bound=2.0)
    assert value[0] == pytest.approx(exact)
    # Removing any row moves the sum by at most the square of the clip.
    for i in range(30):
        keep = np.arange(30) != i
        other = clipped_residual_squares(Design(X[keep]), y[keep], coef, 1.5, y_bound=2.0)
        assert abs(value[0] - other[0]) <= 1.5**2 + 1e-12


@pytest.mark.parametrize(
    "model, solver, label, sensitivity",
    [
        ("squared", "dp_ssp", "residual squares", 1.0),
        ("squared", "dp_newton", "residual squares", 1.0),
        # R^2 / 4 with R^2 = data_norm^2 + intercept_scaling^2 (= 2 data_norm^2).
        ("logistic", "dp_newton", "hessian sum", 2.0 * DATA_NORM**2 / 4.0),
    ],
)
def test_inference_release_goes_through_the_gateway_with_its_sensitivity(
    model, solver, label, sensitivity
):
    X, y = _simulate(model, 300, np.random.default_rng(1))
    with trace_releases() as trace:
        _model(model, solver, 1.0).fit(X, y)
    records = [r for r in trace.releases if r.label == label]
    assert len(records) == 1
    assert records[0].sensitivity == pytest.approx(sensitivity)


# -- epsilon = inf: the non-private intervals ---------------------------------------------


@pytest.mark.parametrize("solver", ["dp_ssp", "dp_newton"])
def test_noiseless_intervals_are_the_ols_intervals(solver):
    X, y = _simulate("squared", 500, np.random.default_rng(2))
    fitted = _model("squared", solver, math.inf, alpha=0.0).fit(X, y)
    w, covariance = _ols(X, y)
    # OLS's covariance with the residual variance over n (the fit's normaliser
    # is the row count less the columns), and residuals as released.
    scale = fitted.coef_covariance_[0, 0] / covariance[0, 0]
    np.testing.assert_allclose(fitted.interval_center_, w, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fitted.coef_covariance_, scale * covariance, rtol=1e-6)
    assert scale == pytest.approx(1.0 / (500 - 4), rel=1e-6)
    z = 1.959963984540054
    np.testing.assert_allclose(
        fitted.conf_int(),
        np.column_stack([w - z * fitted.bse_, w + z * fitted.bse_]),
        rtol=1e-6,
        atol=1e-8,
    )


def test_noiseless_logistic_intervals_are_the_wald_intervals():
    X, y = _simulate("logistic", 1000, np.random.default_rng(3))
    fitted = _model("logistic", "dp_newton", math.inf, C=1e12, max_iter=30).fit(X, y)
    w, covariance = _logit(X, y)
    np.testing.assert_allclose(fitted.interval_center_, w, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(fitted.coef_covariance_, covariance, rtol=1e-4)


def test_interval_order_is_the_intercept_then_the_coefficients():
    X, y = _simulate("squared", 400, np.random.default_rng(4))
    fitted = _model("squared", "dp_newton", math.inf).fit(X, y)
    interval = fitted.conf_int(0.1)
    assert interval.shape == (D + 1, 2)
    middle = interval.mean(axis=1)
    # (The centre is one more Newton step: without noise, the fit to 1e-8.)
    np.testing.assert_allclose(middle, np.r_[fitted.intercept_, fitted.coef_], rtol=1e-7)
    assert np.all(fitted.conf_int(0.01)[:, 1] > interval[:, 1])
    no_intercept = _model("squared", "dp_newton", math.inf, fit_intercept=False).fit(X, y)
    assert no_intercept.conf_int().shape == (D, 2)


# -- privacy: one charge, no raw release kept, public refusals -------------------------------


@pytest.mark.parametrize(
    "model, solver", [("squared", "dp_ssp"), ("squared", "dp_newton"), ("logistic", "dp_newton")]
)
def test_inference_is_charged_once_and_keeps_no_release(model, solver):
    X, y = _simulate(model, 300, np.random.default_rng(5))
    budget = PrivacyBudget(10.0, 1e-3)
    fitted = _model(model, solver, 1.0, budget=budget, random_state=None).fit(X, y)
    assert len(budget.ledger) == 1
    assert fitted.privacy_spent_[0] == pytest.approx(1.0, rel=1e-6)
    # Only derived quantities stay on the model; nothing from the solver's info.
    assert set(vars(fitted)) - set(vars(_model(model, solver, 1.0))) >= {
        "bse_",
        "coef_covariance_",
        "interval_center_",
    }
    for value in vars(fitted).values():
        assert not isinstance(value, dict) or "residual_squares" not in value
    assert np.all(np.isfinite(fitted.conf_int()))
    clone = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(clone.conf_int(), fitted.conf_int())


def test_conf_int_names_the_solvers_that_support_it():
    X, y = _simulate("squared", 200, np.random.default_rng(6))
    fitted = DPSCORegressor(epsilon=1.0, solver="dp_gd", data_norm=DATA_NORM, y_bound=8.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted.fit(X, y)
    with pytest.raises(ValueError, match="dp_ssp, dp_newton.*solver='dp_gd'"):
        fitted.conf_int()
    assert not hasattr(fitted, "bse_")


def test_conf_int_without_the_inference_release_says_how_to_get_it():
    X, y = _simulate("logistic", 200, np.random.default_rng(7))
    fitted = DPLogisticRegression(
        epsilon=1.0, solver="dp_newton", data_norm=DATA_NORM, classes=[0, 1]
    ).fit(X, y)
    with pytest.raises(ValueError, match=r"solver_options=\{'inference': True\}"):
        fitted.conf_int()
    refit = _model("logistic", "dp_newton", 1.0).fit(X, y)
    assert hasattr(refit, "bse_")
    # A later fit without inference drops the previous intervals.
    refit.set_params(solver_options=None).fit(X, y)
    assert not hasattr(refit, "bse_")


@pytest.mark.parametrize(
    "params",
    [
        dict(solver="dp_ssp", penalty="l1"),
        dict(solver="dp_ssp", radius=1.0),
        dict(solver="dp_newton", loss="huber"),
    ],
)
def test_unsupported_inference_is_refused_before_the_spend(params):
    X, y = _simulate("squared", 100, np.random.default_rng(8))
    budget = PrivacyBudget(10.0, 1e-3)
    estimator = DPSCORegressor(
        epsilon=1.0, data_norm=DATA_NORM, y_bound=8.0, budget=budget, solver_options=INFERENCE
    )
    with pytest.raises(ValueError, match="inference=True"):
        estimator.set_params(**params).fit(X, y)
    assert budget.ledger == []


def test_conf_int_checks_alpha():
    X, y = _simulate("squared", 200, np.random.default_rng(9))
    fitted = _model("squared", "dp_ssp", 1.0).fit(X, y)
    for alpha in (0.0, 1.0, "0.05"):
        with pytest.raises(ValueError, match="alpha"):
            fitted.conf_int(alpha)


def test_noise_recursion_without_momentum_is_the_geometric_sum():
    # K = 1/2 I, P = I: e_T = sum_t K^(T-1-t) xi_t, variance sum_t 4^-t s^2.
    P = np.eye(2)
    H = 0.5 * np.eye(2)
    covariance = newton_noise_covariance(P, H, 2.0, 1.0, momenta=(0.0, 0.0, 0.0))
    np.testing.assert_allclose(covariance, 4.0 * (1 + 0.25 + 0.0625) * np.eye(2))


def test_averaged_step_is_one_newton_step_on_the_mean_gradient_noise():
    # P = H^-1 (K = 0), no momentum: the released gradients H (V_t - w) + u_t
    # of the steps averaged give w - P mean(u_t), of covariance (s / N)^2 P
    # P^T / k, k the number of steps averaged.
    rng = np.random.default_rng(5)
    H = np.array([[2.0, 0.5], [0.5, 1.0]])
    P = np.linalg.inv(H)
    w = np.array([1.0, -2.0])
    points = rng.normal(size=(6, 2))
    noise = rng.normal(size=(6, 2))
    steps = [(v, H @ (v - w) + u) for v, u in zip(points, noise)]
    info = dict(steps=steps, momenta=(0.0,) * 6, gradient_noise_std=3.0, normalizer=2.0)
    center, covariance = newton_averaged_step(info, P, H)
    averaged = noise[AVERAGED_FROM:]
    np.testing.assert_allclose(center, w - P @ averaged.mean(axis=0))
    np.testing.assert_allclose(covariance, 1.5**2 * P @ P.T / len(averaged))
    short = dict(info, steps=steps[:AVERAGED_FROM], momenta=(0.0,) * AVERAGED_FROM)
    assert newton_averaged_step(short, P, H) is None


def test_averaged_step_covariance_is_the_recursion_simulated():
    # K != 0 and momentum: the covariance against the steps themselves, simulated.
    rng = np.random.default_rng(6)
    H = np.array([[1.0, 0.3], [0.3, 0.6]])
    P = np.linalg.inv(H + 0.2 * np.eye(2))
    momenta = (0.0, 0.0, 0.25, 0.4, 0.5)
    w = np.array([0.5, 1.0])
    info = dict(momenta=momenta, gradient_noise_std=1.0, normalizer=1.0)
    centers = []
    for _ in range(4000):
        W = W_previous = w.copy()  # from the optimum: only the noise moves the steps
        steps = []
        for c in momenta:
            V = W + c * (W - W_previous)
            gradient = H @ (V - w) + rng.normal(size=2)
            steps.append((V, gradient))
            W_previous, W = W, V - P @ gradient
        centers.append(newton_averaged_step(dict(info, steps=steps), P, H)[0])
    _, covariance = newton_averaged_step(dict(info, steps=steps), P, H)
    # 4,000 draws: the variances to about 2% (one standard error).
    np.testing.assert_allclose(np.cov(np.array(centers), rowvar=False), covariance, rtol=0.1)


def test_newton_squared_intervals_average_the_released_gradients():
    # n = 20,000, epsilon = 1: the last iterate's gradient noise alone made the
    # intervals about 3 times as wide as OLS's; the averaged step's, under 2.2.
    X, y = _simulate("squared", 20000, np.random.default_rng(7))
    fitted = _model("squared", "dp_newton", 1.0, seed=3).fit(X, y)
    _, covariance = _ols(X, y)
    ratio = fitted.bse_ / np.sqrt(np.diag(covariance) / (20000 - D - 1))
    assert np.max(ratio[1:]) < 2.2
    assert np.max(ratio[1:]) > 1.0


# -- coverage --------------------------------------------------------------------------------


def _coverage(model, solver, n, epsilon, reps, seed=0):
    rng = np.random.default_rng(seed)
    truth = np.r_[0.5, BETA]
    covered = []
    for rep in range(reps):
        X, y = _simulate(model, n, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = _model(model, solver, epsilon, seed=seed * 1000 + rep).fit(X, y)
        interval = fitted.conf_int(0.05)
        covered.append((interval[:, 0] <= truth) & (truth <= interval[:, 1]))
    return np.mean(covered)


@pytest.mark.parametrize(
    "model, solver", [("squared", "dp_ssp"), ("squared", "dp_newton"), ("logistic", "dp_newton")]
)
def test_intervals_cover_the_truth(model, solver):
    # A few data sets and a loose tolerance (the benchmark holds the target).
    assert _coverage(model, solver, 3000, 1.0, reps=8) >= 0.8


@pytest.mark.slow
@pytest.mark.parametrize(
    "model, solver", [("squared", "dp_ssp"), ("squared", "dp_newton"), ("logistic", "dp_newton")]
)
@pytest.mark.parametrize("n, epsilon", [(20000, 1.0), (2000, 4.0)])
def test_intervals_cover_the_truth_thorough(model, solver, n, epsilon):
    assert _coverage(model, solver, n, epsilon, reps=100, seed=1) >= 0.92


def test_logistic_intervals_correct_the_outward_bias_where_the_noise_dominates():
    X, y = _simulate("logistic", 2000, np.random.default_rng(10))
    noisy = _model("logistic", "dp_newton", 0.5).fit(X, y)
    params = np.r_[noisy.intercept_, noisy.coef_.ravel()]
    assert not np.allclose(noisy.interval_center_, params)
    # The bootstrap is reproducible: post-processing with a public seed.
    again = _model("logistic", "dp_newton", 0.5).fit(X, y)
    np.testing.assert_array_equal(again.conf_int(), noisy.conf_int())
    quiet = _model("logistic", "dp_newton", 50.0).fit(X, y)
    np.testing.assert_allclose(quiet.interval_center_, np.r_[quiet.intercept_, quiet.coef_.ravel()])


@pytest.mark.parametrize("solver", ["dp_newton", "auto"])
def test_logistic_inference_without_public_classes_is_refused_before_the_spend(solver):
    # Three labels and no classes=: the number of outputs would be known only
    # after the label-set release, so the refusal must come before the spend.
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, 3, size=300)
    budget = PrivacyBudget(10.0, 1e-3)
    estimator = DPLogisticRegression(
        epsilon=1.0, solver=solver, budget=budget, solver_options=INFERENCE
    )
    with pytest.raises(ValueError, match="pass classes="):
        estimator.fit(X, y)
    assert budget.ledger == []


# -- audit: the extra release on neighbouring data ----------------------------------------


def _inference_release_audit(solver, loss, epsilon):
    """``run(with_canary, seed)``: the extra release of a fit with ``inference=True``.

    Solver level (the row count is public, as in the other solver audits),
    on the canary data sets, with the canary that puts the release at its
    full sensitivity:

    * the squared loss's sum of squared residuals: D' adds the row ``x = 0``
      with the label at its bound, a row that no other release sees (its
      gradient and Gram terms are zero) and whose residual is the release's
      full sensitivity; the statistic is the released sum;
    * the log-loss's Hessian sum: D' adds the usual canary ``(0, R)`` with
      label 1, along the column D leaves at zero, and a tiny public
      ``clip_norm`` keeps its gradient, and so its coefficient, at about
      zero, where its Hessian term ``s (1 - s) R^2`` is the full ``R^2 / 4``;
      the statistic is the released sum's entry on that column.
    """
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import get_loss
    from sklearn_dp.solvers import get_solver
    from sklearn_dp.testing._audit_configs import DELTA, canary_data

    if loss == "squared":
        (X, y), _ = canary_data(20, task="regression")
        X_prime, y_prime = np.vstack([X, np.zeros((1, X.shape[1]))]), np.append(y, 1.0)
        pairs = [(X, np.clip(y, -1.0, 1.0)), (X_prime, np.clip(y_prime, -1.0, 1.0))]
        options = {}
    else:
        (X, y), (X_prime, y_prime) = canary_data(20, task="classification")
        pairs = [(X, np.where(y == 1, 1.0, -1.0)), (X_prime, np.where(y_prime == 1, 1.0, -1.0))]
        options = dict(clip_norm=1e-9, max_iter=2)
    datasets = [
        bound_data(Xi, yi, fit_intercept=False, geometry="l2", data_norm=1.0) for Xi, yi in pairs
    ]
    loss_object = get_loss(loss, residual_bound=2.0) if loss == "squared" else get_loss(loss)
    function = get_solver(solver).run

    def run(with_canary, seed):
        result = function(
            datasets[int(with_canary)],
            loss_object,
            n_outputs=1,
            alpha=0.0,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
            inference=True,
            **options,
        )
        info = result.info["inference"]
        if loss == "squared":
            return float(info["residual_squares"])
        return float(info["hessian"][1, 1])

    return run


def _inference_release_epsilon(solver, loss, epsilon, delta):
    """The epsilon of the extra release alone (its own Gaussian in the fit's composition)."""
    from sklearn_dp._losses import get_loss

    options = {}
    if solver == "dp_newton":
        glm = get_loss(loss, residual_bound=2.0) if loss == "squared" else get_loss(loss)
        options = dict(loss=glm, max_iter=2)
    plan = plan_call(solver, 20, 2, epsilon, delta, inference=True, **options)
    multiplier = plan.details["inference_multiplier"]
    (event,) = [e for e in plan.event.events if getattr(e, "noise_multiplier", None) == multiplier]
    return pld.PLDAccountant().compose(event).get_epsilon(delta)


@pytest.mark.slow
@pytest.mark.parametrize(
    "solver, loss, epsilon",
    # The fit's epsilon where the extra release alone claims about 1 (its
    # share of the precision: dp_ssp 5%, dp_newton 2% squared, 10% log-loss).
    [("dp_ssp", "squared", 4.0), ("dp_newton", "squared", 7.0), ("dp_newton", "log_loss", 3.0)],
)
def test_inference_release_audit_and_noise_off_control(solver, loss, epsilon):
    from sklearn_dp.testing import audit_mechanism
    from sklearn_dp.testing._audit_configs import DELTA

    claim = _inference_release_epsilon(solver, loss, epsilon, DELTA)
    assert 0.5 < claim < 2.0
    result = audit_mechanism(
        _inference_release_audit(solver, loss, epsilon),
        claimed_epsilon=claim,
        delta=DELTA,
        n_runs=1000,
    )
    assert result.consistent, result
    # Positive control: the same release without its noise (the claim kept).
    broken = audit_mechanism(
        _inference_release_audit(solver, loss, math.inf),
        claimed_epsilon=claim,
        delta=DELTA,
        n_runs=1000,
        seed_offset=1,
    )
    assert not broken.consistent, broken
