"""
DP coordinate descent: uniform against importance sampling
==========================================================

``solver="dp_cd"`` updates one coordinate (or block) per step, with Gaussian
noise scaled to that coordinate's own public bound.  When the features have
very different public ranges, the coordinate-wise smoothness constants
``M_j = beta * feature_bound_j^2`` span orders of magnitude, and the paper behind
``dp_cd`` (Maranjyan, Sadiev and Richtarik, *Differentially private random block
coordinate descent*) proposes **importance sampling**: pick coordinate ``j``
with probability proportional to ``M_j``.  The paper has no experiments; this is
a small version of ours (``benchmarks/bench_coordinate_descent.py``, results in
``benchmarks/results/coordinate_descent.md``).

Data: 20 features ``x_ij = bound_j * u_ij`` with ``u_ij`` uniform in [-1, 1] and
public bounds from 0.01 to 100 (so the ``M_j`` span 8 decades), labels from a
logistic model.  Two cases: the signal lives on the 4 widest-range features
(where the paper expects importance sampling to win), or it is spread over
all 20.  Methods, all at the same epsilon and 10 passes over the data:
``dp_cd`` with uniform sampling, ``dp_cd`` with importance sampling, and
``dp_gd`` (rows bounded in L2 by the norm of the public bounds).
"""

# %%
# The data
# --------
import time

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit
from sklearn.model_selection import train_test_split

from sklearn_dp import DPLogisticRegression

start = time.perf_counter()
n, d = 2000, 20
feature_bound = 10.0 ** np.linspace(-2, 2, d)  # public, per feature


def make_data(signal):
    rng = np.random.default_rng(12345)
    U = rng.uniform(-1, 1, (n, d))
    w = np.zeros(d)  # coefficients in units of the bounds
    if signal == "on the 4 widest-range features":
        w[-4:] = [2.0, -1.5, 1.5, -2.0]
    else:
        w[:] = rng.normal(0.0, 0.8, d)
    y = (rng.uniform(size=n) < expit(U @ w + 0.3)).astype(int)
    return U * feature_bound, y


# %%
# The three methods
# -----------------
# ``penalty=None`` (the unpenalised logistic loss, as in the benchmark) and
# ``max_iter=10`` passes.  ``dp_cd`` needs the per-feature ``feature_bound``;
# ``dp_gd`` needs a row-norm bound, here the norm of the vector of bounds.


def make_model(method, epsilon, seed):
    common = dict(
        epsilon=epsilon, delta=1e-5, penalty=None, max_iter=10, classes=[0, 1], random_state=seed
    )
    if method == "dp_gd":
        return DPLogisticRegression(
            solver="dp_gd", data_norm=float(np.linalg.norm(feature_bound)), **common
        )
    sampling = method.split()[-1]  # "uniform" or "importance"
    return DPLogisticRegression(
        solver="dp_cd", feature_bound=feature_bound, solver_options={"sampling": sampling}, **common
    )


methods = ["dp_cd uniform", "dp_cd importance", "dp_gd"]
epsilons = [0.1, 0.3, 1.0, 3.0, 10.0]
seeds = range(10)
cases = ["on the 4 widest-range features", "spread over all 20 features"]
accuracy = {}
for case in cases:
    X, y = make_data(case)
    acc = {m: np.empty((len(epsilons), len(seeds))) for m in methods}
    for k, seed in enumerate(seeds):
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.5, random_state=seed, stratify=y
        )
        for method in methods:
            for i, eps in enumerate(epsilons):
                model = make_model(method, eps, seed).fit(X_train, y_train)
                acc[method][i, k] = model.score(X_test, y_test)
    accuracy[case] = acc
    print(f"signal {case}: median test accuracy over {len(seeds)} splits")
    for method in methods:
        print(
            f"  {method:17s} "
            + "  ".join(
                f"eps={e:g}: {np.median(acc[method][i]):.3f}" for i, e in enumerate(epsilons)
            )
        )

# %%
# The figure
# ----------
fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
for ax, case in zip(axes, cases):
    for method in methods:
        values = accuracy[case][method]
        (line,) = ax.plot(epsilons, np.median(values, axis=1), marker="o", label=method)
        ax.fill_between(
            epsilons,
            np.percentile(values, 25, axis=1),
            np.percentile(values, 75, axis=1),
            color=line.get_color(),
            alpha=0.15,
        )
    ax.set_xscale("log")
    ax.set_xticks(epsilons)
    ax.set_xticklabels([f"{e:g}" for e in epsilons])
    ax.minorticks_off()
    ax.set_xlabel("epsilon (delta = 1e-5), 10 passes")
    ax.set_title(f"signal {case}", fontsize=10)
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel(f"test accuracy (median of {len(seeds)}, band IQR)")
axes[0].legend(fontsize=8, loc="lower right")
fig.tight_layout()

# %%
# What it shows
# -------------
# Importance sampling helps **only at small epsilon, and only when the signal
# lies on the wide-range features**: there it spends the steps where the
# gradient is large.  In our run (medians over 10 splits) it leads uniform
# sampling by 0.698 to 0.609 at epsilon = 0.1 and 0.758 to 0.716 at 0.3; from
# epsilon = 1 on the two are level (0.768 and 0.762; in the benchmark's
# objective gaps uniform sampling is then slightly better).  When the signal is
# spread over all features, importance sampling almost never updates the
# narrow-range ones and stays far behind uniform sampling at every epsilon
# (0.579 against 0.787 at epsilon = 1).
# ``dp_gd`` on raw features is weak in both cases: its single L2 bound is set by
# the widest features, so the narrow ones are drowned in noise; rescaling the
# features by their public bounds first (a public map) fixes that, see the
# benchmark's ``dp_gd_rescaled``.  The benchmark also covers block sampling
# (importance sampling over blocks of similar features does win when the signal
# is on the wide features, at every epsilon), breast cancer in raw units and
# the diabetes regression.
print(f"example ran in {time.perf_counter() - start:.1f} s")
if matplotlib.get_backend().lower() != "agg":  # an interactive session: show the window
    plt.show()
