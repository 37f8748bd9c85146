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

import math

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.rdp import rdp_privacy_accountant

from .._memo import memoize
from ..accounting import (
    EXPONENTIAL_MECHANISM,
    NEIGHBORING_RELATION,
    PureEpsilonDpEvent,
    _flatten,
    _fold_gaussians,
)

__all__ = [
    "tnb_mean",
    "tnb_gamma",
    "draw_number_of_runs",
    "runs_pmf",
    "rdp_epsilon",
    "rdp_supports",
    "rdp_event",
    "selection_event",
    "run_event",
    "canonical_event",
    "gaussian_part",
    "evidence_threshold",
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


@memoize(maxsize=256)
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


def rdp_event(event):
    """``event`` with every :class:`~sklearn_dp.accounting.PureEpsilonDpEvent` replaced by a ``ZCDpEvent``.

    dp_accounting's RDP accountant has no event for an arbitrary pure
    epsilon-DP mechanism (such as the exponential mechanisms that release
    ``"auto"`` bounds).  A pure epsilon-DP mechanism is ``epsilon^2 / 2``-zCDP
    (Bun and Steinke 2016, Prop. 1.4), an exponential mechanism
    ``epsilon^2 / 8``-zCDP (bounded range; Cesar and Rogers 2021), and rho-zCDP
    bounds the Renyi divergence of every order ``alpha`` by ``rho * alpha``: the
    replaced event's Renyi divergence is at least the original's at every
    order (the same rhos as :func:`sklearn_dp.accounting.zcdp_rho`).
    """
    if isinstance(event, PureEpsilonDpEvent):
        factor = 0.125 if event.mechanism.startswith(EXPONENTIAL_MECHANISM) else 0.5
        return dpe.ZCDpEvent(factor * event.epsilon**2)
    if isinstance(event, dpe.ComposedDpEvent):
        return dpe.ComposedDpEvent([rdp_event(part) for part in event.events])
    if isinstance(event, dpe.SelfComposedDpEvent):
        return dpe.SelfComposedDpEvent(rdp_event(event.event), event.count)
    return event


def rdp_supports(event):
    """Whether dp_accounting's RDP accountant can compose ``event`` (see :func:`rdp_event`)."""
    return rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION).supports(
        rdp_event(event)
    )


def rdp_epsilon(event, delta):
    """Epsilon at ``delta`` of ``event`` by dp_accounting's RDP accountant, default orders.

    This is the computation anyone can repeat:
    ``RdpAccountant(neighboring_relation=ADD_OR_REMOVE_ONE).compose(event).get_epsilon(delta)``.
    """
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    accountant.compose(event)
    return float(accountant.get_epsilon(float(delta)))


def canonical_event(event):
    """``event`` with its full-data Gaussian parts folded into one Gaussian (same RDP at every order).

    ``T`` Gaussian mechanisms of multipliers ``s_t`` have Renyi divergence
    ``alpha * sum_t 1 / (2 s_t^2)`` at every order ``alpha``: exactly one
    Gaussian of multiplier ``(sum_t s_t^-2)^-1/2``.  Folding them makes
    candidates whose mechanisms differ only in how their Gaussian noise is
    spread over steps (``dp_gd``, ``dp_cd``, ``output_perturbation`` at one
    epsilon) one event, paid once.  Pure parts (the exponential mechanisms of
    ``"auto"`` bounds) are replaced by their zCDP bound (:func:`rdp_event`).
    """
    return _fold_gaussians(rdp_event(event))


def gaussian_part(event):
    """The multiplier of the full-data Gaussian part of ``event`` (folded), or None if it has none."""
    precision = 0.0
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.GaussianDpEvent) and leaf.noise_multiplier > 0:
            precision += count / leaf.noise_multiplier**2
    return precision**-0.5 if precision > 0 else None


def _split_gaussian(event):
    """(the leaves other than full-data Gaussians, the folded Gaussian multiplier or inf)."""
    others = []
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.GaussianDpEvent) and leaf.noise_multiplier > 0:
            continue
        others.append((leaf, count))
    part = gaussian_part(event)
    return others, (math.inf if part is None else part)


def dominates(first, second):
    """Whether ``first``'s Renyi divergence is at least ``second``'s at every order (structurally).

    True when both have the same mechanisms apart from their full-data
    Gaussian parts and ``first``'s Gaussian part is at most as noisy: the
    divergences then differ by ``alpha / 2 (s1^-2 - s2^-2) >= 0``.
    """
    others_1, sigma_1 = _split_gaussian(first)
    others_2, sigma_2 = _split_gaussian(second)
    return others_1 == others_2 and sigma_1 <= sigma_2


def _undominated(events):
    """The events no other event dominates (one of each set of equivalent ones), in order."""
    kept = []
    for event in events:
        if any(dominates(seen, event) for seen in kept):
            continue
        kept = [seen for seen in kept if not dominates(event, seen)] + [event]
    return kept


def run_event(fit_events, score_epsilon):
    """How one run (fit a random candidate, score it) is accounted.

    Parameters
    ----------
    fit_events : list of DpEvent
        Each candidate's fit event (one entry per candidate).
    score_epsilon : float
        The score's epsilon when it has to be paid for (see below).

    Returns
    -------
    run : DpEvent
        An event whose Renyi divergence bounds the run's at every order.
    mechanism : {"gaussian", "laplace"}
        The score's noise.
    multiplier : float
        Its noise relative to the score's sensitivity (standard deviation or
        Laplace scale).

    Notes
    -----
    A run draws one candidate uniformly, so (by joint quasi-convexity of the
    Renyi divergence) it costs at most the most expensive candidate; the
    composition of the candidate events that no other dominates at every
    order (:func:`dominates`) bounds that.

    The score is computed on the validation part and the fit on the
    disjoint training part, with the parts drawn row by row: an added row
    lands in one of them, so a run costs at most the larger of the fit's and
    the score's divergence, not their sum.  When the candidates have a
    full-data Gaussian part, the score gets Gaussian noise of the smallest
    such part's multiplier: its divergence ``alpha / (2 s^2)`` is then below
    that candidate's fit at every order, and the score costs nothing on top
    of the fits.  Otherwise (only Poisson-subsampled fits, ``dp_sgd``) the
    score is paid for by composition: Laplace noise at ``score_epsilon``.
    """
    fits = _undominated([canonical_event(event) for event in fit_events])
    parts = [gaussian_part(event) for event in fits]
    parts = [part for part in parts if part is not None]
    if parts:
        run = fits[0] if len(fits) == 1 else dpe.ComposedDpEvent(fits)
        return run, "gaussian", float(min(parts))
    multiplier = 1.0 / float(score_epsilon)
    return dpe.ComposedDpEvent(fits + [dpe.LaplaceDpEvent(multiplier)]), "laplace", multiplier


def selection_event(run, count_noise_multiplier, mean, shape, default_run=False):
    """The DpEvent of a private selection (without its refit).

    ``ComposedDpEvent([LaplaceDpEvent(count), RepeatAndSelectDpEvent(run,
    mean, shape)])``: the validation row count, released once to normalise
    the best score, and the best of the random number of runs.  With
    ``default_run``, one more ``run`` follows: the default candidate's own
    run, whose noisy score the best run's is compared with (any candidate's
    run is bounded by ``run`` at every order, see :func:`run_event`).
    """
    events = [
        dpe.LaplaceDpEvent(float(count_noise_multiplier)),
        dpe.RepeatAndSelectDpEvent(run, float(mean), float(shape)),
    ]
    if default_run:
        events.append(run)
    return dpe.ComposedDpEvent(events)


def _pgf(mean, shape):
    """``u -> E[u^K]`` for the number of runs (vectorised over ``u``)."""
    if math.isinf(shape):
        return lambda u: np.exp(float(mean) * (np.asarray(u) - 1.0))
    k_max = 64
    while True:
        pmf = runs_pmf(mean, shape, k_max)
        if pmf.sum() >= 1.0 - 1e-12 or k_max >= 1 << 16:
            break
        k_max *= 4
    pmf = pmf / pmf.sum()
    return lambda u: np.polynomial.polynomial.polyval(np.asarray(u), pmf)


@memoize(maxsize=64)
def evidence_threshold(mean, shape, mechanism, level):
    """How far the best of ``K`` noisy scores beats an equal candidate's by chance.

    The smallest ``t`` (in units of the score noise: its standard deviation
    for ``"gaussian"``, its scale for ``"laplace"``) with
    ``P(max(Z_1, ..., Z_K) - Z_0 > t) <= level``, where the ``Z`` are
    independent draws of the score noise and ``K`` follows the
    distribution of the number of runs (``K = 0``: no run, never above).
    When every candidate scores what the default scores, the best run's
    noisy score beats the default's by more than ``t`` with probability at
    most ``level``: a larger margin is evidence that the selected candidate
    is better.  Public: a function of the plan only.
    """
    from scipy import integrate, optimize, stats

    noise = stats.norm if mechanism == "gaussian" else stats.laplace
    pgf = _pgf(float(mean), float(shape))

    def above(t):
        # P(max_k Z_k > Z_0 + t) = 1 - E_{Z_0}[pgf(F(Z_0 + t))].
        value, _ = integrate.quad(
            lambda z: noise.pdf(z) * pgf(noise.cdf(z + t)), -40.0, 40.0, limit=200, points=[0.0]
        )
        return (1.0 - value) - float(level)

    return float(optimize.brentq(above, -40.0, 80.0, xtol=1e-9))
