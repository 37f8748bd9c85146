"""The documentation builds with the one documented command, without warnings.

The build runs in the default test run (the ``test`` extra includes the
``docs`` extra), without executing the gallery: tests/test_examples.py runs
every example, so none runs twice.
"""

import importlib
import importlib.util
import inspect
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python < 3.11
    import tomli as tomllib

import pytest

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.decomposition import DPPCA
from sklearn_dp.model_selection import DPGridSearchCV, DPRandomizedSearchCV, RowwiseKFold
from sklearn_dp.preprocessing import (
    DPMinMaxScaler,
    DPStandardScaler,
    PublicRangeScaler,
    RowWiseTransformer,
)
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
    + [DPGridSearchCV, DPRandomizedSearchCV, RowwiseKFold]
    + [DPStandardScaler, DPMinMaxScaler, PublicRangeScaler, RowWiseTransformer]
    + [DPPCA]
    + [spec.run for spec in SOLVERS.values()],
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


#: The public modules: every name in their ``__all__`` is public (the
#: exceptions module has no ``__all__``: its public names are its classes and
#: functions without a leading underscore).
PUBLIC_MODULES = [
    "sklearn_dp",
    "sklearn_dp.budget",
    "sklearn_dp.accounting",
    "sklearn_dp.report",
    "sklearn_dp.exceptions",
    "sklearn_dp.linear_model",
    "sklearn_dp.preprocessing",
    "sklearn_dp.decomposition",
    "sklearn_dp.pipeline",
    "sklearn_dp.solvers",
    "sklearn_dp.testing",
]


def _public_names(module_name):
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            name
            for name, obj in vars(module).items()
            if not name.startswith("_") and getattr(obj, "__module__", None) == module_name
        ]
    return [name for name in names if not name.startswith("__")]


def _documented_names():
    """``{"sklearn_dp.budget.LedgerEntry", ...}``: the autosummary entries of docs/api.rst."""
    documented, module = set(), None
    for line in (ROOT / "docs" / "api.rst").read_text().splitlines():
        match = re.match(r"\.\. currentmodule:: (\S+)", line)
        if match:
            module = match.group(1)
        elif module and re.fullmatch(r"   [A-Za-z_][A-Za-z0-9_]*", line):
            documented.add(f"{module}.{line.strip()}")
    return documented


def _defining_names(module_name, name):
    """Where a public name may be documented: the module it is listed in, or the
    package that re-exports it (``sklearn_dp.budget.PrivacyBudget`` is
    ``sklearn_dp.PrivacyBudget``)."""
    obj = getattr(importlib.import_module(module_name), name)
    places = {f"{module_name}.{name}", f"{getattr(obj, '__module__', module_name)}.{name}"}
    for package in ("sklearn_dp",):
        if getattr(importlib.import_module(package), name, None) is obj:
            places.add(f"{package}.{name}")
    return places


def test_api_reference_lists_every_public_name():
    documented = _documented_names()
    missing = [
        f"{module}.{name}"
        for module in PUBLIC_MODULES
        for name in _public_names(module)
        if not documented & _defining_names(module, name)
    ]
    assert not missing, f"docs/api.rst does not list: {missing}"
    assert "sklearn_dp.ConvergenceError" in documented
    assert "sklearn_dp.testing.trace_releases" in documented
    # Nothing listed that does not exist.
    for entry in documented:
        module_name, name = entry.rsplit(".", 1)
        assert hasattr(importlib.import_module(module_name), name), entry


def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "numpydoc", "myst_nb", "sphinx_gallery", "pydata_sphinx_theme"):
        pytest.importorskip(
            module, reason="the docs build needs the docs extra (in the test extra)"
        )
    # The documented command (docs/README.md), without running the gallery
    # examples (tests/test_examples.py runs them); -W turns every warning into an error.
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-b",
        "html",
        "-D",
        "plot_gallery=0",
        "-d",
        str(tmp_path / "doctrees"),
        "docs",
        str(tmp_path / "html"),
    ]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "WARNING" not in result.stderr, result.stderr[-4000:]
    html = tmp_path / "html"
    assert (html / "index.html").exists()
    privacy = (html / "generated" / "sklearn_dp.DPLogisticRegression.html").read_text()
    # The numpydoc "Privacy" section is rendered, not dropped.
    assert '<p class="rubric">Privacy</p>' in privacy
    assert "add/remove" in (html / "guide" / "privacy_model.html").read_text()
    # The generated table of auto choices, with the setting no solver fits.
    assert "no registered solver fits this setting" in (html / "guide" / "solvers.html").read_text()


def _solver_tables_extension():
    pytest.importorskip("sphinx", reason="the docs extensions need the docs extra")
    path = ROOT / "docs" / "_ext" / "solver_tables.py"
    spec = importlib.util.spec_from_file_location("solver_tables", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_auto_choice_table_has_a_row_for_every_scenario():
    # A setting where solver="auto" refuses is a row that says so, not a failed build.
    extension = _solver_tables_extension()
    choices = {}
    for cls, params, _note, *width in extension._SCENARIOS:
        name, note = extension._auto_choice(cls, params, *width)
        choices[(cls.__name__, tuple(sorted(params.items())), *width)] = (name, note)
        assert name is None or name in SOLVERS
        assert name is not None or note.startswith("refused")
    nothing_fits = ("DPSCORegressor", (("delta", 0.0), ("loss", "absolute")))
    assert choices[nothing_fits] == (None, "refused: no registered solver fits this setting")
    assert choices[("DPLogisticRegression", ())] == ("dp_newton", None)


def test_auto_choice_names_the_solvers_that_would_fit():
    extension = _solver_tables_extension()
    message = (
        "DPX: solver='auto' found no solver for this problem (a: b). "
        "Solvers that fit: dp_sgd, resque; pass one as solver=."
    )
    assert extension._no_choice(message) == (
        "refused: no automatic choice; solvers that fit: dp_sgd, resque"
    )


def test_getting_started_runs(tmp_path, monkeypatch):
    # The five-minute page: its Python blocks, in order, as one script.
    pytest.importorskip("matplotlib", reason="the page's plot needs the examples extra")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    text = (ROOT / "docs" / "getting_started.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    namespace = {"__name__": "__getting_started__"}
    exec(compile("\n".join(blocks), "docs/getting_started.md", "exec"), namespace)
    budget = namespace["budget"]
    assert [entry.epsilon for entry in budget.ledger] == [1.0, 0.5, 1.5]
    assert (tmp_path / "getting_started.png").stat().st_size > 10_000
    assert (ROOT / "docs" / "images" / "getting_started.png").exists()
    import matplotlib.pyplot as plt

    plt.close("all")


def _pip_install_arguments(text):
    """The arguments of every ``pip install`` command in ``text`` (to the end of its
    line or inline code span)."""
    for match in re.finditer(r"pip install ([^`\n]*)", text):
        try:
            yield from shlex.split(match.group(1), comments=True)
        except ValueError:  # an unbalanced quote in prose
            yield from match.group(1).split()


def test_install_instructions_do_not_ask_the_package_index_for_sklearn_dp():
    # sklearn_dp is not on the package index: `pip install sklearn_dp` finds no
    # distribution.  Every instruction names the repository, a checkout or a wheel.
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "docs").rglob("*.ipynb"))
    files += sorted((ROOT / "docs" / "notebooks").glob("*.py"))
    files += sorted((ROOT / "examples").glob("*.py")) + sorted((ROOT / "sklearn_dp").rglob("*.py"))
    bare = [
        (str(path.relative_to(ROOT)), argument)
        for path in files
        if not any(part.startswith("_build") or part == "generated" for part in path.parts)
        for argument in _pip_install_arguments(path.read_text())
        if re.fullmatch(r"sklearn_dp(\[[^\]]*\])?", argument)
    ]
    assert not bare, f"install by name from the package index, which has no sklearn_dp: {bare}"
    install = (ROOT / "docs" / "install.md").read_text()
    for source in [
        '"sklearn_dp @ git+https://github.com/sklearn-dp/sklearn_dp"',
        "pip install .",
        "pip install dist/sklearn_dp-*.whl",
    ]:
        assert source in install, source


def test_dask_install_hint_names_the_dask_extra():
    # The error for Dask input without Dask names packages the index has.
    from sklearn_dp import _dask

    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]["dask"]
    assert _dask.EXTRA == "pip install " + " ".join(f'"{r}"' for r in extra)
