"""The default logistic fit (``dp_newton``) against the non-private optimum: its step rule.

Test accuracy of ``DPLogisticRegression`` at its defaults (``dp_newton`` on the
released Gram bound, with quasi-Newton steps from the secant pairs of its
released gradients), beside the same fit without the secant pairs (the former
default, ``solver_options={"secant": False}``), ``hessian="exact"`` (a Hessian
release per step) and scikit-learn's ``LogisticRegression()`` (lbfgs, the same
objective: ``C=1``), at epsilon in {0.5, 1, 5, inf} (delta = 1e-5):

* small tables with public ranges (``benchmarks/_datasets.py``): breast cancer
  (10 splits x 3 noise seeds) and digits (10 classes; 5 splits x 2 seeds);
* generated logistic data with rare positives (about 5%: intercept -5, slopes
  of norm 3, rows N(0, I / d), ``data_norm=1.5``) at n = 1e5 and 4e5 training
  rows, d = 20 and 100, scored on 160,000 fresh rows, where the bound 1/4
  on the log-loss's curvature is far above its value at the optimum;
* the balanced generated set of ``bench_speed.py`` (n = 1e5, d = 100).

With ``--timing``, also the fit time of the default and of lbfgs on 1e6 x 100
rows, alternated in one process (CPU time, one BLAS thread), as a ratio.

Usage::

    PYTHONPATH=. python benchmarks/bench_newton_steps.py --threads 1 [--timing] [--quick]

Writes ``benchmarks/results/newton_steps.md``.  The generated sets are public by
construction: their scales are constants of the generator, never read off the data.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_dp import DPLogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, log, md_table
from _datasets import load_dataset

RESULTS = Path(__file__).resolve().parent / "results"
EPSILONS = [0.5, 1.0, 5.0, math.inf]
DELTA = 1e-5
N_TEST = 160_000
METHODS = {
    "default (secant steps)": {},
    "without secant pairs": {"solver_options": {"secant": False}},
    "hessian='exact'": {"solver": "dp_newton", "solver_options": {"hessian": "exact"}},
}


def rare_positives(n, d, seed, intercept=-5.0, signal=3.0):
    """Rows N(0, I / d) and labels with about 5% positives; fresh rows per seed, one model."""
    model = np.random.default_rng(1)
    w = model.standard_normal(d)
    w *= signal * math.sqrt(d) / np.linalg.norm(w)
    rng = np.random.default_rng(100 + seed)
    X = rng.standard_normal((n + N_TEST, d)) / math.sqrt(d)
    y = (rng.random(n + N_TEST) < 1.0 / (1.0 + np.exp(-(X @ w + intercept)))).astype(int)
    return X[:n], X[n:], y[:n], y[n:]


def balanced(n, d, seed):
    """``bench_speed.py``'s generated logistic set (signal 2.5, intercept 0.5)."""
    return rare_positives(n, d, seed, intercept=0.5, signal=2.5)


def cases(quick):
    bc, digits = load_dataset("breast_cancer"), load_dataset("digits")
    n_large = [100_000] if quick else [100_000, 400_000]
    out = [
        (
            "breast cancer (455 train rows, d=30)",
            bc.data_norm,
            None,
            [bc.split(s) for s in range(10)],
            3,
        ),
        (
            "digits (1437 train rows, d=64, 10 classes)",
            digits.data_norm,
            list(range(10)),
            [digits.split(s) for s in range(5)],
            2,
        ),
    ]
    for n in n_large:
        for d in (20, 100):
            out.append(
                (
                    f"rare positives (n={n:.0e}, d={d}; 160k test rows)",
                    1.5,
                    None,
                    [rare_positives(n, d, s) for s in range(2)],
                    1,
                )
            )
    out.append(
        (
            "balanced (n=1e5, d=100; 160k test rows)",
            1.5,
            None,
            [balanced(100_000, 100, s) for s in range(2)],
            1,
        )
    )
    return out


def accuracy(title, data_norm, classes, splits, noise_seeds, epsilons):
    rows = []
    reference = [
        LogisticRegression(max_iter=1000).fit(X, y).score(Xt, yt) for X, Xt, y, yt in splits
    ]
    base = float(np.median(reference))
    for epsilon in epsilons:
        row = [f"{epsilon:g}", f"{base:.4f}"]
        for params in METHODS.values():
            scores = []
            for split, (X, Xt, y, yt) in enumerate(splits):
                for seed in range(noise_seeds if math.isfinite(epsilon) else 1):
                    model = DPLogisticRegression(
                        epsilon=epsilon,
                        delta=DELTA,
                        data_norm=data_norm,
                        classes=classes or [0, 1],
                        random_state=100 * split + seed,
                        **params,
                    )
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        scores.append(model.fit(X, y).score(Xt, yt))
            med = float(np.median(scores))
            row.append(f"{med:.4f} ({100 * (med - base):+.2f})")
        rows.append(row)
        log(f"  {title} epsilon={epsilon:g}: done")
    return rows


def timing(repeats=3):
    """CPU time of the default fit over lbfgs's on 1e6 x 100, alternated."""
    X, _, y, _ = balanced(1_000_000, 100, 0)
    times = {"lbfgs": [], "default": []}
    for _ in range(repeats):
        for name in times:
            model = (
                LogisticRegression()
                if name == "lbfgs"
                else DPLogisticRegression(
                    epsilon=1.0, delta=1e-8, data_norm=1.5, classes=[0, 1], random_state=0
                )
            )
            start = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X, y)
            times[name].append(time.process_time() - start)
    ratios = [d / l for d, l in zip(times["default"], times["lbfgs"])]
    return times, ratios


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 1e5 only, epsilon 1 and inf")
    parser.add_argument("--timing", action="store_true", help="also the 1e6 x 100 fit time")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    limit_threads(args.threads)
    epsilons = [1.0, math.inf] if args.quick else EPSILONS
    started = time.perf_counter()
    names = list(METHODS)
    parts = [
        "# The default logistic fit against the non-private optimum",
        "",
        "Command: `PYTHONPATH=. python benchmarks/bench_newton_steps.py "
        + " ".join(argv if argv is not None else sys.argv[1:])
        + "`",
        "",
        f"Environment: {environment()}",
        "",
        "Test accuracy, median over splits and noise seeds; in brackets the difference to "
        "scikit-learn's `LogisticRegression()` (lbfgs, the same objective) in points. "
        "`DPLogisticRegression(epsilon, delta=1e-5, data_norm, classes)` with every other "
        "parameter at its default (`auto`: dp_newton), and the two variants of its step rule.",
        "",
    ]
    for title, data_norm, classes, splits, noise_seeds in cases(args.quick):
        log(title)
        rows = accuracy(title, data_norm, classes, splits, noise_seeds, epsilons)
        parts += [f"## {title}", ""] + [md_table(["epsilon", "lbfgs"] + names, rows), ""]
    if args.timing:
        times, ratios = timing()
        parts += [
            "## Fit time at 1e6 x 100 (balanced), epsilon=1",
            "",
            "CPU time (`time.process_time`), one BLAS thread, default and lbfgs alternated, "
            f"3 rounds: default {', '.join(f'{t:.2f}' for t in times['default'])} s; lbfgs "
            f"{', '.join(f'{t:.2f}' for t in times['lbfgs'])} s; ratio "
            f"{', '.join(f'{r:.2f}' for r in ratios)} (median {np.median(ratios):.2f}x).",
            "",
        ]
    parts.append(f"Whole run: {time.perf_counter() - started:.0f} s.")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / ("newton_steps_quick.md" if args.quick else "newton_steps.md")
    out.write_text("\n".join(parts) + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
