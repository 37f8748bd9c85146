"""scikit-learn conformance: every estimator passes ``parametrize_with_checks``' list.

Three kinds of configurations run scikit-learn's checks
(``sklearn.utils.estimator_checks``):

* each public estimator and transformer runs the **full list once**, at its
  defaults (:data:`FULL`; classifiers at :data:`CLASSIFIER_EPSILON`, see there);
* each **solver**, under each estimator that accepts it, runs the checks whose
  outcome its code path can change (:data:`SOLVER_CHECKS`).  The pairs are read
  off the solver registry (``sklearn_dp.solvers.SOLVERS``) and the per-pair fits
  of ``tests/solver_configs.py``, which a new solver must fill in (or be
  refused: ``tests/test_substitution.py``), so a new solver is covered without
  editing this file; :data:`SOLVER_PARAMS` only replaces a pair's small fit
  where the checks need another one.  The solver that ``"auto"`` picks for a
  :data:`FULL` configuration is covered by its full list;
* :data:`VARIANTS`, configurations that take a code path no other configuration
  takes (a solver's noiseless schedule, held to scikit-learn's accuracy checks;
  another loss; given bounds; a sampling option; a scaler's mechanism), run the
  same subset as the solvers.

A check is in :data:`SOLVER_CHECKS` when a fit reaches the solver and the check
asserts something that the solver computes or touches:

* fit on dense and sparse input, in the layouts and shapes the solver's
  products see: ``check_estimator_sparse_matrix`` (every scipy format, 64-bit
  indices), ``check_f_contiguous_array_estimator``,
  ``check_readonly_memmap_input`` (a solver must not write into X),
  ``check_fit2d_1sample`` and ``check_fit2d_1feature`` (degenerate shapes reach
  the solver's plan and checks);
* dtypes: ``check_estimators_dtypes``,
  ``check_transformer_preserve_dtypes`` (float32 stays float32 in the solver);
* what the fit computes: ``check_classifiers_train``,
  ``check_regressors_train`` (accuracy, held strictly for noiseless fits) and
  their float32 read-only variant, ``check_classifiers_classes`` (multiclass
  and label encodings reach the solver's multinomial path),
  ``check_transformer_general``;
* sample_weight, which a solver fits or refuses (``SolverSpec.sample_weight``):
  ``check_sample_weights_list``, ``_shape`` and ``_not_overwritten``,
  ``check_all_zero_sample_weights_error``,
  ``check_classifiers_one_label_sample_weights``;
* ``n_iter_``: ``check_non_transformer_estimators_n_iter``,
  ``check_transformer_n_iter``;
* fit idempotence (the solver's randomness flows from ``random_state`` only):
  ``check_fit_idempotent``; not modifying parameters (a solver must not mutate
  ``solver_options``) or adding public attributes:
  ``check_estimators_overwrite_params``, ``check_dont_overwrite_parameters``;
  pickling the solver's fitted state: ``check_estimators_pickle``.

The other checks run only in the full lists, since no solver can change their outcome:

* API, tags, cloning, parameters, ``repr`` and unfitted behaviour (tags depend
  on ``epsilon`` and the estimator, never on the solver);
* conversions the estimator makes before a solver sees the data: integer
  features and labels (``check_regressors_int``; the solver receives float64,
  as in ``check_estimators_dtypes``' integer cases), weights given as a pandas
  Series or an array-like object (``check_sample_weights_pandas_series``,
  ``check_sample_weights_not_an_array``; the estimator makes them the ndarray
  that ``check_sample_weights_list``'s list becomes);
* input validation that raises before the solver is reached: NaN/inf, complex,
  object or one-dimensional data (empty data is fitted: an expected failure), a regression target given to a
  classifier, ``y=None``, a one-label ``y`` (the classifier refuses a label set
  of fewer than two classes before it calls a solver), predicting on 1d or
  wrongly shaped rows, ``n_features_in_``;
* checks whose only solver-dependent step is a seeded fit on ordinary float data
  that the subset above already makes: ``check_pipeline_consistency``,
  ``check_classifier_data_not_an_array``, ``check_regressor_data_not_an_array``,
  ``check_transformer_data_not_an_array`` and ``check_supervised_y_2d`` compare two such fits after a conversion the
  estimator makes (the idempotence check compares two fits itself);
  ``check_fit_score_takes_y``, ``check_estimators_fit_returns_self`` and
  ``check_fit_check_is_fitted`` inspect signatures and attributes the estimator
  sets;
* prediction, which reads ``coef_`` and ``intercept_`` in estimator code:
  ``check_dict_unchanged``, ``check_decision_proba_consistency``,
  ``check_methods_subset_invariance``, ``check_methods_sample_order_invariance``,
  ``check_regressors_no_decision_function``, and the other read-only variants
  of ``check_classifiers_train``, ``check_regressors_train``,
  ``check_estimators_pickle`` and ``check_transformer_general`` (read-only
  input is in ``check_readonly_memmap_input`` and the float32 variant);
* ``check_estimator_sparse_array``, ``check_estimator_sparse_tag``: the
  estimator converts every sparse container to CSR before a solver sees it, so
  ``check_estimator_sparse_matrix`` exercises the solver's sparse path;
* ``check_sample_weight_equivalence_on_dense_data`` / ``_sparse_data``: they
  fail for every solver, for reasons of the fit protocol that all solvers share
  (see :data:`WEIGHTING_IS_NOT_REPETITION`);
* ``check_class_weight_classifiers``: refused for every solver before any spend;
* ``check_array_api_input``, ``check_estimators_partial_fit_n_features``,
  ``check_positive_only_tag_during_fit``: no array API, no ``partial_fit``, no
  positive-only tag.

With ``-m slow``, the solver and variant configurations run the rest of the
full list too (``test_sklearn_compatible_estimator_every_check_on_every_solver``):
the whole solver x check cross product, for a change that might make one of
the checks above depend on the solver after all.

Expected failures are listed per configuration with the reason, as strict
xfails: a new failure is seen, and a fixed one too; only a failure that
depends on the noise draw (:data:`NOISE_DEPENDENT`) is not strict.  Those that
follow from what a solver supports (weighted rows, more than two classes, a
penalty) are read off its registry entry.
"""

import functools
import math
import re

import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.utils import estimator_checks as sklearn_checks
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import estimator_checks_generator
from solver_configs import CONFIGS

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.decomposition import DPPCA
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
}


# The checks fit classifiers on label sets they choose (integers, strings, 2
# or 3 classes, some held by 3 rows), so the classifiers run with
# classes=None and release their label set privately: 20% of epsilon and half
# of delta on a thresholded noisy histogram, whose threshold (1 + 58 /
# epsilon rows at delta=1e-5) only the largest epsilon puts below 3 rows.
# The solvers' accuracy at epsilon=1 is tested in test_logistic.py.  Pure
# epsilon-DP classifiers (delta=0) need classes=, so none is here (a label set
# cannot be released with delta=0): see test_logistic.py.
CLASSIFIER_EPSILON = 100.0

ESTIMATORS = {
    "DPLogisticRegression": DPLogisticRegression,
    "DPSCORegressor": DPSCORegressor,
    "DPLasso": DPLasso,
}

# Fixed seeds make fits reproducible, which several checks require.
BASE_PARAMS = {
    "DPLogisticRegression": dict(epsilon=CLASSIFIER_EPSILON, random_state=0),
    "DPSCORegressor": dict(epsilon=1.0, random_state=0),
    "DPLasso": dict(epsilon=1.0, random_state=0),
}

#: The full check list, once per public estimator and transformer.
FULL = [
    DPLogisticRegression(**BASE_PARAMS["DPLogisticRegression"]),
    DPSCORegressor(**BASE_PARAMS["DPSCORegressor"]),
    DPLasso(**BASE_PARAMS["DPLasso"]),
    DPStandardScaler(random_state=0),
    DPMinMaxScaler(random_state=0),
    PublicRangeScaler((-10.0, 10.0)),
    RowWiseTransformer(),
    DPPCA(random_state=0),
]

#: (estimator, solver) -> the parameters of its per-solver checks (on top of
#: BASE_PARAMS) where the small fit of tests/solver_configs.py does not suit
#: them: the accuracy checks need the solver's default schedule, or a bound,
#: penalty or radius that makes the solver accurate or fast on the checks' data.
SOLVER_PARAMS = {
    ("DPLogisticRegression", "dp_sgd"): dict(),
    # A strong penalty keeps dp_svrg's epochs short.
    ("DPLogisticRegression", "dp_svrg"): dict(C=0.01),
    # Three epochs: at the checks' n (a few hundred rows) every noisy inner
    # step is costly.
    ("DPLogisticRegression", "dp_svrg_pp"): dict(penalty="l1", max_iter=3),
    ("DPLogisticRegression", "dp_accmd"): dict(penalty=None, radius=5.0),
    ("DPLogisticRegression", "objective_perturbation"): dict(),
    # Output perturbation's noise scales with 1 / (n alpha) = C: a stronger
    # penalty than the default C=1.
    ("DPLogisticRegression", "output_perturbation"): dict(C=0.1),
    # Coordinate descent bounds entries by feature_bound.
    ("DPLogisticRegression", "dp_cd"): dict(feature_bound=1.0),
    ("DPSCORegressor", "dp_sgd"): dict(loss="huber"),
    ("DPSCORegressor", "dp_svrg"): dict(alpha=0.5),
    ("DPSCORegressor", "dp_svrg_pp"): dict(penalty="l1"),
    ("DPSCORegressor", "dp_accmd"): dict(penalty=None, radius=2.0, constraint="l1"),
    ("DPSCORegressor", "objective_perturbation"): dict(delta=0.0),
    # Output perturbation's certified solve needs a condition number it can
    # certify: a given row bound and a penalty stronger than the default
    # (with the checks' raw rows and alpha=1e-4 it refuses, publicly).
    ("DPSCORegressor", "output_perturbation"): dict(loss="huber", alpha=0.01, data_norm=5.0),
    ("DPSCORegressor", "dp_cd"): dict(
        feature_bound=1.0,
        penalty="elasticnet",
        l1_ratio=0.5,
        solver_options={"sampling": "tau_nice", "tau": 2},
    ),
    ("DPSCORegressor", "frank_wolfe"): dict(constraint="l1", radius=2.0, feature_bound=3.0),
    ("DPSCORegressor", "mirror_descent"): dict(
        epsilon=float("inf"),
        loss="absolute",
        constraint="l1",
        radius=2.0,
        feature_bound=3.0,
        max_iter=50,
    ),
    ("DPSCORegressor", "resque"): dict(loss="absolute"),
    # A radius: check_regressors_train sets alpha=0.01, and the Frank-Wolfe
    # solvers are refused on the penalty-implied ball
    # (tests/test_default_refusals.py).
    ("DPLasso", "frank_wolfe"): dict(radius=2.0, max_iter=5),
    # A large epsilon: on the checks' small data sets a smaller one makes
    # vr_frank_wolfe return its fallback (the zero model, no step) instead of running.
    ("DPSCORegressor", "vr_frank_wolfe"): dict(
        epsilon=100.0, constraint="l1", radius=2.0, feature_bound=1.0
    ),
    ("DPLasso", "vr_frank_wolfe"): dict(epsilon=100.0, delta=0.0, radius=2.0),
    ("DPLasso", "mirror_descent"): dict(alpha=0.1, radius=2.0, max_iter=50),
    # Without noise: its private calibration (a PLD composition per n) is
    # slow for the many data sets the checks use; the private path is the
    # mirror_descent one above plus tests/test_lasso.py.
    ("DPLasso", "localized_mirror_descent"): dict(epsilon=float("inf"), max_iter=20),
    # Without noise as well: on the checks' small data sets its public bound is
    # vacuous, and it returns its fallback (the zero model, n_iter_ 0).
    ("DPSCORegressor", "localized_mirror_descent"): dict(
        epsilon=float("inf"),
        loss="absolute",
        constraint="l1",
        radius=2.0,
        feature_bound=3.0,
        max_iter=20,
    ),
}

#: Code paths that no FULL or per-solver configuration takes; they run SOLVER_CHECKS.
VARIANTS = [
    # dp_cd's importance sampling of blocks, with an L1 penalty.
    DPLogisticRegression(
        epsilon=CLASSIFIER_EPSILON,
        solver="dp_cd",
        feature_bound=1.0,
        penalty="l1",
        random_state=0,
        solver_options={"sampling": "importance", "block_size": 2},
    ),
    # Given bounds next to the "auto" defaults of FULL.
    DPLogisticRegression(
        epsilon=CLASSIFIER_EPSILON, data_norm=3.0, intercept_scaling=1.0, random_state=0
    ),
    DPSCORegressor(epsilon=1.0, data_norm=3.0, y_bound=3.0, random_state=0),
    # Losses without a bounded curvature ("auto" picks dp_sgd; huber is its pair above).
    DPSCORegressor(epsilon=1.0, loss="absolute", random_state=0),
    DPSCORegressor(epsilon=1.0, loss="quantile", quantile=0.3, random_state=0),
    # Noiseless schedules, held to scikit-learn's accuracy checks (private
    # regressors declare the poor_score tag: see DPSCORegressor).
    DPSCORegressor(epsilon=float("inf"), data_norm=5.0, y_bound=5.0, max_iter=500),
    DPSCORegressor(
        epsilon=float("inf"), solver="objective_perturbation", data_norm=5.0, y_bound=5.0
    ),
    DPSCORegressor(
        epsilon=float("inf"),
        solver="dp_cd",
        feature_bound=5.0,
        y_bound=5.0,
        max_iter=200,
        solver_options={"sampling": "full"},
    ),
    DPSCORegressor(
        epsilon=float("inf"),
        loss="absolute",
        solver="resque",
        data_norm=5.0,
        y_bound=5.0,
        random_state=0,
    ),
    DPLasso(epsilon=float("inf"), radius=5.0, feature_bound=5.0, y_bound=5.0, max_iter=500),
    # The scalers' mechanisms: pure DP with given bounds, sparse input
    # (with_mean=False), noiseless, given bounds.
    DPStandardScaler(delta=0.0, bounds=(-5.0, 5.0), random_state=0),
    DPStandardScaler(with_mean=False, random_state=0),
    DPStandardScaler(epsilon=float("inf"), bounds=(-100.0, 100.0)),
    DPMinMaxScaler(bounds=(-10.0, 10.0)),
    # DPPCA: noiseless and whitened, one component.
    DPPCA(1, epsilon=float("inf"), data_norm=100.0, whiten=True),
]

#: The checks whose outcome a solver (or a VARIANTS code path) can change: see
#: the module docstring.  Names with their keywords, as in the test ids.
SOLVER_CHECKS = frozenset(
    {
        "check_estimator_sparse_matrix",
        "check_f_contiguous_array_estimator",
        "check_readonly_memmap_input",
        "check_fit2d_1sample",
        "check_fit2d_1feature",
        "check_estimators_dtypes",
        "check_transformer_preserve_dtypes",
        "check_classifiers_train",
        "check_classifiers_train(readonly_memmap=True,X_dtype=float32)",
        "check_regressors_train",
        "check_regressors_train(readonly_memmap=True,X_dtype=float32)",
        "check_classifiers_classes",
        "check_transformer_general",
        "check_sample_weights_list",
        "check_sample_weights_shape",
        "check_sample_weights_not_overwritten",
        "check_all_zero_sample_weights_error",
        "check_classifiers_one_label_sample_weights",
        "check_non_transformer_estimators_n_iter",
        "check_transformer_n_iter",
        "check_fit_idempotent",
        "check_estimators_overwrite_params",
        "check_dont_overwrite_parameters",
        "check_estimators_pickle",
    }
)


def _resolved_solver(estimator):
    """The solver a fit on the checks' small dense data uses (public: what "auto" picks)."""
    if not isinstance(estimator, tuple(ESTIMATORS.values())):
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


def _solver_configurations():
    """Every (estimator, solver) pair of the registry not already run by FULL."""
    full_pairs = {(type(e).__name__, _resolved_solver(e)) for e in FULL}
    for solver in SOLVERS:
        for name, cls in ESTIMATORS.items():
            pair = (name, solver)
            if pair not in CONFIGS or pair in full_pairs:
                continue
            params = SOLVER_PARAMS.get(pair, CONFIGS[pair])
            yield cls(**{**BASE_PARAMS[name], **params, "solver": solver})


#: scikit-learn's sample-weight checks that fit with sample_weight=...
SAMPLE_WEIGHT_CHECKS = (
    "check_sample_weights_pandas_series",
    "check_sample_weights_not_an_array",
    "check_sample_weights_list",
    "check_sample_weights_shape",
    "check_sample_weights_not_overwritten",
    "check_classifiers_one_label_sample_weights",
)
#: (estimator, check) whose expected failure depends on the noise draw: a
#: change of noise samplers may make it pass.
NOISE_DEPENDENT = {
    ("DPSCORegressor", "check_fit2d_1feature"),
    ("DPSCORegressor", "check_estimators_dtypes"),
}

#: Expected failures that a fit may still pass with a ValueError raised after
#: its charge, as a function of its releases: on zero rows, a classifier whose
#: released label set holds fewer than two classes, or a solver that needs more
#: released rows (vr_frank_wolfe, localized_mirror_descent), refuses as it
#: would on one row.  Not strict.
RELEASE_DEPENDENT_CHECKS = frozenset({"check_estimators_empty_data_messages"})

#: The checks of SOLVER_CHECKS that fit a classifier on more than two classes.
MULTICLASS_CHECKS = (
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_readonly_memmap_input",
    "check_estimator_sparse_matrix",
    "check_f_contiguous_array_estimator",
    "check_classifiers_classes",
    "check_classifiers_train",
    "check_non_transformer_estimators_n_iter",
)
WEIGHTING_IS_NOT_REPETITION = (
    "a DP fit is not a function of the weighted empirical distribution: weights are clipped "
    "to the public max_weight (1 by default), averages divide by the DP row count (rows, not "
    "weights), and the noise and the count release differ between n rows and sum(w) rows"
)


def _held_to_accuracy(estimator):
    """Whether scikit-learn's regressor checks assert a score (noiseless fits)."""
    return is_regressor(estimator) and not get_tags(estimator).regressor_tags.poor_score


#: Why no estimator or transformer of this package refuses zero rows.
EMPTY_DATA_IS_A_DATA_SET = (
    "a private fit on zero rows runs after its charge instead of raising: the row count is "
    "private, and a refusal of n=0 when n=1 fits would tell the empty data set from its "
    "one-row neighbour with certainty (also inside a search, on an empty training part); "
    "the fit returns a model of the noisy releases (tests/test_substitution.py)"
)


def _expected_failed_checks(estimator):
    expected = dict(EXPECTED_FAILURES.get(type(estimator).__name__, {}))
    expected["check_estimators_empty_data_messages"] = EMPTY_DATA_IS_A_DATA_SET
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
        expected["check_estimators_dtypes"] = (
            "the check fits 20 rows of small integers: at 2 released rows times the row "
            "bound's epsilon the bound can be drawn a million times below the rows' norms, "
            "and dp_sgd's steps then diverge, a public ConvergenceError after the "
            "reservation (noise-dependent)"
        )
    if solver == "localized_mirror_descent" and _held_to_accuracy(estimator):
        expected["check_regressors_train"] = (
            "its localized phases shrink the step and the ball by design and stop far from "
            "the optimum even without noise (41% objective gap on diabetes at its public "
            "step floor; named in docs/solvers/benchmark.md and xfailed in "
            "tests/test_default_convergence.py)"
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
    if is_classifier(estimator) and not SOLVERS[solver].multiclass:
        for check in MULTICLASS_CHECKS:
            expected[check] = (
                f"the check fits more than two classes, and solver={solver!r} fits binary "
                "models only: the estimator refuses it (publicly, before the reservation)"
            )
    if isinstance(estimator, DPLasso) and "l1" not in SOLVERS[solver].penalties:
        expected["check_regressors_train"] = (
            f"the check sets alpha=0.01, the penalised Lasso, and solver={solver!r} fits no "
            "penalty (only the constrained form, radius=): refused publicly, before the "
            "reservation"
        )
    if not SOLVERS[solver].sample_weight:
        for check in SAMPLE_WEIGHT_CHECKS:
            expected[check] = (
                f"solver={solver!r} does not fit weighted rows: sample_weight is refused "
                "(publicly, before the reservation)"
            )
    return expected


def _check_name(check):
    while isinstance(check, functools.partial):
        check = check.func
    return check.__name__


def _check_id(check):
    """The check's name with its keywords, as scikit-learn's test ids spell it."""
    keywords = {}
    while isinstance(check, functools.partial):
        keywords = {**check.keywords, **keywords}
        check = check.func
    shown = ",".join(f"{key}={value}" for key, value in keywords.items())
    return f"{check.__name__}({shown})" if shown else check.__name__


def _estimator_id(estimator):
    return re.sub(r"\s", "", str(estimator))


def _cases(estimator, only=None, skip=frozenset()):
    expected = _expected_failed_checks(estimator)
    for instance, check in estimator_checks_generator(estimator, legacy=True):
        check_id = _check_id(check)
        if (only is not None and check_id not in only) or check_id in skip:
            continue
        name = _check_name(check)
        reason = expected.get(name)
        strict = (type(estimator).__name__, name) not in NOISE_DEPENDENT and (
            name not in RELEASE_DEPENDENT_CHECKS
        )
        marks = [pytest.mark.xfail(reason=reason, strict=strict)] if reason else []
        yield pytest.param(instance, check, marks=marks, id=f"{_estimator_id(instance)}-{check_id}")


def _all_cases():
    for estimator in FULL:
        yield from _cases(estimator)
    for estimator in [*_solver_configurations(), *VARIANTS]:
        yield from _cases(estimator, only=SOLVER_CHECKS)


def _cross_product_rest():
    """The rest of the full list on every solver and variant configuration."""
    for estimator in [*_solver_configurations(), *VARIANTS]:
        yield from _cases(estimator, skip=SOLVER_CHECKS)


@pytest.mark.parametrize("estimator, check", list(_all_cases()))
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


@pytest.mark.slow
@pytest.mark.parametrize("estimator, check", list(_cross_product_rest()))
def test_sklearn_compatible_estimator_every_check_on_every_solver(estimator, check):
    """The full solver x check cross product (with the default run, every check everywhere)."""
    check(estimator)


#: Per-solver checks that scikit-learn 1.6 does not have yet.
NEWER_THAN_MINIMUM_SKLEARN = frozenset({"check_all_zero_sample_weights_error"})


def test_solver_checks_are_scikit_learn_checks():
    """Every name of the per-solver list is a check scikit-learn yields (none renamed away)."""
    yielded = {
        _check_id(check)
        for estimator in [*FULL, *VARIANTS]
        for _, check in estimator_checks_generator(estimator, legacy=True)
    }
    # A check newer than the oldest supported scikit-learn (1.6) is not
    # yielded there; on a release that defines it, it must be yielded.
    defined = {name for name in vars(sklearn_checks) if name.startswith("check_")}
    missing = SOLVER_CHECKS - yielded
    assert missing <= NEWER_THAN_MINIMUM_SKLEARN and not missing & defined, sorted(missing)
    assert set(MULTICLASS_CHECKS) <= SOLVER_CHECKS
