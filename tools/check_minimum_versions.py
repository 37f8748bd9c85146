"""Install the declared minimum versions in a fresh virtual environment and run the tests.

Every ``name>=X`` in ``[project] dependencies`` of ``pyproject.toml`` is pinned
to ``name==X``; the package (with its ``test`` extra) is installed from this
checkout into a new virtual environment, and pytest runs on the installed
package (not on the checkout).  Run it from anywhere::

    python tools/check_minimum_versions.py            # a representative subset (a few minutes)
    python tools/check_minimum_versions.py --all      # the whole default test run
    python tools/check_minimum_versions.py tests/test_budget.py -x

The minimum releases publish wheels for the oldest Python the package
supports, not for the newest, so by default the environment is made with
Python 3.10 (``requires-python``): ``python3.10`` on ``PATH``, or pyenv's
3.10; ``--python`` chooses another interpreter.  Needs the package registry
(PyPI); binary wheels only for the pinned packages, so a missing wheel fails
fast instead of compiling numpy for an hour.  ``pytest -m slow
tests/test_packaging.py`` runs this script.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run by default: the accounting and the budget, each estimator end to end,
#: the exact sensitivity tests, the substitution test, the protocol, and
#: scikit-learn's own estimator checks (the pickiest about old versions), and
#: the HTML repr that notebooks show (on scikit-learn 1.6, the lowest).
DEFAULT_TESTS = [
    "tests/test_accounting.py",
    "tests/test_budget.py",
    "tests/test_logistic.py",
    "tests/test_regression.py",
    "tests/test_lasso.py",
    "tests/test_sensitivity.py",
    "tests/test_substitution.py",
    "tests/test_protocol.py",
    "tests/test_model_selection.py",
    "tests/test_sklearn_conformance.py",
    "tests/test_repr.py",
]

OLDEST_PYTHON = (3, 10)


def _load_pyproject():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError:
            tomllib = None
    text = (ROOT / "pyproject.toml").read_text()
    if tomllib is not None:
        return tomllib.loads(text)["project"]["dependencies"]
    # Without a TOML parser: the dependencies array, one quoted string a line.
    block = re.search(r"^dependencies = \[(.*?)^\]", text, re.M | re.S).group(1)
    return re.findall(r'"([^"]+)"', block)


def minimum_pins(dependencies=None):
    """``["numpy==1.23", ...]``: each ``>=`` lower bound of the dependencies, pinned."""
    pins = []
    for requirement in dependencies if dependencies is not None else _load_pyproject():
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", requirement)
        if match is None:
            raise ValueError(f"dependency without a plain lower bound: {requirement!r}")
        pins.append(f"{match.group(1)}=={match.group(2)}")
    return pins


def _name_version(requirement):
    """``("scikit-learn", (1, 6))`` from ``"scikit_learn==1.6.0"`` (trailing zeros dropped)."""
    name, version = requirement.split("==")
    release = [int(part) for part in re.match(r"[0-9.]*[0-9]", version).group(0).split(".")]
    while release and release[-1] == 0:
        release.pop()
    return re.sub(r"[-_.]+", "-", name).lower(), tuple(release)


def _python_version(executable):
    try:
        out = subprocess.run(
            [executable, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return tuple(int(x) for x in out.stdout.split())


def find_oldest_python():
    """An interpreter of the oldest supported Python, or None."""
    name = "python{}.{}".format(*OLDEST_PYTHON)
    candidates = [shutil.which(name)]
    pyenv = shutil.which("pyenv")
    if pyenv:
        root = subprocess.run([pyenv, "root"], capture_output=True, text=True).stdout.strip()
        candidates += sorted(
            glob.glob(
                os.path.join(root, "versions", "{}.{}.*".format(*OLDEST_PYTHON), "bin", name)
            ),
            reverse=True,
        )
    candidates.append(sys.executable)
    for candidate in filter(None, candidates):
        if _python_version(candidate) == OLDEST_PYTHON:
            return candidate
    return None


def run(pins, tests, *, python, workdir, pytest_args=()):
    """Make the environment in ``workdir``, install, run pytest; return its exit code."""
    workdir = Path(workdir)
    env_dir = workdir / "venv"
    print(f"[minimum versions] {' '.join(pins)}", flush=True)
    print(f"[minimum versions] interpreter {python}, environment {env_dir}", flush=True)
    if Path(python).resolve() == Path(sys.executable).resolve():
        venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    else:
        subprocess.run([python, "-m", "venv", "--clear", str(env_dir)], check=True)
    bin_dir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    env_python = str(bin_dir / "python")
    constraints = workdir / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    pinned_names = ",".join(pin.split("==")[0] for pin in pins)
    pip = [env_python, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(pip + ["install", "-q", "--upgrade", "pip"], check=True)
    # The pins themselves first, from wheels only; then the package and its
    # test extra, held to the same pins by the constraints file.
    subprocess.run(pip + ["install", "-q", "--only-binary", pinned_names] + pins, check=True)
    subprocess.run(pip + ["install", "-q", "-c", str(constraints), f"{ROOT}[test]"], check=True)
    freeze = subprocess.run(pip + ["freeze"], capture_output=True, text=True, check=True).stdout
    print("[minimum versions] installed:\n  " + "\n  ".join(freeze.splitlines()), flush=True)
    installed = dict(_name_version(line) for line in freeze.splitlines() if "==" in line)
    for pin in pins:
        name, version = _name_version(pin)
        if installed.get(name) != version:
            print(f"[minimum versions] {pin} is not what was installed: {installed.get(name)}")
            return 2
    # pytest from a directory outside the checkout: the tests import the
    # installed sklearn_dp, not the source tree.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.setdefault("MPLBACKEND", "Agg")
    where = subprocess.run(
        [env_python, "-c", "import sklearn_dp; print(sklearn_dp.__file__)"],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"[minimum versions] sklearn_dp from {where}", flush=True)
    command = [
        env_python,
        "-m",
        "pytest",
        "-c",
        str(ROOT / "pyproject.toml"),
        "--rootdir",
        str(ROOT),
        "-p",
        "no:cacheprovider",
        "-q",
        *pytest_args,
        *[str(ROOT / t) for t in tests],
    ]
    print("[minimum versions] " + " ".join(command), flush=True)
    return subprocess.run(command, cwd=workdir, env=env).returncode


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tests", nargs="*", help="test files or node ids (default: a subset)")
    parser.add_argument("--all", action="store_true", help="run the whole default test run")
    parser.add_argument("--python", help="interpreter for the environment (default: Python 3.10)")
    parser.add_argument("--keep", metavar="DIR", help="make the environment in DIR and keep it")
    args, pytest_args = parser.parse_known_args(argv)
    python = args.python or find_oldest_python()
    if python is None:
        parser.error("no Python {}.{} found: pass --python".format(*OLDEST_PYTHON))
    tests = ["tests"] if args.all else (args.tests or DEFAULT_TESTS)
    pins = minimum_pins()
    if args.keep:
        Path(args.keep).mkdir(parents=True, exist_ok=True)
        return run(pins, tests, python=python, workdir=args.keep, pytest_args=pytest_args)
    with tempfile.TemporaryDirectory(prefix="sklearn_dp_min_") as workdir:
        return run(pins, tests, python=python, workdir=workdir, pytest_args=pytest_args)


if __name__ == "__main__":
    sys.exit(main())
