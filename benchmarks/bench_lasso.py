"""Benchmark DPLasso and the l1-geometry solvers.

Three parts (Asi, Feldman, Koren and Talwar 2021, see docs/solvers/lasso.md; the paper has no
experiments, so the design is ours):

(a) **Sparse recovery** on generated data, ``d`` in {1000, 10000} > n = 800:
    rows uniform in [-1, 1]^d (public feature bound 1), a k = 5 sparse truth
    with ``||w*||_1 = 1`` (coefficients +-0.2), ``y = x @ w* + N(0, 0.1^2)``
    (public label bound 1.5).  For each epsilon: the population excess risk
    ``E[(x @ w - y)^2] / 2 - E[(x @ w* - y)^2] / 2 = ||w - w*||^2 / 6`` (exact
    for these features) and the support recovery (share of the true support
    among the k largest |coefficients|), for every l1 solver on the l1 ball
    of radius 1, beside the non-private optimum over the same ball (a
    high-precision projected-gradient solve), scikit-learn's ``LassoCV``
    (non-private, penalty chosen by cross-validation) and ``dp_sgd`` on the
    l2 ball of radius 1 (``DPSCORegressor``; rows bounded by their public l2
    bound sqrt(d)).  No intercept (the data are centred by construction).
(b) **Error against d** at n = 2000, epsilon = 8 (same generator): the
    paper's claim is that l1-geometry methods degrade like log(d), l2 methods
    like sqrt(d).
(c) **Diabetes** (scikit-learn's bundled data, 442 rows, 10 features): test
    R^2 against epsilon over random 80/20 splits.  Public choices (made
    without looking at the data): features rescaled to unit variance by the
    documented constant sqrt(442) and clipped at 4 standard deviations;
    labels centred at 200 and bounded by 200 (a disease score assumed in
    [0, 400]); the default radius ``y_bound / feature_bound = 50``.

Usage::

    python benchmarks/bench_lasso.py            # full run (about 10 minutes)
    python benchmarks/bench_lasso.py --quick    # smoke test
    python benchmarks/bench_lasso.py --parts a c --seeds 5

Writes ``benchmarks/results/lasso.md`` and ``lasso_recovery.png``,
``lasso_dimension.png``, ``lasso_diabetes.png`` (``--quick`` writes
``lasso_quick*`` instead).
"""

from __future__ import annotations

import os

# One BLAS thread: the machine is shared, and multi-threaded mat-vecs under
# contention are far slower than single-threaded ones (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LassoCV, LinearRegression
from sklearn.metrics import r2_score

from sklearn_dp import DPLasso, DPSCORegressor
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.solvers._l1_geometry import make_domain
from sklearn_dp.testing._l1_reference import reference_solve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import environment, fmt_median_iqr, md_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DELTA = 1e-6  # about 1 / n^2 for n = 800 (seed Theorem 7 needs delta <= 1/n)

N_TRAIN = 800
K_SPARSE = 5
NOISE = 0.1
Y_BOUND = 1.5
RADIUS = 1.0

#: Methods of parts (a) and (b): label -> (estimator factory, delta).
#: Public settings only; ``max_iter`` caps the mirror-descent runs for time.
PRIVATE_METHODS = {
    "frank_wolfe": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=DELTA,
        radius=RADIUS,
        y_bound=Y_BOUND,
        fit_intercept=False,
        solver="frank_wolfe",
        random_state=seed,
    ),
    "vr_frank_wolfe (pure)": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=0.0,
        radius=RADIUS,
        y_bound=Y_BOUND,
        fit_intercept=False,
        solver="vr_frank_wolfe",
        random_state=seed,
    ),
    "mirror_descent": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=DELTA,
        radius=RADIUS,
        y_bound=Y_BOUND,
        fit_intercept=False,
        solver="mirror_descent",
        max_iter=300,
        random_state=seed,
    ),
    "localized_mirror_descent": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=DELTA,
        radius=RADIUS,
        y_bound=Y_BOUND,
        fit_intercept=False,
        solver="localized_mirror_descent",
        max_iter=100,
        random_state=seed,
    ),
}


def l2_baseline(eps, seed, d):
    """dp_sgd on the l2 ball of radius 1 with the rows' public l2 bound sqrt(d).

    Per-sample gradients are clipped at ``sqrt(d)`` (in units of the scaled
    labels): a residual clipped at the label bound, as DPLasso's default; the
    library's default clip (half the worst case ``(radius sqrt(d) / y_bound + 1)
    sqrt(d)``) is several times larger here and the fit worse than the zero model.
    """
    return DPSCORegressor(
        epsilon=eps,
        delta=DELTA,
        penalty=None,
        radius=RADIUS,
        constraint="l2",
        data_norm=math.sqrt(d),
        y_bound=Y_BOUND,
        fit_intercept=False,
        solver="dp_sgd",
        clip_norm=math.sqrt(d),
        random_state=seed,
    )


# --------------------------------------------------------------------------
# Data and metrics
# --------------------------------------------------------------------------


def sparse_problem(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    w = np.zeros(d)
    support = rng.choice(d, K_SPARSE, replace=False)
    w[support] = rng.choice([-1.0, 1.0], K_SPARSE) * RADIUS / K_SPARSE
    y = X @ w + NOISE * rng.normal(size=n)
    return X, y, w


def excess_risk(coef, truth):
    """Population excess risk for rows uniform in [-1, 1]^d (covariance I / 3)."""
    return float(np.sum((coef - truth) ** 2) / 6.0)


def support_recovery(coef, truth):
    k = int(np.count_nonzero(truth))
    top = np.argsort(-np.abs(coef))[:k]
    top = top[np.abs(coef[top]) > 0]
    return len(set(top) & set(np.flatnonzero(truth))) / k


def ball_optimum(X, y):
    """Non-private minimiser over the same l1 ball (same clipped data and scaling)."""
    data = bound_data(
        X,
        np.clip(y, -Y_BOUND, Y_BOUND) / Y_BOUND,
        fit_intercept=False,
        geometry="linf",
        feature_bound=1.0,
    )
    domain = make_domain(
        data,
        radius=RADIUS / Y_BOUND,
        intercept_bound=None,
        alpha=0.0,
        l1_ratio=0.0,
        solver="reference",
    )
    return reference_solve(data, get_loss("squared"), domain, max_iter=5000) * Y_BOUND


def timed(factory, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = factory().fit(X, y)
    return model, time.perf_counter() - start


# --------------------------------------------------------------------------
# Part (a): sparse recovery against epsilon
# --------------------------------------------------------------------------


def part_a(dims, epsilons, seeds, log):
    results = {}
    for d in dims:
        risk = defaultdict(lambda: defaultdict(list))
        recovery = defaultdict(lambda: defaultdict(list))
        seconds = defaultdict(list)
        reference = defaultdict(list)
        for seed in seeds:
            X, y, truth = sparse_problem(N_TRAIN, d, seed)
            w = ball_optimum(X, y)
            reference["ball"].append((excess_risk(w, truth), support_recovery(w, truth)))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cv = LassoCV(cv=5, fit_intercept=False, alphas=30, random_state=seed).fit(X, y)
            reference["lassocv"].append(
                (excess_risk(cv.coef_, truth), support_recovery(cv.coef_, truth))
            )
            reference["zero"].append((excess_risk(np.zeros(d), truth), 0.0))
            for eps in epsilons:
                methods = dict(PRIVATE_METHODS)
                methods["dp_sgd (l2 ball)"] = lambda e, s, d=d: l2_baseline(e, s, d)
                for name, make in methods.items():
                    model, t = timed(lambda: make(eps, seed), X, y)
                    risk[name][eps].append(excess_risk(model.coef_, truth))
                    recovery[name][eps].append(support_recovery(model.coef_, truth))
                    seconds[name].append(t)
            log(f"(a) d={d} seed={seed} done")
        results[d] = dict(risk=risk, recovery=recovery, seconds=seconds, reference=reference)
    return results


# --------------------------------------------------------------------------
# Part (b): error against d
# --------------------------------------------------------------------------

DIMENSION_METHODS = ["frank_wolfe", "mirror_descent", "dp_sgd (l2 ball)"]
N_DIMENSION = 2000
EPS_DIMENSION = 8.0


def part_b(dims, epsilon, seeds, log):
    risk = defaultdict(lambda: defaultdict(list))
    for d in dims:
        for seed in seeds:
            X, y, truth = sparse_problem(N_DIMENSION, d, 1000 + seed)
            risk["non-private (l1 ball)"][d].append(excess_risk(ball_optimum(X, y), truth))
            risk["zero model"][d].append(excess_risk(np.zeros(d), truth))
            for name in DIMENSION_METHODS:
                if name.startswith("dp_sgd"):
                    make = lambda: l2_baseline(epsilon, seed, d)
                else:
                    make = lambda name=name: PRIVATE_METHODS[name](epsilon, seed)
                model, _ = timed(make, X, y)
                risk[name][d].append(excess_risk(model.coef_, truth))
        log(f"(b) d={d} done")
    return risk


# --------------------------------------------------------------------------
# Part (c): diabetes
# --------------------------------------------------------------------------

DIABETES_FEATURE_BOUND = 4.0
DIABETES_CENTRE = 200.0
DIABETES_Y_BOUND = 200.0


def diabetes():
    X, y = load_diabetes(return_X_y=True)
    # Documented scaling: each column has sum of squares 1 over the 442 rows;
    # times sqrt(442) gives unit variance.  Clipping at 4 SD is a public choice.
    return X * math.sqrt(442.0), y - DIABETES_CENTRE


DIABETES_METHODS = {
    "frank_wolfe": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=1e-6,
        feature_bound=DIABETES_FEATURE_BOUND,
        y_bound=DIABETES_Y_BOUND,
        solver="frank_wolfe",
        random_state=seed,
    ),
    "vr_frank_wolfe (pure)": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=0.0,
        feature_bound=DIABETES_FEATURE_BOUND,
        y_bound=DIABETES_Y_BOUND,
        solver="vr_frank_wolfe",
        random_state=seed,
    ),
    "mirror_descent": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=1e-6,
        feature_bound=DIABETES_FEATURE_BOUND,
        y_bound=DIABETES_Y_BOUND,
        solver="mirror_descent",
        max_iter=300,
        random_state=seed,
    ),
    "localized_mirror_descent": lambda eps, seed: DPLasso(
        epsilon=eps,
        delta=1e-6,
        feature_bound=DIABETES_FEATURE_BOUND,
        y_bound=DIABETES_Y_BOUND,
        solver="localized_mirror_descent",
        max_iter=100,
        random_state=seed,
    ),
    "dp_gd (l2, DPSCORegressor)": lambda eps, seed: DPSCORegressor(
        epsilon=eps,
        delta=1e-6,
        alpha=1e-4,
        data_norm=DIABETES_FEATURE_BOUND * math.sqrt(10),
        y_bound=DIABETES_Y_BOUND,
        random_state=seed,
    ),
}


def part_c(epsilons, seeds, log):
    X, y = diabetes()
    r2 = defaultdict(lambda: defaultdict(list))
    reference = defaultdict(list)
    for seed in seeds:
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(y))
        train, test = order[: int(0.8 * len(y))], order[int(0.8 * len(y)) :]
        ols = LinearRegression().fit(X[train], y[train])
        reference["LinearRegression"].append(r2_score(y[test], ols.predict(X[test])))
        exact = DPLasso(
            epsilon=math.inf,
            feature_bound=DIABETES_FEATURE_BOUND,
            y_bound=DIABETES_Y_BOUND,
            max_iter=20_000,
        ).fit(X[train], y[train])
        reference["DPLasso epsilon=inf (same ball)"].append(
            r2_score(y[test], exact.predict(X[test]))
        )
        for eps in epsilons:
            for name, make in DIABETES_METHODS.items():
                model, _ = timed(lambda: make(eps, seed), X[train], y[train])
                r2[name][eps].append(r2_score(y[test], model.predict(X[test])))
        log(f"(c) split {seed} done")
    return r2, reference


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def med(values):
    return float(np.median(values)) if len(values) else math.nan


def fmt(values, digits=3):
    return fmt_median_iqr(values, digits, iqr_digits=digits)


def fmt_risk(values):
    if not len(values):
        return "n/a"
    return f"{np.median(values):.2e}"


def report_a(results, epsilons):
    out = []
    for d, res in results.items():
        out.append(
            f"\n### (a) d = {d}, n = {N_TRAIN}, k = {K_SPARSE}: median excess risk "
            "(support recovery)\n"
        )
        ref = res["reference"]
        out.append(
            f"Non-private optimum over the same l1 ball: excess risk "
            f"{fmt_risk([r for r, _ in ref['ball']])}, support "
            f"{med([s for _, s in ref['ball']]):.2f}; scikit-learn LassoCV: "
            f"{fmt_risk([r for r, _ in ref['lassocv']])}, "
            f"support {med([s for _, s in ref['lassocv']]):.2f}; "
            f"the zero model: {fmt_risk([r for r, _ in ref['zero']])}.\n"
        )
        headers = ["method"] + [f"eps={e:g}" for e in epsilons] + ["median fit time"]
        rows = []
        for name in res["risk"]:
            row = [name]
            for eps in epsilons:
                row.append(
                    f"{fmt_risk(res['risk'][name][eps])} ({med(res['recovery'][name][eps]):.2f})"
                )
            row.append(f"{med(res['seconds'][name]):.2f} s")
            rows.append(row)
        out.append(md_table(headers, rows))
    return "\n".join(out)


def report_b(risk, epsilon, dims):
    headers = ["method"] + [f"d={d}" for d in dims] + ["growth d=min->max"]
    rows = []
    for name, by_d in risk.items():
        first, last = med(by_d[dims[0]]), med(by_d[dims[-1]])
        rows.append([name] + [fmt_risk(by_d[d]) for d in dims] + [f"x{last / first:.1f}"])
    note = (
        f"\n### (b) median excess risk against d (n = {N_DIMENSION}, epsilon = {epsilon:g})\n\n"
        f"For reference, log(d) grows x{math.log(dims[-1]) / math.log(dims[0]):.1f} and sqrt(d) "
        f"x{math.sqrt(dims[-1] / dims[0]):.1f} over this range.\n"
    )
    return note + md_table(headers, rows)


def report_c(r2, reference, epsilons):
    headers = ["method"] + [f"eps={e:g}" for e in epsilons]
    rows = [[name] + [fmt(r2[name][e]) for e in epsilons] for name in r2]
    ref = "; ".join(f"{name}: {fmt(values)}" for name, values in reference.items())
    return (
        f"\n### (c) diabetes: median test R^2 (interquartile range) over splits\n\n"
        f"Non-private: {ref}.\n\n" + md_table(headers, rows)
    )


def plot_a(results, epsilons, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(results), figsize=(5.5 * len(results), 7.5), squeeze=False)
    for col, (d, res) in enumerate(results.items()):
        for name in res["risk"]:
            axes[0, col].plot(
                epsilons, [med(res["risk"][name][e]) for e in epsilons], marker="o", label=name
            )
            axes[1, col].plot(
                epsilons, [med(res["recovery"][name][e]) for e in epsilons], marker="o", label=name
            )
        axes[0, col].axhline(
            med([r for r, _ in res["reference"]["ball"]]),
            color="k",
            ls="--",
            label="non-private, same l1 ball",
        )
        axes[0, col].axhline(
            med([r for r, _ in res["reference"]["zero"]]), color="grey", ls=":", label="zero model"
        )
        axes[1, col].axhline(med([s for _, s in res["reference"]["ball"]]), color="k", ls="--")
        axes[0, col].set_yscale("log")
        for row in range(2):
            axes[row, col].set_xscale("log")
            axes[row, col].set_xlabel("epsilon")
            axes[row, col].grid(True, alpha=0.3)
        axes[0, col].set_title(f"d = {d}, n = {N_TRAIN}")
        axes[0, col].set_ylabel("median excess risk")
        axes[1, col].set_ylabel("support recovery")
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_b(risk, dims, epsilon, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name, by_d in risk.items():
        style = dict(color="grey", ls=":") if name == "zero model" else dict(marker="o")
        ax.plot(dims, [med(by_d[d]) for d in dims], label=name, **style)
    # Shapes for the eye, anchored at the first d of frank_wolfe and dp_sgd.
    fw0, l2_0 = med(risk["frank_wolfe"][dims[0]]), med(risk["dp_sgd (l2 ball)"][dims[0]])
    ax.plot(dims, [fw0 * math.log(d) / math.log(dims[0]) for d in dims], "k:", label="~ log d")
    ax.plot(dims, [l2_0 * math.sqrt(d / dims[0]) for d in dims], "k--", label="~ sqrt d")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel("median excess risk")
    ax.set_title(
        f"Excess risk against d (n = {N_DIMENSION}, epsilon = {epsilon:g}, k = {K_SPARSE})"
    )
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_c(r2, reference, epsilons, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for name in r2:
        ax.plot(epsilons, [med(r2[name][e]) for e in epsilons], marker="o", label=name)
    for (name, values), style in zip(reference.items(), ["--", ":"]):
        ax.axhline(med(values), color="k", ls=style, label=f"{name} (non-private)")
    ax.set_xscale("log")
    ax.set_ylim(-0.5, 0.7)
    ax.set_xlabel("epsilon")
    ax.set_ylabel("median test R^2")
    ax.set_title("Diabetes (442 rows, 10 features)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke test: fewer seeds and settings")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--parts", nargs="+", default=["a", "b", "c"], choices=["a", "b", "c"])
    parser.add_argument("--output-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    start = time.perf_counter()

    def log(message):
        print(f"[{time.perf_counter() - start:6.1f}s] {message}", file=sys.stderr, flush=True)

    quick = args.quick
    eps_a = (1.0, 8.0) if quick else (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
    dims_a = (1000,) if quick else (1000, 10000)
    dims_b = (100, 1000) if quick else (100, 300, 1000, 3000, 10000)
    eps_b = EPS_DIMENSION
    eps_c = (2.0, 16.0) if quick else (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    n_seeds = args.seeds or (1 if quick else 3)
    seeds = list(range(n_seeds))
    suffix = "_quick" if quick else ""
    args.output_dir.mkdir(parents=True, exist_ok=True)

    sections = [
        "# DPLasso and the l1-geometry solvers\n",
        f"Command: `python benchmarks/bench_lasso.py{' --quick' if quick else ''}"
        f"{f' --seeds {args.seeds}' if args.seeds else ''}` ({n_seeds} seed(s) per setting; "
        f"delta = {DELTA:g} for (epsilon, delta) solvers, 0 for vr_frank_wolfe).\n",
        f"Environment: {environment()}.\n",
    ]
    if "a" in args.parts:
        res_a = part_a(dims_a, eps_a, seeds, log)
        sections.append(report_a(res_a, eps_a))
        plot_a(res_a, eps_a, args.output_dir / f"lasso_recovery{suffix}.png")
        sections.append(f"\n![recovery](lasso_recovery{suffix}.png)\n")
    if "b" in args.parts:
        res_b = part_b(dims_b, eps_b, seeds, log)
        sections.append(report_b(res_b, eps_b, list(dims_b)))
        plot_b(res_b, list(dims_b), eps_b, args.output_dir / f"lasso_dimension{suffix}.png")
        sections.append(f"\n![dimension](lasso_dimension{suffix}.png)\n")
    if "c" in args.parts:
        r2, ref = part_c(eps_c, seeds if not quick else [0], log)
        sections.append(report_c(r2, ref, eps_c))
        plot_c(r2, ref, eps_c, args.output_dir / f"lasso_diabetes{suffix}.png")
        sections.append(f"\n![diabetes](lasso_diabetes{suffix}.png)\n")
    sections.append(f"\nTotal wall time: {time.perf_counter() - start:.0f} s.\n")
    text = "\n".join(sections)
    (args.output_dir / f"lasso{suffix}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
