"""Where ``auto`` should switch from ``dp_newton`` to ``dp_nystrom`` on dense X.

For each cell (n, d) and each problem (logistic against lbfgs, ridge against
``Ridge``), fits both solvers at each epsilon and reports the ratio of CPU
time to scikit-learn's fit on the same data (one BLAS thread, measured in
the same process, alternately) and the test score on 20000 held-out rows.
The data are ``bench_speed.py``'s (rows N(0, I / d), public scales)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. \\
        python benchmarks/bench_width_switch.py --sizes 1e4x200 1e4x500 1e4x999 \\
        1e5x200 1e5x500 1e5x999

Results: ``benchmarks/results/width_switch.md``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, log, md_table
from bench_speed import (
    PROBLEMS,
    _generated_split,
    build,
    logistic_labels,
    parse_size,
    regression_labels,
)

SOLVERS = ["dp_newton", "dp_nystrom"]
EPSILONS = [0.5, 1.0, 5.0]
LABELS = {"logistic": logistic_labels, "ridge": regression_labels}


def _methods(problem):
    methods = {m.name: m for m in PROBLEMS[problem][1]()}
    reference = next(m for m in methods.values() if m.reference)
    return reference, methods["default (auto)"]


def _fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        estimator.fit(X, y)
        return time.process_time() - start


def run_cell(problem, n, d, repeats, seed=0):
    X, X_test, y, y_test = _generated_split(n, d, "normal", LABELS[problem], seed)
    reference, default = _methods(problem)
    rows = []
    sk = build(reference, problem, math.inf, seed, n)
    ref_score = None
    for epsilon in EPSILONS:
        times = {s: [] for s in SOLVERS}
        sk_times, scores = [], {}
        for r in range(repeats):
            # Alternate the fits so the load of the machine hits every one alike.
            sk_times.append(_fit(sk, X, y))
            for solver in SOLVERS:
                est = build(default, problem, epsilon, seed + r, n).set_params(solver=solver)
                _fit(est, X[:1000], y[:1000])  # warm-up: the calibration cache
                times[solver].append(_fit(est, X, y))
                scores.setdefault(solver, est.score(X_test, y_test))
        ref_score = sk.score(X_test, y_test)
        sk_time = float(np.median(sk_times))
        for solver in SOLVERS:
            ratio = float(np.median(times[solver])) / sk_time
            rows.append((problem, f"{n:.0e}x{d}", epsilon, solver, ratio, scores[solver]))
            log(f"{problem} {n}x{d} eps={epsilon} {solver}: {ratio:.2f}x, {scores[solver]:.4f}")
    rows.append((problem, f"{n:.0e}x{d}", math.inf, "scikit-learn", 1.0, ref_score))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e4x200", "1e4x500", "1e4x999"])
    parser.add_argument("--problems", nargs="+", default=["logistic", "ridge"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--output", default=None)
    add_threads_argument(parser)
    args = parser.parse_args()
    limit_threads(1 if args.threads is None else args.threads)
    rows = []
    for problem in args.problems:
        for size in args.sizes:
            rows += run_cell(problem, *parse_size(size), args.repeats)
    table = md_table(
        ["problem", "n x d", "epsilon", "solver", "CPU time / scikit-learn", "test score"],
        [(p, s, e, m, f"{t:.2f}", f"{a:.4f}") for p, s, e, m, t, a in rows],
    )
    text = f"# dp_newton against dp_nystrom on dense X\n\n{environment()}\n\n{table}\n"
    output = Path(args.output) if args.output else None
    if output:
        output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
