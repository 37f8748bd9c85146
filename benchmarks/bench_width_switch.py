"""Where ``auto`` should switch solvers with the width of dense X.

For each cell (n, d) and each problem, fits both candidate solvers at each
epsilon and reports the ratio of CPU time to scikit-learn's fit on the same
data (one BLAS thread, measured in the same process, alternately) and the
test score on 20000 held-out rows (the median over ``--seeds`` splits).
Logistic (against lbfgs) and ridge (against ``Ridge``): ``dp_newton``
against ``dp_nystrom``; the Lasso (``DPLasso(alpha=0.01)`` against
``Lasso``): ``dp_ssp`` against ``dp_cd``.  The data are ``bench_speed.py``'s
(rows N(0, I / d), or uniform entries for the Lasso; public scales)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. \\
        python benchmarks/bench_width_switch.py --sizes 1e4x200 1e4x500 1e4x999 \\
        1e5x200 1e5x500 1e5x999

Results: ``benchmarks/results/width_switch.md`` (logistic and ridge) and
``benchmarks/results/width_switch_lasso.md``.
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
    lasso_labels,
    logistic_labels,
    parse_size,
    regression_labels,
)

SOLVERS = {
    "logistic": ["dp_newton", "dp_nystrom"],
    "ridge": ["dp_newton", "dp_nystrom"],
    "lasso": ["dp_ssp", "dp_cd"],
}
EPSILONS = [0.5, 1.0, 5.0]
LABELS = {"logistic": logistic_labels, "ridge": regression_labels, "lasso": lasso_labels}


def _methods(problem):
    methods = PROBLEMS[problem][1]()
    reference = next(m for m in methods if m.reference)
    return reference, next(m for m in methods if m.name.startswith("default"))


def _fit(estimator, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        estimator.fit(X, y)
        return time.process_time() - start


def run_cell(problem, n, d, repeats, epsilons=EPSILONS, seeds=1):
    reference, default = _methods(problem)
    solvers = SOLVERS[problem]
    rows = []
    ref_scores = []
    results = {(e, s): ([], [], []) for e in epsilons for s in solvers}  # times, sk times, scores
    for seed in range(seeds):
        kind = PROBLEMS[problem][2]
        X, X_test, y, y_test = _generated_split(n, d, kind, LABELS[problem], seed)
        sk = build(reference, problem, math.inf, seed, n)
        for epsilon in epsilons:
            for r in range(repeats):
                # Alternate the fits so the load of the machine hits every one alike.
                sk_time = _fit(sk, X, y)
                for solver in solvers:
                    est = build(default, problem, epsilon, seed + r, n).set_params(solver=solver)
                    _fit(est, X[:1000], y[:1000])  # warm-up: the calibration cache
                    times, sk_times, scores = results[epsilon, solver]
                    times.append(_fit(est, X, y))
                    sk_times.append(sk_time)
                    if r == 0:
                        scores.append(est.score(X_test, y_test))
        ref_scores.append(sk.score(X_test, y_test))
    for epsilon in epsilons:
        for solver in solvers:
            times, sk_times, scores = results[epsilon, solver]
            ratio = float(np.median(times)) / float(np.median(sk_times))
            score = float(np.median(scores))
            row = (problem, f"{n:.0e}x{d}", epsilon, solver, float(np.median(times)), ratio, score)
            rows.append(row)
            log(f"{problem} {n}x{d} eps={epsilon} {solver}: {ratio:.2f}x, {score:.4f}")
    rows.append(
        (problem, f"{n:.0e}x{d}", math.inf, "scikit-learn", math.nan, 1.0, np.median(ref_scores))
    )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["1e4x200", "1e4x500", "1e4x999"])
    parser.add_argument("--problems", nargs="+", default=["logistic", "ridge"])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--epsilons", nargs="+", type=float, default=EPSILONS)
    parser.add_argument("--seeds", type=int, default=1, help="splits per cell (median score)")
    parser.add_argument("--output", default=None)
    add_threads_argument(parser)
    args = parser.parse_args()
    limit_threads(1 if args.threads is None else args.threads)
    rows = []
    for problem in args.problems:
        for size in args.sizes:
            rows += run_cell(problem, *parse_size(size), args.repeats, args.epsilons, args.seeds)
    table = md_table(
        [
            "problem",
            "n x d",
            "epsilon",
            "solver",
            "CPU (s)",
            "CPU time / scikit-learn",
            "test score",
        ],
        [(p, s, e, m, f"{c:.3f}", f"{t:.2f}", f"{a:.4f}") for p, s, e, m, c, t, a in rows],
    )
    pairs = " and ".join(" against ".join(SOLVERS[p]) for p in args.problems)
    command = "python benchmarks/bench_width_switch.py " + " ".join(sys.argv[1:])
    text = f"# {pairs} on dense X\n\nCommand: `{command}`\n\n{environment()}\n\n{table}\n"
    output = Path(args.output) if args.output else None
    if output:
        output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
