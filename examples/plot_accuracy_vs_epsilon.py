"""
Test accuracy against epsilon, per solver
=========================================

How much accuracy does privacy cost?  We fit :class:`~sklearn_dp.DPLogisticRegression`
on scikit-learn's breast cancer data with several solvers, for epsilon from 0.1
to 3, and draw the median test accuracy over random train/test splits and noise
draws beside non-private scikit-learn ``LogisticRegression`` on the same features
and the same splits.

Every private fit here is (epsilon, 1e-5)-DP for the training rows, under
add/remove-one neighbouring; the number of rows is protected too (5% of epsilon
pays for a noisy count).  The features are scaled with **public** ranges only
(the ranges printed in the data set's documentation), never with statistics of
the data.

This example keeps to 8 splits and epsilon <= 3 so that it runs in seconds
(``dp_sgd``'s noise calibration, PLD accounting of 100 subsampled steps, gets
slower as epsilon grows); the full numbers
(10 seeds, fit times, noise calibration) are in ``benchmarks/results/logistic.md``
and ``benchmarks/results/perturbation.md`` (``python benchmarks/bench_logistic.py``).

The figure in the README is drawn by this script with::

    python examples/plot_accuracy_vs_epsilon.py --solvers dp_gd objective_perturbation \\
        --seeds 20 --epsilons 0.1 0.3 1 3 10 --save docs/images/accuracy_vs_epsilon.png
"""

# %%
# Command-line options (only used to regenerate the README figure)
# ----------------------------------------------------------------
import argparse
import math
import re
import time

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from sklearn_dp import DPLogisticRegression

parser = argparse.ArgumentParser(description="Test accuracy against epsilon per solver.")
parser.add_argument(
    "--solvers",
    nargs="+",
    default=["dp_gd", "dp_sgd", "objective_perturbation", "output_perturbation"],
)
parser.add_argument("--seeds", type=int, default=8, help="train/test splits (and noise draws)")
parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 0.3, 1.0, 3.0])
parser.add_argument("--save", default=None, help="write the figure to this path")
args, _ = parser.parse_known_args()
start = time.perf_counter()

# %%
# Public scaling of the features
# ------------------------------
# The data set's documentation (``DESCR``) prints a Min/Max table for each of the
# 30 features.  We treat those ranges as public knowledge about the feature
# domain and map every feature to [-0.5, 0.5] with them.  Scaling with the
# training data's own min/max or mean/std would release statistics of the
# private data outside the guarantee (see the Pipeline example).  Because each
# feature lies in [-0.5, 0.5], every row has L2 norm at most ``0.5 * sqrt(30)``:
# that is ``data_norm``, derived from the public map alone.
data = load_breast_cancer()
ranges = re.findall(r"^[a-z ]+\([a-z ]+\):\s+([\d.]+)\s+([\d.]+)\s*$", data.DESCR, re.M)
lo, hi = np.array(ranges, dtype=float).T
assert lo.size == data.data.shape[1] == 30
X = np.clip((data.data - (lo + hi) / 2) / (hi - lo), -0.5, 0.5)
y = data.target
data_norm = 0.5 * math.sqrt(X.shape[1])
print(f"{X.shape[0]} rows, {X.shape[1]} features, data_norm = {data_norm:.3f}")

# %%
# Fit every solver at every epsilon, over several splits
# ------------------------------------------------------
# ``classes=[0, 1]`` declares the label set (otherwise it is released
# privately, for 10% of epsilon and half of delta).  ``random_state`` makes the noise
# reproducible for this demonstration; leave it at None for a real release.
epsilons = args.epsilons
delta = 1e-5
seeds = range(args.seeds)
accuracy = {name: np.empty((len(epsilons), len(seeds))) for name in args.solvers}
sklearn_accuracy = np.empty(len(seeds))
for k, seed in enumerate(seeds):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y
    )
    sklearn_accuracy[k] = LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
    for name in args.solvers:
        for i, epsilon in enumerate(epsilons):
            model = DPLogisticRegression(
                epsilon=epsilon,
                delta=delta,
                solver=name,
                data_norm=data_norm,
                classes=[0, 1],
                random_state=seed,
            ).fit(X_train, y_train)
            accuracy[name][i, k] = model.score(X_test, y_test)

# %%
# The table: median test accuracy over the splits
# -----------------------------------------------
print(f"median test accuracy over {len(seeds)} splits (delta={delta:g})")
print(f"{'epsilon':>8} " + " ".join(f"{name:>23}" for name in args.solvers))
for i, epsilon in enumerate(epsilons):
    cells = " ".join(f"{np.median(accuracy[name][i]):23.3f}" for name in args.solvers)
    print(f"{epsilon:8g} {cells}")
print(f"non-private scikit-learn LogisticRegression: {np.median(sklearn_accuracy):.3f}")

# %%
# The figure
# ----------
# Lines are medians over the splits; the bands span the 25th to 75th
# percentiles.  The dashed line is non-private scikit-learn on the same splits.
labels = {
    "dp_gd": "sklearn_dp dp_gd (default)",
    "objective_perturbation": "objective perturbation (classic)",
}
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for name in args.solvers:
    median = np.median(accuracy[name], axis=1)
    q25, q75 = np.percentile(accuracy[name], [25, 75], axis=1)
    (line,) = ax.plot(epsilons, median, marker="o", label=labels.get(name, name))
    ax.fill_between(epsilons, q25, q75, color=line.get_color(), alpha=0.15)
ax.axhline(
    np.median(sklearn_accuracy), color="k", linestyle="--", label="scikit-learn (non-private)"
)
ax.set_xscale("log")
ax.set_xticks(epsilons)
ax.set_xticklabels([f"{e:g}" for e in epsilons])
ax.minorticks_off()
ax.set_xlabel(f"epsilon (delta = {delta:g})")
ax.set_ylabel("test accuracy")
ax.set_title(
    f"Breast cancer (n=569, d=30): median over {len(seeds)} splits, band = interquartile range",
    fontsize=9,
)
ax.grid(True, alpha=0.3)
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
if args.save:
    fig.savefig(args.save, dpi=110)
    print(f"wrote {args.save}")

# %%
# What it shows
# -------------
# In our run (8 splits, the seeds above): ``dp_gd``, the default solver, is
# within two points of non-private scikit-learn from epsilon = 1 (0.952
# against 0.969; the benchmark's median over 10 seeds is the same 0.952) and
# still at 0.90 at epsilon = 0.3.  ``dp_sgd`` trails it at small epsilon and
# catches up from epsilon = 3.  The classic objective perturbation of
# Chaudhuri et al. (2011) needs about three times the epsilon for the same
# accuracy (0.912 at epsilon = 1, where ``dp_gd`` has 0.904 at 0.3), and
# output perturbation stays near the majority-class rate (0.63) up to
# epsilon = 3: at 455 training rows its noise, calibrated to the sensitivity
# of the exact minimiser, is larger than the coefficients.  At epsilon = 0.1
# every method varies a lot from one split to the next (wide bands): 455 rows
# are few for that much privacy.
print(f"example ran in {time.perf_counter() - start:.1f} s")
if matplotlib.get_backend().lower() != "agg":  # an interactive session: show the window
    plt.show()
