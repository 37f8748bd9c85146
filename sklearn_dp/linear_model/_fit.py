"""The privacy protocol of an estimator's fit, step by step (:mod:`sklearn_dp._protocol`).

The estimator describes its fit as a :class:`~sklearn_dp.linear_model._base.FitRequest`
(its public checks, the problem, the callbacks ``prepare``, ``finish`` and
``store``); this module runs the protocol on it:

* :func:`plan_fit` (public inputs only): the solver, its options and their
  public checks, the shares of epsilon and delta, the solver's plan and the
  whole fit's event, as a :class:`~sklearn_dp._protocol.FitPlan`.  A refused
  configuration raises here, before the reservation, and spends nothing.
* :func:`run_fit`: reserve the plan's spend, then in the private phase
  release the label set (``prepare``), the row count and the ``"auto"``
  bounds, re-plan the solver from the released values, bound the data, run
  the solver, and complete the reservation with the fit's event.

The estimator keeps the parts that are its own: validation, the solver's
resolution and options (:meth:`~sklearn_dp.linear_model._base.BaseDPEstimator._resolve_solver`,
``_solver_kwargs``, ``_check_arguments``), its bounds parameters
(``_bound_request``, ``_resolve_bounds``) and the fitted attributes.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
import warnings

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe

from .. import _bounds, _dask, _feature_scales, _random
from .._bounds import planned_events
from .._data import BoundedData, bound_data, clip_weights
from .._labels import LABEL_DELTA_FRACTION, label_epsilon
from .._protocol import (
    COUNT_EPSILON_FRACTION,
    FIT_CLOCK,
    FitPlan,
    SolverPlanner,
    check_group_solver,
    check_sampler_range,
    kept_group_rows,
    open_phase,
    record_spend,
    release_count,
)
from .._public_errors import public_error
from .._saving import RECORD_ATTRIBUTE
from .._scaled_design import scaled_design, to_caller_units, to_fit_units
from .._warnings import user_stacklevel
from ..accounting import ApproximateDpEvent
from ..solvers._common import Progress
from ._released_warnings import (
    faint_label_warning,
    label_range_warning,
    label_set_warning,
    row_bound_warning,
)

__all__ = ["plan_fit", "run_fit", "check_weights_supported"]


def check_weights_supported(spec, estimator):
    """Refuse (publicly, before any spend) a weighted fit with a solver that ignores weights."""
    from ..solvers import SOLVERS

    if spec.sample_weight:
        return
    supported = ", ".join(name for name, s in SOLVERS.items() if s.sample_weight)
    raise ValueError(
        f"{estimator}: solver={spec.name!r} does not support sample_weight or class_weight. "
        f"Solvers that fit weighted rows: {supported}; pass one as solver=..."
    )


# -- the plan (public inputs only) ----------------------------------------------


def plan_fit(estimator, request):
    """The fit's :class:`~sklearn_dp._protocol.FitPlan`: public checks, shares, solver plan.

    Reads the input's schema (number of features, types, sparsity) only:
    never its rows, nor their number.  A refused configuration raises here,
    before the reservation, and spends nothing.
    """
    X, y, problem = request.X, request.y, request.problem
    name = type(estimator).__name__
    public = _with_unit(estimator._public_setting(X, problem, request.discover_labels), request)
    spec = estimator._resolve_solver(problem, public)
    dask_input = _dask.is_dask_array(X)
    if dask_input:
        # Before the reservation: a solver without a Dask path spends nothing.
        _dask.check_solver(spec.name)
    if request.max_group_rows is not None:
        if dask_input:
            raise ValueError(f"{name}: groups= is not supported with Dask arrays.")
        check_group_solver(spec.name, name, estimator.solver_options)
    # Zero rows of the input's schema, for the public checks and plans
    # (copies: the plan keeps no view of the private arrays).
    X0, y0 = (
        (np.zeros((0, X.shape[1]), dtype=X.dtype), np.zeros(0, dtype=y.dtype))
        if dask_input
        else (X[:0].copy(), y[:0].copy())
    )
    bound_request = estimator._bound_request(spec)
    scaling = _scaling_request(estimator, spec, bound_request, dask_input, X)
    # The bounds the solver's geometry needs, checked on zero rows (public).
    planned = estimator._resolve_bounds(spec, X.shape[1], request=bound_request)
    kwargs = estimator._solver_kwargs(spec, problem, planned)
    _bound_zero_rows(estimator, spec, X0, y0, planned)
    if spec.check is not None:
        spec.check(**estimator._check_arguments(spec, problem, kwargs, public))
    weighted = request.weighted
    if weighted is None:
        weighted = request.sample_weight is not None
    if weighted:
        if dask_input:
            _dask.refuse_weights(name)
        check_weights_supported(spec, name)
    initial_point = request.initial_point
    if initial_point is not None and not spec.warm_start:
        from ..solvers import SOLVERS

        takes = ", ".join(name for name, s in SOLVERS.items() if s.warm_start)
        warnings.warn(
            f"warm_start=True is ignored by solver={spec.name!r}, which takes no initial "
            f"point (solvers that do: {takes}); this fit starts cold.",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
        initial_point = None
    private = not math.isinf(estimator.epsilon)
    _random.check_random_state(estimator.random_state, private=private, owner=name)
    if request.discover_labels and private and estimator.delta == 0:
        raise ValueError(
            f"{name}: with delta=0 the label set cannot be released "
            "privately (it needs delta > 0); pass classes=[...], the public label set."
        )
    discover = request.discover_labels
    label_share = label_epsilon(estimator.epsilon) if discover else 0.0
    label_delta = LABEL_DELTA_FRACTION * estimator.delta if discover else 0.0
    # The count, the bounds and the solver share what the labels leave.
    epsilon_rest = estimator.epsilon - label_share
    delta_rest = estimator.delta - label_delta
    # Under add/remove neighbouring the row count is private: a share of
    # epsilon buys a noisy count that stands in for n (see PrivateCount).  A
    # released label set already holds one (the sum of the released labels'
    # noisy counts, label_set_count), released before anything needs n.
    count_from_labels = discover and private
    epsilon_count = (
        (0.0 if count_from_labels else COUNT_EPSILON_FRACTION * epsilon_rest)
        if private
        else math.inf
    )
    count_events = [] if count_from_labels else [dpe.LaplaceDpEvent(1.0 / epsilon_count)]
    # "auto" bounds: a share each, released by the exponential mechanism
    # (pure epsilon-DP; known before the data, so part of the reservation).
    bound_epsilons = _bounds_epsilons(bound_request, epsilon_rest, private)
    scale_epsilon = scale_cost = 0.0
    delta_solver = delta_rest
    if scaling is not None:
        scale_epsilon = _scale_epsilon(epsilon_rest, private)
        probe = _bounds.AUTO_SCALING_EPSILON_FRACTION * epsilon_rest if private else math.inf
        scaling = dict(
            scaling,
            each=math.inf,
            multiplier=0.0,
            pure=private and delta_rest == 0,
            # Many features: vector releases over all of them at once.
            vector=scaling["centered"] and X.shape[1] >= _feature_scales.VECTOR_MIN_FEATURES,
            probe=probe if scaling["auto"] else 0.0,
            spare=False,
        )
        # The decision of "auto" is paid like the scales it may skip.
        scale_cost = scaling["probe"] if private else 0.0
    planned_bound_events = planned_events(bound_request, bound_epsilons) if private else []
    if scaling is not None and private:
        # Composed as zCDP, the releases' summed epsilons may exceed their
        # share, by a part of the basic-composition remainder at most.
        remainder = epsilon_rest - epsilon_count - sum(bound_epsilons) - scale_epsilon - scale_cost
        most = scale_epsilon + _feature_scales.SCALING_FLOOR_PART * max(remainder, 0.0)
        if scaling["vector"]:
            # Gaussian (or, with delta = 0, Laplace) releases over all
            # features, read exactly by every accountant: composed with the
            # count numerically, in the default too.
            scaling["multiplier"], cost = _feature_scales.centered_scale_multiplier(
                scale_epsilon, epsilon_rest, delta_rest, epsilon_count or None, most
            )
            # In the basic composition that certifies the solver's floor
            # the Gaussian releases take their own part of delta.
            if not scaling["pure"]:
                delta_solver = delta_rest * (1.0 - _feature_scales.SCALES_DELTA_FRACTION)
        else:
            scaling["each"] = _feature_scales.scale_release_epsilon(
                X.shape[1],
                scale_epsilon,
                scaling["centered"],
                delta_rest,
                # No count release (it comes with the label set): no count to
                # compose the scales with, so their basic-composition epsilons.
                # The default ("auto") takes them too: composed as zCDP, the
                # exponential mechanisms are read by dp_accounting's PLD (which
                # knows no bounded range) above the fit's claim.
                None if scaling["auto"] else (epsilon_count or None),
                most,
            )
            # What the releases cost under basic composition (more than the
            # share when they are composed as zCDP): the floor below must hold
            # for a solver planned from released values, which is composed with
            # them adaptively.
            cost = _feature_scales.scale_release_cost(
                X.shape[1], scaling["centered"], scaling["each"]
            )
        scale_cost += cost
        # Released first, so listed first (the events the releases record).
        planned_bound_events = _scale_events(X.shape[1], scale_epsilon, scaling) + (
            planned_bound_events
        )
    # The solver gets what the count and the bounds leave: at least the
    # basic-composition remainder, more where numerical composition of
    # the mechanisms certifies it.
    planner = SolverPlanner(
        spec.plan,
        functools.partial(_plan_arguments, estimator, spec, X0, y0),
        epsilon=epsilon_rest,
        delta=delta_solver,
        floor=epsilon_rest - epsilon_count - sum(bound_epsilons) - scale_cost
        if private
        else math.inf,
    )
    share, solver_plan, event = math.inf, None, None
    if private:
        prefix = dpe.ComposedDpEvent(count_events + planned_bound_events)
        # The solver's event is fixed before the data only if no released
        # value can change it: a released label set changes the problem;
        # released bounds enter the plan's inputs, which only a solver that
        # declares so keeps out of its event.
        released_inputs = discover or (
            (any(bound_request) or scaling is not None) and spec.event_reads_bounds
        )
        share, solver_plan = planner.before_data(
            problem, planned, kwargs, prefix, public_inputs=not released_inputs
        )
        if scaling is not None:
            # Only where no fixed event is lost: a mixture of two branches has
            # no one event whose curve is the fit's (privacy_report).
            scaling["spare"] = not planner.fixed and _spares_scale_share(estimator)
        if solver_plan is not None:
            # Noise the gateway would refuse after the charge: refused now.
            check_sampler_range(solver_plan.event, name)
            event = _fit_event(
                ApproximateDpEvent(label_share, label_delta, "label set") if discover else None,
                count_events[0] if count_events else None,
                planned_bound_events,
                solver_plan.event,
            )
    return FitPlan(
        owner=name,
        solver=spec.name,
        options=kwargs,
        epsilon=estimator.epsilon,
        delta=estimator.delta,
        private=private,
        shares={
            "labels": (label_share, label_delta),
            "count": epsilon_count,
            "bounds": bound_epsilons,
            "scales": scale_epsilon,
            "solver": (share, delta_solver),
        },
        solver_plan=solver_plan,
        event=event,
        fixed=event is not None and planner.fixed,
        max_group_rows=request.max_group_rows,
        context=dict(
            spec=spec,
            public=public,
            bound_request=bound_request,
            scaling=scaling,
            weighted=bool(weighted),
            initial_point=initial_point,
            dask_input=dask_input,
            schema=(X0, y0),
            planner=planner,
        ),
    )


def _with_unit(public, request):
    """The public setting with the fit's unit of privacy (groups of at most k rows, or rows)."""
    if request.max_group_rows is None:
        return public
    return dataclasses.replace(public, max_group_rows=request.max_group_rows)


def _keep_group_rows(request):
    """The request on the rows each group keeps (its first ``max_group_rows``; private)."""
    if request.max_group_rows is None:
        return request
    keep = kept_group_rows(request.groups, request.max_group_rows)
    if keep is None:
        return request
    weights = request.sample_weight
    return dataclasses.replace(
        request,
        X=request.X[keep],
        y=request.y[keep],
        sample_weight=None if weights is None else np.asarray(weights)[keep],
    )


def _scaling_request(estimator, spec, bound_request, dask_input, X):
    """Per-feature scaling of this fit, from public inputs: None, or its settings.

    On when the estimator asks for it (``feature_scaling=True``, or
    ``"auto"``, which decides from the released magnitudes) and the rows'
    bound is ``"auto"`` (a bound given by the user is in the caller's units
    and is used as it is).  Centred only where a centre costs no accuracy
    elsewhere: dense X, an intercept to absorb it, and the L2 geometry (the
    entrywise geometries clip symmetrically around 0).  Dask input keeps
    the single row bound, and so does ``"auto"`` with ``inference`` (which
    ``True`` refuses).
    """
    setting = getattr(estimator, "feature_scaling", False)
    if setting is False:
        return None
    rows, _ = bound_request
    if rows is None or dask_input or X.shape[1] == 0:
        return None
    if (getattr(estimator, "solver_options", None) or {}).get("inference"):
        if setting == "auto":
            return None
        raise ValueError(
            f"{type(estimator).__name__}: solver_options={{'inference': True}} is not "
            "available with feature_scaling=True; pass feature_scaling=False, or scale "
            "the features first."
        )
    centered = (
        rows == "data_norm"
        and spec.geometry == "l2"
        and bool(estimator.fit_intercept)
        and not sp.issparse(X)
    )
    return {"centered": centered, "rows": rows, "auto": setting == "auto"}


def _scale_events(n_features, epsilon, scaling):
    """The planned events of the per-feature scales, after the decision of ``"auto"`` if any."""
    if scaling["vector"]:
        events = _feature_scales.centered_scale_events(scaling["multiplier"], scaling["pure"])
    else:
        events = _feature_scales.planned_scale_events(
            n_features, epsilon, scaling["centered"], scaling["each"]
        )
    if scaling["auto"]:
        events = [_feature_scales.auto_scaling_event(scaling["probe"])] + events
    return events


def _spares_scale_share(estimator):
    """Whether a fit that releases no scales may give their share to its solver (public).

    Not in a private search's runs and refits, which are accounted as the
    event planned for them before the data, nor on a zCDP budget, which
    reserves the planned event's rho (the solver's larger share would
    exceed it); and only for a fit whose event is not fixed before the data
    anyway (a released label set picks its problem): the fit is then a
    mixture of two branches picked by pure-DP releases
    (:meth:`~sklearn_dp._protocol.SolverPlanner.after_skipped_releases`).
    """
    budget = estimator.budget
    return not isinstance(estimator.random_state, _random.SecretStream) and (
        budget is None or budget.rho_limit is None
    )


def _scale_epsilon(epsilon_rest, private):
    """Epsilon of the per-feature scales (public): a documented share.

    The rows' bound keeps its own share and event: with the scales, a
    ``"data_norm"`` bounds the standardised rows and a ``"feature_bound"``
    is not needed (standardised entries lie in ``[-1, 1]``); without them
    (the fallback), either is released as without scaling.
    """
    return _bounds.SCALING_EPSILON_FRACTION * epsilon_rest if private else math.inf


def _bounds_epsilons(request, epsilon_rest, private):
    """Epsilon of each bound release (public): a documented share each."""
    rows, labels = request
    if not private:
        return (math.inf if rows else 0.0), (math.inf if labels else 0.0)
    share = _bounds.BOUNDS_EPSILON_FRACTION * epsilon_rest
    # A range with a released centre takes a larger share (a public centre: the width only).
    label_share = (
        _bounds.LABEL_RANGE_EPSILON_FRACTION
        if labels == "range"
        else _bounds.BOUNDS_EPSILON_FRACTION
    ) * epsilon_rest
    return (share if rows else 0.0), (label_share if labels else 0.0)


def _bound_zero_rows(estimator, spec, X0, y0, bounds):
    """``bound_data`` of zero rows: the public checks of the bounds, and their public constants."""
    return bound_data(
        X0,
        y0,
        fit_intercept=estimator.fit_intercept,
        intercept_scaling=bounds.intercept_scaling,
        geometry=spec.geometry,
        data_norm=bounds.data_norm,
        feature_bound=bounds.feature_bound,
    )


def _plan_arguments(estimator, spec, X0, y0, problem, n_public, bounds, kwargs):
    """``(n_params, call)``: what ``spec.plan`` receives, from public inputs."""
    from ..solvers._registry import solver_call

    n_params = (X0.shape[1] + int(estimator.fit_intercept)) * problem.n_outputs
    # The loss's public constants and the rows' bound come from a bounding
    # of zero rows, which carries the public bounds and nothing else.
    zero_rows = _bound_zero_rows(estimator, spec, X0, y0, bounds)
    alpha = problem.alpha
    if callable(alpha):
        # A strength that scales with n (1 / (C n)) is unknown until the count.
        alpha = None if n_public is None else alpha(n_public)
    call = solver_call(
        spec,
        kwargs,
        n_outputs=problem.n_outputs,
        alpha=alpha,
        loss=problem.make_loss(zero_rows),
        row_norm_bound=zero_rows.row_norm_bound,
        feature_bound=zero_rows.feature_bound,
    )
    return n_params, call


# -- the private phase -----------------------------------------------------------


def run_fit(estimator, request, plan):
    """Run ``plan`` under the protocol: reserve, private phase, completion.

    Returns ``(spec, data, result, bounds)``: the solver that ran, the
    bounded data it saw, its :class:`~sklearn_dp.solvers.SolverResult` and
    the :class:`~sklearn_dp.linear_model._base.FitBounds` the fit used.
    Sets ``dp_event_`` and ``privacy_spent_``; the estimator stores the rest.
    """
    clock = FIT_CLOCK.set(time.perf_counter())
    try:
        return _run_fit(estimator, request, plan)
    finally:
        FIT_CLOCK.reset(clock)


def _run_fit(estimator, request, plan):
    context = plan.context
    previous = _previous_release(estimator)
    # The phases of a long fit, before the solver's own lines: public values
    # and released ones only (the count printed is the released count).
    progress = Progress(type(estimator).__name__, 0, estimator.verbose)
    with open_phase(plan, estimator.budget, estimator.random_state) as phase:
        # With groups=, each group's first max_group_rows rows; every release
        # below protects one group (the phase's unit of privacy).
        request = _keep_group_rows(request)
        # The label set (a classifier without public classes) and the solver for it.
        spec, X, y, problem, public = _prepare(estimator, request, plan, phase)
        # The number of rows (of a Dask array: a sum over its chunks).
        if phase.label_count is not None:
            # The sum of the released labels' noisy counts: no release of its own.
            count = phase.label_count
        else:
            n_rows = _dask.row_count(X) if context["dask_input"] else X.shape[0]
            count = release_count(n_rows, plan.shares["count"], phase.rng)
        progress.note(f"row count released: {count.estimate:.0f}")
        _warn_weak_delta(estimator, count.estimate, phase)
        if request.discover_labels and plan.private:
            _warn_label_set(estimator, problem, count.estimate, phase)
        if plan.private:
            _warn_label_range(estimator, plan, count.estimate, phase)
        # The "auto" bounds, then the problem and options in the fit's units.
        scales, scale_events = _release_scales(estimator, X, plan, count, phase)
        request_rows, request_labels = context["bound_request"]
        skipped = []
        if scales is not None and request_rows == "feature_bound":
            # Standardised entries lie in [-1, 1]: the planned feature bound
            # is not released (its event stays: the plan did not depend on
            # which branch the released count would take).
            skipped = planned_events((request_rows, False), plan.shares["bounds"])
            request_rows = None
        released, bound_events = _release_bounds(
            estimator,
            X,
            y,
            (request_rows, request_labels),
            plan.shares["bounds"],
            count,
            phase.rng,
            scales,
        )
        if plan.private and request_rows is not None:
            _warn_row_bound(estimator, request_rows, plan, count.estimate, phase)
        released_bound_events = bound_events
        bound_events = scale_events + skipped + bound_events
        if released:
            progress.note(f"bounds released: {_shown(released)}")
        bounds = _scaled_bounds(estimator, spec, X.shape[1], released, context, scales)
        # The released count travels with the bounds: a public default (e.g.
        # DPLasso's radius) may depend on it.
        bounds = dataclasses.replace(bounds, n_public=count.estimate)
        if request.finish is not None:
            y, problem = request.finish(y, bounds)
        kwargs = plan.options
        if released or request.finish is not None or request.discover_labels:
            # Options that depend on the bounds (e.g. DPLasso's intercept
            # bound), from released values; checked publicly before.
            kwargs = estimator._solver_kwargs(spec, problem, bounds, quiet=True)
        if request.discover_labels and spec.check is not None:
            # The solver (and its problem) may have changed with the
            # released label set: its public check again, on released
            # values, so a refusal says why instead of PrivateFitError.
            try:
                spec.check(**estimator._check_arguments(spec, problem, kwargs, public))
            except ValueError as exc:
                raise public_error(ValueError(str(exc))) from None
        # Re-plan the solver's share from the released values, once.
        unscaled = None
        if scales is None and scale_events:
            # No scales released: their share may go to the solver.
            unscaled = _replan_unscaled(
                estimator, plan, spec, problem, count, bounds, kwargs, released_bound_events
            )
        if unscaled is not None:
            epsilon_solver, solver_plan, bound_events = unscaled
        else:
            epsilon_solver, solver_plan = _replan(
                estimator, plan, spec, problem, count, bounds, kwargs, bound_events
            )
        # Bound the data and run the solver on it.
        data = _bound(estimator, plan, spec, X, y, bounds, count, phase.sample_weight)
        progress.note(f"rows bounded; running solver {spec.name}")
        result = spec.run(
            data,
            problem.make_loss(data),
            n_outputs=problem.n_outputs,
            alpha=problem.alpha(count.estimate) if callable(problem.alpha) else problem.alpha,
            epsilon=epsilon_solver,
            delta=plan.shares["solver"][1],
            random_state=phase.rng,
            verbose=estimator.verbose,
            **(options := _run_options(plan, spec, kwargs, bounds, problem, solver_plan)),
        )
        if scales is not None:
            # Post-processing of released values: the model in the caller's units.
            result.coef = to_caller_units(
                result.coef,
                scales.center,
                scales.scale,
                data.intercept_scaling,
                data.fit_intercept,
            )
        if plan.private:
            phase.event = _fit_event(phase.label_event, count.event, bound_events, result.dp_event)
        # Solvers do not warn; they hand warnings computed from public values
        # and releases to the estimator, which defers them through the phase.
        for message in result.info.pop("warnings", ()):
            phase.warn(message)
    record_spend(estimator, plan, phase.event, phase.reservation)
    if "coef_init" in options:
        _compose_with_previous(estimator, previous, plan.max_group_rows)
    return spec, data, result, bounds


def _previous_release(estimator):
    """``(privacy_spent, dp_event, group-level, planned)`` of the fit a warm start would reuse, or None."""
    from .._composition import event_of, spent_of

    if "dp_event_" not in vars(estimator):
        return None
    record = vars(estimator).get(RECORD_ATTRIBUTE) or {}
    return (
        spent_of(estimator),
        event_of(estimator),
        "max_group_rows_" in vars(estimator),
        bool(record.get("planned", False)),
    )


def _compose_with_previous(estimator, previous, max_group_rows):
    """A warm-started fit's guarantee: the previous fit's composed with its own.

    The fit started from the previous ``coef_``, a release of the same rows,
    so what it releases carries both fits (adaptive composition, as
    :func:`sklearn_dp.privacy_spent` composes the steps of a Pipeline).  The
    budget was charged this fit's spend only: the previous one was charged
    when it ran.  Fits of different units of privacy do not compose.
    """
    from .._composition import VOUCHED_ATTRIBUTE, compose_spends

    if previous is None:
        return
    spent, event, group_level, planned = previous
    estimator.dp_event_ = dpe.ComposedDpEvent([event, estimator.dp_event_])
    if group_level != (max_group_rows is not None):
        estimator.privacy_spent_ = (math.inf, 0.0)
    else:
        estimator.privacy_spent_ = compose_spends(
            [(spent, event), (estimator.privacy_spent_, None)], composition="basic"
        )
    record = vars(estimator).get(RECORD_ATTRIBUTE)
    if record is not None:
        record["planned"] = bool(record.get("planned")) and planned
    # A search's record is now composed into the model's own guarantee.
    vars(estimator).pop(VOUCHED_ATTRIBUTE, None)


def _shown(released):
    """The released bounds in a line (a long vector by its range and length)."""
    parts = []
    for name, value in released.items():
        values = np.ravel(np.asarray(value, dtype=float))
        if name == "labels":  # (center, half_width)
            parts.append(f"labels center={values[0]:.4g} half-width={values[1]:.4g}")
        elif values.size > 4:
            parts.append(f"{name}={values.min():.4g}..{values.max():.4g} ({values.size} values)")
        else:
            parts.append(f"{name}={' '.join(f'{x:.4g}' for x in values)}")
    return ", ".join(parts)


def _prepare(estimator, request, plan, phase):
    """``request.prepare`` (label encoding, the label set's release) and the solver for it."""
    context = plan.context
    spec, public = context["spec"], context["public"]
    X, y, problem = request.X, request.y, request.problem
    phase.label_epsilon, phase.label_delta = plan.shares["labels"]
    phase.label_event = None
    # Set by a label release that also gives the row count (label_set_count).
    phase.label_count = None
    # The count a label needed to be released, and the released labels with
    # their noisy counts (set by the label release).
    phase.label_threshold = None
    phase.label_counts = None
    phase.sample_weight = request.sample_weight
    if request.prepare is not None:
        X, y, problem = request.prepare(X, y, phase)
        if request.discover_labels:
            public = _with_unit(
                estimator._public_setting(X, problem, discover_labels=True), request
            )
            try:
                spec = estimator._resolve_solver(problem, public)
            except ValueError as exc:
                # A function of the released label set.
                raise public_error(ValueError(str(exc))) from None
            if context["dask_input"]:
                _dask.check_solver(spec.name, inside=True)
    return spec, X, y, problem, public


def _warn_weak_delta(estimator, n_public, phase):
    # Compared with the fit's DP row count, not the true one: the warning
    # (and its text) is an output too, and the row count is private.
    delta = estimator.delta
    if 0 < delta and delta * n_public >= 1:
        phase.warn(
            f"delta={delta:g} is not much smaller than 1/n_samples (about "
            f"{1 / n_public:.3g} from the fit's DP row count): a mechanism that publishes "
            "one random row is (0, 1/n)-DP. Choose delta well below 1/n_samples."
        )


def _warn_label_set(estimator, problem, n_public, phase):
    # From the released label set and count, and the label release's public shares.
    message = label_set_warning(
        type(estimator).__name__,
        problem.n_outputs if problem.multiclass else 2,
        n_public,
        phase.label_threshold,
        1.0 / phase.label_epsilon,
    )
    if message is not None:
        phase.warn(message)
    message = faint_label_warning(
        type(estimator).__name__,
        *(phase.label_counts or (None, None)),
        phase.label_threshold,
        1.0 / phase.label_epsilon,
    )
    if message is not None:
        phase.warn(message)


def _warn_row_bound(estimator, parameter, plan, n_public, phase):
    # From the released count and the row bound's public share.
    message = row_bound_warning(
        type(estimator).__name__, parameter, n_public, plan.shares["bounds"][0]
    )
    if message is not None:
        phase.warn(message)


def _warn_label_range(estimator, plan, n_public, phase):
    # From the released count and the label range's public share.
    labels = plan.context["bound_request"][1]
    if not labels:
        return
    # One event of its whole share, whatever the releases it runs.
    message = label_range_warning(type(estimator).__name__, n_public, plan.shares["bounds"][1])
    if message is not None:
        phase.warn(message)


def _release_scales(estimator, X, plan, count, phase):
    """The per-feature scales, or None (no scaling, or the fallback); and their planned events.

    The events are those planned whatever the branch: ``"auto"``'s decision
    not to scale (from its own released count, always released) and the
    fallback (from the released row count and public values) run fewer
    mechanisms than they were charged for, never others, and the
    solver's share stays the one planned with them.
    """
    scaling = plan.context["scaling"]
    if scaling is None:
        return None, []
    d, epsilon, vector = X.shape[1], plan.shares["scales"], scaling["vector"]
    each = scaling["each"]
    events = _scale_events(d, epsilon, scaling) if plan.private else []
    if scaling["auto"] and not _feature_scales.release_needs_scaling(
        X, epsilon=scaling["probe"], n_public=count.estimate, rng=phase.rng
    ):
        return None, events
    if vector:
        noise = _feature_scales.centered_count_noise(scaling["multiplier"], d, scaling["pure"])
        enough = count.estimate >= _feature_scales.CENTERED_MIN_EVIDENCE * noise
        reason = (
            f"the noise of each released count of the per-feature releases (standard "
            f"deviation {noise:.3g} rows) is too large to be reliable (rows >= "
            f"{_feature_scales.CENTERED_MIN_EVIDENCE:g} times it)"
        )
    else:
        enough = count.estimate * each >= _bounds.SCALING_MIN_EVIDENCE
        reason = (
            f"each per-feature release would get epsilon {each:.3g}, too little to be "
            f"reliable (rows times epsilon >= {_bounds.SCALING_MIN_EVIDENCE:g} per release)"
        )
    if not enough:
        if scaling["auto"]:
            # The default keeps one bound quietly, as without scaling.
            return None, events
        phase.warn(
            f"{type(estimator).__name__}: feature_scaling=True fell back to one bound for all "
            f"features: with about {count.estimate:.0f} rows (the fit's DP row count) and {d} "
            f"features, {reason}. Raise epsilon, fit on more rows, or scale the features with "
            "public ranges first (PublicRangeScaler)."
        )
        return None, events
    if vector:
        scales = _feature_scales.release_centered_scales(
            X,
            multiplier=scaling["multiplier"],
            pure=scaling["pure"],
            n_public=count.estimate,
            rng=phase.rng,
        )
    else:
        scales, _ = _feature_scales.release_feature_scales(
            X,
            epsilon=epsilon,
            n_public=count.estimate,
            rng=phase.rng,
            centered=scaling["centered"],
            each=each,
        )
    return scales, events


def _scaled_bounds(estimator, spec, n_features, released, context, scales):
    """The fit's :class:`FitBounds`; with per-feature scales, in standardised units."""
    request = context["bound_request"]
    if scales is None:
        return estimator._resolve_bounds(spec, n_features, released, request)
    rows, labels = request
    if context["scaling"]["rows"] == "feature_bound":
        # Standardised entries lie in [-1, 1]: the entrywise bound 1, public.
        released = dict(released, feature_bound=1.0)
        rows = "feature_bound"
    bounds = estimator._resolve_bounds(spec, n_features, released, (rows, labels))
    standardized_intercept = estimator._standardized_intercept_scaling
    if standardized_intercept is not None and estimator.intercept_scaling == "auto":
        bounds = dataclasses.replace(bounds, intercept_scaling=standardized_intercept)
    return dataclasses.replace(
        bounds,
        feature_center=scales.center,
        feature_scale=scales.scale,
        feature_clip=scales.clip,
    )


def _release_bounds(estimator, X, y, request, epsilons, count, rng, scales=None):
    """Release the bounds of ``request``; ``(released, events)``."""
    return _bounds.release_bounds(
        X,
        y,
        request,
        epsilons,
        n_public=count.estimate,
        rng=rng,
        window=getattr(_bounds, estimator._row_window),
        counts=_dask.ChunkCounts if _dask.is_dask_array(X) else _bounds.RowCounts,
        scales=scales,
        lean=estimator._lean_row_bound,
    )


def _replan(estimator, plan, spec, problem, count, bounds, kwargs, bound_events):
    """``(epsilon, plan)`` of the solver from the released values (``(inf, None)`` without noise)."""
    if not plan.private:
        return math.inf, None
    context = plan.context
    planner = context["planner"]
    if spec is not context["spec"]:
        # Another solver for the released label set: its own plans.
        planner = planner.for_solver(
            spec.plan, functools.partial(_plan_arguments, estimator, spec, *context["schema"])
        )
    count_events = (
        [] if plan.shares["count"] == 0 else [dpe.LaplaceDpEvent(1.0 / plan.shares["count"])]
    )
    prefix = dpe.ComposedDpEvent(count_events + bound_events)
    return planner.after_release(problem, count.estimate, bounds, kwargs, prefix)


def _replan_unscaled(estimator, plan, spec, problem, count, bounds, kwargs, bound_events):
    """``(epsilon, plan, events)`` of the solver when no scales were released, or None.

    The plan charged the scales' releases; a fit that released none (the
    decision of ``"auto"``, or too few rows for them) gives their share to
    the solver when :meth:`~sklearn_dp._protocol.SolverPlanner.after_skipped_releases`
    certifies the mixture of the two branches, picked by the pure-DP
    releases before them (the row count, the decision's count).  ``events``
    are those of what ran before the solver.  None keeps the charged share
    (and the charged events, which cover the releases not run).
    """
    scaling = plan.context["scaling"]
    if not (plan.private and scaling["spare"]) or spec.event_reads_bounds:
        return None
    planner = plan.context["planner"]
    if spec is not plan.context["spec"]:
        planner = planner.for_solver(
            spec.plan, functools.partial(_plan_arguments, estimator, spec, *plan.context["schema"])
        )
    decision, decision_epsilon = [], 0.0
    if plan.shares["count"] != 0:
        decision.append(dpe.LaplaceDpEvent(1.0 / plan.shares["count"]))
        decision_epsilon += plan.shares["count"]
    if scaling["auto"]:
        decision.append(_feature_scales.auto_scaling_event(scaling["probe"]))
        decision_epsilon += scaling["probe"]
    # The scales' events as charged (per feature, or the vector releases of
    # many features), without the decision's count, which is in ``decision``.
    skipped = _scale_events(
        plan.context["schema"][0].shape[1], plan.shares["scales"], dict(scaling, auto=False)
    )
    found = planner.after_skipped_releases(
        problem, count.estimate, bounds, kwargs, decision, skipped, bound_events, decision_epsilon
    )
    if found is None:
        return None
    share, solver_plan = found
    # The count has its own place in the fit's event; the decision comes first.
    return share, solver_plan, decision[len(decision) - int(scaling["auto"]) :] + bound_events


def _bound(estimator, plan, spec, X, y, bounds, count, sample_weight):
    """The data clipped to the fit's bounds (rows, labels, weights), normalised by the count."""
    weighted = plan.context["weighted"]
    max_weight = float(getattr(estimator, "max_weight", 1.0))
    if bounds.feature_scale is not None:
        data = _bound_scaled(estimator, spec, X, y, bounds, count)
        data.sample_weight, data.weight_bound = clip_weights(
            sample_weight if weighted else None, max_weight
        )
        if weighted and data.sample_weight is None:
            data.sample_weight = np.ones(data.n_samples)
            data.weight_bound = max_weight
        return data
    data = (_dask.bound_dask_data if plan.context["dask_input"] else bound_data)(
        X,
        y,
        fit_intercept=estimator.fit_intercept,
        intercept_scaling=bounds.intercept_scaling,
        geometry=spec.geometry,
        data_norm=bounds.data_norm,
        feature_bound=bounds.feature_bound,
        n_public=count.estimate,
        normalizer=count.normalizer,
        sample_weight=sample_weight if weighted else None,
        max_weight=max_weight,
    )
    if weighted and data.sample_weight is None:
        # class weights only: every row weighs 1 before them.
        data.sample_weight = np.ones(data.n_samples)
        data.weight_bound = max_weight
    return data


def _bound_scaled(estimator, spec, X, y, bounds, count):
    """The data in standardised units (:class:`~sklearn_dp._scaled_design.StandardizedDesign`)."""
    geometry = "l2" if bounds.data_norm is not None else "linf"
    intercept = float(bounds.intercept_scaling) if estimator.fit_intercept else None
    design, _ = scaled_design(
        X,
        center=bounds.feature_center,
        scale=bounds.feature_scale,
        clip=bounds.feature_clip,
        geometry=geometry,
        row_bound=bounds.data_norm,
        intercept=intercept,
    )
    if geometry == "l2":
        norm_bound, entry_bound = float(bounds.data_norm), None
    else:
        entry_bound = np.ones(X.shape[1])
        norm_bound = float(np.sqrt(X.shape[1]))
    if estimator.fit_intercept:
        norm_bound = float(np.hypot(norm_bound, bounds.intercept_scaling))
        if entry_bound is not None:
            entry_bound = np.append(entry_bound, float(bounds.intercept_scaling))
    penalized = np.ones(design.n_columns, dtype=bool)
    if estimator.fit_intercept:
        penalized[-1] = False
    return BoundedData(
        design=design,
        y=y,
        row_norm_bound=norm_bound,
        penalized=penalized,
        fit_intercept=bool(estimator.fit_intercept),
        intercept_scaling=float(bounds.intercept_scaling),
        feature_bound=entry_bound,
        n_public=count.estimate,
        normalizer=count.normalizer,
    )


def _run_options(plan, spec, kwargs, bounds, problem, solver_plan):
    """The solver's options, with its warm start and the plan its share was certified for."""
    initial_point = plan.context["initial_point"]
    if initial_point is not None and spec.warm_start:
        start = initial_point(bounds, problem)
        if start is not None and bounds.feature_scale is not None:
            start = to_fit_units(
                start,
                bounds.feature_center,
                bounds.feature_scale,
                bounds.intercept_scaling,
                bool(plan.context["public"].fit_intercept),
            )
        if start is not None:
            kwargs = dict(kwargs, coef_init=start)
    if solver_plan is not None and spec.takes_plan:
        # The solver runs the plan it was charged for, never plans again.  It
        # may record public run details on it: its own copy of them, so no
        # plan object outside this fit changes.
        kwargs = dict(
            kwargs, plan=dataclasses.replace(solver_plan, details=dict(solver_plan.details))
        )
    return kwargs


def _fit_event(label_event, count_event, bound_events, solver_event):
    """The whole fit's event: the label set (if released), the count (if released), the bounds, the solver."""
    if isinstance(count_event, dpe.NoOpDpEvent):  # the count came with the label set
        count_event = None
    parts = ([count_event] if count_event is not None else []) + list(bound_events)
    parts.append(solver_event)
    return dpe.ComposedDpEvent(([label_event] if label_event is not None else []) + parts)
