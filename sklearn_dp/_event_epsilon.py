"""Epsilon of an event: exact closed forms, privacy-loss distributions, and dp_accounting's own accountants.

:func:`epsilon_of_event` is the package's reading of a ``dp_event_`` (the
accountant choice is described in :mod:`sklearn_dp.accounting`);
:func:`accountant_event` and :func:`accountant_epsilon` recompute one with
dp_accounting's own PLD or RDP accountant, an independent check.  The PLD
grids are here too: the calibration searches with the coarse one.  The
public names are documented, and imported, from :mod:`sklearn_dp.accounting`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from numbers import Real

from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from ._dp_events import (
    NEIGHBORING_RELATION,
    ApproximateDpEvent,
    ClosedFormDpEvent,
    PureEpsilonDpEvent,
    _flatten,
    _pure_epsilon,
)
from ._zcdp import epsilon_of_zcdp, zcdp_rho

__all__ = [
    "epsilon_of_event",
    "epsilon_of_events",
    "accountant_event",
    "accountant_epsilon",
    "ACCOUNTANTS",
]

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
