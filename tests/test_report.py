"""Privacy reports (sklearn_dp.report) and fitted models saved without their budget."""

from __future__ import annotations

import copy
import json
import math
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from joblib import Parallel, delayed
from scipy.stats import norm
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from solver_configs import _ESTIMATORS, CONFIGS

from sklearn_dp import (
    DPLogisticRegression,
    PrivacyBudget,
    privacy_report,
    privacy_spent,
)
from sklearn_dp.accounting import ApproximateDpEvent, PureEpsilonDpEvent
from sklearn_dp.exceptions import BudgetStorageError
from sklearn_dp.model_selection import DPGridSearchCV
from sklearn_dp.preprocessing import DPStandardScaler
from sklearn_dp.report import (
    PLD_DISCRETIZATION,
    _event_pld,
    event_from_dict,
    event_to_dict,
    membership_tpr,
    plot_tradeoff,
)
from sklearn_dp.solvers import SOLVERS

ROOT = Path(__file__).resolve().parents[1]
RATES = np.array([0.001, 0.01, 0.1])


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, d))
    y = (X[:, 0] + 0.1 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _config_fit(name, solver):
    cls, base = _ESTIMATORS[name]
    delta = 1e-5 if SOLVERS[solver].approximate_dp else 0.0
    model = cls(solver=solver, delta=delta, random_state=0, **{**base, **CONFIGS[name, solver]})
    X, y = _data()
    return model.fit(X, y if name == "DPLogisticRegression" else X @ [0.5, -0.2, 0.1])


def _reference_tpr(pld, rates, cap=8.0):
    """The trade-off curve from dp_accounting's own (public) privacy profile, by brute force.

    The supremum over epsilon of both families of lines, on every multiple of
    the PLD's grid up to ``cap``: beyond it the first family is below zero
    for these rates, and the second below e^-cap, which cannot beat the
    supremum found when that is larger.
    """
    assert cap > math.log(1 / min(rates))
    epsilons = np.arange(int(cap / PLD_DISCRETIZATION) + 1) * PLD_DISCRETIZATION
    deltas = np.asarray(pld.get_delta_for_epsilon(epsilons))
    out = []
    for alpha in rates:
        first = np.max(1 - deltas - np.exp(epsilons) * alpha)
        second = np.max(np.exp(-epsilons) * (1 - deltas - alpha))
        best = max(0.0, first, second)
        assert best > math.exp(-cap)
        out.append(1 - best)
    return np.maximum(np.array(out), rates)


# --------------------------------------------------------------------------
# The attack view
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "event, mu",
    [
        (dpe.GaussianDpEvent(0.4), 2.5),
        (dpe.GaussianDpEvent(1.0), 1.0),
        (dpe.GaussianDpEvent(3.0), 1 / 3),
        (dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(10.0), 25), 0.5),
        (
            dpe.ComposedDpEvent([dpe.GaussianDpEvent(2.0), dpe.GaussianDpEvent(4.0)]),
            math.sqrt(1 / 4 + 1 / 16),
        ),
    ],
)
def test_gaussian_attack_view_is_never_below_its_closed_form(event, mu):
    # A Gaussian mechanism of multiplier s is (1/s)-GDP: TPR(a) = Phi(Phi^-1(a) + mu).
    rates = np.array([1e-4, 0.001, 0.01, 0.1, 0.5, 0.9])
    exact = norm.cdf(norm.ppf(rates) + mu)
    got = membership_tpr(event, rates)
    assert np.all(got >= exact - 1e-12)
    assert np.all(got - exact <= 1e-4)


def test_attack_view_of_a_pure_mechanism_is_randomized_response():
    # Pure epsilon-DP: TPR(a) = min(e^eps a, 1 - e^-eps (1 - a)), attained by randomized response.
    epsilon = 1.0
    got = membership_tpr(PureEpsilonDpEvent(epsilon, "test"), RATES)
    expected = np.minimum(np.exp(epsilon) * RATES, 1 - np.exp(-epsilon) * (1 - RATES))
    np.testing.assert_allclose(got, expected, atol=1e-3)
    assert np.all(got >= expected - 1e-12)


def test_attack_view_of_a_non_private_fit_is_certain_detection():
    X, y = _data()
    model = DPLogisticRegression(epsilon=math.inf, classes=[0, 1]).fit(X, y)
    report = privacy_report(model)
    assert report["attack"]["true_positive_rates"] == [1.0, 1.0, 1.0]
    assert report["attack"]["basis"] == "non-private"
    assert report["epsilon"] == "inf"
    json.dumps(report, allow_nan=False)


def test_attack_view_of_an_event_with_delta_one_is_certain_detection():
    # dp_accounting cannot build a distribution for delta = 1; such a part
    # promises nothing, alone or composed with private parts.
    vacuous = ApproximateDpEvent(1.0, 1.0, "label set")
    for event in (vacuous, dpe.ComposedDpEvent([dpe.GaussianDpEvent(2.0), vacuous])):
        np.testing.assert_array_equal(membership_tpr(event, [0.001, 0.1]), [1.0, 1.0])


_FAST_CONFIGS = [
    ("DPLogisticRegression", "dp_gd"),  # Gaussian steps, a pure bound, the count
    ("DPLasso", "frank_wolfe"),  # zCDP-only parts: the (epsilon, delta) curve
    ("DPSCORegressor", "objective_perturbation"),  # a closed form: the (epsilon, delta) curve
]


def _check_attack_view(model):
    report = privacy_report(model)
    assert event_from_dict(json.loads(json.dumps(report["dp_event"]))) == model.dp_event_
    got = np.array(report["attack"]["true_positive_rates"])
    epsilon, delta = model.privacy_spent_
    point = np.minimum(delta + np.exp(epsilon) * RATES, 1 - np.exp(-epsilon) * (1 - delta - RATES))
    planned = model._privacy_record_["planned"]
    pld = _event_pld(model.dp_event_) if planned else None
    if pld is None:
        assert report["attack"]["basis"] == "epsilon-delta"
        np.testing.assert_allclose(got, np.clip(np.maximum(point, RATES), 0, 1), atol=1e-12)
        return
    assert report["attack"]["basis"] == "pld"
    # Both the PLD and the recorded guarantee bound every test: the report
    # shows the lower curve (the PLD can read a pure-DP part above the zCDP
    # reading that the recorded guarantee rests on).
    expected = np.minimum(_reference_tpr(pld, RATES), np.clip(np.maximum(point, RATES), 0, 1))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert np.all(got <= point + 1e-6)


@pytest.mark.parametrize("config", _FAST_CONFIGS, ids="-".join)
def test_attack_view_agrees_with_dp_accountings_pld(config):
    _check_attack_view(_config_fit(*config))


@pytest.mark.slow
@pytest.mark.parametrize("config", sorted(CONFIGS), ids="-".join)
def test_attack_view_agrees_with_dp_accountings_pld_for_every_solver(config):
    _check_attack_view(_config_fit(*config))


def test_attack_view_of_subsampled_steps_agrees_with_dp_accountings_pld():
    # Poisson sampling makes the two directions of add/remove differ.
    event = dpe.SelfComposedDpEvent(dpe.PoissonSampledDpEvent(0.2, dpe.GaussianDpEvent(2.0)), 5)
    pld = _event_pld(event)
    assert not pld._symmetric
    np.testing.assert_allclose(
        membership_tpr(event, RATES), _reference_tpr(pld, RATES), rtol=0, atol=1e-6
    )


def test_attack_view_reads_a_released_label_set_as_an_epsilon_delta_mechanism():
    labels = ApproximateDpEvent(0.1, 5e-6, "labels")
    event = dpe.ComposedDpEvent([labels, dpe.GaussianDpEvent(3.0)])
    pld = _event_pld(event)
    got = membership_tpr(event, RATES)
    np.testing.assert_allclose(got, _reference_tpr(pld, RATES), rtol=0, atol=1e-6)
    # The label set costs something: above the Gaussian alone, whose curve is exact.
    assert np.all(got > norm.cdf(norm.ppf(RATES) + 1 / 3.0))


def test_fit_that_chose_its_mechanism_from_its_releases_reports_its_guarantee_curve():
    # dp_svrg's plan depends on the released row count: its releases compose
    # adaptively, and only the recorded (epsilon, delta) is proven for them.
    model = _config_fit("DPSCORegressor", "dp_svrg")
    assert not model._privacy_record_["planned"]
    assert privacy_report(model)["attack"]["basis"] == "epsilon-delta"
    _check_attack_view(model)
    fixed = _config_fit("DPLogisticRegression", "dp_gd")
    assert fixed._privacy_record_["planned"]
    assert privacy_report(fixed)["attack"]["basis"] == "pld"


def _bound_reading_solver(name):
    """dp_gd under another name, whose plan reads the rows' bound for its step count.

    Its event equals dp_gd's at every bound a fit can release, but the plan
    reads the bound and the solver does not declare it keeps it out of its
    event: a fit that releases its bound chose its mechanism after a release.
    """
    import dataclasses

    from sklearn_dp.solvers import SolverSpec, plan_call
    from sklearn_dp.solvers._gradient_descent import plan_dp_gd

    spec = SOLVERS["dp_gd"]

    def plan(n_samples, n_params, epsilon, delta, call):
        if call.row_norm_bound is not None and call.row_norm_bound > 1e12:
            return plan_call("dp_gd", n_samples, n_params, epsilon, delta, max_iter=7)
        return plan_dp_gd(n_samples, n_params, epsilon, delta, call)

    fields = {
        field.name: getattr(spec, field.name)
        for field in dataclasses.fields(spec)
        if field.init and field.name != "event_reads_bounds"
    }
    return SolverSpec(**dict(fields, name=name, plan=plan))


def test_fit_whose_event_may_follow_its_released_bounds_reports_its_guarantee_curve(monkeypatch):
    from sklearn_dp.solvers import _registry

    monkeypatch.setitem(_registry._REGISTRY, "gd_reading_bounds", _bound_reading_solver("x"))
    X, y = _data()
    model = DPLogisticRegression(
        solver="gd_reading_bounds", classes=[0, 1], max_iter=5, random_state=0
    )
    model.fit(X, y)  # data_norm="auto": the bound is released
    # The event is the planned one, but it was not fixed before the data.
    assert model.dp_event_ == model._fit_plan(X, y).event
    assert not model._privacy_record_["planned"]
    assert privacy_report(model)["attack"]["basis"] == "epsilon-delta"
    # With a public bound nothing released enters the plan: the event is fixed.
    model.set_params(data_norm=2.0).fit(X, y)
    assert model._privacy_record_["planned"]
    assert privacy_report(model)["attack"]["basis"] == "pld"
    # So is dp_gd's with a released bound: it keeps the bound out of its event.
    fixed = DPLogisticRegression(solver="dp_gd", classes=[0, 1], max_iter=5).fit(X, y)
    assert fixed._privacy_record_["planned"]


def test_fit_that_released_its_label_set_reports_its_guarantee_curve():
    X, y = _data()
    model = DPLogisticRegression(solver="dp_gd", max_iter=5, data_norm=2.0).fit(X, y)
    assert not model._privacy_record_["planned"]
    assert privacy_report(model)["attack"]["basis"] == "epsilon-delta"


def test_membership_tpr_refuses_bad_rates_and_events_without_a_pld():
    with pytest.raises(ValueError, match="false_positive_rates"):
        membership_tpr(dpe.GaussianDpEvent(1.0), [0.0])
    with pytest.raises(ValueError, match="privacy-loss distribution"):
        membership_tpr(dpe.ZCDpEvent(0.1), RATES)


# --------------------------------------------------------------------------
# Events as JSON
# --------------------------------------------------------------------------


def _round_trip(event):
    text = json.dumps(event_to_dict(event), allow_nan=False)
    return event_from_dict(json.loads(text))


def test_planned_events_of_every_solver_round_trip_through_json():
    # Planned events (public inputs only) hold the same classes as the fits'
    # (the slow attack-view test round-trips every solver's fitted event).
    checked = 0
    for (name, solver), params in sorted(CONFIGS.items()):
        cls, base = _ESTIMATORS[name]
        delta = 1e-5 if SOLVERS[solver].approximate_dp else 0.0
        model = cls(solver=solver, delta=delta, **{**base, **params})
        X, y = _data(n=4)
        event = model._fit_plan(X, y if name == "DPLogisticRegression" else X[:, 0]).event
        if event is not None:  # None: planned from the released count
            assert _round_trip(event) == event, (name, solver)
            checked += 1
    assert checked >= len(CONFIGS) // 2


def test_package_events_round_trip_through_json():
    from sklearn_dp.solvers._objective_accounting import ObjectivePerturbationDpEvent

    events = [
        PureEpsilonDpEvent(0.5, "exponential mechanism: bound"),
        ApproximateDpEvent(0.1, 1e-6, "labels"),
        ObjectivePerturbationDpEvent(0.1, 3.0, 5, 20.0, 0.1),
        dpe.NonPrivateDpEvent(),
        dpe.ZCDpEvent(0.25),
        dpe.PoissonSampledDpEvent(0.01, dpe.GaussianDpEvent(1.5)),
        dpe.ComposedDpEvent([dpe.LaplaceDpEvent(math.inf), dpe.NoOpDpEvent()]),
    ]
    for event in events:
        assert _round_trip(event) == event
    fitted = _config_fit("DPLogisticRegression", "dp_gd")
    assert _round_trip(fitted.dp_event_) == fitted.dp_event_


def test_event_from_dict_rebuilds_only_event_classes():
    with pytest.raises(ValueError, match="Unknown DpEvent class"):
        event_from_dict({"module_name": "os", "class_name": "system", "command": "true"})
    with pytest.raises(ValueError, match="fields"):
        event_from_dict(
            {"module_name": "dp_accounting.dp_event", "class_name": "GaussianDpEvent", "x": 1}
        )


# --------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------


def test_report_of_an_estimator_records_the_fit(tmp_path):
    X, y = _data()
    budget = PrivacyBudget(3.0, 1e-5, storage=tmp_path / "ledger.sqlite")
    model = DPLogisticRegression(classes=[0, 1], budget=budget, random_state=0).fit(X, y)
    report = privacy_report(model)
    json.dumps(report, allow_nan=False)
    assert report["kind"] == "estimator"
    assert report["neighbouring_relation"] == "add or remove one row"
    assert (report["epsilon"], report["delta"]) == model.privacy_spent_
    assert report["solver"] == model.solver_
    assert event_from_dict(report["dp_event"]) == model.dp_event_
    (entry,) = report["ledger"]
    (recorded,) = budget.ledger
    assert entry["id"] == recorded.id and entry["status"] == "completed"
    assert entry["rho"] == pytest.approx(recorded.rho)
    assert event_from_dict(entry["dp_event"]) == recorded.event
    assert report["zcdp"]["rho"] == pytest.approx(recorded.rho)
    assert report["versions"]["dp-accounting"] and report["fitted_with"]["sklearn_dp"]
    assert report["attack"]["false_positive_rates"] == [0.001, 0.01, 0.1]


def test_zcdp_view_is_exact_for_gaussian_mechanisms_only():
    from sklearn_dp.report import _zcdp_view

    gaussian = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(2.0), 4)
    assert _zcdp_view(gaussian) == {"rho": 0.5, "delta": 0.0, "exact": True}
    # A Laplace release is bounded by epsilon^2 / 2, which is not its exact zCDP cost.
    mixed = dpe.ComposedDpEvent([gaussian, dpe.LaplaceDpEvent(10.0)])
    assert _zcdp_view(mixed) == {"rho": 0.505, "delta": 0.0, "exact": False}
    labels = ApproximateDpEvent(0.1, 1e-6, "labels")
    view = _zcdp_view(dpe.ComposedDpEvent([gaussian, labels]))
    assert view["delta"] == 1e-6 and not view["exact"]
    assert _zcdp_view(dpe.ComposedDpEvent([gaussian, dpe.UnsupportedDpEvent()])) is None


def test_reports_of_transformers_pipelines_searches_and_budgets():
    X, y = _data(n=600)
    budget = PrivacyBudget(4.0, 1e-5)
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, budget=budget, random_state=0),
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget, random_state=0),
    ).fit(X, y)
    report = privacy_report(pipe)
    assert report["kind"] == "pipeline" and report["attack"]["basis"] == "epsilon-delta"
    assert (report["epsilon"], report["delta"]) == pytest.approx(privacy_spent(pipe))
    assert set(report["steps"]) == {"dpstandardscaler", "dplogisticregression"}
    assert report["steps"]["dpstandardscaler"]["kind"] == "transformer"
    assert report["steps"]["dpstandardscaler"]["attack"]["basis"] == "pld"
    search = DPGridSearchCV(
        DPLogisticRegression(classes=[0, 1], max_iter=5),
        {"C": [0.1, 1.0]},
        epsilon=1.0,
        budget=PrivacyBudget(2.0, 1e-5, composition="basic"),
        random_state=0,
    ).fit(X, y)
    search_report = privacy_report(search)
    assert search_report["kind"] == "search" and len(search_report["ledger"]) == 1
    assert search_report["attack"]["basis"] == "epsilon-delta"
    budget_report = privacy_report(budget)
    assert budget_report["kind"] == "budget" and len(budget_report["ledger"]) == 2
    assert budget_report["epsilon"] == pytest.approx(budget.spent[0])
    for each in (report, search_report, budget_report):
        json.dumps(each, allow_nan=False)


def test_report_refuses_unfitted_and_foreign_objects():
    from sklearn.exceptions import NotFittedError
    from sklearn.linear_model import LogisticRegression

    with pytest.raises(NotFittedError):
        privacy_report(DPLogisticRegression())
    with pytest.raises(TypeError, match="privacy_report takes"):
        privacy_report(LogisticRegression())


def test_plot_tradeoff_draws_the_curve_and_the_diagonal():
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_tradeoff(dpe.GaussianDpEvent(1.0))
    assert len(ax.lines) == 2
    x, y = ax.lines[0].get_data()
    assert np.all(y >= x)
    plt.close("all")


# --------------------------------------------------------------------------
# Saving fitted models without their budget
# --------------------------------------------------------------------------


def test_saved_model_loads_without_its_ledger_and_keeps_its_report(tmp_path):
    X, y = _data()
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(3.0, 1e-5, storage=path)
    model = DPLogisticRegression(classes=[0, 1], budget=budget, random_state=0).fit(X, y)
    before = privacy_report(model)
    blob = pickle.dumps(model)
    assert os.fsencode(str(path)) not in blob  # no handle on the ledger file
    os.remove(path)  # another machine: the ledger is not there
    loaded = pickle.loads(blob)
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert privacy_report(loaded) == before
    assert isinstance(loaded.budget, PrivacyBudget)
    assert loaded.budget.epsilon == 3.0 and loaded.budget.storage is None
    for use in (
        lambda: loaded.budget.spend(0.1),
        lambda: loaded.budget.check(0.1),
        lambda: loaded.budget.ledger,
        lambda: loaded.budget.remaining,
    ):
        with pytest.raises(BudgetStorageError, match="saved"):
            use()
    assert "saved" in repr(loaded.budget)


def test_refit_of_a_loaded_model_is_refused_before_reading_the_data():
    X, y = _data()
    budget = PrivacyBudget(3.0, 1e-5)
    model = DPLogisticRegression(classes=[0, 1], budget=budget, random_state=0).fit(X, y)
    loaded = pickle.loads(pickle.dumps(model))
    with pytest.raises(BudgetStorageError, match="set_params"):
        loaded.fit(X, y)
    assert len(budget.ledger) == 1
    # Given a live budget again, it fits and is charged.
    loaded.set_params(budget=budget).fit(X, y)
    assert len(budget.ledger) == 2


def test_unfitted_models_and_copies_keep_the_live_budget():
    X, y = _data()
    budget = PrivacyBudget(3.0, 1e-5)
    unfitted = DPLogisticRegression(classes=[0, 1], budget=budget)
    assert pickle.loads(pickle.dumps(unfitted)).budget is budget
    fitted = clone(unfitted).fit(X, y)
    assert clone(fitted).budget is budget
    assert copy.copy(fitted).budget is budget
    assert copy.deepcopy(fitted).budget is budget
    np.testing.assert_array_equal(copy.deepcopy(fitted).coef_, fitted.coef_)


def _fit_in_worker(model, X, y):
    return os.getpid(), model.fit(X, y)


def test_parallel_fits_in_worker_processes_keep_counting(tmp_path):
    X, y = _data()
    budget = PrivacyBudget(3.0, 1e-5, storage=tmp_path / "ledger.sqlite")
    template = DPLogisticRegression(classes=[0, 1], epsilon=0.5, budget=budget, random_state=0)
    results = Parallel(n_jobs=2, backend="loky")(
        delayed(_fit_in_worker)(clone(template), X, y) for _ in range(2)
    )
    assert all(pid != os.getpid() for pid, _ in results)
    assert len(budget.ledger) == 2
    # The fitted models came back pickled: their reports, no ledger handle.
    ids = sorted(privacy_report(model)["ledger"][0]["id"] for _, model in results)
    assert ids == [1, 2]
    for _, model in results:
        with pytest.raises(BudgetStorageError):
            model.budget.check(0.1)


def test_saved_pipeline_keeps_one_shared_budget_and_its_guarantee():
    X, y = _data(n=600)
    budget = PrivacyBudget(4.0, 1e-5)
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, budget=budget, random_state=0),
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget, random_state=0),
    ).fit(X, y)
    loaded = pickle.loads(pickle.dumps(pipe))
    scaler, model = loaded[0], loaded[-1]
    assert scaler.budget is model.budget and scaler.budget is not budget
    assert privacy_spent(loaded) == privacy_spent(pipe)
    assert privacy_report(loaded)["steps"] == privacy_report(pipe)["steps"]


def test_saved_search_holds_no_ledger_handle(tmp_path):
    X, y = _data(n=600)
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(4.0, 1e-5, storage=path, composition="basic")
    search = DPGridSearchCV(
        DPLogisticRegression(classes=[0, 1], max_iter=5, budget=budget),
        {"C": [0.1, 1.0]},
        epsilon=1.0,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    blob = pickle.dumps(search)
    assert os.fsencode(str(path)) not in blob
    os.remove(path)
    loaded = pickle.loads(blob)
    np.testing.assert_array_equal(loaded.predict(X), search.predict(X))
    assert privacy_report(loaded)["ledger"] == privacy_report(search)["ledger"]
    # The unfitted template of the original search still counts on the live budget.
    assert search.estimator.budget is budget


def test_saved_search_over_estimators_holds_no_ledger_handle(tmp_path):
    # Grid values that are estimators carry the budget in param_grid,
    # cv_results_ (params and the param_* object columns) and best_params_.
    X, y = _data(n=600)
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(4.0, 1e-5, storage=path, composition="basic")

    def model(C):
        return DPLogisticRegression(classes=[0, 1], C=C, max_iter=5, budget=budget)

    search = DPGridSearchCV(
        make_pipeline(model(1.0)),
        {"dplogisticregression": [model(0.1), model(1.0)]},
        epsilon=1.0,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    grid_values = search.param_grid["dplogisticregression"]
    blob = pickle.dumps(search)
    assert os.fsencode(str(path)) not in blob
    os.remove(path)
    loaded = pickle.loads(blob)
    np.testing.assert_array_equal(loaded.predict(X), search.predict(X))
    held = [
        *loaded.param_grid["dplogisticregression"],
        *(params["dplogisticregression"] for params in loaded.cv_results_["params"]),
        *loaded.cv_results_["param_dplogisticregression"],
        loaded.best_params_["dplogisticregression"],
    ]
    assert {value.budget.storage for value in held} == {None}
    assert loaded.cv_results_["param_dplogisticregression"].mask.shape == (2,)
    # The original search and its grid values still hold the live budget.
    assert all(value.budget is budget for value in search.param_grid["dplogisticregression"])
    assert search.param_grid["dplogisticregression"] is grid_values


def test_saved_model_holds_no_snapshot_of_an_in_memory_ledger():
    X, y = _data(n=600)
    budget = PrivacyBudget(4.0, 1e-3, composition="basic")
    for _ in range(3):
        DPLogisticRegression(epsilon=0.1, classes=[0, 1], budget=budget).fit(X, y)

    def model(C):
        return DPLogisticRegression(classes=[0, 1], C=C, max_iter=5, budget=budget)

    search = DPGridSearchCV(
        make_pipeline(model(1.0)),
        {"dplogisticregression": [model(0.1), model(1.0)]},
        epsilon=1.0,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    blob = pickle.dumps(search)
    assert b"_restore_memory_budget" not in blob
    # The numeric arrays of the fitted state are pickled, not copied first.
    state = search.__getstate__()
    assert state["cv_results_"]["mean_test_score"] is search.cv_results_["mean_test_score"]


def test_fit_reads_only_its_own_ledger_entry(tmp_path, monkeypatch):
    X, y = _data()
    for storage in (None, tmp_path / "ledger.sqlite"):
        budget = PrivacyBudget(3.0, 1e-5, storage=storage)
        DPLogisticRegression(epsilon=0.1, classes=[0, 1], budget=budget).fit(X, y)

        def whole_ledger():
            raise AssertionError("the whole ledger was read to keep one entry")

        monkeypatch.setattr(budget._storage, "rows", whole_ledger)
        model = DPLogisticRegression(epsilon=0.1, classes=[0, 1], budget=budget).fit(X, y)
        monkeypatch.undo()
        (entry,) = model._privacy_record_["entries"]
        assert entry.id == 2 and entry == budget.ledger[1]


# --------------------------------------------------------------------------
# The docs
# --------------------------------------------------------------------------


def test_report_module_examples_run():
    import doctest

    import sklearn_dp.report as module

    failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert tried > 0 and failures == 0


def test_epsilon_page_runs(tmp_path, monkeypatch):
    # "What does epsilon mean for my users?": its Python blocks, in order, as one script.
    pytest.importorskip("matplotlib", reason="the page's plot needs the examples extra")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "guide" / "epsilon_meaning.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 2
    namespace = {"__name__": "__epsilon_page__"}
    exec(compile("\n".join(blocks), "docs/guide/epsilon_meaning.md", "exec"), namespace)
    assert (tmp_path / "epsilon_meaning.png").stat().st_size > 10_000
    assert (ROOT / "docs" / "images" / "epsilon_meaning.png").exists()
    import matplotlib.pyplot as plt

    plt.close("all")
