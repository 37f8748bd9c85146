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

import dataclasses
import datetime
import functools
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

_SCHEMA_VERSION = 2

#: Status of a ledger entry.
RESERVED, COMPLETED, FAILED = "reserved", "completed", "failed"
_STATUSES = (RESERVED, COMPLETED, FAILED)

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
        The mechanism of the whole fit under add/remove-one neighbouring
        (for anyone to recompute its epsilon).
    timestamp : float
        ``time.time()`` when the spend was reserved.
    status : {"reserved", "completed", "failed"}
        ``"reserved"`` while the fit runs (and forever if its process was
        killed), ``"completed"`` after it succeeded, ``"failed"`` if it
        raised after the reservation.  Every status is charged.
    error : str or None
        The class name of the exception of a failed fit (never its message,
        which may depend on private data).
    rho : float or None
        The zCDP charge of the spend on a ``composition="zcdp"`` budget.
    id : int or None
        The entry's number in the ledger (1 for the first).
    """

    estimator: str
    solver: str | None
    epsilon: float
    delta: float
    event: dpe.DpEvent | None = None
    timestamp: float = dataclasses.field(default_factory=time.time)
    status: str = COMPLETED
    error: str | None = None
    rho: float | None = None
    id: int | None = None

    def __repr__(self):
        when = datetime.datetime.fromtimestamp(self.timestamp).isoformat(timespec="seconds")
        solver = "" if self.solver is None else f", solver={self.solver!r}"
        status = "" if self.status == COMPLETED else f", status={self.status!r}"
        error = "" if self.error is None else f", error={self.error!r}"
        rho = "" if self.rho is None else f", rho={self.rho:.6g}"
        event = "" if self.event is None else f", event={self.event!r}"
        return (
            f"LedgerEntry({self.estimator!r}{solver}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}{rho}{status}{error}, at {when}{event})"
        )


class _Row:
    """A ledger entry plus the pickled bytes of its event."""

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
            entry = dataclasses.replace(row.entry, id=len(self._rows) + 1)
            self._rows.append(_Row(entry, row.blob))
            return entry.id

    def update(self, entry_id, *, status, error=None, event=None, blob=None):
        self._refuse_if_detached()
        with self._lock:
            old = self._rows[entry_id - 1]
            changes = dict(status=status, error=error)
            if blob is not None:
                changes["event"] = event
            self._rows[entry_id - 1] = _Row(
                dataclasses.replace(old.entry, **changes), old.blob if blob is None else blob
            )

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

    def update(self, entry_id, **changes):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def check_usable(self):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def describe(self):
        return "memory (detached copy in another process: cannot spend)"


_LEDGER_COLUMNS = (
    "id", "estimator", "solver", "epsilon", "delta", "event", "event_repr", "timestamp",
    "status", "error", "rho",
)
_LEDGER_COLUMNS_V1 = _LEDGER_COLUMNS[:8]
_META_COLUMNS = ("id", "schema_version", "epsilon", "delta", "created", "composition")
_META_COLUMNS_V1 = _META_COLUMNS[:5]


class _SQLiteStorage:
    """Ledger in an SQLite file; every check-and-record is one ``BEGIN IMMEDIATE`` transaction.

    A connection is opened per operation: it is cheap next to a fit, it is
    safe across threads and across ``fork``, and it never keeps the file
    locked between operations.
    """

    kind = "sqlite"
    detached = False

    def __init__(self, path, epsilon, delta, composition, timeout, *, create=True, created=None):
        self.path = os.path.abspath(os.fspath(path))
        self.timeout = timeout
        self._row_cache = {}
        self._cache_lock = threading.Lock()
        #: The ledger's creation time (its identity: a new file at the same
        #: path has another one).
        self.created = None
        self._initialise(epsilon, delta, composition, create=create, created=created)

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
                "recorded. Retry later, or pass a larger timeout= to PrivacyBudget."
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

    def _initialise(self, epsilon, delta, composition, *, create=True, created=None):
        """Open (or, with ``create``, make) the ledger; ``created`` must match an existing one.

        A budget that reaches another process by pickling reopens its ledger
        with ``create=False`` and its creation time: a file missing there (a
        worker on another machine or in another container) or replaced by
        another ledger at the same path must be an error, never a fresh,
        empty ledger that would count from zero.
        """

        def body(conn):
            tables = {
                name for (name,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'"
                )
            }
            tables.discard("sqlite_sequence")
            if not tables and not create:
                raise BudgetStorageError(
                    f"The budget ledger {self.path!r} that this budget was created with is "
                    "empty or missing here (another machine, container or working "
                    "directory?). Nothing was spent: a copy of a budget never starts a new "
                    "ledger. Make the file reachable at the same path in every process."
                )
            if not tables:
                conn.execute(
                    "CREATE TABLE budget (id INTEGER PRIMARY KEY CHECK (id = 1), "
                    "schema_version INTEGER NOT NULL, epsilon REAL NOT NULL, "
                    "delta REAL NOT NULL, created REAL NOT NULL, composition TEXT NOT NULL)"
                )
                conn.execute(
                    "CREATE TABLE ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                    "estimator TEXT NOT NULL, solver TEXT, epsilon REAL NOT NULL, "
                    "delta REAL NOT NULL, event BLOB, event_repr TEXT, "
                    "timestamp REAL NOT NULL, status TEXT NOT NULL, error TEXT, rho REAL)"
                )
                now = time.time()
                conn.execute(
                    "INSERT INTO budget VALUES (1, ?, ?, ?, ?, ?)",
                    (_SCHEMA_VERSION, epsilon, delta, now, composition),
                )
                self.created = now
                return
            if tables != {"budget", "ledger"}:
                raise self._schema_error(f"unexpected tables {sorted(tables)}")
            budget_columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(budget)"))
            ledger_columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(ledger)"))
            if (budget_columns, ledger_columns) == (_META_COLUMNS_V1, _LEDGER_COLUMNS_V1):
                self._migrate_v1(conn)
            elif (budget_columns, ledger_columns) != (_META_COLUMNS, _LEDGER_COLUMNS):
                raise self._schema_error(
                    f"tables with columns {budget_columns} and {ledger_columns}"
                )
            meta = conn.execute(
                "SELECT schema_version, epsilon, delta, composition, created FROM budget "
                "WHERE id = 1"
            ).fetchone()
            if meta is None:
                raise self._schema_error("its budget table is empty")
            version, stored_eps, stored_delta, stored_composition, stored_created = meta
            if created is not None and stored_created != created:
                raise BudgetStorageError(
                    f"The file {self.path!r} holds another budget ledger than the one this "
                    "budget was created with (it was created at another time). Nothing was "
                    "spent: a copy of a budget must reach the same ledger in every process."
                )
            self.created = stored_created
            if version != _SCHEMA_VERSION:
                raise self._schema_error(f"schema version {version!r}")
            if (stored_eps, stored_delta, stored_composition) != (epsilon, delta, composition):
                raise BudgetStorageError(
                    f"The budget ledger {self.path!r} was created with limits "
                    f"(epsilon={stored_eps!r}, delta={stored_delta!r}) and "
                    f"composition={stored_composition!r}, but this PrivacyBudget asks for "
                    f"(epsilon={epsilon!r}, delta={delta!r}) and composition={composition!r}. "
                    "A ledger's limits and admission rule cannot change: open it with its "
                    "original ones, or use a new file for a new budget."
                )

        # IMMEDIATE so that two processes creating the same new file do not
        # both create the schema.
        self._transaction(body, immediate=True, create=create)

    def _migrate_v1(self, conn):
        # Version 1 ledgers (sklearn_dp 0.1.0.dev0) recorded completed fits only,
        # under the old admission rule; they become "basic" budgets.
        version = conn.execute("SELECT schema_version FROM budget WHERE id = 1").fetchone()
        if version is None or version[0] != 1:
            raise self._schema_error(f"schema version {version!r}")
        conn.execute("ALTER TABLE budget ADD COLUMN composition TEXT NOT NULL DEFAULT 'basic'")
        conn.execute(f"ALTER TABLE ledger ADD COLUMN status TEXT NOT NULL DEFAULT '{COMPLETED}'")
        conn.execute("ALTER TABLE ledger ADD COLUMN error TEXT")
        conn.execute("ALTER TABLE ledger ADD COLUMN rho REAL")
        conn.execute("UPDATE budget SET schema_version = ? WHERE id = 1", (_SCHEMA_VERSION,))

    # -- rows -----------------------------------------------------------------

    _SELECT = (
        "SELECT id, estimator, solver, epsilon, delta, event, timestamp, status, error, rho "
        "FROM ledger"
    )

    def _read_rows(self, conn):
        return [self._row_from_record(record) for record in conn.execute(self._SELECT + " ORDER BY id")]

    def _row_from_record(self, record):
        # A committed record with the same values decodes to the same entry,
        # so decoded events are cached by the whole record.
        with self._cache_lock:
            row = self._row_cache.get(record)
        if row is not None:
            return row
        entry_id, estimator, solver, epsilon, delta, blob, timestamp, status, error, rho = record
        event = None
        if blob is not None:
            try:
                event = pickle.loads(blob)
            except Exception as exc:  # noqa: BLE001 - any failure means a bad ledger
                raise BudgetStorageError(
                    f"Ledger entry {entry_id} of {self.path!r} holds an event that "
                    f"cannot be unpickled ({exc!r}); the ledger is corrupted or was "
                    "written by an incompatible version."
                ) from exc
        entry = LedgerEntry(
            estimator, solver, float(epsilon), float(delta), event, float(timestamp),
            status, error, None if rho is None else float(rho), int(entry_id),
        )
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
            return self._insert(conn, row)

        return self._transaction(body, immediate=True)

    def update(self, entry_id, *, status, error=None, event=None, blob=None):
        def body(conn):
            if blob is None:
                conn.execute(
                    "UPDATE ledger SET status = ?, error = ? WHERE id = ?",
                    (status, error, entry_id),
                )
            else:
                conn.execute(
                    "UPDATE ledger SET status = ?, error = ?, event = ?, event_repr = ? "
                    "WHERE id = ?",
                    (status, error, blob, repr(event), entry_id),
                )

        self._transaction(body, immediate=True)

    def _insert(self, conn, row):
        entry = row.entry
        cursor = conn.execute(
            "INSERT INTO ledger (estimator, solver, epsilon, delta, event, event_repr, "
            "timestamp, status, error, rho) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.estimator, entry.solver, entry.epsilon, entry.delta, row.blob,
                None if entry.event is None else repr(entry.event), entry.timestamp,
                entry.status, entry.error, entry.rho,
            ),
        )
        return int(cursor.lastrowid)

    def check_usable(self):
        pass

    def describe(self):
        return repr(self.path)


def _uri_quote(path):
    # "?" and "#" in a path would otherwise be read as URI syntax.
    return _quote(path, safe="/:\\")


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


@functools.lru_cache(maxsize=256)
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

    Attributes
    ----------
    budget : PrivacyBudget
    entry_id : int
        The ledger entry's ``id``.
    epsilon, delta : float
        The reserved spend.
    rho : float or None
        The zCDP charge (``composition="zcdp"`` budgets).
    """

    def __init__(self, budget, entry_id, epsilon, delta, rho):
        self.budget = budget
        self.entry_id = entry_id
        self.epsilon = epsilon
        self.delta = delta
        self.rho = rho
        self.status = RESERVED

    def complete(self, event=None):
        """Mark the entry completed; ``event`` is the fit's final mechanism.

        On a zCDP budget the final event must cost no more than the rho
        reserved for it; a larger one is an accounting bug and raises.
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

    def fail(self, error):
        """Mark the entry failed; ``error`` is an exception (only its class name is kept)."""
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

    def __init__(self, epsilon, delta=0.0, *, storage=None, timeout=30.0, composition="basic"):
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
    def epsilon(self):
        """Total epsilon of the budget."""
        return self._epsilon

    @property
    def delta(self):
        """Total delta of the budget."""
        return self._delta

    @property
    def composition(self):
        """The admission rule: ``"basic"`` or ``"zcdp"``."""
        return self._composition

    @property
    def storage(self):
        """``None`` for an in-memory budget, else the absolute path of the ledger."""
        return self._storage.path if isinstance(self._storage, _SQLiteStorage) else None

    @property
    def ledger(self):
        """The recorded spends, oldest first (a new list of frozen entries)."""
        return [row.entry for row in self._storage.rows()]

    @property
    def rho_limit(self):
        """The total rho a ``"zcdp"`` budget admits (None for ``"basic"``)."""
        if self._composition != "zcdp":
            return None
        return _rho_limit(self._epsilon, self._delta)

    @property
    def rho_spent(self):
        """The rho charged so far on a ``"zcdp"`` budget (None for ``"basic"``)."""
        if self._composition != "zcdp":
            return None
        return self._rho_sum(self._storage.rows())

    @property
    def spent(self):
        """``(epsilon, delta)`` spent so far (see the class's Privacy section)."""
        return self._spent_of(self._storage.rows())

    @property
    def remaining(self):
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

    def fixed_sequence_epsilon(self, delta=None):
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

    def check(self, epsilon, delta=0.0, event=None):
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

    def reserve(self, epsilon, delta=0.0, *, event=None, estimator="manual", solver=None):
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

    def spend(self, epsilon, delta=0.0, *, event=None, estimator="manual", solver=None):
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
                (self._epsilon, self._delta, self._storage.path, self._timeout,
                 self._composition, self._storage.created),
            )
        pid = self._storage.pid if isinstance(self._storage, _MemoryStorage) else -1
        snapshot = [(row.entry, row.blob) for row in self._storage.rows()]
        return (
            _restore_memory_budget,
            (self._uuid, pid, self._epsilon, self._delta, snapshot, self._timeout,
             self._composition),
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
