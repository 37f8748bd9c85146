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

from ._common import PrivacyPlan, SolverResult, make_rng
from ._gradient_descent import dp_gd, plan_dp_gd
from ._sgd import dp_sgd, plan_dp_sgd

__all__ = [
    "SolverSpec",
    "SOLVERS",
    "register_solver",
    "get_solver",
    "check_solver_supports",
    "PrivacyPlan",
    "SolverResult",
    "make_rng",
    "dp_gd",
    "dp_sgd",
    "resque",
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
    plan : callable
        ``plan(n_samples, n_params, epsilon, delta, **options)`` -> PrivacyPlan,
        from public inputs only, so an estimator can check a budget against
        the exact event before the solver touches the data.  It takes the
        subset of the solver's options that shape the mechanism.
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
        options=("max_iter", "step_size", "clip_norm", "output", "momentum", "radius"),
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
    )
)

from ._resque import GLOBALLY_LIPSCHITZ_LOSSES, plan_resque, resque  # noqa: E402

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
        options=(
            "batch_size", "radius", "constraint", "tol", "passes", "n_probes", "max_weight",
            "schedule", "max_inner", "restart", "n_jobs",
        ),
    )
)
