"""The noise gateway: the one place where randomness meets private data.

Every noisy release of the package goes through a function of this module:
the Gaussian and Laplace mechanisms, the exponential mechanism (report noisy
max with Gumbel noise), the Gamma-norm noise of the perturbation solvers, and
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
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "Release",
    "Sample",
    "gaussian",
    "laplace",
    "exponential",
    "objective_perturbation",
    "gamma_norm_noise",
    "gamma_norm",
    "thresholded_histogram",
    "poisson_sample",
    "allocate_rows",
    "active_tracers",
]

MECHANISMS = (
    "gaussian",
    "laplace",
    "exponential",
    "gamma_norm",
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
        ``"gaussian"``, ``"laplace"``, ``"exponential"``, ``"gamma_norm"`` or
        ``"objective_perturbation"``.
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
        ``exp(utility / scale)``), the Gamma-norm scale.
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


@dataclass
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
# Mechanisms
# --------------------------------------------------------------------------


def gaussian(value, *, sensitivity, noise_std, rng, label="", norm="l2"):
    """``value + N(0, noise_std^2)`` (the Gaussian mechanism).

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
    label : str
        What is released, for traces.
    norm : str, default="l2"

    Returns
    -------
    float or ndarray
        The noisy value (a new array).
    """
    sensitivity = _check_sensitivity(sensitivity, norm)
    noise_std = float(noise_std)
    array = np.asarray(value, dtype=float)
    if noise_std > 0:
        noisy = array + rng.normal(0.0, noise_std, size=array.shape)
    else:
        noisy = array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("gaussian", value, sensitivity, norm, output, noise_std, label)


def laplace(value, *, sensitivity, scale, rng, label=""):
    """``value + Laplace(scale)`` per entry (the Laplace mechanism; L1 sensitivity).

    ``scale = sensitivity / epsilon`` gives pure epsilon-DP; 0 releases the
    value as it is.
    """
    sensitivity = _check_sensitivity(sensitivity, "l1")
    scale = float(scale)
    array = np.asarray(value, dtype=float)
    noisy = array + rng.laplace(0.0, scale, size=array.shape) if scale > 0 else array.copy()
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("laplace", value, sensitivity, "l1", output, scale, label)


def exponential(utilities, *, sensitivity, scale, rng, label=""):
    """Index ``i`` drawn with probability proportional to ``exp(utilities[i] / scale)``.

    The exponential mechanism (report noisy max with Gumbel noise): with
    each utility of add/remove-one sensitivity at most ``sensitivity``,
    ``scale = 2 * sensitivity / epsilon`` is epsilon-DP (and
    epsilon-bounded-range: epsilon^2 / 8-zCDP).  ``scale=0`` returns the
    argmax (no privacy).
    """
    sensitivity = _check_sensitivity(sensitivity, "linf")
    scale = float(scale)
    utilities = np.asarray(utilities, dtype=float)
    if scale > 0:
        index = int(np.argmax(utilities / scale + rng.gumbel(size=utilities.shape)))
    else:
        index = int(np.argmax(utilities))
    return _record("exponential", utilities, sensitivity, "linf", index, scale, label)


def gamma_norm_noise(rng, shape, scale):
    """Noise with density proportional to ``exp(-||b||_2 / scale)`` on R^m (no data involved).

    The norm is ``Gamma(shape=m, scale=scale)`` (the density in polar
    coordinates is ``r^(m-1) exp(-r / scale)``) and the direction is uniform
    on the sphere, independent of it.
    """
    size = int(np.prod(shape))
    direction = rng.standard_normal(size)
    norm = np.linalg.norm(direction)
    while norm == 0.0:  # pragma: no cover - probability zero
        direction = rng.standard_normal(size)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(size, scale)
    return (radius * direction / norm).reshape(shape)


def gamma_norm(value, *, sensitivity, scale, rng, label=""):
    """``value + b`` with ``b`` of density proportional to ``exp(-||b||_2 / scale)``.

    With ``||value(D) - value(D')||_2 <= sensitivity``, ``scale =
    sensitivity / epsilon`` is pure epsilon-DP (Chaudhuri et al. 2011).
    """
    sensitivity = _check_sensitivity(sensitivity, "l2")
    array = np.asarray(value, dtype=float)
    noise = gamma_norm_noise(rng, array.shape, scale) if scale > 0 else 0.0
    noisy = array + noise
    output = float(noisy) if np.ndim(value) == 0 else noisy
    return _record("gamma_norm", value, sensitivity, "l2", output, scale, label)


def objective_perturbation(solve, *, draw_noise, sensitivity, scale, rng, label=""):
    """Release ``solve(b)``, the minimiser of an objective perturbed by a linear term ``b``.

    Privacy comes from the noise entering the objective, not from noise on
    a value, so the trace records ``value=None``; ``sensitivity`` is the
    declared per-sample gradient bound the calibration used.

    Parameters
    ----------
    solve : callable
        ``solve(b) -> minimiser``: runs on the private data.
    draw_noise : callable
        ``draw_noise(rng) -> b``: data-independent noise.
    """
    sensitivity = _check_sensitivity(sensitivity, "l2")
    noise = draw_noise(rng)
    output = solve(noise)
    return _record("objective_perturbation", None, sensitivity, "l2", output, scale, label)


def thresholded_histogram(keys, counts, *, scale, threshold, rng, label=""):
    """The keys whose count plus ``Laplace(scale)`` exceeds ``threshold``, sorted.

    A stability-based histogram (Korolova, Kenthapadi, Mishra and Ntoulas
    2009; Bun, Nissim and Stemmer 2016): only keys present in the data are
    candidates, so the key set itself is private.  Under add/remove-one
    neighbouring one row changes one count by 1: on keys present in both data
    sets that is the Laplace mechanism (``1 / scale``-DP); a key held by the
    added row alone is released with probability
    ``exp(-(threshold - 1) / scale) / 2``, the delta.

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

    Returns
    -------
    ndarray
        The released keys, sorted (same dtype as ``keys``).
    """
    keys = np.asarray(keys)
    counts = np.asarray(counts, dtype=float)
    if scale > 0:
        noisy = counts + rng.laplace(0.0, scale, size=counts.shape)
    else:
        noisy = counts
    released = np.sort(keys[noisy > threshold]) if scale > 0 else np.sort(keys)
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
