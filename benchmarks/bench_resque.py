"""Benchmark ``solver="resque"`` beside ``dp_sgd`` on absolute-loss (LAD) regression.

For each data set, method, epsilon and seed it fits ``DPSCORegressor(loss="absolute")``
on the whole data set and measures

* the excess empirical risk ``mean|y - X w - b| - F*`` in the units of y, where
  ``F*`` is the exact optimum of the same (bounded) problem from a linear program
  (the dual of least absolute deviations, ``scipy.optimize.linprog`` with HiGHS);
* the wall time of the fit;
* the parallel cost: query rounds (sequential rounds of gradient queries; all
  queries of a round are independent), sequential steps and total per-sample
  gradient queries.

Methods: ``resque`` with its defaults; ``dp_sgd`` with its defaults (expected
batch 10% of n, 10 passes); ``dp_sgd`` with resque's gradient budget (batch 32,
20 passes).  All get the same public radius.  Also: an ablation of
``resque``'s target tolerance and restarts, and a breakdown of its time into
query rounds and sequential steps.

Usage::

    python benchmarks/bench_resque.py            # full run (about 6 minutes)
    python benchmarks/bench_resque.py --quick    # smoke test (writes resque_quick.*)
    python benchmarks/bench_resque.py --options  # ball oracles: EpochSGD, ACSA, multilevel
    python benchmarks/bench_resque.py --depth    # parallel depth against DP-SGD at equal accuracy

Writes ``benchmarks/results/resque.md`` and ``benchmarks/results/resque.png``
(``--options``: ``benchmarks/results/resque_options.md``: ``resque``'s inner
solvers and Proposition 2's multilevel calls at equal epsilon and gradient
budget, accuracy and parallel depth; ``--depth``: ``benchmarks/results/resque_depth.md``,
the query depth ``resque`` needs for an accuracy beside the fewest sequential steps
with which ``dp_sgd``, over a grid of batch sizes and step counts, reaches it).
"""

from __future__ import annotations

import argparse
import math
import platform
import sys
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sklearn
from scipy.optimize import linprog
from sklearn.datasets import load_diabetes

import sklearn_dp
import sklearn_dp.solvers._resque_oracle as oracle_module
from sklearn_dp import DPSCORegressor
from sklearn_dp._data import bound_data, clip_labels
from sklearn_dp.solvers._resque import DEFAULT_TOL_FACTOR, default_tolerance
from sklearn_dp.solvers._sgd import DEFAULT_SAMPLING_RATE

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_eps, md_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
EPSILONS = (0.5, 1.0, 2.0, 4.0, math.inf)
QUICK_EPSILONS = (1.0, math.inf)
SEEDS = 3
ABLATION_FACTORS = (3.0, 1.0, 0.3, 0.1, 0.03)


# --------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------


@dataclass
class Dataset:
    name: str
    title: str
    X: np.ndarray
    y: np.ndarray
    data_norm: float
    y_bound: float
    radius: float  # in the user's units of y (the estimator divides by y_bound)
    public: list = field(default_factory=list)


def synthetic(n, d=10, seed=0):
    """Rows uniform in direction inside the unit ball, t(3) label noise, labels in [-1, 1]."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / math.sqrt(d)
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    y = np.clip(0.8 * X @ w + 0.1 + 0.1 * rng.standard_t(3, size=n), -1.0, 1.0)
    return Dataset(
        name=f"synthetic_{n // 1000}k",
        title=f"synthetic LAD, n={n}, d={d}",
        X=X,
        y=y,
        data_norm=1.0,
        y_bound=1.0,
        radius=2.0,
        public=[
            "data_norm=1 and y_bound=1: the generator keeps rows in the unit ball and labels "
            "in [-1, 1]",
            "radius=2: the generating coefficients have norm 0.8 and intercept 0.1",
        ],
    )


def diabetes():
    """scikit-learn's bundled diabetes data (features as distributed: centred, unit column norm)."""
    data = load_diabetes()
    n, d = data.data.shape
    # Each column has unit L2 norm over the n rows (documented), so an entry is
    # about 1/sqrt(n) in size; 4 such units per feature bound the row norm.
    data_norm = 4.0 * math.sqrt(d / n)
    return Dataset(
        name="diabetes",
        title=f"diabetes (sklearn), n={n}, d={d}",
        X=data.data,
        y=data.target.astype(float),
        data_norm=data_norm,
        y_bound=350.0,
        radius=3500.0,
        public=[
            f"data_norm = 4 sqrt(d/n) = {data_norm:.3f}: the documented scaling gives each column "
            "unit norm, i.e. entries of about 1/sqrt(n); 4 of those per feature",
            "y_bound=350: the disease-progression score is taken to lie in [0, 350]",
            "radius=3500 (10 y_bound): a generous public bound on the coefficient vector",
        ],
    )


def lad_optimum(data):
    """Exact min_w mean|A w - y| on the bounded data, via the dual LP (HiGHS)."""
    n, p = data.X.shape
    result = linprog(
        -data.y, A_eq=data.X.T, b_eq=np.zeros(p), bounds=[(-1 / n, 1 / n)], method="highs"
    )
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    return -result.eqlin.marginals, -result.fun


# --------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------


def methods(n):
    return {
        "resque": dict(solver="resque"),
        "dp_sgd": dict(solver="dp_sgd"),
        "dp_sgd (batch 32, 20 passes)": dict(
            solver="dp_sgd", batch_size=min(32, n), max_iter=math.ceil(20 * n / min(32, n))
        ),
    }


def make(dataset, epsilon, seed, params, **extra):
    n = dataset.X.shape[0]
    return DPSCORegressor(
        epsilon=epsilon,
        delta=n**-1.1,
        loss="absolute",
        penalty=None,
        radius=dataset.radius,
        data_norm=dataset.data_norm,
        y_bound=dataset.y_bound,
        random_state=seed,
        **params,
        **extra,
    )


def cost(model, n):
    """(query rounds, sequential steps, total queries) of a fitted model."""
    if model.solver_ == "resque":
        return model.query_depth_, model.n_iter_, model.n_queries_
    batch = model.batch_size or DEFAULT_SAMPLING_RATE * n  # dp_sgd's default expected batch
    return model.n_iter_, model.n_iter_, model.n_iter_ * batch  # expected queries


def run_dataset(dataset, epsilons, seeds, log):
    n = dataset.X.shape[0]
    bounded = bound_data(
        dataset.X,
        clip_labels(dataset.y, dataset.y_bound),
        fit_intercept=True,
        data_norm=dataset.data_norm,
    )
    t = time.perf_counter()
    w_star, f_star = lad_optimum(bounded)
    lp_seconds = time.perf_counter() - t
    # the estimators see exactly this problem (labels and rows already inside the bounds)
    assert np.all(np.abs(dataset.y) <= dataset.y_bound)
    y_user = dataset.y
    excess = defaultdict(lambda: defaultdict(list))
    seconds = defaultdict(lambda: defaultdict(list))
    costs = defaultdict(dict)
    for name, params in methods(n).items():
        for eps in epsilons:
            for seed in seeds:
                model = make(dataset, eps, seed, params)
                start = time.perf_counter()
                model.fit(dataset.X, dataset.y)
                seconds[name][eps].append(time.perf_counter() - start)
                value = np.mean(np.abs(y_user - model.predict(dataset.X)))
                excess[name][eps].append(value - f_star)
                costs[name][eps] = cost(model, n)
            log(
                f"  {dataset.name} {name} eps={eps:g}: median excess "
                f"{np.median(excess[name][eps]):.3g}, median time "
                f"{np.median(seconds[name][eps]):.2f} s"
            )
    return dict(
        f_star=f_star,
        w_star_norm=float(np.linalg.norm(w_star)),
        lp_seconds=lp_seconds,
        excess=excess,
        seconds=seconds,
        costs=costs,
        n=n,
        d=dataset.X.shape[1],
    )


def tolerance_ablation(dataset, seeds, epsilons=(1.0, math.inf)):
    n, d = dataset.X.shape
    bounded = bound_data(dataset.X, dataset.y, fit_intercept=True, data_norm=dataset.data_norm)
    _, f_star = lad_optimum(bounded)
    rows = []
    settings = [(factor, True) for factor in ABLATION_FACTORS] + [(DEFAULT_TOL_FACTOR, False)]
    for factor, restart in settings:
        cells = []
        for eps in epsilons:
            rate = default_tolerance(n, d + 1, eps, n**-1.1) / DEFAULT_TOL_FACTOR
            values, depth = [], None
            for seed in seeds:
                model = make(
                    dataset,
                    eps,
                    seed,
                    dict(solver="resque"),
                    solver_options={"tol": factor * rate, "restart": restart},
                )
                model.fit(dataset.X, dataset.y)
                values.append(np.mean(np.abs(dataset.y - model.predict(dataset.X))) - f_star)
                depth = model.query_depth_
            cells.append(
                f"{fmt(np.median(values))} [{fmt(min(values))}, {fmt(max(values))}] (K={depth})"
            )
        label = f"{factor:g}" + (" (default)" if factor == DEFAULT_TOL_FACTOR else "")
        rows.append([label, "on" if restart else "off"] + cells)
    return epsilons, rows


def time_breakdown(dataset, epsilon=1.0, seed=0):
    """Seconds in query rounds vs sequential inner steps, and the fit time with n_jobs=2."""
    spent = defaultdict(float)
    real_round, real_sgd = oracle_module._query_round, oracle_module._epoch_sgd

    def timed(fn, key):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[key] += time.perf_counter() - start

        return wrapper

    oracle_module._query_round = timed(real_round, "rounds")
    oracle_module._epoch_sgd = timed(real_sgd, "steps")
    try:
        start = time.perf_counter()
        make(dataset, epsilon, seed, dict(solver="resque")).fit(dataset.X, dataset.y)
        total = time.perf_counter() - start
    finally:
        oracle_module._query_round, oracle_module._epoch_sgd = real_round, real_sgd
    start = time.perf_counter()
    make(dataset, epsilon, seed, dict(solver="resque"), n_jobs=2).fit(dataset.X, dataset.y)
    two = time.perf_counter() - start
    return total, spent["rounds"], spent["steps"], two


#: resque's options beside its default (EpochSGD ball oracle).
OPTIONS = {
    "epoch_sgd (default)": {},
    "acsa": {"inner": "acsa"},
    "epoch_sgd + multilevel": {"multilevel": True},
}


def options_comparison(dataset, epsilons, seeds, log, options=OPTIONS):
    """Excess risk and parallel cost of each ball-oracle option, same epsilon and budget."""
    bounded = bound_data(dataset.X, dataset.y, fit_intercept=True, data_norm=dataset.data_norm)
    _, f_star = lad_optimum(bounded)
    rows = []
    for eps in epsilons:
        for name, solver_options in options.items():
            values, seconds = [], []
            for seed in seeds:
                model = make(
                    dataset, eps, seed, dict(solver="resque"), solver_options=solver_options
                )
                start = time.perf_counter()
                model.fit(dataset.X, dataset.y)
                seconds.append(time.perf_counter() - start)
                values.append(np.mean(np.abs(dataset.y - model.predict(dataset.X))) - f_star)
            rows.append(
                [
                    fmt_eps(eps),
                    name,
                    f"{fmt(np.median(values))} [{fmt(min(values))}, {fmt(max(values))}]",
                    str(model.query_depth_),
                    str(model.n_iter_),
                    f"{model.n_queries_:,}",
                    f"{np.median(seconds):.2f} s",
                ]
            )
            log(f"  {dataset.name} eps={eps:g} {name}: median excess {np.median(values):.3g}")
    return f_star, rows


def options_main(seeds, log, started):
    # n = 10^5: epsilon = 1 and the two inner solvers only (a multilevel fit
    # there takes minutes on the shared machine).
    large = {name: OPTIONS[name] for name in ("epoch_sgd (default)", "acsa")}
    cases = [
        (synthetic(10_000), (0.5, 1.0, 2.0, math.inf), OPTIONS),
        (synthetic(100_000), (1.0,), large),
    ]
    lines = [
        "# resque's ball oracles: EpochSGD, ACSA and Proposition 2's multilevel calls",
        "",
        "Command: `python benchmarks/bench_resque.py --options`. "
        f"sklearn_dp {sklearn_dp.__version__}, scikit-learn {sklearn.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()} (2 cores shared with other jobs: times are indicative).",
        "",
        'Every fit: `DPSCORegressor(loss="absolute", penalty=None, solver="resque", radius=2, '
        "data_norm=1, y_bound=1, delta=n^-1.1, solver_options=...)` at the default gradient "
        "budget (20 passes, batch 32), so every option at one epsilon gets the same budget "
        "(multilevel: its extra calls share it; at least 32 steps per call, which raises it "
        "when the calls are many). Excess empirical risk against the exact LP optimum: median "
        f"[min, max] over {len(seeds)} seeds. Query rounds: sequential rounds of gradient "
        "queries (ball-oracle calls); sequential steps: inner updates one after the other "
        "(`n_iter_`; an ACSA step averages several releases at one point); queries: nominal "
        "per-sample gradient evaluations (releases x expected batch); last seed's counts.",
        "",
    ]
    for dataset, epsilons, options in cases:
        log(dataset.title)
        f_star, rows = options_comparison(dataset, epsilons, seeds, log, options)
        lines += [
            f"## {dataset.title} (F* = {fmt(f_star)})",
            "",
            md_table(
                [
                    "epsilon",
                    "ball oracle",
                    "excess risk",
                    "query rounds",
                    "sequential steps",
                    "queries",
                    "time",
                ],
                rows,
            ),
            "",
        ]
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / "resque_options.md").write_text("\n".join(lines))
    lines.append(f"Total {time.perf_counter() - started:.0f} s.")
    text = "\n".join(lines)
    (RESULTS_DIR / "resque_options.md").write_text(text)
    print(text)


#: resque's target tolerances (multiples of the default) and dp_sgd's grid of
#: expected batches (fractions of n; 1 is full-batch DP-GD) and step counts.
DEPTH_TOL_FACTORS = (1.0, 0.3, 0.1)
DEPTH_SGD_BATCHES = (0.003, 0.03, 0.3, 1.0)
DEPTH_SGD_STEPS = (10, 30, 100, 300, 1000, 3000)
#: Grid points beyond this many expected passes over the data are skipped.
DEPTH_MAX_PASSES = 30


def depth_comparison(dataset, epsilons, seeds, log):
    """Per epsilon and tol: resque's median excess and query depth; dp_sgd's least depth to match."""
    n, d = dataset.X.shape
    bounded = bound_data(dataset.X, dataset.y, fit_intercept=True, data_norm=dataset.data_norm)
    _, f_star = lad_optimum(bounded)

    def median_excess(params, eps, **extra):
        values, model = [], None
        for seed in seeds:
            model = make(dataset, eps, seed, params, **extra).fit(dataset.X, dataset.y)
            values.append(np.mean(np.abs(dataset.y - model.predict(dataset.X))) - f_star)
        return float(np.median(values)), model

    rows = []
    for eps in epsilons:
        # dp_sgd's (excess, steps, batch) over the grid; depth = sequential steps.
        grid = []
        for fraction in DEPTH_SGD_BATCHES:
            batch = max(1, round(fraction * n))
            for steps in DEPTH_SGD_STEPS:
                if batch * steps > DEPTH_MAX_PASSES * n:
                    continue
                params = dict(solver="dp_sgd", batch_size=batch, max_iter=steps)
                grid.append((median_excess(params, eps)[0], steps, batch))
        log(f"  {dataset.name} eps={eps:g}: dp_sgd grid done")
        rate = default_tolerance(n, d + 1, eps, n**-1.1) / DEFAULT_TOL_FACTOR
        for factor in DEPTH_TOL_FACTORS:
            excess, model = median_excess(
                dict(solver="resque"),
                eps,
                solver_options={"tol": factor * DEFAULT_TOL_FACTOR * rate},
            )
            matched = [(steps, batch) for value, steps, batch in grid if value <= excess]
            steps, batch = min(matched) if matched else (None, None)
            # Theorem 1 (constants and logarithms dropped): ReSQue's query depth
            # d^(1/3) e^(-2/3) against SGD's e^(-2), e = excess / (L R).
            accuracy = excess / (bounded.row_norm_bound * dataset.radius / dataset.y_bound)
            claim = accuracy ** (-4 / 3) / (d + 1) ** (1 / 3)
            rows.append(
                [
                    fmt_eps(eps),
                    f"{factor:g}",
                    fmt(excess),
                    str(model.query_depth_),
                    str(model.n_iter_),
                    "-" if steps is None else f"{steps} (batch {batch})",
                    "-" if steps is None else f"{steps / model.query_depth_:.2g}",
                    f"{claim:.2g}",
                ]
            )
            log(f"  {dataset.name} eps={eps:g} tol x{factor:g}: {rows[-1][2:]}")
    return f_star, rows


def depth_main(seeds, log, started, sizes=(10_000, 100_000)):
    lines = [
        "# resque's parallel depth beside DP-SGD's at equal accuracy",
        "",
        "Command: `python benchmarks/bench_resque.py --depth`. "
        f"sklearn_dp {sklearn_dp.__version__}, scikit-learn {sklearn.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()} (2 cores shared with other jobs).",
        "",
        'Every fit: `DPSCORegressor(loss="absolute", penalty=None, radius=2, data_norm=1, '
        "y_bound=1, delta=n^-1.1)` on the synthetic LAD data. For resque at each target "
        "`tol` (a multiple of its default, the DP-SCO rate): the median excess empirical "
        f"risk over {len(seeds)} seeds and its query depth (sequential rounds of independent "
        "gradient queries) and sequential inner steps. For dp_sgd: every expected batch in "
        f"{[f'{b:g} n' for b in DEPTH_SGD_BATCHES]} and step count in "
        f"{list(DEPTH_SGD_STEPS)} up to {DEPTH_MAX_PASSES} expected passes (its default step "
        "size); its depth at equal accuracy is "
        "the fewest steps whose median excess is at most resque's (- when none in the grid "
        "is). Ratio: that depth over resque's query depth (above 1: resque needs fewer "
        "rounds). Paper: Theorem 1's ratio of SGD's depth e^-2 to ReSQue's d^(1/3) e^(-2/3) "
        "at accuracy e = excess / (L R), constants and logarithms dropped.",
        "",
    ]
    for n in sizes:
        dataset = synthetic(n)
        log(dataset.title)
        f_star, rows = depth_comparison(dataset, (1.0, math.inf), seeds, log)
        lines += [
            f"## {dataset.title} (F* = {fmt(f_star)})",
            "",
            md_table(
                [
                    "epsilon",
                    "tol / default",
                    "resque excess",
                    "resque query depth",
                    "resque sequential steps",
                    "dp_sgd depth at equal accuracy",
                    "ratio",
                    "paper's ratio",
                ],
                rows,
            ),
            "",
        ]
        RESULTS_DIR.mkdir(exist_ok=True)
        (RESULTS_DIR / "resque_depth.md").write_text("\n".join(lines))
    lines.append(f"Total {time.perf_counter() - started:.0f} s.")
    text = "\n".join(lines)
    (RESULTS_DIR / "resque_depth.md").write_text(text)
    print(text)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def fmt(x):
    if x == 0:
        return "0"
    return f"{x:.2e}" if abs(x) < 1e-2 or abs(x) >= 1e3 else f"{x:.4f}"


def report_dataset(dataset, res, epsilons, seeds):
    out = [f"## {dataset.title}", ""]
    out.append(
        f"{len(seeds)} seeds; delta = n^-1.1 = {res['n'] ** -1.1:.3g}; F* = {fmt(res['f_star'])} "
        f"(exact non-private solve: HiGHS on the dual LP, {res['lp_seconds']:.2f} s; its "
        f"solution has norm {res['w_star_norm']:.3g} in units of y, inside the radius "
        f"{dataset.radius:g}); "
        f"F(0) - F* = {fmt(np.mean(np.abs(dataset.y)) - res['f_star'])}."
    )
    out.append("")
    out.append("Assumed public: " + "; ".join(dataset.public) + ".")
    out.append("")
    names = list(res["excess"])
    rows = []
    for eps in epsilons:
        row = [fmt_eps(eps)]
        for name in names:
            v = res["excess"][name][eps]
            row.append(f"{fmt(np.median(v))} [{fmt(min(v))}, {fmt(max(v))}]")
        rows.append(row)
    out.append("Excess empirical risk (units of y): median [min, max] over seeds.")
    out.append("")
    out.append(md_table(["epsilon"] + names, rows))
    out.append("")
    rows = []
    for name in names:
        for eps in epsilons:
            rounds, steps, queries = res["costs"][name][eps]
            rows.append(
                [
                    name,
                    fmt_eps(eps),
                    f"{np.median(res['seconds'][name][eps]):.2f} s",
                    str(rounds),
                    str(steps),
                    f"{queries:,}",
                ]
            )
    out.append(
        "Wall time (median over seeds; noise calibration cached after the first seed) and "
        "parallel cost. Query rounds: sequential rounds of gradient queries (resque: one per "
        "ball subproblem; dp_sgd: one per step). Queries: per-sample gradient evaluations "
        "(resque: counted; dp_sgd: expected, steps x expected batch)."
    )
    out.append("")
    out.append(
        md_table(["method", "epsilon", "time", "query rounds", "sequential steps", "queries"], rows)
    )
    out.append("")
    return "\n".join(out)


def plot(datasets, results, epsilons, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(datasets), figsize=(5.2 * len(datasets), 7.5), squeeze=False)
    positions = np.arange(len(epsilons))
    for col, dataset in enumerate(datasets):
        res = results[dataset.name]
        for name in res["excess"]:
            for row, key in ((0, "excess"), (1, "seconds")):
                values = [np.maximum(res[key][name][e], 1e-12) for e in epsilons]
                med = [np.median(v) for v in values]
                low = [m - np.min(v) for m, v in zip(med, values)]
                high = [np.max(v) - m for m, v in zip(med, values)]
                axes[row, col].errorbar(
                    positions, med, yerr=[low, high], marker="o", capsize=3, label=name
                )
        for row, label in ((0, "excess empirical risk (units of y)"), (1, "fit time (s)")):
            ax = axes[row, col]
            ax.set_yscale("log")
            ax.set_xticks(positions)
            ax.set_xticklabels([fmt_eps(e) for e in epsilons])
            ax.set_xlabel("epsilon (delta = n^-1.1)")
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[0, col].set_title(f"{dataset.title}\nmedian, bars = min-max over seeds", fontsize=9)
        axes[0, col].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke test")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--options", action="store_true", help="compare resque's ball oracles only")
    parser.add_argument(
        "--depth", action="store_true", help="resque's depth against dp_sgd at equal accuracy"
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)

    quick = args.quick
    seeds = list(range(args.seeds or (1 if quick else SEEDS)))
    epsilons = QUICK_EPSILONS if quick else EPSILONS
    datasets = (
        [synthetic(10_000), diabetes()]
        if quick
        else [synthetic(10_000), synthetic(100_000), diabetes()]
    )
    started = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - started:6.1f}s] {message}", flush=True)

    if args.options:
        options_main(seeds, log, started)
        return
    if args.depth:
        depth_main(seeds, log, started, sizes=(10_000,) if quick else (10_000, 100_000))
        return

    results = {}
    for dataset in datasets:
        log(f"{dataset.title}")
        results[dataset.name] = run_dataset(dataset, epsilons, seeds, log)

    log("tolerance ablation")
    ablation_eps, ablation_rows = tolerance_ablation(
        datasets[0], seeds, epsilons=(0.5, 1.0, math.inf)
    )
    log("time breakdown")
    breakdown = {d.name: time_breakdown(d) for d in datasets[:2]}

    stem = "resque_quick" if quick else "resque"
    RESULTS_DIR.mkdir(exist_ok=True)
    lines = [
        "# resque beside dp_sgd: absolute-loss regression",
        "",
        f"Command: `python benchmarks/bench_resque.py{' --quick' if quick else ''}`. "
        f"sklearn_dp {sklearn_dp.__version__}, scikit-learn {sklearn.__version__}, "
        f"numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()} (2 cores shared with other jobs: times are indicative). "
        f"Total {time.perf_counter() - started:.0f} s.",
        "",
        'Every fit: `DPSCORegressor(loss="absolute", penalty=None, radius=R, data_norm, '
        "y_bound, delta=n^-1.1)` on the whole data set; excess risk against the exact LP "
        "optimum of the same bounded problem.",
        "",
    ]
    for dataset in datasets:
        lines.append(report_dataset(dataset, results[dataset.name], epsilons, seeds))
    lines += [
        f"## resque ablation: target tolerance and restarts ({datasets[0].title})",
        "",
        "`tol` as a multiple of the DP-SCO rate 1/sqrt(n) + sqrt(d log(1/delta))/(n epsilon); "
        "it fixes the smoothing radius, the ball radius and K. restart: the gradient restart of "
        "the acceleration (not in the paper). Median [min, max] excess over "
        f"{len(seeds)} seeds.",
        "",
        md_table(
            ["tol / rate", "restart"] + [f"epsilon={fmt_eps(e)}" for e in ablation_eps],
            ablation_rows,
        ),
        "",
        "## Where resque spends its time (epsilon=1, one fit)",
        "",
        md_table(
            ["data set", "fit", "query rounds", "sequential inner steps", "fit with n_jobs=2"],
            [
                [
                    name,
                    f"{t:.2f} s",
                    f"{r:.2f} s ({r / t:.0%})",
                    f"{s:.2f} s ({s / t:.0%})",
                    f"{two:.2f} s",
                ]
                for name, (t, r, s, two) in breakdown.items()
            ],
        ),
        "",
    ]
    text = "\n".join(lines)
    (RESULTS_DIR / f"{stem}.md").write_text(text)
    plot(datasets, results, epsilons, RESULTS_DIR / f"{stem}.png")
    print(text)
    log(f"wrote {RESULTS_DIR / (stem + '.md')} and {stem}.png")


if __name__ == "__main__":
    main()
