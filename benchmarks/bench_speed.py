"""Speed, memory and accuracy of the default solvers against scikit-learn.

One command, one run, one report::

    PYTHONPATH=. python benchmarks/bench_speed.py                 # full (about 30 min, 2 cores)
    PYTHONPATH=. python benchmarks/bench_speed.py --quick         # smoke test (about 2 min)
    PYTHONPATH=. python benchmarks/bench_speed.py --threads 1     # cap BLAS / OpenMP threads
    PYTHONPATH=. python benchmarks/bench_speed.py --sizes 1e5x100 --formats dense64 --skip-accuracy

Three parts, each against scikit-learn on the same data in the same run:

1. **Fit time and memory** at (n, d) in {(1e4, 20), (1e5, 100), (1e6, 20), (1e6, 100)},
   for dense float64 and float32 X and a sparse CSR case: `DPLogisticRegression` against
   `LogisticRegression` (lbfgs), `DPSCORegressor` (squared loss) against `Ridge`, `DPLasso`
   (penalised) against `Lasso`; each DP estimator with its default solver (`auto`), the
   old default and the alternatives the defaults were chosen from.  The fit time is the
   median over `--repeats` fits, after a warm-up fit on 1000 rows with the same public
   settings (so the noise calibration, a one-off cost of a few milliseconds to a second, is
   cached, as in any repeated fit); the ratio is to the scikit-learn fit on the same data.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, log
from _datasets import load_dataset

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = ["1e4x20", "1e5x100", "1e6x20", "1e6x100"]
QUICK_SIZES = ["1e4x20", "1e5x100"]
FORMATS = ["dense64", "dense32", "csr"]
#: The sparse case: one shape, 1% density (rows of ~5 nonzeros... see make_X).
SPARSE_SHAPE = "1e5x500"
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


def make_sparse(n, d, seed, density=0.01):
    """CSR with ``density`` nonzeros N(0, 1 / (density d)) per entry (row norms about 1)."""
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
            "default (auto: dp_newton)",
            dp(),
            solver_path=_solver_path("dp_newton", "log_loss", dict(kind="logistic")),
        ),
        Method(
            "dp_newton, hessian='exact'",
            dp("dp_newton", solver_options={"hessian": "exact"}),
            solver_path=_solver_path(
                "dp_newton", "log_loss", dict(kind="logistic", hessian="exact")
            ),
        ),
        Method("dp_gd (old default)", dp("dp_gd")),
    ]


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
            "default (auto: dp_newton)",
            dp(),
            solver_path=_solver_path("dp_newton", "squared", dict(kind="ridge")),
        ),
        Method(
            "dp_ssp",
            dp("dp_ssp"),
            solver_path=_solver_path("dp_ssp", "squared", dict(kind="ridge")),
        ),
        Method("dp_gd (old default)", dp("dp_gd")),
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
        # auto: dp_ssp up to 64 features (delta > 0), dp_cd beyond; the solver
        # path follows the same rule.
        Method(
            "default (auto: dp_ssp / dp_cd)",
            dp(),
            solver_path=lambda X, y: _solver_path(
                "dp_ssp" if X.shape[1] <= 64 else "dp_cd", "squared", dict(kind="lasso")
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


def measure(fit, X):
    """(seconds, peak bytes allocated during the fit) with X allocated before.

    Two fits: one timed without tracing, one traced for memory (tracemalloc
    slows every allocation, so a timed fit under it penalises solvers that
    loop in Python over many small steps far more than compiled ones).
    """
    gc.collect()
    start = time.perf_counter()
    fit()
    elapsed = time.perf_counter() - start
    gc.collect()
    tracemalloc.start()
    try:
        fit()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return elapsed, peak


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
    ratio: float = math.nan
    memory: float = math.nan
    solver_memory: float = math.nan
    error: str = ""
    extra: dict = field(default_factory=dict)


def speed_case(problem, size, fmt, repeats, log):
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
        row = Row(problem, size, fmt, method.name)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(method, problem, 1.0, 0, min(n, 1000)).fit(X[:1000], y[:1000])  # warm-up
                timings, peaks = [], []
                for r in range(repeats):
                    estimator = build(method, problem, 1.0, r, n)
                    seconds, peak = measure(lambda: estimator.fit(X, y), X)  # noqa: F821 (del below)
                    timings.append(seconds)
                    peaks.append(peak)
                row.seconds = float(np.median(timings))
                row.memory = max(peaks) / size_X
                if method.solver_path is not None:
                    _, peak = measure(lambda: method.solver_path(X, y), X)  # noqa: F821
                    row.solver_memory = peak / size_X
                if not method.reference:
                    row.extra["solver_"] = estimator.solver_
        except Exception as exc:  # a method that fails is reported, not fatal
            row.error = f"{type(exc).__name__}: {exc}"[:120]
        if method.reference:
            reference_seconds = row.seconds
        rows.append(row)
        log(
            f"  {problem} {size} {fmt} {method.name}: {row.seconds:.3f} s, memory "
            f"{row.memory:.2f}x{' ' + row.error if row.error else ''}"
        )
    for row in rows:
        if reference_seconds:
            row.ratio = row.seconds / reference_seconds
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
                    "failed" if r.error else f"{r.seconds:.3f}",
                    "" if r.error or math.isnan(r.ratio) else f"{r.ratio:.2f}",
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
                    "fit (s)",
                    "ratio to sklearn",
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
        if r.method.startswith("default") and r.fmt in ("dense64", "dense32") and not r.error:
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
        "--quick", action="store_true", help="sizes 1e4x20 and 1e5x100, fewer seeds and epsilons"
    )
    parser.add_argument("--sizes", nargs="+", help=f"subset of {SIZES} (any NxD works)")
    parser.add_argument("--formats", nargs="+", choices=FORMATS)
    parser.add_argument("--problems", nargs="+", choices=list(PROBLEMS))
    parser.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="fits per timing (default 3 below 1e6 rows, 1 at 1e6)",
    )
    add_threads_argument(parser)
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

    rows = []
    if not args.skip_speed:
        for problem in problems:
            for size in sizes:
                for fmt in formats:
                    if fmt == "csr":
                        continue
                    repeats = args.repeats or (1 if parse_size(size)[0] >= 10**6 else 3)
                    log(f"speed: {problem} {size} {fmt}")
                    rows += speed_case(problem, size, fmt, repeats, log)
            if "csr" in formats:
                log(f"speed: {problem} {SPARSE_SHAPE} csr")
                rows += speed_case(problem, SPARSE_SHAPE, "csr", args.repeats or 3, log)

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
            "cached), without tracing. Ratio: to the scikit-learn fit of the same data in the "
            "same run. Memory: tracemalloc peak during a second (untimed) fit over the size of "
            'X (X allocated before); "solver path": `bound_data` and the solver function '
            "alone, without the estimators' input validation (which keeps float32 X as "
            f"float32). Sparse: CSR {SPARSE_SHAPE}, 1% density.",
            "",
        ] + speed_section(rows)
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
