"""The solver registry: what each solver is, supports and accepts, in one place.

A solver is added by writing its module (a free function, its ``plan_*`` and
``check_*``) and one :class:`SolverSpec` passed to :func:`register_solver`
(``CONTRIBUTING.md`` walks through it).  Everything else is derived here:

* its options are the keyword parameters of its function, less the arguments
  every solver receives from the estimator (:data:`SOLVER_ARGUMENTS`);
* its plan receives one :class:`SolverCall`, built by :func:`solver_call`
  from the same signature: every keyword argument as the solver sees it, so
  a plan never declares an option (or a default) a second time;
* whether it takes a warm start is whether its function has ``coef_init``;
* the types and ranges of its numeric options come from
  :data:`OPTION_CONSTRAINTS` (shared names) and the spec's own
  ``option_constraints``; an option whose default is True or False is a flag
  (``"boolean"``) unless they say otherwise;
* ``solver="auto"`` is an ordered preference list per estimator, filtered by
  :func:`unsupported_reasons`, the same check that refuses an explicit
  ``solver=`` (:func:`choose_solver`): auto can never pick a solver the
  registry would refuse.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import MappingProxyType

from .._limits import MAX_SCALE, MIN_FRACTION, MIN_SCALE
from .._sklearn_compat import Interval, StrOptions, validate_parameter_constraints

#: Arguments of a solver that its plan does not read from the call: the plan
#: is given its own epsilon and delta (the solver's share), and the others do
#: not shape the mechanism.
NOT_PLANNED = frozenset({"epsilon", "delta", "coef_init", "random_state", "verbose", "plan"})

#: Arguments every solver receives from the estimator (not user options):
#: those its plan does not read, and the problem's shape and penalty.
SOLVER_ARGUMENTS = NOT_PLANNED | {"n_outputs", "alpha", "l1_ratio"}

#: Constraints of a count, a positive public scale and a share of epsilon
#: (for the ``option_constraints`` of specs).
COUNT = Interval(Integral, 1, None, closed="left")
POSITIVE = Interval(Real, MIN_SCALE, MAX_SCALE, closed="both")
FRACTION = Interval(Real, MIN_FRACTION, 1, closed="left")

#: Types and ranges of the options several solvers share
#: (``solver_options`` bypasses the estimators' own parameter validation).
#: Each solver documents what they mean; None is the default where it has one.
#: Options not listed here or in a spec's ``option_constraints`` (strings and
#: structures such as ``sampling`` or ``blocks``) are checked by the solver's
#: ``check``.
OPTION_CONSTRAINTS = {
    **{name: [COUNT, None] for name in ("max_iter", "batch_size", "inner_steps")},
    **{
        name: [POSITIVE, None]
        for name in ("step_size", "clip_norm", "radius", "gradient_tol", "tol", "intercept_bound")
    },
    "snapshot_share": [FRACTION],
    "hessian_share": [Interval(Real, 0, 1, closed="neither"), None],
    "momentum": [StrOptions({"auto", "nesterov"}), None],
    "p": [Interval(Real, 1, 2, closed="both"), None],
}


@dataclass(frozen=True)
class SolverSpec:
    """What a solver is and what it supports.

    Attributes
    ----------
    name : str
        The ``solver=`` name.
    run : callable
        The solver itself: ``run(data, loss, *, n_outputs, alpha, epsilon,
        delta, random_state, verbose, [l1_ratio], [coef_init], **options)``.
    plan : callable
        ``plan(n_samples, n_params, epsilon, delta, call)`` -> PrivacyPlan
        (or None when it needs the released row count and ``n_samples`` is
        None), from public inputs only, so an estimator can check a budget
        against the exact event before the solver touches the data.
        ``call`` is the :class:`SolverCall` of the run it plans
        (built by ``solver_call``, in this module).
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
    sample_weight : bool
        Whether it fits weighted rows (``BoundedData.sample_weight``, each
        sensitivity multiplied by ``BoundedData.weight_bound``).  Estimators
        refuse ``sample_weight`` / ``class_weight`` with the other solvers
        before they reserve the spend.
    option_constraints : dict
        Constraints (scikit-learn's parameter-validation format) of options
        of this solver that :data:`OPTION_CONSTRAINTS` does not list (an
        option whose default is True or False needs none: it is a flag,
        ``"boolean"``; a ``constraint`` option takes the names of
        ``constraints``).
    dask : bool
        Whether it fits on Dask arrays (every release a full-batch sum over
        row chunks, :mod:`sklearn_dp._dask`); other solvers refuse Dask
        input before the spend.
    noise_warning : tuple of float or None
        ``(regression, classification)`` thresholds on the public proxy of
        the excess loss its step noise causes, above which a fit warns that
        the noise likely swamps the signal
        (:mod:`sklearn_dp.solvers._noise_warnings`); measured on the
        benchmark.  None: no such warning.
    bound_warning : float or None
        Threshold on the public excess-risk bound of an l1-ball solver
        (relative to the trivial model) above which a fit warns; None: none.
    event_reads_bounds : bool
        Whether the event of a plan made before the row count is known
        (``n_samples=None``) may change with the rows' and labels' bounds,
        through the plan's inputs derived from them (``loss``,
        ``row_norm_bound``, ``radius``, options computed from the bounds).
        False only for a solver whose plans read those inputs for the
        details its run uses, or for step counts that also need the row
        count (no plan before it).  A fit that releases its bounds
        (``"auto"``) reports the privacy curve of its event only when this
        is False (:func:`sklearn_dp.privacy_report`); True, the safe
        default, reports its recorded guarantee instead.
    """

    name: str
    run: Callable
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
    check: Callable | None = None
    sample_weight: bool = False
    option_constraints: dict = field(default_factory=dict, hash=False)
    dask: bool = False
    noise_warning: tuple | None = None
    bound_warning: float | None = None
    event_reads_bounds: bool = True

    # Read off the signature once per spec (estimators consult them on every fit).
    @functools.cached_property
    def call_defaults(self) -> MappingProxyType:
        """The arguments its plan receives (:class:`SolverCall`), at the defaults of its signature."""
        # Solvers are ``function(data, loss, *, ...)``: everything after the star.
        parameters = inspect.signature(self.run).parameters.values()
        planned = (p for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in NOT_PLANNED)
        return MappingProxyType({p.name: p.default for p in planned})

    @functools.cached_property
    def options(self) -> tuple:
        """The options a user may set (``solver_options`` or estimator parameters)."""
        return tuple(name for name in self.call_defaults if name not in SOLVER_ARGUMENTS)

    @functools.cached_property
    def takes_plan(self) -> bool:
        """Whether it runs a plan computed for it (``plan=``) instead of planning itself."""
        return "plan" in inspect.signature(self.run).parameters

    @functools.cached_property
    def warm_start(self) -> bool:
        """Whether it takes a starting point ``coef_init`` (an estimator's ``warm_start``)."""
        return "coef_init" in inspect.signature(self.run).parameters

    def constraints_of(self, options) -> dict:
        """The validation constraints of those of ``options`` that have one (flags: ``"boolean"``).

        A ``constraint`` option takes the names of :attr:`constraints` (and None
        when it optimises unconstrained too), so each solver declares its sets once.
        """
        defaults = self.call_defaults
        derived = {key: ["boolean"] for key in defaults if isinstance(defaults[key], bool)}
        if "constraint" in defaults:
            names = StrOptions(set(self.constraints) - {None})
            derived["constraint"] = [names, None] if None in self.constraints else [names]
        table = {**derived, **OPTION_CONSTRAINTS, **self.option_constraints}
        return {key: table[key] for key in options if key in table}


class SolverCall:
    """The keyword arguments of one call of a solver, as its plan reads them (read-only).

    Built by ``solver_call`` (in this module), the one place that knows what a plan
    receives: each keyword-only parameter of the solver's function (less
    :data:`NOT_PLANNED`) at the value of the call, or at the default of the
    solver's signature, and the public stand-ins ``loss`` (the loss with the
    public bounds), ``row_norm_bound`` (the rows' public bound) and
    ``feature_bound`` (their public entrywise bounds, or None).
    ``alpha`` is None when the strength scales with the private row count
    and the count is not released yet.  Read them as attributes:
    ``call.max_iter``.

    A call remembers which arguments were read from it (:attr:`read`, for
    the calls :meth:`watched` returns): a plan is a function of the values
    it reads, so the estimators reuse a plan for a call that agrees on them
    (:meth:`values_of`).
    """

    __slots__ = ("_values", "_read")

    def __init__(self, values, *, read=None):
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))
        object.__setattr__(self, "_read", read)

    def __getattr__(self, name):  # the slots are found before it is called
        if name.startswith("_") or name not in self._values:
            raise AttributeError(f"A solver call has no argument {name!r}.")
        if self._read is not None:
            self._read.add(name)
        return self._values[name]

    def __setattr__(self, name, value):
        raise AttributeError("A solver call is read-only.")

    def __repr__(self):
        shown = ", ".join(f"{k}={v!r}" for k, v in sorted(self._values.items()))
        return f"SolverCall({shown})"

    def replace(self, **changes):
        """The same call with the arguments ``changes`` set (a new, unwatched call)."""
        return SolverCall({**self._values, **changes})

    def watched(self):
        """The same arguments, recording in :attr:`read` the names read from them."""
        return SolverCall(self._values, read=set())

    @property
    def read(self) -> frozenset:
        """The names read from a :meth:`watched` call so far."""
        return frozenset(self._read or ())

    def values_of(self, names) -> dict:
        """The values of the arguments ``names`` (not recorded as read)."""
        return {name: self._values.get(name) for name in names}


def solver_call(
    spec, options, *, n_outputs, alpha, loss, row_norm_bound, feature_bound=None
) -> SolverCall:
    """The :class:`SolverCall` a plan of ``spec`` receives, from public inputs only.

    Parameters
    ----------
    spec : SolverSpec
        The solver.
    options : mapping
        Its keyword arguments as the call passes them (the estimator's
        options, or a direct call's ``locals()``); names that are not
        keyword parameters of the solver are ignored, the others missing
        take the default of the solver's signature.
    n_outputs : int
        Columns of the coefficient matrix.
    alpha : float or None
        The penalty strength; None when it scales with the private row count
        and the count is not released yet.
    loss : loss object or None
        The loss with its public constants (the estimators build it from a
        bounding of zero rows, which carries the public bounds only).
    row_norm_bound : float or None
        The rows' public bound.
    feature_bound : ndarray or None
        The public entrywise bound of each column (intercept included) when
        the rows are bounded entrywise, else None.

    Returns
    -------
    SolverCall
    """
    values = {name: options.get(name, default) for name, default in spec.call_defaults.items()}
    values.update(n_outputs=n_outputs, alpha=alpha, loss=loss, row_norm_bound=row_norm_bound)
    return SolverCall(dict(values, feature_bound=feature_bound))


def check_declared_options(solver, options):
    """Raise a ValueError for an option of ``solver`` outside its declared type or range.

    The estimators validate ``solver_options`` against these constraints
    (:data:`OPTION_CONSTRAINTS` and a spec's ``option_constraints``) before
    they reserve the spend; direct calls of a solver, its ``plan`` and its
    ``check`` run the same validation here, so each range is declared once.

    Parameters
    ----------
    solver : str
        A registered solver name.
    options : dict
        Option names and values (public inputs); names without a declared
        constraint are left to the solver's own checks.
    """
    constraints = SOLVERS[solver].constraints_of(options)
    validate_parameter_constraints(
        constraints, {key: options[key] for key in constraints}, caller_name=solver
    )


def plan_call(
    solver,
    n_samples,
    n_params,
    epsilon,
    delta,
    *,
    n_outputs=1,
    alpha=0.0,
    loss=None,
    row_norm_bound=None,
    feature_bound=None,
    **options,
):
    """The privacy plan of a call of ``solver``, from public inputs only.

    The public way to plan a fit outside an estimator (tests, research):
    the options are checked against the registry's declared types and
    ranges, as an estimator checks ``solver_options``, then the solver's
    plan receives the :class:`SolverCall` the solver would see.

    Parameters
    ----------
    solver : str
        A registered solver name.
    n_samples : float or None
        Public stand-in for the row count (an estimator's DP count); None
        before it is released (plans that need it return None).
    n_params : int
        Number of coefficients, all outputs (the intercept column included).
    epsilon, delta : float
        The guarantee the plan meets; ``epsilon=inf`` gives a noiseless plan.
    n_outputs : int, default=1
        Columns of the coefficient matrix.
    alpha : float or None, default=0.0
        The penalty strength (None: it scales with a row count not released yet).
    loss : loss object, default=None
        The loss with its public constants (plans that need it refuse None).
    row_norm_bound : float, default=None
        The rows' public bound (plans that need it refuse None).
    feature_bound : ndarray, default=None
        The rows' public entrywise bounds, intercept column included (plans
        that need them refuse None).
    **options
        The solver's options (and ``l1_ratio`` for the solvers that take it);
        the others are at the defaults of its signature.

    Returns
    -------
    PrivacyPlan or None
        None when the plan needs the released row count and ``n_samples``
        is None.

    Raises
    ------
    ValueError
        For an unknown solver or option, or an option outside its declared
        type or range.

    Examples
    --------
    >>> from sklearn_dp.solvers import plan_call
    >>> plan_call("dp_gd", 1000, 10, 1.0, 1e-5, max_iter=5).n_steps
    5
    """
    spec = get_solver(solver)
    unknown = sorted(set(options) - set(spec.call_defaults))
    if unknown:
        raise ValueError(
            f"{unknown} are not options of solver={solver!r}; it accepts {sorted(spec.options)}."
        )
    check_declared_options(solver, options)
    public = dict(n_outputs=n_outputs, alpha=alpha, loss=loss, row_norm_bound=row_norm_bound)
    call = solver_call(spec, options, feature_bound=feature_bound, **public)
    return spec.plan(n_samples, n_params, epsilon, delta, call)


_REGISTRY: dict[str, SolverSpec] = {}

#: The registered solvers by name, read-only (add one with :func:`register_solver`).
SOLVERS = MappingProxyType(_REGISTRY)


def register_solver(spec: SolverSpec) -> SolverSpec:
    """Add a solver to the registry (names are unique)."""
    if spec.name in SOLVERS:
        raise ValueError(f"A solver named {spec.name!r} is already registered.")
    parameters = inspect.signature(spec.run).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in parameters):
        raise ValueError(
            f"{spec.name}: a solver function declares each option as a keyword-only "
            "parameter (its options are read off its signature), not **kwargs."
        )
    try:
        inspect.signature(spec.plan).bind(None, 1, 1.0, 0.0, None)
    except TypeError:
        raise ValueError(
            f"{spec.name}: a plan takes (n_samples, n_params, epsilon, delta, call); its "
            "options are read from the call (a SolverCall), not declared as parameters."
        ) from None
    unknown = sorted(set(spec.option_constraints) - set(spec.options))
    if unknown:
        raise ValueError(
            f"{spec.name}: option_constraints names {unknown}, which are not keyword "
            "parameters of its function."
        )
    _REGISTRY[spec.name] = spec
    return spec


def unregister_solver(name: str) -> SolverSpec:
    """Remove the solver ``name`` from the registry (e.g. one registered for an experiment)."""
    get_solver(name)
    return _REGISTRY.pop(name)


def registered_solvers(**wanted) -> list:
    """The specs of the registered solvers, in registration order.

    ``wanted``: attribute values they must have, e.g. ``dask=True``.
    """
    return [s for s in SOLVERS.values() if all(getattr(s, k) == v for k, v in wanted.items())]


def get_solver(name: str) -> SolverSpec:
    """The registered solver ``name``, or a ValueError listing the known ones."""
    try:
        return SOLVERS[name]
    except KeyError:
        known = ", ".join(sorted(SOLVERS))
        raise ValueError(f"Unknown solver {name!r}. Known solvers: {known}.") from None


def unsupported_reasons(
    spec, *, loss, penalty, delta, multiclass=False, sparse=False, constraint=None
) -> list[str]:
    """What ``spec`` cannot fit in this problem (empty when it fits).

    ``delta=None`` skips the privacy-mode checks (a noiseless reference fit).
    """
    supported = {"loss": spec.losses, "penalty": spec.penalties, "constraint": spec.constraints}
    given = {"loss": loss, "penalty": penalty, "constraint": constraint}
    problems = [
        f"{key}={given[key]!r} (it supports {sorted(values, key=str)})"
        for key, values in supported.items()
        if given[key] not in values
    ]
    if multiclass and not spec.multiclass:
        problems.append("more than two classes")
    if sparse and not spec.sparse:
        problems.append("sparse input (convert with X.toarray())")
    if delta is not None and delta == 0 and not spec.pure_dp:
        problems.append("delta=0 (it needs delta > 0: pure epsilon-DP is not possible with it)")
    if delta is not None and delta > 0 and not spec.approximate_dp:
        problems.append("delta > 0 (it is a pure epsilon-DP solver: set delta=0)")
    return problems


def _hint(problem_for, advice, changes):
    """The registered solvers that fit (then ``advice``), or the ``changes`` to make when none does."""
    fitting = [s.name for s in SOLVERS.values() if not unsupported_reasons(s, **problem_for(s))]
    if fitting:
        return f" Solvers that fit: {', '.join(fitting)}{advice}."
    return f" No registered solver fits this combination; change the {changes}."


def check_solver_supports(spec, *, estimator, **problem):
    """Raise a ValueError that says what to do when ``spec`` cannot fit this problem.

    ``problem``: the keywords of :func:`unsupported_reasons`.
    """
    problems = unsupported_reasons(spec, **problem)
    if problems:
        raise ValueError(
            f"{estimator}: solver={spec.name!r} does not support "
            + "; ".join(problems)
            + "."
            + _hint(lambda spec: problem, " (or solver='auto')", "loss, penalty or delta")
        )


@dataclass(frozen=True)
class AutoChoice:
    """One entry of an estimator's ``auto`` preference list.

    Attributes
    ----------
    solver : str
        A registered solver name.
    when : callable or None
        ``when(estimator, problem, public) -> bool`` from public inputs only
        (parameters, the public problem and :class:`PublicSetting`, never the
        data or the row count: ``solver_`` is released).  None: always.
    why : str
        The measured reason for its place in the list (shown in the docs).
    """

    solver: str
    when: Callable | None = None
    why: str = ""


def choose_solver(preferences, *, estimator, context, problem_for) -> str:
    """The first solver in ``preferences`` whose condition holds and that fits its problem.

    Parameters
    ----------
    preferences : sequence of AutoChoice
        The estimator's ordered list.
    estimator : str
        Estimator name for the error message.
    context : tuple
        ``(estimator_object, problem_object, public)``, handed to the conditions.
    problem_for : callable
        ``problem_for(spec)`` -> the keywords of :func:`unsupported_reasons`
        for the problem the estimator would give that solver (DPLasso's form,
        penalised or constrained, depends on the solver).

    Raises
    ------
    ValueError
        When no entry fits, naming why each was passed over and the
        registered solvers that fit, if any.
    """
    passed_over = []
    for choice in preferences:
        spec = get_solver(choice.solver)
        if choice.when is not None and not choice.when(*context):
            continue
        reasons = unsupported_reasons(spec, **problem_for(spec))
        if not reasons:
            return choice.solver
        passed_over.append(f"{choice.solver}: {'; '.join(reasons)}")
    raise ValueError(
        f"{estimator}: solver='auto' found no solver for this problem ("
        + " | ".join(passed_over)
        + ")."
        + _hint(problem_for, "; pass one as solver=", "loss, penalty, constraint or delta")
    )
