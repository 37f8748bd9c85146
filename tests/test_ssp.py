"""dp_ssp (AdaSSP): sufficient statistics, their sensitivities, exact noise, solves, the Lasso path."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import minimize
from sklearn.linear_model import ElasticNet, Lasso, Ridge, lasso_path
from test_sensitivity_properties import bound_both, change, dense_row, l2_cases, prop, slack

from sklearn_dp import DPLasso, DPSCORegressor, PrivacyBudget
from sklearn_dp._clipped_sums import smallest_eigenvalue, sufficient_statistics, svec
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.accounting import epsilon_of_event, gaussian_noise_multiplier
from sklearn_dp.solvers import _ssp as module
from sklearn_dp.solvers import dp_ssp, plan_call
from sklearn_dp.solvers._ssp import (
    adaptive_ridge,
    repair_gram,
    solve_statistics,
    ssp_multipliers,
)
from sklearn_dp.testing import trace_releases

# --------------------------------------------------------------------------
# Sensitivities of the released statistics (hypothesis)
# --------------------------------------------------------------------------


@prop(120)
@given(
    case=l2_cases(losses=("squared_unbounded",)),
    fit_intercept=st.booleans(),
    label_bound=st.sampled_from([0.5, 1.0, 7.0]),
)
def test_sufficient_statistics_move_by_at_most_their_sensitivities(
    case, fit_intercept, label_bound
):
    """svec(X^T X) moves by exactly svec(x x^T) (norm <= R^2); X^T y by clip(y) x (<= R B);
    the smallest eigenvalue by a value in [0, ||x||^2]."""
    _, data_norm, nb = case
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    stats = [sufficient_statistics(d.design, d.y, label_bound) for d in (small, big)]
    grams = [svec(G) for G, _ in stats]
    xtys = [b for _, b in stats]
    R = small.row_norm_bound
    x_new = dense_row(big.X, nb.index)
    y_new = float(np.clip(nb.label, -label_bound, label_bound))
    sign = -1.0 if nb.removed else 1.0
    moved_gram = change(nb, *grams)
    moved_xty = change(nb, *xtys)
    assert np.linalg.norm(moved_gram) <= R**2 * (1 + 1e-12) + slack(*grams)
    assert np.linalg.norm(moved_xty) <= R * label_bound * (1 + 1e-12) + slack(*xtys)
    np.testing.assert_allclose(
        moved_gram, sign * svec(np.outer(x_new, x_new)), rtol=1e-7, atol=slack(*grams) + 1e-15
    )
    np.testing.assert_allclose(
        moved_xty, sign * y_new * x_new, rtol=1e-7, atol=slack(*xtys) + 1e-15
    )
    # The eigenvalue of the larger data set is the larger one, by at most ||x||^2 <= R^2.
    lam_small, lam_big = (smallest_eigenvalue(G) for G, _ in stats)
    scale = 1e-9 * (1 + np.abs(stats[1][0]).sum())
    assert -scale <= lam_big - lam_small <= R**2 * (1 + 1e-12) + scale


def test_labels_are_clipped_by_the_kernel():
    X = np.eye(3)
    data = bound_data(X, np.array([1e300, -5.0, 0.5]), fit_intercept=False, data_norm=1.0)
    _, xty = sufficient_statistics(data.design, data.y, 2.0)
    np.testing.assert_array_equal(xty, [2.0, -2.0, 0.5])


# --------------------------------------------------------------------------
# Exact noise scales and calibration
# --------------------------------------------------------------------------


def _data(n=200, d=3, seed=0, noise=0.1, fit_intercept=True, data_norm=1.5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.linspace(1.0, -0.5, d)
    y = np.clip(0.3 * (X @ w) + 0.1 + noise * rng.normal(size=n), -1, 1)
    return X, y, bound_data(X, y, fit_intercept=fit_intercept, data_norm=data_norm)


@pytest.mark.parametrize(
    "shares, ridge", [(None, "adaptive"), ((2.0, 1.0, 1.0), "adaptive"), ((1.0, 3.0, 0.0), 0.5)]
)
def test_noise_scales_are_exactly_the_calibrated_ones(shares, ridge):
    _, _, data = _data()
    epsilon, delta = 0.8, 1e-6
    with trace_releases() as trace:
        result = dp_ssp(
            data,
            get_loss("squared"),
            n_outputs=1,
            alpha=0.0,
            epsilon=epsilon,
            delta=delta,
            shares=shares,
            ridge=ridge,
            label_bound=0.7,
        )
    normal_scales = [r.scale for r in trace.releases if r.mechanism == "gaussian"]
    R = data.row_norm_bound
    values = np.asarray(module.DEFAULT_SHARES if shares is None else shares, dtype=float)
    if ridge != "adaptive":
        values[2] = 0.0
    values = values / values.sum()
    total = gaussian_noise_multiplier(epsilon, delta, 1)
    sigmas = [total / math.sqrt(v) for v in values if v > 0]
    assert np.sum(values[values > 0] / total**2) == pytest.approx(1 / total**2, rel=1e-12)
    sensitivities = [R**2, R * 0.7, R**2][: len(sigmas)]
    expected = [s * c for s, c in zip(sigmas, sensitivities)]
    np.testing.assert_allclose(normal_scales, expected, rtol=1e-12)
    assert result.plan.details["multipliers"][: len(sigmas)] == pytest.approx(sigmas, rel=1e-12)
    recomputed = epsilon_of_event(result.plan.event, delta)
    assert epsilon * (1 - 1e-6) <= recomputed <= epsilon * (1 + 1e-9)


def test_trace_records_the_three_releases():
    _, _, data = _data()
    with trace_releases() as trace:
        dp_ssp(
            data,
            get_loss("squared"),
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-5,
            random_state=0,
        )
    labels = [(r.label, r.norm) for r in trace.releases]
    assert labels == [("gram matrix", "l2"), ("X^T y", "l2"), ("smallest eigenvalue", "l2")]
    R2 = data.row_norm_bound**2
    assert [r.sensitivity for r in trace.releases] == pytest.approx([R2, data.row_norm_bound, R2])


def test_plan_without_the_adaptive_ridge_has_two_releases():
    plan = plan_call("dp_ssp", None, 4, 1.0, 1e-5, ridge=0.0)
    assert plan.n_steps == 2 and math.isinf(plan.details["multipliers"][2])
    assert epsilon_of_event(plan.event, 1e-5) <= 1.0 + 1e-9
    assert ssp_multipliers(math.inf, 0.0, (0.5, 0.5, 0.0)) == (0.0, 0.0, 0.0)


def test_adaptive_ridge_and_psd_repair():
    # No ridge when the released eigenvalue clears the noise; the gap otherwise.
    nu = math.sqrt(2 * 5) * 2.0
    assert adaptive_ridge(2.0, 5, 100.0) == 0.0
    assert adaptive_ridge(2.0, 5, 1.0) == pytest.approx(nu - 1.0)
    assert adaptive_ridge(2.0, 5, -3.0) == pytest.approx(nu)
    M = np.array([[2.0, 0.0], [0.0, -1.0]])
    np.testing.assert_allclose(repair_gram(M), [[2.0, 0.0], [0.0, 0.0]], atol=1e-15)
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    S = A + A.T
    P = repair_gram(S)
    assert np.linalg.eigvalsh(P)[0] >= -1e-12
    # The nearest PSD matrix in Frobenius norm: no PSD matrix is closer (spot check).
    for _ in range(20):
        B = rng.normal(size=(6, 6))
        Q = P + 0.1 * B @ B.T
        assert np.linalg.norm(S - P) <= np.linalg.norm(S - Q) + 1e-12


# --------------------------------------------------------------------------
# epsilon = inf: the non-private optimum
# --------------------------------------------------------------------------


def test_epsilon_inf_ridge_matches_sklearn():
    X, y, _ = _data(n=300, d=5)
    alpha = 3e-3
    model = DPSCORegressor(
        epsilon=math.inf, solver="dp_ssp", alpha=alpha, data_norm=3.0, y_bound=1.0
    ).fit(X, y)
    reference = Ridge(alpha=alpha * X.shape[0]).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9, atol=1e-12)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-9)


@pytest.mark.parametrize("estimator", ["DPLasso", "DPSCORegressor"])
def test_epsilon_inf_lasso_matches_sklearn(estimator):
    X, y, _ = _data(n=400, d=6)
    alpha = 0.01
    reference = Lasso(alpha=alpha, tol=1e-14, max_iter=100000).fit(X, y)
    if estimator == "DPLasso":
        model = DPLasso(
            epsilon=math.inf, solver="dp_ssp", alpha=alpha, y_bound=1.0, feature_bound=1.0
        ).fit(X, y)
    else:
        model = DPSCORegressor(
            epsilon=math.inf, solver="dp_ssp", penalty="l1", alpha=alpha, data_norm=3.0, y_bound=1.0
        ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-7)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-7)


def test_epsilon_inf_elastic_net_matches_sklearn():
    X, y, _ = _data(n=400, d=6)
    alpha, l1_ratio = 0.02, 0.4
    reference = ElasticNet(alpha=alpha, l1_ratio=l1_ratio, tol=1e-14, max_iter=100000).fit(X, y)
    model = DPSCORegressor(
        epsilon=math.inf,
        solver="dp_ssp",
        penalty="elasticnet",
        alpha=alpha,
        l1_ratio=l1_ratio,
        data_norm=3.0,
        y_bound=1.0,
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-7)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-7)


@pytest.mark.parametrize("constraint", ["l1", "l2"])
def test_epsilon_inf_constrained_least_squares_is_the_constrained_minimiser(constraint):
    X, y, _ = _data(n=300, d=4, noise=0.05)
    radius = 0.2
    model = (
        DPLasso(
            epsilon=math.inf, solver="dp_ssp", radius=radius, y_bound=1.0, feature_bound=1.0
        ).fit(X, y)
        if constraint == "l1"
        else DPSCORegressor(
            epsilon=math.inf,
            solver="dp_ssp",
            radius=radius,
            constraint="l2",
            penalty=None,
            data_norm=3.0,
            y_bound=1.0,
            fit_intercept=False,
        ).fit(X, y)
    )

    def objective(theta):
        pred = X @ theta[:4] + (theta[4] if constraint == "l1" else 0.0)
        return 0.5 * np.mean((y - pred) ** 2)

    if constraint == "l1":
        norm = {"type": "ineq", "fun": lambda t: radius - np.sum(np.abs(t[:4]))}
        start = np.zeros(5)
    else:
        norm = {"type": "ineq", "fun": lambda t: radius**2 - np.sum(t[:4] ** 2)}
        start = np.zeros(5)
    best = minimize(
        objective,
        start,
        constraints=[norm],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 1000},
    ).x
    assert objective(np.append(model.coef_, model.intercept_)) <= objective(best) + 1e-9
    coef = model.coef_
    assert (np.sum(np.abs(coef)) if constraint == "l1" else np.linalg.norm(coef)) <= radius + 1e-9


def test_solve_statistics_is_exact_post_processing_of_what_it_is_given():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(5, 5))
    G = A @ A.T + np.eye(5)
    b = rng.normal(size=5)
    w, iterations = solve_statistics(G, b, normalizer=10.0, ridge=0.5)
    np.testing.assert_allclose((G + 0.5 * np.eye(5)) @ w, b, rtol=1e-10)
    assert iterations == 0


# --------------------------------------------------------------------------
# The Lasso path: post-processing of the released statistics
# --------------------------------------------------------------------------


def test_path_at_epsilon_inf_matches_lasso_path():
    X, y, _ = _data(n=500, d=6, noise=0.05)
    model = DPLasso(epsilon=math.inf, solver="dp_ssp", alpha=0.01, y_bound=1.0).fit(X, y)
    alphas, coefs, intercepts = model.path(n_alphas=8, eps=1e-3)
    assert np.all(np.diff(alphas) < 0)
    assert np.all(coefs[:, 0] == 0)  # alpha_max: the first penalty that zeroes everything
    Xc = X - X.mean(axis=0)
    yc = y - y.mean()
    _, reference, _ = lasso_path(Xc, yc, alphas=alphas, tol=1e-14, max_iter=100000)
    np.testing.assert_allclose(coefs, reference, atol=1e-6)
    np.testing.assert_allclose(intercepts, y.mean() - X.mean(axis=0) @ coefs, atol=1e-6)
    # A penalty of the path reproduces the fit at that penalty.
    _, single, b = model.path(alphas=[0.01])
    np.testing.assert_allclose(single[:, 0], model.coef_, atol=1e-6)


def test_path_reads_no_data_releases_nothing_and_spends_nothing():
    X, y, _ = _data(n=500, d=6)
    budget = PrivacyBudget(2.0, 1e-5)
    model = DPLasso(epsilon=1.0, alpha=0.01, y_bound=1.0, budget=budget, random_state=0)
    model.fit(X, y)
    assert model.solver_ == "dp_ssp"
    spent = budget.spent
    with trace_releases() as trace:
        alphas, coefs, intercepts = model.path(n_alphas=20)
    assert trace.releases == [] and trace.samples == []
    assert budget.spent == spent and len(budget.ledger) == 1
    assert coefs.shape == (6, 20) and intercepts.shape == (20,)
    # The path at the fit's alpha is the fitted model (the fit's ball is far away).
    _, single, b = model.path(alphas=[0.01])
    np.testing.assert_allclose(single[:, 0], model.coef_, atol=1e-5)


def test_path_needs_a_dp_ssp_fit():
    X, y, _ = _data(n=200, d=3)
    model = DPLasso(epsilon=1.0, alpha=0.01, solver="dp_cd", random_state=0).fit(X, y)
    assert not hasattr(model, "released_statistics_")
    with pytest.raises(ValueError, match="solver='dp_ssp'"):
        model.path()


# --------------------------------------------------------------------------
# Inputs and accuracy
# --------------------------------------------------------------------------


def test_float32_and_sparse_inputs_release_the_same_statistics():
    X, y, data = _data(n=300, d=5)
    fits = []
    for Xi in (X, X.astype(np.float32), sp.csr_matrix(X)):
        d = bound_data(Xi, y, fit_intercept=True, data_norm=1.5)
        fits.append(
            dp_ssp(
                d,
                get_loss("squared"),
                n_outputs=1,
                alpha=0.0,
                epsilon=1.0,
                delta=1e-5,
                random_state=0,
            ).coef
        )
    np.testing.assert_allclose(fits[2], fits[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fits[1], fits[0], rtol=1e-4, atol=1e-5)


def test_dplasso_default_within_two_points_of_sklearn_at_n30000_d30():
    """DPLasso's default within two points of scikit-learn (bench_speed.py measures it over seeds)."""
    rng = np.random.default_rng(0)
    n, d = 30000, 30
    X = rng.uniform(-1, 1, size=(n + 10000, d))
    w = np.zeros(d)
    w[:5] = [1.2, -0.8, 0.6, -1.0, 0.7]
    y = X @ w + 0.3 + 0.5 * rng.normal(size=n + 10000)
    y_bound = float(np.sum(np.abs(w)) + 0.3 + 1.5)
    reference = Lasso(alpha=0.01).fit(X[:n], y[:n]).score(X[n:], y[n:])
    model = DPLasso(
        epsilon=1.0, alpha=0.01, feature_bound=1.0, y_bound=y_bound, random_state=0
    ).fit(X[:n], y[:n])
    assert model.solver_ == "dp_ssp"
    assert model.score(X[n:], y[n:]) >= reference - 0.02


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(shares=(1.0, 1.0)), "shares"),
        (dict(shares=(0.0, 1.0, 1.0)), "shares"),
        (dict(ridge=-1.0), "ridge"),
        (dict(ridge="adaptive", shares=(1.0, 1.0, 0.0)), "adaptive"),
        (dict(label_bound=0.0), "label_bound"),
    ],
)
def test_bad_options_are_refused_before_any_spend(options, match):
    X, y, _ = _data(n=50)
    budget = PrivacyBudget(5.0, 1e-4)
    with pytest.raises(ValueError, match=match):
        DPSCORegressor(solver="dp_ssp", budget=budget, solver_options=options).fit(X, y)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(ridge=-1.0), "ridge"),
        (dict(constraint="linf", radius=1.0), "constraint"),
        (dict(tol=-1.0), "tol"),
        (dict(label_bound=0.0), "label_bound"),
        (dict(label_bound=float("inf")), "label_bound"),
        (dict(label_bound=1e300), "label_bound"),
    ],
)
def test_a_direct_call_refuses_options_outside_their_declared_ranges(options, match):
    # The estimators check the registry's ranges before the spend; a direct
    # call of the solver refuses the same values itself.
    _, _, data = _data(n=50)
    with pytest.raises(ValueError, match=match):
        dp_ssp(
            data, get_loss("squared"), n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-5, **options
        )


def test_verbose_shows_the_pass_and_the_release_before_the_solve(capsys):
    """DPLasso's default fit prints its pass and its release, and only what the releases
    determine: with every release substituted, two different data sets print the same."""
    rng = np.random.default_rng(0)

    def printed(X, y):
        with trace_releases(substitute=lambda release: np.full(np.shape(release.output), 0.5)):
            DPLasso(feature_bound=1.0, y_bound=2.0, verbose=1, random_state=0).fit(X, y)
        return [line.rsplit(" (", 1)[0] for line in capsys.readouterr().err.splitlines()]

    X = rng.uniform(-1, 1, (300, 5))
    lines = printed(X, X[:, 0])
    assert "[dp_ssp] pass over the rows done (6 x 6 gram matrix and X^T y)" in lines
    assert "[dp_ssp] sufficient statistics released" in lines
    assert lines == printed(-X[:250], X[:250, 1] + 1.0)


def test_l1_projection_of_values_beyond_the_radius_resolution():
    # A radius below the resolution of the largest entry: the sort-based rule
    # finds no index in floats; the projection still lands on the ball's vertex.
    from sklearn_dp.solvers._l1_geometry import project_l1_ball

    projected = project_l1_ball(np.array([1e30, -3.0, 2.0]), 1e-8)
    assert np.all(np.isfinite(projected)) and projected[0] >= 0 and np.all(projected[1:] == 0)


def test_lasso_ssp_with_the_largest_declared_label_bound_fits():
    # The largest declared label bound gives noise far beyond the l1 radius:
    # the fit completes (a poor model), it does not fail after its charge.
    from sklearn.datasets import make_regression

    from sklearn_dp import DPLasso

    X, y = make_regression(60, 4, random_state=0)
    model = DPLasso(
        epsilon=1.0,
        solver="dp_ssp",
        feature_bound=300.0,
        y_bound=300.0,
        radius=1.0,
        solver_options={"label_bound": 1e30},
        random_state=0,
    )
    model.fit(X, y)
    assert np.all(np.isfinite(model.coef_))
