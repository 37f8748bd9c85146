"""Solver registry: name -> function, privacy plan and what it supports.

Solvers are free functions in their own modules; they take bounded data and
public hyper-parameters and return a :class:`SolverResult` whose ``plan``
carries the fit's ``DpEvent``.  They never see a budget.  Estimators look
solvers up here, so a solver that does not fit a loss, penalty or privacy mode
is refused with one clear message in one place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ._common import PrivacyPlan, PrivateCount, SolverResult, make_rng, release_count
from ._coordinate_descent import check_dp_cd, dp_cd, plan_dp_cd
from ._gradient_descent import check_dp_gd, dp_gd, plan_dp_gd
from ._sgd import check_dp_sgd, dp_sgd, plan_dp_sgd
from ._perturbation import (
    check_objective_perturbation,
    check_output_perturbation,
    objective_perturbation,
    output_perturbation,
    plan_objective_perturbation,
    plan_output_perturbation,
)

__all__ = [
    "SolverSpec",
    "SOLVERS",
    "register_solver",
    "get_solver",
    "check_solver_supports",
    "PrivacyPlan",
    "PrivateCount",
    "SolverResult",
    "make_rng",
    "release_count",
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
    "dp_ssp",
]


@dataclass(frozen=True)
class SolverSpec:
    """What a solver is and what it supports.

    Attributes
    ----------
    name : str
        The ``solver=`` name.
    function : callable
        The solver itself.
    losses : frozenset of str
        Loss names it accepts (``"log_loss"``, ``"squared"``, ``"huber"``,
        ``"absolute"``, ...).
    penalties : frozenset
        Penalties it accepts (``None``, ``"l2"``, ``"l1"``, ``"elasticnet"``).
    multiclass : bool
        Whether it fits multinomial models (jointly, one mechanism).
    sparse : bool
        Whether it accepts scipy sparse input.
    geometry : {"l2", "linf"}
        How rows must be bounded: in L2 norm by ``data_norm`` (gradients
        bounded in L2), or entrywise by ``feature_bound`` (gradients bounded
        in L-infinity, for l1-geometry solvers).
    constraints : frozenset
        Constraint sets it optimises over: ``None`` (unconstrained), ``"l2"``
        or ``"l1"`` (balls of the estimator's ``radius``).
    pure_dp : bool
        Whether it can give pure epsilon-DP (``delta=0``).
    approximate_dp : bool
        Whether it supports ``delta > 0``.
    summary : str
        One line for error messages and docs.
    check : callable or None
        ``check(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public,
        options)`` raises a ValueError for options the solver refuses,
        from public inputs only; estimators call it before they reserve the
        spend, so a refused configuration costs nothing.  (``alpha`` is None
        when it scales with the private row count; ``public`` is the
        estimator's :class:`~sklearn_dp.linear_model._base.PublicSetting`.)
    plan : callable
        ``plan(n_samples, n_params, epsilon, delta, **options)`` -> PrivacyPlan,
        from public inputs only, so an estimator can check a budget against
        the exact event before the solver touches the data.  It takes the
        subset of the solver's options that shape the mechanism.
    sample_weight : bool
        Whether it fits weighted rows (``BoundedData.sample_weight``, each
        sensitivity multiplied by ``BoundedData.weight_bound``).  Estimators
        refuse ``sample_weight`` / ``class_weight`` with the other solvers
        before they reserve the spend.
    warm_start : bool
        Whether it takes a starting point ``coef_init`` (an estimator's
        ``warm_start``); the others start from their usual point.
    """

    name: str
    function: Callable
    plan: Callable
    losses: frozenset
    penalties: frozenset
    multiclass: bool = False
    sparse: bool = True
    geometry: str = "l2"
    constraints: frozenset = frozenset({None, "l2"})
    pure_dp: bool = False
    approximate_dp: bool = True
    summary: str = ""
    options: tuple = ()
    check: Callable | None = None
    sample_weight: bool = False
    warm_start: bool = False


SOLVERS: dict[str, SolverSpec] = {}


def register_solver(spec: SolverSpec) -> SolverSpec:
    """Add a solver to the registry (names are unique)."""
    if spec.name in SOLVERS:
        raise ValueError(f"A solver named {spec.name!r} is already registered.")
    SOLVERS[spec.name] = spec
    return spec


def get_solver(name: str) -> SolverSpec:
    """The registered solver ``name``, or a ValueError listing the known ones."""
    try:
        return SOLVERS[name]
    except KeyError:
        known = ", ".join(sorted(SOLVERS))
        raise ValueError(f"Unknown solver {name!r}. Known solvers: {known}.") from None


def check_solver_supports(
    spec, *, estimator, loss, penalty, delta, multiclass=False, sparse=False, constraint=None
):
    """Raise a ValueError that says what to do when ``spec`` cannot fit this problem.

    ``delta=None`` skips the privacy-mode checks (a noiseless reference fit).
    """
    problems = []
    if loss not in spec.losses:
        problems.append(f"loss={loss!r} (it supports {sorted(spec.losses)})")
    if penalty not in spec.penalties:
        shown = sorted(spec.penalties, key=str)
        problems.append(f"penalty={penalty!r} (it supports {shown})")
    if constraint not in spec.constraints:
        shown = sorted(spec.constraints, key=str)
        problems.append(f"constraint={constraint!r} (it supports {shown})")
    if multiclass and not spec.multiclass:
        problems.append("more than two classes")
    if sparse and not spec.sparse:
        problems.append("sparse input (convert with X.toarray())")
    if delta is not None and delta == 0 and not spec.pure_dp:
        problems.append("delta=0 (it needs delta > 0: pure epsilon-DP is not possible with it)")
    if delta is not None and delta > 0 and not spec.approximate_dp:
        problems.append("delta > 0 (it is a pure epsilon-DP solver: set delta=0)")
    if problems:
        alternatives = [
            s.name
            for s in SOLVERS.values()
            if loss in s.losses
            and penalty in s.penalties
            and constraint in s.constraints
            and (s.multiclass or not multiclass)
            and (s.sparse or not sparse)
            and (delta is None or (s.pure_dp if delta == 0 else s.approximate_dp))
        ]
        hint = (
            f" Solvers that fit: {', '.join(alternatives)} (or solver='auto')."
            if alternatives
            else " No registered solver fits this combination; change the loss, penalty or delta."
        )
        raise ValueError(
            f"{estimator}: solver={spec.name!r} does not support " + "; ".join(problems) + "." + hint
        )


_GLM_LOSSES = frozenset({"log_loss", "squared", "huber"})

register_solver(
    SolverSpec(
        name="dp_gd",
        function=dp_gd,
        plan=plan_dp_gd,
        losses=_GLM_LOSSES,
        penalties=frozenset({None, "l2"}),
        multiclass=True,
        summary="full-batch noisy gradient descent; exact Gaussian composition",
        options=(
            "max_iter", "step_size", "clip_norm", "output", "momentum", "radius",
            "schedule", "pl_constant", "initial_gap",
        ),
        check=check_dp_gd,
        sample_weight=True,
        warm_start=True,
    )
)
register_solver(
    SolverSpec(
        name="dp_sgd",
        function=dp_sgd,
        plan=plan_dp_sgd,
        losses=_GLM_LOSSES | {"absolute", "quantile"},
        penalties=frozenset({None, "l2"}),
        multiclass=True,
        summary="Poisson-subsampled DP-SGD; PLD accounting",
        options=("max_iter", "batch_size", "step_size", "clip_norm", "momentum", "radius"),
        check=check_dp_sgd,
        sample_weight=True,
        warm_start=True,
    )
)
register_solver(
    SolverSpec(
        name="objective_perturbation",
        function=objective_perturbation,
        plan=plan_objective_perturbation,
        losses=_GLM_LOSSES,
        penalties=frozenset({"l2"}),
        multiclass=True,
        constraints=frozenset({None}),
        pure_dp=True,
        approximate_dp=True,
        summary="objective perturbation (Chaudhuri et al. 2011; Gaussian: Kifer et al. 2012); "
        "fixed-budget Newton solve; pure epsilon-DP with delta=0",
        options=("max_iter", "gradient_tol", "epsilon_split", "residual_fraction"),
        check=check_objective_perturbation,
        sample_weight=False,  # the certified inner solve is unweighted
    )
)
register_solver(
    SolverSpec(
        name="output_perturbation",
        function=output_perturbation,
        plan=plan_output_perturbation,
        losses=_GLM_LOSSES,
        penalties=frozenset({"l2"}),
        multiclass=True,
        constraints=frozenset({None}),
        pure_dp=True,
        approximate_dp=True,
        summary="output perturbation (Chaudhuri et al. 2011): certified minimiser plus noise; "
        "pure epsilon-DP with delta=0",
        options=("max_iter", "gradient_tol"),
        check=check_output_perturbation,
        sample_weight=False,  # the certified inner solve is unweighted
    )
)
register_solver(
    SolverSpec(
        name="dp_cd",
        function=dp_cd,
        plan=plan_dp_cd,
        losses=_GLM_LOSSES,
        penalties=frozenset({None, "l2", "l1", "elasticnet"}),
        multiclass=True,
        geometry="linf",
        constraints=frozenset({None}),
        summary=(
            "DP (block) coordinate descent with uniform, importance, tau-nice or full sampling; "
            "separable L1/L2 penalties; exact Gaussian composition"
        ),
        options=(
            "max_iter", "clip_norm", "sampling", "blocks", "block_size", "tau", "n_outer",
            "smoothness", "step_scale", "output", "normalizer",
        ),
        check=check_dp_cd,
    )
)

# l1-geometry solvers (Asi, Feldman, Koren, Talwar 2021; docs/solvers/lasso.md): rows bounded entrywise (feature_bound),
# optimisation over an l1 ball (constraint="l1"), one output (regression losses;
# the code is GLM-generic, but no l1-constrained classifier exists yet).
from ._frank_wolfe import (  # noqa: E402
    check_frank_wolfe,
    check_vr_frank_wolfe,
    frank_wolfe,
    plan_frank_wolfe,
    plan_vr_frank_wolfe,
    vr_frank_wolfe,
)
from ._mirror_descent import (  # noqa: E402
    check_localized_mirror_descent,
    check_mirror_descent,
    localized_mirror_descent,
    mirror_descent,
    plan_localized_mirror_descent,
    plan_mirror_descent,
)

_L1_OPTIONS = ("clip_norm", "radius", "constraint", "intercept_bound")
_ANY_PENALTY = frozenset({None, "l1", "l2", "elasticnet"})

register_solver(
    SolverSpec(
        name="frank_wolfe",
        function=frank_wolfe,
        plan=plan_frank_wolfe,
        losses=frozenset({"squared", "huber"}),
        penalties=_ANY_PENALTY,
        geometry="linf",
        constraints=frozenset({"l1"}),
        pure_dp=True,
        summary="noisy Frank-Wolfe over an l1 ball; exponential mechanism per step, pure or zCDP",
        options=("max_iter", "output") + _L1_OPTIONS,
        check=check_frank_wolfe,
    )
)
register_solver(
    SolverSpec(
        name="vr_frank_wolfe",
        function=vr_frank_wolfe,
        plan=plan_vr_frank_wolfe,
        losses=frozenset({"squared", "huber"}),
        penalties=_ANY_PENALTY,
        geometry="linf",
        constraints=frozenset({"l1"}),
        pure_dp=True,
        summary="one-pass variance-reduced Frank-Wolfe over an l1 ball (Asi et al. 2021, Alg. 3)",
        options=_L1_OPTIONS + ("schedule", "n_phases", "output"),
        check=check_vr_frank_wolfe,
    )
)
register_solver(
    SolverSpec(
        name="mirror_descent",
        function=mirror_descent,
        plan=plan_mirror_descent,
        losses=frozenset({"squared", "huber", "absolute"}),
        penalties=_ANY_PENALTY,
        geometry="linf",
        constraints=frozenset({"l1"}),
        summary="noisy minibatch mirror descent, p-norm map, l1 / lp geometry (Alg. 1/5)",
        options=("max_iter", "batch_size", "step_size") + _L1_OPTIONS + ("p", "strongly_convex"),
        check=check_mirror_descent,
    )
)
register_solver(
    SolverSpec(
        name="localized_mirror_descent",
        function=localized_mirror_descent,
        plan=plan_localized_mirror_descent,
        losses=frozenset({"squared", "huber", "absolute"}),
        penalties=_ANY_PENALTY,
        geometry="linf",
        constraints=frozenset({"l1"}),
        summary="localized noisy mirror descent on disjoint phases, l1 / lp geometry (Alg. 2/6)",
        options=("max_iter", "step_size") + _L1_OPTIONS + ("p", "strongly_convex"),
        check=check_localized_mirror_descent,
    )
)

from ._resque import (  # noqa: E402
    GLOBALLY_LIPSCHITZ_LOSSES,
    OPTION_NAMES as _RESQUE_OPTIONS,
    check_resque,
    plan_resque,
    resque,
)

register_solver(
    SolverSpec(
        name="resque",
        function=resque,
        plan=plan_resque,
        losses=GLOBALLY_LIPSCHITZ_LOSSES,
        penalties=frozenset({None, "l2"}),
        summary=(
            "ReSQue ball acceleration (one batched query round per ball subproblem) with "
            "Poisson-subsampled Gaussian steps on weight-capped ReSQue gradients; PLD accounting"
        ),
        options=_RESQUE_OPTIONS,
        check=check_resque,
    )
)

# Solvers of Wang, Ye and Xu (2017), "DP-ERM revisited" (docs/solvers/erm_revisited.md).
from ._accmd import check_dp_accmd, dp_accmd, plan_dp_accmd  # noqa: E402
from ._svrg import (  # noqa: E402
    check_dp_svrg,
    check_dp_svrg_pp,
    dp_svrg,
    dp_svrg_pp,
    plan_dp_svrg,
    plan_dp_svrg_pp,
)

_SVRG_OPTIONS = (
    "max_iter", "batch_size", "step_size", "clip_norm", "inner_steps", "difference_bound",
    "snapshot_share", "output",
)

register_solver(
    SolverSpec(
        name="dp_svrg",
        function=dp_svrg,
        plan=plan_dp_svrg,
        losses=_GLM_LOSSES,
        penalties=frozenset({"l2", "elasticnet"}),
        multiclass=True,
        constraints=frozenset({None}),
        summary="noisy proximal SVRG (strongly convex: needs an L2 penalty); Poisson inner "
        "mini-batches, PLD accounting",
        options=_SVRG_OPTIONS,
        check=check_dp_svrg,
    )
)
register_solver(
    SolverSpec(
        name="dp_svrg_pp",
        function=dp_svrg_pp,
        plan=plan_dp_svrg_pp,
        losses=_GLM_LOSSES,
        penalties=frozenset({None, "l2", "l1", "elasticnet"}),
        multiclass=True,
        constraints=frozenset({None}),
        summary="noisy proximal SVRG++ with doubling epochs (convex; L1/L2/none); PLD accounting",
        options=_SVRG_OPTIONS,
        check=check_dp_svrg_pp,
    )
)
register_solver(
    SolverSpec(
        name="dp_accmd",
        function=dp_accmd,
        plan=plan_dp_accmd,
        losses=_GLM_LOSSES,
        penalties=frozenset({None}),
        multiclass=True,
        constraints=frozenset({"l2", "l1"}),
        summary="noisy accelerated mirror descent over an L2 or L1 ball (needs radius, no "
        "penalty); exact Gaussian composition",
        options=("max_iter", "clip_norm", "radius", "constraint"),
        check=check_dp_accmd,
    )
)

# Second-order methods and sufficient statistics (docs/solvers/second_order.md).
from ._second_order import check_dp_newton, dp_newton, plan_dp_newton  # noqa: E402

register_solver(
    SolverSpec(
        name="dp_newton",
        function=dp_newton,
        plan=plan_dp_newton,
        losses=_GLM_LOSSES,
        penalties=frozenset({None, "l2"}),
        multiclass=True,
        constraints=frozenset({None}),
        summary="private Newton steps: noisy gradient and noisy Hessian per step, eigenvalues "
        "raised to a public floor (Ganesh et al. 2023); exact Gaussian composition",
        options=("max_iter", "clip_norm", "hessian", "hessian_share", "hessian_steps",
                 "eigenvalue", "floor_scale", "momentum"),
        check=check_dp_newton,
        sample_weight=True,
        warm_start=True,
    )
)

from ._ssp import check_dp_ssp, dp_ssp, plan_dp_ssp  # noqa: E402

register_solver(
    SolverSpec(
        name="dp_ssp",
        function=dp_ssp,
        plan=plan_dp_ssp,
        losses=frozenset({"squared"}),
        penalties=frozenset({None, "l2", "l1", "elasticnet"}),
        constraints=frozenset({None, "l1", "l2"}),
        summary="sufficient statistics perturbation (AdaSSP, Wang 2018): one Gaussian release "
        "of X^T X and X^T y and a noisy smallest eigenvalue for an adaptive ridge; ridge, "
        "Lasso, elastic-net and balls solved on the released statistics",
        options=("max_iter", "tol", "radius", "constraint", "intercept_bound", "shares",
                 "ridge", "label_bound"),
        check=check_dp_ssp,
        sample_weight=True,
    )
)
