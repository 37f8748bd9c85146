"""Raw tables in natural units: the estimators' defaults against StandardScaler + model.

A user's table has columns in natural units (an income in tens of thousands
beside 0/1 flags and an age).  This benchmark fits, on such tables and on the
same split per seed:

* **defaults**: the private estimator with every parameter at its default
  but ``epsilon`` (``DPLogisticRegression(epsilon)``, ``DPSCORegressor(epsilon)``:
  no ``classes=``, ``"auto"`` bounds, ``feature_scaling="auto"``);
* **feature_scaling**: the same with ``feature_scaling=True`` (per-feature
  scales released privately inside the fit whenever there are enough rows);
* **no scaling**: the same with ``feature_scaling=False`` (one bound for all
  features: the defaults before ``"auto"``);
* **DP scaler + model**: ``DPStandardScaler(epsilon=0.3 * eps)`` then the
  model at ``0.7 * eps``, both charged to one
  ``PrivacyBudget(eps, 1e-5, composition="basic")``;
* **non-private**: scikit-learn's ``StandardScaler`` + ``LogisticRegression()``
  (accuracy, or ROC AUC where the table says so) or + ``Ridge()`` (R^2).

The tables (all numeric; categorical columns arrive one-hot encoded from
public category lists, as ``OneHotEncoder(categories=...)`` would give them):

``breast_cancer``
    ``load_breast_cancer()`` as loaded (values up to 4254), 569 rows,
    stratified 70/30 split (398 training rows), accuracy.
``diabetes``
    ``load_diabetes()`` as loaded (features pre-scaled by scikit-learn, the
    label in natural units, 25 to 346), 442 rows, 70/30, R^2.
``diabetes_raw``
    ``load_diabetes(scaled=False)``: features in natural units too (age,
    sex coded 1/2, BMI, blood pressure, six serum measurements).
``housing_3k``, ``housing_12k``
    California-housing-like, generated: eight numeric columns in their
    natural units (median income in tens of thousands of dollars, house
    age in years, rooms, bedrooms, population, occupancy, latitude,
    longitude) and five one-hot columns of an "ocean proximity" category;
    the label is a house value in dollars.  3,000 and 12,000 training rows
    (plus a 25% test set), R^2.
``income_10k``
    An adult-census-like classification table: income, age, hours a week,
    capital gain (mostly 0, heavy tail), years of education, 0/1 flags and
    a one-hot occupation; 10,000 training rows, ROC AUC.
``wide_200``
    200 features whose scales range from 0.01 to 10^4 (some with offsets),
    a quarter of them 0/1 flags; 4,000 training rows, accuracy.

With ``--scaled``, the tables per-feature scaling must not hurt (what a
default would meet on data that needs no scaling): ``breast_cancer_scaled``
(standardised as handed over), ``digits`` and ``wine`` as loaded,
standard-normal tables of 10,000 rows (``scaled_logistic_10k``,
``scaled_ridge_10k``) and six standard-normal columns beside one-hot
columns of 4 and 8 categories on 3,000 rows (``onehot_logistic_3k``,
``onehot_ridge_3k``).

Nothing a fit uses is computed from the data except through its own DP
releases.  Usage::

    PYTHONPATH=. python benchmarks/bench_raw_tables.py --quick   # a few minutes on 2 cores
    PYTHONPATH=. python benchmarks/bench_raw_tables.py           # 5 seeds, every table
    PYTHONPATH=. python benchmarks/bench_raw_tables.py --scaled --methods defaults feature_scaling

Writes ``benchmarks/results/raw_tables.md`` (``--quick``: ``raw_tables_quick.md``;
``--scaled``: ``raw_tables_scaled.md``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sklearn.datasets import load_breast_cancer, load_diabetes, load_digits, load_wine
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import r2_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_dp import DPLogisticRegression, DPSCORegressor, PrivacyBudget
from sklearn_dp.preprocessing import DPStandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    RESULTS_DIR,
    add_threads_argument,
    environment,
    limit_threads,
    log,
    md_table,
    median,
    write_report,
)

#: The pipeline's share of the total epsilon for the DP scaler (the rest: the model).
SCALER_SHARE = 0.3
#: Offset of the scalers' seeds (two private steps never share a random stream).
SCALER_SEED = 1_000_000
DELTA = 1e-5


@dataclass(frozen=True)
class Table:
    name: str
    task: str  # "classification" or "regression"
    metric: str  # "accuracy", "roc_auc" or "r2"
    X: np.ndarray
    y: np.ndarray
    test_size: float

    @property
    def n_train(self):
        return int(round(self.X.shape[0] * (1 - self.test_size)))


# -- the tables -----------------------------------------------------------------


def _one_hot(codes, k):
    out = np.zeros((codes.size, k))
    out[np.arange(codes.size), codes] = 1.0
    return out


def housing_like(n_rows, seed=0):
    """A California-housing-like table: natural units, one-hot proximity, value in dollars."""
    rng = np.random.default_rng(seed)
    income = np.clip(rng.lognormal(np.log(3.5), 0.45, n_rows), 0.5, 15.0)  # 10k dollars
    age = np.clip(rng.normal(29, 12, n_rows).round(), 1, 52)
    rooms = np.clip(rng.lognormal(np.log(5.2), 0.25, n_rows) + 0.3 * income, 1, 30)
    bedrooms = np.clip(0.2 * rooms + rng.normal(0, 0.1, n_rows), 0.5, 8)
    population = np.clip(rng.lognormal(np.log(1200), 0.7, n_rows), 3, 35000)
    occupancy = np.clip(rng.lognormal(np.log(2.9), 0.25, n_rows), 0.7, 15)
    region = rng.integers(0, 2, n_rows)  # north or south
    latitude = np.where(region == 0, rng.normal(37.8, 0.8, n_rows), rng.normal(34.1, 0.6, n_rows))
    longitude = np.where(
        region == 0, rng.normal(-122.0, 0.7, n_rows), rng.normal(-118.2, 0.6, n_rows)
    )
    proximity = rng.choice(5, n_rows, p=[0.44, 0.32, 0.11, 0.12, 0.01])
    proximity_effect = np.array([40_000.0, -60_000.0, 50_000.0, 45_000.0, 120_000.0])
    value = (
        45_000.0
        + 40_000.0 * income
        + 900.0 * age
        - 3_000.0 * rooms
        + 15_000.0 * bedrooms
        - 2.0 * population
        - 9_000.0 * occupancy
        - 25_000.0 * (latitude - 36.0)
        - 20_000.0 * (longitude + 120.0)
        + proximity_effect[proximity]
        + rng.normal(0, 55_000.0, n_rows)
    )
    value = np.clip(value, 15_000.0, 500_001.0)
    X = np.column_stack(
        [income, age, rooms, bedrooms, population, occupancy, latitude, longitude]
        + [_one_hot(proximity, 5)]
    )
    return X, value


def income_like(n_rows, seed=0):
    """An adult-census-like classification table (income above a threshold)."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(39, 13, n_rows).round(), 17, 90)
    education = np.clip(rng.normal(10, 2.5, n_rows).round(), 1, 16)
    hours = np.clip(rng.normal(40, 12, n_rows).round(), 1, 99)
    gain = np.where(rng.random(n_rows) < 0.08, rng.lognormal(np.log(7000), 1.0, n_rows), 0.0)
    gain = np.clip(gain, 0, 99_999)
    married = (rng.random(n_rows) < 0.47).astype(float)
    male = (rng.random(n_rows) < 0.67).astype(float)
    occupation = rng.choice(6, n_rows, p=[0.25, 0.2, 0.2, 0.15, 0.1, 0.1])
    wage = np.clip(
        rng.lognormal(np.log(32_000), 0.5, n_rows) * (1 + 0.06 * (education - 10)), 1_000, 500_000
    )
    occupation_effect = np.array([0.8, -0.6, 0.0, 0.4, -1.0, 0.3])
    score = (
        -1.2
        + 0.035 * (age - 39)
        + 0.3 * (education - 10)
        + 0.03 * (hours - 40)
        + 1.2 * married
        + 0.3 * male
        + 0.00025 * gain
        + 0.00004 * (wage - 32_000)
        + occupation_effect[occupation]
    )
    y = (score + rng.logistic(0, 1, n_rows) > 0).astype(int)
    X = np.column_stack(
        [wage, age, education, hours, gain, married, male] + [_one_hot(occupation, 6)]
    )
    return X, y


def wide_table(n_rows, n_features=200, seed=0):
    """200 features of scales 0.01 to 10^4 (some offset), a quarter 0/1 flags; binary label."""
    rng = np.random.default_rng(seed)
    n_flags = n_features // 4
    Z = rng.normal(size=(n_rows, n_features - n_flags))
    flags = (rng.random((n_rows, n_flags)) < rng.uniform(0.1, 0.6, n_flags)).astype(float)
    weights = np.zeros(n_features)
    informative = rng.choice(n_features, 30, replace=False)
    weights[informative] = rng.normal(0, 1, 30)
    standardised = np.column_stack([Z, (flags - flags.mean(axis=0)) / flags.std(axis=0)])
    score = standardised @ weights / np.sqrt(np.sum(weights**2)) * 2.5
    y = (score + rng.logistic(0, 1, n_rows) > 0).astype(int)
    scales = 10.0 ** rng.uniform(-2, 4, n_features - n_flags)
    offsets = np.where(rng.random(n_features - n_flags) < 0.3, rng.uniform(1, 10), 0.0) * scales
    X = np.column_stack([Z * scales + offsets, flags])
    return X, y


def scaled_table(n_rows, n_features=20, task="classification", seed=0):
    """Already-scaled data: standard-normal features (as after a scaler), a linear signal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    weights = rng.normal(0, 1, n_features)
    score = X @ weights / np.linalg.norm(weights) * 2.5
    if task == "classification":
        return X, (score + rng.logistic(0, 1, n_rows) > 0).astype(int)
    return X, score + rng.normal(0, 1.5, n_rows)


def one_hot_table(n_rows, task="classification", seed=0):
    """Standard-normal numeric columns beside one-hot 0/1 columns (4 and 8 categories)."""
    rng = np.random.default_rng(seed)
    numeric = rng.normal(size=(n_rows, 6))
    small = rng.choice(4, n_rows, p=[0.4, 0.3, 0.2, 0.1])
    large = rng.choice(8, n_rows, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02])
    effect_small = np.array([0.0, 0.8, -0.6, 1.2])
    effect_large = np.array([0.0, -0.5, 0.4, 0.9, -1.0, 0.6, -0.8, 1.5])
    score = (
        numeric @ np.array([0.8, -0.6, 0.5, 0.0, 0.3, -0.2])
        + effect_small[small]
        + effect_large[large]
    )
    X = np.column_stack([numeric, _one_hot(small, 4), _one_hot(large, 8)])
    if task == "classification":
        return X, (score + rng.logistic(0, 1, n_rows) > 0).astype(int)
    return X, score + rng.normal(0, 1.0, n_rows)


def tables(names):
    out = []
    for name in names:
        if name == "breast_cancer":
            X, y = load_breast_cancer(return_X_y=True)
            out.append(Table(name, "classification", "accuracy", X, y, 0.3))
        elif name == "diabetes":
            X, y = load_diabetes(return_X_y=True)
            out.append(Table(name, "regression", "r2", X, y, 0.3))
        elif name == "diabetes_raw":
            X, y = load_diabetes(return_X_y=True, scaled=False)
            out.append(Table(name, "regression", "r2", X, y, 0.3))
        elif name == "housing_3k":
            X, y = housing_like(4000)
            out.append(Table(name, "regression", "r2", X, y, 0.25))
        elif name == "housing_12k":
            X, y = housing_like(16000, seed=1)
            out.append(Table(name, "regression", "r2", X, y, 0.25))
        elif name == "income_10k":
            X, y = income_like(13334)
            out.append(Table(name, "classification", "roc_auc", X, y, 0.25))
        elif name == "wide_200":
            X, y = wide_table(5334)
            out.append(Table(name, "classification", "accuracy", X, y, 0.25))
        elif name == "breast_cancer_scaled":
            # Standardised as a user who was handed already-scaled data has it.
            X, y = load_breast_cancer(return_X_y=True)
            X = (X - X.mean(axis=0)) / X.std(axis=0)
            out.append(Table(name, "classification", "accuracy", X, y, 0.3))
        elif name == "digits":
            X, y = load_digits(return_X_y=True)
            out.append(Table(name, "classification", "accuracy", X, y, 0.3))
        elif name == "wine":
            X, y = load_wine(return_X_y=True)
            out.append(Table(name, "classification", "accuracy", X, y, 0.3))
        elif name in ("scaled_logistic_10k", "scaled_ridge_10k"):
            task = "classification" if "logistic" in name else "regression"
            X, y = scaled_table(13334, task=task)
            metric = "accuracy" if task == "classification" else "r2"
            out.append(Table(name, task, metric, X, y, 0.25))
        elif name in ("onehot_logistic_3k", "onehot_ridge_3k"):
            task = "classification" if "logistic" in name else "regression"
            X, y = one_hot_table(4000, task=task)
            metric = "accuracy" if task == "classification" else "r2"
            out.append(Table(name, task, metric, X, y, 0.25))
        else:
            raise ValueError(f"unknown table {name!r}")
    return out


ALL_TABLES = [
    "breast_cancer",
    "diabetes",
    "diabetes_raw",
    "housing_3k",
    "housing_12k",
    "income_10k",
    "wide_200",
]
#: Data that per-feature scaling must not hurt: already scaled, bundled as
#: loaded, one-hot 0/1 columns beside standard-normal ones.
SCALED_TABLES = [
    "breast_cancer_scaled",
    "digits",
    "wine",
    "scaled_logistic_10k",
    "scaled_ridge_10k",
    "onehot_logistic_3k",
    "onehot_ridge_3k",
]


# -- the fits -------------------------------------------------------------------


def _score(table, model, X_test, y_test):
    if table.metric == "roc_auc":
        return roc_auc_score(y_test, model.decision_function(X_test))
    if table.metric == "r2":
        return r2_score(y_test, model.predict(X_test))
    return float(np.mean(model.predict(X_test) == y_test))


def _model(table, epsilon, seed, **params):
    if table.task == "classification":
        return DPLogisticRegression(epsilon=epsilon, random_state=seed, **params)
    return DPSCORegressor(epsilon=epsilon, random_state=seed, **params)


def fit_method(method, table, epsilon, seed, X_train, y_train):
    if method == "non-private":
        final = LogisticRegression(max_iter=5000) if table.task == "classification" else Ridge()
        return make_pipeline(StandardScaler(), final).fit(X_train, y_train)
    if method == "defaults":
        return _model(table, epsilon, seed).fit(X_train, y_train)
    if method == "feature_scaling":
        return _model(table, epsilon, seed, feature_scaling=True).fit(X_train, y_train)
    if method == "no scaling":
        return _model(table, epsilon, seed, feature_scaling=False).fit(X_train, y_train)
    if method == "DP scaler + model":
        budget = PrivacyBudget(epsilon, DELTA, composition="basic")
        scaler_epsilon = SCALER_SHARE * epsilon
        return make_pipeline(
            DPStandardScaler(
                epsilon=scaler_epsilon,
                delta=SCALER_SHARE * DELTA,
                budget=budget,
                random_state=SCALER_SEED + seed,
            ),
            _model(
                table,
                epsilon - scaler_epsilon,
                seed,
                delta=(1 - SCALER_SHARE) * DELTA,
                budget=budget,
            ),
        ).fit(X_train, y_train)
    raise ValueError(method)


METHODS = ["defaults", "feature_scaling", "no scaling", "DP scaler + model", "non-private"]


def run(table_list, epsilons, seeds, failures, warned, methods=tuple(METHODS[:-1])):
    """``results[(table, method, epsilon)] = [score per seed]``."""
    results = {}
    for table in table_list:
        stratify = table.y if table.task == "classification" else None
        for seed in seeds:
            X_train, X_test, y_train, y_test = train_test_split(
                table.X, table.y, test_size=table.test_size, random_state=seed, stratify=stratify
            )
            reference = fit_method("non-private", table, math.inf, seed, X_train, y_train)
            results.setdefault((table.name, "non-private", None), []).append(
                _score(table, reference, X_test, y_test)
            )
            for epsilon in epsilons:
                for method in methods:
                    start = time.perf_counter()
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        try:
                            model = fit_method(method, table, epsilon, seed, X_train, y_train)
                            score = _score(table, model, X_test, y_test)
                        except Exception as exc:  # a refused fit is a result too
                            failures[(table.name, method, epsilon)][
                                f"{type(exc).__name__}: {str(exc)[:100]}"
                            ] += 1
                            score = math.nan
                    for w in caught:
                        warned[(table.name, method)][str(w.message)[:110]] += 1
                    results.setdefault((table.name, method, epsilon), []).append(score)
                    log(
                        f"{table.name} seed={seed} eps={epsilon:g} {method}: {score:.4f} "
                        f"({time.perf_counter() - start:.1f}s)"
                    )
    return results


def _number(value, digits=3):
    # Regression scores can be catastrophically negative: show them as they are.
    return f"{value:.{digits}f}" if abs(value) < 1e4 else f"{value:.3g}"


def _fmt(values, digits=3, worst=False):
    finite = [v for v in values if not math.isnan(v)]
    if not finite:
        return "failed"
    text = _number(median(finite), digits)
    if worst:
        text += f" ({_number(min(finite), digits)})"
    if len(finite) < len(values):
        text += f" ({len(values) - len(finite)} failed)"
    return text


def targets(results, epsilons):
    """The issue's targets, MET or NOT MET, with their numbers."""
    lines = []

    def gap_target(table, points, description, method="defaults"):
        if 1.0 not in epsilons or (table, method, 1.0) not in results:
            return
        dp = median(results[(table, method, 1.0)])
        ref = median(results[(table, "non-private", None)])
        met = (not math.isnan(dp)) and ref - dp <= points / 100
        lines.append(
            f"- {description}: {method} {dp:.3f} vs non-private {ref:.3f} "
            f"(gap {100 * (ref - dp):.1f} points, target <= {points}): "
            f"{'MET' if met else 'NOT MET'}"
        )

    for method in ("defaults", "feature_scaling"):
        for table in ("housing_12k", "income_10k"):
            gap_target(table, 2, f"`{table}` (10,000+ rows), epsilon=1", method)
        gap_target("housing_3k", 5, "`housing_3k` (3,000 rows), epsilon=1", method)
    if 1.0 in epsilons and ("breast_cancer", "defaults", 1.0) in results:
        dp = median(results[("breast_cancer", "defaults", 1.0)])
        lines.append(
            f"- `breast_cancer` defaults at epsilon=1: {dp:.3f} (target >= 0.93): "
            f"{'MET' if dp >= 0.93 else 'NOT MET'}"
        )
        if ("breast_cancer", "feature_scaling", 1.0) in results:
            scaled = median(results[("breast_cancer", "feature_scaling", 1.0)])
            lines.append(
                f"- `breast_cancer` feature_scaling=True at epsilon=1: {scaled:.3f} "
                f"(target >= 0.93): {'MET' if scaled >= 0.93 else 'NOT MET'}"
            )
        if ("breast_cancer", "DP scaler + model", 1.0) in results:
            pipe = median(results[("breast_cancer", "DP scaler + model", 1.0)])
            lines.append(
                f"- `breast_cancer` DP scaler + model, total epsilon=1: {pipe:.3f} "
                f"(target >= 0.92): {'MET' if pipe >= 0.92 else 'NOT MET'}"
            )
    return lines


def report(
    table_list,
    results,
    epsilons,
    seeds,
    failures,
    warned,
    command,
    seconds,
    methods=None,
    worst=False,
):
    methods = list(methods or METHODS[:-1])
    what = "medians (worst seed)" if worst else "medians"
    out = [
        "# Raw tables in natural units: defaults vs StandardScaler + model\n",
        f"Command: `{command}`  \n{environment()}  \n"
        f"Seeds: {list(seeds)}; {what} over the seeds; {seconds / 60:.1f} min.\n",
        "Columns: `defaults` = the private estimator at its defaults but epsilon "
        "(`DPLogisticRegression(epsilon)` / `DPSCORegressor(epsilon)`, so "
        '`feature_scaling="auto"`); `feature_scaling` = the same with `feature_scaling=True`; '
        "`no scaling` = the same with `feature_scaling=False`; `DP scaler + model` = "
        f"`DPStandardScaler({SCALER_SHARE:g} eps)` + the model at {1 - SCALER_SHARE:g} eps "
        f"on one `PrivacyBudget(eps, {DELTA:g}, composition='basic')`; `non-private` = `StandardScaler` + "
        "`LogisticRegression()` / `Ridge()`.\n",
    ]
    headers = ["table (train rows, d)", "metric", "non-private"] + [
        f"{m} eps={e:g}" for e in epsilons for m in methods
    ]
    rows = []
    for table in table_list:
        row = [
            f"{table.name} ({table.n_train}, {table.X.shape[1]})",
            table.metric,
            _fmt(results[(table.name, "non-private", None)]),
        ]
        for epsilon in epsilons:
            for method in methods:
                row.append(_fmt(results[(table.name, method, epsilon)], worst=worst))
        rows.append(row)
    out.append(md_table(headers, rows) + "\n")
    if "defaults" in methods and "no scaling" in methods:
        out.append(
            "## Paired: defaults minus no scaling (same split and seed), points of the metric\n"
        )
        paired = []
        for table in table_list:
            for epsilon in epsilons:
                a = np.array(results[(table.name, "defaults", epsilon)])
                b = np.array(results[(table.name, "no scaling", epsilon)])
                diff = 100 * (a - b)
                diff = diff[np.isfinite(diff)]
                se = diff.std(ddof=1) / np.sqrt(diff.size) if diff.size > 1 else math.nan
                paired.append(
                    [
                        table.name,
                        f"{epsilon:g}",
                        str(diff.size),
                        f"{diff.mean():+.2f} +- {se:.2f}",
                        f"{np.median(diff):+.2f}",
                    ]
                )
        out.append(
            md_table(
                ["table", "eps", "splits", "mean +- s.e.", "median"],
                paired,
            )
            + "\n"
        )
    out.append("## Targets\n")
    out += targets(results, epsilons)
    if failures:
        out.append("\n## Fits that raised\n")
        for (name, method, epsilon), counts in sorted(failures.items(), key=str):
            for message, count in counts.most_common():
                out.append(f"- {name}, {method}, eps={epsilon:g} (x{count}): {message}")
    if warned:
        out.append("\n## Warnings (first 110 characters, count over seeds and epsilons)\n")
        for (name, method), counts in sorted(warned.items()):
            for message, count in counts.most_common(4):
                out.append(f"- {name}, {method} (x{count}): {message}")
    return "\n".join(out) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds, fewer tables")
    parser.add_argument("--seeds", type=int, default=None, help="number of seeds")
    parser.add_argument("--tables", nargs="*", default=None, choices=ALL_TABLES + SCALED_TABLES)
    parser.add_argument(
        "--scaled",
        action="store_true",
        help="the tables per-feature scaling must not hurt (already scaled, one-hot)",
    )
    parser.add_argument(
        "--methods", nargs="*", default=None, choices=METHODS[:-1], help="private methods to run"
    )
    parser.add_argument(
        "--epsilons", nargs="*", type=float, default=[0.5, 1.0, 2.0], help="epsilons"
    )
    parser.add_argument("--output", default=None, help="report path")
    parser.add_argument(
        "--worst", action="store_true", help="show the worst seed beside each median"
    )
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    limit_threads(args.threads)
    names = (
        args.tables
        or (SCALED_TABLES if args.scaled else None)
        or (
            ["breast_cancer", "diabetes", "diabetes_raw", "housing_3k", "income_10k", "wide_200"]
            if args.quick
            else ALL_TABLES
        )
    )
    n_seeds = args.seeds or (3 if args.quick else 5)
    seeds = range(n_seeds)
    failures = {}
    warned = {}

    class _Counts(dict):
        def __missing__(self, key):
            self[key] = Counter()
            return self[key]

    failures, warned = _Counts(), _Counts()
    start = time.perf_counter()
    table_list = tables(names)
    methods = tuple(args.methods or METHODS[:-1])
    results = run(table_list, args.epsilons, seeds, failures, warned, methods)
    command = "PYTHONPATH=. python benchmarks/bench_raw_tables.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = report(
        table_list,
        results,
        args.epsilons,
        seeds,
        dict(failures),
        dict(warned),
        command.strip(),
        time.perf_counter() - start,
        methods,
        worst=args.worst,
    )
    print(text)
    path = args.output or RESULTS_DIR / (
        "raw_tables_scaled.md"
        if args.scaled
        else "raw_tables_quick.md"
        if args.quick
        else "raw_tables.md"
    )
    write_report(path, text)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
