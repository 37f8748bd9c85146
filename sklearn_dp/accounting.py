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

Which of dp_accounting's own accountants reads which part of a ``dp_event_``
(a pure epsilon-DP part is a discrete Laplace event, read by PLD as binary
randomized response; the label set's approximate-DP release by neither) is
listed by :func:`accountant_event`; :func:`accountant_epsilon` recomputes a
``dp_event_`` with either accountant.

No function here looks at data.  Results are cached, because calibration is
called once per fit with the same public inputs again and again (for example
in a grid search).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from numbers import Integral, Real

import dp_accounting
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from scipy import optimize

from ._memo import memoize

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
    "largest_share",
    "is_pure_event",
    "PureEpsilonDpEvent",
    "ClosedFormDpEvent",
    "accountant_event",
    "accountant_epsilon",
    "ApproximateDpEvent",
    "zcdp_rho",
    "approximate_zcdp",
    "epsilon_of_zcdp",
]

#: The one neighbouring relation used everywhere in sklearn_dp.
NEIGHBORING_RELATION = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

# PLD discretisation: finer is tighter but slower.  1e-4 is dp_accounting's
# default; calibration searches with a coarser grid first (always pessimistic,
# so never under-noising) and only refines the final bracket.
_PLD_FINE = 1e-4
_PLD_COARSE = 1e-3


#: Below this epsilon the PLD grids stop shrinking with epsilon (their
#: relative slack then grows: 10% at epsilon = 1e-3 for the coarse grid).
_GRID_FLOOR = 1e-2


def _relative_grid(width, epsilon):
    """``width`` relative to ``epsilon``, for epsilon between ``_GRID_FLOOR`` and any size."""
    return width * max(_GRID_FLOOR, float(epsilon))


def _coarse_grid(epsilon):
    """The search grid for a target ``epsilon``: ``_PLD_COARSE`` relative to epsilon.

    A pessimistic grid only ever overstates epsilon, so its width changes how
    tightly a multiplier is calibrated, never whether it is private; a grid
    proportional to epsilon keeps the relative slack the same at large
    epsilon, where the privacy-loss distributions are wide and a fixed grid
    is slow (5x at epsilon = 10), and at small epsilon, where a fixed grid of
    1e-3 is as wide as the target itself (at epsilon = 1e-3 it calibrates 15x
    the noise needed).
    """
    return _relative_grid(_PLD_COARSE, epsilon)


# --------------------------------------------------------------------------
# Event builders
# --------------------------------------------------------------------------


def gaussian_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms on the full data set.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise divided by the L2 sensitivity of a step.
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``GaussianDpEvent``, self-composed ``n_steps`` times.
    """
    _check_steps(n_steps)
    step = dpe.GaussianDpEvent(float(noise_multiplier))
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def subsampled_gaussian_steps_event(
    noise_multiplier: float, sampling_probability: float, n_steps: int
) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms, each on a Poisson sample.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise divided by the L2 sensitivity of a step.
    sampling_probability : float
        Probability that a row is in a step's sample (``>= 1``: every row).
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``PoissonSampledDpEvent`` of a Gaussian, self-composed ``n_steps``
        times (the full-data event when ``sampling_probability >= 1``).
    """
    _check_steps(n_steps)
    if sampling_probability >= 1.0:
        return gaussian_steps_event(noise_multiplier, n_steps)
    step = dpe.PoissonSampledDpEvent(
        float(sampling_probability), dpe.GaussianDpEvent(float(noise_multiplier))
    )
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def laplace_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Laplace mechanisms (L1 sensitivity) on the full data.

    Parameters
    ----------
    noise_multiplier : float
        Scale of the Laplace noise divided by the L1 sensitivity of a step.
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``LaplaceDpEvent``, self-composed ``n_steps`` times.
    """
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
        elif isinstance(leaf, dpe.DiscreteLaplaceDpEvent):
            if leaf.noise_parameter <= 0:
                return math.inf
            total += count * leaf.noise_parameter * leaf.sensitivity
        else:
            return None
    return total


def is_pure_event(event: dpe.DpEvent) -> bool:
    """Whether ``event`` is pure epsilon-DP (a composition of pure mechanisms).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.

    Returns
    -------
    bool
        True when every part is a Laplace mechanism, a
        :class:`PureEpsilonDpEvent` or a no-op.
    """
    return _pure_epsilon(event) is not None


class PureEpsilonDpEvent(dpe.DiscreteLaplaceDpEvent):
    """A mechanism proven pure ``epsilon``-DP by a closed-form argument.

    Objective perturbation with L2 Laplace noise, an exponential mechanism:
    dp_accounting has no event for an arbitrary pure-DP mechanism, so this one
    *is* dp_accounting's ``DiscreteLaplaceDpEvent(noise_parameter=epsilon,
    sensitivity=1)``, the event whose privacy-loss distribution is exactly
    that of binary randomized response at ``epsilon`` (the loss is
    ``+epsilon`` with probability ``e^epsilon / (1 + e^epsilon)`` and
    ``-epsilon`` otherwise, in both directions).  Binary randomized response
    dominates every pure ``epsilon``-DP mechanism (Kairouz, Oh and Viswanath
    2015), under add/remove-one neighbours as under any other, so dp_accounting's
    ``PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)`` composes this event
    as a valid (and, for randomized response, exact) bound: epsilon at
    ``delta = 0`` is ``epsilon``.  (dp_accounting's own
    ``RandomizedResponseDpEvent`` would say the same, but both of its
    accountants refuse it under add/remove-one neighbours.)

    dp_accounting's ``RdpAccountant`` reads no discrete Laplace event:
    :func:`accountant_event` rewrites this one as ``ZCDpEvent(rho)`` with
    :func:`zcdp_rho`'s rho (``epsilon^2 / 2``; ``epsilon^2 / 8`` for an
    exponential mechanism, whose ``mechanism`` starts with
    :data:`EXPONENTIAL_MECHANISM`).  :func:`epsilon_of_event` composes it
    exactly with other pure events (epsilons add) and with the rest by the
    smaller of basic composition, privacy-loss distributions and zCDP.

    Parameters
    ----------
    epsilon : float
        The mechanism's pure epsilon.
    mechanism : str
        What the mechanism is (free text; a name starting with
        :data:`EXPONENTIAL_MECHANISM` marks an exponential mechanism).
    """

    __slots__ = ("mechanism",)

    def __init__(self, epsilon: float, mechanism: str):
        # Frozen attrs fields: set once, here.
        object.__setattr__(self, "noise_parameter", float(epsilon))
        object.__setattr__(self, "sensitivity", 1)
        object.__setattr__(self, "mechanism", str(mechanism))

    @property
    def epsilon(self) -> float:
        """The mechanism's pure epsilon (the discrete Laplace parameter at sensitivity 1)."""
        return self.noise_parameter

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
        # The arguments of every release (ledgers written before this class
        # was a discrete Laplace event load unchanged).
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
        """Epsilon of the mechanism at ``delta`` (add/remove-one neighbours).

        Parameters
        ----------
        delta : float
            The target delta.

        Returns
        -------
        float
            A valid upper bound on epsilon at ``delta``.
        """
        raise NotImplementedError


class ApproximateDpEvent(ClosedFormDpEvent):
    """A mechanism proven ``(epsilon, delta)``-DP for one fixed ``delta`` and nothing finer.

    For example the thresholded noisy histogram that discovers the label set
    (:func:`sklearn_dp._labels.release_labels`): Laplace noise gives
    ``epsilon``, the threshold bounds the probability of releasing a label
    held by one row by ``delta``.  Composed with other events by basic
    composition: it takes its own ``delta`` and the others share the rest.

    No dp_accounting accountant reads it, and no dp_accounting event can
    stand for it: a label held by a single row is released with probability
    up to ``delta``, an infinite privacy loss, which only
    ``NonPrivateDpEvent`` carries there.  :func:`accountant_event` sets it
    apart and :func:`accountant_epsilon` adds it by basic composition.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon at ``delta``.
    delta : float
        The one delta at which ``epsilon`` holds.
    mechanism : str
        What the mechanism is (free text).
    """

    __slots__ = ("approximate_epsilon", "approximate_delta", "mechanism")

    def __init__(self, epsilon: float, delta: float, mechanism: str):
        object.__setattr__(self, "approximate_epsilon", float(epsilon))
        object.__setattr__(self, "approximate_delta", float(delta))
        object.__setattr__(self, "mechanism", str(mechanism))

    def epsilon(self, delta: float) -> float:
        """Epsilon at ``delta``: the proven epsilon, or ``inf`` below its delta.

        Parameters
        ----------
        delta : float
            The target delta.

        Returns
        -------
        float
            ``epsilon`` when ``delta`` is at least the proven delta, else ``inf``.
        """
        return self.approximate_epsilon if delta >= self.approximate_delta else math.inf

    def __repr__(self):
        return (
            f"ApproximateDpEvent(epsilon={self.approximate_epsilon!r}, "
            f"delta={self.approximate_delta!r}, mechanism={self.mechanism!r})"
        )

    def _key(self):
        return (self.approximate_epsilon, self.approximate_delta, self.mechanism)

    def __eq__(self, other):
        return isinstance(other, ApproximateDpEvent) and other._key() == self._key()

    def __hash__(self):
        return hash((ApproximateDpEvent,) + self._key())

    def __reduce__(self):
        return (ApproximateDpEvent, self._key())


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
    mechanisms (at ``delta > 0`` the smaller of their sum and their zCDP
    bound); otherwise a pessimistic PLD estimate (RDP when PLD does not
    support the event).  Compositions that include closed-form mechanisms
    (:class:`ClosedFormDpEvent`) are bounded by basic composition; pure
    mechanisms (:class:`PureEpsilonDpEvent`) mixed with numerically accounted
    ones by the smaller of basic composition (their epsilons plus the rest at
    the full ``delta``) and zCDP.  ``inf`` for a non-private event.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism (usually a fit's ``dp_event_``).
    delta : float
        The target delta, in ``[0, 1)``.

    Returns
    -------
    float
        Epsilon of ``event`` at ``delta``.
    """
    delta = _check_delta(delta, allow_zero=True)
    epsilon = _epsilon(event, delta, _PLD_FINE)
    if 0 < epsilon < 1:
        # The fixed grid's slack is large relative to a small epsilon: refine
        # (both estimates are pessimistic, so the smaller one is valid too).
        epsilon = min(epsilon, _epsilon(event, delta, _relative_grid(_PLD_FINE, epsilon)))
    return epsilon


def _epsilon(event, delta, discretization):
    leaves = list(_flatten(event))
    if any(isinstance(leaf, dpe.NonPrivateDpEvent) for leaf, _ in leaves):
        return math.inf
    pure = _pure_epsilon(event)
    if pure is not None:
        if delta > 0 and pure > 0:
            # Many small pure mechanisms compose better under zCDP (a valid
            # bound too; the smaller one is returned).
            rho = zcdp_rho(event)
            if rho is not None and math.isfinite(rho):
                return min(pure, epsilon_of_zcdp(float(rho), float(delta)))
        return pure
    approximate = [(l, c) for l, c in leaves if isinstance(l, ApproximateDpEvent)]
    if approximate:
        # Basic composition: each approximate part takes its own delta, the
        # rest of the mechanism is evaluated at what is left.
        own_delta = math.fsum(c * l.approximate_delta for l, c in approximate)
        own_epsilon = math.fsum(c * l.approximate_epsilon for l, c in approximate)
        rest = [
            l if c == 1 else dpe.SelfComposedDpEvent(l, c)
            for l, c in leaves
            if not isinstance(l, ApproximateDpEvent)
        ]
        if own_delta > delta * (1 + 1e-12):
            return math.inf
        if not rest:
            return own_epsilon
        left = max(0.0, delta - own_delta)
        return own_epsilon + _epsilon(dpe.ComposedDpEvent(rest), left, discretization)
    closed = [(leaf, count) for leaf, count in leaves if isinstance(leaf, ClosedFormDpEvent)]
    if closed:
        # Basic composition: pure parts add their epsilons, every other part
        # gets an equal share of delta.
        pure_parts, rest = [], []
        for leaf, count in leaves:
            if isinstance(leaf, ClosedFormDpEvent):
                continue
            target = pure_parts if _pure_epsilon(leaf) is not None else rest
            target.append(leaf if count == 1 else dpe.SelfComposedDpEvent(leaf, count))
        shares = sum(count for _, count in closed) + (1 if rest else 0)
        share = delta / shares
        total = sum(_pure_epsilon(part) for part in pure_parts)
        total += sum(count * float(leaf.epsilon(share)) for leaf, count in closed)
        if rest:
            total += _epsilon(dpe.ComposedDpEvent(rest), share, discretization)
        return total
    pure_parts = [(l, c) for l, c in leaves if isinstance(l, PureEpsilonDpEvent)]
    if pure_parts:
        return _pure_and_numerical_epsilon(event, leaves, pure_parts, delta, discretization)
    sigma = _gaussian_only_multiplier(event)
    if sigma is not None:
        if sigma == math.inf:
            return 0.0
        if sigma == 0.0 or delta == 0.0:
            return math.inf
        return float(gaussian_mechanism.get_epsilon_gaussian(sigma, delta))
    if delta == 0.0:
        return math.inf
    return _numerical_epsilon(_fold_gaussians(event), delta, discretization)


def _pure_and_numerical_epsilon(event, leaves, pure_parts, delta, discretization):
    """Epsilon of pure mechanisms (:class:`PureEpsilonDpEvent`) composed with numerically accounted ones.

    dp_accounting's PLD accountant bounds a pure part by randomized response
    and its RDP accountant does not read it (only its zCDP rewriting), so
    three valid bounds are computed and the smallest one is returned:

    * basic composition (Dwork, Rothblum and Vadhan 2010, with one part pure):
      the epsilons of the pure parts add, and the rest of the mechanism is
      evaluated at the full ``delta`` (a pure part uses no delta);
    * zCDP (Bun and Steinke 2016), when every part has a known rho
      (:func:`zcdp_rho`: an exponential mechanism costs ``epsilon^2 / 8``,
      Cesar and Rogers 2021; a Gaussian ``1 / (2 s^2)``): the rhos add and
      the total is converted at ``delta``.  This is the tighter one for many
      small exponential mechanisms (per-feature bounds);
    * privacy-loss distributions, each pure part bounded by randomized
      response with its epsilon (:func:`_pld_with_pure_parts`): the tighter
      one for a few pure parts beside a large Gaussian mechanism (a fit's
      bound and its solver).

    All three are valid upper bounds at ``delta > 0`` (basic composition
    alone at ``delta = 0``), so their minimum is.
    """
    pure = math.fsum(c * l.epsilon for l, c in pure_parts)
    rest = [
        l if c == 1 else dpe.SelfComposedDpEvent(l, c)
        for l, c in leaves
        if not isinstance(l, PureEpsilonDpEvent)
    ]
    basic = pure + (_epsilon(dpe.ComposedDpEvent(rest), delta, discretization) if rest else 0.0)
    if delta > 0:
        bounds = [basic, _pld_with_pure_parts(rest, pure_parts, delta, discretization)]
        rho = zcdp_rho(event)
        if rho is not None and math.isfinite(rho):
            bounds.append(epsilon_of_zcdp(float(rho), float(delta)))
        return min(bounds)
    return basic


def _pld_with_pure_parts(rest, pure_parts, delta, discretization):
    """PLD bound of pure parts composed with PLD-supported ones, or ``inf`` if not applicable.

    Every pure epsilon-DP mechanism is dominated by binary randomized response
    with the same epsilon (Kairouz, Oh and Viswanath 2015), which is what
    dp_accountant's PLD accountant composes for a :class:`PureEpsilonDpEvent`
    (a discrete Laplace event at sensitivity 1), in both directions of
    add/remove neighbouring; the rest is composed by the same accountant
    (pessimistic too).
    """
    accountant = pld_privacy_accountant.PLDAccountant(
        NEIGHBORING_RELATION, value_discretization_interval=discretization
    )
    parts = [
        leaf if count == 1 else dpe.SelfComposedDpEvent(leaf, count) for leaf, count in pure_parts
    ]
    if rest:
        parts.append(_fold_gaussians(dpe.ComposedDpEvent(rest)))
    event = dpe.ComposedDpEvent(parts)
    if not accountant.supports(event):
        return math.inf
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _fold_gaussians(event: dpe.DpEvent) -> dpe.DpEvent:
    """The same mechanism with its full-data Gaussian parts folded into one Gaussian.

    Adaptive compositions of full-data Gaussian mechanisms are exactly one
    Gaussian mechanism (multipliers combine as ``(sum s^-2)^-1/2``), so folding
    them changes nothing but the cost of numerical accounting: a ledger of
    many multi-step Gaussian fits becomes a single PLD.
    """
    if not isinstance(event, (dpe.ComposedDpEvent, dpe.SelfComposedDpEvent)):
        return event
    precision, others = 0.0, []
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.GaussianDpEvent) and leaf.noise_multiplier > 0:
            precision += count / leaf.noise_multiplier**2
        elif isinstance(leaf, dpe.NoOpDpEvent):
            continue
        else:
            others.append(leaf if count == 1 else dpe.SelfComposedDpEvent(leaf, count))
    if precision > 0:
        others.append(dpe.GaussianDpEvent(precision**-0.5))
    return others[0] if len(others) == 1 else dpe.ComposedDpEvent(others)


def epsilon_of_events(events: Iterable[dpe.DpEvent], delta: float) -> float:
    """Epsilon at ``delta`` of the adaptive composition of ``events``.

    Parameters
    ----------
    events : iterable of dp_accounting.DpEvent
        The mechanisms, in any order.
    delta : float
        The target delta, in ``[0, 1)``.

    Returns
    -------
    float
        Epsilon of their composition at ``delta`` (0.0 for no events).
    """
    events = list(events)
    if not events:
        return 0.0
    return epsilon_of_event(dpe.ComposedDpEvent(events), delta)


# --------------------------------------------------------------------------
# Reading an event with dp_accounting's own accountants
# --------------------------------------------------------------------------

#: The dp_accounting accountants :func:`accountant_event` prepares an event for.
ACCOUNTANTS = ("pld", "rdp")


def _readable(leaf, accountant):
    """``leaf`` as ``accountant`` reads it (add/remove-one), or None if it reads no equivalent."""
    if isinstance(leaf, (ApproximateDpEvent, ClosedFormDpEvent)):
        return None
    if accountant == "pld":
        return None if isinstance(leaf, dpe.ZCDpEvent) else leaf
    if isinstance(leaf, dpe.DiscreteLaplaceDpEvent):
        # Pure epsilon-DP implies rho-zCDP (zcdp_rho); RDP reads zCDP.
        return dpe.ZCDpEvent(float(zcdp_rho(leaf)))
    return leaf


def accountant_event(
    event: dpe.DpEvent, accountant: str = "pld"
) -> tuple[dpe.DpEvent, list[dpe.DpEvent]]:
    """``event`` as dp_accounting's own ``accountant`` reads it, and the parts it cannot read.

    Which accountant reads which part of a ``dp_event_`` (all under
    ``NeighboringRelation.ADD_OR_REMOVE_ONE``):

    * Gaussian, Laplace and Poisson-subsampled Gaussian mechanisms: both, as
      recorded.
    * A pure epsilon-DP part (:class:`PureEpsilonDpEvent`, a
      ``DiscreteLaplaceDpEvent``): ``PLDAccountant`` as recorded (binary
      randomized response, which dominates every pure epsilon-DP mechanism);
      ``RdpAccountant`` reads no discrete Laplace event, so it gets
      ``ZCDpEvent(zcdp_rho(part))`` (pure epsilon-DP is ``epsilon^2 /
      2``-zCDP, Bun and Steinke 2016; an exponential mechanism ``epsilon^2 /
      8``, Cesar and Rogers 2021).
    * A ``ZCDpEvent`` (many exponential mechanisms of a Frank-Wolfe fit):
      ``RdpAccountant`` only; no privacy-loss distribution is known for it.
    * The released label set (:class:`ApproximateDpEvent`) and objective
      perturbation with Gaussian noise (a :class:`ClosedFormDpEvent`):
      neither.  No dp_accounting event can stand for them: the label set
      releases a label held by a single row with probability up to its
      delta (an infinite privacy loss, which no event of dp_accounting but
      ``NonPrivateDpEvent`` carries), and objective perturbation's bound is
      a closed form.  They are returned apart, to be composed by basic
      composition (:func:`accountant_epsilon` does).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism (usually a fit's ``dp_event_``).
    accountant : {"pld", "rdp"}, default="pld"
        ``"pld"`` for ``dp_accounting.pld.PLDAccountant``, ``"rdp"`` for
        ``dp_accounting.rdp.RdpAccountant``.

    Returns
    -------
    readable : dp_accounting.DpEvent
        What ``accountant`` composes (``NoOpDpEvent`` if nothing).
    apart : list of dp_accounting.DpEvent
        The parts it cannot read (each with its count, as a
        ``SelfComposedDpEvent`` when repeated).

    Examples
    --------
    >>> import dp_accounting
    >>> from dp_accounting.pld import PLDAccountant
    >>> from sklearn_dp.accounting import PureEpsilonDpEvent, accountant_event
    >>> readable, apart = accountant_event(PureEpsilonDpEvent(0.5, "output_perturbation"))
    >>> pld = PLDAccountant(dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    >>> round(pld.compose(readable).get_epsilon(0.0), 6), apart
    (0.5, [])
    """
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}.")
    readable, apart = [], []
    for leaf, count in _flatten(event):
        part = _readable(leaf, accountant)
        target = apart if part is None else readable
        part = leaf if part is None else part
        target.append(part if count == 1 else dpe.SelfComposedDpEvent(part, count))
    if not readable:
        return dpe.NoOpDpEvent(), apart
    return (readable[0] if len(readable) == 1 else dpe.ComposedDpEvent(readable)), apart


def accountant_epsilon(
    event: dpe.DpEvent,
    delta: float,
    accountant: str = "pld",
    *,
    value_discretization_interval: float = _PLD_FINE,
) -> float:
    """Epsilon of ``event`` at ``delta`` computed by dp_accounting's own accountant.

    The part the accountant reads (:func:`accountant_event`) is composed by
    ``PLDAccountant`` or ``RdpAccountant`` (add/remove-one neighbours) and
    nothing else; the parts it cannot read are added by basic composition:
    each label set (:class:`ApproximateDpEvent`) takes its own epsilon and
    delta, and the rest of ``delta`` is split equally between each
    closed-form part (``ZCDpEvent`` parts, for the PLD accountant, converted
    together) and the accountant's part (a pure part under the PLD
    accountant takes a thousandth of ``delta``, the others the rest).  This is an independent check of a
    fit's ``privacy_spent_``; :func:`epsilon_of_event` is tighter where it
    can take the minimum of several valid bounds.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism (usually a fit's ``dp_event_``).
    delta : float
        The target delta, in ``[0, 1)``.
    accountant : {"pld", "rdp"}, default="pld"
        Which of dp_accounting's accountants.
    value_discretization_interval : float, default=1e-4
        The PLD accountant's grid (its estimate is pessimistic by at most
        about the grid times the number of composed parts).

    Returns
    -------
    float
        An upper bound on epsilon at ``delta`` (``inf`` if the parts it cannot
        read need more than ``delta``).
    """
    delta = _check_delta(delta, allow_zero=True)
    readable, apart = accountant_event(event, accountant)
    fixed_epsilon, fixed_delta, curves, rho = 0.0, 0.0, [], 0.0
    for part in apart:
        leaf, count = next(iter(_flatten(part)))
        if isinstance(leaf, ApproximateDpEvent):
            fixed_epsilon += count * leaf.approximate_epsilon
            fixed_delta += count * leaf.approximate_delta
        elif isinstance(leaf, dpe.ZCDpEvent):
            rho += count * float(leaf.rho)
        else:
            curves.append((leaf, count))
    left = delta - fixed_delta
    if left < -1e-12 * delta:
        return math.inf
    left = max(left, 0.0)
    has_readable = not isinstance(readable, dpe.NoOpDpEvent)
    # A pure part needs (almost) no delta under the PLD accountant: it takes
    # a thousandth (the accountant's truncated tails need a little), the
    # others share the rest.
    pure_readable = accountant == "pld" and _pure_epsilon(readable) is not None
    readable_share = 1e-3 * left if pure_readable else None
    shares = sum(count for _, count in curves) + (rho > 0) + (has_readable and not pure_readable)
    rest = left - (readable_share or 0.0)
    share = rest / shares if shares else rest
    total = fixed_epsilon + sum(count * float(leaf.epsilon(share)) for leaf, count in curves)
    if rho > 0:
        total += epsilon_of_zcdp(rho, share)
    if has_readable:
        if accountant == "pld":
            acc = pld_privacy_accountant.PLDAccountant(
                NEIGHBORING_RELATION, value_discretization_interval=value_discretization_interval
            )
        else:
            acc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
        acc.compose(readable)
        total += float(acc.get_epsilon(share if readable_share is None else readable_share))
    return total


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


@memoize(maxsize=1024)
def gaussian_noise_multiplier(epsilon: float, delta: float, n_steps: int = 1) -> float:
    """Smallest multiplier for ``n_steps`` full-data Gaussian steps to be (epsilon, delta)-DP.

    Exact: the composition of ``n_steps`` Gaussian mechanisms with multiplier
    ``s`` is one Gaussian mechanism with multiplier ``s / sqrt(n_steps)``, and
    the analytic Gaussian mechanism gives the smallest multiplier of one step.
    Returns 0.0 for ``epsilon=inf``.

    Parameters
    ----------
    epsilon : float
        Target epsilon (> 0, or ``inf``).
    delta : float
        Target delta, in ``(0, 1)``.
    n_steps : int, default=1
        Number of full-data Gaussian steps.

    Returns
    -------
    float
        The noise multiplier (standard deviation over L2 sensitivity) of each step.
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
    """Multiplier (scale / L1 sensitivity) of ``n_steps`` Laplace steps for pure epsilon-DP.

    Parameters
    ----------
    epsilon : float
        Target epsilon (> 0, or ``inf``).
    n_steps : int, default=1
        Number of Laplace steps; each gets ``epsilon / n_steps``.

    Returns
    -------
    float
        The Laplace scale over the L1 sensitivity of each step.
    """
    epsilon = _check_epsilon(epsilon)
    _check_steps(n_steps)
    if math.isinf(epsilon):
        return 0.0
    return float(n_steps) / epsilon


@memoize(maxsize=1024)
def subsampled_gaussian_noise_multiplier(
    epsilon: float, delta: float, sampling_probability: float, n_steps: int
) -> float:
    """Smallest multiplier for ``n_steps`` Poisson-subsampled Gaussian steps.

    Calibrated with the PLD accountant (pessimistic estimates, so the result
    never under-noises); a full-data rate (``sampling_probability >= 1``) falls
    back to the exact Gaussian composition.

    Parameters
    ----------
    epsilon : float
        Target epsilon (> 0, or ``inf``).
    delta : float
        Target delta, in ``(0, 1)``.
    sampling_probability : float
        Probability that a row is in a step's Poisson sample.
    n_steps : int
        Number of steps.

    Returns
    -------
    float
        The noise multiplier (standard deviation over L2 sensitivity) of each step.
    """
    if not 0 < sampling_probability <= 1:
        raise ValueError(f"sampling_probability must be in (0, 1], got {sampling_probability!r}.")
    if sampling_probability >= 1:
        return gaussian_noise_multiplier(epsilon, delta, n_steps)
    epsilon = _check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    delta = _check_delta(delta, allow_zero=False)

    def make_event(sigma):
        return subsampled_gaussian_steps_event(sigma, sampling_probability, n_steps)

    # Start from the central-limit (Gaussian DP) approximation of the
    # subsampled composition, mu = q sqrt(T (exp(1/sigma^2) - 1)) (Dong, Roth
    # and Su 2019), solved for the mu of one Gaussian meeting (epsilon, delta);
    # the accountant then decides, so the guess only saves evaluations.
    mu = 1.0 / gaussian_noise_multiplier(epsilon, delta, 1)
    ratio = mu**2 / (sampling_probability**2 * n_steps)
    guess = 1.0 / math.sqrt(math.log1p(ratio))
    upper = gaussian_noise_multiplier(epsilon, delta, n_steps)
    return _calibrate(make_event, epsilon, delta, upper, guess=min(guess, upper))


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

    Parameters
    ----------
    make_event : callable
        ``make_event(s)`` returns the ``DpEvent`` of the whole fit with noise
        multiplier ``s``.
    epsilon : float
        Target epsilon (> 0).
    delta : float
        Target delta, in ``[0, 1)``.
    upper : float, default=None
        A multiplier known to suffice (bracket of the search).

    Returns
    -------
    float
        The smallest multiplier found, up to the search tolerance, whose event
        meets ``(epsilon, delta)``.
    """
    epsilon = _check_epsilon(epsilon)
    if math.isinf(epsilon):
        return 0.0
    delta = _check_delta(delta, allow_zero=False)
    return _calibrate(make_event, epsilon, delta, upper)


#: Smallest noise multiplier the numerical calibration tries; any larger
#: multiplier that meets the target is private, and smaller ones are needed
#: only for epsilon near MAX_EPSILON of the estimators.
_CALIBRATION_FLOOR = 0.05


#: What the calibration takes for an epsilon the accountant could not compute.
_FAILED_EXCESS = 1e300


def _calibrate(make_event, epsilon, delta, upper, guess=None):
    """Smallest multiplier whose event meets (epsilon, delta), to 0.1% relative.

    Searches with the coarse PLD grid, whose estimates are pessimistic (never
    below the true epsilon): the result is private and only marginally
    noisier than the fine-grid optimum.  Brent's method on log(sigma) finds
    the crossing in a handful of accountant calls.
    """

    grid = _coarse_grid(epsilon)

    def excess(log_sigma):
        value = _event_epsilon_fast(make_event(math.exp(log_sigma)), delta, grid) - epsilon
        # An accountant failure (NaN) never counts as meeting the target.
        return _FAILED_EXCESS if math.isnan(value) else value

    def certified(log_sigma):
        return excess(log_sigma) <= 0

    if guess is not None and not (math.isfinite(guess) and guess > 0):
        guess = None  # a guess only saves accountant calls (a NaN one looped forever)
    if upper is not None and not (math.isfinite(upper) and upper > 0):
        upper = None
    if guess is None:
        guess = _gaussian_dp_guess(make_event, epsilon, delta)
    start = guess if guess is not None else (upper if upper is not None else 1.0)
    if upper is not None:
        start = min(start, upper)
    # Below the floor the PLD grid explodes (see below): never start there.
    start = max(start, _CALIBRATION_FLOOR)
    found = _secant_search(excess, math.log(start), epsilon)
    if found is not None:
        return float(math.exp(found))
    # Bracket the crossing: lo fails (too little noise), hi meets the target.
    hi = math.log(start)
    step = math.log(1.25)
    while not certified(hi):
        hi += step
        step *= 2
        if not hi <= math.log(1e8):
            raise ValueError("Could not find a noise multiplier for this budget.")
    floor = math.log(_CALIBRATION_FLOOR)
    lo, step = max(floor, hi - math.log(1.25)), math.log(1.25)
    while certified(lo):
        if lo <= floor:
            # lo meets the target; below the floor the PLD grid explodes (a
            # large delta, e.g. above a subsampled mechanism's sampling
            # probability, is met by almost no noise: 29 GiB at delta=0.5).
            return float(math.exp(lo))
        hi, lo = lo, max(floor, lo - step)
        step *= 2
    log_sigma = optimize.brentq(excess, lo, hi, xtol=1e-4, rtol=1e-6)
    # brentq lands within xtol of the crossing, on either side of it: step up
    # until the accountant certifies the target (hi, certified above, caps it).
    while not certified(log_sigma):
        log_sigma += 1e-4
        if log_sigma >= hi:
            return float(math.exp(hi))
    return float(math.exp(log_sigma))


#: The secant search stops at a certified multiplier whose epsilon is within
#: this fraction of the target (about as much noise above the optimum).
_SECANT_TOLERANCE = 2e-3

#: Accountant calls the secant search may make before the bracketing search
#: takes over.
_SECANT_CALLS = 5


def _gaussian_dp_mu_squared(event):
    """``mu^2`` of the central-limit (Gaussian DP) approximation of ``event``, or None.

    A Gaussian step with multiplier ``s`` is ``1/s``-GDP; ``K`` Poisson-subsampled
    ones at rate ``q`` tend to ``mu^2 = K q^2 (exp(1/s^2) - 1)`` (Dong, Roth and
    Su 2019, Theorem 6); compositions add their ``mu^2``.  Only a starting
    point for the calibration: the accountant decides.
    """
    if isinstance(event, dpe.GaussianDpEvent):
        sigma = float(event.noise_multiplier)
        return math.inf if sigma <= 0 else sigma**-2
    if isinstance(event, dpe.PoissonSampledDpEvent) and isinstance(
        event.event, dpe.GaussianDpEvent
    ):
        sigma = float(event.event.noise_multiplier)
        if sigma <= 0 or sigma**-2 > 700:
            return math.inf
        return float(event.sampling_probability) ** 2 * math.expm1(sigma**-2)
    if isinstance(event, dpe.SelfComposedDpEvent):
        inner = _gaussian_dp_mu_squared(event.event)
        return None if inner is None else event.count * inner
    if isinstance(event, dpe.ComposedDpEvent):
        parts = [_gaussian_dp_mu_squared(part) for part in event.events]
        return None if any(part is None for part in parts) else math.fsum(parts)
    return None


def _gaussian_dp_guess(make_event, epsilon, delta):
    """The multiplier at which ``make_event``'s Gaussian-DP approximation meets (epsilon, delta), or None."""
    if delta <= 0:
        return None
    target = gaussian_noise_multiplier(epsilon, delta, 1) ** -2

    def log_ratio(log_sigma):
        mu_squared = _gaussian_dp_mu_squared(make_event(math.exp(log_sigma)))
        if mu_squared is None:
            raise _NoGuess
        if mu_squared == 0:
            return -math.inf
        return math.log(mu_squared) - math.log(target) if math.isfinite(mu_squared) else math.inf

    try:
        lo, hi = math.log(_CALIBRATION_FLOOR), math.log(1e6)
        if not log_ratio(lo) > 0 > log_ratio(hi):
            return None
        return float(math.exp(optimize.brentq(log_ratio, lo, hi, xtol=1e-3)))
    except (_NoGuess, ValueError, OverflowError, TypeError):
        return None


class _NoGuess(Exception):
    """The event has a part the Gaussian-DP approximation does not cover."""


def _secant_search(excess, log_start, epsilon):
    """A certified log-multiplier within ``_SECANT_TOLERANCE`` of the target, or None.

    ``log(epsilon)`` is smooth and nearly linear in ``log(sigma)`` (slope -1
    for a Gaussian mechanism, steeper with subsampling), so secant steps on
    that scale, the first one with slope -1, land within tolerance in two to
    four accountant calls from a good starting guess (the Gaussian-DP
    guess), where bracketing and Brent's method take about nine: on small
    data sets the calibration is most of a subsampled solver's fit time.
    Only a point the accountant certified (``excess <= 0``) is ever
    returned; None hands over to the bracketing search.
    """
    tolerance = _SECANT_TOLERANCE * epsilon
    aim = math.log1p(-0.5 * _SECANT_TOLERANCE)  # a little below the target, on the log scale
    floor = math.log(_CALIBRATION_FLOOR)

    def log_ratio(x):
        value = excess(x)
        if not math.isfinite(value) or value >= _FAILED_EXCESS or value <= -epsilon:
            return value, None
        return value, math.log1p(value / epsilon)

    x0 = log_start
    f0, g0 = log_ratio(x0)
    if g0 is None:
        return None
    if -tolerance <= f0 <= 0:
        return x0
    x1 = x0 + (g0 - aim)  # slope -1: sigma scaled by epsilon(sigma) / target
    for _ in range(_SECANT_CALLS - 1):
        if x1 < floor:
            return None
        f1, g1 = log_ratio(x1)
        if g1 is None:
            return None
        if -tolerance <= f1 <= 0:
            return x1
        if g1 == g0:
            return None
        step = -(g1 - aim) * (x1 - x0) / (g1 - g0)
        x0, g0, x1 = x1, g1, x1 + min(0.5, max(-0.5, step))
    return None


def _event_epsilon_fast(event, delta, discretization):
    return _epsilon(event, delta, discretization)


_PAIR_CACHE: dict = {}


def _cached_pair_epsilon(first, second, delta, grid):
    # Keyed on the reprs: composed events hold lists and are not hashable.
    key = (repr(first), repr(second), float(delta), float(grid))
    if key not in _PAIR_CACHE:
        if len(_PAIR_CACHE) > 4096:
            _PAIR_CACHE.clear()
        # The coarse grid is pessimistic: a share it certifies is certified.
        _PAIR_CACHE[key] = _event_epsilon_fast(dpe.ComposedDpEvent([first, second]), delta, grid)
    return _PAIR_CACHE[key]


def largest_share(make_event, prefix_event, epsilon, delta, floor, *, max_plans=4, tolerance=1e-3):
    """Largest ``epsilon_part`` such that ``prefix_event`` composed with ``make_event(epsilon_part)`` meets the target.

    ``make_event(e)`` must return the event of a mechanism calibrated to
    ``(e, delta)`` (or None when it cannot be planned); ``floor`` is a share
    known to fit by basic composition, returned when nothing better is
    certified.  Only shares whose composition the (pessimistic) accountant
    certifies are returned, so the search strategy affects utility, never
    privacy.

    Each candidate share costs one calibration, so the search is a secant
    step, not a bisection: the composed epsilon grows about one for one with
    the share, and the overhead ``composed - share`` measured at one
    candidate predicts the share that meets ``epsilon``.  It stops after
    ``max_plans`` candidates or when the next one would gain less than
    ``tolerance * epsilon``; two candidates are typical.

    Parameters
    ----------
    make_event : callable
        ``make_event(e)`` returns the event of the mechanism calibrated to
        ``(e, delta)``, or None.
    prefix_event : dp_accounting.DpEvent
        What runs before (the bound releases of a fit, say).
    epsilon : float
        The target epsilon of the composition.
    delta : float
        The target delta of the composition.
    floor : float
        A share known to fit (by basic composition).
    max_plans : int, default=4
        Most candidate shares tried.
    tolerance : float, default=1e-3
        Stop when the next candidate would gain less than ``tolerance * epsilon``.

    Returns
    -------
    float
        The largest certified share (at least ``floor``).
    """
    certified, failed = float(floor), float(epsilon)
    candidate = 0.5 * (certified + failed)
    for _ in range(max_plans):
        event = make_event(candidate)
        if event is None:
            return certified
        composed = _cached_pair_epsilon(prefix_event, event, delta, _coarse_grid(epsilon))
        if composed <= epsilon:
            certified = candidate
        else:
            failed = candidate
        # Aim a little below the predicted crossing, so the next candidate is
        # usually certified rather than a near miss.
        predicted = epsilon - (composed - candidate) - 0.25 * tolerance * epsilon
        if not certified < predicted < failed:
            predicted = 0.5 * (certified + failed)
        if predicted - certified <= tolerance * epsilon:
            break
        candidate = predicted
    return certified


# --------------------------------------------------------------------------
# Zero-concentrated DP
# --------------------------------------------------------------------------

#: Name of the mechanism of exponential-mechanism events: epsilon-DP and
#: epsilon-bounded-range, hence epsilon^2 / 8-zCDP (Cesar and Rogers 2021).
EXPONENTIAL_MECHANISM = "exponential mechanism"


#: Fields of events that are probabilities (in [0, 1]); other numbers are >= 0.
_PROBABILITY_FIELDS = frozenset(
    {"sampling_probability", "sampling_probs", "approximate_delta", "residual_fraction"}
)
#: Fields of events that are counts or sizes (integers >= 0).
_COUNT_FIELDS = frozenset(
    {
        "count",
        "source_dataset_size",
        "sample_size",
        "dataset_size",
        "truncated_batch_size",
        "num_buckets",
        "sensitivity",
        "step_counts",
        "chi_dof",
    }
)


def _event_fields(event):
    """``(name, value)`` of an event's fields: attrs fields (dp_accounting) or slots (ours)."""
    # Our events subclass dp_accounting's (attrs) UnsupportedDpEvent and add
    # slots of their own: both are read.
    names = [field.name for field in getattr(type(event), "__attrs_attrs__", ())]
    for klass in type(event).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names = [name for name in dict.fromkeys(names) if not name.startswith("__")]
    return [(name, getattr(event, name)) for name in names if hasattr(event, name)]


def _check_number(value, where, *, count=False, probability=False):
    if count:
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
            raise ValueError(f"{where} must be an integer >= 0, got {value!r}.")
        return
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value) or value < 0:
        raise ValueError(f"{where} must be a number >= 0, got {value!r}.")
    if probability and value > 1:
        raise ValueError(f"{where} must be a probability in [0, 1], got {value!r}.")


def check_event(event: dpe.DpEvent) -> None:
    """Refuse a malformed event: a negative, NaN or non-numeric parameter, anywhere in it.

    Every part of the event (compositions, self-compositions and sampled
    events are walked) must have well-formed parameters: noise multipliers,
    epsilons and rhos are numbers >= 0 (``inf`` allowed), NaN nowhere,
    counts and sizes integers >= 0, probabilities in [0, 1].  A budget's
    filter charges what the event says: ``ZCDpEvent(-10)`` or a negative
    count would otherwise lower the recorded spend and let later spends
    exceed the budget.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event to check.

    Raises
    ------
    TypeError
        If ``event`` or one of its parts is not a DpEvent.
    ValueError
        If a parameter is malformed; the message names it.
    """
    _check_event(event, type(event).__name__, set())


def _check_event(event, where, active):
    if not isinstance(event, dpe.DpEvent):
        raise TypeError(f"{where} must be a dp_accounting DpEvent, got {type(event).__name__}.")
    if id(event) in active:
        raise ValueError(f"{where} contains itself: an event must be a finite tree.")
    active.add(id(event))
    probabilities = set(_PROBABILITY_FIELDS)
    if isinstance(event, dpe.RandomizedResponseDpEvent):
        probabilities.add("noise_parameter")
    for name, value in _event_fields(event):
        here = f"{where}.{name}"
        if isinstance(value, str):
            continue
        if isinstance(value, dpe.DpEvent):
            _check_event(value, f"{here} ({type(value).__name__})", active)
        elif isinstance(value, (list, tuple)):
            for k, item in enumerate(value):
                if isinstance(item, dpe.DpEvent):
                    _check_event(item, f"{here}[{k}] ({type(item).__name__})", active)
                elif name == "events":
                    _check_event(item, f"{here}[{k}]", active)
                else:
                    _check_number(
                        item,
                        f"{here}[{k}]",
                        count=name in _COUNT_FIELDS,
                        probability=name in probabilities,
                    )
        else:
            _check_number(
                value, here, count=name in _COUNT_FIELDS, probability=name in probabilities
            )
    active.discard(id(event))


def zcdp_rho(event: dpe.DpEvent) -> float | None:
    """The rho for which ``event`` is rho-zCDP (add/remove-one), or None if unknown.

    * Gaussian mechanism of multiplier s: ``1 / (2 s^2)``, exact (Bun and
      Steinke 2016, Prop. 1.6).
    * Laplace and any pure epsilon-DP mechanism: ``epsilon^2 / 2`` (Bun and
      Steinke 2016, Prop. 1.4); exponential mechanisms (a
      :class:`PureEpsilonDpEvent` whose ``mechanism`` names one):
      ``epsilon^2 / 8`` (bounded range; Cesar and Rogers 2021).
    * ``ZCDpEvent(rho)``: rho.  No-ops: 0.  Compositions: the sum.
    * A Poisson-subsampled Gaussian: ``1 / (2 s^2)``, the Gaussian's own rho
      (subsampling never increases a Renyi divergence, by its joint
      quasi-convexity), without amplification.
    * Anything else (approximate-DP events, closed forms): None.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.

    Returns
    -------
    float or None
        Its rho, ``inf`` for a noiseless part, or None.
    """
    total = 0.0
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.NoOpDpEvent):
            continue
        if isinstance(leaf, dpe.PoissonSampledDpEvent):
            leaf = leaf.event
        if isinstance(leaf, dpe.GaussianDpEvent):
            if leaf.noise_multiplier <= 0:
                return math.inf
            total += count / (2.0 * leaf.noise_multiplier**2)
        elif isinstance(leaf, dpe.LaplaceDpEvent):
            if leaf.noise_multiplier <= 0:
                return math.inf
            total += count * 0.5 / leaf.noise_multiplier**2
        elif isinstance(leaf, dpe.ZCDpEvent):
            total += count * float(leaf.rho)
        elif isinstance(leaf, PureEpsilonDpEvent):
            factor = 0.125 if leaf.mechanism.startswith(EXPONENTIAL_MECHANISM) else 0.5
            total += count * factor * leaf.epsilon**2
        elif isinstance(leaf, dpe.DiscreteLaplaceDpEvent):
            if leaf.noise_parameter <= 0:
                return math.inf
            total += count * 0.5 * (leaf.noise_parameter * leaf.sensitivity) ** 2
        elif isinstance(leaf, dpe.NonPrivateDpEvent):
            return math.inf
        else:
            return None
    return total


def approximate_zcdp(event: dpe.DpEvent) -> tuple[float, float] | None:
    """``(rho, delta)`` for which ``event`` is delta-approximately rho-zCDP, or None if unknown.

    Like :func:`zcdp_rho`, plus the parts proven only ``(epsilon, delta)``-DP
    (:class:`ApproximateDpEvent`, e.g. a classifier's label-set release):
    each is ``delta``-approximately ``epsilon^2 / 2``-zCDP (Bun and Steinke
    2016, Proposition 1.13), and approximate zCDP composes by adding both
    parameters.  ``(rho, 0.0)`` when the event has no approximate part.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.

    Returns
    -------
    tuple of float or None
        ``(rho, delta)``, with ``rho = inf`` for a noiseless part, or None
        when a part has no zCDP bound.
    """
    rho, delta, rest = 0.0, 0.0, []
    for leaf, count in _flatten(event):
        if isinstance(leaf, ApproximateDpEvent):
            rho += count * 0.5 * leaf.approximate_epsilon**2
            delta += count * leaf.approximate_delta
        else:
            rest.append(leaf if count == 1 else dpe.SelfComposedDpEvent(leaf, count))
    rest_rho = zcdp_rho(dpe.ComposedDpEvent(rest)) if rest else 0.0
    if rest_rho is None:
        return None
    return rho + rest_rho, delta


# Orders at which a zCDP guarantee is converted: dp_accounting's defaults
# plus large orders, where small rhos have their best conversion.
_ZCDP_ORDERS = tuple(
    sorted(
        set(rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
        | {float(round(x, 6)) for x in (1000.0 * 1.25**k for k in range(40))}
    )
)


@memoize(maxsize=4096)
def epsilon_of_zcdp(rho: float, delta: float) -> float:
    """Epsilon at ``delta`` of a rho-zCDP mechanism, with dp_accounting's RDP conversion.

    The RDP-to-DP conversion of Canonne, Kamath and Steinke (2020) over a
    grid of orders (an upper bound on the best conversion); ``inf`` for
    ``delta = 0``.

    Parameters
    ----------
    rho : float
        The zCDP parameter of the mechanism.
    delta : float
        The target delta.

    Returns
    -------
    float
        Epsilon at ``delta``.
    """
    if rho <= 0:
        return 0.0
    if delta <= 0:
        return math.inf
    accountant = rdp_privacy_accountant.RdpAccountant(
        orders=_ZCDP_ORDERS, neighboring_relation=NEIGHBORING_RELATION
    )
    accountant.compose(dpe.ZCDpEvent(float(rho)))
    return float(accountant.get_epsilon(float(delta)))
