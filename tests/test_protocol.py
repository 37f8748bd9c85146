"""The privacy protocol of a fit: reserve before touching, nothing escapes the private phase.

Failures must not be free queries: warnings, floating-point traps and errors
after a release keep the fit charged; sparse duplicates and overflowing
cells are bounded as the cell they sum to.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import binary_data, regression_data
from dp_accounting import dp_event as dpe
from solver_configs import CONFIGS

from sklearn_dp import (
    DPLasso,
    DPLogisticRegression,
    DPSCORegressor,
    PrivacyBudget,
    PrivacyLeakWarning,
    _noise,
)
from sklearn_dp.exceptions import ConvergenceError, PrivateFitError
from sklearn_dp.linear_model._base import PrivatePhase
from sklearn_dp.model_selection import DPGridSearchCV
from sklearn_dp.solvers import SOLVERS, _registry
from sklearn_dp.testing import trace_releases

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: Uniform features on [-0.5, 0.5], labels the sign of the first one.
_data = functools.partial(binary_data, half_width=0.5)


def test_warning_turned_into_an_error_fails_the_fit_and_stays_charged():
    # With warnings.simplefilter("error") the weak-delta warning (its text holds
    # 1/n_public) aborts the fit after the count is released; were nothing spent,
    # 2000 failed fits would pin n to +-0.7 rows.
    X, y = _data()
    budget = PrivacyBudget(10.0, 0.9, composition="basic")
    model = DPLogisticRegression(delta=0.5, classes=[0, 1], budget=budget, max_iter=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="DP row count"):
            model.fit(X, y)
    (entry,) = budget.ledger
    assert entry.status == "failed" and entry.error == "UserWarning"
    assert budget.spent == pytest.approx((1.0, 0.5))
    assert not hasattr(model, "coef_")


def test_deferred_warning_points_at_the_callers_line():
    X, y = _data()
    with pytest.warns(UserWarning, match="DP row count") as record:
        DPLogisticRegression(delta=0.5, classes=[0, 1], max_iter=3).fit(X, y)
    assert record[0].filename == __file__


def test_floating_point_traps_of_the_caller_do_not_reach_private_values():
    # np.seterr(all="raise") would turn an overflow on a private quantity into a
    # data-dependent FloatingPointError; the private phase ignores them.
    X, y = _data()
    X[0] = 1e300
    old = np.seterr(all="raise")
    try:
        model = DPLogisticRegression(classes=[0, 1], max_iter=3, random_state=0).fit(X, y)
    finally:
        np.seterr(**old)
    assert np.all(np.isfinite(model.coef_))


def test_numerical_warnings_are_silenced_in_the_private_phase():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with PrivatePhase("Test", None):
            np.log(np.zeros(3))  # RuntimeWarning, ignored
            warnings.warn("a private rcond of 1e-17", RuntimeWarning)


def test_unexpected_exception_is_withheld_and_charged():
    budget = PrivacyBudget(1.0)
    reservation = budget.reserve(0.5, estimator="Test")
    with pytest.raises(PrivateFitError, match="withheld") as info:
        with PrivatePhase("Test", reservation):
            raise MemoryError("Unable to allocate 7.45 GiB for an array with shape (1000000, 1000)")
    assert "1000000" not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    (entry,) = budget.ledger
    assert entry.status == "failed" and entry.error == "MemoryError"


def test_public_exception_passes_and_is_charged():
    budget = PrivacyBudget(1.0)
    reservation = budget.reserve(0.5, estimator="Test")
    from sklearn_dp.solvers._common import check_finite_iterate

    with pytest.raises(ConvergenceError, match="diverged"):
        with PrivatePhase("Test", reservation):
            check_finite_iterate(np.array([np.nan]), "dp_gd")
    assert budget.ledger[0].error == "ConvergenceError"


def test_diverged_fit_after_noisy_steps_is_charged():
    # Was uncharged (and tests/test_fuzz.py asserted it): the divergence is a
    # function of the noisy iterates, so it may be shown, but it happened
    # after the data was touched.
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLogisticRegression(
        classes=[0, 1],
        budget=budget,
        learning_rate=1e30,
        max_iter=50,
        random_state=0,
        solver="dp_gd",
    )
    with pytest.raises(ConvergenceError):
        model.fit(X, y)
    (entry,) = budget.ledger
    assert entry.status == "failed" and entry.error == "ConvergenceError"


def test_refused_before_the_reservation_spends_nothing():
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-3)
    for model in (
        DPLogisticRegression(classes=[0, 1], budget=budget, solver="frank_wolfe"),
        DPLogisticRegression(
            classes=[0, 1], budget=budget, solver="dp_cd", feature_bound=None
        ),  # no entrywise bound
        DPLogisticRegression(classes=[0, 5], budget=budget),  # label 1 not in classes
        DPLasso(budget=budget, feature_bound=[1.0, 1.0]),  # wrong shape
    ):
        with pytest.raises(ValueError):
            model.fit(X, y)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError):
        DPLogisticRegression(classes=[0, 1], budget=budget).fit(X_nan, y)
    assert budget.ledger == []


@pytest.mark.parametrize("bad", [np.inf, np.nan])
def test_non_finite_row_is_refused_before_the_reservation_even_if_assume_finite(bad):
    # set_config(assume_finite=True) turns scikit-learn's check off: the row
    # would reach the private phase, and the fit would fail (charged) on D
    # plus that row only.  Private fits check finiteness whatever the config.
    import sklearn

    from sklearn_dp.model_selection import DPGridSearchCV
    from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler

    X, y = _data()
    X_bad = X.copy()
    X_bad[3, 1] = bad
    y_bad = y.astype(float)
    y_bad[5] = bad
    budget = PrivacyBudget(10.0, 1e-3, composition="basic")
    fits = [
        (lambda: DPLogisticRegression(classes=[0, 1], budget=budget), X_bad, y),
        (lambda: DPLasso(budget=budget, feature_bound=1.0, y_bound=1.0), X_bad, y),
        (lambda: DPLasso(budget=budget, feature_bound=1.0, y_bound=1.0), X, y_bad),
        (lambda: DPStandardScaler(bounds=(-1.0, 1.0), budget=budget), X_bad, None),
        (lambda: DPMinMaxScaler(bounds=(-1.0, 1.0), budget=budget), X_bad, None),
        (
            lambda: DPGridSearchCV(
                DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0]}, budget=budget
            ),
            X_bad,
            y,
        ),
    ]
    with sklearn.config_context(assume_finite=True):
        for make, X_fit, y_fit in fits:
            with pytest.raises(ValueError, match="(?i)nan|infinity"):
                make().fit(X_fit, y_fit)
    assert budget.ledger == []
    assert budget.spent == (0.0, 0.0)


_KILLED_FIT = """
import functools, sys, time
import numpy as np
import sklearn_dp.solvers._gradient_descent as gd
from sklearn_dp import DPLogisticRegression, PrivacyBudget

original = gd.dp_gd
@functools.wraps(original)  # the registry reads the solver's arguments off its signature
def slow(*args, **kwargs):
    open(sys.argv[2], "w").close()  # inside the solver: the data is being read
    time.sleep(60)
    return original(*args, **kwargs)
from sklearn_dp.solvers import _registry
import dataclasses
_registry._REGISTRY["dp_gd"] = dataclasses.replace(_registry.SOLVERS["dp_gd"], run=slow)
rng = np.random.default_rng(0)
X = rng.uniform(-0.5, 0.5, size=(100, 3)); y = (X[:, 0] > 0).astype(int)
budget = PrivacyBudget(2.0, 1e-5, storage=sys.argv[1], composition="basic")
DPLogisticRegression(classes=[0, 1], budget=budget, solver="dp_gd").fit(X, y)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_process_killed_mid_fit_leaves_the_reservation_charged(tmp_path):
    path, marker = tmp_path / "ledger.sqlite", tmp_path / "inside"
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(_KILLED_FIT), str(path), str(marker)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the fit never reached the solver"
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.communicate(timeout=30)
    budget = PrivacyBudget(2.0, 1e-5, storage=path)
    (entry,) = budget.ledger
    assert entry.status == "reserved" and entry.solver == "dp_gd"
    assert budget.spent == pytest.approx((1.0, 1e-5))


def _duplicated(X):
    """X as a CSR matrix whose every stored value is split into 1000 duplicates."""
    X = sp.csr_matrix(X)
    counts = np.diff(X.indptr) * 1000
    data = np.repeat(X.data / 1000, 1000)
    indices = np.repeat(X.indices, 1000)
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return sp.csr_matrix((data, indices, indptr), shape=X.shape)


def test_sparse_duplicates_are_summed_before_clipping():
    # Clipping each duplicate separately and then summing would let 1000
    # duplicates of 5.0 with feature_bound=1 give X[0, 0] = 1000.
    X, y = _data(n=60)
    X[0, 0] = 5000.0
    dense_fit = DPLogisticRegression(
        classes=[0, 1], solver="dp_cd", feature_bound=1.0, max_iter=2, random_state=3
    ).fit(sp.csr_matrix(X), y)
    duplicated = _duplicated(X)
    assert not duplicated.has_canonical_format
    before = duplicated.copy()
    sparse_fit = DPLogisticRegression(
        classes=[0, 1], solver="dp_cd", feature_bound=1.0, max_iter=2, random_state=3
    ).fit(duplicated, y)
    np.testing.assert_allclose(sparse_fit.coef_, dense_fit.coef_, rtol=1e-9, atol=1e-12)
    # The caller's matrix is not canonicalised in place.
    assert not duplicated.has_canonical_format
    assert np.array_equal(duplicated.data, before.data)


def test_sparse_duplicates_move_a_release_by_at_most_its_sensitivity():
    X, y = _data(n=60)
    row = sp.csr_matrix(
        (np.full(1000, 5.0), np.zeros(1000, dtype=np.int32), [0, 1000]), shape=(1, X.shape[1])
    )
    D = sp.csr_matrix(X)
    D_prime = sp.vstack([D, row], format="csr")
    D_prime = sp.csr_matrix((D_prime.data, D_prime.indices, D_prime.indptr), shape=D_prime.shape)
    y_prime = np.append(y, 1)
    values = []
    for Xi, yi in ((D, y), (D_prime, y_prime)):
        with trace_releases(
            substitute=lambda r: 60.0 if r.label == "row count" else 0 * r.output
        ) as trace:
            DPSCORegressor(solver="dp_gd", max_iter=2, random_state=0).fit(Xi, yi.astype(float))
        values.append([r.value for r in trace.releases if r.label != "row count"])
        sensitivity = [r.sensitivity for r in trace.releases if r.label != "row count"]
        norms = [r.norm for r in trace.releases if r.label != "row count"]
    assert len(values[0]) == len(values[1])
    for a, b, s, norm in zip(*values, sensitivity, norms):
        # The "auto" bounds release utility vectors (linf), the gradients are l2.
        ord_ = {"l1": 1, "linf": np.inf}.get(norm, None)
        moved = np.linalg.norm(np.ravel(np.asarray(a) - np.asarray(b)), ord=ord_)
        assert moved <= s * (1 + 1e-9)


def _duplicates_overflow(dtype):
    """CSR X whose last row stores two finite duplicates of one cell summing beyond the range."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 3)).astype(dtype)
    big = np.finfo(dtype).max
    row = sp.csr_matrix(
        (np.array([big, big], dtype=dtype), np.array([0, 0], dtype=np.int32), np.array([0, 2])),
        shape=(1, 3),
    )
    X_prime = sp.vstack([sp.csr_matrix(X), row], format="csr")
    # vstack may canonicalise: rebuild with the duplicates stored as given.
    X_prime = sp.csr_matrix((X_prime.data, X_prime.indices, X_prime.indptr), shape=X_prime.shape)
    assert not X_prime.has_canonical_format
    assert np.all(np.isfinite(X_prime.data))
    return X_prime


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "estimator, params, labels",
    [
        (DPLogisticRegression, dict(classes=[0, 1], max_iter=3, solver="dp_newton"), "binary"),
        (DPSCORegressor, dict(max_iter=3, solver="dp_gd"), "regression"),
        (DPLasso, dict(alpha=0.1), "regression"),
    ],
)
def test_sparse_duplicates_summing_to_infinity_are_refused_before_the_spend(
    estimator, params, labels, dtype
):
    # Finite duplicate entries of one cell whose sum overflows: scikit-learn's
    # finiteness check runs on the stored entries, and summing the duplicates
    # makes the cell inf; every release of the fit on D + row would be NaN (the
    # fit on D finite), an infinite privacy loss for that row.
    X = _duplicates_overflow(dtype)
    y = np.arange(X.shape[0]) % 2 if labels == "binary" else np.linspace(-1, 1, X.shape[0])
    budget = PrivacyBudget(10.0, 1e-3)
    with trace_releases() as trace:
        with pytest.raises(ValueError, match="infinity"):
            estimator(epsilon=1.0, random_state=0, budget=budget, **params).fit(X, y)
    assert budget.ledger == []
    assert trace.releases == []


def _stale_flag_pair(unsorted):
    """D, and D plus a row storing one cell many times, flagged canonical by a stale cache.

    scipy caches ``has_canonical_format``; a caller that rewrites ``indices``
    in place (feature hashing, say) keeps the stale ``True``, and scikit-learn's
    validation returns the same object.
    """
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.uniform(-0.5, 0.5, size=(40, 3)))
    if unsorted:
        data, index = np.full(900, 5.0), np.tile(np.array([0, 1, 0], dtype=np.int32), 300)
    else:
        data, index = np.full(1000, 5.0), np.zeros(1000, dtype=np.int32)
    X_prime = sp.csr_matrix(
        (
            np.concatenate([X.data, data]),
            np.concatenate([X.indices, index]),
            np.append(X.indptr, X.indptr[-1] + data.size),
        ),
        shape=(41, 3),
    )
    X_prime.has_canonical_format = True  # stale: the last row stores cells repeatedly
    return X, X_prime


@pytest.mark.parametrize("unsorted", [False, True])
@pytest.mark.parametrize(
    "estimator, params",
    [
        (DPLogisticRegression, dict(classes=[0, 1], solver="dp_gd", max_iter=3, data_norm=1.0)),
        (DPSCORegressor, dict(solver="dp_ssp", data_norm=1.0, y_bound=1.0)),
    ],
)
def test_stale_canonical_flag_does_not_skip_summing_duplicates(estimator, params, unsorted):
    # scipy's cached has_canonical_format is not trusted: bounding each
    # duplicate of a cell on its own reads the row's norm as sqrt(k) * 5
    # instead of k * 5, and such a row would move dp_gd's gradient sum by 22x
    # and dp_ssp's Gram matrix by 500x their declared sensitivities.
    X, X_prime = _stale_flag_pair(unsorted)
    y = np.arange(41) % 2 if estimator is DPLogisticRegression else np.linspace(-1, 1, 41)
    traces = []
    for features, labels in ((X, y[:40]), (X_prime, y)):
        with trace_releases(substitute=lambda release: np.zeros(np.shape(release.output))) as t:
            estimator(epsilon=1.0, random_state=0, **params).fit(features, labels)
        traces.append(t.releases)
    assert X_prime.has_canonical_format  # the caller's matrix is untouched
    assert len(traces[0]) == len(traces[1])
    for a, b in zip(*traces):
        if a.value is None or a.label == "row count":
            continue
        moved = np.linalg.norm(np.ravel(np.asarray(b.value, float) - np.asarray(a.value, float)))
        assert moved <= a.sensitivity * (1 + 1e-6), (a.label, moved, a.sensitivity)


def test_concurrent_private_phases_keep_warnings_silenced():
    import threading

    inside, release = threading.Event(), threading.Event()
    escaped = []

    def long_phase():
        with PrivatePhase("A", None):
            inside.set()
            release.wait(10)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        thread = threading.Thread(target=long_phase)
        thread.start()
        inside.wait(10)
        with PrivatePhase("B", None):
            pass
        # B ended while A still reads private data: still silenced.
        warnings.warn("private value 42", RuntimeWarning)
        escaped.extend(caught)
        release.set()
        thread.join()
        warnings.warn("public", UserWarning)
    assert not any("42" in str(w.message) for w in escaped)
    assert any("public" in str(w.message) for w in caught)


def test_solver_share_chosen_from_released_values_uses_basic_composition():
    """A solver whose privacy profile depends on the noisy count gets the basic share.

    With an explicit ``batch_size`` DP-SGD's sampling rate is ``batch_size / n~``:
    its event is chosen from a released value, which is fully adaptive
    composition; numerical (PLD) composition with the count is proven only for
    profiles fixed before the data, so the solver gets what basic composition
    leaves.  A profile fixed in advance (dp_gd) keeps the numerical share.
    """
    from sklearn_dp._protocol import COUNT_EPSILON_FRACTION
    from sklearn_dp.accounting import epsilon_of_event

    X, y = _data(n=400)
    common = dict(
        epsilon=1.0,
        delta=1e-6,
        classes=[0, 1],
        random_state=0,
        data_norm=1.0,
        intercept_scaling=1.0,
    )
    floor = 1.0 - COUNT_EPSILON_FRACTION * 1.0
    adaptive = DPLogisticRegression(solver="dp_sgd", batch_size=32, max_iter=5, **common).fit(X, y)
    assert epsilon_of_event(adaptive.dp_event_.events[-1], 1e-6) <= floor + 1e-9
    fixed = DPLogisticRegression(solver="dp_gd", max_iter=5, **common).fit(X, y)
    assert epsilon_of_event(fixed.dp_event_.events[-1], 1e-6) > floor


# --------------------------------------------------------------------------
# The debug switch
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "false", "no", "off", ""])
def test_debug_switch_off_values_keep_the_protection(monkeypatch, value):
    monkeypatch.setenv("SKLEARN_DP_DEBUG", value)
    with pytest.raises(Exception) as raised:
        with PrivatePhase("Test", None):
            raise IndexError("row 17 of 1234")
    assert type(raised.value).__name__ == "PrivateFitError"
    assert "1234" not in str(raised.value)


def test_debug_mode_says_the_fit_is_not_private(monkeypatch):
    monkeypatch.setenv("SKLEARN_DP_DEBUG", "1")
    X, y = _data(100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLogisticRegression(classes=[0, 1], max_iter=2, random_state=0).fit(X, y)
    assert any(issubclass(w.category, PrivacyLeakWarning) for w in caught)


# --------------------------------------------------------------------------
# A private fit runs its planned steps whatever the data
# --------------------------------------------------------------------------


_ESTIMATORS = {
    "DPLasso": DPLasso,
    "DPLogisticRegression": DPLogisticRegression,
    "DPSCORegressor": DPSCORegressor,
}


@pytest.mark.parametrize(
    "estimator, solver, params",
    [
        ("DPSCORegressor", "dp_svrg", dict(alpha=0.5)),
        ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l2")),
        ("DPLasso", "dp_cd", dict(alpha=0.1)),
        ("DPSCORegressor", "dp_cd", dict(feature_bound=1.0)),
    ],
)
def test_noiseless_stops_never_run_in_a_private_fit(estimator, solver, params):
    """A private fit runs its planned steps whatever the data (here: data a noiseless run
    solves at once, y = 0), so n_iter_ does not reveal convergence."""
    X, labels = regression_data(1500, 5, coef=np.linspace(0.5, -0.5, 5))
    iterations = []
    for y in (np.zeros(X.shape[0]), labels):
        model = _ESTIMATORS[estimator](
            epsilon=1.0, delta=1e-5, solver=solver, random_state=0, y_bound=1.0, **params
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with trace_releases(substitute=lambda r: np.zeros(np.shape(r.output))) as trace:
                model.fit(X, y)
        iterations.append((model.n_iter_, len(trace.releases)))
    assert iterations[0] == iterations[1]


# --------------------------------------------------------------------------
# The solver's share of the budget never depends on a released value.
#
# Estimators give a solver either the basic-composition floor or a larger
# share that the accountant certifies for the composition of the count, the
# bound releases and the solver.  The larger share is valid only when the
# solver's privacy profile is fixed before the data; a choice between the two
# made from a released value (the DP row count, released bounds) would be a
# mixture of two mechanisms, which is only (epsilon, 2 delta)-DP.  So, for
# every (estimator, solver) pair, the epsilon handed to the solver must be the
# same whatever the data's row count and scale.
# --------------------------------------------------------------------------

ROW_COUNTS = (60, 600, 6000)


@contextlib.contextmanager
def solver_epsilons(solver):
    """The epsilon each call of ``solver``'s function receives, in a list."""
    spec = SOLVERS[solver]
    original = spec.run
    seen = []

    @functools.wraps(original)  # the registry reads the solver's arguments off its signature
    def recording(*args, **kwargs):
        seen.append(kwargs["epsilon"])
        return original(*args, **kwargs)

    object.__setattr__(spec, "run", recording)
    try:
        yield seen
    finally:
        object.__setattr__(spec, "run", original)


def _share_data(estimator, n):
    if estimator == "DPLogisticRegression":
        return binary_data(n, 3, seed=n, noise=0.3)
    return regression_data(n, 3, seed=n)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "estimator, solver, params",
    [pytest.param(e, s, p, id=f"{e}-{s}") for (e, s), p in CONFIGS.items()],
)
def test_the_solver_share_does_not_depend_on_the_row_count(estimator, solver, params):
    extra = {"classes": [0, 1]} if estimator == "DPLogisticRegression" else {}
    with solver_epsilons(solver) as seen:
        for n in ROW_COUNTS:
            X, y = _share_data(estimator, n)
            model = _ESTIMATORS[estimator](
                epsilon=1.0, delta=1e-5, solver=solver, random_state=0, **extra, **params
            )
            model.fit(X, y)
    assert len(seen) == len(ROW_COUNTS)
    assert len(set(seen)) == 1, f"solver epsilon varies with the row count: {seen}"


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "estimator, solver, params",
    [
        ("DPSCORegressor", "dp_gd", dict(max_iter=5)),
        ("DPSCORegressor", "dp_newton", dict(max_iter=3)),
        ("DPSCORegressor", "dp_accmd", dict(penalty=None, radius=2.0, max_iter=5)),
        ("DPLasso", "frank_wolfe", dict(max_iter=5)),
        ("DPLasso", "dp_cd", dict(alpha=0.1, max_iter=2)),
        ("DPSCORegressor", "dp_ssp", dict()),
    ],
)
def test_the_solver_share_does_not_depend_on_released_bounds(estimator, solver, params):
    """The released bounds ("auto", on data of very different scales) do not change the share."""
    with solver_epsilons(solver) as seen:
        for scale_x, scale_y in [(0.01, 0.01), (1.0, 1.0), (100.0, 1.0), (1.0, 1000.0)]:
            X, y = regression_data(1000, 3, coef=np.linspace(0.5, -0.5, 3))
            X, y = scale_x * X, scale_y * y
            _ESTIMATORS[estimator](
                epsilon=1.0, delta=1e-5, solver=solver, random_state=0, **params
            ).fit(X, y)
    assert len(set(seen)) == 1, seen


# --------------------------------------------------------------------------
# The fit plan: computed once from public inputs, each solver plan once per fit
# --------------------------------------------------------------------------


def _count_plans(monkeypatch, solver):
    """Record ``(n_samples, epsilon)`` of every call of ``solver``'s plan.

    Calls through the registry (the estimator's planning) and calls by the
    solver's own module (a solver that plans again for itself) alike.
    """
    import dataclasses
    import functools
    import sys

    from sklearn_dp.solvers import SOLVERS

    spec = SOLVERS[solver]
    calls = []

    @functools.wraps(spec.plan)
    def plan(n_samples, n_params, epsilon, delta, call):
        calls.append((n_samples, epsilon, repr(call)))
        return spec.plan(n_samples, n_params, epsilon, delta, call)

    monkeypatch.setitem(_registry._REGISTRY, solver, dataclasses.replace(spec, plan=plan))
    monkeypatch.setattr(sys.modules[spec.plan.__module__], spec.plan.__name__, plan)
    return calls


def test_a_plan_is_reused_for_a_call_that_agrees_on_what_it_read():
    from sklearn_dp._protocol import SolverPlanner
    from sklearn_dp.solvers import SolverCall

    seen = []

    def plan(n_samples, n_params, epsilon, delta, call):
        seen.append(call.max_iter)
        return None

    planner = SolverPlanner(plan, None, epsilon=1.0, delta=1e-5, floor=0.5)
    for max_iter, tol in [(2, 1.0), (2, 9.0), (5, 1.0)]:  # tol is never read
        planner.plan((3, SolverCall({"max_iter": max_iter, "tol": tol})), None, 0.5)
    assert seen == [2, 5]
    planner.plan((4, SolverCall({"max_iter": 2, "tol": 1.0})), None, 0.5)  # other n_params
    planner.plan((3, SolverCall({"max_iter": 2, "tol": 1.0})), 100.0, 0.5)  # released count
    assert seen == [2, 5, 2, 2]


@pytest.mark.parametrize(
    "make, solver",
    [
        (lambda: DPLogisticRegression(classes=[0, 1], data_norm=1.0, solver="dp_gd"), "dp_gd"),
        (lambda: DPLogisticRegression(classes=[0, 1], solver="dp_newton"), "dp_newton"),
        # The sampling rate needs the count: planned from the released count only.
        (lambda: DPLogisticRegression(classes=[0, 1], solver="dp_sgd", batch_size=50), "dp_sgd"),
        (lambda: DPSCORegressor(solver="dp_gd", y_bound=1.0), "dp_gd"),
        (lambda: DPLasso(solver="dp_ssp"), "dp_ssp"),
    ],
)
def test_each_solver_plan_is_computed_once_per_fit(monkeypatch, make, solver):
    X, y = _data(n=400)
    calls = _count_plans(monkeypatch, solver)
    budget = PrivacyBudget(10.0, 1e-4, composition="basic")
    reserved = []
    reserve = budget.reserve

    def recording(*args, **kwargs):
        reserved.append(kwargs.get("event"))
        return reserve(*args, **kwargs)

    budget.reserve = recording
    model = make().set_params(epsilon=1.0, delta=1e-5, random_state=0)
    plan = model._fit_plan(X[:2], y[:2])  # public inputs: the schema of two rows
    before_fit = len(calls)
    calls.clear()
    model.set_params(budget=budget).fit(X, y)
    # No plan is computed twice with the same arguments.
    assert len(calls) == len(set(calls))
    before_data = [call for call in calls if call[0] is None]
    after_release = [call for call in calls if call[0] is not None]
    # Before the data: the share search's candidates (a calibration each, at
    # most 4), the same as _fit_plan's; a fit that may give the scales' share
    # to its solver searches that share too (at most 4 more); after the release of
    # the count, one re-plan, from the released values.
    spare = (plan.context["scaling"] or {}).get("spare", False)
    assert before_fit <= 4
    assert before_fit <= len(before_data) <= before_fit + (4 if spare else 0)
    assert len(after_release) == 1
    # The fit reserved the event of the plan _fit_plan returned.
    assert reserved == [plan.event]
    assert plan.solver == model.solver_ == solver
    assert plan.privacy_spent == model.privacy_spent_


def _first_config_of_each_solver():
    seen = {}
    for (estimator, solver), params in CONFIGS.items():
        seen.setdefault(solver, (estimator, params))
    return [(solver, *seen[solver]) for solver in sorted(SOLVERS) if solver in seen]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("solver, estimator, params", _first_config_of_each_solver())
def test_every_solver_runs_the_plan_it_was_charged_for(monkeypatch, solver, estimator, params):
    """After the release of the count, one plan: the solver runs it and never plans again."""
    if estimator == "DPLogisticRegression":
        X, y = binary_data(400, 3)
        params = dict(params, classes=[0, 1])
    else:
        X, y = regression_data(400, 3, coef=np.linspace(0.5, -0.5, 3))
    calls = _count_plans(monkeypatch, solver)
    spec = SOLVERS[solver]
    solver_calls = []
    plan_call = _registry.plan_call

    def planned_by_the_solver(*args, **kwargs):
        solver_calls.append(args)
        return plan_call(*args, **kwargs)

    # A solver plans for itself (a direct call) through plan_call; estimators never do.
    monkeypatch.setattr(_registry, "plan_call", planned_by_the_solver)
    model = _ESTIMATORS[estimator](
        epsilon=1.0,
        delta=1e-5 if spec.approximate_dp else 0.0,
        solver=solver,
        random_state=0,
        **params,
    )
    model.fit(X, y)
    assert solver_calls == []  # the solver ran the plan it was handed
    assert len(calls) == len(set(calls)), calls
    planned_options = calls[0][2]  # of the plan before the data
    after = [call for call in calls if call[0] is not None]
    if all(call[2] == planned_options for call in after):
        assert len(after) == 1, calls
    else:
        # Options that depend on released values (a radius in the units of a
        # released label bound): the share is searched again from them.
        assert 1 <= len(after) <= 8, calls


def test_fit_plan_reads_no_private_value():
    X, y = _data(n=400)
    model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
    with trace_releases() as trace:
        plan = model._fit_plan(X, y)
    assert trace.releases == []
    # The same plan from two rows of the schema as from all rows: the row
    # count is not an input.
    assert model._fit_plan(X[:2], y[:2]) == plan
    assert not hasattr(model, "n_features_in_")  # the estimator is left as it was


def test_a_noise_scale_beyond_the_exact_samplers_is_refused_before_the_reservation():
    # The plan's noise multipliers are public: a release the gateway would
    # refuse after the charge is refused while planning, spending nothing.
    X, y = _data()
    budget = PrivacyBudget(10.0, 1e-3)
    model = DPLogisticRegression(
        classes=[0, 1],
        budget=budget,
        solver="dp_newton",
        solver_options={"hessian_share": 1e-300},
        random_state=0,
    )
    with trace_releases() as trace, pytest.raises(ValueError, match="exact samplers' range"):
        model.fit(X, y)
    assert budget.ledger == [] and budget.spent == (0.0, 0.0)
    assert trace.releases == []
    with pytest.raises(ValueError, match="exact samplers' range"):
        model._fit_plan(X[:2], y[:2])


def test_a_noise_scale_beyond_the_exact_samplers_in_the_private_phase_is_a_public_refusal():
    # A scale known only from released values is refused by the gateway: a
    # function of public and released values, shown as it is (not withheld),
    # and the fit keeps its charge.
    budget = PrivacyBudget(1.0)
    reservation = budget.reserve(0.5, estimator="Test")
    with pytest.raises(ValueError, match="exact samplers' range"):
        with PrivatePhase("Test", reservation):
            _noise.gaussian(
                np.zeros(3), sensitivity=1.0, noise_std=1e12, rng=np.random.default_rng(0)
            )
    (entry,) = budget.ledger
    assert entry.status == "failed" and entry.error == "ValueError"


def _multipliers(event):
    if isinstance(event, (dpe.GaussianDpEvent, dpe.LaplaceDpEvent)):
        return [event.noise_multiplier]
    parts = []
    for attribute in event.__attrs_attrs__:
        value = getattr(event, attribute.name)
        for part in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(part, dpe.DpEvent):
                parts += _multipliers(part)
    return parts


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "estimator, solver, params",
    [pytest.param(e, s, p, id=f"{e}-{s}") for (e, s), p in CONFIGS.items()],
)
def test_each_noise_multiplier_of_a_fit_event_is_one_of_its_releases(estimator, solver, params):
    """What the planning refusal of out-of-range noise rests on: each Gaussian and
    Laplace multiplier of a fit's event is at most the noise over the
    sensitivity of one of the fit's releases."""
    if estimator == "DPLogisticRegression":
        X, y = binary_data(300, 3)
        params = dict(params, classes=[0, 1])
    else:
        X, y = regression_data(300, 3, coef=np.linspace(0.5, -0.5, 3))
    model = _ESTIMATORS[estimator](epsilon=1.0, delta=1e-5, solver=solver, random_state=0, **params)
    with trace_releases() as trace:
        model.fit(X, y)
    ratios = [
        release.scale / release.sensitivity
        for release in trace.releases
        if release.mechanism in ("gaussian", "laplace") and release.sensitivity > 0
    ]
    for multiplier in _multipliers(model.dp_event_):
        assert any(ratio >= multiplier * (1 - 1e-12) for ratio in ratios), (multiplier, ratios)


# --------------------------------------------------------------------------
# Events fixed before the data
# --------------------------------------------------------------------------


@pytest.mark.parametrize("config", sorted(CONFIGS), ids="-".join)
def test_solvers_declaring_bound_free_events_plan_one_event_at_any_bound(config):
    """``event_reads_bounds=False`` holds: the event planned before the data ignores the bounds."""
    from solver_configs import _ESTIMATORS

    name, solver = config
    if SOLVERS[solver].event_reads_bounds:
        pytest.skip("the solver does not declare its event free of the bounds")
    cls, base = _ESTIMATORS[name]
    delta = 1e-5 if SOLVERS[solver].approximate_dp else 0.0
    X = np.zeros((2, 3))
    y = np.array([0, 1]) if name == "DPLogisticRegression" else np.array([0.0, 1.0])
    events = []
    for bound in (0.05, 0.5, 7.0, 50.0):
        params = {**base, **CONFIGS[config]}
        defaults = cls(**params).get_params()
        for key in ("data_norm", "feature_bound", "y_bound"):
            if defaults.get(key) is not None:
                params[key] = bound
        plan = cls(solver=solver, delta=delta, random_state=0, **params)._fit_plan(X, y)
        events.append(plan.event)
    assert all(event == events[0] for event in events)


def _fit_on_a_file_written_mid_fit(path, X, y, write):
    """Releases of a dp_gd fit on ``np.load(path, mmap_mode="r")``; with ``write``, another
    writer sets the file's last row to 1e6 right after the first gradient release."""
    np.save(path, X)
    mapped = np.load(path, mmap_mode="r")
    writer = np.load(path, mmap_mode="r+")
    gradients = []

    def substitute(release):
        if release.label == "clipped gradient sum":
            gradients.append(np.array(release.value, dtype=float))
            if write and len(gradients) == 1:
                writer[-1] = 1e6
                writer.flush()
        value = np.asarray(release.value, dtype=float)
        return np.zeros(value.shape) if value.ndim else float(len(X))

    model = DPLogisticRegression(
        classes=[0, 1], solver="dp_gd", data_norm=1.0, max_iter=3, epsilon=1.0, random_state=0
    )
    with trace_releases(substitute=substitute):
        model.fit(mapped, y)
    return gradients


def test_a_memory_mapped_X_is_read_once_so_a_write_during_the_fit_moves_no_release(tmp_path):
    # Each row's clip factor is computed once per fit; a file written between
    # two passes would put rows under factors computed for other values.
    X, y = binary_data(n=200, d=3)
    path = tmp_path / "X.npy"
    unchanged = _fit_on_a_file_written_mid_fit(path, X, y, write=False)
    written = _fit_on_a_file_written_mid_fit(path, X, y, write=True)
    assert len(written) == len(unchanged) == 3
    for got, want in zip(written, unchanged):
        np.testing.assert_array_equal(got, want)


def test_in_process_memory_copies_what_maps_a_file_and_nothing_else(tmp_path):
    from sklearn_dp._validation import in_process_memory

    X = np.arange(12.0).reshape(4, 3)
    assert in_process_memory(X) is X
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    copied = in_process_memory(mapped)
    np.testing.assert_array_equal(copied, X)
    assert not np.shares_memory(copied, mapped)
    sparse = sp.csr_matrix(X)
    assert in_process_memory(sparse) is sparse
    np.save(tmp_path / "data.npy", sparse.data)
    sparse_mapped = sp.csr_matrix(
        (np.load(tmp_path / "data.npy", mmap_mode="r"), sparse.indices, sparse.indptr),
        shape=X.shape,
    )
    copied = in_process_memory(sparse_mapped)
    assert not np.shares_memory(copied.data, sparse_mapped.data)
    np.testing.assert_array_equal(copied.toarray(), X)


@pytest.mark.parametrize(
    "extra_label",
    [1.0, np.float32(0), "1", True],
    ids=["float", "numpy-float", "string", "boolean"],
)
@pytest.mark.parametrize("container", [list, lambda y: np.asarray(y, dtype=object)])
def test_a_label_of_another_kind_in_a_list_is_refused_before_the_spend(extra_label, container):
    # numpy infers a list's dtype from every element: one row labelled 1.0
    # among ints would turn classes_ and predict() into floats, showing the row.
    X, y = binary_data(n=60, d=3)
    labels = [int(v) for v in y] + [extra_label]
    budget = PrivacyBudget(5.0, 1e-3)
    model = DPLogisticRegression(epsilon=1.0, data_norm=1.0, budget=budget)
    with pytest.raises(ValueError, match="mix kinds of value"):
        model.fit(np.vstack([X, np.zeros((1, 3))]), container(labels))
    assert budget.ledger == []
    budget = PrivacyBudget(5.0, 1e-3, composition="basic")
    search = DPGridSearchCV(
        DPLogisticRegression(data_norm=1.0), {"C": [1.0]}, epsilon=1.0, budget=budget
    )
    with pytest.raises(ValueError, match="mix kinds of value"):
        search.fit(np.vstack([X, np.zeros((1, 3))]), container(labels))
    assert budget.ledger == []


def test_labels_of_one_kind_in_a_list_keep_their_type():
    X, y = binary_data(n=60, d=3)
    ints = DPLogisticRegression(epsilon=float("inf"), data_norm=1.0).fit(X, [int(v) for v in y])
    floats = DPLogisticRegression(epsilon=float("inf"), data_norm=1.0).fit(X, [float(v) for v in y])
    assert ints.classes_.dtype.kind == "i" and floats.classes_.dtype.kind == "f"
    # Regression labels are numbers whatever their Python type.
    values = [1, 2.5] * 30
    DPSCORegressor(epsilon=float("inf"), data_norm=1.0, y_bound=3.0).fit(X, values)
