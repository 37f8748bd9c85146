"""Differentially private linear models with a scikit-learn API."""

from ._logistic import DPLogisticRegression

__all__ = ["DPLogisticRegression"]
