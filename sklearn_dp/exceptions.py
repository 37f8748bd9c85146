"""Exceptions and warnings raised by sklearn_dp."""


class BudgetExceededError(RuntimeError):
    """A fit (or a manual spend) would take a privacy budget past its limit.

    Raised before the data is touched; the budget's ledger and the estimator are
    left as they were.
    """


class BudgetStorageError(RuntimeError):
    """The ledger of a privacy budget cannot be used safely.

    Raised for a corrupted or locked SQLite ledger, and for an in-memory budget
    that reached another process (pass ``storage="file.sqlite"`` to share a
    budget across processes).
    """


class PrivacyLeakWarning(UserWarning):
    """Something about a fit weakens the privacy guarantee a user may expect.

    The test-suite turns this warning into an error.
    """
