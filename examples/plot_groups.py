"""
Privacy for people, not rows
============================

A table of visits holds several rows per person.  A row-level fit at
``epsilon=1`` protects each *row* at epsilon 1; a person with ``r`` rows is
protected only by group privacy, at about ``r`` times that.  Passing the
person of each row as ``groups`` (with a public ``max_group_rows``) makes the
unit of privacy one person: epsilon 1 for everyone, whatever their number of
rows.  This example fits both on the same table and compares their accuracy
and what a membership attack on one person can achieve against each
(:doc:`/guide/groups`, :doc:`/guide/epsilon_meaning`).  The full benchmark
(20,000 people) is ``benchmarks/bench_groups.py``.
"""

# %%
# A table with 1 to 20 rows per person
# ------------------------------------
import math

import matplotlib.pyplot as plt
import numpy as np

from sklearn_dp import DPLogisticRegression, privacy_report
from sklearn_dp.report import membership_tpr

rng = np.random.default_rng(0)
weights = rng.normal(size=5)
weights *= 2.5 / np.linalg.norm(weights)


def visits(n_people):
    rows = rng.integers(1, 21, size=n_people)
    person = np.repeat(np.arange(n_people), rows)
    rng.shuffle(person)
    profiles = rng.uniform(-0.6, 0.6, size=(n_people, 5))
    X = np.clip(profiles[person] + 0.25 * rng.standard_normal((person.size, 5)), -1, 1)
    y = (rng.uniform(size=person.size) < 1 / (1 + np.exp(-(X @ weights)))).astype(int)
    return X, y, person


X, y, person = visits(10_000)
X_test, y_test, _ = visits(2_000)
print(f"{person.size} rows of {np.unique(person).size} people")

# %%
# The same model, per row and per person
# --------------------------------------
# ``data_norm`` comes from the public feature range [-1, 1]; ``max_group_rows``
# is public too (each person's first 5 rows are used).
params = dict(epsilon=1.0, delta=1e-6, classes=[0, 1], data_norm=math.sqrt(5), random_state=0)
per_row = DPLogisticRegression(**params).fit(X, y)
per_person = DPLogisticRegression(max_group_rows=5, **params).fit(X, y, groups=person)
for name, model in (("per row", per_row), ("per person", per_person)):
    report = privacy_report(model)
    print(
        f"{name:>10}: accuracy {model.score(X_test, y_test):.3f}, "
        f"epsilon {report['epsilon']:g}, {report['neighbouring_relation']}"
    )

# %%
# What an attacker can learn about one person
# -------------------------------------------
# The largest true-positive rate of any test of "was this person in the
# data?" at each false-positive rate.  The group-level fit's curve is its own
# attack view.  For the row-level fit, a person with ``r`` rows is protected
# by group privacy only, ``(r epsilon, r e^((r - 1) epsilon) delta)``-DP, whose
# bound is ``min(delta + e^epsilon a, 1 - e^-epsilon (1 - delta - a))`` at
# false-positive rate ``a`` (Kairouz, Oh and Viswanath 2015).
rates = np.logspace(-4, 0, 60)


def group_privacy_tpr(r, epsilon=1.0, delta=1e-6):
    epsilon, delta = r * epsilon, min(1.0, r * math.exp((r - 1) * epsilon) * delta)
    bound = np.minimum(delta + np.exp(epsilon) * rates, 1 - np.exp(-epsilon) * (1 - delta - rates))
    return np.clip(np.maximum(bound, rates), 0, 1)


fig, ax = plt.subplots(figsize=(5, 4.5))
ax.plot(rates, membership_tpr(per_person, rates), label="groups=, any person")
for r in (2, 5, 20):
    ax.plot(rates, group_privacy_tpr(r), label=f"per row, a person with {r} rows")
ax.plot(rates, rates, "--", color="grey", label="random guess")
ax.set_xscale("log")
ax.set_xlabel("false-positive rate of a membership test")
ax.set_ylabel("largest true-positive rate")
ax.legend(loc="lower right", fontsize="small")
fig.tight_layout()
plt.show()

# %%
# At a false-positive rate of 1%, an attacker finds at most about 2% of the
# people in the group-level model's data, whatever their number of rows; the
# row-level model promises nothing to a person with 5 rows or more.
print(
    "largest true-positive rate at 1%:",
    f"groups= {membership_tpr(per_person, [0.01])[0]:.3f};",
    ", ".join(
        f"per row, {r} rows {np.interp(0.01, rates, group_privacy_tpr(r)):.3f}" for r in (2, 5, 20)
    ),
)
