"""Validate the docstrings of sklearn_dp's public API with numpydoc.

The public API is every class and function named in ``__all__`` of the
modules listed under ``[tool.numpydoc_validation] modules`` in
``pyproject.toml``, with the public methods and properties that those classes
define themselves (inherited scikit-learn methods are scikit-learn's to
document).  The checked codes are ``[tool.numpydoc_validation] checks``:
``"all"`` followed by the codes left out, as numpydoc's own hook reads them.

Usage::

    python tools/check_docstrings.py            # exit status 1 on any finding
    python tools/check_docstrings.py --verbose  # also list what was checked
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

import numpydoc.validate
from numpydoc.docscrape import NumpyDocString
from numpydoc.validate import validate

ROOT = Path(__file__).resolve().parents[1]


def register_privacy_section() -> None:
    """Make ``Privacy`` a known section, placed after ``Notes``.

    Our public classes state what they treat as public and what they release
    in a ``Privacy`` section (rendered by ``docs/_ext/privacy_section.py``;
    ``sklearn_dp._sklearn_compat`` registers it with scikit-learn's copy of
    numpydoc the same way).
    """
    NumpyDocString.sections.setdefault("Privacy", [])
    allowed = numpydoc.validate.ALLOWED_SECTIONS
    if "Privacy" not in allowed:
        allowed.insert(allowed.index("Notes") + 1, "Privacy")


def load_config(path: Path = ROOT / "pyproject.toml") -> tuple[set[str], list[str]]:
    """Return the codes to check and the modules whose public names are checked."""
    config = tomllib.loads(path.read_text())["tool"]["numpydoc_validation"]
    checks = list(config["checks"])
    if checks and checks[0] == "all":
        from numpydoc.validate import ERROR_MSGS

        selected = set(ERROR_MSGS) - set(checks[1:])
    else:
        selected = set(checks)
    return selected, list(config["modules"])


def public_objects(module_names: list[str]) -> list[str]:
    """Import paths of the public classes, functions, methods and properties."""
    paths: list[str] = []
    seen: set[int] = set()
    for module_name in module_names:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(inspect.unwrap(obj))):
                continue  # constants and the version string
            if id(obj) in seen:
                continue  # re-exported under several modules: checked once
            seen.add(id(obj))
            path = f"{module_name}.{name}"
            paths.append(path)
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if inspect.isfunction(value) or isinstance(value, property):
                        paths.append(f"{path}.{attr}")
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every object checked")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    register_privacy_section()
    checks, modules = load_config()
    failures = 0
    paths = public_objects(modules)
    for path in paths:
        result = validate(path)
        errors = [(code, msg) for code, msg in result["errors"] if code in checks]
        if args.verbose:
            print(f"{path}: {'ok' if not errors else f'{len(errors)} finding(s)'}")
        for code, msg in errors:
            failures += 1
            print(f"{path}: {code} {msg}")
    print(f"{len(paths)} public objects checked, {failures} finding(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
