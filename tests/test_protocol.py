"""The privacy protocol of a fit: reserve before touching, nothing escapes the private phase.

Regression tests for what an adversarial review found (issue #13): failures
that were free queries, warnings and floating-point traps that aborted fits
after a release, and sparse duplicates that escaped the entrywise clip.
"""

from __future__ import annotations

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

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget
from sklearn_dp.exceptions import ConvergenceError, PrivateFitError
from sklearn_dp.linear_model._base import PrivatePhase
from sklearn_dp.testing import trace_releases

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def test_warning_turned_into_an_error_fails_the_fit_and_stays_charged():
    # Was: with warnings.simplefilter("error") the weak-delta warning (its text
    # holds 1/n_public) aborted every fit after the count was released, with
    # nothing spent: 2000 failed fits pinned n to +-0.7 rows.
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
import sys, time
import numpy as np
import sklearn_dp.solvers._gradient_descent as gd
from sklearn_dp import DPLogisticRegression, PrivacyBudget

original = gd.dp_gd
def slow(*args, **kwargs):
    open(sys.argv[2], "w").close()  # inside the solver: the data is being read
    time.sleep(60)
    return original(*args, **kwargs)
from sklearn_dp.solvers import SOLVERS
import dataclasses
SOLVERS["dp_gd"] = dataclasses.replace(SOLVERS["dp_gd"], function=slow)
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
    # Was: each duplicate was clipped separately and then summed, so 1000
    # duplicates of 5.0 with feature_bound=1 gave X[0, 0] = 1000.
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
    from sklearn_dp.accounting import epsilon_of_event
    from sklearn_dp.solvers._common import COUNT_EPSILON_FRACTION

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
# The fit plan: computed once from public inputs, each solver plan once per fit
# --------------------------------------------------------------------------


def _count_plans(monkeypatch, solver):
    """Record ``(n_samples, epsilon)`` of every call of ``solver``'s registered plan."""
    import dataclasses

    from sklearn_dp.solvers import SOLVERS

    spec = SOLVERS[solver]
    calls = []

    def plan(n_samples, n_params, epsilon, delta, **kwargs):
        calls.append((n_samples, epsilon, repr(sorted(kwargs.items()))))
        return spec.plan(n_samples, n_params, epsilon, delta, **kwargs)

    monkeypatch.setitem(SOLVERS, solver, dataclasses.replace(spec, plan=plan))
    return calls


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
    # most 4), the same as _fit_plan's; after the release of the count, one
    # re-plan, from the released values.
    assert len(before_data) == before_fit <= 4
    assert len(after_release) == 1
    # The fit reserved the event of the plan _fit_plan returned.
    assert reserved == [plan.event]
    assert plan.solver == model.solver_ == solver
    assert plan.privacy_spent == model.privacy_spent_


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
