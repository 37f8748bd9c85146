"""Private model selection: hyper-parameter searches and row-wise splitters.

:class:`DPGridSearchCV` and :class:`DPRandomizedSearchCV` select
hyper-parameters on private data with a stated guarantee (private selection,
Liu and Talwar 2019; Papernot and Steinke 2022); :class:`RowwiseKFold`
assigns each row to a fold by a draw of its own, so fold fits on neighbouring
data sets stay neighbours.  See ``docs/guide/tuning.md``.
"""

from ._search import DPGridSearchCV, DPRandomizedSearchCV
from ._split import RowwiseKFold

__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV", "RowwiseKFold"]
