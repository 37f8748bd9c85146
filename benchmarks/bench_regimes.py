"""Each l1 solver in the regime its paper claims: d >> n sparse regression.

Asi, Feldman, Koren and Talwar (2021) claim excess population risk that grows
like log(d), not sqrt(d), for l1-geometry methods on l1-bounded problems: the
regime is d much larger than the signal the rows can carry, with a sparse
truth.  This benchmark fits, on generated data of that kind, every l1 solver
of ``DPLasso`` at its defaults (``radius`` not given: the default ball of
``default_l1_radius``; every bound ``"auto"``), ``dp_ssp``, the default
``solver="auto"``, and scikit-learn's ``LassoCV`` (non-private), and reports
for each epsilon the test R^2 and the share of the 5 true features among the
5 largest coefficients (medians over seeds).

Data: rows uniform in [-1, 1]^d, a 5-sparse truth with coefficients +-0.2
(``||w*||_1 = 1``), ``y = x @ w* + N(0, 0.1^2)``, n = 5000 training rows and
2000 test rows, d in {2000, 10000}.  The trivial predictor (the mean label)
has R^2 0; the issue's bar for ``localized_mirror_descent`` and
``vr_frank_wolfe`` is the trivial predictor plus 70% of the gap to
non-private (``LassoCV``) at epsilon 5.

Usage::

    PYTHONPATH=. python benchmarks/bench_regimes.py            # 5 seeds, d in {2000, 10000}
    PYTHONPATH=. python benchmarks/bench_regimes.py --quick    # 1 seed, d = 2000, fewer solvers
    PYTHONPATH=. python benchmarks/bench_regimes.py --dims 2000 --epsilons 1 --seeds 5 --methods "auto (default)"

Writes ``benchmarks/results/regimes.md`` (``regimes_quick.md`` with ``--quick``,
``regimes_partial.md`` with ``--methods``).
"""

from __future__ import annotations

import os

# One BLAS thread: the machine is shared (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LassoCV
from sklearn.metrics import r2_score

from sklearn_dp import DPLasso

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, md_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
N_TRAIN, N_TEST, K_SPARSE, NOISE = 5000, 2000, 5, 0.1

#: Label -> DPLasso keyword arguments (everything else at its default).
METHODS = {
    "auto (default)": dict(),
    "frank_wolfe": dict(solver="frank_wolfe"),
    "vr_frank_wolfe": dict(solver="vr_frank_wolfe"),
    "mirror_descent": dict(solver="mirror_descent"),
    "localized_mirror_descent": dict(solver="localized_mirror_descent"),
    "dp_ssp": dict(solver="dp_ssp"),
}
QUICK_METHODS = ["auto (default)", "frank_wolfe", "vr_frank_wolfe", "localized_mirror_descent"]
#: dp_ssp releases a d x d Gram matrix: beyond this many features it is not run.
SSP_MAX_FEATURES = 2000


def sparse_problem(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    w = np.zeros(d)
    support = rng.choice(d, K_SPARSE, replace=False)
    w[support] = rng.choice([-1.0, 1.0], K_SPARSE) / K_SPARSE
    y = X @ w + NOISE * rng.normal(size=n)
    return X, y, w


def recovered(coef, truth):
    """How many of the true features are among the ``k`` largest |coefficients|."""
    k = int(np.count_nonzero(truth))
    top = np.argsort(-np.abs(coef))[:k]
    top = top[np.abs(coef[top]) > 0]
    return len(set(top) & set(np.flatnonzero(truth)))


def run(dims, epsilons, seeds, methods, timeout, log):
    rows = {}
    for d in dims:
        for seed in seeds:
            X, y, truth = sparse_problem(N_TRAIN + N_TEST, d, seed)
            Xt, yt, Xs, ys = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
            start = time.perf_counter()
            cv = LassoCV(n_jobs=1).fit(Xt, yt)
            cell = rows.setdefault((d, "LassoCV (non-private)", "-"), [])
            cell.append((r2_score(ys, cv.predict(Xs)), recovered(cv.coef_, truth), 0.0, "-"))
            log(f"d={d} seed={seed} LassoCV {time.perf_counter() - start:.1f}s")
            for label in methods:
                kwargs = METHODS[label]
                if kwargs.get("solver") == "dp_ssp" and d > SSP_MAX_FEATURES:
                    continue
                for eps in epsilons:
                    start = time.perf_counter()
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        model = DPLasso(epsilon=eps, random_state=seed, **kwargs).fit(Xt, yt)
                    seconds = time.perf_counter() - start
                    rows.setdefault((d, label, eps), []).append(
                        (
                            r2_score(ys, model.predict(Xs)),
                            recovered(model.coef_, truth),
                            seconds,
                            f"{model.solver_}, radius {model.radius_:.3g}"
                            + (", warned" if caught else ""),
                        )
                    )
                    log(f"d={d} seed={seed} {label} eps={eps}: {rows[(d, label, eps)][-1]}")
                    if seconds > timeout:
                        log(f"  {label} slower than {timeout}s: its larger epsilons skipped")
                        break
    return rows


def report(rows, epsilons, seeds, quick, command, partial=False):
    lines = [
        "# l1 solvers in the d >> n sparse regime",
        "",
        f"Command: `{command}`",
        "",
        f"n = {N_TRAIN} training rows, {N_TEST} test rows, 5-sparse truth (+-0.2), noise 0.1, "
        f"rows uniform in [-1, 1]^d; every DPLasso parameter at its default but epsilon "
        f"(delta 1e-5, bounds 'auto', no radius); {len(seeds)} seed(s), medians.  Cells: "
        "test R^2 / true features among the 5 largest coefficients; the last column says what "
        "ran (solver, radius, whether it warned) on the first seed.",
        "",
    ]
    header = ["d", "method", "epsilon", "R^2", "recovered (of 5)", "seconds", "what ran"]
    body = []
    for (d, label, eps), values in rows.items():
        r2 = np.median([v[0] for v in values])
        rec = np.median([v[1] for v in values])
        secs = np.median([v[2] for v in values])
        body.append([d, label, eps, f"{r2:.3f}", f"{rec:g}", f"{secs:.1f}", values[0][3]])
    lines.append(md_table(header, body))
    lines += ["", environment()]
    name = "regimes_quick.md" if quick else "regimes.md"
    if partial:
        name = "regimes_partial.md"
    (RESULTS_DIR / name).write_text("\n".join(lines) + "\n")
    return RESULTS_DIR / name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 seed, d = 2000, fewer solvers")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--dims", type=int, nargs="+", default=None)
    parser.add_argument("--epsilons", type=float, nargs="+", default=None)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument(
        "--methods", nargs="+", default=None, choices=list(METHODS), help="default: all"
    )
    args = parser.parse_args(argv)
    dims = args.dims or ([2000] if args.quick else [2000, 10000])
    epsilons = args.epsilons or ([1.0, 5.0] if args.quick else [0.5, 1.0, 2.0, 5.0])
    seeds = range(args.seeds or (1 if args.quick else 5))
    methods = args.methods or (QUICK_METHODS if args.quick else list(METHODS))

    def log(message):
        print(message, file=sys.stderr, flush=True)

    rows = run(dims, epsilons, seeds, methods, args.timeout, log)
    command = "PYTHONPATH=. python benchmarks/bench_regimes.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    path = report(rows, epsilons, seeds, args.quick, command.strip(), partial=bool(args.methods))
    print(path.read_text())


if __name__ == "__main__":
    main()
