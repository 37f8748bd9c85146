"""Benchmark dp_cd (DP coordinate descent) against dp_gd on features of very different scales.

The paper behind dp_cd (Maranjyan, Sadiev, Richtarik, "Differentially Private
Random Block Coordinate Descent", 2024; docs/solvers/coordinate_descent.md) has no experiments;
this is the first test of its claim that importance sampling of coordinates
(``p_j`` proportional to the smoothness constant ``M_j``) beats uniform DP-CD
when the ``M_j`` are heterogeneous.

Every method gets the same epsilon and the same number of passes over the
data (``--passes``, default 10: a pass is one step per block for dp_cd, one
full gradient for dp_gd).  The smoothness constants are those dp_cd computes
from the public per-feature bounds, ``M_j = beta X_j^2 (+ L2)`` for single
coordinates, so they span orders of magnitude whenever the public feature
ranges do.

Methods (all through the estimators, all at the same passes and epsilon):

* ``cd_uniform``      dp_cd, one coordinate per step, uniform (DP-CD)
* ``cd_importance``   dp_cd, one coordinate per step, p_j proportional to M_j
* ``bcd_uniform``     dp_cd, blocks of a partition, uniform
* ``bcd_importance``  dp_cd, blocks, q_i proportional to max_{j in block} M_j
* ``cd_full``         dp_cd, every coordinate per step (DP-GD preconditioned by M^-1)
* ``dp_gd``           dp_gd on the raw features, ``data_norm`` = the public bound ||X||
* ``dp_gd_rescaled``  dp_gd on the features divided by their public bounds (a
                      public rescaling a careful user would do); coefficients
                      mapped back to raw units

Metrics: the relative objective gap ``(f(w) - f*) / (f(0) - f*)`` of the
objective the estimators minimise (raw units; ``f*`` from L-BFGS to 1e-12 on
the same bounded training data; 1 means no better than the zero model), and
test accuracy (classification) or R^2 (regression).  Medians over seeds, with
the interquartile range.  Beside them: the paper's convex utility bound
``Sigma_S * R_{M P^-1}`` (Theorem 4.2) for each sampling, computed with the
non-private optimum (a diagnostic that no fit uses), to see whether the
theory predicts the measured order.

Usage::

    python benchmarks/bench_coordinate_descent.py            # full run (a few minutes)
    python benchmarks/bench_coordinate_descent.py --quick    # smoke test
    python benchmarks/bench_coordinate_descent.py --datasets breast_cancer --seeds 20

Writes ``benchmarks/results/coordinate_descent.md`` and the PNG figures
``coordinate_descent_gap.png``, ``coordinate_descent_score.png``,
``coordinate_descent_passes.png`` and ``coordinate_descent_passes_score.png``
(``--quick`` writes ``*_quick*`` files).
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
from scipy.special import expit
from sklearn.datasets import load_breast_cancer, load_diabetes
from sklearn.model_selection import train_test_split

import sklearn_dp
from sklearn_dp import DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers._coordinate_descent import (
    block_clip_thresholds,
    block_probabilities,
    sampling_structure,
    smoothness_constants,
)
from sklearn_dp.solvers._gradient_descent import DEFAULT_CLIP_FRACTION

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fmt_median_iqr, log, md_table, median, quartiles
from _datasets import breast_cancer_public_ranges

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
QUICK_EPSILONS = (0.3, 3.0)
PASSES = 10
PASSES_SWEEP = (3, 10, 30, 100)
QUICK_PASSES_SWEEP = (3, 30)
SWEEP_EPSILON = 1.0
DELTA = 1e-5
DEFAULT_SEEDS = 10
QUICK_SEEDS = 2
RESULTS_DIR = Path(__file__).resolve().parent / "results"

METHODS = [
    "cd_uniform",
    "cd_importance",
    "bcd_uniform",
    "bcd_importance",
    "cd_full",
    "dp_gd",
    "dp_gd_rescaled",
]

#: Which sampling each dp_cd method uses (for the theory column).
SAMPLING_OF = {
    "cd_uniform": ("uniform", False),
    "cd_importance": ("importance", False),
    "bcd_uniform": ("uniform", True),
    "bcd_importance": ("importance", True),
    "cd_full": ("full", False),
}


# --------------------------------------------------------------------------
# Problems: features with public, heterogeneous bounds
# --------------------------------------------------------------------------


@dataclass
class Problem:
    """A data set with public per-feature bounds and the objective the estimators minimise.

    ``X`` is already centred with public constants and clipped to
    ``[-feature_bound, feature_bound]`` (a data-independent map), so every
    method sees the same rows: dp_cd's entrywise clipping and dp_gd's L2
    clipping at ``||feature_bound||`` are both no-ops.
    """

    name: str
    title: str
    task: str  # "classification" or "regression"
    X: np.ndarray
    y: np.ndarray
    feature_bound: np.ndarray
    blocks: list
    test_size: float
    penalty: str | None
    C: float = 1.0  # classification: inverse L2 strength (scikit-learn convention)
    alpha: float = 0.0  # regression: L2 strength on the average loss
    y_bound: float = 1.0
    public: list = field(default_factory=list)

    def split(self, seed):
        stratify = self.y if self.task == "classification" else None
        return train_test_split(
            self.X, self.y, test_size=self.test_size, random_state=seed, stratify=stratify
        )


def _synthetic(signal):
    """Logistic data, 20 features with public bounds from 0.01 to 100 (M_j over 8 decades).

    ``signal`` says where the true coefficients live in units of the bounds
    (``w~_j = X_j w_j``): on the 4 widest-range features ("large"), on the 4
    narrowest ("small"), or on all ("spread").  The paper's importance-sampling
    claim is about the "large" case.
    """
    n, d = 2000, 20
    bound = 10.0 ** np.linspace(-2, 2, d)
    rng = np.random.default_rng(12345)
    U = rng.uniform(-1, 1, (n, d))
    w_tilde = np.zeros(d)
    if signal == "large":
        w_tilde[-4:] = [2.0, -1.5, 1.5, -2.0]
    elif signal == "small":
        w_tilde[:4] = [2.0, -1.5, 1.5, -2.0]
    else:
        w_tilde[:] = rng.normal(0.0, 0.8, d)
    y = (rng.uniform(size=n) < expit(U @ w_tilde + 0.3)).astype(int)
    where = {
        "large": "the 4 widest-range features",
        "small": "the 4 narrowest-range features",
        "spread": "all 20 features",
    }[signal]
    return Problem(
        name=f"synthetic_{signal}",
        title=f"Synthetic logistic, signal on {where.replace('the ', '')}",
        task="classification",
        X=U * bound,
        y=y,
        feature_bound=bound,
        blocks=[list(range(i, i + 4)) for i in range(0, d, 4)],
        test_size=0.5,
        penalty=None,
        public=[
            "Generator: x_ij = X_j u_ij with u_ij ~ U(-1, 1) and public bounds "
            "X_j = 10^linspace(-2, 2, 20); P(y=1) = sigmoid(u_i . w~ + 0.3) with the "
            f"signal on {where}. n=2000, half for testing.",
            "Objective: unpenalised logistic loss (penalty=None).",
            "Blocks: 5 groups of 4 consecutive features (similar ranges), the intercept its own "
            "block.",
        ],
    )


def _breast_cancer():
    bunch = load_breast_cancer()
    lo, hi = breast_cancer_public_ranges(bunch.DESCR, bunch.data.shape[1])
    # Public map: centre each feature at the middle of its documented range and
    # keep its units; the bound is the half-range (0.0145 to 2034: M_j over 10 decades).
    centre, bound = (lo + hi) / 2.0, (hi - lo) / 2.0
    X = np.clip(bunch.data - centre, -bound, bound)
    # The 10 measurements (radius, texture, ...) each come as mean, error and worst.
    blocks = [[k, k + 10, k + 20] for k in range(10)]
    return Problem(
        name="breast_cancer",
        title=f"Breast cancer (n={X.shape[0]}, d={X.shape[1]}), raw units",
        task="classification",
        X=X,
        y=bunch.target,
        feature_bound=bound,
        blocks=blocks,
        test_size=0.2,
        penalty="l2",
        C=1.0,
        public=[
            "Feature bounds: the Min/Max table of `load_breast_cancer().DESCR`; each feature is "
            "centred at the middle of its documented range, keeps its units, is clipped to the "
            "range, and its bound is the half-range (from 0.0145 to 2034).",
            "Objective: logistic loss + L2 with C=1 (scikit-learn's default) on the raw-unit "
            "coefficients.",
            "Blocks: the 10 measurements (mean, error, worst of each), the intercept its own "
            "block. Split: stratified 80/20 per seed.",
        ],
    )


#: Diabetes (load_diabetes(scaled=False)): public a-priori ranges of the ten
#: baseline variables for adult patients, chosen from clinical plausibility
#: (units as in the data set's source), NOT from the data.
DIABETES_RANGES = {
    "age": (18, 100),  # years
    "sex": (1, 2),  # coded 1 / 2
    "bmi": (10, 60),  # kg/m^2
    "bp": (40, 160),  # average blood pressure, mmHg
    "s1": (50, 400),  # total serum cholesterol, mg/dL
    "s2": (20, 300),  # LDL, mg/dL
    "s3": (10, 120),  # HDL, mg/dL
    "s4": (1, 12),  # total cholesterol / HDL
    "s5": (3, 7),  # log of serum triglycerides
    "s6": (40, 200),  # blood sugar, mg/dL
}
DIABETES_Y_BOUND = 400.0  # disease progression score, a priori within [0, 400]


def _diabetes():
    bunch = load_diabetes(scaled=False)
    lo = np.array([DIABETES_RANGES[f][0] for f in bunch.feature_names], dtype=float)
    hi = np.array([DIABETES_RANGES[f][1] for f in bunch.feature_names], dtype=float)
    centre, bound = (lo + hi) / 2.0, (hi - lo) / 2.0
    X = np.clip(bunch.data - centre, -bound, bound)
    return Problem(
        name="diabetes",
        title=f"Diabetes (n={X.shape[0]}, d={X.shape[1]}), raw units",
        task="regression",
        X=X,
        y=bunch.target.astype(float),
        feature_bound=bound,
        blocks=[[0, 1], [2, 3], [4, 5, 6, 7], [8, 9]],
        test_size=0.2,
        penalty="l2",
        alpha=1e-4,
        y_bound=DIABETES_Y_BOUND,
        public=[
            "Feature bounds: a-priori clinical ranges for adult patients (age 18-100, sex 1-2, "
            "BMI 10-60, BP 40-160 mmHg, cholesterol 50-400, LDL 20-300, HDL 10-120, TC/HDL "
            "1-12, log-triglycerides 3-7, glucose 40-200); each feature is centred at the "
            "middle of its range and bounded by the half-range (0.5 to 175). We chose them "
            "after seeing the data set's documentation, not its values; `y_bound=400`.",
            "Objective: squared loss + L2 (alpha=1e-4) on the raw-unit coefficients "
            "(DPSCORegressor's default).",
            "Blocks: (age, sex), (bmi, bp), (s1..s4 lipids), (s5, s6). Split: 80/20 per seed.",
        ],
    )


PROBLEMS = {
    "synthetic_large": lambda: _synthetic("large"),
    "synthetic_spread": lambda: _synthetic("spread"),
    "synthetic_small": lambda: _synthetic("small"),
    "breast_cancer": _breast_cancer,
    "diabetes": _diabetes,
}


# --------------------------------------------------------------------------
# Objective and reference optimum (non-private, for the metric only)
# --------------------------------------------------------------------------


def _objective_terms(problem, X, y):
    """f(v) on v = (coef, intercept) in raw units, with its gradient and Hessian."""
    n = X.shape[0]
    A = np.hstack([X, np.ones((n, 1))])
    penalised = np.append(np.ones(X.shape[1]), 0.0)
    if problem.task == "classification":
        s = np.where(y == 1, 1.0, -1.0)
        alpha = 0.0 if problem.penalty is None else 1.0 / (problem.C * n)

        def f(v):
            z = A @ v
            value = np.mean(np.logaddexp(0.0, -s * z)) + 0.5 * alpha * v[:-1] @ v[:-1]
            grad = A.T @ (-s * expit(-s * z)) / n + alpha * penalised * v
            curvature = expit(z) * expit(-z)
            hessian = (A.T * curvature) @ A / n + np.diag(alpha * penalised)
            return value, grad, hessian

    else:
        yc = np.clip(y, -problem.y_bound, problem.y_bound)
        alpha = problem.alpha

        def f(v):
            r = A @ v - yc
            value = 0.5 * np.mean(r**2) + 0.5 * alpha * v[:-1] @ v[:-1]
            grad = A.T @ r / n + alpha * penalised * v
            return value, grad, A.T @ A / n + np.diag(alpha * penalised)

    return f, alpha


def reference_optimum(problem, X, y):
    """Non-private optimum by damped Newton in units of the public bounds (the raw
    features span 10 decades; Newton is insensitive to that, first-order methods are not)."""
    f, alpha = _objective_terms(problem, X, y)
    scale = np.append(problem.feature_bound, 1.0)
    u = np.zeros(X.shape[1] + 1)
    for _ in range(100):
        value, grad, hessian = f(u / scale)
        grad, hessian = grad / scale, hessian / np.outer(scale, scale)
        if np.max(np.abs(grad)) < 1e-10:
            break
        step = np.linalg.solve(hessian, grad)
        t = 1.0
        while f((u - t * step) / scale)[0] > value - 1e-4 * t * grad @ step and t > 1e-12:
            t *= 0.5
        candidate = u - t * step
        if f(candidate / scale)[0] >= value:  # no decrease left at machine precision
            break
        u = candidate
    v = u / scale
    return (lambda w: f(w)[:2]), v, f(v)[0], alpha


# --------------------------------------------------------------------------
# Methods
# --------------------------------------------------------------------------


def make_estimator(method, problem, epsilon, passes, seed):
    """(estimator, feature scale): fit it on X / scale; its coef_ / scale is in raw units."""
    scale = np.ones_like(problem.feature_bound)
    common = dict(
        epsilon=epsilon, delta=DELTA, max_iter=passes, random_state=seed, penalty=problem.penalty
    )
    if problem.task == "classification":
        make = DPLogisticRegression
        common.update(C=problem.C, classes=[0, 1])
    else:
        make = DPSCORegressor
        common.update(alpha=problem.alpha, y_bound=problem.y_bound)
    if method in SAMPLING_OF:
        sampling, blocked = SAMPLING_OF[method]
        options = {"sampling": sampling}
        if blocked:
            options["blocks"] = problem.blocks
        return make(
            solver="dp_cd", feature_bound=problem.feature_bound, solver_options=options, **common
        ), scale
    if method == "dp_gd":
        return make(
            solver="dp_gd", data_norm=float(np.linalg.norm(problem.feature_bound)), **common
        ), scale
    if method == "dp_gd_rescaled":
        scale = problem.feature_bound
        return make(solver="dp_gd", data_norm=math.sqrt(scale.size), **common), scale
    raise ValueError(method)


def theory_factor(method, problem, X_train, v_star, alpha):
    """The paper's convex bound factor Sigma_S * R_{M P^-1} (Theorem 4.2), in solver units.

    Uses the non-private optimum ``v_star`` (diagnostic only).  ``None`` for dp_gd.
    """
    if method not in SAMPLING_OF:
        return None
    sampling, blocked = SAMPLING_OF[method]
    bound = np.append(problem.feature_bound, 1.0)  # intercept column
    d = bound.size
    structure = sampling_structure(d, sampling, blocks=problem.blocks if blocked else None)
    if problem.task == "classification":
        beta, derivative_bound, w_star = 0.25, 1.0, v_star
        l2 = alpha * np.append(np.ones(d - 1), 0.0)
    else:
        beta, derivative_bound = 1.0, 2.0  # DPSCORegressor's residual bound, scaled labels
        w_star = v_star / problem.y_bound
        l2 = alpha * np.append(np.ones(d - 1), 0.0)
    M = smoothness_constants(bound, beta, l2, structure)
    q = block_probabilities(M, structure)
    clip = DEFAULT_CLIP_FRACTION * derivative_bound * np.linalg.norm(bound)
    L_block = block_clip_thresholds(clip, bound, structure)
    p = np.empty(d)
    L = np.empty(d)
    for i, block in enumerate(structure.blocks):
        p[block] = q[i]
        L[block] = L_block[i]
    sigma_s = math.sqrt(np.sum(L**2 / M))
    r = math.sqrt(np.sum(M / p * w_star**2))  # w0 = 0
    return sigma_s * r


# --------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------


def score(problem, model, scale, X_test, y_test):
    return model.score(X_test / scale, y_test)


def raw_coefficients(model, scale):
    coef = np.ravel(model.coef_) / scale
    intercept = (
        float(np.ravel(model.intercept_)[0])
        if np.ndim(model.intercept_)
        else float(model.intercept_)
    )
    return np.append(coef, intercept)


def run_problem(problem, epsilons, seeds, passes, sweep, log):
    gap = defaultdict(lambda: defaultdict(list))  # method -> epsilon -> [relative gap]
    test = defaultdict(lambda: defaultdict(list))  # method -> epsilon -> [score]
    sweep_gap = defaultdict(lambda: defaultdict(list))  # method -> passes -> [gap]
    sweep_test = defaultdict(lambda: defaultdict(list))  # method -> passes -> [score]
    reference_score, theory, seconds = [], defaultdict(list), defaultdict(list)
    star_share = []
    for i, seed in enumerate(seeds):
        t0 = time.perf_counter()
        X_train, X_test, y_train, y_test = problem.split(seed)
        f, v_star, f_star, alpha = reference_optimum(problem, X_train, y_train)
        f_zero = f(np.zeros_like(v_star))[0]
        # Non-private reference: the optimum's score.
        z = X_test @ v_star[:-1] + v_star[-1]
        if problem.task == "classification":
            reference_score.append(float(np.mean((z > 0).astype(int) == y_test)))
        else:
            residual = np.sum((y_test - z) ** 2)
            reference_score.append(1 - residual / np.sum((y_test - y_test.mean()) ** 2))
        w_tilde = v_star[:-1] * problem.feature_bound
        top = np.argsort(problem.feature_bound)[-max(1, problem.feature_bound.size // 4) :]
        star_share.append(float(np.sum(w_tilde[top] ** 2) / np.sum(w_tilde**2)))
        for method in METHODS:
            theory[method].append(theory_factor(method, problem, X_train, v_star, alpha))

        def fit(method, epsilon, n_passes):
            model, scale = make_estimator(method, problem, epsilon, n_passes, seed)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X_train / scale, y_train)
            elapsed = time.perf_counter() - start
            v = raw_coefficients(model, scale)
            relative = (f(v)[0] - f_star) / (f_zero - f_star)
            return relative, score(problem, model, scale, X_test, y_test), elapsed

        for method in METHODS:
            for epsilon in epsilons:
                relative, test_score, elapsed = fit(method, epsilon, passes)
                gap[method][epsilon].append(relative)
                test[method][epsilon].append(test_score)
                seconds[method].append(elapsed)
            for n_passes in sweep:
                if n_passes == passes and SWEEP_EPSILON in epsilons:
                    relative = gap[method][SWEEP_EPSILON][-1]
                    test_score = test[method][SWEEP_EPSILON][-1]
                else:
                    relative, test_score, _ = fit(method, SWEEP_EPSILON, n_passes)
                sweep_gap[method][n_passes].append(relative)
                sweep_test[method][n_passes].append(test_score)
        elapsed = time.perf_counter() - t0
        log(f"  {problem.name}: seed {seed} ({i + 1}/{len(seeds)}) {elapsed:.1f} s")
    return dict(
        gap=gap,
        test=test,
        sweep_gap=sweep_gap,
        sweep_test=sweep_test,
        reference_score=reference_score,
        theory=theory,
        seconds=seconds,
        star_share=star_share,
        n_train=X_train.shape[0],
        n_test=X_test.shape[0],
    )


# --------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------


def fmt(values, digits=3):
    return fmt_median_iqr(values, digits)


def importance_verdict(res, epsilons):
    """Per epsilon: median gap ratio IS / uniform and the share of seeds where IS is better."""
    rows = []
    for kind, (uniform, importance) in {
        "single coordinates": ("cd_uniform", "cd_importance"),
        "blocks": ("bcd_uniform", "bcd_importance"),
    }.items():
        for epsilon in epsilons:
            u = np.array(res["gap"][uniform][epsilon])
            s = np.array(res["gap"][importance][epsilon])
            wins = float(np.mean(s < u))
            rows.append(
                [
                    kind,
                    f"{epsilon:g}",
                    f"{median(u):.3f}",
                    f"{median(s):.3f}",
                    f"{median(s) / median(u):.2f}",
                    f"{wins:.0%}",
                ]
            )
    return rows


def report_problem(problem, res, epsilons, seeds, passes, sweep):
    score_name = "test accuracy" if problem.task == "classification" else "test R^2"
    bound = np.append(problem.feature_bound, 1.0)
    beta = 0.25 if problem.task == "classification" else 1.0
    M = beta * bound**2
    out = [f"## {problem.title}", ""]
    out.append(
        f"{len(seeds)} seeds; n_train={res['n_train']}, n_test={res['n_test']}; delta={DELTA:g}; "
        f"{passes} passes per fit. Public coordinate constants M_j = beta X_j^2 range from "
        f"{M.min():.3g} to {M.max():.3g} (ratio {M.max() / M.min():.2g})."
    )
    out.append("")
    out.append("Assumed public:")
    out += [f"- {p}" for p in problem.public]
    out.append(
        f"- Diagnostic only (from the non-private optimum, used by no fit): the widest-range "
        f"quarter of the features holds {median(res['star_share']):.0%} of ||w~*||^2 "
        "(coefficients in units of the bounds, w~_j = X_j w*_j)."
    )
    out.append("")
    out.append(
        "Relative objective gap (f(w) - f*) / (f(0) - f*), median over seeds (interquartile "
        "range); lower is better."
    )
    out.append("")
    headers = ["epsilon"] + METHODS
    rows = [[f"{e:g}"] + [fmt(res["gap"][m][e]) for m in METHODS] for e in epsilons]
    out.append(md_table(headers, rows))
    out.append("")
    out.append(
        f"{score_name.capitalize()}, median (interquartile range); non-private optimum: "
        f"{fmt(res['reference_score'])}."
    )
    out.append("")
    rows = [[f"{e:g}"] + [fmt(res["test"][m][e]) for m in METHODS] for e in epsilons]
    out.append(md_table(headers, rows))
    out.append("")
    out.append(
        "Importance vs uniform sampling (the paper's claim): median relative gaps, their "
        "ratio (< 1: importance better) and the share of seeds (same split, same seed) where "
        "importance sampling has the lower gap."
    )
    out.append("")
    out.append(
        md_table(
            ["sampling", "epsilon", "uniform", "importance", "ratio", "IS better"],
            importance_verdict(res, epsilons),
        )
    )
    out.append("")
    rows = []
    uniform_theory = median(res["theory"]["cd_uniform"])
    for method in SAMPLING_OF:
        factor = median(res["theory"][method])
        measured = math.nan
        if SWEEP_EPSILON in epsilons:
            measured = median(res["gap"][method][SWEEP_EPSILON])
        rows.append([method, f"{factor:.4g}", f"{factor / uniform_theory:.3g}", f"{measured:.3f}"])
    out.append(
        "The paper's convex bound factor Sigma_S * R_{M P^-1} (Theorem 4.2, w0 = 0, with the "
        "clip shares as L_U and the non-private optimum as w*), relative to uniform DP-CD, "
        f"beside the measured median gap at epsilon={SWEEP_EPSILON:g}:"
    )
    out.append("")
    out.append(
        md_table(
            [
                "method",
                "Sigma_S R_{MP^-1}",
                "relative to cd_uniform",
                f"measured gap (eps={SWEEP_EPSILON:g})",
            ],
            rows,
        )
    )
    out.append("")
    if sweep:
        out.append(
            f"Relative objective gap against the number of passes at epsilon="
            f"{SWEEP_EPSILON:g} (same passes for every method):"
        )
        out.append("")
        rows = [[str(p)] + [fmt(res["sweep_gap"][m][p]) for m in METHODS] for p in sweep]
        out.append(md_table(["passes"] + METHODS, rows))
        out.append("")
        out.append(
            f"{score_name.capitalize()} against the number of passes at epsilon={SWEEP_EPSILON:g}:"
        )
        out.append("")
        rows = [[str(p)] + [fmt(res["sweep_test"][m][p]) for m in METHODS] for p in sweep]
        out.append(md_table(["passes"] + METHODS, rows))
        out.append("")
    rows = [[m, f"{median(res['seconds'][m]) * 1e3:.1f} ms"] for m in METHODS]
    out.append(f"Median fit time over all epsilons ({passes} passes):")
    out.append("")
    out.append(md_table(["method", "fit time"], rows))
    out.append("")
    return "\n".join(out)


def plot(results, problems, epsilons, sweep, paths):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {
        "cd_uniform": dict(color="C0", marker="o"),
        "cd_importance": dict(color="C1", marker="s"),
        "bcd_uniform": dict(color="C2", marker="^"),
        "bcd_importance": dict(color="C3", marker="v"),
        "cd_full": dict(color="C4", marker="D"),
        "dp_gd": dict(color="C5", marker="x", linestyle="--"),
        "dp_gd_rescaled": dict(color="C7", marker="+", linestyle="--"),
    }

    def panels(key, ylabel, path, xs, xlabel, log_y, reference=None):
        n_cols = min(3, len(problems) + 1)
        n_rows = math.ceil((len(problems) + 1) / n_cols)
        fig, axes = plt.subplots(
            n_rows, n_cols, figsize=(5.0 * n_cols, 4.0 * n_rows), squeeze=False
        )
        axes = axes.ravel()
        for ax, problem in zip(axes, problems):
            res = results[problem.name]
            for method in METHODS:
                values = [res[key][method][x] for x in xs]
                meds = [median(v) for v in values]
                q = [quartiles(v) for v in values]
                ax.plot(xs, meds, label=method, **styles[method])
                ax.fill_between(
                    xs,
                    [a for a, _ in q],
                    [b for _, b in q],
                    alpha=0.12,
                    color=styles[method]["color"],
                )
            if reference is not None:
                top = median(res[reference])
                ax.axhline(top, color="k", linestyle=":", label="non-private optimum")
                if problem.task == "regression":
                    # R^2 of very noisy fits runs to -40: keep the informative range.
                    ax.set_ylim(-1.0, top + 0.1)
            ax.set_xscale("log")
            if log_y:
                ax.set_yscale("log")
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{x:g}" for x in xs])
            ax.minorticks_off() if not log_y else None
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.set_title(problem.title, fontsize=9)
        handles, labels = axes[0].get_legend_handles_labels()
        for ax in axes[len(problems) :]:
            ax.axis("off")
        axes[len(problems)].legend(
            handles,
            labels,
            loc="center",
            fontsize=10,
            title="median over seeds; band: interquartile range",
        )
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)

    panels(
        "gap",
        "relative objective gap (median)",
        paths["gap"],
        list(epsilons),
        f"epsilon (delta={DELTA:g})",
        True,
    )
    panels(
        "test",
        "test accuracy / R^2 (median)",
        paths["score"],
        list(epsilons),
        f"epsilon (delta={DELTA:g})",
        False,
        reference="reference_score",
    )
    if sweep:
        panels(
            "sweep_gap",
            f"relative gap at epsilon={SWEEP_EPSILON:g}",
            paths["passes"],
            list(sweep),
            "passes over the data",
            True,
        )
        panels(
            "sweep_test",
            f"test accuracy / R^2 at epsilon={SWEEP_EPSILON:g}",
            paths["passes_score"],
            list(sweep),
            "passes over the data",
            False,
            reference="reference_score",
        )


def summary(results, problems, epsilons):
    """The closing lines: does importance sampling win?"""
    out = ["## Does importance sampling win when the M_j are heterogeneous?", ""]
    for problem in problems:
        res = results[problem.name]
        ratios = [
            median(res["gap"]["cd_importance"][e]) / median(res["gap"]["cd_uniform"][e])
            for e in epsilons
        ]
        block_ratios = [
            median(res["gap"]["bcd_importance"][e]) / median(res["gap"]["bcd_uniform"][e])
            for e in epsilons
        ]
        best = {e: min(METHODS, key=lambda m: median(res["gap"][m][e])) for e in epsilons}
        best_score = {e: max(METHODS, key=lambda m: median(res["test"][m][e])) for e in epsilons}
        out.append(
            f"- **{problem.name}** (widest-range quarter holds {median(res['star_share']):.0%} of "
            f"the optimum's mass): importance/uniform gap ratio "
            + ", ".join(f"{r:.2f}" for r in ratios)
            + " (single coordinates), "
            + ", ".join(f"{r:.2f}" for r in block_ratios)
            + " (blocks) at epsilon "
            + ", ".join(f"{e:g}" for e in epsilons)
            + "; lowest median gap: "
            + ", ".join(f"{best[e]}" for e in epsilons)
            + "; best median test score: "
            + ", ".join(
                f"{best_score[e]} ({median(res['test'][best_score[e]][e]):.3f})" for e in epsilons
            )
            + "."
        )
    out.append("")
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke test (few seeds, 2 epsilons)")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--passes", type=int, default=PASSES)
    parser.add_argument("--datasets", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    args = parser.parse_args(argv)
    epsilons = QUICK_EPSILONS if args.quick else EPSILONS
    seeds = list(range(args.seeds or (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)))
    sweep = QUICK_PASSES_SWEEP if args.quick else PASSES_SWEEP
    suffix = "_quick" if args.quick else ""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    paths = {
        "md": RESULTS_DIR / f"coordinate_descent{suffix}.md",
        "gap": RESULTS_DIR / f"coordinate_descent_gap{suffix}.png",
        "score": RESULTS_DIR / f"coordinate_descent_score{suffix}.png",
        "passes": RESULTS_DIR / f"coordinate_descent_passes{suffix}.png",
        "passes_score": RESULTS_DIR / f"coordinate_descent_passes_score{suffix}.png",
    }

    start = time.perf_counter()
    problems = [PROBLEMS[name]() for name in args.datasets]
    results = {}
    for problem in problems:
        log(f"{problem.title}")
        results[problem.name] = run_problem(problem, epsilons, seeds, args.passes, sweep, log)
    elapsed = time.perf_counter() - start

    header = [
        "# dp_cd: DP coordinate descent with importance and block sampling vs dp_gd",
        "",
        f"Command: `python benchmarks/bench_coordinate_descent.py"
        f"{' --quick' if args.quick else ''}"
        f"{'' if args.seeds is None else f' --seeds {args.seeds}'}"
        f"{'' if args.passes == PASSES else f' --passes {args.passes}'}"
        f"{'' if args.datasets == list(PROBLEMS) else ' --datasets ' + ' '.join(args.datasets)}`"
        f" ({elapsed:.0f} s). sklearn_dp {sklearn_dp.__version__}, scikit-learn "
        f"{sklearn.__version__}, numpy {np.__version__}, Python {platform.python_version()}, "
        f"{platform.machine()}.",
        "",
        "Every method runs at the same epsilon and the same number of passes over the data "
        "(one pass: one step per block for dp_cd, one full gradient for dp_gd), with its "
        "defaults otherwise (dp_cd: one averaging round per pass, clip half the loss's bound "
        "split over blocks by the public bounds; dp_gd: Nesterov momentum, tail average). "
        "dp_gd_rescaled divides each feature by its public bound before fitting and maps "
        "the coefficients back; with an L2 penalty it therefore minimises a different "
        "objective (penalty on the rescaled coefficients) and its gap on the raw objective is "
        "not zero even without noise.",
        "",
    ]
    body = [
        report_problem(p, results[p.name], epsilons, seeds, args.passes, sweep) for p in problems
    ]
    text = "\n".join(header + [summary(results, problems, epsilons)] + body)
    figures = ("gap", "score", "passes", "passes_score")
    text += "\nFigures: " + ", ".join(f"`{paths[k].name}`" for k in figures) + "\n"
    paths["md"].write_text(text)
    plot(results, problems, epsilons, sweep, paths)
    print(text)
    log(f"wrote {paths['md']} and figures in {elapsed:.0f} s")


if __name__ == "__main__":
    main()
