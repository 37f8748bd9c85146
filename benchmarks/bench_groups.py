"""Group-level privacy (``groups=``) against row-level fits on a table with several rows per person.

The table: 20,000 people with 1 to 20 rows each (uniformly drawn, about
210,000 rows), 10 features.  Each person has a profile (a point in
``[-0.6, 0.6]^10``); each of their rows is the profile plus noise of standard
deviation 0.25, clipped to the public range ``[-1, 1]`` (so a row's L2 norm is
at most ``sqrt(10)``, the public ``data_norm``).  The label of a row is drawn
from a logistic model of the row (fixed weights, so repeated rows of a person
agree more often than rows of different people).  The test set is a table of
5,000 other people drawn the same way.

Every fit is ``DPLogisticRegression(epsilon=1, delta=1e-6, classes=[0, 1],
data_norm=sqrt(10))`` with the default solver, and the same rows:

* ``row level``: ``fit(X, y)``: the guarantee is per row; a person with ``r``
  rows is protected only by group privacy, at epsilon ``r`` (20 for the
  people with the most rows) and a delta that grows as ``r e^(r - 1)
  delta``;
* ``group level``: ``fit(X, y, groups=person)`` with ``max_group_rows=5``:
  each person keeps their first 5 rows and the guarantee is per person, at
  epsilon 1 whatever their number of rows;
* ``row level, first 5 rows``: the row-level fit on the rows the group-level
  fit keeps (what the group-level fit pays for its guarantee, apart from
  the data it drops);
* scikit-learn's ``LogisticRegression()`` on all rows (no privacy).

Median and quartiles of the test accuracy over the seeds (a fresh table and
fresh fits per seed).  Target: the group-level fit within 3 points of the
row-level fit at the same epsilon on the same rows.
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (
    RESULTS_DIR,
    add_threads_argument,
    environment,
    fmt_median_iqr,
    limit_threads,
    log,
    md_table,
    median,
    timed,
    write_report,
)

from sklearn_dp import DPLogisticRegression, privacy_report
from sklearn_dp._protocol import kept_group_rows

N_FEATURES = 10
MAX_GROUP_ROWS = 5
EPSILON = 1.0
DELTA = 1e-6
TARGET_POINTS = 3.0


def people_table(n_people, seed, weights):
    """``(X, y, person)``: each person 1 to 20 rows around a profile of their own."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 21, size=n_people)
    person = np.repeat(np.arange(n_people), rows)
    rng.shuffle(person)  # rows arrive in no particular order (a log of visits)
    profiles = rng.uniform(-0.6, 0.6, size=(n_people, N_FEATURES))
    X = np.clip(profiles[person] + 0.25 * rng.standard_normal((person.size, N_FEATURES)), -1, 1)
    p = 1.0 / (1.0 + np.exp(-(X @ weights)))
    y = (rng.uniform(size=person.size) < p).astype(int)
    return X, y, person


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5, help="number of seeds (default 5)")
    parser.add_argument("--people", type=int, default=20_000, help="people in the training table")
    parser.add_argument("--quick", action="store_true", help="2 seeds, 5,000 people")
    parser.add_argument("--output", default=None, help="report path")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.seeds, args.people = 2, 5_000
    limit_threads(args.threads)
    weights = np.random.default_rng(12345).normal(size=N_FEATURES)
    weights *= 2.5 / np.linalg.norm(weights)
    data_norm = math.sqrt(N_FEATURES)
    params = dict(epsilon=EPSILON, delta=DELTA, classes=[0, 1], data_norm=data_norm)
    names = ["row level", "group level", "row level, first 5 rows", "scikit-learn (no privacy)"]
    accuracy = {name: [] for name in names}
    seconds = {name: [] for name in names}
    solver, sizes, relation = None, [], None
    for seed in range(args.seeds):
        X, y, person = people_table(args.people, seed, weights)
        X_test, y_test, _ = people_table(5_000, 10_000 + seed, weights)
        keep = kept_group_rows(person, MAX_GROUP_ROWS)
        sizes.append((X.shape[0], keep.size))
        fits = {
            "row level": lambda: DPLogisticRegression(random_state=seed, **params).fit(X, y),
            "group level": lambda: DPLogisticRegression(
                random_state=seed, max_group_rows=MAX_GROUP_ROWS, **params
            ).fit(X, y, groups=person),
            "row level, first 5 rows": lambda: DPLogisticRegression(
                random_state=seed, **params
            ).fit(X[keep], y[keep]),
            "scikit-learn (no privacy)": lambda: LogisticRegression().fit(X, y),
        }
        for name in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                elapsed, model = timed(fits[name])
            accuracy[name].append(model.score(X_test, y_test))
            seconds[name].append(elapsed)
            if name == "group level":
                solver = model.solver_
                relation = privacy_report(model)["neighbouring_relation"]
            log(f"seed {seed}: {name}: {accuracy[name][-1]:.4f} ({elapsed:.2f}s)")
    gap = 100 * (median(accuracy["row level"]) - median(accuracy["group level"]))
    guarantee = {
        "row level": "epsilon 1 per row; per person (20 rows): epsilon 20",
        "group level": f"epsilon 1 per person ({relation})",
        "row level, first 5 rows": "epsilon 1 per row; per person (5 rows): epsilon 5",
        "scikit-learn (no privacy)": "none",
    }
    table = md_table(
        ["fit", "test accuracy, median (quartiles)", "fit seconds (median)", "guarantee"],
        [
            [
                name,
                fmt_median_iqr(accuracy[name], 4),
                f"{median(seconds[name]):.2f}",
                guarantee[name],
            ]
            for name in names
        ],
    )
    n_rows = int(median([s[0] for s in sizes]))
    n_kept = int(median([s[1] for s in sizes]))
    verdict = "met" if gap <= TARGET_POINTS else "NOT met"
    report = "\n".join(
        [
            "# Group-level privacy: one person, not one row",
            "",
            f"Command: `python benchmarks/bench_groups.py {' '.join(argv or sys.argv[1:])}`".rstrip(),
            "",
            f"{args.people:,} people with 1-20 rows each ({n_rows:,} rows, median over seeds; "
            f"{n_kept:,} kept with max_group_rows={MAX_GROUP_ROWS}), {N_FEATURES} features, "
            f"epsilon={EPSILON:g}, delta={DELTA:g}, solver {solver!r} (the default), "
            f"{args.seeds} seeds; test set: 5,000 other people.",
            "",
            table,
            "",
            f"Gap, row level minus group level (median accuracy): {gap:.2f} points "
            f"(target: at most {TARGET_POINTS:g}): {verdict}.",
            "",
            f"Environment: {environment()}",
        ]
    )
    print(report)
    default = RESULTS_DIR / ("groups_quick.md" if args.quick else "groups.md")
    write_report(args.output or default, report)
    return 0 if gap <= TARGET_POINTS else 1


if __name__ == "__main__":
    sys.exit(main())
