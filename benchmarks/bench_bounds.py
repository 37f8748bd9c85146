"""Benchmark private bound estimation ("auto" bounds) and DP preprocessing.

Measures the targets of the "auto" bounds on raw data, and checks that the
new defaults do not lose against the old fixed defaults on data that is already
scaled:

1. **Raw breast cancer** (``load_breast_cancer()`` as loaded: values up to
   4254), ``DPLogisticRegression(epsilon=1, classes=[0, 1])`` with default
   bounds: median test accuracy over stratified 80/20 splits (target >= 0.90).
2. **Pipeline** ``DPStandardScaler + DPLogisticRegression`` on raw breast
   cancer, one ``PrivacyBudget(1.0, 1e-5)`` for both (target >= 0.92).
3. **Regression with labels in natural units**: generated (scikit-learn's
   bundled regression sets are small, and California housing is a
   download): ``make_regression(n_samples=40000, n_features=20,
   n_informative=10, noise=..., random_state=0)``, labels rescaled to log-price
   units (mean 12, standard deviation 0.6), 30000 training rows;
   ``DPSCORegressor()`` defaults at epsilon=1 against scikit-learn's
   ``Ridge()`` test R^2 (target: within 3 points).  The same with the
   features in natural units too (each column given a public random scale
   and offset), through ``DPStandardScaler``.
4. **Already-scaled data** (the benchmark sets of ``bench_logistic.py`` and
   ``bench_lasso.py``): the new defaults against the old fixed defaults
   (``data_norm=1``, ``feature_bound=1``, ``y_bound=1``,
   ``intercept_scaling=1``) at epsilon in {0.5, 1, 2}; the check is that the
   new defaults lose at most 1 point (accuracy or R^2 x 100).
5. ``--tune``: the same raw-data targets for a grid of the mechanism's
   constants (the windows of ``sklearn_dp._bounds``, ``TILT``,
   ``BOUNDS_EPSILON_FRACTION``), the measurements behind the defaults.

Usage::

    PYTHONPATH=. python benchmarks/bench_bounds.py            # full run (~10 min on 2 cores)
    PYTHONPATH=. python benchmarks/bench_bounds.py --quick    # smoke test
    PYTHONPATH=. python benchmarks/bench_bounds.py --tune     # constants grid (~20 min)

Writes ``benchmarks/results/bounds.md`` (``--quick``: ``bounds_quick.md``;
``--tune``: ``bounds_tune.md``).  Public choices only: nothing a fit uses is
computed from the data, except through the fits' own DP releases.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import contextlib
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import sklearn_dp
from sklearn_dp import (
    DPLasso,
    DPLogisticRegression,
    DPSCORegressor,
    PrivacyBudget,
    _bounds,
    privacy_spent,
)
from sklearn_dp.preprocessing import DPStandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _datasets import load_dataset

RESULTS_DIR = Path(__file__).resolve().parent / "results"

#: The fixed defaults before the "auto" bounds.
OLD_DEFAULTS = dict(data_norm=1.0, intercept_scaling=1.0)
OLD_REGRESSION_DEFAULTS = dict(data_norm=1.0, y_bound=1.0, intercept_scaling=1.0)
OLD_LASSO_DEFAULTS = dict(feature_bound=1.0, y_bound=1.0, intercept_scaling=1.0)

#: The pipeline's split of the total epsilon (and delta): scaler, classifier.
PIPELINE_SCALER_EPSILON = 0.3
#: Offset of the scalers' seeds (each private step needs its own random stream).
SCALER_SEED = 1_000_000


def log(message):
    print(message, file=sys.stderr, flush=True)


def median_iqr(values):
    values = np.asarray(values, dtype=float)
    return (
        float(np.median(values)),
        float(np.percentile(values, 25)),
        float(np.percentile(values, 75)),
    )


def fmt(values, digits=3):
    med, lo, hi = median_iqr(values)
    return f"{med:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def raw_breast_cancer():
    return load_breast_cancer(return_X_y=True)


def bc_split(X, y, seed):
    return train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)


def natural_regression(raw_features=False):
    """40000 rows (30000 train, 10000 test), labels in log-price units.

    ``make_regression`` draws unit-scale Gaussian features; the labels are
    rescaled (a public affine map fixed here) to mean 12 and standard
    deviation 0.6, like the log of a house price.  With ``raw_features``
    every column gets a scale from 10^U(-2, 3) and an offset of 0 to 5
    scales (public constants of this generator), like raw measurements.
    """
    X, y = make_regression(
        n_samples=40000, n_features=20, n_informative=10, noise=100.0, random_state=0
    )
    y = 12.0 + 0.6 * (y - y.mean()) / y.std()
    if raw_features:
        rng = np.random.default_rng(1)
        scales = 10.0 ** rng.uniform(-2, 3, size=X.shape[1])
        offsets = rng.uniform(0, 5, size=X.shape[1]) * scales
        X = X * scales + offsets
    return X, y


def reg_split(X, y, seed):
    return train_test_split(X, y, test_size=10000, random_state=seed)


# --------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------


def target_raw_logistic(seeds, epsilon=1.0, **params):
    X, y = raw_breast_cancer()
    accs = []
    for seed in seeds:
        X_train, X_test, y_train, y_test = bc_split(X, y, seed)
        model = DPLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=seed, **params)
        accs.append(model.fit(X_train, y_train).score(X_test, y_test))
    return accs


def target_pipeline(seeds, total=1.0, scaler_epsilon=PIPELINE_SCALER_EPSILON, **params):
    X, y = raw_breast_cancer()
    accs, spent = [], []
    for seed in seeds:
        X_train, X_test, y_train, y_test = bc_split(X, y, seed)
        budget = PrivacyBudget(total, 1e-5, composition="basic")
        model = make_pipeline(
            # Each private step gets its own random stream: two mechanisms fed
            # the same seed would add the same (correlated) noise.
            DPStandardScaler(
                epsilon=scaler_epsilon, delta=5e-6, budget=budget, random_state=SCALER_SEED + seed
            ),
            DPLogisticRegression(
                epsilon=total - scaler_epsilon,
                delta=5e-6,
                classes=[0, 1],
                budget=budget,
                random_state=seed,
                **params,
            ),
        ).fit(X_train, y_train)
        accs.append(model.score(X_test, y_test))
        spent.append((privacy_spent(model), budget.spent, len(budget.ledger)))
    return accs, spent


def target_regression(seeds, epsilon=1.0, raw_features=False, **params):
    X, y = natural_regression(raw_features)
    dp, ridge, times = [], [], []
    for seed in seeds:
        X_train, X_test, y_train, y_test = reg_split(X, y, seed)
        ridge.append(Ridge().fit(X_train, y_train).score(X_test, y_test))
        start = time.perf_counter()
        if raw_features:
            budget = PrivacyBudget(epsilon, 1e-5, composition="basic")
            model = make_pipeline(
                DPStandardScaler(
                    epsilon=0.3 * epsilon,
                    delta=5e-6,
                    budget=budget,
                    random_state=SCALER_SEED + seed,
                ),
                DPSCORegressor(epsilon=0.7 * epsilon, delta=5e-6, budget=budget, random_state=seed),
            )
        else:
            model = DPSCORegressor(epsilon=epsilon, random_state=seed, **params)
        model.fit(X_train, y_train)
        times.append(time.perf_counter() - start)
        dp.append(model.score(X_test, y_test))
    return dp, ridge, times


# --------------------------------------------------------------------------
# Already-scaled data: new defaults against the old ones
# --------------------------------------------------------------------------


def scaled_logistic(name, seeds, epsilon, new):
    data = load_dataset(name)
    accs = []
    for seed in seeds:
        X_train, X_test, y_train, y_test = data.split(seed)
        params = {} if new else dict(OLD_DEFAULTS)
        model = DPLogisticRegression(epsilon=epsilon, classes=[0, 1], random_state=seed, **params)
        accs.append(model.fit(X_train, y_train).score(X_test, y_test))
    return accs


def _diabetes():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_lasso import DIABETES_Y_BOUND, diabetes

    X, y = diabetes()
    # The benchmark's public label scaling: centred at 200, divided by 200.
    return X / 4.0, y / DIABETES_Y_BOUND


def scaled_diabetes(estimator, seeds, epsilon, new):
    X, y = _diabetes()
    scores = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(y))
        test, train = order[:88], order[88:]
        if estimator == "DPSCORegressor":
            params = {} if new else dict(OLD_REGRESSION_DEFAULTS)
            model = DPSCORegressor(epsilon=epsilon, delta=1e-6, random_state=seed, **params)
        else:
            params = {} if new else dict(OLD_LASSO_DEFAULTS)
            model = DPLasso(epsilon=epsilon, delta=1e-6, random_state=seed, **params)
        model.fit(X[train], y[train])
        scores.append(model.score(X[test], y[test]))
    return scores


def sparse_recovery(seeds, epsilon, new, n=800, d=1000):
    """bench_lasso part (a)'s generator (public feature bound 1, label bound 1.5): test R^2."""
    scores = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        truth = np.zeros(d)
        truth[rng.choice(d, 5, replace=False)] = rng.choice([-0.2, 0.2], 5)
        X = rng.uniform(-1, 1, size=(n + 2000, d))
        y = X @ truth + 0.1 * rng.normal(size=n + 2000)
        params = {} if new else dict(OLD_LASSO_DEFAULTS)
        model = DPLasso(
            epsilon=epsilon, radius=1.0, fit_intercept=False, random_state=seed, **params
        )
        model.fit(X[:n], y[:n])
        scores.append(model.score(X[n:], y[n:]))
    return scores


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def run_targets(seeds, reg_seeds, lines):
    X, y = raw_breast_cancer()
    lines.append("## Targets on raw data\n")
    log("raw breast cancer ...")
    sk = []
    sk_scaled = []
    for seed in seeds:
        X_train, X_test, y_train, y_test = bc_split(X, y, seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk.append(
                LogisticRegression(max_iter=10000).fit(X_train, y_train).score(X_test, y_test)
            )
        sk_scaled.append(
            make_pipeline(StandardScaler(), LogisticRegression())
            .fit(X_train, y_train)
            .score(X_test, y_test)
        )
    new = target_raw_logistic(seeds)
    old = target_raw_logistic(seeds, **OLD_DEFAULTS)
    met = np.median(new) >= 0.90
    lines += [
        "### 1. Raw breast cancer, `DPLogisticRegression(epsilon=1, classes=[0, 1])`\n",
        f"{len(seeds)} stratified 80/20 splits (`random_state=seed`), median test accuracy [IQR].\n",
        "| model | accuracy |",
        "|---|---|",
        f'| DP, default bounds (`"auto"`) | {fmt(new)} |',
        f"| DP, old defaults (`data_norm=1.0, intercept_scaling=1.0`) | {fmt(old)} |",
        f"| scikit-learn `LogisticRegression(max_iter=10000)` on the raw data | {fmt(sk)} |",
        f"| scikit-learn `StandardScaler + LogisticRegression` | {fmt(sk_scaled)} |",
        "",
        f"Target >= 0.90: **{'MET' if met else 'NOT MET'}** (median {np.median(new):.3f}).\n",
    ]
    log("pipeline ...")
    accs, spent = target_pipeline(seeds)
    half = 0.5 * math.sqrt(X.shape[1])
    public, _ = target_pipeline(seeds, data_norm=half)
    met = np.median(accs) >= 0.92
    eps_pipe = max(s[0][0] for s in spent)
    budget_spent = max(s[1][0] for s in spent)
    entries = {s[2] for s in spent}
    lines += [
        "### 2. Pipeline `DPStandardScaler + DPLogisticRegression`, raw breast cancer, one budget\n",
        f"`PrivacyBudget(1.0, 1e-5)`; scaler `epsilon={PIPELINE_SCALER_EPSILON}, delta=5e-6`, "
        f"classifier `epsilon={1 - PIPELINE_SCALER_EPSILON:.1f}, delta=5e-6` (default bounds "
        "everywhere).\n",
        "| model | accuracy |",
        "|---|---|",
        f"| DP pipeline, default bounds | {fmt(accs)} |",
        f"| DP pipeline, classifier given `data_norm=sqrt(30)/2={half:.3g}` after the scaler | "
        f"{fmt(public)} |",
        f"| scikit-learn `StandardScaler + LogisticRegression` | {fmt(sk_scaled)} |",
        "",
        "The second row uses the guide's rule of thumb for a classifier after "
        "`DPStandardScaler` (features of about unit scale: about half of `sqrt(n_features)`; "
        "free, no release); the rule was found on this benchmark, so read that row as "
        "optimistic.\n",
        f"`sklearn_dp.privacy_spent(pipeline)`: at most epsilon = {eps_pipe:.4f} (delta 1e-5); "
        f"budget spent at most {budget_spent:.4f}; ledger entries per fit: {sorted(entries)}.\n",
        f"Target >= 0.92 (default bounds): **{'MET' if met else 'NOT MET'}** (median "
        f"{np.median(accs):.3f}; with the public classifier bound {np.median(public):.3f}).\n",
    ]
    log("regression ...")
    dp, ridge, times = target_regression(reg_seeds)
    old, _, _ = target_regression(reg_seeds, **OLD_REGRESSION_DEFAULTS)
    raw, ridge_raw, _ = target_regression(reg_seeds, raw_features=True)
    gap = 100 * (np.median(ridge) - np.median(dp))
    lines += [
        "### 3. Regression with labels in natural units (log-price scale), 30000 training rows\n",
        "Generated: `make_regression(n_samples=40000, n_features=20, n_informative=10, "
        "noise=100, random_state=0)`, labels mapped to mean 12, sd 0.6 (log-price units); "
        f"10000 test rows; {len(reg_seeds)} splits. Test R^2, median [IQR].\n",
        "| model | R^2 |",
        "|---|---|",
        f"| `DPSCORegressor()` defaults, epsilon=1 | {fmt(dp, 4)} |",
        f"| `DPSCORegressor(data_norm=1, y_bound=1, intercept_scaling=1)` (old defaults) | {fmt(old, 4)} |",
        f"| scikit-learn `Ridge()` | {fmt(ridge, 4)} |",
        f"| features in natural units too: `DPStandardScaler(0.3) + DPSCORegressor(0.7)` | {fmt(raw, 4)} |",
        f"| scikit-learn `Ridge()` on those features | {fmt(ridge_raw, 4)} |",
        "",
        f"DP fit time (median): {np.median(times):.2f} s.",
        f"Target within 3 points of Ridge: **{'MET' if gap <= 3 else 'NOT MET'}** "
        f"(gap {gap:.2f} points).\n",
    ]


def run_scaled(seeds, epsilons, lines, large_seeds):
    lines += [
        "## Already-scaled data: new defaults against the old ones\n",
        "Old defaults: `data_norm=1.0` (and `feature_bound=1.0`, `y_bound=1.0`), "
        '`intercept_scaling=1.0`. New: `"auto"` everywhere. Median score over the seeds '
        "(accuracy; R^2 for regressions); the check is new >= old - 0.01.\n",
        "| data set | estimator | epsilon | old defaults | new defaults | change (points) | check |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = math.inf
    cases = [
        (
            "breast_cancer (public ranges)",
            "DPLogisticRegression",
            seeds,
            lambda s, e, new: scaled_logistic("breast_cancer", s, e, new),
        ),
        (
            "synthetic_100k",
            "DPLogisticRegression",
            large_seeds,
            lambda s, e, new: scaled_logistic("synthetic_100k", s, e, new),
        ),
        (
            "diabetes (public scaling)",
            "DPSCORegressor",
            seeds,
            lambda s, e, new: scaled_diabetes("DPSCORegressor", s, e, new),
        ),
        (
            "diabetes (public scaling)",
            "DPLasso",
            seeds,
            lambda s, e, new: scaled_diabetes("DPLasso", s, e, new),
        ),
        (
            "sparse recovery n=800, d=1000",
            "DPLasso(radius=1)",
            large_seeds,
            lambda s, e, new: sparse_recovery(s, e, new),
        ),
    ]
    for title, estimator, case_seeds, run in cases:
        for epsilon in epsilons:
            log(f"{title} {estimator} eps={epsilon} ...")
            old = run(case_seeds, epsilon, False)
            new = run(case_seeds, epsilon, True)
            change = 100 * (np.median(new) - np.median(old))
            worst = min(worst, change)
            lines.append(
                f"| {title} | {estimator} | {epsilon:g} | {np.median(old):.3f} | "
                f"{np.median(new):.3f} | {change:+.1f} | {'ok' if change >= -1 else 'LOSS'} |"
            )
    lines.append(f"\nLargest loss: {-min(worst, 0):.1f} points.\n")


_CONSTANTS = (
    "CLASSIFIER_ROW_WINDOW",
    "REGRESSOR_ROW_WINDOW",
    "LABEL_WINDOW",
    "TILT",
    "BOUNDS_EPSILON_FRACTION",
)


@contextlib.contextmanager
def constants(**values):
    """Temporarily set constants of ``sklearn_dp._bounds`` (for the tuning grid)."""
    saved = {name: getattr(_bounds, name) for name in values}
    for name, value in values.items():
        setattr(_bounds, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(_bounds, name, value)


def run_tune(seeds, reg_seeds, lines):
    lines += [
        "## Constants of the bound mechanism\n",
        "Median over the seeds, epsilon=1 unless said: raw breast cancer (accuracy), the "
        "pipeline (accuracy), breast cancer with public ranges (accuracy), StandardScaler + "
        "DPLogisticRegression(epsilon=0.7) (accuracy), synthetic_100k (accuracy, 2 seeds), the "
        "natural-unit regression (R^2), DPSCORegressor and DPLasso on the publicly scaled "
        "diabetes data (R^2).\n",
        "| classifier rows | regressor rows, labels | share | raw BC | pipeline | scaled BC | "
        "StandardScaler + DP | synthetic_100k | regression | diabetes DPSCO | diabetes DPLasso |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    X, y = raw_breast_cancer()
    grid = [
        (2.0, 4.0, 0.1),
        (4.0, 4.0, 0.1),
        (10.0, 10.0, 0.1),
        (2.0, 4.0, 0.05),
        (2.0, 10.0, 0.1),
    ]
    for classifier, regressor, fraction in grid:
        log(f"tune classifier={classifier} regressor={regressor} share={fraction}")
        with constants(
            CLASSIFIER_ROW_WINDOW=classifier,
            REGRESSOR_ROW_WINDOW=regressor,
            LABEL_WINDOW=regressor,
            BOUNDS_EPSILON_FRACTION=fraction,
        ):
            raw = target_raw_logistic(seeds)
            pipe, _ = target_pipeline(seeds)
            scaled = scaled_logistic("breast_cancer", seeds, 1.0, True)
            standardized = []
            for seed in seeds:
                X_train, X_test, y_train, y_test = bc_split(X, y, seed)
                model = make_pipeline(
                    StandardScaler(),
                    DPLogisticRegression(epsilon=0.7, classes=[0, 1], random_state=seed),
                )
                standardized.append(model.fit(X_train, y_train).score(X_test, y_test))
            synthetic = scaled_logistic("synthetic_100k", [0, 1], 1.0, True)
            reg, _, _ = target_regression(reg_seeds)
            dpsco = scaled_diabetes("DPSCORegressor", seeds, 1.0, True)
            lasso = scaled_diabetes("DPLasso", seeds, 1.0, True)
        lines.append(
            f"| {classifier:g} | {regressor:g} | {fraction:g} | {np.median(raw):.3f} | "
            f"{np.median(pipe):.3f} | {np.median(scaled):.3f} | {np.median(standardized):.3f} | "
            f"{np.median(synthetic):.3f} | {np.median(reg):.4f} | {np.median(dpsco):.3f} | "
            f"{np.median(lasso):.3f} |"
        )
    lines.append("")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke test (few seeds)")
    parser.add_argument("--tune", action="store_true", help="grid of the mechanism's constants")
    parser.add_argument("--seeds", type=int, default=None, help="seeds for the small data sets")
    args = parser.parse_args(argv)
    n_seeds = args.seeds or (3 if args.quick else 30)
    seeds = list(range(n_seeds))
    reg_seeds = list(range(2 if args.quick else 5))
    large_seeds = list(range(2 if args.quick else 5))
    epsilons = (1.0,) if args.quick else (0.5, 1.0, 2.0)
    start = time.time()
    lines = [
        "# Private bounds and DP preprocessing (`benchmarks/bench_bounds.py`)\n",
        f"sklearn_dp {sklearn_dp.__version__}, scikit-learn {sklearn.__version__}, numpy "
        f"{np.__version__}, Python {platform.python_version()}, {platform.machine()}; "
        "constants: "
        + ", ".join(f"{name}={getattr(_bounds, name):g}" for name in _CONSTANTS)
        + f", WINDOW={_bounds.WINDOW:g}.\n",
    ]
    if args.tune:
        run_tune(seeds, reg_seeds, lines)
        name = "bounds_tune.md"
    else:
        run_targets(seeds, reg_seeds, lines)
        run_scaled(seeds, epsilons, lines, large_seeds)
        name = "bounds_quick.md" if args.quick else "bounds.md"
    command = "PYTHONPATH=. python benchmarks/bench_bounds.py " + " ".join(argv or sys.argv[1:])
    lines.append(f"Command: `{command.strip()}`; run time {time.time() - start:.0f} s.\n")
    text = "\n".join(lines)
    print(text)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / name).write_text(text)


if __name__ == "__main__":
    main()
