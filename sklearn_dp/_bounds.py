"""Private estimates of the bounds a fit needs: row norms, feature magnitudes, label ranges.

A DP fit clips every row (and label) to a bound, and its noise is
proportional to that bound.  When the user knows no bound (``"auto"``, the
default), the fit spends a share of its epsilon on estimating one with the
exponential mechanism (McSherry and Talwar 2007) over a *public* grid of
candidates wide enough for real data, ``1e-8`` to ``1e8``; nothing about the
candidates is read off the data.  Two mechanisms:

Upper bound of nonnegative scores (row norms, ``|x_ij|``, ``|y_i - c|``)
    Candidates ``b_k = 10 ** (-8 + k / 8)`` (129 of them, ratio 1.33).  The
    utility of ``b`` counts the rows it handles badly::

        u(b) = -( #{i : s_i > b}  +  #{i : s_i < b / window} )  -  TILT * n~ * k / K

    rows above ``b`` are clipped; rows below ``b / window`` would fill less
    than a ``1 / window`` share of the bound (the noise, proportional to
    ``b``, would swamp them); the last term, with ``n~`` the fit's released
    row count (public) and ``K`` the number of candidates, prefers the
    smaller of two bounds that handle equally many rows well (for a
    regressor's row bound, only from :data:`TILT_MIN_EVIDENCE`
    released rows times epsilon; below, a public lean to larger bounds,
    :data:`LOW_EVIDENCE_LEAN`, as a bound far below the rows costs more than
    one far above them).  The chosen
    bound clips a sparse top tail (``#{s_i > b}`` small) and never lies far
    above the bulk of the scores: it balances the density of the scores at
    ``b`` against their density at ``b / window``, so a smaller window
    gives a tighter bound (for the absolute values of a Gaussian: about 2.2
    standard deviations with window 10, 1.7 with window 4).  The windows are
    utility choices, measured in ``benchmarks/bench_bounds.py``: 2 for the
    rows of classifiers (clipping long rows reweights them without biasing
    the decision much, and the noise is proportional to the bound), 4 for
    the rows and the label half-widths of regressors (clipping biases them),
    10 (:data:`WINDOW`) for the scalers' feature bounds.  One row changes
    the count term of every candidate by 0 or 1, always in the same
    direction (adding a row never raises a utility): sensitivity 1,
    *monotone*, so probabilities ``exp(epsilon * u / 1)`` give epsilon-DP
    (McSherry and Talwar 2007; Dwork and Roth 2014, Thm 3.10 and the remark
    after it) and epsilon-bounded range, hence ``epsilon^2 / 8``-zCDP (Cesar
    and Rogers 2021).  Unlike an exponential-mechanism quantile (Smith 2011),
    whose utility is flat over all candidates above the data (a high
    quantile of a few hundred rows is then usually released as some huge
    candidate), this utility falls again above ``window`` times the bulk of
    the data: it needs about ``n * epsilon >= 10`` to be reliable, where a
    90% quantile needs ``n * epsilon >= 200``.

Centre of signed values (labels, features of the scalers)
    The median by the exponential mechanism (Smith 2011) over a signed grid
    ``0, +-10 ** (-8 + k / 32)`` (1027 candidates): ``u(c) = -| #{v_i <= c}
    - n / 2 |``, sensitivity 1/2 (the count moves by 0 or 1, ``n / 2`` by
    1/2), not monotone, so probabilities ``exp(epsilon * u / (2 * 1/2))``.
    A label range's centre takes the candidates of this grid within a
    released magnitude only (:func:`center_candidates`).

A range is ``[c - h, c + h]``, released as one event of its whole epsilon
(:func:`release_range`).  With enough evidence (released rows times
epsilon at least :data:`RANGE_REFINE_EVIDENCE`): a magnitude ``M`` (an upper
bound of ``|v_i|``), a centre ``c`` (a median among the centres within
``M``) and an upper bound ``h <= M + |c|`` of ``|v_i - c|``, a third of
epsilon each.  Below it, a third of epsilon per release is too little for
any of them (a centre near 0 and a half-width of 10 were drawn for labels
in 25..346 in most fits), and the range is one exponential mechanism on the
whole epsilon over *signed magnitudes*: ``[-M, M]``, ``[0, M]`` or
``[-M, 0]`` (:func:`signed_magnitude_counts`).

Each release goes through the noise gateway (:func:`sklearn_dp._noise.exponential`)
and is recorded as ``PureEpsilonDpEvent(epsilon, "exponential mechanism: ...")``
(:data:`sklearn_dp.accounting.EXPONENTIAL_MECHANISM`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from . import _noise
from ._data import row_l2_norms
from ._design import BLOCK_ROWS
from .accounting import EXPONENTIAL_MECHANISM, PureEpsilonDpEvent, epsilon_of_event

__all__ = [
    "GRID",
    "CENTER_GRID",
    "WINDOW",
    "REGRESSOR_ROW_WINDOW",
    "CLASSIFIER_ROW_WINDOW",
    "LABEL_WINDOW",
    "TILT",
    "TILT_MIN_EVIDENCE",
    "tilt_weight",
    "LOW_EVIDENCE_LEAN",
    "BOUNDS_EPSILON_FRACTION",
    "LABEL_RANGE_EPSILON_FRACTION",
    "RANGE_REFINE_EVIDENCE",
    "SIGNED_PREFERENCE",
    "LOW_RANGE_EVIDENCE",
    "LOW_EVIDENCE_WINDOW",
    "signed_magnitude_window",
    "signed_magnitude_counts",
    "release_signed_magnitude",
    "BoundRelease",
    "upper_bound_utilities",
    "center_utilities",
    "release_upper_bound",
    "selection_event",
    "sorted_scores",
    "release_center",
    "RowCounts",
    "release_range",
    "row_linf_norms",
    "release_row_norm_bound",
    "release_feature_bound",
    "feature_columns",
    "planned_events",
    "SCALING_EPSILON_FRACTION",
    "SCALING_MIN_EVIDENCE",
    "AUTO_SCALING_EPSILON_FRACTION",
    "composed_release_epsilon",
]

#: Candidates for a bound of nonnegative scores: 10^-8 .. 10^8, 8 per decade.
GRID = 10.0 ** (np.arange(-64, 65) / 8.0)
#: Candidates for a centre: 0 and +-10^-8 .. +-10^8, 32 per decade.
_POSITIVE_CENTERS = 10.0 ** (np.arange(-256, 257) / 32.0)
CENTER_GRID = np.concatenate([-_POSITIVE_CENTERS[::-1], [0.0], _POSITIVE_CENTERS])

#: A bound is penalised for every row below ``bound / WINDOW`` (default of
#: the scalers' feature bounds and of regressors' labels).
WINDOW = 10.0
#: The window of the row bounds of regressors (rows of X clipped: a bias, so
#: near the largest rows) and of classifiers (clipping long rows reweights
#: them without biasing the direction much, and the noise is proportional to
#: the bound: tighter).  Chosen with benchmarks/bench_bounds.py.
REGRESSOR_ROW_WINDOW = 4.0
CLASSIFIER_ROW_WINDOW = 2.0
#: The window of the half-width of regressors' label ranges.
LABEL_WINDOW = 4.0
#: Weight of the preference for smaller bounds, in released rows over the grid.
TILT = 0.5
#: The preference for smaller bounds applies to the release of a
#: regressor's row bound only from this many released rows times the
#: release's epsilon (:func:`tilt_weight`).  Below, it hardly breaks ties
#: (its slope is ``epsilon * TILT * n / K``, 0.04 per candidate at 10 rows
#: times epsilon) but lifts every candidate below the data, where all ``n``
#: rows are clipped, by up to ``TILT * n`` against a bound at the data: a
#: bound under a tenth of every row, which makes the model's predictions on
#: unclipped rows explode (R^2 of -173 on raw diabetes), was drawn in 1.4% to
#: 11% of simulated releases at 9.3 rows times epsilon (row norms of scale 1
#: to 1e6, larger scales worse), and in 10% to 36% at 6.5.  From 30 the
#: tilted releases draw such a bound in under 3e-6 of them.
TILT_MIN_EVIDENCE = 30.0
#: Below :data:`TILT_MIN_EVIDENCE`, a data-independent lean to *larger*
#: bounds instead, in temperatures ``1 / epsilon`` across the grid (a base
#: measure ``exp(LOW_EVIDENCE_LEAN * k / K)``: no privacy cost).  A bound far
#: below the rows makes the model predict wildly on new rows; one far above
#: them makes it nearly constant (its coefficients are bounded by the label
#: range over the bound).  At 9.3 rows times epsilon a bound under a tenth of
#: the rows is drawn in 0.1% of simulated releases (0.3% to 0.7% with no
#: tilt nor lean), at 6.5 in 0.9% to 1.6% (3% to 8%); one over 10 times the
#: rows in 0.04% to 2% at 9.3 and 0.4% to 19% at 6.5 (row norms of scale
#: 0.01 to 1e6, smaller scales wider).  On diabetes (DP scaler + model at
#: epsilon 0.3, 6.5 rows times epsilon, 720 fits) 2 row bounds fell below
#: the rows.  The same base measure as DPStandardScaler's bounds.  Not for
#: classifiers and PCA (a bound below the rows keeps their directions, one
#: above them loses the signal: they keep the tilt) nor label ranges (one
#: far too wide makes the noise explode).
LOW_EVIDENCE_LEAN = 4.0

#: Share of a fit's epsilon (after the label set) spent on each quantity
#: whose bound is ``"auto"``: the rows of X (``data_norm`` or
#: ``feature_bound``) and, for regressors, the labels (``y_bound``).
#: Chosen with ``benchmarks/bench_bounds.py`` (see ``docs/guide/choosing_parameters.md``).
BOUNDS_EPSILON_FRACTION = 0.1
#: Share of a regressor's epsilon spent on a label range with a released
#: centre (three releases, :func:`release_range`): a third each keeps each
#: release about as reliable as the half of BOUNDS_EPSILON_FRACTION a
#: two-release range would give.  Measured with ``benchmarks/bench_raw_tables.py``.
LABEL_RANGE_EPSILON_FRACTION = 0.15
#: A range with a released centre is refined by three releases (magnitude,
#: centre, half-width, a third of its epsilon each) only from this many
#: released rows times the range's epsilon: about 33 per release, where
#: they clipped half the labels in at most 0.2% of 600 simulated draws
#: (diabetes' labels, and Gaussian labels centred at 0 or far from it),
#: against 7% to 33% at 46; below, one release of a signed magnitude on the
#: whole epsilon (:func:`release_signed_magnitude`), measured on diabetes
#: with ``benchmarks/bench_raw_tables.py --worst``.
RANGE_REFINE_EVIDENCE = 100.0
#: Utility, in shares of the released row count, by which a one-signed range
#: (``[0, M]`` or ``[-M, 0]``, half as wide) is preferred to ``[-M, M]``
#: when they clip equally many rows: labels of one sign then get the
#: narrower range in most fits, and labels of both signs lose nothing
#: (half of them lie on the other side).
SIGNED_PREFERENCE = 0.02
#: Below this many released rows times the range's epsilon the signed
#: magnitude's window is :data:`LOW_EVIDENCE_WINDOW` instead of the labels'
#: 4, and the fit warns (:mod:`sklearn_dp.linear_model._released_warnings`).
LOW_RANGE_EVIDENCE = 20.0
#: A wider window counts fewer rows near 0 against a good range (of
#: diabetes' labels, 14% lie below a sixth of 400, 33% below a quarter), so
#: its margin over the ranges that miss every label or are far
#: too wide grows, and these are drawn several times less often: at 14 rows
#: times epsilon, 4% instead of 11% of simulated draws on Gaussian labels
#: centred at 0 clip half of them, 0.3% instead of 1.3% are over 100 times
#: too wide; the range is up to 1.3 times wider.  On diabetes at epsilon 0.3
#: (100 splits, defaults) the worst R^2 rose from -8.6e5 to -1.75 (median
#: -0.003 to -0.08); 10 was more robust still in simulation but cost more
#: on diabetes (median -0.14, 14 fits below -1 instead of 6).
LOW_EVIDENCE_WINDOW = 6.0
#: Share of a fit's epsilon (after the label set) spent on the per-feature
#: scales of ``feature_scaling=True`` (:func:`release_feature_scales`), split
#: evenly over the features.  Measured with ``benchmarks/bench_raw_tables.py``.
SCALING_EPSILON_FRACTION = 0.2
#: The per-feature releases are used only if ``n~ * epsilon_release`` (the
#: released row count times the epsilon of one release) reaches this: below,
#: an exponential mechanism over the grids here picks a scale nearly at random,
#: and the fit falls back to one bound for all features (decided from the
#: released count and public values).  Measured with ``benchmarks/bench_raw_tables.py``.
SCALING_MIN_EVIDENCE = 10.0
#: Share of a fit's epsilon (after the label set) spent, with
#: ``feature_scaling="auto"``, on deciding whether to scale at all: a noisy
#: count of the rows holding an entry in natural units
#: (:func:`~sklearn_dp._feature_scales.release_needs_scaling`), charged on
#: top of :data:`SCALING_EPSILON_FRACTION`.  Measured with
#: ``benchmarks/bench_raw_tables.py``.
AUTO_SCALING_EPSILON_FRACTION = 0.02


@dataclass(frozen=True)
class BoundRelease:
    """A released bound (or centre), public from now on, with its mechanism."""

    value: float
    events: list = field(default_factory=list)


def sorted_scores(values):
    """``values`` as a sorted float64 vector (the counts over a grid are searches in it)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    return np.sort(values)


def upper_bound_counts(scores, *, window=None):
    """``(above, small)``: per candidate b of :data:`GRID`, ``#{s > b}`` and ``#{s < b / window}``.

    Counts over a public grid: the counts of a union of row chunks are the
    sums of the chunks' counts (how Dask fits compute them).
    """
    window = WINDOW if window is None else float(window)
    s = sorted_scores(scores)
    above = s.size - np.searchsorted(s, GRID, side="right")
    small = np.searchsorted(s, GRID / window, side="left")
    return above, small


def tilt_weight(n_public, epsilon):
    """The ``n~`` that weighs the tilt of a regressor's row bound.

    ``n_public`` from :data:`TILT_MIN_EVIDENCE` rows times ``epsilon``;
    below, ``-LOW_EVIDENCE_LEAN / (TILT * epsilon)``: the tilt then leans to
    larger candidates by :data:`LOW_EVIDENCE_LEAN` temperatures across the
    grid.  Public values only, so the utilities keep sensitivity 1.
    """
    if float(n_public) * epsilon >= TILT_MIN_EVIDENCE:
        return float(n_public)
    return -LOW_EVIDENCE_LEAN / (TILT * float(epsilon))


def upper_bound_utilities_from_counts(above, small, n_public, *, n_zeros=0):
    """The utilities of :func:`upper_bound_utilities` from its counts (:func:`upper_bound_counts`)."""
    tilt = TILT * float(n_public) * np.arange(GRID.size) / GRID.size
    return -(above + (int(n_zeros) + small)).astype(np.float64) - tilt


def upper_bound_utilities(scores, n_public, *, n_zeros=0, window=None):
    """Utilities of the candidates :data:`GRID` for an upper bound of ``scores`` (nonnegative).

    ``n_zeros`` more scores equal to 0 (the implicit zeros of a sparse
    column); ``window`` (default :data:`WINDOW`): rows below ``b / window``
    count against ``b``.  See the module docstring; sensitivity 1, monotone.
    """
    above, small = upper_bound_counts(scores, window=window)
    return upper_bound_utilities_from_counts(above, small, n_public, n_zeros=n_zeros)


def center_counts(values):
    """``(at_or_below, size)``: per candidate c of :data:`CENTER_GRID`, ``#{v <= c}``; and ``#v``."""
    s = sorted_scores(values)
    return np.searchsorted(s, CENTER_GRID, side="right"), s.size


def center_utilities_from_counts(at_or_below, size):
    """The utilities of :func:`center_utilities` from its counts (:func:`center_counts`)."""
    return -np.abs(at_or_below - 0.5 * size)


def center_utilities(values):
    """Utilities of the candidates :data:`CENTER_GRID` for the median of ``values`` (sensitivity 1/2)."""
    return center_utilities_from_counts(*center_counts(values))


def selection_event(epsilon, what):
    """The event of one exponential-mechanism selection at ``epsilon`` (pure DP), named ``what``."""
    return PureEpsilonDpEvent(epsilon, f"{EXPONENTIAL_MECHANISM}: {what}")


def release_upper_bound(scores, *, epsilon, n_public, rng, label, n_zeros=0, window=None):
    """A DP upper bound of nonnegative ``scores`` (one per row): pure epsilon-DP.

    Parameters
    ----------
    scores : ndarray
        One nonnegative score per row (private).
    epsilon : float
        Privacy of this release (``inf``: the best candidate, no noise).
    n_public : float
        The fit's released row count (public), for the preference for
        smaller bounds.
    rng : numpy.random.Generator
    label : str
        What is bounded (for traces and the event's name).
    n_zeros : int
        Further rows whose score is 0.
    window : float, optional
        The window of the utility (default :data:`WINDOW`; public).

    Returns
    -------
    BoundRelease
        A candidate of :data:`GRID` and ``[PureEpsilonDpEvent]`` (no event
        for ``epsilon=inf``).
    """
    utilities = upper_bound_utilities(scores, n_public, n_zeros=n_zeros, window=window)
    return release_upper_bound_from_utilities(utilities, epsilon=epsilon, rng=rng, label=label)


def release_upper_bound_from_utilities(utilities, *, epsilon, rng, label):
    """The exponential mechanism of :func:`release_upper_bound` on its utilities (sensitivity 1)."""
    scale = 0.0 if math.isinf(epsilon) else 1.0 / float(epsilon)
    index = _noise.exponential(utilities, sensitivity=1.0, scale=scale, rng=rng, label=label)
    events = [] if math.isinf(epsilon) else [selection_event(epsilon, label)]
    return BoundRelease(float(GRID[index]), events)


def release_center(values, *, epsilon, rng, label):
    """A DP median of ``values`` on :data:`CENTER_GRID`: pure epsilon-DP."""
    return release_center_from_utilities(
        center_utilities(values), epsilon=epsilon, rng=rng, label=label
    )


def release_center_from_utilities(utilities, *, epsilon, rng, label):
    """The exponential mechanism of :func:`release_center` on its utilities (sensitivity 1/2)."""
    # Sensitivity 1/2, not monotone: scale 2 * (1/2) / epsilon.
    scale = 0.0 if math.isinf(epsilon) else 1.0 / float(epsilon)
    index = _noise.exponential(utilities, sensitivity=0.5, scale=scale, rng=rng, label=label)
    events = [] if math.isinf(epsilon) else [selection_event(epsilon, label)]
    return BoundRelease(float(CENTER_GRID[index]), events)


def center_candidates(magnitude):
    """The centres a label range may take within a released magnitude ``M`` (public).

    The candidates of :data:`CENTER_GRID` in ``[-M, M]``: most of them are
    small (32 per decade down to ``1e-8``), so a centre released where the
    median is not clear lands near 0 far more often than near ``+-M``, and
    the range ``[c - h, c + h]`` then still covers ``[-M, M]`` with
    ``h <= M + |c| <= 2 M``.
    """
    return CENTER_GRID[np.abs(CENTER_GRID) <= float(magnitude)]


def center_counts_on(values, candidates):
    """``(at_or_below, size)`` of :func:`center_counts` on the given ``candidates``."""
    s = sorted_scores(values)
    return np.searchsorted(s, candidates, side="right"), s.size


def release_center_on(at_or_below, size, candidates, *, epsilon, rng, label):
    """The DP median (sensitivity 1/2) among public ``candidates`` from their counts."""
    index, events = _release_median(
        center_utilities_from_counts(at_or_below, size), epsilon, rng, label
    )
    return BoundRelease(float(candidates[index]), events)


def _release_median(utilities, epsilon, rng, label):
    """The index a median's exponential mechanism (sensitivity 1/2) picks, and its events."""
    scale = 0.0 if math.isinf(epsilon) else 1.0 / float(epsilon)
    index = _noise.exponential(utilities, sensitivity=0.5, scale=scale, rng=rng, label=label)
    return index, ([] if math.isinf(epsilon) else [selection_event(epsilon, label)])


def interval_center_utilities(at_or_below, size):
    """Utilities of the intervals between consecutive candidates for the median (sensitivity 1/2).

    Interval ``k`` is ``(c_k, c_{k+1}]``; its utility is
    ``-max(#{v <= c_k} - n/2, n/2 - #{v <= c_{k+1}}, 0)``: 0 for the
    interval that holds the median, and minus the rows between it and the
    median elsewhere.  Adding a row moves each count by 0 or 1 and ``n/2``
    by 1/2, so each term moves by at most 1/2, and so does their maximum.
    Unlike the utility of a single candidate, it does not stay flat across
    the intervals outside a feature's span narrower than the grid.
    """
    at_or_below = np.asarray(at_or_below, dtype=np.float64)
    half = 0.5 * float(size)
    return -np.maximum(np.maximum(at_or_below[:-1] - half, half - at_or_below[1:]), 0.0)


def release_interval_center(at_or_below, size, candidates, *, epsilon, rng, label):
    """The DP median among the intervals ``(c_k, c_{k+1}]`` between ``candidates``: its end ``c_{k+1}``.

    The interval's closed end, a candidate: a feature whose median is a
    candidate (the 0 of a mostly-zero column) is centred exactly there, so
    the rows at the median stay exactly at the centre.
    """
    index, events = _release_median(
        interval_center_utilities(at_or_below, size), epsilon, rng, label
    )
    return BoundRelease(float(candidates[index + 1]), events)


def capped_utilities(utilities, cap):
    """The utilities of the candidates of :data:`GRID` up to ``cap`` (public): a prefix.

    :data:`GRID` increases, so the candidates up to ``cap`` are its first
    ones, and an index into the prefix is an index into :data:`GRID`.  The
    smallest candidate always stays, so a cap below the grid still leaves one.
    """
    utilities = np.asarray(utilities, dtype=np.float64)
    return utilities[: max(1, int(np.searchsorted(GRID, cap, side="right")))]


def signed_magnitude_counts(values, *, window=None):
    """Rows handled badly by each signed magnitude: shape ``(3, GRID.size)``.

    Rows 0, 1, 2 are the ranges ``[-b, b]``, ``[0, b]`` and ``[-b, 0]`` for
    each candidate ``b`` of :data:`GRID`.  A row counts against a range if it
    lies outside it or within ``b / window`` of its end at 0 (the window
    term of :func:`upper_bound_utilities`, on the side the range opens to):
    ``#{|v| > b} + #{|v| < b / window}``, ``#{v > b} + #{v < b / window}``
    and ``#{v < -b} + #{v > -b / window}``.  Counts over public candidates:
    the counts of a union of row chunks are the sums of the chunks' counts.
    """
    window = WINDOW if window is None else float(window)
    s = sorted_scores(values)
    above = s.size - np.searchsorted(s, GRID, side="right")
    below = np.searchsorted(s, -GRID, side="left")
    under_small = np.searchsorted(s, GRID / window, side="left")
    over_small = s.size - np.searchsorted(s, -GRID / window, side="right")
    small = under_small - np.searchsorted(s, -GRID / window, side="right")
    return np.stack([above + below + small, above + under_small, below + over_small])


def signed_magnitude_window(n_public, epsilon, window):
    """The signed magnitude's window: :data:`LOW_EVIDENCE_WINDOW` below :data:`LOW_RANGE_EVIDENCE`."""
    return LOW_EVIDENCE_WINDOW if float(n_public) * epsilon < LOW_RANGE_EVIDENCE else window


def release_signed_magnitude(counts, *, epsilon, n_public, rng, label):
    """A DP range ``(center, half_width)`` from :func:`signed_magnitude_counts`: pure epsilon-DP.

    One exponential mechanism over the ``3 * GRID.size`` signed magnitudes.
    Each row lies in at most one of the counted sets of a candidate, and
    adding a row never lowers a count: sensitivity 1, monotone, so
    probabilities ``exp(epsilon * u)`` with ``u`` minus the count (less
    :data:`SIGNED_PREFERENCE` times the public ``n_public`` for ``[-b, b]``).
    Returns ``(0, b)``, ``(b / 2, b / 2)`` or ``(-b / 2, b / 2)``.
    """
    utilities = -np.asarray(counts, dtype=np.float64)
    utilities[0] -= SIGNED_PREFERENCE * max(float(n_public), 0.0)
    scale = 0.0 if math.isinf(epsilon) else 1.0 / float(epsilon)
    index = _noise.exponential(
        utilities.ravel(), sensitivity=1.0, scale=scale, rng=rng, label=label
    )
    sign, k = divmod(index, GRID.size)
    bound = float(GRID[k])
    return (0.0, bound) if sign == 0 else ((1.5 - sign) * bound, 0.5 * bound)


def range_events(epsilon, label):
    """The event of a label range with a released centre: one of its whole epsilon.

    Its releases (one, or three of a third each) compose to pure
    ``epsilon``-DP whichever the released count chose (basic composition,
    the split being a function of public values).
    """
    return [] if math.isinf(epsilon) else [selection_event(epsilon, label)]


class RowCounts:
    """The counts of the private rows that the ``"auto"`` bound releases read, in memory.

    The releases (:func:`release_range`, :func:`release_row_norm_bound`,
    :func:`release_feature_bound`) read the rows only through these counts
    over public candidates, and the counts of a union of row chunks are the
    sums of the chunks' counts: ``sklearn_dp._dask.ChunkCounts`` computes the
    same counts chunk by chunk on a Dask array, and the release logic is the
    same for both.
    """

    def __init__(self, rows):
        self.rows = rows

    def spread(self, center, window):
        """:func:`upper_bound_counts` of ``|rows - center|`` (labels)."""
        return upper_bound_counts(
            np.abs(np.asarray(self.rows, dtype=np.float64) - center), window=window
        )

    def at_or_below(self, candidates):
        """:func:`center_counts_on` of the rows (labels) on public ``candidates``."""
        return center_counts_on(self.rows, candidates)

    def signed_magnitude(self, window):
        """:func:`signed_magnitude_counts` of the rows (labels)."""
        return signed_magnitude_counts(self.rows, window=window)

    def scores(self, score, window):
        """:func:`upper_bound_counts` of ``score(rows)``, one nonnegative score per row."""
        return upper_bound_counts(score(self.rows), window=window)


def release_range(
    values, *, epsilon, n_public, rng, label, window=None, center=None, counts=RowCounts
):
    """A DP range ``(center, half_width)`` of signed ``values``: pure epsilon-DP, one event.

    ``values`` lie mostly in ``[center - half_width, center + half_width]``.
    Below :data:`RANGE_REFINE_EVIDENCE` (``n_public * epsilon``, public), one
    release of a signed magnitude (:func:`release_signed_magnitude`).  From
    it, three releases, each pure ``epsilon / 3``-DP, each restricted by the
    ones before it, so that no release can be far off the others:

    1. the *magnitude* ``M``, a DP upper bound of ``|values|``
       (:func:`release_upper_bound`, sensitivity 1, monotone: reliable from
       about ``n * epsilon / 3 >= 10``);
    2. the *centre* ``c``, a DP median among the candidates of
       :data:`CENTER_GRID` within ``[-M, M]`` (:func:`center_candidates`;
       over the whole grid, when ``n * epsilon`` is small, it picks a
       centre millions of times off the data, and the fit's predictions
       follow it);
    3. the *half-width* ``h``, a DP upper bound of ``|values - c|`` among
       the candidates of :data:`GRID` up to ``M + |c|`` (which bounds
       ``|v - c|`` wherever ``|v| <= M``).

    With a public ``center`` (0 for a model without intercept) only the
    half-width is released, on the whole of ``epsilon``.  The events are
    :func:`range_events` (with a released centre).  ``counts`` reads the
    values (:class:`RowCounts`, or ``sklearn_dp._dask.ChunkCounts`` for a
    Dask array).

    Returns
    -------
    center, half_width : float
    events : list of DpEvent
    """
    rows = counts(values)

    def upper_bound(spread_center, epsilon, what, cap=None):
        utilities = upper_bound_utilities_from_counts(*rows.spread(spread_center, window), n_public)
        if cap is not None:
            utilities = capped_utilities(utilities, cap)
        return release_upper_bound_from_utilities(
            utilities, epsilon=epsilon, rng=rng, label=f"{label} ({what})"
        )

    if center is not None:
        width = upper_bound(float(center), epsilon, "half-width")
        return float(center), width.value, width.events
    if float(n_public) * epsilon < RANGE_REFINE_EVIDENCE:
        center, half_width = release_signed_magnitude(
            rows.signed_magnitude(signed_magnitude_window(n_public, epsilon, window)),
            epsilon=epsilon,
            n_public=n_public,
            rng=rng,
            label=f"{label} (signed magnitude)",
        )
        return center, half_width, range_events(epsilon, label)
    third = epsilon / 3.0
    magnitude = upper_bound(0.0, third, "magnitude")
    candidates = center_candidates(magnitude.value)
    center = release_center_on(
        *rows.at_or_below(candidates),
        candidates,
        epsilon=third,
        rng=rng,
        label=f"{label} (centre)",
    )
    width = upper_bound(center.value, third, "half-width", cap=magnitude.value + abs(center.value))
    return center.value, width.value, range_events(epsilon, label)


def row_linf_norms(X):
    """``max_j |X[i, j]|`` for each row of a dense array or CSR matrix (float64, no copy of X)."""
    n = X.shape[0]
    out = np.zeros(n)
    if X.shape[1] == 0:
        return out
    if sp.issparse(X):
        lengths = np.diff(X.indptr)
        nonempty = lengths > 0
        if np.any(nonempty):
            magnitudes = np.abs(np.asarray(X.data, dtype=np.float64))
            starts = X.indptr[:-1][nonempty]
            out[nonempty] = np.maximum.reduceat(magnitudes, starts)
        return out
    for start in range(0, n, BLOCK_ROWS):
        block = np.asarray(X[start : start + BLOCK_ROWS], dtype=np.float64)
        out[start : start + BLOCK_ROWS] = np.max(np.abs(block), axis=1)
    return out


def _release_row_bound(X, score, *, epsilon, n_public, rng, label, window, lean, counts):
    """:func:`release_upper_bound` of ``score(X)`` (one score per row), read through ``counts``."""
    utilities = upper_bound_utilities_from_counts(
        *counts(X).scores(score, window), tilt_weight(n_public, epsilon) if lean else n_public
    )
    return release_upper_bound_from_utilities(utilities, epsilon=epsilon, rng=rng, label=label)


def release_row_norm_bound(X, *, epsilon, n_public, rng, window=None, lean=False, counts=RowCounts):
    """A DP bound on ``||X[i]||_2`` (``data_norm``); ``lean``: :func:`tilt_weight` (regressors)."""
    return _release_row_bound(
        X,
        row_l2_norms,
        epsilon=epsilon,
        n_public=n_public,
        rng=rng,
        label="row norm bound",
        window=window,
        lean=lean,
        counts=counts,
    )


def release_feature_bound(X, *, epsilon, n_public, rng, window=None, lean=False, counts=RowCounts):
    """A DP bound on ``max_j |X[i, j]|`` (one ``feature_bound`` for every feature); ``lean`` as above."""
    return _release_row_bound(
        X,
        row_linf_norms,
        epsilon=epsilon,
        n_public=n_public,
        rng=rng,
        label="feature bound",
        window=window,
        lean=lean,
        counts=counts,
    )


def release_bounds(
    X, y, request, epsilons, *, n_public, rng, window, counts=RowCounts, scales=None, lean=False
):
    """The bounds of a fit's ``request``, released: ``(released, events)``.

    ``request`` is ``(rows, labels)``: ``rows`` None, ``"data_norm"`` or
    ``"feature_bound"``; ``labels`` False, True or ``"symmetric"`` (a public
    centre 0: the half-width only).  ``epsilons`` are the rows' and the labels'
    shares.  ``released`` maps ``"data_norm"`` / ``"feature_bound"`` to the
    released bound and ``"labels"`` to ``(center, half_width)``.  With
    released per-feature ``scales`` (:class:`FeatureScales`, in memory only),
    ``"data_norm"`` bounds the rows in standardised units
    (:func:`sklearn_dp._scaled_design.standardized_norms`).  With ``lean``
    (regressors), the row bound's tilt is :func:`tilt_weight`'s: a bound far
    below the rows makes a regressor's predictions on new rows explode, one
    far above them only flattens them.  ``counts`` reads the rows
    (:class:`RowCounts`, or ``sklearn_dp._dask.ChunkCounts`` for Dask arrays).
    """
    rows, labels = request
    epsilon_rows, epsilon_labels = epsilons
    released, events = {}, []
    if rows is not None:
        release = {"data_norm": release_row_norm_bound, "feature_bound": release_feature_bound}[
            rows
        ]
        if scales is not None and rows == "data_norm":
            from ._scaled_design import standardized_norms

            bound = release_upper_bound(
                standardized_norms(X, scales.center, scales.scale, scales.clip),
                epsilon=epsilon_rows,
                n_public=tilt_weight(n_public, epsilon_rows) if lean else n_public,
                rng=rng,
                label="row norm bound",
                window=window,
            )
        else:
            bound = release(
                X,
                epsilon=epsilon_rows,
                n_public=n_public,
                rng=rng,
                window=window,
                lean=lean,
                counts=counts,
            )
        released[rows] = bound.value
        events += bound.events
    if labels:
        center, half_width, label_events = release_range(
            y,
            epsilon=epsilon_labels,
            n_public=n_public,
            rng=rng,
            label="label range",
            window=LABEL_WINDOW,
            center=0.0 if labels == "symmetric" else None,
            counts=counts,
        )
        released["labels"] = (center, half_width)
        events += label_events
    return released, events


def feature_columns(X):
    """Yield ``(j, column)`` for each column of X: its n values as float64, one column at a time.

    For CSR input the stored values are gathered by one stable sort of the
    column indices and each column is completed with its implicit zeros (a
    dense copy of one column at a time, never of X).
    """
    n, d = X.shape
    if sp.issparse(X):
        order = np.argsort(X.indices, kind="stable")
        data = np.asarray(X.data, dtype=np.float64)[order]
        rows = np.repeat(np.arange(n), np.diff(X.indptr))[order]
        counts = np.bincount(X.indices, minlength=d)
        ends = np.cumsum(counts)
        starts = ends - counts
        for j in range(d):
            column = np.zeros(n)
            column[rows[starts[j] : ends[j]]] = data[starts[j] : ends[j]]
            yield j, column
        return
    for j in range(d):
        yield j, np.asarray(X[:, j], dtype=np.float64)


def planned_events(request, epsilons):
    """The events of the bound releases of an estimator's fit, known before the data.

    ``request = (rows, labels)`` as decided by the estimator (``rows`` in
    {None, "data_norm", "feature_bound"}), ``epsilons = (epsilon_rows,
    epsilon_labels)``.  The same events (names included) as the releases
    record.
    """
    rows, labels = request
    epsilon_rows, epsilon_labels = epsilons
    events = []
    if rows == "data_norm":
        events.append(selection_event(epsilon_rows, "row norm bound"))
    elif rows == "feature_bound":
        events.append(selection_event(epsilon_rows, "feature bound"))
    if labels == "symmetric":  # a public centre 0 (no intercept): the half-width only
        events.append(selection_event(epsilon_labels, "label range (half-width)"))
    elif labels:
        events += range_events(epsilon_labels, "label range")
    return events


def composed_release_epsilon(n_releases, epsilon_share, delta, prefix):
    """Epsilon of each of ``n_releases`` exponential mechanisms so that they cost about ``epsilon_share``.

    Basic composition gives ``epsilon_share / n_releases``; with ``delta >
    0`` zCDP composition (``epsilon^2 / 8`` each) allows more when there are
    many (per-feature bounds), and the larger is used: the largest epsilon
    each whose composition with ``prefix`` costs at most ``epsilon_share``
    more than ``prefix`` under :func:`~sklearn_dp.accounting.epsilon_of_event`
    (bisection).  A choice of shares only: every fit's whole event is
    checked against its (epsilon, delta) by the calibration that follows.
    """
    from dp_accounting import dp_event as dpe

    basic = epsilon_share / n_releases
    if delta == 0:
        return basic
    base = epsilon_of_event(prefix, delta)

    def cost(each):
        ems = dpe.SelfComposedDpEvent(
            PureEpsilonDpEvent(each, "exponential mechanism: bound"), n_releases
        )
        return epsilon_of_event(dpe.ComposedDpEvent([prefix, ems]), delta) - base

    if cost(basic * 1.01) > epsilon_share:
        return basic
    low, high = basic, 2.0 * basic
    while cost(high) <= epsilon_share:
        low, high = high, 2.0 * high
    for _ in range(30):
        middle = 0.5 * (low + high)
        if cost(middle) <= epsilon_share:
            low = middle
        else:
            high = middle
    return low
