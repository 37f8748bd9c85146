"""How objective_perturbation's ``epsilon_split`` trades regularisation for noise.

Objective perturbation spends ``epsilon_split * epsilon`` on the Jacobian
determinant (which sets the extra L2 regularisation ``c R^2 / (exp(split *
epsilon) - 1)``) and the rest on the noise.  This script measured the default
(0.2) on SYNTHETIC problems only, so that the default is not chosen on the
benchmark data (breast cancer): median over seeds of test accuracy and log
loss (classification) or R^2 (regression) at epsilon=1.

Usage::

    python benchmarks/bench_perturbation_split.py          # about a minute

Writes ``benchmarks/results/perturbation_split.md``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits

from sklearn_dp import DPLogisticRegression, DPSCORegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, write_report

SPLITS = (0.05, 0.1, 0.2, 0.35, 0.5)
EPSILON = 1.0
SEEDS = range(20)


def scaled(X):
    # Features of make_* are on a unit scale by construction; /8 and clipping to
    # [-0.5, 0.5] use only that, so data_norm = 0.5 sqrt(d) is a public bound.
    return np.clip(X / 8.0, -0.5, 0.5)


def problems():
    X, y = make_classification(
        n_samples=1000, n_features=10, n_informative=5, class_sep=2.0, random_state=2
    )
    yield "classification d=10, separable", scaled(X), y, "clf"
    X, y = make_classification(n_samples=600, n_features=30, n_informative=10, random_state=1)
    yield "classification d=30, noisy", scaled(X), y, "clf"
    X, y = make_regression(n_samples=1000, n_features=10, noise=10, random_state=0)
    yield "regression d=10", scaled(X), y / 200.0, "reg"


def main():
    start = time.perf_counter()
    lines = [
        "# objective_perturbation: choice of `epsilon_split`",
        "",
        "Command: `python benchmarks/bench_perturbation_split.py`",
        "",
        f"epsilon={EPSILON:g}, {len(SEEDS)} seeds (80/20 splits), all fits single-threaded. "
        "Cells: median test accuracy / median log loss (classification) or median R^2 "
        "(regression, `y_bound=1`). Synthetic data only.",
        "",
    ]
    header = (
        "| problem | delta | non-private | " + " | ".join(f"split={s:g}" for s in SPLITS) + " |"
    )
    lines += [header, "|" + "---|" * (3 + len(SPLITS))]
    warnings.simplefilter("ignore", UserWarning)
    with threadpool_limits(1):
        for name, X, y, kind in problems():
            data_norm = 0.5 * math.sqrt(X.shape[1])
            for delta in (1e-5, 0.0):
                cells = []
                for split in SPLITS:
                    scores, losses = [], []
                    for seed in SEEDS:
                        Xtr, Xte, ytr, yte = train_test_split(
                            X, y, test_size=0.2, random_state=seed
                        )
                        options = dict(epsilon_split=split)
                        if kind == "clf":
                            model = DPLogisticRegression(
                                epsilon=EPSILON,
                                delta=delta,
                                solver="objective_perturbation",
                                data_norm=data_norm,
                                classes=[0, 1],
                                random_state=seed,
                                solver_options=options,
                            ).fit(Xtr, ytr)
                            losses.append(log_loss(yte, model.predict_proba(Xte)))
                        else:
                            model = DPSCORegressor(
                                epsilon=EPSILON,
                                delta=delta,
                                solver="objective_perturbation",
                                data_norm=data_norm,
                                y_bound=1.0,
                                random_state=seed,
                                solver_options=options,
                            ).fit(Xtr, ytr)
                        scores.append(model.score(Xte, yte))
                    cell = f"{np.median(scores):.3f}"
                    if losses:
                        cell += f" / {np.median(losses):.3f}"
                    cells.append(cell)
                Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
                reference = LogisticRegression() if kind == "clf" else Ridge(alpha=1e-4)
                reference_score = reference.fit(Xtr, ytr).score(Xte, yte)
                lines.append(
                    f"| {name} | {delta:g} | {reference_score:.3f} | " + " | ".join(cells) + " |"
                )
                print(lines[-1], file=sys.stderr, flush=True)
    lines += ["", f"Whole run {time.perf_counter() - start:.1f} s."]
    text = "\n".join(lines) + "\n"
    print(text)
    write_report(RESULTS_DIR / "perturbation_split.md", text)


if __name__ == "__main__":
    # No options; --help describes the run instead of starting it.
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    main()
