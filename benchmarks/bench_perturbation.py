"""Benchmark the classic baselines (objective and output perturbation) beside dp_gd and dp_sgd.

On scikit-learn's breast cancer data with the public-range preprocessing of
``benchmarks/_datasets.py`` (each feature mapped to [-0.5, 0.5] with the
Min/Max table of ``load_breast_cancer().DESCR``; ``data_norm = 0.5 *
sqrt(30)``), reports the median test accuracy over seeds at each epsilon, for

* ``delta = 1e-5``: objective_perturbation, output_perturbation (Gaussian
  variants), dp_gd, dp_sgd;
* ``delta = 0`` (pure epsilon-DP): objective_perturbation, output_perturbation
  (L2 Laplace, or Gamma-norm, noise); dp_gd and dp_sgd cannot give pure DP;

beside non-private scikit-learn ``LogisticRegression()`` on the same split.
Every DP estimator uses its defaults (C=1), plus the two perturbation solvers
at a stronger fixed penalty C=0.1 (chosen a priori, not tuned on the data):
their noise scales with C, so this shows the bias/noise trade-off that a user
of these baselines must choose.

Usage::

    python benchmarks/bench_perturbation.py            # 20 seeds, about a minute
    python benchmarks/bench_perturbation.py --seeds 5  # quicker

Writes ``benchmarks/results/perturbation.md`` and
``benchmarks/results/perturbation_accuracy_vs_epsilon.png``.
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path

import numpy as np
import sklearn
from sklearn.linear_model import LogisticRegression
from threadpoolctl import threadpool_limits

import sklearn_dp
from sklearn_dp import DPLogisticRegression
from sklearn_dp.accounting import epsilon_of_event

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import log, md_table
from _datasets import load_dataset

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTAS = (1e-5, 0.0)
DEFAULT_SEEDS = 20
RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: (label, solver, extra estimator parameters); every other parameter is the default.
METHODS = [
    ("objective_perturbation", "objective_perturbation", {}),
    ("output_perturbation", "output_perturbation", {}),
    ("objective_perturbation C=0.1", "objective_perturbation", {"C": 0.1}),
    ("output_perturbation C=0.1", "output_perturbation", {"C": 0.1}),
    ("dp_gd", "dp_gd", {}),
    ("dp_sgd", "dp_sgd", {}),
]
PURE_CAPABLE = {"objective_perturbation", "output_perturbation"}


def summary(values):
    values = np.asarray(values, dtype=float)
    if values.size == 0 or np.all(np.isnan(values)):
        return "n/a"
    q1, med, q3 = np.nanpercentile(values, [25, 50, 75])
    return f"{med:.3f} ({q1:.2f}-{q3:.2f})"


def run(seeds, log):
    dataset = load_dataset("breast_cancer")
    accuracy = defaultdict(list)  # (label, delta, epsilon) -> [acc]
    fit_seconds = defaultdict(list)  # (label, delta) -> [s] at epsilon=1
    checks = []  # (label, delta, epsilon, claimed, recomputed)
    sk_accuracy, sk_seconds = [], []
    errors = {}
    # Warm-up (not measured): imports, BLAS threads, first-call overheads.
    X_train, _, y_train, _ = dataset.split(seeds[0])
    LogisticRegression().fit(X_train, y_train)
    for _, solver, params in METHODS:
        DPLogisticRegression(
            epsilon=1.0,
            solver=solver,
            data_norm=dataset.data_norm,
            classes=[0, 1],
            random_state=0,
            **params,
        ).fit(X_train, y_train)
    for i, seed in enumerate(seeds):
        t_seed = time.perf_counter()
        X_train, X_test, y_train, y_test = dataset.split(seed)
        start = time.perf_counter()
        sk = LogisticRegression().fit(X_train, y_train)
        sk_seconds.append(time.perf_counter() - start)
        sk_accuracy.append(sk.score(X_test, y_test))
        for label, solver, params in METHODS:
            for delta in DELTAS:
                if delta == 0 and solver not in PURE_CAPABLE:
                    continue
                for epsilon in EPSILONS:
                    model = DPLogisticRegression(
                        epsilon=epsilon,
                        delta=delta,
                        solver=solver,
                        data_norm=dataset.data_norm,
                        classes=[0, 1],
                        random_state=seed,
                        **params,
                    )
                    try:
                        start = time.perf_counter()
                        model.fit(X_train, y_train)
                        seconds = time.perf_counter() - start
                    except Exception as exc:  # report, keep going
                        errors.setdefault(label, f"{type(exc).__name__}: {exc}")
                        accuracy[label, delta, epsilon].append(math.nan)
                        continue
                    accuracy[label, delta, epsilon].append(model.score(X_test, y_test))
                    if epsilon == 1.0:
                        fit_seconds[label, delta].append(seconds)
                    if i == 0:
                        checks.append(
                            (
                                label,
                                delta,
                                epsilon,
                                model.privacy_spent_[0],
                                epsilon_of_event(model.dp_event_, delta),
                            )
                        )
        log(f"  seed {seed} ({i + 1}/{len(seeds)}) in {time.perf_counter() - t_seed:.1f} s")
    return dict(
        dataset=dataset,
        accuracy=accuracy,
        fit_seconds=fit_seconds,
        checks=checks,
        sk_accuracy=sk_accuracy,
        sk_seconds=sk_seconds,
        errors=errors,
        n_train=X_train.shape[0],
        n_test=X_test.shape[0],
    )


def report(res, seeds, command, wall):
    dataset = res["dataset"]
    out = [
        "# Classic baselines: objective and output perturbation",
        "",
        f"Command: `{command}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; whole run {wall:.1f} s wall time.",
        "",
        f"Environment: Python {platform.python_version()}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, dp-accounting {version('dp-accounting')}, "
        f"sklearn_dp {sklearn_dp.__version__}.",
        "",
        f"## {dataset.title}",
        "",
        f"{len(seeds)} seeds ({seeds[0]}..{seeds[-1]}); n_train={res['n_train']}, "
        f"n_test={res['n_test']}; `data_norm={dataset.data_norm:.4g}`.",
        "",
        "Assumed public:",
    ]
    out += [f"- {p}" for p in dataset.public]
    out += [
        "",
        "Estimators: `DPLogisticRegression(epsilon, delta, solver=..., data_norm=..., "
        "classes=[0, 1], random_state=seed)`, every other parameter at its default (C=1), and "
        "the perturbation solvers also at a fixed C=0.1 (chosen before the run, not tuned). "
        "The perturbation solvers penalise the intercept too (strong convexity). "
        "Non-private reference: scikit-learn `LogisticRegression()` (lbfgs, C=1) on the same "
        "features and split.",
        "",
    ]
    sk_cell = summary(res["sk_accuracy"])
    for delta in DELTAS:
        labels = [label for label, solver, _ in METHODS if delta > 0 or solver in PURE_CAPABLE]
        rows = [
            [f"{eps:g}"]
            + [summary(res["accuracy"][label, delta, eps]) for label in labels]
            + [sk_cell]
            for eps in EPSILONS
        ]
        title = "pure epsilon-DP (delta = 0)" if delta == 0 else f"delta = {delta:g}"
        out += [f"### Test accuracy, {title}: median over seeds (interquartile range)", ""]
        out.append(md_table(["epsilon"] + labels + ["sklearn (non-private)"], rows))
        out.append("")
    rows = [["sklearn lbfgs", f"{np.median(res['sk_seconds']) * 1e3:.1f} ms", "1.00"]]
    sk_median = np.median(res["sk_seconds"])
    for (label, delta), seconds in res["fit_seconds"].items():
        rows.append(
            [
                f"{label} (delta={delta:g})",
                f"{np.median(seconds) * 1e3:.1f} ms",
                f"{np.median(seconds) / sk_median:.2f}",
            ]
        )
    out += [
        "### Fit time at epsilon = 1 (median over seeds, whole `fit`, after a warm-up; "
        "the first fit of a new (epsilon, delta) also pays its noise calibration, cached "
        "afterwards; all fits single-threaded on a shared 2-core machine)",
        "",
        md_table(["method", "fit time", "ratio to lbfgs"], rows),
        "",
    ]
    worst = max(rec - claimed for _, _, _, claimed, rec in res["checks"])
    out += [
        "### Accounting check",
        "",
        f"Every fit of seed {seeds[0]}: `epsilon_of_event(dp_event_, delta)` minus the claimed "
        f"epsilon is at most {worst:.3g} (must be <= 0). Pure fits record "
        "`PureEpsilonDpEvent(epsilon, solver)` and recompute to exactly epsilon.",
        "",
    ]
    for label, message in res["errors"].items():
        out.append(f"- **{label} failed**: `{message}`")
    return "\n".join(out)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), sharey=True)
    for ax, delta in zip(axes, DELTAS):
        for label, solver, _ in METHODS:
            if delta == 0 and solver not in PURE_CAPABLE:
                continue
            values = [res["accuracy"][label, delta, eps] for eps in EPSILONS]
            med = [np.nanmedian(v) for v in values]
            q1 = [np.nanpercentile(v, 25) for v in values]
            q3 = [np.nanpercentile(v, 75) for v in values]
            style = "--" if "C=0.1" in label else "-"
            (line,) = ax.plot(EPSILONS, med, style, marker="o", label=label)
            ax.fill_between(EPSILONS, q1, q3, alpha=0.12, color=line.get_color())
        ax.axhline(
            np.median(res["sk_accuracy"]), color="k", linestyle=":", label="sklearn (non-private)"
        )
        ax.set_xscale("log")
        ax.set_xticks(EPSILONS)
        ax.set_xticklabels([f"{e:g}" for e in EPSILONS])
        ax.minorticks_off()
        ax.set_xlabel("epsilon")
        ax.set_title(
            "pure epsilon-DP (delta = 0)" if delta == 0 else f"delta = {delta:g}", fontsize=10
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    axes[0].set_ylabel("median test accuracy (band: IQR)")
    fig.suptitle(f"{res['dataset'].title}: classic baselines vs dp_gd / dp_sgd", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    seeds = list(range(args.seeds))

    start = time.perf_counter()
    # Single-threaded fits: on a shared machine, scikit-learn's OpenMP loss and
    # BLAS threads make tiny fits 10x slower and their timings meaningless.
    with warnings.catch_warnings(record=True) as caught, threadpool_limits(1):
        warnings.simplefilter("always")
        res = run(seeds, log)
    wall = time.perf_counter() - start
    command = " ".join(
        ["python benchmarks/bench_perturbation.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    text = report(res, seeds, command, wall)
    messages = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    if messages:
        text += "\n## Warnings raised during the run\n\n" + "\n".join(f"- {m}" for m in messages)
    print(text)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "perturbation.md").write_text(text + "\n")
    plot(res, args.output_dir / "perturbation_accuracy_vs_epsilon.png")
    log(f"Wrote {args.output_dir / 'perturbation.md'} and the PNG ({wall:.1f} s).")
    return res


if __name__ == "__main__":
    main()
