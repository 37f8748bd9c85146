"""Helpers shared by the benchmark scripts: tables, summaries, timing, threads, reports.

The data sets live in :mod:`_datasets`; this module holds what every script
needs around them, so that a fix (a table's alignment, the environment line
of a report, how ``--threads`` caps BLAS) is made once.  Scripts import it as
``from _common import ...`` (they put their own folder on ``sys.path``, as for
``_datasets``).
"""

from __future__ import annotations

import math
import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "RESULTS_DIR",
    "md_table",
    "median",
    "quartiles",
    "fmt_median_iqr",
    "fmt_eps",
    "timed",
    "log",
    "add_threads_argument",
    "limit_threads",
    "environment",
    "write_report",
]

#: Where every script writes its Markdown report (and plots) by default.
RESULTS_DIR = Path(__file__).resolve().parent / "results"


def md_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table with columns padded to their widest cell."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(cells[0], widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in cells[1:]:
        lines.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
    return "\n".join(lines)


def _finite(values):
    return [v for v in values if v is not None and not math.isnan(v)]


def median(values: Iterable[float | None]) -> float:
    """Median of the values that are not None or NaN (NaN if there are none)."""
    values = _finite(values)
    return float(np.median(values)) if values else math.nan


def quartiles(values: Iterable[float | None]) -> tuple[float, float]:
    """First and third quartiles of the values that are not None or NaN."""
    values = _finite(values)
    if not values:
        return math.nan, math.nan
    return float(np.percentile(values, 25)), float(np.percentile(values, 75))


def fmt_median_iqr(
    values: Iterable[float | None],
    digits: int = 3,
    iqr_digits: int | None = None,
    missing: str = "n/a",
) -> str:
    """``"median (q1-q3)"`` of the finite values, or ``missing`` if there are none."""
    values = _finite(values)
    m = median(values)
    if math.isnan(m):
        return missing
    q1, q3 = quartiles(values)
    iqr_digits = digits - 1 if iqr_digits is None else iqr_digits
    return f"{m:.{digits}f} ({q1:.{iqr_digits}f}-{q3:.{iqr_digits}f})"


def fmt_eps(epsilon: float) -> str:
    """``"inf"`` or the epsilon in ``%g``."""
    return "inf" if math.isinf(epsilon) else f"{epsilon:g}"


def timed(function: Callable[[], Any]) -> tuple[float, Any]:
    """Run ``function()`` once; return (seconds by ``time.perf_counter``, its result)."""
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def log(message: str) -> None:
    """Progress to stderr (the report goes to stdout and files)."""
    print(message, file=sys.stderr, flush=True)


def add_threads_argument(parser, help: str | None = None) -> None:
    """The ``--threads N`` option of every timing script."""
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=help
        or "cap BLAS/OpenMP threads (threadpoolctl) for every fit, DP and "
        "scikit-learn alike; default: the libraries' own defaults",
    )


def limit_threads(threads: int | None) -> None:
    """Cap BLAS/OpenMP thread pools for the rest of the process (no-op for None or 0).

    On a shared machine multi-threaded BLAS under contention makes small fits
    10-40x slower; ``--threads 1`` gives steadier time ratios.
    """
    if threads:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)


def environment() -> str:
    """One line naming the versions, the CPUs and the BLAS thread pools of this run."""
    from importlib.metadata import version

    import sklearn

    import sklearn_dp

    try:
        from threadpoolctl import threadpool_info

        pools = ", ".join(
            f"{i.get('internal_api')} x{i.get('num_threads')}" for i in threadpool_info()
        )
    except Exception:  # threadpoolctl missing or failing: not essential
        pools = "unknown"
    return (
        f"Python {platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, dp-accounting {version('dp-accounting')}, sklearn_dp "
        f"{sklearn_dp.__version__}; {os.cpu_count()} CPUs; thread pools: {pools}; "
        f"{platform.platform()}"
    )


def write_report(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` (creating its folder); return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
