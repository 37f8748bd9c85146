"""Group-level privacy: ``fit(X, y, groups=...)`` with ``max_group_rows``.

The unit of privacy becomes one group of at most k rows: each group keeps its
first k rows, and the noise gateway multiplies every release's sensitivity
and noise by k (``sklearn_dp._noise.contribution_bound``).  The substitution
test with whole hostile groups is in ``tests/test_substitution.py``.
"""

from __future__ import annotations

import contextlib
import math
import threading
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from sklearn.base import clone

from sklearn_dp import (
    DPLasso,
    DPLogisticRegression,
    DPSCORegressor,
    PrivacyBudget,
    _noise,
    privacy_report,
)
from sklearn_dp._protocol import (
    COUNT_EPSILON_FRACTION,
    COUNT_UPPER_SCALES,
    GROUP_SOLVERS,
    group_codes,
    kept_group_rows,
    release_count,
)
from sklearn_dp.solvers import SOLVERS, dp_newton, dp_ssp
from sklearn_dp.testing import trace_releases


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    y = (X[:, 0] + 0.1 * rng.normal(size=n) > 0).astype(int)
    groups = rng.integers(0, n // 4, size=n)
    return X, y, groups


# -- which rows a group keeps ------------------------------------------------------


def test_each_group_keeps_its_first_rows_in_input_order():
    groups = np.array(["b", "a", "b", "b", "c", "a", "b", "a", "a"])
    assert kept_group_rows(groups, 2).tolist() == [0, 1, 2, 4, 5]
    assert kept_group_rows(groups, 4) is None  # every row kept: no copy
    assert kept_group_rows(groups, 1).tolist() == [0, 1, 4]


def test_adding_a_group_leaves_the_other_groups_rows_unchanged():
    rng = np.random.default_rng(1)
    groups = rng.integers(0, 10, size=60)
    kept = kept_group_rows(groups, 3)
    at = [0, 17, 30, 31, 60]
    more = np.insert(groups, at, 99)
    kept_more = kept_group_rows(more, 3)
    original = np.delete(np.arange(more.size), np.searchsorted(np.arange(more.size), []))
    # Map the kept rows of the larger set back to the original positions.
    is_new = np.zeros(more.size, dtype=bool)
    is_new[np.array(at) + np.arange(len(at))] = True
    positions = np.cumsum(~is_new) - 1
    back = positions[kept_more[~is_new[kept_more]]]
    assert back.tolist() == kept.tolist()
    assert is_new[kept_more].sum() == 3
    assert original.size == more.size


@pytest.mark.parametrize(
    "groups, codes",
    [
        (np.array([1.0, np.nan, 1.0, np.nan, 1.0]), [0, 1, 0, 1, 0]),
        (np.array([np.nan, 2.0, -0.0, 0.0, np.nan]), [2, 1, 0, 0, 2]),
        (np.array([1j, complex(np.nan, 0), complex(0, np.nan), 1j]), [0, 1, 1, 0]),
        (np.array(["2020-01-01", "NaT", "NaT", "2020-01-01"], dtype="M8[D]"), [0, 1, 1, 0]),
        (np.array(["b", "a", "b"]), [1, 0, 1]),
        (np.array([True, False, True]), [1, 0, 1]),
        (np.array([], dtype=float), []),
    ],
    ids=["float", "signed-zero", "complex", "datetime", "str", "bool", "empty"],
)
def test_group_codes_make_every_missing_id_one_group(groups, codes):
    assert group_codes(groups).tolist() == codes


def test_missing_ids_are_one_group_that_keeps_its_first_rows():
    groups = np.array([1.0, np.nan, 1.0, np.nan, 1.0, np.nan])
    assert kept_group_rows(groups, 1).tolist() == [0, 1]


@pytest.mark.parametrize(
    "groups",
    [
        [1.0, float("nan")] * 60,
        ["user"] * 119 + [None],
        ["user"] * 119 + [3],
        [float("nan")] * 120,
    ],
    ids=["object-nan", "str-none", "str-int", "all-nan"],
)
def test_object_group_ids_are_refused_before_the_spend(groups):
    # The dtype alone decides (public): object ids have no total order.
    X, y, _ = _data()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLogisticRegression(classes=[0, 1], max_group_rows=2, budget=budget)
    with pytest.raises(TypeError, match="Cast group ids to str or int"):
        model.fit(X, y, groups=np.array(groups, dtype=object))
    assert budget.ledger == []


def test_rowwise_kfold_refuses_object_group_ids():
    from sklearn_dp.model_selection import RowwiseKFold

    groups = np.array([1.0, float("nan")] * 10, dtype=object)
    with pytest.raises(TypeError, match="Cast group ids"):
        RowwiseKFold(n_splits=2, random_state=0).folds(np.zeros((20, 1)), groups)


def test_rowwise_kfold_keeps_rows_with_missing_ids_together():
    from sklearn_dp.model_selection import RowwiseKFold

    groups = np.where(np.arange(200) % 3 == 0, np.nan, np.arange(200) % 7)
    folds = RowwiseKFold(n_splits=4, random_state=0).folds(np.zeros((200, 1)), groups)
    assert np.unique(folds[np.isnan(groups)]).size == 1


# -- the gateway's multiplier: exact sensitivities and noise scales -----------------


@pytest.mark.parametrize("k", [1, 2, 5])
def test_gateway_multiplies_sensitivity_and_noise_by_the_group_bound(k):
    rng = np.random.default_rng(0)
    with trace_releases() as trace, _noise.contribution_bound(k):
        _noise.gaussian(np.ones(3), sensitivity=2.0, noise_std=6.0, rng=rng)
        _noise.laplace(1.0, sensitivity=1.0, scale=4.0, rng=rng)
        _noise.l2_laplace(np.ones(2), sensitivity=0.5, scale=3.0, rng=rng)
        _noise.exponential(np.arange(4.0), sensitivity=1.0, scale=2.0, rng=rng)
    got = [(r.mechanism, r.sensitivity, r.scale) for r in trace.releases]
    assert got == [
        ("gaussian", 2.0 * k, 6.0 * k),
        ("laplace", 1.0 * k, 4.0 * k),
        ("l2_laplace", 0.5 * k, 3.0 * k),
        ("exponential", 1.0 * k, 2.0 * k),
    ]
    # The ratio of noise to sensitivity (what the DpEvent records) is unchanged.
    for r in trace.releases:
        assert r.grid is None or r.grid.scale > 0


def test_gateway_returns_to_rows_after_a_group_fit():
    assert _noise.group_rows() == 1
    with _noise.contribution_bound(4):
        assert _noise.group_rows() == 4
        with _noise.contribution_bound(None):  # a row-level fit meanwhile
            assert _noise.group_rows() == 4  # never less noise for the group fit
    assert _noise.group_rows() == 1


def test_count_of_kept_rows_has_group_sensitivity():
    rng = np.random.default_rng(0)
    with trace_releases() as trace, _noise.contribution_bound(5):
        count = release_count(100, 0.5, rng)
    (release,) = trace.releases
    assert release.label == "row count"
    assert release.sensitivity == 5.0
    assert release.scale == 5.0 / 0.5
    # The event is the row-level one: Laplace of scale 1 / epsilon per unit.
    assert count.event == dpe.LaplaceDpEvent(1.0 / 0.5)
    # The upper bound's margin is in units of the noise actually added.
    assert count.normalizer == pytest.approx(count.estimate + COUNT_UPPER_SCALES * 5.0 / 0.5)


def _solver_details(solver, k, **options):
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import get_loss

    X, y, _ = _data(200)
    data = bound_data(X, 2.0 * y - 1.0, fit_intercept=True, data_norm=2.0)
    loss = get_loss("squared" if solver == "dp_ssp" else "log_loss")
    zero = lambda release: np.zeros_like(np.asarray(release.value, dtype=float))
    with trace_releases(substitute=zero), _noise.contribution_bound(k):
        result = (dp_ssp if solver == "dp_ssp" else dp_newton)(
            data, loss, n_outputs=1, alpha=0.0, epsilon=0.5, delta=1e-6, random_state=0, **options
        )
    return {**result.plan.details, **result.info.get("statistics", {})}


def test_adassp_ridge_covers_the_group_noise():
    # The released eigenvalue (substituted: 0) is below the noise; the ridge
    # is then RIDGE_SCALE sqrt(2 m) times the Gram noise actually added.
    row, group = (_solver_details("dp_ssp", k, label_bound=1.0) for k in (1, 4))
    assert group["ridge"] == pytest.approx(4 * row["ridge"], rel=1e-12)
    assert group["min_eigenvalue_lower"] == pytest.approx(4 * row["min_eigenvalue_lower"])


def test_newton_eigenvalue_floor_covers_the_group_noise():
    row, group = (_solver_details("dp_newton", k, floor_scale=1.0) for k in (1, 4))
    assert row["floor"] > 1e-6  # the noise term, not the relative floor, decides
    assert group["floor"] == pytest.approx(4 * row["floor"], rel=1e-12)


def test_label_histogram_threshold_covers_k_new_labels_of_one_group():
    # One group can add up to k labels no other row holds; the threshold
    # k T + k s log k keeps the chance that any is released at the row delta.
    scale, threshold, k = 2.0, 10.0, 4
    with trace_releases() as trace, _noise.contribution_bound(k):
        _noise.thresholded_histogram(
            np.array([0, 1]),
            np.array([100, 3]),
            scale=scale,
            threshold=threshold,
            rng=np.random.default_rng(0),
        )
    (release,) = trace.releases
    assert release.sensitivity == k
    assert release.scale == k * scale
    assert release.threshold == pytest.approx(k * threshold + k * scale * math.log(k))
    row_delta = math.exp(-(threshold - 1) / scale) / 2
    # k keys of count c_j (sum <= k): each released with probability
    # exp(-(T' - c_j) / (k s)) / 2 at most; the worst split sums below the row delta.
    for counts in ([k], [1] * k, [2, k - 2], [1, k - 1]):
        total = sum(math.exp(-(release.threshold - c) / release.scale) / 2 for c in counts if c > 0)
        assert total <= row_delta * (1 + 1e-12)


@pytest.mark.parametrize(
    "call",
    [
        lambda rng: _noise.poisson_sample(10, 0.5, rng),
        lambda rng: _noise.allocate_rows(10, [0.5, 0.5], rng),
        lambda rng: _noise.objective_perturbation(
            lambda b: b,
            shape=(2,),
            noise="gaussian",
            scale=1.0,
            coupling=1.0,
            sensitivity=1.0,
            rng=rng,
        ),
    ],
    ids=["poisson", "allocation", "objective"],
)
def test_row_level_samplers_refuse_a_group_unit(call):
    with _noise.contribution_bound(2), pytest.raises(RuntimeError, match="group"):
        call(np.random.default_rng(0))


@contextlib.contextmanager
def _group_fit_in_another_thread(k):
    entered, done = threading.Event(), threading.Event()

    def hold():
        with _noise.contribution_bound(k):
            entered.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    entered.wait(30)
    try:
        yield
    finally:
        done.set()
        thread.join()


def test_row_level_fit_samples_while_a_group_fit_runs_in_another_thread():
    with _group_fit_in_another_thread(5):
        assert _noise.group_rows() == 5  # the noise: never less for the group fit
        with _noise.contribution_bound(None):  # this thread's row-level fit
            assert _noise.fit_rows() == 1
            _noise.poisson_sample(10, 0.5, np.random.default_rng(0))
            _noise.allocate_rows(10, [0.5, 0.5], np.random.default_rng(0))
        # A thread with no fit of its own (a solver's worker) takes the largest unit.
        with pytest.raises(RuntimeError, match="group"):
            _noise.poisson_sample(10, 0.5, np.random.default_rng(0))


def test_label_threshold_is_the_running_fits_own_unit():
    scale, threshold = 2.0, 10.0
    with _group_fit_in_another_thread(4), trace_releases() as trace:
        with _noise.contribution_bound(None):
            _noise.thresholded_histogram(
                np.array([0, 1]),
                np.array([100, 3]),
                scale=scale,
                threshold=threshold,
                rng=np.random.default_rng(0),
            )
    (release,) = trace.releases
    assert (release.sensitivity, release.scale, release.threshold) == (1.0, scale, threshold)


def test_a_fit_inside_a_group_fit_keeps_the_group_unit():
    with _noise.contribution_bound(3), _noise.contribution_bound(None):
        assert _noise.fit_rows() == 3
        with pytest.raises(RuntimeError, match="group"):
            _noise.poisson_sample(10, 0.5, np.random.default_rng(0))
    assert _noise.fit_rows() == 1


# -- estimators ---------------------------------------------------------------------


def test_group_fit_event_and_guarantee_are_the_row_fits_under_the_group_relation():
    X, y, groups = _data()
    params = dict(epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=5, random_state=0)
    rows = DPLogisticRegression(**params).fit(X, y)
    grouped = DPLogisticRegression(max_group_rows=2, **params).fit(X, y, groups=groups)
    assert grouped.dp_event_ == rows.dp_event_
    assert grouped.privacy_spent_ == rows.privacy_spent_ == (1.0, 1e-5)
    assert grouped.max_group_rows_ == 2
    assert not hasattr(rows, "max_group_rows_")
    # A row-level refit drops the group unit.
    grouped.fit(X, y)
    assert not hasattr(grouped, "max_group_rows_")


def test_group_fit_count_and_solver_releases_scale_with_k():
    X, y, groups = _data()
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=3, random_state=0, max_group_rows=3
    )
    with trace_releases() as trace:
        model.fit(X, y, groups=groups)
    count = trace.releases[0]
    assert count.label == "row count"
    # 5% of epsilon on the count, of sensitivity k: Laplace scale k / (0.05 epsilon).
    assert count.sensitivity == 3.0
    assert count.scale == pytest.approx(3.0 / (COUNT_EPSILON_FRACTION * 1.0))


def test_group_fit_at_infinite_epsilon_is_the_fit_on_each_groups_first_rows():
    X, y, groups = _data()
    params = dict(epsilon=math.inf, classes=[0, 1], solver="dp_newton", random_state=0)
    grouped = DPLogisticRegression(max_group_rows=2, **params).fit(X, y, groups=groups)
    keep = kept_group_rows(groups, 2)
    rows = DPLogisticRegression(**params).fit(X[keep], y[keep])
    np.testing.assert_array_equal(grouped.coef_, rows.coef_)
    np.testing.assert_array_equal(grouped.intercept_, rows.intercept_)


@pytest.mark.parametrize(
    "estimator, params, target",
    [
        (DPLogisticRegression, dict(classes=[0, 1]), "labels"),
        (DPSCORegressor, dict(), "values"),
        (DPLasso, dict(feature_bound=1.0), "values"),
    ],
)
def test_every_estimator_fits_with_groups_and_auto_picks_a_group_solver(estimator, params, target):
    X, y, groups = _data()
    y = y if target == "labels" else 0.3 * X[:, 0]
    model = estimator(epsilon=1.0, random_state=0, max_group_rows=2, **params)
    model.fit(X, y, groups=groups)
    assert model.solver_ in GROUP_SOLVERS
    assert model.max_group_rows_ == 2


def test_labels_released_with_groups():
    X, y, groups = _data(400)
    model = DPLogisticRegression(epsilon=2.0, random_state=0, max_group_rows=2, max_iter=3)
    with trace_releases() as trace:
        model.fit(X, y, groups=groups)
    (labels,) = [r for r in trace.releases if r.label == "label set"]
    assert labels.sensitivity == 2.0


# -- refusals, all before any spend -------------------------------------------------


def _refused(model, X, y, match, **fit):
    budget = PrivacyBudget(10.0, 1e-3)
    model.set_params(budget=budget)
    with pytest.raises(ValueError, match=match):
        model.fit(X, y, **fit)
    assert budget.ledger == []


def test_groups_of_the_wrong_length_are_refused_before_the_spend():
    X, y, groups = _data()
    model = DPLogisticRegression(classes=[0, 1], max_group_rows=2)
    _refused(model, X, y, "same length as X", groups=groups[:-1])
    _refused(model, X, y, "1-d array", groups=np.c_[groups, groups])


def test_groups_need_max_group_rows():
    X, y, groups = _data()
    _refused(DPLogisticRegression(classes=[0, 1]), X, y, "needs max_group_rows", groups=groups)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "5"])
def test_max_group_rows_below_one_is_refused(bad):
    X, y, groups = _data()
    _refused(
        DPLogisticRegression(classes=[0, 1], max_group_rows=bad),
        X,
        y,
        "max_group_rows",
        groups=groups,
    )


@pytest.mark.parametrize(
    "model, task",
    [
        (DPLogisticRegression(classes=[0, 1], solver="dp_newton"), "classification"),
        (DPLogisticRegression(classes=[0, 1], solver="auto"), "classification"),
        (DPSCORegressor(y_bound=1.0, solver="dp_ssp"), "regression"),
    ],
    ids=["dp_newton", "auto", "dp_ssp"],
)
def test_inference_with_groups_is_refused_before_the_spend(model, task):
    # Its intervals assume independent rows; a group's rows are not.
    X, y, groups = _data()
    model = clone(model).set_params(max_group_rows=2, solver_options={"inference": True})
    target = y if task == "classification" else 0.3 * X[:, 0]
    _refused(model, X, target, "assume independent rows", groups=groups)


def test_search_with_inference_candidates_and_groups_is_refused_before_the_spend():
    from sklearn_dp.model_selection import DPGridSearchCV

    X, y, groups = _data()
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    search = DPGridSearchCV(
        DPLogisticRegression(classes=[0, 1], solver="dp_newton"),
        {"solver_options": [None, {"inference": True}]},
        max_group_rows=2,
        budget=budget,
    )
    with pytest.raises(ValueError, match="assume independent rows"):
        search.fit(X, y, groups=groups)
    assert budget.ledger == []


@pytest.mark.parametrize("name", ["DPStandardScaler", "DPMinMaxScaler", "DPPCA"])
def test_transformers_refuse_dask_input_with_groups_before_the_spend(name):
    da = pytest.importorskip("dask.array")
    from sklearn_dp.decomposition import DPPCA
    from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler

    make = dict(DPStandardScaler=DPStandardScaler, DPMinMaxScaler=DPMinMaxScaler, DPPCA=DPPCA)
    X, _, groups = _data()
    budget = PrivacyBudget(10.0, 1e-3)
    params = dict(n_components=2, delta=1e-6) if name == "DPPCA" else {}
    model = make[name](max_group_rows=2, budget=budget, **params)
    with pytest.raises(ValueError, match="not supported with Dask"):
        model.fit(da.from_array(X, chunks=40), groups=groups)
    assert budget.ledger == []


@pytest.mark.parametrize("solver", sorted(set(SOLVERS) - GROUP_SOLVERS))
def test_solvers_without_a_group_analysis_are_refused_before_the_spend(solver):
    X, y, groups = _data()
    task = "classification"
    estimator, params = DPLogisticRegression, dict(classes=[0, 1])
    if solver in ("frank_wolfe", "vr_frank_wolfe", "mirror_descent", "localized_mirror_descent"):
        estimator, params, task = DPLasso, dict(feature_bound=1.0), "regression"
    model = estimator(solver=solver, max_group_rows=2, **params)
    _refused(
        model,
        X,
        y if task == "classification" else 0.3 * X[:, 0],
        "does not support groups",
        groups=groups,
    )


def test_without_groups_max_group_rows_changes_nothing():
    X, y, _ = _data()
    params = dict(epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = DPLogisticRegression(**params).fit(X, y)
        b = DPLogisticRegression(max_group_rows=4, **params).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.dp_event_ == b.dp_event_


def test_max_group_rows_without_groups_warns_before_the_fit():
    from sklearn_dp.model_selection import DPGridSearchCV
    from sklearn_dp.preprocessing import DPStandardScaler

    X, y, groups = _data()
    model = DPLogisticRegression(classes=[0, 1], solver="dp_gd", max_iter=2, max_group_rows=3)
    for fit in (
        lambda: clone(model).fit(X, y),
        lambda: DPStandardScaler(bounds=(-1, 1), max_group_rows=3).fit(X),
        lambda: DPGridSearchCV(
            clone(model).set_params(max_group_rows=None), {"C": [1.0]}, max_group_rows=3
        ).fit(X, y),
    ):
        with pytest.warns(UserWarning, match="no groups=, so the unit of privacy is one row"):
            fit()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clone(model).fit(X, y, groups=groups)
        clone(model).set_params(max_group_rows=None).fit(X, y)
    assert not [w for w in caught if "no groups=" in str(w.message)]


def test_report_states_the_group_unit():
    X, y, groups = _data()
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=3, random_state=0, max_group_rows=3
    ).fit(X, y, groups=groups)
    report = privacy_report(model)
    assert report["neighbouring_relation"] == "add or remove one group of at most 3 rows"
    assert "group" in report["unit_of_privacy"]
    rows = privacy_report(DPLogisticRegression(epsilon=1.0, classes=[0, 1]).fit(X, y))
    assert rows["neighbouring_relation"] == "add or remove one row"


def test_rowwise_kfold_never_splits_a_group():
    from sklearn_dp.model_selection import RowwiseKFold

    groups = np.random.default_rng(0).integers(0, 30, size=200)
    folds = RowwiseKFold(n_splits=4, random_state=0).folds(np.zeros((200, 1)), groups)
    for group in np.unique(groups):
        assert np.unique(folds[groups == group]).size == 1
    splits = list(RowwiseKFold(n_splits=4, random_state=0).split(np.zeros((200, 1)), None, groups))
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test])


def test_ledger_entry_names_the_group_unit():
    X, y, groups = _data()
    budget = PrivacyBudget(5.0, 1e-4)
    params = dict(classes=[0, 1], solver="dp_gd", max_iter=3, random_state=0, budget=budget)
    DPLogisticRegression(max_group_rows=3, **params).fit(X, y, groups=groups)
    DPLogisticRegression(max_group_rows=2, **params).fit(X, y, groups=groups)
    names = [entry.estimator for entry in budget.ledger]
    assert names == [
        "DPLogisticRegression (add or remove one group of at most 3 rows)",
        "DPLogisticRegression (add or remove one group of at most 2 rows)",
    ]
    assert privacy_report(budget)["ledger"][0]["estimator"] == names[0]


def _fit_on(budget, k, groups=None):
    X, y, g = _data()
    model = DPLogisticRegression(
        classes=[0, 1],
        solver="dp_gd",
        max_iter=2,
        random_state=0,
        budget=budget,
        max_group_rows=None if groups is None else k,
    )
    return model.fit(X, y, groups=None if groups is None else g)


@pytest.mark.parametrize("first", ["row", "group"])
def test_a_budget_refuses_a_second_unit_of_privacy_before_the_spend(first):
    budget = PrivacyBudget(5.0, 1e-4)
    _fit_on(budget, 3, groups=True if first == "group" else None)
    with pytest.raises(ValueError, match="separate PrivacyBudget for each unit"):
        _fit_on(budget, 3, groups=None if first == "group" else True)
    assert [entry.unit for entry in budget.ledger] == [first]
    with pytest.raises(ValueError, match="unit of privacy"):
        budget.check(0.1, unit="row" if first == "group" else "group")


def test_group_fits_of_any_size_compose_on_one_budget():
    budget = PrivacyBudget(5.0, 1e-4)
    _fit_on(budget, 2, groups=True)
    _fit_on(budget, 5, groups=True)
    assert [entry.unit for entry in budget.ledger] == ["group", "group"]
    report = privacy_report(budget)
    assert report["neighbouring_relation"] == "add or remove one group"
    assert [entry["unit"] for entry in report["ledger"]] == ["group", "group"]
    assert privacy_report(PrivacyBudget(1.0))["neighbouring_relation"] == "add or remove one row"


def test_sqlite_ledger_records_the_unit(tmp_path):
    path = tmp_path / "ledger.sqlite"
    budget = PrivacyBudget(5.0, 1e-4, storage=path)
    _fit_on(budget, 3, groups=True)
    reopened = PrivacyBudget(5.0, 1e-4, storage=path)
    assert [e.unit for e in reopened.ledger] == ["group"]
    with pytest.raises(ValueError, match="unit of privacy"):
        _fit_on(reopened, None)
    assert [e.unit for e in PrivacyBudget(5.0, 1e-4, storage=path).ledger] == ["group"]


# -- statistical audits: D against D plus one canary group --------------------------


def _group_audit(audit, n_runs):
    from sklearn_dp.testing import audit_mechanism

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_mechanism(
            audit.make_run(audit.epsilon),
            claimed_epsilon=audit.epsilon,
            delta=max(audit.delta, 1e-12),
            n_runs=n_runs,
            include_observed=True,
        )


def _group_audit_configs(group_level):
    from sklearn_dp.testing._audit_configs import group_audits

    return group_audits(group_level=group_level)


@pytest.mark.slow
@pytest.mark.parametrize("audit", _group_audit_configs(True), ids=lambda a: a.id)
def test_group_level_audit_stays_below_the_claim(audit):
    result = _group_audit(audit, 1000)
    assert result.consistent, f"{audit.id}: {result}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "audit",
    # Output perturbation's audit (a saturating Huber canary) has too little
    # power at this size to catch a factor of GROUP_ROWS; its group audit
    # above stands on the same configuration as its row-level audit.
    [a for a in _group_audit_configs(False) if a.solver != "output_perturbation"],
    ids=lambda a: a.id,
)
def test_row_level_fit_fails_the_group_audit(audit):
    # The positive control: a row-level fit claimed for a whole canary group.
    result = _group_audit(audit, 2000)
    assert not result.consistent, f"{audit.id}: the control was not caught: {result}"


def test_audit_estimator_adds_a_whole_canary_group():
    from sklearn_dp.testing import audit_estimator

    X, y, groups = _data(60)
    seen = []

    class Recorder(DPLogisticRegression):
        def fit(self, X, y, sample_weight=None, groups=None):
            seen.append((X.shape[0], None if groups is None else np.asarray(groups)))
            return super().fit(X, y, sample_weight, groups)

    estimator = Recorder(epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=2, max_group_rows=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_estimator(
            estimator, X, y, np.array([0.0, 5.0, 0.0]), 1, n_runs=200, groups=groups
        )
    assert result.consistent
    sizes = {size for size, _ in seen}
    assert sizes == {60, 63}
    (prime,) = {tuple(g[60:]) for size, g in seen if size == 63}
    assert len(set(prime)) == 1 and prime[0] not in set(groups)


@pytest.mark.parametrize(
    "groups",
    [
        np.where(np.arange(60) % 3 == 0, np.nan, np.arange(60) % 7),  # NaN is the maximum
        np.array(["canary-2", "a"] * 30),  # a label a made-up canary name collides with
    ],
    ids=["nan", "canary-name"],
)
def test_audit_canary_group_is_new_whatever_the_labels(groups):
    from sklearn_dp._protocol import group_codes
    from sklearn_dp.testing import audit_estimator

    X, y, _ = _data(60)
    seen = []

    class Recorder(DPLogisticRegression):
        def fit(self, X, y, sample_weight=None, groups=None):
            seen.append(np.asarray(groups))
            return self  # only the labels the audit passes matter here

    estimator = Recorder(epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=2, max_group_rows=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        audit_estimator(
            estimator,
            X,
            y,
            np.array([0.0, 5.0, 0.0]),
            1,
            n_runs=200,
            groups=groups,
            statistic=lambda model: 0.0,
        )
    d = next(g for g in seen if g.size == 60)
    prime = next(g for g in seen if g.size == 63)
    # D keeps its partition; the canary rows are one group of their own.
    assert group_codes(d).tolist() == group_codes(groups).tolist()
    assert group_codes(prime[:60]).tolist() == group_codes(groups).tolist()
    assert len(set(prime[60:].tolist())) == 1 and prime[60] not in set(prime[:60].tolist())


def test_auto_without_a_group_solver_says_which_solvers_run_with_groups():
    X, y, groups = _data()
    model = DPSCORegressor(loss="absolute", max_group_rows=2, budget=PrivacyBudget(5.0, 1e-4))
    with pytest.raises(ValueError, match="With groups=, only these solvers can run"):
        model.fit(X, 0.3 * X[:, 0], groups=groups)
    assert model.budget.ledger == []
