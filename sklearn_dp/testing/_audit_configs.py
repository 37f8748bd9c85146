"""Canary audit configurations for every registered solver (shared by the tests,
``tests/test_audit_coverage.py``, and ``benchmarks/bench_audit.py``; private: not API).

Each solver gets two audits on neighbouring data sets D and D' = D plus one
canary row:

* ``level="solver"``: the solver function called directly on bounded data
  (the row count is public, so no count noise blurs the canary);
* ``level="estimator"``: the whole estimator (validation, bounds, private row
  count, dispatch) fitted on D and D'.

The canary is built for the tightest bound we know at small cost.  In D,
column 1 is identically zero, so under D the coefficient of column 1 is pure
noise; the canary row is ``(0, 1e6)`` (clipped to the row bound) with the
label that makes its gradient point along column 1 in every step (label 1
for logistic regression, ``1e6`` clipped to ``y_bound`` for regression).  The
statistic is that coefficient.  For selection mechanisms (Frank-Wolfe) the
canary makes the vertex ``+radius e_1`` the best one while every other
vertex scores about zero, so the statistic is the weight of the selected
vertex on column 1.  A small public ``clip_norm`` keeps the canary's clipped
gradient at its full sensitivity in every step and a zero penalty keeps the
coefficient from being pulled back, so the canary's pushes add up.

``broken`` variants are positive controls: the same audit with the noise off
(``epsilon=inf`` while the audit still claims the configured epsilon), or
with a mechanism whose noise is calibrated for one step of T; the audit must
find a lower bound above the claimed epsilon.

Solvers whose algorithm dilutes a single row (one-pass trees, disjoint
phases, snapshot plus difference releases, smoothing and weight caps) are
audited in the configuration, reached through public options only, where
the canary's influence is largest (``_STRONG`` below explains each), and get
a *power control* (``power_factor``): the same audit on a fit calibrated for
``power_factor`` times the claimed epsilon (about ``1 / power_factor`` of the
noise) while the claim stays the same, which tells how large an
under-calibration the audit can see.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.solvers import get_solver

DELTA = 1e-5
CANARY = 1e6


def canary_data(n=20, *, task="classification", seed=0):
    """D (column 1 zero) and D' = D plus the canary row, unbounded (as a user passes them)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(-1, 1, n), np.zeros(n)])
    if task == "classification":
        y = (X[:, 0] > 0).astype(int)
        canary_y = 1
    elif task == "regression":
        y = np.clip(0.5 * X[:, 0] + 0.1 * rng.normal(size=n), -1, 1)
        canary_y = CANARY
    else:  # "noise": no signal, every Frank-Wolfe vertex scores about 0 under D
        y = 0.05 * rng.normal(size=n)
        canary_y = CANARY
    X_prime = np.vstack([X, [0.0, CANARY]])
    return (X, y), (X_prime, np.append(y, canary_y))


@dataclass
class SolverAudit:
    """One audit: ``make_run(epsilon) -> run(with_canary, seed) -> statistic``.

    ``epsilon`` and ``delta`` are the claimed guarantee; ``make_run(math.inf)``
    gives the noise-off positive control (the same statistic, no noise).
    """

    solver: str
    level: str
    estimator: str
    epsilon: float
    delta: float
    make_run: Callable
    note: str = ""
    options: dict = field(default_factory=dict)
    #: Power control: ``make_run(power_factor * epsilon)`` audited against ``epsilon``.
    power_factor: float | None = None

    @property
    def id(self):
        return f"{self.solver}-{self.level}"


# --------------------------------------------------------------------------
# Solver level: the registered function on bounded data, n public
# --------------------------------------------------------------------------


def _solver_run(solver, *, loss, task, geometry, n=20, alpha=0.0, statistic=None, **options):
    (X, y), (X_prime, y_prime) = canary_data(n, task=task)
    if task == "classification":
        y, y_prime = np.where(y == 1, 1.0, -1.0), np.where(y_prime == 1, 1.0, -1.0)
    else:
        y, y_prime = np.clip(y, -1, 1), np.clip(y_prime, -1, 1)
    bounds = {"data_norm": 1.0} if geometry == "l2" else {"feature_bound": 1.0}
    datasets = [
        bound_data(Xi, yi, fit_intercept=False, geometry=geometry, **bounds)
        for Xi, yi in ((X, y), (X_prime, y_prime))
    ]
    function = get_solver(solver).run
    loss_object = get_loss(loss)

    def fit(epsilon, with_canary, seed):
        return function(
            datasets[int(with_canary)],
            loss_object,
            n_outputs=1,
            alpha=alpha,
            epsilon=epsilon,
            delta=_delta(solver),
            random_state=seed,
            **options,
        )

    def make_run(epsilon):
        def run(with_canary, seed):
            return float(fit(epsilon, with_canary, seed).coef[1, 0])

        return run

    make_run.fit = fit
    return make_run


# --------------------------------------------------------------------------
# Estimator level
# --------------------------------------------------------------------------


def _estimator_run(estimator, task, n=20, **params):
    datasets = canary_data(n, task=task)

    def make_run(epsilon):
        def run(with_canary, seed):
            X, y = datasets[int(with_canary)]
            model = estimator(
                epsilon=epsilon, random_state=seed, fit_intercept=False, **params
            ).fit(X, y)
            return float(np.ravel(model.coef_)[1])

        return run

    return make_run


def _delta(solver):
    """The audited delta: 0 for a solver that gives pure epsilon-DP, else :data:`DELTA`."""
    return 0.0 if get_solver(solver).pure_dp else DELTA


_LOGISTIC = dict(classes=[0, 1], penalty=None, clip_norm=0.05)
_GD = dict(momentum=None, output="last")
_SVRG = dict(batch_size=4, inner_steps=3, max_iter=2)
#: The SVRG configuration where the canary counts most: one epoch, one inner
#: step, inner batches at rate 1 (batch_size above any n), 80% of the budget
#: on the snapshot release (``snapshot_share``, a public option).  The canary's
#: clipped gradient is the same at the snapshot and the iterate, so its
#: difference terms vanish and its whole influence is the snapshot release.
_SVRG_STRONG = dict(
    max_iter=1, batch_size=10**6, solver_options={"inner_steps": 1, "snapshot_share": 0.8}
)
_SVRG_STRONG_NOTE = (
    "one epoch, one inner step (dp_svrg_pp: 2), rate 1, snapshot_share=0.8: "
    "the canary's whole influence is the snapshot release"
)

#: The second-order solvers audited where the canary's coefficient is linear
#: in the release that carries (almost) all of the budget.
_NEWTON_STRONG = dict(hessian="bound", hessian_share=0.01, floor_scale=1e6)
_NYSTROM_STRONG = dict(hessian_share=0.01)
_SSP_STRONG = dict(shares=(0.01, 0.99, 0.0), ridge=1e4)


def _perturbation(solver, note):
    # Huber(0.5) with a saturating canary along column 1; the same public alpha on D and D'.
    # The inner solve runs a fixed public budget of Newton steps (50 by default) in
    # every fit; these audits fit hundreds of times, so they use the smallest budget
    # accepted, which meets the solve's certificate on this small problem (checked
    # in tests/test_perturbation_audit.py).
    return (
        1.0,
        dict(loss="huber", task="regression", geometry="l2", alpha=0.2, max_iter=10),
        (
            DPSCORegressor,
            "regression",
            # A given row bound (the canary is clipped to it): a released one
            # can be huge with the canary in, and the certified solve then
            # refuses publicly (tests/test_perturbation_certified.py).
            dict(
                solver=solver,
                loss="huber",
                huber_threshold=0.5,
                alpha=0.2,
                delta=0.0,
                max_iter=10,
                data_norm=1.0,
            ),
        ),
        note,
    )


# solver -> (claimed epsilon, solver-level options, estimator-level (class, task, params), note)
_CONFIGS = {
    "dp_gd": (
        2.0,
        dict(
            loss="log_loss", task="classification", geometry="l2", max_iter=8, clip_norm=0.05, **_GD
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_gd", max_iter=8, solver_options=_GD, **_LOGISTIC),
        ),
        "8 full-batch steps, last iterate: the canary coefficient is the sum of the releases",
    ),
    "dp_sgd": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            max_iter=10,
            clip_norm=0.05,
            momentum=None,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_sgd", max_iter=10, solver_options={"momentum": None}, **_LOGISTIC),
        ),
        "Poisson-subsampled steps; the coefficient sums the canary's sampled pushes",
    ),
    "dp_cd": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="linf",
            max_iter=2,
            clip_norm=0.05,
            sampling="full",
            output="last",
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(
                solver="dp_cd",
                max_iter=2,
                feature_bound=1.0,
                solver_options=dict(sampling="full", output="last"),
                **_LOGISTIC,
            ),
        ),
        "full sampling (every coordinate every step): the tightest dp_cd setting",
    ),
    "objective_perturbation": _perturbation(
        "objective_perturbation", "pure epsilon-DP; canary saturates the Huber derivative"
    ),
    "output_perturbation": _perturbation(
        "output_perturbation", "pure epsilon-DP; the minimiser moves by the full sensitivity"
    ),
    "frank_wolfe": (
        1.0,
        dict(
            loss="squared",
            task="noise",
            geometry="linf",
            n=200,
            max_iter=1,
            radius=1.0,
            constraint="l1",
            clip_norm=2.0,
        ),
        (
            DPLasso,
            "noise",
            dict(
                solver="frank_wolfe",
                max_iter=1,
                radius=1.0,
                feature_bound=1.0,
                y_bound=1.0,
                delta=0.0,
            ),
        ),
        "one exponential-mechanism selection; the canary favours the vertex +e_1",
    ),
    "vr_frank_wolfe": (
        1.0,
        dict(
            loss="squared",
            task="noise",
            geometry="linf",
            # 800 rows: at 200 its public bound is vacuous at epsilon 1 and
            # it returns its fallback (the zero model) without a selection.
            n=800,
            n_phases=1,
            radius=1.0,
            constraint="l1",
            clip_norm=1.0,
            output="last",
        ),
        (
            DPLasso,
            "noise",
            dict(
                solver="vr_frank_wolfe",
                radius=1.0,
                feature_bound=1.0,
                y_bound=1.0,
                delta=0.0,
                clip_norm=1.0,
                solver_options={"n_phases": 1, "output": "last"},
            ),
        ),
        "one phase (2 selections); clip_norm=1 is the canary's own gradient bound, so its "
        "score shift is the full sensitivity; last iterate",
    ),
    "mirror_descent": (
        2.0,
        dict(
            loss="squared",
            task="regression",
            geometry="linf",
            max_iter=3,
            batch_size=10**6,
            clip_norm=0.5,
            radius=1.0,
            constraint="l1",
        ),
        (
            DPLasso,
            "regression",
            dict(
                solver="mirror_descent",
                max_iter=3,
                batch_size=10**6,
                clip_norm=0.5,
                radius=1.0,
                feature_bound=1.0,
                y_bound=1.0,
            ),
        ),
        "full batches, 3 noisy steps in the p-norm geometry",
    ),
    "localized_mirror_descent": (
        2.0,
        dict(
            loss="squared",
            task="noise",
            geometry="linf",
            max_iter=1,
            clip_norm=0.5,
            radius=1.0,
            constraint="l1",
        ),
        (
            DPLasso,
            "noise",
            dict(
                solver="localized_mirror_descent",
                max_iter=1,
                clip_norm=0.5,
                radius=1.0,
                feature_bound=1.0,
                y_bound=1.0,
            ),
        ),
        "max_iter=1: a single phase of one full-batch step on half the rows, so the whole "
        "budget is that one Gaussian release; the canary is in its block with probability 1/2",
    ),
    "resque": (
        2.0,
        dict(
            loss="absolute",
            task="regression",
            geometry="l2",
            tol=1.0,
            max_weight=1.0,
            radius=0.5,
            constraint="l2",
            batch_size=10**6,
        ),
        (
            DPSCORegressor,
            "noise",
            dict(
                solver="resque",
                loss="absolute",
                penalty=None,
                radius=0.5,
                constraint="l2",
                batch_size=10**6,
                solver_options={"tol": 1.0, "max_weight": 1.0},
            ),
        ),
        "max_weight=1 (sensitivity L, the canary's own term), a radius-0.5 ball and tol=1: "
        "smoothing radius 0.35 keeps the canary's derivative at -1, 2 x 32 full-batch steps; "
        "estimator: 200 rows with labels without signal (the private count blurs less, and "
        "no other coefficient pushes the iterate to the ball's edge)",
    ),
    "dp_svrg": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            alpha=0.05,
            clip_norm=0.05,
            **_SVRG,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(
                solver="dp_svrg",
                classes=[0, 1],
                penalty="l2",
                C=1.0,
                clip_norm=0.05,
                **_SVRG_STRONG,
            ),
        ),
        "solver level: snapshot and difference releases, Poisson inner mini-batches; "
        "estimator level: " + _SVRG_STRONG_NOTE,
    ),
    "dp_svrg_pp": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            clip_norm=0.05,
            max_iter=1,
            batch_size=10**6,
            inner_steps=1,
            snapshot_share=0.8,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_svrg_pp", **_SVRG_STRONG, **_LOGISTIC),
        ),
        _SVRG_STRONG_NOTE,
    ),
    "dp_accmd": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            clip_norm=0.05,
            radius=2.0,
            max_iter=4,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_accmd", max_iter=4, radius=2.0, **_LOGISTIC),
        ),
        "4 full-batch accelerated mirror steps on an L2 ball",
    ),
    "dp_newton": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            clip_norm=0.05,
            max_iter=1,
            **_NEWTON_STRONG,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_newton", max_iter=1, solver_options=_NEWTON_STRONG, **_LOGISTIC),
        ),
        "one step; 99% of the precision on the gradient release and a floor far above the "
        "curvature (public options), so the canary's coefficient is its noisy gradient entry "
        "over the floor: linear in the release that carries the budget",
    ),
    "dp_nystrom": (
        2.0,
        dict(
            loss="log_loss",
            task="classification",
            geometry="l2",
            clip_norm=0.05,
            max_iter=1,
            **_NYSTROM_STRONG,
        ),
        (
            DPLogisticRegression,
            "classification",
            dict(solver="dp_nystrom", max_iter=1, solver_options=_NYSTROM_STRONG, **_LOGISTIC),
        ),
        "one step; 99% of the precision on the gradient release, so the sketch's noise puts "
        "the floor far above the curvature of 20 rows: the canary's coefficient is its noisy "
        "gradient entry over a data-independent curvature",
    ),
    "dp_ssp": (
        2.0,
        dict(loss="squared", task="regression", geometry="l2", **_SSP_STRONG),
        (
            DPSCORegressor,
            "regression",
            dict(solver="dp_ssp", penalty=None, solver_options=_SSP_STRONG),
        ),
        "99% of the precision on X^T y and a fixed public ridge far above the Gram matrix: the "
        "canary's coefficient is its noisy X^T y entry over the ridge",
    ),
}


#: Rows of D at estimator level where 20 is too few: DPLasso's solvers need a
#: few samples per phase or vertex after the noisy row count; the Poisson
#: solvers round their sampling rate from the noisy count, and with n = 1000
#: the rounded rates repeat, so fits share their (PLD) calibrations.
_ESTIMATOR_ROWS = {"dp_sgd": 1000, "resque": 200, "vr_frank_wolfe": 800}

#: Solvers audited in their strongest configuration, with the factor of
#: their power control (calibrated for factor x epsilon, audited against epsilon).
_STRONG = {
    "vr_frank_wolfe": 3.0,
    "localized_mirror_descent": 3.0,
    "resque": 3.0,
    "dp_svrg": 3.0,  # estimator level only (its solver level was not weak)
    "dp_svrg_pp": 3.0,
    "dp_newton": 3.0,
    "dp_nystrom": 3.0,
    "dp_ssp": 3.0,
}


def power_factor(solver, level):
    if solver == "dp_svrg" and level == "solver":
        return None
    return _STRONG.get(solver)


def _generic_config(spec):
    """An audit of a solver with no configuration above, from its registry entry alone.

    The canary setting of ``dp_gd`` (logistic loss, no penalty, a small
    public ``clip_norm``, a few steps), restricted to what the solver
    supports; a regression task on the squared (else its first) loss when it
    does not fit the logistic loss.
    """
    options = {"clip_norm": 0.05} if "clip_norm" in spec.options else {}
    if "max_iter" in spec.options:
        options["max_iter"] = 5
    params = dict(options, solver=spec.name)
    if None in spec.penalties:
        params["penalty"] = None
    if spec.geometry == "linf":
        params["feature_bound"] = 1.0
    if "log_loss" in spec.losses:
        loss, task, estimator = "log_loss", "classification", DPLogisticRegression
        params["classes"] = [0, 1]
    else:
        loss = "squared" if "squared" in spec.losses else sorted(spec.losses)[0]
        task, estimator = "regression", DPSCORegressor
        params["loss"] = loss
    return (
        2.0,
        dict(loss=loss, task=task, geometry=spec.geometry, **options),
        (estimator, task, params),
        "generic configuration (no strongest configuration registered)",
    )


def _all_configs():
    from sklearn_dp.solvers import SOLVERS

    return {name: _CONFIGS.get(name) or _generic_config(spec) for name, spec in SOLVERS.items()}


def solver_audits(level=None):
    """The audits of every registered solver (both levels unless ``level`` is given)."""
    audits = []
    for solver, (
        epsilon,
        solver_options,
        (estimator, task, params),
        note,
    ) in _all_configs().items():
        delta = _delta(solver)
        if level in (None, "solver"):
            audits.append(
                SolverAudit(
                    solver,
                    "solver",
                    "-",
                    epsilon,
                    delta,
                    _solver_run(solver, **solver_options),
                    note,
                    solver_options,
                    power_factor(solver, "solver"),
                )
            )
        if level in (None, "estimator"):
            params = {"delta": delta, **params}
            n = _ESTIMATOR_ROWS.get(solver, 200 if estimator is DPLasso else 20)
            audits.append(
                SolverAudit(
                    solver,
                    "estimator",
                    estimator.__name__,
                    epsilon,
                    params["delta"],
                    _estimator_run(estimator, task, n=n, **params),
                    note,
                    params,
                    power_factor(solver, "estimator"),
                )
            )
    return audits


# --------------------------------------------------------------------------
# More estimators per solver (estimator level only; thorough runs)
# --------------------------------------------------------------------------

_REGRESSOR = dict(penalty=None, clip_norm=0.05)
_L1_REGRESSOR = dict(penalty=None, constraint="l1", radius=1.0, feature_bound=1.0)

# solver -> (estimator, task, rows, claimed epsilon, params)
_VARIANTS = [
    (
        "dp_gd",
        DPSCORegressor,
        "regression",
        20,
        2.0,
        dict(solver="dp_gd", max_iter=8, solver_options=_GD, **_REGRESSOR),
    ),
    (
        "dp_sgd",
        DPSCORegressor,
        "regression",
        1000,
        2.0,
        dict(
            solver="dp_sgd",
            loss="huber",
            max_iter=10,
            solver_options={"momentum": None},
            **_REGRESSOR,
        ),
    ),
    (
        "dp_cd",
        DPSCORegressor,
        "regression",
        20,
        2.0,
        dict(
            solver="dp_cd",
            max_iter=2,
            feature_bound=1.0,
            solver_options=dict(sampling="full", output="last"),
            **_REGRESSOR,
        ),
    ),
    (
        "dp_cd",
        DPLasso,
        "regression",
        20,
        2.0,
        dict(
            solver="dp_cd",
            alpha=1e-6,
            max_iter=2,
            feature_bound=1.0,
            clip_norm=0.05,
            solver_options=dict(sampling="full", output="last"),
        ),
    ),
    (
        "frank_wolfe",
        DPSCORegressor,
        "noise",
        200,
        1.0,
        dict(solver="frank_wolfe", max_iter=1, delta=0.0, **_L1_REGRESSOR),
    ),
    (
        "mirror_descent",
        DPSCORegressor,
        "regression",
        200,
        2.0,
        dict(solver="mirror_descent", max_iter=3, batch_size=10**6, clip_norm=0.5, **_L1_REGRESSOR),
    ),
    (
        "dp_accmd",
        DPSCORegressor,
        "regression",
        20,
        2.0,
        dict(solver="dp_accmd", max_iter=4, radius=2.0, **_REGRESSOR),
    ),
]


def estimator_variants():
    """Estimator-level audits of solvers with a second estimator (thorough runs only)."""
    audits = []
    for solver, estimator, task, n, epsilon, params in _VARIANTS:
        params = {"delta": DELTA, **params}
        audits.append(
            SolverAudit(
                solver,
                "estimator",
                estimator.__name__,
                epsilon,
                params["delta"],
                _estimator_run(estimator, task, n=n, **params),
                "second estimator",
                params,
            )
        )
    return audits


# --------------------------------------------------------------------------
# Group level: D against D plus one canary group of max_group_rows rows
# --------------------------------------------------------------------------

#: Rows of the canary group (the fits' ``max_group_rows``).
GROUP_ROWS = 8

# solver -> (estimator, task, claimed epsilon, params)
_GROUP_CONFIGS = {
    "dp_gd": (DPLogisticRegression, "classification", 2.0, _CONFIGS["dp_gd"][2][2]),
    "dp_newton": (
        DPLogisticRegression,
        "classification",
        2.0,
        dict(solver="dp_newton", max_iter=2, solver_options=_NEWTON_STRONG, **_LOGISTIC),
    ),
    "output_perturbation": (
        _CONFIGS["output_perturbation"][2][0],
        _CONFIGS["output_perturbation"][2][1],
        _CONFIGS["output_perturbation"][0],
        _CONFIGS["output_perturbation"][2][2],
    ),
}


def _group_run(estimator, task, *, n=20, group_level=True, **params):
    """D (each row its own group) and D' = D plus a group of GROUP_ROWS canary rows."""
    (X, y), (X_one, y_one) = canary_data(n, task=task)
    X_prime = np.vstack([X] + [X_one[-1:]] * GROUP_ROWS)
    y_prime = np.append(y, [y_one[-1]] * GROUP_ROWS)
    groups = [np.arange(n), np.append(np.arange(n), [n] * GROUP_ROWS)]
    datasets = [(X, y), (X_prime, y_prime)]

    def make_run(epsilon):
        def run(with_canary, seed):
            Xi, yi = datasets[int(with_canary)]
            model = estimator(
                epsilon=epsilon,
                random_state=seed,
                fit_intercept=False,
                max_group_rows=GROUP_ROWS,
                **params,
            )
            fit = dict(groups=groups[int(with_canary)]) if group_level else {}
            model.fit(Xi, yi, **fit)
            return float(np.ravel(model.coef_)[1])

        return run

    return make_run


def group_audits(*, group_level=True):
    """Audits of group-level fits: D against D plus one canary group of GROUP_ROWS rows.

    ``group_level=False`` is the positive control: the same data sets, fitted
    at row level (no ``groups``) while the audit claims the same epsilon for
    the group: the canary group then moves the fit by GROUP_ROWS times a
    row's sensitivity, and the audit must find more than the claim.
    """
    audits = []
    for solver, (estimator, task, epsilon, params) in _GROUP_CONFIGS.items():
        delta = _delta(solver)
        params = {"delta": delta, **params}
        audits.append(
            SolverAudit(
                solver,
                "group" if group_level else "group-control",
                estimator.__name__,
                epsilon,
                delta,
                _group_run(estimator, task, group_level=group_level, **params),
                f"a canary group of {GROUP_ROWS} equal rows, max_group_rows={GROUP_ROWS}",
                params,
            )
        )
    return audits
