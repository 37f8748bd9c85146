"""The documentation builds with the one documented command, without warnings."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


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
