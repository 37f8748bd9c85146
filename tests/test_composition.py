"""What privacy_spent and privacy_report vouch for: frozen steps, fitted state, units of privacy."""

import math
import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.impute import SimpleImputer
from sklearn.preprocessing import (
    FunctionTransformer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
)

from sklearn_dp import DPLogisticRegression, PrivacyBudget, privacy_report, privacy_spent
from sklearn_dp.exceptions import PrivacyLeakWarning
from sklearn_dp.model_selection import DPGridSearchCV
from sklearn_dp.pipeline import make_pipeline
from sklearn_dp.preprocessing import DPStandardScaler, PublicRangeScaler


def _data(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _model(**params):
    return DPLogisticRegression(classes=[0, 1], max_iter=5, random_state=0, **params)


def _quiet_spent(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return privacy_spent(model)


# --------------------------------------------------------------------------
# FrozenEstimator: what it holds is checked as if it were not frozen
# --------------------------------------------------------------------------


def test_frozen_dp_step_contributes_its_recorded_spend():
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-5)
    scaler = DPStandardScaler(epsilon=3.0, delta=5e-6, budget=budget, random_state=0).fit(X)
    model = make_pipeline(
        FrozenEstimator(scaler), _model(epsilon=1.0, delta=5e-6, budget=budget)
    ).fit(X, y)
    unfrozen = make_pipeline(scaler, model[-1])
    assert privacy_spent(model) == privacy_spent(unfrozen)
    assert privacy_spent(model)[0] == pytest.approx(budget.spent[0])
    assert "frozenestimator.estimator" in privacy_report(model)["steps"]


def test_frozen_non_private_dp_step_makes_the_guarantee_infinite():
    X, y = _data()
    exact = DPStandardScaler(epsilon=math.inf).fit(X)
    model = make_pipeline(FrozenEstimator(exact), _model(epsilon=1.0)).fit(X, y)
    assert _quiet_spent(model) == (math.inf, 0.0)
    assert privacy_report(model)["epsilon"] == "inf"


def test_frozen_step_off_the_allow_list_is_not_vouched_for():
    X, y = _data()
    model = make_pipeline(FrozenEstimator(StandardScaler().fit(X)), _model(epsilon=1.0)).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="StandardScaler"):
        assert privacy_spent(model) == (math.inf, 0.0)


def test_frozen_allow_listed_and_public_steps_spend_nothing():
    X, y = _data()
    model = make_pipeline(
        FrozenEstimator(PublicRangeScaler((-3.0, 3.0)).fit(X)),
        FrozenEstimator(PolynomialFeatures(1).fit(np.zeros((1, 3)))),
        _model(epsilon=1.0),
    ).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(model) == model[-1].privacy_spent_


@pytest.mark.parametrize(
    "frozen",
    [
        pytest.param(lambda X: StandardScaler().fit(X), id="off-the-allow-list"),
        pytest.param(lambda X: DPStandardScaler(epsilon=5.0).fit(X), id="dp-step"),
        pytest.param(
            lambda X: (
                SimpleImputer(strategy="mean")
                .fit(X)
                .set_params(strategy="constant", keep_empty_features=True)
            ),
            id="stale-imputer",
        ),
        pytest.param(
            lambda X: SimpleImputer(strategy="constant", keep_empty_features=True).fit(X),
            id="imputer-fitted-without-a-record",
        ),
    ],
)
def test_search_refuses_a_frozen_step_it_cannot_vouch_for_before_any_spend(frozen):
    X, y = _data()
    budget = PrivacyBudget(20.0, 1e-4, composition="basic")
    search = DPGridSearchCV(
        make_pipeline(FrozenEstimator(frozen(X)), _model()),
        {"dplogisticregression__C": [0.1, 1.0]},
        epsilon=1.0,
        delta=1e-5,
        budget=budget,
    )
    with pytest.raises(TypeError, match="frozenestimator"):
        search.fit(X, y)
    assert budget.ledger == []


# --------------------------------------------------------------------------
# The allow-list checks what a step learned, not only its current parameters
# --------------------------------------------------------------------------


def _stale_steps():
    """``{name: (fitted step, set_params making its parameters allowed, data)}``."""
    rng = np.random.default_rng(1)
    numbers = rng.normal(size=(200, 2))
    numbers[::7, 1] = np.nan
    categories = rng.integers(0, 3, size=(200, 1)).astype(float)
    return {
        "imputer-mean": (
            SimpleImputer(strategy="mean"),
            dict(strategy="constant", keep_empty_features=True),
            numbers,
        ),
        "imputer-indicator": (
            SimpleImputer(strategy="constant", keep_empty_features=True, add_indicator=True),
            dict(add_indicator=False),
            numbers,
        ),
        "one-hot-auto": (
            OneHotEncoder(handle_unknown="ignore"),
            dict(categories=[[0.0, 1.0, 2.0, 3.0]]),
            categories,
        ),
        "one-hot-infrequent": (
            OneHotEncoder(
                categories=[[0.0, 1.0, 2.0]],
                handle_unknown="infrequent_if_exist",
                min_frequency=70,
            ),
            dict(min_frequency=None),
            categories,
        ),
        "one-hot-drop": (
            OneHotEncoder(categories=[[0.0, 1.0, 2.0]], drop="first"),
            dict(drop=None, handle_unknown="ignore"),
            categories,
        ),
        "ordinal-auto": (
            OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
            dict(categories=[[0.0, 1.0, 2.0, 3.0]]),
            categories,
        ),
        "column-transformer-columns": (
            ColumnTransformer(
                [("kept", "passthrough", lambda Z: [int(np.argmax(Z.sum(axis=0)))])],
                sparse_threshold=0,
            ),
            dict(transformers=[("kept", "passthrough", [0])]),
            np.column_stack([np.zeros(200), np.ones(200)]),
        ),
        "column-transformer-sparse": (
            ColumnTransformer(
                [
                    (
                        "onehot",
                        OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="ignore"),
                        [0],
                    )
                ],
                sparse_threshold=0.9,
            ),
            dict(sparse_threshold=0),
            categories,
        ),
    }


@pytest.mark.parametrize("name", sorted(_stale_steps()))
def test_allow_list_checks_the_fitted_state_not_only_the_parameters(name):
    step, allowed_params, X = _stale_steps()[name]
    y = np.arange(len(X)) % 2
    model = make_pipeline(step, SimpleImputer(strategy="constant", keep_empty_features=True))
    model = make_pipeline(model, _model(epsilon=1.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    step.set_params(**allowed_params)
    with pytest.warns(PrivacyLeakWarning, match="fit it again"):
        assert privacy_spent(model) == (math.inf, 0.0)
    # Fitted again with the allowed parameters, the same step is vouched for.
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(model) == model[-1].privacy_spent_


# --------------------------------------------------------------------------
# The parameters an allow-listed step was fitted with are recorded at the fit
# --------------------------------------------------------------------------


def _copied_after_fit():
    """``{name: (step fitted on the private rows, its learned values copied into parameters)}``."""
    return {
        "one-hot-categories": (
            OneHotEncoder(handle_unknown="ignore"),
            lambda step: dict(categories=[list(c) for c in step.categories_]),
        ),
        "ordinal-categories": (
            OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1),
            lambda step: dict(categories=[list(c) for c in step.categories_]),
        ),
        "imputer-fill-value": (
            SimpleImputer(strategy="median", keep_empty_features=True),
            lambda step: dict(strategy="constant", fill_value=float(step.statistics_[0])),
        ),
        "function-swapped": (
            # Its fit checks the inverse on private rows (and warns if it fails).
            FunctionTransformer(np.log1p, inverse_func=np.expm1),
            lambda step: dict(func=None, inverse_func=None),
        ),
    }


@pytest.mark.parametrize("name", sorted(_copied_after_fit()))
def test_parameters_copied_from_what_a_fit_learned_are_not_vouched_for(name):
    step, copied = _copied_after_fit()[name]
    X = np.random.default_rng(1).integers(0, 3, size=(200, 1)).astype(float)
    y = np.arange(200) % 2
    model = make_pipeline(step, _model(epsilon=1.0)).fit(X, y)
    step.set_params(**copied(step))
    # What the step holds now agrees with its parameters: only the record
    # of the fit tells that they were set after it.
    with pytest.warns(PrivacyLeakWarning, match="changed after its fit"):
        assert privacy_spent(model) == (math.inf, 0.0)
    assert privacy_report(model)["epsilon"] == "inf"
    # Fitted again with those parameters, it is vouched for.
    model.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(model) == model[-1].privacy_spent_


def test_allow_listed_step_fitted_without_a_record_is_not_vouched_for():
    from sklearn.pipeline import make_pipeline as unrecorded_pipeline

    X = np.random.default_rng(1).integers(0, 3, size=(200, 1)).astype(float)
    y = np.arange(200) % 2
    encoder = OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="ignore")
    model = unrecorded_pipeline(encoder, _model(epsilon=1.0)).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="sklearn_dp.pipeline.make_pipeline"):
        assert privacy_spent(model) == (math.inf, 0.0)
    # A step whose parameters cannot make its fit read the rows needs no record.
    polynomial = unrecorded_pipeline(PolynomialFeatures(1), _model(epsilon=1.0)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(polynomial) == polynomial[-1].privacy_spent_


def test_recorded_parameters_survive_pickling_and_copies():
    import copy
    import io
    import pickle

    import joblib

    X = np.random.default_rng(1).integers(0, 3, size=(200, 1)).astype(float)
    y = np.arange(200) % 2
    model = make_pipeline(
        ColumnTransformer(
            [
                (
                    "onehot",
                    OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="ignore"),
                    [0],
                ),
                ("identity", FunctionTransformer(), [0]),
            ],
            sparse_threshold=0,
        ),
        _model(epsilon=1.0),
    ).fit(X, y)
    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    copies = [pickle.loads(pickle.dumps(model)), joblib.load(buffer), copy.deepcopy(model)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for saved in [model, *copies]:
            assert privacy_spent(saved) == model[-1].privacy_spent_


def test_frozen_allow_listed_step_is_vouched_for_by_the_record_of_its_own_fit():
    X = np.random.default_rng(1).integers(0, 3, size=(200, 1)).astype(float)
    y = np.arange(200) % 2
    imputer = SimpleImputer(strategy="constant", keep_empty_features=True)
    recorded = make_pipeline(imputer).fit(X)
    model = make_pipeline(FrozenEstimator(recorded), _model(epsilon=1.0)).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(model) == model[-1].privacy_spent_
    # A search accepts it too.
    budget = PrivacyBudget(20.0, 1e-4, composition="basic")
    search = DPGridSearchCV(
        make_pipeline(FrozenEstimator(recorded), _model()),
        {"dplogisticregression__C": [0.1, 1.0]},
        epsilon=1.0,
        delta=1e-5,
        budget=budget,
    ).fit(X, y)
    assert privacy_spent(search.best_estimator_) == search.privacy_spent_
    # Fitted alone, then frozen: nothing recorded the parameters of its fit.
    alone = SimpleImputer(strategy="constant", keep_empty_features=True).fit(X)
    model = make_pipeline(FrozenEstimator(alone), _model(epsilon=1.0)).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="no record"):
        assert privacy_spent(model) == (math.inf, 0.0)


def test_recording_pipeline_behaves_as_scikit_learn_pipeline():
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline as SklearnPipeline
    from sklearn.pipeline import make_pipeline as sklearn_make_pipeline

    steps = (PolynomialFeatures(1), _model(epsilon=1.0))
    ours, theirs = make_pipeline(*steps), sklearn_make_pipeline(*steps)
    assert isinstance(ours, SklearnPipeline)
    assert [name for name, _ in ours.steps] == [name for name, _ in theirs.steps]
    assert type(clone(ours)) is type(ours) and type(ours[:1]) is type(ours)
    for method in ("fit_transform", "fit_predict", "predict", "transform"):
        assert hasattr(ours, method) == hasattr(theirs, method)
    transformer = make_pipeline(FunctionTransformer(), PolynomialFeatures(1))
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(transformer.fit_transform(X), transformer.transform(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(transformer) == (0.0, 0.0)


# --------------------------------------------------------------------------
# Units of privacy
# --------------------------------------------------------------------------


def test_steps_of_different_units_of_privacy_do_not_compose():
    X, y = _data(n=1000)
    groups = np.arange(len(X)) // 5
    scaler = DPStandardScaler(epsilon=1.0, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _model(epsilon=1.0, max_group_rows=5).fit(scaler.transform(X), y, groups=groups)
    pipe = make_pipeline(scaler, model)
    with pytest.warns(PrivacyLeakWarning, match="same groups="):
        assert privacy_spent(pipe) == (math.inf, 0.0)
    report = privacy_report(pipe)
    assert report["epsilon"] == "inf"
    assert "same groups=" in report["unit_of_privacy"]


def test_steps_of_one_unit_of_privacy_compose_and_the_report_names_it():
    X, y = _data(n=1000)
    groups = np.arange(len(X)) // 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scaler = DPStandardScaler(epsilon=1.0, max_group_rows=5, random_state=0)
        scaler.fit(X, groups=groups)
        model = _model(epsilon=1.0, max_group_rows=5).fit(scaler.transform(X), y, groups=groups)
    # A public step spends nothing and protects any unit.
    pipe = make_pipeline(PublicRangeScaler((-10.0, 10.0)).fit(X), scaler, model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert privacy_spent(pipe) == (2.0, 2e-5)
    report = privacy_report(pipe)
    assert report["epsilon"] == 2.0
    assert "group" in report["unit_of_privacy"]
    assert report["neighbouring_relation"] == "add or remove one group of at most 5 rows"


@pytest.mark.parametrize("degree", [2, (1, 3)])
def test_polynomial_features_that_can_overflow_a_finite_row_are_refused(degree):
    X, y = _data()
    model = make_pipeline(PolynomialFeatures(degree), _model(epsilon=1.0)).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="overflow"):
        assert privacy_spent(model) == (math.inf, 0.0)
    search = DPGridSearchCV(
        make_pipeline(PolynomialFeatures(degree), _model()), {"dplogisticregression__C": [1.0]}
    )
    with pytest.raises(TypeError, match="overflow"):
        search.fit(X, y)


@pytest.mark.parametrize(
    "step",
    [
        pytest.param(
            OrdinalEncoder(
                categories=[[0.0, 1.0, 2.0]],
                dtype=np.float32,
                handle_unknown="use_encoded_value",
                unknown_value=10**40,
            ),
            id="ordinal-code",
        ),
        pytest.param(
            SimpleImputer(
                missing_values=-1.0,
                strategy="constant",
                fill_value=1e300,
                keep_empty_features=True,
            ),
            id="imputer-fill",
        ),
    ],
)
def test_allow_listed_steps_whose_parameter_overflows_a_finite_row_are_refused(step):
    X, y = _data()
    X = np.column_stack([np.arange(len(X)) % 3, X[:, 1:]]).astype(np.float32)
    model = make_pipeline(
        ColumnTransformer([("step", step, [0])], remainder="passthrough", sparse_threshold=0),
        _model(epsilon=1.0),
    ).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="overflows to inf"):
        assert privacy_spent(model) == (math.inf, 0.0)
