"""sklearn_dp: differentially private linear models and convex optimizers.

Every estimator takes ``epsilon``, ``delta``, ``solver``, ``budget`` and
``random_state``, records the privacy it spent in ``privacy_spent_`` and the
mechanism in ``dp_event_`` (a dp_accounting ``DpEvent``), and can share one
:class:`PrivacyBudget` with other fits.  :mod:`sklearn_dp.preprocessing` holds
transformers that spend on the same budget, and :func:`privacy_spent` composes
the spends of a fitted Pipeline's private steps, and :func:`privacy_report`
turns a fitted object or a budget into a record anyone can read, file and
check.
"""

from ._composition import privacy_spent
from .budget import PrivacyBudget
from .exceptions import (
    BudgetExceededError,
    BudgetStorageError,
    ConvergenceError,
    PrivacyLeakWarning,
)
from .linear_model import DPLasso, DPLogisticRegression, DPSCORegressor
from .report import privacy_report

__version__ = "0.1.0.dev0"

__all__ = [
    "PrivacyBudget",
    "BudgetExceededError",
    "BudgetStorageError",
    "ConvergenceError",
    "PrivacyLeakWarning",
    "DPLogisticRegression",
    "DPSCORegressor",
    "DPLasso",
    "privacy_spent",
    "privacy_report",
    "__version__",
]
