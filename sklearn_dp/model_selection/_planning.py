"""The public phase of a private search: every candidate planned, the per-run epsilon found.

Nothing here reads a private value: candidates are planned from their
parameters and a public stand-in of the input's schema (their ``FitPlan``,
computed by their own public phase), and the per-run epsilon is the largest
whose selection event meets the search's guarantee under dp_accounting's RDP
accountant.
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from scipy import optimize
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import Pipeline

from .._labels import label_epsilon
from ..accounting import largest_share, mixture_delta
from ..linear_model._base import (
    LABEL_DELTA_FRACTION,
    MAX_EPSILON,
    MIN_EPSILON,
)
from ._pipeline import final_prefix, plan_pipeline
from ._selection import (
    evidence_threshold,
    rdp_epsilon,
    rdp_supports,
    run_event,
    selection_event,
)

__all__ = [
    "SearchPlan",
    "SkipPlan",
    "plan_selection",
    "plan_skip",
    "plan_target",
    "search_shares",
    "stand_in",
    "largest_passing",
    "default_candidate",
]

#: Share of the epsilon (after the label release) spent on the validation
#: row count, released once to turn the best run's noisy score sum into a
#: mean (``best_score_``) ...
VALIDATION_COUNT_FRACTION = 0.05
#: ... and at most this share of the selection's part.
VALIDATION_COUNT_SELECTION_FRACTION = 0.2

#: With the default candidate in the grid, the chance that the selection
#: replaces it when every candidate scores what it scores (a false switch).
DEFAULT_EVIDENCE_LEVEL = 0.01

#: Parameters of the candidates that the search sets itself.
RESERVED_PARAMETERS = ("epsilon", "delta", "budget", "random_state", "verbose")

# Plans are expensive (a calibration per candidate per trial epsilon) and
# the same search is often fitted again (seeds, benchmarks, checks).
_PLAN_CACHE: dict = {}


def stand_in(X, classes):
    """Two public rows with the schema of the validated data (no private value)."""
    n_features = X.shape[1]
    X_public = sp.csr_matrix((2, n_features)) if sp.issparse(X) else np.zeros((2, n_features))
    y_public = np.asarray(classes)[:2] if classes is not None else np.zeros(2)
    return X_public, y_public


def _plan_candidate(candidate, epsilon, delta, X_public, y_public):
    """(event, solver) of the DP estimator ``candidate`` fitted at (epsilon, delta): its FitPlan."""
    model = clone(candidate).set_params(
        epsilon=float(epsilon), delta=float(delta), budget=None, verbose=0, random_state=0
    )
    plan = model._fit_plan(X_public, y_public)
    return plan.event, plan.solver


def plan_target(candidate, epsilon, delta, X_public, y_public):
    """(event, solver) of ``candidate`` (a DP estimator or a Pipeline) fitted at (epsilon, delta)."""
    if isinstance(candidate, Pipeline):
        return plan_pipeline(
            candidate,
            epsilon,
            delta,
            X_public,
            y_public,
            lambda *args: _plan_candidate(*args),
        )
    return _plan_candidate(candidate, epsilon, delta, X_public, y_public)


class SearchPlan:
    """The public plan of a search: per-run epsilons, noise scales and the search event.

    Attributes
    ----------
    fit_epsilon : float
        Epsilon each run's candidate is fitted at (with ``delta``).
    score_mechanism : {"gaussian", "laplace"}
    score_noise_multiplier : float
        Noise of the score relative to its sensitivity (Gaussian standard
        deviation, or Laplace scale).
    count_epsilon : float
        Epsilon of the validation row count.
    run_event : DpEvent
        One run, as accounted.
    event : DpEvent
        The selection (count and repeated runs).
    candidate_events : list of DpEvent
        Each candidate's own fit event (a run whose fit reports another one
        outputs nothing).
    solvers : list of str
        Each candidate's solver.
    default_index : int or None
        The candidate that fits what the estimator fits as given (see
        :func:`default_candidate`), run once more and kept unless the
        selection's evidence beats the noise; None: no such candidate, or
        ``prefer_default=False``.
    evidence_threshold : float or None
        The margin by which the best run's noisy score sum must beat the
        default's for the best run to be kept, relative to the score's
        sensitivity, as :attr:`score_noise_multiplier` is
        (:func:`~sklearn_dp.model_selection._selection.evidence_threshold`
        times that multiplier).
    skippable : bool
        Whether the runs may be skipped, from the released validation row
        count, for a refit of the default candidate (a default candidate
        and a refit).  The runs are then calibrated without the count,
        which is accounted with the branch it picks (:func:`plan_skip`).
    """

    def __init__(
        self,
        fit_epsilon,
        score_mechanism,
        score_noise_multiplier,
        count_epsilon,
        delta,
        run_event,
        event,
        candidate_events,
        solvers,
        default_index=None,
        evidence_threshold=None,
        skippable=False,
    ):
        self.fit_epsilon = fit_epsilon
        self.score_mechanism = score_mechanism
        self.score_noise_multiplier = score_noise_multiplier
        self.count_epsilon = count_epsilon
        self.delta = delta
        self.run_event = run_event
        self.event = event
        self.candidate_events = candidate_events
        self.solvers = solvers
        self.default_index = default_index
        self.evidence_threshold = evidence_threshold
        self.skippable = skippable


def _public_value(value):
    """``value`` with estimators spelled out by type and parameters (their repr is abbreviated)."""
    if isinstance(value, BaseEstimator):
        params = sorted(value.get_params(deep=False).items())
        return (type(value).__module__, type(value).__qualname__, _public_value(params))
    if isinstance(value, (list, tuple)):
        return type(value)(_public_value(v) for v in value)
    if isinstance(value, dict):
        return sorted((k, _public_value(v)) for k, v in value.items())
    return value


def _holds_fitted_state(value):
    """Whether ``value`` holds a frozen step (its output depends on a fit made before)."""
    if isinstance(value, BaseEstimator):
        return type(value).__name__ == "FrozenEstimator" or any(
            _holds_fitted_state(v) for v in value.get_params(deep=False).values()
        )
    if isinstance(value, (list, tuple)):
        return any(_holds_fitted_state(v) for v in value)
    return False


def _settings(estimator):
    """The estimator's own settings as a cache key (what the search sets itself left out)."""
    if isinstance(estimator, Pipeline):
        # Every step's parameters, by name (repr of an estimator is
        # abbreviated); the steps' epsilons and deltas set the shares.
        items = (
            (k, _public_value(v))
            for k, v in estimator.get_params(deep=True).items()
            if k.rsplit("__", 1)[-1] not in ("budget", "random_state", "verbose")
        )
    else:
        items = (
            (k, v)
            for k, v in estimator.get_params(deep=False).items()
            if k not in RESERVED_PARAMETERS
        )
    return repr(sorted(items, key=lambda item: item[0]))


def _same_value(first, second):
    """Whether two parameter values are equal (values without a plain truth value are not)."""
    if first is second:
        return True
    try:
        return bool(first == second) and type(first) is not np.ndarray
    except Exception:
        return False


def default_candidate(estimator, candidates, fixed, X_public, y_public, epsilon, delta):
    """Index of the one candidate that fits what ``estimator`` fits as given, or None.

    A candidate matches when each of its parameters equals the estimator's
    own value, or the estimator leaves that parameter to its default
    (``None``) and setting it changes neither the solver nor the mechanism
    planned (a grid over ``max_iter`` holding the solver's default number
    of steps).  None unless exactly one candidate matches.  Public: the
    parameters and the plans only.
    """
    own = estimator.get_params(deep=True)
    base = plan_target(clone(estimator).set_params(**fixed), epsilon, delta, X_public, y_public)
    same_plan = {}

    def matches(key, value):
        if key not in own:
            return False
        if _same_value(own[key], value):
            return True
        if own[key] is not None:
            return False
        if (key, repr(value)) not in same_plan:
            try:
                planned = plan_target(
                    clone(estimator).set_params(**fixed, **{key: value}),
                    epsilon,
                    delta,
                    X_public,
                    y_public,
                )
            except Exception:
                planned = None
            same_plan[key, repr(value)] = planned == base
        return same_plan[key, repr(value)]

    found = [
        index
        for index, params in enumerate(candidates)
        if all(matches(key, value) for key, value in params.items())
    ]
    return found[0] if len(found) == 1 else None


def _plan_key(search, candidates, X_public, y_public, fixed, *numbers):
    """The cache key of a search's plan: its public settings and ``numbers``."""
    with np.printoptions(threshold=sys.maxsize):
        settings = _settings(search.estimator)
        searched = repr(candidates)
    return (
        type(search.estimator).__name__,
        settings,
        searched,
        type(X_public).__name__,
        X_public.shape[1],
        repr(y_public.tolist()),
        repr(fixed),
        float(search.n_candidates),
        math.inf if search.distribution == "poisson" else float(search.shape),
        float(search.score_fraction),
        bool(search.prefer_default),
        bool(search.refit),
        *numbers,
    )


def plan_selection(
    search, candidates, X_public, y_public, epsilon, delta, fixed, count_epsilon, default_index
):
    """The largest per-run fit epsilon whose selection event meets (epsilon, delta) under RDP.

    ``epsilon`` covers the validation count (Laplace, ``count_epsilon``)
    and the repeated runs together.  Where the runs cannot be skipped the
    RDP accountant composes the count and the runs.  Where they can (a
    default candidate and a refit, :attr:`SearchPlan.skippable`), the count
    chooses between the runs and a refit of the default (see
    :func:`plan_skip`): the runs alone then meet
    ``(epsilon - count_epsilon, delta)``, and the count is accounted with
    the branch it picks.  ``default_index`` is :attr:`SkipPlan.default_index`.

    ``fixed`` holds parameters set on every candidate (a placeholder
    label set when the search releases the labels itself).  See
    :func:`~sklearn_dp.model_selection._selection.run_event` for how a
    run is accounted.
    """
    mean = float(search.n_candidates)
    shape = math.inf if search.distribution == "poisson" else float(search.shape)
    score_fraction = float(search.score_fraction)
    key = _plan_key(
        search, candidates, X_public, y_public, fixed, epsilon, delta, count_epsilon, default_index
    )
    # A frozen step's output depends on its fitted state, not on its
    # parameters: such a search is planned afresh every time.
    cacheable = not _holds_fitted_state(search.estimator)
    if cacheable and key in _PLAN_CACHE:
        return _PLAN_CACHE[key]
    name = type(search).__name__
    classes = f"{final_prefix(search.estimator)}classes"

    def plans(fit_epsilon):
        out = []
        for params in candidates:
            candidate = clone(search.estimator).set_params(**params, **fixed)
            out.append(plan_target(candidate, fit_epsilon, delta, X_public, y_public))
        return out

    def check_events(candidate_plans):
        for params, (event, solver) in zip(candidates, candidate_plans):
            if event is None:
                raise ValueError(
                    f"{name}: the mechanism of candidate {params} (solver={solver!r}) "
                    "depends on the private row count, so it is not known before the "
                    "data is read; give it public settings (for example max_iter=, no "
                    "batch_size=) or leave it out of the grid."
                )
            if not rdp_supports(event):
                raise ValueError(
                    f"{name}: the mechanism of candidate {params} (solver={solver!r}) has "
                    "no Renyi-DP description, which private selection needs (Papernot and "
                    "Steinke 2022). Use solvers with Gaussian or Laplace noise (dp_gd, "
                    "dp_sgd, dp_cd, output_perturbation)."
                )

    def check_label_set_independence(fit_epsilon):
        # With a released label set, the runs' mechanism must not depend
        # on how many labels are released (it is planned before).
        for params in candidates:
            events = [
                plan_target(
                    clone(search.estimator).set_params(**params, **{classes: labels}),
                    fit_epsilon,
                    delta,
                    X_public,
                    np.asarray(labels[:2]),
                )[0]
                for labels in ([0, 1], [0, 1, 2], list(range(7)))
            ]
            if not all(event == events[0] for event in events):
                raise ValueError(
                    f"{name}: the mechanism of candidate {params} depends on the number "
                    "of classes, which the search releases privately when classes=None; "
                    "pass classes=[...], the public label set."
                )

    def build(fit_epsilon, candidate_plans):
        run, mechanism, multiplier = run_event(
            [event for event, _ in candidate_plans],
            score_epsilon=fit_epsilon * score_fraction / (1.0 - score_fraction),
        )
        return (
            run,
            mechanism,
            multiplier,
            selection_event(
                run, 1.0 / count_epsilon, mean, shape, default_run=default_index is not None
            ),
        )

    def excess(log_fit_epsilon):
        fit_epsilon = math.exp(log_fit_epsilon)
        event = build(fit_epsilon, plans(fit_epsilon))[3]
        if skippable:
            # The runs alone (the event without its count) meet what the
            # count leaves.
            runs_alone = dpe.ComposedDpEvent(event.events[1:])
            return rdp_epsilon(runs_alone, delta) - (epsilon - count_epsilon)
        return rdp_epsilon(event, delta) - epsilon

    lo = math.log(MIN_EPSILON)
    hi = math.log(min(epsilon, MAX_EPSILON))
    check_events(plans(math.exp(hi)))
    skippable = default_index is not None and bool(search.refit)
    if classes in fixed:
        check_label_set_independence(math.exp(hi))
    log_fit = largest_passing(excess, lo, hi, math.log(epsilon / (1.0 + math.log(mean))))
    if log_fit is None:
        raise ValueError(
            f"{name}: epsilon={epsilon:.4g} (the selection's share) is too small for "
            f"{mean:g} runs on average: each run would need epsilon below {MIN_EPSILON:g}. "
            "Raise epsilon, or lower n_candidates."
        )
    fit_epsilon = math.exp(log_fit)
    candidate_plans = plans(fit_epsilon)
    check_events(candidate_plans)
    run, mechanism, multiplier, event = build(fit_epsilon, candidate_plans)
    plan = SearchPlan(
        fit_epsilon=fit_epsilon,
        score_mechanism=mechanism,
        score_noise_multiplier=multiplier,
        count_epsilon=count_epsilon,
        delta=delta,
        run_event=run,
        event=event,
        candidate_events=[event for event, _ in candidate_plans],
        solvers=[solver for _, solver in candidate_plans],
        default_index=default_index,
        evidence_threshold=(
            None
            if default_index is None
            else evidence_threshold(mean, shape, mechanism, DEFAULT_EVIDENCE_LEVEL) * multiplier
        ),
        skippable=skippable,
    )
    if cacheable:
        if len(_PLAN_CACHE) > 256:
            _PLAN_CACHE.clear()
        _PLAN_CACHE[key] = plan
    return plan


class SkipPlan(NamedTuple):
    """How a search whose runs may be skipped spends its guarantee (see :func:`plan_skip`).

    Attributes
    ----------
    default_index : int or None
        The default candidate (:func:`default_candidate`), or None.
    skippable : bool
        Whether the released count picks between the runs and a refit of
        the default candidate (a default candidate and ``refit=True``).
    refit_epsilon, refit_delta : float
        The default's refit when the runs are skipped; composed with the
        count, it meets what the label release leaves.
    branch_delta : float
        The delta the runs and their refit spend together (basic
        composition, with the epsilon the count leaves).
    refit_event : DpEvent or None
        The event the default's refit was planned with, when the count is
        composed with it numerically (None: by basic composition).
    """

    default_index: int | None
    skippable: bool
    refit_epsilon: float
    refit_delta: float
    branch_delta: float
    refit_event: dpe.DpEvent | None = None


_SKIP_CACHE: dict = {}


#: Below this share of delta for the runs and their refit, the count is
#: paid by basic composition instead: the runs' noise would grow more than
#: the default refit's shrinks (their Gaussian noise grows as the square
#: root of log(1 / delta): 6% at a quarter of delta 1e-5; the refit's
#: shrinks by about the count's share, 2%).  The default logistic fit keeps
#: 62% to 73% of delta for the runs (epsilon 4 to 0.5, public or "auto"
#: row bounds).
MIN_BRANCH_DELTA_SHARE = 0.25

#: The runs' delta is set this much below the largest that
#: :func:`~sklearn_dp.accounting.mixture_delta` certifies (it is certified
#: again at the value set, so this only keeps that check from failing on
#: the last bits of the floats).
BRANCH_DELTA_MARGIN = 0.999


def plan_skip(search, candidates, X_public, y_public, fixed, rest, count_epsilon):
    """Account the validation count with the branch it picks: the runs, or the default's refit.

    ``rest`` is the ``(epsilon, delta)`` the count and what follows it
    must meet (the search's guarantee less the label release).  The count
    ``C`` (Laplace, pure ``count_epsilon``-DP) picks one of two branches:
    the default candidate's refit ``R`` on all rows, at the largest epsilon
    for which ``C`` composed with ``R``'s event meets ``rest`` under
    dp_accounting's PLD accountant (the same numerical composition an
    estimator makes of its own count and steps); or the runs and their
    refit, which together are ``(epsilon_rest - count_epsilon,
    branch_delta)``-DP by basic composition.  The whole search is
    ``rest``-DP whichever branch the count picks (conditional on the split
    of the rows, which does not depend on their values) when
    :func:`~sklearn_dp.accounting.mixture_delta`, with ``C`` as the
    prefix, ``R`` as the reference and the runs' guarantee as the other
    branch, bounds the mixture by ``rest``'s delta: ``branch_delta`` is the
    largest delta for which it does (at most ``rest``'s), found in one
    probe, as the bound grows one for one with it above ``R``'s curve at
    ``epsilon + count_epsilon``.

    Where the default's refit gets no more than basic composition, or where
    ``branch_delta`` would fall below :data:`MIN_BRANCH_DELTA_SHARE` of
    delta, both branches get ``(epsilon_rest - count_epsilon, delta_rest)``
    and the count is paid by basic composition.
    """
    epsilon, delta = float(rest[0]), float(rest[1])
    key = _plan_key(search, candidates, X_public, y_public, fixed, epsilon, delta, count_epsilon)
    cacheable = not _holds_fitted_state(search.estimator)
    if cacheable and key in _SKIP_CACHE:
        return _SKIP_CACHE[key]
    default_index = (
        default_candidate(
            search.estimator,
            candidates,
            fixed,
            X_public,
            y_public,
            min(epsilon, MAX_EPSILON),
            delta,
        )
        if search.prefer_default
        else None
    )
    basic = epsilon - count_epsilon
    skip = SkipPlan(default_index, False, basic, delta, delta)
    if default_index is not None and search.refit:
        default = clone(search.estimator).set_params(**candidates[default_index], **fixed)

        def refit_event(refit_epsilon):
            return plan_target(default, refit_epsilon, delta, X_public, y_public)[0]

        count_event = dpe.LaplaceDpEvent(1.0 / count_epsilon)
        refit_epsilon = largest_share(refit_event, count_event, epsilon, delta, basic)
        event = refit_event(refit_epsilon) if refit_epsilon > basic else None
        branch_delta = 0.0
        if event is not None:
            # Above the refit's curve the bound grows one for one with the
            # runs' delta: one probe at delta finds the largest that fits.
            probe = mixture_delta(count_event, event, (basic, delta), epsilon, count_epsilon)
            branch_delta = min(delta, BRANCH_DELTA_MARGIN * (2.0 * delta - probe))
        if branch_delta >= MIN_BRANCH_DELTA_SHARE * delta and (
            mixture_delta(count_event, event, (basic, branch_delta), epsilon, count_epsilon)
            <= delta
        ):
            skip = SkipPlan(default_index, True, refit_epsilon, delta, branch_delta, event)
        else:
            skip = SkipPlan(default_index, True, basic, delta, delta)
    if cacheable:
        if len(_SKIP_CACHE) > 256:
            _SKIP_CACHE.clear()
        _SKIP_CACHE[key] = skip
    return skip


def largest_passing(excess, lo, hi, guess):
    """Largest x in [lo, hi] (to 1e-3) with ``excess(x) <= 0``; None if even ``lo`` fails.

    ``excess`` is increasing (more epsilon per run, more epsilon in all).
    Each evaluation plans every candidate (a calibration each), so the
    crossing is bracketed from a guess (one run costs about ``1 + log
    E[K]`` runs' worth of epsilon) before Brent's method.
    """
    guess = min(max(guess, lo), hi)
    step = math.log(1.5)
    value = excess(guess)
    if value <= 0:
        below = guess
        above = None
        while above is None:
            if below >= hi:
                return hi
            candidate = min(below + step, hi)
            if excess(candidate) > 0:
                above = candidate
            else:
                below = candidate
    else:
        above = guess
        below = None
        while below is None:
            if above <= lo:
                return None
            candidate = max(above - step, lo)
            if excess(candidate) <= 0:
                below = candidate
            else:
                above = candidate
    x = optimize.brentq(excess, below, above, xtol=1e-3, rtol=1e-6)
    # brentq lands within xtol of the crossing, on either side of it.
    while x > below and excess(x) > 0:
        x = max(below, x - 1e-3)
    return x


def search_shares(search, discover_labels):
    """How the guarantee is split (basic composition between the parts).

    Returns ``(label, count, runs, refit)``, each ``(epsilon, delta)``:
    the label release (when the search releases the label set: the
    estimators' share of the total), the validation row count, the runs,
    and the refit.  The refit takes ``refit_fraction`` of what the label
    release leaves: the count only normalises the released score, so it
    comes out of the selection's part (5% of what the labels leave, at most
    a fifth of the selection's part), not out of the model kept.  The
    selection's entry holds the first three.
    """
    if discover_labels:
        label = (label_epsilon(search.epsilon), LABEL_DELTA_FRACTION * search.delta)
    else:
        label = (0.0, 0.0)
    rest = (search.epsilon - label[0], search.delta - label[1])
    if search.refit:
        refit = (search.refit_fraction * rest[0], search.refit_fraction * rest[1])
    else:
        refit = (0.0, 0.0)
    selection = (rest[0] - refit[0], rest[1] - refit[1])
    count = (
        min(
            VALIDATION_COUNT_FRACTION * rest[0], VALIDATION_COUNT_SELECTION_FRACTION * selection[0]
        ),
        0.0,
    )
    runs = (selection[0] - count[0], selection[1])
    return label, count, runs, refit
