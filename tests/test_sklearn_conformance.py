"""scikit-learn conformance: every estimator passes ``parametrize_with_checks``.

Expected failures are listed per estimator with the reason, so a new failure
is seen, and a fixed one too (strict xfail).
"""

import math

from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.linear_model._base import PublicSetting
from sklearn_dp.preprocessing import (
    DPMinMaxScaler,
    DPStandardScaler,
    PublicRangeScaler,
    RowWiseTransformer,
)
from sklearn_dp.solvers import SOLVERS

# Each entry: check name -> why the check cannot pass for a DP estimator.
EXPECTED_FAILURES = {
    "DPLogisticRegression": {
        "check_class_weight_classifiers": (
            "the check sets class_weight={0: 1000, 1: 1e-4, ...}: a DP fit bounds every row's "
            "weight by the public max_weight (1 by default), which scales the sensitivity, and "
            "refuses larger class weights before any spend (tests/test_sample_weight.py)"
        ),
    },
    "DPSCORegressor": {},
    "DPLasso": {},
    "DPStandardScaler": {},
    "DPMinMaxScaler": {},
    "PublicRangeScaler": {},
    "RowWiseTransformer": {},
}


# The checks fit classifiers on label sets they choose (integers, strings, 2
# or 3 classes, some held by 3 rows), so the classifiers run with
# classes=None and release their label set privately: 10% of epsilon and half
# of delta on a thresholded noisy histogram, whose threshold (1 + 115 /
# epsilon rows at delta=1e-5) only the largest epsilon puts below 3 rows.
# The solvers' accuracy at epsilon=1 is tested in test_logistic.py.  Pure
# epsilon-DP classifiers (delta=0) need classes=, so none is here (a label set
# cannot be released with delta=0): see test_logistic.py.
CLASSIFIER_EPSILON = 100.0


def _estimators():
    # Fixed seeds make fits reproducible, which several checks require.
    eps = CLASSIFIER_EPSILON
    return [
        DPLogisticRegression(epsilon=eps, random_state=0),
        DPLogisticRegression(epsilon=eps, solver="dp_sgd", random_state=0),
        # Solvers of DP-ERM revisited (a strong penalty keeps dp_svrg's epochs short).
        DPLogisticRegression(epsilon=eps, solver="dp_svrg", C=0.01, random_state=0),
        # Three epochs: at the checks' n (a few hundred rows) every noisy inner
        # step is costly.
        DPLogisticRegression(
            epsilon=eps, solver="dp_svrg_pp", penalty="l1", max_iter=3, random_state=0
        ),
        DPLogisticRegression(
            epsilon=eps, solver="dp_accmd", penalty=None, radius=5.0, random_state=0
        ),
        DPSCORegressor(epsilon=1.0, random_state=0),
        DPSCORegressor(epsilon=1.0, solver="dp_svrg", alpha=0.5, random_state=0),
        DPSCORegressor(epsilon=1.0, solver="dp_svrg_pp", penalty="l1", random_state=0),
        DPSCORegressor(
            epsilon=1.0,
            solver="dp_accmd",
            penalty=None,
            radius=2.0,
            constraint="l1",
            random_state=0,
        ),
        DPSCORegressor(epsilon=1.0, loss="huber", solver="dp_sgd", random_state=0),
        DPSCORegressor(epsilon=1.0, loss="absolute", random_state=0),
        # Noiseless fits are held to scikit-learn's accuracy checks (private
        # regressors declare the poor_score tag: see DPSCORegressor).
        DPSCORegressor(epsilon=float("inf"), data_norm=5.0, y_bound=5.0, max_iter=500),
        # The perturbation solvers on a classifier, with delta > 0 (a label release).
        DPLogisticRegression(epsilon=eps, solver="objective_perturbation", random_state=0),
        # Output perturbation's noise scales with 1 / (n alpha) = C: a stronger
        # penalty than the default C=1.
        DPLogisticRegression(epsilon=eps, C=0.1, solver="output_perturbation", random_state=0),
        DPSCORegressor(epsilon=1.0, delta=0.0, random_state=0),
        # Output perturbation's certified solve needs a condition number it can
        # certify: a given row bound and a penalty stronger than the default
        # (with the checks' raw rows and alpha=1e-4 it refuses, publicly).
        DPSCORegressor(
            epsilon=1.0,
            loss="huber",
            solver="output_perturbation",
            alpha=0.01,
            data_norm=5.0,
            random_state=0,
        ),
        DPSCORegressor(
            epsilon=float("inf"), solver="objective_perturbation", data_norm=5.0, y_bound=5.0
        ),
        # dp_cd: coordinate descent bounds entries by feature_bound.
        DPLogisticRegression(epsilon=eps, solver="dp_cd", feature_bound=1.0, random_state=0),
        DPLogisticRegression(
            epsilon=eps,
            solver="dp_cd",
            feature_bound=1.0,
            penalty="l1",
            random_state=0,
            solver_options={"sampling": "importance", "block_size": 2},
        ),
        DPSCORegressor(
            epsilon=1.0,
            solver="dp_cd",
            feature_bound=1.0,
            penalty="elasticnet",
            l1_ratio=0.5,
            random_state=0,
            solver_options={"sampling": "tau_nice", "tau": 2},
        ),
        DPSCORegressor(
            epsilon=float("inf"),
            solver="dp_cd",
            feature_bound=5.0,
            y_bound=5.0,
            max_iter=200,
            solver_options={"sampling": "full"},
        ),
        DPSCORegressor(epsilon=1.0, constraint="l1", radius=2.0, feature_bound=3.0, random_state=0),
        DPSCORegressor(
            epsilon=float("inf"),
            loss="absolute",
            constraint="l1",
            radius=2.0,
            feature_bound=3.0,
            max_iter=50,
        ),
        DPLasso(epsilon=1.0, random_state=0),
        # A radius: check_regressors_train sets alpha=0.01, and vr_frank_wolfe is refused
        # on the penalty-implied ball (issue #18; tests/test_default_refusals.py).
        DPLasso(epsilon=1.0, delta=0.0, solver="vr_frank_wolfe", radius=2.0, random_state=0),
        DPLasso(
            epsilon=1.0, alpha=0.1, radius=2.0, solver="mirror_descent", max_iter=50, random_state=0
        ),
        # Without noise: its private calibration (a PLD composition per n) is
        # slow for the many data sets the checks use; the private path is
        # the mirror_descent one above plus tests/test_lasso.py.
        DPLasso(epsilon=float("inf"), solver="localized_mirror_descent", max_iter=20),
        DPLasso(epsilon=float("inf"), radius=5.0, feature_bound=5.0, y_bound=5.0, max_iter=500),
        DPSCORegressor(epsilon=1.0, loss="quantile", quantile=0.3, random_state=0),
        DPSCORegressor(epsilon=1.0, loss="absolute", solver="resque", random_state=0),
        DPSCORegressor(
            epsilon=float("inf"),
            loss="absolute",
            solver="resque",
            data_norm=5.0,
            y_bound=5.0,
            random_state=0,
        ),
        # Given bounds next to the "auto" defaults above.
        DPLogisticRegression(epsilon=eps, data_norm=3.0, intercept_scaling=1.0, random_state=0),
        DPSCORegressor(epsilon=1.0, data_norm=3.0, y_bound=3.0, random_state=0),
        # Preprocessing.
        DPStandardScaler(random_state=0),
        DPStandardScaler(delta=0.0, bounds=(-5.0, 5.0), random_state=0),
        DPStandardScaler(with_mean=False, random_state=0),
        DPStandardScaler(epsilon=float("inf"), bounds=(-100.0, 100.0)),
        DPMinMaxScaler(random_state=0),
        DPMinMaxScaler(bounds=(-10.0, 10.0)),
        PublicRangeScaler((-10.0, 10.0)),
        RowWiseTransformer(),
    ]


#: scikit-learn's sample-weight checks that fit with sample_weight=...
SAMPLE_WEIGHT_CHECKS = (
    "check_sample_weights_pandas_series",
    "check_sample_weights_not_an_array",
    "check_sample_weights_list",
    "check_sample_weights_shape",
    "check_sample_weights_not_overwritten",
    "check_classifiers_one_label_sample_weights",
)
WEIGHTING_IS_NOT_REPETITION = (
    "a DP fit is not a function of the weighted empirical distribution: weights are clipped "
    "to the public max_weight (1 by default), averages divide by the DP row count (rows, not "
    "weights), and the noise and the count release differ between n rows and sum(w) rows"
)


def _resolved_solver(estimator):
    """The solver a fit on the checks' small dense data uses (public: what "auto" picks)."""
    if not isinstance(estimator, (DPLogisticRegression, DPSCORegressor, DPLasso)):
        return None
    if estimator.solver != "auto":
        return estimator.solver
    public = PublicSetting(
        n_features=5,
        n_outputs=1,
        multiclass=False,
        sparse=False,
        fit_intercept=estimator.fit_intercept,
        epsilon=estimator.epsilon,
        delta=estimator.delta,
    )
    if isinstance(estimator, DPLasso):
        return estimator._auto_solver(None, public)
    problem = (
        estimator._problem(2)
        if isinstance(estimator, DPLogisticRegression)
        else estimator._problem(1.0)
    )
    return estimator._auto_solver(problem, public)


def _expected_failed_checks(estimator):
    expected = dict(EXPECTED_FAILURES.get(type(estimator).__name__, {}))
    solver = _resolved_solver(estimator)
    if solver is None:
        return expected
    for check in (
        "check_sample_weight_equivalence_on_dense_data",
        "check_sample_weight_equivalence_on_sparse_data",
    ):
        expected[check] = WEIGHTING_IS_NOT_REPETITION
    if solver == "dp_sgd" and getattr(estimator, "loss", None) in ("absolute", "quantile"):
        expected["check_fit2d_1feature"] = (
            "the check fits 10 rows: at epsilon=1 the released row count and this seed's "
            "noise make dp_sgd's steps diverge, a public ConvergenceError after the "
            "reservation (noise-dependent; one-feature data itself is fitted by the other "
            "configurations)"
        )
    if solver == "localized_mirror_descent":
        expected["check_regressors_train"] = (
            "its localized phases shrink the step and the ball by design and stop far from "
            "the optimum even without noise (104% objective gap on diabetes; named in "
            "docs/solvers/benchmark.md and xfailed in tests/test_default_convergence.py)"
        )
    if not math.isinf(estimator.epsilon):
        expected["check_all_zero_sample_weights_error"] = (
            "a private fit does not refuse all-zero weights: whether every weight is zero "
            "depends on every row, so the refusal would tell something about the data that no "
            "noise covers; it fits zero effective rows (tests/test_sample_weight.py)"
            if SOLVERS[solver].sample_weight
            else f"solver={solver!r} does not fit weighted rows: sample_weight is refused "
            "(publicly, before the reservation), with a message about the solver"
        )
    if not SOLVERS[solver].sample_weight:
        for check in SAMPLE_WEIGHT_CHECKS:
            expected[check] = (
                f"solver={solver!r} does not fit weighted rows: sample_weight is refused "
                "(publicly, before the reservation)"
            )
    return expected


@parametrize_with_checks(_estimators(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
