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

The unit of privacy
-------------------
Callers declare row-level sensitivities.  In a fit with ``groups=`` (one
group of at most ``k`` rows is the unit) the gateway multiplies every
release's sensitivity and noise scale by ``k`` (:func:`contribution_bound`),
thresholds the label histogram for ``k`` new keys, and refuses the row
samplers and objective perturbation, whose analyses are per row; traces
record the group-level sensitivity.

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
* **Each law.**  Why the discrete noise of each release (Gaussian,
  Laplace, exponential mechanism, thresholded histogram, L2 Laplace,
  objective perturbation's linear term) is exactly the mechanism the
  accounting records: the module docstring of :mod:`sklearn_dp._noise_grids`.

Samplers and grids live in two private modules that only this one calls:
:mod:`sklearn_dp._exact_sampling` (the exact integer samplers, and why
they are written here rather than taken from OpenDP) and
:mod:`sklearn_dp._noise_grids` (the grid and the noise scale in steps of each
release, and the exact arithmetic that puts a value on its grid and adds the
noise).  The release functions, and the traces that record them, are here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._exact_sampling import (
    _Bits,
    _sample_gibbs,
    sample_discrete_gaussian,
    sample_floored_l2_laplace,
    sample_floored_laplace,
    sample_rounded_gaussian,
)
from ._noise_grids import (
    Grid,
    _released,
    _rounded,
    exponential_grid,
    gaussian_grid,
    histogram_cutoff,
    laplace_grid,
    objective_noise_grid,
)

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
    "contribution_bound",
    "fit_rows",
    "group_rows",
    "released_rows",
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
        the caller (for the exponential mechanism: of each utility), times
        the group bound ``k`` in a fit with ``groups=`` (the unit's
        sensitivity).
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
    released_counts : ndarray or None
        For a thresholded histogram that also releases the noisy counts of
        its released keys (``with_counts=True``): those counts, aligned with
        :attr:`output`; under a substituting trace the substitute returns
        ``(keys, counts)``, and the counts the caller got are
        :attr:`used_counts`.
    used_counts : ndarray or None
        The noisy counts handed back to the caller with :attr:`used`.
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
    released_counts: Any = None
    used_counts: Any = None
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


# -- the unit of privacy ------------------------------------------------------
#
# A fit with ``groups=`` protects one group of at most ``k`` rows instead of
# one row.  Every release of this module declares its add/remove-one-row
# sensitivity ``S`` (a bound over all data sets); adding a group is ``k``
# row additions in a row, so by the triangle inequality the release moves
# by at most ``k S``.  While a group-level fit runs, the gateway multiplies
# each release's sensitivity *and* its noise scale by ``k``: the ratio of
# noise to sensitivity, which is what the fit's DpEvent records, is
# unchanged, so the same event holds with one group as the unit.  This is
# the one place where the unit enters the fit's sensitivities.
#
# A process-wide list, like the traces (solvers release from joblib threads,
# which do not inherit context variables); while several fits run at once,
# every release uses the largest active ``k``: a row-level fit running at the
# same time gets more noise than it needs, never a group-level fit less.
#
# Refusals (row-level samplers) and the label set's threshold read the unit
# of the fit running in the calling thread instead (:func:`fit_rows`): a
# row-level fit must not fail, after its charge, because a group-level fit
# runs in another thread.  Phases nest by taking the larger ``k`` (a fit
# inside a group-level fit protects the group); a thread that runs no phase
# of its own (a joblib worker of a solver) falls back to the largest active
# ``k``, which is never less than the unit of the fit it works for.

_UNITS: list[int] = []
_UNITS_LOCK = threading.Lock()
_THREAD_UNIT = threading.local()


class contribution_bound:
    """Context manager: releases inside protect one group of at most ``max_rows`` rows.

    ``max_rows=None`` (or 1) is the row-level unit and changes nothing.
    """

    def __init__(self, max_rows):
        self.max_rows = 1 if max_rows is None else int(max_rows)
        if self.max_rows < 1:
            raise ValueError(f"max_rows must be at least 1, got {max_rows!r}.")

    def __enter__(self):
        with _UNITS_LOCK:
            _UNITS.append(self.max_rows)
        stack = _THREAD_UNIT.__dict__.setdefault("stack", [])
        stack.append(max(self.max_rows, stack[-1] if stack else 1))
        return self

    def __exit__(self, *exc_info):
        _THREAD_UNIT.stack.pop()
        with _UNITS_LOCK:
            _UNITS.remove(self.max_rows)
        return False


def group_rows():
    """The largest number of rows one unit of privacy holds in the active fits (1: rows)."""
    with _UNITS_LOCK:
        return max(_UNITS, default=1)


def fit_rows():
    """The rows of one unit of privacy of the fit running in this thread.

    The innermost :class:`contribution_bound` entered by this thread (the
    largest ``k`` of the nested ones); without one, :func:`group_rows`.
    """
    stack = getattr(_THREAD_UNIT, "stack", None)
    return stack[-1] if stack else group_rows()


def released_rows():
    """The multiplier (rows per unit) that this thread's last grid release applied.

    Public computations that use a release's noise scale (a confidence
    margin, a ridge sized to the noise) multiply the planned scale by it:
    the scale actually added.  1 before any release.
    """
    return getattr(_THREAD_UNIT, "released", 1)


def _refuse_group_level(what):
    """Row-level mechanisms that a group bound does not cover: refused under a group unit."""
    if fit_rows() > 1:
        raise RuntimeError(
            f"{what} has no group-level analysis here; it cannot run in a fit with groups= "
            "(the fit should have refused this solver before its spend)."
        )


def _record(mechanism, value, sensitivity, norm, output, scale, label, **extra):
    """Record the release in every active trace; return what the caller gets."""
    tracers = active_tracers()
    if not tracers:
        counts = extra.get("released_counts")
        return output if counts is None else (output, counts)
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
    counted = release.released_counts is not None
    used_counts = release.released_counts
    substituting = _substituting()
    if substituting is not None:
        used = substituting.substitute(release)
        if counted:
            # Keys and their counts; a substitute that gives keys alone
            # gets counts of 0 (data-independent too).
            if isinstance(used, tuple):
                used, used_counts = used
            else:
                used_counts = np.zeros(np.size(used))
            used_counts = np.asarray(used_counts, dtype=np.float64).copy()
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
    release.used_counts = _snapshot(used_counts)
    for tracer in tracers:
        tracer.releases.append(release)
    return (used, used_counts) if counted else used


def _snapshot(value):
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        return value.copy()
    return value


# --------------------------------------------------------------------------
# Mechanisms
# --------------------------------------------------------------------------


def _grid_release(mechanism, value, sensitivity, norm, scale, rng, label, law):
    """The body shared by :func:`gaussian`, :func:`laplace` and :func:`l2_laplace`.

    ``law`` is ``(grid_of, sampler, offset)``: ``value`` is rounded to the
    grid ``grid_of(scale, sensitivity, m)`` (``m`` entries), ``m`` integers
    ``sampler(rng, grid.scale, m)`` are drawn and the release is ``g *
    (rint(value / g) + noise + offset)``, rounded once from the exact integer
    sum (:func:`_released`); ``scale = 0`` releases a copy of the value as it
    is.  The release is recorded in the active traces, which may substitute
    what the caller gets.
    """
    grid_of, sampler, offset = law
    rows = group_rows()
    _THREAD_UNIT.released = rows
    sensitivity = rows * _check_sensitivity(sensitivity, norm)
    scale = rows * float(scale)
    array = np.asarray(value, dtype=float)
    grid = None
    if scale > 0:
        grid = grid_of(scale, sensitivity, array.size)
        noise = sampler(rng, grid.scale, array.size)
        noisy = _released(_rounded(array, grid), noise, grid, offset)
    else:
        noisy = array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record(mechanism, value, sensitivity, norm, output, scale, label, grid=grid)


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
    law = (gaussian_grid, sample_discrete_gaussian, 0.0)
    return _grid_release("gaussian", value, sensitivity, norm, noise_std, rng, label, law)


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
    law = (laplace_grid, sample_floored_laplace, 0.5)
    return _grid_release("laplace", value, sensitivity, "l1", scale, rng, label, law)


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
    law = (gaussian_grid, sample_floored_l2_laplace, 0.5)
    return _grid_release("l2_laplace", value, sensitivity, "l2", scale, rng, label, law)


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
    rows = group_rows()
    sensitivity = rows * _check_sensitivity(sensitivity, "linf")
    scale = rows * float(scale)
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
    _refuse_group_level("Objective perturbation")
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


def thresholded_histogram(keys, counts, *, scale, threshold, rng, label="", with_counts=False):
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
    with_counts : bool, default=False
        Also release the noisy count of each released key (the same
        mechanism's output: the keys are chosen by their noisy counts, so the
        pair is the (epsilon, delta) above).

    Returns
    -------
    ndarray, or (ndarray, ndarray) with ``with_counts``
        The released keys, sorted (same dtype as ``keys``); with
        ``with_counts``, also their noisy counts (floats on the grid).
    """
    keys = np.asarray(keys)
    counts = np.asarray(counts, dtype=float)
    # Scale and threshold from the same unit: this fit's own (see fit_rows).
    rows = fit_rows()
    if rows > 1 and scale > 0:
        # One group moves the counts by at most k in L1 (Laplace of k times
        # the scale: the same epsilon), and can hold up to k keys of its own,
        # of counts c_j summing to at most k.  With the threshold
        # k T + k s log(k), the key of count c_j is released with probability
        # at most exp(-(k T + k s log k - c_j) / (k s)) / 2
        # <= exp(-(T - 1) / s) / (2 k): the k keys together, at most the
        # row-level delta exp(-(T - 1) / s) / 2.
        threshold = rows * float(threshold) + rows * float(scale) * math.log(rows)
        scale = rows * float(scale)
    if scale > 0:
        grid, cutoff = histogram_cutoff(scale, threshold)
        noise = sample_floored_laplace(
            _Bits(rng, 64 * counts.size, keyed=True), grid.scale, counts.size
        )
        steps = [int(c) * 2 ** (-grid.exponent) + int(z) for c, z in zip(counts, noise)]
        kept = np.array([s > cutoff for s in steps], dtype=bool)
        noisy = np.array([float(s) * 2.0**grid.exponent for s in steps])
    else:
        kept, noisy = np.ones(keys.size, dtype=bool), counts.copy()
    order = np.argsort(keys[kept], kind="stable")
    released = keys[kept][order]
    extra = {"released_counts": noisy[kept][order]} if with_counts else {}
    return _record(
        "thresholded_laplace",
        counts,
        float(rows),
        "l1",
        released,
        scale,
        label,
        candidates=keys.copy(),
        threshold=float(threshold),
        **extra,
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
    if rate < 1.0:
        # Amplification by subsampling holds for the unit that is sampled.
        _refuse_group_level("Poisson subsampling of rows")
    if _substituting() is not None:
        batch = np.arange(n_rows)
    elif rate >= 1.0:
        batch = np.arange(n_rows)
    else:
        size = rng.binomial(n_rows, rate)
        batch = np.sort(rng.choice(n_rows, size=size, replace=False))
    _record_sample("poisson", n_rows, {"rate": rate}, batch)
    return batch


def allocate_rows(n_rows, probabilities, rng, groups=None):
    """Slot of each row, drawn independently with ``probabilities`` (public).

    Each row draws its own slot, so adding or removing a row leaves the
    other rows' slots unchanged (their draws come first, in row order).
    With ``groups`` (the group index of each row, ``0 .. G - 1``) each group
    draws one slot and its rows share it: adding or removing a group then
    changes one slot only, as parallel composition over the slots needs for
    a group-level unit of privacy.
    """
    probabilities = np.asarray(probabilities, dtype=float)
    if groups is None:
        # Parallel composition over the slots holds for the unit that is allocated.
        _refuse_group_level("Allocation of rows to slots")
        slots = rng.choice(len(probabilities), size=int(n_rows), p=probabilities)
    else:
        groups = np.asarray(groups, dtype=np.intp)
        n_groups = int(groups.max()) + 1 if groups.size else 0
        slots = rng.choice(len(probabilities), size=n_groups, p=probabilities)[groups]
    _record_sample("allocation", n_rows, {"probabilities": probabilities.copy()}, slots)
    return slots
