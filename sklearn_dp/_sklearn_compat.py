"""The one place sklearn_dp imports scikit-learn helpers that are not public API.

scikit-learn's parameter-validation helpers live in a private module.  Keeping
every such import here means a scikit-learn upgrade that moves them is a
one-file fix (diffprivlib broke on several releases by importing private
internals all over).
"""

from sklearn.utils._param_validation import (  # noqa: F401
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import validate_data  # noqa: F401  (public since 1.6)
