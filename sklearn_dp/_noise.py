"""The noise gateway: the one place where randomness meets private data.

Every noisy release of the package goes through a function of this module:
the Gaussian and Laplace mechanisms, the exponential mechanism (report noisy
max with Gumbel noise), the linear term of objective perturbation, and
the random samplers that pick private rows (Poisson subsampling, row
allocation).  Each call knows the exact pre-noise value, its declared
add/remove-one sensitivity and norm, and the noise scale, and records them
when a trace is active (:func:`sklearn_dp.testing.trace_releases`).

Why one module: a privacy argument is only as good as its weakest release.
With every release in one place, a test can replace each noisy output by a
data-independent one (*substitution*) and check that nothing else a user can
observe (coefficients, iteration counts, printed lines, warnings, exceptions)
depends on the data, and that each pre-noise value moves by at most its
declared sensitivity when one row is added (see ``tests/test_substitution.py``
and ``docs/guide/privacy_model.md``).

Solvers and estimators never call ``rng.normal`` (or ``laplace``,
``gumbel``, ...) on a private quantity themselves.

Exact noise on a grid
---------------------
A float sampler leaks its input: the set of float64 values that ``value +
rng.normal(0, s)`` can take depends on ``value`` (numpy's ziggurat and
log-based samplers produce outputs with structured low bits), so an
adversary who knows every other row and sees one exact output can tell D
from D plus one row with certainty (Mironov 2012; Jin, McMurtry, Rubinstein
and Ohrimenko 2022).  The Gaussian, Laplace, exponential and thresholded
histogram releases are therefore computed in integers:

* **Grid.**  A release of noise scale ``sigma``, declared sensitivity
  ``Delta`` and ``m`` entries is rounded to the grid ``g = 2**k``, the
  largest power of two with ``g <= sigma / 2**10`` and ``r(m) g <= 2**-12
  Delta`` (``r(m) = sqrt(m)`` for L2, ``m`` for L1, 1 for a utility), unless
  that puts more than ``2**26`` steps in ``sigma`` (``2**29`` for a Laplace
  release; then the coarser grid wins).  ``k`` depends on public inputs only.  The release is ``g *
  (rint(value / g) + Z)``, ``Z`` integer noise: ``value / g`` and ``rint``
  are exact in float64, and the final product is either exact or the
  correct rounding of the exact integer ``rint(value / g) + Z``, a
  post-processing of it.  The output minus the rounded value is ``g Z``, a
  data-independent multiple of the grid: no output is reachable from one
  candidate value and not from its neighbour.
* **Rounding in the scale.**  Rounding moves each entry by at most ``g /
  2``, so neighbouring rounded values differ, in grid steps, by at most
  ``Delta / g + r(m)`` (``|rint(a) - rint(b)| <= |a - b| + 1`` per entry;
  ``sqrt`` of the count of entries for L2).  The noise scale in steps is
  the least integer ``s >= (sigma / Delta) (Delta / g + r(m))`` (times ``1
  + 2**-30``, in exact rationals, :func:`gaussian_grid`): the ratio of noise
  to sensitivity in steps is at least the calibrated ``sigma / Delta``, so
  the recorded event (a ``noise_multiplier`` for the declared sensitivity)
  holds for the rounded value and the gateway and the events agree
  exactly.  The cost: at most ``2**-12 + 2**-10`` more noise (relative)
  below the cap; above it, ``r(m) (sigma / Delta) 2**-26`` (Gaussian) or
  ``m (sigma / Delta) 2**-29`` (Laplace): 3% for a million Laplace entries
  at noise 16 times the sensitivity.
* **Gaussian.**  ``Z`` is the discrete Gaussian ``N_Z(0, s^2)`` per entry
  (Canonne, Kamath and Steinke 2020, "The Discrete Gaussian for
  Differential Privacy", NeurIPS; CKS below).  Its zCDP is exactly the
  continuous Gaussian's: ``M(x) = x + N_Z(0, s^2)^m`` on integer vectors of
  L2 distance ``D`` is ``D^2 / (2 s^2)``-zCDP (CKS Theorem 14), so every
  zCDP and Renyi statement of the accounting holds as recorded.  For
  (epsilon, delta) and the privacy-loss-distribution accounting, CKS
  Theorem 15 bounds the multivariate discrete Gaussian's privacy profile by
  the continuous Gaussian's with epsilon moved by ``tau = 10 sum_{k=1}^{m-1}
  exp(-2 pi^2 s^2 k / (k + 1))``.  With ``s >= 2**10``, ``tau <= 10 m
  exp(-pi^2 2**20) < 10**-4000000`` per release: the discrete release is
  dominated by the pair (continuous Gaussian ``P``, ``e^-tau Q + (1 -
  e^-tau)`` at a point outside ``P``'s support), which adds ``tau`` to
  every composed epsilon and ``1 - e^-tau <= tau`` to delta.  The ``1 +
  2**-30`` margin on ``s`` lowers the continuous epsilon by orders of
  magnitude more than any number of releases times ``tau`` (argued, not
  computed: a relative change ``2**-30`` of a Gaussian multiplier moves
  epsilon by about ``2**-30`` epsilon, over ``10**-9`` epsilon; this
  bound is far below float64 resolution of any recorded epsilon).
* **Laplace.**  ``Z = floor(L)``, ``L`` continuous Laplace of scale ``t``
  steps (``t`` from :func:`laplace_grid`), sampled exactly
  (:func:`sample_floored_laplace`), then shifted by half a step (``Z +
  1/2`` has mean 0).  ``rint(value / g) + floor(L) = floor(rint(value / g)
  + L)`` for the integer vector ``rint(value / g)``: the release is a
  post-processing of the continuous Laplace mechanism on the rounded value,
  of scale ``t >= (b / Delta) (Delta / g + m)``, so it is pure ``Delta /
  b``-DP and its privacy profile is dominated by the continuous
  ``LaplaceDpEvent(b / Delta)`` that the accounting records (the profile of
  a Laplace pair is increasing in the shift).  Exact, with no gap term.
  (A discrete Laplace on the grid is also exactly ``Delta_steps / t``-DP,
  but its privacy profile is not dominated by the continuous Laplace's,
  which PLD accounting composes; the floored Laplace is.)
* **Exponential mechanism.**  Utilities rounded to the grid of
  :func:`exponential_grid` (one utility moves by at most ``Delta / g + 1``
  steps) and the index drawn exactly from the Gibbs distribution
  ``exp(-(max - a_i) / T)`` of the rounded utilities ``a_i`` at an integer
  temperature ``T >= scale / g + scale / Delta`` steps: uniform proposals
  accepted with an exact Bernoulli(exp(-gap / T)) coin (CKS Algorithms 1
  and 2's construction).  The epsilon-DP and bounded-range statements hold
  for the rounded utilities with ``(Delta / g + 1) / T <= Delta / scale``;
  rounding is monotone, so monotone utilities stay monotone.  Exact.
* **Thresholded histogram.**  The counts are integers and the grid divides
  1: exact floored Laplace noise on ``count / g``, released above an
  integer cutoff chosen in exact rationals so that epsilon and delta are at
  most the stated ones (:func:`histogram_cutoff`).  Exact.
* **L2 Laplace** (:func:`l2_laplace`: pure-DP output perturbation and the
  pure residual release of objective perturbation).  The K-norm mechanism
  of the L2 ball, density ``~ exp(-||b||_2 / t)`` (Chaudhuri, Monteleoni
  and Sarwate's "Gamma-norm" noise), on the Gaussian's grid and inflated
  scale (the rounded value moves by at most ``Delta / g + sqrt(m)`` steps in
  L2): ``g * (rint(value / g) + floor(X) + 1/2)`` is a post-processing of
  the continuous mechanism on the rounded value, pure ``Delta / t``-DP.
  ``floor(X)`` is sampled exactly (:func:`sample_floored_l2_laplace`):
  ``X = t R Z / ||Z||`` with an exact Gamma(m, 1) radius (a sum of
  exponentials, each a geometric integer part plus a fraction kept with an
  exact coin) and exact Gaussian coordinates (below), every real known by
  its leading bits and refined until the floors, computed on exact integer
  intervals, are decided.  (A rejection sampler from a product of discrete
  Laplace laws, the obvious lattice construction, would accept with a
  probability exponentially small in ``m``.)  Exact.
* **Objective perturbation's linear term** (:func:`objective_perturbation`).
  No value is released: the noise ``b`` enters the objective and the solver
  releases the perturbed minimiser, then adds residual noise to it through
  :func:`gaussian` or :func:`l2_laplace`.  ``b`` is the rounding ``g *
  (floor(N / g) + 1/2)``, entry by entry, of an exact continuous ``N`` (the
  L2 Laplace law for pure DP, i.i.d. Gaussian entries for (epsilon,
  delta)), on a grid ``g = 2**k`` from public inputs
  (:func:`objective_noise_grid`); ``floor(N / g)`` is sampled exactly:
  :func:`sample_floored_l2_laplace`, or :func:`sample_rounded_gaussian` (a
  cell of the grid proposed from a one-sided discrete Gaussian, kept with an
  exact Bernoulli coin of a lazily drawn uniform real: the kept point has
  exactly the Gaussian density).  So ``||b - N||_2 <= sqrt(m) g / 2``
  always: the minimiser for ``b`` is within ``sqrt(m) g / (2 Lambda)`` of
  the one for ``N`` (strong convexity), which is DP by the
  objective-perturbation theorem, and the solver adds that distance, twice,
  to its residual release's sensitivity (docs/solvers/perturbation.md,
  "Exact noise").  Exact, up to one floating-point tail: ``b`` is exact in
  float64 while ``|floor(N / g)| < 2**52``, which fails with probability
  below ``exp(m - 2**24)`` (the scale is at most ``2**26 + 1`` steps).

Samplers. Every random draw on the paths above is an exact uniform integer
(:class:`_Bits`: 62-bit words from ``rng.integers``, or, for the exponential
mechanism and the label histogram, a fixed-size key from ``rng.integers``
expanded with SHAKE-256 so that their data-dependent rejection loops do not
move the generator); the samplers are vectorised over the released vector,
with masks for the rejection loops (:func:`sample_discrete_gaussian`,
:func:`sample_floored_laplace`), and releases of at most 32 entries are
sampled one value at a time in Python integers (faster there: numpy's
per-call cost dominates short vectors). int64 suffices: scales are at most
about ``2**27`` steps below the Gaussian's ``2**26`` cap (the floored
Laplace sampler forms no squares) and never more than ``MAX_SAMPLER_STEPS =
2**30`` (a release past it, which only an absurdly small epsilon asks for,
is refused from its public scale instead of wrapping), squares are formed
only below ``2**31`` (beyond, in Python integers) and no uniform bound
exceeds ``2**62``. Why not OpenDP (0.16), which ships the same samplers with
proofs: it cannot be seeded (its randomness comes from the operating system
only, and the documented reproducible demo mode needs seeded noise), and its
vector Gaussian on a ``2**k`` grid cost, measured back to back, 0.32 / 1.7 /
17 / 162 ms for 10 / 100 / 1,000 / 10,000 entries where these samplers cost
0.16 / 0.52 / 1.1 / 10 ms (numpy's float normal: 0.003 / 0.003 / 0.015 /
0.12 ms). The tests cross-check these samplers against the exact pmfs and,
when OpenDP is installed, against its samples.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ._memo import memoize
from .exceptions import public_error

__all__ = [
    "Release",
    "Sample",
    "gaussian",
    "laplace",
    "l2_laplace",
    "exponential",
    "objective_perturbation",
    "objective_noise_grid",
    "thresholded_histogram",
    "poisson_sample",
    "allocate_rows",
    "active_tracers",
]

MECHANISMS = (
    "gaussian",
    "laplace",
    "l2_laplace",
    "exponential",
    "objective_perturbation",
    "thresholded_laplace",
)
NORMS = ("l1", "l2", "linf")


@dataclass
class Release:
    """One noisy release, as the gateway saw it.

    Attributes
    ----------
    mechanism : str
        ``"gaussian"``, ``"laplace"``, ``"l2_laplace"``, ``"exponential"``,
        ``"objective_perturbation"`` or ``"thresholded_laplace"``.
    value : ndarray, float or None
        The exact pre-noise quantity (for the exponential mechanism: the
        utility of every candidate).  None where privacy does not come from
        noise on a value (objective perturbation, where the noise enters the
        objective).
    sensitivity : float
        Add/remove-one sensitivity of ``value`` in ``norm``, as declared by
        the caller (for the exponential mechanism: of each utility).
    norm : str
        ``"l1"``, ``"l2"`` or ``"linf"``.
    output : ndarray, float or int
        What the mechanism released (the noisy value, the chosen index, the
        perturbed minimiser).  Under a substituting trace, the release the
        mechanism *would* have made; :attr:`used` is what the caller got.
    scale : float
        Noise scale: the Gaussian standard deviation, the Laplace scale, the
        exponential mechanism's temperature (probabilities proportional to
        ``exp(utility / scale)``), the scale ``t`` of the L2 Laplace density
        ``exp(-||b||_2 / t)``, the scale of objective perturbation's linear
        term (as for its law).
    label : str
        What is released (``"row count"``, ``"gradient sum"``, ...).
    used : ndarray, float or int
        The output handed back to the caller.
    candidates : ndarray or None
        For a thresholded histogram: the key of each entry of ``value`` (the
        keys present in the data, private), so that values of neighbouring
        data sets can be aligned.
    threshold : float or None
        For a thresholded histogram: the public release threshold.
    grid : Grid or None
        The grid the release was rounded to and its noise scale in grid
        steps (objective perturbation: the grid of its linear term); None
        without noise or for mechanisms off the grid.
    """

    mechanism: str
    value: Any
    sensitivity: float
    norm: str
    output: Any
    scale: float
    label: str = ""
    used: Any = None
    candidates: Any = None
    threshold: float | None = None
    grid: Grid | None = None


@dataclass
class Sample:
    """One random draw of private rows (Poisson subsampling or row allocation).

    Attributes
    ----------
    kind : str
        ``"poisson"`` or ``"allocation"``.
    n_rows : int
        The number of rows sampled from (private: visible to tests only).
    parameters : dict
        The public sampling parameters (rate, slot sizes).
    output : ndarray
        The sampled row indices (``"poisson"``) or each row's slot.
    """

    kind: str
    n_rows: int
    parameters: dict
    output: Any


# Compared by identity: removing one of two nested traces must not compare
# their records (arrays).
@dataclass(eq=False)
class _Tracer:
    substitute: Callable | None
    releases: list = field(default_factory=list)
    samples: list = field(default_factory=list)


# Active traces.  A process-wide list (not a context variable): solvers may
# release from joblib threads, which do not inherit context variables.
_TRACERS: list[_Tracer] = []
_TRACERS_LOCK = threading.Lock()


def active_tracers():
    """The traces currently recording (innermost last); empty outside tests."""
    with _TRACERS_LOCK:
        return list(_TRACERS)


def _push(tracer):
    with _TRACERS_LOCK:
        _TRACERS.append(tracer)


def _pop(tracer):
    with _TRACERS_LOCK:
        _TRACERS.remove(tracer)


def _substituting():
    """The innermost trace that substitutes outputs, or None."""
    for tracer in reversed(active_tracers()):
        if tracer.substitute is not None:
            return tracer
    return None


def _check_sensitivity(sensitivity, norm):
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, got {norm!r}.")
    sensitivity = float(sensitivity)
    if not sensitivity >= 0 or math.isnan(sensitivity):
        raise ValueError(f"A release needs a sensitivity >= 0, got {sensitivity!r}.")
    return sensitivity


def _record(mechanism, value, sensitivity, norm, output, scale, label, **extra):
    """Record the release in every active trace; return what the caller gets."""
    tracers = active_tracers()
    if not tracers:
        return output
    release = Release(
        mechanism=mechanism,
        value=_snapshot(value),
        sensitivity=sensitivity,
        norm=norm,
        output=_snapshot(output),
        scale=float(scale),
        label=label,
        **extra,
    )
    used = output
    substituting = _substituting()
    if substituting is not None:
        used = substituting.substitute(release)
        if mechanism == "thresholded_laplace":
            # A set of keys: its size is part of the output.
            used = np.asarray(used, dtype=output.dtype)
        elif isinstance(output, np.ndarray):
            used = np.array(used, dtype=output.dtype, copy=True).reshape(output.shape)
        elif isinstance(output, (int, np.integer)):
            used = int(used)
        else:
            used = float(used)
    release.used = _snapshot(used)
    for tracer in tracers:
        tracer.releases.append(release)
    return used


def _snapshot(value):
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


# --------------------------------------------------------------------------
# Exact samplers on the integers (integer arithmetic only)
# --------------------------------------------------------------------------

#: Grid scales (noise scale in grid steps) stay in ``[2**10, 2**27]``: from
#: below so that the discrete Gaussian's distance to the continuous one (the
#: ``tau`` of the module docstring) is negligible, from above so that every
#: product in the rejection step fits an int64.
MIN_GRID_SCALE = 2**10
MAX_GRID_SCALE = 2**26
#: The Laplace releases' cap: their rounding costs ``m`` steps of L1
#: sensitivity (``sqrt(m)`` for L2), so a release of a million entries at the
#: Gaussian cap would carry up to a quarter more noise; the floored Laplace
#: sampler has no squares and takes scales up to ``MAX_SAMPLER_STEPS``.
MAX_LAPLACE_GRID_SCALE = 2**29
#: Share of the declared sensitivity that the rounding to the grid may add
#: (``sqrt(m) * g`` for an L2 release of ``m`` entries, ``m * g`` for L1).
ROUNDING_SHARE = 2.0**-12
#: Relative margin on every grid scale: covers float rounding in the scale's
#: computation and the discrete Gaussian's ``tau`` (module docstring).
SCALE_MARGIN = 2.0**-30
# Squares of integers below this bound fit an int64.
_SQUARE_SAFE = 2**31
# Largest bound of one uniform integer draw; the words of :class:`_Bits`.
_ONE_DRAW = 2**62
_WORD = 2**62


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
    by fresh ones: exact rejection); a power-of-two ``B`` keeps the low bits.
    """

    def __init__(self, rng, block, keyed=False):
        self.rng = rng
        self._key = None
        if keyed:
            self._key = np.asarray(rng.integers(0, _WORD, size=5), dtype="<i8").tobytes()
        self._counter = 0
        self.block = max(256, int(block))
        self._words = np.empty(0, dtype=np.int64)
        self._position = 0
        self._list = []
        self._list_position = 0

    def _expand(self, size):
        if self._key is None:
            return self.rng.integers(0, _WORD, size=size)
        message = self._key + self._counter.to_bytes(8, "little")
        self._counter += 1
        raw = np.frombuffer(hashlib.shake_256(message).digest(8 * size), dtype="<u8")
        return (raw >> np.uint64(2)).astype(np.int64)

    def _take(self, size):
        out = np.empty(size, dtype=np.int64)
        filled = 0
        while filled < size:
            if self._position >= self._words.size:
                self._words = self._expand(max(self.block, size - filled))
                self._position = 0
            count = min(size - filled, self._words.size - self._position)
            out[filled : filled + count] = self._words[self._position : self._position + count]
            self._position += count
            filled += count
        return out

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
        """One uniform integer on ``[0, bound)`` (a Python integer), ``1 <= bound <= 2**62``."""
        while True:
            if self._list_position >= len(self._list):
                self._list = self._take(256).tolist()
                self._list_position = 0
            word = self._list[self._list_position]
            self._list_position += 1
            if bound & (bound - 1) == 0:
                return word & (bound - 1)
            if word < (_WORD // bound) * bound:
                return word % bound


def _as_bits(rng, size):
    """The word source of one release (a :class:`_Bits` passes through)."""
    if isinstance(rng, _Bits):
        return rng
    # Blocks are topped up as they run out; a chunk of entries (at most
    # _CHUNK) uses some 40 words per entry.
    return _Bits(rng, 8 * min(int(size), _CHUNK) + 64)


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


# Long releases are sampled in chunks of this many entries, which bounds the
# samplers' temporary memory (a few MB) whatever the release's size.
_CHUNK = 1024
# Short releases (a count, one coordinate, a gradient of a few dozen
# entries) are sampled one value at a time in Python integers: the same
# algorithms, without numpy's per-call cost, which made the vectorised path
# about twice as slow below some 40 entries (measured: 0.8 against 1.8 ms
# for 21 entries on a loaded machine; even at 64).
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


def _one_geometric(bits, t):
    while True:
        u = bits.one(t)
        if _one_bernoulli_exp_fraction(bits, u, t):
            break
    v = 0
    while _one_bernoulli_exp_fraction(bits, 1, 1):
        v += 1
    return u + t * v


def _one_discrete_laplace(bits, t):
    while True:
        magnitude = _one_geometric(bits, t)
        negative = bits.one(2) == 1
        if not (negative and magnitude == 0):
            return -magnitude if negative else magnitude


def _one_floored_laplace(bits, t):
    magnitude = _one_geometric(bits, t)
    return -magnitude - 1 if bits.one(2) == 1 else magnitude


def _one_discrete_gaussian(bits, s):
    denominator = 2 * s * s
    while True:
        y = _one_discrete_laplace(bits, s)
        if _one_bernoulli_exp(bits, (abs(y) - s) ** 2, denominator):
            return y


def _scalars(sampler, bits, parameter, size):
    return np.array([sampler(bits, parameter) for _ in range(size)], dtype=np.int64)


def sample_geometric(rng, t, size):
    """``size`` draws of ``P(X = x) = (1 - exp(-1/t)) exp(-x / t)``, x = 0, 1, ... (t a positive integer).

    Canonne, Kamath and Steinke (2020), Algorithm 2 (with s = 1): ``U``
    uniform on ``[0, t)`` kept with probability ``exp(-U / t)``, ``V`` the
    number of Bernoulli(exp(-1)) successes before the first failure, and
    ``X = U + t V``.
    """
    bits = _as_bits(rng, size)
    t = int(t)

    def propose(n):
        draw = bits.uniform(t, n)
        return draw, _bernoulli_exp_fraction(bits, draw, t)

    u = _fill(size, propose, 1.7)
    v = np.zeros(size, dtype=np.int64)
    active = np.arange(size)
    while active.size:
        # Leading successes in rows of 3 coins; a row of 3 successes goes on.
        coins = _bernoulli_exp_fraction(bits, np.ones(active.size * 3, np.int64), 1)
        coins = coins.reshape(active.size, 3)
        leading = np.argmin(coins, axis=1)
        full = np.all(coins, axis=1)
        v[active] += np.where(full, 3, leading)
        active = active[full]
    return u + t * v


def sample_discrete_laplace(rng, t, size):
    """``size`` draws of the discrete Laplace ``P(Y = y) ~ exp(-|y| / t)`` on the integers (t a positive integer).

    Canonne, Kamath and Steinke (2020), Algorithm 2: a geometric magnitude
    and a fair sign, with ``(sign -, 0)`` rejected so that 0 is not counted
    twice.
    """
    bits = _as_bits(rng, size)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_discrete_laplace, bits, int(t), size)

    def propose(n):
        magnitude = sample_geometric(bits, t, n)
        negative = bits.uniform(2, n) == 1
        return np.where(negative, -magnitude, magnitude), ~(negative & (magnitude == 0))

    return _fill(size, propose, 1.0 + 1.0 / t)


def sample_floored_laplace(rng, t, size):
    """``size`` draws of ``floor(L)``, ``L`` continuous Laplace of scale ``t`` (t a positive integer).

    ``floor(L)`` is ``G`` for ``L >= 0`` and ``-(G + 1)`` for ``L < 0``, with
    ``G = floor(|L|)`` geometric (``P(G = x) = (1 - exp(-1/t)) exp(-x/t)``,
    exactly :func:`sample_geometric`) and the sign a fair coin independent of
    it.  Its pmf is proportional to ``exp(-|y + 1/2| / t)``.
    """
    bits = _as_bits(rng, size)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_floored_laplace, bits, int(t), size)
    if size > _CHUNK:
        return _in_chunks(sample_floored_laplace, bits, t, size)
    magnitude = sample_geometric(bits, t, size)
    negative = bits.uniform(2, size) == 1
    return np.where(negative, -magnitude - 1, magnitude)


def _in_chunks(sampler, bits, parameter, size):
    # Chunks bound the temporaries of the vectorised rejection loops.
    return np.concatenate(
        [sampler(bits, parameter, min(_CHUNK, size - start)) for start in range(0, size, _CHUNK)]
    )


def sample_discrete_gaussian(rng, s, size):
    """``size`` draws of the discrete Gaussian ``P(Y = y) ~ exp(-y^2 / (2 s^2))`` (s a positive integer).

    Canonne, Kamath and Steinke (2020), Algorithm 3 with ``t = s``: a
    discrete Laplace ``Y`` of parameter ``s`` kept with probability
    ``exp(-(|Y| - s)^2 / (2 s^2))``, a rational exponent handled by
    :func:`_bernoulli_exp`.  (The algorithm is exact for every positive
    integer ``t``: ``exp(-|y|/t) exp(-(|y| - s^2/t)^2 / (2 s^2))`` is
    ``exp(-y^2 / (2 s^2))`` times a constant.)  Squares are formed in int64
    while ``| |Y| - s | < 2**31``; beyond (probability below ``exp(-2**31 / s)``)
    in Python integers.
    """
    bits = _as_bits(rng, size)
    if size <= _SCALAR_SIZE:
        return _scalars(_one_discrete_gaussian, bits, int(s), size)
    if size > _CHUNK:
        return _in_chunks(sample_discrete_gaussian, bits, s, size)
    s = int(s)
    denominator = 2 * s * s

    def propose(n):
        y = sample_discrete_laplace(bits, s, n)
        offset = np.abs(y) - s
        small = np.abs(offset) < _SQUARE_SAFE
        accept = np.zeros(n, dtype=bool)
        accept[small] = _bernoulli_exp(bits, offset[small] ** 2, denominator)
        for i in np.flatnonzero(~small):
            accept[i] = _bernoulli_exp_big(bits, int(offset[i]) ** 2, denominator)
        return y, accept

    return _fill(size, propose, 1.45)


def _one_half_discrete_gaussian(bits, s):
    # CKS Algorithm 3 without the sign (see _half_discrete_gaussian).
    denominator = 2 * s * s
    while True:
        k = _one_geometric(bits, s)
        if _one_bernoulli_exp(bits, (k - s) ** 2, denominator):
            return k


def _half_discrete_gaussian(bits, s, size):
    """``size`` draws of ``k >= 0`` with ``P(k)`` proportional to ``exp(-k^2 / (2 s^2))``.

    Canonne, Kamath and Steinke (2020), Algorithm 3 without the sign: a
    geometric ``k`` (``P(k) ~ exp(-k / s)``, :func:`sample_geometric`) kept
    with probability ``exp(-(k - s)^2 / (2 s^2))``; the product is
    ``exp(-k^2 / (2 s^2) - 1/2)``.
    """
    if size <= _SCALAR_SIZE:
        return _scalars(_one_half_discrete_gaussian, bits, s, size)
    denominator = 2 * s * s

    def propose(n):
        k = sample_geometric(bits, s, n)
        offset = k - s
        small = np.abs(offset) < _SQUARE_SAFE
        accept = np.zeros(n, dtype=bool)
        accept[small] = _bernoulli_exp(bits, offset[small] ** 2, denominator)
        for i in np.flatnonzero(~small):
            accept[i] = _bernoulli_exp_big(bits, int(offset[i]) ** 2, denominator)
        return k, accept

    return _fill(size, propose, 1.45)


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
    bits = _as_bits(rng, size)
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
    bits = _as_bits(rng, size)
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


# --------------------------------------------------------------------------
# Grids
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Grid:
    """Where a release lives: the grid ``2**exponent`` and the noise scale in grid steps.

    Attributes
    ----------
    exponent : int
        The grid spacing is ``2**exponent``.
    scale : int
        The noise scale in grid steps: the discrete Gaussian's ``sigma``, the
        Laplace scale, the exponential mechanism's temperature.
    """

    exponent: int
    scale: int

    @property
    def spacing(self):
        """The grid spacing ``2**exponent`` (a float, exact)."""
        return math.ldexp(1.0, self.exponent)


def _floor_log2(x):
    mantissa, exponent = math.frexp(x)
    return exponent - 1


def _ceil_log2(x):
    mantissa, exponent = math.frexp(x)
    return exponent - 1 if mantissa == 0.5 else exponent


def _sqrt_upper(m):
    """A rational upper bound on ``sqrt(m)`` (exact to 2**-20)."""
    return Fraction(math.isqrt(m * 4**20) + 1, 2**20)


@memoize(maxsize=1024)
def _grid(scale, sensitivity, rounding_size, inflation_size, max_grid_scale=MAX_GRID_SCALE):
    """The grid of a release of noise ``scale`` and declared ``sensitivity`` (public inputs only).

    The spacing ``g = 2**k`` is the largest power of two with ``g <= scale /
    MIN_GRID_SCALE`` and ``rounding_size * g <= ROUNDING_SHARE * sensitivity``
    (the rounding adds at most ``rounding_size * g`` to the sensitivity),
    unless that would put more than ``max_grid_scale`` steps in ``scale``,
    where the coarser grid wins (the rounding is still in the scale below).
    The scale in steps is the least integer with ``scale_steps >=
    (scale / sensitivity) * (sensitivity / g + inflation_size)``, computed in
    exact rationals (times ``1 + SCALE_MARGIN``): the rounded value's
    sensitivity in steps is at most ``sensitivity / g + inflation_size``, so
    the ratio of noise to sensitivity that the accounting recorded still
    holds.  A zero sensitivity (a value that does not depend on the data)
    needs no inflation.
    """
    if not _SCALE_RANGE[0] <= scale <= _SCALE_RANGE[1]:
        raise ValueError(
            f"A noise scale of {scale!r} is outside what the exact samplers handle "
            f"([{_SCALE_RANGE[0]:g}, {_SCALE_RANGE[1]:g}]): rescale the data bounds."
        )
    bound = scale / MIN_GRID_SCALE
    if sensitivity > 0 and rounding_size > 0:
        bound = min(bound, ROUNDING_SHARE * sensitivity / rounding_size)
    exponent = max(_floor_log2(bound), _ceil_log2(scale / max_grid_scale))
    required = Fraction(scale) / Fraction(2) ** exponent
    if sensitivity > 0:
        required += Fraction(scale) / Fraction(sensitivity) * inflation_size
    steps = math.ceil(required * (1 + Fraction(SCALE_MARGIN)))
    if steps > MAX_SAMPLER_STEPS:
        # Beyond it the int64 samplers would wrap or loop; a function of public
        # inputs and released values only, so refusing here reveals nothing
        # (marked public: a fit shows it as it is, and keeps its charge).
        raise public_error(
            ValueError(
                f"This release's noise is {steps} grid steps, beyond the exact samplers' range "
                f"(2**{MAX_SAMPLER_STEPS.bit_length() - 1}): its noise is about "
                f"{scale / sensitivity if sensitivity > 0 else math.inf:.3g} times its sensitivity "
                f"over {inflation_size} entries, so epsilon is far too small to learn anything. "
                "Ask for a larger epsilon."
            )
        )
    return Grid(exponent, max(1, steps))


#: The most grid steps a release's noise scale may take: the vectorised
#: samplers square scales in int64 (the discrete Gaussian's ``2 s^2`` must stay
#: below ``2**62``) and scale geometric draws by them.
MAX_SAMPLER_STEPS = 2**30
# Below it, scale / MAX_GRID_SCALE underflows and the grid would be meaningless.
_SCALE_RANGE = (2.0**-1040, math.inf)


def gaussian_grid(noise_std, sensitivity, size):
    """Grid of a Gaussian release of ``size`` entries (L2 ``sensitivity``).

    Rounding each of ``m = size`` entries to the grid moves two neighbouring
    values apart by at most one step per entry, so the L2 sensitivity in
    steps is at most ``sensitivity / g + sqrt(m)``.

    Parameters
    ----------
    noise_std : float
        The calibrated standard deviation (> 0).
    sensitivity : float
        Declared L2 sensitivity.
    size : int
        Number of entries released.

    Returns
    -------
    Grid
    """
    return _grid(float(noise_std), float(sensitivity), math.sqrt(size), _sqrt_upper(int(size)))


def laplace_grid(scale, sensitivity, size):
    """Grid of a Laplace release of ``size`` entries (L1 ``sensitivity``).

    The L1 sensitivity in steps is at most ``sensitivity / g + m``.

    Parameters
    ----------
    scale : float
        The calibrated Laplace scale (> 0).
    sensitivity : float
        Declared L1 sensitivity.
    size : int
        Number of entries released.

    Returns
    -------
    Grid
    """
    return _grid(
        float(scale), float(sensitivity), float(size), Fraction(int(size)), MAX_LAPLACE_GRID_SCALE
    )


def _rounded(array, grid):
    """``rint(array / g)`` as floats (exact: scaling by a power of two and rint are exact)."""
    return np.asarray(np.rint(np.ldexp(array, -grid.exponent)), dtype=float)


def _released(steps, noise, grid, offset=0.0):
    """``g * (steps + noise + offset)`` as float64, rounded once from the exact sum.

    ``steps`` is a fresh float array of integers (``rint(value / g)``, exact;
    overwritten with the result) and ``noise`` a fresh integer array (used
    as scratch).  The sum is formed in integers (int64, or Python integers
    beyond ``2**61``) and converted to float64 once, so the output is a
    function of the exact integer ``steps + noise`` alone: that integer
    (below ``2**53``) or its correct rounding, a post-processing of the
    exact release.  (A float addition would round the noise first and the
    sum again: two different exact sums could then meet in one output.)
    ``offset`` is 0 or 1/2; with 1/2 the odd integer ``2 (steps + noise) +
    1`` is converted and scaled by ``g / 2``.  A non-finite entry of
    ``steps`` (a diverged public iterate upstream) stays non-finite, as a
    float addition would leave it.
    """
    steps = np.asarray(steps, dtype=float)
    noise = np.asarray(noise).reshape(steps.shape)
    half = bool(offset)
    finite = np.isfinite(steps)
    all_finite = bool(finite.all())
    if not all_finite:
        original = steps
        steps = np.where(finite, steps, 0.0)
    small = (
        noise.dtype == np.int64
        and (steps.size == 0 or float(np.max(np.abs(steps))) < 2.0**61)
        and (noise.size == 0 or int(np.max(np.abs(noise))) < 2**61)
    )
    if small:
        total = noise
        total += steps.astype(np.int64)
        if half:
            total *= 2
            total += 1
        steps[...] = total  # int64 to float64: one correct rounding
        output = steps
    else:
        exact = [int(a) + int(b) for a, b in zip(steps.ravel().tolist(), noise.ravel().tolist())]
        if half:
            exact = [2 * v + 1 for v in exact]
        output = np.array([float(v) for v in exact], dtype=float).reshape(steps.shape)
    output = np.ldexp(output, grid.exponent - 1 if half else grid.exponent, out=output)
    if not all_finite:
        output[~finite] = original[~finite]
    return output


# --------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------


def gaussian(value, *, sensitivity, noise_std, rng, label="", norm="l2"):
    """``value`` rounded to a grid plus exact discrete Gaussian noise on it (the Gaussian mechanism).

    The release is ``g * (rint(value / g) + Z)``, ``Z`` discrete Gaussian of
    parameter ``s`` per entry, with the grid ``g`` and ``s`` from
    :func:`gaussian_grid`: ``s / (sensitivity / g + sqrt(m)) >= noise_std /
    sensitivity``, so the calibrated noise multiplier holds for the rounded
    value (module docstring).

    Parameters
    ----------
    value : float or ndarray
        The exact quantity.  Its add/remove-one sensitivity in ``norm`` must
        be at most ``sensitivity``.
    sensitivity : float
        Declared sensitivity (L2 for the Gaussian mechanism's calibration).
    noise_std : float
        Standard deviation of the noise (``noise_multiplier * sensitivity``
        as calibrated by the solver's plan); 0 releases ``value`` as it is
        (epsilon = inf).
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.
    norm : str, default="l2"
        The norm of ``sensitivity``.

    Returns
    -------
    float or ndarray
        The noisy value (a new array), on the grid.
    """
    sensitivity = _check_sensitivity(sensitivity, norm)
    noise_std = float(noise_std)
    array = np.asarray(value, dtype=float)
    grid = None
    if noise_std > 0:
        grid = gaussian_grid(noise_std, sensitivity, array.size)
        noise = sample_discrete_gaussian(rng, grid.scale, array.size)
        noisy = _released(_rounded(array, grid), noise, grid)
    else:
        noisy = array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("gaussian", value, sensitivity, norm, output, noise_std, label, grid=grid)


def laplace(value, *, sensitivity, scale, rng, label=""):
    """``value`` rounded to a grid plus exact (floored) Laplace noise on it (L1 sensitivity).

    The release is ``g * (rint(value / g) + floor(L) + 1/2)`` per entry,
    ``L`` continuous Laplace of scale ``t`` grid steps, with ``g`` and ``t``
    from :func:`laplace_grid`; ``floor(L)`` is sampled exactly with integer
    arithmetic (:func:`sample_floored_laplace`).  It is a post-processing of
    the continuous Laplace mechanism on the rounded value, whose scale to
    sensitivity ratio is at least ``scale / sensitivity``: pure
    ``sensitivity / scale``-DP, and dominated by the continuous Laplace
    mechanism that the accounting records (module docstring).  ``scale = 0``
    releases the value as it is.

    Parameters
    ----------
    value : float or ndarray
        The exact quantity (L1 sensitivity at most ``sensitivity``).
    sensitivity : float
        Declared L1 sensitivity.
    scale : float
        Laplace scale (``sensitivity / epsilon`` for epsilon-DP).
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.

    Returns
    -------
    float or ndarray
        The noisy value (a new array), on the grid shifted by half a step.
    """
    sensitivity = _check_sensitivity(sensitivity, "l1")
    scale = float(scale)
    array = np.asarray(value, dtype=float)
    grid = None
    if scale > 0:
        grid = laplace_grid(scale, sensitivity, array.size)
        noise = sample_floored_laplace(rng, grid.scale, array.size)
        noisy = _released(_rounded(array, grid), noise, grid, 0.5)
    else:
        noisy = array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("laplace", value, sensitivity, "l1", output, scale, label, grid=grid)


def l2_laplace(value, *, sensitivity, scale, rng, label=""):
    """``value`` rounded to a grid plus exact noise of density ``~ exp(-||b||_2 / scale)`` on it.

    The K-norm mechanism for the L2 ball (the "Gamma-norm" noise of
    Chaudhuri, Monteleoni and Sarwate 2011): with ``||value(D) -
    value(D')||_2 <= sensitivity``, ``scale = sensitivity / epsilon`` is pure
    epsilon-DP.  The release is ``g * (rint(value / g) + floor(X) + 1/2)``
    with ``g`` and the scale ``t`` of ``X`` in steps from
    :func:`gaussian_grid` (the rounded value moves by at most ``sensitivity
    / g + sqrt(m)`` steps in L2, and ``t`` covers it), ``X`` of density
    ``~ exp(-||x||_2 / t)`` and ``floor(X)`` sampled exactly
    (:func:`sample_floored_l2_laplace`).  ``rint(value / g) + floor(X) =
    floor(rint(value / g) + X)``: a post-processing of the continuous
    mechanism on the rounded value, whose density ratio at any point is at
    most ``exp((sensitivity / g + sqrt(m)) / t) <= exp(sensitivity /
    scale)``.  Exact.  ``scale = 0`` releases the value as it is.

    Parameters
    ----------
    value : float or ndarray
        The exact quantity (L2 sensitivity at most ``sensitivity``).
    sensitivity : float
        Declared L2 sensitivity.
    scale : float
        Scale of the density (``sensitivity / epsilon`` for epsilon-DP).
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.

    Returns
    -------
    float or ndarray
        The noisy value (a new array), on the grid shifted by half a step.
    """
    sensitivity = _check_sensitivity(sensitivity, "l2")
    scale = float(scale)
    array = np.asarray(value, dtype=float)
    grid = None
    if scale > 0:
        grid = gaussian_grid(scale, sensitivity, array.size)
        noise = sample_floored_l2_laplace(rng, grid.scale, array.size)
        noisy = _released(_rounded(array, grid), noise, grid, 0.5)
    else:
        noisy = array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("l2_laplace", value, sensitivity, "l2", output, scale, label, grid=grid)


def exponential_grid(scale, sensitivity):
    """Grid of the exponential mechanism: utilities in steps and the temperature in steps.

    Each rounded utility moves by at most ``sensitivity / g + 1`` steps, so
    the temperature in steps ``T >= scale / g + scale / sensitivity`` keeps
    ``(sensitivity / g + 1) / T <= sensitivity / scale``.

    Parameters
    ----------
    scale : float
        Temperature (> 0).
    sensitivity : float
        Declared sensitivity of each utility.

    Returns
    -------
    Grid
    """
    return _grid(float(scale), float(sensitivity), 1.0, Fraction(1))


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


def exponential(utilities, *, sensitivity, scale, rng, label=""):
    """Index ``i`` drawn with probability proportional to ``exp(utilities[i] / scale)``, exactly.

    The exponential mechanism: with each utility of add/remove-one
    sensitivity at most ``sensitivity``, ``scale = 2 * sensitivity /
    epsilon`` is epsilon-DP (``sensitivity / epsilon`` for monotone
    utilities) and epsilon-bounded-range (epsilon^2 / 8-zCDP).  The
    utilities are rounded to the grid of :func:`exponential_grid` and the
    index is drawn exactly from the Gibbs distribution of the rounded
    utilities at temperature ``T`` steps (:func:`_sample_gibbs`); the
    rounding is in ``T`` (rounding is monotone, so monotone utilities stay
    monotone).  ``scale=0`` returns the argmax (no privacy).

    Parameters
    ----------
    utilities : ndarray
        Utility of every candidate (finite).
    sensitivity : float
        Declared sensitivity of each utility.
    scale : float
        Temperature.
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.

    Returns
    -------
    int
        The chosen index.
    """
    sensitivity = _check_sensitivity(sensitivity, "linf")
    scale = float(scale)
    utilities = np.asarray(utilities, dtype=float)
    grid = None
    if scale > 0:
        if np.any(np.isnan(utilities) | (utilities == np.inf)):
            raise ValueError("The exponential mechanism needs utilities that are finite or -inf.")
        # A utility of -inf is a candidate of probability 0.
        candidates = np.flatnonzero(utilities > -np.inf)
        if candidates.size == 0:
            candidates = np.zeros(1, dtype=np.intp)
            utilities = np.zeros_like(utilities)
        grid = exponential_grid(scale, sensitivity)
        steps = _rounded(utilities[candidates], grid)
        if np.all(np.abs(steps) < 2.0**61):
            steps = steps.astype(np.int64)
            gaps = steps.max() - steps
        else:
            exact = [int(x) for x in steps]
            top = max(exact)
            gaps = np.array([top - x for x in exact], dtype=object)
        bits = _Bits(rng, 64 * gaps.size, keyed=True)
        index = int(candidates[_sample_gibbs(bits, gaps, grid.scale)])
    else:
        index = int(np.argmax(utilities))
    return _record("exponential", utilities, sensitivity, "linf", index, scale, label, grid=grid)


def objective_noise_grid(scale, size, coupling):
    """Grid of objective perturbation's linear term and its scale in grid steps (public inputs only).

    The spacing ``g = 2**k`` is the largest power of two with ``sqrt(m) g
    <= coupling`` (``m = size``: the rounded term is then within ``coupling
    / 2`` of the exact one in L2) and ``g <= scale / MIN_GRID_SCALE``,
    unless that would put more than ``MAX_GRID_SCALE`` steps in ``scale``,
    where the coarser grid wins (the caller pays ``sqrt(m) g`` whatever it
    is).  The scale in steps is the least integer ``>= scale / g`` (times
    ``1 + SCALE_MARGIN``, in exact rationals): the noise is at least as
    large as asked.

    Parameters
    ----------
    scale : float
        The noise scale asked for (> 0): the Laplace scale per entry or the
        Gaussian standard deviation.
    size : int
        Number of entries ``m``.
    coupling : float
        The most ``sqrt(m) g`` may be (> 0).

    Returns
    -------
    Grid
    """
    return _objective_grid(float(scale), int(size), float(coupling))


@memoize(maxsize=256)
def _objective_grid(scale, size, coupling):
    if not (_SCALE_RANGE[0] <= scale < math.inf and coupling > 0 and size >= 1):
        raise ValueError(
            f"The objective noise needs a finite scale >= {_SCALE_RANGE[0]:g} and a positive "
            f"coupling bound, got scale={scale!r}, coupling={coupling!r}: rescale the data bounds."
        )
    bound = min(scale / MIN_GRID_SCALE, coupling / math.sqrt(size))
    cap = _ceil_log2(scale / MAX_GRID_SCALE)
    # A bound that underflows to 0 asks for the finest grid: the cap's.
    exponent = cap if bound == 0.0 else max(_floor_log2(bound), cap)
    steps = math.ceil(Fraction(scale) / Fraction(2) ** exponent * (1 + Fraction(SCALE_MARGIN)))
    return Grid(exponent, max(1, steps))


#: The noise laws of objective perturbation's linear term.
OBJECTIVE_NOISES = ("l2_laplace", "gaussian")


def objective_perturbation(solve, *, shape, noise, scale, coupling, sensitivity, rng, label=""):
    """Release ``solve(b)``, the minimiser of an objective perturbed by a linear term ``b``.

    ``b`` is the rounding ``g * (floor(N / g) + 1/2)`` of an exact
    continuous noise vector ``N``, entry by entry, on the grid ``g`` of
    :func:`objective_noise_grid`: ``N`` has the density ``~ exp(-||n||_2 /
    (t g))`` (``noise="l2_laplace"``) or i.i.d. Gaussian entries of standard
    deviation ``t g`` (``"gaussian"``), ``t`` the scale in steps (``t g >=
    scale``), and ``floor(N / g)`` is sampled exactly
    (:func:`sample_floored_l2_laplace`, :func:`sample_rounded_gaussian`).
    So ``b`` is a deterministic function of ``N`` with ``||b - N||_inf <= g
    / 2`` and ``||b - N||_2 <= sqrt(m) g / 2 <= coupling / 2``: the solver
    covers that distance in its residual release
    (docs/solvers/perturbation.md, "Exact noise").  In float64 ``b`` is
    exactly ``g * (floor(N / g) + 1/2)`` while ``|floor(N / g)| < 2**52``:
    with ``t <= 2**26 + 1`` that fails only if ``||N|| / (t g)`` (Gamma(m,
    1) for the L2 Laplace) or a Gaussian entry over ``t g`` exceeds
    ``2**25``, with probability below ``exp(m - 2**24)``.

    Privacy comes from the noise entering the objective, not from noise on
    a value, so the trace records ``value=None``; ``sensitivity`` is the
    declared per-sample gradient bound (L2) the calibration used.

    Parameters
    ----------
    solve : callable
        ``solve(b) -> minimiser``: runs on the private data.
    shape : tuple of int
        Shape of ``b``.
    noise : {"l2_laplace", "gaussian"}
        The law of ``N``.
    scale : float
        The scale of the L2 Laplace density, or the Gaussian standard
        deviation; 0 draws ``b = 0`` (epsilon = inf).
    coupling : float
        Bound on ``sqrt(m) g``, passed to :func:`objective_noise_grid`.
    sensitivity : float
        Declared per-sample gradient bound ``G`` (L2).
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.

    Returns
    -------
    ndarray
        ``solve(b)``.
    """
    if noise not in OBJECTIVE_NOISES:
        raise ValueError(f"noise must be one of {OBJECTIVE_NOISES}, got {noise!r}.")
    sensitivity = _check_sensitivity(sensitivity, "l2")
    scale = float(scale)
    size = math.prod(shape)
    grid = None
    if scale > 0:
        grid = objective_noise_grid(scale, size, coupling)
        sampler = sample_floored_l2_laplace if noise == "l2_laplace" else sample_rounded_gaussian
        steps = sampler(rng, grid.scale, size)
        b = _released(np.zeros(size), steps, grid, 0.5).reshape(shape)
    else:
        b = np.zeros(shape)
    output = solve(b)
    return _record(
        "objective_perturbation", None, sensitivity, "l2", output, scale, label, grid=grid
    )


def histogram_cutoff(scale, threshold):
    """Grid and integer cutoff of :func:`thresholded_histogram` (public inputs only).

    The counts are integers and the grid ``g = 2**k`` (``k <= 0``) divides
    1, so ``count / g`` is an exact integer of sensitivity ``1 / g``; the
    noise is ``floor(L)``, ``L`` continuous Laplace of ``t >= scale / g``
    steps (epsilon at most ``1 / scale``).  A key is released when
    ``count / g + floor(L) > cutoff``.  A key held by the added row alone
    (count 1) is then released with probability ``P(L >= cutoff + 1 - 1/g)
    = exp(-(cutoff + 1 - 1/g) / t) / 2``, at most ``exp(-(threshold - 1) /
    scale) / 2`` (the stated delta) when ``cutoff >= t (threshold - 1) /
    scale + 1/g - 1``: the least such integer, in exact rationals.

    Parameters
    ----------
    scale : float
        Laplace scale (> 0).
    threshold : float
        Public release threshold (> 1).

    Returns
    -------
    grid : Grid
    cutoff : int
    """
    scale = float(scale)
    exponent = min(0, _floor_log2(scale / MIN_GRID_SCALE))
    inverse = 2 ** (-exponent)
    steps = math.ceil(Fraction(scale) * inverse * (1 + Fraction(SCALE_MARGIN)))
    cutoff = math.ceil(Fraction(steps) * (Fraction(threshold) - 1) / Fraction(scale)) + inverse - 1
    return Grid(exponent, steps), cutoff


def thresholded_histogram(keys, counts, *, scale, threshold, rng, label=""):
    """The keys whose count plus Laplace noise exceeds ``threshold``, sorted.

    A stability-based histogram (Korolova, Kenthapadi, Mishra and Ntoulas
    2009; Bun, Nissim and Stemmer 2016): only keys present in the data are
    candidates, so the key set itself is private.  Under add/remove-one
    neighbouring one row changes one count by 1: on keys present in both data
    sets that is the Laplace mechanism (``1 / scale``-DP); a key held by the
    added row alone is released with probability at most
    ``exp(-(threshold - 1) / scale) / 2``, the delta.  The noise is exact
    on a grid that divides the integer counts (:func:`histogram_cutoff`).

    Parameters
    ----------
    keys : ndarray
        The distinct keys present (private).
    counts : ndarray
        How many rows hold each key.
    scale : float
        Laplace scale (0: release every key, no privacy).
    threshold : float
        Public release threshold.
    rng : numpy.random.Generator
        Source of random integers (only ``rng.integers`` is called).
    label : str
        What is released, for traces.

    Returns
    -------
    ndarray
        The released keys, sorted (same dtype as ``keys``).
    """
    keys = np.asarray(keys)
    counts = np.asarray(counts, dtype=float)
    if scale > 0:
        grid, cutoff = histogram_cutoff(scale, threshold)
        noise = sample_floored_laplace(
            _Bits(rng, 64 * counts.size, keyed=True), grid.scale, counts.size
        )
        steps = [int(c) * 2 ** (-grid.exponent) + int(z) for c, z in zip(counts, noise)]
        released = np.sort(keys[np.array([s > cutoff for s in steps], dtype=bool)])
    else:
        released = np.sort(keys)
    return _record(
        "thresholded_laplace",
        counts,
        1.0,
        "l1",
        released,
        scale,
        label,
        candidates=keys.copy(),
        threshold=float(threshold),
    )


# --------------------------------------------------------------------------
# Samplers of private rows
# --------------------------------------------------------------------------


def _record_sample(kind, n_rows, parameters, output):
    for tracer in active_tracers():
        tracer.samples.append(Sample(kind, int(n_rows), dict(parameters), _snapshot(output)))


def poisson_sample(n_rows, rate, rng):
    """Sorted indices of a Poisson sample of ``range(n_rows)`` at ``rate``.

    Draws the size (Binomial(n_rows, rate)), then the rows: the same
    distribution as one coin per row, at the cost of one draw plus the batch.

    Under a substituting trace every row is sampled: the coupling under
    which a sampled release's sensitivity is stated (the added row is in the
    batch), and a draw that consumes no randomness, so that the rest of the
    fit is the same on neighbouring data sets.
    """
    rate = float(rate)
    if _substituting() is not None:
        batch = np.arange(n_rows)
    elif rate >= 1.0:
        batch = np.arange(n_rows)
    else:
        size = rng.binomial(n_rows, rate)
        batch = np.sort(rng.choice(n_rows, size=size, replace=False))
    _record_sample("poisson", n_rows, {"rate": rate}, batch)
    return batch


def allocate_rows(n_rows, probabilities, rng):
    """Slot of each row, drawn independently with ``probabilities`` (public).

    Each row draws its own slot, so adding or removing a row leaves the
    other rows' slots unchanged (their draws come first, in row order).
    """
    probabilities = np.asarray(probabilities, dtype=float)
    slots = rng.choice(len(probabilities), size=int(n_rows), p=probabilities)
    _record_sample("allocation", n_rows, {"probabilities": probabilities.copy()}, slots)
    return slots
