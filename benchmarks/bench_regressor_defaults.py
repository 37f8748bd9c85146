"""DPSCORegressor's squared-loss defaults against their previous values, paired by split and seed.

Two defaults of ``DPSCORegressor`` (squared loss, ``solver="auto"``, so
``dp_newton`` on these tables) are compared with what they replaced, on the
regression tables of ``bench_raw_tables.py``, every configuration on the same
split and the same seed:

* **dp_newton's floor** for the squared loss: two noise norms added to every
  eigenvalue of the released Gram matrix where the noise is large against
  the curvature (``nu / R^2 >= 0.05``), falling linearly to one as it
  shrinks; previously two everywhere (``solver_options={"floor_scale": 2}``
  gives that back);
* **the intercept column in standardised units**: a fit that scales its
  features (``feature_scaling``) uses ``intercept_scaling=1``, previously the
  standardised rows' released bound.  There is no public parameter for the
  previous value (it is a released bound), so this diagnostic sets the
  estimator's class attribute back for that column.

Usage::

    PYTHONPATH=. python benchmarks/bench_regressor_defaults.py --threads 1 --seeds 16   # ~25 min, shared 2 cores
    PYTHONPATH=. python benchmarks/bench_regressor_defaults.py --solver-datasets --seeds 10 --threads 1

Writes ``benchmarks/results/regressor_defaults.md`` (``--solver-datasets``:
``regressor_defaults_solvers.md``: the squared-loss rows of
``bench_solvers.py``, diabetes and the 30,000-row sparse regression, with
their public bounds, so only the floor applies).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, md_table
from bench_raw_tables import tables

from sklearn_dp import DPSCORegressor

RESULTS = Path(__file__).parent / "results"

TABLES = [
    "diabetes",
    "diabetes_raw",
    "housing_3k",
    "housing_12k",
    "onehot_ridge_3k",
    "scaled_ridge_10k",
]

#: (name, estimator parameters, whether the intercept column is the rows' bound).
CONFIGS = [
    ("defaults", {}, False),
    ("floor 2 (previous)", {"solver_options": {"floor_scale": 2.0}}, False),
    ("intercept column = rows' bound (previous)", {}, True),
    ("both previous", {"solver_options": {"floor_scale": 2.0}}, True),
]


@contextmanager
def rows_bound_intercept(active):
    """While active, a scaled fit's ``intercept_scaling="auto"`` is the rows' bound again."""
    saved = DPSCORegressor._standardized_intercept_scaling
    if active:
        DPSCORegressor._standardized_intercept_scaling = None
    try:
        yield
    finally:
        DPSCORegressor._standardized_intercept_scaling = saved


def run(table, epsilon, seeds, feature_scaling):
    scores = np.zeros((len(CONFIGS), len(seeds)))
    for j, seed in enumerate(seeds):
        X_train, X_test, y_train, y_test = train_test_split(
            table.X, table.y, test_size=table.test_size, random_state=seed
        )
        for i, (_, params, previous_intercept) in enumerate(CONFIGS):
            model = DPSCORegressor(
                epsilon=epsilon, random_state=seed, feature_scaling=feature_scaling, **params
            )
            with warnings.catch_warnings(), rows_bound_intercept(previous_intercept):
                warnings.simplefilter("ignore")
                model.fit(X_train, y_train)
            scores[i, j] = r2_score(y_test, model.predict(X_test))
    return scores


def run_solver_datasets(seeds, epsilons):
    """The squared-loss rows of ``bench_solvers.py`` (public bounds: no scaling): floor only."""
    import bench_solvers

    rows = []
    for name in ("diabetes", "sparse_regression"):
        data = bench_solvers.load(name, seeds)
        bounds = {k: data.bounds[k] for k in ("data_norm", "feature_bound", "y_bound")}
        for epsilon in epsilons:
            scores = np.zeros((2, seeds))
            for seed, (X_train, X_test, y_train, y_test) in enumerate(data.splits):
                for i, options in enumerate((None, {"floor_scale": 2.0})):
                    model = DPSCORegressor(
                        epsilon=epsilon,
                        delta=bench_solvers.DELTA,
                        random_state=seed,
                        solver_options=options,
                        **bounds,
                    )
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X_train, y_train)
                    scores[i, seed] = r2_score(y_test, model.predict(X_test))
            diff = 100 * (scores[0] - scores[1])
            se = diff.std(ddof=1) / np.sqrt(diff.size)
            rows.append(
                [
                    name,
                    f"{epsilon:g}",
                    model.solver_,
                    f"{np.median(scores[0]):.3f}",
                    f"{np.median(scores[1]):.3f}",
                    f"{diff.mean():+.2f} +- {se:.2f}",
                ]
            )
            print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    headers = ["data set", "eps", "solver", "defaults", "floor 2 (previous)", "difference, points"]
    return md_table(headers, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.5, 1.0, 2.0])
    parser.add_argument("--tables", nargs="*", default=TABLES)
    parser.add_argument("--output", default=None, help="report path")
    parser.add_argument(
        "--solver-datasets",
        action="store_true",
        help="instead: the squared-loss data sets of bench_solvers.py (public bounds), "
        "epsilon 0.1 to 5, defaults against floor 2",
    )
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    limit_threads(args.threads)
    start = time.perf_counter()
    command = "PYTHONPATH=. python benchmarks/bench_regressor_defaults.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    if args.solver_datasets:
        table = run_solver_datasets(args.seeds, [0.1, 0.5, 1.0, 2.0, 5.0])
        text = "\n".join(
            [
                "# dp_newton's squared-loss floor on bench_solvers.py's regression data",
                "",
                f"`{command.strip()}`: median test R^2 over {args.seeds} splits of "
                "`DPSCORegressor` with the public bounds of `bench_solvers.py`, the defaults "
                "against `solver_options={'floor_scale': 2}` (the previous floor), paired; "
                "difference = defaults minus previous, mean +- s.e.",
                "",
                table,
                "",
                f"{time.perf_counter() - start:.0f} s; {environment()}",
                "",
            ]
        )
        print(text)
        out = Path(args.output or RESULTS / "regressor_defaults_solvers.md")
        out.write_text(text)
        return
    rows = []
    for table in tables(args.tables):
        for feature_scaling in ("auto", True):
            if feature_scaling is True and table.name not in ("housing_3k", "housing_12k"):
                continue
            for epsilon in args.epsilons:
                scores = run(table, epsilon, range(args.seeds), feature_scaling)
                row = [
                    table.name,
                    str(feature_scaling),
                    f"{epsilon:g}",
                    f"{np.median(scores[0]):.3f}",
                ]
                for i in range(1, len(CONFIGS)):
                    diff = 100 * (scores[0] - scores[i])
                    se = diff.std(ddof=1) / np.sqrt(diff.size)
                    row.append(f"{np.median(scores[i]):.3f} ({diff.mean():+.2f} +- {se:.2f})")
                rows.append(row)
                print(" | ".join(row), file=sys.stderr, flush=True)
    headers = ["table", "feature_scaling", "eps", "defaults: median R^2"] + [
        f"{name}: median (defaults minus it, points, mean +- s.e.)" for name, _, _ in CONFIGS[1:]
    ]
    text = "\n".join(
        [
            "# DPSCORegressor's squared-loss defaults against their previous values",
            "",
            f"`{command.strip()}`: test R^2 over {args.seeds} splits (split and noise seed "
            "paired across the columns); positive differences favour the defaults.",
            "",
            md_table(headers, rows),
            "",
            f"{time.perf_counter() - start:.0f} s; {environment()}",
            "",
        ]
    )
    print(text)
    out = Path(args.output or RESULTS / "regressor_defaults.md")
    out.write_text(text)


if __name__ == "__main__":
    main()
