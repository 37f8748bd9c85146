"""
Raw data to a private model, in one Pipeline under one budget
=============================================================

Real data arrives unscaled: breast-cancer features up to 4254, house prices in
their own units.  A private model needs bounds on the rows and the labels, and
the noise is proportional to them; a bound read off the data (a maximum, a
``StandardScaler``) is a release outside the guarantee.

Here the bounds are estimated **privately**: ``data_norm``, ``feature_bound``
and ``y_bound`` default to ``"auto"`` (a documented share of the fit's
epsilon buys a DP estimate, recorded in the same ``dp_event_``), and
:class:`~sklearn_dp.preprocessing.DPStandardScaler` standardises the
features with DP statistics that are charged to the same
:class:`~sklearn_dp.PrivacyBudget`.  :func:`~sklearn_dp.privacy_spent` gives
the whole pipeline's guarantee.

Two data sets, from ``load`` to a model, beside non-private scikit-learn:

1. breast cancer as loaded (569 rows, 30 raw features);
2. a regression whose labels are in natural units (log prices around 12) and
   whose features have arbitrary scales and offsets (generated: California
   housing would be a download).
"""

# %%
# Breast cancer, raw
# ------------------
import time

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_breast_cancer, make_regression
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_dp import DPLogisticRegression, DPSCORegressor, PrivacyBudget, privacy_spent
from sklearn_dp.preprocessing import DPStandardScaler

start = time.perf_counter()
X, y = load_breast_cancer(return_X_y=True)
print(f"raw feature range: {X.min():.3g} .. {X.max():.3g}")
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)

# %%
# One budget for the whole pipeline: 0.3 for the scaler, 0.7 for the model,
# and half of delta each.  Basic composition makes that split exact (the
# epsilons and deltas add up to the budget's); the default rule for delta > 0,
# the zCDP filter, would also admit both, at its own accounting.
# Each private step gets its own ``random_state``: two mechanisms fed the same
# seed would add the same noise.
budget = PrivacyBudget(1.0, 1e-5, composition="basic")
private = make_pipeline(
    DPStandardScaler(epsilon=0.3, delta=5e-6, budget=budget, random_state=1),
    DPLogisticRegression(epsilon=0.7, delta=5e-6, classes=[0, 1], budget=budget, random_state=2),
).fit(X_train, y_train)
reference = make_pipeline(StandardScaler(), LogisticRegression()).fit(X_train, y_train)
print(f"DP pipeline accuracy:      {private.score(X_test, y_test):.3f}")
print(f"scikit-learn accuracy:     {reference.score(X_test, y_test):.3f}")
print(f"privacy_spent(pipeline):   {privacy_spent(private)}")
for entry in budget.ledger:
    print(f"  ledger: {entry.estimator:22s} epsilon={entry.epsilon:.2f} {entry.status}")

# %%
# The model alone on the raw features works too: its ``data_norm`` and
# ``intercept_scaling`` are released privately (10% of its epsilon).  The old
# fixed default, ``data_norm=1.0``, clipped every row to almost nothing.
alone = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X_train, y_train)
old = DPLogisticRegression(
    epsilon=1.0, classes=[0, 1], data_norm=1.0, intercept_scaling=1.0, random_state=0
).fit(X_train, y_train)
print(
    f"DPLogisticRegression(epsilon=1) alone: {alone.score(X_test, y_test):.3f} "
    f"(released data_norm_={alone.data_norm_:.4g}); old default data_norm=1.0: "
    f"{old.score(X_test, y_test):.3f}"
)

# %%
# Regression with labels in natural units
# ---------------------------------------
# 20000 rows: unit-scale features given public random scales and offsets
# (like raw measurements), labels mapped to log-price units.
Xr, yr = make_regression(
    n_samples=20000, n_features=10, n_informative=6, noise=60.0, random_state=0
)
yr = 12.0 + 0.6 * (yr - yr.mean()) / yr.std()
rng = np.random.default_rng(1)
scales = 10.0 ** rng.uniform(-2, 3, size=Xr.shape[1])
Xr = Xr * scales + rng.uniform(0, 5, size=Xr.shape[1]) * scales
Xr_train, Xr_test, yr_train, yr_test = train_test_split(Xr, yr, test_size=5000, random_state=0)
ridge = Ridge().fit(Xr_train, yr_train)
regressor_budget = PrivacyBudget(1.0, 1e-5, composition="basic")
regression = make_pipeline(
    DPStandardScaler(epsilon=0.3, delta=5e-6, budget=regressor_budget, random_state=3),
    DPSCORegressor(epsilon=0.7, delta=5e-6, budget=regressor_budget, random_state=4),
).fit(Xr_train, yr_train)
fitted = regression[-1]
print(
    f"DP regression R^2: {regression.score(Xr_test, yr_test):.3f}   "
    f"Ridge R^2: {ridge.score(Xr_test, yr_test):.3f}"
)
print(f"released label range: {fitted.y_center_:.3g} +- {fitted.y_bound_:.3g}")

# %%
# Accuracy against epsilon
# ------------------------
# The total epsilon of each pipeline on the x axis (the scaler takes 30%),
# median over a few splits; scikit-learn's score as a dashed line.  With 455
# training rows and 30 features, the scaler's 60 statistics are noisy at small
# epsilon, where the classifier alone on the raw features (one released bound)
# does better: per-feature statistics cost privacy per feature.
epsilons = [0.3, 0.5, 1.0, 2.0, 4.0]
seeds = range(5)


def classification_score(epsilon, seed, pipeline):
    Xa, Xb, ya, yb = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    model = DPLogisticRegression(
        epsilon=epsilon * (0.7 if pipeline else 1.0), delta=5e-6, classes=[0, 1], random_state=seed
    )
    if pipeline:
        model = make_pipeline(
            DPStandardScaler(epsilon=0.3 * epsilon, delta=5e-6, random_state=1000 + seed), model
        )
    return model.fit(Xa, ya).score(Xb, yb)


def regression_score(epsilon, seed):
    model = make_pipeline(
        DPStandardScaler(epsilon=0.3 * epsilon, delta=5e-6, random_state=1000 + seed),
        DPSCORegressor(epsilon=0.7 * epsilon, delta=5e-6, random_state=seed),
    )
    return model.fit(Xr_train, yr_train).score(Xr_test, yr_test)


curves = {
    "DPStandardScaler + DPLogisticRegression": [
        np.median([classification_score(e, s, True) for s in seeds]) for e in epsilons
    ],
    "DPLogisticRegression on raw features": [
        np.median([classification_score(e, s, False) for s in seeds]) for e in epsilons
    ],
}
regression_curve = [np.median([regression_score(e, s) for s in range(2)]) for e in epsilons]

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
for label, values in curves.items():
    left.plot(epsilons, values, marker="o", label=label)
left.axhline(reference.score(X_test, y_test), color="k", linestyle="--", label="scikit-learn")
left.set(
    xscale="log",
    xlabel="total epsilon",
    ylabel="test accuracy",
    title="Breast cancer, raw features",
)
left.legend(fontsize=8)
right.plot(epsilons, regression_curve, marker="o", label="DPStandardScaler + DPSCORegressor")
right.axhline(ridge.score(Xr_test, yr_test), color="k", linestyle="--", label="Ridge")
right.set(
    xscale="log", xlabel="total epsilon", ylabel="test R^2", title="Regression, natural units"
)
right.legend(fontsize=8)
for axis in (left, right):
    axis.set_xticks(epsilons, [f"{e:g}" for e in epsilons])
    axis.minorticks_off()
fig.tight_layout()
if matplotlib.get_backend().lower() != "agg":  # an interactive session: show the window
    plt.show()
print(f"done in {time.perf_counter() - start:.1f} s")
