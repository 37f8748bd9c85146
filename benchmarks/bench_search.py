"""Benchmark the private hyper-parameter search against the default and non-private search.

Per data set and seed (a stratified 80/20 split), on the same features:

* ``DPGridSearchCV(DPLogisticRegression(...), GRID, epsilon=E, delta=1e-5)``
  (``--epsilon``, default 1): private selection and a refit of the selected
  candidate, the whole search (E, delta=1e-5)-DP;
* the same search without a refit (the selected run's model; all of
  epsilon E on the selection);
* the default estimator ``DPLogisticRegression(epsilon=E)``: the same total
  spend with no tuning (and at E / 2, for reference);
* non-private ``GridSearchCV(LogisticRegression(), GRID, cv=5)`` on the same
  grid.

Test accuracy is the median (and interquartile range) over seeds.  Every
search's recorded selection event is recomputed with dp_accounting's RDP
accountant and checked against its claim.  Targets: the search reaches at
least the default estimator's accuracy at the same total epsilon, and is
within 2 points of non-private GridSearchCV.

Usage::

    python benchmarks/bench_search.py                 # 4 data sets, 10 seeds (a few minutes)
    python benchmarks/bench_search.py --quick         # 2 seeds, writes results/search_quick.md
    python benchmarks/bench_search.py --datasets breast_cancer --seeds 20
    python benchmarks/bench_search.py --epsilon 2      # the whole search at epsilon 2

Writes ``benchmarks/results/search.md``.  Only data sets bundled with
scikit-learn (no download); features are scaled with documented ranges only
(``_datasets.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, ParameterGrid

import sklearn_dp
from sklearn_dp import DPLogisticRegression
from sklearn_dp.accounting import epsilon_of_event
from sklearn_dp.model_selection import DPGridSearchCV
from sklearn_dp.model_selection._selection import rdp_epsilon

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_median_iqr, md_table
from _datasets import load_dataset

#: The grid searched, privately and not: the penalty and the number of steps
#: of the default solver (dp_newton: 5 steps by default), 3 x 3.
GRID = {"C": [0.1, 1.0, 10.0], "max_iter": [3, 5, 10]}
#: The candidate of GRID that the estimator fits as given (C=1, dp_newton's 5 steps).
DEFAULT_CANDIDATE = {"C": 1.0, "max_iter": 5}
#: The grid with a grossly bad candidate added: does the selection avoid it?
BAD_C = 0.001
GRID_WITH_BAD = {"C": [BAD_C] + GRID["C"], "max_iter": GRID["max_iter"]}
DATASETS = ("breast_cancer", "digits", "wine", "iris")
EPSILON = 1.0  # total of the search (selection + refit); --epsilon
DELTA = 1e-5
DEFAULT_SEEDS = 10
QUICK_SEEDS = 2
#: Options of DPGridSearchCV beyond the defaults (public settings).
SEARCH_OPTIONS: dict = {}

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def fmt(values):
    return fmt_median_iqr(values, 3)


def _mean_difference(first, second):
    """Mean of the per-seed differences and its standard error (independent noise draws)."""
    diff = np.asarray(first) - np.asarray(second)
    se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else float("nan")
    return f"{diff.mean():+.3f} ({se:.3f})"


def run_dataset(dataset, seeds, options, log, epsilon=EPSILON):
    classes = sorted(np.unique(dataset.y).tolist())
    base = dict(data_norm=dataset.data_norm, classes=classes)
    results = {
        key: []
        for key in (
            "search",
            "search_half",
            "search_norefit",
            "default",
            "default_half",
            "sklearn",
        )
    }
    picks, picks_norefit, times, checks = Counter(), Counter(), [], []
    default_kept, skipped = [], []
    bad_picks, bad_accuracy, bad_alone = [], [], []
    for seed in seeds:
        X_train, X_test, y_train, y_test = dataset.split(seed)
        start = time.perf_counter()
        search = DPGridSearchCV(
            DPLogisticRegression(**base),
            GRID,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
            **options,
        ).fit(X_train, y_train)
        times.append(time.perf_counter() - start)
        results["search"].append(search.score(X_test, y_test))
        picks[tuple(search.best_params_[k] for k in GRID)] += 1
        default_kept.append(search.best_params_ == DEFAULT_CANDIDATE)
        skipped.append(search.runs_skipped_)
        eps_sel, delta_sel = search.selection_privacy_spent_
        # Skipped runs: the selection is the pure count (the RDP accountant
        # has no epsilon at delta 0; the PLD one reads it exactly).
        recompute = epsilon_of_event if search.runs_skipped_ else rdp_epsilon
        checks.append(
            (recompute(search.selection_dp_event_, delta_sel) <= eps_sel * (1 + 1e-9))
            and search.privacy_spent_ == (epsilon, DELTA)
        )
        half = DPGridSearchCV(
            DPLogisticRegression(**base),
            GRID,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
            **{**options, "refit_fraction": 0.5},
        ).fit(X_train, y_train)
        results["search_half"].append(half.score(X_test, y_test))
        with_bad = DPGridSearchCV(
            DPLogisticRegression(**base),
            GRID_WITH_BAD,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
            **options,
        ).fit(X_train, y_train)
        bad_picks.append(with_bad.best_params_["C"] == BAD_C)
        bad_accuracy.append(with_bad.score(X_test, y_test))
        bad_model = DPLogisticRegression(
            epsilon=epsilon, delta=DELTA, C=BAD_C, random_state=seed, **base
        )
        bad_alone.append(bad_model.fit(X_train, y_train).score(X_test, y_test))
        norefit = DPGridSearchCV(
            DPLogisticRegression(**base),
            GRID,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
            **{**options, "refit": False},
        ).fit(X_train, y_train)
        results["search_norefit"].append(norefit.score(X_test, y_test))
        picks_norefit[tuple(norefit.best_params_[k] for k in GRID)] += 1
        checks.append(rdp_epsilon(norefit.selection_dp_event_, DELTA) <= epsilon * (1 + 1e-9))
        for key, eps in (("default", epsilon), ("default_half", epsilon / 2)):
            model = DPLogisticRegression(epsilon=eps, delta=DELTA, random_state=seed, **base)
            results[key].append(model.fit(X_train, y_train).score(X_test, y_test))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reference = GridSearchCV(LogisticRegression(), GRID, cv=5).fit(X_train, y_train)
        results["sklearn"].append(reference.score(X_test, y_test))
        log(
            f"  {dataset.name} seed {seed}: search {results['search'][-1]:.3f}, "
            f"default {results['default'][-1]:.3f}, sklearn {results['sklearn'][-1]:.3f} "
            f"({times[-1]:.1f} s)"
        )
    return dict(
        results=results,
        picks=picks,
        default_kept=default_kept,
        skipped=skipped,
        picks_norefit=picks_norefit,
        times=times,
        checks=checks,
        run_epsilon=search.run_epsilon_,
        bad_picks=bad_picks,
        bad_accuracy=bad_accuracy,
        bad_alone=bad_alone,
    )


def report(datasets, outcomes, seeds, options, wall, command, epsilon=EPSILON):
    lines = ["# Private hyper-parameter search vs the default estimator and non-private search", ""]
    lines += [f"Command: `{command}`", ""]
    lines += [
        f"Run on {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; whole run "
        f"{wall:.1f} s wall time; {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}).",
        "",
        f"Environment: Python {platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, sklearn_dp {sklearn_dp.__version__}; {os.cpu_count()} CPUs.",
        "",
        f"Grid (private and non-private): `{GRID}`.",
        "",
        "Methods:",
        f"- **search**: `DPGridSearchCV(DPLogisticRegression(data_norm=..., classes=...), GRID, "
        f"epsilon={epsilon:g}, delta={DELTA:g}{''.join(f', {k}={v!r}' for k, v in options.items())})`"
        " with its defaults: 90% of epsilon for the refit on all training rows; the other 10% "
        "for the selection: the validation row count (a fifth of it) and the runs (10 on "
        "average, a geometric number, 30% of the rows drawn for validation), plus one run of the "
        "default candidate (`C=1, max_iter=5`: what the estimator fits as given). The best run "
        "replaces the default only if its noisy score beats the default's by more than the best "
        "of as many runs of equal candidates would with probability 1% (`prefer_default=True`). "
        "When that margin exceeds 25% of the validation part's score range at the released "
        "validation count, no run is made and the default is refitted at the largest epsilon "
        "whose composition with the count (2% of epsilon) meets the whole under the PLD "
        "accountant, as the default composes its own count and steps (99.7% of epsilon at "
        "epsilon 1); the runs and their refit then keep 70% of delta. "
        f"The whole search is ({epsilon:g}, {DELTA:g})-DP.",
        "- **search, refit 50%**: the same with `refit_fraction=0.5` (the default is 0.9).",
        f"- **search, no refit**: the same with `refit=False` (all of epsilon {epsilon:g} on the "
        "selection; the model is the selected run's, trained on the training part).",
        f"- **default eps={epsilon:g}** (the same total spend, untuned) / "
        f"**default eps={epsilon / 2:g}**: "
        "`DPLogisticRegression(epsilon, delta=1e-5, data_norm=..., classes=...)`, every other "
        "parameter at its default (C=1, solver auto: dp_newton, 5 steps).",
        "- **sklearn GridSearchCV**: `GridSearchCV(LogisticRegression(), GRID, cv=5)`, not private.",
        "",
        "Test accuracy: median over seeds (interquartile range). The search and the default "
        "draw independent noise on the same split: their medians differ by a test row or two "
        "by chance on the small sets; the mean of the per-seed differences, with its standard "
        "error, says how far apart they are.",
        "",
    ]
    headers = [
        "data set",
        f"search eps={epsilon:g}",
        "search, refit 50%",
        "search, no refit",
        f"default eps={epsilon:g}",
        f"default eps={epsilon / 2:g}",
        "sklearn GridSearchCV",
        "target >= default (same epsilon)",
        "search - default: mean (s.e.)",
        "target within 0.02 of sklearn",
    ]
    rows = []
    for name in datasets:
        r = outcomes[name]["results"]
        med = {k: float(np.median(v)) for k, v in r.items()}
        rows.append(
            [
                name,
                fmt(r["search"]),
                fmt(r["search_half"]),
                fmt(r["search_norefit"]),
                fmt(r["default"]),
                fmt(r["default_half"]),
                fmt(r["sklearn"]),
                "MET" if med["search"] >= med["default"] else "NOT MET",
                _mean_difference(r["search"], r["default"]),
                "MET"
                if med["sklearn"] - med["search"] <= 0.02
                else f"NOT MET ({med['sklearn'] - med['search']:.3f} below)",
            ]
        )
    lines += [md_table(headers, rows), ""]
    lines += ["Candidates selected (count over seeds), search time and accounting checks:", ""]
    rows = []
    for name in datasets:
        o = outcomes[name]
        fmt_picks = lambda c: ", ".join(f"{dict(zip(GRID, k))}: {v}" for k, v in c.most_common())
        rows.append(
            [
                name,
                f"{sum(o['default_kept'])} of {len(o['default_kept'])}",
                f"{sum(o['skipped'])} of {len(o['skipped'])}",
                fmt_picks(o["picks"]),
                fmt_picks(o["picks_norefit"]),
                f"{np.median(o['times']):.2f} s",
                f"{o['run_epsilon']:.3f}",
                "all pass" if all(o["checks"]) else "FAIL",
            ]
        )
    lines += [
        md_table(
            [
                "data set",
                "default kept (search)",
                "runs skipped (search)",
                "selected (search)",
                "selected (no refit)",
                "search time (median)",
                "fit epsilon per run",
                "dp_accounting recompute <= claim",
            ],
            rows,
        ),
        "",
    ]
    lines += [
        f"Does the selection avoid a bad candidate? The same search on `GRID` with `C={BAD_C:g}` "
        f"added ({len(ParameterGrid(GRID_WITH_BAD))} candidates):",
        "",
    ]
    rows = []
    for name in datasets:
        o = outcomes[name]
        rows.append(
            [
                name,
                f"{sum(o['bad_picks'])} of {len(o['bad_picks'])}",
                fmt(o["bad_accuracy"]),
                fmt(o["bad_alone"]),
            ]
        )
    lines += [
        md_table(
            [
                "data set",
                f"selected C={BAD_C:g}",
                "search accuracy",
                f"C={BAD_C:g} alone at eps={epsilon:g}",
            ],
            rows,
        ),
        "",
    ]
    lines += ["Data sets and what is assumed public:", ""]
    for name in datasets:
        dataset = load_dataset(name)
        lines.append(f"- **{dataset.title}**: " + " ".join(dataset.public))
    lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--options",
        type=json.loads,
        default={},
        help="extra DPGridSearchCV options as JSON, e.g. '{\"n_candidates\": 5}'",
    )
    parser.add_argument(
        "--epsilon", type=float, default=EPSILON, help="total epsilon of each search and default"
    )
    parser.add_argument("--output", default=None)
    args = parser.parse_args(argv)
    n_seeds = args.seeds or (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)
    seeds = list(range(n_seeds))
    options = {**SEARCH_OPTIONS, **args.options}
    log = lambda message: print(message, file=sys.stderr, flush=True)
    start = time.perf_counter()
    outcomes = {}
    for name in args.datasets:
        log(f"{name} ...")
        outcomes[name] = run_dataset(load_dataset(name), seeds, options, log, args.epsilon)
    command = "python benchmarks/bench_search.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = report(
        args.datasets,
        outcomes,
        seeds,
        options,
        time.perf_counter() - start,
        command.strip(),
        args.epsilon,
    )
    print(text)
    output = args.output or (RESULTS_DIR / ("search_quick.md" if args.quick else "search.md"))
    if (not args.options and args.epsilon == EPSILON) or args.output:
        Path(output).write_text(text)
        log(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
