"""Exact samplers of integer noise, in integer arithmetic: the back end of the noise gateway.

:mod:`sklearn_dp._noise` rounds each release to a power-of-two grid and adds
integer noise drawn here (its module docstring gives the privacy argument);
nothing else in the package calls these samplers.  Each one is exact: its
output has exactly the stated law, with no float sampler anywhere (a float
sampler's low bits reveal the value its noise was added to).

* :func:`sample_geometric`: inversion, ``G = max{k : U < exp(-k / t)}``
  for a uniform real ``U``, decided exactly.
* :func:`sample_discrete_laplace` and :func:`sample_discrete_gaussian`:
  Canonne, Kamath and Steinke (2020), Algorithms 2 and 3 (CKS below) on that
  geometric.
* :func:`sample_floored_laplace`: the floor of a continuous Laplace variable.
* :func:`sample_rounded_gaussian`: the floor of a continuous Gaussian (a cell
  proposed from a one-sided discrete Gaussian, kept with an exact coin of a
  lazily drawn uniform real).
* :func:`sample_floored_l2_laplace`: the floor of the L2 Laplace law (density
  ``~ exp(-||x||_2 / t)``): an exact Gamma radius times the direction of
  lazily drawn exact Gaussians.
* :func:`_sample_gibbs`: the index drawn by the exponential mechanism
  (CKS Algorithm 1 coins).

Every random draw here is an exact uniform integer
(:class:`_Bits`: 62-bit words from ``rng.integers``, or, for the exponential
mechanism and the label histogram, a fixed-size key from ``rng.integers``
expanded with SHAKE-256 so that their data-dependent rejection loops do not
move the generator).  The geometric, Laplace and Gaussian samplers spend
their randomness on comparisons ``U < exp(-N / D)`` of a uniform real ``U``,
known by its leading bits (62, or 31 for a coin), with a rational exponent:
the comparison has probability ``exp(-N / D)`` exactly, so a coin is one
draw instead of the rounds of CKS Algorithm 1, and the geometric is one
word.  Each comparison is decided by a float screen whose error is bounded
from IEEE float64 arithmetic alone (:func:`_exp_estimate` uses no library
``exp``; :func:`_screen` keeps a margin of over twice the bound) or, for
the few it leaves undecided (about one coin in ``2**31``, one geometric in
``2**26`` at ``t = 2**20`` and in ``2**16`` at ``t = 2**30``), by exact
integer bounds of ``exp(-N / D)`` and more bits of ``U``
(:func:`_exact_below_exp`).  The output is a
function of the uniform integers alone, and has exactly the stated law;
floats only decide what the exact comparison would decide, and a float
logarithm only guesses where to compare.  The samplers are vectorised over
the released vector (chunks of at most ``2**14`` entries), and releases of at most
32 entries are sampled one value at a time in Python (numpy's per-call cost
dominates short vectors).  Scales are at most ``MAX_SAMPLER_STEPS =
2**30`` steps (a release past it, which only an absurdly small epsilon asks
for, is refused from its public scale): a geometric from one word is below
``44 t < 2**36``, exponents of the Gaussian coins are formed in floats and,
where the screen cannot decide, in Python integers, so int64 holds every
output unless ``U < exp(-2**63 / t)``, an event of probability below
``exp(-2**33)``.  Why not OpenDP (0.16), which ships the same samplers with
proofs: it cannot be seeded (its randomness comes from the operating system
only, and the documented reproducible demo mode needs seeded noise), and its
vector Gaussian on a ``2**k`` grid was 2 to 16 times slower than the
previous version of these samplers, measured back to back, which these
are about 3 times faster than at 1,000 entries and 9 to 13 times from
10,000 on (0.05 to 0.19 microseconds per entry; numpy's float normal 0.02
to 0.04; benchmarks/results/exact_sampling.md).  The tests cross-check these
samplers against the exact pmfs, with and without the float screen, and,
when OpenDP is installed, against its samples.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np

from ._memo import memoize

__all__ = [
    "MAX_SAMPLER_STEPS",
    "sample_geometric",
    "sample_discrete_laplace",
    "sample_floored_laplace",
    "sample_discrete_gaussian",
    "sample_rounded_gaussian",
    "sample_floored_l2_laplace",
]

#: The most grid steps a release's noise scale may take: the rounded
#: Gaussian's screen compares with ``2 s^2`` in int64, and the geometric's
#: float checks leave about one draw in ``2**46 / t`` to the exact path (one
#: in ``2**16`` at this cap).
MAX_SAMPLER_STEPS = 2**30

# Largest bound of one uniform integer draw; the words of :class:`_Bits`.
_ONE_DRAW = 2**62
_WORD = 2**62
_BIT_POSITIONS = np.arange(62, dtype=np.int64)


class _Bits:
    """Exact uniform integers for one release: uniform 62-bit words, used once, in order.

    By default the words are drawn from ``rng`` in blocks
    (``rng.integers(0, 2**62, size=block)``: one call serves a whole
    release; numpy's per-call cost, not the arithmetic, dominated the
    samplers on short vectors).  The Gaussian and Laplace samplers use a
    random number of words that does not depend on the value, so the
    generator's position after a release does not either.

    ``keyed=True`` (the exponential mechanism, the thresholded histogram,
    whose rejection loops use a data-dependent number of words): the
    release draws one fixed-size key from ``rng`` (five 62-bit integers)
    and expands it with SHAKE-256 (FIPS 202) in counter mode.  Drawing the
    words from ``rng`` directly would make every later draw of the fit
    depend on the data through the generator's position: harmless for an
    ideal source, but it breaks the coupling under which the substitution
    test and the sensitivity checks compare neighbouring fits.  The words
    are as good as the generator's bits for any efficient adversary (the
    key-then-expand construction of NIST SP 800-90A's DRBGs, with an
    extendable-output function), and a seeded generator still gives the
    same choice.

    A uniform integer on ``[0, B)`` is a word below the largest multiple of
    ``B`` under ``2**62``, reduced modulo ``B`` (words above it are replaced
    by fresh ones: exact rejection); a power-of-two ``B`` keeps the low bits
    (:meth:`one` splits a word into several for ``B <= 2**31``;
    :meth:`halves` and :meth:`signs` split words into 31-bit integers and
    single bits).
    """

    def __init__(self, rng, block, keyed=False):
        self.rng = rng
        self._key = None
        if keyed:
            self._key = np.asarray(rng.integers(0, _WORD, size=5), dtype="<i8").tobytes()
        self._counter = 0
        self.block = max(16, int(block))
        self._next_block = self.block
        self._words = np.empty(0, dtype=np.int64)
        self._position = 0
        self._list = []
        self._list_position = 0
        # Unused bits of the last word split by :meth:`one` (small powers of two).
        self._spare = 0
        self._spare_bits = 0

    def _expand(self, size):
        if self._key is None:
            return self.rng.integers(0, _WORD, size=size)
        message = self._key + self._counter.to_bytes(8, "little")
        self._counter += 1
        raw = np.frombuffer(hashlib.shake_256(message).digest(8 * size), dtype="<u8")
        return (raw >> np.uint64(2)).astype(np.int64)

    def _take(self, size):
        end = self._position + size
        if end <= self._words.size:
            self._position = end
            return self._words[end - size : end].copy()
        out = np.empty(size, dtype=np.int64)
        filled = 0
        while filled < size:
            if self._position >= self._words.size:
                self._words = self._expand(max(self._next_block, size - filled))
                self._position = 0
                # Top-ups are a quarter of the first block: a release rarely needs more.
                self._next_block = max(16, self.block // 4)
            count = min(size - filled, self._words.size - self._position)
            out[filled : filled + count] = self._words[self._position : self._position + count]
            self._position += count
            filled += count
        return out

    def halves(self, size):
        """``size`` uniform integers on ``[0, 2**31)``: the two halves of each word."""
        words = self._take((int(size) + 1) // 2)
        return np.concatenate([words & (2**31 - 1), words >> 31])[:size]

    def signs(self, size):
        """``size`` fair coins (booleans): the 62 bits of each word."""
        words = self._take(-(-int(size) // 62))
        return ((words[:, None] >> _BIT_POSITIONS) & 1).astype(bool).ravel()[:size]

    def uniform(self, bound, size):
        """``size`` uniform integers on ``[0, bound)``, ``1 <= bound <= 2**62``."""
        bound = int(bound)
        words = self._take(int(size))
        if bound & (bound - 1) == 0:
            return words & (bound - 1)
        limit = (_WORD // bound) * bound
        redo = np.flatnonzero(words >= limit)
        while redo.size:
            words[redo] = self._take(redo.size)
            redo = redo[words[redo] >= limit]
        return words % bound

    def one(self, bound):
        """One uniform integer on ``[0, bound)`` (a Python integer), ``1 <= bound <= 2**62``.

        A power of two up to ``2**31`` takes its bits from a word split
        across calls (a fair coin costs one bit, not a word).
        """
        if bound & (bound - 1) == 0 and bound <= 2**31:
            width = bound.bit_length() - 1
            if self._spare_bits < width:
                self._spare, self._spare_bits = self._next_word(), 62
            value = self._spare & (bound - 1)
            self._spare >>= width
            self._spare_bits -= width
            return value
        while True:
            word = self._next_word()
            if bound & (bound - 1) == 0:
                return word & (bound - 1)
            if word < (_WORD // bound) * bound:
                return word % bound

    def _next_word(self):
        if self._list_position >= len(self._list):
            self._list = self._take(min(256, self.block)).tolist()
            self._list_position = 0
        self._list_position += 1
        return self._list[self._list_position - 1]


def _as_bits(rng, size, words_per_entry):
    """The word source of one release (a :class:`_Bits` passes through).

    The first block holds the words a release of ``size`` entries usually
    takes (the sampler's ``words_per_entry``, for one chunk); the rare
    release that needs more is topped up.  Words drawn and not used cost
    generator time only (20 ns each from ChaCha20).
    """
    if isinstance(rng, _Bits):
        return rng
    return _Bits(rng, words_per_entry * min(int(size), _CHUNK) + 40)


def _bernoulli_exp_fraction(bits, numerator, denominator):
    """Bernoulli(exp(-numerator / denominator)) per entry, for 0 <= numerator <= denominator.

    Canonne, Kamath and Steinke (2020), Algorithm 1 (gamma in [0, 1]): count
    the successes K of Bernoulli(gamma / k), k = 1, 2, ..., up to the first
    failure; ``P(K even) = exp(-gamma)``.  A Bernoulli(r / (b k)) coin is the
    event ``U < r and V == 0`` with ``U`` uniform on ``[0, b)`` and ``V``
    uniform on ``[0, k)`` (``U + b V`` is uniform on ``[0, b k)``), so no
    product is formed and nothing overflows.  Every entry still running has
    had the same successes, so ``k`` is one integer per round.

    Parameters
    ----------
    numerator : ndarray of int64
    denominator : int
        Positive (one for all entries).
    """
    numerator = np.asarray(numerator, dtype=np.int64)
    denominator = int(denominator)
    odd = np.zeros(numerator.shape, dtype=bool)
    active = np.flatnonzero(numerator > 0)
    k = 1
    while active.size:
        if denominator * k <= _ONE_DRAW:
            # U + b V in one draw: uniform on [0, b k), below r iff U < r and V == 0.
            success = bits.uniform(denominator * k, active.size) < numerator[active]
        else:
            success = bits.uniform(denominator, active.size) < numerator[active]
            success &= bits.uniform(k, active.size) == 0
        active = active[success]
        # k successes so far: the parity of the count flips with each one.
        odd[active] = k % 2 == 1
        k += 1
    return ~odd


def _exp_minus_one_runs(bits, counts):
    """Whether ``counts[i]`` independent Bernoulli(exp(-1)) coins all succeed, per entry.

    The coins are drawn as a matrix of at most 8 columns per round (one
    vectorised call) instead of one round per coin.
    """
    counts = np.asarray(counts, dtype=np.int64).copy()
    success = np.ones(counts.shape, dtype=bool)
    pending = np.flatnonzero(counts > 0)
    while pending.size:
        width = int(min(8, counts[pending].max()))
        coins = _bernoulli_exp_fraction(bits, np.ones(pending.size * width, np.int64), 1).reshape(
            pending.size, width
        )
        needed = np.arange(width) < counts[pending, None]
        ok = np.all(coins | ~needed, axis=1)
        success[pending[~ok]] = False
        counts[pending] -= width
        pending = pending[ok & (counts[pending] > 0)]
    return success


def _bernoulli_exp(bits, numerator, denominator):
    """Bernoulli(exp(-numerator / denominator)) per entry, numerator >= 0 (int64 arrays).

    Canonne, Kamath and Steinke (2020), Algorithm 1 (gamma > 1): with
    ``gamma = q + r / b``, the conjunction of ``q`` independent
    Bernoulli(exp(-1)) coins and one Bernoulli(exp(-r / b)).
    """
    numerator = np.asarray(numerator, dtype=np.int64)
    whole, rest = np.divmod(numerator, int(denominator))
    return _bernoulli_exp_fraction(bits, rest, denominator) & _exp_minus_one_runs(bits, whole)


# --------------------------------------------------------------------------
# Exact comparisons of a uniform real with exp(-N / D)
# --------------------------------------------------------------------------


def _exp_minus_one_bounds(precision):
    # exp(-1), the base of every whole part.  Not cached: the precisions the
    # exact fallback asks for follow the secret uniform draws, and a cache's
    # entries would keep them readable.
    return _exp_series_bounds(1, 1, precision)


def _exp_series_bounds(numerator, denominator, precision):
    """Integers ``(low, high)`` with ``low <= 2**precision * exp(-x) <= high``, ``x = N / D`` in ``[0, 1]``.

    The Taylor series of ``exp(-x)`` alternates, with terms ``a_k = x^k /
    k!`` that do not increase for ``x <= 1``: a partial sum ending on an odd
    term is a lower bound, one ending on an even term an upper bound.  The
    terms are computed in fixed point at ``precision + 16`` bits, rounded
    down for the lower bound and up for the upper one, until a term is at
    most one unit.
    """
    guard = precision + 16
    term_low = term_high = low = high = 1 << guard
    k = 0
    while True:
        k += 1
        step = denominator * k
        term_low = (term_low * numerator) // step
        term_high = -((-term_high * numerator) // step)
        if k % 2 == 0:
            low, high = low + term_low, high + term_high
        elif term_high <= 1:
            # S_k (k odd) <= exp(-x) <= S_(k - 1), whose upper bound is ``high``.
            return (low - term_high) >> 16, -((-high) >> 16)
        else:
            low, high = low - term_high, high - term_low


def _exp_bounds(numerator, denominator, precision):
    """Integers ``(low, high)`` with ``low <= 2**precision * exp(-N / D) <= high`` (Python integers).

    ``exp(-N / D) = exp(-1)^q exp(-r / D)`` with ``N = q D + r``; each
    factor is bracketed by :func:`_exp_series_bounds` and the power taken by
    squaring, every product rounded down for the lower bound and up for the
    upper one.  ``high - low`` is a few units for ``q < 2**16``.
    """
    whole, rest = divmod(int(numerator), int(denominator))
    guard = precision + 16 + 2 * whole.bit_length()
    low, high = _exp_series_bounds(rest, int(denominator), guard)
    base_low, base_high = _exp_minus_one_bounds(guard)
    while whole:
        if whole & 1:
            low = (low * base_low) >> guard
            high = -((-high * base_high) >> guard)
        base_low = (base_low * base_low) >> guard
        base_high = -((-base_high * base_high) >> guard)
        whole >>= 1
    shift = guard - precision
    return low >> shift, -((-high) >> shift)


def _exact_below_exp(bits, cell, numerator, denominator):
    """Whether ``U < exp(-N / D)``, exactly, for the uniform real ``U`` of ``cell``.

    ``cell = [u, a]`` holds ``U`` as ``[u / 2**a, (u + 1) / 2**a)``; while
    the bounds of ``exp(-N / D)`` (:func:`_exp_bounds` at ``a + 32`` bits)
    overlap that interval, ``U`` gets 62 more uniform bits (in place: the
    same ``U`` may be compared again).  Decided with probability 1.
    """
    while True:
        u, a = cell
        low, high = _exp_bounds(numerator, denominator, a + 32)
        if (u + 1) << 32 <= low:
            return True
        if u << 32 >= high:
            return False
        cell[0], cell[1] = (u << 62) | bits.one(_WORD), a + 62


def _exp_table(values):
    # Each entry is exp(-v), correctly rounded from 200-bit bounds.
    out = []
    for value in values:
        low, high = _exp_bounds(value.numerator, value.denominator, 200)
        out.append((low + high) / (1 << 201))
    return out


# exp(-n), exp(-m / 64) and exp(-k / 1024) for n, m < 64 and k < 16, each the
# float64 nearest to 200-bit bounds of the exact value (within 1.01 * 2**-53,
# relative), and their products exp(-i / 1024), i < 2**16, rounded after each
# multiplication (within 5.03 * 2**-53).
_EXP_WHOLE = _exp_table([Fraction(n) for n in range(64)])
_EXP_SIXTY_FOURTHS = _exp_table([Fraction(m, 64) for m in range(64)])
_EXP_THOUSAND_TWENTY_FOURTHS = _exp_table([Fraction(k, 1024) for k in range(16)])
_EXP_TABLE = (
    np.multiply.outer(np.array(_EXP_WHOLE), np.array(_EXP_SIXTY_FOURTHS))[:, :, None]
    * np.array(_EXP_THOUSAND_TWENTY_FOURTHS)
).ravel()
# From this exponent on the estimate is 0: the exact value is below 2**-92.
_EXP_CUTOFF = 64.0
#: The float screen's relative margin is ``(1 + x) * _SCREEN_MARGIN`` for an
#: exponent estimate ``x`` (:func:`_screen`); a test sets it to infinity to
#: send every comparison to the exact path.
_SCREEN_MARGIN = 2.0**-48


def _exp_polynomial(rest):
    # exp(-b) for 0 <= b < 2**-10: Taylor to degree 4 (remainder below 2**-56).
    return 1.0 - rest * (1.0 - rest * (0.5 - rest * (1.0 / 6 - rest * (1.0 / 24))))


def _exp_estimate(x):
    """``exp(-x)`` for an array ``0 <= x``, within ``2**-50`` (relative) of the exact value; 0 from 64 on.

    Only IEEE float64 operations, each exact or correctly rounded (no
    library ``exp``): ``x = i / 1024 + b`` with ``i = floor(1024 x)`` and
    ``b`` in ``[0, 2**-10)`` (both exact: Sterbenz), ``exp(-i / 1024)`` from
    a table (within ``5.03 * 2**-53``) and ``exp(-b)`` from a degree-4
    Taylor polynomial (truncation below ``2**-56``; its rounding, dominated
    by the last subtraction from 1, below ``1.01 * 2**-53``); with their
    product, below ``7.2 * 2**-53 < 2**-50``.
    """
    inside = x < _EXP_CUTOFF
    x = np.where(inside, x, 0.0)
    steps = np.floor(x * 1024.0)
    rest = x - steps / 1024.0
    table = _EXP_TABLE[steps.astype(np.int64)]
    return np.where(inside, table * _exp_polynomial(rest), 0.0)


def _exp_estimate_one(x):
    """:func:`_exp_estimate` of one Python float (the same operations and roundings)."""
    if not x < _EXP_CUTOFF:
        return 0.0
    steps = math.floor(x * 1024.0)
    rest = x - steps / 1024.0
    table = (
        _EXP_WHOLE[steps >> 10]
        * _EXP_SIXTY_FOURTHS[(steps >> 4) & 63]
        * _EXP_THOUSAND_TWENTY_FOURTHS[steps & 15]
    )
    return table * _exp_polynomial(rest)


def _screen(leading, width, x, estimate):
    """Which comparisons ``U < exp(-E)`` the float screen decides, and how.

    ``U`` is a uniform real in ``[w / 2**width, (w + 1) / 2**width)`` (``w =
    leading``, an integer below ``2**62``); ``x`` is a float within ``4 *
    2**-53`` (relative) of the exponent ``E >= 0``; ``estimate`` is
    :func:`_exp_estimate` of ``x`` (within ``7.2 * 2**-53`` of ``exp(-x)``),
    possibly times a constant within ``1.01 * 2**-53`` of ``exp(-c)`` for
    ``E + c`` (one more rounded product: ``9.2 * 2**-53`` in all).  The
    error of ``x`` moves ``exp(-x)`` by at most ``4.01 x 2**-53``, so
    ``estimate`` is within ``(9.2 + 4.01 x) 2**-53`` (relative) of
    ``exp(-E)``; from ``x = 64`` on ``estimate`` is 0 while ``exp(-E) <
    2**-92``.  The margin ``(1 + x) 2**-48 = 32 (1 + x) 2**-53`` is more
    than twice that error plus the rounding of the comparison's own
    operands (``3 * 2**-53``), so ``below`` (where ``(w + 1) / 2**width <
    exp(-E)`` for certain) and ``above`` (where ``w / 2**width > exp(-E)``)
    are exact decisions.  The rest, ``exp(-E)`` inside ``U``'s interval
    widened by about ``(1 + x) 2**-48`` (relative), is decided exactly
    (:func:`_exact_below_exp`).
    """
    return _surely_below(leading, width, x, estimate), _surely_above(leading, width, x, estimate)


def _surely_below(leading, width, x, estimate):
    # (w + 1) / 2**width < exp(-E) for certain (see _screen).
    return (leading + 1) * 2.0**-width < estimate * (1.0 - (1.0 + x) * _SCREEN_MARGIN)


def _surely_above(leading, width, x, estimate):
    # w / 2**width > exp(-E) for certain (see _screen).
    return leading * 2.0**-width > estimate * (1.0 + (1.0 + x) * _SCREEN_MARGIN)


def _below_exp(bits, leading, width, x, exact_of):
    """Whether ``U_i < exp(-E_i)`` per entry, exactly; ``U_i`` uniform reals with leading bits ``leading``.

    ``x`` is a float array within ``4 * 2**-53`` (relative) of the
    exponents ``E_i``, ``exact_of(i)`` the exact ``(N, D)`` with ``E_i = N /
    D`` (Python integers), asked only for the rare entries the float screen
    leaves undecided (:func:`_screen`).
    """
    below, above = _screen(leading, width, x, _exp_estimate(x))
    for i in np.flatnonzero(~(below | above)):
        below[i] = _exact_below_exp(bits, [int(leading[i]), width], *exact_of(i))
    return below


def _one_below_exp(bits, cell, numerator, denominator):
    """Whether ``U < exp(-N / D)`` for the uniform real of ``cell = [u, a]`` (screened, then exact).

    ``N / D`` is a correctly rounded Python division.
    """
    u, a = cell
    if a > 62:
        u, a = u >> (a - 62), 62
    x = numerator / denominator
    below, above = _screen(u, a, x, _exp_estimate_one(x))
    if below or above:
        return below
    return _exact_below_exp(bits, cell, numerator, denominator)


def _fill(size, propose, factor):
    """``size`` accepted draws of a rejection sampler, in proposal order.

    ``propose(n)`` returns ``n`` i.i.d. proposals and whether each is
    accepted; accepted proposals of an i.i.d. sequence are i.i.d. from the
    target, so taking them in order is exact.  Each round proposes
    ``factor`` times what is missing (plus a few) so that one round usually
    suffices.
    """
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        missing = size - filled
        values, accept = propose(int(missing * factor) + 8)
        got = values[accept][:missing]
        out[filled : filled + got.size] = got
        filled += got.size
    return out


def _bernoulli_exp_big(bits, numerator, denominator):
    """Bernoulli(exp(-numerator / denominator)) for Python integers of any size (one coin)."""
    return _one_bernoulli_exp(bits, numerator, denominator)


def _uniform_big(bits, bound):
    """A uniform integer in ``[0, bound)`` for a Python integer ``bound`` (rejection on bits)."""
    length = max(1, (bound - 1).bit_length())
    while True:
        value = 0
        for shift in range(0, length, 62):
            width = min(62, length - shift)
            value |= bits.one(1 << width) << shift
        if value < bound:
            return value


# Long releases are sampled in equal chunks of at most this many entries,
# which bounds the samplers' temporary memory (a few MB) whatever the
# release's size; smaller chunks cost more calls, larger ones fall out of
# cache (measured: 2**13 to 2**15 within 20% of each other, 2**14 best).
_CHUNK = 2**14
# Short releases (a count, one coordinate, a gradient of a few dozen
# entries) are sampled one value at a time in Python: the same algorithms,
# without numpy's per-call cost, which dominates short vectors.
_SCALAR_SIZE = 32


def _one_bernoulli_exp_fraction(bits, numerator, denominator):
    """One Bernoulli(exp(-numerator / denominator)), ``0 <= numerator <= denominator`` (Algorithm 1)."""
    if numerator == 0:
        return True
    k = 1
    while True:
        if denominator * k <= _ONE_DRAW:
            success = bits.one(denominator * k) < numerator
        else:
            success = _uniform_big(bits, denominator) < numerator and bits.one(k) == 0
        if not success:
            return k % 2 == 1
        k += 1


def _one_bernoulli_exp(bits, numerator, denominator):
    """One Bernoulli(exp(-numerator / denominator)) for integers of any size."""
    whole, rest = divmod(int(numerator), int(denominator))
    while whole > 0:
        if not _one_bernoulli_exp_fraction(bits, 1, 1):
            return False
        whole -= 1
    return _one_bernoulli_exp_fraction(bits, rest, int(denominator))


def _settle_geometric(bits, cell, t, guess):
    """The geometric ``G = max{k >= 0 : U < exp(-k / t)}`` of the uniform real of ``cell``, from a guess."""
    guess = max(0, int(guess))
    while not _one_below_exp(bits, cell, guess, t):
        guess -= 1
    while _one_below_exp(bits, cell, guess + 1, t):
        guess += 1
    return guess


def _geometric_guess(word, t):
    # float estimate of -t log(U) from U's leading 62 bits (a guess, checked exactly)
    return math.floor(-t * math.log((word + 0.5) * 2.0**-62))


def _one_geometric(bits, t):
    # sample_geometric for one draw: the same guess and float checks, in Python floats.
    word = bits._next_word()
    guess = max(0, _geometric_guess(word, t))
    low = guess / t
    at_guess = _exp_estimate_one(low)
    if _surely_below(word, 62, low, at_guess) and _surely_above(
        word, 62, low, at_guess * _exp_step(t)
    ):
        return guess
    return _settle_geometric(bits, [word, 62], t, guess)


def _one_discrete_laplace(bits, t):
    while True:
        magnitude = _one_geometric(bits, t)
        negative = bits.one(2) == 1
        if not (negative and magnitude == 0):
            return -magnitude if negative else magnitude


def _one_floored_laplace(bits, t):
    magnitude = _one_geometric(bits, t)
    return -magnitude - 1 if bits.one(2) == 1 else magnitude


def _one_gaussian_coin(bits, magnitude, s):
    # _gaussian_coins for one entry (the offset divided by s in one correct rounding).
    half = bits.one(2**31)
    ratio = (magnitude - s) / s
    x = ratio * ratio * 0.5
    estimate = _exp_estimate_one(x)
    if _surely_below(half, 31, x, estimate):
        return True
    if _surely_above(half, 31, x, estimate):
        return False
    return _exact_below_exp(bits, [half, 31], (magnitude - s) ** 2, 2 * s * s)


def _one_discrete_gaussian(bits, s):
    while True:
        y = _one_discrete_laplace(bits, s)
        if _one_gaussian_coin(bits, abs(y), s):
            return y


def _scalars(sampler, bits, parameter, size):
    return np.array([sampler(bits, parameter) for _ in range(size)], dtype=np.int64)


def sample_geometric(rng, t, size):
    """``size`` draws of ``P(X = x) = (1 - exp(-1/t)) exp(-x / t)``, x = 0, 1, ... (t a positive integer).

    Inversion, decided exactly: for a uniform real ``U`` on ``[0, 1)``,
    ``X = max{k >= 0 : U < exp(-k / t)}`` has ``P(X >= k) = exp(-k / t)``.
    ``U`` is known by its leading 62 bits (one word); a float guess ``g =
    floor(-t log U)`` is checked with two exact comparisons, ``U < exp(-g /
    t)`` and ``U >= exp(-(g + 1) / t)`` (:func:`_below_exp`: a rigorous float
    screen, exact integer bounds for the rare comparisons it leaves
    undecided, more bits of ``U`` drawn as they need).  Where a check fails
    (the guess is off by the float error of ``log``) or is undecided, the
    entry is settled one comparison at a time (:func:`_settle_geometric`).
    The logarithm only guesses: the output is exact whatever its error.
    """
    bits = _as_bits(rng, size, 1.0)
    t = int(t)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_geometric, bits, t, size)
    words = bits.uniform(_WORD, size)
    guess = np.floor(-t * np.log((words + 0.5) * 2.0**-62))
    guess = np.maximum(guess, 0.0).astype(np.int64)
    low = guess / t
    at_guess = _exp_estimate(low)
    # exp(-(g + 1) / t) as exp(-g / t) exp(-1 / t): one more rounded product.
    past_guess = at_guess * _exp_step(t)
    # The guess is G when U < exp(-g / t) and U >= exp(-(g + 1) / t), both decided.
    settled = _surely_below(words, 62, low, at_guess)
    settled &= _surely_above(words, 62, low, past_guess)
    for i in np.flatnonzero(~settled):
        guess[i] = _settle_geometric(bits, [int(words[i]), 62], t, int(guess[i]))
    return guess


@memoize(64)
def _exp_step(t):
    # (No hit counts: a search's runs call it once per release, and their
    # number stays secret; see sklearn_dp._memo.)
    # exp(-1 / t), the float64 nearest to 200-bit bounds (within 1.01 * 2**-53).
    return _exp_table([Fraction(1, t)])[0]


def sample_discrete_laplace(rng, t, size):
    """``size`` draws of the discrete Laplace ``P(Y = y) ~ exp(-|y| / t)`` on the integers (t a positive integer).

    Canonne, Kamath and Steinke (2020), Algorithm 2: a geometric magnitude
    and a fair sign, with ``(sign -, 0)`` rejected so that 0 is not counted
    twice.
    """
    bits = _as_bits(rng, size, 1.1)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_discrete_laplace, bits, int(t), size)

    def propose(n):
        magnitude = sample_geometric(bits, t, n)
        negative = bits.signs(n)
        return np.where(negative, -magnitude, magnitude), ~(negative & (magnitude == 0))

    return _fill(size, propose, 1.0 + 1.0 / t)


def sample_floored_laplace(rng, t, size):
    """``size`` draws of ``floor(L)``, ``L`` continuous Laplace of scale ``t`` (t a positive integer).

    ``floor(L)`` is ``G`` for ``L >= 0`` and ``-(G + 1)`` for ``L < 0``, with
    ``G = floor(|L|)`` geometric (``P(G = x) = (1 - exp(-1/t)) exp(-x/t)``,
    exactly :func:`sample_geometric`) and the sign a fair coin independent of
    it.  Its pmf is proportional to ``exp(-|y + 1/2| / t)``.
    """
    bits = _as_bits(rng, size, 1.05)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_floored_laplace, bits, int(t), size)
    if size > _CHUNK:
        return _in_chunks(sample_floored_laplace, bits, t, size)
    magnitude = sample_geometric(bits, t, size)
    negative = bits.signs(size)
    return np.where(negative, -magnitude - 1, magnitude)


def _in_chunks(sampler, bits, parameter, size):
    # Equal chunks of at most _CHUNK entries bound the temporaries of the
    # vectorised loops (and keep them in cache).
    count = -(-size // _CHUNK)
    edges = [size * i // count for i in range(count + 1)]
    return np.concatenate(
        [sampler(bits, parameter, stop - start) for start, stop in zip(edges, edges[1:])]
    )


def _gaussian_coins(bits, magnitude, s):
    """CKS Algorithm 3's acceptance, ``U < exp(-(|y| - s)^2 / (2 s^2))``, per entry of ``magnitude = |y|``.

    ``U`` is a fresh uniform real per entry, known by 31 leading bits (two
    per word: the screen decides all but about one comparison in ``2**31``).
    The exponent is estimated as ``((|y| - s) / s)^2 / 2`` (three rounded
    operations on exact operands: within ``4 * 2**-53``, relative).
    """
    return _below_exp(
        bits,
        bits.halves(magnitude.size),
        31,
        np.square((magnitude - s) / float(s)) * 0.5,
        lambda i: ((int(magnitude[i]) - s) ** 2, 2 * s * s),
    )


def sample_discrete_gaussian(rng, s, size):
    """``size`` draws of the discrete Gaussian ``P(Y = y) ~ exp(-y^2 / (2 s^2))`` (s a positive integer).

    Canonne, Kamath and Steinke (2020), Algorithm 3 with ``t = s``: a
    discrete Laplace ``Y`` of parameter ``s`` (:func:`sample_discrete_laplace`)
    kept with probability ``exp(-(|Y| - s)^2 / (2 s^2))``
    (:func:`_gaussian_coins`); about 76% of proposals are kept.  (The
    algorithm is exact for every positive integer ``t``: ``exp(-|y|/t)
    exp(-(|y| - s^2/t)^2 / (2 s^2))`` is ``exp(-y^2 / (2 s^2))`` times a
    constant.)
    """
    bits = _as_bits(rng, size, 2.2)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_discrete_gaussian, bits, int(s), size)
    if size > _CHUNK:
        return _in_chunks(sample_discrete_gaussian, bits, s, size)
    s = int(s)

    def propose(n):
        y = sample_discrete_laplace(bits, s, n)
        return y, _gaussian_coins(bits, np.abs(y), s)

    return _fill(size, propose, 1.35)


def _one_half_discrete_gaussian(bits, s):
    # CKS Algorithm 3 without the sign (see _half_discrete_gaussian).
    while True:
        k = _one_geometric(bits, s)
        if _one_gaussian_coin(bits, k, s):
            return k


def _half_discrete_gaussian(bits, s, size):
    """``size`` draws of ``k >= 0`` with ``P(k)`` proportional to ``exp(-k^2 / (2 s^2))``.

    Canonne, Kamath and Steinke (2020), Algorithm 3 without the sign: a
    geometric ``k`` (``P(k) ~ exp(-k / s)``, :func:`sample_geometric`) kept
    with probability ``exp(-(k - s)^2 / (2 s^2))`` (:func:`_gaussian_coins`);
    the product is ``exp(-k^2 / (2 s^2) - 1/2)``.
    """
    if size <= _SCALAR_SIZE:
        return _scalars(_one_half_discrete_gaussian, bits, s, size)

    def propose(n):
        k = sample_geometric(bits, s, n)
        return k, _gaussian_coins(bits, k, s)

    return _fill(size, propose, 1.35)


def _lazy_below(bits, cell, factor, v):
    """Whether ``factor * V < 2 k U + U^2``, exactly, for uniform reals ``V`` and ``U`` on ``[0, 1)``.

    Both are known by their leading bits and refined 62 bits at a time
    until the comparison is decided (with probability 1).  ``V`` is fresh:
    its first word is ``v``.  ``cell = [k, u, a]`` holds ``U`` as the
    interval ``[u / 2**a, (u + 1) / 2**a)``, refined in place: the same
    ``U`` serves every coin of one proposal.  ``2 k x + x^2`` increases on
    ``[0, 1]``, so its range over ``U``'s interval is given by the ends;
    everything is compared in integers over the common denominator
    ``2**(b + 2 a)``.
    """
    k = cell[0]
    b = 62
    while True:
        u, a = cell[1], cell[2]
        lhs_low = (factor * v) << (2 * a)
        lhs_high = (factor * (v + 1)) << (2 * a)
        rhs_low = (((2 * k * u) << a) + u * u) << b
        rhs_high = (((2 * k * (u + 1)) << a) + (u + 1) * (u + 1)) << b
        if lhs_high <= rhs_low:
            return True
        if lhs_low >= rhs_high:
            return False
        if lhs_high - lhs_low >= rhs_high - rhs_low:
            v = (v << 62) | bits.one(_WORD)
            b += 62
        else:
            cell[1] = (u << 62) | bits.one(_WORD)
            cell[2] = a + 62


def _one_cell_coin(bits, k, s, v=None, cell=None):
    """Bernoulli(exp(-(2 k U + U^2) / (2 s^2))) for a uniform real ``U`` on ``[0, 1)``, drawn lazily.

    The exponent ``h(U)`` is at most ``h_max = (2 k + 1) / (2 s^2)``; with
    ``q = ceil(h_max)`` pieces the coin is the conjunction of ``q``
    Bernoulli(exp(-h(U) / q)) coins, independent given ``U``, each by
    Canonne, Kamath and Steinke (2020), Algorithm 1 for ``gamma = h(U) / q``
    in ``[0, 1]``: count the successes of Bernoulli(gamma / j), j = 1, 2,
    ..., up to the first failure, and keep the piece when the count is even.
    Bernoulli(gamma / j) is the event ``j q 2 s^2 V < 2 k U + U^2`` for a
    fresh uniform ``V`` (:func:`_lazy_below`).  ``v``: a word already drawn
    for the first ``V``; ``cell``: ``[k, 0, 0]`` to keep ``U``'s revealed
    bits (:func:`_lazy_below`).
    """
    denominator = 2 * s * s
    pieces = max(1, -(-(2 * k + 1) // denominator))
    if cell is None:
        cell = [k, 0, 0]
    for _ in range(pieces):
        j = 1
        while True:
            word = bits.one(_WORD) if v is None else v
            v = None
            if not _lazy_below(bits, cell, j * pieces * denominator, word):
                break
            j += 1
        if j % 2 == 0:  # j - 1 successes, an odd count
            return False
    return True


def _one_rounded_gaussian(bits, s):
    while True:
        k = _one_half_discrete_gaussian(bits, s)
        negative = bits.one(2) == 1
        if _one_cell_coin(bits, k, s):
            return -k - 1 if negative else k


def sample_rounded_gaussian(rng, s, size):
    """``size`` draws of ``floor(N)``, ``N`` continuous Gaussian ``N(0, s^2)`` (s a positive integer).

    Exact, in integers: a cell ``[k, k + 1)`` (``k >= 0``) is proposed with
    probability proportional to ``exp(-k^2 / (2 s^2))``
    (:func:`_half_discrete_gaussian`) with a fair sign, and a uniform real
    ``U`` on ``[0, 1)`` is kept with probability ``exp(-(2 k U + U^2) / (2
    s^2))`` (:func:`_one_cell_coin`, ``U`` drawn lazily, bit by bit, only as
    far as the coins need).  The accepted ``(k, U)`` has density
    proportional to ``exp(-(k + U)^2 / (2 s^2))``: ``N = +-(k + U)`` is
    exactly ``N(0, s^2)``, and ``floor(N)`` is ``k`` or ``-k - 1`` (``U``
    itself is never needed).  The acceptance rate is about ``1 - 1 / s``.

    The cell coin's first comparison, of one 62-bit word of ``V`` against
    ``2 k U + U^2 < 2 k + 1``, decides almost every proposal; it is screened
    in float64 with a relative margin of ``2**-40`` (far above the float
    error of the products: a screened proposal is decided in exact integers
    too), and the rest are decided one by one in Python integers.
    """
    bits = _as_bits(rng, size, 4.4)
    s = int(s)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_rounded_gaussian, bits, s, size)
    if size > _CHUNK:
        return _in_chunks(sample_rounded_gaussian, bits, s, size)
    denominator = 2 * s * s

    def propose(n):
        k = _half_discrete_gaussian(bits, s, n)
        negative = bits.uniform(2, n) == 1
        words = bits.uniform(_WORD, n)
        # One piece (2 k + 1 <= 2 s^2) and 2 s^2 v >= (2 k + 1) 2**62: the
        # first coin fails with no bit of U, the count of successes is 0
        # (even), so the proposal is kept.
        bound = (2.0 * k.astype(float) + 1.0) * 2.0**62 * (1.0 + 2.0**-40)
        accept = (2 * k + 1 <= denominator) & (words.astype(float) * float(denominator) > bound)
        for i in np.flatnonzero(~accept):
            accept[i] = _one_cell_coin(bits, int(k[i]), s, int(words[i]))
        return np.where(negative, -k - 1, k), accept

    return _fill(size, propose, 1.05)


# --------------------------------------------------------------------------
# Laplace noise in the L2 norm (density ~ exp(-||x||_2 / t)), exactly floored
# --------------------------------------------------------------------------

#: Scale of the Gaussian coordinates whose direction the L2 sampler uses (any
#: scale gives the same direction; a large one makes the cell coin cheap).
_DIRECTION_SCALE = 2**10


def _lazy_linear_below(bits, fraction, factor, v):
    """Whether ``factor * V < F``, exactly, for uniform reals ``V`` (first word ``v``) and ``F``.

    ``fraction = [u, a]`` holds ``F`` as ``[u / 2**a, (u + 1) / 2**a)``,
    refined in place; compared in integers as :func:`_lazy_below` does.
    """
    b = 62
    while True:
        u, a = fraction
        lhs_low, lhs_high = (factor * v) << a, (factor * (v + 1)) << a
        rhs_low, rhs_high = u << b, (u + 1) << b
        if lhs_high <= rhs_low:
            return True
        if lhs_low >= rhs_high:
            return False
        if lhs_high - lhs_low >= rhs_high - rhs_low:
            v = (v << 62) | bits.one(_WORD)
            b += 62
        else:
            fraction[0], fraction[1] = (u << 62) | bits.one(_WORD), a + 62


def _one_exponential_fraction(bits):
    """A uniform real ``F`` on ``[0, 1)`` kept with probability ``exp(-F)``, by its revealed bits.

    Canonne, Kamath and Steinke (2020), Algorithm 1 for the real ``gamma =
    F``: count the successes of Bernoulli(F / j) (``j V < F``,
    :func:`_lazy_linear_below`) up to the first failure, keep ``F`` when the
    count is even.  The kept ``F`` has density ``~ exp(-f)`` on ``[0, 1)``:
    with a geometric integer part (``P(G = g) = (1 - e^-1) e^-g``), ``G + F``
    is exactly Exp(1).  Returns ``[u, a]``; the unrevealed bits of a kept
    ``F`` are uniform and independent of everything drawn (the bits were
    revealed by a stopping rule), so they are drawn later, as needed.
    """
    while True:
        fraction = [0, 0]
        j = 1
        while _lazy_linear_below(bits, fraction, j, bits.one(_WORD)):
            j += 1
        if j % 2 == 1:
            return fraction


def _refine(cell, position, bits, precision):
    # Reveal uniform bits of a lazily drawn fraction up to `precision` bits.
    while cell[position + 1] < precision:
        cell[position] = (cell[position] << 62) | bits.one(_WORD)
        cell[position + 1] += 62
    return cell[position] >> (cell[position + 1] - precision)


def _lazy_gaussians(bits, s, size):
    """``size`` exact Gaussians ``+-(k + U)`` of scale ``s``, each ``(negative, [k, u, a])``.

    The proposals and coins of :func:`sample_rounded_gaussian` (the same
    float screen of the first coin), keeping each accepted cell's revealed
    bits of ``U`` (none for a screened proposal): the accepted proposals, in
    order, are i.i.d.
    """
    denominator = 2 * s * s
    out = []
    while len(out) < size:
        n = int((size - len(out)) * 1.05) + 8
        k = _half_discrete_gaussian(bits, s, n)
        negative = bits.uniform(2, n) == 1
        words = bits.uniform(_WORD, n)
        bound = (2.0 * k.astype(float) + 1.0) * 2.0**62 * (1.0 + 2.0**-40)
        screened = (2 * k + 1 <= denominator) & (words.astype(float) * float(denominator) > bound)
        for i in range(n):
            cell = [int(k[i]), 0, 0]
            if screened[i] or _one_cell_coin(bits, cell[0], s, int(words[i]), cell=cell):
                out.append((bool(negative[i]), cell))
    return out[:size]


def sample_floored_l2_laplace(rng, t, size):
    """``floor(X)`` per entry, ``X`` on ``R^m`` with density ``~ exp(-||x||_2 / t)`` (``t`` a positive integer).

    ``X = t R Z / ||Z||`` with ``R ~ Gamma(m, 1)``, the sum of ``m`` Exp(1)
    variables ``G_j + F_j`` (:func:`_one_exponential_fraction`), and ``Z``
    i.i.d. Gaussian ``+-(k_i + U_i)`` (the cells and lazily drawn uniform
    reals of :func:`sample_rounded_gaussian`): in polar coordinates the
    density ``r^(m-1) exp(-r / t)`` is a Gamma(m, t) radius times a uniform
    direction.  Every real is known by an interval of its leading bits;
    the floors are computed from intervals in exact integers (products,
    quotients and integer square roots rounded outwards), and every fraction
    gets 62 more bits until no interval of ``X_i`` contains an integer
    (with probability 1; at 62 bits, almost always at once).  Exact: the
    output is a function of ``X``, and ``X`` has exactly the stated law.
    Cost: scalar Python, some 10 to 90 microseconds per entry (the more entries the less each).
    """
    bits = _as_bits(rng, size, 8)
    t, m = int(t), int(size)
    gaussians = _lazy_gaussians(bits, _DIRECTION_SCALE, m)
    radius_whole = int(sample_geometric(bits, 1, m).sum())
    fractions = [_one_exponential_fraction(bits) for _ in range(m)]
    out = np.empty(m, dtype=np.int64)
    undecided = list(range(m))
    precision = 62
    while undecided:
        one = 1 << precision
        # R in [r_low, r_low + m] / 2**p; |Z_i| in [z_i, z_i + 1] / 2**p.
        r_low = radius_whole * one + sum(_refine(f, 0, bits, precision) for f in fractions)
        r_high = r_low + m
        z_low = [cell[0] * one + _refine(cell, 1, bits, precision) for _, cell in gaussians]
        norm_low = math.isqrt(sum(z * z for z in z_low))  # <= ||Z|| 2**p
        norm_high = math.isqrt(sum((z + 1) * (z + 1) for z in z_low)) + 1  # > ||Z|| 2**p
        still = []
        for i in undecided:
            # |X_i| = t R |Z_i| / ||Z||, in [low, high] over the denominator.
            low_num, low_den = t * r_low * z_low[i], norm_high * one
            high_num, high_den = t * r_high * (z_low[i] + 1), norm_low * one
            whole = low_num // low_den
            if norm_low > 0 and high_num < (whole + 1) * high_den:
                out[i] = -whole - 1 if gaussians[i][0] else whole
            else:
                still.append(i)
        undecided = still
        precision += 62
    return out


def _sample_gibbs(bits, gaps, temperature):
    """An index drawn with probability proportional to ``exp(-gaps[i] / temperature)``.

    ``gaps`` are non-negative integers (Python integers in an object array
    when they do not fit an int64), ``temperature`` a positive integer.
    Rejection sampling: a uniform proposal ``i`` is accepted with
    probability ``exp(-gaps[i] / temperature)`` (exact, :func:`_bernoulli_exp`),
    so an accepted index has the target law; proposals are drawn in batches
    of ``len(gaps)`` and the first accepted one (in draw order) is returned.
    """
    n = len(gaps)
    fits = gaps.dtype != object
    while True:
        proposals = bits.uniform(n, n)
        if fits:
            accept = _bernoulli_exp(bits, gaps[proposals], temperature)
            hits = np.flatnonzero(accept)
            if hits.size:
                return int(proposals[hits[0]])
        else:
            for i in proposals:
                if _bernoulli_exp_big(bits, gaps[i], temperature):
                    return int(i)
