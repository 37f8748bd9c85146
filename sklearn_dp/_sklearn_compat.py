"""The one place sklearn_dp imports scikit-learn helpers that are not public API.

scikit-learn's parameter-validation helpers live in a private module.  Keeping
every such import here means a scikit-learn upgrade that moves them is a
one-file fix (diffprivlib broke on several releases by importing private
internals all over).
"""

import sklearn
from sklearn.utils._param_validation import (  # noqa: F401
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    StrOptions,
    validate_parameter_constraints,
)
from sklearn.utils.validation import validate_data  # noqa: F401  (public since 1.6)


def finite_checks():
    """A context in which scikit-learn's validation checks finiteness, whatever the global config.

    ``sklearn.set_config(assume_finite=True)`` turns the check off; a
    private fit keeps it on, so a row with an infinite or NaN value is
    refused before the reservation (nothing spent) instead of making the fit
    fail after it, which would say that the row is there.
    """
    return sklearn.config_context(assume_finite=False)


def _register_privacy_docstring_section():
    """Make ``Privacy`` a known docstring section of scikit-learn's HTML repr parser.

    Our estimators' numpydoc docstrings have a ``Privacy`` section (rendered in
    the docs by ``docs/_ext/privacy_section.py``; ``help()`` shows the
    docstring as written).  From scikit-learn 1.8 on, the HTML repr that
    Jupyter shows parses the docstring of every estimator it draws, the
    estimator itself or a step of a Pipeline, with scikit-learn's copy of
    numpydoc (for the parameter tooltips), and that parser warns ``Unknown
    section Privacy`` for a section it does not know.  Adding the name to
    its known sections keeps the parse silent: the section is parsed as free
    text and not used by the repr; nothing else changes.  scikit-learn 1.6
    and 1.7 do not parse docstrings there (and have no such module).
    ``tests/test_repr.py`` renders every estimator with warnings as errors.
    """
    try:
        from sklearn.externals._numpydoc.docscrape import NumpyDocString
    except ImportError:  # scikit-learn < 1.8
        return
    sections = getattr(NumpyDocString, "sections", None)
    if isinstance(sections, dict):
        sections.setdefault("Privacy", [])


_register_privacy_docstring_section()
