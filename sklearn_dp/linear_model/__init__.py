"""Differentially private linear models with a scikit-learn API."""

from ._logistic import DPLogisticRegression
from ._regression import DPSCORegressor

__all__ = ["DPLogisticRegression", "DPSCORegressor"]
