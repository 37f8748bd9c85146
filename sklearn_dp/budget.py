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

``"zcdp"`` (default when ``delta > 0``)
    The approximate zero-concentrated-DP filter.  Half of the budget's delta
    is a *pool* for the approximate-DP parts of the fits, the other half is
    spent once, on the final conversion.  Every spend is charged a pair
    ``(rho_i, delta_i)``: its mechanism is ``delta_i``-approximately
    ``rho_i``-zCDP (a Gaussian fit: its rho and 0; a part proven only
    ``(epsilon, delta)``-DP, such as a classifier's label-set release,
    ``epsilon^2 / 2`` and its delta, by Bun and Steinke 2016, Proposition
    1.13).  A spend is admitted while ``sum(rho_i) <= rho_limit`` and
    ``sum(delta_i) <= delta / 2``.  Valid for fully adaptive composition by
    the filter for approximate zCDP of Whitehouse, Ramdas, Rogers and Wu
    (2023); the whole interaction is then ``delta/2``-approximately
    ``rho_limit``-zCDP, hence ``(epsilon, delta)``-DP, where ``rho_limit`` is
    the largest rho whose conversion (Canonne, Kamath and Steinke 2020) at
    ``delta / 2`` is at most ``epsilon - log(1 / (1 - delta / 2))``.
    Gaussian fits' deltas do not add up: many fits at the estimators'
    default ``delta`` share one budget.
``"basic"`` (the only one when ``delta = 0``)
    Basic composition: a spend is admitted while the sums of the recorded
    epsilons and deltas stay within the limits.  A valid filter for fully
    adaptive composition (Rogers, Roth, Ullman and Vadhan 2016).  Best for
    one or two large fits; every fit's delta counts.

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
A *fitted* model pickles with a read-only stand-in for its budget
(``sklearn_dp._saving.saved_budget``: the limits, no handle on the ledger), so
that a saved model loads anywhere and a refit of it is refused instead of uncounted.

Where the parts live: this module keeps the budget and its reservations;
the filters' arithmetic (the rho limit, the pool, the charges of a spend) and
the messages of a refused spend are in ``sklearn_dp._admission``, the
ledger's storage (in memory or in an SQLite file) and the unit-of-privacy
checks in ``sklearn_dp._ledger``, the functions that restore a pickled budget
(and the read-only stand-in of saved models) in ``sklearn_dp._saving``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os
import secrets
import threading
import time
import uuid
import weakref
from numbers import Real
from typing import Literal

from dp_accounting import dp_event as dpe

from ._admission import (
    _RTOL,
    _approximate_charges,
    _basic_refusal,
    _epsilon_of_rho,
    _left,
    _pool_epsilon,
    _rho_limit,
    _split_delta,
    _zcdp_refusal,
)
from ._ledger import (
    COMPLETED,
    FAILED,
    RESERVED,
    LedgerEntry,
    _check_unit,
    _check_unit_name,
    _MemoryStorage,
    _pickle_event,
    _Row,
    _SavedStorage,
    _SQLiteStorage,
)
from .accounting import check_event, epsilon_of_events
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
    """``composition`` checked against ``delta`` (None: decided by the default or the ledger)."""
    if composition is None:
        return None
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
    if event is not None:
        check_event(event)  # a malformed event would be charged what it (mis)states
    return float(epsilon), float(delta)


def _default_composition(delta):
    return "zcdp" if delta > 0 else "basic"


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
    pool_delta : float or None
        The delta charged to the pool of a ``composition="zcdp"`` budget.

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
        pool_delta: float | None = None,
    ) -> None:
        self.budget = budget
        self.entry_id = entry_id
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.pool_delta = pool_delta
        self.status = RESERVED

    def complete(self, event: dpe.DpEvent | None = None) -> None:
        """Mark the entry completed; ``event`` is the fit's final mechanism.

        On a zCDP budget the final event must cost no more than the rho
        and the pool delta reserved for it; more is an accounting bug and
        raises.

        Parameters
        ----------
        event : dp_accounting.DpEvent, optional
            The mechanism the fit ran (recorded in the ledger entry).

        Raises
        ------
        RuntimeError
            If, on a zCDP budget, ``event`` costs more than was reserved.
        """
        if event is not None and not isinstance(event, dpe.DpEvent):
            raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
        if self.rho is not None and event is not None:
            reserved_delta = self.pool_delta or 0.0
            if not any(
                rho <= self.rho * (1 + _RTOL) + 1e-15
                and pool_delta <= reserved_delta * (1 + _RTOL) + 1e-300
                for rho, pool_delta, _ in _approximate_charges(self.epsilon, self.delta, event)
            ):
                self.budget._storage.update(self.entry_id, status=FAILED, error="AccountingError")
                self.status = FAILED
                raise RuntimeError(
                    "sklearn_dp accounting error: the fit's mechanism costs more (rho or pool "
                    "delta) than was reserved for it. The ledger entry stays charged; please "
                    "report this bug."
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
        pure epsilon-DP spends (``delta=0``).  On a ``"zcdp"`` budget, half
        of it is a pool for the fits' approximate-DP parts and half pays for
        the final conversion (see ``composition``).
    storage : None, str or os.PathLike, default=None
        ``None`` keeps the ledger in memory (this process only).  A path keeps
        it in an SQLite file: durable across restarts and safe for several
        processes spending at once.  The file records the limits and the
        composition; opening it with others raises :class:`BudgetStorageError`
        (``composition=None`` opens an existing file with its own).
    timeout : float, default=30.0
        Seconds to wait for another process holding the SQLite ledger before
        raising :class:`BudgetStorageError`.
    composition : {"zcdp", "basic"} or None, default=None
        The admission rule (a privacy filter, valid when each fit is chosen
        after seeing earlier results).  None: ``"zcdp"`` when ``delta > 0``,
        ``"basic"`` when ``delta = 0`` (or, for an existing ledger file, the
        rule it was created with).

        ``"zcdp"`` (needs ``delta > 0``), the approximate-zCDP filter: each
        spend is charged the rho of its mechanism (zero-concentrated DP) and
        the delta of its approximate-DP parts (a classifier's label-set
        release without ``classes=``); a spend is admitted while the rhos add
        up to at most :attr:`rho_limit` and those deltas to at most
        :attr:`delta_pool` (half of ``delta``).  A spend whose mechanism has
        no zCDP description, or one that does not fit, is charged its own
        ``(epsilon, delta)`` as ``epsilon^2 / 2`` and ``delta``.  The deltas of Gaussian fits do not
        add up, so many fits at the estimators' default ``delta=1e-5`` share
        a ``(2, 1e-5)`` budget: a scaler and a model at ``epsilon=1`` each,
        5 fits at ``epsilon=0.73``, 46 fits at ``epsilon=0.21``.  One fit pays
        a conversion cost: a ``(2, 1e-5)`` budget admits one
        ``DPLogisticRegression`` of ``epsilon`` up to about 1.77, not 2.

        ``"basic"``: the recorded epsilons and deltas add up, and a spend is
        admitted while both sums stay within the limits: one fit may take
        the whole budget, but two fits at ``delta=1e-5`` do not fit a budget
        of ``delta=1e-5``.

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
    Vadhan 2016); with ``"zcdp"``, the filter for approximate zCDP of
    Whitehouse, Ramdas, Rogers and Wu (2023, *Fully-adaptive composition in
    differential privacy*): while ``sum(rho_i) <= rho_limit`` and
    ``sum(delta_i) <= delta_pool``, the interaction is
    ``delta_pool``-approximately ``rho_limit``-zCDP.  Each charge is valid:
    a Gaussian or pure mechanism is ``rho``-zCDP (Bun and Steinke 2016,
    Propositions 1.4 and 1.6), an ``(epsilon, delta)``-DP one is
    ``delta``-approximately ``epsilon^2 / 2``-zCDP (their Proposition 1.13).
    The conversion of ``rho_limit`` at ``delta - delta_pool`` (Canonne,
    Kamath and Steinke 2020), plus ``log(1 / (1 - delta_pool))`` for the
    approximate part, is at most ``epsilon``, and the approximate part adds
    ``delta_pool`` to the conversion's delta.  Whatever the analyst does, the
    whole interaction with the data is ``(epsilon, delta)``-DP.

    *Charge before touching*: estimators reserve their spend with
    :meth:`reserve` before they read any private value; a fit that fails
    afterwards keeps its (failed) entry, because the failure itself may say
    something about the data.  Every entry counts, whatever its status.

    *Reports*: with ``"basic"``, :attr:`spent` is the sums of the entries'
    epsilons and deltas and :attr:`remaining` the difference to the limits.
    With ``"zcdp"``, :attr:`spent` is the guarantee of the fits so far (the
    conversion of the recorded rho at the conversion's delta, plus the pool
    deltas charged) and :attr:`remaining` is the rho left, as the epsilon it
    converts to, with the pool delta left.  Float dust (within a relative
    ``1e-9`` of a limit) is reported as 0.
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
    >>> budget = PrivacyBudget(1.0, 1e-5, composition="basic")
    >>> budget.spend(0.25, 0.0)
    >>> budget.remaining
    (0.75, 1e-05)
    >>> PrivacyBudget(1.0, 1e-5).composition
    'zcdp'
    """

    def __init__(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        storage: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        composition: Literal["zcdp", "basic"] | None = None,
    ) -> None:
        self._epsilon = _check_limit_epsilon(epsilon)
        self._delta = _check_limit_delta(delta)
        requested = _check_composition(composition, self._delta)
        default = _default_composition(self._delta)
        self._composition = requested if requested is not None else default
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
            # Copies of one ledger file (an image, a backup, a file handed to
            # several analysts) share its path and creation time: a nonce of
            # this opening keeps their seeded fits' noise apart.
            self._opening = secrets.token_hex(16)
            self._storage = _SQLiteStorage(
                path,
                self._epsilon,
                self._delta,
                requested,
                self._timeout,
                default_composition=default,
            )
            self._composition = self._storage.composition
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
        # What tells this opening of a ledger from every other one (seeded
        # charged fits key their noise on it, sklearn_dp._random.charged_entropy):
        # a random uuid in memory; for SQLite, the file, its creation time and
        # a random nonce of this opening (copies of the file share the first two).
        if isinstance(self._storage, _SQLiteStorage):
            return f"sqlite:{self._storage.path}:{self._storage.created!r}:{self._opening}"
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
    def delta_pool(self) -> float | None:
        """The delta a ``"zcdp"`` budget keeps for approximate-DP parts (None for ``"basic"``).

        Half of :attr:`delta`; the other half pays for the final conversion.
        """
        if self._composition != "zcdp":
            return None
        return _split_delta(self._delta)[0]

    @property
    def delta_pool_spent(self) -> float | None:
        """The pool delta charged so far on a ``"zcdp"`` budget (None for ``"basic"``)."""
        if self._composition != "zcdp":
            return None
        return self._pool_sum(self._storage.rows())

    @property
    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent so far (see the class's Privacy section)."""
        return self._spent_of(self._storage.rows())

    @property
    def remaining(self) -> tuple[float, float]:
        """``(epsilon, delta)`` left (see the class's Privacy section)."""
        return self._remaining_of(self._storage.rows())

    def _spent_of(self, rows):
        if not rows:
            return (0.0, 0.0)
        if self._composition == "zcdp":
            pool, conversion = _split_delta(self._delta)
            rho, pool_spent = self._rho_sum(rows), self._pool_sum(rows)
            if rho <= 0:
                return (_pool_epsilon(pool_spent), pool_spent)
            epsilon = _epsilon_of_rho(rho, conversion) + _pool_epsilon(pool_spent)
            return (epsilon, conversion + pool_spent)
        return self._basic(rows)

    def _remaining_of(self, rows):
        if self._composition == "zcdp":
            pool, conversion = _split_delta(self._delta)
            rho_left = _left(self.rho_limit, self._rho_sum(rows))
            # The rho left in the limit's own terms: at the start, epsilon.
            epsilon = _epsilon_of_rho(rho_left, conversion) + (
                _pool_epsilon(pool) if rho_left else 0
            )
            return (epsilon, _left(pool, self._pool_sum(rows)))
        eps, delta = self._basic(rows)
        return (_left(self._epsilon, eps), _left(self._delta, delta))

    @staticmethod
    def _basic(rows, extra=(0.0, 0.0)):
        eps = math.fsum([row.entry.epsilon for row in rows] + [extra[0]])
        delta = math.fsum([row.entry.delta for row in rows] + [extra[1]])
        return eps, delta

    @staticmethod
    def _rho_sum(rows, extra=0.0):
        return math.fsum([row.entry.rho or 0.0 for row in rows] + [extra])

    @staticmethod
    def _pool_sum(rows, extra=0.0):
        return math.fsum([row.entry.pool_delta or 0.0 for row in rows] + [extra])

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

    def _charges(self, epsilon, delta, event):
        """The ``(rho, pool_delta)`` charges a spend may take (``[(None, None)]`` on basic)."""
        if self._composition != "zcdp":
            return [(None, None, "basic")]
        return _approximate_charges(epsilon, delta, event)

    def _admit(self, rows, epsilon, delta, charges):
        """The charge under which the spend fits the ledger ``rows``, or BudgetExceededError."""
        if self._composition == "zcdp":
            rho_limit, pool = self.rho_limit, self.delta_pool
            # Any charge valid for the mechanism may be taken; the choice
            # depends on the ledger only (earlier outputs), as a filter allows.
            # The smaller rho is tried first: rho is what the filter runs out of.
            for rho, pool_delta, _ in sorted(charges, key=lambda charge: charge[:2]):
                if self._rho_sum(rows, rho) <= rho_limit * (1 + _RTOL) and self._pool_sum(
                    rows, pool_delta
                ) <= pool * (1 + _RTOL):
                    return rho, pool_delta
            # Explain the cheaper charge.
            rho, pool_delta, kind = min(charges)
            own = kind == "own"
            raise BudgetExceededError(
                _zcdp_refusal(self, rows, epsilon, delta, rho, pool_delta, own)
            )
        basic_eps, basic_delta = self._basic(rows, (epsilon, delta))
        if basic_eps <= self._epsilon * (1 + _RTOL) and basic_delta <= self._delta * (1 + _RTOL):
            return None, None
        raise BudgetExceededError(
            _basic_refusal(self, rows, epsilon, delta, (basic_eps, basic_delta))
        )

    def _admission(self, epsilon, delta, event, estimator, solver, status, unit="row"):
        """The row to record and the ``decide(rows)`` that admits it (and sets its charge)."""
        charges = self._charges(epsilon, delta, event)
        row = self._new_row(epsilon, delta, event, estimator, solver, status, (None, None))
        row.entry = dataclasses.replace(row.entry, unit=unit)
        chosen = []

        def decide(rows):
            _check_unit(rows, unit)
            charge = self._admit(rows, epsilon, delta, charges)
            row.entry = dataclasses.replace(row.entry, rho=charge[0], pool_delta=charge[1])
            chosen.append(charge)

        return row, decide, chosen

    def _new_row(self, epsilon, delta, event, estimator, solver, status, charge):
        if not isinstance(estimator, str):
            estimator = type(estimator).__name__
        if solver is not None and not isinstance(solver, str):
            solver = str(solver)
        rho, pool_delta = charge
        entry = LedgerEntry(
            estimator,
            solver,
            epsilon,
            delta,
            event,
            time.time(),
            status,
            None,
            rho,
            pool_delta=pool_delta,
        )
        return _Row(entry, _pickle_event(event))

    def check(
        self,
        epsilon: float,
        delta: float = 0.0,
        event: dpe.DpEvent | None = None,
        *,
        unit: str = "row",
    ) -> None:
        """Raise :class:`BudgetExceededError` if spending ``(epsilon, delta)`` would not fit.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee the planned fit would claim.
        event : dp_accounting.DpEvent, optional
            The planned fit's mechanism (needed by ``composition="zcdp"``).
        unit : {"row", "group"}, default="row"
            The spend's unit of privacy (see :meth:`reserve`).

        Raises
        ------
        BudgetExceededError
            The spend would take the budget past its limits.
        BudgetStorageError
            The ledger cannot be used (locked or corrupted file, or an
            in-memory budget in another process).
        ValueError
            The budget holds spends of the other unit of privacy.
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        unit = _check_unit_name(unit)
        self._storage.check_usable()
        rows = self._storage.rows()
        _check_unit(rows, unit)
        self._admit(rows, epsilon, delta, self._charges(epsilon, delta, event))

    def reserve(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        event: dpe.DpEvent | None = None,
        estimator: str = "manual",
        solver: str | None = None,
        unit: str = "row",
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
        unit : {"row", "group"}, default="row"
            The spend's unit of privacy: one row, or one group (a fit with
            ``groups=``; group fits with different ``max_group_rows``
            compose, each being DP for a group of any size).  A budget holds
            spends of one unit only: a spend of the other unit is refused
            with a ValueError, and nothing is recorded.

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
        ValueError
            The budget holds spends of the other unit of privacy; nothing
            is recorded.
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        self._storage.check_usable()
        unit = _check_unit_name(unit)
        row, decide, chosen = self._admission(
            epsilon, delta, event, estimator, solver, RESERVED, unit
        )
        entry_id = self._storage.append_if(decide, row)
        return Reservation(self, entry_id, epsilon, delta, *chosen[-1])

    def spend(
        self,
        epsilon: float,
        delta: float = 0.0,
        *,
        event: dpe.DpEvent | None = None,
        estimator: str = "manual",
        solver: str | None = None,
        unit: str = "row",
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
        unit : {"row", "group"}, default="row"
            The spend's unit of privacy (see :meth:`reserve`).

        Raises
        ------
        BudgetExceededError
            The spend does not fit; nothing is recorded.
        BudgetStorageError
            The ledger cannot be used; nothing is recorded.
        ValueError
            The budget holds spends of the other unit of privacy; nothing
            is recorded.
        """
        epsilon, delta = _check_spend_args(epsilon, delta, event)
        self._storage.check_usable()
        unit = _check_unit_name(unit)
        row, decide, _ = self._admission(epsilon, delta, event, estimator, solver, COMPLETED, unit)
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
        # The restoring functions live with the saving policy (which imports this module).
        from ._saving import _reopen_sqlite_budget, _restore_memory_budget, _restore_saved_budget

        if isinstance(self._storage, _SavedStorage):
            return (_restore_saved_budget, (self._epsilon, self._delta, self._composition))
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
        return (
            f"PrivacyBudget(epsilon={self._epsilon:.6g}, delta={self._delta:.6g}, "
            f"composition={self._composition!r}, "
            f"{state}, storage={self._storage.describe()})"
        )
