"""The defaults of two versions of sklearn_dp on the same splits and seeds, paired.

Run once per version (each with its own tree first on ``PYTHONPATH``), then
compare: the same split and the same ``random_state`` per seed, so a change
that moves the noise scale is measured against common random numbers::

    PYTHONPATH=/path/to/before python benchmarks/bench_paired_defaults.py run before.json
    PYTHONPATH=. python benchmarks/bench_paired_defaults.py run after.json
    python benchmarks/bench_paired_defaults.py compare before.json after.json

Tables and fits are those of ``bench_raw_tables.py`` (method ``defaults``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

TABLES = ["digits", "wine", "breast_cancer_scaled", "scaled_logistic_10k", "breast_cancer"]


def run(path, tables, epsilons, seeds):
    from bench_raw_tables import _score, fit_method
    from bench_raw_tables import tables as load_tables
    from sklearn.model_selection import train_test_split

    scores = {}
    for table in load_tables(tables):
        stratify = table.y if table.task == "classification" else None
        for seed in range(seeds):
            X_train, X_test, y_train, y_test = train_test_split(
                table.X, table.y, test_size=table.test_size, random_state=seed, stratify=stratify
            )
            for epsilon in epsilons:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    try:
                        model = fit_method("defaults", table, epsilon, seed, X_train, y_train)
                        score = _score(table, model, X_test, y_test)
                    except Exception:  # a refused fit is a result too
                        score = math.nan
                scores.setdefault(f"{table.name} eps={epsilon:g}", []).append(score)
        print(table.name, "done", file=sys.stderr)
    Path(path).write_text(json.dumps(scores, indent=1))


def compare(before_path, after_path):
    before = json.loads(Path(before_path).read_text())
    after = json.loads(Path(after_path).read_text())
    print("| table, epsilon | before (mean) | after (mean) | after - before (s.e.) | splits |")
    print("|---|---|---|---|---|")
    for key, old in before.items():
        new = np.asarray(after[key], dtype=float)
        old = np.asarray(old, dtype=float)
        diff = new - old
        se = diff.std(ddof=1) / math.sqrt(diff.size)
        print(
            f"| {key} | {np.nanmean(old):.4f} | {np.nanmean(new):.4f} | "
            f"{np.nanmean(diff):+.4f} ({se:.4f}) | {diff.size} |"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    runner = sub.add_parser("run")
    runner.add_argument("output")
    runner.add_argument("--tables", nargs="*", default=TABLES)
    runner.add_argument("--epsilons", nargs="*", type=float, default=[0.5, 1.0])
    runner.add_argument("--seeds", type=int, default=20)
    comparer = sub.add_parser("compare")
    comparer.add_argument("before")
    comparer.add_argument("after")
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.output, args.tables, args.epsilons, args.seeds)
    else:
        compare(args.before, args.after)


if __name__ == "__main__":
    main()
