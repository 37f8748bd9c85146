"""Preprocessing that spends on the same privacy budget as the models.

A ``StandardScaler`` fitted on private data is a release of every feature's
mean and standard deviation, outside any guarantee.  The transformers here
compute their statistics with differential privacy and record the spend like
the estimators do: public checks first, the spend reserved on ``budget``
before the data is read, every noisy release through the noise gateway, one
ledger entry per ``fit``, ``dp_event_`` and ``privacy_spent_``.  ``transform``
uses released statistics only and costs nothing.

* :class:`DPStandardScaler`: DP mean and standard deviation per feature.
* :class:`DPMinMaxScaler`: DP range per feature.
* :class:`PublicRangeScaler`: documented public ranges mapped to [-1, 1];
  costs nothing.
* :class:`RowWiseTransformer`: a function the user asserts row-wise and
  blind to the data; costs nothing.

One-hot encoding of categories from a public list is scikit-learn's own
``OneHotEncoder(categories=[[...], ...], handle_unknown="ignore")``: with the
categories given, the encoder reads nothing from the data but the values it
encodes (``handle_unknown="ignore"`` and no ``drop``, so that a value outside
the public list neither raises nor warns).  Without ``categories`` it lists
the values present in the data: a release outside the guarantee.

:func:`sklearn_dp.privacy_spent` composes the spends of every private step
of a fitted ``Pipeline`` or ``ColumnTransformer`` and lists the scikit-learn
steps it vouches for.
"""

from ._public import PublicRangeScaler, RowWiseTransformer
from ._scalers import DPMinMaxScaler, DPStandardScaler

__all__ = ["DPStandardScaler", "DPMinMaxScaler", "PublicRangeScaler", "RowWiseTransformer"]
