"""Saving fitted models without their budget, and the ledger entries a fit keeps for its report.

A fitted estimator, transformer or search that is pickled (``pickle``,
``joblib.dump``, a joblib worker returning it) keeps its report (its
``dp_event_``, ``privacy_spent_`` and a copy of its own ledger entries) but no
handle on the budget's ledger: its ``budget`` becomes a read-only stand-in
(:func:`sklearn_dp.budget.saved_budget`) that refuses every check, spend and
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
import platform

from .budget import PrivacyBudget, saved_budget
from .exceptions import BudgetStorageError

__all__ = ["SavedWithoutLedger", "ledger_entries"]

#: The private attribute in which a fitted object keeps what its report needs
#: besides its fitted attributes: copies of its ledger entries and the versions
#: of the libraries that fitted it.
RECORD_ATTRIBUTE = "_privacy_record_"


def _is_fitted(state):
    return "dp_event_" in state


def _without_ledger(value):
    """``value`` (a budget, or a template estimator holding budgets) with stand-ins for its budgets."""
    if isinstance(value, PrivacyBudget):
        return saved_budget(value)
    if hasattr(value, "get_params") and hasattr(value, "set_params"):
        params = value.get_params(deep=True)
        budgets = {
            key: saved_budget(param)
            for key, param in params.items()
            if (key == "budget" or key.endswith("__budget")) and isinstance(param, PrivacyBudget)
        }
        if budgets:
            from sklearn.base import clone

            value = clone(value)
            value.set_params(**budgets)
    return value


class SavedWithoutLedger:
    """Mixin: a fitted object pickles with read-only stand-ins for its budgets.

    ``budget`` (and, on a search, the budgets of the template ``estimator``)
    is replaced in the pickled state of a fitted object only; see the module
    docstring for why unfitted objects and copies keep the live budget.
    """

    def __getstate__(self):
        state = super().__getstate__()
        if not _is_fitted(state):
            return state
        state = dict(state)
        for key in ("budget", "estimator"):
            if key in state:
                state[key] = _without_ledger(state[key])
        return state

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
    budget again.  An entry the ledger can no longer show is left out.
    """
    entries = []
    for reservation in reservations:
        if reservation is None:
            continue
        try:
            rows = reservation.budget._storage.rows()
        except BudgetStorageError:
            continue
        entries.extend(row.entry for row in rows if row.entry.id == reservation.entry_id)
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
