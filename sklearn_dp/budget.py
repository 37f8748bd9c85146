"""A privacy budget shared by many fits, with an in-memory or SQLite ledger.

A :class:`PrivacyBudget` holds a total ``(epsilon, delta)`` and a ledger of
spends.  An estimator *reserves* its exact spend with
:meth:`PrivacyBudget.reserve` before its first read of private values, in one
atomic check-and-record; from then on the spend stands.  The reservation is
completed when the fit succeeds and marked failed (with the exception's
class) when it raises; a process killed mid-fit leaves it charged.  Every fit
records exactly one ledger entry.

Admission is a *privacy filter*: a stopping rule that stays valid when each
fit (and its privacy parameters) is chosen after seeing the results of the
earlier ones.  Two filters are offered, fixed when the budget is created
(``composition=``):

``"basic"`` (default)
    Basic composition: a spend is admitted while the sums of the recorded
    epsilons and deltas stay within the limits.  A valid filter for fully
    adaptive composition (Rogers, Roth, Ullman and Vadhan 2016).
``"zcdp"``
    The zero-concentrated-DP filter: every fit is charged the rho of its
    mechanism (rho-zCDP, Bun and Steinke 2016), and a spend is admitted while
    the sum of the rhos stays within the rho whose (epsilon, delta)
    conversion meets the limits.  Valid for fully adaptive composition by
    the Renyi filter of Feldman and Zrnic (2021) applied at every order
    (also Whitehouse, Ramdas, Rogers and Wu 2023).  Much tighter for many
    Gaussian fits; a single fit pays a conversion cost.

Numerical (PLD) composition of the recorded events is reported by
:meth:`PrivacyBudget.fixed_sequence_epsilon`, labelled as what it is: the
epsilon of those fits had they been fixed in advance.  It never admits a
spend (it is not a valid filter).  See ``docs/guide/budget.md``.

The budget is one shared object: ``sklearn.base.clone``, ``copy.copy``,
``copy.deepcopy`` and in-process pickling all return the budget itself, so a
budget passed to an estimator keeps counting inside ``GridSearchCV``,
``cross_val_score`` and Pipelines.  Across processes only a file-backed budget
(``storage="budget.sqlite"``) can count; an in-memory budget that reaches
another process refuses to spend instead of silently starting from zero.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import time
import uuid
import weakref
from numbers import Real
from typing import Literal

from dp_accounting import dp_event as dpe

from ._ledger import (
    COMPLETED,
    FAILED,
    RESERVED,
    LedgerEntry,
    _DetachedStorage,
    _MemoryStorage,
    _pickle_event,
    _Row,
    _SQLiteStorage,
)
from ._memo import memoize
from .accounting import epsilon_of_events, epsilon_of_zcdp, zcdp_rho
from .exceptions import BudgetExceededError, BudgetStorageError

__all__ = [
    "PrivacyBudget",
    "LedgerEntry",
    "Reservation",
    "COMPOSITIONS",
    "BudgetExceededError",
    "BudgetStorageError",
]

#: The admission rules a budget can use (see the module docstring).
COMPOSITIONS = ("basic", "zcdp")

# Relative slack when comparing a total with its limit: spending exactly what
# `remaining` reports must succeed even though float sums are not exact.
_RTOL = 1e-9


# In-memory budgets alive in this process, by uuid, so that unpickling in the
# same process (joblib's threading backend, a pickle round-trip in a notebook)
# returns the very object that counts instead of a copy that would not.
_MEMORY_BUDGETS: weakref.WeakValueDictionary[str, PrivacyBudget] = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


# --------------------------------------------------------------------------
# Argument checks
# --------------------------------------------------------------------------


def _check_limit_epsilon(epsilon):
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise TypeError(f"PrivacyBudget epsilon must be a real number, got {epsilon!r}.")
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(
            f"PrivacyBudget epsilon must be a finite number > 0, got {epsilon!r}. "
            "A budget is a finite promise; without one, pass budget=None."
        )
    return epsilon


def _check_limit_delta(delta):
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise TypeError(f"PrivacyBudget delta must be a real number, got {delta!r}.")
    delta = float(delta)
    if math.isnan(delta) or not 0 <= delta < 1:
        raise ValueError(f"PrivacyBudget delta must be in [0, 1), got {delta!r}.")
    return delta


def _check_composition(composition, delta):
    if composition not in COMPOSITIONS:
        raise ValueError(
            f"composition must be one of {COMPOSITIONS}, got {composition!r}: 'basic' "
            "adds up the spends' epsilons and deltas; 'zcdp' charges each fit its "
            "zero-concentrated DP cost (tighter for many Gaussian fits)."
        )
    if composition == "zcdp" and delta == 0:
        raise ValueError(
            "composition='zcdp' needs a budget delta > 0 (zCDP converts to (epsilon, delta)-DP "
            "only with delta > 0); use composition='basic' for a pure epsilon-DP budget."
        )
    return composition


def _check_spend_args(epsilon, delta, event):
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real) or math.isnan(epsilon):
        raise ValueError(f"epsilon to spend must be a number >= 0, got {epsilon!r}.")
    if epsilon < 0:
        raise ValueError(f"epsilon to spend must be >= 0, got {epsilon!r}.")
    if isinstance(delta, bool) or not isinstance(delta, Real) or math.isnan(delta):
        raise ValueError(f"delta to spend must be a number in [0, 1), got {delta!r}.")
    if not 0 <= delta < 1:
        raise ValueError(f"delta to spend must be in [0, 1), got {delta!r}.")
    if event is not None and not isinstance(event, dpe.DpEvent):
        raise TypeError(
            f"event must be a dp_accounting DpEvent or None, got {type(event).__name__}."
        )
    return float(epsilon), float(delta)


@memoize(maxsize=256)
def _rho_limit(epsilon, delta):
    """The largest rho whose zCDP guarantee converts to (epsilon, delta)-DP (bisection).

    The conversion is dp_accounting's (the RDP-to-DP bound of Canonne, Kamath
    and Steinke 2020 over its grid of orders: an upper bound on the true
    epsilon), so the rho returned is on the safe side.
    """
    low, high = 0.0, max(1.0, epsilon)
    while epsilon_of_zcdp(high, delta) <= epsilon:
        low, high = high, 2.0 * high
    for _ in range(100):
        middle = 0.5 * (low + high)
        if epsilon_of_zcdp(middle, delta) <= epsilon:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return low


# --------------------------------------------------------------------------
# Reservations
# --------------------------------------------------------------------------


class Reservation:
    """A spend recorded on a budget before a fit touches the data.

    Returned by :meth:`PrivacyBudget.reserve`.  The spend stands whatever
    happens next: :meth:`complete` marks the entry completed (and records the
    fit's final event), :meth:`fail` marks it failed with the class of the
    exception.  A reservation that is never settled (its process was killed)
    stays charged as ``"reserved"``.

    Parameters
    ----------
    budget : PrivacyBudget
        The budget charged.
    entry_id : int
        The ledger entry's ``id``.
    epsilon, delta : float
        The reserved spend.
    rho : float or None
        The zCDP charge (``composition="zcdp"`` budgets).

    Attributes
    ----------
    status : {"reserved", "completed", "failed"}
        The entry's status as this reservation last set it.
    """

    def __init__(
        self,
        budget: PrivacyBudget,
        entry_id: int,
        epsilon: float,
        delta: float,
        rho: float | None,
    ) -> None:
        self.budget = budget
        self.entry_id = entry_id
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.status = RESERVED

    def complete(self, event: dpe.DpEvent | None = None) -> None:
        """Mark the entry completed; ``event`` is the fit's final mechanism.

        On a zCDP budget the final event must cost no more than the rho
        reserved for it; a larger one is an accounting bug and raises.

        Parameters
        ----------
        event : dp_accounting.DpEvent, optional
            The mechanism the fit ran (recorded in the ledger entry).

        Raises
        ------
        RuntimeError
            If, on a zCDP budget, ``event`` costs more rho than was reserved.
        """
        if event is not None and not isinstance(event, dpe.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if self.rho is not None and event is not None:
            final = zcdp_rho(event)
            if final is None or final > self.rho * (1 + _RTOL) + 1e-15:
                self.budget._storage.update(self.entry_id, status=FAILED, error="AccountingError")
                self.status = FAILED
                raise RuntimeError(
                    "sklearn_dp accounting error: the fit's mechanism costs more rho than was "
                    "reserved for it. The ledger entry stays charged; please report this bug."
                )
        blob = _pickle_event(event)
        self.budget._storage.update(self.entry_id, status=COMPLETED, event=event, blob=blob)
        self.status = COMPLETED

    def fail(self, error: BaseException | str) -> None:
        """Mark the entry failed; ``error`` is an exception (only its class name is kept).

        Parameters
        ----------
        error : BaseException or str
            The exception (or its class name).
        """
        name = error if isinstance(error, str) else type(error).__name__
        self.budget._storage.update(self.entry_id, status=FAILED, error=name)
        self.status = FAILED

    def __repr__(self):
        return (
            f"Reservation(entry {self.entry_id}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}, status={self.status!r})"
        )


# --------------------------------------------------------------------------
# The budget
# --------------------------------------------------------------------------


class PrivacyBudget:
    """A total privacy budget shared by many fits, with a ledger of spends.

    Parameters
    ----------
    epsilon : float
        Total epsilon, finite and > 0.
    delta : float, default=0.0
        Total delta, in ``[0, 1)``.  A budget with ``delta=0`` only accepts
        pure epsilon-DP spends (``delta=0``).
    storage : None, str or os.PathLike, default=None
        ``None`` keeps the ledger in memory (this process only).  A path keeps
        it in an SQLite file: durable across restarts and safe for several
        processes spending at once.  The file records the limits and the
        composition; opening it with others raises :class:`BudgetStorageError`.
    timeout : float, default=30.0
        Seconds to wait for another process holding the SQLite ledger before
        raising :class:`BudgetStorageError`.
    composition : {"basic", "zcdp"}, default="basic"
        The admission rule (a privacy filter, valid when each fit is chosen
        after seeing earlier results).  ``"basic"``: the recorded epsilons
        and deltas add up, and a spend is admitted while both sums stay within
        the limits.  ``"zcdp"`` (needs ``delta > 0``): each fit is charged the
        rho of its mechanism (zero-concentrated DP), and a spend is admitted
        while the rhos add up to at most the rho whose conversion is
        ``(epsilon, delta)``-DP; this admits many more Gaussian fits (for
        example 63 instead of 10 fits of ``DPLogisticRegression(epsilon=1,
        delta=1e-6)`` on a ``(10, 1e-5)`` budget), but one fit pays a
        conversion cost (a ``(1, 1e-5)`` zCDP budget cannot afford a
        ``(1, 1e-5)`` fit), and fits whose mechanism has no zCDP bound known
        before the data is read are refused.

    Attributes
    ----------
    spent : tuple of float
        ``(epsilon, delta)`` spent so far (see Privacy below).
    remaining : tuple of float
        What is left (see Privacy below).
    ledger : list of LedgerEntry
        The recorded spends, oldest first (a copy).

    Privacy
    -------
    *Admission* is a privacy filter, valid under fully adaptive composition
    (each fit and its privacy parameters chosen after seeing the earlier
    results): with ``"basic"``, basic composition (Rogers, Roth, Ullman and
    Vadhan 2016); with ``"zcdp"``, the Renyi filter of Feldman and Zrnic
    (2021, Theorem 3.1) at every order at once, which is a zCDP filter
    (Whitehouse, Ramdas, Rogers and Wu 2023), followed by the conversion of
    Canonne, Kamath and Steinke (2020).  Whatever the analyst does, the
    whole interaction with the data is ``(epsilon, delta)``-DP.

    *Charge before touching*: estimators reserve their spend with
    :meth:`reserve` before they read any private value; a fit that fails
    afterwards keeps its (failed) entry, because the failure itself may say
    something about the data.  Every entry counts, whatever its status.

    *Reports*: with ``"basic"``, :attr:`spent` is the sums of the entries'
    epsilons and deltas and :attr:`remaining` the difference to the limits.
    With ``"zcdp"``, :attr:`spent` is the conversion of the recorded rho at
    the budget's delta and :attr:`remaining` the ``(epsilon, delta)`` of the
    rho left (the largest zCDP fit still admitted).
    :meth:`fixed_sequence_epsilon` is the numerical (PLD) composition of the
    recorded events: what they would cost had they been fixed in advance, a
    figure for reports that never admits a spend.

    *Processes:* the budget is one shared object: ``clone``, ``copy``,
    ``deepcopy`` and unpickling in the same process return the budget
    itself.  An in-memory budget cannot count across processes: a copy that
    reaches another process (e.g. a joblib worker of ``GridSearchCV(n_jobs=2)``)
    refuses to check or spend with :class:`BudgetStorageError`.  Use
    ``storage="budget.sqlite"`` there; every check-and-record on the file is
    one atomic transaction, so racing processes can never overspend.

    The SQLite file stores events with :mod:`pickle`; open only ledger files
    you trust.

    Examples
    --------
    >>> from sklearn_dp import PrivacyBudget
    >>> budget = PrivacyBudget(1.0, 1e-5)
    >>> budget.spend(0.25, 0.0)
    >>> budget.remaining
    (0.75, 1e-05)
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        storage: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        composition: Literal["basic", "zcdp"] = "basic",
    ) -> None:
        self._epsilon = _check_limit_epsilon(epsilon)
        self._delta = _check_limit_delta(delta)
        self._composition = _check_composition(composition, self._delta)
        if isinstance(timeout, bool) or not isinstance(timeout, Real) or not timeout >= 0:
            raise ValueError(f"timeout must be a number of seconds >= 0, got {timeout!r}.")
        self._timeout = float(timeout)
        self._cache = {}
        self._cache_lock = threading.Lock()
        if storage is None:
            self._storage = _MemoryStorage()
            self._uuid = uuid.uuid4().hex
            with _REGISTRY_LOCK:
                _MEMORY_BUDGETS[self._uuid] = self
        elif isinstance(storage, (str, os.PathLike)):
            path = os.fspath(storage)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if path in ("", ":memory:") or path.startswith("file:"):
                raise ValueError(
                    f"storage={storage!r} is not a file path; pass storage=None for an "
                    "in-memory budget or a path such as 'budget.sqlite'."
                )
            self._uuid = None
            self._storage = _SQLiteStorage(
                path, self._epsilon, self._delta, self._composition, self._timeout
            )
        else:
            raise TypeError(
                f"storage must be None or a file path (str or os.PathLike), got {storage!r}."
            )

    # -- limits and reports ----------------------------------------------------

    @property
    def epsilon(self) -> float:
        """Total epsilon of the budget."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """Total delta of the budget."""
        return self._delta

    @property
    def composition(self) -> str:
        """The admission rule: ``"basic"`` or ``"zcdp"``."""
        return self._composition

    @property
    def storage(self) -> str | None:
        """``None`` for an in-memory budget, else the absolute path of the ledger."""
        return self._storage.path if isinstance(self._storage, _SQLiteStorage) else None

    @property
    def _identity(self) -> str:
        # What tells this ledger from every other one (seeded charged fits
        # key their noise on it, sklearn_dp._random.charged_entropy): a random
        # uuid in memory; the file and its creation time for SQLite (a copy
        # of the file is the same ledger).
        if isinstance(self._storage, _SQLiteStorage):
            return f"sqlite:{self._storage.path}:{self._storage.created!r}"
        return f"memory:{self._uuid}"

    @property
    def ledger(self) -> list[LedgerEntry]:
        """The recorded spends, oldest first (a new list of frozen entries)."""
        return [row.entry for row in self._storage.rows()]

    @property
    def rho_limit(self) -> float | None:
        """The total rho a ``"zcdp"`` budget admits (None for ``"basic"``)."""
        if self._composition != "zcdp":
            return None
        return _rho_limit(self._epsilon, self._delta)

    @property
    def rho_spent(self) -> float | None:
        """The rho charged so far on a ``"zcdp"`` budget (None for ``"basic"``)."""
        if self._composition != "zcdp":
            return None
        return self._rho_sum(self._storage.rows())

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far (see the class's Privacy section)."""
        return self._spent_of(self._storage.rows())

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` left (see the class's Privacy section)."""
        rows = self._storage.rows()
        if self._composition == "zcdp":
            left = max(0.0, self.rho_limit - self._rho_sum(rows))
            return (_epsilon_of_rho(left, self._delta), self._delta)
        eps, delta = self._basic(rows)
        return (max(0.0, self._epsilon - eps), max(0.0, self._delta - delta))

    def _spent_of(self, rows):
        if not rows:
            return (0.0, 0.0)
        if self._composition == "zcdp":
            return (_epsilon_of_rho(self._rho_sum(rows), self._delta), self._delta)
        return self._basic(rows)

    @staticmethod
    def _basic(rows, extra=(0.0, 0.0)):
        eps = math.fsum([row.entry.epsilon for row in rows] + [extra[0]])
        delta = math.fsum([row.entry.delta for row in rows] + [extra[1]])
        return eps, delta

    @staticmethod
    def _rho_sum(rows, extra=0.0):
        return math.fsum([row.entry.rho or 0.0 for row in rows] + [extra])

    def fixed_sequence_epsilon(self, delta: float | None = None) -> float | None:
        """Numerical (PLD) composition of the recorded events, as if fixed in advance.

        Parameters
        ----------
        delta : float, optional
            Where to evaluate it; default the budget's delta.

        Returns
        -------
        float or None
            The epsilon at ``delta`` of the recorded fits' events composed as a
            fixed sequence, or None when an entry has no event or no
            accountant composes them.  It is *not* a guarantee for fits chosen
            after seeing earlier results, and it never admits a spend; the
            filter (``composition``) does.
        """
        delta = self._delta if delta is None else float(delta)
        rows = self._storage.rows()
        if not rows or any(row.blob is None for row in rows):
            return None if rows else 0.0
        digest = hashlib.sha256()
        for row in rows:
            digest.update(len(row.blob).to_bytes(8, "little"))
            digest.update(row.blob)
        key = (digest.digest(), delta)
        with self._cache_lock:
            if key in self._cache:
                return self._cache[key]
        try:
            value = float(epsilon_of_events([row.entry.event for row in rows], delta))
        except (ValueError, TypeError, NotImplementedError, OverflowError, ArithmeticError):
            value = None
        if value is not None and not math.isfinite(value):
            value = None
        with self._cache_lock:
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[key] = value
        return value

    # -- checking and reserving -------------------------------------------------

    def _charge(self, epsilon, delta, event):
        """The rho a spend is charged on a zCDP budget (None on a basic one), or a refusal."""
        if self._composition != "zcdp":
            return None
        if event is None:
            if delta == 0:
                # Pure epsilon-DP implies epsilon^2 / 2-zCDP (Bun and Steinke 2016).
                return 0.5 * epsilon * epsilon
            raise BudgetExceededError(
                f"This budget uses composition='zcdp', and a spend of (epsilon={epsilon:.6g}, "
                f"delta={delta:.6g}) without a DpEvent has no zCDP cost (approximate DP is not "
                "zCDP). Nothing was spent. Pass the mechanism's event, use delta=0, or use a "
                "budget with composition='basic'."
            )
        rho = zcdp_rho(event)
        if rho is None:
            raise BudgetExceededError(
                "This budget uses composition='zcdp', and this spend's mechanism "
                f"({_short(event)}) has no zCDP bound that is known before the data is read. "
                "Nothing was spent. Use a solver whose mechanism is Gaussian, Laplace or pure "
                "(e.g. dp_gd, dp_cd), give the public settings it needs up front (classes=, "
                "max_iter=), or use a budget with composition='basic'."
            )
        return rho

    def _fits(self, rows, epsilon, delta, rho):
        """None if the spend fits the ledger ``rows``, else an explanation."""
        if self._composition == "zcdp":
            total = self._rho_sum(rows, rho)
            if total <= self.rho_limit * (1 + _RTOL):
                return None
            return self._exceeded_message(rows, epsilon, delta, rho=rho)
        basic_eps, basic_delta = self._basic(rows, (epsilon, delta))
        if basic_eps <= self._epsilon * (1 + _RTOL) and basic_delta <= self._delta * (1 + _RTOL):
            return None
        return self._exceeded_message(rows, epsilon, delta, totals=(basic_eps, basic_delta))

    def _exceeded_message(self, rows, epsilon, delta, *, totals=None, rho=None):
        rem_eps, rem_delta = self._remaining_of(rows)
        parts = [
            f"Spending (epsilon={epsilon:.6g}, delta={delta:.6g}) would exceed the "
            f"privacy budget (epsilon={self._epsilon:.6g}, delta={self._delta:.6g}, "
            f"composition={self._composition!r}): {len(rows)} spend(s) recorded, remaining "
            f"(epsilon={rem_eps:.6g}, delta={rem_delta:.6g})."
        ]
        if totals is not None:
            parts.append(
                f" With this spend the sums would be (epsilon={totals[0]:.6g}, "
                f"delta={totals[1]:.6g})."
            )
        if rho is not None:
            parts.append(
                f" Its zCDP cost is rho={rho:.6g}; {self._rho_sum(rows):.6g} of the "
                f"{self.rho_limit:.6g} this budget admits is spent."
            )
        parts.append(" Nothing was spent.")
        if self._delta == 0 and delta > 0:
            parts.append(
                " This budget has delta=0 and accepts only pure epsilon-DP spends "
                "(delta=0): use a solver with a pure-DP mode, or a budget with delta > 0."
            )
        else:
            parts.append(
                " Ask for a smaller epsilon (or delta), or stop: a fresh budget is only "
                "justified for fresh data."
            )
        return "".join(parts)

    def _remaining_of(self, rows):
        if self._composition == "zcdp":
            left = max(0.0, self.rho_limit - self._rho_sum(rows))
            return (_epsilon_of_rho(left, self._delta), self._delta)
        eps, delta = self._basic(rows)
        return (max(0.0, self._epsilon - eps), max(0.0, self._delta - delta))

    def _new_row(self, epsilon, delta, event, estimator, solver, status, rho):
        if not isinstance(estimator, str):
            estimator = type(estimator).__name__
        if solver is not None and not isinstance(solver, str):
            solver = str(solver)
        entry = LedgerEntry(
            estimator, solver, epsilon, delta, event, time.time(), status, None, rho
        )
        return _Row(entry, _pickle_event(event))

    def check(self, epsilon: float, delta: float = 0.0, event: dpe.DpEvent | None = None) -> None:
        """Raise :class:`BudgetExceededError` if spending ``(epsilon, delta)`` would not fit.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee the planned fit would claim.
        event : dp_accounting.DpEvent, optional
            The planned fit's mechanism (needed by ``composition="zcdp"``).

        Raises
        ------
        BudgetExceededError
            The spend would take the budget past its limits.
        BudgetStorageError
            The ledger cannot be used (locked or corrupted file, or an
            in-memory budget in another process).
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        self._storage.check_usable()
        rho = self._charge(epsilon, delta, event)
        message = self._fits(self._storage.rows(), epsilon, delta, rho)
        if message is not None:
            raise BudgetExceededError(message)

    def reserve(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        event: dpe.DpEvent | None = None,
        estimator: str = "manual",
        solver: str | None = None,
    ) -> Reservation:
        """Atomically check a spend and record it, before the data is touched.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee the fit will claim.
        event : dp_accounting.DpEvent, optional
            The fit's mechanism as known before the data is read (needed by
            ``composition="zcdp"``, which charges its rho).
        estimator : str, default="manual"
            Who spends (an estimator passes its class name).
        solver : str, optional
            The solver that will run the fit.

        Returns
        -------
        Reservation
            Settle it with :meth:`Reservation.complete` or
            :meth:`Reservation.fail`; unsettled, it stays charged.

        Raises
        ------
        BudgetExceededError
            The spend does not fit; nothing is recorded.
        BudgetStorageError
            The ledger cannot be used; nothing is recorded.
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        self._storage.check_usable()
        rho = self._charge(epsilon, delta, event)
        row = self._new_row(epsilon, delta, event, estimator, solver, RESERVED, rho)

        def decide(rows):
            message = self._fits(rows, epsilon, delta, rho)
            if message is not None:
                raise BudgetExceededError(message)

        entry_id = self._storage.append_if(decide, row)
        return Reservation(self, entry_id, epsilon, delta, rho)

    def spend(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        event: dpe.DpEvent | None = None,
        estimator: str = "manual",
        solver: str | None = None,
    ) -> None:
        """Atomically check a spend and record it as one completed ledger entry.

        For spends outside an estimator (a query of your own).  Estimators
        use :meth:`reserve` instead, before they read the data.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee of the release.
        event : dp_accounting.DpEvent, optional
            Its mechanism under add/remove-one neighbouring.
        estimator : str, default="manual"
            Who spends.
        solver : str, optional
            The solver that ran the fit.

        Raises
        ------
        BudgetExceededError
            The spend does not fit; nothing is recorded.
        BudgetStorageError
            The ledger cannot be used; nothing is recorded.
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        self._storage.check_usable()
        rho = self._charge(epsilon, delta, event)
        row = self._new_row(epsilon, delta, event, estimator, solver, COMPLETED, rho)

        def decide(rows):
            message = self._fits(rows, epsilon, delta, rho)
            if message is not None:
                raise BudgetExceededError(message)

        self._storage.append_if(decide, row)

    # -- sharing ---------------------------------------------------------------

    def __copy__(self):
        # A copy that counted on its own would double the budget.
        return self

    def __deepcopy__(self, memo):
        # sklearn.base.clone deep-copies non-estimator parameters and then
        # checks it got the same object back: returning self shares the budget.
        return self

    def __reduce__(self):
        if isinstance(self._storage, _SQLiteStorage):
            return (
                _reopen_sqlite_budget,
                (
                    self._epsilon,
                    self._delta,
                    self._storage.path,
                    self._timeout,
                    self._composition,
                    self._storage.created,
                ),
            )
        pid = self._storage.pid if isinstance(self._storage, _MemoryStorage) else -1
        snapshot = [(row.entry, row.blob) for row in self._storage.rows()]
        return (
            _restore_memory_budget,
            (
                self._uuid,
                pid,
                self._epsilon,
                self._delta,
                snapshot,
                self._timeout,
                self._composition,
            ),
        )

    def __repr__(self):
        try:
            rows = self._storage.rows()
            eps, delta = self._spent_of(rows)
            state = f"spent=(epsilon={eps:.6g}, delta={delta:.6g}), entries={len(rows)}"
        except BudgetStorageError as exc:
            state = f"spent=<unavailable: {str(exc).split('. ')[0]}>"
        composition = "" if self._composition == "basic" else f", composition={self._composition!r}"
        return (
            f"PrivacyBudget(epsilon={self._epsilon:.6g}, delta={self._delta:.6g}{composition}, "
            f"{state}, storage={self._storage.describe()})"
        )


def _epsilon_of_rho(rho, delta):
    return 0.0 if rho <= 0 else float(epsilon_of_zcdp(rho, delta))


def _short(event):
    text = repr(event)
    return text if len(text) <= 120 else text[:117] + "..."


def _bare_budget(epsilon, delta, composition, timeout, budget_id, storage):
    """A budget over ``storage`` without ``__init__`` (which may create a ledger)."""
    budget = PrivacyBudget.__new__(PrivacyBudget)
    budget._epsilon = epsilon
    budget._delta = delta
    budget._composition = composition
    budget._timeout = timeout
    budget._cache = {}
    budget._cache_lock = threading.Lock()
    budget._uuid = budget_id
    budget._storage = storage
    return budget


def _reopen_sqlite_budget(epsilon, delta, path, timeout, composition="basic", created=None):
    # The ledger must exist (and be the same one): a copy never creates a new ledger.
    storage = _SQLiteStorage(
        path, epsilon, delta, composition, timeout, create=False, created=created
    )
    return _bare_budget(epsilon, delta, composition, timeout, None, storage)


def _restore_memory_budget(budget_id, pid, epsilon, delta, snapshot, timeout, composition="basic"):
    if pid == os.getpid():
        with _REGISTRY_LOCK:
            original = _MEMORY_BUDGETS.get(budget_id)
        if original is not None:
            return original
    storage = _DetachedStorage([_Row(entry, blob) for entry, blob in snapshot])
    return _bare_budget(epsilon, delta, composition, timeout, budget_id, storage)
