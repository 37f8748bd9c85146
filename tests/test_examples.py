"""The README's code, every example script and every notebook run, so they never rot.

What a newcomer is told to run runs in the default test run (the command
``.ci/run`` runs): the README's code, ``examples/quickstart.py`` and every
other example that takes under a minute, and both notebooks.  An example that
takes longer is listed in ``SLOW_EXAMPLES`` with its measured time and runs
under ``-m slow``; none that the README or the docs front page tells a user to
run may be there.  The examples need matplotlib and the notebooks nbclient,
nbformat and ipykernel: the ``test`` extra includes the ``docs`` extra, which
has them (without them these tests skip).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
NOTEBOOKS = sorted((ROOT / "docs" / "notebooks").glob("*.ipynb"))

#: Every example of the default run must finish within this many CPU seconds
#: ("each under a minute", README).  CPU time, not wall time: the scripts run
#: with one BLAS thread, so on a quiet machine the two agree, and a loaded
#: machine does not make the check flaky.
EXAMPLE_TIME_LIMIT = 60.0

#: Examples that take longer than EXAMPLE_TIME_LIMIT, with their measured time:
#: they run only under ``-m slow``.  None at present: measured, 3 s (quickstart)
#: to 11 s of CPU each, 79 s for all ten (``python -m pytest
#: tests/test_examples.py -k example_runs -s`` prints them).
SLOW_EXAMPLES: dict[str, str] = {}

#: The two set-up commands; ``.ci/run`` mirrors the second one, so they must not drift.
SETUP_COMMANDS = [
    'python3 -m venv .venv && .venv/bin/pip install -e ".[examples]" && '
    ".venv/bin/python examples/quickstart.py",
    'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && '
    ".venv/bin/ruff check . && .venv/bin/ruff format --check . && "
    ".venv/bin/python tools/check_docstrings.py && "
    ".venv/bin/python -m pytest",
]


def _environment():
    """The environment of a child process: sklearn_dp importable from this checkout,
    a non-interactive matplotlib, and one BLAS thread (the examples are small, and on a
    shared machine multi-threaded BLAS under contention is many times slower)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["MPLBACKEND"] = "Agg"
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(name, "1")
    return env


# --------------------------------------------------------------------------
# README (fast)
# --------------------------------------------------------------------------


def _readme_section(title):
    text = README.read_text()
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README has no section '## {title}'"
    return match.group(1)


def test_readme_setup_commands_unchanged():
    section = _readme_section("Set-up (fresh machine, Python >= 3.10)")
    blocks = re.findall(r"```bash\n(.*?)\n```", section, re.S)
    assert blocks == SETUP_COMMANDS


def test_ci_runs_the_readme_test_command():
    commands = [
        line
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip()
        and not line.startswith("#")
        and not line.startswith("set ")
        and not line.startswith("cd ")
    ]
    assert commands == [SETUP_COMMANDS[1]]


def test_readme_ten_lines_run(capsys):
    blocks = re.findall(r"```python\n(.*?)```", _readme_section("Ten lines"), re.S)
    assert len(blocks) == 1
    code = blocks[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 10
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})
    printed = capsys.readouterr().out.split()
    assert 0.8 < float(printed[0]) <= 1.0  # test accuracy


#: README.md is also the package's page on the package index, where relative
#: links break: it links to the repository with absolute addresses.
REPO_BLOB = "https://github.com/sklearn-dp/sklearn_dp/blob/main/"
REPO_TREE = "https://github.com/sklearn-dp/sklearn_dp/tree/main/"
REPO_RAW = "https://raw.githubusercontent.com/sklearn-dp/sklearn_dp/main/"


def test_readme_links_are_absolute_and_exist():
    text = README.read_text()
    links = re.findall(r"(!?)\[[^\]]*\]\(([^)\s]+)\)", text)
    assert links, "expected links in the README"
    relative = [target for _, target in links if not re.match(r"[a-z]+://", target)]
    assert not relative, f"relative links break on the package index: {relative}"
    missing = []
    for bang, target in links:
        if bang:  # images: the raw file, so the package index can show them
            assert target.startswith(REPO_RAW), target
            path = ROOT / target[len(REPO_RAW) :]
            ok = path.is_file()
        elif target.startswith(REPO_BLOB):
            ok = (ROOT / target[len(REPO_BLOB) :].split("#")[0]).is_file()
        elif target.startswith(REPO_TREE):
            ok = (ROOT / target[len(REPO_TREE) :]).is_dir()
        else:
            continue  # another site
        if not ok:
            missing.append(target)
    assert not missing, f"README links to files this checkout does not have: {missing}"


def test_readme_solver_table_matches_registry():
    """The README's table names registered solvers only, and every one ``auto`` can pick.

    An opt-in solver (one no ``auto`` list names) may be left to the docs'
    capability table, which is generated from the registry.
    """
    from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
    from sklearn_dp.solvers import SOLVERS

    table = _readme_section("Estimators and solvers")
    named = set(re.findall(r"^\| (.*?) \|", table, re.M))
    in_table = {name for cell in named for name in re.findall(r"`([a-z_]+)`", cell)}
    assert in_table <= set(SOLVERS)
    auto = {
        choice.solver
        for estimator in (DPLogisticRegression, DPSCORegressor, DPLasso)
        for choice in estimator._auto_preferences
    }
    assert auto <= in_table


# --------------------------------------------------------------------------
# Examples
# --------------------------------------------------------------------------


def _run_script(script, cwd, timeout):
    """Run ``script``; ``(returncode, stdout, stderr, CPU seconds)``.

    The CPU time is the child's own (``os.wait4``), not a difference of this
    process's RUSAGE_CHILDREN, which also grows when an earlier test's worker
    processes exit meanwhile.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            [sys.executable, str(script)], cwd=cwd, env=_environment(), stdout=out, stderr=err
        )
        killer = threading.Timer(timeout, process.kill)  # a hang, not a slow machine
        killer.start()
        try:
            _, status, usage = os.wait4(process.pid, 0)
        finally:
            killer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (
            process.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            usage.ru_utime + usage.ru_stime,
        )


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(p, marks=[pytest.mark.slow] if p.name in SLOW_EXAMPLES else [])
        for p in EXAMPLES
    ],
    ids=[p.name for p in EXAMPLES],
)
def test_example_runs(script, tmp_path):
    # The gallery examples also render in the docs build (tests/test_docs.py),
    # which does not execute them: each runs once per test run, here.
    pytest.importorskip("matplotlib", reason="the examples need matplotlib (the test extra)")
    start = time.perf_counter()
    returncode, stdout, stderr, cpu = _run_script(script, tmp_path, 10 * EXAMPLE_TIME_LIMIT)
    elapsed = time.perf_counter() - start
    assert returncode == 0, f"{script.name} failed:\n{stdout}\n{stderr}"
    assert "Traceback" not in stderr
    print(f"{script.name}: {elapsed:.1f} s wall, {cpu:.1f} s CPU")
    if script.name not in SLOW_EXAMPLES:
        assert cpu < EXAMPLE_TIME_LIMIT, (
            f"{script.name} took {cpu:.1f} s of CPU: list it in SLOW_EXAMPLES with its time"
        )


def _told_to_run():
    """The example scripts and notebooks that the README and the docs front page name."""
    text = README.read_text() + (ROOT / "docs" / "index.md").read_text()
    return set(re.findall(r"(?:examples|notebooks)/([A-Za-z0-9_]+\.(?:py|ipynb))", text))


def test_nothing_a_newcomer_is_told_to_run_is_slow_only():
    named = _told_to_run()
    assert "quickstart.py" in named
    assert named <= {p.name for p in EXAMPLES} | {p.name for p in NOTEBOOKS}, named
    assert not named & set(SLOW_EXAMPLES), sorted(named & set(SLOW_EXAMPLES))
    assert set(SLOW_EXAMPLES) <= {p.name for p in EXAMPLES}


def test_every_gallery_example_has_a_title():
    # sphinx-gallery needs a docstring whose first paragraph is an rst title.
    header = (ROOT / "examples" / "README.txt").read_text().splitlines()
    assert len(header) >= 2 and set(header[1]) == {"="} and len(header[1]) >= len(header[0])
    for script in EXAMPLES:
        text = script.read_text()
        match = re.match(r'"""\n(.+)\n(=+)\n', text)
        assert match and len(match.group(2)) >= len(match.group(1)), script.name


# --------------------------------------------------------------------------
# Notebooks
# --------------------------------------------------------------------------


def _notebook_builder():
    """docs/notebooks/_build_notebooks.py as a module (it needs nbformat)."""
    import importlib.util

    pytest.importorskip("nbformat", reason="the notebooks need the docs extra")
    path = ROOT / "docs" / "notebooks" / "_build_notebooks.py"
    spec = importlib.util.spec_from_file_location("_build_notebooks", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_outputs(name, cells):
    """Every code cell ran and printed or displayed something; no error, no warning."""
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        assert cell["execution_count"] is not None, (name, source[:60])
        assert cell["outputs"], (name, source[:60])
        for output in cell["outputs"]:
            assert output["output_type"] != "error", (name, source[:60])
            assert not (output["output_type"] == "stream" and output["name"] == "stderr"), (
                name,
                "".join(output["text"])[:300],
            )
            text = "".join(output.get("text", "")) + "".join(
                output.get("data", {}).get("text/plain", "")
            )
            assert "Warning" not in text, (name, text[:300])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_has_its_outputs(path):
    # Committed executed, so they read as finished notebooks on GitHub and in
    # the docs (which render them without running them).
    notebook = json.loads(path.read_text())
    _check_outputs(path.name, notebook["cells"])
    if path.name == "first_private_model.ipynb":
        # A fitted estimator displayed with scikit-learn's HTML repr.
        html = [
            o
            for c in notebook["cells"]
            if c["cell_type"] == "code"
            for o in c["outputs"]
            if "text/html" in o.get("data", {})
        ]
        assert html and "DPLogisticRegression" in "".join(html[0]["data"]["text/html"])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_is_what_the_builder_writes(path):
    builder = _notebook_builder()
    expected = builder.build(path.name, run=False)
    committed = json.loads(path.read_text())
    assert [(c.cell_type, c.source) for c in expected.cells] == [
        (c["cell_type"], "".join(c["source"])) for c in committed["cells"]
    ], f"run python docs/notebooks/_build_notebooks.py and commit {path.name}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path):
    pytest.importorskip("nbclient", reason="the notebooks need nbclient (the test extra)")
    pytest.importorskip("ipykernel", reason="the notebooks need ipykernel (the test extra)")
    builder = _notebook_builder()
    start = time.perf_counter()
    notebook = builder.build(path.name)  # executed with this interpreter, 600 s per cell at most
    elapsed = time.perf_counter() - start
    _check_outputs(path.name, notebook.cells)
    # Timed for the record only: the kernel's CPU time is not observable here
    # apart from other child processes', and wall time depends on the load.
    print(f"{path.name}: {elapsed:.1f} s")


def test_notebooks_exist():
    names = {p.name for p in NOTEBOOKS}
    assert {"first_private_model.ipynb", "tuning_epsilon_with_a_budget.ipynb"} <= names
