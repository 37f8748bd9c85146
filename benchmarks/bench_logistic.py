"""Benchmark DPLogisticRegression against non-private scikit-learn.

Measures, per data set, solver and epsilon, the median test accuracy over
seeds, beside scikit-learn's ``LogisticRegression()`` (lbfgs, C=1.0) on the
same preprocessing and the same split; and, at epsilon=1, each solver's fit
time as a ratio to lbfgs's fit time measured in the same run on the same data.

Usage::

    python benchmarks/bench_logistic.py              # full run (a few minutes)
    python benchmarks/bench_logistic.py --quick      # smoke test
    python benchmarks/bench_logistic.py --datasets breast_cancer --seeds 20

Writes ``benchmarks/results/logistic.md`` and
``benchmarks/results/logistic_accuracy_vs_epsilon.png`` (``--quick`` writes
``logistic_quick.*`` instead, so a smoke test never overwrites a full run).

To benchmark another solver, add its name to ``SOLVERS_TO_BENCH`` (and, if it
needs them, estimator keyword arguments to ``SOLVER_PARAMS``).  Names that are
not registered in ``sklearn_dp.solvers.SOLVERS`` are skipped with a note.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from sklearn_dp import DPLogisticRegression, accounting
from sklearn_dp.solvers import SOLVERS, plan_call

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    add_threads_argument,
    environment,
    fmt_median_iqr,
    limit_threads,
    log,
    md_table,
    median,
    quartiles,
)
from _datasets import DATASETS, load_dataset

# --------------------------------------------------------------------------
# What is benchmarked (edit these lists to extend the benchmark)
# --------------------------------------------------------------------------

#: Solvers to run, in table order; unregistered names are skipped.
SOLVERS_TO_BENCH = ["dp_gd", "dp_sgd", "objective_perturbation", "output_perturbation"]

#: Extra DPLogisticRegression keyword arguments per solver (public settings only).
SOLVER_PARAMS: dict[str, dict] = {}

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
QUICK_EPSILONS = (0.5, 1.0, 5.0)
DELTA = 1e-5
TIMING_EPSILON = 1.0
DEFAULT_SEEDS = 10
QUICK_SEEDS = 2

#: Foundation targets: (data set, threshold).
ACCURACY_TARGET = ("breast_cancer", 0.93)  # median test accuracy at epsilon=1
TIME_TARGET = ("synthetic_100k", 2.0)  # fit time / lbfgs fit time at epsilon=1

RESULTS_DIR = Path(__file__).resolve().parent / "results"


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def clear_calibration_caches():
    """Forget cached noise calibrations, so the next fit pays for its own."""
    accounting.gaussian_noise_multiplier.cache_clear()
    accounting.subsampled_gaussian_noise_multiplier.cache_clear()


def solver_delta(name):
    """delta for a solver: DELTA, or 0 for a solver that only gives pure epsilon-DP."""
    return DELTA if SOLVERS[name].approximate_dp else 0.0


def make_dp(name, epsilon, data_norm, seed):
    return DPLogisticRegression(
        epsilon=epsilon,
        delta=solver_delta(name),
        solver=name,
        data_norm=data_norm,
        classes=[0, 1],
        random_state=seed,
        **SOLVER_PARAMS.get(name, {}),
    )


def timed_fit(estimator, X, y):
    start = time.perf_counter()
    estimator.fit(X, y)
    return time.perf_counter() - start


def calibration_seconds(name, n_samples, n_params, epsilon):
    """(seconds, plan) of the noise calibration of one fit, caches cleared.

    For dp_gd and dp_sgd this times the accounting function itself with the
    plan's settings; for other solvers it times the solver's ``plan`` (which
    contains its calibration).
    """
    spec = SOLVERS[name]
    delta = solver_delta(name)
    # Settings from SOLVER_PARAMS that are options of the solver (max_iter, batch_size, ...).
    options = {k: v for k, v in SOLVER_PARAMS.get(name, {}).items() if k in spec.options}
    plan = plan_call(name, n_samples, n_params, epsilon, delta, **options)
    clear_calibration_caches()
    start = time.perf_counter()
    if name == "dp_gd":
        accounting.gaussian_noise_multiplier(epsilon, delta, plan.n_steps)
    elif name == "dp_sgd":
        accounting.subsampled_gaussian_noise_multiplier(
            epsilon, delta, plan.details["sampling_probability"], plan.n_steps
        )
    else:
        plan_call(name, n_samples, n_params, epsilon, delta, **options)
    seconds = time.perf_counter() - start
    clear_calibration_caches()
    return seconds, plan


def fmt_acc(values):
    return fmt_median_iqr(values, 3, missing="error")


def fmt_seconds(s):
    if math.isnan(s):
        return "n/a"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


# --------------------------------------------------------------------------
# One data set
# --------------------------------------------------------------------------


def run_dataset(dataset, solvers, epsilons, seeds, log):
    """Fit everything on every seed; return a dict of raw results."""
    accuracy = defaultdict(lambda: defaultdict(list))  # solver -> epsilon -> [acc]
    sk_accuracy, sk_time = [], []
    time_warm = defaultdict(list)  # solver -> [s], calibration cached
    time_cold = defaultdict(list)  # solver -> [s], calibration caches cleared first
    ratio_warm = defaultdict(list)  # solver -> [fit time / lbfgs time of the same seed]
    ratio_cold = defaultdict(list)
    errors = {}
    timing_eps = TIMING_EPSILON if TIMING_EPSILON in epsilons else None

    # Warm-up (not measured): imports, BLAS threads, first-call overheads.
    X_train, X_test, y_train, y_test = dataset.split(seeds[0])
    LogisticRegression().fit(X_train, y_train)
    active = []
    for name in solvers:
        try:
            make_dp(name, 1.0, dataset.data_norm, seeds[0]).fit(X_train, y_train)
            active.append(name)
        except Exception as exc:  # report and keep benchmarking the others
            errors[name] = f"{type(exc).__name__}: {exc}"
            log(f"  {name}: skipped, warm-up fit failed: {errors[name]}")
            traceback.print_exc(file=sys.stderr)

    # The timing epsilon goes first, so that lbfgs and every solver's timed fits
    # run back to back: the per-seed ratios then compare fits made under the
    # same machine load, and their median is robust to load that drifts.
    ordered = ([timing_eps] if timing_eps is not None else []) + [
        e for e in epsilons if e != timing_eps
    ]
    for i, seed in enumerate(seeds):
        t_seed = time.perf_counter()
        X_train, X_test, y_train, y_test = dataset.split(seed)
        sk = LogisticRegression()
        sk_seconds = timed_fit(sk, X_train, y_train)
        sk_time.append(sk_seconds)
        sk_accuracy.append(sk.score(X_test, y_test))
        for eps in ordered:
            for name in active:
                model = make_dp(name, eps, dataset.data_norm, seed)
                try:
                    if eps == timing_eps:
                        clear_calibration_caches()
                        cold = timed_fit(model, X_train, y_train)
                        # Same fit again with the calibration cached: the cost
                        # of a repeated fit (grid search, cross-validation).
                        again = make_dp(name, eps, dataset.data_norm, seed)
                        warm = timed_fit(again, X_train, y_train)
                        time_cold[name].append(cold)
                        time_warm[name].append(warm)
                        ratio_cold[name].append(cold / sk_seconds)
                        ratio_warm[name].append(warm / sk_seconds)
                    else:
                        model.fit(X_train, y_train)
                    accuracy[name][eps].append(model.score(X_test, y_test))
                except Exception as exc:
                    errors.setdefault(name, f"{type(exc).__name__}: {exc}")
                    accuracy[name][eps].append(math.nan)
        log(f"  seed {seed} ({i + 1}/{len(seeds)}) done in {time.perf_counter() - t_seed:.1f} s")

    n_train = X_train.shape[0]
    n_params = X_train.shape[1] + 1  # coefficients + intercept (binary)
    calibration = {
        name: {eps: calibration_seconds(name, n_train, n_params, eps) for eps in epsilons}
        for name in active
    }
    return dict(
        accuracy=accuracy,
        sk_accuracy=sk_accuracy,
        sk_time=sk_time,
        time_warm=time_warm,
        time_cold=time_cold,
        ratio_warm=ratio_warm,
        ratio_cold=ratio_cold,
        calibration=calibration,
        errors=errors,
        active=active,
        n_train=n_train,
        n_test=X_test.shape[0],
        timing_eps=timing_eps,
    )


def report_dataset(dataset, res, epsilons, seeds):
    """Markdown section for one data set."""
    out = [f"## {dataset.title}", ""]
    out.append(
        f"{len(seeds)} seeds ({seeds[0]}..{seeds[-1]}); n_train={res['n_train']}, "
        f"n_test={res['n_test']}; delta={DELTA:g}; `data_norm={dataset.data_norm:.4g}`."
    )
    out.append("")
    out.append("Assumed public:")
    out += [f"- {p}" for p in dataset.public]
    norms = np.linalg.norm(dataset.X, axis=1)
    clipped = float(np.mean(norms > dataset.data_norm * (1 + 1e-12)))
    out.append(
        f"- Diagnostic only (read from the data, used by no fit): {clipped:.1%} of rows are "
        f"longer than `data_norm` and get clipped by the DP estimators."
    )
    out.append("")

    active = res["active"]
    headers = ["epsilon"] + active + ["sklearn lbfgs (non-private)"]
    sk_cell = fmt_acc(res["sk_accuracy"])
    rows = []
    for eps in epsilons:
        rows.append([f"{eps:g}"] + [fmt_acc(res["accuracy"][n][eps]) for n in active] + [sk_cell])
    out.append("Test accuracy: median over seeds (interquartile range).")
    out.append("")
    out.append(md_table(headers, rows))
    out.append("")

    if res["timing_eps"] is not None:
        sk_median = median(res["sk_time"])
        rows = [["sklearn lbfgs", fmt_seconds(sk_median), "1.00", "", ""]]
        for name in active:
            rows.append(
                [
                    name,
                    fmt_seconds(median(res["time_warm"][name])),
                    f"{median(res['ratio_warm'][name]):.2f}",
                    fmt_seconds(median(res["time_cold"][name])),
                    f"{median(res['ratio_cold'][name]):.2f}",
                ]
            )
        out.append(
            f"Fit time at epsilon={res['timing_eps']:g}, `time.perf_counter`, after one warm-up "
            "fit: median seconds over seeds, and the median over seeds of the ratio to the lbfgs "
            "fit of the same seed (timed just before, on the same split). *cached*: noise "
            "calibration already in the lru cache (a repeated fit with the same public settings, "
            "e.g. in a grid search); *cold*: calibration caches cleared right before the fit, so "
            "it is included."
        )
        out.append("")
        out.append(
            md_table(
                ["method", "fit (cached)", "ratio to lbfgs", "fit (cold)", "ratio to lbfgs"], rows
            )
        )
        out.append("")

    rows = []
    for name in active:
        for eps in epsilons:
            seconds, plan = res["calibration"][name][eps]
            rate = plan.details.get("sampling_probability")
            rows.append(
                [
                    name,
                    f"{eps:g}",
                    str(plan.n_steps),
                    "1" if rate is None else f"{rate:.4g}",
                    f"{plan.noise_multiplier:.4g}",
                    fmt_seconds(seconds),
                ]
            )
    if rows:
        out.append(
            "Noise calibration alone (`accounting.gaussian_noise_multiplier` for dp_gd, "
            "`accounting.subsampled_gaussian_noise_multiplier` for dp_sgd, the solver's `plan` "
            "otherwise), caches cleared, at the settings the fits used:"
        )
        out.append("")
        out.append(
            md_table(
                ["solver", "epsilon", "steps", "sampling rate", "noise multiplier", "time"], rows
            )
        )
        out.append("")
    for name, message in res["errors"].items():
        out.append(f"- **{name} failed**: `{message}`")
    if res["errors"]:
        out.append("")
    return "\n".join(out)


def targets_section(results):
    out = ["## Foundation targets", ""]
    name, threshold = ACCURACY_TARGET
    res = results.get(name)
    if res is None or TIMING_EPSILON not in res["epsilons"]:
        out.append(f"- Accuracy on {name} at epsilon=1 >= {threshold}: not measured in this run.")
    else:
        for solver in res["active"]:
            acc = median(res["accuracy"][solver][TIMING_EPSILON])
            verdict = "MET" if acc >= threshold else "NOT MET"
            out.append(
                f"- Accuracy on {name} at epsilon=1 >= {threshold}, {solver}: "
                f"{acc:.3f} -> **{verdict}**"
            )
    name, threshold = TIME_TARGET
    res = results.get(name)
    if res is None or res["timing_eps"] is None:
        out.append(f"- Fit time on {name} <= {threshold:g}x lbfgs: not measured in this run.")
    else:
        for solver in res["active"]:
            warm = median(res["ratio_warm"][solver])
            cold = median(res["ratio_cold"][solver])
            if cold <= threshold:
                verdict = "MET (even with calibration included)"
            elif warm <= threshold:
                verdict = "MET only with cached calibration"
            else:
                verdict = "NOT MET"
            out.append(
                f"- Fit time on {name} at epsilon=1 <= {threshold:g}x lbfgs, {solver}: "
                f"{warm:.2f}x cached, {cold:.2f}x cold -> **{verdict}**"
            )
    out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------
# Plot
# --------------------------------------------------------------------------


def plot(results, datasets, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(1, len(datasets), figsize=(5.5 * len(datasets), 4.2), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        res = results[dataset.name]
        eps = res["epsilons"]
        for name in res["active"]:
            meds = [median(res["accuracy"][name][e]) for e in eps]
            q = [quartiles(res["accuracy"][name][e]) for e in eps]
            (line,) = ax.plot(eps, meds, marker="o", label=name)
            ax.fill_between(
                eps, [a for a, _ in q], [b for _, b in q], alpha=0.15, color=line.get_color()
            )
        ax.axhline(
            median(res["sk_accuracy"]),
            color="k",
            linestyle="--",
            label="sklearn lbfgs (non-private)",
        )
        ax.set_xscale("log")
        ax.set_xticks(eps)
        ax.set_xticklabels([f"{e:g}" for e in eps])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel(f"epsilon (delta={DELTA:g})")
        ax.set_ylabel("median test accuracy")
        ax.set_title(
            f"{dataset.title}\n{len(res['seeds'])} seeds, band = interquartile range", fontsize=9
        )
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help=f"seeds per data set (default {DEFAULT_SEEDS}; {QUICK_SEEDS} with --quick)",
    )
    parser.add_argument(
        "--large-seeds",
        type=int,
        default=None,
        help="seeds for synthetic_100k only (default: same as --seeds)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: {QUICK_SEEDS} seeds, epsilon in {QUICK_EPSILONS}",
    )
    parser.add_argument(
        "--datasets",
        nargs="+",
        choices=sorted(DATASETS),
        default=list(DATASETS),
        help="data sets to run (default: all)",
    )
    parser.add_argument(
        "--solvers",
        nargs="+",
        default=SOLVERS_TO_BENCH,
        help="solvers to run (default: %(default)s; unregistered ones are skipped)",
    )
    add_threads_argument(parser)
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where to write the Markdown table and the plot",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    load_start = os.getloadavg()[0]
    n_seeds = args.seeds or (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
    epsilons = QUICK_EPSILONS if args.quick else EPSILONS
    suffix = "_quick" if args.quick else ""

    solvers = [s for s in args.solvers if s in SOLVERS]
    skipped = [s for s in args.solvers if s not in SOLVERS]
    if skipped:
        log(f"Not registered in sklearn_dp.solvers.SOLVERS, skipped: {', '.join(skipped)}")

    limit_threads(args.threads)

    results, datasets = {}, []
    caught_warnings = Counter()
    for name in args.datasets:
        dataset = load_dataset(name)
        datasets.append(dataset)
        k = args.large_seeds if (name == "synthetic_100k" and args.large_seeds) else n_seeds
        seeds = list(range(k))
        log(f"{dataset.title}: {len(solvers)} solvers x {len(epsilons)} epsilons x {k} seeds")
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = run_dataset(dataset, solvers, epsilons, seeds, log)
        for w in caught:
            caught_warnings[(name, w.category.__name__, str(w.message))] += 1
        res.update(epsilons=list(epsilons), seeds=seeds, seconds=time.perf_counter() - t0)
        results[name] = res
        log(f"{dataset.title}: done in {res['seconds']:.1f} s")

    wall = time.perf_counter() - start
    load_end = os.getloadavg()[0]
    command = " ".join(
        ["python benchmarks/bench_logistic.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    parts = [
        "# DPLogisticRegression vs scikit-learn",
        "",
        f"Command: `{command}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; whole run {wall:.1f} s wall time.",
        "",
        f"Environment: {environment()}",
        "",
        f"Load average (1 min) at start {load_start:.2f}, at end {load_end:.2f}; fit times are "
        "only comparable between runs on an otherwise idle machine (the ratios, paired per "
        "seed, are more robust than the absolute times).",
        "",
        "Estimators: `DPLogisticRegression(epsilon, delta=1e-05, solver=..., data_norm=..., "
        "classes=[0, 1], random_state=seed)` with every other parameter at its default; "
        "scikit-learn `LogisticRegression()` (lbfgs, C=1.0) on the same preprocessed features "
        "and the same split. The DP fits are (epsilon, delta)-DP for the training rows; the "
        "sklearn line is not private.",
        "",
    ]
    if skipped:
        parts += [f"Solvers not registered, skipped: {', '.join(skipped)}.", ""]
    for dataset in datasets:
        parts.append(
            report_dataset(dataset, results[dataset.name], epsilons, results[dataset.name]["seeds"])
        )
    parts.append(targets_section(results))
    if caught_warnings:
        parts += ["## Warnings raised during the run", ""]
        for (name, category, message), count in caught_warnings.items():
            parts.append(f"- {name}: {category} x{count}: {message}")
        parts.append("")
    text = "\n".join(parts)
    print(text)

    args.output_dir.mkdir(parents=True, exist_ok=True)
    md_path = args.output_dir / f"logistic{suffix}.md"
    png_path = args.output_dir / f"logistic{suffix}_accuracy_vs_epsilon.png"
    md_path.write_text(text)
    plot(results, datasets, png_path)
    log(f"Wrote {md_path} and {png_path} (whole run {wall:.1f} s).")
    return results


if __name__ == "__main__":
    main()
