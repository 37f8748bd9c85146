"""
Quickstart: private logistic regression with a shared budget
============================================================

Fit :class:`~sklearn_dp.DPLogisticRegression` on public-scaled data, compare it
with scikit-learn, recompute its epsilon from ``dp_event_``, share one
:class:`~sklearn_dp.PrivacyBudget` between several fits and run out of it.
Run with ``python examples/quickstart.py`` (a few seconds).
"""

import math
import re

import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from sklearn_dp import BudgetExceededError, DPLogisticRegression, PrivacyBudget
from sklearn_dp.accounting import epsilon_of_event

DELTA = 1e-5  # well below 1 / n_samples

# --- Data, scaled with public knowledge only --------------------------------
# Scaling with the data's own min/max would leak it.  The data set's
# documentation prints each feature's range ("Summary Statistics"); we treat
# those ranges as public and map every feature to [-0.5, 0.5] with them.
data = load_breast_cancer()
ranges = re.findall(r"^[a-z ]+\([a-z ]+\):\s+([\d.]+)\s+([\d.]+)\s*$", data.DESCR, re.M)
lo, hi = np.array(ranges, dtype=float).T
X = np.clip((data.data - (lo + hi) / 2) / (hi - lo), -0.5, 0.5)
# The row-norm bound follows from that map alone: 30 features of size <= 0.5.
data_norm = 0.5 * math.sqrt(X.shape[1])
X_train, X_test, y_train, y_test = train_test_split(
    X, data.target, test_size=0.2, random_state=0, stratify=data.target
)

# --- One budget for everything we will ever learn from this training set ---
budget = PrivacyBudget(epsilon=3.0, delta=DELTA)

# classes=[0, 1] is the public label set (otherwise it is read from y, which
# leaks which labels occur).  random_state only makes this demo reproducible.
model = DPLogisticRegression(
    epsilon=1.0, delta=DELTA, data_norm=data_norm, classes=[0, 1], budget=budget, random_state=0
).fit(X_train, y_train)
baseline = LogisticRegression().fit(X_train, y_train)
print(
    f"test accuracy: DP (epsilon=1) {model.score(X_test, y_test):.3f}, "
    f"non-private {baseline.score(X_test, y_test):.3f}"
)

# One noisy fit on 455 rows: the accuracy varies with the noise draw (the
# median over seeds is in benchmarks/results/logistic.md).
# The guarantee, and the mechanism behind it: anyone can recompute epsilon
# from dp_event_ with an accountant, without trusting privacy_spent_.
print(f"privacy_spent_ = {model.privacy_spent_}, solver_ = {model.solver_!r}")
print(f"epsilon recomputed from dp_event_: {epsilon_of_event(model.dp_event_, DELTA):.4f}")

# --- More fits on the same budget --------------------------------------------
# The budget's default rule for delta > 0 is the approximate-zCDP filter
# (composition="zcdp"): each fit is charged the rho of its mechanism, and the
# rhos must add up to at most budget.rho_limit.  The fits' deltas do not add
# up (half of the budget's delta pays once for converting the total rho to
# (epsilon, delta)-DP; the other half is a pool for approximate-DP parts such
# as a label-set release, which these fits with classes=[0, 1] do not have).
# Under composition="basic" three delta=1e-5 fits would not fit this budget:
# their deltas would add up to 3e-5.
for solver, epsilon in [("dp_gd", 0.5), ("dp_newton", 0.5)]:
    DPLogisticRegression(
        epsilon=epsilon,
        delta=DELTA,
        solver=solver,
        data_norm=data_norm,
        classes=[0, 1],
        budget=budget,
        random_state=1,
    ).fit(X_train, y_train)

print(f"\nledger ({budget.composition!r} budget):")
for entry in budget.ledger:
    print(
        f"  {entry.estimator} solver={entry.solver} epsilon={entry.epsilon:g} "
        f"delta={entry.delta:g} rho={entry.rho:.4f}"
    )
print(f"rho charged: {budget.rho_spent:.4f} of rho_limit={budget.rho_limit:.4f}")
# spent: the guarantee of the fits so far (the total rho converted at the
# conversion half of delta); remaining: the rho left, as an epsilon, and the
# pool's delta left.  They do not add up to the budget's epsilon: epsilon
# grows about as the square root of rho.
spent, remaining = budget.spent, budget.remaining
print(f"spent     = (epsilon={spent[0]:.3f}, delta={spent[1]:g})")
print(f"remaining = (epsilon={remaining[0]:.3f}, delta={remaining[1]:g})")

# --- Running out -------------------------------------------------------------
# Refit the first model at epsilon=3, the whole budget again.  The budget is
# checked before the fit touches the data: nothing is spent, and the fitted
# model keeps its previous coefficients and privacy_spent_.  The message says
# which rule refused and what would still fit.
coef_before, ledger_before = model.coef_.copy(), budget.ledger
try:
    model.set_params(epsilon=3.0).fit(X_train, y_train)
except BudgetExceededError as exc:
    print(f"\nBudgetExceededError: {exc}")
print(
    f"model unchanged: {np.array_equal(model.coef_, coef_before)}, "
    f"privacy_spent_ still {model.privacy_spent_}"
)
print(f"ledger unchanged: {budget.ledger == ledger_before} ({len(budget.ledger)} entries)")
