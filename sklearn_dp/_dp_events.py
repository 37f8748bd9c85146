"""The package's mechanism descriptions: dp_accounting events, their builders and their checks.

Every solver describes its whole fit as a :class:`dp_accounting.DpEvent`
under the add-or-remove-one neighbouring relation
(:data:`NEIGHBORING_RELATION`), with noise multipliers relative to the
sensitivity of the quantity they protect.  This module holds what those
descriptions are made of: the builders of step compositions, the events
dp_accounting has no class for (:class:`PureEpsilonDpEvent`,
:class:`ClosedFormDpEvent`, :class:`ApproximateDpEvent`), the walk over a
composition (:func:`_flatten`) and :func:`check_event`, which refuses a
malformed event before a budget charges it.  The public names are
documented, and imported, from :mod:`sklearn_dp.accounting`.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

import dp_accounting
from dp_accounting import dp_event as dpe

__all__ = [
    "NEIGHBORING_RELATION",
    "EXPONENTIAL_MECHANISM",
    "gaussian_steps_event",
    "subsampled_gaussian_steps_event",
    "laplace_steps_event",
    "is_pure_event",
    "PureEpsilonDpEvent",
    "ClosedFormDpEvent",
    "ApproximateDpEvent",
    "check_event",
]

#: The one neighbouring relation used everywhere in sklearn_dp.
NEIGHBORING_RELATION = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE

#: Name of the mechanism of exponential-mechanism events: epsilon-DP and
#: epsilon-bounded-range, hence epsilon^2 / 8-zCDP (Cesar and Rogers 2021).
EXPONENTIAL_MECHANISM = "exponential mechanism"


def gaussian_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms on the full data set.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise divided by the L2 sensitivity of a step.
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``GaussianDpEvent``, self-composed ``n_steps`` times.
    """
    _check_steps(n_steps)
    step = dpe.GaussianDpEvent(float(noise_multiplier))
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def subsampled_gaussian_steps_event(
    noise_multiplier: float, sampling_probability: float, n_steps: int
) -> dpe.DpEvent:
    """``n_steps`` adaptive Gaussian mechanisms, each on a Poisson sample.

    Parameters
    ----------
    noise_multiplier : float
        Standard deviation of the noise divided by the L2 sensitivity of a step.
    sampling_probability : float
        Probability that a row is in a step's sample (``>= 1``: every row).
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``PoissonSampledDpEvent`` of a Gaussian, self-composed ``n_steps``
        times (the full-data event when ``sampling_probability >= 1``).
    """
    _check_steps(n_steps)
    if sampling_probability >= 1.0:
        return gaussian_steps_event(noise_multiplier, n_steps)
    step = dpe.PoissonSampledDpEvent(
        float(sampling_probability), dpe.GaussianDpEvent(float(noise_multiplier))
    )
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def laplace_steps_event(noise_multiplier: float, n_steps: int) -> dpe.DpEvent:
    """``n_steps`` adaptive Laplace mechanisms (L1 sensitivity) on the full data.

    Parameters
    ----------
    noise_multiplier : float
        Scale of the Laplace noise divided by the L1 sensitivity of a step.
    n_steps : int
        Number of steps (a positive integer).

    Returns
    -------
    dp_accounting.DpEvent
        A ``LaplaceDpEvent``, self-composed ``n_steps`` times.
    """
    _check_steps(n_steps)
    step = dpe.LaplaceDpEvent(float(noise_multiplier))
    return step if n_steps == 1 else dpe.SelfComposedDpEvent(step, int(n_steps))


def _check_steps(n_steps):
    if int(n_steps) != n_steps or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")


def _flatten(event: dpe.DpEvent, count: int = 1):
    """Yield (leaf_event, count) pairs of a composition."""
    if isinstance(event, dpe.SelfComposedDpEvent):
        yield from _flatten(event.event, count * event.count)
    elif isinstance(event, dpe.ComposedDpEvent):
        for sub in event.events:
            yield from _flatten(sub, count)
    else:
        yield event, count


def _pure_epsilon(event: dpe.DpEvent) -> float | None:
    """Exact pure epsilon of a composition of Laplace mechanisms, or None."""
    total = 0.0
    for leaf, count in _flatten(event):
        if isinstance(leaf, dpe.NoOpDpEvent):
            continue
        if isinstance(leaf, dpe.LaplaceDpEvent):
            if leaf.noise_multiplier <= 0:
                return math.inf
            total += count / leaf.noise_multiplier
        elif isinstance(leaf, PureEpsilonDpEvent):
            total += count * leaf.epsilon
        elif isinstance(leaf, dpe.DiscreteLaplaceDpEvent):
            if leaf.noise_parameter <= 0:
                return math.inf
            total += count * leaf.noise_parameter * leaf.sensitivity
        else:
            return None
    return total


def is_pure_event(event: dpe.DpEvent) -> bool:
    """Whether ``event`` is pure epsilon-DP (a composition of pure mechanisms).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The mechanism.

    Returns
    -------
    bool
        True when every part is a Laplace mechanism, a
        :class:`PureEpsilonDpEvent` or a no-op.
    """
    return _pure_epsilon(event) is not None


class PureEpsilonDpEvent(dpe.DiscreteLaplaceDpEvent):
    """A mechanism proven pure ``epsilon``-DP by a closed-form argument.

    Objective perturbation with L2 Laplace noise, an exponential mechanism:
    dp_accounting has no event for an arbitrary pure-DP mechanism, so this one
    *is* dp_accounting's ``DiscreteLaplaceDpEvent(noise_parameter=epsilon,
    sensitivity=1)``, the event whose privacy-loss distribution is exactly
    that of binary randomized response at ``epsilon`` (the loss is
    ``+epsilon`` with probability ``e^epsilon / (1 + e^epsilon)`` and
    ``-epsilon`` otherwise, in both directions).  Binary randomized response
    dominates every pure ``epsilon``-DP mechanism (Kairouz, Oh and Viswanath
    2015), under add/remove-one neighbours as under any other, so dp_accounting's
    ``PLDAccountant(NeighboringRelation.ADD_OR_REMOVE_ONE)`` composes this event
    as a valid (and, for randomized response, exact) bound: epsilon at
    ``delta = 0`` is ``epsilon``.  (dp_accounting's own
    ``RandomizedResponseDpEvent`` would say the same, but both of its
    accountants refuse it under add/remove-one neighbours.)

    dp_accounting's ``RdpAccountant`` reads no discrete Laplace event:
    :func:`accountant_event` rewrites this one as ``ZCDpEvent(rho)`` with
    :func:`zcdp_rho`'s rho (``epsilon^2 / 2``; ``epsilon^2 / 8`` for an
    exponential mechanism, whose ``mechanism`` starts with
    :data:`EXPONENTIAL_MECHANISM`).  :func:`epsilon_of_event` composes it
    exactly with other pure events (epsilons add) and with the rest by the
    smaller of basic composition, privacy-loss distributions and zCDP.

    Parameters
    ----------
    epsilon : float
        The mechanism's pure epsilon.
    mechanism : str
        What the mechanism is (free text; a name starting with
        :data:`EXPONENTIAL_MECHANISM` marks an exponential mechanism).
    """

    # Pickled into ledger files, and documented, under its public module.
    __module__ = "sklearn_dp.accounting"
    __slots__ = ("mechanism",)

    def __init__(self, epsilon: float, mechanism: str):
        # Frozen attrs fields: set once, here.
        object.__setattr__(self, "noise_parameter", float(epsilon))
        object.__setattr__(self, "sensitivity", 1)
        object.__setattr__(self, "mechanism", str(mechanism))

    @property
    def epsilon(self) -> float:
        """The mechanism's pure epsilon (the discrete Laplace parameter at sensitivity 1)."""
        return self.noise_parameter

    def __repr__(self):
        return f"PureEpsilonDpEvent(epsilon={self.epsilon!r}, mechanism={self.mechanism!r})"

    def __eq__(self, other):
        return (
            isinstance(other, PureEpsilonDpEvent)
            and other.epsilon == self.epsilon
            and other.mechanism == self.mechanism
        )

    def __hash__(self):
        return hash((PureEpsilonDpEvent, self.epsilon, self.mechanism))

    def __reduce__(self):
        # The arguments of every release (ledgers written before this class
        # was a discrete Laplace event load unchanged).
        return (PureEpsilonDpEvent, (self.epsilon, self.mechanism))


class ClosedFormDpEvent(dpe.UnsupportedDpEvent):
    """Base of mechanisms whose epsilon(delta) curve is a proven closed form.

    Some mechanisms (for example objective perturbation with Gaussian noise)
    have a privacy-loss bound that no dp_accounting event describes.  A
    subclass implements :meth:`epsilon` (a valid upper bound on the epsilon of
    the whole mechanism at any ``delta``, add/remove-one neighbours);
    :func:`epsilon_of_event` uses it for the event on its own.  Compositions
    with other events are not supported numerically (basic composition still
    applies in a :class:`~sklearn_dp.PrivacyBudget`).
    """

    # Pickled into ledger files, and documented, under its public module.
    __module__ = "sklearn_dp.accounting"
    __slots__ = ()

    def epsilon(self, delta: float) -> float:  # pragma: no cover - interface
        """Epsilon of the mechanism at ``delta`` (add/remove-one neighbours).

        Parameters
        ----------
        delta : float
            The target delta.

        Returns
        -------
        float
            A valid upper bound on epsilon at ``delta``.
        """
        raise NotImplementedError

    # Value semantics from the slots, in order (they are also the
    # constructor's arguments, so a pickle stores exactly them).
    def _key(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({fields})"

    def __eq__(self, other):
        return type(other) is type(self) and other._key() == self._key()

    def __hash__(self):
        return hash((type(self),) + self._key())

    def __reduce__(self):
        return (type(self), self._key())


class ApproximateDpEvent(ClosedFormDpEvent):
    """A mechanism proven ``(epsilon, delta)``-DP for one fixed ``delta`` and nothing finer.

    For example the thresholded noisy histogram that discovers the label set
    (:func:`sklearn_dp._labels.release_labels`): Laplace noise gives
    ``epsilon``, the threshold bounds the probability of releasing a label
    held by one row by ``delta``.  Composed with other events by basic
    composition: it takes its own ``delta`` and the others share the rest.

    No dp_accounting accountant reads it, and no dp_accounting event can
    stand for it: a label held by a single row is released with probability
    up to ``delta``, an infinite privacy loss, which only
    ``NonPrivateDpEvent`` carries there.  :func:`accountant_event` sets it
    apart and :func:`accountant_epsilon` adds it by basic composition.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon at ``delta``.
    delta : float
        The one delta at which ``epsilon`` holds.
    mechanism : str
        What the mechanism is (free text).
    """

    # Pickled into ledger files, and documented, under its public module.
    __module__ = "sklearn_dp.accounting"
    __slots__ = ("approximate_epsilon", "approximate_delta", "mechanism")

    def __init__(self, epsilon: float, delta: float, mechanism: str):
        object.__setattr__(self, "approximate_epsilon", float(epsilon))
        object.__setattr__(self, "approximate_delta", float(delta))
        object.__setattr__(self, "mechanism", str(mechanism))

    def epsilon(self, delta: float) -> float:
        """Epsilon at ``delta``: the proven epsilon, or ``inf`` below its delta.

        Parameters
        ----------
        delta : float
            The target delta.

        Returns
        -------
        float
            ``epsilon`` when ``delta`` is at least the proven delta, else ``inf``.
        """
        return self.approximate_epsilon if delta >= self.approximate_delta else math.inf

    def __repr__(self):
        return (
            f"ApproximateDpEvent(epsilon={self.approximate_epsilon!r}, "
            f"delta={self.approximate_delta!r}, mechanism={self.mechanism!r})"
        )


#: Fields of events that are probabilities (in [0, 1]); other numbers are >= 0.
_PROBABILITY_FIELDS = frozenset(
    {"sampling_probability", "sampling_probs", "approximate_delta", "residual_fraction"}
)
#: Fields of events that are counts or sizes (integers >= 0).
_COUNT_FIELDS = frozenset(
    {
        "count",
        "source_dataset_size",
        "sample_size",
        "dataset_size",
        "truncated_batch_size",
        "num_buckets",
        "sensitivity",
        "step_counts",
        "chi_dof",
    }
)


def _event_fields(event):
    """``(name, value)`` of an event's fields: attrs fields (dp_accounting) or slots (ours)."""
    # Our events subclass dp_accounting's (attrs) UnsupportedDpEvent and add
    # slots of their own: both are read.
    names = [field.name for field in getattr(type(event), "__attrs_attrs__", ())]
    for klass in type(event).__mro__:
        slots = klass.__dict__.get("__slots__", ())
        names.extend([slots] if isinstance(slots, str) else slots)
    names = [name for name in dict.fromkeys(names) if not name.startswith("__")]
    return [(name, getattr(event, name)) for name in names if hasattr(event, name)]


def _check_number(value, where, *, count=False, probability=False):
    if count:
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
            raise ValueError(f"{where} must be an integer >= 0, got {value!r}.")
        return
    if isinstance(value, bool) or not isinstance(value, Real) or math.isnan(value) or value < 0:
        raise ValueError(f"{where} must be a number >= 0, got {value!r}.")
    if probability and value > 1:
        raise ValueError(f"{where} must be a probability in [0, 1], got {value!r}.")


def check_event(event: dpe.DpEvent) -> None:
    """Refuse a malformed event: a negative, NaN or non-numeric parameter, anywhere in it.

    Every part of the event (compositions, self-compositions and sampled
    events are walked) must have well-formed parameters: noise multipliers,
    epsilons and rhos are numbers >= 0 (``inf`` allowed), NaN nowhere,
    counts and sizes integers >= 0, probabilities in [0, 1].  A budget's
    filter charges what the event says: ``ZCDpEvent(-10)`` or a negative
    count would otherwise lower the recorded spend and let later spends
    exceed the budget.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event to check.

    Raises
    ------
    TypeError
        If ``event`` or one of its parts is not a DpEvent.
    ValueError
        If a parameter is malformed; the message names it.
    """
    _check_event(event, type(event).__name__, set())


def _check_event(event, where, active):
    if not isinstance(event, dpe.DpEvent):
        raise TypeError(f"{where} must be a dp_accounting DpEvent, got {type(event).__name__}.")
    if id(event) in active:
        raise ValueError(f"{where} contains itself: an event must be a finite tree.")
    active.add(id(event))
    probabilities = set(_PROBABILITY_FIELDS)
    if isinstance(event, dpe.RandomizedResponseDpEvent):
        probabilities.add("noise_parameter")
    for name, value in _event_fields(event):
        here = f"{where}.{name}"
        if isinstance(value, str):
            continue
        if isinstance(value, dpe.DpEvent):
            _check_event(value, f"{here} ({type(value).__name__})", active)
        elif isinstance(value, (list, tuple)):
            for k, item in enumerate(value):
                if isinstance(item, dpe.DpEvent):
                    _check_event(item, f"{here}[{k}] ({type(item).__name__})", active)
                elif name == "events":
                    _check_event(item, f"{here}[{k}]", active)
                else:
                    _check_number(
                        item,
                        f"{here}[{k}]",
                        count=name in _COUNT_FIELDS,
                        probability=name in probabilities,
                    )
        else:
            _check_number(
                value, here, count=name in _COUNT_FIELDS, probability=name in probabilities
            )
    active.discard(id(event))
