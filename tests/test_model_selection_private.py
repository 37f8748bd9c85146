"""Private hyper-parameter search: accounting, protocol, splitter, API.

* The selection's accounting is recomputed exactly: the recorded event is
  rebuilt from its parts (the candidates' own fit events, the score and
  count mechanisms) and evaluated with dp_accounting's RDP accountant, and
  dp_accounting's RepeatAndSelect bound is recomputed by hand from
  Papernot and Steinke's theorem; the number of runs is drawn from the
  distribution the accountant analyses.
* The protocol: the spend is reserved before the first release or row
  sample; one entry for the selection and one for the refit; the
  substitution test over a search (D and D plus a hostile row give the same
  observable search when every release is substituted); nothing of a run
  escapes (warnings, errors, the number of runs).
* The row-wise splitter keeps neighbours neighbours; ``KFold`` does not.
* scikit-learn's search API and its conformance checks where they apply.
"""

from __future__ import annotations

import contextlib
import functools
import io
import math
import warnings

import numpy as np
import pytest
from _helpers import binary_data, gaussian_curve, laplace_gaussian_curve, regression_data
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant as rdp
from sklearn.base import is_classifier
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks
from test_substitution import _TIME, _assert_same, _check_sensitivities, _Substitute

from sklearn_dp import (
    BudgetExceededError,
    DPLasso,
    DPLogisticRegression,
    DPSCORegressor,
    PrivacyBudget,
    PrivacyLeakWarning,
    privacy_spent,
)
from sklearn_dp._protocol import kept_group_rows
from sklearn_dp.accounting import NEIGHBORING_RELATION, ApproximateDpEvent, epsilon_of_event
from sklearn_dp.decomposition import DPPCA
from sklearn_dp.model_selection import DPGridSearchCV, DPRandomizedSearchCV, RowwiseKFold
from sklearn_dp.model_selection import _planning as planning_module
from sklearn_dp.model_selection import _runs as runs_module
from sklearn_dp.model_selection import _search as search_module
from sklearn_dp.model_selection._selection import (
    draw_number_of_runs,
    rdp_epsilon,
    run_event,
    runs_pmf,
    selection_event,
    tnb_gamma,
    tnb_mean,
)
from sklearn_dp.preprocessing import (
    DPStandardScaler,
    PublicRangeScaler,
    RowWiseTransformer,
)
from sklearn_dp.testing import trace_releases

N_ROWS = 400
GRID = {"C": [0.1, 1.0, 10.0]}
#: The rule that skips the runs on small tables, as shipped (the fixture below
#: turns it off so that the tests of the runs see runs).
SKIP_MARGIN_SHARE = runs_module.SKIP_MARGIN_SHARE


@pytest.fixture(autouse=True)
def _runs_never_skipped(monkeypatch):
    """The runs run whatever the released count (the skip has its own tests)."""
    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", math.inf)


PIPELINE_GRID = {"dplogisticregression__C": [0.1, 1.0, 10.0]}


def _pipeline(estimator, scaler=None):
    """A DP scaler and two public row-wise steps before ``estimator``."""
    scaler = scaler if scaler is not None else DPStandardScaler(epsilon=0.3, delta=2e-6)
    estimator.set_params(epsilon=0.7, delta=8e-6)
    return make_pipeline(
        scaler, PublicRangeScaler((-3.0, 3.0)), RowWiseTransformer(np.tanh), estimator
    )


#: Uniform features on [-0.5, 0.5], noisy binary labels.
_data = functools.partial(binary_data, n=N_ROWS, half_width=0.5, noise=0.1)


def _search(**params):
    # dp_gd and a fixed public row bound: the accounting below is written for
    # its event (T Gaussian steps); test_auto_bounds_are_accounted_by_their_zcdp_bound
    # and the substitution tests run the default "auto" bounds.
    estimator = params.pop(
        "estimator",
        DPLogisticRegression(classes=[0, 1], max_iter=20, solver="dp_gd", data_norm=1.0),
    )
    grid = params.pop("param_grid", GRID)
    base = dict(epsilon=2.0, delta=1e-5, random_state=0, refit_fraction=0.5)
    base.update(params)
    return DPGridSearchCV(estimator, grid, **base)


# --------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------


def _rdp_epsilon_by_hand(event, delta):
    accountant = rdp.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def test_selection_event_rebuilt_from_its_parts_and_recomputed():
    X, y = _data()
    search = _search().fit(X, y)
    eps_sel, delta_sel = search.selection_privacy_spent_
    # The refit takes half; the selection's half holds the validation count
    # (5% of epsilon) and the runs.  The runs may be skipped (a default
    # candidate and a refit): the runs and the refit share the delta the
    # count leaves them (test_the_count_is_accounted_with_the_branch_it_picks).
    branch_delta = delta_sel + search.best_estimator_.privacy_spent_[1]
    assert 0.25e-5 <= branch_delta < 1e-5
    assert (eps_sel, delta_sel) == pytest.approx((0.1 + 0.9, 0.5 * branch_delta))
    # The candidates' own fit events at the per-run fit epsilon (one fit on
    # the real data: the event is planned from public inputs only).
    fit_epsilon = search.run_epsilon_
    fit_events = []
    for C in GRID["C"]:
        model = DPLogisticRegression(
            classes=[0, 1],
            max_iter=20,
            C=C,
            epsilon=fit_epsilon,
            delta=delta_sel,
            random_state=1,
            solver="dp_gd",
            data_norm=1.0,
        ).fit(X, y)
        fit_events.append(model.dp_event_)
    # A grid over C with one solver: one mechanism, paid once.
    assert all(event == fit_events[0] for event in fit_events)
    # The run is accounted as the fit alone, its Gaussian steps folded into
    # one Gaussian (the same Renyi divergence at every order) ...
    from sklearn_dp.model_selection._selection import canonical_event

    count, steps = fit_events[0].events
    run = canonical_event(fit_events[0])
    assert run.events[0] == count
    folded = run.events[1].noise_multiplier
    assert folded == pytest.approx(steps.event.noise_multiplier / math.sqrt(steps.count), rel=1e-12)
    # The grid holds the estimator's own C: its run follows the selection's.
    expected = dpe.ComposedDpEvent(
        [
            dpe.LaplaceDpEvent(1.0 / (planning_module.VALIDATION_COUNT_FRACTION * 2.0)),
            dpe.RepeatAndSelectDpEvent(run, 10.0, 1.0),
            run,
        ]
    )
    # ... because the score's Gaussian noise has that multiplier (see
    # test_score_is_dominated_by_the_fit_at_every_order).
    with trace_releases() as trace:
        _search().fit(X, y)
    scores = [r for r in trace.releases if r.label == "validation score"]
    assert scores and all(r.mechanism == "gaussian" for r in scores)
    assert all(r.sensitivity == 0.5 and r.scale == pytest.approx(0.5 * folded) for r in scores)
    assert search.selection_dp_event_ == expected
    recomputed = _rdp_epsilon_by_hand(search.selection_dp_event_, delta_sel)
    # Within the claim ...
    assert recomputed <= eps_sel
    # ... and tight: the runs may be skipped (a default candidate and a
    # refit), so the count (pure 0.1-DP) is paid by basic composition and
    # the runs alone meet the rest with the largest per-run epsilon.
    runs_alone = dpe.ComposedDpEvent(search.selection_dp_event_.events[1:])
    assert (eps_sel - 0.1) * (1 - 5e-3) <= _rdp_epsilon_by_hand(runs_alone, delta_sel)
    assert _rdp_epsilon_by_hand(runs_alone, delta_sel) <= eps_sel - 0.1
    # The runs' branch: selection plus refit by basic composition.
    refit = search.best_estimator_
    assert refit.privacy_spent_ == pytest.approx((1.0, delta_sel))
    assert epsilon_of_event(refit.dp_event_, delta_sel) <= 1.0 * (1 + 1e-9)
    assert search.privacy_spent_ == (2.0, 1e-5)
    assert search.dp_event_ == dpe.ComposedDpEvent([search.selection_dp_event_, refit.dp_event_])


@pytest.mark.parametrize(
    "distribution, shape, mean",
    [
        ("truncated_negative_binomial", 0.0, 5.0),
        ("truncated_negative_binomial", 0.5, 8.0),
        ("truncated_negative_binomial", 2.0, 3.0),
        ("poisson", 1.0, 6.0),
    ],
)
def test_selection_accounting_for_each_distribution(distribution, shape, mean):
    X, y = _data()
    search = _search(
        distribution=distribution,
        shape=shape,
        n_candidates=mean,
        refit=False,
    ).fit(X, y)
    assert search.selection_privacy_spent_ == (2.0, 1e-5)
    event = search.selection_dp_event_.events[1]
    assert isinstance(event, dpe.RepeatAndSelectDpEvent)
    assert event.mean == mean
    assert event.shape == (math.inf if distribution == "poisson" else shape)
    recomputed = _rdp_epsilon_by_hand(search.selection_dp_event_, 1e-5)
    assert 2.0 * (1 - 5e-3) <= recomputed <= 2.0
    # Without a refit the search is the selection.
    assert search.dp_event_ == search.selection_dp_event_
    assert search.privacy_spent_ == (2.0, 1e-5)


def _repeat_and_select_by_hand(orders, curve, mean, shape):
    """Papernot and Steinke (2022), Theorems 2 (TNB) and 6 (Poisson), from the paper."""
    orders = np.asarray(orders, dtype=float)
    out = np.full(len(orders), np.inf)
    if math.isinf(shape):
        for i, lam in enumerate(orders):
            if lam <= 1:
                continue
            eps_hat = math.log1p(1 / (lam - 1))
            delta_hat = rdp.compute_delta(orders, curve, eps_hat)[0]
            out[i] = curve[i] + mean * delta_hat + math.log(mean) / (lam - 1)
        return out
    gamma = tnb_gamma(mean, shape)
    # min over lambda_hat of (1 + eta) ((1 - 1/lambda_hat) eps(lambda_hat) + log(1/gamma)/lambda_hat)
    tail = (1 + shape) * np.min((1 - 1 / orders) * curve + math.log(1 / gamma) / orders)
    for i, lam in enumerate(orders):
        if lam > 1:
            out[i] = curve[i] + tail + math.log(mean) / (lam - 1)
    # RDP is non-decreasing in the order.
    return np.minimum.accumulate(out[::-1])[::-1]


@pytest.mark.parametrize("mean, shape", [(10.0, 1.0), (5.0, 0.0), (20.0, 0.5), (10.0, math.inf)])
def test_repeat_and_select_bound_recomputed_from_the_theorem(mean, shape):
    run = dpe.ComposedDpEvent(
        [
            dpe.LaplaceDpEvent(50.0),
            dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(80.0), 100),
            dpe.LaplaceDpEvent(8.0),
        ]
    )
    orders = rdp.DEFAULT_RDP_ORDERS
    single = rdp.RdpAccountant(orders, NEIGHBORING_RELATION)
    single.compose(run)
    curve = np.asarray(single._rdp)
    by_hand = _repeat_and_select_by_hand(orders, curve, mean, shape)
    accountant = rdp.RdpAccountant(orders, NEIGHBORING_RELATION)
    accountant.compose(dpe.RepeatAndSelectDpEvent(run, mean, shape))
    # Our gamma is the upper end of the accountant's bracket (1e-9 relative).
    np.testing.assert_allclose(np.asarray(accountant._rdp), by_hand, rtol=1e-6)
    eps_by_hand = rdp.compute_epsilon(orders, by_hand, 1e-5)[0]
    assert rdp_epsilon(dpe.RepeatAndSelectDpEvent(run, mean, shape), 1e-5) == pytest.approx(
        eps_by_hand, rel=1e-6
    )


@pytest.mark.parametrize("shape", [0.0, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("mean", [1.5, 10.0, 40.0])
def test_tnb_gamma_is_on_the_accountants_safe_side(mean, shape):
    from dp_accounting.rdp.rdp_privacy_accountant import (
        _gamma_truncated_negative_binomial,
        _truncated_negative_binomial_mean,
    )

    gamma = tnb_gamma(mean, shape)
    accountant_gamma = _gamma_truncated_negative_binomial(shape, mean)
    # The accountant's bound uses log(1/gamma_acc) and log(mean): draws with
    # gamma >= gamma_acc and a mean <= mean are covered.
    assert gamma >= accountant_gamma
    assert gamma <= accountant_gamma * (1 + 1e-8)
    assert tnb_mean(gamma, shape) <= mean
    assert tnb_mean(gamma, shape) == pytest.approx(
        _truncated_negative_binomial_mean(gamma, shape), rel=1e-10
    )


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 3.0, math.inf])
def test_number_of_runs_follows_the_analysed_distribution(shape):
    mean = 6.0
    rng = np.random.default_rng(0)
    draws = np.array([draw_number_of_runs(mean, shape, rng) for _ in range(20000)])
    k_max = 3000
    pmf = runs_pmf(mean, shape, k_max)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-9)
    assert np.sum(np.arange(k_max + 1) * pmf) == pytest.approx(mean, rel=1e-6)
    if not math.isinf(shape):
        assert pmf[0] == 0 and draws.min() >= 1
    assert draws.mean() == pytest.approx(mean, rel=0.05)
    # The frequencies of small K match the pmf (4-sigma binomial bands).
    for k in range(8):
        p = pmf[k]
        observed = np.mean(draws == k)
        assert abs(observed - p) <= 4 * math.sqrt(p * (1 - p) / draws.size) + 1e-4, (k, observed, p)


def _rdp_curve(event, orders):
    accountant = rdp.RdpAccountant(list(orders), NEIGHBORING_RELATION)
    accountant.compose(event)
    return np.asarray(accountant._rdp)


ORDERS = sorted(set(rdp.DEFAULT_RDP_ORDERS) | set(np.linspace(1.01, 5000, 4000).tolist()))


def test_score_is_dominated_by_the_fit_at_every_order():
    from sklearn_dp.model_selection._selection import canonical_event, gaussian_part, run_event

    X, y = _data()
    fit = DPLogisticRegression(
        classes=[0, 1], max_iter=20, epsilon=0.4, delta=5e-6, data_norm=1.0
    ).fit(X, y)
    # Folding the Gaussian steps keeps the Renyi divergence at every order.
    np.testing.assert_allclose(
        _rdp_curve(canonical_event(fit.dp_event_), ORDERS),
        _rdp_curve(fit.dp_event_, ORDERS),
        rtol=1e-12,
    )
    run, mechanism, multiplier = run_event([fit.dp_event_], score_epsilon=0.1)
    assert mechanism == "gaussian" and multiplier == gaussian_part(fit.dp_event_)
    # The score (sensitivity s, noise multiplier * s) is a Gaussian mechanism
    # of that multiplier: below the fit at every order, exactly.
    score = _rdp_curve(dpe.GaussianDpEvent(multiplier), ORDERS)
    assert np.all(score <= _rdp_curve(run, ORDERS))
    assert np.all(np.asarray(ORDERS) / (2 * multiplier**2) <= _rdp_curve(run, ORDERS) * (1 + 1e-12))


def test_dominance_is_structural_and_exact():
    from sklearn_dp.model_selection._selection import _undominated, dominates

    count = dpe.LaplaceDpEvent(40.0)
    noisy = dpe.ComposedDpEvent([count, dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(90.0), 100)])
    quiet = dpe.ComposedDpEvent([count, dpe.GaussianDpEvent(5.0)])
    other_count = dpe.ComposedDpEvent([dpe.LaplaceDpEvent(20.0), dpe.GaussianDpEvent(50.0)])
    sampled = dpe.ComposedDpEvent([count, dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(1.0))])
    assert dominates(quiet, noisy) and not dominates(noisy, quiet)
    assert not dominates(quiet, other_count) and not dominates(other_count, quiet)
    assert not dominates(quiet, sampled) and not dominates(sampled, quiet)
    assert _undominated([noisy, quiet, other_count, noisy]) == [quiet, other_count]
    for first, second in ((quiet, noisy),):
        assert np.all(_rdp_curve(second, ORDERS) <= _rdp_curve(first, ORDERS))


def test_grid_over_the_number_of_steps_pays_once():
    X, y = _data()
    steps = _search(param_grid={"C": [1.0], "max_iter": [5, 20, 60]}, refit=False).fit(X, y)
    one = _search(param_grid={"C": [1.0], "max_iter": [20]}, refit=False).fit(X, y)
    # T Gaussian steps at one epsilon fold to the same Gaussian: one mechanism.
    assert steps.run_epsilon_ == pytest.approx(one.run_epsilon_, rel=1e-9)
    assert steps.selection_dp_event_.events[1].event.events[0] == dpe.LaplaceDpEvent(
        1.0 / (0.05 * steps.run_epsilon_)
    )


def test_score_is_paid_for_when_no_fit_has_a_gaussian_part():
    X, y = _data()
    estimator = DPLogisticRegression(classes=[0, 1], solver="dp_sgd", max_iter=20)
    search = _search(estimator=estimator, refit=False).fit(X, y)
    run = search.selection_dp_event_.events[1].event
    *fits, score = run.events
    fit_epsilon = search.run_epsilon_
    assert score == dpe.LaplaceDpEvent(
        1.0 / (fit_epsilon * search.score_fraction / (1 - search.score_fraction))
    )
    assert 2.0 * (1 - 5e-3) <= rdp_epsilon(search.selection_dp_event_, 1e-5) <= 2.0
    with trace_releases() as trace:
        _search(estimator=estimator, refit=False).fit(X, y)
    assert {r.mechanism for r in trace.releases if r.label == "validation score"} == {"laplace"}


def test_auto_bounds_are_accounted_by_their_zcdp_bound():
    # An estimator with "auto" bounds (the default) releases its row bound by
    # an exponential mechanism (PureEpsilonDpEvent); the search's RDP
    # accounting bounds it by epsilon^2 / 8-zCDP (rho * alpha at every order).
    from sklearn_dp.accounting import PureEpsilonDpEvent
    from sklearn_dp.model_selection._selection import canonical_event, rdp_event

    X, y = _data()
    fit = DPLogisticRegression(classes=[0, 1], max_iter=20, epsilon=0.4, delta=5e-6).fit(X, y)
    pure = [e for e in fit.dp_event_.events if isinstance(e, PureEpsilonDpEvent)]
    assert len(pure) == 1 and pure[0].mechanism.startswith("exponential mechanism")
    converted = rdp_event(fit.dp_event_)
    assert dpe.ZCDpEvent(pure[0].epsilon ** 2 / 8) in converted.events
    assert canonical_event(fit.dp_event_) == canonical_event(converted)
    assert rdp_event(PureEpsilonDpEvent(0.3, "other")) == dpe.ZCDpEvent(0.3**2 / 2)
    search = _search(estimator=DPLogisticRegression(classes=[0, 1], max_iter=20), refit=False).fit(
        X, y
    )
    assert rdp_epsilon(search.selection_dp_event_, 1e-5) <= 2.0


def test_grid_over_solvers_pays_once_per_distinct_mechanism():
    from sklearn_dp.model_selection._selection import canonical_event

    X, y = _data()
    # dp_gd and output_perturbation at one epsilon: the same Gaussian once
    # folded, paid once; dp_sgd (subsampled) is a second mechanism.
    grid = {"C": [1.0], "solver": ["dp_gd", "output_perturbation", "dp_sgd"]}
    estimator = DPLogisticRegression(classes=[0, 1], max_iter=20, data_norm=1.0)
    search = _search(estimator=estimator, param_grid=grid, refit=False).fit(X, y)
    run = search.selection_dp_event_.events[1].event
    assert len(run.events) == 2
    plain = _search(
        estimator=estimator,
        refit=False,
        param_grid={"C": [1.0], "solver": ["dp_gd", "output_perturbation"]},
    ).fit(X, y)
    run = plain.selection_dp_event_.events[1].event
    fits = [
        DPLogisticRegression(
            classes=[0, 1],
            max_iter=20,
            solver=solver,
            data_norm=1.0,
            epsilon=plain.run_epsilon_,
            delta=1e-5,
        )
        .fit(X, y)
        .dp_event_
        for solver in ("dp_gd", "output_perturbation")
    ]
    assert fits[0] != fits[1]
    # One event bounds both at every order (their Gaussians agree to rounding).
    assert run in [canonical_event(fit) for fit in fits]
    for fit in fits:
        assert np.all(_rdp_curve(fit, ORDERS) <= _rdp_curve(run, ORDERS) * (1 + 1e-12))
    for result in (search, plain):
        assert 2.0 * (1 - 5e-3) <= rdp_epsilon(result.selection_dp_event_, 1e-5) <= 2.0


def test_label_set_released_once_by_the_search():
    rng = np.random.default_rng(1)
    X = rng.uniform(-0.5, 0.5, size=(600, 3))
    y = np.where(X[:, 0] > 0, "pos", "neg").astype(object)
    y[0] = "rare"  # held by one row: not released
    search = _search(estimator=DPLogisticRegression(max_iter=20)).fit(X, y)
    np.testing.assert_array_equal(search.classes_, ["neg", "pos"])
    assert list(search.best_estimator_.classes) == ["neg", "pos"]
    # 20% of epsilon and half of delta for the labels; the refit takes half of
    # the rest, the validation count (5% of the rest) and the runs the other half.
    # The runs and their refit share the delta the count leaves them (the
    # runs may be skipped): half each.
    label, rest = search.selection_dp_event_.events
    assert label == ApproximateDpEvent(0.4, 5e-6, "label set")
    runs_delta = search.selection_privacy_spent_[1] - 5e-6
    assert 0.25 * 5e-6 <= 2 * runs_delta < 5e-6
    assert search.selection_privacy_spent_ == pytest.approx((0.4 + 0.8, 5e-6 + runs_delta))
    assert rest.events[0].noise_multiplier == pytest.approx(1.0 / 0.08)
    assert search.best_estimator_.privacy_spent_ == pytest.approx((0.8, runs_delta))
    assert search.privacy_spent_ == pytest.approx((2.0, 1e-5))
    # The count (pure 0.08-DP) and the runs meet their part of what the label
    # release leaves: the runs alone meet the rest under RDP ...
    assert _rdp_epsilon_by_hand(rest, runs_delta) <= 0.8
    runs_alone = dpe.ComposedDpEvent(rest.events[1:])
    assert 0.72 * (1 - 5e-3) <= _rdp_epsilon_by_hand(runs_alone, runs_delta) <= 0.72
    # ... and the whole selection by basic composition with the label release.
    assert epsilon_of_event(search.selection_dp_event_, 5e-6 + runs_delta) <= 1.2 * (1 + 1e-9)
    # One label release in the whole search: the runs and the refit get it as public.
    with trace_releases() as trace:
        _search(estimator=DPLogisticRegression(max_iter=20)).fit(X, y)
    assert [r.label for r in trace.releases].count("label set") == 1


def test_label_release_needs_a_mechanism_independent_of_the_class_count(monkeypatch):
    X, y = _data()
    planned = planning_module._plan_candidate

    def by_class_count(candidate, *args, **kwargs):
        event, solver = planned(candidate, *args, **kwargs)
        extra = [dpe.GaussianDpEvent(100.0)] * (len(candidate.classes) - 2)
        return dpe.ComposedDpEvent([event, *extra]), solver

    monkeypatch.setattr(planning_module, "_plan_candidate", by_class_count)
    monkeypatch.setattr(planning_module, "_PLAN_CACHE", {})
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    with pytest.raises(ValueError, match="number of classes"):
        _search(estimator=DPLogisticRegression(max_iter=20), budget=budget).fit(X, y)
    assert budget.ledger == []


# --------------------------------------------------------------------------
# Protocol: charge before touching, one entry each, nothing escapes
# --------------------------------------------------------------------------


def test_reservations_precede_every_release_and_sample():
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    seen = []
    original = budget.reserve

    def reserve(*args, **kwargs):
        seen.append(len(trace.releases) + len(trace.samples))
        return original(*args, **kwargs)

    budget.reserve = reserve
    with trace_releases() as trace:
        search = _search(budget=budget).fit(X, y)
    # One entry for the whole search (the selection and the refit), reserved
    # before anything is read.
    assert seen == [0]
    ledger = budget.ledger
    assert [(e.estimator, e.status) for e in ledger] == [("DPGridSearchCV", "completed")]
    assert (ledger[0].epsilon, ledger[0].delta) == search.privacy_spent_
    assert ledger[0].event == search.dp_event_
    assert search.dp_event_ == dpe.ComposedDpEvent(
        [search.selection_dp_event_, search.best_estimator_.dp_event_]
    )
    assert budget.spent == pytest.approx(search.privacy_spent_)
    # The runs spend nothing on the ledger: their cost is in the selection's event.
    assert trace.samples[0].kind == "allocation"
    labels = [r.label for r in trace.releases]
    assert labels[0] == "validation row count"
    assert labels.count("validation score") >= 1


def test_refused_search_touches_nothing():
    X, y = _data()
    budget = PrivacyBudget(1.5, 1e-4, composition="basic")
    with trace_releases() as trace:
        with pytest.raises(BudgetExceededError):
            _search(budget=budget).fit(X, y)
    assert budget.ledger == [] and trace.releases == [] and trace.samples == []
    zcdp = PrivacyBudget(10.0, 1e-4, composition="zcdp")
    with trace_releases() as trace, pytest.raises(ValueError, match="zCDP"):
        _search(budget=zcdp).fit(X, y)
    assert zcdp.ledger == [] and trace.releases == [] and trace.samples == []


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(param_grid={"epsilon": [0.5, 1.0]}), "cannot be searched"),
        (dict(param_grid={"C": [1.0], "random_state": [0]}), "cannot be searched"),
        (dict(param_grid={"solver": ["objective_perturbation"]}), "Renyi-DP"),
        (
            dict(estimator=DPLogisticRegression(classes=[0, 1], solver="dp_sgd", batch_size=20)),
            "row count",
        ),
        (dict(param_grid={"C": [1.0], "not_a_parameter": [1]}), "Invalid parameter"),
        (dict(param_grid={"C": [-1.0]}), "C"),
        (dict(epsilon=0.01, n_candidates=1000), "too small"),
        (dict(scoring="neg_mean_absolute_error"), "does not fit"),
    ],
)
def test_public_errors_before_any_spend(kwargs, match):
    X, y = _data()
    budget = PrivacyBudget(50.0, 1e-3, composition="basic")
    with trace_releases() as trace, pytest.raises((ValueError, TypeError), match=match):
        _search(budget=budget, **kwargs).fit(X, y)
    assert budget.ledger == [] and trace.releases == [] and trace.samples == []


def test_non_dp_estimator_and_two_budgets_refused():
    from sklearn.linear_model import LogisticRegression

    X, y = _data()
    with pytest.raises(TypeError, match="sklearn_dp estimators"):
        DPGridSearchCV(LogisticRegression(), GRID, epsilon=1.0).fit(X, y)
    inner = DPLogisticRegression(
        classes=[0, 1], max_iter=20, budget=PrivacyBudget(5.0, 1e-4, composition="basic")
    )
    with pytest.raises(ValueError, match="different budgets"):
        _search(estimator=inner, budget=PrivacyBudget(5.0, 1e-4, composition="basic")).fit(X, y)
    # The estimator's budget is used when the search has none.
    search = _search(estimator=inner).fit(X, y)
    assert len(inner.budget.ledger) == 1
    assert search.best_estimator_.budget is inner.budget


def test_failed_runs_release_nothing_and_a_failed_selection_stays_charged():
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    # A step size that diverges: every run raises ConvergenceError (public
    # inside the run), which the search must not show.
    diverging = DPLogisticRegression(
        classes=[0, 1], max_iter=20, learning_rate=1e30, solver="dp_gd"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="returned no candidate") as caught:
            _search(estimator=diverging, budget=budget).fit(X, y)
    assert "diverged" not in str(caught.value)
    # The search's one entry (the selection and the refit) stays charged.
    assert [(e.status, e.error) for e in budget.ledger] == [("failed", "RuntimeError")]


def test_runs_warn_nothing_and_print_nothing():
    # delta above 1/n: every candidate fit defers a weak-delta warning.
    X, y = _data(n=60)
    stream = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(stream):
        warnings.simplefilter("always")
        estimator = DPLogisticRegression(classes=[0, 1], max_iter=20, verbose=2)
        search = _search(estimator=estimator, delta=0.05, refit=False, verbose=0).fit(X, y)
    assert caught == [] and stream.getvalue() == ""
    assert search.best_estimator_.verbose == 2


def test_number_of_runs_is_not_observable():
    X, y = _data()
    runs, shapes = [], set()
    for seed in range(6):
        with trace_releases() as trace:
            search = _search(random_state=seed, refit=False).fit(X, y)
        runs.append(sum(r.label == "validation score" for r in trace.releases))
        public = {k: v for k, v in vars(search).items() if k.endswith("_")}
        shapes.add(tuple(sorted(public)))
        assert [len(v) for v in search.cv_results_.values()] == [3] * len(search.cv_results_)
        assert np.sum(np.isfinite(search.cv_results_["mean_test_score"])) == 1
    assert len(set(runs)) > 1  # K varies with the seed ...
    assert len(shapes) == 1  # ... and nothing fitted says so.


def _library_caches():
    """Every cached function of the package (anything with ``cache_clear``)."""
    import importlib
    import pkgutil

    import sklearn_dp

    found = {}
    for info in pkgutil.walk_packages(sklearn_dp.__path__, "sklearn_dp."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if callable(getattr(value, "cache_clear", None)) and getattr(
                value, "__module__", ""
            ).startswith("sklearn_dp"):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return found


def _cache_state(function):
    """What anyone in the process can read off a cache: statistics, entries and their order."""
    state = []
    if hasattr(function, "cache_info"):
        state.append(tuple(function.cache_info()))
    for cell in getattr(function, "__closure__", None) or ():
        try:
            contents = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(contents, dict):
            state.append(tuple(contents))
    return state


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd", "dp_cd", "pipeline"])
def test_number_of_runs_is_not_readable_from_the_caches(monkeypatch, solver):
    """Searches of 1 run and of 6 runs leave the package's caches as they found them.

    The runs use the calibrations the search planned publicly (before the
    data): a repeated search only looks them up, and a lookup must leave no
    trace (no hit counts, no reordering).
    """
    X, y = _data()
    caches = _library_caches()
    assert caches  # the calibrations are cached
    for function in caches.values():
        function.cache_clear()
    states = []
    for n_runs in (3, 1, 6):  # the first one fills the caches
        monkeypatch.setattr(runs_module, "draw_number_of_runs", lambda *args, n=n_runs: n)
        if solver == "pipeline":
            estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5))
            grid = {"dplogisticregression__C": GRID["C"]}
        else:
            estimator = DPLogisticRegression(classes=[0, 1], solver=solver, max_iter=5)
            grid = GRID
        search = DPGridSearchCV(estimator, grid, epsilon=2.0, refit=False, random_state=0)
        with trace_releases() as trace:
            search.fit(X, y)
        # The runs and the default candidate's own run (C=1 is in the grid).
        assert sum(r.label == "validation score" for r in trace.releases) == n_runs + 1
        states.append({name: _cache_state(function) for name, function in caches.items()})
    assert states[0] == states[1] == states[2]


def test_released_models_do_not_hold_the_secret_generator():
    X, y = _data()
    for refit in (True, False):
        search = _search(refit=refit).fit(X, y)
        assert search.best_estimator_.random_state is None
        assert search.best_estimator_.budget is None
        estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5, random_state=3))
        search = _search(estimator=estimator, param_grid=PIPELINE_GRID, refit=refit).fit(X, y)
        steps = search.best_estimator_.named_steps
        assert steps["dpstandardscaler"].random_state is None
        assert steps["dplogisticregression"].random_state == 3


# --------------------------------------------------------------------------
# Substitution over a search
# --------------------------------------------------------------------------


def _observe_search(search, X, y, groups=None):
    stream = io.StringIO()
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with trace_releases(substitute=_Substitute([0, 1])) as trace:
            with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
                try:
                    search.fit(X, y, **({} if groups is None else dict(groups=groups)))
                except Exception as exc:
                    error = (type(exc).__name__, str(exc))
    attributes = {}
    if error is None:
        for key, value in vars(search).items():
            if key.endswith("_") and not key.startswith("_") and not key.endswith("time_"):
                if key == "best_estimator_":
                    steps = getattr(value, "steps", [("model", value)])
                    value = {
                        name: {k: v for k, v in vars(step).items() if k.endswith("_")}
                        for name, step in steps
                    }
                    value["params"] = repr(search.best_estimator_)
                attributes[key] = value
    return dict(
        attributes=attributes,
        printed=_TIME.sub("(t)", stream.getvalue()),
        error=error,
        trace=trace,
        warnings=[(type(w.message).__name__, str(w.message)) for w in caught],
    )


HOSTILE_ROWS = {
    "huge": lambda d: np.full(d, 1e12),
    "tiny": lambda d: np.full(d, 1e-300),
    "subnormal": lambda d: np.full(d, 5e-324),
    "zero": lambda d: np.zeros(d),
    "at-bound": lambda d: np.eye(d)[0],
}


def _search_pair(
    kind,
    refit,
    classes,
    search_class=DPGridSearchCV,
    solver="dp_gd",
    pipeline=False,
    scaler=None,
    **options,
):
    X, y = _data(n=40)
    row = HOSTILE_ROWS[kind](3)[None, :]
    # With a released label set, the hostile row holds a label no other row has.
    X_prime, y_prime = np.vstack([X, row]), np.append(y, 1 if classes else 7)
    estimator = DPLogisticRegression(classes=classes, max_iter=5, verbose=2, solver=solver)
    space = GRID if search_class is DPGridSearchCV else {"C": [0.1, 1.0, 10.0]}
    if pipeline:
        estimator = _pipeline(estimator, scaler)
        space = {f"dplogisticregression__{k}": v for k, v in space.items()}
    base = dict(epsilon=2.0, delta=1e-5, random_state=0, refit_fraction=0.5)
    base.update(options)
    return [
        _observe_search(
            search_class(estimator, space, refit=refit, verbose=1, budget=_twin_budget(), **base),
            Xi,
            yi,
        )
        for Xi, yi in ((X, y), (X_prime, y_prime))
    ]


def _twin_budget():
    """A fresh budget with a fixed identity: a seeded search charged to it draws the same
    public randomness (split, number of runs, candidates) in both worlds, as the
    substitution test needs (charged seeds are keyed with the budget's identity)."""
    budget = PrivacyBudget(5, 1e-4, composition="basic")
    budget._uuid = "substitution-twin"
    return budget


def _assert_same_search(a, b):
    assert a["error"] is None and b["error"] is None, (a["error"], b["error"])
    assert a["warnings"] == b["warnings"]
    assert a["printed"] == b["printed"]
    _assert_same(a["attributes"], b["attributes"])
    _check_sensitivities(a["trace"], b["trace"])
    assert sum(r.label == "validation score" for r in a["trace"].releases) >= 1


@pytest.mark.parametrize(
    "refit, classes",
    [(True, [0, 1]), (False, [0, 1]), (True, None)],
    ids=["refit", "no-refit", "labels-released"],
)
@pytest.mark.parametrize("kind", ["huge", "tiny"])
def test_substitution_over_a_search(kind, refit, classes):
    _assert_same_search(*_search_pair(kind, refit, classes))


@pytest.mark.parametrize(
    "refit, classes",
    [(True, [0, 1]), (False, [0, 1]), (True, None)],
    ids=["refit", "no-refit", "labels-released"],
)
@pytest.mark.parametrize("kind", ["huge", "tiny"])
def test_substitution_over_a_searched_pipeline(kind, refit, classes):
    """DP scaler ("auto" bounds), public steps and a DP estimator, searched: D and D' look the same."""
    _assert_same_search(*_search_pair(kind, refit, classes, pipeline=True))


@pytest.mark.parametrize("kind", ["huge", "tiny"])
def test_substitution_over_a_searched_pipeline_with_dppca(kind):
    """DPPCA ("auto" bound, fewer output columns than input ones) in place of the scaler."""
    scaler = DPPCA(2, epsilon=0.3, delta=2e-6)
    a, b = _search_pair(kind, True, [0, 1], pipeline=True, scaler=scaler)
    _assert_same_search(a, b)
    labels = [r.label for r in a["trace"].releases]
    # Every run and the refit release DPPCA's matrix.
    assert labels.count("second-moment matrix") == labels.count("validation score") + 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(HOSTILE_ROWS))
@pytest.mark.parametrize(
    "variant",
    [
        "refit",
        "no-refit",
        "labels-released",
        "poisson",
        "logarithmic",
        "randomized",
        "sgd",
        "pipeline",
        "randomized-pipeline",
    ],
)
def test_substitution_over_a_search_thorough(kind, variant):
    options = {
        "poisson": dict(distribution="poisson"),
        "logarithmic": dict(shape=0.0, n_candidates=4),
    }.get(variant, {})
    randomized = variant.startswith("randomized")
    search_class = DPRandomizedSearchCV if randomized else DPGridSearchCV
    if randomized:
        options["n_iter"] = 3
    pair = _search_pair(
        kind,
        refit=variant != "no-refit",
        classes=None if variant == "labels-released" else [0, 1],
        search_class=search_class,
        solver="dp_sgd" if variant == "sgd" else "dp_gd",
        pipeline=variant.endswith("pipeline"),
        **options,
    )
    _assert_same_search(*pair)


@pytest.mark.slow
def test_substitution_over_a_regression_search():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 3))
    y = np.clip(X @ np.array([1.0, -0.5, 0.2]), -1, 1)
    X_prime, y_prime = np.vstack([X, np.full((1, 3), 1e12)]), np.append(y, 1e300)
    observed = [
        _observe_search(
            DPGridSearchCV(
                DPSCORegressor(max_iter=5, y_bound=1.0),
                {"alpha": [1e-3, 1e-1]},
                epsilon=2.0,
                random_state=0,
                verbose=1,
            ),
            Xi,
            yi,
        )
        for Xi, yi in ((X, y), (X_prime, y_prime))
    ]
    _assert_same_search(*observed)


# --------------------------------------------------------------------------
# Searching a Pipeline
# --------------------------------------------------------------------------


def test_runs_leave_no_cache_entry_of_their_own(monkeypatch):
    """A key computed inside the runs (it can hold a run's released value) is not kept."""
    from sklearn_dp import _memo

    calls = []

    @_memo.memoize(maxsize=8)
    def calibrate(value):
        calls.append(value)
        return 2 * value

    assert calibrate(1) == 2  # a public key, computed outside the runs: kept
    with _memo.frozen():
        assert calibrate(1) == 2 and calibrate(3) == 6 and calibrate(3) == 6
    assert calls == [1, 3, 3]  # the hit read; the miss computed, not kept
    assert calibrate(3) == 6 and calls == [1, 3, 3, 3]
    # The search's runs run frozen: a search of 6 runs whose auto bounds set the
    # scales of later releases leaves the caches as one of 1 run does.
    X, y = _data()
    frozen_calls = []
    original = runs_module.frozen

    def spy():
        frozen_calls.append(1)
        return original()

    monkeypatch.setattr(runs_module, "frozen", spy)
    _search(refit=False).fit(X, y)
    assert frozen_calls == [1]


def test_frozen_caches_keep_nothing_computed_in_other_threads():
    """Threads started inside a search's runs (a threaded scheduler) do not write the caches."""
    import threading

    from sklearn_dp import _memo, accounting

    calls = []

    @_memo.memoize(maxsize=8)
    def calibrate(value):
        calls.append(value)
        return 2 * value

    pair = (dpe.GaussianDpEvent(3.21), dpe.GaussianDpEvent(4.32), 1e-6, 1e-3)
    accounting._PAIR_CACHE.clear()
    with _memo.frozen():
        worker = threading.Thread(
            target=lambda: (calibrate(5), accounting._cached_pair_epsilon(*pair))
        )
        worker.start()
        worker.join()
    assert not _memo.is_frozen()
    assert not accounting._PAIR_CACHE
    assert calibrate(5) == 10 and calls == [5, 5]  # the worker's miss was not kept
    accounting._cached_pair_epsilon(*pair)
    assert len(accounting._PAIR_CACHE) == 1  # outside the block, a public key is kept


def test_searched_pipeline_event_and_ledger_are_exact():
    """One entry for the whole search; the selection's and the refit's events rebuilt from the steps' plans."""
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    estimator = _pipeline(
        DPLogisticRegression(classes=[0, 1], max_iter=20, solver="dp_gd", data_norm=1.0)
    )
    search = _search(estimator=estimator, param_grid=PIPELINE_GRID, budget=budget).fit(X, y)
    ledger = budget.ledger
    assert [(e.estimator, e.status) for e in ledger] == [("DPGridSearchCV", "completed")]
    # The search's shares are those of a bare estimator's search: the runs
    # and their refit split evenly the delta the skip branch leaves them.
    runs_delta = search.selection_privacy_spent_[1]
    assert search.selection_privacy_spent_[0] == pytest.approx(0.1 + 0.9)
    assert 0.25 * 5e-6 <= runs_delta <= 5e-6
    assert (ledger[0].epsilon, ledger[0].delta) == search.privacy_spent_
    assert ledger[0].event == search.dp_event_

    def shares(epsilon, delta):
        # The user's proportions: 0.3 : 0.7 of epsilon, 2e-6 : 8e-6 of delta.
        scaler = (epsilon * 0.3 / math.fsum([0.3, 0.7]), delta * 2e-6 / math.fsum([2e-6, 8e-6]))
        return scaler, (epsilon - scaler[0], delta - scaler[1])

    # The selection, rebuilt from each candidate's steps planned at the run's share.
    scaler_share, model_share = shares(search.run_epsilon_, runs_delta)
    scaler_event = (
        DPStandardScaler(epsilon=scaler_share[0], delta=scaler_share[1])._fit_plan(X).event
    )
    events = []
    for C in PIPELINE_GRID["dplogisticregression__C"]:
        model = DPLogisticRegression(
            classes=[0, 1],
            max_iter=20,
            solver="dp_gd",
            data_norm=1.0,
            C=C,
            epsilon=model_share[0],
            delta=model_share[1],
        )
        events.append(dpe.ComposedDpEvent([scaler_event, model._fit_plan(X, y).event]))
    run, mechanism, multiplier = run_event(events, score_epsilon=1.0)
    assert mechanism == "gaussian"
    assert search.selection_dp_event_ == selection_event(
        run, 1.0 / (0.05 * 2.0), 10.0, 1.0, default_run=True
    )
    recomputed = _rdp_epsilon_by_hand(search.selection_dp_event_, runs_delta)
    assert recomputed <= search.selection_privacy_spent_[0]
    # The runs alone meet what the count (pure 0.1-DP) leaves, tightly.
    runs_alone = _rdp_epsilon_by_hand(
        dpe.ComposedDpEvent(search.selection_dp_event_.events[1:]), runs_delta
    )
    assert 0.9 * (1 - 5e-3) <= runs_alone <= 0.9
    # The refit: its share divided in the same proportions, its steps' events composed.
    refit = search.best_estimator_
    scaler, model = refit.named_steps["dpstandardscaler"], refit.named_steps["dplogisticregression"]
    (scaler_epsilon, scaler_delta), (model_epsilon, model_delta) = shares(1.0, runs_delta)
    assert scaler.privacy_spent_ == (scaler_epsilon, scaler_delta)
    assert model.privacy_spent_ == (model_epsilon, model_delta)
    assert search.dp_event_ == dpe.ComposedDpEvent(
        [search.selection_dp_event_, dpe.ComposedDpEvent([scaler.dp_event_, model.dp_event_])]
    )
    # The search's own spend covers everything, and vouches for the released
    # pipeline (its candidate and its share were chosen from the search's
    # releases).
    assert search.privacy_spent_ == (2.0, 1e-5)
    assert privacy_spent(refit) == search.privacy_spent_
    assert budget.spent == pytest.approx(search.privacy_spent_)


def test_searched_pipeline_reserves_before_any_release_and_fits_every_step_privately():
    X, y = _data()
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    seen = []
    original = budget.reserve

    def reserve(*args, **kwargs):
        seen.append(len(trace.releases) + len(trace.samples))
        return original(*args, **kwargs)

    budget.reserve = reserve
    estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5))
    with trace_releases() as trace:
        search = _search(
            estimator=estimator, param_grid=PIPELINE_GRID, budget=budget, n_candidates=3
        ).fit(X, y)
    assert seen == [0]
    labels = [r.label for r in trace.releases]
    runs = labels.count("validation score")
    # Every run and the refit fit the DP scaler on the private rows.
    assert labels.count("feature sums and sums of squares") == runs + 1
    assert search.best_estimator_.predict(X).shape == (N_ROWS,)


def test_searched_pipeline_with_public_steps_of_the_allow_list():
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, PolynomialFeatures

    X, y = _data()
    X = np.column_stack([X, np.arange(N_ROWS) % 3])
    encode = ColumnTransformer(
        [
            ("numbers", "passthrough", [0, 1, 2]),
            (
                "category",
                OneHotEncoder(categories=[[0.0, 1.0, 2.0]], handle_unknown="ignore"),
                [3],
            ),
        ],
        sparse_threshold=0,
    )
    # Fitted on a public row: the user's row-wise expansion, saturated at the float range.
    square = RowWiseTransformer(PolynomialFeatures(2).fit(np.zeros((1, 6))).transform)
    estimator = make_pipeline(
        encode,
        FunctionTransformer(),
        DPStandardScaler(epsilon=0.2, bounds=(-1.0, 1.0), with_mean=False),
        square,
        DPLogisticRegression(classes=[0, 1], max_iter=5, epsilon=0.8),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        search = _search(estimator=estimator, param_grid=PIPELINE_GRID).fit(X, y)
        assert privacy_spent(search.best_estimator_) == search.privacy_spent_
        # The search recorded the parameters it fitted the public steps with:
        # without its mark, the released model's own steps are vouched for.
        released = search.best_estimator_
        del released.__dict__["vouched_by_"]
        assert math.isfinite(privacy_spent(released)[0])
    assert search.best_estimator_.named_steps["dplogisticregression"].coef_.shape == (1, 28)


def _refused_pipelines():
    from sklearn.compose import ColumnTransformer
    from sklearn.frozen import FrozenEstimator
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import FunctionTransformer, OrdinalEncoder, StandardScaler

    other = PrivacyBudget(5.0, 1e-4, composition="basic")
    return {
        "not-on-the-allow-list": ([StandardScaler()], PIPELINE_GRID, "DPStandardScaler"),
        "unchecked-function": (
            [FunctionTransformer(np.log1p)],
            PIPELINE_GRID,
            "RowWiseTransformer",
        ),
        "frozen-off-the-allow-list": (
            [FrozenEstimator(StandardScaler().fit(np.zeros((2, 3))))],
            PIPELINE_GRID,
            "frozenestimator.estimator",
        ),
        "frozen-dp-step": (
            [FrozenEstimator(DPStandardScaler(epsilon=math.inf).fit(np.zeros((2, 3))))],
            PIPELINE_GRID,
            "outside the search's guarantee",
        ),
        "dp-step-in-a-container": (
            [ColumnTransformer([("s", DPStandardScaler(), [0, 1])], sparse_threshold=0)],
            PIPELINE_GRID,
            "top level",
        ),
        "density-dependent-output": (
            [ColumnTransformer([("s", "passthrough", [0])])],
            PIPELINE_GRID,
            "sparse_threshold",
        ),
        "non-private-dp-step": ([DPStandardScaler(epsilon=math.inf)], PIPELINE_GRID, "finite"),
        "non-private-estimator": (
            [DPStandardScaler(), DPLogisticRegression(classes=[0, 1], epsilon=math.inf)],
            PIPELINE_GRID,
            "finite",
        ),
        "searched-epsilon": (
            [DPStandardScaler()],
            {"dpstandardscaler__epsilon": [0.1, 1.0]},
            "cannot be searched",
        ),
        "step-replaced-by-the-grid": (
            [DPStandardScaler()],
            {"dpstandardscaler": [DPStandardScaler(), StandardScaler()]},
            "allow-list",
        ),
        "two-budgets": ([DPStandardScaler(budget=other)], PIPELINE_GRID, "different budgets"),
        "prints-per-run": (
            [ColumnTransformer([("s", "passthrough", [0])], sparse_threshold=0, verbose=True)],
            PIPELINE_GRID,
            "verbose",
        ),
        "unknown-category-as-nan": (
            [
                OrdinalEncoder(
                    categories=[[0.0, 1.0]],
                    handle_unknown="use_encoded_value",
                    unknown_value=np.nan,
                )
            ],
            PIPELINE_GRID,
            "non-finite",
        ),
        "cached-on-disk": (
            [make_pipeline(FunctionTransformer(), memory="unused-cache-directory")],
            PIPELINE_GRID,
            "memory",
        ),
        "last-step-not-private": (
            [DPStandardScaler(), LogisticRegression()],
            {"logisticregression__C": [1.0]},
            "must end in",
        ),
    }


@pytest.mark.parametrize("case", sorted(_refused_pipelines()))
def test_pipeline_step_off_the_allow_list_is_refused_before_any_spend(case):
    steps, grid, match = _refused_pipelines()[case]
    if case not in ("last-step-not-private", "non-private-estimator"):
        steps = [*steps, DPLogisticRegression(classes=[0, 1], max_iter=5)]
    X, y = _data()
    budget = PrivacyBudget(50.0, 1e-3, composition="basic")
    with trace_releases() as trace, pytest.raises((TypeError, ValueError), match=match):
        _search(estimator=make_pipeline(*steps), param_grid=grid, budget=budget).fit(X, y)
    assert budget.ledger == [] and trace.releases == [] and trace.samples == []


def test_steps_from_the_grid_are_neither_fitted_nor_seeded_in_place():
    """A step of the grid is copied for each run: the user's object keeps no run's stream or statistics."""
    X, y = _data()
    for refit in (True, False):
        from_grid = DPStandardScaler(epsilon=0.3, delta=2e-6, bounds=(-1.0, 1.0))
        estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5))
        search = _search(
            estimator=estimator, param_grid={"dpstandardscaler": [from_grid]}, refit=refit
        ).fit(X, y)
        assert from_grid.random_state is None and from_grid.epsilon == 0.3
        assert not hasattr(from_grid, "mean_")
        released = search.best_estimator_.named_steps["dpstandardscaler"]
        assert released is not from_grid and released.random_state is None


def test_plan_cache_key_spells_out_every_step():
    """Pipelines that differ deep inside never share a cached plan; frozen steps are never cached."""
    from sklearn.compose import ColumnTransformer
    from sklearn.frozen import FrozenEstimator
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures

    def encoded(last_category):
        categories = [[float(i) for i in range(200)] + [last_category]]
        encode = ColumnTransformer(
            [("c", OneHotEncoder(categories=categories, handle_unknown="ignore"), [0])],
            sparse_threshold=0,
        )
        return _pipeline(DPLogisticRegression(classes=[0, 1]), scaler=encode)

    # Their reprs are abbreviated to the same text; their keys are not.
    assert repr(encoded(500.0)) == repr(encoded(501.0))
    settings = planning_module._settings
    assert settings(encoded(500.0)) != settings(encoded(501.0))
    frozen = make_pipeline(
        FrozenEstimator(PolynomialFeatures(2).fit(np.zeros((1, 3)))),
        DPLogisticRegression(classes=[0, 1]),
    )
    assert planning_module._holds_fitted_state(frozen)
    assert not planning_module._holds_fitted_state(encoded(500.0))


# --------------------------------------------------------------------------
# Row-wise splitter
# --------------------------------------------------------------------------


def test_rowwise_folds_keep_neighbours_neighbours():
    X, _ = _data(n=500)
    folds = RowwiseKFold(n_splits=5, random_state=3)
    base = folds.folds(X)
    plus_one = folds.folds(np.vstack([X, np.ones((1, 3))]))
    # Every row of D stays in its fold; the added row is in exactly one.
    np.testing.assert_array_equal(plus_one[:-1], base)
    splits = list(folds.split(X))
    assert len(splits) == folds.get_n_splits() == 5
    for (train, test), k in zip(splits, range(5)):
        assert np.intersect1d(train, test).size == 0
        assert train.size + test.size == 500
        np.testing.assert_array_equal(test, np.flatnonzero(base == k))
    # Fold sizes are random (Binomial), not n / 5.
    sizes = np.bincount(base, minlength=5)
    assert sizes.sum() == 500 and len(set(sizes.tolist())) > 1
    # A fresh draw per call without a seed; the same with an int seed.
    np.testing.assert_array_equal(RowwiseKFold(5, random_state=3).folds(X), base)
    assert not np.array_equal(RowwiseKFold(5).folds(X), RowwiseKFold(5).folds(X))


def test_kfold_moves_rows_when_one_is_added():
    # Why KFold is not enough: its folds are cut from positions and n.
    X, _ = _data(n=500)

    def fold_of(rows, **kwargs):
        out = np.empty(rows, dtype=int)
        for k, (_, test) in enumerate(KFold(5, **kwargs).split(np.zeros((rows, 1)))):
            out[test] = k
        return out

    moved = np.sum(fold_of(500) != fold_of(501)[:500])
    assert moved >= 4  # about one row per boundary
    moved = np.sum(
        fold_of(500, shuffle=True, random_state=0)
        != fold_of(501, shuffle=True, random_state=0)[:500]
    )
    assert moved > 100  # a new permutation: a quarter of the rows change fold


def test_rowwise_kfold_probabilities_and_validation():
    X, _ = _data(n=2000)
    folds = RowwiseKFold(2, fold_probabilities=[0.8, 0.2], random_state=0).folds(X)
    assert np.mean(folds == 1) == pytest.approx(0.2, abs=0.03)
    with pytest.raises(ValueError, match="sum to 1"):
        RowwiseKFold(2, fold_probabilities=[0.5, 0.6]).folds(X)
    with pytest.raises(ValueError):
        RowwiseKFold(1).folds(X)


def test_rowwise_kfold_in_a_leaky_grid_search_keeps_fold_fits_neighbours():
    from sklearn.model_selection import GridSearchCV

    X, y = _data()
    budget = PrivacyBudget(20.0, 1e-3, composition="basic")
    GridSearchCV(
        DPLogisticRegression(classes=[0, 1], max_iter=20, budget=budget, random_state=0),
        {"C": [0.1, 1.0]},
        cv=RowwiseKFold(3, random_state=0),
    ).fit(X, y)
    assert len(budget.ledger) == 2 * 3 + 1


# --------------------------------------------------------------------------
# The default candidate
# --------------------------------------------------------------------------


def test_default_candidate_is_what_the_estimator_fits_as_given():
    from sklearn.model_selection import ParameterGrid

    X_public, y_public = planning_module.stand_in(np.zeros((2, 3)), [0, 1])
    grid = [dict(p) for p in ParameterGrid({"C": [0.1, 1.0, 10.0], "max_iter": [3, 5, 10]})]

    def find(estimator, candidates=grid):
        return planning_module.default_candidate(
            estimator, candidates, {}, X_public, y_public, 1.0, 1e-5
        )

    # C=1 as set, max_iter left to the solver (dp_newton's 5 steps: the same plan).
    estimator = DPLogisticRegression(classes=[0, 1], data_norm=1.0)
    assert grid[find(estimator)] == {"C": 1.0, "max_iter": 5}
    assert grid[find(estimator.set_params(max_iter=10))] == {"C": 1.0, "max_iter": 10}
    # No candidate with the estimator's own C; two candidates that fit the same;
    # a parameter the estimator does not have: no default candidate.
    assert find(DPLogisticRegression(classes=[0, 1], data_norm=1.0, C=2.0)) is None
    assert find(estimator, [{"C": 1.0}, {"C": 1}]) is None
    assert find(estimator, [{"C": 1.0, "unknown": 1}]) is None


def test_evidence_threshold_is_the_chance_margin_of_the_best_run():
    from scipy import stats

    from sklearn_dp.model_selection._selection import evidence_threshold

    # One run: the difference of two draws of the noise.
    assert evidence_threshold(1.0, 1.0, "gaussian", 0.05) == pytest.approx(
        math.sqrt(2) * stats.norm.ppf(0.95), rel=1e-6
    )
    t = evidence_threshold(1.0, 1.0, "laplace", 0.05)
    # The difference of two Laplace(1) draws: P(D > t) = exp(-t) (2 + t) / 4.
    assert math.exp(-t) * (2 + t) / 4 == pytest.approx(0.05, rel=1e-6)
    # The best of a geometric number of runs (mean 10), by simulation.
    rng = np.random.default_rng(0)
    runs = rng.geometric(tnb_gamma(10.0, 1.0), size=200_000)
    best = stats.norm.ppf(rng.uniform(size=runs.size) ** (1.0 / runs))
    default = rng.normal(size=runs.size)
    margin = evidence_threshold(10.0, 1.0, "gaussian", 0.05)
    assert np.mean(best - default > margin) == pytest.approx(0.05, abs=0.003)
    # More runs, a larger margin; Poisson runs may be none at all.
    assert evidence_threshold(3.0, 1.0, "gaussian", 0.05) < margin
    assert evidence_threshold(10.0, math.inf, "gaussian", 0.05) > 0


def test_best_run_replaces_the_default_only_beyond_the_margin():
    keep = runs_module.keep_default_unless_beaten
    default = (1, "default model", 10.0)
    assert keep(None, default, 1, 3.0) is default  # no run, or every run failed
    assert keep((0, "model", 13.0), default, 1, 3.0) is default  # within the margin
    assert keep((0, "model", 13.5), default, 1, 3.0) == (0, "model", 13.5)
    assert keep((1, "model", 30.0), default, 1, 3.0) is default  # the default won
    assert keep((0, "model", 1.0), None, 1, 3.0) == (0, "model", 1.0)  # its run failed
    assert keep(None, None, 1, 3.0) is None


def test_search_keeps_the_default_unless_a_candidate_is_clearly_better():
    X, y = _data(n=3000)

    def search(grid, seed, **options):
        estimator = DPLogisticRegression(
            classes=[0, 1], max_iter=10, solver="dp_gd", data_norm=1.0, C=1e-4
        )
        return _search(estimator=estimator, param_grid=grid, random_state=seed, **options).fit(X, y)

    # C=1e-4 (the estimator's own) predicts one class (accuracy 0.52), C=1 fits
    # (0.93): found whenever a run draws it (no run does with probability 0.09).
    better = [search({"C": [1e-4, 1.0]}, seed).best_params_ for seed in range(4)]
    assert better.count({"C": 1.0}) >= 3
    # Equal candidates: the default stays.
    equal = [search({"C": [1e-4, 1.00001e-4]}, seed).best_params_ for seed in range(4)]
    assert equal == [{"C": 1e-4}] * 4
    # Without the default's run: the selection's event as before, the best run kept.
    plain = search({"C": [1e-4, 1.0]}, 0, prefer_default=False)
    assert len(plain.selection_dp_event_.events) == 2
    assert len(search({"C": [1e-4, 1.0]}, 0).selection_dp_event_.events) == 3


# --------------------------------------------------------------------------
# API
# --------------------------------------------------------------------------


def test_default_shares():
    X, y = _data()
    search = DPGridSearchCV(
        DPLogisticRegression(classes=[0, 1], max_iter=20),
        GRID,
        epsilon=2.0,
        delta=1e-5,
        random_state=0,
    ).fit(X, y)
    # 90% for the refit; the selection's 10% holds the validation count (a
    # fifth of it, below 5% of epsilon) and the runs.  Of delta, the runs and
    # their refit share what the count leaves them (the runs may be skipped).
    delta_sel = search.selection_privacy_spent_[1]
    branch_delta = delta_sel + search.best_estimator_.privacy_spent_[1]
    assert 0.25e-5 <= branch_delta <= 1e-5 * (1 + 1e-9)
    assert search.selection_privacy_spent_ == pytest.approx((0.04 + 0.16, 0.1 * branch_delta))
    assert search.selection_dp_event_.events[0].noise_multiplier == pytest.approx(1.0 / 0.04)
    assert search.best_estimator_.privacy_spent_ == pytest.approx((1.8, 0.9 * branch_delta))
    assert search.privacy_spent_ == (2.0, 1e-5)
    assert rdp_epsilon(search.selection_dp_event_, delta_sel) <= 0.2
    # The runs alone meet what the count leaves.
    runs_alone = dpe.ComposedDpEvent(search.selection_dp_event_.events[1:])
    assert 0.16 * (1 - 5e-3) <= rdp_epsilon(runs_alone, delta_sel) <= 0.16


def test_runs_cannot_separate_from_the_margin_and_the_released_count(monkeypatch):
    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    # A margin of 278 score-sum units (accuracy, range 1): the runs are
    # skipped below 4 * 278 validation rows.
    assert runs_module.runs_cannot_separate(278.0, 1000.0, 1.0)
    assert not runs_module.runs_cannot_separate(278.0, 1200.0, 1.0)
    # A negative released count counts as one row.
    assert runs_module.runs_cannot_separate(0.3, -50.0, 1.0)
    assert runs_module.SKIP_MARGIN_SHARE == 0.25


def test_runs_skipped_on_a_small_table_refit_the_default_with_what_the_count_leaves(monkeypatch):
    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    X, y = _data(n=100)
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    with trace_releases() as trace:
        search = _search(budget=budget).fit(X, y)
    # About 30 validation rows cannot show the margin the runs' epsilon
    # needs (tens of rows): no run, the default candidate refitted.
    assert search.runs_skipped_
    labels = [r.label for r in trace.releases]
    assert labels[0] == "validation row count" and "validation score" not in labels
    assert search.best_params_ == {"C": 1.0} and search.best_index_ == 1
    assert math.isnan(search.best_score_) and math.isnan(search.best_score_noise_)
    assert np.isnan(search.cv_results_["mean_test_score"]).all()
    # The count (pure 0.1-DP) is the selection; the refit gets the largest
    # epsilon whose composition with the count meets (2, 1e-5) under PLD.
    assert search.selection_privacy_spent_ == pytest.approx((0.1, 0.0))
    assert search.selection_dp_event_ == dpe.LaplaceDpEvent(10.0)
    refit = search.best_estimator_
    assert refit.privacy_spent_[1] == pytest.approx(1e-5)
    assert 1.95 < refit.privacy_spent_[0] < 2.0
    assert search.privacy_spent_ == pytest.approx((2.0, 1e-5))
    assert search.dp_event_ == dpe.ComposedDpEvent([dpe.LaplaceDpEvent(10.0), refit.dp_event_])
    assert epsilon_of_event(search.dp_event_, 1e-5) <= 2.0 * (1 + 1e-9)
    assert [(e.estimator, e.epsilon, e.status) for e in budget.ledger] == [
        ("DPGridSearchCV", pytest.approx(2.0), "completed")
    ]
    assert budget.ledger[0].event == search.dp_event_
    # No default candidate in the grid, or no refit: the runs always run.
    for options in ({"param_grid": {"C": [0.1, 10.0]}}, {"refit": False}):
        other = _search(**options).fit(X, y)
        assert not other.runs_skipped_ and not math.isnan(other.best_score_)


@pytest.mark.parametrize(
    "classes, pipeline",
    [([0, 1], False), (None, False), ([0, 1], True)],
    ids=["refit", "labels-released", "pipeline"],
)
@pytest.mark.parametrize("kind", ["huge", "tiny"])
def test_substitution_over_a_search_that_skips_its_runs(kind, classes, pipeline, monkeypatch):
    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    a, b = _search_pair(kind, True, classes, pipeline=pipeline)
    assert a["error"] is None and b["error"] is None, (a["error"], b["error"])
    assert a["attributes"]["runs_skipped_"] and b["attributes"]["runs_skipped_"]
    assert a["warnings"] == b["warnings"]
    assert a["printed"] == b["printed"]
    _assert_same(a["attributes"], b["attributes"])
    _check_sensitivities(a["trace"], b["trace"])


def _pld_accountant(event):
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=NEIGHBORING_RELATION, value_discretization_interval=1e-4
    )
    return accountant.compose(event)


def _pld_epsilon(event, delta):
    """Epsilon of ``event`` at ``delta`` by dp_accounting's own PLD accountant."""
    return _pld_accountant(event).get_epsilon(delta)


def _pld_delta(event, epsilon):
    """Delta of ``event`` at ``epsilon`` by dp_accounting's own PLD accountant."""
    return _pld_accountant(event).get_delta(epsilon)


@pytest.mark.parametrize("classes", [[0, 1], None], ids=["classes", "labels-released"])
def test_the_count_is_accounted_with_the_branch_it_picks(classes, monkeypatch):
    """Skipped runs: the count and the default's refit compose numerically, as in a fit.

    The default estimator composes its own count and steps the same way,
    so the skipping search's refit is within 0.5% of the default fit's
    noise at the same total epsilon (it was 2% with the count paid by basic
    composition).  Run or skipped, the search spends (epsilon, delta): the
    runs and their refit keep a delta below the curve of the default's
    refit at epsilon + epsilon_count.
    """
    from sklearn_dp.model_selection._selection import canonical_event, gaussian_part

    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    estimator = DPLogisticRegression(classes=classes, data_norm=1.0)
    grid = {"C": [0.1, 1.0, 10.0], "max_iter": [3, 5, 10]}
    epsilon, delta = 1.0, 1e-5
    label = (0.0, 0.0)
    if classes is None:
        from sklearn_dp._labels import label_epsilon
        from sklearn_dp.linear_model._base import LABEL_DELTA_FRACTION

        label = (label_epsilon(epsilon), LABEL_DELTA_FRACTION * delta)
    rest = (epsilon - label[0], delta - label[1])
    count_epsilon = 0.02 * rest[0]
    small = binary_data(n=150, half_width=0.5, noise=0.1)
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    search = DPGridSearchCV(
        estimator, grid, epsilon=epsilon, delta=delta, budget=budget, random_state=0
    ).fit(*small)
    assert search.runs_skipped_
    refit = search.best_estimator_
    refit_epsilon, refit_delta = refit.privacy_spent_
    assert refit_delta == pytest.approx(rest[1])
    # Better than basic composition ...
    assert refit_epsilon > rest[0] - count_epsilon + 0.5 * count_epsilon
    # ... and certified by dp_accounting's PLD accountant, with the count.
    count_event = (
        search.selection_dp_event_ if classes is not None else search.selection_dp_event_.events[1]
    )
    assert count_event.noise_multiplier == pytest.approx(1.0 / count_epsilon)
    composed = dpe.ComposedDpEvent([count_event, refit.dp_event_])
    assert _pld_epsilon(composed, rest[1]) <= rest[0] * (1 + 1e-9)
    if classes is not None:
        assert search.dp_event_ == composed
    # Within 0.5% of the default fit's noise at the same total epsilon.
    default = DPLogisticRegression(
        classes=[0, 1], data_norm=1.0, epsilon=rest[0], delta=rest[1], random_state=0
    ).fit(*small)
    sigma_default = gaussian_part(canonical_event(default.dp_event_))
    sigma_refit = gaussian_part(canonical_event(refit.dp_event_))
    assert sigma_default <= sigma_refit <= 1.005 * sigma_default
    assert search.privacy_spent_ == (epsilon, delta)
    assert [(e.epsilon, e.delta) for e in budget.ledger] == [
        (pytest.approx(epsilon), pytest.approx(delta))
    ]

    # On a large table the runs run: they and their refit keep the largest
    # delta for which the mixture of the two branches meets delta: what the
    # count composed with the skip branch's refit leaves of delta, plus the
    # refit's curve at rest + count (its own count and its steps: computed
    # exactly here).
    large = binary_data(n=20000, half_width=0.5, noise=0.1)
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    search = DPGridSearchCV(
        estimator, grid, epsilon=epsilon, delta=delta, budget=budget, random_state=0
    ).fit(*large)
    assert not search.runs_skipped_
    branch_delta = search.selection_privacy_spent_[1] - label[1]
    branch_delta += search.best_estimator_.privacy_spent_[1]
    own_count, steps = refit.dp_event_.events
    exact = laplace_gaussian_curve(
        own_count.noise_multiplier,
        gaussian_part(canonical_event(steps)),
        rest[0] + count_epsilon,
    )
    left = rest[1] - _pld_delta(composed, rest[0])
    assert 0 <= left < 0.1 * rest[1]
    assert branch_delta <= exact + left
    assert branch_delta == pytest.approx(exact + left, rel=5e-3)
    assert branch_delta > gaussian_curve(sigma_refit, rest[0] + count_epsilon)
    assert 0.6 * rest[1] < branch_delta < rest[1]
    # The epsilons add up by basic composition to what the count leaves.
    assert search.selection_privacy_spent_[0] + search.best_estimator_.privacy_spent_[
        0
    ] == pytest.approx(epsilon)
    assert search.privacy_spent_ == (epsilon, delta)
    assert [(e.epsilon, e.delta) for e in budget.ledger] == [
        (pytest.approx(epsilon), pytest.approx(delta))
    ]


def test_a_skippable_search_meets_its_guarantee_over_both_branches(monkeypatch):
    """The guarantee recomputed from the decomposition over the count's output.

    For neighbours, the search's delta at eps is the average over the count's
    output c of the picked branch's delta at eps - L(c), where the count's
    privacy loss L(c) lies in [-epsilon_count, epsilon_count].  Taking at
    each c the larger of the two branches' curves (the runs' branch by its
    (1 - epsilon_count, branch delta) guarantee, the refit's by
    dp_accounting's PLD accountant) and integrating over the Laplace count
    (an upper Riemann sum: the curves fall as eps - L(c) grows) bounds the
    search's delta, whichever branch each c picks.
    """
    from dp_accounting.pld import pld_privacy_accountant

    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    estimator = DPLogisticRegression(classes=[0, 1], data_norm=1.0)
    epsilon, delta, count_epsilon = 1.0, 1e-5, 0.02
    small = DPGridSearchCV(estimator, {"C": [0.1, 1.0]}, epsilon=epsilon, random_state=0)
    small.fit(*binary_data(n=150, half_width=0.5, noise=0.1))
    large = DPGridSearchCV(estimator, {"C": [0.1, 1.0]}, epsilon=epsilon, random_state=0)
    large.fit(*binary_data(n=20000, half_width=0.5, noise=0.1))
    assert small.runs_skipped_ and not large.runs_skipped_
    runs_epsilon = large.selection_privacy_spent_[0] - count_epsilon
    runs_epsilon += large.best_estimator_.privacy_spent_[0]
    runs_delta = large.selection_privacy_spent_[1] + large.best_estimator_.privacy_spent_[1]
    assert runs_epsilon == pytest.approx(epsilon - count_epsilon)
    accountant = pld_privacy_accountant.PLDAccountant(
        neighboring_relation=NEIGHBORING_RELATION, value_discretization_interval=1e-4
    )
    accountant.compose(small.best_estimator_.dp_event_)

    def bound(runs_delta):
        def worse_branch(shifted):
            runs = runs_delta if shifted >= runs_epsilon - 1e-12 else 1.0
            return max(runs, accountant.get_delta(shifted))

        # Laplace(0, b) against Laplace(1, b): L(c) = epsilon_count for c <= 0,
        # -epsilon_count for c >= 1, (1 - 2c) epsilon_count in between.
        scale = 1.0 / count_epsilon
        total = 0.5 * worse_branch(epsilon - count_epsilon)
        total += 0.5 * math.exp(-1.0 / scale) * worse_branch(epsilon + count_epsilon)
        edges = np.linspace(0.0, 1.0, 41)
        for low, high in zip(edges[:-1], edges[1:]):
            mass = 0.5 * (math.exp(-low / scale) - math.exp(-high / scale))
            total += mass * worse_branch(epsilon - (1.0 - 2.0 * low) * count_epsilon)
        return total

    assert bound(runs_delta) <= delta
    # With the whole delta, the runs' branch would break the guarantee.
    assert bound(delta) > delta


@pytest.mark.parametrize("refit", [True, False])
def test_the_released_model_is_vouched_for_by_the_whole_search(refit):
    """privacy_spent and privacy_report of best_estimator_ give the search's spend.

    Which candidate won, and the share the released model was fitted at,
    were chosen from the search's releases: the model's own fit share does
    not vouch for it.
    """
    import pickle

    from sklearn_dp import privacy_report

    X, y = _data()
    search = _search(refit=refit).fit(X, y)
    best = search.best_estimator_
    if refit:
        # The refit's own fit, at its share.
        assert best.privacy_spent_ != search.privacy_spent_
    else:
        # The selected run's model is the selection's output: never less.
        assert best.privacy_spent_ == search.privacy_spent_
        assert best.dp_event_ == search.dp_event_
    assert privacy_spent(best) == search.privacy_spent_
    report = privacy_report(best)
    assert (report["epsilon"], report["delta"]) == search.privacy_spent_
    assert report["vouched_by"] == "DPGridSearchCV"
    assert report["attack"]["basis"] == "epsilon-delta"
    from sklearn_dp.report import event_to_dict

    assert report["dp_event"] == event_to_dict(search.dp_event_)
    # It travels with the model, and composes with other steps.
    loaded = pickle.loads(pickle.dumps(best))
    assert privacy_spent(loaded) == search.privacy_spent_
    scaler = DPStandardScaler(epsilon=0.5, delta=1e-6, bounds=(-1.0, 1.0), random_state=0).fit(X)
    combined = make_pipeline(scaler, best)
    assert privacy_spent(combined) == pytest.approx(
        (search.privacy_spent_[0] + 0.5, search.privacy_spent_[1] + 1e-6)
    )
    # A fresh clone is unfitted and vouched for by nothing.
    from sklearn.base import clone

    assert "vouched_by_" not in vars(clone(best))


def test_a_released_model_fitted_again_or_changed_is_vouched_for_by_nothing():
    """The search's guarantee covers what it released, not what the model became.

    Nor does the changed model's own spend, which leaves out the selection
    that chose it: epsilon is reported as inf.
    """
    from sklearn_dp import privacy_report

    X, y = _data()
    best = _search().fit(X, y).best_estimator_
    best.set_params(epsilon=50.0).fit(X, y)
    assert best.privacy_spent_ == (50.0, best.delta)
    with pytest.warns(PrivacyLeakWarning, match="changed after the private search"):
        assert privacy_spent(best) == (float("inf"), 0.0)
    report = privacy_report(best)
    assert report["epsilon"] == "inf"
    # Not the curve of its own event, which leaves out the selection.
    assert report["attack"]["basis"] == "epsilon-delta"
    assert set(report["attack"]["true_positive_rates"]) == {1.0}
    best = _search().fit(X, y).best_estimator_
    best.coef_ = best.coef_ + 1.0
    with pytest.warns(PrivacyLeakWarning, match="changed after the private search"):
        assert privacy_spent(best) == (float("inf"), 0.0)

    estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5))
    search = _search(estimator=estimator, param_grid=PIPELINE_GRID, n_candidates=3).fit(X, y)
    released = search.best_estimator_
    assert privacy_spent(released) == search.privacy_spent_
    # A step swapped for a scikit-learn step that reads the data: checked, and refused.
    released.steps[0] = (released.steps[0][0], StandardScaler().fit(X))
    with pytest.warns(PrivacyLeakWarning, match="cannot be vouched for"):
        assert privacy_spent(released)[0] == float("inf")


@pytest.mark.parametrize("refit", [True, False])
def test_parameters_set_on_a_released_model_keep_the_search_s_guarantee(refit):
    """Only a change of the fitted state voids the search's record, not set_params."""
    X, y = _data()
    search = _search(refit=refit).fit(X, y)
    best = search.best_estimator_
    best.set_params(verbose=1, warm_start=True, epsilon=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert privacy_spent(best) == search.privacy_spent_


def test_a_warm_start_from_a_released_model_composes_the_search_s_guarantee():
    X, y = _data()
    budget = PrivacyBudget(100.0, 1e-3, composition="basic")
    search = _search(budget=budget).fit(X, y)
    best = search.best_estimator_
    best.set_params(warm_start=True, epsilon=0.5, delta=1e-6, budget=budget).fit(X, y)
    expected = (search.privacy_spent_[0] + 0.5, search.privacy_spent_[1] + 1e-6)
    assert best.privacy_spent_ == pytest.approx(expected)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert privacy_spent(best) == pytest.approx(expected)
    assert budget.spent == pytest.approx(expected)


def test_a_released_pipeline_is_vouched_for_by_the_whole_search():
    from sklearn_dp import privacy_report

    X, y = _data()
    estimator = _pipeline(DPLogisticRegression(classes=[0, 1], max_iter=5))
    search = _search(estimator=estimator, param_grid=PIPELINE_GRID, n_candidates=3).fit(X, y)
    best = search.best_estimator_
    assert privacy_spent(best) == search.privacy_spent_
    report = privacy_report(best)
    assert (report["epsilon"], report["delta"]) == search.privacy_spent_
    assert report["vouched_by"] == "DPGridSearchCV"
    # Its steps report their own fits.
    steps = report["steps"]
    assert sorted(steps) == ["dplogisticregression", "dpstandardscaler"]
    model = best.named_steps["dplogisticregression"]
    assert (steps["dplogisticregression"]["epsilon"], steps["dplogisticregression"]["delta"]) == (
        model.privacy_spent_
    )


@pytest.mark.parametrize("kind", ["huge", "tiny"])
def test_substitution_over_a_search_whose_count_composes_with_the_default_refit(kind, monkeypatch):
    """Skipped runs, the count composed with the default's refit numerically (plan_skip)."""
    monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    X, y = _data(n=40)
    X_prime, y_prime = np.vstack([X, HOSTILE_ROWS[kind](3)[None, :]]), np.append(y, 1)
    estimator = DPLogisticRegression(classes=[0, 1], data_norm=1.0, verbose=2)
    a, b = [
        _observe_search(
            DPGridSearchCV(
                estimator,
                {"C": [0.1, 1.0, 10.0]},
                epsilon=1.0,
                verbose=1,
                budget=_twin_budget(),
                random_state=0,
            ),
            Xi,
            yi,
        )
        for Xi, yi in ((X, y), (X_prime, y_prime))
    ]
    assert a["error"] is None and b["error"] is None, (a["error"], b["error"])
    assert a["attributes"]["runs_skipped_"] and b["attributes"]["runs_skipped_"]
    assert a["warnings"] == b["warnings"]
    assert a["printed"] == b["printed"]
    _assert_same(a["attributes"], b["attributes"])
    _check_sensitivities(a["trace"], b["trace"])
    # The refit took more than basic composition leaves (1 - 0.02).
    refit = a["attributes"]["best_estimator_"]["model"]
    assert refit["privacy_spent_"][0] > 0.99


def test_search_api_and_delegation():
    X, y = _data(n=1000)
    search = _search(budget=PrivacyBudget(2.0, 1e-5, composition="basic")).fit(X, y)
    best = search.best_estimator_
    assert search.best_params_ == search.cv_results_["params"][search.best_index_]
    assert best.C == search.best_params_["C"]
    assert 0.0 <= search.best_score_ <= 1.0
    np.testing.assert_array_equal(search.predict(X), best.predict(X))
    np.testing.assert_allclose(search.predict_proba(X), best.predict_proba(X))
    np.testing.assert_allclose(search.decision_function(X), best.decision_function(X))
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert search.score(X, y) == pytest.approx(np.mean(best.predict(X) == y))
    assert search.n_features_in_ == 3
    results = search.cv_results_
    assert list(results["param_C"]) == GRID["C"]
    assert results["rank_test_score"][search.best_index_] == 1
    assert results["selected"].sum() == 1
    assert search.scorer_ == "accuracy"
    # Accuracy of the tuned, refitted model on an easy problem.
    assert search.score(X, y) > 0.8
    # Reproducible with an int seed, without a budget (a charged seed is keyed
    # with the ledger entry: another budget, another search).
    first, again = (_search().fit(X, y) for _ in range(2))
    assert again.best_params_ == first.best_params_
    np.testing.assert_array_equal(again.best_estimator_.coef_, first.best_estimator_.coef_)
    other = _search(budget=PrivacyBudget(2.0, 1e-5, composition="basic")).fit(X, y)
    assert not np.array_equal(other.best_estimator_.coef_, best.coef_)


def test_refit_false_returns_the_selected_runs_model():
    X, y = _data()
    search = _search(refit=False).fit(X, y)
    model = search.best_estimator_
    assert model.epsilon == search.run_epsilon_
    assert not hasattr(search, "refit_time_")
    assert search.predict(X).shape == (N_ROWS,)


def test_randomized_search_draws_public_candidates():
    from scipy.stats import loguniform

    X, y = _data()
    kwargs = dict(n_iter=4, epsilon=2.0, random_state=5)
    estimator = DPLogisticRegression(classes=[0, 1], max_iter=20)
    a = DPRandomizedSearchCV(estimator, {"C": loguniform(1e-2, 1e2)}, **kwargs).fit(X, y)
    b = DPRandomizedSearchCV(estimator, {"C": loguniform(1e-2, 1e2)}, **kwargs).fit(X, y)
    assert len(a.cv_results_["params"]) == 4
    assert a.cv_results_["params"] == b.cv_results_["params"]
    assert a.best_params_ in a.cv_results_["params"]


def test_regression_search():
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(600, 3))
    y = np.clip(X @ np.array([1.0, -0.5, 0.2]), -1, 1)
    for estimator, grid in (
        (DPSCORegressor(max_iter=20, y_bound=1.0), {"alpha": [1e-3, 1e-1]}),
        (DPLasso(max_iter=20, y_bound=1.0), {"alpha": [0.01, 0.1]}),
    ):
        search = DPGridSearchCV(estimator, grid, epsilon=2.0, random_state=0).fit(X, y)
        assert search.scorer_ == "neg_mean_absolute_error"
        assert search.score_bound_ == 2.0 * estimator.y_bound
        assert -2.0 <= search.best_score_ <= 0.0
        assert search.predict(X).shape == (600,)
        assert rdp_epsilon(search.selection_dp_event_, 5e-6) <= 1.0
    search = DPGridSearchCV(
        DPSCORegressor(max_iter=20),
        {"alpha": [1e-3]},
        epsilon=2.0,
        random_state=0,
        scoring="neg_mean_squared_error",
        score_bound=0.5,
    ).fit(X, y)
    assert -0.25 <= search.best_score_ <= 0.0


def test_mismatched_mechanism_makes_a_run_output_nothing(monkeypatch):
    X, y = _data()
    planned = planning_module._plan_candidate

    def wrong_plan(*args, **kwargs):
        event, solver = planned(*args, **kwargs)
        # Same cost, another description: the runs' real events differ.
        return dpe.ComposedDpEvent([event, dpe.NoOpDpEvent()]), solver

    monkeypatch.setattr(planning_module, "_plan_candidate", wrong_plan)
    monkeypatch.setattr(planning_module, "_PLAN_CACHE", {})
    with pytest.raises(RuntimeError, match="returned no candidate"):
        _search(refit=False).fit(X, y)


# --------------------------------------------------------------------------
# scikit-learn conformance
# --------------------------------------------------------------------------

# Each entry: check name -> why it cannot pass for a private search.  None
# today: the checks run on every search below without expected failures (a
# classifier search with classes=None releases the label set once, as the
# estimators do, so the checks' own label sets are accepted).
EXPECTED_FAILURES: dict = {}


def _conformance_estimators():
    return [
        # The checks choose their label sets: the search releases it (classes=None).
        # delta=1e-3 puts the release threshold of the label set at 2.5 rows
        # (the checks fit on labels held by 3 rows).
        DPGridSearchCV(
            DPLogisticRegression(max_iter=10),
            {"C": [0.1, 1.0]},
            epsilon=100.0,
            delta=1e-3,
            n_candidates=3,
            random_state=0,
        ),
        DPGridSearchCV(
            DPSCORegressor(max_iter=10, y_bound=5.0, data_norm=5.0),
            {"alpha": [1e-3, 1e-1]},
            epsilon=50.0,
            n_candidates=3,
            random_state=0,
        ),
    ]


def _expected_failed(estimator):
    expected = dict(EXPECTED_FAILURES)
    if not is_classifier(estimator.estimator):
        # A search on zero rows runs after its charge (an empty data set is a
        # data set: its refusal would tell it from a one-row neighbour).  The
        # classifier search releases its label set, which on zero rows holds
        # fewer than two classes: a ValueError after the charge, as on one row.
        expected["check_estimators_empty_data_messages"] = (
            "a private search on zero rows runs after its charge instead of raising"
        )
    return expected


@parametrize_with_checks(_conformance_estimators(), expected_failed_checks=_expected_failed)
def test_sklearn_conformance(estimator, check):
    check(estimator)


# --------------------------------------------------------------------------
# Statistical audit (slow)
# --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "refit, skip", [(True, False), (False, False), (True, True)], ids=["refit", "no-refit", "skip"]
)
def test_audit_of_a_search(refit, skip, monkeypatch):
    """A lower bound on the whole search's epsilon, with a canary only it can move.

    D: 40 rows whose last feature is 0; D': plus a canary with that feature
    at the row bound and label 1.  The statistic is the released model's
    coefficient on that feature (the refit's, or the selected run's), which
    only the canary moves.  The bound must stay below the claim.  The
    candidates run dp_gd with a public row bound: the default solver
    (dp_newton) divides its gradient noise by a floored curvature in the
    empty feature's direction, which swamps the canary's coefficient at any
    epsilon and leaves the power control nothing to catch.
    """
    from sklearn_dp.testing import audit_mechanism

    if skip:
        # The shipped rule: on 40 rows the runs are skipped and the refit
        # takes their share.
        monkeypatch.setattr(runs_module, "SKIP_MARGIN_SHARE", SKIP_MARGIN_SHARE)
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-0.5, 0.5, size=(40, 2)), np.zeros(40)])
    y = (X[:, 0] > 0).astype(int)
    canary = np.array([[0.0, 0.0, 1.0]])
    X_prime, y_prime = np.vstack([X, canary]), np.append(y, 1)

    def audit(epsilon, claimed):
        def run(with_canary, seed):
            search = DPGridSearchCV(
                DPLogisticRegression(classes=[0, 1], max_iter=5, solver="dp_gd", data_norm=1.0),
                {"C": [1.0, 10.0]},
                epsilon=epsilon,
                delta=1e-5,
                n_candidates=3,
                refit=refit,
                random_state=seed,
            )
            search.fit(X_prime, y_prime) if with_canary else search.fit(X, y)
            if epsilon == claimed:
                # (The power control's runs, at epsilon 50, are not skipped.)
                assert search.runs_skipped_ == skip
            return float(search.best_estimator_.coef_.ravel()[2])

        return audit_mechanism(run, claimed_epsilon=claimed, delta=1e-5, n_runs=300)

    result = audit(1.0, 1.0)
    assert result.consistent, result
    # Power control: a search at epsilon=50 claiming 1 is caught by this audit.
    assert not audit(50.0, 1.0).consistent


def test_docstring_examples_run():
    import doctest

    from sklearn_dp.model_selection import _split

    for module in (search_module, _split):
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried > 0 and failures == 0, module.__name__


# --------------------------------------------------------------------------
# A candidate refused while planning spends nothing
# --------------------------------------------------------------------------


def test_frank_wolfe_penalty_ball_refusal_precedes_any_spend_in_a_search():
    """DPGridSearchCV over alpha: a candidate on the implied ball is refused while planning."""
    X, y = regression_data(500, 5, coef=np.linspace(0.5, -0.5, 5))
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    search = DPGridSearchCV(
        DPLasso(solver="frank_wolfe", max_iter=5, y_bound=1.0, feature_bound=1.0),
        {"alpha": [0.1, 1.0]},
        epsilon=1.0,
        delta=1e-5,
        budget=budget,
        random_state=0,
    )
    with pytest.raises(ValueError, match="ball its penalty implies"):
        search.fit(X, y)
    assert budget.ledger == []


# --------------------------------------------------------------------------
# Group-level searches: D and D plus one hostile group of max_group_rows rows
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "refit, classes, pipeline",
    [(True, [0, 1], False), (False, [0, 1], False), (True, None, False), (True, [0, 1], True)],
    ids=["refit", "no-refit", "labels-released", "pipeline"],
)
def test_substitution_over_a_search_with_hostile_groups(refit, classes, pipeline):
    k = 3
    X, y = _data(n=40)
    groups = np.arange(40) % 9  # groups of 4 or 5 rows: some rows are dropped
    # The hostile group's label sorts after every other (groups draw their
    # parts in label order, so the other groups keep their draws), and its
    # rows are spread through the data.
    at = [0, 20, 40]
    X_prime = np.insert(X, at, np.full(3, 1e12), axis=0)
    y_prime = np.insert(y, at, 1 if classes else 7)
    groups_prime = np.insert(groups, at, 999)
    estimator = DPLogisticRegression(classes=classes, max_iter=5, verbose=2, solver="dp_gd")
    space = GRID
    if pipeline:
        estimator = _pipeline(estimator)
        space = PIPELINE_GRID
    a, b = (
        _observe_search(
            DPGridSearchCV(
                estimator,
                space,
                refit=refit,
                verbose=1,
                budget=_twin_budget(),
                epsilon=2.0,
                delta=1e-5,
                random_state=0,
                refit_fraction=0.5,
                max_group_rows=k,
            ),
            Xi,
            yi,
            gi,
        )
        for Xi, yi, gi in ((X, y, groups), (X_prime, y_prime, groups_prime))
    )
    _assert_same_search(a, b)
    assert a["attributes"]["max_group_rows_"] == k
    # The split is by group: every group's kept rows are in one part.
    (allocation,) = [s for s in a["trace"].samples if s.kind == "allocation"]
    kept = groups[kept_group_rows(groups, k)]
    for group in np.unique(kept):
        assert np.unique(allocation.output[kept == group]).size == 1


def test_search_refuses_a_candidate_solver_without_groups_before_the_spend():
    X, y = _data(n=40)
    budget = PrivacyBudget(5, 1e-4, composition="basic")
    search = _search(
        estimator=DPLogisticRegression(classes=[0, 1], solver="dp_sgd"),
        budget=budget,
        max_group_rows=2,
    )
    with pytest.raises(ValueError, match="does not support groups"):
        search.fit(X, y, groups=np.arange(40) % 7)
    with pytest.raises(ValueError, match="needs max_group_rows"):
        _search(budget=budget).fit(X, y, groups=np.arange(40) % 7)
    assert budget.ledger == []


# --------------------------------------------------------------------------
# Tiny and empty data: a run on an empty training part is a fit on no rows
# --------------------------------------------------------------------------


@pytest.mark.parametrize("n_rows", [0, 1])
@pytest.mark.parametrize("pipeline", [False, True], ids=["estimator", "pipeline"])
def test_search_on_tiny_data_never_fails_on_an_empty_training_part(n_rows, pipeline):
    """Whether a search raises never depends on the row count (an empty part is a data set).

    With one row, about 3 searches in 10 leave the training part empty: 12
    searches meet one with probability above 98%.
    """
    X, y = _data()
    X, y = X[:n_rows], y[:n_rows]
    estimator = DPLogisticRegression(classes=[0, 1], max_iter=3, solver="dp_gd")
    grid = {"C": [0.1, 1.0]}
    if pipeline:
        estimator = _pipeline(estimator)
        grid = {"dplogisticregression__C": [0.1, 1.0]}
    for _ in range(12 if n_rows else 2):
        budget = PrivacyBudget(10.0, 1e-4, composition="basic")
        search = DPGridSearchCV(
            estimator, grid, epsilon=1.0, prefer_default=False, n_candidates=2, budget=budget
        ).fit(X, y)
        assert search.best_estimator_.n_features_in_ == 3
        assert [entry.status for entry in budget.ledger] == ["completed"]
