"""What a private search fits: a DP estimator, or a Pipeline that ends in one.

A searched ``Pipeline`` may hold, at its top level and in any order before
its last step:

* DP transformers (:class:`~sklearn_dp.preprocessing.DPStandardScaler`,
  :class:`~sklearn_dp.preprocessing.DPMinMaxScaler`,
  :class:`~sklearn_dp.decomposition.DPPCA`): each is planned from
  public inputs by its own ``_fit_plan`` and fitted, in every run and in the
  refit, with a share of that fit's guarantee;
* public row-wise steps that spend nothing:
  :class:`~sklearn_dp.preprocessing.PublicRangeScaler`,
  :class:`~sklearn_dp.preprocessing.RowWiseTransformer`, and the
  scikit-learn steps that :func:`sklearn_dp.privacy_spent` vouches for,
  checked with their parameters by the same allow-list (containers
  included, as long as they hold no DP step);

and, last, a DP estimator.  Anything else is refused before any spend.

**Shares.**  A fit of the pipeline (a run, or the refit) at ``(epsilon,
delta)`` gives each DP step the part of ``epsilon`` in proportion to the
epsilon the user set on it, and the part of ``delta`` in proportion to the
deltas set on them (to the epsilons when those deltas are all 0): the user's
proportions are kept, the totals are the search's.  The pipeline's event is
the composition of its DP steps' events, in order (basic composition, and
any accountant, is valid for steps chosen adaptively: each step's mechanism
is planned before the data).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from .. import _random
from .._composition import (
    CHECKED_SKLEARN,
    _allow_list,
    _is_search,
    _sklearn_release,
    allow_list_problem,
    is_frozen,
    record_fit,
)
from .._protocol import PrivatePhase
from ..linear_model._base import BaseDPEstimator
from ..preprocessing import PublicRangeScaler, RowWiseTransformer
from ..preprocessing._base import _DPTransformer

__all__ = [
    "candidate_model",
    "check_target",
    "final_estimator",
    "final_prefix",
    "dp_steps",
    "step_shares",
    "configure",
    "fit_target",
    "fit_event",
    "released",
    "target_budgets",
]

#: sklearn_dp steps that read nothing but the input's schema.
_PUBLIC_OURS = (PublicRangeScaler, RowWiseTransformer)


class _Refused(TypeError):
    pass


def _is_pipeline(estimator):
    return isinstance(estimator, Pipeline)


def final_estimator(estimator):
    """The DP estimator that predicts: ``estimator`` or a Pipeline's last step."""
    return estimator.steps[-1][1] if _is_pipeline(estimator) else estimator


def final_prefix(estimator):
    """The prefix of the final estimator's parameters in ``estimator.set_params``."""
    return f"{estimator.steps[-1][0]}__" if _is_pipeline(estimator) else ""


def dp_steps(estimator):
    """``[(name, step)]`` of the DP steps, in order (``name`` None for a bare estimator)."""
    if not _is_pipeline(estimator):
        return [(None, estimator)]
    return [
        (name, step)
        for name, step in estimator.steps
        if isinstance(step, (_DPTransformer, BaseDPEstimator))
    ]


def _non_finite(value):
    return isinstance(value, float) and not math.isfinite(value)


def _check_public(step, path, allowed, *, frozen=False):
    """Refuse ``step`` unless it reads nothing but the schema (the allow-list of privacy_spent).

    ``frozen``: ``step`` sits in a ``FrozenEstimator``, which the search does
    not fit again, so what it learned in its earlier fit is checked too.
    """
    if step is None or (isinstance(step, str) and step in ("drop", "passthrough")):
        return
    if isinstance(step, _PUBLIC_OURS):
        return
    if isinstance(step, (_DPTransformer, BaseDPEstimator)):
        raise _Refused(
            f"step {path!r} ({type(step).__name__}) is a DP step inside a container: put DP "
            "transformers at the top level of the Pipeline, where the search plans and "
            "accounts them."
        )
    if _is_search(step):
        raise _Refused(
            f"step {path!r} ({type(step).__name__}) is a search: it would select on the "
            "private rows outside the guarantee. Search the whole Pipeline instead."
        )
    entry = allowed.get(type(step))
    if entry is None:
        raise _Refused(
            f"step {path!r} ({type(step).__name__}) would read the private rows outside the "
            "guarantee: it is not on the allow-list of row-wise, data-blind scikit-learn steps "
            "of sklearn_dp.privacy_spent. Use DPStandardScaler, DPMinMaxScaler or DPPCA (they "
            "spend a share of the search's epsilon), PublicRangeScaler with public ranges, "
            "RowWiseTransformer(func) for a row-wise function of public constants, or "
            "transform X with public parameters before the search (a FrozenEstimator does "
            "not help: what it holds is checked as if it were not frozen)."
        )
    if _sklearn_release() not in CHECKED_SKLEARN:
        raise _Refused(
            f"step {path!r} ({type(step).__name__}): the allow-list was checked against "
            f"scikit-learn {', '.join(CHECKED_SKLEARN)} only; use the sklearn_dp steps "
            "(PublicRangeScaler, RowWiseTransformer) instead."
        )
    params = step.get_params(deep=False)
    reason = allow_list_problem(step, entry, fitted=frozen)
    if reason is None and params.get("verbose"):
        # Inside a search it would also print one line per run, and the
        # number of runs must stay secret.
        reason = "verbose=True prints the time each fit on the private rows takes"
    outputs = [value for key, value in params.items() if key != "missing_values"]
    if reason is None and any(_non_finite(value) for value in outputs):
        # An unknown category encoded as NaN makes the next step refuse the
        # rows: whether a private row is unknown would decide a run's fate.
        reason = "a non-finite parameter value (such as unknown_value=np.nan) is refused"
    if reason is None and params.get("memory") is not None:
        reason = "memory= stores the private rows on disk; pass memory=None"
    if reason:
        raise _Refused(f"step {path!r} ({type(step).__name__}): {reason}.")
    if is_frozen(step):
        # Its fit does nothing, but the step it holds was fitted before, maybe
        # on these rows: checked as if it were not frozen.
        inner = step.estimator
        if isinstance(inner, (_DPTransformer, BaseDPEstimator)):
            raise _Refused(
                f"step {path!r} holds a frozen {type(inner).__name__}: it was fitted before "
                "the search, and its spend is outside the search's guarantee. Put it in the "
                "Pipeline unfrozen (the search fits it with a share of its epsilon), or "
                "transform X with it before the search and compose the two guarantees with "
                "sklearn_dp.privacy_spent."
            )
        children, frozen = [("estimator", inner)], True
    elif hasattr(step, "steps"):
        children = list(step.steps)
    elif hasattr(step, "transformer_list"):
        children = list(step.transformer_list)
    elif hasattr(step, "transformers"):
        children = [(n, s) for n, s, _ in step.transformers]
        children.append(("remainder", params.get("remainder")))
    else:
        return
    for name, child in children:
        _check_public(child, f"{path}.{name}", allowed, frozen=frozen)


def check_target(estimator, owner):
    """Refuse (TypeError) what a search cannot fit inside its guarantee; return None otherwise."""
    if not _is_pipeline(estimator):
        if isinstance(estimator, BaseDPEstimator):
            return
        raise TypeError(
            f"{owner} searches over sklearn_dp estimators (DPLogisticRegression, "
            f"DPSCORegressor, DPLasso) or a Pipeline that ends in one; got "
            f"{type(estimator).__name__}."
        )
    steps = estimator.steps
    if not steps or not isinstance(steps[-1][1], BaseDPEstimator):
        last = type(steps[-1][1]).__name__ if steps else "nothing"
        raise TypeError(
            f"{owner}: a searched Pipeline must end in a sklearn_dp estimator "
            f"(DPLogisticRegression, DPSCORegressor, DPLasso); it ends in {last}."
        )
    allowed = _allow_list()
    try:
        for name, step in steps:
            if isinstance(step, (_DPTransformer, BaseDPEstimator)):
                epsilon = step.epsilon
                if not (isinstance(epsilon, Real) and 0 < epsilon < math.inf):
                    raise _Refused(
                        f"step {name!r} has epsilon={epsilon!r}: inside a search every DP "
                        "step needs a finite epsilon, which sets its proportion of each "
                        "fit's share."
                    )
                continue
            _check_public(step, name, allowed)
    except _Refused as refused:
        raise TypeError(f"{owner}: {refused}") from None


def target_budgets(estimator):
    """The budgets held by the DP steps (None for those without)."""
    return [getattr(step, "budget", None) for _, step in dp_steps(estimator)]


def step_shares(estimator, epsilon, delta):
    """``[(name, (epsilon, delta))]`` of each DP step for a fit of ``estimator`` at ``(epsilon, delta)``.

    The user's proportions (the epsilons and deltas set on the steps), the
    search's totals; the last step takes what the others leave, so the
    shares add up to the totals.
    """
    steps = dp_steps(estimator)
    if len(steps) == 1:
        return [(steps[0][0], (float(epsilon), float(delta)))]
    epsilons = [float(step.epsilon) for _, step in steps]
    deltas = [float(step.delta) for _, step in steps]
    if math.fsum(deltas) <= 0:
        deltas = epsilons

    def divide(total, weights):
        whole = math.fsum(weights)
        parts = [float(total) * w / whole for w in weights[:-1]]
        return [*parts, max(0.0, float(total) - math.fsum(parts))]

    return list(
        zip(
            [name for name, _ in steps],
            zip(divide(epsilon, epsilons), divide(delta, deltas)),
            strict=True,
        )
    )


def configure(model, epsilon, delta, rng, *, quiet):
    """Set every DP step of ``model`` to its share, no budget and its own secret stream.

    ``quiet`` silences the final estimator's ``verbose`` (the runs; the
    refit is an ordinary fit and keeps it).
    """
    shares = step_shares(model, epsilon, delta)
    streams = [rng] if len(shares) == 1 else _random.split(rng, len(shares))
    for (name, (step_epsilon, step_delta)), stream in zip(shares, streams, strict=True):
        step = model if name is None else model.named_steps[name]
        params = dict(
            epsilon=float(step_epsilon),
            delta=float(step_delta),
            budget=None,
            random_state=_random.SecretStream(stream, _random._SEARCH_TOKEN),
        )
        if quiet and isinstance(step, BaseDPEstimator):
            params["verbose"] = 0
        step.set_params(**params)
    return model


def fit_target(model, X, y, owner):
    """Fit ``model`` on private ``(X, y)``; each DP step in its own private phase.

    A Pipeline is fitted step by step: the public steps' fits and every
    transform of private rows run in a private phase without a reservation
    of their own (nothing they raise or warn escapes but a public error; the
    allow-list refuses the settings that print), so that only the DP steps'
    released values and their own public errors and warnings reach the
    caller.
    """
    if not _is_pipeline(model):
        return model.fit(X, y)
    Xt = X
    steps = model.steps
    for _, step in steps[:-1]:
        if step is None or step == "passthrough":
            continue
        if isinstance(step, _DPTransformer):
            step.fit(Xt)
            with PrivatePhase(owner, None):
                Xt = step.transform(Xt)
        else:
            with PrivatePhase(owner, None):
                Xt = step.fit(Xt, y).transform(Xt)
            record_fit(step)
    steps[-1][1].fit(Xt, y)
    return model


def fit_event(model):
    """The event of a fitted ``model``: its DP steps' events composed, in order."""
    events = [step.dp_event_ for _, step in dp_steps(model)]
    return events[0] if len(events) == 1 else dpe.ComposedDpEvent(events)


def plan_pipeline(candidate, epsilon, delta, X_public, y_public, plan_estimator):
    """``(event, solver)`` of fitting the Pipeline ``candidate`` at ``(epsilon, delta)``, from public inputs.

    Each DP transformer's FitPlan from its own public phase on a public
    stand-in of its input; public steps are fitted on the stand-in (no
    private value) to find the final estimator's input schema; the final
    estimator is planned by ``plan_estimator``.
    """
    shares = dict(step_shares(candidate, epsilon, delta))
    events = []
    Xt = X_public
    for name, step in candidate.steps[:-1]:
        if step is None or step == "passthrough":
            continue
        if isinstance(step, _DPTransformer):
            step_epsilon, step_delta = shares[name]
            model = clone(step).set_params(
                epsilon=step_epsilon, delta=step_delta, budget=None, random_state=0
            )
            plan = model._fit_plan(Xt)
            events.append(plan.event)
            # A transformer that changes the number of columns (DPPCA) plans
            # it; the others give one output column per input column, of the
            # input's format, so Xt stands in for their output too.
            width = plan.context.get("n_features_out")
            if width is not None:
                Xt = np.zeros((Xt.shape[0], width))
        else:
            Xt = clone(step).fit(Xt, y_public).transform(Xt)
    name, final = candidate.steps[-1]
    event, solver = plan_estimator(final, *shares[name], Xt, y_public)
    if event is None:
        return None, solver
    events.append(event)
    return (events[0] if len(events) == 1 else dpe.ComposedDpEvent(events)), solver


def released(model, estimator):
    """``model`` as it may be published: the user's ``random_state``, ``budget`` and ``verbose`` back.

    The search fits its runs and its refit with secret streams of its own
    (:class:`sklearn_dp._random.SecretStream`), which regenerate their
    noise: each DP step of the released model gets the user's own settings
    back instead.  Its epsilon and delta stay the shares it was fitted at.
    """
    user = dict(dp_steps(estimator))
    for name, step in dp_steps(model):
        # A step the grid put in place of another gets no seed and no budget.
        original = user.get(name)
        params = dict(
            random_state=getattr(original, "random_state", None),
            budget=getattr(original, "budget", None),
        )
        if isinstance(step, BaseDPEstimator):
            params["verbose"] = getattr(original, "verbose", 0)
        step.set_params(**params)
    return model


def candidate_model(estimator, params):
    """A fresh copy of ``estimator`` with ``params``, sharing no object with the grid.

    A grid may hold steps (a Pipeline's step replaced by a candidate): set
    as they are, the runs would fit the user's own objects and leave their
    secret streams and fitted statistics on them.
    """
    return clone(clone(estimator).set_params(**params))
