"""One small, fast fit per (estimator, solver) pair, shared by the registry-driven tests.

``tests/test_substitution.py`` (every pair must appear here or be refused),
``tests/test_fuzz.py`` (the supported pairs) and ``tests/test_audit_coverage.py``
(the DpEvent check of every pair) read this table.  It lists the pairs of the
registered solvers with the parameters of a small, fast fit; a solver it does
not name is paired, at its defaults, with every estimator that plans a fit
with it at its defaults (so a new solver needs no entry here; add one to make
its fits smaller).
"""

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers import SOLVERS

# (estimator, solver) -> parameters of a small, fast fit.  Every registered
# solver appears under every estimator that accepts it.
_SMALL_FITS = {
    ("DPLogisticRegression", "dp_gd"): dict(max_iter=5),
    ("DPLogisticRegression", "dp_sgd"): dict(max_iter=3),
    ("DPLogisticRegression", "objective_perturbation"): dict(),
    ("DPLogisticRegression", "output_perturbation"): dict(),
    ("DPLogisticRegression", "dp_cd"): dict(feature_bound=1.0, max_iter=2),
    ("DPLogisticRegression", "dp_svrg"): dict(C=0.01, max_iter=2),
    ("DPLogisticRegression", "dp_svrg_pp"): dict(penalty="l1", max_iter=2),
    ("DPLogisticRegression", "dp_accmd"): dict(penalty=None, radius=5.0, max_iter=5),
    # resque refuses the logistic loss without a schedule of the caller's own.
    ("DPLogisticRegression", "resque"): dict(radius=5.0, solver_options={"tol": 0.1}),
    ("DPSCORegressor", "dp_gd"): dict(max_iter=5),
    ("DPSCORegressor", "dp_sgd"): dict(max_iter=3),
    ("DPSCORegressor", "objective_perturbation"): dict(),
    ("DPSCORegressor", "output_perturbation"): dict(),
    ("DPSCORegressor", "dp_cd"): dict(feature_bound=1.0, max_iter=2),
    ("DPSCORegressor", "frank_wolfe"): dict(
        constraint="l1", radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPSCORegressor", "vr_frank_wolfe"): dict(constraint="l1", radius=2.0, feature_bound=1.0),
    ("DPSCORegressor", "mirror_descent"): dict(
        constraint="l1", radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPSCORegressor", "localized_mirror_descent"): dict(
        constraint="l1", radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPSCORegressor", "resque"): dict(loss="absolute"),
    ("DPSCORegressor", "dp_svrg"): dict(alpha=0.5, max_iter=2),
    ("DPSCORegressor", "dp_svrg_pp"): dict(penalty="l1", max_iter=2),
    ("DPSCORegressor", "dp_accmd"): dict(penalty=None, radius=2.0, max_iter=5),
    ("DPLasso", "frank_wolfe"): dict(max_iter=5),
    ("DPLasso", "vr_frank_wolfe"): dict(),
    ("DPLasso", "mirror_descent"): dict(max_iter=5),
    ("DPLasso", "localized_mirror_descent"): dict(max_iter=5),
    ("DPLasso", "dp_cd"): dict(alpha=0.1, max_iter=2),
    ("DPLasso", "dp_svrg_pp"): dict(alpha=0.1, max_iter=2),
    # The l1 ball of dp_accmd would hold the intercept: DPLasso refuses it with one.
    ("DPLasso", "dp_accmd"): dict(max_iter=5, fit_intercept=False),
    ("DPLogisticRegression", "dp_newton"): dict(max_iter=3),
    ("DPSCORegressor", "dp_newton"): dict(max_iter=3),
    ("DPSCORegressor", "dp_ssp"): dict(),
    ("DPLasso", "dp_ssp"): dict(alpha=0.1),
}


_ESTIMATORS = {
    "DPLogisticRegression": (DPLogisticRegression, dict(classes=[0, 1])),
    "DPSCORegressor": (DPSCORegressor, {}),
    "DPLasso": (DPLasso, {}),
}


def _plans_at_defaults(estimator, solver):
    """Whether ``estimator`` plans a fit with ``solver`` at its defaults (public inputs only)."""
    import numpy as np

    cls, params = _ESTIMATORS[estimator]
    spec = SOLVERS[solver]
    model = cls(solver=solver, delta=1e-5 if spec.approximate_dp else 0.0, **params)
    X, y = np.zeros((2, 3)), np.array([0, 1])
    try:
        model._fit_plan(X, y)
    except ValueError:
        return False
    return True


_NAMED = {solver for _, solver in _SMALL_FITS}
CONFIGS = dict(_SMALL_FITS)
for _solver in SOLVERS:
    if _solver not in _NAMED:
        CONFIGS.update(
            {(name, _solver): {} for name in _ESTIMATORS if _plans_at_defaults(name, _solver)}
        )

# Options that take other code paths of a solver, beside its entry above:
# (estimator, solver, option) -> parameters of a small, fast fit.  The
# default substitution run covers them too (tests/test_substitution.py).
OPTION_CONFIGS = {
    ("DPSCORegressor", "resque", "acsa"): dict(loss="absolute", solver_options={"inner": "acsa"}),
    ("DPSCORegressor", "resque", "multilevel"): dict(
        loss="absolute", solver_options={"multilevel": True}
    ),
    ("DPSCORegressor", "resque", "sco"): dict(loss="absolute", solver_options={"sco": True}),
    ("DPSCORegressor", "mirror_descent", "lp"): dict(
        constraint="lp", p=1.5, radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPSCORegressor", "localized_mirror_descent", "lp"): dict(
        constraint="lp", p=1.5, radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPSCORegressor", "frank_wolfe", "lp"): dict(
        constraint="lp", p=1.5, radius=2.0, feature_bound=1.0, max_iter=5
    ),
    ("DPLasso", "frank_wolfe", "refit"): dict(max_iter=5, solver_options={"refit": 0.4}),
    # The strongly convex reduction: rounds on disjoint rows.  At epsilon 1 on
    # the 40 rows vr_frank_wolfe's public bound is vacuous (its fallback); here
    # its selections run.
    ("DPSCORegressor", "vr_frank_wolfe", "strongly-convex"): dict(
        constraint="l1",
        radius=2.0,
        feature_bound=1.0,
        y_bound=1.0,
        epsilon=100.0,
        alpha=1.0,
        fit_intercept=False,
        solver_options={"strongly_convex": True},
    ),
    ("DPSCORegressor", "mirror_descent", "strongly-convex"): dict(
        constraint="l1",
        radius=2.0,
        feature_bound=1.0,
        alpha=1.0,
        fit_intercept=False,
        max_iter=5,
        solver_options={"strongly_convex": True},
    ),
    ("DPSCORegressor", "dp_accmd", "entrywise"): dict(
        penalty=None,
        constraint="l1",
        radius=2.0,
        feature_bound=1.0,
        solver_options={"smoothness": "entrywise"},
    ),
}
