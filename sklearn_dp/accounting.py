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

Where the parts live: the noise calibration is this module's own; the rest
is imported from here (and documented here) but written in private modules:
``sklearn_dp._dp_events`` (the event builders, the package's own event
classes and ``check_event``, which refuses a malformed event),
``sklearn_dp._event_epsilon`` (:func:`epsilon_of_event` and the readings by
dp_accounting's own accountants) and ``sklearn_dp._zcdp`` (zero-concentrated
DP).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from scipy import optimize

# The names marked F401 are not in __all__, but the rest of the package
# imports them from here.
from ._dp_accounting_compat import accountant_pld, pld_directions
from ._dp_events import (
    EXPONENTIAL_MECHANISM,  # noqa: F401
    NEIGHBORING_RELATION,
    ApproximateDpEvent,
    ClosedFormDpEvent,
    PureEpsilonDpEvent,
    _check_steps,
    _flatten,
    check_event,  # noqa: F401
    gaussian_steps_event,
    is_pure_event,
    laplace_steps_event,
    subsampled_gaussian_steps_event,
)
from ._event_epsilon import (
    _check_delta,
    _coarse_grid,
    _epsilon,
    _fold_gaussians,
    accountant_epsilon,
    accountant_event,
    epsilon_of_event,
    epsilon_of_events,
)
from ._memo import is_frozen, memoize
from ._zcdp import approximate_zcdp, epsilon_of_zcdp, zcdp_rho

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
    "mixture_delta",
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


def _check_epsilon(epsilon):
    if not isinstance(epsilon, Real) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be a float > 0 (or inf), got {epsilon!r}.")
    return float(epsilon)


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
    if key in _PAIR_CACHE:
        return _PAIR_CACHE[key]
    # The coarse grid is pessimistic: a share it certifies is certified.
    value = _event_epsilon_fast(dpe.ComposedDpEvent([first, second]), delta, grid)
    if not is_frozen():  # a key computed in a search's runs can hold their releases
        if len(_PAIR_CACHE) > 4096:
            _PAIR_CACHE.clear()
        _PAIR_CACHE[key] = value
    return value


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


#: The PLD grid of :func:`mixture_delta`, and the steps of its curve comparison.
_BRANCH_GRID = 1e-4
_BRANCH_STEPS = 64


def _lower_pld(event):
    """A PLD whose curve, in each direction, is below that of the pairs dp_accounting composes for ``event``.

    dp_accounting's optimistic PLD (every loss rounded down, the truncated
    tails dropped) of the parts it reads with a known pair: full-data
    Gaussian parts (folded into one), Laplace and discrete Laplace parts (a
    pure part, :class:`PureEpsilonDpEvent`, is the discrete Laplace event of
    randomized response, the pair its ``PLDAccountant`` composes for it),
    and Poisson-subsampled Gaussian parts.  Any other part is left out: a
    product's divergence is at least that of a sub-product (its marginal, a
    post-processing).  None when no part is read (the zero curve).
    """
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    grid = dict(
        value_discretization_interval=_BRANCH_GRID,
        pessimistic_estimate=False,
        use_connect_dots=False,
    )
    inverse_square, plds = 0.0, []
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.GaussianDpEvent) and leaf.noise_multiplier > 0:
            inverse_square += count / float(leaf.noise_multiplier) ** 2
            continue
        if isinstance(leaf, dpe.LaplaceDpEvent) and leaf.noise_multiplier > 0:
            part = pld_module.from_laplace_mechanism(float(leaf.noise_multiplier), **grid)
        elif (
            isinstance(leaf, dpe.DiscreteLaplaceDpEvent)
            and leaf.noise_parameter > 0
            and leaf.sensitivity >= 1
        ):
            part = pld_module.from_discrete_laplace_mechanism(
                float(leaf.noise_parameter), sensitivity=int(leaf.sensitivity), **grid
            )
        elif (
            isinstance(leaf, dpe.PoissonSampledDpEvent)
            and isinstance(leaf.event, dpe.GaussianDpEvent)
            and leaf.event.noise_multiplier > 0
        ):
            part = pld_module.from_gaussian_mechanism(
                float(leaf.event.noise_multiplier),
                sampling_prob=float(leaf.sampling_probability),
                neighboring_relation=NEIGHBORING_RELATION,
                **grid,
            )
        else:
            continue
        plds.append(part if count == 1 else part.self_compose(int(count)))
    if inverse_square > 0:
        plds.append(pld_module.from_gaussian_mechanism(inverse_square**-0.5, **grid))
    if not plds:
        return None
    composed = plds[0]
    for part in plds[1:]:
        composed = composed.compose(part)
    return composed


def _upper_pld(event):
    """dp_accounting's pessimistic PLD of ``event`` (its accountant's), or None where it reads no part."""
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(
        NEIGHBORING_RELATION, value_discretization_interval=_BRANCH_GRID
    )
    event = _fold_gaussians(event)
    if not accountant.supports(event):
        return None
    accountant.compose(event)
    return accountant_pld(accountant)


def _guarantee_curve(epsilon, delta):
    """The largest curve of an ``(epsilon, delta)``-DP mechanism, as a function (both directions).

    That of its dominating pair (Kairouz, Oh and Viswanath 2015):
    ``delta + (1 - delta) (e^epsilon - e^x) / (1 + e^epsilon)`` below
    ``epsilon`` (down to ``-epsilon``; 1 further down), ``delta`` from
    ``epsilon`` on.
    """

    def curve(xs):
        xs = np.asarray(xs, dtype=float)
        below = delta + (1.0 - delta) * (math.exp(epsilon) - np.exp(xs)) / (1.0 + math.exp(epsilon))
        return np.where(xs >= epsilon, delta, np.where(xs >= -epsilon, below, 1.0))

    return curve


def mixture_delta(prefix_event, reference_event, other, epsilon, prefix_epsilon):
    """Upper bound on the delta at ``epsilon`` of a pure-DP release followed by one of two branches it picks.

    The one argument behind every branch picked from released values: a
    fit's basic-composition share against its numerical one
    (``SolverPlanner``), a search's runs against the default's refit
    (``plan_skip``).  ``prefix_event`` is pure ``prefix_epsilon``-DP; from its output ``o``
    one of two branches runs: the reference ``A`` (``reference_event``, one
    mechanism for every output) or another ``B(o)`` (each covered by
    ``other``).  For neighbours ``D, D'``, with ``L(o)`` in
    ``[-prefix_epsilon, prefix_epsilon]`` the prefix's privacy loss, the
    whole run's hockey-stick divergence at ``epsilon`` is ``sum_o p(o)
    delta_{M(o)}(epsilon - L(o))`` in each direction of add/remove.  Let
    ``dom_A`` be the curve of the pair dominating ``A`` that the prefix is
    composed with, ``up_B`` one above every ``B``'s curve and ``low_A``
    one below ``dom_A``.  A branch's curve is at most ``dom_A + (up_B -
    low_A)_+``, so the sum is at most

        sum_o p(o) dom_A(epsilon - L(o))  +  max_x (up_B(x) - low_A(x))_+

    over ``x`` in ``[epsilon - prefix_epsilon, epsilon + prefix_epsilon]``.
    The first term is the prefix composed with ``A`` (dominating pairs
    compose, adaptively too: Zhu, Dong and Wang 2022, Theorem 10), here by
    dp_accounting's PLD accountant (pessimistic); the second is bounded on a
    grid ``x_0 < ... < x_m`` by ``up_B(x_i) - low_A(x_{i+1})`` (both curves
    fall).

    Which curves are sound.  ``dom_A`` may be any pair that dominates
    ``A``; here it is the product of the pairs dp_accounting's PLD accountant
    composes for ``A``'s parts, since that accountant computes the first
    term.  So ``low_A`` must lie below that product's curve: it is the
    optimistic PLD of a sub-product of the same pairs (``_lower_pld``).
    It need not lie below ``A``'s true curve, which may be lower where
    randomized response stands for a pure part (a lower bound of the true
    curve would do too, but would leave such parts out).  ``up_B`` must
    lie above ``B``'s true curve, for all neighbours: ``B``'s pessimistic PLD (dominating pairs, each loss rounded
    up) or, for a branch known only by an ``(epsilon_B, delta_B)``
    guarantee, the curve of that guarantee's dominating pair.  Where ``B``'s
    curve stays below ``A``'s on the range the excess is zero, and the
    guarantee is the first term: the prefix composed with ``A`` alone.

    Parameters
    ----------
    prefix_event : dp_accounting.DpEvent
        What runs first: pure ``prefix_epsilon``-DP (a row count, bound releases).
    reference_event : dp_accounting.DpEvent
        The branch that is one mechanism for every output of the prefix.
    other : dp_accounting.DpEvent or tuple of float
        The other branch's mechanism for this output, or an ``(epsilon_B,
        delta_B)`` guarantee that covers it for every output.
    epsilon : float
        The epsilon of the guarantee.
    prefix_epsilon : float
        The prefix's pure epsilon.

    Returns
    -------
    float
        The bound, in the larger direction of add/remove; inf when a part of
        the prefix, the reference or the other event cannot be accounted.
    """
    composed = _upper_pld(dpe.ComposedDpEvent([prefix_event, reference_event]))
    if isinstance(other, dpe.DpEvent):
        other_pld = _upper_pld(other)
        if other_pld is None:
            return math.inf
        other_curves = [pmf.get_delta_for_epsilon for pmf in pld_directions(other_pld)]
    else:
        other_curves = [_guarantee_curve(float(other[0]), float(other[1]))]
    if composed is None:
        return math.inf
    lower = _lower_pld(reference_event)
    # A hair beyond the prefix's loss range, which its epsilon's float may miss.
    reach = float(prefix_epsilon) * (1.0 + 1e-9)
    grid = [epsilon - reach + 2.0 * reach * i / _BRANCH_STEPS for i in range(_BRANCH_STEPS + 1)]
    shared = pld_directions(composed)
    lows = [None] if lower is None else pld_directions(lower)
    directions = max(len(shared), len(lows), len(other_curves))
    worst = 0.0
    for d in range(directions):
        low = lows[min(d, len(lows) - 1)]
        low_values = np.zeros(len(grid)) if low is None else low.get_delta_for_epsilon(grid)
        up_values = np.asarray(other_curves[min(d, len(other_curves) - 1)](grid), dtype=float)
        excess = max(0.0, float(np.max(up_values[:-1] - np.asarray(low_values)[1:])))
        first = float(shared[min(d, len(shared) - 1)].get_delta_for_epsilon(epsilon))
        worst = max(worst, first + excess)
    return worst
