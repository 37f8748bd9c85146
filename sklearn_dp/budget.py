"""A privacy budget shared by many fits, with an in-memory or SQLite ledger.

A :class:`PrivacyBudget` holds a total ``(epsilon, delta)`` and a ledger of
what has been spent.  Estimators call :meth:`PrivacyBudget.check` before a fit
touches the data and :meth:`PrivacyBudget.spend` after the fit succeeded, so
a failed fit spends nothing and a successful fit records exactly one entry.

The budget is one shared object: ``sklearn.base.clone``, ``copy.copy``,
``copy.deepcopy`` and in-process pickling all return the budget itself, so a
budget passed to an estimator keeps counting inside ``GridSearchCV``,
``cross_val_score`` and Pipelines.  Across processes only a file-backed budget
(``storage="budget.sqlite"``) can count; an in-memory budget that reaches
another process refuses to spend instead of silently starting from zero.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import math
import os
import pickle
import sqlite3
import threading
import time
import uuid
import weakref
from numbers import Real
from urllib.parse import quote as _quote

from dp_accounting import dp_event as dpe

from .accounting import epsilon_of_events
from .exceptions import BudgetExceededError, BudgetStorageError

__all__ = ["PrivacyBudget", "LedgerEntry", "BudgetExceededError", "BudgetStorageError"]

# Relative slack when comparing a total with its limit: spending exactly what
# `remaining` reports must succeed even though float sums are not exact.
_RTOL = 1e-9

_SCHEMA_VERSION = 1

# In-memory budgets alive in this process, by uuid, so that unpickling in the
# same process (joblib's threading backend, a pickle round-trip in a notebook)
# returns the very object that counts instead of a copy that would not.
_MEMORY_BUDGETS: "weakref.WeakValueDictionary[str, PrivacyBudget]" = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()


# --------------------------------------------------------------------------
# Ledger entries
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend of a :class:`PrivacyBudget`.

    Attributes
    ----------
    estimator : str
        Who spent (an estimator's class name, or ``"manual"``).
    solver : str or None
        The solver that ran the fit, if any.
    epsilon, delta : float
        The ``(epsilon, delta)`` guarantee claimed for this spend.
    event : dp_accounting.DpEvent or None
        The mechanism of the whole fit under add/remove-one neighbouring; lets
        the budget compose the ledger numerically.
    timestamp : float
        ``time.time()`` when the spend was recorded.
    """

    estimator: str
    solver: str | None
    epsilon: float
    delta: float
    event: dpe.DpEvent | None = None
    timestamp: float = dataclasses.field(default_factory=time.time)

    def __repr__(self):
        when = datetime.datetime.fromtimestamp(self.timestamp).isoformat(timespec="seconds")
        solver = "" if self.solver is None else f", solver={self.solver!r}"
        event = "" if self.event is None else f", event={self.event!r}"
        return (
            f"LedgerEntry({self.estimator!r}{solver}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}, at {when}{event})"
        )


class _Row:
    """A ledger entry plus the pickled bytes of its event (the cache key)."""

    __slots__ = ("entry", "blob")

    def __init__(self, entry, blob):
        self.entry = entry
        self.blob = blob


def _pickle_event(event):
    if event is None:
        return None
    try:
        return pickle.dumps(event, protocol=4)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means the same
        raise TypeError(
            f"The DpEvent {event!r} cannot be pickled; a budget must be able to "
            "store and ship its events."
        ) from exc


# --------------------------------------------------------------------------
# Storages
# --------------------------------------------------------------------------


class _MemoryStorage:
    """Ledger in a list, guarded by a lock; valid only in the creating process."""

    kind = "memory"

    def __init__(self, rows=(), pid=None):
        self._rows = list(rows)
        self._lock = threading.Lock()
        self.pid = os.getpid() if pid is None else pid

    @property
    def detached(self):
        # A fork copies the object without pickling it; the copy must not count
        # on its own either.
        return os.getpid() != self.pid

    def rows(self):
        with self._lock:
            return list(self._rows)

    def append_if(self, decide, row):
        self._refuse_if_detached()
        with self._lock:
            decide(self._rows)
            self._rows.append(row)

    def _refuse_if_detached(self):
        if self.detached:
            raise BudgetStorageError(_DETACHED_MESSAGE)

    def check_usable(self):
        self._refuse_if_detached()

    def describe(self):
        return "memory (detached copy: cannot spend)" if self.detached else "memory"


_DETACHED_MESSAGE = (
    "This PrivacyBudget is an in-memory budget that was copied into another "
    "process (for example a joblib/loky worker of GridSearchCV(n_jobs=2)), or "
    "whose original no longer exists. An in-memory budget cannot count spends "
    "across processes, so this copy refuses to check or spend rather than "
    "silently start from zero. Create the budget with a file ledger, e.g. "
    'PrivacyBudget(epsilon, delta, storage="budget.sqlite"), which every '
    "process shares safely, or run the search with n_jobs=1."
)


class _DetachedStorage:
    """Snapshot of an in-memory ledger that reached another process."""

    kind = "detached"
    detached = True

    def __init__(self, rows):
        self._rows = list(rows)

    def rows(self):
        return list(self._rows)

    def append_if(self, decide, row):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def check_usable(self):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def describe(self):
        return "memory (detached copy in another process: cannot spend)"


_LEDGER_COLUMNS = ("id", "estimator", "solver", "epsilon", "delta", "event", "event_repr", "timestamp")
_META_COLUMNS = ("id", "schema_version", "epsilon", "delta", "created")


class _SQLiteStorage:
    """Ledger in an SQLite file; every spend is one ``BEGIN IMMEDIATE`` transaction.

    A connection is opened per operation: it is cheap next to a fit, it is
    safe across threads and across ``fork``, and it never keeps the file
    locked between operations.
    """

    kind = "sqlite"
    detached = False

    def __init__(self, path, epsilon, delta, timeout):
        self.path = os.path.abspath(os.fspath(path))
        self.timeout = timeout
        self._row_cache = {}
        self._cache_lock = threading.Lock()
        self._initialise(epsilon, delta)

    # -- connections and errors ---------------------------------------------

    def _connect(self, create=False):
        mode = "rwc" if create else "rw"
        # URI mode "rw" makes a vanished file an error instead of silently
        # creating an empty ledger in its place.
        uri = "file:" + _uri_quote(self.path) + f"?mode={mode}"
        try:
            conn = sqlite3.connect(
                uri, uri=True, timeout=self.timeout, isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise self._storage_error(exc) from exc
        return conn

    def _storage_error(self, exc):
        name = getattr(exc, "sqlite_errorname", "") or ""
        text = str(exc)
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text or "busy" in text:
            return BudgetStorageError(
                f"The budget ledger {self.path!r} stayed locked by another process or "
                f"thread for longer than the timeout ({self.timeout:g} s). Nothing was "
                "spent. Retry later, or pass a larger timeout= to PrivacyBudget."
            )
        if "unable to open" in text:
            return BudgetStorageError(
                f"Cannot open the budget ledger {self.path!r} ({text}). Check that "
                "the file exists (it is only created when the budget is first made) "
                "and that its directory is writable."
            )
        return BudgetStorageError(
            f"The budget ledger {self.path!r} is not a usable SQLite database "
            f"({text}). It may be corrupted or not be a sklearn_dp ledger at all; it "
            "was left untouched. Restore it from a backup or point storage= at a "
            "new file (a new file starts a new, empty budget)."
        )

    def _schema_error(self, detail):
        return BudgetStorageError(
            f"The file {self.path!r} is an SQLite database but not a sklearn_dp budget "
            f"ledger ({detail}). It was left untouched; use another path for storage=."
        )

    def _transaction(self, body, *, immediate, create=False):
        conn = self._connect(create=create)
        try:
            try:
                conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
                result = body(conn)
                conn.execute("COMMIT")
                return result
            except BaseException:
                # The rollback also runs for BudgetExceededError: nothing of a
                # refused spend may reach the file.
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                raise
        except sqlite3.Error as exc:
            raise self._storage_error(exc) from exc
        finally:
            conn.close()

    # -- schema ---------------------------------------------------------------

    def _initialise(self, epsilon, delta):
        def body(conn):
            tables = {
                name for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                )
            }
            tables.discard("sqlite_sequence")
            if not tables:
                conn.execute(
                    "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), "
                    "schema_version INTEGER NOT NULL, epsilon REAL NOT NULL, "
                    "delta REAL NOT NULL, created REAL NOT NULL)"
                )
                conn.execute(
                    "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "estimator TEXT NOT NULL, solver TEXT, epsilon REAL NOT NULL, "
                    "delta REAL NOT NULL, event BLOB, event_repr TEXT, "
                    "timestamp REAL NOT NULL)"
                )
                conn.execute(
                    "INSERT INTO budget VALUES (1, ?, ?, ?, ?)",
                    (_SCHEMA_VERSION, epsilon, delta, time.time()),
                )
                return
            if tables != {"budget", "ledger"}:
                raise self._schema_error(f"unexpected tables {sorted(tables)}")
            for table, expected in (("budget", _META_COLUMNS), ("ledger", _LEDGER_COLUMNS)):
                columns = tuple(row[1] for row in conn.execute(f"PRAGMA table_info({table})"))
                if columns != expected:
                    raise self._schema_error(f"table {table!r} has columns {columns}")
            meta = conn.execute(
                "SELECT schema_version, epsilon, delta FROM budget WHERE id = 1"
            ).fetchone()
            if meta is None:
                raise self._schema_error("its budget table is empty")
            version, stored_eps, stored_delta = meta
            if version != _SCHEMA_VERSION:
                raise self._schema_error(f"schema version {version!r}")
            if (stored_eps, stored_delta) != (epsilon, delta):
                raise BudgetStorageError(
                    f"The budget ledger {self.path!r} was created with limits "
                    f"(epsilon={stored_eps!r}, delta={stored_delta!r}), but this "
                    f"PrivacyBudget asks for (epsilon={epsilon!r}, delta={delta!r}). "
                    "A ledger's limits cannot change: open it with its original "
                    "limits, or use a new file for a new budget."
                )

        # IMMEDIATE so that two processes creating the same new file do not
        # both create the schema.
        self._transaction(body, immediate=True, create=True)

    # -- rows -----------------------------------------------------------------

    def _read_rows(self, conn):
        rows = []
        for record in conn.execute(
            "SELECT id, estimator, solver, epsilon, delta, event, timestamp "
            "FROM ledger ORDER BY id"
        ):
            rows.append(self._row_from_record(record))
        return rows

    def _row_from_record(self, record):
        # Rows are immutable once committed, so decoded events are cached by
        # the whole record (a replaced file with reused ids cannot hit).
        with self._cache_lock:
            row = self._row_cache.get(record)
        if row is not None:
            return row
        _, estimator, solver, epsilon, delta, blob, timestamp = record
        event = None
        if blob is not None:
            try:
                event = pickle.loads(blob)
            except Exception as exc:  # noqa: BLE001 - any failure means a bad ledger
                raise BudgetStorageError(
                    f"Ledger entry {record[0]} of {self.path!r} holds an event that "
                    f"cannot be unpickled ({exc!r}); the ledger is corrupted or was "
                    "written by an incompatible version."
                ) from exc
        entry = LedgerEntry(estimator, solver, float(epsilon), float(delta), event, float(timestamp))
        row = _Row(entry, None if blob is None else bytes(blob))
        with self._cache_lock:
            if len(self._row_cache) > 100_000:
                self._row_cache.clear()
            self._row_cache[record] = row
        return row

    def rows(self):
        return self._transaction(self._read_rows, immediate=False)

    def append_if(self, decide, row):
        def body(conn):
            decide(self._read_rows(conn))
            self._insert(conn, row)

        self._transaction(body, immediate=True)

    def _insert(self, conn, row):
        entry = row.entry
        conn.execute(
            "INSERT INTO ledger (estimator, solver, epsilon, delta, event, event_repr, "
            "timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                entry.estimator, entry.solver, entry.epsilon, entry.delta, row.blob,
                None if entry.event is None else repr(entry.event), entry.timestamp,
            ),
        )

    def check_usable(self):
        pass

    def describe(self):
        return repr(self.path)


def _uri_quote(path):
    # "?" and "#" in a path would otherwise be read as URI syntax.
    return _quote(path, safe="/:\\")


# --------------------------------------------------------------------------
# The budget
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


class PrivacyBudget:
    """A total privacy budget shared by many fits, with a ledger of spends.

    Parameters
    ----------
    epsilon : float
        Total epsilon, finite and > 0.
    delta : float, default=0.0
        Total delta, in ``[0, 1)``. A budget with ``delta=0`` only accepts
        pure epsilon-DP spends (``delta=0``).
    storage : None, str or os.PathLike, default=None
        ``None`` keeps the ledger in memory (this process only).  A path keeps
        it in an SQLite file: durable across restarts and safe for several
        processes spending at once.  The file records the limits; opening it
        with other limits raises :class:`BudgetStorageError`.
    timeout : float, default=30.0
        Seconds to wait for another process holding the SQLite ledger before
        raising :class:`BudgetStorageError`.

    Attributes
    ----------
    spent : tuple of float
        ``(epsilon, delta)`` spent so far (see Privacy below).
    remaining : tuple of float
        ``(epsilon - spent_epsilon, delta - spent_delta)``, clipped at 0.
    ledger : list of LedgerEntry
        The recorded spends, oldest first (a copy).

    Notes
    -----
    **Privacy.**  *Composition:* the budget reports the tighter of two valid guarantees for
    the whole ledger: (a) basic composition, the sums of the entries'
    epsilons and deltas; and (b), when the budget's ``delta > 0`` and every
    entry carries a DpEvent, the numerical (PLD) composition of all events
    evaluated at the budget's ``delta``, i.e. ``(epsilon_of_events(events,
    delta), delta)``.  A spend is accepted when *either* rule keeps the total
    within the limits, so :attr:`remaining` is a summary and :meth:`check`
    is the authority (a spend with an event may fit under (b) after (a) is
    used up).  A relative slack of 1e-9 lets one spend exactly the remainder.

    *Processes:* the budget is one shared object: ``clone``, ``copy``,
    ``deepcopy`` and unpickling in the same process return the budget
    itself.  An in-memory budget cannot count across processes: a copy that
    reaches another process (e.g. a joblib worker of ``GridSearchCV(n_jobs=2)``)
    refuses to check or spend with :class:`BudgetStorageError`.  Use
    ``storage="budget.sqlite"`` there; every check-and-spend on the file is one
    atomic transaction, so racing processes can never overspend.

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

    def __init__(self, epsilon, delta=0.0, *, storage=None, timeout=30.0):
        self._epsilon = _check_limit_epsilon(epsilon)
        self._delta = _check_limit_delta(delta)
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
            self._storage = _SQLiteStorage(path, self._epsilon, self._delta, self._timeout)
        else:
            raise TypeError(
                f"storage must be None or a file path (str or os.PathLike), got {storage!r}."
            )

    # -- limits and reports ----------------------------------------------------

    @property
    def epsilon(self):
        """Total epsilon of the budget."""
        return self._epsilon

    @property
    def delta(self):
        """Total delta of the budget."""
        return self._delta

    @property
    def storage(self):
        """``None`` for an in-memory budget, else the absolute path of the ledger."""
        return self._storage.path if isinstance(self._storage, _SQLiteStorage) else None

    @property
    def ledger(self):
        """The recorded spends, oldest first (a new list of frozen entries)."""
        return [row.entry for row in self._storage.rows()]

    @property
    def spent(self):
        """``(epsilon, delta)`` spent so far: the tighter of basic and numerical composition."""
        return self._spent_of(self._storage.rows())

    @property
    def remaining(self):
        """``(epsilon, delta)`` left, clipped at 0; :meth:`check` decides what fits."""
        eps, delta = self.spent
        return (max(0.0, self._epsilon - eps), max(0.0, self._delta - delta))

    def _spent_of(self, rows):
        if not rows:
            return (0.0, 0.0)
        basic_eps, basic_delta = self._basic(rows)
        numerical = self._numerical(rows)
        basic_valid = basic_delta <= self._delta * (1 + _RTOL)
        if numerical is not None and (not basic_valid or numerical < basic_eps):
            return (numerical, self._delta)
        return (basic_eps, basic_delta)

    @staticmethod
    def _basic(rows, extra=(0.0, 0.0)):
        eps = math.fsum([row.entry.epsilon for row in rows] + [extra[0]])
        delta = math.fsum([row.entry.delta for row in rows] + [extra[1]])
        return eps, delta

    def _numerical(self, rows, extra=None):
        """Epsilon at the budget's delta of all events (plus ``extra``), or None."""
        if self._delta <= 0 or any(row.blob is None for row in rows):
            return None
        if extra is not None and extra.blob is None:
            return None
        all_rows = list(rows) + ([extra] if extra is not None else [])
        # Key on the pickled events: exact (reprs need not be), and the ledger
        # is append-only, so a repeated `.spent` costs one hash.
        digest = hashlib.sha256()
        for row in all_rows:
            digest.update(len(row.blob).to_bytes(8, "little"))
            digest.update(row.blob)
        key = (digest.digest(), self._delta)
        with self._cache_lock:
            if key in self._cache:
                return self._cache[key]
        try:
            value = float(epsilon_of_events([row.entry.event for row in all_rows], self._delta))
        except (ValueError, TypeError, NotImplementedError, OverflowError, ArithmeticError):
            # E.g. a pure-DP event mixed with Gaussian ones: no accountant
            # composes them, and basic composition still applies.
            value = None
        if value is not None and not math.isfinite(value):
            value = None
        with self._cache_lock:
            if len(self._cache) > 256:
                self._cache.clear()
            self._cache[key] = value
        return value

    # -- checking and spending -------------------------------------------------

    def _fits(self, rows, epsilon, delta, new_row):
        """None if the spend fits the ledger ``rows``, else an explanation."""
        tol_eps = self._epsilon * (1 + _RTOL)
        tol_delta = self._delta * (1 + _RTOL)
        basic_eps, basic_delta = self._basic(rows, (epsilon, delta))
        if basic_eps <= tol_eps and basic_delta <= tol_delta:
            return None
        numerical = None
        if new_row.blob is not None:
            numerical = self._numerical(rows, new_row)
            if numerical is not None and numerical <= tol_eps:
                return None
        return self._exceeded_message(rows, epsilon, delta, basic_eps, basic_delta, numerical)

    def _exceeded_message(self, rows, epsilon, delta, basic_eps, basic_delta, numerical):
        spent_eps, spent_delta = self._spent_of(rows)
        rem_eps = max(0.0, self._epsilon - spent_eps)
        rem_delta = max(0.0, self._delta - spent_delta)
        parts = [
            f"Spending (epsilon={epsilon:.6g}, delta={delta:.6g}) would exceed the "
            f"privacy budget (epsilon={self._epsilon:.6g}, delta={self._delta:.6g}): "
            f"{len(rows)} spend(s) recorded, remaining (epsilon={rem_eps:.6g}, "
            f"delta={rem_delta:.6g}). With this spend, basic composition totals "
            f"(epsilon={basic_eps:.6g}, delta={basic_delta:.6g})"
        ]
        if numerical is not None:
            parts.append(
                f" and numerical composition of the events totals epsilon={numerical:.6g} "
                f"at delta={self._delta:.6g}"
            )
        parts.append(". Nothing was spent.")
        if self._delta == 0 and delta > 0:
            parts.append(
                " This budget has delta=0 and accepts only pure epsilon-DP spends "
                "(delta=0): use a solver with a pure-DP mode, or a budget with delta > 0."
            )
        else:
            parts.append(
                " Ask for a smaller epsilon (or delta), or stop: a fresh budget is only "
                "justified for fresh data. (When numerical composition is tighter, "
                "`remaining` summarises it at the budget's delta; check() decides what fits.)"
            )
        return "".join(parts)

    def _new_row(self, epsilon, delta, event, estimator, solver):
        if not isinstance(estimator, str):
            estimator = type(estimator).__name__
        if solver is not None and not isinstance(solver, str):
            solver = str(solver)
        entry = LedgerEntry(estimator, solver, epsilon, delta, event, time.time())
        return _Row(entry, _pickle_event(event))

    def check(self, epsilon, delta=0.0, event=None):
        """Raise :class:`BudgetExceededError` if spending ``(epsilon, delta)`` would not fit.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee the planned fit would claim.
        event : dp_accounting.DpEvent, optional
            The planned fit's mechanism, so numerical composition can be used.

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
        new_row = self._new_row(epsilon, delta, event, "check", None)
        message = self._fits(self._storage.rows(), epsilon, delta, new_row)
        if message is not None:
            raise BudgetExceededError(message)

    def spend(self, epsilon, delta=0.0, *, event=None, estimator="manual", solver=None):
        """Atomically check a spend and record it as one ledger entry.

        Parameters
        ----------
        epsilon, delta : float
            The guarantee of the finished fit.
        event : dp_accounting.DpEvent, optional
            The fit's mechanism under add/remove-one neighbouring.
        estimator : str, default="manual"
            Who spends (an estimator passes its class name).
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
        new_row = self._new_row(epsilon, delta, event, estimator, solver)

        def decide(rows):
            message = self._fits(rows, epsilon, delta, new_row)
            if message is not None:
                raise BudgetExceededError(message)

        self._storage.append_if(decide, new_row)

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
                (self._epsilon, self._delta, self._storage.path, self._timeout),
            )
        pid = self._storage.pid if isinstance(self._storage, _MemoryStorage) else -1
        snapshot = [(row.entry, row.blob) for row in self._storage.rows()]
        return (
            _restore_memory_budget,
            (self._uuid, pid, self._epsilon, self._delta, snapshot, self._timeout),
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
            f"{state}, storage={self._storage.describe()})"
        )


def _reopen_sqlite_budget(epsilon, delta, path, timeout):
    return PrivacyBudget(epsilon, delta, storage=path, timeout=timeout)


def _restore_memory_budget(budget_id, pid, epsilon, delta, snapshot, timeout):
    if pid == os.getpid():
        with _REGISTRY_LOCK:
            original = _MEMORY_BUDGETS.get(budget_id)
        if original is not None:
            return original
    budget = PrivacyBudget.__new__(PrivacyBudget)
    budget._epsilon = epsilon
    budget._delta = delta
    budget._timeout = timeout
    budget._cache = {}
    budget._cache_lock = threading.Lock()
    budget._uuid = budget_id
    budget._storage = _DetachedStorage([_Row(entry, blob) for entry, blob in snapshot])
    return budget
