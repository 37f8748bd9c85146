"""sklearn_dp: differentially private linear models and convex optimizers.

Every estimator takes ``epsilon``, ``delta``, ``solver``, ``budget`` and
``random_state``, records the privacy it spent in ``privacy_spent_`` and the
mechanism in ``dp_event_`` (a dp_accounting ``DpEvent``), and can share one
:class:`PrivacyBudget` with other fits.
"""

from .budget import PrivacyBudget
from .exceptions import (
    BudgetExceededError,
    BudgetStorageError,
    ConvergenceError,
    PrivacyLeakWarning,
)
from .linear_model import DPLogisticRegression, DPSCORegressor
from .linear_model import DPLasso

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
    "__version__",
]
