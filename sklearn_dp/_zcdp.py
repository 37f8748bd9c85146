"""Zero-concentrated DP of an event: its rho, and the conversion of a rho to (epsilon, delta).

A ``composition="zcdp"`` budget charges each fit the rho of its mechanism
(:func:`zcdp_rho`, :func:`approximate_zcdp`) and converts the total with
:func:`epsilon_of_zcdp`; :func:`sklearn_dp.accounting.epsilon_of_event` also
takes the zCDP bound of a composition where it is the smallest valid one.
The public names are documented, and imported, from
:mod:`sklearn_dp.accounting`.
"""

from __future__ import annotations

import math

from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant

from ._dp_events import (
    EXPONENTIAL_MECHANISM,
    NEIGHBORING_RELATION,
    ApproximateDpEvent,
    PureEpsilonDpEvent,
    _flatten,
)
from ._memo import memoize

__all__ = ["zcdp_rho", "approximate_zcdp", "epsilon_of_zcdp"]


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
