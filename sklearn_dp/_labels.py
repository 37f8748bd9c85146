"""The label set of a classifier fitted without ``classes``: released with DP.

Under add/remove-one neighbouring the labels present in ``y`` are private (one
row can hold the only copy of a label).  A classifier without a public
``classes`` spends a share of its epsilon and delta on a thresholded noisy
histogram of the labels; estimators and searches alike.
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
    "label_epsilon",
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


def release_labels(y, epsilon, delta, rng, *, with_counts=False):
    """Release the set of labels present in ``y`` with a thresholded noisy histogram.

    Each distinct label's count gets ``Laplace(1 / epsilon)`` noise and the
    label is released if the noisy count exceeds ``1 + log(1 / (2 delta)) /
    epsilon``: ``(epsilon, delta)``-DP under add/remove-one neighbouring (see
    :func:`sklearn_dp._noise.thresholded_histogram`).  A label held by a few
    rows is almost never released; one held by many rows (several times the
    threshold) always is.

    With ``with_counts`` the noisy count of each released label is
    released too (the histogram's own output, no further privacy cost; see
    :func:`label_set_count`).

    Returns
    -------
    classes : ndarray
        The released labels, sorted.
    event : ApproximateDpEvent
    threshold : float
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
    released = _noise.thresholded_histogram(
        keys,
        counts,
        scale=scale,
        threshold=threshold,
        rng=rng,
        label="label set",
        with_counts=with_counts,
    )
    event = ApproximateDpEvent(epsilon, delta, "thresholded Laplace histogram of the labels")
    if with_counts:
        classes, noisy = released
        return _canonical_labels(classes), event, threshold, noisy
    return _canonical_labels(released), event, threshold


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
