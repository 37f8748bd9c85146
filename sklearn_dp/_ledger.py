"""Ledger storage of :class:`~sklearn_dp.PrivacyBudget`: entries and their backends.

The policy (admission by a privacy filter, reservations, copies and pickling)
lives in :mod:`sklearn_dp.budget`; this module only stores the ledger and
knows nothing of epsilon arithmetic.  Three backends share one small
interface (``rows``, ``row(entry_id)``, ``append_if(decide, row)``, ``update``,
``check_usable``, ``describe``):

* :class:`_MemoryStorage`: a list guarded by a lock, valid only in the
  process that created it;
* :class:`_DetachedStorage`: the read-only snapshot of an in-memory ledger
  that reached another process (it refuses every spend);
* :class:`_SQLiteStorage`: an SQLite file shared safely by threads and
  processes (``BEGIN IMMEDIATE`` transactions), durable across restarts.

``append_if(decide, row)`` calls ``decide(rows)`` (which raises to refuse)
and appends ``row`` in the same atomic step, so a check and its record can
never be separated by another spender.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import pickle
import sqlite3
import threading
import time
from urllib.parse import quote as _quote

from dp_accounting import dp_event as dpe

from .exceptions import BudgetStorageError

__all__ = ["LedgerEntry", "RESERVED", "COMPLETED", "FAILED"]

_SCHEMA_VERSION = 3

#: Status of a ledger entry.
RESERVED, COMPLETED, FAILED = "reserved", "completed", "failed"
_STATUSES = (RESERVED, COMPLETED, FAILED)


# --------------------------------------------------------------------------
# Ledger entries
# --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class LedgerEntry:
    """One recorded spend of a :class:`PrivacyBudget`.

    Parameters
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
    pool_delta : float or None
        On a ``composition="zcdp"`` budget, the delta of the spend's
        approximate-DP parts, charged to the budget's delta pool (0 for a
        spend without any).
    unit : {"row", "group"}
        The unit of privacy of the spend: one row, or one group (a fit with
        ``groups=``).  One budget holds spends of one unit only.
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
    pool_delta: float | None = None
    unit: str = "row"

    def __repr__(self):
        when = datetime.datetime.fromtimestamp(self.timestamp).isoformat(timespec="seconds")
        solver = "" if self.solver is None else f", solver={self.solver!r}"
        status = "" if self.status == COMPLETED else f", status={self.status!r}"
        error = "" if self.error is None else f", error={self.error!r}"
        rho = "" if self.rho is None else f", rho={self.rho:.6g}"
        if self.pool_delta:
            rho += f", pool_delta={self.pool_delta:.6g}"
        if self.unit != "row":
            rho += f", unit={self.unit!r}"
        event = "" if self.event is None else f", event={self.event!r}"
        return (
            f"LedgerEntry({self.estimator!r}{solver}, epsilon={self.epsilon:.6g}, "
            f"delta={self.delta:.6g}{rho}{status}{error}, at {when}{event})"
        )


UNITS = ("row", "group")


def _check_unit_name(unit):
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {UNITS}, got {unit!r}.")
    return unit


def _check_unit(rows, unit):
    """Refuse a spend whose unit of privacy is not that of the ledger's entries.

    Spends compose into one guarantee only under one neighbouring relation:
    a row-level fit's epsilon says nothing about a person with many rows,
    and adding it to group-level spends would state a total that holds
    under neither relation.  Group-level fits with different
    ``max_group_rows`` compose: a fit that keeps at most ``k`` rows of each
    group is DP for adding or removing one group of any size.
    """
    other = next((row.entry.unit for row in rows if row.entry.unit != unit), None)
    if other is None:
        return
    names = {"row": "one row", "group": "one group (fits with groups=)"}
    raise ValueError(
        f"This budget holds spends whose unit of privacy is {names[other]}; this spend's "
        f"unit is {names[unit]}. Their epsilons do not add up to a guarantee under either "
        "neighbouring relation. Use a separate PrivacyBudget for each unit of privacy. "
        "Nothing was spent."
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
    except Exception as exc:
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

    def row(self, entry_id):
        # Entry ids are positions (1 for the first): ledger rows are never removed.
        with self._lock:
            if 1 <= entry_id <= len(self._rows):
                return self._rows[entry_id - 1]
        return None

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

    def row(self, entry_id):
        return next((row for row in self._rows if row.entry.id == entry_id), None)

    def append_if(self, decide, row):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def update(self, entry_id, **changes):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def check_usable(self):
        raise BudgetStorageError(_DETACHED_MESSAGE)

    def describe(self):
        return "memory (detached copy in another process: cannot spend)"


_SAVED_MESSAGE = (
    "This PrivacyBudget came with a fitted model that was saved (pickled) and loaded: "
    "a saved model keeps its privacy report but no handle on the budget's ledger, "
    "so this stand-in cannot check, spend or read the ledger. The model's own spend "
    "is in sklearn_dp.privacy_report(model). To fit again, pass the live budget: "
    "model.set_params(budget=PrivacyBudget(...)) (or budget=None)."
)


class _SavedStorage:
    """No ledger at all: the stand-in for the budget of a fitted model that was saved.

    Every operation, reads included, refuses: a saved model may be loaded
    anywhere (another machine, years later), where the ledger's state is
    unknown; reporting a stale ``spent`` or ``remaining`` would mislead.
    """

    kind = "saved"
    detached = True

    def rows(self):
        raise BudgetStorageError(_SAVED_MESSAGE)

    def row(self, entry_id):
        raise BudgetStorageError(_SAVED_MESSAGE)

    def append_if(self, decide, row):
        raise BudgetStorageError(_SAVED_MESSAGE)

    def update(self, entry_id, **changes):
        raise BudgetStorageError(_SAVED_MESSAGE)

    def check_usable(self):
        raise BudgetStorageError(_SAVED_MESSAGE)

    def describe(self):
        return "none (saved with a fitted model: cannot spend)"


_LEDGER_COLUMNS = (
    "id",
    "estimator",
    "solver",
    "epsilon",
    "delta",
    "event",
    "event_repr",
    "timestamp",
    "status",
    "error",
    "rho",
    "pool_delta",
    "unit",
)
_META_COLUMNS = ("id", "schema_version", "epsilon", "delta", "created", "composition")


class _SQLiteStorage:
    """Ledger in an SQLite file; every check-and-record is one ``BEGIN IMMEDIATE`` transaction.

    A connection is opened per operation: it is cheap next to a fit, it is
    safe across threads and across ``fork``, and it never keeps the file
    locked between operations.
    """

    kind = "sqlite"
    detached = False

    def __init__(
        self,
        path,
        epsilon,
        delta,
        composition,
        timeout,
        *,
        create=True,
        created=None,
        default_composition=None,
    ):
        self.path = os.path.abspath(os.fspath(path))
        self.timeout = timeout
        self._row_cache = {}
        self._cache_lock = threading.Lock()
        #: The ledger's creation time (its identity: a new file at the same
        #: path has another one).
        self.created = None
        #: The admission rule recorded in the file (``composition=None``
        #: adopts it for an existing ledger; a new one gets
        #: ``default_composition``).
        self.composition = composition
        self._initialise(
            epsilon,
            delta,
            composition,
            create=create,
            created=created,
            default_composition=default_composition,
        )

    # -- connections and errors ---------------------------------------------

    def _connect(self, create=False):
        mode = "rwc" if create else "rw"
        # URI mode "rw" makes a vanished file an error instead of silently
        # creating an empty ledger in its place.
        uri = "file:" + _uri_quote(self.path) + f"?mode={mode}"
        try:
            conn = sqlite3.connect(
                uri,
                uri=True,
                timeout=self.timeout,
                isolation_level=None,
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

    def _version_error(self, version):
        return BudgetStorageError(
            f"The budget ledger {self.path!r} has schema version {version!r}; this "
            f"version of sklearn_dp reads only schema version {_SCHEMA_VERSION} ledgers. "
            "It was left untouched and nothing was charged. Its spends cannot be carried "
            "over: start a new ledger file (point storage= at a new path) for a new budget."
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

    def _initialise(
        self, epsilon, delta, composition, *, create=True, created=None, default_composition=None
    ):
        """Open (or, with ``create``, make) the ledger; ``created`` must match an existing one.

        A budget that reaches another process by pickling reopens its ledger
        with ``create=False`` and its creation time: a file missing there (a
        worker on another machine or in another container) or replaced by
        another ledger at the same path must be an error, never a fresh,
        empty ledger that would count from zero.
        """

        def body(conn):
            tables = {
                name
                for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
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
                    "timestamp REAL NOT NULL, status TEXT NOT NULL, error TEXT, rho REAL, "
                    "pool_delta REAL, unit TEXT)"
                )
                now = time.time()
                chosen = composition if composition is not None else default_composition
                conn.execute(
                    "INSERT INTO budget VALUES (1, ?, ?, ?, ?, ?)",
                    (_SCHEMA_VERSION, epsilon, delta, now, chosen),
                )
                self.created = now
                self.composition = chosen
                return
            if tables != {"budget", "ledger"}:
                raise self._schema_error(f"unexpected tables {sorted(tables)}")
            budget_columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(budget)"))
            ledger_columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(ledger)"))
            # The version is read first so that a ledger of another schema
            # version gets an error saying so, whatever its columns.
            if "schema_version" in budget_columns:
                stored = conn.execute("SELECT schema_version FROM budget WHERE id = 1").fetchone()
                if stored is not None and stored[0] != _SCHEMA_VERSION:
                    raise self._version_error(stored[0])
            if (budget_columns, ledger_columns) != (_META_COLUMNS, _LEDGER_COLUMNS):
                raise self._schema_error(
                    f"tables with columns {budget_columns} and {ledger_columns}"
                )
            meta = conn.execute(
                "SELECT schema_version, epsilon, delta, composition, created FROM budget "
                "WHERE id = 1"
            ).fetchone()
            if meta is None:
                raise self._schema_error("its budget table is empty")
            _, stored_eps, stored_delta, stored_composition, stored_created = meta
            if created is not None and stored_created != created:
                raise BudgetStorageError(
                    f"The file {self.path!r} holds another budget ledger than the one this "
                    "budget was created with (it was created at another time). Nothing was "
                    "spent: a copy of a budget must reach the same ledger in every process."
                )
            self.created = stored_created
            # No rule asked for: the ledger keeps the one it was admitted under.
            asked = stored_composition if composition is None else composition
            self.composition = stored_composition
            if (stored_eps, stored_delta, stored_composition) != (epsilon, delta, asked):
                raise BudgetStorageError(
                    f"The budget ledger {self.path!r} was created with limits "
                    f"(epsilon={stored_eps!r}, delta={stored_delta!r}) and "
                    f"composition={stored_composition!r}, but this PrivacyBudget asks for "
                    f"(epsilon={epsilon!r}, delta={delta!r}) and composition={asked!r}. "
                    "A ledger's limits and admission rule cannot change: open it with its "
                    "original ones, or use a new file for a new budget."
                )

        # IMMEDIATE so that two processes creating the same new file do not
        # both create the schema.
        self._transaction(body, immediate=True, create=create)

    # -- rows -----------------------------------------------------------------

    _SELECT = (
        "SELECT id, estimator, solver, epsilon, delta, event, timestamp, status, error, rho, "
        "pool_delta, unit FROM ledger"
    )

    def _read_rows(self, conn):
        return [
            self._row_from_record(record) for record in conn.execute(self._SELECT + " ORDER BY id")
        ]

    def _row_from_record(self, record):
        # A committed record with the same values decodes to the same entry,
        # so decoded events are cached by the whole record.
        with self._cache_lock:
            row = self._row_cache.get(record)
        if row is not None:
            return row
        (
            entry_id,
            estimator,
            solver,
            epsilon,
            delta,
            blob,
            timestamp,
            status,
            error,
            rho,
            pool_delta,
            unit,
        ) = record
        event = None
        if blob is not None:
            try:
                event = pickle.loads(blob)
            except Exception as exc:
                raise BudgetStorageError(
                    f"Ledger entry {entry_id} of {self.path!r} holds an event that "
                    f"cannot be unpickled ({exc!r}); the ledger is corrupted or was "
                    "written by an incompatible version."
                ) from exc
        entry = LedgerEntry(
            estimator,
            solver,
            float(epsilon),
            float(delta),
            event,
            float(timestamp),
            status,
            error,
            None if rho is None else float(rho),
            int(entry_id),
            None if pool_delta is None else float(pool_delta),
            "row" if unit is None else unit,
        )
        row = _Row(entry, None if blob is None else bytes(blob))
        with self._cache_lock:
            if len(self._row_cache) > 100_000:
                self._row_cache.clear()
            self._row_cache[record] = row
        return row

    def rows(self):
        return self._transaction(self._read_rows, immediate=False)

    def row(self, entry_id):
        """The row of ``entry_id`` (None if there is none), read alone: by the primary key."""

        def body(conn):
            record = conn.execute(self._SELECT + " WHERE id = ?", (int(entry_id),)).fetchone()
            return None if record is None else self._row_from_record(record)

        return self._transaction(body, immediate=False)

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
            "timestamp, status, error, rho, pool_delta, unit) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                entry.estimator,
                entry.solver,
                entry.epsilon,
                entry.delta,
                row.blob,
                None if entry.event is None else repr(entry.event),
                entry.timestamp,
                entry.status,
                entry.error,
                entry.rho,
                entry.pool_delta,
                entry.unit,
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
