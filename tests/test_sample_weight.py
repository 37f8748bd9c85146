"""sample_weight / max_weight, class_weight, warm_start and float32 coefficients.

* Weights multiply each row's contribution to every released sum; they are
  clipped to the public ``max_weight``, so every sensitivity is multiplied by
  ``max_weight`` (exact kernel properties below, hypothesis-drawn; the
  substitution test has weighted configurations, ``test_substitution_weighted``).
* Invalid weights (negative, NaN, inf, wrong length) and solvers that do not
  fit weighted rows are refused before the reservation, with messages that
  show no weight.  All-zero weights are not refused by private fits (whether
  all are zero depends on every row): they fit zero effective rows.
* ``epsilon=inf`` reaches scikit-learn's weighted optimum.
* ``sample_weight=None`` is the unweighted fit, bit for bit.
* ``warm_start`` charges the new fit only (one more ledger entry), but the
  model carries both fits' releases: its ``dp_event_`` and ``privacy_spent_``
  compose the previous fit's with the new one's.
* float32 input gives float32 ``coef_`` and ``intercept_``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge

from sklearn_dp import (
    DPLasso,
    DPLogisticRegression,
    DPSCORegressor,
    PrivacyBudget,
    privacy_report,
    privacy_spent,
)
from sklearn_dp._clipped_sums import clipped_gradient_sum, newton_sums, sufficient_statistics, svec
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.solvers import SOLVERS
from sklearn_dp.testing import trace_releases

# The perturbation solvers' certified inner solve is unweighted: they refuse weights
# (test_perturbation_solvers_refuse_weights_before_the_reservation).
WEIGHTED_SOLVERS = ("dp_gd", "dp_sgd", "dp_newton", "dp_nystrom")


def _classification(n=200, d=4, seed=0):
    X, y = make_classification(n, d, n_informative=3, n_redundant=0, random_state=seed)
    return X / np.max(np.linalg.norm(X, axis=1)), y


def _regression(n=200, d=4, seed=0):
    X, y = make_regression(n, d, noise=0.5, random_state=seed)
    X = X / np.max(np.linalg.norm(X, axis=1))
    return X, y / np.max(np.abs(y))


# -- kernels: exact sensitivities with weights --------------------------------

_rows = st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3)


@settings(max_examples=40, deadline=None)
@given(
    row=_rows,
    label=st.sampled_from([-1.0, 1.0]),
    weight=st.floats(0, 1e3),
    max_weight=st.floats(0.1, 10.0),
    seed=st.integers(0, 2**16),
)
def test_weighted_gradient_sum_moves_by_the_rows_clipped_weighted_term(
    row, label, weight, max_weight, seed
):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(20, 3))
    y = np.where(rng.random(20) < 0.5, -1.0, 1.0)
    w = rng.uniform(0, 2 * max_weight, size=20)
    X2, y2, w2 = np.vstack([X, row]), np.append(y, label), np.append(w, weight)
    loss = get_loss("log_loss", n_classes=2)
    W = rng.normal(size=(4, 1))
    clip = 0.7
    sums = []
    for Xi, yi, wi in ((X, y, w), (X2, y2, w2)):
        data = bound_data(
            Xi, yi, fit_intercept=True, data_norm=1.0, sample_weight=wi, max_weight=max_weight
        )
        assert data.weight_bound == max_weight
        assert np.all(data.sample_weight <= max_weight) and np.all(data.sample_weight >= 0)
        sums.append(
            clipped_gradient_sum(data.X, data.y, W, loss, clip, data.row_norms, data.sample_weight)
        )
    moved = np.linalg.norm(sums[1] - sums[0])
    assert moved <= max_weight * clip * (1 + 1e-9) + 1e-12
    # Exactly the added row's term: min(weight, M) * clip_C(grad l(x, y)).
    data = bound_data(np.atleast_2d(row), np.array([label]), fit_intercept=True, data_norm=1.0)
    x = data.X[0]
    z = float(x @ W[:, 0])
    derivative = (
        -label / (1 + math.exp(label * z)) if abs(z) < 700 else (-label if label * z < 0 else 0.0)
    )
    g = derivative * x
    norm = np.linalg.norm(g)
    if norm > clip:
        g = g * (clip / norm)
    expected = min(weight, max_weight) * g
    np.testing.assert_allclose((sums[1] - sums[0])[:, 0], expected, rtol=1e-7, atol=1e-10)


@settings(max_examples=30, deadline=None)
@given(
    row=_rows,
    weight=st.floats(0, 1e3),
    max_weight=st.floats(0.1, 10.0),
    loss_name=st.sampled_from(["log_loss", "squared"]),
    seed=st.integers(0, 2**16),
)
def test_weighted_newton_and_ssp_sums_move_by_max_weight_times_their_sensitivity(
    row, weight, max_weight, loss_name, seed
):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(15, 3))
    y = np.where(rng.random(15) < 0.5, -1.0, 1.0)
    w = rng.uniform(0, max_weight, size=15)
    R = math.hypot(1.0, 1.0)  # data_norm 1, intercept column 1
    loss = (
        get_loss("log_loss", n_classes=2)
        if loss_name == "log_loss"
        else get_loss("squared", residual_bound=2.0)
    )
    beta = 0.25 if loss_name == "log_loss" else 1.0
    W = rng.normal(size=(4, 1))
    out = []
    for Xi, yi, wi in ((X, y, w), (np.vstack([X, row]), np.append(y, 1.0), np.append(w, weight))):
        data = bound_data(
            Xi, yi, fit_intercept=True, data_norm=1.0, sample_weight=wi, max_weight=max_weight
        )
        g, H = newton_sums(
            data.design, data.y, W, loss, 0.5, data.row_norms, sample_weight=data.sample_weight
        )
        gram, xty = sufficient_statistics(data.design, data.y, 1.0, data.sample_weight)
        out.append((g, svec(H), svec(gram), xty))
    (g0, h0, G0, b0), (g1, h1, G1, b1) = out
    tol = 1 + 1e-9
    assert np.linalg.norm(g1 - g0) <= max_weight * 0.5 * tol + 1e-12
    assert np.linalg.norm(h1 - h0) <= max_weight * beta * R**2 * tol + 1e-12
    assert np.linalg.norm(G1 - G0) <= max_weight * R**2 * tol + 1e-12
    assert np.linalg.norm(b1 - b0) <= max_weight * R * 1.0 * tol + 1e-12


def test_weights_do_not_multiply_the_rows():
    # Scores x @ w are unchanged: the weights enter as per-row factors only.
    X, y = _classification(50)
    w = np.linspace(0, 2, 50)
    data = bound_data(
        X,
        np.where(y == 1, 1.0, -1.0),
        fit_intercept=True,
        data_norm=1.0,
        sample_weight=w,
        max_weight=2.0,
    )
    plain = bound_data(X, y, fit_intercept=True, data_norm=1.0)
    np.testing.assert_array_equal(data.X, plain.X)
    np.testing.assert_array_equal(data.row_norms, plain.row_norms)


# -- declared sensitivities of the releases ------------------------------------


@pytest.mark.parametrize("solver", WEIGHTED_SOLVERS + ("dp_ssp",))
def test_every_solver_release_is_scaled_by_max_weight(solver):
    regression = solver == "dp_ssp"
    X, y = _regression() if regression else _classification()
    Estimator = DPSCORegressor if regression else DPLogisticRegression
    extra = {} if regression else dict(classes=[0, 1])
    w = np.random.default_rng(0).uniform(0, 4, size=len(y))
    traces = []
    for max_weight, weights in ((1.0, np.ones(len(y))), (4.0, w)):
        with trace_releases() as trace:
            Estimator(
                epsilon=1.0, solver=solver, max_weight=max_weight, random_state=0, **extra
            ).fit(X, y, sample_weight=weights)
        traces.append(trace.releases)
    assert [r.label for r in traces[0]] == [r.label for r in traces[1]]
    for plain, weighted in zip(*traces):
        # Counts of rows (the row count, the bounds, the decision of
        # feature_scaling="auto"): a row moves them by one whatever its weight.
        unweighted = ("row count", "bound", "range", "feature scales")
        if any(name in plain.label for name in unweighted):
            assert weighted.sensitivity == plain.sensitivity
        elif plain.label == "inexact-solve residual":
            continue  # a public tolerance over the (larger) public regularisation
        else:
            assert weighted.sensitivity == pytest.approx(4.0 * plain.sensitivity, rel=1e-5)


def test_noise_grows_with_max_weight_and_the_event_does_not_change():
    X, y = _classification()
    fits = [
        DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=5, max_weight=m, random_state=0
        ).fit(X, y, sample_weight=np.ones(len(y)))
        for m in (1.0, 5.0)
    ]
    assert repr(fits[0].dp_event_) == repr(fits[1].dp_event_)
    assert fits[0].privacy_spent_ == fits[1].privacy_spent_


# -- sample_weight=None is today's fit ----------------------------------------


@pytest.mark.parametrize(
    "Estimator, solver",
    [
        (DPLogisticRegression, "dp_newton"),
        (DPLogisticRegression, "dp_gd"),
        (DPLogisticRegression, "dp_cd"),
        (DPSCORegressor, "dp_ssp"),
        (DPLasso, "auto"),
    ],
)
def test_sample_weight_none_is_the_unweighted_fit(Estimator, solver):
    X, y = _classification() if Estimator is DPLogisticRegression else _regression()
    params = dict(epsilon=1.0, solver=solver, random_state=3)
    if Estimator is DPLogisticRegression:
        params["classes"] = [0, 1]
    if solver == "dp_cd":
        params.update(feature_bound=1.0, max_iter=2)
    a = Estimator(**params).fit(X, y)
    b = Estimator(max_weight=7.0, **params).fit(X, y, sample_weight=None)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


# -- public refusals before the reservation ------------------------------------


@pytest.mark.parametrize(
    "bad, fragment",
    [
        (lambda n: np.full(n, -123.456), "negative"),
        (lambda n: np.r_[np.ones(n - 1), np.nan], "NaN"),
        (lambda n: np.r_[np.ones(n - 1), np.inf], "infinite"),
        (lambda n: np.ones(n + 1), "shape"),
        (lambda n: np.ones((n, 2)), "shape"),
        (lambda n: np.array(["a"] * n), "non-numeric"),
    ],
)
def test_invalid_weights_are_refused_before_the_reservation(bad, fragment):
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget)
    with pytest.raises(ValueError, match=fragment) as info:
        model.fit(X, y, sample_weight=bad(len(y)))
    assert budget.ledger == [] and budget.spent == (0.0, 0.0)
    message = str(info.value)
    assert "123" not in message and str(len(y)) not in message
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize(
    "estimator, solver",
    [
        (DPLogisticRegression, "dp_gd"),
        (DPLogisticRegression, "dp_newton"),
        (DPSCORegressor, "dp_sgd"),
        (DPLasso, "dp_ssp"),
    ],
)
def test_all_zero_weights_fit_privately_whatever_the_other_rows(estimator, solver):
    # All weights zero on D, one positive weight on D plus a row: a refusal
    # of the first (before or after the reservation) would tell them apart
    # for free.  Both fit, each charged once; only a non-private fit refuses.
    X, y = _classification() if estimator is DPLogisticRegression else _regression()
    extra = dict(classes=[0, 1]) if estimator is DPLogisticRegression else {}
    # Basic composition: room for both whatever charge a zCDP filter would pick.
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    zeros = np.zeros(len(y))
    neighbour = np.r_[zeros, 1.0]
    X_plus, y_plus = np.vstack([X, X[:1]]), np.r_[y, y[:1]]
    for X_fit, y_fit, weights in ((X, y, zeros), (X_plus, y_plus, neighbour)):
        model = estimator(epsilon=1.0, solver=solver, budget=budget, random_state=0, **extra)
        if "feature_scaling" in model.get_params():
            # One bound for all features (feature_scaling="auto" charges its scales too).
            model.set_params(feature_scaling=False)
        model.fit(X_fit, y_fit, sample_weight=weights)
        assert np.all(np.isfinite(model.coef_))
    assert len(budget.ledger) == 2
    with pytest.raises(ValueError, match="zero"):
        estimator(epsilon=math.inf, solver=solver, **extra).fit(X, y, sample_weight=zeros)


def test_solvers_without_weights_are_refused_before_the_reservation():
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3)
    supported = sorted(name for name, spec in SOLVERS.items() if spec.sample_weight)
    assert set(supported) == set(WEIGHTED_SOLVERS) | {"dp_ssp"}
    for kwargs in (dict(sample_weight=np.ones(len(y))), {}):
        cw = None if kwargs else {0: 1.0, 1: 0.5}
        with pytest.raises(ValueError, match="does not support sample_weight") as info:
            DPLogisticRegression(
                epsilon=1.0,
                classes=[0, 1],
                solver="dp_cd",
                feature_bound=1.0,
                class_weight=cw,
                budget=budget,
            ).fit(X, y, **kwargs)
        for name in supported:
            assert name in str(info.value)
    assert budget.ledger == []


def test_weights_above_max_weight_are_clipped():
    X, y = _classification()
    w = np.random.default_rng(0).uniform(0, 5, size=len(y))
    fit = lambda weights: DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], max_weight=2.0, random_state=0
    ).fit(X, y, sample_weight=weights)
    np.testing.assert_array_equal(fit(w).coef_, fit(np.minimum(w, 2.0)).coef_)


# -- epsilon = inf: scikit-learn's weighted optimum ---------------------------


@pytest.mark.parametrize("solver", ["dp_newton", "dp_gd"])
def test_noiseless_weighted_logistic_matches_scikit_learn(solver):
    X, y = _classification(300)
    w = np.random.default_rng(1).uniform(0, 2, size=300)
    reference = LogisticRegression(C=0.5, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=w)
    model = DPLogisticRegression(
        epsilon=math.inf,
        C=0.5,
        classes=[0, 1],
        solver=solver,
        data_norm=1.0,
        intercept_scaling=1.0,
        max_weight=2.0,
        max_iter=200 if solver == "dp_newton" else 3000,
    ).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-6)


def test_noiseless_weighted_multinomial_matches_scikit_learn():
    X, y = make_classification(300, 4, n_informative=3, n_redundant=0, n_classes=3, random_state=0)
    X = X / np.max(np.linalg.norm(X, axis=1))
    w = np.random.default_rng(2).uniform(0, 2, size=300)
    reference = LogisticRegression(C=2.0, tol=1e-12, max_iter=10_000).fit(X, y, sample_weight=w)
    model = DPLogisticRegression(
        epsilon=math.inf,
        C=2.0,
        classes=[0, 1, 2],
        solver="dp_newton",
        data_norm=1.0,
        intercept_scaling=1.0,
        max_weight=2.0,
        max_iter=200,
        solver_options=dict(hessian="exact"),
    ).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.predict_proba(X), reference.predict_proba(X), atol=1e-6)


@pytest.mark.parametrize("solver", ["objective_perturbation", "output_perturbation"])
def test_perturbation_solvers_refuse_weights_before_the_reservation(solver):
    # Their certified inner solve (distance to the minimiser proven from
    # public constants) is written for the unweighted objective.
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-5)
    with pytest.raises(ValueError, match="does not support sample_weight"):
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], solver=solver, budget=budget).fit(
            X, y, sample_weight=np.ones(len(y))
        )
    assert budget.ledger == []


@pytest.mark.parametrize("solver", ["dp_ssp", "dp_newton"])
def test_noiseless_weighted_ridge_matches_scikit_learn(solver):
    X, y = _regression(300)
    w = np.random.default_rng(3).uniform(0, 3, size=300)
    alpha = 1e-2
    # DPSCORegressor: mean_i w_i (y_i - x_i b)^2 / 2 + alpha / 2 ||coef||^2 (mean over n rows),
    # scikit-learn's Ridge: sum_i w_i (y_i - x_i b)^2 + alpha' ||coef||^2, alpha' = n alpha.
    reference = Ridge(alpha=300 * alpha).fit(X, y, sample_weight=w)
    model = DPSCORegressor(
        epsilon=math.inf,
        alpha=alpha,
        solver=solver,
        data_norm=1.0,
        y_bound=10.0,
        intercept_scaling=1.0,
        max_weight=3.0,
        **({"max_iter": 100} if solver == "dp_newton" else {}),
    ).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-6)


# -- class_weight ---------------------------------------------------------------


def test_class_weight_is_a_per_row_weight():
    X, y = _classification()
    cw = {0: 0.25, 1: 1.5}
    a = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], class_weight=cw, max_weight=2.0, random_state=0
    ).fit(X, y)
    b = DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_weight=2.0, random_state=0).fit(
        X, y, sample_weight=np.where(y == 1, 1.5, 0.25)
    )
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # Combined with sample_weight: the product (clipped to max_weight).
    sw = np.linspace(0.5, 2.0, len(y))
    c = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], class_weight=cw, max_weight=2.0, random_state=0
    ).fit(X, y, sample_weight=sw)
    d = DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_weight=2.0, random_state=0).fit(
        X, y, sample_weight=np.minimum(sw * np.where(y == 1, 1.5, 0.25), 2.0)
    )
    np.testing.assert_array_equal(c.coef_, d.coef_)


def test_class_weight_noiseless_matches_scikit_learn():
    X, y = _classification(300)
    cw = {0: 0.5, 1: 2.0}
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=10_000, class_weight=cw).fit(X, y)
    model = DPLogisticRegression(
        epsilon=math.inf,
        classes=[0, 1],
        class_weight=cw,
        max_weight=2.0,
        data_norm=1.0,
        intercept_scaling=1.0,
        solver="dp_newton",
        max_iter=200,
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)


def test_class_weight_with_released_labels():
    X, y = _classification(2000)
    model = DPLogisticRegression(epsilon=5.0, class_weight={0: 1.0, 1: 0.5}, random_state=0).fit(
        X, y
    )
    assert model.classes_.tolist() == [0, 1]
    assert model.score(X, y) > 0.6


@pytest.mark.parametrize(
    "class_weight, fragment",
    [
        ("balanced", "private"),
        ({0: 3.0, 1: 1.0}, "max_weight"),
        ({0: -1.0, 1: 1.0}, "max_weight"),
        ({0: 1.0, 5: 1.0}, "not in classes"),
    ],
)
def test_class_weight_refusals_before_the_reservation(class_weight, fragment):
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3)
    with pytest.raises(ValueError, match=fragment):
        DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], class_weight=class_weight, budget=budget
        ).fit(X, y)
    assert budget.ledger == []


# -- warm_start -----------------------------------------------------------------


def test_warm_start_charges_its_own_fit_and_reports_the_composed_guarantee():
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    model = DPLogisticRegression(
        epsilon=1.0,
        classes=[0, 1],
        warm_start=True,
        budget=budget,
        random_state=0,
        solver="dp_gd",
        max_iter=10,
    )
    model.fit(X, y)
    first_event = model.dp_event_
    first = model.coef_.copy()
    model.set_params(epsilon=0.5)
    model.fit(X, y)
    second_event = model.dp_event_.events[1]
    assert len(budget.ledger) == 2
    assert [entry.epsilon for entry in budget.ledger] == [1.0, 0.5]
    assert budget.spent == pytest.approx((1.5, 2e-5))
    assert model.dp_event_ == dpe.ComposedDpEvent([first_event, second_event])
    assert model.privacy_spent_ == (1.5, 2e-5)
    assert privacy_spent(model) == (1.5, 2e-5)
    assert privacy_report(model)["epsilon"] == 1.5
    assert not np.array_equal(model.coef_, first)
    # A cold fit reports its own spend again.
    model.set_params(warm_start=False).fit(X, y)
    assert model.privacy_spent_ == (0.5, 1e-5)


def test_warm_start_from_a_coef_set_by_hand_is_a_public_starting_point():
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    params = dict(epsilon=0.5, warm_start=True, budget=budget, solver="dp_gd", max_iter=3)
    model = DPLogisticRegression(classes=[0, 1], **params)
    model.coef_, model.intercept_ = np.zeros((1, X.shape[1])), np.zeros(1)
    model.fit(X, y)
    assert model.privacy_spent_ == (0.5, 1e-5)
    assert list(model.classes_) == [0, 1]
    # What it needs is said before anything is spent.
    unlabelled = DPLogisticRegression(**params)
    unlabelled.coef_, unlabelled.intercept_ = np.zeros((1, X.shape[1])), np.zeros(1)
    with pytest.raises(ValueError, match="set by hand needs classes="):
        unlabelled.fit(X, y)
    no_intercept = DPLogisticRegression(classes=[0, 1], **params)
    no_intercept.coef_ = np.zeros((1, X.shape[1]))
    with pytest.raises(ValueError, match="Set intercept_ too"):
        no_intercept.fit(X, y)
    regressor = DPSCORegressor(**params)
    regressor.coef_ = np.zeros(X.shape[1])
    with pytest.raises(ValueError, match="Set intercept_ too"):
        regressor.fit(X, y.astype(float))
    assert len(budget.ledger) == 1


def test_warm_start_from_a_non_private_fit_reports_no_guarantee():
    X, y = _classification()
    model = DPLogisticRegression(
        epsilon=math.inf, classes=[0, 1], warm_start=True, solver="dp_gd", max_iter=5
    ).fit(X, y)
    model.set_params(epsilon=1.0, random_state=0).fit(X, y)
    assert model.privacy_spent_ == (math.inf, 0.0)
    assert privacy_report(model)["epsilon"] == "inf"


def test_warm_start_ignored_by_the_solver_reports_its_own_fit():
    X, y = _classification()
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], random_state=0, solver="output_perturbation"
    ).fit(X, y)
    model.set_params(warm_start=True)
    with pytest.warns(UserWarning, match="warm_start=True is ignored"):
        model.fit(X, y)
    assert model.privacy_spent_ == (1.0, 1e-5)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_newton", "dp_sgd"])
def test_warm_start_starts_from_the_previous_model(solver):
    # Without noise and with zero steps' worth of change, a warm fit from the
    # optimum stays there; a cold one with the same few steps does not get there.
    X, y = _classification(300)
    params = dict(
        epsilon=math.inf, classes=[0, 1], data_norm=1.0, intercept_scaling=1.0, solver=solver
    )
    optimum = DPLogisticRegression(**dict(params, solver="dp_newton", max_iter=100)).fit(X, y)
    warm = DPLogisticRegression(warm_start=True, max_iter=2 if solver != "dp_sgd" else 1, **params)
    warm.coef_, warm.intercept_, warm.classes_ = (
        optimum.coef_.copy(),
        optimum.intercept_.copy(),
        optimum.classes_,
    )
    warm.fit(X, y)
    cold = DPLogisticRegression(max_iter=2 if solver != "dp_sgd" else 1, **params).fit(X, y)
    distance = lambda m: np.linalg.norm(m.coef_ - optimum.coef_)
    assert distance(warm) < distance(cold)
    if solver != "dp_sgd":
        assert distance(warm) < 1e-3


def test_warm_start_regressor_is_in_the_original_units():
    X, y = _regression(300)
    y = 5.0 + 20.0 * y
    params = dict(
        epsilon=math.inf, data_norm=1.0, y_bound=50.0, intercept_scaling=1.0, solver="dp_newton"
    )
    optimum = DPSCORegressor(max_iter=100, **params).fit(X, y)
    warm = DPSCORegressor(warm_start=True, max_iter=1, **params)
    warm.coef_, warm.intercept_ = optimum.coef_.copy(), optimum.intercept_
    warm.fit(X, y)
    np.testing.assert_allclose(warm.coef_, optimum.coef_, atol=1e-6)
    assert warm.intercept_ == pytest.approx(optimum.intercept_, abs=1e-6)


def test_warm_start_false_is_unchanged():
    X, y = _classification()
    params = dict(epsilon=1.0, classes=[0, 1], random_state=0)
    model = DPLogisticRegression(**params).fit(X, y)
    again = model.fit(X, y).coef_.copy()
    fresh = DPLogisticRegression(**params).fit(X, y).coef_
    np.testing.assert_array_equal(again, fresh)


def test_warm_start_shape_mismatch_is_refused_before_the_reservation():
    X, y = _classification()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], warm_start=True, budget=budget, random_state=0
    ).fit(X, y)
    with pytest.raises(ValueError, match="warm_start"):
        model.fit(X[:, :3], y)
    with pytest.raises(ValueError, match="warm_start"):
        model.set_params(classes=[0, 1, 2]).fit(X, y)
    assert len(budget.ledger) == 1
    regressor = DPSCORegressor(epsilon=1.0, warm_start=True, random_state=0).fit(*_regression())
    with pytest.raises(ValueError, match="warm_start"):
        regressor.fit(_regression()[0][:, :2], _regression()[1])


def test_warm_start_with_a_solver_without_initial_point_warns_before_the_reservation():
    X, y = _classification()
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], warm_start=True, random_state=0, solver="output_perturbation"
    ).fit(X, y)
    with pytest.warns(UserWarning, match="warm_start=True is ignored"):
        model.fit(X, y)


# -- float32 ------------------------------------------------------------------------


@pytest.mark.parametrize("Estimator", [DPLogisticRegression, DPSCORegressor, DPLasso])
def test_float32_input_gives_float32_coefficients(Estimator):
    X, y = _classification() if Estimator is DPLogisticRegression else _regression()
    X32 = X.astype(np.float32)
    extra = dict(classes=[0, 1]) if Estimator is DPLogisticRegression else {}
    model = Estimator(epsilon=1.0, random_state=0, **extra).fit(X32, y)
    assert model.coef_.dtype == np.float32
    assert np.asarray(model.intercept_).dtype == np.float32
    assert model.predict(X32).shape == (len(y),)
    model64 = Estimator(epsilon=1.0, random_state=0, **extra).fit(X, y)
    assert model64.coef_.dtype == np.float64
    if Estimator is not DPLogisticRegression:
        assert isinstance(model64.intercept_, float)
