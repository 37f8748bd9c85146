"""
Tuning C and the solver privately with DPGridSearchCV
=====================================================

``GridSearchCV`` with a budget charges every fit, but the search itself is not
private: the validation scores are exact functions of private rows, and the
choice of the best candidate is made from them (see the tuning guide).
:class:`~sklearn_dp.model_selection.DPGridSearchCV` makes the whole search
private (private selection, Liu and Talwar 2019; Papernot and Steinke 2022):

* the rows are split into a training and a validation part by a draw per
  row, so one added row changes one part by one row;
* a random number of runs (10 on average) each train a uniformly drawn
  candidate privately on the training part and release a noisy validation
  score; only the best run is released (not the number of runs, not the
  other scores);
* the selected candidate is refitted on all rows with most of the budget.

This example tunes ``C`` and the solver on the breast cancer data at a total
epsilon of 2, shows the ledger entry the search leaves and recomputes
its event with dp_accounting, then compares with the leaky ``GridSearchCV``
at the same total epsilon (its fits charged by basic composition, its
selection not charged at all), the default estimator and non-private
scikit-learn, over five train/test splits.
"""

# %%
# Data with public scaling
# ------------------------
# The features are mapped to [-0.5, 0.5] with the ranges printed in the data
# set's documentation (public knowledge), so every row has L2 norm at most
# ``0.5 * sqrt(30)``.
import math
import re
import time

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from dp_accounting import NeighboringRelation
from dp_accounting.rdp import RdpAccountant
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split

from sklearn_dp import DPLogisticRegression, PrivacyBudget
from sklearn_dp.model_selection import DPGridSearchCV, RowwiseKFold

start = time.perf_counter()
data = load_breast_cancer()
ranges = re.findall(r"^[a-z ]+\([a-z ]+\):\s+([\d.]+)\s+([\d.]+)\s*$", data.DESCR, re.M)
lo, hi = np.array(ranges, dtype=float).T
X = np.clip((data.data - (lo + hi) / 2) / (hi - lo), -0.5, 0.5)
y = data.target
data_norm = 0.5 * math.sqrt(X.shape[1])
GRID = {"C": [0.1, 1.0, 10.0], "solver": ["dp_gd", "dp_sgd"]}
EPSILON, DELTA = 2.0, 1e-5

# %%
# One private search on one budget
# --------------------------------
# The budget holds exactly the search's guarantee.  The search reserves one
# entry before it reads any row, for the selection (10% of the guarantee)
# and the refit (90%).  A private search needs a budget with basic composition
# (its selection has a Renyi-DP curve, not a zCDP bound; zCDP is the default
# rule for budgets with delta > 0).
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=0, stratify=y)
budget = PrivacyBudget(EPSILON, DELTA, composition="basic")
search = DPGridSearchCV(
    DPLogisticRegression(data_norm=data_norm, classes=[0, 1]),
    GRID,
    epsilon=EPSILON,
    delta=DELTA,
    budget=budget,
    random_state=0,
)
search.fit(X_train, y_train)
print(
    f"selected {search.best_params_}; noisy validation accuracy {search.best_score_:.2f} "
    f"(noise std {search.best_score_noise_:.2f}); "
    f"test accuracy of the refit {search.score(X_test, y_test):.3f}"
)
for k, entry in enumerate(budget.ledger, 1):
    print(
        f"{k}. {entry.estimator:<22} epsilon={entry.epsilon:.3g} delta={entry.delta:.3g} "
        f"{entry.status}"
    )
print(
    f"budget.spent = ({budget.spent[0]:.3g}, {budget.spent[1]:.3g}); "
    f"search.privacy_spent_ = {search.privacy_spent_}"
)

# %%
# The noisy validation accuracy is the best of about ten noisy scores of
# runs trained at a small epsilon (the runs share 8% of the budget): it is
# optimistic and coarse, and it is clipped to 1.  The selection only has to
# tell good candidates from bad ones; the refit (90% of the budget) is the
# model you keep.
#
# Anyone can recompute the selection's guarantee: its event is
# ``RepeatAndSelectDpEvent`` over one run (the candidates' fits; the score's
# Gaussian noise is no smaller than the fits' own, so it adds nothing), plus
# the Laplace count of validation rows, evaluated with dp_accounting's RDP
# accountant.
accountant = RdpAccountant(neighboring_relation=NeighboringRelation.ADD_OR_REMOVE_ONE)
accountant.compose(search.selection_dp_event_)
eps_selection, delta_selection = search.selection_privacy_spent_
print(
    f"selection: claimed epsilon {eps_selection:.3g} at delta {delta_selection:.2g}, "
    f"recomputed {accountant.get_epsilon(delta_selection):.4g}"
)
print("cv_results_ shows the candidates and one noisy score (the selected one's):")
for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
    print(f"  {params}: {score:.3f}")

# %%
# The same total epsilon, four ways
# ---------------------------------
# * the private search above;
# * the leaky ``GridSearchCV``: 6 candidates x 3 folds + 1 refit = 19 fits, so
#   by basic composition each fit gets epsilon 2 / 19 (folds drawn row by row
#   with :class:`~sklearn_dp.model_selection.RowwiseKFold`, so fold fits are
#   neighbours); the exact validation scores and the choice are *not* covered;
# * the default estimator at epsilon 2 (no tuning at all);
# * non-private ``GridSearchCV(LogisticRegression())`` over ``C``.
n_fits = len(GRID["C"]) * len(GRID["solver"]) * 3 + 1
results = {
    "DPGridSearchCV": [],
    "leaky GridSearchCV": [],
    "default, no tuning": [],
    "non-private": [],
}
for seed in range(5):
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y
    )
    private = DPGridSearchCV(
        DPLogisticRegression(data_norm=data_norm, classes=[0, 1]),
        GRID,
        epsilon=EPSILON,
        delta=DELTA,
        random_state=seed,
    ).fit(X_train, y_train)
    results["DPGridSearchCV"].append(private.score(X_test, y_test))
    leaky_budget = PrivacyBudget(EPSILON, DELTA, composition="basic")
    leaky = GridSearchCV(
        DPLogisticRegression(
            epsilon=EPSILON / n_fits,
            delta=DELTA / n_fits,
            data_norm=data_norm,
            classes=[0, 1],
            budget=leaky_budget,
            random_state=seed,
        ),
        GRID,
        cv=RowwiseKFold(3, random_state=seed),
        error_score="raise",
    ).fit(X_train, y_train)
    assert len(leaky_budget.ledger) == n_fits
    results["leaky GridSearchCV"].append(leaky.score(X_test, y_test))
    default = DPLogisticRegression(
        epsilon=EPSILON, delta=DELTA, data_norm=data_norm, classes=[0, 1], random_state=seed
    )
    results["default, no tuning"].append(default.fit(X_train, y_train).score(X_test, y_test))
    reference = GridSearchCV(LogisticRegression(), {"C": GRID["C"]}, cv=3)
    results["non-private"].append(reference.fit(X_train, y_train).score(X_test, y_test))
for name, scores in results.items():
    print(
        f"{name:<20} median test accuracy {np.median(scores):.3f}  "
        f"({', '.join(f'{s:.2f}' for s in scores)})"
    )

# %%
# Draw the comparison
# -------------------
# Bars: median test accuracy over the five splits, dots: each split.  The
# hatched bar is the leaky search, whose selection is not covered by any
# guarantee.
fig, ax = plt.subplots(figsize=(7, 3.6))
names = list(results)
for i, name in enumerate(names):
    scores = results[name]
    ax.bar(
        i,
        np.median(scores),
        color=f"C{i}",
        alpha=0.6,
        hatch="//" if name.startswith("leaky") else None,
    )
    ax.plot(np.full(len(scores), i), scores, "k.", alpha=0.6)
ax.set_xticks(range(len(names)))
ax.set_xticklabels(
    [
        "DPGridSearchCV\n(2, 1e-5)-DP",
        "GridSearchCV, 19 fits\nat eps 2/19 (leaks)",
        "default at eps 2\n(no tuning)",
        "non-private\nGridSearchCV",
    ],
    fontsize=8,
)
ax.set_ylim(0.5, 1.0)
ax.set_ylabel("test accuracy")
ax.set_title("Breast cancer: tuning C and the solver at total epsilon 2", fontsize=10)
ax.grid(True, axis="y", alpha=0.3)
fig.tight_layout()

# %%
# Reading the figure
# ------------------
# The private search is an honest way to tune on private data: one
# guarantee, one ledger entry, and nothing of the runs but the winner is
# released.  Spreading the same epsilon over the fits of a ``GridSearchCV``
# makes every fit so noisy that its refit is much worse, and its selection
# is still a leak.  But tuning is not free: on this data the default
# estimator with the whole budget is as good as the tuned refit, because the
# grid's candidates are close and the refit gets 90% of the budget.  Tune when
# the grid holds candidates that really differ, and put the estimator's own
# settings in the grid: the search then keeps them unless a candidate is
# clearly better (``prefer_default``); see
# ``benchmarks/results/search.md`` for four data sets.
print(f"example ran in {time.perf_counter() - start:.1f} s")
if matplotlib.get_backend().lower() != "agg":  # an interactive session: show the window
    plt.show()
