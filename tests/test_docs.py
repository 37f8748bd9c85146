"""The documentation builds with the one documented command, without warnings."""

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler, PublicRangeScaler
from sklearn_dp.solvers import SOLVERS

ROOT = Path(__file__).resolve().parents[1]


def _privacy_section_extension():
    path = ROOT / "docs" / "_ext" / "privacy_section.py"
    spec = importlib.util.spec_from_file_location("privacy_section", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    "obj",
    [DPLogisticRegression, DPSCORegressor, DPLasso]
    + [DPStandardScaler, DPMinMaxScaler, PublicRangeScaler]
    + [spec.function for spec in SOLVERS.values()],
    ids=lambda obj: obj.__name__,
)
def test_public_docstrings_have_a_privacy_section_the_docs_render(obj):
    # Every estimator and registered solver states its guarantee in a
    # "Privacy" section; the docs extension moves it past numpydoc intact.
    extension = _privacy_section_extension()
    lines = inspect.cleandoc(obj.__doc__).splitlines()
    body = extension.extract_privacy(lines)
    assert body, f"{obj.__name__} has no Privacy section"
    assert not any(line.strip() == "Privacy" for line in lines)
    rendered = ["Summary.", "", ".. rubric:: Examples", "", ">>> 1"]
    extension.insert_privacy(rendered, body)
    assert rendered.index(".. rubric:: Privacy") < rendered.index(".. rubric:: Examples")


@pytest.mark.slow
def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "myst_parser", "sphinx_gallery", "pydata_sphinx_theme"):
        pytest.importorskip(module)
    # The documented command (docs/README.md), without running the gallery
    # examples so the test stays bounded; -W turns every warning into an error.
    command = [
        sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
        "-D", "plot_gallery=0",
        "-d", str(tmp_path / "doctrees"),
        "docs", str(tmp_path / "html"),
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    ))
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    html = tmp_path / "html"
    assert (html / "index.html").exists()
    privacy = (html / "generated" / "sklearn_dp.DPLogisticRegression.html").read_text()
    # The numpydoc "Privacy" section is rendered, not dropped.
    assert '<p class="rubric">Privacy</p>' in privacy
    assert "add/remove" in (html / "guide" / "privacy_model.html").read_text()
