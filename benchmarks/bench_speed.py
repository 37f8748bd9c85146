"""Speed, memory and accuracy of the default solvers against scikit-learn.

One command, one run, one report::

    PYTHONPATH=. python benchmarks/bench_speed.py                 # full (hours on 2 cores)
    PYTHONPATH=. python benchmarks/bench_speed.py --quick         # the small cells only
    PYTHONPATH=. python benchmarks/bench_speed.py --threads 0     # the libraries' own threads
    PYTHONPATH=. python benchmarks/bench_speed.py --sizes 1e5x100 --formats dense64 --skip-accuracy
    PYTHONPATH=. python benchmarks/bench_speed.py --quick --defaults-only --skip-memory \
        --skip-accuracy                                          # the time grid alone

Three parts, each against scikit-learn on the same data in the same run:

1. **Fit time and memory** at every (n, d) in {1e4, 1e5, 1e6} x {20, 100, 1000, 5000}
   (cells whose data would not fit in `--max-gb` are skipped, with the reason printed; `--quick`:
   the cells up to 1e5 rows and 1e8 entries), for dense float64 and float32 X and CSR
   (`sparse_density`: 1% of the entries, at least 5 a row): `DPLogisticRegression` against
   `LogisticRegression` (lbfgs), `DPSCORegressor` (squared loss) against `Ridge`, `DPLasso`
   (penalised) against `Lasso`; each DP estimator with its default solver (`auto`), the
   old default and the alternatives the defaults were chosen from.  The fit time is the
   median over `--repeats` fits, after a warm-up fit on 1000 rows with the same public
   settings (so the noise calibration, a one-off cost of a few milliseconds to a second, is
   cached, as in any repeated fit); the ratio is of CPU time (`time.process_time`, every
   thread of the process) to the scikit-learn fit's on the same data, with BLAS and OpenMP
   pinned to one thread (threadpoolctl; `--threads`); wall-clock seconds are reported beside.
   Memory: the peak of `tracemalloc` (numpy's allocations are traced) during a second,
   untimed fit (tracing slows Python-level loops), X
   allocated before, over `X.nbytes` ("allocated beyond X"); and the same for the solver
   path alone (`bound_data` and the solver function, without the estimator's input
   validation).
2. **Accuracy / R^2 against epsilon** in {0.1, 0.5, 1, 2, 5} (delta = 1e-5) beside the
   non-private estimator: logistic regression on breast cancer (features scaled with the
   documented ranges, `benchmarks/_datasets.py`) and on generated data (n = 1e5, d = 100);
   ridge regression on generated data (n = 1e5, d = 100); the Lasso on generated data
   (n = 30000, d = 30).  Medians over seeds (splits and noise).
3. **The targets**, MET or NOT MET with the measured numbers.

The generated data sets are public by construction: their scales (`data_norm`,
`feature_bound`, `y_bound`) are constants of the generator, never read off the data.
Results: `benchmarks/results/speed.md` (`speed_quick.md` with `--quick`).
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import sys
import time
import tracemalloc
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import Lasso, LogisticRegression, Ridge

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.solvers import get_solver
from sklearn_dp.solvers._nystrom import AUTO_NEWTON_MAX_COLUMNS
from sklearn_dp.solvers._second_order import AUTO_SSP_ENTRYWISE_MAX_FEATURES

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, log
from _datasets import load_dataset

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = ["1e4", "1e5", "1e6"]
WIDTHS = ["20", "100", "1000", "5000"]
SIZES = [f"{n}x{d}" for n in ROWS for d in WIDTHS]
FORMATS = ["dense64", "dense32", "csr"]
#: Default cap on the memory a cell may need (X and the copies the fits make).
MAX_GB = 4.0
EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0]
QUICK_EPSILONS = [0.5, 1.0, 5.0]
DELTA = 1e-5

#: Public constants of the generators.
LOGISTIC_NORM = 1.5  # rows N(0, I / d): norms about 1
REGRESSION_Y_BOUND = 4.0  # |X w + 0.5 + noise| below 4 but for a few rows (clipped)
LASSO_W = [1.2, -0.8, 0.6, -1.0, 0.7]
LASSO_ALPHA = 0.01
LASSO_NOISE = 0.5
LASSO_Y_BOUND = float(np.sum(np.abs(LASSO_W)) + 0.3 + 3 * LASSO_NOISE)
RIDGE_ALPHA = 1e-4  # DPSCORegressor's default; Ridge(alpha * n) is the same objective


def parse_size(text):
    n, d = text.lower().split("x")
    return int(float(n)), int(float(d))


#: The small cells (``--quick``): up to 1e5 rows and 1e7 entries.
QUICK_SIZES = [s for s in SIZES if parse_size(s)[0] <= 10**5 and math.prod(parse_size(s)) <= 10**7]


def sparse_density(d):
    """1% of the entries, at least 5 a row (a narrow CSR X is not almost empty)."""
    return min(1.0, max(0.01, 5.0 / d))


def cell_bytes(n, d, fmt):
    """Bytes of X in format ``fmt``."""
    if fmt == "csr":
        return int(n * d * sparse_density(d)) * 12 + 8 * (n + 1)
    return n * d * (4 if fmt == "dense32" else 8)


def cell_memory(n, d, fmt):
    """What a cell needs at its peak, roughly: X, a float64 copy (scikit-learn's), the labels."""
    return cell_bytes(n, d, fmt) + n * d * 8 + 64 * n


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


def make_X(n, d, kind, seed):
    """Features: ``"normal"`` rows N(0, I / d) (norm ~1), ``"uniform"`` entries in [-1, 1]."""
    rng = np.random.default_rng(seed)
    if kind == "normal":
        X = rng.standard_normal(size=(n, d))
        X *= 1.0 / math.sqrt(d)
        return X
    return rng.uniform(-1.0, 1.0, size=(n, d))


def make_sparse(n, d, seed, density=None):
    """CSR with ``density`` nonzeros N(0, 1 / (density d)) per entry (row norms about 1)."""
    density = sparse_density(d) if density is None else density
    rng = np.random.default_rng(seed)
    X = sp.random(
        n,
        d,
        density=density,
        format="csr",
        random_state=rng,
        data_rvs=lambda k: rng.standard_normal(k) / math.sqrt(density * d),
    )
    X.sum_duplicates()
    return X


def logistic_labels(X, seed, signal=2.5):
    rng = np.random.default_rng(seed + 1)
    d = X.shape[1]
    w = rng.standard_normal(d)
    w *= signal * math.sqrt(d) / np.linalg.norm(w)
    z = np.asarray(X @ w).ravel() + 0.5
    return (rng.random(X.shape[0]) < 1.0 / (1.0 + np.exp(-z))).astype(int)


def regression_labels(X, seed):
    rng = np.random.default_rng(seed + 2)
    d = X.shape[1]
    w = rng.standard_normal(d)
    w *= math.sqrt(d) / np.linalg.norm(w)
    return np.asarray(X @ w).ravel() + 0.5 + 0.5 * rng.standard_normal(X.shape[0])


def lasso_labels(X, seed):
    rng = np.random.default_rng(seed + 3)
    w = np.zeros(X.shape[1])
    w[: len(LASSO_W)] = LASSO_W
    return np.asarray(X @ w).ravel() + 0.3 + LASSO_NOISE * rng.standard_normal(X.shape[0])


# --------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------


@dataclass
class Method:
    name: str
    make: object  # callable(epsilon, seed) -> estimator
    reference: bool = False  # the scikit-learn estimator
    solver_path: object = None  # callable(X, y) -> run bound_data + solver (memory only)
    large: bool = True  # run at n = 1e6
    note: str = ""


def _solver_path(solver, loss_name, estimator_kwargs):
    """The solver alone on bounded data, as the estimator would call it (memory of the path)."""

    def run(X, y):
        spec = get_solver(solver)
        options = dict(estimator_kwargs)
        kind = options.pop("kind")
        if kind == "logistic":
            y = np.where(y == 1, 1.0, -1.0)
            data = bound_data(X, y, fit_intercept=True, data_norm=LOGISTIC_NORM)
            loss = get_loss("log_loss")
            alpha = 1.0 / X.shape[0]
        elif kind == "ridge":
            y = np.clip(y, -REGRESSION_Y_BOUND, REGRESSION_Y_BOUND) / REGRESSION_Y_BOUND
            data = bound_data(X, y, fit_intercept=True, data_norm=LOGISTIC_NORM)
            loss = get_loss("squared", residual_bound=2.0)
            alpha = RIDGE_ALPHA  # degree-2 loss: the L2 strength is unchanged by the scaling
        else:
            y = np.clip(y, -LASSO_Y_BOUND, LASSO_Y_BOUND) / LASSO_Y_BOUND
            data = bound_data(X, y, fit_intercept=True, geometry=spec.geometry, feature_bound=1.0)
            loss = get_loss("squared", residual_bound=2.0)
            alpha = LASSO_ALPHA / LASSO_Y_BOUND
            options.setdefault("l1_ratio", 1.0)
        spec.run(
            data,
            loss,
            n_outputs=1,
            alpha=alpha,
            epsilon=1.0,
            delta=DELTA,
            random_state=0,
            **options,
        )

    return run


def logistic_methods():
    def dp(solver=None, **params):
        def make(epsilon, seed, data_norm=LOGISTIC_NORM):
            kwargs = dict(
                epsilon=epsilon,
                delta=DELTA,
                data_norm=data_norm,
                classes=[0, 1],
                random_state=seed,
                **params,
            )
            if solver:
                kwargs["solver"] = solver
            return DPLogisticRegression(**kwargs)

        return make

    return [
        Method("sklearn lbfgs", lambda e, s, **k: LogisticRegression(), reference=True),
        Method(
            "default (auto)",
            dp(),
            solver_path=lambda X, y: _solver_path(
                _second_order_default(X), "log_loss", dict(kind="logistic")
            )(X, y),
        ),
        Method(
            "dp_newton, hessian='exact'",
            dp("dp_newton", solver_options={"hessian": "exact"}),
            solver_path=_solver_path(
                "dp_newton", "log_loss", dict(kind="logistic", hessian="exact")
            ),
        ),
        Method("dp_nystrom", dp("dp_nystrom")),
        Method("dp_gd (old default beyond 1000 columns)", dp("dp_gd")),
    ]


def _second_order_default(X):
    """The solver ``auto`` picks for a smooth L2 fit of X with an intercept (public width)."""
    narrow = X.shape[1] + 1 <= AUTO_NEWTON_MAX_COLUMNS
    return "dp_newton" if narrow and not sp.issparse(X) else "dp_nystrom"


def ridge_methods():
    def dp(solver=None, **params):
        def make(epsilon, seed):
            kwargs = dict(
                epsilon=epsilon,
                delta=DELTA,
                data_norm=LOGISTIC_NORM,
                y_bound=REGRESSION_Y_BOUND,
                alpha=RIDGE_ALPHA,
                random_state=seed,
                **params,
            )
            if solver:
                kwargs["solver"] = solver
            return DPSCORegressor(**kwargs)

        return make

    return [
        Method("sklearn Ridge", lambda e, s, n=None: Ridge(alpha=RIDGE_ALPHA * n), reference=True),
        Method(
            "default (auto)",
            dp(),
            solver_path=lambda X, y: _solver_path(
                _second_order_default(X), "squared", dict(kind="ridge")
            )(X, y),
        ),
        Method(
            "dp_ssp",
            dp("dp_ssp"),
            solver_path=_solver_path("dp_ssp", "squared", dict(kind="ridge")),
        ),
        Method("dp_nystrom", dp("dp_nystrom")),
        Method("dp_gd (old default beyond 1000 columns)", dp("dp_gd")),
    ]


def lasso_methods():
    def dp(solver=None, **params):
        def make(epsilon, seed):
            kwargs = dict(
                epsilon=epsilon,
                delta=DELTA,
                alpha=LASSO_ALPHA,
                feature_bound=1.0,
                y_bound=LASSO_Y_BOUND,
                random_state=seed,
                **params,
            )
            if solver:
                kwargs["solver"] = solver
            return DPLasso(**kwargs)

        return make

    return [
        Method("sklearn Lasso", lambda e, s: Lasso(alpha=LASSO_ALPHA), reference=True),
        # auto: dp_ssp up to 128 features (delta > 0), dp_cd beyond; the solver
        # path follows the same rule.
        Method(
            "default (auto: dp_ssp / dp_cd)",
            dp(),
            solver_path=lambda X, y: _solver_path(
                "dp_ssp" if X.shape[1] <= AUTO_SSP_ENTRYWISE_MAX_FEATURES else "dp_cd",
                "squared",
                dict(kind="lasso"),
            )(X, y),
        ),
        Method("dp_cd (old default)", dp("dp_cd")),
    ]


PROBLEMS = {
    "logistic": (
        "DPLogisticRegression vs LogisticRegression (lbfgs)",
        logistic_methods,
        "normal",
        logistic_labels,
    ),
    "ridge": (
        "DPSCORegressor (squared loss, L2) vs Ridge",
        ridge_methods,
        "normal",
        regression_labels,
    ),
    "lasso": (f"DPLasso(alpha={LASSO_ALPHA}) vs Lasso", lasso_methods, "uniform", lasso_labels),
}


def build(method, problem, epsilon, seed, n):
    if problem == "ridge" and method.reference:
        return method.make(epsilon, seed, n=n)
    return method.make(epsilon, seed)


# --------------------------------------------------------------------------
# Measurements
# --------------------------------------------------------------------------


def measure(fit, X, memory=True):
    """(wall seconds, CPU seconds, peak bytes allocated during the fit) with X allocated before.

    Two fits: one timed without tracing, one traced for memory (tracemalloc
    slows every allocation, so a timed fit under it penalises solvers that
    loop in Python over many small steps far more than compiled ones).
    ``memory=False`` skips the second (peak NaN).
    """
    gc.collect()
    start, cpu_start = time.perf_counter(), time.process_time()
    fit()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    if not memory:
        return elapsed, cpu, math.nan
    gc.collect()
    tracemalloc.start()
    try:
        fit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return elapsed, cpu, peak


def nbytes(X):
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


@dataclass
class Row:
    problem: str
    size: str
    fmt: str
    method: str
    seconds: float = math.nan
    cpu: float = math.nan
    ratio: float = math.nan
    memory: float = math.nan
    solver_memory: float = math.nan
    error: str = ""
    extra: dict = field(default_factory=dict)


def speed_case(problem, size, fmt, repeats, log, memory=True, defaults_only=False):
    title, methods_of, kind, labels = PROBLEMS[problem]
    n, d = parse_size(size)
    if fmt == "csr":
        X = make_sparse(n, d, seed=0)
    else:
        X = make_X(n, d, kind, seed=0)
        if fmt == "dense32":
            X = X.astype(np.float32)
    y = labels(X, seed=0)
    size_X = nbytes(X)
    rows, reference_seconds = [], None
    for method in methods_of():
        if n >= 10**6 and not method.large:
            continue
        if defaults_only and not (method.reference or method.name.startswith("default")):
            continue
        row = Row(problem, size, fmt, method.name)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(method, problem, 1.0, 0, min(n, 1000)).fit(X[:1000], y[:1000])  # warm-up
                timings, cpus, peaks = [], [], []
                for r in range(repeats):
                    estimator = build(method, problem, 1.0, r, n)
                    seconds, cpu, peak = measure(
                        lambda: estimator.fit(X, y),  # noqa: F821 (del below)
                        X,
                        memory,
                    )
                    timings.append(seconds)
                    cpus.append(cpu)
                    peaks.append(peak)
                row.seconds = float(np.median(timings))
                row.cpu = float(np.median(cpus))
                row.memory = max(peaks) / size_X
                if memory and method.solver_path is not None:
                    _, _, peak = measure(lambda: method.solver_path(X, y), X)  # noqa: F821
                    row.solver_memory = peak / size_X
                if not method.reference:
                    row.extra["solver_"] = estimator.solver_
        except Exception as exc:  # a method that fails is reported, not fatal
            row.error = f"{type(exc).__name__}: {exc}"[:120]
        if method.reference:
            reference_seconds = row.cpu
        rows.append(row)
        log(
            f"  {problem} {size} {fmt} {method.name}: {row.cpu:.3f} s CPU, {row.seconds:.3f} s "
            f"wall, memory {row.memory:.2f}x{' ' + row.error if row.error else ''}"
        )
    for row in rows:
        if reference_seconds:
            row.ratio = row.cpu / reference_seconds
    del X, y
    gc.collect()
    return rows


# --------------------------------------------------------------------------
# Accuracy against epsilon
# --------------------------------------------------------------------------


def _generated_split(n, d, kind, labels, seed, n_test=20000):
    X = make_X(n + n_test, d, kind, seed=100 + seed)
    y = labels(X, seed=0)  # the same model for every seed; fresh rows and noise
    return X[:n], X[n:], y[:n], y[n:]


def accuracy_cases(quick):
    bc = load_dataset("breast_cancer")
    bc_seeds = 3 if quick else 10
    gen_seeds = 1 if quick else 3
    return [
        (
            "logistic",
            "Breast cancer (n=569, d=30; public ranges), test accuracy",
            "accuracy",
            [bc.split(s) for s in range(bc_seeds)],
            dict(data_norm=bc.data_norm),
        ),
        (
            "logistic",
            "Generated logistic (n=1e5, d=100), test accuracy",
            "accuracy",
            [
                _generated_split(100_000, 100, "normal", logistic_labels, s)
                for s in range(gen_seeds)
            ],
            {},
        ),
        (
            "ridge",
            "Generated linear (n=1e5, d=100), test R^2",
            "r2",
            [
                _generated_split(100_000, 100, "normal", regression_labels, s)
                for s in range(gen_seeds)
            ],
            {},
        ),
        (
            "lasso",
            f"Generated sparse linear (n=30000, d=30), Lasso alpha={LASSO_ALPHA}, test R^2",
            "r2",
            [
                _generated_split(30_000, 30, "uniform", lasso_labels, s, n_test=10000)
                for s in range(max(gen_seeds, 3))
            ],
            {},
        ),
    ]


def accuracy_table(problem, splits, epsilons, extra, log):
    _, methods_of, _, _ = PROBLEMS[problem]
    table = {}
    for method in methods_of():
        for epsilon in [math.inf] if method.reference else epsilons:
            scores = []
            for seed, (X_train, X_test, y_train, y_test) in enumerate(splits):
                estimator = build(method, problem, epsilon, seed, X_train.shape[0])
                if extra and not method.reference:
                    estimator.set_params(**extra)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    estimator.fit(X_train, y_train)
                scores.append(estimator.score(X_test, y_test))
            table[(method.name, epsilon)] = (
                float(np.median(scores)),
                float(np.min(scores)),
                float(np.max(scores)),
            )
        log(f"  accuracy {problem} {method.name}: done")
    return table


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _markdown(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"
    return "\n".join(
        [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        + [line(r) for r in rows]
    )


def speed_section(rows):
    parts = []
    for problem, (title, _, _, _) in PROBLEMS.items():
        chosen = [r for r in rows if r.problem == problem]
        if not chosen:
            continue
        table = []
        for r in chosen:
            table.append(
                [
                    f"{r.size}",
                    r.fmt,
                    r.method,
                    "failed" if r.error else f"{r.cpu:.3f}",
                    "" if r.error or math.isnan(r.ratio) else f"{r.ratio:.2f}",
                    "" if r.error else f"{r.seconds:.3f}",
                    "" if math.isnan(r.memory) else f"{r.memory:.2f}",
                    "" if math.isnan(r.solver_memory) else f"{r.solver_memory:.2f}",
                    r.extra.get("solver_", "") or (r.error[:60] if r.error else ""),
                ]
            )
        parts += [
            f"### {title}",
            "",
            _markdown(
                [
                    "n x d",
                    "X",
                    "method",
                    "fit CPU (s)",
                    "CPU ratio to sklearn",
                    "fit wall (s)",
                    "memory / X (fit)",
                    "memory / X (solver path)",
                    "solver_ / note",
                ],
                table,
            ),
            "",
        ]
    return parts


def accuracy_section(results, epsilons):
    parts = []
    for (_problem, title, _metric, _, _), table in results:
        names = []
        for name, _ in table:
            if name not in names:
                names.append(name)
        header = ["epsilon"] + names
        rows = []
        for epsilon in epsilons:
            row = [f"{epsilon:g}"]
            for name in names:
                if (name, epsilon) in table:
                    med, lo, hi = table[(name, epsilon)]
                    row.append(f"{med:.3f} ({lo:.3f}-{hi:.3f})")
                elif (name, math.inf) in table:
                    med, lo, hi = table[(name, math.inf)]
                    row.append(f"{med:.3f} (non-private)")
                else:
                    row.append("")
            rows.append(row)
        parts += [
            f"### {title}",
            "",
            "Median over seeds (min-max).",
            "",
            _markdown(header, rows),
            "",
        ]
    return parts


#: A step in CPU time per entry of X above this between neighbouring cells is a cliff.
CLIFF = 1.5


def steps_section(rows):
    """The steps in the defaults' CPU time between neighbouring sizes and widths (cliffs listed)."""
    times = {
        (r.problem, r.fmt, *parse_size(r.size)): r.cpu
        for r in rows
        if r.method.startswith("default") and not r.error
    }
    lines = []
    for (problem, fmt, n, d), cpu in sorted(times.items()):
        for neighbour in ((n * 10, d), (n, _next_width(d))):
            other = times.get((problem, fmt, *neighbour))
            if other is not None:
                # Per entry of X: a step in time per entry is a cliff, growth with size is not.
                step = (other / (neighbour[0] * neighbour[1])) / (cpu / (n * d))
                lines.append(
                    (step, f"{problem} {fmt} {n:.0e}x{d} -> {neighbour[0]:.0e}x{neighbour[1]}")
                )
    if not lines:
        return []
    step, where = max(lines)
    cliffs = [f"- {value:.2f}x: {cells}" for value, cells in sorted(lines, reverse=True)]
    cliffs = cliffs[: sum(value > CLIFF for value, _ in lines)]
    return [
        f"Largest step in the defaults' CPU time per entry of X between neighbouring cells: "
        f"{step:.2f}x ({where}).",
        "",
        f"Steps above {CLIFF}x (cliffs), largest first:" if cliffs else f"No step above {CLIFF}x.",
        "",
        *cliffs,
        "",
    ]


def dtype_section(rows):
    """float32 against float64 fit time, cell by cell, for the defaults and scikit-learn."""
    times = {(r.problem, r.size, r.fmt, r.method): r.cpu for r in rows if not r.error}
    table = []
    for (problem, size, fmt, method), cpu in times.items():
        if fmt != "dense32" or not method.startswith(("default", "sklearn")):
            continue
        other = times.get((problem, size, "dense64", method))
        if other:
            table.append(
                [problem, size, method, f"{other:.3f}", f"{cpu:.3f}", f"{cpu / other:.2f}"]
            )
    if not table:
        return []
    return [
        "### float32 against float64",
        "",
        "CPU time of the same fit on the same data as float64 and as float32 X. The DP fits "
        "compute per-row values (scores, row norms) in float32 and accumulate every released "
        "sum over rows in float64 (a float32 sum of n bounded terms can be off by more than "
        'the sensitivity; docs/threat_model.md, "Floating point").',
        "",
        _markdown(
            [
                "problem",
                "n x d",
                "method",
                "float64 CPU (s)",
                "float32 CPU (s)",
                "float32 / float64",
            ],
            table,
        ),
        "",
    ]


def _next_width(d):
    widths = [int(w) for w in WIDTHS]
    return widths[widths.index(d) + 1] if d in widths[:-1] else None


def targets_section(rows, accuracy):
    def find(problem, size, fmt, prefix):
        for r in rows:
            if (r.problem, r.size, r.fmt) == (problem, size, fmt) and r.method.startswith(prefix):
                return r
        return None

    lines = []

    def verdict(ok):
        return "MET" if ok else "NOT MET"

    for size in ("1e5x100", "1e6x100"):
        r = find("logistic", size, "dense64", "default")
        if r and not r.error:
            lines.append(
                f"- DPLogisticRegression() fit time <= 1.0x lbfgs at {size} (float64): "
                f"{r.ratio:.2f}x -> {verdict(r.ratio <= 1.0)}"
            )
    r = find("ridge", "1e6x100", "dense64", "default")
    if r and not r.error:
        lines.append(
            f"- DPSCORegressor() (squared) fit time <= 1.0x Ridge at 1e6x100: "
            f"{r.ratio:.2f}x -> {verdict(r.ratio <= 1.0)}"
        )
    for (problem, title, _metric, _, _), table in accuracy:
        default = next((name for (name, _) in table if name.startswith("default")), None)
        reference = next((name for (name, e) in table if math.isinf(e)), None)
        if default is None or reference is None or (default, 1.0) not in table:
            continue
        gap = table[(reference, math.inf)][0] - table[(default, 1.0)][0]
        limit = 0.01 if problem == "logistic" else 0.02
        if problem == "ridge":
            lines.append(
                f"- (no target) {title}: default at epsilon=1 is {gap:+.3f} below non-private"
            )
            continue
        lines.append(
            f"- {title}: default at epsilon=1 within {limit:g} of non-private: gap "
            f"{gap:+.3f} -> {verdict(gap <= limit)}"
        )
    worst = {}
    for r in rows:
        if (
            r.method.startswith("default")
            and r.fmt in ("dense64", "dense32")
            and not r.error
            and not math.isnan(r.memory)
        ):
            key = (r.problem, r.fmt)
            worst[key] = max(worst.get(key, 0.0), r.memory)
    for (problem, fmt), value in sorted(worst.items()):
        solver_path = max(
            (
                r.solver_memory
                for r in rows
                if r.problem == problem
                and r.fmt == fmt
                and r.method.startswith("default")
                and not r.error
            ),
            default=math.nan,
        )
        lines.append(
            f"- Memory beyond X <= 0.3x, {problem} default, {fmt}: fit {value:.2f}x "
            f"(solver path {solver_path:.2f}x) -> {verdict(value <= 0.3)}"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"the small cells {QUICK_SIZES}, fewer seeds and epsilons",
    )
    parser.add_argument("--sizes", nargs="+", help=f"subset of {SIZES} (any NxD works)")
    parser.add_argument(
        "--max-gb",
        type=float,
        default=MAX_GB,
        help="skip cells whose data and copies would need more (GB; default %(default)s)",
    )
    parser.add_argument(
        "--defaults-only",
        action="store_true",
        help="time the defaults and scikit-learn only (not the alternatives)",
    )
    parser.add_argument(
        "--skip-memory", action="store_true", help="no traced second fit (time only)"
    )
    parser.add_argument("--formats", nargs="+", choices=FORMATS)
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS))
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="fits per timing (default 3 below 1e6 rows, 1 at 1e6)",
    )
    add_threads_argument(
        parser,
        help="cap BLAS/OpenMP threads (threadpoolctl) for every fit; default 1 (CPU-time "
        "ratios of single-threaded fits); 0 for the libraries' own defaults",
    )
    parser.set_defaults(threads=1)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--skip-accuracy", action="store_true")
    parser.add_argument("--output", help="report path (default results/speed[_quick].md)")
    args = parser.parse_args(argv)

    limit_threads(args.threads)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    formats = args.formats or FORMATS
    problems = args.problems or list(PROBLEMS)
    epsilons = QUICK_EPSILONS if args.quick else EPSILONS
    load_start = os.getloadavg()[0]
    wall = time.perf_counter()

    rows, skipped = [], []
    if not args.skip_speed:
        for problem in problems:
            for size in sizes:
                for fmt in formats:
                    n, d = parse_size(size)
                    need = cell_memory(n, d, fmt) / 2**30
                    if need > args.max_gb:
                        reason = (
                            f"{problem} {size} {fmt}: skipped, needs about {need:.1f} GB "
                            f"(X and a float64 copy) > --max-gb {args.max_gb:g}"
                        )
                        log(reason)
                        skipped.append(reason)
                        continue
                    repeats = args.repeats or (1 if n * d >= 10**8 or n >= 10**6 else 3)
                    log(f"speed: {problem} {size} {fmt}")
                    rows += speed_case(
                        problem,
                        size,
                        fmt,
                        repeats,
                        log,
                        memory=not args.skip_memory,
                        defaults_only=args.defaults_only,
                    )

    accuracy = []
    if not args.skip_accuracy:
        for case in accuracy_cases(args.quick):
            problem, title, metric, splits, extra = case
            if problem not in problems:
                continue
            log(f"accuracy: {title}")
            accuracy.append((case, accuracy_table(problem, splits, epsilons, extra, log)))

    wall = time.perf_counter() - wall
    load_end = os.getloadavg()[0]
    command = " ".join(
        ["python benchmarks/bench_speed.py"] + (sys.argv[1:] if argv is None else list(argv))
    )
    parts = [
        "# Speed, memory and accuracy of the defaults",
        "",
        f"Command: `PYTHONPATH=. {command}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M:%S %Z')}; whole run {wall:.0f} s wall time; "
        f"load average (1 min) {load_start:.2f} at start, {load_end:.2f} at end (other "
        "processes share the machine when it is above the core count; the ratios, measured "
        "back to back on the same data, are steadier than the absolute times).",
        "",
        f"Environment: {environment()}.",
        "",
        "Every DP fit is (epsilon, delta=1e-5)-DP with respect to adding or removing one training "
        "row; scikit-learn is not private.  Public by construction: the generators, their "
        f"scales (`data_norm={LOGISTIC_NORM}` for rows N(0, I/d), `feature_bound=1` for uniform "
        f"entries, `y_bound={REGRESSION_Y_BOUND}` and `{LASSO_Y_BOUND:.2f}` for the labels), "
        "the penalties.  Logistic: `C=1` (scikit-learn's default) for both; ridge: "
        f"`DPSCORegressor(alpha={RIDGE_ALPHA})` against `Ridge(alpha={RIDGE_ALPHA} * n)`, the "
        f"same objective; Lasso: `alpha={LASSO_ALPHA}` for both.",
        "",
    ]
    if rows:
        parts += [
            "## Fit time and memory",
            "",
            "Fit time: median of the timed fits at epsilon=1 after a warm-up (calibration "
            "cached), without tracing; CPU time of the process and wall-clock time. Ratio: of CPU "
            "times, to the scikit-learn fit of the same data in the same run. Memory: "
            "tracemalloc peak during a second (untimed) fit over the size of "
            'X (X allocated before); "solver path": `bound_data` and the solver function '
            "alone, without the estimators' input validation (which keeps float32 X as "
            "float32). CSR: 1% of the entries, at least 5 a row. "
            f"Threads: {args.threads or 'the libraries own defaults'}.",
            "",
        ] + speed_section(rows)
        if skipped:
            parts += ["Skipped cells:", ""] + [f"- {reason}" for reason in skipped] + [""]
        parts += steps_section(rows)
        parts += dtype_section(rows)
    if accuracy:
        parts += ["## Accuracy against epsilon", ""] + accuracy_section(
            [(case, table) for case, table in accuracy], epsilons
        )
    parts += ["## Targets", ""] + targets_section(rows, accuracy) + [""]
    failures = [r for r in rows if r.error]
    if failures:
        parts += (
            ["## Failures", ""]
            + [f"- {r.problem} {r.size} {r.fmt} {r.method}: {r.error}" for r in failures]
            + [""]
        )
    report = "\n".join(parts)
    print(report)
    output = (
        Path(args.output)
        if args.output
        else RESULTS / ("speed_quick.md" if args.quick else "speed.md")
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(report)
    log(f"wrote {output}")


if __name__ == "__main__":
    main()
