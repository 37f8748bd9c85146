"""Library warnings point at the user's line, not into sklearn_dp.

Every ``warnings.warn`` in sklearn_dp passes ``stacklevel=user_stacklevel()``
(``sklearn_dp/_warnings.py``), so the reported file is the caller's: here,
this test file.
"""

import ast
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_dp import DPLogisticRegression, PrivacyLeakWarning, privacy_spent

PACKAGE = Path(__file__).resolve().parents[1] / "sklearn_dp"


def _data(n=50):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) / 4
    return X, (X[:, 0] > 0).astype(int)


def _caught(category, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, [str(w.message) for w in caught]
    return found


def test_unused_option_warning_points_at_the_callers_fit():
    X, y = _data()
    model = DPLogisticRegression(solver="dp_gd", batch_size=10, classes=[0, 1], random_state=0)
    found = _caught(UserWarning, lambda: model.fit(X, y))
    assert all(Path(w.filename) == Path(__file__) for w in found), [w.filename for w in found]


def test_deferred_warning_of_a_fit_points_at_the_callers_fit():
    # Warnings computed during the fit are issued when its phase ends (deferred).
    X, y = _data()
    model = DPLogisticRegression(delta=0.1, classes=[0, 1], random_state=0)
    found = _caught(UserWarning, lambda: model.fit(X, y))
    messages = [str(w.message) for w in found]
    assert any("not much smaller than 1/n_samples" in m for m in messages), messages
    assert all(Path(w.filename) == Path(__file__) for w in found), [w.filename for w in found]


def test_privacy_spent_warning_points_at_the_caller():
    X, y = _data()
    pipeline = make_pipeline(
        StandardScaler(), DPLogisticRegression(classes=[0, 1], random_state=0)
    ).fit(X, y)
    found = _caught(PrivacyLeakWarning, lambda: privacy_spent(pipeline))
    assert [Path(w.filename) for w in found] == [Path(__file__)]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: p.name)
def test_every_library_warning_uses_user_stacklevel(path):
    # A hard-coded stacklevel breaks when a helper or decorator frame is added.
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "warn"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "warnings"
        ):
            levels = [k.value for k in node.keywords if k.arg == "stacklevel"]
            assert levels, f"{path.name}:{node.lineno}: warnings.warn without stacklevel"
            assert ast.unparse(levels[0]) == "user_stacklevel()", f"{path.name}:{node.lineno}"
