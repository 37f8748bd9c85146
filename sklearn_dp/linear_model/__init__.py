"""Differentially private linear models with a scikit-learn API."""

from ._lasso import DPLasso
from ._logistic import DPLogisticRegression
from ._regression import DPSCORegressor

__all__ = ["DPLogisticRegression", "DPSCORegressor", "DPLasso"]
