"""The privacy protocol of every fit: plan, reserve, private phase, count, re-plan, run, complete.

Estimators, the DP scalers and the DP searches all follow it:

1. *Plan* (public inputs only).  The fit's :class:`FitPlan` is computed once,
   before the data is read: the solver, its validated options, the shares of
   epsilon and delta, the solver's own plan and the whole fit's ``DpEvent``.
   The true row count is never part of it (under add/remove neighbouring it
   is private).  A search asks each candidate for its plan
   (``_fit_plan``) instead of fitting it.  A plan whose noise the exact
   samplers cannot draw is refused here (:func:`check_sampler_range`).
2. *Reservation* (:func:`open_phase`).  The plan's exact spend is reserved on
   the budget, atomically, before the first read of a private value.  From
   then on the spend stands.
3. *Private phase* (:class:`PrivatePhase`), with the fit's charged stream
   (:func:`sklearn_dp._random.fit_generator`, keyed on the ledger entry).
   Nothing escapes it but released values: numerical warnings are silenced,
   the library's own warnings are deferred, an exception not marked public
   (:func:`~sklearn_dp._public_errors.public_error`) is replaced by
   :class:`~sklearn_dp.exceptions.PrivateFitError`.
4. *Count and bounds*: the row count (:func:`release_count`) and the
   ``"auto"`` bounds are released.
5. *Re-plan* (:meth:`SolverPlanner.after_release`): where the solver's plan
   depends on released values (the count, the released bounds or label
   set), it is planned again from them, once.
6. *Run*, then *completion*: the reservation is completed with the fit's
   final event, or marked failed if anything raised.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import math
import os
import threading
import warnings
from dataclasses import dataclass, field
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe

from . import _noise, _noise_grids, _random
from ._limits import MAX_EPSILON, MIN_EPSILON
from ._memo import memoize
from ._saving import keep_entries
from ._sklearn_compat import Interval, Options
from ._warnings import user_stacklevel
from .accounting import largest_share, mixture_delta
from .budget import PrivacyBudget
from .exceptions import PrivacyLeakWarning, PrivateFitError

#: When the running fit's private phase began (``time.perf_counter``): one
#: clock for the estimator's and the solver's progress lines; None outside a fit.
FIT_CLOCK = contextvars.ContextVar("fit_clock", default=None)

__all__ = [
    "FIT_CLOCK",
    "PRIVACY_PARAMETER_CONSTRAINTS",
    "FitPlan",
    "SolverPlanner",
    "PrivatePhase",
    "PrivateCount",
    "COUNT_EPSILON_FRACTION",
    "COUNT_UPPER_SCALES",
    "release_count",
    "reserve",
    "open_phase",
    "record_spend",
    "check_sampler_range",
    "debug_mode",
    "restore_on_failure",
    "GROUP_SOLVERS",
    "check_groups",
    "check_group_options",
    "check_group_solver",
    "group_codes",
    "kept_group_rows",
    "warn_unused_group_bound",
    "unit_of_privacy",
]


#: Constraints of the privacy parameters every private fit takes (estimators
#: and DP transformers); epsilon=inf is the same fit without noise.
PRIVACY_PARAMETER_CONSTRAINTS = {
    "epsilon": [
        Interval(Real, MIN_EPSILON, MAX_EPSILON, closed="both"),
        Options(Real, {math.inf}),
    ],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "budget": [PrivacyBudget, None],
    "random_state": ["random_state", np.random.Generator, _random.SecretStream],
    # The most rows one group contributes with fit(..., groups=...) (public).
    "max_group_rows": [Interval(Integral, 1, None, closed="left"), None],
}


@dataclass(frozen=True, eq=False)
class FitPlan:
    """What a fit will do and spend, computed once from public inputs only.

    Computed before the reservation from the parameters, the input's public
    schema (number of features, type, sparsity) and public stand-ins for the
    row count, never from the true row count or a private value; the fit
    reserves :attr:`event` and hands the plan down to its private phase.

    Attributes
    ----------
    owner : str
        Who fits (the class name, recorded in the ledger).
    solver : str or None
        The resolved solver (None for the scalers).
    options : dict
        The solver's validated keyword options (the scalers' public settings).
    epsilon, delta : float
        The whole fit's guarantee.
    private : bool
        Whether the fit is private (finite epsilon).
    shares : dict
        How epsilon and delta are split: ``"labels"`` (epsilon, delta),
        ``"count"`` epsilon, ``"bounds"`` (epsilon of the rows' bound,
        epsilon of the labels' bound), ``"solver"`` (epsilon, delta) of the
        solver before the data (the scalers list their own parts).
    solver_plan : PrivacyPlan or None
        The solver's plan at its share (None when it needs released values,
        such as the row count, and for the scalers).
    event : DpEvent or None
        The whole fit's event as known before the data (None when the
        solver's plan is not known yet: the budget then charges the
        guarantee itself).
    fixed : bool
        Whether :attr:`event` is fixed before the data whatever the fit
        releases: no parameter of any of its mechanisms can depend on a
        released value (the row count, released bounds, a released label
        set).  Only then do its releases compose as a fixed sequence, whose
        privacy curve is that of the event's privacy-loss distribution
        (:func:`sklearn_dp.privacy_report`).  Set by the planner, never
        inferred from the event a fit ends with.
    max_group_rows : int or None
        The unit of privacy: None for one row; ``k`` for one group of at
        most ``k`` rows (a fit with ``groups=``).  Every release of the
        private phase then has ``k`` times its row-level sensitivity and
        noise (:func:`sklearn_dp._noise.contribution_bound`), so
        :attr:`event` holds under "add or remove one group".
    context : dict
        What the fit's private phase needs besides (public values only).
    """

    owner: str
    solver: str | None
    options: dict
    epsilon: float
    delta: float
    private: bool
    shares: dict
    solver_plan: object = None
    event: dpe.DpEvent | None = None
    fixed: bool = False
    max_group_rows: int | None = None
    context: dict = field(default_factory=dict, hash=False, compare=False, repr=False)

    def __eq__(self, other):
        # By value (options may hold arrays); the context is not compared.
        if not isinstance(other, FitPlan):
            return NotImplemented
        return _key(self) == _key(other)

    __hash__ = None

    @property
    def privacy_spent(self):
        """``(epsilon, delta)`` the fit guarantees (``(inf, 0)`` without noise)."""
        return (float(self.epsilon), float(self.delta)) if self.private else (math.inf, 0.0)


def _key(value):
    """A hashable value key of plan arguments (losses compared by type and parameters)."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_key(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, frozenset(_key(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = tuple(
            (f.name, _key(getattr(value, f.name))) for f in dataclasses.fields(value) if f.compare
        )
        return (type(value).__qualname__, fields)
    if hasattr(value, "__attrs_attrs__"):  # dp_accounting's events
        fields = tuple((a.name, _key(getattr(value, a.name))) for a in value.__attrs_attrs__)
        return (type(value).__qualname__, fields)
    if type(value).__eq__ is object.__eq__ and hasattr(value, "__dict__"):
        # Objects without a value equality (the losses): their type and parameters.
        return (type(value).__qualname__, _key(vars(value)))
    try:
        hash(value)
    except TypeError:
        return ("unique", id(value))  # never equal to another object's key
    return (type(value).__name__, value)


# A plan not computed yet (None is a plan: "not known before the count").
_NOT_PLANNED = object()


class SolverPlanner:
    """The solver's share of a fit and its plans, each computed at most once per fit.

    ``arguments(problem, n_public, bounds, options)`` returns ``(n_params,
    call)``, the public inputs of the solver's ``plan`` (the estimator builds
    them; ``call`` is a :class:`~sklearn_dp.solvers.SolverCall`);
    ``plan(n_public, n_params, epsilon, delta, call)`` is the solver's plan
    function.  A plan is a function of the arguments it reads, so a call
    that agrees with an earlier one on those gets the earlier plan.

    The share is the largest one whose composition with what runs before (the
    count and the bounds) meets the fit's guarantee, certified numerically
    (:func:`~sklearn_dp.accounting.largest_share`), at least the
    basic-composition ``floor``.  Numerical composition is valid only for a
    mechanism fixed before the data; a plan that changes with released
    values (a sampling rate from the noisy count, steps from released bounds)
    is fully adaptive and gets the ``floor``.

    The branch may depend on released values, so a fit is a mixture: the
    numerical branch runs one mechanism ``A`` (its share searched at the
    placeholders) whose composition with the count and bounds is certified,
    and the floor's ``B`` gets a delta at which its curve exceeds ``A``'s by
    no more than ``A`` leaves of delta on ``[floor, 2 epsilon - floor]``
    (:func:`~sklearn_dp.accounting.mixture_delta`; argument in the privacy
    model guide).  Gaussian ``B``s never need a cut.

    A plan before the data (``n_public=None``, placeholder bounds) is either
    None (it needs released values) or the plan the released values give for
    the same problem and options: so when the problem and options did not
    change, one plan from the released values confirms the share planned
    before the data (:meth:`after_release`).  The share stands only if that
    plan's event is the one planned before the data; otherwise the search
    runs again from the released values, so the guarantee never rests on
    this property (only the number of plans computed does).

    :attr:`fixed` says whether the solver's event cannot depend on released
    values: its plan before the data exists (it needs no count), the caller
    declared that no released value enters the plan's inputs
    (``before_data(..., public_inputs=True)``), and the share planned before
    the data stood.  It is decided from the plan and its inputs, never from
    an event that merely equals the planned one.
    """

    def __init__(self, plan, arguments, *, epsilon, delta, floor):
        self._plan = plan
        self._arguments = arguments
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.floor = float(floor)
        self._plans = {}
        self._before = None
        self._planned_bounds = None
        #: Whether the solver's event cannot depend on a released value.
        self.fixed = False

    def for_solver(self, plan, arguments):
        """A planner of the same shares for another solver (chosen from released values)."""
        planner = SolverPlanner(
            plan, arguments, epsilon=self.epsilon, delta=self.delta, floor=self.floor
        )
        planner._planned_bounds = self._planned_bounds
        return planner

    def _planned(self, arguments, n_public, epsilon, delta=None):
        """``(slot, plan)``: the plans at these inputs, and the one for this call if computed."""
        n_params, call = arguments
        delta = self.delta if delta is None else float(delta)
        slot = self._plans.setdefault((n_params, _key(n_public), float(epsilon), delta), [])
        for read, values, plan in slot:
            if _key(call.values_of(read)) == values:
                return slot, plan
        return slot, _NOT_PLANNED

    def plan(self, arguments, n_public, epsilon, delta=None):
        """The solver's plan for ``arguments = (n_params, call)`` (computed once)."""
        delta = self.delta if delta is None else float(delta)
        slot, plan = self._planned(arguments, n_public, epsilon, delta)
        if plan is _NOT_PLANNED:
            call = arguments[1].watched()
            plan = self._plan(n_public, arguments[0], epsilon, delta, call)
            slot.append((call.read, _key(call.values_of(call.read)), plan))
        return plan

    def _event(self, arguments, n_public, epsilon, delta=None):
        plan = self.plan(arguments, n_public, epsilon, delta)
        return None if plan is None else plan.event

    def _search(self, arguments, n_public, prefix):
        return largest_share(
            lambda share: self._event(arguments, n_public, share),
            prefix,
            self.epsilon,
            self.delta,
            self.floor,
        )

    def before_data(self, problem, bounds, options, prefix, *, public_inputs=False):
        """``(share, plan)`` from public inputs (``bounds``: the placeholders).

        ``public_inputs``: no value released by the fit (its bounds, its label
        set) can change the plan's event; with a plan that needs no count,
        the solver's event is then :attr:`fixed` before the data.
        """
        arguments = self._arguments(problem, None, bounds, options)
        share = self._search(arguments, None, prefix)
        self._before = (_key(prefix), share)
        self._planned_bounds = bounds
        plan = self.plan(arguments, None, share)
        self.fixed = bool(public_inputs) and plan is not None
        return share, plan

    def after_release(self, problem, n_public, bounds, options, prefix):
        """``(share, plan)`` once the count and the bounds are released.

        ``plan`` is the solver's plan from the released values at ``share``:
        the solver runs it as it is (it never plans again), so the event it
        reports is the one this share was certified for.
        """
        try:
            share, delta = self._after_release(problem, n_public, bounds, options, prefix)
            released = self._arguments(problem, n_public, bounds, options)
            return share, self.plan(released, n_public, share, delta)
        finally:
            # The plans are not needed while the solver runs (a plan's event
            # can be large: one entry per step).
            self._plans.clear()

    def _after_release(self, problem, n_public, bounds, options, prefix):
        released = self._arguments(problem, n_public, bounds, options)
        at_placeholders = self._arguments(problem, None, self._planned_bounds, options)
        # The event stays fixed only if the share and plan made before the
        # data run as they are (a plan that disagrees breaks a solver's
        # contract: then nothing is claimed beyond the guarantee).
        fixed, self.fixed = self.fixed, False
        if self._before is None:  # another solver than planned: nothing to confirm
            return self._full_search(released, at_placeholders, n_public, prefix)
        before_prefix, before_share = self._before
        _, before = self._planned(at_placeholders, None, before_share)
        if before is not _NOT_PLANNED and _key(prefix) == before_prefix:
            # The same problem and options as before the data (as far as the
            # plan reads them): the share planned then stands if the plan
            # from released values agrees.
            before = None if before is None else before.event
            if before is None and before_share == self.floor:
                # No plan before the count: every released value gets the floor.
                self.plan(released, n_public, self.floor)
                return self.floor, self.delta
            if before is not None and self._event(released, n_public, before_share) == before:
                self.fixed = fixed
                return before_share, self.delta
        return self._full_search(released, at_placeholders, n_public, prefix)

    def after_skipped_releases(
        self, problem, n_public, bounds, options, decision, skipped, rest, decision_epsilon
    ):
        """``(share, plan)`` of a branch that skips releases the plan charged, or None.

        The fit planned, and charged, ``decision + skipped + rest`` before the
        solver (branch ``A``: its share is searched at the placeholders, as in
        :meth:`after_release`).  The released outputs of ``decision`` (pure
        DP: a row count, the count that decides whether to scale) picked a
        branch ``B`` that runs ``decision + rest`` and not ``skipped``; its
        share is the largest whose composition with ``decision + rest`` is
        certified, also at the placeholders.  The fit is then a mixture of
        ``A`` and ``B`` picked by ``decision`` (pure
        ``decision_epsilon``-DP); ``B``, one mechanism for
        every output, is the reference of
        :func:`~sklearn_dp.accounting.mixture_delta` and ``A`` the other
        branch (the argument in the privacy model guide).  Returned only when
        that bound meets the fit's delta and both branches' solver events
        cannot depend on released values (a plan before the count that the
        released values confirm; the caller checks that the event reads no
        released bound); otherwise None, and the branch keeps the charged
        share and event, which cover it (it runs fewer mechanisms).
        """
        released = self._arguments(problem, n_public, bounds, options)
        at_placeholders = self._arguments(problem, None, self._planned_bounds, options)
        decision, skipped, rest = list(decision), list(skipped), list(rest)
        charged = self._search(
            at_placeholders, None, dpe.ComposedDpEvent(decision + skipped + rest)
        )
        share = self._search(at_placeholders, None, dpe.ComposedDpEvent(decision + rest))
        if share <= charged:
            return None
        # Both solvers' events are the ones planned before the data (a
        # solver's plan before the count is the one released values give).
        charged_event = self._event(at_placeholders, None, charged)
        event = self._event(at_placeholders, None, share)
        if None in (charged_event, event) or self._event(released, n_public, share) != event:
            return None
        # (A smaller share does not help: the bound's first term falls with
        # it, but the other branch's excess over this one grows.)
        if decision and (
            _branch_mixture_delta(
                dpe.ComposedDpEvent(decision),
                dpe.ComposedDpEvent(rest + [event]),
                dpe.ComposedDpEvent(skipped + rest + [charged_event]),
                self.epsilon,
                decision_epsilon,
            )
            > self.delta
        ):
            return None
        self.fixed = False
        plan = self.plan(released, n_public, share)
        # Not needed while the solver runs (None leaves them to after_release).
        self._plans.clear()
        return share, plan

    def _full_search(self, released, at_placeholders, n_public, prefix):
        # The problem or options changed with released values (a label set,
        # a label scale), or the plan from released values disagrees with the
        # one before the data.  The share is searched at the placeholders, so
        # the numerical branch is one mechanism for all released counts and bounds.
        floor = self.floor
        if self._event(released, n_public, floor) != self._event(at_placeholders, None, floor):
            # The profile is chosen from released values: the floor, whatever
            # the search would certify (each candidate is a calibration).
            return self._floor_branch(released, at_placeholders, n_public, prefix)
        share = self._search(at_placeholders, None, prefix)
        if share <= floor:
            return share, self.delta
        # A profile chosen from released values gets the floor (see the class).
        if self._event(released, n_public, share) == self._event(at_placeholders, None, share):
            return share, self.delta
        return self._floor_branch(released, at_placeholders, n_public, prefix)

    def _floor_branch(self, released, at_placeholders, n_public, prefix):
        """``(floor, delta)`` of the basic-composition branch, its delta lowered where it must be.

        When other released values would run the numerical share's mechanism
        (the class docstring), this branch's delta is cut by 4 until
        :func:`~sklearn_dp.accounting.mixture_delta` certifies the mixture.
        """
        floor, delta = self.floor, self.delta
        fixed = None
        if self._event(at_placeholders, None, floor) is not None:
            share = self._search(at_placeholders, None, prefix)
            fixed = self._event(at_placeholders, None, share) if share > floor else None
        for _ in range(_FLOOR_DELTA_CUTS):
            event = self._event(released, n_public, floor, delta)
            if fixed is None or event is None:
                return floor, delta
            bound = mixture_delta(prefix, fixed, event, self.epsilon, self.epsilon - floor)
            if bound <= self.delta:
                return floor, delta
            delta *= 0.25
        raise ValueError(
            "The solver's plan from the released values cannot be composed with the plan "
            "certified before the data at the fit's guarantee: register the solver with "
            "event_reads_bounds=False if its event ignores the bounds, or give the bounds."
        )


class _ByValue:
    """An event compared and hashed by value (dp_accounting's composed events hold lists)."""

    def __init__(self, event):
        self.event, self._key = event, _key(event)

    def __eq__(self, other):
        return isinstance(other, _ByValue) and self._key == other._key

    def __hash__(self):
        return hash(self._key)


def _branch_mixture_delta(decision, reference, other, epsilon, decision_epsilon):
    """:func:`~sklearn_dp.accounting.mixture_delta`, once per public plan (a PLD each call)."""
    return _cached_mixture_delta(
        _ByValue(decision), _ByValue(reference), _ByValue(other), epsilon, decision_epsilon
    )


@memoize(maxsize=256)
def _cached_mixture_delta(decision, reference, other, epsilon, decision_epsilon):
    return mixture_delta(decision.event, reference.event, other.event, epsilon, decision_epsilon)


#: How many times the basic-composition branch's delta may be cut by 4 before a fit refuses.
_FLOOR_DELTA_CUTS = 12


def _noise_multipliers(event):
    """The noise multipliers of the Gaussian and Laplace mechanisms in ``event``, at any depth."""
    if isinstance(event, (dpe.GaussianDpEvent, dpe.LaplaceDpEvent)):
        yield float(event.noise_multiplier)
        return
    for attribute in getattr(event, "__attrs_attrs__", ()):
        value = getattr(event, attribute.name)
        for part in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(part, dpe.DpEvent):
                yield from _noise_multipliers(part)


def check_sampler_range(event, owner):
    """Refuse, before the reservation, a plan whose noise the exact samplers cannot draw.

    The noise gateway puts a release's noise on a grid of at most
    ``MAX_SAMPLER_STEPS`` steps and refuses a release beyond it (in the
    private phase, as a public error, after the charge).  A Gaussian or
    Laplace release of noise multiplier ``s`` (its noise over its
    sensitivity) takes more than ``s * (1 + SCALE_MARGIN)`` steps, whatever
    its size and sensitivity (the grid's own steps come on top), so a plan
    whose event holds such a multiplier beyond that range would be refused
    for certain: it is refused here, from public inputs, and spends nothing.
    This rests on each solver's event recording, for each of its Gaussian and
    Laplace mechanisms, a multiplier at most the noise over the sensitivity
    of the releases it describes (checked for every registered solver in
    ``tests/test_protocol.py``).  Scales known only from released values
    are still refused by the gateway, in the private phase.
    """
    if event is None:
        return
    limit = _noise_grids.MAX_SAMPLER_STEPS / (1.0 + _noise_grids.SCALE_MARGIN)
    largest = max(_noise_multipliers(event), default=0.0)
    if largest > limit:
        steps = _noise_grids.MAX_SAMPLER_STEPS.bit_length() - 1
        raise ValueError(
            f"{owner}: this fit's plan has noise {largest:.3g} times the sensitivity of a "
            f"release, beyond the exact samplers' range (2**{steps} grid steps): epsilon, or "
            "the share of it a solver option gives a release, is far too small to learn "
            "anything. Ask for a larger epsilon or share. Nothing was spent."
        )


def ledger_name(plan):
    """Who spends, as the ledger records it: the owner, with its unit when it is not one row.

    A group-level fit's entry says so (the ledger has no column of its own
    for the unit): ``"DPLogisticRegression (add or remove one group of at
    most 5 rows)"``.
    """
    if plan.max_group_rows is None:
        return plan.owner
    return f"{plan.owner} ({unit_of_privacy(plan.max_group_rows)})"


def reserve(budget, plans):
    """Reserve the spend of each of ``plans`` on ``budget``, in order, before any private read.

    One ledger entry per private plan (None for a noiseless one, and for
    every plan when ``budget`` is None).  If one is refused, those reserved
    before it are marked failed (nothing was read; a reservation cannot be
    taken back) and the refusal is raised.
    """
    reservations = []
    for plan in plans:
        try:
            reservations.append(
                None
                if budget is None or not plan.private
                else budget.reserve(
                    plan.epsilon,
                    plan.delta,
                    event=plan.event,
                    estimator=ledger_name(plan),
                    solver=plan.solver,
                    unit="row" if plan.max_group_rows is None else "group",
                )
            )
        except BaseException as exc:
            for reservation in reservations:
                if reservation is not None:
                    reservation.fail(exc)
            raise
    return reservations


def open_phase(plan, budget, random_state):
    """Reserve ``plan``'s spend and return the fit's :class:`PrivatePhase` (to enter).

    The phase carries the fit's charged stream as ``phase.rng``; the
    reservation, if any, is completed with ``phase.event`` when the phase
    ends, or marked failed.
    """
    (reservation,) = reserve(budget, [plan])
    phase = PrivatePhase(plan.owner, reservation, max_group_rows=plan.max_group_rows)
    phase.rng = _random.fit_generator(
        random_state, private=plan.private, reservation=reservation, owner=plan.owner
    )
    return phase


def record_spend(fitted, plan, event, reservation=None):
    """Set ``dp_event_`` and ``privacy_spent_`` of a fitted object from its plan and final event.

    A copy of the settled ledger entry of ``reservation`` is kept too, for
    :func:`sklearn_dp.privacy_report` (which never reads the budget again),
    with whether the fit's mechanism was fixed before the data
    (:attr:`FitPlan.fixed`, and the planner kept it so through the releases;
    its releases then compose as a fixed sequence).  An event that merely
    equals the planned one is not enough: one chosen from released values
    may happen to.
    """
    fitted.dp_event_ = event if plan.private else dpe.NonPrivateDpEvent()
    fitted.privacy_spent_ = plan.privacy_spent
    planner = plan.context.get("planner")
    fixed = (
        plan.fixed
        and (planner is None or planner.fixed)
        and plan.event is not None
        and plan.event == event
    )
    keep_entries(fitted, [reservation], planned=fixed)


def restore_on_failure(fit):
    """Make ``fit`` all-or-nothing: on any exception the object is left as it was.

    The budget keeps what was reserved (the spend stands); only the fitted
    object's attributes are restored.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return wrapper


def debug_mode():
    """Whether ``SKLEARN_DP_DEBUG`` asks for debugging (``1``, ``true``, ``yes`` or ``on``).

    Any other value (``0``, ``false``, ``no``, ``off``, empty) leaves the
    protection on: a variable set to ``0`` to make sure debugging is off must
    not switch it on.
    """
    value = os.environ.get("SKLEARN_DP_DEBUG", "")
    return value.strip().lower() in ("1", "true", "yes", "on")


def _is_public(exception):
    return bool(getattr(exception, "__sklearn_dp_public__", False))


class _Silence:
    """Every warning silenced while at least one private phase runs, in any thread.

    Warning filters are process-wide: a per-phase ``catch_warnings`` in two
    threads would let one restore the filters while the other still reads
    private data.  One ``catch_warnings`` is entered by the first phase and
    left by the last.  (Warnings of other threads are silenced meanwhile too:
    lost, never leaked.)
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._depth = 0
        self._context = None

    def __enter__(self):
        with self._lock:
            if self._depth == 0:
                self._context = warnings.catch_warnings()
                self._context.__enter__()
                warnings.simplefilter("ignore")
            self._depth += 1

    def __exit__(self, *exc_info):
        with self._lock:
            self._depth -= 1
            if self._depth == 0:
                context, self._context = self._context, None
                context.__exit__(None, None, None)


_SILENCE = _Silence()


class PrivatePhase:
    """The part of a fit that reads private values: nothing escapes it but released values.

    A context manager.  Inside it numpy's floating-point errors are ignored
    and every warning is silenced (numerical warnings of numpy and scipy on
    private quantities would otherwise print them); the library's own
    warnings go through :meth:`warn` and are issued when the phase ends.  On
    an exception the reservation (if any) is marked failed, and an exception
    not marked with :func:`~sklearn_dp._public_errors.public_error` is replaced
    by :class:`~sklearn_dp.exceptions.PrivateFitError` (its message may
    describe private values).  On success the reservation is completed with
    :attr:`event`, after the deferred warnings are issued (a warning turned
    into an error by a filter fails the fit, which stays charged).

    With ``max_group_rows=k`` the unit of privacy is one group of at most
    ``k`` rows: every release inside the phase has ``k`` times its declared
    row-level sensitivity and noise scale (the noise gateway's
    :func:`~sklearn_dp._noise.contribution_bound`).

    Attributes
    ----------
    event : DpEvent or None
        The fit's final event, set by the code inside the phase.
    """

    def __init__(self, estimator_name, reservation, *, max_group_rows=None):
        self.estimator_name = estimator_name
        self.reservation = reservation
        self._unit = _noise.contribution_bound(max_group_rows)
        self.event = None
        self._deferred = []
        self._debug = debug_mode()

    def warn(self, message, category=UserWarning):
        """Issue ``message`` when the phase ends; it must depend on released values only."""
        self._deferred.append((message, category))

    def __enter__(self):
        if self._debug:
            try:
                warnings.warn(
                    f"{self.estimator_name}: SKLEARN_DP_DEBUG is set, so warnings and the "
                    "messages of exceptions that depend on private data reach you: this fit "
                    "is not covered by its privacy guarantee. Unset SKLEARN_DP_DEBUG for "
                    "anything you release.",
                    PrivacyLeakWarning,
                    stacklevel=user_stacklevel(),
                )
            except BaseException as raised:  # a filter turned it into an error
                self._fail(raised)
                raise
        self._errstate = np.errstate(all="ignore")
        self._errstate.__enter__()
        if not self._debug:
            _SILENCE.__enter__()
        self._unit.__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._unit.__exit__(None, None, None)
        if not self._debug:
            _SILENCE.__exit__(None, None, None)
        self._errstate.__exit__(None, None, None)
        if exc is None:
            try:
                for message, category in self._deferred:
                    warnings.warn(message, category, stacklevel=user_stacklevel())
            except BaseException as raised:
                self._fail(raised)
                raise
            if self.reservation is not None:
                self.reservation.complete(self.event)
            return False
        self._fail(exc)
        if not isinstance(exc, Exception) or _is_public(exc) or self._debug:
            return False
        raise PrivateFitError(
            f"{self.estimator_name}.fit failed after its privacy budget was reserved "
            f"({type(exc).__name__}). The spend stands. The original message is withheld "
            "because it may describe private data; set the environment variable "
            "SKLEARN_DP_DEBUG=1 to see it while debugging (that breaks the guarantee)."
        ) from None

    def _fail(self, exc):
        if self.reservation is not None:
            self.reservation.fail(exc)


#: Share of epsilon a private estimator fit spends on a noisy count of its rows.
COUNT_EPSILON_FRACTION = 0.05

#: The normaliser of averages is the noisy count plus this many Laplace
#: scales: an upper confidence bound on n (exceeded with probability
#: exp(-3)/2 < 2.5%), so averaged gradients are not inflated and step sizes
#: computed from public smoothness bounds stay stable.
COUNT_UPPER_SCALES = 3.0


@dataclass(frozen=True)
class PrivateCount:
    """A differentially private stand-in for the number of rows.

    Under add/remove-one neighbouring the number of rows n is itself private:
    dividing a noisy sum by the true n, or deriving a default (a sampling
    rate, a number of steps, an L2 strength 1 / (C n)) from it, releases n.
    Estimators therefore release ``n + Laplace(1 / epsilon_count)`` once per
    fit and use it wherever n would be used.

    Attributes
    ----------
    estimate : float
        ``max(1, n + Laplace(scale))``: for n-dependent hyper-parameters.
    normalizer : float
        ``estimate + COUNT_UPPER_SCALES * scale``: for averaging noisy sums.
    event : dp_accounting.DpEvent
        ``LaplaceDpEvent(scale)`` (a count has sensitivity 1), or a no-op
        event when the count is exact (non-private fits).
    """

    estimate: float
    normalizer: float
    event: dpe.DpEvent


def release_count(n_samples, epsilon_count, rng):
    """Release the number of rows with the Laplace mechanism (pure ``epsilon_count``-DP).

    A count has add/remove-one sensitivity 1.  ``epsilon_count=inf`` returns
    the exact count with a no-op event.
    """
    if np.isinf(epsilon_count):
        # At least one row, as the released estimate (a fit on zero rows runs).
        exact = max(1.0, float(n_samples))
        return PrivateCount(exact, exact, dpe.NoOpDpEvent())
    scale = 1.0 / epsilon_count
    noisy = _noise.laplace(
        float(n_samples), sensitivity=1.0, scale=scale, rng=rng, label="row count"
    )
    estimate = max(1.0, noisy)
    # The margin uses the scale actually added (k times ``scale`` in a group fit).
    upper = estimate + COUNT_UPPER_SCALES * scale * _noise.released_rows()
    return PrivateCount(estimate, upper, dpe.LaplaceDpEvent(scale))


# -- the unit of privacy: one row, or one group of at most k rows ----------------

#: Solvers whose every release is a gateway release with a declared
#: add/remove-one-row sensitivity over full (unsampled) data, so the gateway's
#: group multiplier covers them.  Poisson subsampling and allocation of rows
#: amplify privacy for the unit they sample (rows), and objective
#: perturbation's analysis is per row: those solvers are refused with
#: ``groups=``.  An allow-list: a new solver is refused until it is checked.
GROUP_SOLVERS = frozenset(
    {"dp_gd", "dp_cd", "output_perturbation", "frank_wolfe", "dp_accmd", "dp_newton", "dp_ssp"}
)


def unit_of_privacy(max_group_rows):
    """The neighbouring relation of a fit, in words (``None``: one row)."""
    if max_group_rows is None:
        return "add or remove one row"
    return f"add or remove one group of at most {int(max_group_rows)} rows"


def check_groups(groups, n_rows, max_group_rows, owner):
    """``groups`` as a 1-d array of length ``n_rows``, or a ValueError (public checks only).

    Reads the array's shape, never its values: the group labels are private.
    ``max_group_rows`` (the estimator's parameter) must be set with groups.
    """
    if max_group_rows is None:
        raise ValueError(
            f"{owner}: fit(..., groups=...) needs max_group_rows, the most rows one group "
            "may contribute (rows beyond it are dropped, first rows kept); set it, e.g. "
            f"{owner}(max_group_rows=5). It is public: choose it without looking at the data."
        )
    if sp.issparse(groups) or _dask_like(groups):
        raise ValueError(
            f"{owner}: groups must be a 1-d array (or list) in memory, one label per row."
        )
    groups = np.asarray(groups)
    if groups.ndim != 1 or groups.shape[0] != n_rows:
        raise ValueError(
            f"{owner}: groups must be a 1-d array with one group label per row of X "
            "(the same length as X). Its values are not read before the spend."
        )
    if groups.dtype.kind not in GROUP_LABEL_KINDS:
        # Decided from the dtype alone: object labels (strings mixed with
        # None, NaN, pd.NA or numbers) have no total order, and a sort of
        # them raises or splits one group in many, after the spend.
        raise TypeError(
            f"{owner}: groups has dtype {groups.dtype}; group ids must be numbers, "
            "strings, booleans or dates. Cast group ids to str or int and fill missing "
            "ids first, e.g. groups=np.asarray(ids, dtype=str) or "
            "series.fillna(-1).to_numpy(dtype=int)."
        )
    return groups


def warn_unused_group_bound(max_group_rows, owner):
    """Warn (from public inputs) that ``max_group_rows`` is set but ``fit`` got no ``groups``."""
    if max_group_rows is not None:
        warnings.warn(
            f"{owner}: max_group_rows={max_group_rows!r} is set but fit() got no groups=, so "
            "the unit of privacy is one row, not one group. Pass groups=... (the person of "
            "each row) for a guarantee per person, or leave max_group_rows=None.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )


def _dask_like(value):
    return type(value).__module__.split(".")[0] == "dask"


def check_group_solver(solver, owner, solver_options=None):
    """Refuse, before any spend, a solver or option with no group-level analysis here.

    ``solver_options={"inference": True}`` is refused too: its intervals
    assume independent rows, which the rows of one group are not.
    """
    if solver not in GROUP_SOLVERS:
        raise ValueError(
            f"{owner}: solver={solver!r} does not support groups= (its privacy analysis "
            "samples or allocates rows, or is per row). Solvers that fit with groups: "
            f"{', '.join(sorted(GROUP_SOLVERS))}; pass one as solver=... (or 'auto')."
        )
    check_group_options(solver_options, owner)


def check_group_options(solver_options, owner):
    """Refuse, before any spend, ``solver_options`` with no group-level meaning here."""
    if (solver_options or {}).get("inference"):
        raise ValueError(
            f"{owner}: solver_options={{'inference': True}} does not support groups=: "
            "its standard errors and confidence intervals assume independent rows, and "
            "the rows of one group are not. Fit without inference, or without groups."
        )


#: Dtype kinds accepted for group ids: those where equality is an
#: equivalence that numpy sorts totally (missing values handled by
#: :func:`group_codes`).  Object arrays are refused before the spend.
GROUP_LABEL_KINDS = "biufcUSmM"


def group_codes(groups):
    """The group of each row as an integer ``0 .. G - 1``: the one factorisation of group ids.

    Rows with equal ids share a code; every missing id (NaN, in any float or
    complex component, and NaT) is one id of its own, "missing", whose rows
    form one group.  Total for the dtypes :func:`check_groups` accepts: it
    never raises on their values, so it may run in the private phase (and
    must: the codes are private).  Other dtypes (object arrays) raise a
    TypeError decided by the dtype alone.
    """
    groups = np.asarray(groups).ravel()
    kind = groups.dtype.kind
    if kind not in GROUP_LABEL_KINDS:
        # From the dtype alone (public); a fit has refused it before its spend.
        raise TypeError(
            f"groups has dtype {groups.dtype}; group ids must be numbers, strings, booleans "
            "or dates. Cast group ids to str or int and fill missing ids first."
        )
    if kind in "fc":
        missing = np.isnan(groups)
    elif kind in "mM":
        missing = np.isnat(groups)
    else:
        missing = np.zeros(groups.shape, dtype=bool)
    codes = np.empty(groups.shape, dtype=np.intp)
    # np.unique merges NaN only from numpy 1.24 on: missing ids get their
    # code apart, after the present ones.
    present, inverse = np.unique(groups[~missing], return_inverse=True)
    codes[~missing] = inverse.ravel()
    codes[missing] = present.size
    return codes


def kept_group_rows(groups, max_group_rows):
    """Indices of the rows each group keeps: its first ``max_group_rows`` rows, in input order.

    Whether a row is kept depends on the rows of its own group only (their
    order), never on other groups: adding or removing a group leaves every
    other group's kept rows as they were, so the kept data sets differ by
    one group of at most ``max_group_rows`` rows.  Returns None when every
    row is kept (no copy of X is needed).  Private: call it in the private
    phase.
    """
    inverse = group_codes(groups)
    order = np.argsort(inverse, kind="stable")
    sorted_groups = inverse[order]
    starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
    rank = np.empty(inverse.size, dtype=np.intp)
    rank[order] = np.arange(inverse.size) - np.repeat(starts, np.diff(np.r_[starts, inverse.size]))
    keep = rank < int(max_group_rows)
    return None if keep.all() else np.flatnonzero(keep)
