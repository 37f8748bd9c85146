"""Mechanism descriptions and noise calibration.

Every solver describes its whole fit as a :class:`dp_accounting.DpEvent` built
under the add-or-remove-one neighbouring relation, with noise multipliers
expressed relative to the sensitivity of the quantity they protect
(``noise std = noise_multiplier * sensitivity``).  This module turns such a
description into an epsilon, and a target (epsilon, delta) into the smallest
noise multiplier that meets it.

Which accountant is used
------------------------
* Compositions of plain Gaussian mechanisms (full-batch steps) are exact: T
  Gaussian mechanisms with multipliers ``s_t`` are one Gaussian mechanism with
  multiplier ``(sum_t s_t ** -2) ** -1/2``, whose (epsilon, delta) curve is the
  analytic Gaussian mechanism of Balle and Wang (2018).
* Compositions of pure Laplace mechanisms are exact too: their epsilons add.
* Everything else (Poisson-subsampled Gaussian steps, mixtures of mechanisms)
  goes through dp_accounting's privacy-loss-distribution (PLD) accountant,
  whose estimates are pessimistic (never below the true epsilon), with the
  Renyi (RDP) accountant as a fallback for events PLD does not support.

No function here looks at data.  Results are cached, because calibration is
called once per fit with the same public inputs again and again (for example
in a grid search).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from numbers import Real

import dp_accounting
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

__all__ = [
    "NEIGHBORING_RELATION",
    "gaussian_steps_event",
    "subsampled_gaussian_steps_event",
    "laplace_steps_event",
    "gaussian_noise_multiplier",
    "subsampled_gaussian_noise_multiplier",
    "laplace_noise_multiplier",
    "calibrate_noise_multiplier",
    "epsilon_of_event",
    "epsilon_of_events",
    "is_pure_event",
    "PureEpsilonDpEvent",
    "ClosedFormDpEvent",
]

#: The one neighbouring relation used everywhere in sklearn_dp.
NEIGHBORING_RELATION = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

# PLD discretisation: finer is tighter but slower.  1e-4 is dp_accounting's
# default; calibration searches with a coarser grid first (always pessimistic,
# so never under-noising) and only refines the final bracket.
_PLD_FINE = 1e-4
_PLD_COARSE = 1e-3


# --------------------------------------------------------------------------
# Event builders
# --------------------------------------------------------------------------


def gaussian_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms on the full data set."""
    _check_steps(n_steps)
    step = dpe.GaussianDpEvent(float(noise_multiplier))
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def subsampled_gaussian_steps_event(
    noise_multiplier: float, sampling_probability: float, n_steps: int
) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms, each on a Poisson sample."""
    _check_steps(n_steps)
    if sampling_probability >= 1.0:
        return gaussian_steps_event(noise_multiplier, n_steps)
    step = dpe.PoissonSampledDpEvent(
        float(sampling_probability), dpe.GaussianDpEvent(float(noise_multiplier))
    )
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def laplace_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Laplace mechanisms (L1 sensitivity) on the full data."""
    _check_steps(n_steps)
    step = dpe.LaplaceDpEvent(float(noise_multiplier))
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def _check_steps(n_steps):
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")


# --------------------------------------------------------------------------
# Epsilon of an event
# --------------------------------------------------------------------------


def _flatten(event: dpe.DpEvent, count: int = 1):
    """Yield (leaf_event, count) pairs of a composition."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        yield from _flatten(event.event, count * event.count)
    elif isinstance(event, dpe.ComposedDpEvent):
        for sub in event.events:
            yield from _flatten(sub, count)
    else:
        yield event, count


def _gaussian_only_multiplier(event: dpe.DpEvent) -> float | None:
    """Multiplier of the single Gaussian equivalent to ``event``, or None.

    Returns None when the composition contains anything but full-data Gaussian
    mechanisms (and no-ops); returns ``inf`` for a composition of no-ops only.
    """
    precision = 0.0
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.NoOpDpEvent):
            continue
        if not isinstance(leaf, dpe.GaussianDpEvent):
            return None
        if leaf.noise_multiplier <= 0:
            return 0.0
        precision += count / leaf.noise_multiplier**2
    return math.inf if precision == 0 else precision**-0.5


def _pure_epsilon(event: dpe.DpEvent) -> float | None:
    """Exact pure epsilon of a composition of Laplace mechanisms, or None."""
    total = 0.0
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.NoOpDpEvent):
            continue
        if isinstance(leaf, dpe.LaplaceDpEvent):
            if leaf.noise_multiplier <= 0:
                return math.inf
            total += count / leaf.noise_multiplier
        elif isinstance(leaf, PureEpsilonDpEvent):
            total += count * leaf.epsilon
        else:
            return None
    return total


def is_pure_event(event: dpe.DpEvent) -> bool:
    """Whether ``event`` is pure epsilon-DP (a composition of pure mechanisms)."""
    return _pure_epsilon(event) is not None


class PureEpsilonDpEvent(dpe.UnsupportedDpEvent):
    """A mechanism proven pure ``epsilon``-DP by a closed-form argument.

    dp_accounting has no event for an arbitrary pure-DP mechanism (for example
    objective perturbation with Gamma-norm noise).  Such a mechanism is
    recorded with this event; :func:`epsilon_of_event` composes it exactly with
    other pure events (epsilons add) and refuses to mix it into numerical
    accounting, where dp_accounting would treat it as unsupported.
    """

    __slots__ = ("epsilon", "mechanism")

    def __init__(self, epsilon: float, mechanism: str):
        object.__setattr__(self, "epsilon", float(epsilon))
        object.__setattr__(self, "mechanism", str(mechanism))

    def __repr__(self):
        return f"PureEpsilonDpEvent(epsilon={self.epsilon!r}, mechanism={self.mechanism!r})"

    def __eq__(self, other):
        return (
            isinstance(other, PureEpsilonDpEvent)
            and other.epsilon == self.epsilon
            and other.mechanism == self.mechanism
        )

    def __hash__(self):
        return hash((PureEpsilonDpEvent, self.epsilon, self.mechanism))

    def __reduce__(self):
        return (PureEpsilonDpEvent, (self.epsilon, self.mechanism))


class ClosedFormDpEvent(dpe.UnsupportedDpEvent):
    """Base of mechanisms whose epsilon(delta) curve is a proven closed form.

    Some mechanisms (for example objective perturbation with Gaussian noise)
    have a privacy-loss bound that no dp_accounting event describes.  A
    subclass implements :meth:`epsilon` (a valid upper bound on the epsilon of
    the whole mechanism at any ``delta``, add/remove-one neighbours);
    :func:`epsilon_of_event` uses it for the event on its own.  Compositions
    with other events are not supported numerically (basic composition still
    applies in a :class:`~sklearn_dp.PrivacyBudget`).
    """

    __slots__ = ()

    def epsilon(self, delta: float) -> float:  # pragma: no cover - interface
        raise NotImplementedError


def _numerical_epsilon(event: dpe.DpEvent, delta: float, discretization: float) -> float:
    pld = pld_privacy_accountant.PLDAccountant(
        NEIGHBORING_RELATION, value_discretization_interval=discretization
    )
    if pld.supports(event):
        pld.compose(event)
        return float(pld.get_epsilon(delta))
    rdp = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    if rdp.supports(event):
        rdp.compose(event)
        return float(rdp.get_epsilon(delta))
    raise ValueError(f"No accountant supports the event {event!r}.")


def epsilon_of_event(event: dpe.DpEvent, delta: float) -> float:
    """Epsilon at ``delta`` guaranteed by ``event`` (add/remove-one neighbours).

    Exact for compositions of full-data Gaussian mechanisms and of pure
    mechanisms; otherwise a pessimistic PLD estimate (RDP when PLD does not
    support the event).  ``inf`` for a non-private event.
    """
    delta = _check_delta(delta, allow_zero=True)
    if isinstance(event, dpe.NonPrivateDpEvent) or any(
        isinstance(leaf, (dpe.NonPrivateDpEvent,)) for leaf, _ in _flatten(event)
    ):
        return math.inf
    pure = _pure_epsilon(event)
    if pure is not None:
        return pure
    if isinstance(event, ClosedFormDpEvent):
        return float(event.epsilon(delta))
    sigma = _gaussian_only_multiplier(event)
    if sigma is not None:
        if sigma == math.inf:
            return 0.0
        if sigma == 0.0 or delta == 0.0:
            return math.inf
        return float(gaussian_mechanism.get_epsilon_gaussian(sigma, delta))
    if delta == 0.0:
        return math.inf
    return _numerical_epsilon(event, delta, _PLD_FINE)


def epsilon_of_events(events: Iterable[dpe.DpEvent], delta: float) -> float:
    """Epsilon at ``delta`` of the adaptive composition of ``events``."""
    events = list(events)
    if not events:
        return 0.0
    return epsilon_of_event(dpe.ComposedDpEvent(events), delta)


# --------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------


def _check_epsilon(epsilon):
    if not isinstance(epsilon, Real) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a float > 0 (or inf), got {epsilon!r}.")
    return float(epsilon)


def _check_delta(delta, allow_zero):
    if not isinstance(delta, Real) or math.isnan(delta) or not 0 <= delta < 1:
        raise ValueError(f"delta must be a float in [0, 1), got {delta!r}.")
    if delta == 0 and not allow_zero:
        raise ValueError(
            "delta=0 (pure epsilon-DP) cannot be reached with Gaussian noise; "
            "pass a delta > 0 (for example 1e-5, well below 1/n), or use a "
            "solver with a pure-DP mode (objective_perturbation, "
            "output_perturbation, vr_frank_wolfe)."
        )
    return float(delta)


@functools.lru_cache(maxsize=1024)
def gaussian_noise_multiplier(epsilon: float, delta: float, n_steps: int = 1) -> float:
    """Smallest multiplier for ``n_steps`` full-data Gaussian steps to be (epsilon, delta)-DP.

    Exact: the composition of ``n_steps`` Gaussian mechanisms with multiplier
    ``s`` is one Gaussian mechanism with multiplier ``s / sqrt(n_steps)``, and
    the analytic Gaussian mechanism gives the smallest multiplier of one step.
    Returns 0.0 for ``epsilon=inf``.
    """
    epsilon = _check_epsilon(epsilon)
    _check_steps(n_steps)
    if math.isinf(epsilon):
        return 0.0
    delta = _check_delta(delta, allow_zero=False)
    sigma_one = gaussian_mechanism.get_sigma_gaussian(epsilon, delta, tol=1e-12)
    # get_sigma_gaussian solves to a tolerance; nudge up so the returned noise
    # is on the private side of the exact optimum.
    sigma_one *= 1.0 + 1e-9
    while gaussian_mechanism.get_epsilon_gaussian(sigma_one, delta) > epsilon:
        sigma_one *= 1.0 + 1e-7
    return float(math.sqrt(n_steps) * sigma_one)


def laplace_noise_multiplier(epsilon: float, n_steps: int = 1) -> float:
    """Multiplier (scale / L1 sensitivity) of ``n_steps`` Laplace steps for pure epsilon-DP."""
    epsilon = _check_epsilon(epsilon)
    _check_steps(n_steps)
    if math.isinf(epsilon):
        return 0.0
    return float(n_steps) / epsilon


@functools.lru_cache(maxsize=1024)
def subsampled_gaussian_noise_multiplier(
    epsilon: float, delta: float, sampling_probability: float, n_steps: int
) -> float:
    """Smallest multiplier for ``n_steps`` Poisson-subsampled Gaussian steps.

    Calibrated with the PLD accountant (pessimistic estimates, so the result
    never under-noises); a full-data rate (``sampling_probability >= 1``) falls
    back to the exact Gaussian composition.
    """
    if not 0 < sampling_probability <= 1:
        raise ValueError(
            f"sampling_probability must be in (0, 1], got {sampling_probability!r}."
        )
    if sampling_probability >= 1:
        return gaussian_noise_multiplier(epsilon, delta, n_steps)
    epsilon = _check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    delta = _check_delta(delta, allow_zero=False)

    def make_event(sigma):
        return subsampled_gaussian_steps_event(sigma, sampling_probability, n_steps)

    # Subsampling never needs more noise than the full-data composition, which
    # gives a safe upper end for the search.
    upper = gaussian_noise_multiplier(epsilon, delta, n_steps)
    return _calibrate(make_event, epsilon, delta, upper)


def calibrate_noise_multiplier(
    make_event: Callable[[float], dpe.DpEvent],
    epsilon: float,
    delta: float,
    *,
    upper: float | None = None,
) -> float:
    """Smallest multiplier ``s`` such that ``make_event(s)`` is (epsilon, delta)-DP.

    ``make_event`` must describe the whole fit and must be monotone (more noise,
    less epsilon).  ``upper``, when given, is a multiplier known to suffice.
    Results are not cached here (``make_event`` is not hashable in general);
    solvers cache on their own public inputs.
    """
    epsilon = _check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    delta = _check_delta(delta, allow_zero=False)
    return _calibrate(make_event, epsilon, delta, upper)


def _calibrate(make_event, epsilon, delta, upper):
    if upper is None:
        upper = 1.0
        while _event_epsilon_fast(make_event(upper), delta, _PLD_COARSE) > epsilon:
            upper *= 2.0
            if upper > 1e8:
                raise ValueError("Could not find a noise multiplier for this budget.")
    # Search on the coarse PLD grid (pessimistic, hence a valid upper bound on
    # the true epsilon): the result is private, and only a little more
    # noisy than the fine-grid optimum.
    lower = upper / 2.0
    while lower > 1e-6 and _event_epsilon_fast(make_event(lower), delta, _PLD_COARSE) <= epsilon:
        upper, lower = lower, lower / 2.0
    for _ in range(40):
        if upper - lower <= 1e-3 * upper:
            break
        middle = 0.5 * (lower + upper)
        if _event_epsilon_fast(make_event(middle), delta, _PLD_COARSE) <= epsilon:
            upper = middle
        else:
            lower = middle
    # Final check of the returned value with the fine accountant; the coarse
    # estimate is already pessimistic, so this only guards against a bug.
    sigma = upper
    if epsilon_of_event(make_event(sigma), delta) > epsilon * (1 + 1e-9):
        raise AssertionError(
            "Calibration produced a noise multiplier that fails its own check; "
            "please report this."
        )
    return float(sigma)


def _event_epsilon_fast(event, delta, discretization):
    sigma = _gaussian_only_multiplier(event)
    if sigma is not None:
        return epsilon_of_event(event, delta)
    return _numerical_epsilon(event, delta, discretization)

