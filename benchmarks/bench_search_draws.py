"""The private search against the untuned default at the same total epsilon, over many noise draws.

``bench_search.py`` compares medians over ten splits; the search and the
default draw independent noise, so their difference on a small test set is
mostly noise.  Here each of ``--splits`` stratified 80/20 splits is fitted
with ``--draws`` independent noise draws of both:

* ``DPGridSearchCV(DPLogisticRegression(...), GRID, epsilon=E, delta=1e-5)``
  at its defaults (the grid of ``bench_search.py``, which holds the default
  candidate);
* the default ``DPLogisticRegression(epsilon=E, delta=1e-5)``.

Reported per data set: the mean test accuracy of each with its standard
error, the mean of the paired differences (search - default, per split and
draw) with its standard error (splits as clusters: the standard error of
the per-split mean differences), and how often the runs were skipped.

Usage::

    python benchmarks/bench_search_draws.py                   # 4 data sets, 20 splits x 10 draws
    python benchmarks/bench_search_draws.py --splits 5 --draws 4 --output /tmp/x.md

Writes ``benchmarks/results/search_draws.md``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np
import sklearn

import sklearn_dp
from sklearn_dp import DPLogisticRegression
from sklearn_dp.model_selection import DPGridSearchCV

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import md_table
from _datasets import load_dataset
from bench_search import DATASETS, DELTA, EPSILON, GRID

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def _mean_se(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.4f} ({values.std(ddof=1) / np.sqrt(values.size):.4f})"


def run_dataset(dataset, splits, draws, epsilon, log):
    classes = sorted(np.unique(dataset.y).tolist())
    base = dict(data_norm=dataset.data_norm, classes=classes)
    search_scores = np.zeros((splits, draws))
    default_scores = np.zeros((splits, draws))
    skipped = 0
    for split in range(splits):
        X_train, X_test, y_train, y_test = dataset.split(split)
        for draw in range(draws):
            seed = 1000 * split + draw
            search = DPGridSearchCV(
                DPLogisticRegression(**base), GRID, epsilon=epsilon, delta=DELTA, random_state=seed
            ).fit(X_train, y_train)
            skipped += bool(search.runs_skipped_)
            search_scores[split, draw] = search.score(X_test, y_test)
            default = DPLogisticRegression(
                epsilon=epsilon, delta=DELTA, random_state=seed + 500, **base
            )
            default_scores[split, draw] = default.fit(X_train, y_train).score(X_test, y_test)
        log(
            f"  {dataset.name} split {split}: search {search_scores[split].mean():.3f}, "
            f"default {default_scores[split].mean():.3f}"
        )
    per_split = (search_scores - default_scores).mean(axis=1)
    return {
        "search": _mean_se(search_scores.ravel()),
        "default": _mean_se(default_scores.ravel()),
        "difference": f"{per_split.mean():+.4f} ({per_split.std(ddof=1) / np.sqrt(splits):.4f})",
        "skipped": f"{skipped} of {splits * draws}",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=EPSILON)
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    log = lambda message: print(message, file=sys.stderr, flush=True)
    start = time.perf_counter()
    rows = []
    for name in args.datasets:
        log(f"{name} ...")
        out = run_dataset(load_dataset(name), args.splits, args.draws, args.epsilon, log)
        rows.append([name, out["search"], out["default"], out["difference"], out["skipped"]])
    command = "python benchmarks/bench_search_draws.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    lines = [
        "# Private search vs the untuned default at the same total epsilon, many noise draws",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; "
        f"{time.perf_counter() - start:.0f} s wall time; {args.splits} splits x {args.draws} "
        f"noise draws per data set; epsilon={args.epsilon:g}, delta={DELTA:g}.",
        "",
        f"Environment: Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, sklearn_dp {sklearn_dp.__version__}.",
        "",
        f"Search: `DPGridSearchCV(DPLogisticRegression(data_norm=..., classes=...), {GRID}, "
        f"epsilon={args.epsilon:g}, delta={DELTA:g})` at its defaults; default: "
        f"`DPLogisticRegression(epsilon={args.epsilon:g}, delta={DELTA:g}, data_norm=..., "
        "classes=...)`. Data sets and features as in `bench_search.py`.",
        "",
        "Test accuracy: mean over every split and draw (standard error); search - default: "
        "mean of the per-split mean differences (its standard error over splits).",
        "",
    ]
    lines.append(
        md_table(["data set", "search", "default", "search - default", "runs skipped"], rows)
    )
    text = "\n".join(lines) + "\n"
    print(text)
    output = Path(args.output) if args.output else RESULTS_DIR / "search_draws.md"
    output.write_text(text)
    log(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
