"""Solver registry: name -> function, privacy plan and what it supports.

Solvers are free functions in their own modules; they take bounded data and
public hyper-parameters and return a :class:`SolverResult` whose ``plan``
carries the fit's ``DpEvent``.  They never see a budget.  Estimators look
solvers up here, so a solver that does not fit a loss, penalty or privacy mode
is refused with one clear message in one place.
"""

from __future__ import annotations

import sys
from functools import partial
from numbers import Integral, Real

from .._limits import MAX_SCALE
from .._losses import loss_names
from .._sklearn_compat import Interval, StrOptions
from ._accmd import dp_accmd
from ._cd_sampling import SAMPLINGS, SMOOTHNESS_RULES
from ._common import PrivacyPlan, SolverResult
from ._coordinate_descent import dp_cd
from ._frank_wolfe import check_vr_frank_wolfe, frank_wolfe
from ._gradient_descent import dp_gd
from ._mirror_descent import check_options, localized_mirror_descent, mirror_descent
from ._nystrom import dp_nystrom
from ._perturbation import check_perturbation, objective_perturbation, output_perturbation
from ._registry import (
    COUNT,
    FRACTION,
    POSITIVE,
    SOLVERS,  # noqa: F401 - the read-only registry, for the estimators and tests
    AutoChoice,
    SolverCall,
    SolverSpec,
    get_solver,
    plan_call,
    register_solver,
    registered_solvers,
    unregister_solver,
    unsupported_reasons,
)
from ._resque import GLOBALLY_LIPSCHITZ_LOSSES, resque
from ._second_order import dp_newton
from ._sgd import dp_sgd
from ._ssp import dp_ssp
from ._svrg import dp_svrg, dp_svrg_pp
from ._vr_frank_wolfe import vr_frank_wolfe

__all__ = [
    "SolverSpec",
    "SolverCall",
    "plan_call",
    "register_solver",
    "unregister_solver",
    "get_solver",
    "registered_solvers",
    "unsupported_reasons",
    "AutoChoice",
    "PrivacyPlan",
    "SolverResult",
    "dp_gd",
    "dp_sgd",
    "objective_perturbation",
    "output_perturbation",
    "dp_cd",
    "frank_wolfe",
    "vr_frank_wolfe",
    "mirror_descent",
    "localized_mirror_descent",
    "resque",
    "dp_svrg",
    "dp_svrg_pp",
    "dp_accmd",
    "dp_newton",
    "dp_nystrom",
    "dp_ssp",
]


# Smooth GLM losses (bounded curvature), read off the loss classes.
_GLM_LOSSES = loss_names(smooth=True)
# ... and multinomial models of them, fitted jointly (one mechanism).
_GLM_MULTICLASS = dict(losses=_GLM_LOSSES, multiclass=True)

# Every built-in solver declares event_reads_bounds=False: its plans read the
# inputs derived from the bounds only for details its run uses (the
# certification of the perturbation solvers, dp_newton's constant-curvature
# loss type) or for default step counts that also need the row count (dp_gd's
# schedules, dp_accmd, frank_wolfe, the SVRG family: no plan before it).
# tests/test_protocol.py checks the events at very different bounds.


def _register_builtin(run, **fields):
    """Register the built-in solver ``run``: a :class:`SolverSpec` with ``event_reads_bounds=False``.

    Unless ``fields`` say otherwise, it is named after its function, its plan
    is its module's ``plan_<name>`` and its check the module's
    ``check_<name>`` (None without one).
    """
    module, name = sys.modules[run.__module__], fields.setdefault("name", run.__name__)
    fields.setdefault("plan", getattr(module, f"plan_{name}"))
    fields.setdefault("check", getattr(module, f"check_{name}", None))
    return register_solver(SolverSpec(run=run, event_reads_bounds=False, **fields))


# Noise warnings (``noise_warning``): ``(regression, classification)``
# thresholds on the public proxy of the excess loss the step noise causes
# (solvers/_noise_warnings.py), measured with ``benchmarks/bench_solvers.py``
# defaults (one split, delta 1e-5) on diabetes, the 30k-row sparse regression,
# breast cancer and digits at epsilon 0.1 / 0.5 / 1 / 2 / 5: each threshold
# lies between the largest proxy of a row at or above the trivial predictor
# and the smallest proxy of a row far below it (the confusion table is in the
# solvers' docs pages).  Each entry says what it was measured between.
# dp_gd: regression rows below R^2 0 have proxy >= 0.061, rows above <= 0.018;
# classification below the majority >= 1.4, above <= 0.36.
_register_builtin(
    dp_gd,
    **_GLM_MULTICLASS,
    penalties=frozenset({None, "l2"}),
    summary="full-batch noisy gradient descent; exact Gaussian composition",
    sample_weight=True,
    option_constraints={
        "initial_gap": [POSITIVE, None],
        "pl_constant": [POSITIVE, None],
        "output": [StrOptions({"auto", "tail_average", "last", "random"})],
        "schedule": [StrOptions({"pl", "gradient_norm"}), None],
    },
    dask=True,
    noise_warning=(0.03, 1.0),
)
# dp_sgd, at its default (10% batches): regression below >= 0.0066 (diabetes
# at epsilon 5, R^2 -0.08), above <= 0.0017 (sparse regression at epsilon 0.1,
# R^2 0.67); classification below >= 1.4, above <= 0.38.
_register_builtin(
    dp_sgd,
    losses=_GLM_LOSSES | {"absolute", "quantile"},  # any loss with a clipped gradient
    penalties=frozenset({None, "l2"}),
    multiclass=True,
    summary="Poisson-subsampled DP-SGD; PLD accounting",
    sample_weight=True,
    noise_warning=(0.004, 1.0),
    option_constraints={"momentum": [StrOptions({"nesterov"}), None]},
)
# The perturbation baselines: strongly convex (an L2 penalty), unconstrained,
# pure epsilon-DP with delta=0; unweighted (the certified inner solve is).
_PERTURBATION = dict(
    **_GLM_MULTICLASS,
    penalties=frozenset({"l2"}),
    constraints=frozenset({None}),
    pure_dp=True,
)
_register_builtin(
    objective_perturbation,
    **_PERTURBATION,
    summary="objective perturbation (Chaudhuri et al. 2011; Gaussian: Kifer et al. 2012); "
    "fixed-budget Newton solve; pure epsilon-DP with delta=0",
    check=partial(check_perturbation, "objective_perturbation"),
    option_constraints={"epsilon_split": [FRACTION], "residual_fraction": [FRACTION]},
)
_register_builtin(
    output_perturbation,
    **_PERTURBATION,
    summary="output perturbation (Chaudhuri et al. 2011): certified minimiser plus noise; "
    "pure epsilon-DP with delta=0",
    check=partial(check_perturbation, "output_perturbation"),
)
_register_builtin(
    dp_cd,
    **_GLM_MULTICLASS,
    penalties=frozenset({None, "l2", "l1", "elasticnet"}),
    geometry="linf",
    constraints=frozenset({None}),
    summary=(
        "DP (block) coordinate descent with uniform, importance, tau-nice or full sampling; "
        "separable L1/L2 penalties; exact Gaussian composition"
    ),
    option_constraints={
        **{name: [COUNT, None] for name in ("block_size", "n_outer", "tau")},
        "normalizer": [POSITIVE, None],
        "step_scale": [POSITIVE],
        "output": [StrOptions({"average", "tail_average", "last"}), None],
        "sampling": [StrOptions(set(SAMPLINGS))],
        "smoothness": [StrOptions(set(SMOOTHNESS_RULES)), "array-like"],
    },
)

# l1-geometry solvers (Asi, Feldman, Koren, Talwar 2021; docs/solvers/lasso.md): rows
# bounded entrywise (feature_bound), optimisation over an l1 ball (constraint="l1"), one
# output (regression losses; the code is GLM-generic, but no l1-constrained classifier
# exists yet).
_L1_BALL = dict(
    penalties=frozenset({None, "l1", "l2", "elasticnet"}),
    geometry="linf",
    constraints=frozenset({"l1"}),
)
# The Frank-Wolfe pair: exponential-mechanism steps (pure or zCDP) on smooth regression losses.
_FRANK_WOLFE = dict(losses=frozenset({"squared", "huber"}), **_L1_BALL, pure_dp=True)

# Frank-Wolfe warnings (``bound_warning``): regression thresholds on the public
# error bound of frank_wolfe's default number of steps (n_public, d, epsilon,
# delta and the l1 radius in the solver's units, labels divided by their public
# scale), measured with ``benchmarks/bench_solvers.py`` defaults (DPLasso, the
# constrained form at its default radius, one split, delta 1e-5).
# Classification losses are not measured (no benchmark row fits them with these
# solvers) and never warn.
# frank_wolfe: diabetes bound 6.2 / 1.6 / 0.91 / 0.57 / 0.34 at epsilon
# 0.1 / 0.5 / 1 / 2 / 5 with R^2 -1.33 / 0.062 / 0.19 / 0.24 / 0.27; the sparse
# regression (30k rows) 0.48 ... 0.045, R^2 >= 0.67: threshold 3.
_register_builtin(
    frank_wolfe,
    # Also an lp ball (1 < p <= 2) with Gaussian noisy gradients (delta > 0): the
    # exponential mechanism needs a polytope's finitely many vertices.
    **{**_FRANK_WOLFE, "constraints": frozenset({"l1", "lp"})},
    summary=(
        "noisy Frank-Wolfe over an l1 ball (exponential mechanism per step, pure or zCDP) "
        "or an lp ball (Gaussian noisy gradients)"
    ),
    option_constraints={
        "output": [StrOptions({"tail_average", "last"})],
        "refit": [Interval(Real, 0, 1, closed="left")],
    },
    bound_warning=3.0,
)
# vr_frank_wolfe: diabetes (all rows below R^2 0: -16.6 ... -1.3, bound >= 0.34);
# the sparse regression -0.46 at epsilon 0.1 (bound 0.48), >= 0.20 at 0.5 and
# above (bound <= 0.18): threshold 0.25.  Above it vr_frank_wolfe returns the
# zero model instead (its fallback: diabetes -0.19 at every epsilon against
# -1.9 ... -0.28 run, the sparse regression -0.06 at 0.1 against -5.1).
_register_builtin(
    vr_frank_wolfe,
    **_FRANK_WOLFE,
    summary="one-pass variance-reduced Frank-Wolfe over an l1 ball (Asi et al. 2021, Alg. 3)",
    check=check_vr_frank_wolfe,
    option_constraints={
        "n_phases": [COUNT, None],
        "schedule": [StrOptions({"pure", "approximate"})],
        "output": [StrOptions({"tail_average", "last"})],
    },
    bound_warning=0.25,
)
_register_builtin(
    mirror_descent,
    losses=frozenset({"squared", "huber", "absolute"}),
    # Also an lp ball (1 < p <= 2, Alg. 5): the exact Bregman step solves it, and the
    # privacy analysis depends only on the L2 clip, not on p.
    **{**_L1_BALL, "constraints": frozenset({"l1", "lp"})},
    summary="noisy minibatch mirror descent, p-norm map, l1 / lp geometry (Alg. 1/5)",
    check=partial(check_options, "mirror_descent"),
)
# localized_mirror_descent: its own public bound (Asi et al. 2021, Theorem 4,
# constant 1; DPLasso defaults, epsilon 0.5 / 1 / 5): diabetes 7.0 / 6.0 / 5.5
# with R^2 -4.6 / 0.01 / 0.02; a 30k-row, d = 30 sparse regression 2.5 / 1.8 /
# 1.2 with R^2 0.60 / 0.64 / 0.64; n = 5000, d = 2000
# (benchmarks/bench_regimes.py) above 10 with R^2 about 0: threshold 3.  From
# _mirror_descent.FALLBACK_BOUND (20) on, it returns the zero model instead.
_register_builtin(
    localized_mirror_descent,
    losses=frozenset({"squared", "huber", "absolute"}),
    # Also an lp ball (Alg. 6): each step is exact over its intersection with the
    # phase's localisation ball (._pnorm.bregman_step's outer ball).
    **{**_L1_BALL, "constraints": frozenset({"l1", "lp"})},
    summary="localized noisy mirror descent on disjoint phases, l1 / lp geometry (Alg. 2/6)",
    check=partial(check_options, "localized_mirror_descent"),
    bound_warning=3.0,
)


_register_builtin(
    resque,
    losses=GLOBALLY_LIPSCHITZ_LOSSES,
    penalties=frozenset({None, "l2"}),
    summary=(
        "ReSQue ball acceleration (one batched query round per ball subproblem) with "
        "Poisson-subsampled Gaussian steps on weight-capped ReSQue gradients; PLD accounting"
    ),
    option_constraints={
        "max_inner": [COUNT, None],
        "n_probes": [COUNT],
        "passes": [POSITIVE, None],
        "max_weight": [Interval(Real, 1, MAX_SCALE, closed="both")],
        "inner": [StrOptions({"epoch_sgd", "acsa"})],
        "schedule": [StrOptions({"budget", "theory"})],
        "n_jobs": [Integral, None],
    },
)

# Solvers of Wang, Ye and Xu (2017), "DP-ERM revisited" (docs/solvers/erm_revisited.md).
_SVRG = dict(
    **_GLM_MULTICLASS,
    constraints=frozenset({None}),
    option_constraints={
        "difference_bound": [StrOptions({"smoothness", "clip"})],
        "output": [StrOptions({"average", "last"})],
    },
)

# dp_svrg (proxy of the inner steps, difference bound 2 C): regression below
# >= 2.3, above <= 0.69; classification below >= 3.5, above <= 2.9.
_register_builtin(
    dp_svrg,
    penalties=frozenset({"l2", "elasticnet"}),
    summary="noisy proximal SVRG (strongly convex: needs an L2 penalty); Poisson inner "
    "mini-batches, PLD accounting",
    **_SVRG,
    noise_warning=(1.0, 3.2),
)
# dp_svrg_pp: regression below >= 0.49, above <= 0.12; classification: the rows
# below the majority (digits at epsilon 0.1 / 0.5) and above it (breast cancer
# at 0.1 / 0.5) overlap, so only the extreme (digits at 0.1, proxy 169) is
# reported.
_register_builtin(
    dp_svrg_pp,
    penalties=frozenset({None, "l2", "l1", "elasticnet"}),
    summary="noisy proximal SVRG++ with doubling epochs (convex; L1/L2/none); PLD accounting",
    **_SVRG,
    noise_warning=(0.25, 100.0),
)
_register_builtin(
    dp_accmd,
    **_GLM_MULTICLASS,
    penalties=frozenset({None}),
    constraints=frozenset({"l2", "l1"}),
    summary="noisy accelerated mirror descent over an L2 or L1 ball (needs radius, no "
    "penalty); exact Gaussian composition",
    option_constraints={
        "smoothness": [StrOptions({"l2", "entrywise"})],
    },
)

# Second-order methods and sufficient statistics (docs/solvers/second_order.md).
# The Newton-type pair: smooth GLMs, unconstrained, weighted rows, Dask arrays.
_NEWTON_TYPE = dict(
    **_GLM_MULTICLASS,
    penalties=frozenset({None, "l2"}),
    constraints=frozenset({None}),
    sample_weight=True,
    dask=True,
)
_register_builtin(
    dp_newton,
    **_NEWTON_TYPE,
    summary="private Newton steps: noisy gradient and noisy Hessian per step, eigenvalues "
    "raised to a public floor (Ganesh et al. 2023); exact Gaussian composition",
    option_constraints={
        "floor_scale": [Interval(Real, 0, MAX_SCALE, closed="both"), None],
        "hessian_steps": [COUNT, None],
        "hessian": [StrOptions({"exact", "bound"})],
        "eigenvalue": [StrOptions({"auto", "clip", "add"})],
    },
)


# Wide and sparse X (docs/solvers/second_order.md): a sketch of the Gram
# matrix instead of the whole of it.
_register_builtin(
    dp_nystrom,
    **_NEWTON_TYPE,
    summary="Newton-type steps on a released rank-k Nystrom sketch of the Gram matrix",
    option_constraints={"rank": [COUNT]},
)


_register_builtin(
    dp_ssp,
    losses=frozenset({"squared"}),
    penalties=frozenset({None, "l2", "l1", "elasticnet"}),
    constraints=frozenset({None, "l1", "l2"}),
    summary="sufficient statistics perturbation (AdaSSP, Wang 2018): one Gaussian release "
    "of X^T X and X^T y and a noisy smallest eigenvalue for an adaptive ridge; ridge, "
    "Lasso, elastic-net and balls solved on the released statistics",
    sample_weight=True,
    option_constraints={
        "ridge": [StrOptions({"adaptive"}), Interval(Real, 0, MAX_SCALE, closed="both")],
        "label_bound": [POSITIVE],
    },
    dask=True,
)
