"""Where a default fit loses accuracy: each release swapped for its exact value, one at a time.

``DPLogisticRegression(epsilon)`` at its defaults on a raw table (breast
cancer as loaded: 398 training rows, 30 features from 0.001 to 4254) makes
a handful of releases: the label set, the row bound (``data_norm="auto"``),
the Gram matrix and one clipped gradient sum per Newton step.  This script
refits on the same split and seed with some of them replaced by their exact
(non-private) values through :func:`sklearn_dp.testing.trace_releases`'s
``substitute`` (the noise is drawn as usual, only the used output changes),
and with public options changed beside them (the clip, the number of steps,
the eigenvalue floor of ``dp_newton``, the intercept column), to see which
part of the fit the accuracy is lost to.  A substituted fit is not private:
this is a diagnostic, never a way to fit.

Usage::

    PYTHONPATH=. python benchmarks/bench_release_profile.py --threads 1              # 60 seeds, ~1 min
    PYTHONPATH=. python benchmarks/bench_release_profile.py --seeds 10 --epsilons 1

Writes ``benchmarks/results/release_profile.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, fmt_eps, limit_threads, md_table, median

from sklearn_dp import DPLogisticRegression
from sklearn_dp.testing import trace_releases

EVERY = frozenset({"labels", "bound", "gram", "gradients"})

#: (name, estimator parameters, releases made exact).
CONFIGS = [
    ("defaults", {}, frozenset()),
    ("exact label set", {}, frozenset({"labels"})),
    ("classes=[0, 1] given (its share goes to the model)", {"classes": [0, 1]}, frozenset()),
    ("exact row bound (the utility's mode)", {}, frozenset({"bound"})),
    ("exact Gram matrix", {}, frozenset({"gram"})),
    ("exact gradient sums", {}, frozenset({"gradients"})),
    ("every release exact", {}, EVERY),
    ("every release exact, clip at the full bound", {"clip_norm": 1e12}, EVERY),
    ("every release exact, 10 steps", {"max_iter": 10}, EVERY),
    (
        "hessian='exact' (a Hessian release per step)",
        {"solver_options": {"hessian": "exact"}},
        frozenset(),
    ),
    ("every release exact, eigenvalue floor ~0", {"solver_options": {"floor_scale": 1e-6}}, EVERY),
    (
        "exact Gram, floor ~0, noisy gradients",
        {"solver_options": {"floor_scale": 1e-6}},
        frozenset({"gram"}),
    ),
    (
        "exact Gram, floor 0.03 (best of 1e-4..0.1), noisy gradients",
        {"solver_options": {"floor_scale": 0.03}},
        frozenset({"gram"}),
    ),
    ("intercept_scaling=300 (auto: the bound, ~1000)", {"intercept_scaling": 300.0}, frozenset()),
    ("epsilon=inf (10 steps, no clip, floor 1e-8)", {"epsilon": float("inf")}, frozenset()),
]


def exact_outputs(kinds, labels):
    """A ``substitute`` that gives the exact value of the releases named in ``kinds``."""

    def substitute(release):
        name = release.label or ""
        if "labels" in kinds and release.mechanism == "thresholded_laplace":
            return labels, release.value
        if "bound" in kinds and release.mechanism == "exponential":
            return int(np.argmax(np.asarray(release.value)))
        if "gram" in kinds and name.startswith(("gram", "hessian")):
            return release.value
        if "gradients" in kinds and name.startswith("clipped gradient"):
            return release.value
        return release.output

    return substitute


def fit_score(params, kinds, epsilon, seed, X, y):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=seed
    )
    params = {"epsilon": epsilon, **params}
    model = DPLogisticRegression(random_state=seed, **params)
    substitute = exact_outputs(kinds, np.unique(y_train)) if kinds else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with trace_releases(substitute=substitute):
            model.fit(X_train, y_train)
    return model.score(X_test, y_test)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=60)
    parser.add_argument("--epsilons", nargs="*", type=float, default=[1.0, 2.0])
    parser.add_argument("--output", default=None, help="report path")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    limit_threads(args.threads)
    X, y = load_breast_cancer(return_X_y=True)
    start = time.perf_counter()
    rows = []
    for name, params, kinds in CONFIGS:
        row = [name]
        for epsilon in args.epsilons:
            scores = [fit_score(params, kinds, epsilon, s, X, y) for s in range(args.seeds)]
            row.append(f"{median(scores):.3f} (min {min(scores):.3f})")
        rows.append(row)
        print(" | ".join(row), file=sys.stderr, flush=True)
    command = "PYTHONPATH=. python benchmarks/bench_release_profile.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    headers = ["breast cancer as loaded"] + [f"eps={fmt_eps(e)}" for e in args.epsilons]
    text = "\n".join(
        [
            "# Where the defaults lose: releases made exact one at a time",
            "",
            f"`{command.strip()}`: median test accuracy (and the worst) over {args.seeds} "
            "stratified 70/30 splits, `DPLogisticRegression` at its defaults unless the row says.",
            "",
            md_table(headers, rows),
            "",
            f"{time.perf_counter() - start:.0f} s; {environment()}",
            "",
        ]
    )
    print(text)
    out = Path(args.output or Path(__file__).parent / "results" / "release_profile.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


if __name__ == "__main__":
    main()
