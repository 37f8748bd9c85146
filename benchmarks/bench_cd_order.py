"""dp_cd's draw order: independent uniform draws against random reshuffling by chunks.

Fits ``DPLasso(alpha=0.01, solver="dp_cd")`` on ``bench_speed.py``'s Lasso data
(uniform entries, ``feature_bound=1``, five true coefficients) with both orders
and scikit-learn's ``Lasso``, alternately in one process, one BLAS thread; prints
the CPU time over ``Lasso``'s and the test R^2 on 20000 held-out rows (medians
over seeds)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. \\
        python benchmarks/bench_cd_order.py 1e5x129 --epsilon 1 --seeds 3

The independent order is the one dp_cd used before (``rng.integers``); the
results are in ``docs/solvers/coordinate_descent.md`` ("Draw order").
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import Lasso

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import limit_threads
from bench_speed import DELTA, LASSO_ALPHA, LASSO_Y_BOUND, lasso_labels, make_X, parse_size

import sklearn_dp.solvers._coordinate_descent as cd
from sklearn_dp import DPLasso


def independent_draws(rng, n_blocks, n_draws, chunk):
    return rng.integers(n_blocks, size=n_draws)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", help="NxD, e.g. 1e5x129")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    limit_threads(1)
    warnings.simplefilter("ignore")
    n, d = parse_size(args.size)
    X_all = make_X(n + 20000, d, "uniform", 100)
    y_all = lasso_labels(X_all, 0)
    X, X_test, y, y_test = X_all[:n], X_all[n:], y_all[:n], y_all[n:]
    orders = {"independent": independent_draws, "reshuffled by chunks": cd.reshuffled_draws}
    results = {name: [] for name in [*orders, "Lasso"]}
    for seed in range(args.seeds):
        for name in results:
            start = time.process_time()
            if name == "Lasso":
                model = Lasso(alpha=LASSO_ALPHA).fit(X, y)
            else:
                cd.reshuffled_draws = orders[name]
                model = DPLasso(
                    epsilon=args.epsilon,
                    delta=DELTA,
                    alpha=LASSO_ALPHA,
                    feature_bound=1.0,
                    y_bound=LASSO_Y_BOUND,
                    random_state=seed,
                    solver="dp_cd",
                ).fit(X, y)
            results[name].append((time.process_time() - start, model.score(X_test, y_test)))
    reference = np.median([t for t, _ in results["Lasso"]])
    for name, runs in results.items():
        ratio = np.median([t for t, _ in runs]) / reference
        print(
            f"{args.size} epsilon={args.epsilon} {name}: {ratio:.2f}x, test R^2 "
            f"{np.median([s for _, s in runs]):.4f}"
        )


if __name__ == "__main__":
    main()
