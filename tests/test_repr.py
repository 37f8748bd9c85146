"""Estimators display in Jupyter without a warning, and keep their Privacy section in help().

From scikit-learn 1.8 on, the HTML repr (what a notebook shows) parses each
estimator's numpydoc docstring for its parameter tooltips, and warned
``Unknown section Privacy`` for ours; ``sklearn_dp._sklearn_compat`` registers
the section with that parser.  scikit-learn 1.6 and 1.7 do not parse
docstrings there; ``tests/test_packaging.py`` (slow) runs this file on
scikit-learn 1.6 in a fresh virtual environment.
"""

import inspect
import pydoc
import warnings

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor

ESTIMATORS = [DPLogisticRegression, DPSCORegressor, DPLasso]


def _fresh_docstring_parse():
    """Forget scikit-learn's cached docstring parses, so the parse (and any
    warning) happens inside the test rather than in an earlier one."""
    import importlib

    for module_name, function in [
        ("sklearn.utils._repr_html.common", "scrape_estimator_docstring"),  # >= 1.9
        ("sklearn.utils._repr_html.params", "_scrape_estimator_docstring"),  # 1.8
    ]:
        try:
            cached = getattr(importlib.import_module(module_name), function)
        except (ImportError, AttributeError):
            continue
        cached.cache_clear()


def _fitted(cls):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 3))
    if cls is DPLogisticRegression:
        y = (X[:, 0] > 0).astype(int)
        return cls(epsilon=float("inf"), data_norm=1.0, classes=[0, 1]).fit(X, y)
    y = X @ np.array([0.5, -0.25, 0.0])
    if cls is DPLasso:
        return cls(epsilon=float("inf"), radius=1.0).fit(X, y)
    return cls(epsilon=float("inf"), data_norm=1.0, y_bound=1.0).fit(X, y)


def _render(obj):
    html = obj._repr_html_()
    bundle = obj._repr_mimebundle_()
    assert "text/html" in bundle and "text/plain" in bundle
    return html


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
@pytest.mark.parametrize("state", ["unfitted", "fitted", "in_a_pipeline"])
def test_html_repr_without_warnings(cls, state):
    _fresh_docstring_parse()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if state == "unfitted":
            html = _render(cls(epsilon=1.0))
        elif state == "fitted":
            html = _render(_fitted(cls))
        else:
            html = _render(make_pipeline(FunctionTransformer(), cls(epsilon=1.0)))
    assert cls.__name__ in html


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_repr_docstring_parse_keeps_parameters(cls):
    # scikit-learn >= 1.8 reads parameter descriptions for the repr's tooltips
    # from the docstring, with its copy of numpydoc: registering the Privacy
    # section must leave that parse silent and intact.
    docscrape = pytest.importorskip(
        "sklearn.externals._numpydoc.docscrape", reason="scikit-learn < 1.8 parses no docstring"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parsed = docscrape.NumpyDocString(inspect.getdoc(cls))
    parameters = {p.name: p for p in parsed["Parameters"]}
    assert parameters["epsilon"].type.startswith("float")
    assert "budget" in parameters and "random_state" in parameters
    assert "".join(parsed["Privacy"]).strip()  # kept, as free text


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda cls: cls.__name__)
def test_help_shows_the_privacy_section(cls):
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    lines = [line.strip().lstrip("|").strip() for line in text.splitlines()]
    index = lines.index("Privacy")
    assert set(lines[index + 1]) == {"-"}
