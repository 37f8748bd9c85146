"""Packaging: metadata, the declared minimum versions, the sdist and the wheel.

The fast tests read the files of the checkout.  The slow ones install: the
declared minimum versions in a fresh virtual environment (through
``tools/check_minimum_versions.py``, which needs the package index and a
Python 3.10), and the sdist and wheel built with ``python -m build`` (needs
``build``; ``twine`` for the metadata check).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import sklearn_dp

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = (ROOT / "pyproject.toml").read_text()


def _tool():
    path = ROOT / "tools" / "check_minimum_versions.py"
    spec = importlib.util.spec_from_file_location("check_minimum_versions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _project_table():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    return tomllib.loads(PYPROJECT)


# --------------------------------------------------------------------------
# Metadata (fast)
# --------------------------------------------------------------------------


def test_version_is_written_once():
    table = _project_table()
    assert "version" not in table["project"]
    assert table["project"]["dynamic"] == ["version"]
    assert table["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sklearn_dp.__version__"}
    literal = re.escape(sklearn_dp.__version__)
    places = [
        path.relative_to(ROOT).as_posix()
        for path in [*ROOT.glob("*.toml"), *ROOT.glob("*.cfg"), *ROOT.glob("sklearn_dp/**/*.py")]
        if re.search(rf"['\"]{literal}['\"]", path.read_text())
    ]
    assert places == ["sklearn_dp/__init__.py"]


def test_license_is_spdx_with_its_file():
    project = _project_table()["project"]
    assert project["license"] == "BSD-3-Clause"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License")
    assert "Neither the name of the copyright holder" in text
    # PEP 639: no license classifier beside a license expression.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]


def test_urls_classifiers_and_typing_marker():
    project = _project_table()["project"]
    assert project["urls"]["Homepage"] == "https://github.com/sklearn-dp/sklearn_dp"
    assert all(
        url.startswith("https://github.com/sklearn-dp/sklearn_dp")
        for url in project["urls"].values()
    )
    assert "Typing :: Typed" in project["classifiers"]
    assert (ROOT / "sklearn_dp" / "py.typed").exists()
    assert "py.typed" in _project_table()["tool"]["setuptools"]["package-data"]["sklearn_dp"]


def test_extras_hold_what_their_commands_need():
    extras = _project_table()["project"]["optional-dependencies"]
    names = {
        key: {re.split(r"[<>=~! ;\[]", r)[0].lower() for r in reqs} for key, reqs in extras.items()
    }
    # pytest and hypothesis run the tests (pytest-xdist: addopts has -n 2);
    # pandas lets scikit-learn's estimator checks run their DataFrame cases
    # instead of skipping them.
    assert {"pytest", "pytest-xdist", "hypothesis", "pandas"} <= names["test"]
    assert "-n 2" in _project_table()["tool"]["pytest"]["ini_options"]["addopts"]
    # The default run builds the docs, runs the examples and executes the
    # notebooks: the test extra pulls in the docs extra (which has matplotlib).
    assert "sklearn_dp[docs]" in extras["test"]
    assert {"matplotlib"} <= names["examples"]
    # conf.py's extensions, the gallery's matplotlib, and what runs the notebooks.
    assert {
        "sphinx",
        "numpydoc",
        "sphinx-gallery",
        "myst-nb",
        "pydata-sphinx-theme",
        "matplotlib",
        "nbclient",
        "nbformat",
        "nbconvert",
        "ipykernel",
    } <= names["docs"]


def test_minimum_versions_are_pinned_from_pyproject():
    pins = _tool().minimum_pins(_project_table()["project"]["dependencies"])
    assert pins == [
        "numpy==1.23",
        "scipy==1.9",
        "scikit-learn==1.6",
        "joblib==1.2",
        "dp-accounting==0.6.0",
        "randomgen==2.0.1",
    ]


def test_install_page_states_the_declared_minimums():
    # docs/install.md has a table of the lower bounds: it must not drift.
    text = (ROOT / "docs" / "install.md").read_text()
    table = dict(re.findall(r"^\| ([a-z-]+) \| ([0-9][0-9.]*) \|", text, re.M))
    declared = dict(pin.split("==") for pin in _tool().minimum_pins())
    assert table == declared


def test_sdist_manifest_ships_what_the_tests_read():
    manifest = (ROOT / "MANIFEST.in").read_text().splitlines()
    for needed in [
        "graft tests",
        "graft examples",
        "graft docs",
        "graft benchmarks",
        "graft .ci",
        "include LICENSE README.md CHANGELOG.md pyproject.toml MANIFEST.in",
    ]:
        assert needed in manifest


# --------------------------------------------------------------------------
# Installs (slow)
# --------------------------------------------------------------------------


@pytest.mark.slow
def test_declared_minimum_versions_pass_the_tests(tmp_path):
    """A fresh environment with exactly the lower bounds passes a subset of the tests,
    including the HTML repr on scikit-learn 1.6 (tests/test_repr.py)."""
    tool = _tool()
    python = tool.find_oldest_python()
    if python is None:
        pytest.skip("no Python 3.10 interpreter for the minimum versions")
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "check_minimum_versions.py"),
            "--python",
            python,
            "--keep",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    output = result.stdout[-20000:] + result.stderr[-3000:]
    if "No matching distribution" in output or "Could not find a version" in output:
        pytest.skip("the package index is not reachable")
    assert result.returncode == 0, output
    for pin in tool.minimum_pins():
        name, version = pin.split("==")
        assert re.search(
            rf"(?i)^  {'[-_]'.join(map(re.escape, re.split('[-_]', name)))}=={re.escape(version)}"
            r"(\.0)*$",
            result.stdout,
            re.M,
        ), pin


def _build(tmp_path):
    pytest.importorskip("build", reason="python -m build needs the build package")
    dist = tmp_path / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel


@pytest.mark.slow
def test_sdist_and_wheel(tmp_path):
    sdist, wheel = _build(tmp_path)
    version = sklearn_dp.__version__
    assert sdist.name == f"sklearn_dp-{version}.tar.gz"

    # The wheel: the package, its typing marker and the license; no tests.
    names = zipfile.ZipFile(wheel).namelist()
    assert "sklearn_dp/py.typed" in names
    assert f"sklearn_dp-{version}.dist-info/licenses/LICENSE" in names
    assert not [n for n in names if n.startswith(("tests/", "docs/", "benchmarks/"))]
    metadata = zipfile.ZipFile(wheel).read(f"sklearn_dp-{version}.dist-info/METADATA").decode()
    assert "License-Expression: BSD-3-Clause" in metadata
    assert "Requires-Dist: dp-accounting>=0.6.0" in metadata

    # twine's checks of both (the README renders as the package page).
    if importlib.util.find_spec("twine") is not None:
        result = subprocess.run(
            [sys.executable, "-m", "twine", "check", "--strict", str(sdist), str(wheel)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stdout + result.stderr

    # The sdist: its tests collect and run from the unpacked tree.
    with tarfile.open(sdist) as archive:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.12, and security backports
            archive.extractall(tmp_path / "unpacked", filter="data")
        else:  # pragma: no cover
            archive.extractall(tmp_path / "unpacked")
    tree = tmp_path / "unpacked" / f"sklearn_dp-{version}"
    for needed in [
        "tests/conftest.py",
        "sklearn_dp/testing/_audit_configs.py",
        "LICENSE",
        "README.md",
        "sklearn_dp/py.typed",
        "examples/quickstart.py",
        "docs/conf.py",
        "docs/notebooks/first_private_model.ipynb",
        ".ci/run",
    ]:
        assert (tree / needed).exists(), needed
    assert not list(tree.rglob("__pycache__"))
    for output in [
        "docs/_build",
        "docs/generated",
        "docs/auto_examples",
        "docs/sg_execution_times.rst",
    ]:
        assert not (tree / output).exists(), output  # build outputs of a checkout
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/test_budget.py",
            "tests/test_audit_coverage.py",
            "tests/test_examples.py",
            "tests/test_docs.py",
            "tests/test_packaging.py",
            "tests/test_repr.py",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
