"""Fits on Dask arrays: the same fit as in memory, noise once on the client, on a real cluster.

* With the same ``random_state`` a Dask fit releases the same values (up to
  floating-point rounding of the sums) and gives the same model as the
  in-memory fit, for dp_gd, dp_newton and dp_ssp, the row count, the label
  set and the ``"auto"`` bounds.
* The substitution test on Dask input: D and D plus a hostile row, every
  release substituted, give identical observables, and each release's
  pre-noise value moves by at most its sensitivity.
* The budget is charged once per fit; unsupported solvers, and weighted fits
  (``sample_weight``, ``class_weight``), refuse Dask input before anything is
  charged; without Dask, Dask input gets an error naming the extra.  Warm
  starts on Dask input equal in-memory warm starts.
* No per-row values reach the client: only reduced sums do.
* ``dask.distributed``: a quick ``LocalCluster`` with worker processes in the
  default run, a larger one under ``-m slow``.
"""

import re
import sys

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

from test_substitution import (  # noqa: E402
    HOSTILE,
    _assert_same,
    _check_sensitivities,
    _data,
    _model,
    _observe,
)

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget, _bounds, _dask  # noqa: E402  # noqa: E402
from sklearn_dp.testing import trace_releases  # noqa: E402

ESTIMATORS = {
    "DPLogisticRegression": DPLogisticRegression,
    "DPSCORegressor": DPSCORegressor,
    "DPLasso": DPLasso,
}


@pytest.fixture(autouse=True)
def threaded_scheduler():
    with dask.config.set(scheduler="threads"):
        yield


def _classification(n=3000, d=4, classes=2, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, d)) * 0.5).astype(dtype)
    W = rng.normal(size=(d, classes))
    y = np.argmax(X @ W + rng.gumbel(size=(n, classes)), axis=1)
    return X, y


def _regression(n=3000, d=4, seed=1, dtype=np.float64):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(n, d)) * 0.5).astype(dtype)
    y = X @ np.linspace(1.0, -1.0, d) + 0.3 + 0.1 * rng.normal(size=n)
    return X, y


def _dask_pair(X, y, rows=700):
    # Uneven row chunks, and X split across its columns (rechunked by the fit).
    return da.from_array(X, chunks=(rows, max(1, X.shape[1] // 2))), da.from_array(y, chunks=rows)


#: (estimator, parameters, data): Dask fits equal to in-memory fits.
CASES = {
    "logistic-newton-auto-bounds": (
        "DPLogisticRegression",
        dict(solver="dp_newton", classes=[0, 1]),
        "binary",
    ),
    "logistic-newton-discovered-labels": (
        "DPLogisticRegression",
        dict(solver="dp_newton", delta=1e-6),
        "binary",
    ),
    "logistic-newton-multinomial-exact": (
        "DPLogisticRegression",
        dict(solver="dp_newton", delta=1e-6, solver_options=dict(hessian="exact")),
        "multiclass",
    ),
    "logistic-nystrom-multinomial-low-rank": (
        "DPLogisticRegression",
        dict(solver="dp_nystrom", delta=1e-6, solver_options=dict(rank=2)),
        "multiclass",
    ),
    "regressor-nystrom-float32": ("DPSCORegressor", dict(solver="dp_nystrom"), "regression32"),
    "logistic-gd-given-bounds": (
        "DPLogisticRegression",
        dict(solver="dp_gd", classes=[0, 1], data_norm=2.0, max_iter=15),
        "binary",
    ),
    "logistic-gd-float32": (
        "DPLogisticRegression",
        dict(solver="dp_gd", classes=[0, 1], max_iter=10),
        "binary32",
    ),
    "logistic-auto-solver": ("DPLogisticRegression", dict(classes=[0, 1]), "binary"),
    "regressor-newton-auto-bounds": ("DPSCORegressor", dict(solver="dp_newton"), "regression"),
    # 400 rows x 0.15: the label range is one signed magnitude (3,000: three releases).
    "regressor-newton-auto-bounds-few-rows": (
        "DPSCORegressor",
        dict(solver="dp_newton"),
        "regression-few-rows",
    ),
    "regressor-gd-huber": (
        "DPSCORegressor",
        dict(solver="dp_gd", loss="huber", max_iter=10, y_bound=3.0),
        "regression",
    ),
    "regressor-ssp-ridge": (
        "DPSCORegressor",
        dict(solver="dp_ssp", alpha=0.01, penalty="l2"),
        "regression",
    ),
    "lasso-ssp-auto": ("DPLasso", dict(alpha=0.01), "regression"),
    # No intercept: the label half-width is released around a public centre 0.
    "regressor-newton-auto-bounds-no-intercept": (
        "DPSCORegressor",
        dict(solver="dp_newton", fit_intercept=False),
        "regression",
    ),
    "lasso-ssp-given": (
        "DPLasso",
        dict(alpha=0.01, feature_bound=2.0, y_bound=3.0, fit_intercept=False),
        "regression32",
    ),
}


def _case_data(kind):
    if kind.startswith("binary"):
        return _classification(dtype=np.float32 if kind.endswith("32") else np.float64)
    if kind == "multiclass":
        return _classification(classes=3)
    if kind == "regression-few-rows":
        return _regression(n=400)
    return _regression(dtype=np.float32 if kind.endswith("32") else np.float64)


def _single_bound(name, params):
    """``params`` with one row bound: Dask input keeps it, so in memory it is asked for."""
    if "feature_scaling" in ESTIMATORS[name]().get_params():
        return {"feature_scaling": False, **params}
    return params


def _fit(name, params, X, y):
    model = ESTIMATORS[name](epsilon=1.0, random_state=3, **_single_bound(name, params))
    with trace_releases() as trace:
        model.fit(X, y)
    return model, trace


@pytest.mark.parametrize("case", list(CASES))
def test_dask_fit_equals_in_memory_fit(case):
    name, params, kind = CASES[case]
    X, y = _case_data(kind)
    memory, memory_trace = _fit(name, params, X, y)
    Xd, yd = _dask_pair(X, y)
    lazy, lazy_trace = _fit(name, params, Xd, yd)
    assert lazy.solver_ == memory.solver_
    assert lazy.solver_ in _dask.dask_solvers()
    # The same releases, in the same order, of the same values up to rounding.
    assert [r.label for r in lazy_trace.releases] == [r.label for r in memory_trace.releases]
    for a, b in zip(lazy_trace.releases, memory_trace.releases):
        assert a.sensitivity == b.sensitivity
        if a.mechanism == "thresholded_laplace":
            np.testing.assert_array_equal(a.candidates, b.candidates)
        np.testing.assert_allclose(
            np.asarray(a.value, float), np.asarray(b.value, float), rtol=1e-9, atol=1e-9
        )
    np.testing.assert_allclose(lazy.coef_, memory.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(lazy.intercept_, memory.intercept_, rtol=1e-7, atol=1e-9)
    assert lazy.n_iter_ == memory.n_iter_
    assert lazy.privacy_spent_ == memory.privacy_spent_
    assert lazy.n_features_in_ == X.shape[1]
    for attribute in ("data_norm_", "intercept_scaling_", "y_bound_", "y_center_", "classes_"):
        if hasattr(memory, attribute):
            np.testing.assert_array_equal(getattr(lazy, attribute), getattr(memory, attribute))


@pytest.mark.parametrize(
    "method", ["predict", "decision_function", "predict_proba", "predict_log_proba"]
)
def test_predictions_on_dask_input_are_lazy_dask_arrays(method):
    X, y = _classification(classes=3)
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1, 2], solver="dp_newton", random_state=0
    ).fit(X, y)
    Xd = da.from_array(X, chunks=(500, 2))
    lazy = getattr(model, method)(Xd)
    assert isinstance(lazy, da.Array)
    expected = getattr(model, method)(X)
    assert lazy.shape == expected.shape
    np.testing.assert_allclose(lazy.compute(), expected, rtol=1e-12)
    regressor = DPSCORegressor(epsilon=1.0, random_state=0).fit(*_regression())
    out = regressor.predict(Xd[:, :4])
    assert isinstance(out, da.Array)
    np.testing.assert_allclose(out.compute(), regressor.predict(X[:, :4]))
    with pytest.raises(ValueError, match="features"):
        model.predict(da.from_array(X[:, :2], chunks=500))


@pytest.mark.parametrize(
    "name, params, kind",
    [
        ("DPLogisticRegression", dict(solver="dp_newton", classes=[0, 1]), "binary32"),
        ("DPSCORegressor", dict(solver="dp_gd", feature_bound=1.0, max_iter=4), "regression"),
    ],
)
def test_each_chunk_is_bounded_once_per_dask_fit(monkeypatch, name, params, kind):
    # Bounding a chunk (its row norms and factors) costs more than a pass of
    # products over it: it is done once per fit and kept with the chunk, and
    # the row norms a kernel computes are kept too; every later pass only
    # multiplies.  The model is the one of the in-memory fit.
    from sklearn_dp import _data, _design

    X, y = _case_data(kind)
    Xd, yd = _dask_pair(X, y, rows=500)
    bounded, norm_passes = [], []
    original_bound, original_norms = _dask.bound_data, _design.Design._row_norms

    def counted_bound(X_chunk, *args, **kwargs):
        if X_chunk.shape[0]:
            bounded.append(X_chunk.shape[0])
        return original_bound(X_chunk, *args, **kwargs)

    def counted_norms(self, *args, **kwargs):
        norm_passes.append(self.n_rows)
        return original_norms(self, *args, **kwargs)

    passes = []
    original_reduce = _dask.reduce_chunks

    def counted_reduce(*args, **kwargs):
        passes.append(1)
        return original_reduce(*args, **kwargs)

    monkeypatch.setattr(_dask, "bound_data", counted_bound)
    monkeypatch.setattr(_design.Design, "_row_norms", counted_norms)
    monkeypatch.setattr(_dask, "reduce_chunks", counted_reduce)
    lazy, _ = _fit(name, params, Xd, yd)
    monkeypatch.undo()
    assert len(passes) >= 3  # the bound releases, the count, the solver's passes
    assert sorted(bounded) == sorted(Xd.chunks[0])  # each chunk once
    assert sum(norm_passes) <= X.shape[0]
    memory, _ = _fit(name, params, X, y)
    np.testing.assert_allclose(lazy.coef_, memory.coef_, rtol=1e-7, atol=1e-9)
    assert _data.bound_data is original_bound
    # The kept per-row values live as long as the fit, not in the fitted model.
    import gc

    gc.collect()
    assert not any(isinstance(o, _dask._ChunkBounds) for o in gc.get_objects())


def test_budget_is_charged_once_per_dask_fit():
    X, y = _classification()
    budget = PrivacyBudget(3.0, 1e-5, composition="basic")
    Xd, yd = _dask_pair(X, y)
    DPLogisticRegression(
        epsilon=1.0, delta=1e-6, solver="dp_newton", budget=budget, random_state=0
    ).fit(Xd, yd)
    assert len(budget.ledger) == 1
    assert budget.ledger[0].status == "completed"
    np.testing.assert_allclose(budget.spent, (1.0, 1e-6))
    DPLasso(epsilon=1.0, delta=1e-6, alpha=0.01, budget=budget, random_state=0).fit(
        *_dask_pair(*_regression())
    )
    assert len(budget.ledger) == 2
    np.testing.assert_allclose(budget.spent, (2.0, 2e-6))


@pytest.mark.parametrize(
    "estimator, params",
    [
        (DPLogisticRegression, dict(solver="dp_sgd", classes=[0, 1])),
        (DPLogisticRegression, dict(solver="objective_perturbation", classes=[0, 1])),
        # auto picks a perturbation solver for delta=0: refused, named.
        (DPLogisticRegression, dict(delta=0.0, classes=[0, 1])),
        (DPSCORegressor, dict(solver="dp_cd", feature_bound=1.0, penalty="l1", alpha=0.1)),
        (DPLasso, dict(solver="frank_wolfe", radius=1.0)),
    ],
)
def test_unsupported_solvers_refuse_dask_input_before_charging(estimator, params):
    X, y = _classification() if estimator is DPLogisticRegression else _regression()
    budget = PrivacyBudget(3.0, 1e-5)
    params = dict(params)
    params.setdefault("delta", 1e-6)
    model = estimator(epsilon=1.0, budget=budget, random_state=0, **params)
    with pytest.raises(ValueError, match="does not fit on Dask arrays"):
        model.fit(*_dask_pair(X, y))
    assert len(budget.ledger) == 0
    assert budget.spent == (0.0, 0.0)
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize(
    "estimator, params, weights",
    [
        (DPLogisticRegression, dict(solver="dp_newton", classes=[0, 1]), "numpy"),
        (DPLogisticRegression, dict(solver="dp_gd", classes=[0, 1]), "dask"),
        (
            DPLogisticRegression,
            dict(solver="dp_newton", classes=[0, 1], class_weight={0: 1.0, 1: 0.5}),
            None,
        ),
        # class weights with the label set discovered privately.
        (DPLogisticRegression, dict(solver="dp_newton", class_weight={1: 0.5}), None),
        (DPSCORegressor, dict(solver="dp_newton"), "numpy"),
        (DPSCORegressor, dict(solver="dp_ssp", alpha=0.01, penalty="l2"), "dask"),
        (DPLasso, dict(alpha=0.01), "dask"),
    ],
)
def test_weighted_fits_refuse_dask_input_before_charging(estimator, params, weights):
    # Weighted Dask fits are not supported: a public error before the
    # reservation (nothing charged, nothing computed from the weights).
    X, y = _classification() if estimator is DPLogisticRegression else _regression()
    budget = PrivacyBudget(3.0, 1e-5)
    model = estimator(epsilon=1.0, delta=1e-6, budget=budget, random_state=0, **params)
    Xd, yd = _dask_pair(X, y)
    w = np.linspace(0.5, 1.0, X.shape[0])
    sample_weight = {"numpy": w, "dask": da.from_array(w, chunks=700), None: None}[weights]
    with pytest.raises(ValueError, match="not supported on Dask input"):
        model.fit(Xd, yd, sample_weight=sample_weight)
    assert len(budget.ledger) == 0
    assert budget.spent == (0.0, 0.0)
    assert not hasattr(model, "coef_")
    # Dask weights with in-memory rows are refused as well.
    if weights == "dask":
        with pytest.raises(ValueError, match="not supported on Dask input"):
            model.fit(X, y, sample_weight=sample_weight)
        assert len(budget.ledger) == 0


@pytest.mark.parametrize(
    "name, params, kind",
    [
        ("DPLogisticRegression", dict(solver="dp_gd", classes=[0, 1], max_iter=10), "binary"),
        ("DPSCORegressor", dict(solver="dp_newton", y_bound=3.0, data_norm=2.0), "regression"),
    ],
)
def test_warm_start_on_dask_input_equals_in_memory(name, params, kind):
    # A warm start (the previous released model as coef_init) on Dask input:
    # the same second fit as in memory.
    X, y = _case_data(kind)
    fits = []
    for data in ((X, y), _dask_pair(X, y)):
        model = ESTIMATORS[name](
            epsilon=1.0, random_state=3, warm_start=True, **_single_bound(name, params)
        )
        model.fit(*data)
        model.fit(*data)
        fits.append(model)
    memory, lazy = fits
    np.testing.assert_allclose(lazy.coef_, memory.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(lazy.intercept_, memory.intercept_, rtol=1e-7, atol=1e-9)


def test_no_per_row_values_reach_the_client(monkeypatch):
    X, y = _classification(n=4000)
    Xd, yd = _dask_pair(X, y, rows=500)
    reduced = []
    original = _dask.reduce_chunks

    def recording(*args, **kwargs):
        result = original(*args, **kwargs)
        reduced.append(result)
        return result

    def refuse(self, *args, **kwargs):
        raise AssertionError("a whole Dask array was collected to the client")

    monkeypatch.setattr(_dask, "reduce_chunks", recording)
    monkeypatch.setattr(da.Array, "__array__", refuse)
    monkeypatch.setattr(da.Array, "compute", refuse)
    DPLogisticRegression(epsilon=1.0, delta=1e-6, solver="dp_newton", random_state=0).fit(Xd, yd)
    DPSCORegressor(epsilon=1.0, solver="dp_gd", max_iter=3, random_state=0).fit(
        Xd, yd.astype(float)
    )
    assert reduced

    def sizes(value):
        if isinstance(value, tuple):
            return [s for v in value for s in sizes(v)]
        return [np.size(value)]

    largest = max(s for value in reduced for s in sizes(value))
    # Gram matrices, gradients and counts over public grids: nothing of length n.
    assert largest <= max(_bounds.GRID.size, _bounds.CENTER_GRID.size) < X.shape[0]


class _NoDask:
    """A meta path finder that refuses to import Dask."""

    def find_spec(self, name, path=None, target=None):
        if name == "dask" or name.startswith("dask."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def test_without_dask_installed_dask_input_names_the_extra(monkeypatch):
    X, y = _classification()
    Xd, yd = _dask_pair(X, y)
    # As if Dask were not installed: not importable, and absent from sys.modules
    # (a None entry there breaks scipy's check for Dask arrays, which a test
    # run alone reaches first here).
    for module in [m for m in list(sys.modules) if m == "dask" or m.startswith("dask.")]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setattr(sys, "meta_path", [_NoDask(), *sys.meta_path])
    # The packages of the dask extra, installable by name however sklearn_dp
    # was installed (it is not on the package index).
    hint = re.escape('pip install "dask[array]>=2024.1" "distributed>=2024.1"')
    with pytest.raises(ImportError, match=hint):
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(Xd, yd)
    with pytest.raises(ImportError, match=hint):
        _dask.require_dask()
    # Everything else works.
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert model.predict(X).shape == (X.shape[0],)


def test_schema_errors_on_dask_input_come_before_any_spend():
    X, y = _classification()
    budget = PrivacyBudget(3.0, 1e-5)
    model = DPLogisticRegression(epsilon=1.0, delta=1e-6, classes=[0, 1], budget=budget)
    X_nan = X.copy()
    X_nan[5, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        model.fit(*_dask_pair(X_nan, y))
    y_bad = y.copy()
    y_bad[3] = 7
    with pytest.raises(ValueError, match="not in classes"):
        model.fit(*_dask_pair(X, y_bad))
    with pytest.raises(ValueError, match="continuous"):
        DPLogisticRegression(epsilon=1.0, delta=1e-6, budget=budget).fit(*_dask_pair(X, y + 0.5))
    with pytest.raises(ValueError, match="inconsistent"):
        model.fit(da.from_array(X, chunks=500), y[:-1])
    assert budget.spent == (0.0, 0.0)
    # A NumPy y beside a Dask X is chunked like X.
    model.fit(da.from_array(X, chunks=(600, 4)), y)
    assert len(budget.ledger) == 1


@pytest.mark.parametrize(
    "odd, match",
    [(None, "missing value"), (float("nan"), "missing value"), ("a", "one comparable type")],
)
def test_object_labels_with_a_missing_value_or_mixed_types_are_refused_before_any_spend(odd, match):
    # Without public classes the label set is formed after the reservation,
    # where comparing a None (or a string with a number) failed the fit,
    # charged, on D plus that row only; in memory the same labels are
    # refused with the schema.
    X, y = _classification(n=400)
    labels = y.astype(object)
    labels[7] = odd
    budget = PrivacyBudget(3.0, 1e-5)
    with pytest.raises(ValueError, match=match):
        DPLogisticRegression(epsilon=1.0, delta=1e-6, budget=budget).fit(*_dask_pair(X, labels))
    assert budget.ledger == []
    strings = np.where(y == 1, "yes", "no").astype(object)
    strings[7] = 3
    with pytest.raises(ValueError, match="one comparable type"):
        DPLogisticRegression(epsilon=1.0, delta=1e-6, budget=budget).fit(*_dask_pair(X, strings))
    assert budget.ledger == []
    # Labels of one type pass the check.
    DPLogisticRegression(epsilon=1.0, delta=1e-6, budget=budget).fit(
        *_dask_pair(X, np.where(y == 1, "yes", "no").astype(object))
    )
    assert len(budget.ledger) == 1


def test_non_finite_dask_rows_are_refused_before_any_spend_even_if_assume_finite():
    import sklearn

    X, y = _classification(n=400)
    X[11, 2] = np.inf
    budget = PrivacyBudget(3.0, 1e-5)
    model = DPLogisticRegression(epsilon=1.0, delta=1e-6, classes=[0, 1], budget=budget)
    with sklearn.config_context(assume_finite=True):
        with pytest.raises(ValueError, match="NaN or infinity"):
            model.fit(*_dask_pair(X, y))
    assert budget.ledger == []


# -- substitution on Dask input -------------------------------------------------------------

DASK_SUBSTITUTION = [
    ("DPLogisticRegression", "dp_newton", dict(max_iter=3)),
    ("DPLogisticRegression", "dp_gd", dict(max_iter=4)),
    ("DPSCORegressor", "dp_newton", dict(max_iter=3)),
    ("DPLogisticRegression", "dp_nystrom", dict(max_iter=3, solver_options=dict(rank=2))),
    ("DPLasso", "dp_ssp", dict()),
]


@pytest.mark.parametrize("kind", ["huge", "tiny"])
@pytest.mark.parametrize(
    "estimator, solver, params",
    DASK_SUBSTITUTION,
    ids=[f"{e}-{s}" for e, s, _ in DASK_SUBSTITUTION],
)
def test_substitution_on_dask_input(estimator, solver, params, kind):
    X, y = _data(estimator)
    row = HOSTILE[kind](X.shape[1])
    label = 1 if estimator == "DPLogisticRegression" else 1e300
    X_prime, y_prime = np.vstack([X, row]), np.append(y, label)
    seen = []
    for Xi, yi in ((X, y), (X_prime, y_prime)):
        model = _model(estimator, solver, params)
        seen.append(_observe(model, *_dask_pair(Xi, yi, rows=37), [0, 1]))
    a, b = seen
    assert a["error"] is None, a["error"]
    assert a["error"] == b["error"]
    assert a["warnings"] == b["warnings"]
    assert a["printed"] == b["printed"]
    _assert_same(a["attributes"], b["attributes"])
    _check_sensitivities(a["trace"], b["trace"])


# -- dask.distributed --------------------------------------------------------------------


def _local_cluster(n_workers=2):
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
    )
    return distributed, cluster


#: The tests that share the module's cluster run on one pytest-xdist worker,
#: which starts it once (the other worker starts none).
ON_THE_SHARED_CLUSTER = pytest.mark.xdist_group("local_cluster")


@pytest.fixture(scope="module")
def local_cluster():
    """A LocalCluster of two one-thread worker processes on loopback, closed after the module."""
    distributed, cluster = _local_cluster()
    try:
        yield distributed, cluster
    finally:
        cluster.close()


@ON_THE_SHARED_CLUSTER
def test_fit_on_a_local_cluster_with_worker_processes(local_cluster):
    distributed, cluster = local_cluster
    X, y = _classification(n=2000)
    with distributed.Client(cluster) as client:
        model = DPLogisticRegression(
            epsilon=1.0, delta=1e-6, solver="dp_newton", random_state=5
        ).fit(*_dask_pair(X, y, rows=400))
        # The tasks ran on the workers (their processes), not on the client.
        assert client.run(lambda: True)
        predicted = model.predict(da.from_array(X, chunks=400)).compute()
    reference = DPLogisticRegression(
        epsilon=1.0, delta=1e-6, solver="dp_newton", random_state=5, feature_scaling=False
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(predicted, reference.predict(X))


@ON_THE_SHARED_CLUSTER
def test_later_passes_on_a_cluster_run_one_task_per_worker_thread(local_cluster):
    # A task costs the scheduler, the client and the worker a few
    # milliseconds each: a pass over the kept chunks runs one task per
    # worker thread, next to its chunks (no chunk moves), with the sums of
    # one task per chunk.
    from sklearn_dp._clipped_sums import newton_sums
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import get_loss

    distributed, cluster = local_cluster
    X, y = _classification(n=3000, d=5, dtype=np.float32)
    labels = np.where(y == 1, 1.0, -1.0)
    loss, W = get_loss("log_loss"), np.full((6, 1), 0.1)

    def gradient(part):
        return newton_sums(part.design, part.y, W, loss, 0.5, part.row_norms, hessian=False)[0]

    expected = gradient(bound_data(X, labels, fit_intercept=True, data_norm=1.0))
    with distributed.Client(cluster) as client:
        data = _dask.bound_dask_data(
            da.from_array(X, chunks=300),
            da.from_array(labels, chunks=300),
            fit_intercept=True,
            data_norm=1.0,
        )
        data.sum_over_chunks(gradient)  # bounds and keeps the 10 chunks
        with distributed.get_task_stream(client) as stream:
            total = data.sum_over_chunks(gradient)
        threads = sum(client.nthreads().values())
    kernels = [t for t in stream.data if "_group_sum" in str(t["key"])]
    assert len(kernels) == threads
    assert not [t for t in stream.data if "_bounded_kernel" in str(t["key"])]
    transfers = [s for t in stream.data for s in t["startstops"] if s["action"] == "transfer"]
    assert sum(s.get("nbytes", 0) for s in transfers) < 10_000  # sums move, chunks do not
    np.testing.assert_allclose(total, expected, rtol=1e-10)


@pytest.mark.slow
@ON_THE_SHARED_CLUSTER
def test_larger_fits_on_a_local_cluster(local_cluster):
    distributed, cluster = local_cluster
    with distributed.Client(cluster):
        for name, params, kind in CASES.values():
            X, y = _case_data(kind)
            X, y = np.repeat(X, 20, axis=0), np.repeat(y, 20)
            memory, _ = _fit(name, params, X, y)
            lazy, _ = _fit(name, params, *_dask_pair(X, y, rows=7000))
            np.testing.assert_allclose(lazy.coef_, memory.coef_, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("first_changed_read", [1, 2, 3, 4])
def test_a_chunk_that_changes_between_reads_is_never_multiplied_by_stale_factors(
    first_changed_read,
):
    # A source that returns other values on a later read (a growing file, a
    # non-deterministic graph): the later passes multiply the rows the first
    # pass bounded, so every release stays within its sensitivity.
    import itertools

    reads = itertools.count()
    base = np.random.default_rng(0).normal(size=(400, 3)) * 0.01

    def chunk(block):
        out = block.copy()
        if next(reads) >= first_changed_read:  # from this read on, one row turns hostile
            out[0] = 1e6
        return out

    with dask.config.set(scheduler="synchronous"):
        X = da.from_array(base, chunks=(400, 3)).map_blocks(chunk, dtype=float)
        y = da.from_array(np.arange(400) % 2, chunks=400)
        model = DPLogisticRegression(
            epsilon=1.0,
            solver="dp_gd",
            data_norm=1.0,
            fit_intercept=False,
            classes=[0, 1],
            max_iter=5,
            random_state=0,
        )
        with trace_releases() as trace:
            model.fit(X, y)
    gradient_sums = [r for r in trace.releases if r.value is not None and r.sensitivity == 0.5]
    assert len(gradient_sums) == 5
    for release in gradient_sums:
        # 400 rows of norm <= 1, each term scaled by |l'| <= 1/2.
        assert np.linalg.norm(np.asarray(release.value, dtype=float)) <= 200.0 + 1e-9


def test_unaligned_chunks_are_aligned_before_their_products():
    # A chunk received from another worker may start at any byte: NumPy does
    # not hand such arrays to BLAS (its own loops are many times slower), so
    # the chunk is copied once, aligned; the values are the same.
    X, _ = _classification(n=300, d=5, dtype=np.float32)
    raw = np.empty(X.nbytes + 1, dtype=np.uint8)[1:]
    unaligned = raw.view(np.float32).reshape(X.shape)
    unaligned[...] = X
    assert not unaligned.flags.aligned
    aligned = _dask._aligned(unaligned)
    assert aligned.flags.aligned
    np.testing.assert_array_equal(aligned, X)
    assert _dask._aligned(X) is X  # aligned chunks are used as they are
    bounds = _dask._ChunkBounds(unaligned, np.zeros(300), dict(fit_intercept=True, data_norm=1.0))
    assert bounds.part.design.X.flags.aligned


def test_passes_over_a_float32_chunk_convert_its_blocks_into_one_reused_buffer(monkeypatch):
    # Dask's workers hand every large free back to the system, so a float64
    # copy of a float32 block made afresh in every pass is paged in afresh
    # (on a LocalCluster several times the cost of the product): the
    # products and the Gram matrix of a pass over a kept chunk convert its
    # blocks into one reused buffer, with the sums of fresh copies, and leave
    # no rows in it.
    from sklearn_dp import _design
    from sklearn_dp._clipped_sums import newton_sums
    from sklearn_dp._losses import get_loss

    X, y = _classification(n=20000, d=20, dtype=np.float32)
    bounds = _dask._ChunkBounds(
        X, np.where(y == 1, 1.0, -1.0), dict(fit_intercept=True, data_norm=1.0)
    )
    loss, W = get_loss("log_loss"), np.full((21, 1), 0.1)

    def sums(part):  # a gradient sum and (the first pass's) Gram matrix
        gradient = newton_sums(part.design, part.y, W, loss, 0.5, part.row_norms, hessian=False)
        return gradient[0], part.design.gram()

    expected = sums(bounds.part)  # fresh float64 copies of the blocks
    fresh = []
    original = _design._float64

    def counted(block):
        fresh.append(block.shape)
        return original(block)

    monkeypatch.setattr(_design, "_float64", counted)
    result = _dask._bounded_kernel(bounds, sums)
    monkeypatch.undo()
    for got, want in zip(result, expected):
        np.testing.assert_array_equal(got, want)
    assert fresh == []  # no float64 copy of a block was made
    assert bounds.part.design.workspace is None  # the buffer is not kept with the chunk
    assert not np.any(_dask._WORKSPACE.buffer)  # and holds no rows after the pass


def test_a_memory_mapped_chunk_is_kept_as_a_copy(tmp_path):
    # A chunk read with mmap_mode="r" is a view of its file: a write to the
    # file during the fit would change the kept rows under the factors
    # computed for them, and a row could exceed its bound in a later pass.
    X, y = _classification(n=200, d=3)
    X = X * 10.0  # rows longer than the bound: every one is scaled down
    path = tmp_path / "X.npy"
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    bounds = _dask._ChunkBounds(mapped, y, dict(fit_intercept=False, data_norm=1.0))
    writer = np.load(path, mmap_mode="r+")
    writer[:] = 1e6  # the file changes after the chunk was bounded
    writer.flush()
    kept = bounds.part.design
    np.testing.assert_array_equal(kept.X, X)
    assert not np.shares_memory(kept.X, mapped)
    norms = np.linalg.norm(kept.materialize(), axis=1)
    assert np.all(norms <= 1.0 + 1e-12)
    in_memory = _dask._ChunkBounds(X, y, dict(fit_intercept=False, data_norm=1.0))
    assert in_memory.part.design.X is X  # chunks in memory are used as they are


def test_dask_label_range_at_low_evidence_uses_the_in_memory_utilities():
    # Below the low-evidence threshold the signed magnitude widens its window;
    # a Dask fit must release over the same utilities as an in-memory one.
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(60, 3))
    y = 100 + 50 * rng.normal(size=60)

    def fixed(release):
        if release.label == "row count":
            return 60.0
        if release.mechanism == "exponential":
            return 0
        return np.zeros(np.shape(release.output)) if np.shape(release.output) else 0.0

    utilities = {}
    for kind in ("numpy", "dask"):
        data = (
            (X, y)
            if kind == "numpy"
            else (da.from_array(X, chunks=20), da.from_array(y, chunks=20))
        )
        with trace_releases(substitute=fixed) as trace:
            DPSCORegressor(epsilon=1.0, delta=1e-5, solver="dp_gd", max_iter=2).fit(*data)
        (signed,) = [r for r in trace.releases if "signed" in r.label]
        utilities[kind] = np.asarray(signed.value)
    np.testing.assert_array_equal(utilities["numpy"], utilities["dask"])


def _bound_releases(counts, X, y, n_public, epsilon, center):
    """What the label range and the row bounds release through ``counts``, with a fixed seed."""
    rng = np.random.default_rng(7)
    with trace_releases() as trace:
        label_range = _bounds.release_range(
            y, epsilon=epsilon, n_public=n_public, rng=rng, label="r", center=center, counts=counts
        )
        for release in (_bounds.release_row_norm_bound, _bounds.release_feature_bound):
            for lean in (False, True):
                release(X, epsilon=epsilon, n_public=n_public, rng=rng, lean=lean, counts=counts)
    fingerprint = [
        (r.label, r.mechanism, r.sensitivity, r.scale, np.asarray(r.value).tolist(), r.output)
        for r in trace.releases
    ]
    return label_range, fingerprint


# n_public * epsilon below and above the thresholds of the low-evidence window
# (20), the tilt (30) and the three-part range (100).
@pytest.mark.parametrize("n_public, epsilon", [(12.0, 1.0), (25.0, 1.0), (60.0, 1.0), (900.0, 0.5)])
@pytest.mark.parametrize("center", [None, 0.0])
def test_dask_bound_releases_read_the_same_counts_as_in_memory(n_public, epsilon, center):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(90, 3)) * 4.0
    y = 30.0 + 10.0 * rng.normal(size=90)
    chunked = (da.from_array(X, chunks=(25, -1)), da.from_array(y, chunks=25))
    in_memory = _bound_releases(_bounds.RowCounts, X, y, n_public, epsilon, center)
    on_dask = _bound_releases(_dask.ChunkCounts, *chunked, n_public, epsilon, center)
    assert on_dask == in_memory
