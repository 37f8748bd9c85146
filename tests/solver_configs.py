"""One small, fast fit per (estimator, solver) pair, shared by the registry-driven tests.

``tests/test_substitution.py`` (every pair must appear here or be refused),
``tests/test_fuzz.py`` (the supported pairs) and ``tests/test_audit_coverage.py``
(the DpEvent check of every pair) read this table: a new solver adds its
pairs here once (CONTRIBUTING.md).
"""

# (estimator, solver) -> parameters of a small, fast fit.  Every registered
# solver appears under every estimator that accepts it.
CONFIGS = {
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
