"""Saving fitted models without their budget, and the ledger entries a fit keeps for its report.

A fitted estimator, transformer or search that is pickled (``pickle``,
``joblib.dump``, a joblib worker returning it) keeps its report (its
``dp_event_``, ``privacy_spent_`` and a copy of its own ledger entries) but no
handle on the budget's ledger: its ``budget`` becomes a read-only stand-in
(:func:`saved_budget`) that refuses every check, spend and
ledger read.  A saved model therefore loads anywhere, even where an SQLite
ledger file does not exist, and a refit of a loaded model raises
:class:`~sklearn_dp.exceptions.BudgetStorageError` before it reads the data
instead of silently fitting on no budget.

An *unfitted* object pickles with its live budget, as before: scikit-learn and
joblib pickle clones of estimators to fit them in worker processes, and there
the budget must keep counting (an in-memory budget refuses in another process;
a file budget reopens its ledger).  ``copy.copy`` and ``copy.deepcopy`` keep
the live budget too (they never leave the process).
"""

from __future__ import annotations

import copy
import os
import platform
import secrets
import threading
import weakref

import numpy as np

from ._ledger import _DetachedStorage, _Row, _SavedStorage, _SQLiteStorage
from .budget import _MEMORY_BUDGETS, _REGISTRY_LOCK, PrivacyBudget
from .exceptions import BudgetStorageError

__all__ = ["SavedWithoutLedger", "ledger_entries"]

#: The private attribute in which a fitted object keeps what its report needs
#: besides its fitted attributes: copies of its ledger entries and the versions
#: of the libraries that fitted it.
RECORD_ATTRIBUTE = "_privacy_record_"


# The stand-in of each live budget in saved models: one object per budget, so
# that the steps of a saved Pipeline still share one budget once loaded.
_SAVED_BUDGETS: weakref.WeakKeyDictionary[PrivacyBudget, PrivacyBudget] = (
    weakref.WeakKeyDictionary()
)


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
    if isinstance(storage, _SQLiteStorage):
        budget._opening = secrets.token_hex(16)
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


def saved_budget(budget):
    """The stand-in of ``budget`` in a saved fitted model: its limits, no handle on its ledger.

    The stand-in (a :class:`PrivacyBudget` that refuses every check, spend
    and ledger read with :class:`BudgetStorageError`) keeps ``epsilon``,
    ``delta`` and ``composition``, and neither the ledger file's path nor the
    entries of other fits.  The same object for every call with one budget.
    """
    if isinstance(budget._storage, _SavedStorage):
        return budget
    with _REGISTRY_LOCK:
        saved = _SAVED_BUDGETS.get(budget)
        if saved is None:
            saved = _restore_saved_budget(budget._epsilon, budget._delta, budget._composition)
            _SAVED_BUDGETS[budget] = saved
    return saved


def _restore_saved_budget(epsilon, delta, composition):
    return _bare_budget(epsilon, delta, composition, 30.0, None, _SavedStorage())


def _is_fitted(state):
    return "dp_event_" in state


class _Swap:
    """Replaces every live budget reachable in a value by its stand-in, copying only what holds one.

    Walks dicts, lists, tuples, sets, object arrays (the ``param_*`` columns
    of ``cv_results_``) and estimators (any object with ``get_params``: the
    templates and grid values of a search).  A container or estimator that
    holds no budget is kept as it is (numeric arrays are never copied); one
    that does is replaced by a shallow copy holding the stand-ins.  A fitted
    object of this library is left to its own ``__getstate__``.
    """

    def __init__(self):
        # id -> (original, result): the originals stay alive while the walk
        # runs, so an id is never reused; shared values stay shared.
        self._memo = {}

    def __call__(self, value):
        key = id(value)
        if key in self._memo:
            return self._memo[key][1]
        self._memo[key] = (value, value)  # a cycle back to here keeps the original
        result = self._swap(value)
        self._memo[key] = (value, result)
        return result

    def _swap(self, value):
        if isinstance(value, PrivacyBudget):
            return saved_budget(value)
        if type(value) is dict:
            items = {key: self(item) for key, item in value.items()}
            changed = any(items[key] is not item for key, item in value.items())
            return items if changed else value
        if type(value) in (list, tuple, set, frozenset):
            items = [self(item) for item in value]
            changed = any(new is not old for new, old in zip(items, value))
            return type(value)(items) if changed else value
        if isinstance(value, np.ndarray):
            if value.dtype != object:
                return value
            items = [self(item) for item in value.flat]
            if all(new is old for new, old in zip(items, value.flat)):
                return value
            copied = value.copy()  # a masked array keeps its mask
            copied_flat = np.ndarray.view(copied, np.ndarray).reshape(-1)
            for index, item in enumerate(items):
                copied_flat[index] = item
            return copied
        if hasattr(value, "get_params") and hasattr(value, "__dict__"):
            if isinstance(value, SavedWithoutLedger) and _is_fitted(vars(value)):
                return value
            attributes = {key: self(item) for key, item in vars(value).items()}
            if all(attributes[key] is item for key, item in vars(value).items()):
                return value
            copied = type(value).__new__(type(value))
            copied.__dict__.update(attributes)
            return copied
        return value


def _without_ledger(state):
    """``state`` with a read-only stand-in (:func:`saved_budget`) for every budget it reaches."""
    return _Swap()(state)


class SavedWithoutLedger:
    """Mixin: a fitted object pickles with read-only stand-ins for its budgets.

    Every budget reachable in the pickled state of a fitted object (its
    ``budget``, a search's template ``estimator``, estimators held as grid
    values in ``param_grid``, ``cv_results_`` and ``best_params_``) is
    replaced by its stand-in; see the module docstring for why unfitted
    objects and copies keep the live budget.
    """

    def __getstate__(self):
        state = super().__getstate__()
        if not _is_fitted(state):
            return state
        return _without_ledger(dict(state))

    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            new.__dict__[key] = copy.deepcopy(value, memo)
        return new


def ledger_entries(reservations):
    """Copies of the settled ledger entries of ``reservations`` (None ones skipped).

    Read once the fit is over, so a fitted object's report never needs the
    budget again; each entry is looked up by its id (one row, whatever the
    ledger's size).  An entry the ledger can no longer show is left out.
    """
    entries = []
    for reservation in reservations:
        if reservation is None:
            continue
        try:
            row = reservation.budget._storage.row(reservation.entry_id)
        except BudgetStorageError:
            continue
        if row is not None:
            entries.append(row.entry)
    return tuple(entries)


_VERSIONS = {}


def library_versions():
    """The versions of Python, sklearn_dp and the libraries its guarantees rest on.

    Looked up once per process and kept in a plain dict: every fit reads it,
    including the runs inside a private search, whose number is secret, so
    it must keep no count of its calls (as ``functools.cache`` would).
    """
    if not _VERSIONS:
        from importlib import metadata

        from . import __version__

        versions = {"python": platform.python_version(), "sklearn_dp": __version__}
        for name in ("dp-accounting", "scikit-learn", "numpy", "scipy"):
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = None
        _VERSIONS.update(versions)
    return dict(_VERSIONS)


def keep_entries(fitted, reservations, *, planned=False):
    """Store on ``fitted`` its ledger entries (see :func:`ledger_entries`) and the versions.

    ``planned``: the fit's ``dp_event_`` is the event planned from public
    inputs before the data, not one chosen from the fit's own releases.
    """
    record = {
        "entries": ledger_entries(reservations),
        "versions": dict(library_versions()),
        "planned": bool(planned),
    }
    setattr(fitted, RECORD_ATTRIBUTE, record)
