"""Grids of the noise gateway: where each release is rounded, and its noise scale in grid steps.

Every Gaussian, Laplace, L2 Laplace and exponential release of
:mod:`sklearn_dp._noise` rounds its value to a grid ``g = 2**k`` and adds
integer noise of a scale counted in grid steps; objective perturbation's
linear term and the thresholded histogram have grids of their own.  The
functions here choose ``k`` and the scale in steps from public inputs only
(the noise scale, the declared sensitivity, the number of entries), in exact
rationals, so that the noise to sensitivity ratio the accounting recorded
still holds once the rounding is added to the sensitivity; :func:`_rounded`
and :func:`_released` put a value on its grid and add the noise to it in
exact integer arithmetic.  The grid and the rounding in the scale: the
module docstring of :mod:`sklearn_dp._noise`.

Each law, on its grid
---------------------
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
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ._exact_sampling import MAX_SAMPLER_STEPS
from ._memo import memoize
from ._public_errors import public_error

__all__ = [
    "Grid",
    "MIN_GRID_SCALE",
    "MAX_GRID_SCALE",
    "MAX_LAPLACE_GRID_SCALE",
    "ROUNDING_SHARE",
    "SCALE_MARGIN",
    "gaussian_grid",
    "laplace_grid",
    "exponential_grid",
    "objective_noise_grid",
    "histogram_cutoff",
]

#: Grid scales (noise scale in grid steps) stay in ``[2**10, 2**27]``: from
#: below so that the discrete Gaussian's distance to the continuous one (the
#: ``tau`` of :mod:`sklearn_dp._noise`'s docstring) is negligible, from above
#: so that every product in the rejection step fits an int64.
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
#: computation and the discrete Gaussian's ``tau`` (:mod:`sklearn_dp._noise`'s
#: docstring).
SCALE_MARGIN = 2.0**-30


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
