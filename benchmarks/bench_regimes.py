"""Each solver in the regime its paper claims to win, measured (``--regime``).

* ``l1`` (default): every l1 solver of ``DPLasso`` on d >> n sparse
  regression (below).
* ``accmd``: DP-AccMD (Wang, Ye and Xu 2017, Algorithm 3) on the same sparse
  data, rows bounded entrywise (``feature_bound=1``), with the default
  smoothness constant (L2 row bound, Lemma 5.1) and with
  ``smoothness="entrywise"`` (the L1-norm constant), beside ``frank_wolfe``
  on the same problem (no intercept: dp_accmd's ball would hold it).
* ``cd``: importance-sampled DP-CD (Maranjyan, Sadiev and Richtarik 2024) at
  small epsilon on features of very different public ranges, with the
  default diagonal rule (Gershgorin for blocks and full sampling) and with
  ``smoothness="eso"``, against ``dp_gd`` (the problems of
  ``bench_coordinate_descent.py``; relative objective gap, lower is better).
* ``lower_bound``: the smooth lower-bound family of Asi, Feldman, Koren and
  Talwar (2021, Theorem 11 via Talwar, Thakurta and Zhang 2015): squared loss
  on the l1 ball of radius D with ``||a_i||_inf <= 1`` and ``|b_i| <= D``, at
  a vertex-packing instance (rows uniform in {-1, 1}^d, labels
  ``b_i = a_i @ x*`` for a signed vertex ``x* = D s e_j``, so ``F* = 0``);
  the excess empirical loss of each l1 solver next to the lower-bound rate
  ``D^2 min((n eps)^(-2/3), sqrt(d) / (n eps))`` (constants unknown: read
  the ratio's trend, not its value).
* ``lp``: ``frank_wolfe`` over an lp ball (Gaussian noisy gradients; the
  paper gives no private Frank-Wolfe there) against ``mirror_descent`` (seed
  Algorithm 5) on the same squared-loss problem: relative objective gap.
* ``strongly_convex``: the strongly convex reduction of Asi, Feldman, Koren
  and Talwar (2021, section 5; Theorems 8 and 9) against the same solver
  without it, on a ridge-penalised squared loss over an l1 ball (rows
  uniform in [-1, 1]^d, a dense truth of l1 norm 0.8, no intercept); the
  solvers are called directly with the row count public, and the cells are
  the median relative objective gap ``(F - F*) / (F(0) - F*)`` on the
  training rows (F* from a non-private high-precision solve).

The l1 regime:

Asi, Feldman, Koren and Talwar (2021) claim excess population risk that grows
like log(d), not sqrt(d), for l1-geometry methods on l1-bounded problems: the
regime is d much larger than the signal the rows can carry, with a sparse
truth.  This benchmark fits, on generated data of that kind, every l1 solver
of ``DPLasso`` at its defaults (``radius`` not given: the default ball of
``default_l1_radius``; every bound ``"auto"``), ``dp_ssp``, the default
``solver="auto"``, and scikit-learn's ``LassoCV`` (non-private), and reports
for each epsilon the test R^2 and the share of the 5 true features among the
5 largest coefficients (medians over seeds).

Data: rows uniform in [-1, 1]^d, a 5-sparse truth with coefficients +-0.2
(``||w*||_1 = 1``), ``y = x @ w* + N(0, 0.1^2)``, n = 5000 training rows and
2000 test rows, d in {2000, 10000}.  The trivial predictor (the mean label)
has R^2 0; the issue's bar for ``localized_mirror_descent`` and
``vr_frank_wolfe`` is the trivial predictor plus 70% of the gap to
non-private (``LassoCV``) at epsilon 5.

Usage::

    PYTHONPATH=. python benchmarks/bench_regimes.py            # 5 seeds, d in {2000, 10000}
    PYTHONPATH=. python benchmarks/bench_regimes.py --quick    # 1 seed, d = 2000, fewer solvers
    PYTHONPATH=. python benchmarks/bench_regimes.py --dims 2000 --epsilons 1 --seeds 5 --methods "auto (default)"
    PYTHONPATH=. python benchmarks/bench_regimes.py --regime accmd --dims 2000 --epsilons 1 5 --seeds 3
    PYTHONPATH=. python benchmarks/bench_regimes.py --regime cd --seeds 5
    PYTHONPATH=. python benchmarks/bench_regimes.py --regime lower_bound --seeds 3
    PYTHONPATH=. python benchmarks/bench_regimes.py --regime strongly_convex --seeds 3
    PYTHONPATH=. python benchmarks/bench_regimes.py --regime lp --seeds 3

Writes ``benchmarks/results/regimes.md`` (``regimes_quick.md`` with ``--quick``,
``regimes_partial.md`` with ``--methods``); the other regimes write
``regimes_<regime>.md``.
"""

from __future__ import annotations

import os

# One BLAS thread: the machine is shared (set before numpy loads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LassoCV
from sklearn.metrics import r2_score

from sklearn_dp import DPLasso, DPSCORegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, md_table

RESULTS_DIR = Path(__file__).resolve().parent / "results"
N_TRAIN, N_TEST, K_SPARSE, NOISE = 5000, 2000, 5, 0.1

#: Label -> DPLasso keyword arguments (everything else at its default).
METHODS = {
    "auto (default)": dict(),
    "frank_wolfe": dict(solver="frank_wolfe"),
    "vr_frank_wolfe": dict(solver="vr_frank_wolfe"),
    "mirror_descent": dict(solver="mirror_descent"),
    "localized_mirror_descent": dict(solver="localized_mirror_descent"),
    "dp_ssp": dict(solver="dp_ssp"),
}
QUICK_METHODS = ["auto (default)", "frank_wolfe", "vr_frank_wolfe", "localized_mirror_descent"]
#: dp_ssp releases a d x d Gram matrix: beyond this many features it is not run.
SSP_MAX_FEATURES = 2000


def sparse_problem(n, d, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, size=(n, d))
    w = np.zeros(d)
    support = rng.choice(d, K_SPARSE, replace=False)
    w[support] = rng.choice([-1.0, 1.0], K_SPARSE) / K_SPARSE
    y = X @ w + NOISE * rng.normal(size=n)
    return X, y, w


def recovered(coef, truth):
    """How many of the true features are among the ``k`` largest |coefficients|."""
    k = int(np.count_nonzero(truth))
    top = np.argsort(-np.abs(coef))[:k]
    top = top[np.abs(coef[top]) > 0]
    return len(set(top) & set(np.flatnonzero(truth)))


def run(dims, epsilons, seeds, methods, timeout, log):
    rows = {}
    for d in dims:
        for seed in seeds:
            X, y, truth = sparse_problem(N_TRAIN + N_TEST, d, seed)
            Xt, yt, Xs, ys = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
            start = time.perf_counter()
            cv = LassoCV(n_jobs=1).fit(Xt, yt)
            cell = rows.setdefault((d, "LassoCV (non-private)", "-"), [])
            cell.append((r2_score(ys, cv.predict(Xs)), recovered(cv.coef_, truth), 0.0, "-"))
            log(f"d={d} seed={seed} LassoCV {time.perf_counter() - start:.1f}s")
            for label in methods:
                kwargs = METHODS[label]
                if kwargs.get("solver") == "dp_ssp" and d > SSP_MAX_FEATURES:
                    continue
                for eps in epsilons:
                    start = time.perf_counter()
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        model = DPLasso(epsilon=eps, random_state=seed, **kwargs).fit(Xt, yt)
                    seconds = time.perf_counter() - start
                    rows.setdefault((d, label, eps), []).append(
                        (
                            r2_score(ys, model.predict(Xs)),
                            recovered(model.coef_, truth),
                            seconds,
                            f"{model.solver_}, radius {model.radius_:.3g}"
                            + (", warned" if caught else ""),
                        )
                    )
                    log(f"d={d} seed={seed} {label} eps={eps}: {rows[(d, label, eps)][-1]}")
                    if seconds > timeout:
                        log(f"  {label} slower than {timeout}s: its larger epsilons skipped")
                        break
    return rows


def report(rows, epsilons, seeds, quick, command, partial=False):
    lines = [
        "# l1 solvers in the d >> n sparse regime",
        "",
        f"Command: `{command}`",
        "",
        f"n = {N_TRAIN} training rows, {N_TEST} test rows, 5-sparse truth (+-0.2), noise 0.1, "
        f"rows uniform in [-1, 1]^d; every DPLasso parameter at its default but epsilon "
        f"(delta 1e-5, bounds 'auto', no radius); {len(seeds)} seed(s), medians.  Cells: "
        "test R^2 / true features among the 5 largest coefficients; the last column says what "
        "ran (solver, radius, whether it warned) on the first seed.",
        "",
    ]
    header = ["d", "method", "epsilon", "R^2", "recovered (of 5)", "seconds", "what ran"]
    body = []
    for (d, label, eps), values in rows.items():
        r2 = np.median([v[0] for v in values])
        rec = np.median([v[1] for v in values])
        secs = np.median([v[2] for v in values])
        body.append([d, label, eps, f"{r2:.3f}", f"{rec:g}", f"{secs:.1f}", values[0][3]])
    lines.append(md_table(header, body))
    lines += ["", environment()]
    name = "regimes_quick.md" if quick else "regimes.md"
    if partial:
        name = "regimes_partial.md"
    (RESULTS_DIR / name).write_text("\n".join(lines) + "\n")
    return RESULTS_DIR / name


# -- DP-AccMD on entrywise-bounded rows ---------------------------------------

#: Label -> DPLasso keyword arguments of the AccMD regime (no intercept, rows in [-1, 1]).
ACCMD_METHODS = {
    "dp_accmd (L2 smoothness, default)": dict(solver="dp_accmd"),
    "dp_accmd (smoothness='entrywise')": dict(
        solver="dp_accmd", solver_options={"smoothness": "entrywise"}
    ),
    "frank_wolfe": dict(solver="frank_wolfe"),
}


def run_accmd(dims, epsilons, seeds, methods, timeout, log):
    rows = {}
    for d in dims:
        for seed in seeds:
            X, y, truth = sparse_problem(N_TRAIN + N_TEST, d, seed)
            Xt, yt, Xs, ys = X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]
            cv = LassoCV(n_jobs=1, fit_intercept=False).fit(Xt, yt)
            rows.setdefault((d, "LassoCV (non-private)", "-"), []).append(
                (r2_score(ys, cv.predict(Xs)), recovered(cv.coef_, truth), 0.0, "-")
            )
            for label in methods:
                for eps in epsilons:
                    start = time.perf_counter()
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        model = DPLasso(
                            epsilon=eps,
                            random_state=seed,
                            fit_intercept=False,
                            feature_bound=1.0,
                            **ACCMD_METHODS[label],
                        ).fit(Xt, yt)
                    seconds = time.perf_counter() - start
                    rows.setdefault((d, label, eps), []).append(
                        (
                            r2_score(ys, model.predict(Xs)),
                            recovered(model.coef_, truth),
                            seconds,
                            f"{model.n_iter_} steps, radius {model.radius_:.3g}"
                            + (", warned" if caught else ""),
                        )
                    )
                    log(f"d={d} seed={seed} {label} eps={eps}: {rows[(d, label, eps)][-1]}")
                    if seconds > timeout:
                        log(f"  {label} slower than {timeout}s: its larger epsilons skipped")
                        break
    return rows


def report_accmd(rows, seeds, command, name):
    lines = [
        "# DP-AccMD on rows bounded entrywise (d >> n, sparse truth)",
        "",
        f"Command: `{command}`",
        "",
        f"The sparse data of the l1 regime (n = {N_TRAIN} training rows, {N_TEST} test rows, "
        "rows uniform in [-1, 1]^d, 5-sparse truth +-0.2, noise 0.1); "
        "`DPLasso(fit_intercept=False, feature_bound=1.0)` at its default radius, delta 1e-5, "
        f"LassoCV without intercept; {len(seeds)} seed(s), medians. Cells: test R^2, true "
        "features among the 5 largest coefficients, seconds; the last column: steps and "
        "radius on the first seed.",
        "",
    ]
    header = ["d", "method", "epsilon", "R^2", "recovered (of 5)", "seconds", "what ran"]
    body = [
        [
            d,
            label,
            eps,
            f"{np.median([v[0] for v in values]):.3f}",
            f"{np.median([v[1] for v in values]):g}",
            f"{np.median([v[2] for v in values]):.1f}",
            values[0][3],
        ]
        for (d, label, eps), values in rows.items()
    ]
    lines += [md_table(header, body), "", environment()]
    path = RESULTS_DIR / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- importance-sampled DP-CD at small epsilon ----------------------------------

#: Label -> (bench_coordinate_descent method or None for dp_cd options, dp_cd options).
CD_METHODS = {
    "dp_gd (scalar step)": ("dp_gd", None),
    "dp_cd uniform, single coordinates": (None, dict(sampling="uniform")),
    "dp_cd importance, single coordinates": (None, dict(sampling="importance")),
    "dp_cd importance, blocks, default diagonal (gershgorin)": (
        None,
        dict(sampling="importance", blocks=True),
    ),
    "dp_cd importance, blocks, smoothness='eso'": (
        None,
        dict(sampling="importance", blocks=True, smoothness="eso"),
    ),
    "dp_cd full, default diagonal (gershgorin)": (None, dict(sampling="full")),
    "dp_cd full, smoothness='eso'": (None, dict(sampling="full", smoothness="eso")),
}
CD_PROBLEMS = ("synthetic_large", "synthetic_spread", "diabetes", "breast_cancer")
CD_EPSILONS = (0.1, 0.3, 1.0, 3.0)
CD_PASSES = 10


def run_cd(problems, epsilons, seeds, methods, log):
    import bench_coordinate_descent as cd

    gaps = {}
    for name in problems:
        problem = cd.PROBLEMS[name]()
        for seed in seeds:
            X_train, _, y_train, _ = problem.split(seed)
            f, v_star, f_star, _ = cd.reference_optimum(problem, X_train, y_train)
            f_zero = f(np.zeros_like(v_star))[0]
            for label in methods:
                method, options = CD_METHODS[label]
                for eps in epsilons:
                    model, scale = cd.make_estimator(
                        method or "cd_full", problem, eps, CD_PASSES, seed
                    )
                    if options is not None:
                        options = dict(options)
                        if options.pop("blocks", False):
                            options["blocks"] = problem.blocks
                        model.set_params(solver_options=options)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X_train / scale, y_train)
                    w = cd.raw_coefficients(model, scale)
                    relative = (f(w)[0] - f_star) / (f_zero - f_star)
                    gaps.setdefault((name, label, eps), []).append(relative)
            log(f"{name} seed={seed} done")
    return gaps


def report_cd(gaps, problems, epsilons, seeds, methods, command, name):
    lines = [
        "# Importance-sampled DP-CD at small epsilon: which diagonal keeps the gain",
        "",
        f"Command: `{command}`",
        "",
        "Problems of `benchmarks/bench_coordinate_descent.py` (public feature ranges over 4 to "
        f"10 decades); {CD_PASSES} passes per fit, delta 1e-5, {len(seeds)} seed(s). Cells: "
        "median relative objective gap `(f - f*) / (f(0) - f*)` (lower is better; 1 is the "
        "zero model) and, in brackets, `dp_gd`'s median gap divided by it (above 1: better "
        "than `dp_gd`).",
        "",
    ]
    for problem in problems:
        lines += [f"## {problem}", ""]
        body = []
        for label in methods:
            cells = [label]
            for eps in epsilons:
                gap = float(np.median(gaps[(problem, label, eps)]))
                reference = gaps.get((problem, "dp_gd (scalar step)", eps))
                ratio = "" if reference is None else f" ({np.median(reference) / gap:.2g}x)"
                cells.append(f"{gap:.3g}{ratio}")
            body.append(cells)
        lines += [md_table(["method"] + [f"eps {e:g}" for e in epsilons], body), ""]
    lines.append(environment())
    path = RESULTS_DIR / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- the smooth lower-bound family ------------------------------------------------

#: Label -> DPSCORegressor keyword arguments on the lower-bound instance.
LOWER_BOUND_METHODS = {
    "frank_wolfe": dict(solver="frank_wolfe"),
    "vr_frank_wolfe": dict(solver="vr_frank_wolfe"),
    "mirror_descent": dict(solver="mirror_descent"),
    "dp_accmd (smoothness='entrywise')": dict(
        solver="dp_accmd", solver_options={"smoothness": "entrywise"}
    ),
}
LOWER_BOUND_D, LOWER_BOUND_RADIUS = 1000, 1.0
LOWER_BOUND_NS = (1000, 4000, 16000)
LOWER_BOUND_EPSILONS = (0.5, 2.0)


def vertex_instance(n, d, radius, seed):
    """Rows uniform in {-1, 1}^d, labels ``a_i @ x*`` for a signed vertex ``x*`` (F* = 0)."""
    rng = np.random.default_rng(seed)
    A = rng.choice([-1.0, 1.0], size=(n, d))
    truth = np.zeros(d)
    truth[rng.integers(d)] = radius * rng.choice([-1.0, 1.0])
    return A, A @ truth, truth


def run_lower_bound(ns, epsilons, seeds, methods, log):
    d, radius = LOWER_BOUND_D, LOWER_BOUND_RADIUS
    rows = {}
    for n in ns:
        for seed in seeds:
            A, b, _ = vertex_instance(n, d, radius, seed)
            for label in methods:
                for eps in epsilons:
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = DPSCORegressor(
                            epsilon=eps,
                            penalty=None,
                            constraint="l1",
                            radius=radius,
                            fit_intercept=False,
                            feature_bound=1.0,
                            y_bound=radius,
                            random_state=seed,
                            **LOWER_BOUND_METHODS[label],
                        ).fit(A, b)
                    # DPSCORegressor minimises the squared loss / 2: F = mean (a.x - b)^2 / 2.
                    excess = 0.5 * float(np.mean((A @ np.ravel(model.coef_) - b) ** 2))
                    rows.setdefault((n, label, eps), []).append(
                        (excess, time.perf_counter() - start)
                    )
                    log(f"n={n} seed={seed} {label} eps={eps}: {rows[(n, label, eps)][-1]}")
    return rows


def lower_bound_rate(n, d, radius, epsilon):
    """``D^2 min((n eps)^(-2/3), sqrt(d) / (n eps))`` (Theorem 11 with L D = D^2; no constant)."""
    return radius**2 * min((n * epsilon) ** (-2.0 / 3.0), math.sqrt(d) / (n * epsilon))


def report_lower_bound(rows, seeds, command, name):
    d, radius = LOWER_BOUND_D, LOWER_BOUND_RADIUS
    lines = [
        "# The smooth lower-bound family of the l1 ball (Asi et al. 2021, Theorem 11)",
        "",
        f"Command: `{command}`",
        "",
        f"d = {d}, radius D = {radius:g}; rows uniform in {{-1, 1}}^d (`feature_bound=1`), "
        "labels `a_i @ x*` for a signed vertex `x* = D s e_j` (so `F* = 0` and `|b_i| <= D`), "
        "`DPSCORegressor(constraint='l1', radius=D, penalty=None, fit_intercept=False, "
        f"y_bound=D)`, delta 1e-5; {len(seeds)} seed(s), medians. Cells: excess empirical "
        "loss `F(x) - F*` with `F = mean (a.x - b)^2 / 2`, the lower-bound rate "
        "`D^2 min((n eps)^(-2/3), sqrt(d) / (n eps))` (no constant) and their ratio. The "
        "theorem's hard family is the fingerprinting-code instance of Talwar, Thakurta and "
        "Zhang (2015), not reproduced here; this instance is in the same family (quadratic, "
        "`||a||_inf <= 1`, `|b| <= D`) and is hard for selection (one of 2d vertices).",
        "",
    ]
    header = ["n", "method", "epsilon", "excess", "rate", "excess / rate", "seconds"]
    body = []
    for (n, label, eps), values in rows.items():
        excess = float(np.median([v[0] for v in values]))
        rate = lower_bound_rate(n, d, radius, eps)
        seconds = float(np.median([v[1] for v in values]))
        body.append(
            [
                n,
                label,
                eps,
                f"{excess:.3g}",
                f"{rate:.3g}",
                f"{excess / rate:.3g}",
                f"{seconds:.1f}",
            ]
        )
    lines += [md_table(header, body), "", environment()]
    path = RESULTS_DIR / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- the strongly convex reduction ---------------------------------------------------

#: Label -> (solver, options) on the ridge-penalised l1-ball problem.
STRONGLY_CONVEX_METHODS = {
    "vr_frank_wolfe": ("vr_frank_wolfe", {}),
    "vr_frank_wolfe, strongly_convex": ("vr_frank_wolfe", dict(strongly_convex=True)),
    "mirror_descent": ("mirror_descent", {}),
    "mirror_descent, strongly_convex": ("mirror_descent", dict(strongly_convex=True)),
}
STRONGLY_CONVEX_NS, STRONGLY_CONVEX_D = (10_000, 100_000), 20
STRONGLY_CONVEX_ALPHAS, STRONGLY_CONVEX_EPSILONS = (0.1, 1.0), (1.0, 5.0, math.inf)


def run_strongly_convex(ns, alphas, epsilons, seeds, methods, log):
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import get_loss
    from sklearn_dp.solvers import SOLVERS
    from sklearn_dp.solvers._l1_geometry import make_domain
    from sklearn_dp.testing._l1_reference import l1_objective, reference_solve

    gaps, d = {}, STRONGLY_CONVEX_D
    loss = get_loss("squared", residual_bound=2.0)
    for n in ns:
        for seed in seeds:
            rng = np.random.default_rng(seed)
            X = rng.uniform(-1, 1, size=(n, d))
            truth = rng.choice([-1.0, 1.0], size=d) * 0.8 / d
            y = np.clip(X @ truth + NOISE * rng.normal(size=n), -1, 1)
            data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
            for alpha in alphas:
                domain = make_domain(
                    data, radius=1.0, intercept_bound=None, alpha=alpha, l1_ratio=0
                )
                best = l1_objective(data, loss, reference_solve(data, loss, domain), domain)
                zero = l1_objective(data, loss, np.zeros(d), domain)
                for label in methods:
                    solver, options = STRONGLY_CONVEX_METHODS[label]
                    for eps in epsilons:
                        res = SOLVERS[solver].run(
                            data, loss, n_outputs=1, alpha=alpha, l1_ratio=0.0, epsilon=eps,
                            delta=1e-6 if solver == "mirror_descent" else 0.0, radius=1.0,
                            random_state=seed, **options,
                        )  # fmt: skip
                        value = l1_objective(data, loss, res.coef[:, 0], domain)
                        key = (n, alpha, label, eps)
                        gaps.setdefault(key, []).append((value - best) / (zero - best))
            log(f"n={n} seed={seed} done")
    return gaps


def report_strongly_convex(gaps, ns, alphas, epsilons, seeds, methods, command, name):
    lines = [
        "# The strongly convex reduction (Asi et al. 2021, section 5) against plain runs",
        "",
        f"Command: `{command}`",
        "",
        f"Ridge-penalised squared loss over the l1 ball of radius 1, d = {STRONGLY_CONVEX_D}, "
        "no intercept, rows uniform in [-1, 1]^d, labels clipped to [-1, 1]; pure epsilon-DP "
        "for vr_frank_wolfe, delta 1e-6 for mirror_descent; solvers called directly with the "
        f"row count public; {len(seeds)} seed(s). Cells: median relative objective gap "
        "`(F - F*) / (F(0) - F*)` on the training rows (lower is better; 1 is the zero model).",
        "",
    ]
    header = ["n", "alpha", "method"] + [f"eps {e:g}" for e in epsilons]
    body = [
        [f"{n:,}", f"{alpha:g}", label]
        + [f"{np.median(gaps[(n, alpha, label, eps)]):.3g}" for eps in epsilons]
        for n in ns
        for alpha in alphas
        for label in methods
    ]
    lines += [md_table(header, body), "", environment()]
    path = RESULTS_DIR / name
    path.write_text("\n".join(lines) + "\n")
    return path


# -- Frank-Wolfe over an lp ball ------------------------------------------------------

#: Label -> solver on the lp-ball problem (both release Gaussian sums, delta 1e-6).
LP_METHODS = {"frank_wolfe": "frank_wolfe", "mirror_descent": "mirror_descent"}
LP_NS, LP_DIMS, LP_P, LP_EPSILONS = (10_000, 100_000), (20, 200), 1.5, (1.0, 5.0, math.inf)


def run_lp(ns, dims, epsilons, seeds, methods, log):
    from scipy.optimize import minimize

    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import get_loss
    from sklearn_dp.solvers import SOLVERS

    gaps, p = {}, LP_P
    for n in ns:
        for d in dims:
            # |x @ w| <= ||x||_q ||w||_p <= d^(1/q) on the unit lp ball (Hoelder).
            loss = get_loss("squared", residual_bound=d ** (1 - 1 / p) + 1.0)
            for seed in seeds:
                rng = np.random.default_rng(seed)
                X = rng.uniform(-1, 1, size=(n, d))
                truth = rng.choice([-1.0, 1.0], size=d) * 1.2 / d ** (1 / p)  # outside the ball
                y = np.clip(X @ truth + NOISE * rng.normal(size=n), -1, 1)
                data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)

                def objective(w):
                    return float(np.mean(loss.value((X @ w)[:, None], y)))

                ball = {"type": "ineq", "fun": lambda w: 1.0 - np.sum(np.abs(w) ** p)}
                best = minimize(
                    objective, np.zeros(d), constraints=[ball], method="SLSQP",
                    options={"ftol": 1e-14, "maxiter": 1000},
                ).fun  # fmt: skip
                zero = objective(np.zeros(d))
                for label in methods:
                    for eps in epsilons:
                        start = time.process_time()
                        res = SOLVERS[LP_METHODS[label]].run(
                            data, loss, n_outputs=1, alpha=0.0, epsilon=eps, delta=1e-6,
                            radius=1.0, constraint="lp", p=p, random_state=seed,
                        )  # fmt: skip
                        seconds = time.process_time() - start
                        gap = (objective(res.coef[:, 0]) - best) / (zero - best)
                        gaps.setdefault((n, d, label, eps), []).append((gap, seconds, res.n_iter))
                log(f"n={n} d={d} seed={seed} done")
    return gaps


def report_lp(gaps, ns, dims, epsilons, seeds, methods, command, name):
    lines = [
        "# Frank-Wolfe over an lp ball (Gaussian noisy gradients) against mirror descent",
        "",
        f"Command: `{command}`",
        "",
        f"Squared loss over the unit lp ball, p = {LP_P}, no intercept, rows uniform in "
        "[-1, 1]^d, a dense truth of lp norm 1.2 (outside the ball: the constraint is active), "
        "labels clipped to [-1, 1]; delta 1e-6, default steps and clips; solvers called "
        f"directly with the row count public; {len(seeds)} seed(s). Cells: median relative "
        "objective gap `(F - F*) / (F(0) - F*)` on the training rows (F* by SLSQP; lower is "
        "better, 1 is the zero model), then the median CPU seconds and steps.",
        "",
    ]
    header = ["n", "d", "method"] + [f"eps {e:g}" for e in epsilons]
    body = []
    for n in ns:
        for d in dims:
            for label in methods:
                cells = []
                for eps in epsilons:
                    values = np.array(gaps[(n, d, label, eps)])
                    gap, secs, steps = np.median(values, axis=0)
                    cells.append(f"{gap:.3g} ({secs:.1f} s, T = {steps:g})")
                body.append([f"{n:,}", d, label, *cells])
    lines += [md_table(header, body), "", environment()]
    path = RESULTS_DIR / name
    path.write_text("\n".join(lines) + "\n")
    return path


REGIMES = ("l1", "accmd", "cd", "lower_bound", "strongly_convex", "lp")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regime", choices=REGIMES, default="l1")
    parser.add_argument("--quick", action="store_true", help="1 seed, d = 2000, fewer solvers")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--dims", type=int, nargs="+", default=None)
    parser.add_argument("--epsilons", type=float, nargs="+", default=None)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--methods", nargs="+", default=None, help="default: all of the regime")
    parser.add_argument(
        "--problems", nargs="+", default=None, help=f"cd regime; default {CD_PROBLEMS}"
    )
    parser.add_argument(
        "--ns", type=int, nargs="+", default=None, help="lower_bound and strongly_convex regimes"
    )
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    limit_threads(args.threads)
    table = dict(
        l1=METHODS,
        accmd=ACCMD_METHODS,
        cd=CD_METHODS,
        lower_bound=LOWER_BOUND_METHODS,
        strongly_convex=STRONGLY_CONVEX_METHODS,
        lp=LP_METHODS,
    )[args.regime]
    unknown = sorted(set(args.methods or ()) - set(table))
    if unknown:
        parser.error(f"unknown methods for --regime {args.regime}: {unknown}; know {list(table)}")

    def log(message):
        print(message, file=sys.stderr, flush=True)

    command = "PYTHONPATH=. python benchmarks/bench_regimes.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    command = command.strip()
    suffix = "_partial" if args.methods else ""
    if args.regime == "accmd":
        dims = args.dims or [2000, 10000]
        seeds = range(args.seeds or 3)
        rows = run_accmd(
            dims, args.epsilons or [1.0, 5.0], seeds, args.methods or list(table), args.timeout, log
        )
        path = report_accmd(rows, seeds, command, f"regimes_accmd{suffix}.md")
    elif args.regime == "cd":
        problems, epsilons = args.problems or list(CD_PROBLEMS), args.epsilons or CD_EPSILONS
        seeds, methods = range(args.seeds or 5), args.methods or list(table)
        gaps = run_cd(problems, epsilons, seeds, methods, log)
        path = report_cd(
            gaps, problems, epsilons, seeds, methods, command, f"regimes_cd{suffix}.md"
        )
    elif args.regime == "lower_bound":
        seeds = range(args.seeds or 3)
        rows = run_lower_bound(
            args.ns or LOWER_BOUND_NS,
            args.epsilons or LOWER_BOUND_EPSILONS,
            seeds,
            args.methods or list(table),
            log,
        )
        path = report_lower_bound(rows, seeds, command, f"regimes_lower_bound{suffix}.md")
    elif args.regime == "strongly_convex":
        ns, alphas = args.ns or STRONGLY_CONVEX_NS, STRONGLY_CONVEX_ALPHAS
        epsilons, seeds = args.epsilons or STRONGLY_CONVEX_EPSILONS, range(args.seeds or 3)
        methods = args.methods or list(table)
        gaps = run_strongly_convex(ns, alphas, epsilons, seeds, methods, log)
        path = report_strongly_convex(
            gaps,
            ns,
            alphas,
            epsilons,
            seeds,
            methods,
            command,
            f"regimes_strongly_convex{suffix}.md",
        )
    elif args.regime == "lp":
        ns, dims, epsilons = args.ns or LP_NS, args.dims or LP_DIMS, args.epsilons or LP_EPSILONS
        seeds, methods = range(args.seeds or 3), args.methods or list(table)
        gaps = run_lp(ns, dims, epsilons, seeds, methods, log)
        path = report_lp(
            gaps, ns, dims, epsilons, seeds, methods, command, f"regimes_lp{suffix}.md"
        )
    else:
        dims = args.dims or ([2000] if args.quick else [2000, 10000])
        epsilons = args.epsilons or ([1.0, 5.0] if args.quick else [0.5, 1.0, 2.0, 5.0])
        seeds = range(args.seeds or (1 if args.quick else 5))
        methods = args.methods or (QUICK_METHODS if args.quick else list(METHODS))
        rows = run(dims, epsilons, seeds, methods, args.timeout, log)
        path = report(rows, epsilons, seeds, args.quick, command, partial=bool(args.methods))
    print(path.read_text())


if __name__ == "__main__":
    main()
