"""Coverage and width of the private confidence intervals (``conf_int``) on simulated data.

Data with a known truth: ``d = 5`` features drawn uniformly on
``[-sqrt(3), sqrt(3)]`` (unit variance; every row inside the public
``data_norm = sqrt(3 d)``, so the bounds clip nothing), coefficients
``(1, -0.5, 0.25, 0, 0.5)``; a linear model with intercept 0.5 and N(0, 1)
errors (``y_bound = 8``: labels beyond it have probability below 1e-6), or a
logistic model with intercept 0.3.  For each configuration, ``--reps`` data
sets; each is fitted with ``solver_options={"inference": True}`` and its 95%
intervals are checked against the truth.  The width ratio is the median over
the data sets of ``bse_`` over the standard error of the non-private fit on
the same data (OLS, or the logistic maximum likelihood with the inverse
Fisher information).

Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_inference.py            # 200 data sets (~15 min)
    PYTHONPATH=. python benchmarks/bench_inference.py --reps 20  # a smoke test
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, environment, log, md_table, write_report
from sklearn.linear_model import LogisticRegression

from sklearn_dp import DPLogisticRegression, DPSCORegressor

D = 5
BETA = np.array([1.0, -0.5, 0.25, 0.0, 0.5])
INTERCEPT = {"squared": 0.5, "logistic": 0.3}
DATA_NORM = math.sqrt(3.0 * D)
Y_BOUND = 8.0
#: The 97.5% normal quantile: the non-private Wald intervals, the control.
Z95 = 1.959963984540054
CONFIGS = (("squared", "dp_ssp"), ("squared", "dp_newton"), ("logistic", "dp_newton"))


def simulate(model, n, rng):
    """``(X, y)`` from the model with the known truth."""
    X = rng.uniform(-math.sqrt(3.0), math.sqrt(3.0), size=(n, D))
    score = X @ BETA + INTERCEPT[model]
    if model == "squared":
        return X, score + rng.normal(size=n)
    return X, (rng.random(n) < 1.0 / (1.0 + np.exp(-score))).astype(int)


def nonprivate(model, X, y):
    """``(estimate, standard errors)`` of the non-private fit, intercept first."""
    A = np.column_stack([np.ones(len(X)), X])
    if model == "squared":
        w = np.linalg.lstsq(A, y, rcond=None)[0]
        r = y - A @ w
        sigma2 = float(r @ r) / (len(y) - A.shape[1])
        return w, np.sqrt(np.diag(sigma2 * np.linalg.inv(A.T @ A)))
    fit = LogisticRegression(C=np.inf, fit_intercept=False, tol=1e-10, max_iter=1000)
    w = fit.fit(A, y).coef_.ravel()
    p = 1.0 / (1.0 + np.exp(-(A @ w)))
    information = (A * (p * (1.0 - p))[:, None]).T @ A
    return w, np.sqrt(np.diag(np.linalg.inv(information)))


def private(model, solver, epsilon, seed):
    options = dict(epsilon=epsilon, solver=solver, data_norm=DATA_NORM, random_state=seed)
    options["solver_options"] = {"inference": True}
    if model == "squared":
        return DPSCORegressor(y_bound=Y_BOUND, **options)
    return DPLogisticRegression(classes=[0, 1], **options)


def run(model, solver, n, epsilon, reps, seed):
    """Per-parameter coverage, the non-private intervals' (the control), the median width ratio.

    The control's coverage on the same data sets shows how far below 0.95 a
    per-parameter coverage estimate from ``reps`` data sets falls by chance
    alone (its standard error is about ``sqrt(0.95 * 0.05 / reps)``).
    """
    rng = np.random.default_rng(seed)
    truth = np.r_[INTERCEPT[model], BETA]
    covered, control, ratios = [], [], []
    for rep in range(reps):
        X, y = simulate(model, n, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = private(model, solver, epsilon, seed * 100_000 + rep).fit(X, y)
        interval = fitted.conf_int(0.05)
        covered.append((interval[:, 0] <= truth) & (truth <= interval[:, 1]))
        estimate, se = nonprivate(model, X, y)
        control.append(np.abs(estimate - truth) <= Z95 * se)
        ratios.append(fitted.bse_ / se)
    covered, control, ratios = np.array(covered), np.array(control), np.array(ratios)
    return covered.mean(axis=0), control.mean(axis=0), np.median(ratios, axis=0)


def below_chance(reps, coverage=0.95, threshold=0.93):
    """Probability that a coverage estimate from ``reps`` data sets is below ``threshold``."""
    from scipy.stats import binom

    return float(binom.cdf(math.ceil(threshold * reps) - 1, reps, coverage))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=200, help="data sets per configuration")
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--models", nargs="+", default=["squared", "logistic"], choices=["squared", "logistic"]
    )
    parser.add_argument("--out", default=str(RESULTS_DIR / "inference.md"))
    args = parser.parse_args(argv)
    rows = []
    cells = below = control_below = 0
    start = time.time()
    for model, solver in CONFIGS:
        if model not in args.models:
            continue
        for n in args.sizes:
            for epsilon in args.epsilons:
                coverage, control, ratio = run(model, solver, n, epsilon, args.reps, args.seed)
                rows.append(
                    [
                        model,
                        solver,
                        n,
                        f"{epsilon:g}",
                        f"{coverage.min():.3f}",
                        f"{coverage.mean():.3f}",
                        " ".join(f"{c:.2f}" for c in coverage),
                        f"{control.min():.3f}",
                        f"{np.max(ratio[1:]):.2f}",
                        f"{ratio[0]:.2f}",
                    ]
                )
                log(f"{model} {solver} n={n} eps={epsilon:g}: {rows[-1][4:]}")
                cells += coverage.size
                below += int(np.sum(coverage < 0.93))
                control_below += int(np.sum(control < 0.93))
    headers = [
        "model",
        "solver",
        "n",
        "epsilon",
        "min coverage",
        "mean coverage",
        "coverage (intercept, coef 1..5)",
        "non-private min coverage",
        "width ratio (coefs, max)",
        "width ratio (intercept)",
    ]
    text = "\n".join(
        [
            "# Private confidence intervals: coverage and width",
            "",
            f"`PYTHONPATH=. python benchmarks/bench_inference.py --reps {args.reps}`, "
            f"{args.reps} simulated data sets per row, 95% intervals "
            f"({time.time() - start:.0f} s).  Width ratio: median of `bse_` over the "
            "non-private standard error on the same data.",
            "",
            md_table(headers, rows),
            "",
            f"Parameters below 0.93: {below} of {cells} private, {control_below} of {cells} "
            "non-private on the same data sets; "
            f"{cells * below_chance(args.reps):.1f} expected by chance alone if every "
            f"interval covered exactly 95% (a binomial estimate from {args.reps} data sets).",
            "",
            environment(),
            "",
        ]
    )
    print(text)
    write_report(args.out, text)


if __name__ == "__main__":
    main()
