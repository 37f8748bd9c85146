"""Per-feature scales released privately: what ``feature_scaling=True`` standardises with.

Each feature's magnitude (and, for a centred fit, its centre and half-width)
is released by an exponential mechanism over a public grid, as the bounds of
:mod:`sklearn_dp._bounds` are; the releases of all features are composed as
zCDP where that allows each a larger epsilon.  A centred fit with many
features (:data:`VECTOR_MIN_FEATURES`) instead takes each feature's
magnitude, centre and scale from three vector releases over all features at
once (:func:`release_centered_scales`: a Gaussian histogram of magnitudes,
then twice the clipped sums and sums of squares), whose noise grows with
``sqrt(d)`` rather than with ``d``.  The released values are
public from then on: :class:`sklearn_dp._scaled_design.StandardizedDesign`
works in those units and the estimator reports its coefficients in the
caller's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _noise
from ._bounds import (
    GRID,
    WINDOW,
    center_counts_on,
    composed_release_epsilon,
    feature_columns,
    release_interval_center,
    selection_event,
    sorted_scores,
)
from ._memo import memoize

__all__ = [
    "SCALING_FLOOR_PART",
    "scale_release_epsilon",
    "scale_release_cost",
    "FeatureScales",
    "release_feature_scales",
    "feature_scale_utilities",
    "FEATURE_GRID",
    "FEATURE_HALF_WIDTH_WINDOW",
    "planned_scale_events",
    "AUTO_SCALING_MAGNITUDE",
    "AUTO_SCALING_ROWS",
    "auto_scaling_event",
    "release_needs_scaling",
    "VECTOR_MIN_FEATURES",
    "MAGNITUDE_EDGES",
    "CENTERED_RELEASES",
    "SCALE_REACH",
    "CENTERED_NOISE_FACTOR",
    "SCALES_DELTA_FRACTION",
    "CENTERED_MIN_EVIDENCE",
    "centered_scale_events",
    "centered_scale_multiplier",
    "centered_count_noise",
    "release_centered_scales",
]


@dataclass(frozen=True)
class FeatureScales:
    """Released per-feature centres and scales (public from now on)."""

    center: np.ndarray
    scale: np.ndarray
    clip: np.ndarray


def _scale_parts(centered):
    return ("magnitude", "centre", "half-width") if centered else ("magnitude",)


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
        dpe.SelfComposedDpEvent(selection_event(each, f"feature scales ({part})"), n_features)
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
    scores = sorted_scores(np.abs(np.asarray(values, dtype=np.float64)))
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


#: Centred fits with at least this many features take their scales from
#: vector releases (:func:`release_centered_scales`), whose noise grows with
#: ``sqrt(d)``; with fewer, from three exponential mechanisms per feature
#: (:func:`release_feature_scales`), whose rank-based utilities centre and
#: scale a narrow feature far from 0 (a longitude) more precisely, and which
#: the fit's numerical composition charges less where they are not used.
#: Measured with ``benchmarks/bench_raw_tables.py`` (medians of 10 splits;
#: of 40 for ``--scaled``), the vector releases against the per-feature
#: ones: at 13 features, R^2 0.660 / 0.681 / 0.695 against 0.689 / 0.705 /
#: 0.706 with ``True`` on 12,000 housing rows at epsilon 0.5 / 1 / 2, and
#: 0.470 against 0.545 at epsilon 0.5 on 3,000; at 64 (``load_digits``),
#: accuracy 0.720 against 0.827 with ``True`` at epsilon 2; at 200 features
#: on 4,000 rows the per-feature releases fall back (0.509 accuracy at
#: epsilon 1) where the vector releases reach 0.646.
VECTOR_MIN_FEATURES = 100
#: Edges of the bins of ``|x|`` in which :func:`release_centered_scales`
#: counts each feature's nonzero entries: half-decades from 10^-8.25 to
#: 10^10.25 (the span of :data:`FEATURE_GRID`), 1 in the middle of a bin, so
#: that a 0/1 column's ones and a standard normal column's bulk fall in the
#: same bin, whose top is 10^0.25.
MAGNITUDE_EDGES = 10.0 ** (np.arange(-17, 21) / 2.0 + 0.25)
#: The releases of :func:`release_centered_scales`: the histogram of
#: magnitudes and two of moments.
CENTERED_RELEASES = 3
#: The second release of moments is in units of this many of the spreads
#: the first gave (about the centre it gave): wide enough for the bulk of
#: a feature whose first spread was right, and a zoom of ``M / (4 spread)``
#: on one whose spread the first could not resolve (it is then too wide).
SCALE_REACH = 4.0
#: The releases of :func:`release_centered_scales` take this many times the
#: least noise their share allows (:func:`centered_scale_multiplier`), about
#: half of the share's privacy as Gaussian mechanisms compose: the solver
#: keeps the rest.  Measured with ``benchmarks/bench_raw_tables.py`` (6
#: splits at epsilon 1, ``feature_scaling=True``, mean score by factor 1 /
#: 1.4 / 1.8): 4,000 rows of 200 features 0.634 / 0.645 / 0.632 accuracy, a
#: housing table of 3,000 rows 0.611 / 0.642 / 0.632 R^2, an income table
#: of 10,000 rows 0.823 / 0.823 / 0.824 ROC AUC; the defaults on one-hot
#: columns beside standard-normal ones (3,000 rows, R^2, 10 splits, where
#: the share is charged but not used) 0.525 / 0.543 / 0.543.
CENTERED_NOISE_FACTOR = 1.4
#: Share of the fit's delta (after the label set) given to the Gaussian
#: releases of :func:`release_centered_scales` in the basic composition that
#: certifies a solver planned from released values (the solver keeps the rest).
SCALES_DELTA_FRACTION = 0.1
#: The centred scales are used only if the released row count is at least
#: this many times the noise (standard deviation) of each released bin
#: count: the mode bin of a dense column holds a third of the rows or more,
#: and must stand above the largest noise of some 40 bins (about 2.5
#: standard deviations).  Below, the fit falls back to one bound for all
#: features (decided from the released count and public values).  Measured
#: with ``benchmarks/bench_raw_tables.py``.
CENTERED_MIN_EVIDENCE = 10.0


def centered_scale_events(multiplier, pure):
    """The events of :func:`release_centered_scales`: :data:`CENTERED_RELEASES` mechanisms of one noise multiplier.

    Gaussian (``delta > 0``) or Laplace (pure DP) of noise ``multiplier``
    times their sensitivities (the histogram, then the two releases of sums).
    """
    from dp_accounting import dp_event as dpe

    mechanism = dpe.LaplaceDpEvent if pure else dpe.GaussianDpEvent
    return [dpe.SelfComposedDpEvent(mechanism(float(multiplier)), CENTERED_RELEASES)]


@memoize(maxsize=1024)
def centered_scale_multiplier(epsilon, total, delta, count_epsilon=None, most=None):
    """The noise multiplier of :func:`release_centered_scales` (public), and its basic cost.

    ``(multiplier, cost)``: with ``delta = 0``, ``r =``
    :data:`CENTERED_RELEASES` Laplace mechanisms of ``epsilon / r`` each
    (pure).  Otherwise ``r`` Gaussian mechanisms that take ``epsilon`` of a
    fit of ``total`` at ``delta`` as Gaussian mechanisms compose: with the
    row count (a Laplace mechanism of epsilon ``count_epsilon``, if any)
    before them, the Gaussian of multiplier ``s`` that meets ``total``
    composed with them has the same privacy as the one that meets ``total -
    epsilon`` without them (``r / multiplier^2 = 1 / s_total^2 - 1 /
    s_rest^2``); their basic-composition cost (their epsilon at
    ``SCALES_DELTA_FRACTION * delta``) kept at most ``most`` (default
    ``epsilon``), and the noise never above what that cost at ``epsilon``
    needs.  Either noise is then multiplied by :data:`CENTERED_NOISE_FACTOR`,
    and ``cost`` is the releases' basic-composition cost at that noise.  A
    choice of noise only: the fit's whole event is what its solver's share
    is certified against.
    """
    from dp_accounting import dp_event as dpe

    from .accounting import calibrate_noise_multiplier, epsilon_of_event

    if math.isinf(epsilon):
        return 0.0, 0.0
    if delta == 0:
        multiplier = CENTERED_NOISE_FACTOR * CENTERED_RELEASES / float(epsilon)
        return multiplier, CENTERED_RELEASES / multiplier
    delta_scales = SCALES_DELTA_FRACTION * float(delta)

    def releases(multiplier):
        return dpe.ComposedDpEvent(centered_scale_events(multiplier, False))

    def basic(cost):
        return calibrate_noise_multiplier(releases, cost, delta_scales)

    prefix = [] if count_epsilon is None else [dpe.LaplaceDpEvent(1.0 / float(count_epsilon))]

    def gaussian(target):
        return calibrate_noise_multiplier(
            lambda s: dpe.ComposedDpEvent(prefix + [dpe.GaussianDpEvent(s)]), target, delta
        )

    rest = float(total) - float(epsilon)
    composed = basic(float(epsilon))
    if rest > 0:
        gap = gaussian(float(total)) ** -2 - gaussian(rest) ** -2
        composed = math.sqrt(CENTERED_RELEASES / gap) if gap > 0 else composed
    multiplier = min(basic(float(epsilon)), max(composed, basic(float(most or epsilon))))
    multiplier *= CENTERED_NOISE_FACTOR
    return multiplier, epsilon_of_event(releases(multiplier), delta_scales)


def centered_count_noise(multiplier, n_features, pure):
    """Standard deviation of the noise on each bin count of :func:`release_centered_scales` (public)."""
    if pure:
        return math.sqrt(2.0) * float(multiplier) * n_features
    return float(multiplier) * math.sqrt(n_features)


def release_centered_scales(X, *, multiplier, pure, n_public, rng):
    """Per-feature DP centres and scales of X from three vector releases: a :class:`FeatureScales`.

    1. For each feature, the counts of its nonzero ``|x_ij|`` in the bins of
       :data:`MAGNITUDE_EDGES`, all features in one release: a row adds 1 to
       one bin of each feature, so the ``d`` histograms have L2 sensitivity
       ``sqrt(d)`` (L1 ``d``).  The magnitude ``M_j`` is the top of the bin
       above the feature's noisy mode (one half-decade of margin): the
       entrywise clip of its raw values.  A feature whose mode is the bin of
       1 (0/1 columns, standardised ones) is on the unit scale already: it
       keeps its units, clipped to :data:`FEATURE_UNIT_MAGNITUDE`, with
       centre 0 and scale 1, and takes no part in what follows.
    2. For the ``k`` other features, with ``w_ij = clip((clip(x_ij, +-M_j)
       - c_j) / r_j, -1, 1)``: the sums over the rows of ``w_ij`` and
       ``w_ij^2``, in one release of L2 sensitivity ``sqrt(2 k)`` (L1 ``2
       k``), give the centre ``c_j + r_j m_j`` and the spread ``r_j
       sqrt(v_j)`` (``m_j`` the noisy mean over ``n_public``, the fit's
       released count, and ``v_j`` the noisy second moment about it,
       clipped to ``[s, 1]`` at the noise ``s`` of the mean, so a spread
       the noise hides leaves a wide scale, never a blown-up feature).
       First about ``c = 0`` in units ``r = M``, then about that centre in
       units of :data:`SCALE_REACH` times that spread: the centre and scale.

    Each release is the Gaussian mechanism of noise ``multiplier`` times its
    L2 sensitivity or, with ``pure``, the Laplace mechanism of scale
    ``multiplier`` times its L1 sensitivity (``1 / multiplier``-DP):
    :func:`centered_scale_events`.  ``k`` and the units of each release are
    functions of the releases before it, so each has a public sensitivity.
    """
    d = X.shape[1]
    bins = MAGNITUDE_EDGES.size + 1
    counts = np.zeros((d, bins))
    for j, column in feature_columns(X):
        magnitudes = np.abs(column[column != 0])
        counts[j] = np.bincount(
            np.searchsorted(MAGNITUDE_EDGES, magnitudes, side="right"), minlength=bins
        )
    noisy = _noisy_vector(counts, d, multiplier, pure, rng, "feature scales (magnitudes)")
    mode = np.argmax(noisy, axis=1)
    top = MAGNITUDE_EDGES[np.minimum(mode + 1, MAGNITUDE_EDGES.size - 1)]
    unit = mode == np.searchsorted(MAGNITUDE_EDGES, 1.0, side="right")
    center, scale = np.zeros(d), np.ones(d)
    clip = np.where(unit, FEATURE_UNIT_MAGNITUDE, top)
    scaled = np.flatnonzero(~unit)
    if scaled.size == 0:
        return FeatureScales(center, scale, clip)
    n = max(float(n_public), 1.0)
    # The moments about 0 in units of the magnitude, then about that centre
    # in units of a few of its spreads: the second release resolves a
    # feature far from 0 (a longitude near -120) that the first cannot.
    center_0, spread = _release_moments(
        X, scaled, top, np.zeros(scaled.size), top[scaled], n, multiplier, pure, rng, "sums"
    )
    reach = SCALE_REACH * spread
    center[scaled], scale[scaled] = _release_moments(
        X, scaled, top, center_0, reach, n, multiplier, pure, rng, "sums about the centres"
    )
    return FeatureScales(center, scale, clip)


def _release_moments(X, features, clip, center, reach, n, multiplier, pure, rng, what):
    """The noisy mean and spread of ``w = clip((clip(x, +-M) - c) / r, -1, 1)``: ``(c + r m, r sqrt(v))``.

    One release of the sums of ``w`` and ``w^2`` of ``features`` (L2
    sensitivity ``sqrt(2 k)``, L1 ``2 k``); ``m`` is the noisy mean over
    ``n`` and ``v`` the noisy second moment about it, clipped to ``[s, 1]``
    at the noise ``s`` of the mean.
    """
    sums = np.zeros((2, features.size))
    for k, j in enumerate(features):
        # Dense X only (a centre would fill a sparse X's implicit zeros).
        column = np.clip(np.asarray(X[:, j], dtype=np.float64), -clip[j], clip[j])
        w = np.clip((column - center[k]) / reach[k], -1.0, 1.0)
        sums[0, k], sums[1, k] = np.sum(w), np.sum(w * w)
    noisy = _noisy_vector(
        sums, 2 * features.size, multiplier, pure, rng, f"feature scales ({what})"
    )
    mean = np.clip(noisy[0] / n, -1.0, 1.0)
    floor = min(centered_count_noise(multiplier, 2 * features.size, pure) / n, 1.0)
    second = np.clip(noisy[1] / n - mean**2, max(floor, 1e-12), 1.0)
    return center + reach * mean, reach * np.sqrt(second)


def _noisy_vector(values, n_features, multiplier, pure, rng, label):
    """``values`` through the gateway: Gaussian of L2 sensitivity ``sqrt(n)``, or Laplace of L1 ``n``."""
    if pure:
        return _noise.laplace(
            values,
            sensitivity=float(n_features),
            scale=multiplier * n_features,
            rng=rng,
            label=label,
        )
    sensitivity = math.sqrt(n_features)
    return _noise.gaussian(
        values, sensitivity=sensitivity, noise_std=multiplier * sensitivity, rng=rng, label=label
    )


#: ``feature_scaling="auto"`` scales the features of a table whose rows hold
#: entries above this in absolute value: columns in natural units (an income
#: in dollars, a population, an age, a longitude) beside others.  A
#: standard normal entry is above it with probability 1e-219; pixel
#: intensities up to 16 (``load_digits``) fit one row bound about as well as
#: scaled ones.  Measured with ``benchmarks/bench_raw_tables.py`` (``--scaled`` too).
AUTO_SCALING_MAGNITUDE = 10.0**1.5
#: ... when the noisy count of such rows is at least this share of the
#: released row count.  A natural-unit column is dense in most tables (every
#: row has an income); a quarter keeps the rare false decision of a table
#: with none away (Laplace noise of scale ``1 / epsilon`` rows against
#: ``n / 4`` rows) and still scales a table whose only large column is
#: filled in a quarter of the rows.
AUTO_SCALING_ROWS = 0.25


def auto_scaling_event(epsilon):
    """The event of :func:`release_needs_scaling` (a Laplace count; known before the data)."""
    from dp_accounting import dp_event as dpe

    return dpe.LaplaceDpEvent(1.0 / float(epsilon))


def release_needs_scaling(X, *, epsilon, n_public, rng):
    """Whether ``feature_scaling="auto"`` scales X: a DP count of its rows with a large entry.

    The number of rows with some ``|x_ij| > AUTO_SCALING_MAGNITUDE``
    (:data:`AUTO_SCALING_MAGNITUDE`; adding or removing a row moves it by at
    most 1: sensitivity 1) is released by the Laplace mechanism, pure
    ``epsilon``-DP; the features are scaled when it is at least
    :data:`AUTO_SCALING_ROWS` times ``n_public`` (the fit's released row
    count).  A function of released values and public constants only.
    """
    large = np.zeros(X.shape[0], dtype=bool)
    for _, column in feature_columns(X):
        large |= np.abs(column) > AUTO_SCALING_MAGNITUDE
    count = float(np.count_nonzero(large))
    if not math.isinf(epsilon):
        count = _noise.laplace(
            count,
            sensitivity=1.0,
            scale=1.0 / float(epsilon),
            rng=rng,
            label="feature scales (rows with a large entry)",
        )
    return bool(count >= AUTO_SCALING_ROWS * float(n_public))
