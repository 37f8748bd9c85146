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

    It diverged: its iterates, functions of the noisy releases only, became
    non-finite (usually a step size too large for the public bounds).  The
    fit's spend stands (its ledger entry is marked failed): the data was
    touched.  A ``ValueError`` as in scikit-learn; also a
    ``FloatingPointError`` (an ``ArithmeticError``) for code that caught
    those before.
    """


class PrivateFitError(RuntimeError):
    """A fit failed after its privacy budget was reserved, for a reason that may depend on data.

    Raised in place of an unexpected exception (a library bug, memory
    exhaustion, ...) that happened after the fit's spend was reserved: its
    message and its class may describe private values, so only the class
    name is kept (here and in the ledger).  The spend stands.  Set the
    environment variable ``SKLEARN_DP_DEBUG=1`` to see the original
    exception while debugging; that breaks the privacy guarantee.
    """


class PrivacyLeakWarning(UserWarning):
    """Something about a fit weakens the privacy guarantee a user may expect.

    The test-suite turns this warning into an error.
    """
