"""Tests of PrivacyBudget: composition, sharing, and the SQLite ledger."""

import copy
import dataclasses
import gc
import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import GridSearchCV

import sklearn_dp.budget as budget_module
from sklearn_dp.accounting import (
    ApproximateDpEvent,
    PureEpsilonDpEvent,
    epsilon_of_events,
    epsilon_of_zcdp,
    gaussian_noise_multiplier,
    gaussian_steps_event,
    laplace_steps_event,
)
from sklearn_dp.budget import LedgerEntry, PrivacyBudget
from sklearn_dp.exceptions import BudgetExceededError, BudgetStorageError

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code, *args, **popen_kwargs):
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen_kwargs,
    )


def _wait_for(path, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"subprocess exited early: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError("subprocess never reached the expected point")
        time.sleep(0.01)


class DummyEstimator(BaseEstimator):
    """Spends a fixed amount per fit, like a DP estimator would."""

    def __init__(self, budget=None, alpha=1.0, epsilon=0.05):
        self.budget = budget
        self.alpha = alpha
        self.epsilon = epsilon

    def fit(self, X, y=None):
        self.budget.check(self.epsilon, 0.0)
        self.budget.spend(self.epsilon, 0.0, estimator=type(self).__name__, solver="none")
        return self

    def score(self, X, y=None):
        return -self.alpha


# --------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0, -1.0, float("inf"), float("nan")])
def test_invalid_epsilon_limit(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyBudget(epsilon)


@pytest.mark.parametrize("epsilon", ["1", None, True])
def test_epsilon_limit_wrong_type(epsilon):
    with pytest.raises(TypeError, match="epsilon"):
        PrivacyBudget(epsilon)


@pytest.mark.parametrize("delta", [-0.1, 1.0, 2.0, float("nan")])
def test_invalid_delta_limit(delta):
    with pytest.raises(ValueError, match="delta"):
        PrivacyBudget(1.0, delta)


def test_invalid_storage_and_timeout():
    with pytest.raises(TypeError, match="storage"):
        PrivacyBudget(1.0, storage=123)
    with pytest.raises(ValueError, match="storage"):
        PrivacyBudget(1.0, storage=":memory:")
    with pytest.raises(ValueError, match="timeout"):
        PrivacyBudget(1.0, timeout=-1)


def test_invalid_spend_arguments():
    budget = PrivacyBudget(1.0, 1e-5)
    with pytest.raises(ValueError, match="epsilon"):
        budget.spend(-0.1)
    with pytest.raises(ValueError, match="epsilon"):
        budget.check(float("nan"))
    with pytest.raises(ValueError, match="delta"):
        budget.spend(0.1, 1.5)
    with pytest.raises(TypeError, match="DpEvent"):
        budget.spend(0.1, event="gaussian")
    assert budget.ledger == []


MALFORMED_EVENTS = [
    (dpe.ZCDpEvent(-10), "rho"),
    (dpe.ZCDpEvent(float("nan")), "rho"),
    (dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(1.0), -3), "count"),
    (dpe.SelfComposedDpEvent(dpe.ZCDpEvent(0.01), 2.5), "count"),
    (dpe.GaussianDpEvent(-1.0), "noise_multiplier"),
    (dpe.LaplaceDpEvent(float("nan")), "noise_multiplier"),
    (dpe.PoissonSampledDpEvent(1.5, dpe.GaussianDpEvent(1.0)), "sampling_probability"),
    (dpe.ComposedDpEvent([dpe.GaussianDpEvent(2.0), dpe.ZCDpEvent(-1.0)]), r"events\[1\]"),
    (dpe.SelfComposedDpEvent(dpe.ComposedDpEvent([dpe.ZCDpEvent(-0.5)]), 4), "rho"),
    (PureEpsilonDpEvent(-1.0, "exponential mechanism"), "noise_parameter"),  # its epsilon
    (ApproximateDpEvent(0.5, 2.0, "labels"), "delta"),
]


@pytest.mark.parametrize("composition", ["basic", "zcdp"])
@pytest.mark.parametrize(
    "event, field", MALFORMED_EVENTS, ids=[repr(e) for e, _ in MALFORMED_EVENTS]
)
def test_malformed_events_are_refused_and_spend_nothing(composition, event, field):
    # ZCDpEvent(-10) or a negative count would lower a zCDP budget's charge,
    # so later spends could exceed the budget.
    budget = PrivacyBudget(1.0, 1e-5, composition=composition)
    for call in (budget.spend, budget.check, budget.reserve):
        with pytest.raises(ValueError, match=field):
            call(0.1, 1e-6, event=event)
    with pytest.raises(TypeError, match="DpEvent"):
        budget.spend(0.1, 1e-6, event=dpe.ComposedDpEvent([dpe.GaussianDpEvent(1.0), 1]))
    assert budget.ledger == []
    assert budget.spent == (0.0, 0.0)
    # A well-formed event of the same shape is charged.
    budget.spend(0.1, 1e-6, event=dpe.SelfComposedDpEvent(dpe.ZCDpEvent(0.001), 2))
    assert len(budget.ledger) == 1


def test_numpy_scalars_accepted():
    budget = PrivacyBudget(np.float64(1.0), np.float32(0.0))
    budget.spend(np.float64(0.5), np.int64(0))
    assert budget.spent == (0.5, 0.0)


# --------------------------------------------------------------------------
# Spending and composition
# --------------------------------------------------------------------------


def test_basic_spend_check_remaining_and_ledger():
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    assert budget.spent == (0.0, 0.0)
    assert budget.remaining == (1.0, 1e-5)
    assert budget.check(0.4, 1e-6) is None
    assert budget.ledger == []  # check records nothing
    budget.spend(0.4, 1e-6, estimator="DPLogisticRegression", solver="dp_gd")
    budget.spend(0.1)
    assert budget.spent == pytest.approx((0.5, 1e-6))
    assert budget.remaining == pytest.approx((0.5, 9e-6))
    ledger = budget.ledger
    assert [e.estimator for e in ledger] == ["DPLogisticRegression", "manual"]
    assert ledger[0].solver == "dp_gd" and ledger[1].solver is None
    assert ledger[0].epsilon == 0.4 and ledger[0].delta == 1e-6
    assert ledger[0].event is None
    assert abs(ledger[0].timestamp - time.time()) < 60
    ledger.clear()  # a copy: the budget keeps its entries
    assert len(budget.ledger) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.ledger[0].epsilon = 0.0


def test_exact_remainder_can_be_spent():
    budget = PrivacyBudget(1.0)
    for _ in range(10):
        budget.spend(0.1)
    assert budget.remaining[0] == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError):
        budget.spend(1e-6)

    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    budget.spend(0.3, 3e-6)
    budget.spend(0.123456789, 1.1e-6)
    budget.spend(*budget.remaining)
    assert budget.remaining == pytest.approx((0.0, 0.0), abs=1e-12)
    with pytest.raises(BudgetExceededError):
        budget.check(1e-3, 0.0)


def test_remaining_reports_float_dust_as_zero():
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    for _ in range(10):
        budget.spend(0.1, 1e-6)
    # The float sums leave 1.7e-21 of delta and 1.1e-16 of epsilon: zero.
    assert budget.remaining == (0.0, 0.0)
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    budget.spend(0.3, 3e-6)
    budget.spend(0.123456789, 1.1e-6)
    budget.spend(*budget.remaining)
    assert budget.remaining == (0.0, 0.0)
    zcdp = PrivacyBudget(1.0, 1e-5)
    for _ in range(5):
        zcdp.spend(0.1, 1e-6)  # charged 0.005 of rho and 1e-6 of the pool each
    assert zcdp.remaining[1] == 0.0


def test_exceeded_leaves_ledger_unchanged_and_explains():
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    budget.spend(0.8, 1e-6)
    before = budget.ledger
    with pytest.raises(BudgetExceededError) as info:
        budget.spend(0.5, 1e-6, estimator="DPLasso")
    assert budget.ledger == before
    assert budget.spent == pytest.approx((0.8, 1e-6))
    message = str(info.value)
    assert "epsilon=0.5" in message  # what was asked
    assert "remaining (epsilon=0.2" in message  # what remains
    assert "composition='basic'" in message  # which rule refused
    assert "What would fit: epsilon at most 0.2 at this delta" in message  # what to do
    with pytest.raises(BudgetExceededError):
        budget.check(0.5, 1e-6)
    with pytest.raises(BudgetExceededError, match="delta"):
        budget.spend(0.1, 1e-4)
    assert budget.ledger == before


def test_basic_filter_never_admits_by_numerical_composition():
    # The old rule admitted an 11th fit because PLD composition of the events
    # fit; PLD composition of adaptively chosen fits is not a valid filter.
    sigma = gaussian_noise_multiplier(1.0, 1e-6)
    event = gaussian_steps_event(sigma, 1)
    budget = PrivacyBudget(10.0, 1e-5, composition="basic")
    for _ in range(10):
        budget.spend(1.0, 1e-6, event=event, estimator="DPLogisticRegression", solver="dp_gd")
    assert budget.spent == pytest.approx((10.0, 1e-5))
    assert budget.remaining == pytest.approx((0.0, 0.0), abs=1e-12)
    with pytest.raises(BudgetExceededError):
        budget.check(1.0, 1e-6, event=event)
    with pytest.raises(BudgetExceededError):
        budget.spend(1e-3, 0.0, event=event)
    assert len(budget.ledger) == 10
    # The fixed-sequence figure is reported, labelled, and never admits.
    numerical = epsilon_of_events([event] * 10, 1e-5)
    assert numerical < 5.0
    assert budget.fixed_sequence_epsilon() == pytest.approx(numerical)
    assert budget.fixed_sequence_epsilon(1e-6) == pytest.approx(
        epsilon_of_events([event] * 10, 1e-6)
    )


def test_fixed_sequence_epsilon_needs_every_event():
    budget = PrivacyBudget(10.0, 1e-5, composition="basic")
    assert budget.fixed_sequence_epsilon() == 0.0
    budget.spend(1.0, 1e-6, event=gaussian_steps_event(5.0, 1))
    assert budget.fixed_sequence_epsilon() is not None
    budget.spend(0.5, 0.0)  # no event: no numerical composition
    assert budget.fixed_sequence_epsilon() is None
    assert budget.spent == pytest.approx((1.5, 1e-6))


def test_fixed_sequence_results_are_cached(monkeypatch):
    calls = []

    def counting(events, delta):
        calls.append(len(events))
        return epsilon_of_events(events, delta)

    monkeypatch.setattr(budget_module, "epsilon_of_events", counting)
    budget = PrivacyBudget(10.0, 1e-5, composition="basic")
    event = gaussian_steps_event(3.0, 5)
    budget.spend(5.0, 1e-6, event=event)
    budget.spend(5.0, 1e-6, event=event)
    for _ in range(5):
        budget.fixed_sequence_epsilon()
        budget.spent
        budget.remaining
    assert calls == [2]


# --------------------------------------------------------------------------
# The zCDP filter
# --------------------------------------------------------------------------


def test_zcdp_charges_the_exact_rho_of_gaussian_and_pure_events():
    budget = PrivacyBudget(10.0, 1e-5, composition="zcdp")
    budget.spend(1.0, 1e-6, event=gaussian_steps_event(4.0, 8))  # 8 / (2 * 16)
    budget.spend(0.5, 0.0, event=laplace_steps_event(2.0, 1))  # (1/2)^2 / 2
    budget.spend(0.2, 0.0)  # pure, no event: 0.2^2 / 2
    budget.spend(0.4, 0.0, event=PureEpsilonDpEvent(0.4, "exponential mechanism over 3 items"))
    rhos = [entry.rho for entry in budget.ledger]
    assert rhos == pytest.approx([0.25, 0.125, 0.02, 0.02])
    assert [entry.pool_delta for entry in budget.ledger] == [0.0] * 4
    assert budget.rho_spent == pytest.approx(0.415)
    assert budget.delta_pool_spent == 0.0
    # The conversion is made at the half of delta that is not the pool.
    assert budget.spent == pytest.approx((epsilon_of_zcdp(0.415, 5e-6), 5e-6))


def test_zcdp_is_the_default_when_delta_is_positive():
    assert PrivacyBudget(2.0, 1e-5).composition == "zcdp"
    assert PrivacyBudget(2.0).composition == "basic"  # delta = 0: pure spends only
    assert PrivacyBudget(2.0, 1e-5, composition="basic").composition == "basic"
    budget = PrivacyBudget(2.0, 1e-5)
    assert budget.delta_pool == 5e-6 and budget.rho_limit > 0
    assert "composition='zcdp'" in repr(budget)


def test_zcdp_limit_is_the_conversion_of_the_budget():
    budget = PrivacyBudget(10.0, 1e-5, composition="zcdp")
    rho = budget.rho_limit
    pool = budget.delta_pool
    assert pool == 5e-6
    # Conversion at the other half of delta, plus log(1 / (1 - pool)) for the
    # approximate part, meets the budget, and a hair more rho does not.
    extra = -np.log1p(-pool)
    assert epsilon_of_zcdp(rho, 1e-5 - pool) + extra <= 10.0
    assert epsilon_of_zcdp(rho * (1 + 1e-6), 1e-5 - pool) + extra > 10.0
    # The classical bound rho + 2 sqrt(rho log(1 / delta)) is looser: more rho fits.
    assert rho + 2 * np.sqrt(rho * np.log(1 / (1e-5 - pool))) > 10.0
    assert budget.remaining == pytest.approx((10.0, pool), rel=1e-6)
    budget.spend(10.0, 1e-6, event=dpe.GaussianDpEvent(float(np.sqrt(0.5 / rho))))  # all of it
    assert budget.remaining == (0.0, pool)
    with pytest.raises(BudgetExceededError, match="rho"):
        budget.spend(0.01, 0.0)


def test_zcdp_filter_admission_rule_is_exact():
    """Admit while sum(rho_i) <= rho_limit and sum(pool delta_i) <= delta / 2."""
    budget = PrivacyBudget(10.0, 1e-5)
    rho_limit, pool = budget.rho_limit, budget.delta_pool
    # An approximate-DP part (epsilon, delta) costs epsilon^2 / 2 and delta.
    labels = ApproximateDpEvent(0.2, 2e-6, "label set")
    budget.spend(0.2, 2e-6, event=labels)
    (entry,) = budget.ledger
    assert (entry.rho, entry.pool_delta) == (pytest.approx(0.02), 2e-6)
    # A spend without a zCDP description is charged its own (epsilon, delta).
    budget.spend(0.4, 2e-6)
    assert (budget.ledger[-1].rho, budget.ledger[-1].pool_delta) == (pytest.approx(0.08), 2e-6)
    # A Gaussian part with an approximate part: the sum of both charges.
    sigma = 3.0
    budget.spend(
        1.0,
        1e-6,
        event=dpe.ComposedDpEvent([ApproximateDpEvent(0.1, 1e-6, "l"), dpe.GaussianDpEvent(sigma)]),
    )
    assert budget.ledger[-1].rho == pytest.approx(0.005 + 1 / (2 * sigma**2))
    assert budget.ledger[-1].pool_delta == 1e-6
    assert budget.delta_pool_spent == pytest.approx(5e-6) == pool
    # The pool is used up exactly: any further approximate part is refused,
    # a Gaussian spend is not.
    with pytest.raises(BudgetExceededError, match="pool"):
        budget.check(0.01, 1e-12, event=ApproximateDpEvent(0.01, 1e-12, "l"))
    used = budget.rho_spent
    exact = float(np.sqrt(0.5 / (rho_limit - used)))  # rho exactly what is left
    budget.check(1.0, 1e-6, event=dpe.GaussianDpEvent(exact))
    with pytest.raises(BudgetExceededError, match="rho"):
        budget.check(1.0, 1e-6, event=dpe.GaussianDpEvent(exact * (1 - 1e-6)))
    budget.spend(1.0, 1e-6, event=dpe.GaussianDpEvent(exact))
    assert budget.remaining == (0.0, 0.0)
    spent_epsilon, spent_delta = budget.spent
    assert spent_delta == pytest.approx(1e-5) and spent_epsilon == pytest.approx(10.0, rel=1e-6)


def test_zcdp_checks_the_final_event_against_rho_and_pool():
    budget = PrivacyBudget(10.0, 1e-5)
    reservation = budget.reserve(1.0, 1e-6, event=ApproximateDpEvent(0.5, 1e-6, "l"))
    with pytest.raises(RuntimeError, match="accounting error"):
        reservation.complete(ApproximateDpEvent(0.5, 2e-6, "l"))
    assert budget.ledger[-1].status == "failed"
    reservation = budget.reserve(1.0, 1e-6, event=ApproximateDpEvent(0.5, 1e-6, "l"))
    reservation.complete(ApproximateDpEvent(0.4, 1e-6, "l"))
    assert budget.ledger[-1].status == "completed"


def test_zcdp_needs_delta_and_a_known_rule():
    with pytest.raises(ValueError, match="delta > 0"):
        PrivacyBudget(1.0, 0.0, composition="zcdp")
    with pytest.raises(ValueError, match="composition"):
        PrivacyBudget(1.0, 1e-5, composition="pld")


def test_zcdp_refusal_names_the_rule_and_what_would_fit():
    budget = PrivacyBudget(2.0, 1e-5)
    sigma = gaussian_noise_multiplier(2.0, 1e-5)
    with pytest.raises(BudgetExceededError) as info:
        budget.spend(2.0, 1e-5, event=gaussian_steps_event(sigma, 1))
    message = str(info.value)
    assert "composition='zcdp'" in message and "rho_limit=" in message
    assert "composition='basic' admits any one fit" in message
    largest = float(message.split("Gaussian mechanism of epsilon up to ")[1].split(" ")[0])
    assert 1.5 < largest < 2.0
    # The figure is right (to its 4 printed digits) for a Gaussian mechanism.
    budget.check(
        largest * 0.999,
        1e-5,
        event=gaussian_steps_event(gaussian_noise_multiplier(largest * 0.999, 1e-5), 1),
    )
    with pytest.raises(BudgetExceededError):
        budget.check(
            largest * 1.001,
            1e-5,
            event=gaussian_steps_event(gaussian_noise_multiplier(largest * 1.001, 1e-5), 1),
        )
    # A refusal by the pool says so, and how to avoid it.
    budget.spend(0.1, 5e-6, event=ApproximateDpEvent(0.1, 5e-6, "label set"))
    with pytest.raises(BudgetExceededError, match="from the pool.*Pass classes="):
        budget.spend(0.1, 5e-6, event=ApproximateDpEvent(0.1, 5e-6, "label set"))


def test_admitted_fit_counts_on_a_10_1e5_budget():
    """Fits of (1, 1e-6) with the mechanism of DPLogisticRegression's default fit."""
    from sklearn_dp.accounting import largest_share

    count_event = dpe.LaplaceDpEvent(1.0 / 0.05)
    share = largest_share(
        lambda e: gaussian_steps_event(gaussian_noise_multiplier(e, 1e-6, 100), 100),
        count_event,
        1.0,
        1e-6,
        0.95,
    )
    fit = dpe.ComposedDpEvent(
        [count_event, gaussian_steps_event(gaussian_noise_multiplier(share, 1e-6, 100), 100)]
    )

    def admitted(budget):
        n = 0
        while True:
            try:
                budget.spend(1.0, 1e-6, event=fit)
            except BudgetExceededError:
                return n
            n += 1

    assert admitted(PrivacyBudget(10.0, 1e-5, composition="basic")) == 10
    zcdp = admitted(PrivacyBudget(10.0, 1e-5, composition="zcdp"))
    assert 60 <= zcdp <= 120
    # One (1, 1e-5) fit does not fit a (1, 1e-5) zCDP budget: the conversion's cost.
    single = PrivacyBudget(1.0, 1e-5, composition="zcdp")
    sigma = gaussian_noise_multiplier(1.0, 1e-5, 1)
    with pytest.raises(BudgetExceededError):
        single.spend(1.0, 1e-5, event=gaussian_steps_event(sigma, 1))
    PrivacyBudget(1.0, 1e-5, composition="basic").spend(
        1.0, 1e-5, event=gaussian_steps_event(sigma, 1)
    )


# --------------------------------------------------------------------------
# Reservations
# --------------------------------------------------------------------------


def test_reservation_is_charged_until_settled_and_after():
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    reservation = budget.reserve(0.6, 1e-6, estimator="DPLasso", solver="dp_cd")
    (entry,) = budget.ledger
    assert entry.status == "reserved" and entry.id == 1 and entry.event is None
    assert budget.spent == pytest.approx((0.6, 1e-6))
    with pytest.raises(BudgetExceededError):
        budget.reserve(0.5, 0.0)
    event = gaussian_steps_event(3.0, 2)
    reservation.complete(event)
    (entry,) = budget.ledger
    assert entry.status == "completed" and entry.event == event and entry.error is None
    second = budget.reserve(0.4, 0.0)
    second.fail(ZeroDivisionError("private 1234"))
    entry = budget.ledger[1]
    assert entry.status == "failed" and entry.error == "ZeroDivisionError"
    assert "1234" not in repr(entry)
    assert budget.spent == pytest.approx((1.0, 1e-6))


def test_zcdp_reservation_cannot_complete_with_a_larger_rho():
    budget = PrivacyBudget(10.0, 1e-5, composition="zcdp")
    reservation = budget.reserve(1.0, 1e-6, event=gaussian_steps_event(4.0, 1))
    with pytest.raises(RuntimeError, match="accounting error"):
        reservation.complete(gaussian_steps_event(1.0, 1))
    assert budget.ledger[0].status == "failed"
    ok = budget.reserve(1.0, 1e-6, event=gaussian_steps_event(4.0, 1))
    ok.complete(gaussian_steps_event(5.0, 1))  # less than reserved: fine
    assert budget.ledger[1].status == "completed"


def test_sqlite_reservations_and_statuses_persist(tmp_path):
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(10.0, 1e-5, storage=path, composition="zcdp")
    first = budget.reserve(1.0, 1e-6, event=gaussian_steps_event(4.0, 1), estimator="A")
    first.complete(gaussian_steps_event(4.0, 1))
    budget.reserve(0.5, 0.0, estimator="B").fail(ValueError("x"))
    budget.reserve(0.1, 0.0, estimator="C")  # never settled
    reopened = PrivacyBudget(10.0, 1e-5, storage=path, composition="zcdp")
    ledger = reopened.ledger
    assert [(e.estimator, e.status, e.error) for e in ledger] == [
        ("A", "completed", None),
        ("B", "failed", "ValueError"),
        ("C", "reserved", None),
    ]
    assert [e.id for e in ledger] == [1, 2, 3]
    assert ledger[0].rho == pytest.approx(1 / 32)
    assert reopened.rho_spent == pytest.approx(1 / 32 + 0.125 + 0.005)
    assert [e.pool_delta for e in ledger] == [0.0, 0.0, 0.0]
    with pytest.raises(BudgetStorageError, match="composition"):
        PrivacyBudget(10.0, 1e-5, storage=path, composition="basic")
    # Without composition=, an existing ledger keeps its own rule.
    assert PrivacyBudget(10.0, 1e-5, storage=path).composition == "zcdp"


_LEDGER_V1 = (
    "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "schema_version INTEGER NOT NULL, epsilon REAL NOT NULL, "
    "delta REAL NOT NULL, created REAL NOT NULL)",
    "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "estimator TEXT NOT NULL, solver TEXT, epsilon REAL NOT NULL, "
    "delta REAL NOT NULL, event BLOB, event_repr TEXT, timestamp REAL NOT NULL)",
    "INSERT INTO budget VALUES (1, 1, 1.0, 1e-5, 0.0)",
)
_LEDGER_V2 = (
    "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), "
    "schema_version INTEGER NOT NULL, epsilon REAL NOT NULL, "
    "delta REAL NOT NULL, created REAL NOT NULL, composition TEXT NOT NULL)",
    "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, "
    "estimator TEXT NOT NULL, solver TEXT, epsilon REAL NOT NULL, "
    "delta REAL NOT NULL, event BLOB, event_repr TEXT, "
    "timestamp REAL NOT NULL, status TEXT NOT NULL, error TEXT, rho REAL)",
    "INSERT INTO budget VALUES (1, 2, 1.0, 1e-5, 0.0, 'zcdp')",
)


@pytest.mark.parametrize("version", [1, 2, 4])
def test_sqlite_ledger_of_another_schema_version_is_refused_untouched(tmp_path, version):
    """A ledger file of another schema version is refused before anything is charged.

    Its spends cannot be read under this version's admission rule, so the
    error says to start a new ledger file, and the file is left as it was.
    """
    path = tmp_path / "other_version.sqlite"
    if version == 4:
        PrivacyBudget(1.0, 1e-5, storage=path, composition="basic").spend(0.5, 0.0)
        with sqlite3.connect(path) as raw:
            raw.execute("UPDATE budget SET schema_version = 4 WHERE id = 1")
    else:
        with sqlite3.connect(path) as raw:
            for statement in _LEDGER_V1 if version == 1 else _LEDGER_V2:
                raw.execute(statement)
    before = path.read_bytes()
    with pytest.raises(BudgetStorageError, match=f"schema version {version}") as raised:
        PrivacyBudget(1.0, 1e-5, storage=path)
    assert "start a new ledger file" in str(raised.value)
    assert path.read_bytes() == before


def test_pure_budget_accepts_only_pure_spends():
    budget = PrivacyBudget(1.0)  # delta = 0
    budget.spend(0.5, 0.0, event=PureEpsilonDpEvent(0.5, "objective_perturbation"))
    budget.spend(0.5, event=laplace_steps_event(2.0, 1), estimator="DPLasso")
    assert budget.spent == (1.0, 0.0)
    with pytest.raises(BudgetExceededError, match="delta=0"):
        budget.check(0.0, 1e-9)
    with pytest.raises(BudgetExceededError):
        budget.spend(0.01, 0.0, event=PureEpsilonDpEvent(0.01, "x"))
    fresh = PrivacyBudget(1.0)
    with pytest.raises(BudgetExceededError, match="pure"):
        fresh.spend(0.1, 1e-9, event=gaussian_steps_event(10.0, 1))
    assert fresh.ledger == []


def test_pure_and_gaussian_events_mixed():
    # No accountant composes PureEpsilonDpEvent with Gaussians; basic
    # composition must still work.
    budget = PrivacyBudget(2.0, 1e-5, composition="basic")
    budget.spend(0.5, 0.0, event=PureEpsilonDpEvent(0.5, "objective_perturbation"))
    budget.spend(1.0, 1e-6, event=gaussian_steps_event(5.0, 1))
    assert budget.spent == pytest.approx((1.5, 1e-6))
    with pytest.raises(BudgetExceededError):
        budget.spend(0.6, 0.0, event=gaussian_steps_event(5.0, 1))


def test_reprs():
    budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    budget.spend(
        0.25, 1e-6, event=gaussian_steps_event(5.0, 2), estimator="DPLasso", solver="dp_cd"
    )
    text = repr(budget)
    assert "epsilon=1" in text and "entries=1" in text and "memory" in text
    assert "composition='basic'" in text
    entry_text = repr(budget.ledger[0])
    assert entry_text.startswith("LedgerEntry('DPLasso'")
    assert "solver='dp_cd'" in entry_text and "epsilon=0.25" in entry_text
    assert "GaussianDpEvent" in entry_text
    assert isinstance(budget.ledger[0], LedgerEntry)


def test_thread_safe_memory_spending():
    budget = PrivacyBudget(1.0)
    wins = []

    def worker():
        for _ in range(40):
            try:
                budget.spend(0.01)
                wins.append(1)
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 100 == len(budget.ledger)
    assert budget.spent[0] <= 1.0 + 1e-9


# --------------------------------------------------------------------------
# Sharing: clone, copy, pickle, processes
# --------------------------------------------------------------------------


def test_clone_copy_deepcopy_keep_identity():
    budget = PrivacyBudget(1.0)
    est = DummyEstimator(budget=budget)
    assert clone(est).budget is budget
    assert copy.copy(budget) is budget
    assert copy.deepcopy(budget) is budget
    assert copy.deepcopy(est).budget is budget
    assert copy.deepcopy({"b": [budget]})["b"][0] is budget


def test_grid_search_in_process_counts_every_fit():
    budget = PrivacyBudget(1.0)
    search = GridSearchCV(DummyEstimator(budget=budget), {"alpha": [1.0, 2.0]}, cv=3)
    search.fit(np.zeros((6, 1)))
    assert len(budget.ledger) == 2 * 3 + 1  # folds plus the refit
    assert budget.spent[0] == pytest.approx(0.35)


def test_pickle_round_trip_in_process_returns_same_object():
    budget = PrivacyBudget(1.0, 1e-5)
    budget.spend(0.1)
    assert pickle.loads(pickle.dumps(budget)) is budget
    est = pickle.loads(pickle.dumps(DummyEstimator(budget=budget)))
    assert est.budget is budget
    out = Parallel(n_jobs=2, backend="threading")(
        delayed(lambda b: b.spend(0.1) or b)(budget) for _ in range(3)
    )
    assert all(b is budget for b in out)
    assert len(budget.ledger) == 4


def test_unpickled_after_original_is_gone_refuses():
    budget = PrivacyBudget(1.0)
    budget.spend(0.3)
    data = pickle.dumps(budget)
    del budget
    gc.collect()
    orphan = pickle.loads(data)
    assert orphan.spent == (0.3, 0.0)
    with pytest.raises(BudgetStorageError, match="storage="):
        orphan.spend(0.1)


def test_pickled_sqlite_budget_refuses_a_missing_ledger(tmp_path):
    """Unpickled where its file is missing (another machine), it never creates an empty ledger."""

    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, 1e-5, storage=path, composition="basic")
    budget.spend(1.0, 1e-5)
    blob = pickle.dumps(budget)
    # Same file: the copy counts with the original.
    assert pickle.loads(blob).remaining == (0.0, 0.0)
    os.remove(path)
    with pytest.raises(BudgetStorageError):
        pickle.loads(blob)
    assert not path.exists()


def test_pickled_sqlite_budget_refuses_another_ledger_at_its_path(tmp_path):
    """Unpickled where another ledger was created at its path, it refuses that ledger."""
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, 1e-5, storage=path, composition="basic")
    budget.spend(1.0, 1e-5)
    blob = pickle.dumps(budget)
    os.remove(path)
    time.sleep(0.01)
    PrivacyBudget(1.0, 1e-5, storage=path)  # a new, empty ledger with the same limits
    with pytest.raises(BudgetStorageError):
        pickle.loads(blob)


def _attempt_in_worker(b):
    out = {"pid": os.getpid(), "repr": repr(b), "spent": b.spent}
    for name, call in (("spend", lambda: b.spend(0.1)), ("check", lambda: b.check(0.1))):
        try:
            call()
            out[name] = None
        except BudgetStorageError as exc:
            out[name] = str(exc)
    return out


def test_memory_budget_in_other_process_refuses():
    budget = PrivacyBudget(1.0)
    budget.spend(0.2)
    results = Parallel(n_jobs=2, backend="loky")(
        delayed(_attempt_in_worker)(budget) for _ in range(2)
    )
    for out in results:
        assert out["pid"] != os.getpid()
        assert out["spend"] is not None and "storage=" in out["spend"]
        assert out["check"] is not None and "storage=" in out["check"]
        assert "detached" in out["repr"]
        assert out["spent"] == (0.2, 0.0)  # the snapshot stays readable
    assert budget.spent == (0.2, 0.0)
    assert len(budget.ledger) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_copy_refuses():
    budget = PrivacyBudget(1.0)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = 1
        try:
            budget.spend(0.1)
        except BudgetStorageError:
            code = 0
        finally:
            os._exit(code)
    os.close(read_fd)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    assert budget.ledger == []


# --------------------------------------------------------------------------
# SQLite storage
# --------------------------------------------------------------------------


def test_sqlite_durable_across_instances(tmp_path):
    path = tmp_path / "budget.sqlite"
    event = gaussian_steps_event(4.0, 3)
    first = PrivacyBudget(2.0, 1e-5, storage=path, composition="basic")
    first.spend(0.5, 1e-6, event=event, estimator="DPLogisticRegression", solver="dp_gd")
    first.spend(0.25)
    del first
    second = PrivacyBudget(2.0, 1e-5, storage=str(path), composition="basic")
    ledger = second.ledger
    assert [e.estimator for e in ledger] == ["DPLogisticRegression", "manual"]
    assert ledger[0].event == event and ledger[1].event is None
    assert ledger[0].solver == "dp_gd"
    assert second.spent == pytest.approx((0.75, 1e-6))
    assert str(path) in repr(second) and second.storage == str(path)
    with sqlite3.connect(path) as raw:
        reprs = [r for (r,) in raw.execute("SELECT event_repr FROM ledger ORDER BY id")]
    assert reprs == [repr(event), None]
    # A pickled SQLite budget reopens the same file.
    third = pickle.loads(pickle.dumps(second))
    third.spend(0.25)
    assert len(second.ledger) == 3
    assert clone(DummyEstimator(budget=second)).budget is second


def test_sqlite_refusal_records_nothing(tmp_path):
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, storage=path)
    budget.spend(0.9)
    with pytest.raises(BudgetExceededError):
        budget.spend(0.2)
    assert len(PrivacyBudget(1.0, storage=path).ledger) == 1


def test_sqlite_zcdp_filter(tmp_path):
    sigma = gaussian_noise_multiplier(1.0, 1e-6)
    event = gaussian_steps_event(sigma, 1)
    budget = PrivacyBudget(10.0, 1e-5, storage=tmp_path / "b.sqlite", composition="zcdp")
    for _ in range(11):  # beyond basic composition
        budget.spend(1.0, 1e-6, event=event)
    assert budget.rho_spent == pytest.approx(11 / (2 * sigma**2))
    assert budget.fixed_sequence_epsilon() == pytest.approx(epsilon_of_events([event] * 11, 1e-5))


def test_sqlite_limit_mismatch(tmp_path):
    path = tmp_path / "budget.sqlite"
    PrivacyBudget(1.0, 1e-5, storage=path)
    with pytest.raises(BudgetStorageError, match="created with limits"):
        PrivacyBudget(2.0, 1e-5, storage=path)
    with pytest.raises(BudgetStorageError, match="limits"):
        PrivacyBudget(1.0, 0.0, storage=path)


def test_sqlite_corrupted_file(tmp_path):
    path = tmp_path / "budget.sqlite"
    junk = b"this is not an sqlite database " * 200
    path.write_bytes(junk)
    with pytest.raises(BudgetStorageError, match="not a usable SQLite database"):
        PrivacyBudget(1.0, storage=path)
    assert path.read_bytes() == junk  # never replaced by a fresh budget


def test_sqlite_wrong_schema(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE users (name TEXT)")
    with pytest.raises(BudgetStorageError, match="not a sklearn_dp budget ledger"):
        PrivacyBudget(1.0, storage=path)


def test_sqlite_deleted_file_is_not_recreated(tmp_path):
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, storage=path)
    budget.spend(0.5)
    path.unlink()
    with pytest.raises(BudgetStorageError):
        budget.spend(0.5)
    assert not path.exists()


def test_sqlite_locked_file(tmp_path):
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, storage=path, timeout=0.2)
    budget.spend(0.1)
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        start = time.monotonic()
        with pytest.raises(BudgetStorageError, match="locked"):
            budget.spend(0.1)
        assert time.monotonic() - start < 5
        with pytest.raises(BudgetStorageError, match="timeout"):
            PrivacyBudget(1.0, storage=path, timeout=0.1)
        assert "unavailable" in repr(budget)
        holder.execute("ROLLBACK")
    finally:
        holder.close()
    budget.spend(0.1)
    assert len(budget.ledger) == 2


_CONCURRENT_WORKER = """
import os, sys, time
from sklearn_dp.budget import PrivacyBudget
from sklearn_dp.exceptions import BudgetExceededError
big, small, ready, go = sys.argv[1:5]
b_big = PrivacyBudget(1.0, storage=big)
b_small = PrivacyBudget(1.0, storage=small)
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.005)
wins = [0, 0]
for _ in range(5):
    try:
        b_big.spend(0.3, estimator="worker%d" % os.getpid())
        wins[0] += 1
    except BudgetExceededError:
        pass
for _ in range(40):
    try:
        b_small.spend(0.01)
        wins[1] += 1
    except BudgetExceededError:
        pass
print(wins[0], wins[1])
"""


def test_sqlite_concurrent_processes_never_overspend(tmp_path):
    big, small, go = tmp_path / "big.sqlite", tmp_path / "small.sqlite", tmp_path / "go"
    PrivacyBudget(1.0, storage=big)
    PrivacyBudget(1.0, storage=small)
    procs = []
    for i in range(4):
        ready = tmp_path / f"ready{i}"
        procs.append((_run_python(_CONCURRENT_WORKER, big, small, ready, go), ready))
    for proc, ready in procs:
        _wait_for(ready, proc)
    go.touch()
    wins_big = wins_small = 0
    for proc, _ in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        a, b = map(int, out.split())
        wins_big += a
        wins_small += b
    assert wins_big == 3 and wins_small == 100
    big_budget = PrivacyBudget(1.0, storage=big)
    assert len(big_budget.ledger) == 3
    assert big_budget.spent[0] == pytest.approx(0.9)
    small_budget = PrivacyBudget(1.0, storage=small)
    assert len(small_budget.ledger) == 100
    assert small_budget.spent[0] <= 1.0 + 1e-9


_KILLED_WORKER = """
import sys, time
import sklearn_dp.budget as B
path, marker = sys.argv[1:3]
original = B._SQLiteStorage._insert

def insert_then_hang(self, conn, row):
    original(self, conn, row)
    open(marker, "w").close()  # the write transaction is open and holds the lock
    time.sleep(600)

B._SQLiteStorage._insert = insert_then_hang
B.PrivacyBudget(1.0, 1e-5, storage=path, composition="basic").spend(0.5, 1e-6, estimator="killed")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sqlite_killed_mid_spend_leaves_ledger_consistent(tmp_path):
    path = tmp_path / "budget.sqlite"
    marker = tmp_path / "inside"
    budget = PrivacyBudget(1.0, 1e-5, storage=path, timeout=5.0, composition="basic")
    budget.spend(0.25, 1e-6)
    proc = _run_python(_KILLED_WORKER, path, marker)
    try:
        _wait_for(marker, proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    reopened = PrivacyBudget(1.0, 1e-5, storage=path, timeout=5.0, composition="basic")
    ledger = reopened.ledger
    assert len(ledger) in (1, 2)
    assert ledger[0].epsilon == 0.25
    # The uncommitted entry was rolled back, and the budget keeps working.
    assert [e.estimator for e in ledger] == ["manual"]
    reopened.spend(0.5, 1e-6)
    assert len(budget.ledger) == 2
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_sqlite_grid_search_with_process_workers(tmp_path):
    budget = PrivacyBudget(1.0, storage=tmp_path / "grid.sqlite")
    search = GridSearchCV(DummyEstimator(budget=budget), {"alpha": [1.0, 2.0]}, cv=2, n_jobs=2)
    search.fit(np.zeros((4, 1)))
    assert len(budget.ledger) == 2 * 2 + 1
    assert budget.spent[0] == pytest.approx(0.25)


# --------------------------------------------------------------------------
# The default budget admits the documented workflows at default deltas
# --------------------------------------------------------------------------


def _classification(n=600):
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=5, random_state=0)
    return X / 4.0, y


def test_default_budget_admits_a_scaler_and_a_model_at_default_settings():
    from sklearn.pipeline import make_pipeline

    from sklearn_dp import DPLogisticRegression
    from sklearn_dp.preprocessing import DPStandardScaler

    X, y = _classification()
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    pipe = make_pipeline(
        DPStandardScaler(budget=budget, random_state=0),
        DPLogisticRegression(classes=[0, 1], budget=budget, random_state=0),
    ).fit(X, y)
    assert [e.delta for e in budget.ledger] == [1e-5, 1e-5]  # the default deltas
    assert [e.epsilon for e in budget.ledger] == [1.0, 1.0]
    assert budget.rho_spent <= budget.rho_limit
    assert pipe.score(X, y) > 0.6
    # Basic composition refuses the model: the two deltas add up to 2e-5.
    basic = PrivacyBudget(epsilon=2.0, delta=1e-5, composition="basic")
    with pytest.raises(BudgetExceededError, match="composition='basic'"):
        make_pipeline(
            DPStandardScaler(budget=basic), DPLogisticRegression(classes=[0, 1], budget=basic)
        ).fit(X, y)


def test_default_budget_admits_cross_val_score_with_five_folds():
    from sklearn.model_selection import cross_val_score

    from sklearn_dp import DPLogisticRegression

    X, y = _classification()
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    model = DPLogisticRegression(epsilon=0.5, data_norm=1.5, classes=[0, 1], budget=budget)
    scores = cross_val_score(model, X, y, cv=5, error_score="raise")
    assert len(scores) == 5 and len(budget.ledger) == 5
    assert all(e.delta == 1e-5 and e.status == "completed" for e in budget.ledger)
    spent_epsilon, spent_delta = budget.spent
    assert spent_epsilon <= 2.0 and spent_delta <= 1e-5


def test_default_budget_admits_a_three_by_three_grid_search():
    from sklearn_dp import DPLogisticRegression

    X, y = _classification(400)
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    search = GridSearchCV(
        DPLogisticRegression(epsilon=0.2, data_norm=1.5, classes=[0, 1], budget=budget),
        {"C": [0.1, 1.0, 10.0], "max_iter": [5, 10, 20]},
        cv=5,
        error_score="raise",
    ).fit(X, y)
    assert len(budget.ledger) == 3 * 3 * 5 + 1  # every fold fit and the refit
    assert all(e.delta == 1e-5 and e.status == "completed" for e in budget.ledger)
    assert budget.rho_spent <= budget.rho_limit
    assert hasattr(search, "best_estimator_")


def test_default_budget_admits_a_classifier_fit_without_classes():
    from sklearn_dp import DPLogisticRegression

    X, y = _classification()
    budget = PrivacyBudget(epsilon=2.0, delta=1e-5)
    DPLogisticRegression(data_norm=1.5, budget=budget).fit(X, y)
    (entry,) = budget.ledger
    # The label set's (0.1, 5e-6) release is charged 0.1^2 / 2 and 5e-6 of the pool.
    assert entry.pool_delta == pytest.approx(5e-6) == budget.delta_pool
    assert budget.spent[1] == pytest.approx(1e-5)


def test_zcdp_charges_a_spend_its_own_guarantee_when_its_mechanism_is_costlier():
    # A subsampled Gaussian is charged without amplification by its zCDP
    # description; its (epsilon, delta) guarantee, as delta-approximate
    # epsilon^2 / 2-zCDP, is then the cheaper valid charge.
    subsampled = dpe.SelfComposedDpEvent(
        dpe.PoissonSampledDpEvent(0.01, dpe.GaussianDpEvent(1.0)), 500
    )
    budget = PrivacyBudget(2.0, 1e-5)
    budget.spend(0.3, 1e-6, event=subsampled)
    (entry,) = budget.ledger
    assert (entry.rho, entry.pool_delta) == (pytest.approx(0.045), 1e-6)
    # A Gaussian is charged its own rho even where its claim would be cheaper.
    budget.spend(1.0, 1e-6, event=dpe.GaussianDpEvent(10.0))
    assert (budget.ledger[-1].rho, budget.ledger[-1].pool_delta) == (0.005, 0.0)
    # Noiseless: never admitted on a claim.
    with pytest.raises(BudgetExceededError):
        budget.spend(0.1, 1e-6, event=dpe.GaussianDpEvent(0.0))
    with pytest.raises(BudgetExceededError, match="own \\(epsilon, delta\\)-DP guarantee"):
        budget.spend(1.0, 1e-5, event=subsampled)


def test_zcdp_takes_the_smaller_rho_of_two_valid_charges_when_both_fit():
    # A subsampled Gaussian whose description (no amplification) fits the
    # budget but costs more rho than its (epsilon, delta) guarantee.
    subsampled = dpe.SelfComposedDpEvent(
        dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(4.0)), 20
    )
    own_rho = 0.5 * 0.5**2
    described_rho = 20 / (2 * 4.0**2)
    assert described_rho > own_rho
    budget = PrivacyBudget(10.0, 1e-5)
    budget.spend(0.5, 1e-6, event=subsampled)
    (entry,) = budget.ledger
    assert (entry.rho, entry.pool_delta) == (pytest.approx(own_rho), 1e-6)
