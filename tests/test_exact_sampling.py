"""The exact samplers' comparisons of a uniform real with ``exp(-N / D)``.

Every coin of the Gaussian and Laplace samplers is such a comparison: a float
screen decides almost all of them and exact integer bounds the rest.  The
screen must never decide wrongly (its error bound is checked against exact
values), the exact path must have the stated law on its own (the screen is
switched off), and the samplers must keep their pmfs at the batch boundaries
and at the largest scales the gateway allows.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from sklearn_dp import DPLogisticRegression, _exact_sampling


def _chi_square_pvalue(samples, support, pmf):
    counts = np.array([np.sum(samples == k) for k in support], dtype=float)
    expected = pmf * samples.size
    counts = np.append(counts, samples.size - counts.sum())
    expected = np.append(expected, samples.size - expected.sum())
    keep = expected > 5
    counts = np.append(counts[keep], counts[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        counts, expected = counts[:-1], expected[:-1]
    return stats.chisquare(counts, expected).pvalue


def _discrete_gaussian_pmf(s, support):
    weights = np.exp(-(support.astype(float) ** 2) / (2.0 * s * s))
    total = sum(math.exp(-(k * k) / (2.0 * s * s)) for k in range(-60 * s, 60 * s + 1))
    return weights / total


def _scaled_decimal_exp(numerator, denominator, precision):
    # 2**precision * exp(-N / D) to 90 significant digits.
    with localcontext() as context:
        context.prec = 90
        return (-(Decimal(numerator) / Decimal(denominator))).exp() * Decimal(2) ** precision


@pytest.mark.parametrize(
    "numerator, denominator",
    [
        (0, 1),
        (1, 1),
        (1, 2),
        (3, 7),
        (100, 3),
        (2**61 + 5, 2**61),
        (12345678901234567, 2**55),
        ((2**31) ** 2, 2 * (2**30) ** 2),
        (2**40 - 1, 2**30),
    ],
)
def test_exp_bounds_bracket_the_exact_value_tightly(numerator, denominator):
    precision = 120
    low, high = _exact_sampling._exp_bounds(numerator, denominator, precision)
    exact = _scaled_decimal_exp(numerator, denominator, precision)
    assert low <= exact <= high
    assert high - low <= 2


def test_exp_estimate_is_within_its_stated_error_of_the_exact_value():
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(0, 64, 1500),
            rng.uniform(0, 2**-10, 500),
            np.arange(0, 64, 1 / 1024)[::29],  # table entries, with b = 0
            np.nextafter(np.arange(1, 64 * 1024)[::31] / 1024, 0),  # b just below 2**-10
            [0.0, 63.999999999999],
        ]
    )
    estimate = _exact_sampling._exp_estimate(x)
    for value, got in zip(x, estimate):
        exact = Fraction(value)
        low, high = _exact_sampling._exp_bounds(exact.numerator, exact.denominator, 160)
        reference = Fraction(low + high, 2**161)
        assert abs(Fraction(got) / reference - 1) < Fraction(1, 2**50)
        assert got == _exact_sampling._exp_estimate_one(float(value))
    assert np.all(_exact_sampling._exp_estimate(np.array([64.0, 80.0, 1e300])) == 0.0)


def test_screen_decisions_agree_with_exact_comparisons():
    # Uniform reals placed just around exp(-E), where a wrong screen would show.
    rng = np.random.default_rng(1)
    numerators = rng.integers(0, 2**40, 2000)
    denominator = 2**36
    x = numerators / denominator
    centre = np.array([math.exp(-v) for v in x]) * 2.0**62
    leading = np.clip(centre + rng.normal(0, 2.0**14, x.size), 0, 2**62 - 1).astype(np.int64)
    below, above = _exact_sampling._screen(leading, 62, x, _exact_sampling._exp_estimate(x))
    assert not np.any(below & above)
    assert 0 < np.sum(below | above) < x.size  # some decided, some left to the exact path
    for i in np.flatnonzero(below | above):
        low, high = _exact_sampling._exp_bounds(int(numerators[i]), denominator, 62 + 40)
        if below[i]:
            assert (int(leading[i]) + 1) << 40 <= low
        else:
            assert int(leading[i]) << 40 >= high


def test_exact_comparison_refines_the_uniform_real_until_decided():
    # U's first word equal to floor(2**62 exp(-1/2)): 62 bits cannot decide.
    bits = _exact_sampling._Bits(np.random.default_rng(2), 64)
    low, _ = _exact_sampling._exp_bounds(1, 2, 62)
    hits = 0
    for _ in range(2000):
        cell = [low, 62]
        hits += _exact_sampling._exact_below_exp(bits, cell, 1, 2)
        assert cell[1] > 62
    # Conditioned on that word, U < exp(-1/2) with probability in (0, 1): both occur.
    assert 0 < hits < 2000


@pytest.fixture
def exact_only(monkeypatch):
    """Every comparison decided by the exact integer path (the float screen never decides)."""
    monkeypatch.setattr(_exact_sampling, "_SCREEN_MARGIN", math.inf)


@pytest.mark.parametrize("size", [2, 600])  # the scalar and the vectorised paths
def test_exact_path_alone_gives_the_discrete_gaussian(exact_only, size):
    rng = np.random.default_rng(30 + size)
    s = 2
    samples = np.concatenate(
        [_exact_sampling.sample_discrete_gaussian(rng, s, size) for _ in range(6000 // size)]
    )
    support = np.arange(-8 * s, 8 * s + 1)
    assert _chi_square_pvalue(samples, support, _discrete_gaussian_pmf(s, support)) > 1e-4


@pytest.mark.parametrize("size", [2, 600])
def test_exact_path_alone_gives_the_floored_laplace(exact_only, size):
    rng = np.random.default_rng(40 + size)
    t = 3
    samples = np.concatenate(
        [_exact_sampling.sample_floored_laplace(rng, t, size) for _ in range(6000 // size)]
    )
    support = np.arange(-12 * t, 12 * t)
    pmf = stats.laplace.cdf(support + 1.0, scale=t) - stats.laplace.cdf(support * 1.0, scale=t)
    assert _chi_square_pvalue(samples, support, pmf) > 1e-4


@pytest.mark.parametrize(
    "size",
    [
        _exact_sampling._SCALAR_SIZE,
        _exact_sampling._SCALAR_SIZE + 1,
        _exact_sampling._CHUNK + 1,
    ],
)
def test_batch_boundaries_keep_the_pmfs(size):
    rng = np.random.default_rng(size)
    s = 3
    repeats = max(1, 60_000 // size)
    gaussian = np.concatenate(
        [_exact_sampling.sample_discrete_gaussian(rng, s, size) for _ in range(repeats)]
    )
    assert gaussian.size == repeats * size
    support = np.arange(-8 * s, 8 * s + 1)
    assert _chi_square_pvalue(gaussian, support, _discrete_gaussian_pmf(s, support)) > 1e-4
    floored = np.concatenate(
        [_exact_sampling.sample_floored_laplace(rng, s, size) for _ in range(repeats)]
    )
    support = np.arange(-12 * s, 12 * s)
    pmf = stats.laplace.cdf(support + 1.0, scale=s) - stats.laplace.cdf(support * 1.0, scale=s)
    assert _chi_square_pvalue(floored, support, pmf) > 1e-4


def test_chunked_release_has_every_chunk_filled():
    # A release over several chunks: the chunks are i.i.d. draws of the same law.
    size = 2 * _exact_sampling._CHUNK + 5
    samples = _exact_sampling.sample_discrete_gaussian(np.random.default_rng(4), 2**10, size)
    assert samples.shape == (size,) and samples.dtype == np.int64
    halves = samples[: size // 2], samples[size // 2 :]
    assert stats.ks_2samp(*halves).pvalue > 1e-4


@pytest.mark.parametrize("scale", [2**26, _exact_sampling.MAX_SAMPLER_STEPS])
def test_largest_scales_have_the_continuous_shape(scale):
    # At these scales the discrete Gaussian and the floored Laplace are the continuous
    # laws to within 1 / scale; the geometric's comparisons need all 62 bits of U.
    rng = np.random.default_rng(5)
    n = 60_000
    gaussian = _exact_sampling.sample_discrete_gaussian(rng, scale, n) / scale
    assert stats.kstest(gaussian, "norm").pvalue > 1e-4
    floored = _exact_sampling.sample_floored_laplace(rng, scale, n) / scale
    assert stats.kstest(floored, "laplace").pvalue > 1e-4
    short = np.concatenate(
        [_exact_sampling.sample_discrete_gaussian(rng, scale, 3) for _ in range(3000)]
    )
    assert stats.kstest(short / scale, "norm").pvalue > 1e-4


def test_geometric_tail_beyond_one_word_is_exact():
    # U below 2**-62 (a first word of 0) needs more words; t = 1 puts the answer
    # near 43 where P(G >= 43) = exp(-43): the float guess and the exact walk agree.
    bits = _exact_sampling._Bits(np.random.default_rng(6), 64)
    for first in (0, 1, 2**62 - 1):
        cell = [first, 62]
        guess = _exact_sampling._geometric_guess(first, 1)
        value = _exact_sampling._settle_geometric(bits, cell, 1, guess)
        u = Fraction(cell[0], 2 ** cell[1])
        assert u < Fraction(math.exp(-value)) * (1 + Fraction(1, 2**40))
        assert u >= Fraction(math.exp(-(value + 1))) * (1 - Fraction(1, 2**40))


def test_seeded_generator_gives_reproducible_noise():
    def draw(seed):
        rng = np.random.default_rng(seed)
        return [
            _exact_sampling.sample_discrete_gaussian(rng, 2**20, 5),
            _exact_sampling.sample_discrete_gaussian(rng, 2**20, 5000),
            _exact_sampling.sample_floored_laplace(rng, 2**29, 5000),
        ]

    first, again, other = draw(7), draw(7), draw(8)
    for a, b, c in zip(first, again, other):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_default_fit_draws_its_noise_words_from_the_secure_generator(monkeypatch):
    from randomgen import ChaCha

    sources = []
    expand = _exact_sampling._Bits._expand

    def recording(self, size):
        sources.append(type(self.rng.bit_generator))
        return expand(self, size)

    monkeypatch.setattr(_exact_sampling._Bits, "_expand", recording)
    X = np.random.default_rng(0).normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    DPLogisticRegression(epsilon=1.0, solver="dp_gd", classes=[0, 1]).fit(X, y)
    assert sources and all(source is ChaCha for source in sources)
