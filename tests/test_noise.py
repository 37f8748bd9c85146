"""The noise gateway: exact noise on a power-of-two grid.

The grid and the noise scale in grid steps are exact functions of public
inputs; the samplers match their exact pmfs; a released output is reachable
from every candidate pre-noise value (the float samplers' outputs told
neighbouring values apart with certainty).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from scipy.integrate import dblquad, quad

from sklearn_dp import DPLasso, DPLogisticRegression, _exact_sampling, _noise, _noise_grids
from sklearn_dp.testing import trace_releases

# --------------------------------------------------------------------------
# Grid choice, sensitivity inflation and noise scale (exact)
# --------------------------------------------------------------------------

GRID_CASES = [
    (1.0, 1.0, 1),
    (3.0, 1.0, 10),
    (0.37, 0.05, 1000),
    (250.0, 0.5, 10_000),
    (1e-3, 1e-3, 7),
    (5e4, 1.0, 100_000),  # a large multiplier: the 2**26 cap decides the grid
]


def _sqrt_fraction_upper_bound_holds(bound, m):
    return bound * bound >= m


@pytest.mark.parametrize("noise_std, sensitivity, m", GRID_CASES)
def test_gaussian_grid_is_the_largest_admissible_power_of_two(noise_std, sensitivity, m):
    grid = _noise_grids.gaussian_grid(noise_std, sensitivity, m)
    g = Fraction(2) ** grid.exponent
    assert grid.spacing == float(g)
    fine = g <= Fraction(noise_std) / _noise_grids.MIN_GRID_SCALE and math.sqrt(m) * float(
        g
    ) <= _noise_grids.ROUNDING_SHARE * sensitivity * (1 + 1e-12)
    capped = Fraction(noise_std) / g <= _noise_grids.MAX_GRID_SCALE
    assert capped
    if fine:
        # Twice the spacing breaks one of the two rules (or the grid is capped).
        g2 = 2 * g
        assert (
            g2 > Fraction(noise_std) / _noise_grids.MIN_GRID_SCALE
            or math.sqrt(m) * float(g2) > _noise_grids.ROUNDING_SHARE * sensitivity
        )
    else:
        # Only the cap may overrule the rounding share: then half the spacing
        # puts more than 2**26 steps in the noise.
        assert Fraction(noise_std) / (g / 2) > _noise_grids.MAX_GRID_SCALE


@pytest.mark.parametrize("noise_std, sensitivity, m", GRID_CASES)
def test_gaussian_grid_scale_covers_the_rounding_exactly(noise_std, sensitivity, m):
    grid = _noise_grids.gaussian_grid(noise_std, sensitivity, m)
    g = Fraction(2) ** grid.exponent
    s = grid.scale
    # The rounded value's L2 sensitivity in steps is at most Delta / g + sqrt(m).
    sqrt_m = _noise_grids._sqrt_upper(m)
    assert _sqrt_fraction_upper_bound_holds(sqrt_m, m)
    steps_sensitivity = Fraction(sensitivity) / g + sqrt_m
    # The calibrated multiplier noise_std / Delta holds for the rounded value.
    assert Fraction(s) / steps_sensitivity >= Fraction(noise_std) / Fraction(sensitivity)
    # ... and s is the least integer doing so (up to the 2**-30 margin).
    assert Fraction(s - 1) < (Fraction(noise_std) / Fraction(sensitivity)) * steps_sensitivity * (
        1 + Fraction(_noise_grids.SCALE_MARGIN)
    )
    assert s >= _noise_grids.MIN_GRID_SCALE


@pytest.mark.parametrize("noise_std, sensitivity, m", GRID_CASES[:5])
def test_rounding_costs_a_negligible_share_of_noise(noise_std, sensitivity, m):
    grid = _noise_grids.gaussian_grid(noise_std, sensitivity, m)
    inflation = grid.scale * grid.spacing / noise_std - 1
    assert 0 <= inflation <= _noise_grids.ROUNDING_SHARE + 2.0**-9


def test_a_large_laplace_release_keeps_its_rounding_cost_small():
    # A million entries at noise 16 times the sensitivity: the L1 rounding
    # adds m steps, so the cap on the grid scale bounds the extra noise.
    scale, sensitivity, m = 16.0, 1.0, 10**6
    grid = _noise_grids.laplace_grid(scale, sensitivity, m)
    assert grid.scale * grid.spacing / scale <= 1.05


def test_a_data_independent_value_needs_no_inflation():
    grid = _noise_grids.gaussian_grid(3.0, 0.0, 100)
    assert grid.scale == math.ceil(
        Fraction(3.0) / Fraction(grid.spacing) * (1 + Fraction(2) ** -30)
    )


@pytest.mark.parametrize("scale, sensitivity, m", [(1.0, 1.0, 1), (0.2, 0.1, 30), (40.0, 2.0, 500)])
def test_laplace_grid_scale_covers_the_l1_rounding_exactly(scale, sensitivity, m):
    grid = _noise_grids.laplace_grid(scale, sensitivity, m)
    g = Fraction(2) ** grid.exponent
    assert m * float(g) <= _noise_grids.ROUNDING_SHARE * sensitivity or (
        Fraction(scale) / (g / 2) > _noise_grids.MAX_LAPLACE_GRID_SCALE
    )
    # L1 sensitivity in steps: Delta / g + m; epsilon = that / t <= Delta / scale.
    steps_sensitivity = Fraction(sensitivity) / g + m
    assert steps_sensitivity / grid.scale <= Fraction(sensitivity) / Fraction(scale)


def test_exponential_grid_keeps_the_temperature_ratio():
    for scale, sensitivity in [(1.0, 1.0), (2.0, 0.5), (0.013, 0.004)]:
        grid = _noise_grids.exponential_grid(scale, sensitivity)
        g = Fraction(2) ** grid.exponent
        assert (Fraction(sensitivity) / g + 1) / grid.scale <= Fraction(sensitivity) / Fraction(
            scale
        )


@pytest.mark.parametrize("scale, threshold", [(1.0, 5.0), (0.3, 2.7), (20.0, 250.0), (5000.0, 6e4)])
def test_histogram_cutoff_keeps_epsilon_and_delta(scale, threshold):
    grid, cutoff = _noise_grids.histogram_cutoff(scale, threshold)
    g = Fraction(2) ** grid.exponent
    assert grid.exponent <= 0  # the grid divides the integer counts
    # epsilon: a count moves by 1 = 1/g steps; continuous Laplace of t steps.
    assert (1 / g) / grid.scale <= 1 / Fraction(scale)
    # delta: a key of count 1 clears the cutoff with probability
    # exp(-(cutoff + 1 - 1/g) / t) / 2 <= exp(-(threshold - 1) / scale) / 2.
    assert (cutoff + 1 - 1 / g) / grid.scale >= (Fraction(threshold) - 1) / Fraction(scale)


@pytest.mark.parametrize(
    "scale, m, coupling", [(30.0, 31, 2e-10), (1e-3, 4, 1.0), (5.0, 1000, 1e-4), (2.0, 1, 1e-30)]
)
def test_objective_noise_grid_is_the_largest_admissible_power_of_two(scale, m, coupling):
    grid = _noise_grids.objective_noise_grid(scale, m, coupling)
    g = grid.spacing
    assert g == 2.0**grid.exponent

    def fine(h):
        return math.sqrt(m) * h <= coupling and h <= scale / 2**10

    def capped(h):
        return Fraction(scale) / Fraction(h) <= 2**26

    assert capped(g)
    if fine(g):
        assert not fine(2 * g)  # the largest fine grid ...
    else:
        assert not capped(g / 2)  # ... unless the cap on steps forces a coarser one
    assert grid.scale == math.ceil(Fraction(scale) / Fraction(g) * (1 + Fraction(2) ** -30))
    assert grid.scale * g >= scale


@pytest.mark.parametrize("noise", ["l2_laplace", "gaussian"])
def test_objective_perturbation_term_is_the_rounding_of_exact_noise(noise):
    terms = []

    def solve(b):
        terms.append(b.copy())
        return np.zeros_like(b)

    rng = np.random.default_rng(7)
    scale, shape = 2.0, (3, 2)
    releases = []
    for _ in range(400):
        with trace_releases() as trace:
            _noise.objective_perturbation(
                solve,
                shape=shape,
                noise=noise,
                scale=scale,
                coupling=1e-3,
                sensitivity=1.5,
                rng=rng,
                label="perturbed minimiser",
            )
        releases.extend(trace.releases)
    release = releases[0]
    assert release.mechanism == "objective_perturbation" and release.value is None
    assert release.sensitivity == 1.5 and release.norm == "l2" and release.scale == scale
    assert release.grid == _noise_grids.objective_noise_grid(scale, 6, 1e-3)
    g = release.grid.spacing
    b = np.array(terms)
    assert b.shape == (400, *shape)
    # On the grid shifted by half a step: g (floor(N / g) + 1/2).
    steps = b / g - 0.5
    np.testing.assert_array_equal(steps, np.round(steps))
    # N has the scale t g >= scale; b is within g / 2 of it per entry (g ~ 1e-4 here).
    t = release.grid.scale * g
    if noise == "gaussian":
        assert stats.kstest(b.ravel() / t, "norm").pvalue > 1e-3
    else:  # density ~ exp(-||n|| / t): a Gamma(m, t) norm
        norms = np.linalg.norm(b.reshape(len(b), -1), axis=1) / t
        assert stats.kstest(norms, stats.gamma(a=6).cdf).pvalue > 1e-3


def test_objective_perturbation_without_noise_solves_with_a_zero_term():
    with trace_releases() as trace:
        out = _noise.objective_perturbation(
            lambda b: b + 1.0,
            shape=(2, 1),
            noise="gaussian",
            scale=0.0,
            coupling=1e-3,
            sensitivity=1.0,
            rng=np.random.default_rng(0),
        )
    np.testing.assert_array_equal(out, np.ones((2, 1)))
    assert trace.releases[0].grid is None


def test_discrete_gaussian_gap_is_below_the_stated_bound():
    # tau = 10 sum_{k=1}^{m-1} exp(-2 pi^2 s^2 k / (k + 1)) <= 10 m exp(-pi^2 s^2):
    # at the smallest grid scale, log10(tau) for a billion entries.
    s = _noise_grids.MIN_GRID_SCALE
    log10_tau = math.log10(10 * 1e9) - math.pi**2 * s**2 / math.log(10)
    assert log10_tau < -4_000_000


# --------------------------------------------------------------------------
# Samplers against their exact pmfs
# --------------------------------------------------------------------------


def _chi_square_pvalue(samples, support, pmf):
    counts = np.array([np.sum(samples == k) for k in support], dtype=float)
    expected = pmf * samples.size
    outside = samples.size - counts.sum()
    counts = np.append(counts, outside)
    expected = np.append(expected, samples.size - expected.sum())
    keep = expected > 5
    rest_counts = counts[~keep].sum()
    rest_expected = expected[~keep].sum()
    counts = np.append(counts[keep], rest_counts)
    expected = np.append(expected[keep], rest_expected)
    if expected[-1] == 0:
        counts, expected = counts[:-1], expected[:-1]
    return stats.chisquare(counts, expected).pvalue


def _discrete_gaussian_pmf(s, support):
    weights = np.exp(-(support.astype(float) ** 2) / (2.0 * s * s))
    total = sum(math.exp(-(k * k) / (2.0 * s * s)) for k in range(-60 * s, 60 * s + 1))
    return weights / total


@pytest.mark.parametrize("s", [1, 3])
def test_discrete_gaussian_matches_its_exact_pmf(s):
    rng = np.random.default_rng(12)
    samples = _exact_sampling.sample_discrete_gaussian(rng, s, 200_000)
    support = np.arange(-8 * s, 8 * s + 1)
    assert _chi_square_pvalue(samples, support, _discrete_gaussian_pmf(s, support)) > 1e-4
    assert samples.mean() == pytest.approx(0.0, abs=5 * s / math.sqrt(samples.size))


def test_discrete_gaussian_moments_at_a_large_scale():
    rng = np.random.default_rng(3)
    s = 2**20
    samples = _exact_sampling.sample_discrete_gaussian(rng, s, 100_000).astype(float) / s
    assert samples.mean() == pytest.approx(0.0, abs=0.02)
    assert samples.var() == pytest.approx(1.0, rel=0.02)


@pytest.mark.parametrize("t", [1, 4])
def test_floored_laplace_matches_its_exact_pmf(t):
    rng = np.random.default_rng(5)
    samples = _exact_sampling.sample_floored_laplace(rng, t, 200_000)
    support = np.arange(-12 * t, 12 * t)
    # floor(L), L ~ Laplace(t): P(k) = integral of the density over [k, k + 1).
    upper = stats.laplace.cdf(support + 1.0, scale=t)
    lower = stats.laplace.cdf(support.astype(float), scale=t)
    assert _chi_square_pvalue(samples, support, upper - lower) > 1e-4


def test_discrete_laplace_matches_its_exact_pmf():
    rng = np.random.default_rng(6)
    t = 3
    samples = _exact_sampling.sample_discrete_laplace(rng, t, 200_000)
    support = np.arange(-40, 41)
    q = math.exp(-1 / t)
    pmf = (1 - q) / (1 + q) * np.exp(-np.abs(support) / t)
    assert _chi_square_pvalue(samples, support, pmf) > 1e-4


@pytest.mark.parametrize("s, size", [(1, 200_000), (2, 200_000), (3, 100_000)])
def test_rounded_gaussian_matches_the_continuous_gaussian_cell_masses(s, size):
    # floor(N), N ~ N(0, s^2): P(k) = Phi((k + 1) / s) - Phi(k / s).  At s = 1 and 2 the
    # cell coin often needs bits of U and several pieces (2 k + 1 > 2 s^2).
    rng = np.random.default_rng(40 + s)
    samples = _exact_sampling.sample_rounded_gaussian(rng, s, size)
    support = np.arange(-8 * s, 8 * s)
    pmf = stats.norm.cdf((support + 1.0) / s) - stats.norm.cdf(support / s)
    assert _chi_square_pvalue(samples, support, pmf) > 1e-4


def test_short_rounded_gaussian_draws_match_the_cell_masses():
    # Draws of at most a few entries take the one-value-at-a-time path.
    rng = np.random.default_rng(44)
    samples = np.concatenate(
        [_exact_sampling.sample_rounded_gaussian(rng, 2, 3) for _ in range(30_000)]
    )
    support = np.arange(-16, 16)
    pmf = stats.norm.cdf((support + 1.0) / 2) - stats.norm.cdf(support / 2.0)
    assert _chi_square_pvalue(samples, support, pmf) > 1e-4


def test_rounded_gaussian_at_a_large_scale_is_the_continuous_gaussian():
    # floor(N) + U for a fresh uniform U is distributed as N itself.
    rng = np.random.default_rng(45)
    s = 2**26
    samples = _exact_sampling.sample_rounded_gaussian(rng, s, 50_000).astype(float)
    continuous = (samples + rng.uniform(size=samples.size)) / s
    assert stats.kstest(continuous, "norm").pvalue > 1e-3


@pytest.mark.parametrize("t", [1, 3])
def test_l2_laplace_in_one_dimension_is_the_floored_laplace(t):
    # In one dimension, exp(-|x| / t) is the Laplace density.
    rng = np.random.default_rng(70 + t)
    samples = np.concatenate(
        [_exact_sampling.sample_floored_l2_laplace(rng, t, 1) for _ in range(30_000)]
    )
    support = np.arange(-12 * t, 12 * t)
    pmf = stats.laplace.cdf(support + 1.0, scale=t) - stats.laplace.cdf(support * 1.0, scale=t)
    assert _chi_square_pvalue(samples, support, pmf) > 1e-4


def test_l2_laplace_in_two_dimensions_matches_its_cell_masses():
    # Density exp(-||x||) / (2 pi) on R^2, integrated over the unit cells near the origin.
    rng = np.random.default_rng(72)
    n = 30_000
    draws = np.array([_exact_sampling.sample_floored_l2_laplace(rng, 1, 2) for _ in range(n)])
    cells = [(a, c) for a in range(-3, 3) for c in range(-3, 3)]
    masses = np.array(
        [
            dblquad(lambda y, x: math.exp(-math.hypot(x, y)) / (2 * math.pi), a, a + 1, c, c + 1)[0]
            for a, c in cells
        ]
    )
    counts = np.array([np.sum((draws[:, 0] == a) & (draws[:, 1] == c)) for a, c in cells])
    counts = np.append(counts, n - counts.sum())
    expected = np.append(masses, 1 - masses.sum()) * n
    assert stats.chisquare(counts, expected).pvalue > 1e-4


@pytest.mark.parametrize("m, n", [(5, 4000), (64, 600)])
def test_l2_laplace_at_a_large_scale_has_a_gamma_norm_and_a_uniform_direction(m, n):
    # m = 64 takes the vectorised proposals of the Gaussian coordinates.
    rng = np.random.default_rng(73 + m)
    t = 2**26
    draws = np.array([_exact_sampling.sample_floored_l2_laplace(rng, t, m) for _ in range(n)])
    points = (draws + 0.5) / t
    norms = np.linalg.norm(points, axis=1)
    assert stats.kstest(norms, stats.gamma(a=m).cdf).pvalue > 1e-3
    beta = stats.beta((m - 1) / 2, (m - 1) / 2)
    assert stats.kstest((1 + points[:, 0] / norms) / 2, beta.cdf).pvalue > 1e-3


def test_exponential_fraction_has_the_truncated_exponential_law():
    # A kept fraction has density e^-f / (1 - e^-1) on [0, 1); its leading bits and fresh
    # uniform bits after them give its value.
    rng = np.random.default_rng(74)
    bits = _exact_sampling._Bits(rng, 4096)
    values = []
    for _ in range(20_000):
        fraction = _exact_sampling._one_exponential_fraction(bits)
        values.append(_exact_sampling._refine(fraction, 0, bits, 62) / 2.0**62)
    cdf = lambda x: (1 - np.exp(-x)) / (1 - math.exp(-1))
    assert stats.kstest(values, cdf).pvalue > 1e-3


@pytest.mark.parametrize("k, factor", [(0, 1), (1, 2), (3, 5), (2, 40)])
def test_lazy_comparison_has_its_exact_probability(k, factor):
    # P(factor * V < 2 k U + U^2) for independent uniforms U, V: the integral of
    # min(1, (2 k u + u^2) / factor) over [0, 1].
    rng = np.random.default_rng(50 + k)
    bits = _exact_sampling._Bits(rng, 4096)
    n = 40_000
    hits = sum(
        _exact_sampling._lazy_below(bits, [k, 0, 0], factor, bits.one(2**62)) for _ in range(n)
    )
    expected = quad(lambda u: min(1.0, (2 * k * u + u * u) / factor), 0, 1, points=[0.5])[0]
    assert stats.binomtest(hits, n, expected).pvalue > 1e-4


@pytest.mark.parametrize("k, s", [(0, 1), (2, 1), (5, 2), (1, 3)])
def test_cell_coin_has_its_exact_probability(k, s):
    # P(coin) = integral over u in [0, 1] of exp(-(2 k u + u^2) / (2 s^2)); (2, 1) and (5, 2)
    # split the exponent into several pieces.
    rng = np.random.default_rng(60 + k)
    bits = _exact_sampling._Bits(rng, 4096)
    n = 40_000
    hits = sum(_exact_sampling._one_cell_coin(bits, k, s) for _ in range(n))
    expected = quad(lambda u: math.exp(-(2 * k * u + u * u) / (2 * s * s)), 0, 1)[0]
    assert stats.binomtest(hits, n, expected).pvalue > 1e-4


@pytest.mark.parametrize("numerator, denominator", [(0, 7), (3, 7), (7, 7), (17, 7), (123, 10)])
def test_exact_bernoulli_of_exp_has_its_rate(numerator, denominator):
    rng = np.random.default_rng(7)
    n = 200_000
    coins = _exact_sampling._bernoulli_exp(
        _exact_sampling._Bits(rng, n), np.full(n, numerator), denominator
    )
    p = math.exp(-numerator / denominator)
    assert coins.mean() == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / n) + 1e-12)


def test_bernoulli_of_exp_beyond_int64_is_exact_in_python_integers():
    rng = np.random.default_rng(8)
    big = 2**80
    bits = _exact_sampling._Bits(rng, 1024)
    draws = [_exact_sampling._bernoulli_exp_big(bits, big // 2, big) for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(math.exp(-0.5), abs=0.04)


def test_gaussian_acceptance_has_its_rate_beyond_int64_squares_and_the_float_cutoff():
    # Offsets |y| - s of 2**31 square beyond int64 (decided in Python integers when
    # the screen cannot); an exponent of 64 or more has a float estimate of 0.
    rng = np.random.default_rng(10)
    s = 2**30
    magnitudes = np.tile(np.array([s, s + 2**31, 3 * s, 13 * s], dtype=np.int64), 4000)
    bits = _exact_sampling._Bits(rng, magnitudes.size)
    coins = _exact_sampling._gaussian_coins(bits, magnitudes, s)
    assert coins.dtype == bool and coins.shape == magnitudes.shape
    assert np.all(coins[magnitudes == s])
    for magnitude in (s + 2**31, 3 * s):
        chosen = coins[magnitudes == magnitude]
        p = math.exp(-((magnitude - s) ** 2) / (2 * s * s))
        assert chosen.mean() == pytest.approx(p, abs=5 * math.sqrt(p * (1 - p) / chosen.size))
    assert not np.any(coins[magnitudes == 13 * s])


def test_exponential_mechanism_samples_the_gibbs_law_of_the_rounded_utilities():
    rng = np.random.default_rng(9)
    utilities = np.array([0.0, 0.7, 1.3, 2.0, -1.0])
    scale, sensitivity = 1.0, 1.0
    grid = _noise_grids.exponential_grid(scale, sensitivity)
    steps = np.rint(np.ldexp(utilities, -grid.exponent))
    target = np.exp((steps - steps.max()) / grid.scale)
    target /= target.sum()
    draws = np.array(
        [
            _noise.exponential(utilities, sensitivity=sensitivity, scale=scale, rng=rng)
            for _ in range(20_000)
        ]
    )
    assert _chi_square_pvalue(draws, np.arange(5), target) > 1e-4


def test_samplers_agree_with_opendp():
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    s, n = 3, 20_000
    meas = dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale=float(s))
    theirs = np.array([meas(0) for _ in range(n)])
    ours = _exact_sampling.sample_discrete_gaussian(np.random.default_rng(10), s, n)
    support = np.arange(-4 * s, 4 * s + 1)
    table = np.array([[np.sum(x == k) for k in support] for x in (ours, theirs)])
    table = np.column_stack([table, n - table.sum(axis=1)])
    table = table[:, table.min(axis=0) > 0]
    assert stats.chi2_contingency(table).pvalue > 1e-4


# --------------------------------------------------------------------------
# No output tells neighbouring values apart (the float samplers' leak)
# --------------------------------------------------------------------------


def _steps_from(output, value, grid, offset):
    """``output / g - offset - rint(value / g)`` as an exact rational."""
    g = Fraction(2) ** grid.exponent
    rounded = Fraction(float(np.rint(np.ldexp(value, -grid.exponent))))
    return Fraction(float(output)) / g - Fraction(offset) - rounded


def _reachable(output, value, release, offset=0.0):
    """Whether ``output`` is a possible release of ``value``: the noise is any integer on the grid."""
    assert release.grid is not None
    return all(
        _steps_from(o, v, release.grid, offset).denominator == 1
        for o, v in zip(np.ravel(output), np.ravel(value))
    )


def _neighbouring_values(rng, size, sensitivity):
    base = rng.normal(size=size) * 3
    step = rng.normal(size=size)
    return base, base + 0.9 * sensitivity * step / np.linalg.norm(step)


@pytest.mark.parametrize("size", [1, 5, 64])
def test_gaussian_release_is_reachable_from_either_neighbour(size):
    rng = np.random.default_rng(size)
    certain = 0
    for trial in range(40):
        v0, v1 = _neighbouring_values(rng, size, 1.0)
        truth = trial % 2
        with trace_releases() as trace:
            _noise.gaussian((v0, v1)[truth], sensitivity=1.0, noise_std=2.0, rng=rng)
        (release,) = trace.releases
        calls = [_reachable(release.output, v, release) for v in (v0, v1)]
        assert calls[truth]
        certain += calls[0] != calls[1]
    assert certain == 0


@pytest.mark.parametrize("size", [1, 5])
def test_laplace_release_is_reachable_from_either_neighbour(size):
    rng = np.random.default_rng(100 + size)
    for trial in range(40):
        v0, v1 = _neighbouring_values(rng, size, 1.0)
        truth = trial % 2
        with trace_releases() as trace:
            _noise.laplace((v0, v1)[truth], sensitivity=1.0, scale=1.5, rng=rng)
        (release,) = trace.releases
        calls = [_reachable(release.output, v, release, 0.5) for v in (v0, v1)]
        assert calls == [True, True]


def test_l2_laplace_release_is_reachable_from_either_neighbour():
    rng = np.random.default_rng(11)
    for _ in range(20):
        v0, v1 = _neighbouring_values(rng, 4, 1.0)
        with trace_releases() as trace:
            _noise.l2_laplace(v0, sensitivity=1.0, scale=2.0, rng=rng)
        (release,) = trace.releases
        assert release.grid == _noise_grids.gaussian_grid(2.0, 1.0, 4)
        assert _reachable(release.output, v0, release, 0.5)
        assert _reachable(release.output, v1, release, 0.5)


def _lasso_data(seed, n=300, d=5):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(X @ np.linspace(1, -1, d) * 0.4 + 0.05 * rng.normal(size=n), -1, 1)
    return X, y


def test_ssp_statistics_are_reachable_from_either_neighbour():
    """``released_statistics_`` of D and of D plus one row: no certain call on X^T y or the count."""
    X, y = _lasso_data(0)
    extra_X = np.full((1, X.shape[1]), 0.9)
    extra_y = np.array([-1.0])
    params = dict(epsilon=1.0, solver="dp_ssp", alpha=0.01, feature_bound=1.0, y_bound=1.0)
    values = {}
    for name, (Xw, yw) in {
        "D": (X, y),
        "D+1": (np.vstack([X, extra_X]), np.append(y, extra_y)),
    }.items():
        with trace_releases() as trace:
            model = DPLasso(random_state=1, **params).fit(Xw, yw)
        values[name] = {r.label: r for r in trace.releases}
        values[name]["stats"] = model.released_statistics_
    for truth in ("D", "D+1"):
        released = values[truth]["stats"]
        xty = values[truth]["X^T y"]
        np.testing.assert_array_equal(released["xty"], xty.output)
        for candidate in ("D", "D+1"):
            assert _reachable(released["xty"], values[candidate]["X^T y"].value, xty)
        count = values[truth]["row count"]
        for candidate in ("D", "D+1"):
            assert _reachable(count.output, values[candidate]["row count"].value, count, 0.5)


def test_first_gradient_release_is_reachable_from_either_neighbour():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 4)) / 2
    y = (X[:, 0] + 0.3 * rng.normal(size=200) > 0).astype(int)
    firsts = {}
    for name, (Xw, yw) in {
        "D": (X, y),
        "D+1": (np.vstack([X, np.full((1, 4), 0.5)]), np.append(y, 0)),
    }.items():
        with trace_releases() as trace:
            DPLogisticRegression(
                epsilon=1.0, solver="dp_gd", data_norm=1.5, classes=[0, 1], random_state=2
            ).fit(Xw, yw)
        firsts[name] = next(r for r in trace.releases if r.mechanism == "gaussian")
    for truth in ("D", "D+1"):
        release = firsts[truth]
        for candidate in ("D", "D+1"):
            assert _reachable(release.output, firsts[candidate].value, release)


# --------------------------------------------------------------------------
# Seeds and scale zero
# --------------------------------------------------------------------------


def test_seeded_fit_is_reproducible():
    X, y = _lasso_data(1)
    fits = [
        DPLasso(
            epsilon=1.0, solver="dp_ssp", alpha=0.01, feature_bound=1.0, y_bound=1.0, random_state=3
        )
        .fit(X, y)
        .coef_
        for _ in range(2)
    ]
    np.testing.assert_array_equal(*fits)


def test_only_exact_uniform_integers_are_drawn():
    class IntegersOnly:
        def __init__(self):
            self._rng = np.random.default_rng(0)

        def integers(self, *args, **kwargs):
            return self._rng.integers(*args, **kwargs)

    rng = IntegersOnly()
    _noise.gaussian(np.ones(3), sensitivity=1.0, noise_std=1.0, rng=rng)
    _noise.laplace(np.ones(3), sensitivity=1.0, scale=1.0, rng=rng)
    _noise.exponential(np.arange(4.0), sensitivity=1.0, scale=1.0, rng=rng)
    _noise.l2_laplace(np.ones(3), sensitivity=1.0, scale=1.0, rng=rng)
    for noise in _noise.OBJECTIVE_NOISES:
        _noise.objective_perturbation(
            lambda b: b,
            shape=(40, 1),
            noise=noise,
            scale=1.0,
            coupling=1e-6,
            sensitivity=1.0,
            rng=rng,
        )
    _noise.thresholded_histogram(
        np.arange(3), np.array([1, 5, 9]), scale=1.0, threshold=3.0, rng=rng
    )


def test_zero_noise_releases_the_value():
    value = np.array([0.1, 0.2])
    out = _noise.gaussian(value, sensitivity=1.0, noise_std=0.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(out, value)


@pytest.mark.parametrize("s", [1, 3])
def test_short_releases_match_the_exact_pmf(s):
    # Releases of at most a few entries are sampled one value at a time.
    rng = np.random.default_rng(20 + s)
    samples = np.concatenate(
        [_exact_sampling.sample_discrete_gaussian(rng, s, 2) for _ in range(20_000)]
    )
    support = np.arange(-8 * s, 8 * s + 1)
    assert _chi_square_pvalue(samples, support, _discrete_gaussian_pmf(s, support)) > 1e-4
    floored = np.concatenate(
        [_exact_sampling.sample_floored_laplace(rng, s, 2) for _ in range(20_000)]
    )
    support = np.arange(-12 * s, 12 * s)
    pmf = stats.laplace.cdf(support + 1.0, scale=s) - stats.laplace.cdf(support * 1.0, scale=s)
    assert _chi_square_pvalue(floored, support, pmf) > 1e-4


def test_uniform_words_are_exact_and_reproducible():
    bits = _exact_sampling._Bits(np.random.default_rng(0), 64)
    draws = bits.uniform(3, 300_000)
    assert set(np.unique(draws)) == {0, 1, 2}
    assert stats.chisquare(np.bincount(draws)).pvalue > 1e-4
    again = _exact_sampling._Bits(np.random.default_rng(0), 64).uniform(3, 300_000)
    np.testing.assert_array_equal(draws, again)
    assert all(
        0 <= _exact_sampling._Bits(np.random.default_rng(1), 1).one(7) < 7 for _ in range(100)
    )


def test_nested_traces_both_record_and_close():
    rng = np.random.default_rng(0)
    with trace_releases() as outer:
        with trace_releases() as inner:
            _noise.gaussian(np.ones(3), sensitivity=1.0, noise_std=1.0, rng=rng)
        _noise.gaussian(np.ones(3), sensitivity=1.0, noise_std=1.0, rng=rng)
    assert len(inner.releases) == 1 and len(outer.releases) == 2
    assert _noise.active_tracers() == []


@pytest.mark.parametrize(
    "release",
    [
        lambda rng: _noise.gaussian(np.zeros(100), sensitivity=1.0, noise_std=2e8, rng=rng),
        lambda rng: _noise.gaussian(0.0, sensitivity=1.0, noise_std=1e12, rng=rng),
        lambda rng: _noise.laplace(0.0, sensitivity=1.0, scale=1e19, rng=rng),
        lambda rng: _noise.gaussian(np.zeros(4), sensitivity=1e-316, noise_std=1e-316, rng=rng),
    ],
)
def test_scales_beyond_the_exact_samplers_range_are_refused_not_wrapped(release):
    # int64 samplers would wrap (tails folded back) or loop forever there;
    # the refusal depends on the public scale, sensitivity and size only.
    with pytest.raises(ValueError, match="exact samplers"):
        release(np.random.default_rng(0))


@pytest.mark.parametrize("s", [1, 2])
def test_lazy_gaussians_are_exactly_gaussian_at_small_scales(s):
    # At small scales the cell coin needs the revealed bits of U almost every
    # time, so a sampler that dropped them (or skipped the coin) is visible.
    bits = _exact_sampling._Bits(np.random.default_rng(9), 4096)
    draws = _exact_sampling._lazy_gaussians(bits, s, 20000)
    z = np.array(
        [
            (-1 if negative else 1)
            * (cell[0] + _exact_sampling._refine(cell, 1, bits, 62) / 2.0**62)
            for negative, cell in draws
        ]
    )
    assert stats.kstest(z / s, "norm").pvalue > 1e-3


@pytest.mark.parametrize("offset", [0.0, 0.5])
def test_release_is_rounded_once_from_the_exact_integer_sum(offset):
    # A float addition rounds a noise of 2**53 + 1 steps first and the sum
    # again: rint(value / g) = 0 and 1 would then give the same output, one
    # of them reachable only through the double rounding.
    grid = _noise_grids.Grid(0, 1)
    for steps in (0.0, 1.0):
        noise = np.array([2**53 + 1], dtype=np.int64)
        exact = Fraction(int(steps) + 2**53 + 1) + Fraction(offset)
        (output,) = _noise_grids._released(np.array([steps]), noise, grid, offset)
        assert output == float(exact)
    huge = np.array([2.0**62])
    (output,) = _noise_grids._released(huge, np.array([3], dtype=np.int64), grid, offset)
    assert output == float(Fraction(2**62 + 3) + Fraction(offset))


def test_objective_grid_takes_the_finest_allowed_grid_when_the_coupling_underflows():
    grid = _noise_grids.objective_noise_grid(1.0, 4, 5e-324)
    assert grid.exponent == math.ceil(math.log2(1.0 / _noise_grids.MAX_GRID_SCALE))


def test_a_non_finite_pre_noise_value_stays_non_finite():
    # A diverged public iterate upstream makes the solver's own check fail
    # publicly; the gateway must not raise on it first.
    grid = _noise_grids.Grid(0, 1)
    values = np.array([np.nan, np.inf, -np.inf, 2.0])
    output = _noise_grids._released(values.copy(), np.array([1, 1, 1, 1], dtype=np.int64), grid)
    assert np.isnan(output[0]) and output[1] == np.inf and output[2] == -np.inf
    assert output[3] == 3.0


# --------------------------------------------------------------------------
# The gateway is the only place where noise meets private values
# --------------------------------------------------------------------------

#: Continuous (float) samplers of numpy's Generator: their low bits depend on
#: the value they are added to, so private releases never use them.
_FLOAT_NOISE_SAMPLERS = {
    "normal",
    "standard_normal",
    "laplace",
    "gumbel",
    "exponential",
    "standard_exponential",
}

#: Modules allowed to draw from a float sampler, with why it is not a release:
#: ReSQue's query points are Gaussian perturbations of public centres, drawn
#: before any private value is read at them (their noise is the gateway's).
_FLOAT_DRAWS_ALLOWED = {
    "sklearn_dp/solvers/_resque_oracle.py": {"standard_normal"},
    # dp_nystrom's sketch matrix Omega is public randomness drawn before any
    # private value is read (orthonormalised; the release X^T X Omega gets
    # the gateway's noise).
    "sklearn_dp/solvers/_nystrom.py": {"standard_normal"},
    # The parametric bootstrap of confidence intervals simulates noise on
    # released values (post-processing; no private value is read).
    "sklearn_dp/linear_model/_inference.py": {"standard_normal"},
    "sklearn_dp/testing/__init__.py": {"normal"},
    "sklearn_dp/testing/_audit_configs.py": {"normal"},
}


def _package_modules():
    import pathlib

    import sklearn_dp

    root = pathlib.Path(sklearn_dp.__file__).parent
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root.parent).as_posix(), path.read_text()


def test_only_the_gateway_imports_the_exact_samplers():
    import ast

    importers = set()
    for name, source in _package_modules():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("_exact_sampling"):
                importers.add(name)
            if isinstance(node, ast.ImportFrom) and any(
                alias.name == "_exact_sampling" for alias in node.names
            ):
                importers.add(name)
    # _noise_grids reads one public constant (the sampler's step limit).
    assert importers <= {"sklearn_dp/_noise.py", "sklearn_dp/_noise_grids.py"}, importers


def test_no_module_draws_float_noise_outside_the_allowed_places():
    import ast

    found = {}
    for name, source in _package_modules():
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in _FLOAT_NOISE_SAMPLERS
                and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "_noise")
            ):
                found.setdefault(name, set()).add(node.func.attr)
    unexpected = {
        name: attrs - _FLOAT_DRAWS_ALLOWED.get(name, set())
        for name, attrs in found.items()
        if attrs - _FLOAT_DRAWS_ALLOWED.get(name, set())
    }
    assert not unexpected, unexpected
