"""The label set of a classifier fitted without ``classes``: released with DP.

Under add/remove-one neighbouring the labels present in ``y`` are private (one
row can hold the only copy of a label).  A classifier without a public
``classes`` spends a share of its epsilon and delta on noisy counts of the
labels (:func:`release_labels`): a Laplace histogram over public candidate
labels (small integers) and a thresholded histogram of the others;
estimators and searches alike.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from . import _dask, _noise
from ._protocol import COUNT_UPPER_SCALES, PrivateCount
from .accounting import ApproximateDpEvent

__all__ = [
    "LABEL_EPSILON_FRACTION",
    "LABEL_DELTA_FRACTION",
    "LABEL_EPSILON_MIN",
    "LABEL_EPSILON_MAX_FRACTION",
    "label_candidates",
    "label_epsilon",
    "label_thresholds",
    "release_labels",
    "label_set_count",
]

#: Shares of epsilon and delta a classifier spends on releasing its label set
#: when ``classes`` is not given (see :func:`release_labels`).  With 10% of
#: epsilon a 398-row table (breast cancer) lost its minority class of 148 rows
#: in 9 of 10 seeds at epsilon=0.5 (the fit raised); with 20%, in 1
#: (``benchmarks/bench_raw_tables.py``).
LABEL_EPSILON_FRACTION = 0.2
LABEL_DELTA_FRACTION = 0.5
#: The least epsilon the label set gets, within at most
#: :data:`LABEL_EPSILON_MAX_FRACTION` of the fit's.  The release's threshold
#: is ``1 + log(1 / (2 delta)) / epsilon`` rows (:func:`release_labels`), so
#: this floor sets the smallest class a fit at a small epsilon keeps: with
#: 0.14 and the default delta the threshold is 83 rows, and a class of 98
#: rows (15% of a 650-row table) is kept in about 94% of fits at epsilon 0.5,
#: breast cancer's of 148 rows (398 training rows) always.  With 0.1 (a
#: threshold of 116 rows) that 650-row table's minority class was dropped in
#: 38 of 40 seeds at epsilon 0.5 (the fit raised), breast cancer's in 2 of
#: 80; with 0.16 the rest of the fit at epsilon 0.5 gave a constant
#: predictor on raw breast cancer more often (60% of seeds against 40-44%).
#: Measured with ``benchmarks/bench_raw_tables.py`` and 80 seeds of
#: ``DPLogisticRegression(epsilon=0.5)`` on breast cancer as loaded.
LABEL_EPSILON_MIN = 0.14
LABEL_EPSILON_MAX_FRACTION = 0.4


def label_epsilon(epsilon):
    """The epsilon of the label set of a fit at ``epsilon`` (public).

    :data:`LABEL_EPSILON_FRACTION` of it, raised to :data:`LABEL_EPSILON_MIN`
    but to no more than :data:`LABEL_EPSILON_MAX_FRACTION` of it.
    """
    epsilon = float(epsilon)
    share = max(LABEL_EPSILON_FRACTION * epsilon, LABEL_EPSILON_MIN)
    return min(share, LABEL_EPSILON_MAX_FRACTION * epsilon)


#: The labels a numeric label vector most often uses (``0..K-1``, ``1..K``,
#: ``-1/+1``): public candidates, so their noisy counts can be released
#: whether the labels are present or not, with no threshold for privacy (see
#: :func:`release_labels`).  Labels outside it take the thresholded path.
LABEL_CANDIDATES = (-1, 31)
#: How often an absent 0 or 1 is released (0 beside 1..K, 1 beside -1/0):
#: labels 0 and 1 start the runs of the commonest conventions.
LABEL_EDGE_FALSE_RATE = 0.025
#: How often an absent candidate beside a run is released (``K + 1`` beside
#: ``0..K``): a run grows beyond 0 and 1 on a higher bar, since a table with
#: one class more than its labels' run is rarer than one whose labels start
#: at 0 or 1.
LABEL_GROWTH_FALSE_RATE = 0.015
#: How often an absent second label of a run from 0 or 1 is released
#: (1 between released 0 and 2, 2 between 1 and 3): inside a run, it needs
#: the lowest bar.
LABEL_GAP_FALSE_RATE = 0.1
#: How often the second of 0 and -1 beside a released 1 is released where
#: it is absent: ``-1, 0, +1`` is a rare convention, ``0, 1`` and ``-1, +1``
#: are common.
LABEL_PAIR_FALSE_RATE = 0.0025
#: How often any absent candidate is released on its own, over all of them.
LABEL_FAR_FALSE_RATE = 0.002
#: Of the largest noisy count, the share 0 and 1 need (no more than the
#: thresholded path's threshold): absent labels beside a large class stay
#: out as on that path.
LABEL_EDGE_SHARE = 0.125
#: Of the largest noisy count, the share any other candidate needs: a
#: class a fifth of the largest is kept, an absent one beside a large class
#: almost never released.
LABEL_GROWTH_SHARE = 0.2


def label_candidates(dtype):
    """The public candidate labels of a label vector of this dtype, or None (public).

    Integers ``-1..31`` in the dtype (``0..31`` unsigned, ``False, True``
    for booleans); None for strings and objects, whose labels have no
    public candidates.
    """
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.array([False, True])
    low, high = LABEL_CANDIDATES
    if kind == "u":
        return np.arange(0, high + 1).astype(dtype)
    if kind in "if":
        return np.arange(low, high + 1).astype(dtype)
    return None


def label_thresholds(scale, n_candidates):
    """The noisy counts a candidate label must exceed: ``(edge, far)`` (public).

    Labels 0 and 1 are released above ``edge``, a candidate away from the
    released labels above ``far``; an absent candidate's noisy count
    (Laplace of ``scale``) passes them with probability
    :data:`LABEL_EDGE_FALSE_RATE` and :data:`LABEL_FAR_FALSE_RATE` over
    ``n_candidates``.  The other bars are in :func:`_candidate_bars`.
    """
    edge = scale * math.log(1.0 / (2.0 * LABEL_EDGE_FALSE_RATE))
    far = scale * math.log(n_candidates / (2.0 * LABEL_FAR_FALSE_RATE))
    return edge, far


def _candidate_bars(noisy, scale, n_candidates, threshold):
    """The bars of :func:`_select_candidates` from the noisy counts (public).

    Each at least ``scale * log(1 / (2 rate))`` for its false-release rate,
    and beside a large class raised to its share of the largest noisy count,
    up to ``threshold`` (the thresholded path's).
    """
    largest = float(np.max(noisy))

    def bar(rate, share=LABEL_GROWTH_SHARE):
        return max(scale * math.log(1.0 / (2.0 * rate)), min(threshold, share * largest))

    edge, far = label_thresholds(scale, n_candidates)
    return {
        "edge": bar(LABEL_EDGE_FALSE_RATE, LABEL_EDGE_SHARE),
        "growth": bar(LABEL_GROWTH_FALSE_RATE),
        "gap": scale * math.log(1.0 / (2.0 * LABEL_GAP_FALSE_RATE)),
        "pair": bar(LABEL_PAIR_FALSE_RATE),
        "far": max(far, bar(LABEL_GROWTH_FALSE_RATE)),
    }


def _select_candidates(noisy, candidates, scale, threshold):
    """The candidates released from their noisy counts (post-processing).

    Labels come in runs of consecutive integers from 0 or 1, or as ``-1,
    +1``.  Labels 0 and 1 are released above the ``edge`` bar; of 0 and -1
    beside a released 1 the larger is released above ``edge`` and the
    other above the ``pair`` bar (``-1, 0, +1`` is rare, and so is -1
    beside ``1, 2``); the second label of a run from 0 or 1 (1 between 0
    and 2, 2 between 1 and 3) needs only the low ``gap`` bar; a run grows
    by each neighbour above the ``growth`` bar, and any candidate above the
    ``far`` bar starts one.  The bars (:func:`_candidate_bars`) are set by
    how often each releases an absent label, and rise with the largest
    noisy count.
    Returns the mask of released candidates and the ``edge`` bar applied.
    """
    bars = _candidate_bars(noisy, scale, candidates.size, threshold)
    values = candidates.astype(np.int64).tolist()
    position = {v: i for i, v in enumerate(values)}
    chosen = noisy > bars["far"]

    def count(v):
        return noisy[position[v]] if v in position else -math.inf

    def choose(v, bar):
        if v in position and count(v) > bar:
            chosen[position[v]] = True

    choose(1, bars["edge"])
    first, second = (-1, 0) if count(-1) > count(0) else (0, -1)
    if first == 0:
        choose(0, bars["edge"])
    elif chosen[position[1]]:
        # -1 pairs with +1 alone: beside 1, 2 it is as rare as -1, 0, +1.
        choose(-1, bars["pair"] if count(2) > bars["growth"] else bars["edge"])
    if first in position and chosen[position[first]]:
        choose(second, bars["pair"])
    # The second label of a run from 0 or 1 (1 between 0 and 2, 2 between 1
    # and 3), inside it, needs only the gap bar.
    start = 0 if chosen[position[0]] else 1
    inside, end = start + 1, start + 2
    if end in position and chosen[position[start]] and count(inside) > bars["gap"]:
        if count(end) > bars["growth"]:
            chosen[position[inside]] = chosen[position[end]] = True
    grown = True
    while grown:
        grown = False
        for i in np.flatnonzero(chosen).tolist():
            for near in (values[i] - 1, values[i] + 1):
                if near in position and near not in (-1, 0) and not chosen[position[near]]:
                    if count(near) > bars["growth"]:
                        chosen[position[near]] = grown = True
    return chosen, bars["edge"]


def release_labels(y, epsilon, delta, rng, *, with_counts=False):
    """Release the set of labels present in ``y`` with noisy histograms.

    Labels among the public candidates of ``y``'s dtype
    (:func:`label_candidates`: small integers) get a Laplace histogram over
    all the candidates, present or not: ``Laplace(1 / epsilon)`` noise on
    each count (L1 sensitivity 1, pure epsilon-DP), and the labels are
    chosen from the noisy counts alone (:func:`_select_candidates`;
    post-processing).  Every other label's count gets the same noise and is
    released if it exceeds ``1 + log(1 / (2 delta)) / epsilon``, the
    thresholded histogram (:func:`sklearn_dp._noise.thresholded_histogram`).
    One row counts in one of the two histograms, the other's input is the
    same: together ``(epsilon, delta)``-DP under add/remove-one neighbouring
    (a group of ``k`` rows split between them moves their counts by ``k``
    in L1 together, which the ``k``-fold scales cover).  A label held by a
    few rows is almost never released; one held by many rows always is.
    Candidates need no privacy threshold, only one that keeps absent
    labels out: about ``3 / epsilon`` rows for 0 and 1, more beyond them,
    where the thresholded path needs ``1 + log(1 / (2 delta)) / epsilon``.

    With ``with_counts`` the noisy count of each released label is
    released too (the histograms' own output, no further privacy cost; see
    :func:`label_set_count`).

    Returns
    -------
    classes : ndarray
        The released labels, sorted.
    event : ApproximateDpEvent
    threshold : float
        The lowest count a label needs to be released: the candidates'
        ``edge`` threshold where all released labels are candidates, the
        thresholded histogram's otherwise.
    counts : ndarray
        Only with ``with_counts``: the noisy count of each released label.
    """
    scale = 1.0 / epsilon
    threshold = 1.0 + scale * math.log(1.0 / (2.0 * delta))
    if _dask.is_dask_array(y):
        # The histogram by chunks, merged on the workers (the same keys and counts).
        keys, counts = _dask.label_histogram(y)
    else:
        keys, counts = np.unique(y, return_counts=True)
    event = ApproximateDpEvent(epsilon, delta, "thresholded Laplace histogram of the labels")
    candidates = label_candidates(np.asarray(keys).dtype)
    lowest = threshold
    chosen_keys, chosen_counts = keys[:0], np.zeros(0)
    if candidates is not None:
        inside = np.isin(keys, candidates)
        cell_counts = np.zeros(candidates.size)
        cell_counts[np.searchsorted(candidates, keys[inside])] = counts[inside]
        noisy = np.asarray(
            _noise.laplace(
                cell_counts, sensitivity=1.0, scale=scale, rng=rng, label="label set (candidates)"
            ),
            dtype=np.float64,
        )
        rows = _noise.released_rows()
        chosen, edge = _select_candidates(noisy, candidates, scale * rows, threshold * rows)
        chosen_keys, chosen_counts = candidates[chosen], noisy[chosen]
        keys, counts = keys[~inside], counts[~inside]
    released, noisy_counts = _noise.thresholded_histogram(
        keys, counts, scale=scale, threshold=threshold, rng=rng, label="label set", with_counts=True
    )
    if candidates is not None:
        # Only labels outside the candidates are the thresholded path's.
        outside = ~np.isin(released, candidates)
        released, noisy_counts = released[outside], noisy_counts[outside]
        if released.size == 0 and chosen_keys.size:
            lowest = edge / rows
        released = np.concatenate([chosen_keys, released.astype(chosen_keys.dtype)])
        noisy_counts = np.concatenate([chosen_counts, noisy_counts])
        order = np.argsort(released, kind="stable")
        released, noisy_counts = released[order], noisy_counts[order]
    if with_counts:
        return _canonical_labels(released), event, lowest, noisy_counts
    return _canonical_labels(released), event, lowest


def label_set_count(noisy_counts, epsilon):
    """The fit's row count from its released label set (post-processing; no privacy cost).

    The rows a classifier fits are those whose label was released, so their
    number is the sum of the released labels' noisy counts: unbiased but
    for the labels near the threshold (released only when their noise was
    high), with the noise of ``k`` Laplace draws of scale ``b = 1 /
    epsilon`` (times the group bound of a group fit), variance ``2 k b^2``.
    The count's normaliser adds ``COUNT_UPPER_SCALES * b * sqrt(k)``, about
    the margin of a single Laplace count of the same variance (Kulesza,
    Suresh and Wang, ICML 2024, recover a count from releases already paid
    for in the same way).
    """
    noisy_counts = np.asarray(noisy_counts, dtype=np.float64)
    scale = _noise.released_rows() / float(epsilon)
    estimate = max(1.0, float(np.sum(noisy_counts)))
    margin = COUNT_UPPER_SCALES * scale * math.sqrt(max(noisy_counts.size, 1))
    return PrivateCount(estimate, estimate + margin, dpe.NoOpDpEvent())


def _canonical_labels(classes):
    """The released labels in a representation that depends on their values only.

    The keys come out of ``np.unique(y)``, so their representation is the
    private array's: a numpy string dtype is as wide as the *longest* label in
    ``y`` (``'<U12'`` when one unreleased row holds ``"hippopotamus"``), and of
    the labels ``0.0`` and ``-0.0`` (equal keys) the one that sorts first is
    kept, so a single row labelled ``-0.0`` can turn ``classes_`` into
    ``[-0., 1.]``; an object array keeps the type of one row's label (``str``
    or ``numpy.str_``).  The released set is rebuilt from its values alone.
    """
    classes = np.asarray(classes)
    kind = classes.dtype.kind
    if kind in "US":
        # As narrow as the longest *released* label.
        return (
            np.array(classes.tolist(), dtype=kind) if classes.size else classes.astype(kind + "1")
        )
    if kind == "f":
        return classes + 0.0  # -0.0 + 0.0 is +0.0
    if kind == "O":
        values = [str(v) if isinstance(v, str) else v for v in classes.tolist()]
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return classes
