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
    smaller of two bounds that handle equally many rows well.  The chosen
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

A range is ``[c - h, c + h]``: a magnitude ``M`` (an upper bound of
``|v_i|``), a centre ``c`` (a median among the centres within ``M``) and an upper
bound ``h <= M + |c|`` of ``|v_i - c|``, a third of epsilon each
(:func:`release_range`).

Each release goes through the noise gateway (:func:`sklearn_dp._noise.exponential`)
and is recorded as ``PureEpsilonDpEvent(epsilon, "exponential mechanism: ...")``
(:data:`sklearn_dp.accounting.EXPONENTIAL_MECHANISM`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from . import _noise
from ._data import row_l2_norms
from ._design import BLOCK_ROWS
from ._memo import memoize
from .accounting import EXPONENTIAL_MECHANISM, PureEpsilonDpEvent, epsilon_of_event

__all__ = [
    "GRID",
    "CENTER_GRID",
    "WINDOW",
    "REGRESSOR_ROW_WINDOW",
    "CLASSIFIER_ROW_WINDOW",
    "LABEL_WINDOW",
    "TILT",
    "BOUNDS_EPSILON_FRACTION",
    "LABEL_RANGE_EPSILON_FRACTION",
    "BoundRelease",
    "upper_bound_utilities",
    "center_utilities",
    "release_upper_bound",
    "release_center",
    "release_range",
    "row_linf_norms",
    "release_row_norm_bound",
    "release_feature_bound",
    "feature_columns",
    "planned_events",
    "SCALING_EPSILON_FRACTION",
    "SCALING_MIN_EVIDENCE",
    "SCALING_FLOOR_PART",
    "scale_release_epsilon",
    "composed_release_epsilon",
    "FeatureScales",
    "release_feature_scales",
    "feature_scale_utilities",
    "FEATURE_GRID",
    "FEATURE_HALF_WIDTH_WINDOW",
    "planned_scale_events",
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


@dataclass(frozen=True)
class BoundRelease:
    """A released bound (or centre), public from now on, with its mechanism."""

    value: float
    events: list = field(default_factory=list)


def _sorted_scores(values):
    values = np.asarray(values, dtype=np.float64).ravel()
    return np.sort(values)


def upper_bound_counts(scores, *, window=None):
    """``(above, small)``: per candidate b of :data:`GRID`, ``#{s > b}`` and ``#{s < b / window}``.

    Counts over a public grid: the counts of a union of row chunks are the
    sums of the chunks' counts (how Dask fits compute them).
    """
    window = WINDOW if window is None else float(window)
    s = _sorted_scores(scores)
    above = s.size - np.searchsorted(s, GRID, side="right")
    small = np.searchsorted(s, GRID / window, side="left")
    return above, small


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
    s = _sorted_scores(values)
    return np.searchsorted(s, CENTER_GRID, side="right"), s.size


def center_utilities_from_counts(at_or_below, size):
    """The utilities of :func:`center_utilities` from its counts (:func:`center_counts`)."""
    return -np.abs(at_or_below - 0.5 * size)


def center_utilities(values):
    """Utilities of the candidates :data:`CENTER_GRID` for the median of ``values`` (sensitivity 1/2)."""
    return center_utilities_from_counts(*center_counts(values))


def _event(epsilon, what):
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
    events = [] if math.isinf(epsilon) else [_event(epsilon, label)]
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
    events = [] if math.isinf(epsilon) else [_event(epsilon, label)]
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
    s = _sorted_scores(values)
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
    return index, ([] if math.isinf(epsilon) else [_event(epsilon, label)])


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


def release_range(values, *, epsilon, n_public, rng, label, window=None, center=None):
    """A DP range ``(center, half_width)`` of signed ``values``: a third of epsilon each release.

    ``values`` lie mostly in ``[center - half_width, center + half_width]``.
    Three releases, each pure ``epsilon / 3``-DP, each restricted by the
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
    half-width is released, on the whole of ``epsilon``.

    Returns
    -------
    center, half_width : float
    events : list of DpEvent
    """
    if center is not None:
        spread = np.abs(np.asarray(values, dtype=np.float64) - float(center))
        width = release_upper_bound(
            spread,
            epsilon=epsilon,
            n_public=n_public,
            rng=rng,
            label=f"{label} (half-width)",
            window=window,
        )
        return float(center), width.value, width.events
    third = epsilon / 3.0
    values = np.asarray(values, dtype=np.float64)
    magnitude = release_upper_bound(
        np.abs(values),
        epsilon=third,
        n_public=n_public,
        rng=rng,
        label=f"{label} (magnitude)",
        window=window,
    )
    candidates = center_candidates(magnitude.value)
    center = release_center_on(
        *center_counts_on(values, candidates),
        candidates,
        epsilon=third,
        rng=rng,
        label=f"{label} (centre)",
    )
    width = release_upper_bound_from_utilities(
        capped_utilities(
            upper_bound_utilities(np.abs(values - center.value), n_public, window=window),
            magnitude.value + abs(center.value),
        ),
        epsilon=third,
        rng=rng,
        label=f"{label} (half-width)",
    )
    return center.value, width.value, magnitude.events + center.events + width.events


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


def release_row_norm_bound(X, *, epsilon, n_public, rng, window=None):
    """A DP bound on ``||X[i]||_2`` (``data_norm``)."""
    return release_upper_bound(
        row_l2_norms(X),
        epsilon=epsilon,
        n_public=n_public,
        rng=rng,
        label="row norm bound",
        window=window,
    )


def release_feature_bound(X, *, epsilon, n_public, rng, window=None):
    """A DP bound on ``max_j |X[i, j]|`` (one ``feature_bound`` for every feature)."""
    return release_upper_bound(
        row_linf_norms(X),
        epsilon=epsilon,
        n_public=n_public,
        rng=rng,
        label="feature bound",
        window=window,
    )


@dataclass(frozen=True)
class BoundReleases:
    """The ``"auto"`` bound releases of one data backend.

    In memory: :data:`IN_MEMORY`; on Dask arrays: ``sklearn_dp._dask.BOUND_RELEASES``
    (the same releases, their counts summed over the chunks).  Each has the
    signature of the in-memory function of the same role.
    """

    row_norm_bound: Callable
    feature_bound: Callable
    label_range: Callable


IN_MEMORY = BoundReleases(release_row_norm_bound, release_feature_bound, release_range)


def release_bounds(
    X, y, request, epsilons, *, n_public, rng, window, releases=IN_MEMORY, scales=None
):
    """The bounds of a fit's ``request``, released: ``(released, events)``.

    ``request`` is ``(rows, labels)``: ``rows`` None, ``"data_norm"`` or
    ``"feature_bound"``; ``labels`` False, True or ``"symmetric"`` (a public
    centre 0: the half-width only).  ``epsilons`` are the rows' and the labels'
    shares.  ``released`` maps ``"data_norm"`` / ``"feature_bound"`` to the
    released bound and ``"labels"`` to ``(center, half_width)``.  With
    released per-feature ``scales`` (:class:`FeatureScales`, in memory only),
    ``"data_norm"`` bounds the rows in standardised units
    (:func:`sklearn_dp._scaled_design.standardized_norms`).
    """
    rows, labels = request
    epsilon_rows, epsilon_labels = epsilons
    released, events = {}, []
    if rows is not None:
        release = {"data_norm": releases.row_norm_bound, "feature_bound": releases.feature_bound}[
            rows
        ]
        if scales is not None and rows == "data_norm":
            from ._scaled_design import standardized_norms

            bound = release_upper_bound(
                standardized_norms(X, scales.center, scales.scale, scales.clip),
                epsilon=epsilon_rows,
                n_public=n_public,
                rng=rng,
                label="row norm bound",
                window=window,
            )
        else:
            bound = release(X, epsilon=epsilon_rows, n_public=n_public, rng=rng, window=window)
        released[rows] = bound.value
        events += bound.events
    if labels:
        center, half_width, label_events = releases.label_range(
            y,
            epsilon=epsilon_labels,
            n_public=n_public,
            rng=rng,
            label="label range",
            window=LABEL_WINDOW,
            center=0.0 if labels == "symmetric" else None,
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
        events.append(_event(epsilon_rows, "row norm bound"))
    elif rows == "feature_bound":
        events.append(_event(epsilon_rows, "feature bound"))
    if labels == "symmetric":  # a public centre 0 (no intercept): the half-width only
        events.append(_event(epsilon_labels, "label range (half-width)"))
    elif labels:
        for part in ("magnitude", "centre", "half-width"):
            events.append(_event(epsilon_labels / 3.0, f"label range ({part})"))
    return events


@dataclass(frozen=True)
class FeatureScales:
    """Released per-feature centres and scales (public from now on)."""

    center: np.ndarray
    scale: np.ndarray
    clip: np.ndarray


def _scale_parts(centered):
    return ("magnitude", "centre", "half-width") if centered else ("magnitude",)


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


#: With ``delta > 0`` the per-feature releases are composed as zCDP
#: (:func:`scale_release_epsilon`), so each may take a larger epsilon than
#: ``share / releases``; their epsilons summed (basic composition, which is
#: what certifies a solver planned from released values: the fit's
#: ``floor``) then exceed the share.  They may take at most this part of the
#: basic-composition remainder left to such a solver (the rest of the fit
#: is certified numerically).  Measured with ``benchmarks/bench_raw_tables.py``.
SCALING_FLOOR_PART = 0.5


@memoize(maxsize=1024)
def scale_release_epsilon(n_features, epsilon, centered, delta=0.0, count_epsilon=None, most=None):
    """The epsilon of each release of :func:`release_feature_scales` (public).

    ``epsilon / (n_features * parts)`` (basic composition) with ``delta =
    0`` or no ``count_epsilon``.  Otherwise the ``n_features * parts``
    exponential mechanisms are composed as ``n_features * parts * e^2 /
    8``-zCDP (bounded range, Cesar and Rogers 2021) after the row count (a
    Laplace mechanism of epsilon ``count_epsilon``):
    :func:`composed_release_epsilon` finds the largest ``e`` whose
    composition with the count costs at most ``epsilon`` more than the count
    at ``delta``; with ``most``, the releases' summed epsilons
    (``n_features * parts * e``) are kept at or below it.  Never below the
    basic ``e``.  A choice of noise only: the fit's whole event, with these
    releases at ``e`` each, is what its solver's share is certified against.
    """
    releases = max(n_features, 1) * len(_scale_parts(centered))
    basic = epsilon / releases
    if delta == 0 or count_epsilon is None or math.isinf(epsilon):
        return basic
    from dp_accounting import dp_event as dpe

    count = dpe.LaplaceDpEvent(1.0 / float(count_epsilon))
    each = composed_release_epsilon(releases, float(epsilon), float(delta), count)
    if most is not None:
        each = min(each, float(most) / releases)
    return max(basic, each)


def scale_release_cost(n_features, centered, each):
    """The summed epsilons of :func:`release_feature_scales` (basic composition; public)."""
    return max(n_features, 1) * len(_scale_parts(centered)) * float(each)


def planned_scale_events(n_features, epsilon, centered, each=None):
    """The events of :func:`release_feature_scales`, known before the data.

    One exponential mechanism per feature and part, each pure ``each``-DP
    (default ``epsilon / (n_features * parts)``): ``parts`` is 3 with centres
    (magnitude, centre, half-width: :func:`release_range`), 1 without (the
    magnitude only).  Grouped as one ``SelfComposedDpEvent`` per part.
    """
    if n_features == 0 or math.isinf(epsilon):
        return []
    from dp_accounting import dp_event as dpe

    parts = _scale_parts(centered)
    if each is None:
        each = epsilon / (n_features * len(parts))
    return [
        dpe.SelfComposedDpEvent(_event(each, f"feature scales ({part})"), n_features)
        for part in parts
    ]


#: The tilt of the features' scales, far below :data:`TILT`: it only breaks
#: ties among equally good bounds.  The most a bound can gain from it,
#: dropping from 1 to the smallest candidate, is ``FEATURE_TILT * n / 2``
#: rows: less than the rows of a one-hot category of 0.1% of the rows, whose
#: scale must stay 1 (a smaller one blows its entries up).
FEATURE_TILT = 0.002
#: A data-independent preference for scales near 1, in units of the
#: release's temperature per decade: the base measure ``exp(-FEATURE_PRIOR *
#: |log10 b|)`` of the exponential mechanism over the candidates ``b`` (no
#: privacy cost: it does not depend on the data).  Where the data decide
#: (``n * epsilon`` large, a dense column in natural units) it changes
#: little: a magnitude of 10^4 pays 4 units against the rows it would clip.
#: Where they do not (a 0/1 column, whose utility is flat over ``[1, 10)``
#: and equally bad everywhere else, with few rows per feature) it keeps the
#: draw near 1, where the column needs no scaling, instead of spreading it
#: over the 18 decades of the grid, where a large draw shrinks the column to
#: nothing and a small one clips its ones away.  A steeper preference (2 per
#: decade) pulled longitudes and populations below their values on 3,000
#: rows at epsilon=0.5.  Measured with ``benchmarks/bench_raw_tables.py``.
FEATURE_PRIOR = 1.0


#: Candidates of a feature's scales: :data:`GRID` continued to 1e10, so that
#: a half-width up to ``2 M + |c|`` (``M <= 1e8`` on :data:`GRID`, ``|c| <=
#: 2 M``) always has a candidate above every distance it bounds (otherwise a
#: centre far off the data would leave every candidate equally bad, and a
#: random one would turn the feature into a huge constant).
FEATURE_GRID = 10.0 ** (np.arange(-64, 81) / 8.0)


def _with_prior(utilities, epsilon):
    """``utilities`` plus the base measure :data:`FEATURE_PRIOR` (sensitivity 0; none at ``inf``).

    ``utilities`` are those of the candidates of :data:`FEATURE_GRID` from
    its smallest on (:func:`feature_scale_utilities`).
    """
    if math.isinf(epsilon):
        return utilities
    return utilities - FEATURE_PRIOR * _decades_from_one(utilities.size) / float(epsilon)


def _decades_from_one(size):
    """``|log10 b|`` of the first ``size`` candidates ``b`` of :data:`FEATURE_GRID` (public)."""
    return np.abs(np.log10(FEATURE_GRID[:size]))


def feature_scale_utilities(values, n_public, *, window=WINDOW, cap=None):
    """Utilities of the candidates of :data:`FEATURE_GRID` for the scale of one feature.

    Those of :func:`upper_bound_utilities` on the *nonzero* ``|values|``,
    with ``window`` and a tilt of :data:`FEATURE_TILT`, for the candidates up
    to ``cap`` (public; default the largest of :data:`GRID`).  Zeros count against
    every candidate alike, so on a mostly-zero column (a rare one-hot
    category, a capital gain) they would leave the choice to the tilt,
    which then picks the smallest candidate and blows the nonzero entries up
    by orders of magnitude.  Adding a row adds 0 or 1 to one count:
    sensitivity 1, monotone.
    """
    scores = _sorted_scores(np.abs(np.asarray(values, dtype=np.float64)))
    scores = scores[scores > 0]
    # Candidates of FEATURE_GRID up to cap (default: those of GRID); the
    # smallest always stays.
    cap = GRID[-1] if cap is None else cap
    grid = FEATURE_GRID[: max(1, int(np.searchsorted(FEATURE_GRID, cap, side="right")))]
    above = scores.size - np.searchsorted(scores, grid, side="right")
    small = np.searchsorted(scores, grid / float(window), side="left")
    tilt = FEATURE_TILT * float(n_public) * np.arange(grid.size) / GRID.size
    return -(above + small).astype(np.float64) - tilt


def _release_feature_bound(utilities, epsilon, rng, label):
    """The exponential mechanism on :func:`feature_scale_utilities` (sensitivity 1, monotone)."""
    scale = 0.0 if math.isinf(epsilon) else 1.0 / float(epsilon)
    utilities = _with_prior(utilities, epsilon)
    index = _noise.exponential(utilities, sensitivity=1.0, scale=scale, rng=rng, label=label)
    return float(FEATURE_GRID[index])


#: The window of a feature's half-width around its released centre, tighter
#: than the magnitude's (:data:`WINDOW`): the utility is flat between the
#: largest distance and ``window`` times the smallest of the bulk (a 0/1
#: column's distances are one value), so with window 10 a scale up to ten
#: times too large is as likely as the right one, and shrinks the feature's
#: standardised values (and its share of the signal) as much.  The
#: magnitude keeps window 10: it is the clip of the raw values, which must
#: cover the bulk.  Measured with ``benchmarks/bench_raw_tables.py``.
FEATURE_HALF_WIDTH_WINDOW = 4.0


#: Number of steps of the centre's grid on each side of 0
#: (:func:`feature_center_candidates`).  Fine: the magnitude is often drawn
#: several times above a feature's values where the data do not tell the
#: candidates apart (the prior prefers wide bounds), and a centre is only
#: as close to the median as one step ``M / (STEPS / 2)``; with 256 a
#: longitude near -120 (spread 2) whose magnitude came out as 750 was
#: centred 3 off.  More candidates cost the median's release little: the
#: intervals outside the data have the worst utility.
FEATURE_CENTER_STEPS = 4096


def feature_center_candidates(magnitude):
    """The centres a feature may take for a released magnitude ``M``: ``2 k M / S``, ``|k| <= S``.

    ``S`` is :data:`FEATURE_CENTER_STEPS`.

    Evenly spaced, unlike :data:`CENTER_GRID` (dense near 0): a feature's
    median falls between the candidates of a gap in its values (two modes,
    integer steps) as often as not, and the median's utility is then about
    as bad for every candidate on one side of the data; on a grid dense near
    0 most of those lie near 0 and one of them is drawn, however far 0 is
    from the data (a longitude near -120 centred at 0.003).  The magnitude
    (window 2) may clip a long upper tail, hence the span ``[-2 M, 2 M]``;
    the median is released among the intervals between them
    (:func:`release_interval_center`), so a feature narrower than the spacing
    ``2 M / S`` is still centred within one interval of its values.
    """
    steps = np.arange(-FEATURE_CENTER_STEPS, FEATURE_CENTER_STEPS + 1)
    return 2.0 * float(magnitude) * steps / FEATURE_CENTER_STEPS


#: With centres, features whose released magnitude is at most this are on
#: the unit scale already (0/1 columns, standardised ones): they keep their
#: units, clipped to this public value, and get no centre or half-width
#: (their releases are skipped).  A standard normal column's magnitude comes
#: out between 1.3 and 7.5; 10 also took in occupancies and incomes in
#: natural units, which then went uncentred.  Without centres (the
#: entrywise solvers) the rule is not used: scaled to this value, one-hot
#: columns lost 6 points of accuracy with ``dp_cd`` on 3,000 rows.
#: Measured with ``benchmarks/bench_raw_tables.py``.
FEATURE_UNIT_MAGNITUDE = 4.0


def release_feature_scales(X, *, epsilon, n_public, rng, centered, each=None):
    """Per-feature DP centres and scales of X: ``(FeatureScales, events)``.

    For each feature ``j`` (one column at a time, :func:`feature_columns`),
    a magnitude ``M_j`` (an upper bound of ``|x_j|``, window :data:`WINDOW`),
    which is also the fit's entrywise clip of the raw values; with
    ``centered`` two more releases on the clipped values, as in
    :func:`release_range`: a centre ``c_j`` (a DP median among the intervals
    between :func:`feature_center_candidates`) and a half-width ``h_j``, the larger
    of upper bounds of ``x_j - c_j`` on the rows above the centre and of
    ``c_j - x_j`` on the rows below it (window
    :data:`FEATURE_HALF_WIDTH_WINDOW`, up to ``2 M_j + |c_j|``; one
    release by parallel composition: a row moves one of the two); without,
    ``c_j = 0`` and ``h_j = M_j``.  The bounds use
    :func:`feature_scale_utilities` (sensitivity 1, monotone), the centre the
    median's utility (sensitivity 1/2).  Each release is pure
    ``each``-DP (default ``epsilon / (d * parts)``, ``parts`` = 3 or 1; the
    fit passes :func:`scale_release_epsilon`), so the whole is pure
    ``d * parts * each``-DP by basic composition, and ``d * parts * each^2 /
    8``-zCDP, which composes more tightly with the rest of the fit.
    ``n_public`` (the fit's released count, public) sets the tilt.

    With ``centered``, a feature whose magnitude is at most
    :data:`FEATURE_UNIT_MAGNITUDE` is on the unit scale already: its clip
    is that public value, its centre 0 and its scale 1, and its other two
    releases are not run (a function of the released magnitude: fewer
    mechanisms than charged, never others).  Without centres a magnitude
    ``M`` scales ``clip(x, +-M) / M`` into ``[-1, 1]``, which keeps a 0/1
    column's two values apart whatever ``M``.
    """
    n_features = X.shape[1]
    center, scale, clip = np.zeros(n_features), np.ones(n_features), np.ones(n_features)
    if n_features == 0:
        return FeatureScales(center, scale, clip), []
    if each is None:
        each = epsilon / (n_features * len(_scale_parts(centered)))
    for j, column in feature_columns(X):
        magnitude = _release_feature_bound(
            feature_scale_utilities(column, n_public), each, rng, "feature scales (magnitude)"
        )
        clip[j] = magnitude
        if centered and magnitude <= FEATURE_UNIT_MAGNITUDE:
            # Already on the unit scale (a 0/1 column, a standardised one):
            # kept as it is, as the single row bound keeps it, clipped to
            # the public unit magnitude (a magnitude drawn too small would
            # clip a 0/1 column's ones away), with no centre or half-width,
            # whose noise would only move a column that needs neither.
            clip[j] = FEATURE_UNIT_MAGNITUDE
            continue
        if not centered:
            scale[j] = magnitude
            continue
        # The centre and half-width of the values the fit uses, clipped to
        # the magnitude: consistent with it even when it is far too small (a
        # rare 0/1 column's few ones missed: {0, M} is then centred and
        # scaled as {0, 1} would be).
        column = np.clip(column, -magnitude, magnitude)
        candidates = feature_center_candidates(magnitude)
        center[j] = release_interval_center(
            *center_counts_on(column, candidates),
            candidates,
            epsilon=each,
            rng=rng,
            label="feature scales (centre)",
        ).value
        # The distances above and below the centre, each bounded on its own
        # rows (a row is above, below or at the centre: it moves one of the
        # two utilities, so the pair is one epsilon-DP release by parallel
        # composition).  One bound of both |x - c| would be pulled down by
        # the many rows just off a centre drawn near the bulk of a 0/1
        # column, and blow up its rare other value.
        cap = 2.0 * magnitude + abs(center[j])
        above, below = (
            _release_feature_bound(
                feature_scale_utilities(side, n_public, window=FEATURE_HALF_WIDTH_WINDOW, cap=cap),
                each,
                rng,
                f"feature scales (half-width, {name})",
            )
            for side, name in (
                (np.maximum(column - center[j], 0.0), "above"),
                (np.maximum(center[j] - column, 0.0), "below"),
            )
        )
        scale[j] = max(above, below)
    # One release per feature and part, as planned (the events name parts, not features).
    events = (
        [] if math.isinf(epsilon) else planned_scale_events(n_features, epsilon, centered, each)
    )
    return FeatureScales(center, scale, clip), events
