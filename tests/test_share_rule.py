"""The solver's share of the budget never depends on a released value.

Estimators give a solver either the basic-composition floor or a larger
share that the accountant certifies for the composition of the count, the
bound releases and the solver.  The larger share is valid only when the
solver's privacy profile is fixed before the data; a choice between the two
made from a released value (the DP row count, released bounds) would be a
mixture of two mechanisms, which is only (epsilon, 2 delta)-DP (fourth
privacy review).  So, for every (estimator, solver) pair, the epsilon handed
to the solver must be the same whatever the data's row count.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from solver_configs import CONFIGS

import sklearn_dp
from sklearn_dp.solvers import SOLVERS

ROW_COUNTS = (60, 600, 6000)


@contextlib.contextmanager
def solver_epsilons(solver):
    """The epsilon each call of ``solver``'s function receives, in a list."""
    spec = SOLVERS[solver]
    original = spec.function
    seen = []

    def recording(*args, **kwargs):
        seen.append(kwargs["epsilon"])
        return original(*args, **kwargs)

    object.__setattr__(spec, "function", recording)
    try:
        yield seen
    finally:
        object.__setattr__(spec, "function", original)


def _data(estimator, n):
    rng = np.random.default_rng(n)
    X = rng.uniform(-1.0, 1.0, size=(n, 3))
    if estimator == "DPLogisticRegression":
        return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    return X, X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.normal(size=n)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(
    "estimator, solver, params",
    [pytest.param(e, s, p, id=f"{e}-{s}") for (e, s), p in CONFIGS.items()],
)
def test_the_solver_share_does_not_depend_on_the_row_count(estimator, solver, params):
    extra = {"classes": [0, 1]} if estimator == "DPLogisticRegression" else {}
    with solver_epsilons(solver) as seen:
        for n in ROW_COUNTS:
            X, y = _data(estimator, n)
            model = getattr(sklearn_dp, estimator)(
                epsilon=1.0, delta=1e-5, solver=solver, random_state=0, **extra, **params
            )
            model.fit(X, y)
    assert len(seen) == len(ROW_COUNTS)
    assert len(set(seen)) == 1, f"solver epsilon varies with the row count: {seen}"
