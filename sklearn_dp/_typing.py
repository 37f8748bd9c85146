"""Type aliases of the public API (annotations only; nothing here runs at fit time).

Every module that uses them has ``from __future__ import annotations``, so the
hints stay strings at run time: scikit-learn's ``get_params`` reads only the
names and defaults of ``__init__``, and nothing else inspects the hints.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["ArrayLike", "MatrixLike", "RandomStateLike", "Auto", "FeatureBound"]

#: Data an estimator accepts: array-like, scipy sparse matrices (CSR after
#: canonicalisation), or a Dask array chunked by rows.
MatrixLike = ArrayLike | Any

#: What ``random_state`` accepts, as in scikit-learn (plus a numpy ``Generator``).
RandomStateLike = int | np.random.RandomState | np.random.Generator | None

#: The value of a bound that is released privately (``"auto"``).
Auto = Literal["auto"]

#: A per-feature bound: one number, one per feature, ``"auto"`` or None.
FeatureBound = ArrayLike | Auto | None
