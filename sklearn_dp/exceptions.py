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


class ConvergenceError(ValueError, FloatingPointError):
    """A solver could not produce a usable model with its public settings.

    It diverged (non-finite coefficients, usually a step size too large for
    the public bounds) or an exact inner solve missed its public tolerance
    within ``max_iter``.  Nothing is released and nothing is spent.  A
    ``ValueError`` as in scikit-learn; also a ``FloatingPointError`` (an
    ``ArithmeticError``) for code that caught those before.
    """


class PrivacyLeakWarning(UserWarning):
    """Something about a fit weakens the privacy guarantee a user may expect.

    The test-suite turns this warning into an error.
    """
