"""Noise warnings and refusals from public values only.

A noisy first-order fit whose public noise proxy says the model is likely
worse than the trivial predictor warns (through the estimator's private
phase, so the text is a function of public values and the released row
count); Frank-Wolfe on the penalised Lasso's loose ball is refused before
any spend.
"""

from __future__ import annotations

import functools
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from _helpers import regression_data

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers import SOLVERS, _mirror_descent, plan_call
from sklearn_dp.solvers._frank_wolfe import check_frank_wolfe, check_penalty_ball
from sklearn_dp.solvers._noise_warnings import (
    noise_dominated_warning,
    noise_excess_proxy,
)

#: Ten uniform features on [-1, 1], large noisy labels on three of them.
_regression = functools.partial(
    regression_data, n=300, d=10, coef=(30.0, -20.0, 10.0), noise=40.0, clip=160.0
)


def _classification(n=5000, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    y = (X @ np.arange(1, d + 1) + 0.1 * rng.normal(size=n) > 0).astype(int)
    return X, y


# ---------------------------------------------------------------- unit rules


def test_noise_excess_proxy_is_the_stationary_excess_loss():
    assert noise_excess_proxy(0.05, 1391.7, 417.0, 11) == pytest.approx(
        0.5 * 0.05 * (1391.7 / 417.0) ** 2 * 11
    )
    assert noise_excess_proxy(0.05, 0.0, 417.0, 11) == 0.0  # no noise (epsilon = inf)


@pytest.mark.parametrize("name", sorted(s.name for s in SOLVERS.values() if s.noise_warning))
@pytest.mark.parametrize("loss", ["squared", "log_loss"])
def test_the_rule_fires_above_its_threshold_only(name, loss):
    threshold = SOLVERS[name].noise_warning[loss == "log_loss"]
    assert noise_dominated_warning(name, loss, 0.99 * threshold, epsilon=1.0) is None
    message = noise_dominated_warning(name, loss, 1.01 * threshold, epsilon=1.0)
    assert message.startswith(f"{name}: ")
    assert "dp_newton" in message and "larger epsilon" in message
    assert noise_dominated_warning(name, loss, 1e9, epsilon=math.inf) is None


def test_unknown_solvers_never_warn():
    assert noise_dominated_warning("dp_cd", "squared", 1e9, epsilon=1.0) is None


@pytest.mark.parametrize(
    ("penalty", "alpha", "l1_ratio", "radius", "refused"),
    [
        ("l1", 0.01, None, 50.0, True),  # the ball alpha implies
        ("l1", 0.5, None, 1e6, True),
        ("elasticnet", 0.5, 0.5, 2.0, True),
        ("l1", 0.01, None, 2.0, False),  # a user's radius inside the penalty's ball
        (None, 0.0, None, 50.0, False),  # the constrained form
    ],
)
def test_frank_wolfe_penalty_ball_rule(penalty, alpha, l1_ratio, radius, refused):
    def check():
        check_frank_wolfe(
            n_outputs=1,
            penalty=penalty,
            alpha=alpha,
            l1_ratio=l1_ratio,
            public=SimpleNamespace(delta=1e-5),
            options={"radius": radius},
        )
        check_penalty_ball("frank_wolfe", penalty, alpha, l1_ratio, radius)

    if refused:
        with pytest.raises(ValueError, match="frank_wolfe does not fit the penalised Lasso"):
            check()
    else:
        check()


# ---------------------------------------------------------- through estimators


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd", "dp_svrg", "dp_svrg_pp"])
def test_noise_dominated_regression_warns_through_the_estimator(solver):
    # diabetes-like: few rows, a wide label bound, epsilon 0.1.
    X, y = _regression()
    model = DPSCORegressor(
        epsilon=0.1,
        delta=1e-5,
        solver=solver,
        data_norm=math.sqrt(10),
        feature_bound=1.0,
        y_bound=160.0,
        random_state=0,
    )
    with pytest.warns(UserWarning, match=rf"{solver}: the noise .*solver='dp_newton'"):
        model.fit(X, y)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd", "dp_svrg"])
def test_many_rows_at_a_large_epsilon_stay_quiet(solver):
    X, y = _classification()
    model = DPLogisticRegression(
        epsilon=5.0,
        delta=1e-6,
        solver=solver,
        classes=[0, 1],
        data_norm=1.2,
        feature_bound=0.5,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(X, y)


def test_noiseless_fits_never_warn():
    X, y = _regression()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPSCORegressor(
            epsilon=math.inf, solver="dp_gd", feature_bound=1.0, y_bound=160.0, data_norm=4.0
        ).fit(X, y)


# ------------------------------------------------------ public default rules


def test_dp_sgd_regression_threshold():
    assert SOLVERS["dp_sgd"].noise_warning == (0.004, 1.0)


@pytest.mark.parametrize(
    ("name", "n_public", "d", "epsilon", "warns"),
    [
        # diabetes (353 rows, d = 10, radius sqrt(10)): bound 6.2 / 1.6 / 0.34 at 0.1 / 0.5 / 5
        ("frank_wolfe", 353.0, 10, 0.095, True),
        ("frank_wolfe", 353.0, 10, 0.475, False),
        ("vr_frank_wolfe", 353.0, 10, 4.75, True),
        # sparse regression (30000 rows, d = 30, radius sqrt(30)): 0.48 at 0.1, 0.18 at 0.5
        ("vr_frank_wolfe", 30000.0, 30, 0.095, True),
        ("vr_frank_wolfe", 30000.0, 30, 0.475, False),
        ("frank_wolfe", 30000.0, 30, 0.095, False),
    ],
)
def test_frank_wolfe_warning_rule(name, n_public, d, epsilon, warns):
    from sklearn_dp.solvers._frank_wolfe import fw_public_error_bound
    from sklearn_dp.solvers._noise_warnings import frank_wolfe_warning

    assert {s.name: s.bound_warning for s in SOLVERS.values() if s.bound_warning} == {
        "frank_wolfe": 3.0,
        "vr_frank_wolfe": 0.25,
        "localized_mirror_descent": 3.0,
    }
    radius = math.sqrt(d)
    bound = fw_public_error_bound(n_public, d, epsilon, 1e-5, radius)
    assert (bound >= SOLVERS[name].bound_warning) is warns
    message = frank_wolfe_warning(name, "squared", n_public, d, epsilon, 1e-5, radius)
    assert (message is not None) is warns
    if warns:
        assert message.startswith(f"{name}: ") and "dp_ssp" in message
    # never for classification losses (unmeasured), without noise or without a radius
    assert frank_wolfe_warning(name, "log_loss", n_public, d, epsilon, 1e-5, radius) is None
    assert frank_wolfe_warning(name, "squared", n_public, d, math.inf, 0.0, radius) is None
    assert frank_wolfe_warning(name, "squared", n_public, d, epsilon, 1e-5, None) is None


def test_fw_public_error_bound_exact_value():
    from sklearn_dp.solvers._frank_wolfe import (
        BOUND_MIN_ITERATIONS,
        OPTIMISATION_WEIGHT,
        _minimising_iterations,
        fw_public_error_bound,
        zcdp_budget,
    )

    # The bound's own schedule (weight 0.1, at least 40 steps), not the default
    # step count: the default radius and the warning are calibrated against it.
    args = (353.0, 10, 0.5, 1e-5, math.sqrt(10))
    t = _minimising_iterations(*args, OPTIMISATION_WEIGHT, BOUND_MIN_ITERATIONS)
    assert t >= 40
    eps0 = max(0.5 / t * (1 - 1e-12), math.sqrt(8 * zcdp_budget(0.5, 1e-5) / t))
    # Damped FW error plus the expected excess score of one selection (m = 2 d).
    r = math.sqrt(10)
    expected = OPTIMISATION_WEIGHT * 8.0 * r**2 / (t + 2.0)
    expected += 2.0 * r / (353.0 * eps0) * math.log(2 * 10)
    assert fw_public_error_bound(353.0, 10, 0.5, 1e-5, math.sqrt(10)) == expected


@pytest.mark.parametrize("solver", ["frank_wolfe", "vr_frank_wolfe"])
def test_frank_wolfe_small_data_warns_through_the_estimator(solver):
    X, y = _regression()
    # A given ball of the dense cap's size (the default radius keeps the
    # public bound small, so it does not warn).
    model = DPLasso(
        epsilon=0.1,
        delta=1e-5,
        solver=solver,
        radius=500.0,
        feature_bound=1.0,
        y_bound=160.0,
        random_state=0,
    )
    # vr_frank_wolfe returns the zero model there (its fallback, below).
    text = "returned the zero model" if solver == "vr_frank_wolfe" else "the noise of its vertex"
    with pytest.warns(UserWarning, match=rf"{solver}: {text}"):
        model.fit(X, y)


def test_vr_frank_wolfe_returns_the_zero_model_where_its_bound_is_vacuous():
    """Decided from the released count before any row is read: no selection, the zero model
    (the label centre), n_iter_ 0, a warning naming what to do, and the fit's charge stands."""
    from sklearn_dp import PrivacyBudget
    from sklearn_dp.testing import trace_releases

    X, y = _regression()
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    model = DPLasso(
        epsilon=1.0, solver="vr_frank_wolfe", radius=500.0, feature_bound=1.0, y_bound=160.0
    )
    with trace_releases() as trace, pytest.warns(UserWarning) as caught:
        model.set_params(budget=budget, random_state=0).fit(X, y)
    texts = [str(w.message) for w in caught if "vr_frank_wolfe" in str(w.message)]
    assert len(texts) == 1 and "returned the zero model" in texts[0]
    assert "solver='frank_wolfe'" in texts[0] and "more rows" in texts[0]
    assert "larger epsilon" in texts[0] and "charge stands" in texts[0]
    assert "noise of its vertex choices" not in texts[0]
    assert not np.any(model.coef_) and model.n_iter_ == 0
    assert model.intercept_ == pytest.approx(model.y_center_)
    # Only the count (and bounds) ran: no allocation and no vertex selection.
    assert [r.label for r in trace.releases] == ["row count"]
    assert not trace.samples
    assert budget.spent == pytest.approx(model.privacy_spent_)
    assert model.privacy_spent_[0] == pytest.approx(1.0) and len(budget.ledger) == 1


def test_vr_frank_wolfe_runs_where_its_bound_is_not_vacuous():
    from sklearn_dp.solvers._noise_warnings import frank_wolfe_warning

    X, y = _regression(n=3000)
    params = dict(solver="vr_frank_wolfe", radius=5.0, feature_bound=1.0, y_bound=160.0)
    model = DPLasso(epsilon=20.0, random_state=0, **params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    assert not [w for w in caught if "zero model" in str(w.message)]
    assert model.n_iter_ > 0 and np.any(model.coef_)
    radius = 5.0 / 160.0  # the radius in the fit's label units
    assert frank_wolfe_warning("vr_frank_wolfe", "squared", 3000.0, 11, 20.0, 1e-5, radius) is None


def test_frank_wolfe_stays_for_the_pure_penalised_form_and_warns():
    """With delta=0 no Gaussian solver fits the penalised Lasso: auto keeps frank_wolfe, honestly."""
    X, y = _regression()
    model = DPLasso(
        epsilon=1.0, delta=0.0, alpha=1.0, feature_bound=1.0, y_bound=160.0, random_state=0
    )
    with pytest.warns(UserWarning, match="frank_wolfe"):
        model.fit(X, y)
    assert model.solver_ == "frank_wolfe"


# ------------------------------------------- default SVRG epochs (regression)


def _svrg_pp_epochs(n, epsilon, loss, **options):

    plan = plan_call(
        "dp_svrg_pp", n, 11, epsilon, 1e-5, loss=loss, row_norm_bound=math.sqrt(11), **options
    )
    return len(plan.details["epoch_lengths"])


def test_default_svrg_epochs_drop_when_the_public_noise_proxy_is_loud():
    from sklearn_dp._losses import BinaryLogisticLoss, SquaredLoss
    from sklearn_dp.solvers._gradient_descent import gradient_bound
    from sklearn_dp.solvers._svrg import (
        QUIET_FRACTION,
        approximate_difference_multiplier,
    )
    from sklearn_dp.solvers._svrg_schedule import DEFAULT_SVRG_PP_EPOCHS

    squared = SquaredLoss(residual_bound=5.0)
    epochs = [_svrg_pp_epochs(3530.0, e, squared) for e in (0.1, 1.0, 5.0, 50.0)]
    assert epochs == [1, 2, DEFAULT_SVRG_PP_EPOCHS, DEFAULT_SVRG_PP_EPOCHS]
    assert _svrg_pp_epochs(1e7, 1.0, squared) == DEFAULT_SVRG_PP_EPOCHS
    # The choice is the largest T whose proxy (recomputed here) is below the fraction.
    plan = plan_call(
        "dp_svrg_pp", 3530.0, 11, 1.0, 1e-5, loss=squared, row_norm_bound=math.sqrt(11)
    )
    details, chosen = plan.details, len(plan.details["epoch_lengths"])
    clip = gradient_bound(squared, math.sqrt(11), None, private=True)

    def proxy(t):
        k = details["inner_steps"] * (2 ** (t + 1) - 2)
        rate = details["sampling_probability"]
        s = approximate_difference_multiplier(1.0, 1e-5, rate, k, details["snapshot_share"])
        return noise_excess_proxy(details["step_size"], 2 * s * clip, rate * 3530.0, 11)

    limit = QUIET_FRACTION * SOLVERS["dp_svrg_pp"].noise_warning[0]
    assert chosen == 2 and proxy(2) < limit <= proxy(3)
    # Classification keeps its default (its thresholds do not separate the
    # benchmark's rows), a given max_iter is run as given, no noise keeps the
    # noiseless schedule.
    logistic = BinaryLogisticLoss()
    assert _svrg_pp_epochs(353.0, 0.1, logistic) == DEFAULT_SVRG_PP_EPOCHS
    assert _svrg_pp_epochs(353.0, 0.1, squared, max_iter=4) == 4
    assert _svrg_pp_epochs(353.0, math.inf, squared) > DEFAULT_SVRG_PP_EPOCHS


def test_default_dp_svrg_epochs_drop_on_a_loud_regression():
    from sklearn_dp._losses import SquaredLoss
    from sklearn_dp.solvers._svrg_schedule import default_svrg_epochs

    def epochs(epsilon):
        plan = plan_call(
            "dp_svrg",
            30000.0,
            31,
            epsilon,
            1e-5,
            loss=SquaredLoss(residual_bound=12.0),
            row_norm_bound=math.sqrt(31),
            alpha=1e-4,
        )
        return len(plan.details["epoch_lengths"])

    assert default_svrg_epochs(30000.0, 0.1) == 6
    assert epochs(0.1) == 1  # loud: R^2 -3.8e4 with six epochs, -31 with one (benchmark)
    assert epochs(5.0) == 6


# --------------------------------------------------------------------------
# Warnings from a fit's released values: constant predictors, label sets
# --------------------------------------------------------------------------


def _fitted(**attributes):
    return SimpleNamespace(**attributes)


def test_a_binary_classifier_constant_within_its_bounds_is_reported():
    from sklearn_dp.linear_model._released_warnings import released_fit_warnings

    # |x @ w| <= ||w|| * data_norm = 0.5 < |intercept|: class 1 for every bounded row.
    constant = _fitted(
        classes_=np.array([0, 1]),
        coef_=np.array([[0.3, 0.4]]),
        intercept_=np.array([0.6]),
        data_norm_=1.0,
        feature_bound_=None,
    )
    (message,) = released_fit_warnings(constant)
    assert "predicts the class 1 for every row" in message and "epsilon" in message
    constant.intercept_ = np.array([0.4])
    assert released_fit_warnings(constant) == []
    # Entrywise bounds: sum_j |w_j| b_j = 0.3 * 1 + 0.4 * 2 = 1.1.
    entrywise = _fitted(
        classes_=np.array(["a", "b"]),
        coef_=np.array([[0.3, -0.4]]),
        intercept_=np.array([-1.2]),
        data_norm_=None,
        feature_bound_=np.array([1.0, 2.0]),
    )
    (message,) = released_fit_warnings(entrywise)
    assert "predicts the class 'a'" in message


def test_a_multiclass_classifier_constant_within_its_bounds_is_reported():
    from sklearn_dp.linear_model._released_warnings import released_fit_warnings

    model = _fitted(
        classes_=np.array([3, 5, 7]),
        coef_=np.array([[0.1, 0.0], [0.0, 0.1], [0.0, 0.0]]),
        intercept_=np.array([0.0, 1.0, 0.0]),
        data_norm_=1.0,
        feature_bound_=None,
    )
    (message,) = released_fit_warnings(model)
    assert "predicts the class 5" in message
    model.intercept_ = np.array([0.0, 0.1, 0.0])
    assert released_fit_warnings(model) == []


def test_a_regressor_with_a_narrow_released_label_range_or_flat_predictions_is_reported():
    from sklearn_dp.linear_model._released_warnings import released_fit_warnings

    narrow = _fitted(
        coef_=np.array([1.0, 2.0]),
        intercept_=150.0,
        data_norm_=1.0,
        feature_bound_=None,
        y_bound_=1e-6,
        y_center_=150.0,
    )
    (message,) = released_fit_warnings(narrow)
    assert "narrow for its centre" in message and "y_bound=" in message
    flat = _fitted(
        coef_=np.array([1e-3, 0.0]),
        intercept_=150.0,
        data_norm_=10.0,
        feature_bound_=None,
        y_bound_=100.0,
        y_center_=150.0,
    )
    (message,) = released_fit_warnings(flat)
    assert "nearly a constant predictor" in message
    flat.coef_ = np.array([1.0, 0.0])
    assert released_fit_warnings(flat) == []


def test_a_constant_classifier_warns_through_fit():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    # A row bound far below the rows (norms in the hundreds) leaves no signal.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = DPLogisticRegression(
            epsilon=1.0, classes=[0, 1, 2], data_norm=1e-6, random_state=0
        ).fit(X, y)
    messages = [str(w.message) for w in caught if "constant predictor" in str(w.message)]
    assert len(np.unique(model.predict(X))) == 1
    assert len(messages) == 1 and "predicts the class" in messages[0]
    assert caught[0].filename == __file__


def test_label_set_warning_rule():
    from sklearn_dp.linear_model._released_warnings import label_set_warning

    # epsilon 0.1, delta 5e-6: threshold 1 + 10 log(1e5) = 116.1, plus two scales: 136.1;
    # against the share of an eleventh class, n / 11.
    threshold = 1 + 10 * math.log(1e5)
    assert label_set_warning("M", 10, 1500.0, threshold, 10.0) is None
    message = label_set_warning("M", 10, 1490.0, threshold, 10.0)
    assert "holds 10 classes" in message and "about 136 rows" in message
    assert "classes=[...]" in message
    assert label_set_warning("M", 2, 100_000.0, threshold, 10.0) is None


def test_a_released_label_set_that_may_miss_classes_warns_and_public_classes_do_not():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    # String labels have no public candidates: the thresholded path.
    X, y = X[:1350], np.array([f"digit {v}" for v in y[:1350]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # At epsilon 0.2 the label set gets 0.08: classes of about 135 rows
        # sit near its threshold (at 0.5 they no longer do).
        DPLogisticRegression(epsilon=0.2, max_iter=5, random_state=0).fit(X, y)
    assert any("left out" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLogisticRegression(
            epsilon=0.5, max_iter=5, classes=sorted(set(y.tolist())), random_state=0
        ).fit(X, y)
    assert not any("left out" in str(w.message) for w in caught)


def test_label_range_warning_rule():
    from sklearn_dp.linear_model._released_warnings import (
        LABEL_RANGE_MIN_EVIDENCE,
        label_range_warning,
    )

    assert LABEL_RANGE_MIN_EVIDENCE == 20.0
    assert label_range_warning("R", 400.0, 0.05) is None  # 20 rows x epsilon
    message = label_range_warning("R", 309.0, 0.05)
    assert "about 309 rows" in message and "15.5" in message and "y_bound=" in message


def test_row_bound_warning_rule():
    from sklearn_dp.linear_model._released_warnings import (
        ROW_BOUND_MIN_EVIDENCE,
        row_bound_warning,
    )

    assert ROW_BOUND_MIN_EVIDENCE == 15.0
    assert row_bound_warning("R", "data_norm", 500.0, 0.03) is None  # 15 rows x epsilon
    message = row_bound_warning("R", "data_norm", 309.0, 0.03)
    assert "about 309 rows" in message and "9.27" in message and "data_norm=" in message


def test_a_row_bound_from_too_little_evidence_warns_and_a_given_bound_does_not():
    # 300 rows at epsilon 0.3: the row bound gets about 0.03, 9 rows times
    # epsilon; at epsilon 1, 30.
    X, y = _regression()

    def messages(**params):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DPSCORegressor(random_state=0, **params).fit(X, y)
        return [str(w.message) for w in caught if "row bound" in str(w.message)]

    (message,) = messages(epsilon=0.3)
    assert "data_norm='auto'" in message and "rows times epsilon" in message
    assert not messages(epsilon=1.0)
    assert not messages(epsilon=0.3, data_norm=5.0)


def test_a_label_range_from_too_little_evidence_warns_and_a_given_bound_does_not():
    # 300 rows at epsilon 0.3: the range gets 0.3 * 0.15 = 0.045, about 13.5
    # rows times epsilon; at epsilon 2, 90.
    X, y = _regression()
    y = y + 150.0  # labels far from 0, as a table's are

    def messages(**params):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            DPSCORegressor(random_state=0, **params).fit(X, y)
        return [str(w.message) for w in caught if "label range" in str(w.message)]

    assert any("rows times epsilon" in m for m in messages(epsilon=0.3))
    assert not messages(epsilon=2.0)
    assert not messages(epsilon=0.3, y_bound=400.0)


def test_noiseless_fits_never_warn_about_released_values():
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPLogisticRegression(epsilon=math.inf, data_norm=1.0, C=1e-6).fit(X, y)


# ------------------------------------------- localized mirror descent's own bound


def test_localized_mirror_descent_returns_the_zero_model_where_its_bound_is_vacuous():
    """d >> the rows' worth of signal: Theorem 4's bound (constant 1) is far above the
    zero model's loss.  Decided from the released count before any row is read: no
    release but the count, the zero model, n_iter_ 0, and the fit's charge stands."""
    from sklearn_dp import PrivacyBudget
    from sklearn_dp.testing import trace_releases

    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(400, 300))
    y = X[:, :3] @ np.array([0.5, -0.5, 0.5]) + 0.1 * rng.normal(size=400)
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    assert _mirror_descent.FALLBACK_BOUND > SOLVERS["localized_mirror_descent"].bound_warning
    model = DPLasso(
        epsilon=1.0,
        solver="localized_mirror_descent",
        feature_bound=1.0,
        y_bound=2.0,
        budget=budget,
        random_state=0,
    )
    with trace_releases() as trace, pytest.warns(UserWarning) as caught:
        model.fit(X, y)
    texts = [str(w.message) for w in caught if "localized_mirror_descent" in str(w.message)]
    assert len(texts) == 1 and "returned the zero model" in texts[0]
    assert "its public error bound" in texts[0] and "charge stands" in texts[0]
    assert "solver='frank_wolfe'" in texts[0] and "more rows" in texts[0]
    assert not np.any(model.coef_) and model.n_iter_ == 0
    assert model.intercept_ == pytest.approx(model.y_center_)
    assert [r.label for r in trace.releases] == ["row count"] and not trace.samples
    assert budget.spent == pytest.approx(model.privacy_spent_)
    assert model.privacy_spent_[0] == pytest.approx(1.0) and len(budget.ledger) == 1


@pytest.mark.parametrize("alpha", [None, 1.0], ids=["constrained", "penalised"])
def test_localized_mirror_descent_warns_and_runs_below_its_fallback(alpha):
    # A vacuous bound below FALLBACK_BOUND (the constrained form), or any
    # bound with an L1 penalty (the penalty, not the ball, sets the scale): it warns and runs.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(400, 10))
    y = X[:, :3] @ np.array([0.5, -0.5, 0.5]) + 0.1 * rng.normal(size=400)
    model = DPLasso(
        epsilon=1.0,
        alpha=alpha,
        solver="localized_mirror_descent",
        feature_bound=1.0,
        y_bound=2.0,
        random_state=0,
    )
    with pytest.warns(UserWarning, match=r"localized_mirror_descent: its public error bound"):
        model.fit(X, y)
    assert model.n_iter_ > 0


def test_localized_mirror_descent_runs_where_its_bound_is_not_vacuous():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1.0, 1.0, size=(3000, 5))
    y = X[:, :3] @ np.array([0.5, -0.5, 0.5]) + 0.1 * rng.normal(size=3000)
    model = DPLasso(
        epsilon=5.0,
        solver="localized_mirror_descent",
        feature_bound=1.0,
        y_bound=2.0,
        radius=2.0,
        random_state=0,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(X, y)
    assert not [w for w in caught if "zero model" in str(w.message)]
    assert model.n_iter_ > 0 and np.any(model.coef_)


def test_localized_mirror_descent_bound_warning_threshold():
    from sklearn_dp.solvers._mirror_descent import _localized_bound_warning

    threshold = SOLVERS["localized_mirror_descent"].bound_warning
    name = "localized_mirror_descent"
    assert _localized_bound_warning(name, "squared", threshold * 0.99, 1.0) is None
    assert "vacuous" in _localized_bound_warning(name, "squared", threshold, 1.0)
    # Classification is not measured: quiet.
    assert _localized_bound_warning(name, "log_loss", 100 * threshold, 1.0) is None


def test_vr_frank_wolfe_warns_in_the_sparse_regime_at_the_default_ball():
    # n = 5000, d = 2000 (bench_regimes.py), epsilon 5 of which 3.5 reaches the
    # solver: the default ball grows with the released count, and vr's
    # warning (Frank-Wolfe's public bound, threshold 0.25) fires at every n the
    # docs list, from public values only.
    from sklearn_dp.linear_model._lasso import default_l1_radius
    from sklearn_dp.solvers._noise_warnings import frank_wolfe_warning

    for n in (5e3, 8e4, 1e6):
        radius = default_l1_radius(1.0, 1.0, 2000, n_samples=n, epsilon=3.5, delta=1e-5)
        text = frank_wolfe_warning("vr_frank_wolfe", "squared", n, 2001, 3.5, 1e-5, radius)
        assert text is not None and "vr_frank_wolfe" in text


def test_faint_label_warning_rule():
    from sklearn_dp.linear_model._released_warnings import faint_label_warning

    # Threshold 15, scale 5: a released count below 25 is within noise of it.
    message = faint_label_warning("M", np.array([0, 1, 2]), [100.0, 24.0, 200.0], 15.0, 5.0)
    assert "1 (about 24 rows)" in message and "0 (" not in message
    assert "hold no rows" in message and "classes=[...]" in message
    assert faint_label_warning("M", np.array([0, 1]), [26.0, 200.0], 15.0, 5.0) is None
    assert faint_label_warning("M", np.array([0, 1]), [1.0, 2.0], None, 5.0) is None


def test_a_label_released_with_a_faint_count_warns_through_fit():
    from sklearn_dp.testing import trace_releases

    # The label 2 is released with a noisy count of 22 rows (above the growth
    # bar of 20 beside classes of 100 at epsilon 1, within two noise scales
    # of the edge bar of 15) although no row holds it: the fit warns.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)

    def substitute(release):
        if release.label == "label set (candidates)":
            counts = np.zeros(33)
            counts[1:4] = [100.0, 100.0, 22.0]
            return counts
        if release.label == "label set":
            return np.zeros(0, dtype=int), np.zeros(0)
        return release.output

    with warnings.catch_warnings(record=True) as caught, trace_releases(substitute=substitute):
        warnings.simplefilter("always")
        model = DPLogisticRegression(epsilon=1.0, max_iter=3, random_state=0).fit(X, y)
    assert model.classes_.tolist() == [0, 1, 2]
    messages = [str(w.message) for w in caught if "within noise" in str(w.message)]
    assert len(messages) == 1 and "2 (about 22 rows)" in messages[0]
