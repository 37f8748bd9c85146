"""Tests of noise calibration and epsilon accounting (sklearn_dp.accounting).

Conventions: add/remove-one neighbouring; ``noise std = multiplier * sensitivity``.
Every calibrated multiplier must be on the private side (its event's epsilon is
at most the target) and tight (a little less noise fails the target).
"""

import math
import random
import time

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from dp_accounting.rdp import rdp_privacy_accountant
from scipy.stats import norm

from sklearn_dp import _event_epsilon, accounting
from sklearn_dp._dp_accounting_compat import accountant_pld
from sklearn_dp.accounting import (
    NEIGHBORING_RELATION,
    PureEpsilonDpEvent,
    epsilon_of_event,
    epsilon_of_events,
    gaussian_noise_multiplier,
    gaussian_steps_event,
    laplace_noise_multiplier,
    laplace_steps_event,
    subsampled_gaussian_noise_multiplier,
    subsampled_gaussian_steps_event,
)


def analytic_gaussian_delta(epsilon, sigma):
    """delta(epsilon) of the Gaussian mechanism with multiplier sigma (Balle & Wang 2018).

    Written here from the formula, independently of dp_accounting.
    """
    return norm.cdf(-epsilon * sigma + 1 / (2 * sigma)) - math.exp(epsilon) * norm.cdf(
        -epsilon * sigma - 1 / (2 * sigma)
    )


def rdp_epsilon(event, delta):
    accountant = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


# --------------------------------------------------------------------------
# Full-batch Gaussian: exact closed form
# --------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
@pytest.mark.parametrize("n_steps", [1, 7, 100])
def test_gaussian_multiplier_is_sqrt_T_times_one_step(epsilon, delta, n_steps):
    one = gaussian_noise_multiplier(epsilon, delta, 1)
    many = gaussian_noise_multiplier(epsilon, delta, n_steps)
    assert many == pytest.approx(math.sqrt(n_steps) * one, rel=1e-12)
    # and the one-step multiplier is the analytic Gaussian mechanism's
    assert one == pytest.approx(gaussian_mechanism.get_sigma_gaussian(epsilon, delta), rel=1e-6)


# Test vectors for the setting of Wang, Ye and Xu (2017), "Differentially Private Empirical Risk
# Minimization Revisited" (docs/solvers/erm_revisited.md): G = 1, n = 200000,
# delta = 1e-3, replace-one sensitivity 2G/n, so sigma = multiplier * 2 / n.
SPEC_VECTORS = [
    (0.2, 1000, 3.130e-3),
    (0.5, 1000, 1.458e-3),
    (1.0, 1000, 8.142e-4),
    (0.2, 1500, 3.834e-3),
    (0.5, 1500, 1.785e-3),
    (1.0, 1500, 9.972e-4),
]


@pytest.mark.parametrize("epsilon, n_steps, sigma", SPEC_VECTORS)
def test_gaussian_multiplier_matches_spec_test_vectors(epsilon, n_steps, sigma):
    n = 200_000
    multiplier = gaussian_noise_multiplier(epsilon, 1e-3, n_steps)
    # The spec prints 4 significant digits: agree to well within rounding.
    assert multiplier * 2.0 / n == pytest.approx(sigma, rel=5e-4)


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("delta", [1e-2, 1e-5, 1e-10])
@pytest.mark.parametrize("n_steps", [1, 50])
def test_gaussian_multiplier_private_side_and_tight(epsilon, delta, n_steps):
    sigma = gaussian_noise_multiplier(epsilon, delta, n_steps)
    event = gaussian_steps_event(sigma, n_steps)
    achieved = epsilon_of_event(event, delta)
    assert achieved <= epsilon
    assert achieved >= epsilon * (1 - 1e-6)
    # 1% less noise is no longer (epsilon, delta)-DP
    assert epsilon_of_event(gaussian_steps_event(0.99 * sigma, n_steps), delta) > epsilon


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 5.0, 20.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-10])
def test_analytic_gaussian_mechanism_independent_check(epsilon, delta):
    """delta(epsilon) from the closed form (scipy only) is at most the target and close to it."""
    sigma = gaussian_noise_multiplier(epsilon, delta, 1)
    achieved_delta = analytic_gaussian_delta(epsilon, sigma)
    assert achieved_delta <= delta
    assert achieved_delta >= delta * (1 - 1e-6)
    # and 1% less noise breaks the target delta
    assert analytic_gaussian_delta(epsilon, 0.99 * sigma) > delta


@pytest.mark.parametrize("n_steps", [1, 10])
def test_gaussian_multiplier_infinite_epsilon_is_zero(n_steps):
    assert gaussian_noise_multiplier(math.inf, 1e-5, n_steps) == 0.0
    assert subsampled_gaussian_noise_multiplier(math.inf, 1e-5, 0.1, n_steps) == 0.0
    assert laplace_noise_multiplier(math.inf, n_steps) == 0.0


@pytest.mark.parametrize("epsilon", [0.0, -1.0, float("nan"), "1.0", None])
def test_bad_epsilon_raises_helpful_error(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        gaussian_noise_multiplier(epsilon, 1e-5, 1)
    with pytest.raises(ValueError, match="epsilon"):
        subsampled_gaussian_noise_multiplier(epsilon, 1e-5, 0.1, 10)


@pytest.mark.parametrize("delta", [1.0, 1.5, -1e-5, float("nan"), "1e-5", None])
def test_bad_delta_raises_helpful_error(delta):
    with pytest.raises(ValueError, match="delta"):
        gaussian_noise_multiplier(1.0, delta, 1)
    with pytest.raises(ValueError, match="delta"):
        subsampled_gaussian_noise_multiplier(1.0, delta, 0.1, 10)


def test_zero_delta_raises_and_says_why():
    with pytest.raises(ValueError, match="delta=0") as info:
        gaussian_noise_multiplier(1.0, 0.0, 1)
    assert "delta > 0" in str(info.value)
    with pytest.raises(ValueError, match="delta=0"):
        subsampled_gaussian_noise_multiplier(1.0, 0.0, 0.1, 10)


@pytest.mark.parametrize("n_steps", [0, -3, 2.5])
def test_bad_step_count_raises(n_steps):
    with pytest.raises(ValueError, match="n_steps"):
        gaussian_noise_multiplier(1.0, 1e-5, n_steps)


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_bad_sampling_probability_raises(q):
    with pytest.raises(ValueError, match="sampling_probability"):
        subsampled_gaussian_noise_multiplier(1.0, 1e-5, q, 10)


# --------------------------------------------------------------------------
# Poisson-subsampled Gaussian (PLD calibration)
# --------------------------------------------------------------------------

SUBSAMPLED_SETTINGS = [
    # epsilon, delta, q, T
    (1.0, 1e-5, 0.1, 100),
    (0.5, 1e-6, 0.05, 200),
    (3.0, 1e-5, 0.5, 50),
    (1.0, 1e-5, 0.01, 1000),
    (0.1, 1e-5, 0.2, 10),
    (0.5, 1e-5, 0.8, 5),
    # large epsilon: the search grid widens with epsilon (accounting._coarse_grid)
    (10.0, 1e-5, 0.1, 100),
    (50.0, 1e-6, 0.05, 20),
]


@pytest.mark.parametrize("epsilon, delta, q, n_steps", SUBSAMPLED_SETTINGS)
def test_subsampled_multiplier_private_side_and_tight(epsilon, delta, q, n_steps):
    sigma = subsampled_gaussian_noise_multiplier(epsilon, delta, q, n_steps)
    event = subsampled_gaussian_steps_event(sigma, q, n_steps)
    assert event == dpe.SelfComposedDpEvent(
        dpe.PoissonSampledDpEvent(q, dpe.GaussianDpEvent(sigma)), n_steps
    ) or (n_steps == 1 and event == dpe.PoissonSampledDpEvent(q, dpe.GaussianDpEvent(sigma)))
    assert epsilon_of_event(event, delta) <= epsilon
    # reasonably tight: 3% less noise fails per the same (PLD) accountant
    looser = subsampled_gaussian_steps_event(0.97 * sigma, q, n_steps)
    assert epsilon_of_event(looser, delta) > epsilon
    # subsampling amplifies: never more noise than full batch
    assert sigma <= gaussian_noise_multiplier(epsilon, delta, n_steps) * (1 + 1e-12)


@pytest.mark.parametrize("epsilon, delta, q, n_steps", SUBSAMPLED_SETTINGS[:4])
def test_subsampled_multiplier_rdp_cross_check(epsilon, delta, q, n_steps):
    """RDP (looser) gives a larger epsilon for the same noise, but not wildly larger."""
    sigma = subsampled_gaussian_noise_multiplier(epsilon, delta, q, n_steps)
    event = subsampled_gaussian_steps_event(sigma, q, n_steps)
    pld_eps = epsilon_of_event(event, delta)
    rdp_eps = rdp_epsilon(event, delta)
    assert rdp_eps >= pld_eps
    assert rdp_eps <= 1.25 * epsilon


@pytest.mark.parametrize("n_steps", [1, 10, 300])
def test_subsampled_multiplier_full_rate_is_closed_form(n_steps):
    full = gaussian_noise_multiplier(1.0, 1e-5, n_steps)
    assert subsampled_gaussian_noise_multiplier(1.0, 1e-5, 1.0, n_steps) == full
    # and the event of a full-rate "sample" is the plain Gaussian composition
    sigma = gaussian_noise_multiplier(1.0, 1e-5, n_steps)
    full_rate = subsampled_gaussian_steps_event(sigma, 1.0, n_steps)
    assert full_rate == gaussian_steps_event(sigma, n_steps)


def test_subsampled_multiplier_monotone_in_epsilon():
    # (0.5, 1, 2) at q=0.1, T=100 also serve other tests through the cache
    sigmas = [subsampled_gaussian_noise_multiplier(e, 1e-5, 0.1, 100) for e in (0.5, 1.0, 2.0)]
    assert all(a > b for a, b in zip(sigmas, sigmas[1:]))


def test_subsampled_multiplier_monotone_in_rate_and_steps():
    rates = (0.05, 0.1, 0.3, 1.0)
    by_rate = [subsampled_gaussian_noise_multiplier(1.0, 1e-5, q, 100) for q in rates]
    assert all(a < b for a, b in zip(by_rate, by_rate[1:]))
    by_steps = [subsampled_gaussian_noise_multiplier(1.0, 1e-5, 0.1, t) for t in (50, 100, 200)]
    assert all(a < b for a, b in zip(by_steps, by_steps[1:]))


def test_well_known_dp_sgd_sanity_check():
    """Abadi et al.'s MNIST setting: q = 256/60000, sigma = 1.1, 60 epochs, delta = 1e-5.

    RDP gives epsilon around 3 (TF Privacy reports ~2.9); the PLD accountant
    under add/remove is tighter, so at most that.
    """
    event = subsampled_gaussian_steps_event(1.1, 256 / 60000, 14063)
    pld_eps = epsilon_of_event(event, 1e-5)
    rdp_eps = rdp_epsilon(event, 1e-5)
    assert 1.5 < pld_eps <= 3.01
    assert pld_eps <= rdp_eps <= 3.1


# --------------------------------------------------------------------------
# epsilon_of_event / epsilon_of_events
# --------------------------------------------------------------------------


def test_gaussian_compositions_are_exact():
    events = [
        dpe.GaussianDpEvent(3.0),
        dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(10.0), 4),
        dpe.ComposedDpEvent([dpe.GaussianDpEvent(5.0), dpe.NoOpDpEvent()]),
    ]
    combined = (1 / 3.0**2 + 4 / 10.0**2 + 1 / 5.0**2) ** -0.5
    for delta in (1e-3, 1e-5, 1e-8):
        expected = gaussian_mechanism.get_epsilon_gaussian(combined, delta)
        assert epsilon_of_events(events, delta) == pytest.approx(expected, rel=1e-12)
        # The exact value is below dp_accounting's pessimistic PLD estimate and close to it.
        pld = _event_epsilon._numerical_epsilon(dpe.ComposedDpEvent(events), delta, 1e-4)
        assert expected <= pld * (1 + 1e-9)
        assert pld == pytest.approx(expected, rel=0.01)


def test_gaussian_steps_event_composes_to_one_gaussian():
    for sigma, steps in [(2.0, 1), (20.0, 100), (0.7, 3)]:
        event = gaussian_steps_event(sigma, steps)
        expected = gaussian_mechanism.get_epsilon_gaussian(sigma / math.sqrt(steps), 1e-5)
        assert epsilon_of_event(event, 1e-5) == pytest.approx(expected, rel=1e-12)


def test_pure_mechanisms_add_exactly():
    events = [
        dpe.LaplaceDpEvent(2.0),
        laplace_steps_event(4.0, 3),
        PureEpsilonDpEvent(0.3, "objective_perturbation"),
        dpe.SelfComposedDpEvent(PureEpsilonDpEvent(0.1, "x"), 5),
        dpe.NoOpDpEvent(),
    ]
    expected = 1 / 2.0 + 3 / 4.0 + 0.3 + 5 * 0.1
    for delta in (0.0, 1e-5):
        assert epsilon_of_events(events, delta) == pytest.approx(expected, rel=1e-12)
    assert accounting.is_pure_event(dpe.ComposedDpEvent(events))
    assert not accounting.is_pure_event(dpe.GaussianDpEvent(1.0))


def test_laplace_multiplier_round_trip():
    for epsilon, steps in [(1.0, 1), (0.5, 10), (3.0, 4)]:
        multiplier = laplace_noise_multiplier(epsilon, steps)
        assert epsilon_of_event(laplace_steps_event(multiplier, steps), 0.0) == pytest.approx(
            epsilon, rel=1e-12
        )


def test_non_private_and_noop_events():
    assert epsilon_of_event(dpe.NonPrivateDpEvent(), 1e-5) == math.inf
    assert epsilon_of_event(dpe.NonPrivateDpEvent(), 0.0) == math.inf
    nested = dpe.ComposedDpEvent(
        [dpe.GaussianDpEvent(100.0), dpe.SelfComposedDpEvent(dpe.NonPrivateDpEvent(), 2)]
    )
    assert epsilon_of_event(nested, 1e-5) == math.inf
    assert epsilon_of_events([dpe.LaplaceDpEvent(1.0), dpe.NonPrivateDpEvent()], 1e-5) == math.inf
    assert epsilon_of_event(dpe.NoOpDpEvent(), 1e-5) == 0.0
    assert epsilon_of_event(dpe.SelfComposedDpEvent(dpe.NoOpDpEvent(), 10), 0.0) == 0.0
    assert epsilon_of_events([], 1e-5) == 0.0
    # zero noise is not private
    assert epsilon_of_event(dpe.GaussianDpEvent(0.0), 1e-5) == math.inf
    assert epsilon_of_event(dpe.LaplaceDpEvent(0.0), 1e-5) == math.inf


def test_gaussian_at_zero_delta_is_infinite():
    assert epsilon_of_event(dpe.GaussianDpEvent(10.0), 0.0) == math.inf
    event = subsampled_gaussian_steps_event(5.0, 0.1, 10)
    assert epsilon_of_event(event, 0.0) == math.inf


def _pld_bound(pure_epsilons, rest_events, delta):
    """Independent PLD bound: randomized-response PLDs of the pure parts, the rest's own PLD."""
    from dp_accounting.pld import common, pld_privacy_accountant, privacy_loss_distribution

    accountant = pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION)
    for event in rest_events:
        accountant.compose(event)
    pld = accountant_pld(accountant)
    for epsilon in pure_epsilons:
        pld = pld.compose(
            privacy_loss_distribution.from_privacy_parameters(
                common.DifferentialPrivacyParameters(epsilon, 0.0)
            )
        )
    return pld.get_epsilon_for_delta(delta)


def test_pure_event_mixed_with_gaussian_is_the_best_of_three_bounds():
    # Basic composition (the pure epsilon plus the Gaussian's epsilon at the
    # full delta), zCDP, and PLD with the pure part bounded by randomized
    # response: each valid; the smallest is returned.
    for delta in (1e-5, 1e-8):
        gaussian = gaussian_mechanism.get_epsilon_gaussian(5.0, delta)
        mixed = dpe.ComposedDpEvent([PureEpsilonDpEvent(0.5, "x"), dpe.GaussianDpEvent(5.0)])
        basic = 0.5 + gaussian
        zcdp = accounting.epsilon_of_zcdp(0.5 * 0.5**2 + 1 / (2 * 5.0**2), delta)
        pld = _pld_bound([0.5], [dpe.GaussianDpEvent(5.0)], delta)
        assert pld < basic  # randomized response composes better than basic composition
        assert epsilon_of_event(mixed, delta) == pytest.approx(min(basic, zcdp, pld), rel=1e-9)
        em = PureEpsilonDpEvent(0.1, "exponential mechanism: a bound")
        count = dpe.LaplaceDpEvent(20.0)
        with_count = dpe.ComposedDpEvent([count, em, dpe.GaussianDpEvent(5.0)])
        rest = epsilon_of_event(dpe.ComposedDpEvent([count, dpe.GaussianDpEvent(5.0)]), delta)
        rho = 0.1**2 / 8 + 0.5 / 20.0**2 + 1 / (2 * 5.0**2)
        pld = _pld_bound([0.1], [count, dpe.GaussianDpEvent(5.0)], delta)
        expected = min(0.1 + rest, accounting.epsilon_of_zcdp(rho, delta), pld)
        # 1e-8: the oldest supported scipy's root finding differs from the newest by 1e-9.
        assert epsilon_of_event(with_count, delta) == pytest.approx(expected, rel=1e-8)
        assert expected <= 0.1 + rest
    # At delta = 0 the Gaussian part is not private.
    assert epsilon_of_event(mixed, 0.0) == math.inf


def test_many_exponential_mechanisms_use_zcdp_when_tighter():
    # 60 exponential mechanisms of 0.02 each (per-feature bounds) with a
    # Gaussian: basic composition says 1.2 + eps_G; zCDP says
    # rho = 60 * 0.02^2 / 8 + 1 / (2 s^2), converted at delta.
    delta, sigma = 1e-5, 20.0
    ems = dpe.SelfComposedDpEvent(PureEpsilonDpEvent(0.02, "exponential mechanism: x"), 60)
    event = dpe.ComposedDpEvent([ems, dpe.GaussianDpEvent(sigma)])
    rho = 60 * 0.02**2 / 8 + 1 / (2 * sigma**2)
    zcdp = accounting.epsilon_of_zcdp(rho, delta)
    basic = 1.2 + gaussian_mechanism.get_epsilon_gaussian(sigma, delta)
    pld = _pld_bound([0.02] * 60, [dpe.GaussianDpEvent(sigma)], delta)
    assert zcdp < basic
    assert epsilon_of_event(event, delta) == pytest.approx(min(zcdp, pld), rel=1e-9)
    # A pure mechanism that is not an exponential mechanism costs epsilon^2 / 2.
    other = dpe.ComposedDpEvent(
        [dpe.SelfComposedDpEvent(PureEpsilonDpEvent(0.02, "other"), 60), dpe.GaussianDpEvent(sigma)]
    )
    rho_other = 60 * 0.02**2 / 2 + 1 / (2 * sigma**2)
    assert epsilon_of_event(other, delta) == pytest.approx(
        min(basic, accounting.epsilon_of_zcdp(rho_other, delta), pld), rel=1e-9
    )


def test_many_pure_mechanisms_alone_use_zcdp_at_positive_delta():
    ems = dpe.SelfComposedDpEvent(PureEpsilonDpEvent(0.02, "exponential mechanism: x"), 60)
    count = dpe.LaplaceDpEvent(20.0)
    event = dpe.ComposedDpEvent([count, ems])
    assert epsilon_of_event(event, 0.0) == pytest.approx(0.05 + 1.2, rel=1e-12)
    rho = 0.5 * 0.05**2 + 60 * 0.02**2 / 8
    assert accounting.epsilon_of_zcdp(rho, 1e-5) < 1.25
    assert epsilon_of_event(event, 1e-5) == pytest.approx(
        accounting.epsilon_of_zcdp(rho, 1e-5), rel=1e-12
    )
    assert accounting.is_pure_event(event)


def test_pure_event_with_closed_form_and_approximate_parts():
    # Label set (approximate), exponential mechanism, count and Gaussian solver.
    delta = 1e-5
    label = accounting.ApproximateDpEvent(0.1, 0.5e-5, "label set")
    em = PureEpsilonDpEvent(0.09, "exponential mechanism: bound")
    count = dpe.LaplaceDpEvent(1 / 0.04)
    solver = dpe.GaussianDpEvent(4.0)
    event = dpe.ComposedDpEvent([label, count, em, solver])
    # The label set takes its own delta (basic composition); the rest is
    # the best of the three bounds at what is left.
    left = 0.5e-5
    rest = epsilon_of_event(dpe.ComposedDpEvent([count, solver]), left)
    rho = 0.09**2 / 8 + 0.5 * 0.04**2 + 1 / (2 * 4.0**2)
    inner = min(
        0.09 + rest,
        accounting.epsilon_of_zcdp(rho, left),
        _pld_bound([0.09], [count, solver], left),
    )
    assert epsilon_of_event(event, delta) == pytest.approx(0.1 + inner, rel=1e-9)


def test_subsampled_epsilon_matches_pld_accountant():
    from dp_accounting.pld import pld_privacy_accountant

    event = subsampled_gaussian_steps_event(1.5, 0.05, 200)
    pld = pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION)
    pld.compose(event)
    assert epsilon_of_event(event, 1e-5) == pytest.approx(pld.get_epsilon(1e-5), rel=1e-9)


# --------------------------------------------------------------------------
# Speed and caching
# --------------------------------------------------------------------------


def test_calibration_is_cached_and_fast():
    # Unusual inputs so that no other test has filled the cache.
    args = (1.0 + 1e-7 * np.pi, 1e-5, 0.1, 100)
    start = time.perf_counter()
    first_sigma = subsampled_gaussian_noise_multiplier(*args)
    first = time.perf_counter() - start
    start = time.perf_counter()
    second_sigma = subsampled_gaussian_noise_multiplier(*args)
    second = time.perf_counter() - start
    assert second_sigma == first_sigma
    assert first < 10.0
    assert second < max(first / 10, 1e-3)

    start = time.perf_counter()
    gaussian_noise_multiplier(0.987654321, 1e-5, 100)
    first = time.perf_counter() - start
    start = time.perf_counter()
    gaussian_noise_multiplier(0.987654321, 1e-5, 100)
    assert time.perf_counter() - start < max(first / 10, 1e-3)
    assert first < 1.0


def test_largest_share_is_certified_and_near_optimal():
    # The count (Laplace) and a Gaussian solver share epsilon; the share is
    # only ever one the accountant certifies, and within 0.2% of the best.
    from sklearn_dp.accounting import _coarse_grid, _epsilon, largest_share

    delta, calls = 1e-5, []
    for epsilon in (0.3, 1.0, 4.0):
        count = dpe.LaplaceDpEvent(1.0 / (0.05 * epsilon))

        def make_event(part):
            calls.append(part)
            return dpe.GaussianDpEvent(accounting.gaussian_noise_multiplier(part, delta, 1))

        share = largest_share(make_event, count, epsilon, delta, 0.95 * epsilon)
        composed = _epsilon(
            dpe.ComposedDpEvent([count, make_event(share)]), delta, _coarse_grid(epsilon)
        )
        assert composed <= epsilon
        above = _epsilon(
            dpe.ComposedDpEvent([count, make_event(share + 0.002 * epsilon)]),
            delta,
            _coarse_grid(epsilon),
        )
        assert above > epsilon
    assert len(calls) <= 3 * (4 + 2)


def test_largest_share_falls_back_to_the_floor():
    from sklearn_dp.accounting import largest_share

    count = dpe.LaplaceDpEvent(20.0)
    assert largest_share(lambda part: None, count, 1.0, 1e-5, 0.95) == 0.95


def test_calibration_never_takes_a_nan_epsilon_as_meeting_the_target(monkeypatch):
    """An accountant failure (NaN) below some noise level must not pass as certified."""
    import math

    from dp_accounting import dp_event as dpe

    from sklearn_dp import accounting

    def fake_epsilon(event, delta, grid):
        sigma = event.noise_multiplier
        return math.nan if sigma < 3.0 else 2.0 / sigma  # meets epsilon=0.5 from sigma=4

    monkeypatch.setattr(accounting, "_event_epsilon_fast", fake_epsilon)
    sigma = accounting._calibrate(dpe.GaussianDpEvent, 0.5, 1e-5, None, guess=1.0)
    assert sigma >= 4.0 * (1 - 1e-9)
    sigma = accounting._calibrate(dpe.GaussianDpEvent, 0.5, 1e-5, None, guess=10.0)
    assert 4.0 * (1 - 1e-9) <= sigma <= 4.01


def test_calibration_secant_search_is_certified_and_cheap(monkeypatch):
    """The secant fast path returns only certified multipliers, in a few accountant calls."""
    from sklearn_dp import accounting

    calls = []
    original = accounting._event_epsilon_fast

    def counting(event, delta, grid):
        calls.append(1)
        return original(event, delta, grid)

    monkeypatch.setattr(accounting, "_event_epsilon_fast", counting)
    for epsilon, delta, q, n_steps in [(1.0, 1e-5, 0.04, 200), (0.5, 1e-6, 0.05, 200)]:
        calls.clear()
        sigma = accounting.subsampled_gaussian_noise_multiplier.__wrapped__(
            epsilon, delta, q, n_steps
        )
        assert len(calls) <= 5
        event = subsampled_gaussian_steps_event(sigma, q, n_steps)
        assert epsilon_of_event(event, delta) <= epsilon
        looser = subsampled_gaussian_steps_event(0.99 * sigma, q, n_steps)
        assert epsilon_of_event(looser, delta) > epsilon


@pytest.mark.parametrize("guess", [0.3, 30.0, 1e3])
def test_calibration_is_certified_from_any_starting_guess(guess):
    """A bad guess costs accountant calls, never privacy or tightness."""
    from sklearn_dp import accounting

    def make_event(sigma):
        return subsampled_gaussian_steps_event(sigma, 0.1, 50)

    sigma = accounting._calibrate(make_event, 1.0, 1e-5, None, guess=guess)
    assert epsilon_of_event(make_event(sigma), 1e-5) <= 1.0
    assert epsilon_of_event(make_event(0.97 * sigma), 1e-5) > 1.0


def test_gaussian_dp_guess_covers_compositions_and_declines_the_rest():
    from sklearn_dp import accounting

    def phases(sigma):
        return dpe.ComposedDpEvent(
            [
                subsampled_gaussian_steps_event(sigma, 0.1, 40),
                subsampled_gaussian_steps_event(2 * sigma, 0.2, 10),
                dpe.GaussianDpEvent(4 * sigma),
            ]
        )

    guess = accounting._gaussian_dp_guess(phases, 1.0, 1e-5)
    sigma = accounting.calibrate_noise_multiplier(phases, 1.0, 1e-5)
    assert guess is not None and 0.7 * sigma < guess < 1.3 * sigma
    assert accounting._gaussian_dp_guess(lambda s: dpe.LaplaceDpEvent(s), 1.0, 1e-5) is None
    assert accounting._gaussian_dp_guess(phases, 1.0, 0.0) is None


# --------------------------------------------------------------------------
# dp_event_ read by dp_accounting's own accountants
# --------------------------------------------------------------------------

#: A ledger entry's event as pickled before PureEpsilonDpEvent was a
#: discrete Laplace event (a composition with the label set's event).
_OLD_PICKLE = (
    b"\x80\x04\x95\xd4\x00\x00\x00\x00\x00\x00\x00\x8c\x16dp_accounting.dp_event\x94\x8c\x0f"
    b"ComposedDpEvent\x94\x93\x94)\x81\x94}\x94\x8c\x06events\x94]\x94(\x8c\x15sklearn_dp."
    b"accounting\x94\x8c\x12PureEpsilonDpEvent\x94\x93\x94G?\xd3333333\x8c\x18exponential "
    b"mechanism: x\x94\x86\x94R\x94h\x07\x8c\x12ApproximateDpEvent\x94\x93\x94G?\xc9\x99\x99"
    b"\x99\x99\x99\x9aG>\xd4\xf8\xb5\x88\xe3h\xf1\x8c\tlabel set\x94\x87\x94R\x94esb."
)


def _pld_accountant():
    from dp_accounting.pld import PLDAccountant

    return PLDAccountant(NEIGHBORING_RELATION)


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 1.0, 3.0])
def test_pure_event_is_binary_randomized_response_for_the_pld_accountant(epsilon):
    event = PureEpsilonDpEvent(epsilon, "output_perturbation")
    assert isinstance(event, dpe.DiscreteLaplaceDpEvent) and event.epsilon == epsilon
    pld = _pld_accountant().compose(event)
    assert pld.get_epsilon(0.0) == pytest.approx(epsilon, rel=1e-9)
    # The hockey-stick curve of binary randomized response at epsilon (output
    # the true bit with probability a = e^eps / (1 + e^eps)), the worst case
    # of every pure epsilon-DP mechanism: delta(e') = a - e^e' (1 - a).
    a = math.exp(epsilon) / (1.0 + math.exp(epsilon))
    for slack in (0.0, 0.5, 0.9):
        expected = a - math.exp(slack * epsilon) * (1 - a)
        assert pld.get_delta(slack * epsilon) == pytest.approx(expected, rel=1e-6)


def test_dp_accountings_randomized_response_event_is_refused_under_add_remove():
    # Why the pure event is a discrete Laplace event and not dp_accounting's
    # RandomizedResponseDpEvent: neither accountant takes the latter under
    # add/remove-one neighbours.
    event = dpe.RandomizedResponseDpEvent(2.0 / (1.0 + math.e), 2)
    assert not _pld_accountant().supports(event)
    assert not rdp_privacy_accountant.RdpAccountant(
        neighboring_relation=NEIGHBORING_RELATION
    ).supports(event)


def test_pure_event_keeps_its_zcdp_charge_and_old_ledgers_read():
    import pickle

    assert accounting.zcdp_rho(PureEpsilonDpEvent(0.4, "objective_perturbation")) == (
        pytest.approx(0.4**2 / 2)
    )
    exponential = PureEpsilonDpEvent(0.4, f"{accounting.EXPONENTIAL_MECHANISM}: bound")
    assert accounting.zcdp_rho(exponential) == pytest.approx(0.4**2 / 8)
    assert accounting.zcdp_rho(dpe.DiscreteLaplaceDpEvent(0.2, 2)) == pytest.approx(0.4**2 / 2)
    assert epsilon_of_event(dpe.DiscreteLaplaceDpEvent(0.2, 2), 0.0) == pytest.approx(0.4)
    old = pickle.loads(_OLD_PICKLE)
    assert old.events[0] == PureEpsilonDpEvent(0.3, f"{accounting.EXPONENTIAL_MECHANISM}: x")
    assert isinstance(old.events[0], dpe.DiscreteLaplaceDpEvent)
    assert old.events[1] == accounting.ApproximateDpEvent(0.2, 5e-6, "label set")
    assert pickle.loads(pickle.dumps(exponential)) == exponential
    with pytest.raises(AttributeError):
        exponential.noise_parameter = 1.0


def test_ledger_pickles_of_the_package_events_name_their_public_module():
    # Ledger files keep pickled events: the classes must pickle under
    # sklearn_dp.accounting, the module that documents them, whichever private
    # module defines them, so that a ledger written today reads the same way
    # after the code moves, and is byte for byte what it was.
    import pickle

    event = pickle.loads(_OLD_PICKLE)
    assert pickle.dumps(event, protocol=4) == _OLD_PICKLE
    closed = pickle.dumps(accounting.ClosedFormDpEvent(), protocol=4)
    assert b"sklearn_dp.accounting" in closed and b"sklearn_dp._" not in closed


def test_accountant_event_says_which_accountant_reads_which_part():
    pure = PureEpsilonDpEvent(0.3, f"{accounting.EXPONENTIAL_MECHANISM}: x")
    label = accounting.ApproximateDpEvent(0.1, 1e-6, "label set")
    steps = dpe.SelfComposedDpEvent(dpe.ZCDpEvent(0.01), 3)
    event = dpe.ComposedDpEvent([pure, label, steps, dpe.GaussianDpEvent(5.0)])
    readable, apart = accounting.accountant_event(event, "pld")
    assert readable == dpe.ComposedDpEvent([pure, dpe.GaussianDpEvent(5.0)])
    assert apart == [label, steps]
    _pld_accountant().compose(readable)
    readable, apart = accounting.accountant_event(event, "rdp")
    assert readable == dpe.ComposedDpEvent(
        [dpe.ZCDpEvent(0.3**2 / 8), steps, dpe.GaussianDpEvent(5.0)]
    )
    assert apart == [label]
    rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION).compose(
        readable
    )
    with pytest.raises(ValueError, match="accountant must be"):
        accounting.accountant_event(event, "gdp")
    # Basic composition of the parts apart: the label set takes its own delta.
    assert accounting.accountant_epsilon(label, 1e-6) == pytest.approx(0.1)
    assert accounting.accountant_epsilon(label, 1e-7) == math.inf


def _default_fits():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from solver_configs import CONFIGS, OPTION_CONFIGS

    fits = [
        pytest.param(name, None, {}, id=f"{name}-default")
        for name in ("DPLogisticRegression", "DPSCORegressor", "DPLasso")
    ]
    fits.append(
        pytest.param(
            "DPLogisticRegression", None, {"classes": [0, 1]}, id="DPLogisticRegression-classes"
        )
    )
    for (name, solver), params in CONFIGS.items():
        # dp_sgd calibrates by PLD for every noisy row count (seconds per fit).
        marks = [pytest.mark.slow] if solver == "dp_sgd" else []
        fits.append(pytest.param(name, solver, params, marks=marks, id=f"{name}-{solver}"))
    for (name, solver, option), params in OPTION_CONFIGS.items():
        if option == "lp":  # the lp ball's events (frank_wolfe's: Gaussian, not selections)
            fits.append(pytest.param(name, solver, params, id=f"{name}-{solver}-{option}"))
    return fits


@pytest.mark.parametrize("name, solver, params", _default_fits())
def test_default_fit_dp_event_is_recomputed_by_dp_accountings_accountants(name, solver, params):
    import warnings

    import sklearn_dp

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 3))
    if name == "DPLogisticRegression":
        y = (X[:, 0] + 0.3 * rng.normal(size=300) > 0).astype(int)
    else:
        y = np.clip(0.5 * X[:, 0] + 0.1 * rng.normal(size=300), -1, 1)
    kwargs = dict(params, random_state=0)
    if solver is not None:
        kwargs["solver"] = solver
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(sklearn_dp, name)(**kwargs).fit(X, y)
    claimed, delta = model.privacy_spent_
    event = model.dp_event_
    # Each accountant reads its part of the event with nothing of ours in
    # between (the parts apart are added by basic composition).
    by_pld = accounting.accountant_epsilon(event, delta, "pld")
    by_rdp = accounting.accountant_epsilon(event, delta, "rdp")
    assert math.isfinite(by_pld) and math.isfinite(by_rdp)
    # Both are valid bounds: the smaller backs the claim (up to the PLD grid).
    assert min(by_pld, by_rdp) <= claimed * (1 + 1e-3), (by_pld, by_rdp, claimed)
    readable, apart = accounting.accountant_event(event, "pld")
    if not apart:
        # The whole dp_event_, as recorded, in dp_accounting's PLD accountant;
        # or, where the claim rests on an exponential mechanism's epsilon^2 / 8
        # zCDP (a regressor's label range, one mechanism of 15% of epsilon),
        # which the PLD accountant bounds by randomized response, in its RDP
        # accountant.
        whole = _pld_accountant().compose(event).get_epsilon(delta)
        assert min(whole, by_rdp) <= claimed * (1 + 1e-3), (whole, by_rdp, claimed)


# --------------------------------------------------------------------------
# Calibration against a misbehaving accountant, small epsilons, meaningless guesses
# --------------------------------------------------------------------------


def _synthetic_calibration(monkeypatch, epsilon_of_sigma):
    monkeypatch.setattr(
        accounting,
        "_event_epsilon_fast",
        lambda event, delta, grid: epsilon_of_sigma(event.noise_multiplier),
    )


@pytest.mark.parametrize("kind", ["monotone", "nan-holes", "non-monotone", "flat-step"])
def test_calibrate_returns_only_certified_multipliers(monkeypatch, kind):
    """Whatever the accountant answers (NaN, non-monotone, flat), only a certified multiplier is returned."""
    rng = random.Random(kind)
    for _ in range(40):
        epsilon = 10 ** rng.uniform(-3, 2)
        a, b = 10 ** rng.uniform(-2, 2), rng.uniform(0.5, 3)
        holes = [rng.uniform(-4, 8) for _ in range(3)]

        def f(sigma, epsilon=epsilon, a=a, b=b, holes=holes):
            x = math.log(sigma)
            value = a * epsilon * sigma**-b
            if kind == "nan-holes" and any(abs(x - h) < 0.3 for h in holes):
                return math.nan
            if kind == "non-monotone":
                value *= 1 + 0.5 * math.sin(7 * x)
            if kind == "flat-step":
                value = epsilon * (1.0005 if x < holes[0] else 0.999)
            return value

        _synthetic_calibration(monkeypatch, f)
        guess = rng.choice([None, 10 ** rng.uniform(-3, 3)])
        upper = rng.choice([None, 10 ** rng.uniform(-3, 3)])
        try:
            sigma = accounting._calibrate(dpe.GaussianDpEvent, epsilon, 1e-5, upper, guess=guess)
        except ValueError:
            continue
        assert f(sigma) <= epsilon


def test_small_epsilon_calibration_is_not_grossly_over_noised():
    """The accountant's grid follows epsilon: a fixed 1e-3 grid at epsilon 1e-3 gives 15x the noise needed."""
    epsilon, delta = 1e-3, 1e-5
    sigma = accounting.subsampled_gaussian_noise_multiplier(epsilon, delta, 0.01, 100)
    achieved = accounting.epsilon_of_event(
        accounting.subsampled_gaussian_steps_event(sigma, 0.01, 100), delta
    )
    assert achieved <= epsilon
    assert achieved >= 0.5 * epsilon


@pytest.mark.parametrize("guess", [math.nan, math.inf, -1.0, 0.0])
def test_calibrate_ignores_a_meaningless_guess(guess):
    """A NaN, infinite or non-positive guess is ignored (a NaN would keep the bracketing loop spinning)."""

    def make_event(sigma):
        return accounting.subsampled_gaussian_steps_event(sigma, 0.1, 20)

    sigma = accounting._calibrate(make_event, 1.0, 1e-5, upper=guess, guess=guess)
    assert accounting.epsilon_of_event(make_event(sigma), 1e-5) <= 1.0
