"""Private selection: the number of runs, its distribution, and the accounting.

The searches follow Liu and Talwar (2019) and Papernot and Steinke (2022):
run a private mechanism ``Q`` (train a random candidate, score it) a random
number ``K`` of times and publish only the best run.  If ``Q`` is
``(lambda, eps(lambda))``-RDP at every order, the best-of-``K`` output is
RDP with a cost that grows with ``log E[K]``, not with ``K``.  dp_accounting
implements the bound as ``RepeatAndSelectDpEvent(event, mean, shape)`` in its
RDP accountant (Theorems 2 and 6 of Papernot and Steinke): ``shape`` picks the
distribution of ``K``,

* ``0 < shape < inf``: truncated negative binomial ``TNB(shape, gamma)``,
  ``P(K = k) ∝ (1 - gamma)^k  Gamma(k + shape) / (Gamma(shape) k!)`` for
  ``k >= 1`` (``shape = 1`` is the geometric distribution),
* ``shape = 0``: the logarithmic distribution, ``P(K = k) ∝ (1 - gamma)^k / k``,
* ``shape = inf``: Poisson with mean ``mean`` (``K = 0`` is possible: then
  nothing is selected).

This module draws ``K`` exactly from the distribution the accountant
analyses, and never with a larger mean (see :func:`tnb_gamma`).  Nothing
here looks at data.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant

from ..accounting import NEIGHBORING_RELATION

__all__ = [
    "tnb_mean",
    "tnb_gamma",
    "draw_number_of_runs",
    "runs_pmf",
    "rdp_epsilon",
    "rdp_supports",
    "selection_event",
]


def _expm1_over_x(x):
    return math.expm1(x) / x if x != 0 else 1.0


def _log_over_xm1(x):
    # log(x) / (x - 1), continuous at x = 1.
    return math.log(x) / (x - 1.0) if x != 1.0 else 1.0


def tnb_mean(gamma, shape):
    """Mean of the truncated negative binomial ``TNB(shape, gamma)`` (Papernot and Steinke, Def. 1).

    ``shape * (1 / gamma - 1) / (1 - gamma^shape)``; ``1 / gamma`` for the
    geometric distribution (``shape = 1``) and ``(1 - 1 / gamma) / log(gamma)``
    for the logarithmic one (``shape = 0``).
    """
    gamma = float(gamma)
    shape = float(shape)
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma must be in (0, 1], got {gamma!r}.")
    if shape < 0 or math.isinf(shape) or math.isnan(shape):
        raise ValueError(f"shape must be finite and >= 0, got {shape!r}.")
    if gamma == 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / gamma
    log_gamma = math.log(gamma)
    if shape == 0.0:
        return 1.0 / (gamma * _log_over_xm1(gamma))
    # shape (1/gamma - 1) / (1 - gamma^shape), written stably for small shape.
    return 1.0 / (gamma * _expm1_over_x(shape * log_gamma) * _log_over_xm1(gamma))


@functools.lru_cache(maxsize=256)
def tnb_gamma(mean, shape):
    """The ``gamma`` of ``TNB(shape, gamma)`` whose mean is at most ``mean``, and within 1e-12 of it.

    dp_accounting's accountant inverts the mean with a bisection that returns
    the lower end of its bracket (a ``gamma`` whose mean is at least
    ``mean``); its bound grows with ``log(1 / gamma)`` and with
    ``log(mean)``.  Drawing ``K`` with the upper end of the bracket (a mean at
    most ``mean``, a ``gamma`` at least the accountant's) keeps both terms
    on the safe side.
    """
    mean = float(mean)
    shape = float(shape)
    if not mean >= 1:
        raise ValueError(f"The mean number of runs must be >= 1, got {mean!r}.")
    if mean == 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / mean
    lo, hi = 0.0, min(1.0, 2.0 * (shape + 1.0) / mean)
    # The mean is decreasing in gamma: keep tnb_mean(hi) <= mean < tnb_mean(lo).
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if tnb_mean(mid, shape) <= mean:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-15 * hi:
            break
    return hi


def draw_number_of_runs(mean, shape, rng):
    """Draw the number of runs ``K`` (public randomness: it never sees data).

    Parameters
    ----------
    mean : float
        Mean of the distribution (>= 1).
    shape : float
        ``inf`` for Poisson, else the shape of the truncated negative
        binomial (0: logarithmic, 1: geometric).
    rng : numpy.random.Generator

    Returns
    -------
    int
        ``K >= 1`` (``K >= 0`` for Poisson).
    """
    mean = float(mean)
    shape = float(shape)
    if math.isinf(shape):
        return int(rng.poisson(mean))
    gamma = tnb_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 0.0:
        return int(rng.logseries(1.0 - gamma))
    if shape == 1.0:
        return int(rng.geometric(gamma))
    # Negative binomial (failures before `shape` successes of probability
    # gamma), truncated to K >= 1 by rejection: the pmf is proportional to
    # (1 - gamma)^k Gamma(k + shape) / (Gamma(shape) k!), as analysed.
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


def runs_pmf(mean, shape, k_max):
    """``P(K = k)`` for ``k = 0 .. k_max`` (for tests and docs)."""
    k = np.arange(k_max + 1)
    if math.isinf(shape):
        from scipy import stats

        return stats.poisson.pmf(k, mean)
    gamma = tnb_gamma(mean, shape)
    pmf = np.zeros(k_max + 1)
    if gamma >= 1.0:
        pmf[1] = 1.0
        return pmf
    ks = k[1:].astype(float)
    if shape == 0.0:
        log_w = ks * math.log1p(-gamma) - np.log(ks)
        log_z = math.log(-math.log(gamma))
    else:
        from scipy.special import gammaln

        log_w = ks * math.log1p(-gamma) + gammaln(ks + shape) - gammaln(shape) - gammaln(ks + 1)
        log_z = math.log1p(-(gamma**shape)) - shape * math.log(gamma)
    pmf[1:] = np.exp(log_w - log_z)
    return pmf


def rdp_supports(event):
    """Whether dp_accounting's RDP accountant can compose ``event``."""
    return rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=NEIGHBORING_RELATION
    ).supports(event)


def rdp_epsilon(event, delta):
    """Epsilon at ``delta`` of ``event`` by dp_accounting's RDP accountant, default orders.

    This is the computation anyone can repeat:
    ``RdpAccountant(neighboring_relation=ADD_OR_REMOVE_ONE).compose(event).get_epsilon(delta)``.
    """
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    accountant.compose(event)
    return float(accountant.get_epsilon(float(delta)))


def selection_event(fit_events, score_noise_multiplier, count_noise_multiplier, mean, shape):
    """The DpEvent of a private search (without its refit).

    ``ComposedDpEvent([Laplace(count), RepeatAndSelect(run, mean, shape)])``
    where one run is ``ComposedDpEvent([*fit_events, Laplace(score)])``: the
    distinct fit mechanisms of the candidates (a run trains one of them; the
    composition of all distinct ones bounds each, so a grid whose candidates
    share one mechanism pays for one), then the Laplace-noised validation
    score.  The validation row count, released once, normalises the best
    score.
    """
    run = dpe.ComposedDpEvent(list(fit_events) + [dpe.LaplaceDpEvent(float(score_noise_multiplier))])
    return dpe.ComposedDpEvent(
        [
            dpe.LaplaceDpEvent(float(count_noise_multiplier)),
            dpe.RepeatAndSelectDpEvent(run, float(mean), float(shape)),
        ]
    )
