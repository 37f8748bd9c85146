"""Matrix decompositions that spend on the same privacy budget as the models.

* :class:`DPPCA`: principal component analysis from a differentially private
  mean and second-moment matrix (the Gaussian mechanism); ``transform`` uses
  the released components only and costs nothing.
"""

from ._pca import DPPCA

__all__ = ["DPPCA"]
