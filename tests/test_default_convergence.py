"""epsilon=inf at default hyper-parameters reaches the optimum of the problem.

Every solver, fitted without noise with all its hyper-parameters at their
defaults on real data (breast cancer, diabetes), must end within 1% relative
objective gap of a non-private reference optimum of the same problem
(scikit-learn, or a projected-gradient solve for the l1-constrained form).
Solvers that do not reach it today are marked ``xfail`` with the measured
reason (see docs/solvers/table.md for the exceptions).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.linear_model import Lasso, LogisticRegression, Ridge

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor

GAP = 0.01


def _breast_cancer():
    bunch = load_breast_cancer()
    # Public per-feature range map (the documented ranges, as in benchmarks/_datasets.py,
    # here with the data's own min/max: the test is about convergence, not privacy).
    lo, hi = bunch.data.min(axis=0), bunch.data.max(axis=0)
    X = (bunch.data - (lo + hi) / 2) / (hi - lo)
    return X, bunch.target


def _diabetes():
    bunch = load_diabetes()
    X = np.clip(bunch.data * math.sqrt(442) / 3.0, -1.0, 1.0)
    return X, bunch.target - 185.5


def _logistic_objective(X, y, coef, intercept, C=1.0):
    z = X @ coef + intercept
    s = np.where(y == 1, 1.0, -1.0)
    return float(np.mean(np.logaddexp(0.0, -s * z)) + coef @ coef / (2 * C * X.shape[0]))


def _ridge_objective(X, y, coef, intercept, alpha):
    r = y - X @ coef - intercept
    return float(r @ r / (2 * X.shape[0]) + alpha / 2 * coef @ coef)


def _lasso_objective(X, y, coef, intercept, alpha=0.0):
    r = y - X @ coef - intercept
    return float(r @ r / (2 * X.shape[0]) + alpha * np.abs(coef).sum())


def _project_l1(v, radius):
    if np.abs(v).sum() <= radius:
        return v
    u = np.sort(np.abs(v))[::-1]
    css = np.cumsum(u)
    k = np.nonzero(u * np.arange(1, v.size + 1) > css - radius)[0][-1]
    theta = (css[k] - radius) / (k + 1)
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0.0)


def _constrained_lasso_optimum(X, y, radius, n_iter=20000):
    n, d = X.shape
    Xc, yc = X - X.mean(axis=0), y - y.mean()
    L = np.linalg.eigvalsh(Xc.T @ Xc / n)[-1]
    w = z = np.zeros(d)
    t = 1.0
    for _ in range(n_iter):
        w_new = _project_l1(z - (Xc.T @ (Xc @ z - yc) / n) / L, radius)
        t_new = (1 + math.sqrt(1 + 4 * t * t)) / 2
        z = w_new + (t - 1) / t_new * (w_new - w)
        w, t = w_new, t_new
    return w, float(y.mean() - X.mean(axis=0) @ w)


def _gap(value, optimum):
    return (value - optimum) / abs(optimum)


# Measured at epsilon=inf (relative objective gap at the defaults); the ones
# above 1% are the documented exceptions.  dp_gd (1.6% / 1.04% with 100 steps)
# and dp_newton (2.8% with 5 steps) now default to more steps without noise
# (400 and 10: gaps 0.0% / 0.24% and 0.0%), and so do dp_sgd (30 epochs
# instead of 10: 2% -> 0.04%), dp_svrg (32 epochs instead of 6: 20% -> 0.6%) and
# dp_svrg_pp (9 doubling epochs instead of 5: 42% / 9.4% / 2.0% -> 0.16% / 0.77% / ...),
# and dp_cd (400 passes instead of 50: 10% / 1.4% -> within 1%).
LOGISTIC_XFAIL = {}
RIDGE_XFAIL = {}
# vr_frank_wolfe (one pass: gap 50-200%) and mirror_descent (minibatches: 3.7-7%)
# now use every row at every step without noise (gaps 0.1% and 0.9%).
LASSO_XFAIL = {
    "localized_mirror_descent": (
        "localized phases regularise at the SCO error bound by design (gap 41% at seed 0 "
        "with the public step floor; 105-109% over seeds 0-2 before it, that of "
        "predicting the mean label, 108%; docs/solvers/lasso.md)"
    ),
}
PENALISED_XFAIL = {}


def _maybe_xfail(table, solver):
    if solver in table:
        # Strict, and only for a missed target: a solver that starts to converge
        # (or crashes instead) fails the run, and its entry must go.
        return [pytest.mark.xfail(reason=table[solver], strict=True, raises=AssertionError)]
    return []


@pytest.mark.parametrize(
    "solver",
    # resque is refused on the logistic loss at its defaults (its default ball
    # schedule stopped at a 248% gap): tests/test_default_refusals.py.
    [
        pytest.param(s, marks=_maybe_xfail(LOGISTIC_XFAIL, s))
        for s in [
            "dp_gd",
            "dp_sgd",
            "objective_perturbation",
            "output_perturbation",
            "dp_cd",
            "dp_svrg",
            "dp_svrg_pp",
            "dp_newton",
        ]
    ],
)
def test_logistic_breast_cancer_converges_at_inf(solver):
    X, y = _breast_cancer()
    ref = LogisticRegression(C=1.0, tol=1e-10, max_iter=10000).fit(X, y)
    optimum = _logistic_objective(X, y, ref.coef_.ravel(), ref.intercept_[0])
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver=solver,
        classes=[0, 1],
        data_norm=0.5 * math.sqrt(30),
        feature_bound=0.5,
        random_state=0,
    ).fit(X, y)
    value = _logistic_objective(X, y, model.coef_.ravel(), model.intercept_[0])
    assert _gap(value, optimum) <= GAP, (solver, value, optimum)


@pytest.mark.parametrize(
    "solver",
    [
        pytest.param(s, marks=_maybe_xfail(RIDGE_XFAIL, s))
        for s in [
            "dp_gd",
            "dp_sgd",
            "objective_perturbation",
            "output_perturbation",
            "dp_cd",
            "dp_svrg",
            "dp_svrg_pp",
            "dp_newton",
            "dp_ssp",
        ]
    ],
)
def test_ridge_diabetes_converges_at_inf(solver):
    X, y = _diabetes()
    alpha = 1e-4  # DPSCORegressor's default
    ref = Ridge(alpha=alpha * X.shape[0], tol=1e-12).fit(X, y)
    optimum = _ridge_objective(X, y, ref.coef_, ref.intercept_, alpha)
    model = DPSCORegressor(
        epsilon=math.inf,
        solver=solver,
        data_norm=math.sqrt(10),
        feature_bound=1.0,
        y_bound=160.5,
        random_state=0,
    ).fit(X, y)
    value = _ridge_objective(X, y, model.coef_, model.intercept_, alpha)
    assert _gap(value, optimum) <= GAP, (solver, value, optimum)


@pytest.mark.parametrize(
    "solver",
    [
        pytest.param(s, marks=_maybe_xfail(LASSO_XFAIL, s))
        for s in [
            "frank_wolfe",
            "vr_frank_wolfe",
            "mirror_descent",
            "localized_mirror_descent",
            "dp_ssp",
        ]
    ],
)
def test_constrained_lasso_diabetes_converges_at_inf(solver):
    X, y = _diabetes()
    model = DPLasso(
        epsilon=math.inf, solver=solver, feature_bound=1.0, y_bound=160.5, random_state=0
    ).fit(X, y)
    w, b = _constrained_lasso_optimum(X, y, model.radius_)
    optimum = _lasso_objective(X, y, w, b)
    assert np.abs(model.coef_).sum() <= model.radius_ * (1 + 1e-6)
    value = _lasso_objective(X, y, model.coef_, model.intercept_)
    assert _gap(value, optimum) <= GAP, (solver, value, optimum)


@pytest.mark.parametrize(
    "solver",
    [
        pytest.param(s, marks=_maybe_xfail(PENALISED_XFAIL, s))
        for s in ["dp_cd", "dp_svrg_pp", "dp_ssp"]
    ],
)
def test_penalised_lasso_diabetes_converges_at_inf(solver):
    X, y = _diabetes()
    alpha = 1.0
    ref = Lasso(alpha=alpha, tol=1e-12, max_iter=100000).fit(X, y)
    optimum = _lasso_objective(X, y, ref.coef_, ref.intercept_, alpha)
    model = DPLasso(
        epsilon=math.inf,
        solver=solver,
        alpha=alpha,
        feature_bound=1.0,
        y_bound=160.5,
        random_state=0,
    ).fit(X, y)
    value = _lasso_objective(X, y, model.coef_, model.intercept_, alpha)
    assert _gap(value, optimum) <= GAP, (solver, value, optimum)
