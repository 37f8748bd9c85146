"""Warnings about a fit that cannot work, computed from its released values only.

A private fit can fail quietly: the noise swamps the signal and the model
predicts one class for every row, or a released label range missed the
labels.  These checks read the fitted attributes (the released model and the
released or given bounds) and nothing else, so they may run after the
private phase, like any other post-processing of the releases.
"""

from __future__ import annotations

import numpy as np

from .._bounds import LOW_RANGE_EVIDENCE

__all__ = [
    "released_fit_warnings",
    "label_set_warning",
    "faint_label_warning",
    "label_range_warning",
    "LABEL_RANGE_MIN_EVIDENCE",
    "row_bound_warning",
    "ROW_BOUND_MIN_EVIDENCE",
    "prediction_spreads",
    "NARROW_REGRESSION",
    "NARROW_LABELS",
]

#: A regressor whose predictions vary by less than this share of its
#: released label half-width over the rows within its bounds is (nearly) a
#: constant predictor.
NARROW_REGRESSION = 0.01
#: A released label half-width below this share of the released centre's
#: magnitude clipped the labels to (nearly) a single value.
NARROW_LABELS = 1e-3

#: A label range released from fewer than this many rows per unit of its
#: epsilon (``n~ * epsilon``; there it is one exponential mechanism on that
#: epsilon with a wider window, :data:`sklearn_dp._bounds.LOW_RANGE_EVIDENCE`)
#: is unreliable: at 10, a range that clips half the labels is drawn in up
#: to 18% of simulated fits and one over 100 times too wide in up to 3%
#: (diabetes' labels, Gaussian labels centred at 0 or far from it,
#: log-normal ones).
LABEL_RANGE_MIN_EVIDENCE = LOW_RANGE_EVIDENCE

#: A row bound (``data_norm`` or ``feature_bound``) released from fewer than
#: this many rows per unit of its epsilon is unreliable: at 9, a bound below
#: a tenth of every row (predictions on unclipped rows then explode) is drawn
#: in 0.2% to 0.7% of simulated releases, at 6.5 in 3% to 8% (row norms of
#: scale 1 to 1e6); at 15, in under 4e-5 of them.
ROW_BOUND_MIN_EVIDENCE = 15.0

_WHAT_TO_DO = (
    "Raise epsilon, fit on more rows, or give the bounds from public knowledge "
    "(data_norm= or feature_bound=, and y_bound= for a regressor); on features of very "
    "different scales, pass feature_scaling=True (per-feature scales released inside the "
    "fit) or scale them first (a public range with PublicRangeScaler, or DPStandardScaler)."
)


def prediction_spreads(estimator, coef):
    """For each row of ``coef``: the largest ``|x @ w|`` over rows ``x`` within the fit's bounds.

    ``feature_bound_`` (entrywise bounds) gives ``sum_j |w_j| b_j``;
    ``data_norm_`` (an L2 bound of the rows) gives ``||w||_2 * data_norm_``.
    Public: the bounds and the model are released.
    """
    coef = np.atleast_2d(np.asarray(coef, dtype=np.float64))
    entry = getattr(estimator, "feature_bound_", None)
    if entry is not None:
        return np.abs(coef) @ np.broadcast_to(np.asarray(entry, dtype=np.float64), coef.shape[1:])
    norm = getattr(estimator, "data_norm_", None)
    if norm is None:
        return np.full(coef.shape[0], np.inf)
    return np.linalg.norm(coef, axis=1) * float(norm)


def _constant_class(estimator):
    """The class predicted for every row within the fit's bounds, or None."""
    coef = np.atleast_2d(np.asarray(estimator.coef_, dtype=np.float64))
    intercept = np.atleast_1d(np.asarray(estimator.intercept_, dtype=np.float64))
    classes = np.asarray(estimator.classes_)
    if coef.shape[0] == 1:  # binary: the sign of x @ w + b
        if prediction_spreads(estimator, coef)[0] < abs(intercept[0]):
            return classes[int(intercept[0] > 0)]
        return None
    for k in range(coef.shape[0]):
        others = [j for j in range(coef.shape[0]) if j != k]
        margins = intercept[k] - intercept[others]
        spreads = prediction_spreads(estimator, coef[k] - coef[others])
        if np.all(spreads < margins):
            return classes[k]
    return None


def released_fit_warnings(estimator):
    """Messages about a fit that cannot work, from its released attributes only."""
    name = type(estimator).__name__
    messages = []
    if hasattr(estimator, "classes_"):
        constant = _constant_class(estimator)
        if constant is not None:
            messages.append(
                f"{name}: the fitted model predicts the class {np.asarray(constant).tolist()!r} "
                "for every row "
                "within the fit's bounds: it is a constant predictor (the noise at this "
                "epsilon, or the bounds, swamped the signal). " + _WHAT_TO_DO
            )
        return messages
    y_bound = getattr(estimator, "y_bound_", None)
    y_center = float(getattr(estimator, "y_center_", 0.0))
    if y_bound is None:
        return messages
    if y_bound < NARROW_LABELS * abs(y_center):
        messages.append(
            f"{name}: the labels were clipped to [{y_center - y_bound:.4g}, "
            f"{y_center + y_bound:.4g}], a range narrow for its centre (the private estimate "
            "of the label range is unreliable with this few rows at this epsilon): the model "
            "predicts about one value. Pass y_bound= (a public bound on |y - centre|). "
            + _WHAT_TO_DO
        )
        return messages
    spread = float(np.max(prediction_spreads(estimator, estimator.coef_)))
    if spread < NARROW_REGRESSION * y_bound:
        messages.append(
            f"{name}: the fitted model is nearly a constant predictor: over the rows within "
            f"the fit's bounds its predictions vary by at most {spread:.3g}, against a label "
            f"range of +-{y_bound:.3g} (the noise at this epsilon, or a row bound set by the "
            "largest feature, swamped the signal). " + _WHAT_TO_DO
        )
    return messages


def label_set_warning(name, n_classes, n_public, threshold, scale):
    """A message when the released label set may have left out a class, or None.

    From public values and releases only: the count a label needed to be
    released (``threshold``, from the public shares and the released counts:
    :func:`sklearn_dp._labels.release_labels`), its noise ``scale``, the
    number of released classes and the released row count.  A class of
    the size of the released classes' average share, ``n / (K + 1)``, is
    left out with a fair chance when it is within two noise scales of the
    threshold.
    """
    if threshold is None:
        return None
    likely_dropped = float(threshold) + 2.0 * float(scale)
    if likely_dropped < n_public / (n_classes + 1):
        return None
    return (
        f"{name}: the label set was released privately and holds {n_classes} classes; "
        f"at this epsilon a class held by fewer than about {likely_dropped:.0f} rows is "
        f"likely left out, which is plausible among about {n_public:.0f} rows (the fit's "
        "DP row count). The rows of a left-out class take no part in the fit, and the model "
        "never predicts it. Pass classes=[...], the public label set: every class is kept "
        "and the share of epsilon spent on the label set goes to the model."
    )


def faint_label_warning(name, classes, counts, threshold, scale):
    """A message when a released label's noisy count is within noise of its threshold, or None.

    From the released labels and their noisy counts (the label release's
    output) and its public threshold and noise ``scale``: a label released
    with a noisy count below ``threshold + 2 * scale`` may hold no rows at
    all (small integer labels are released from noisy counts of public
    candidates, present or not: :func:`sklearn_dp._labels.release_labels`),
    or be a class the release nearly left out.
    """
    if threshold is None or counts is None:
        return None
    limit = float(threshold) + 2.0 * float(scale)
    faint = [(c, n) for c, n in zip(np.asarray(classes).tolist(), counts) if n < limit]
    if not faint:
        return None
    shown = ", ".join(f"{c!r} (about {n:.0f} rows)" for c, n in faint)
    return (
        f"{name}: the label set was released privately, and its noisy counts of {shown} are "
        f"within noise of the release threshold ({float(threshold):.0f} rows): such a label may "
        "hold no rows at all (the model keeps a column for it that only lowers its score) or "
        "be a class the release nearly left out. Pass classes=[...], the public label set."
    )


def label_range_warning(name, n_public, epsilon_release):
    """A message when the label range is released from too little evidence, or None.

    From public values and releases only: the released row count ``n~`` and
    the epsilon of the label range.  Below
    :data:`LABEL_RANGE_MIN_EVIDENCE` the released range may miss the labels
    entirely (a regressor that predicts about one value far from them: an
    R^2 of -4 on a table whose labels lie in 25..346) or be orders of
    magnitude too wide (noise to match), whatever the data.
    """
    evidence = float(n_public) * float(epsilon_release)
    if not evidence < LABEL_RANGE_MIN_EVIDENCE:
        return None
    return (
        f"{name}: the label range (y_bound='auto') is released from about {n_public:.0f} rows "
        f"(the fit's DP row count) at epsilon {epsilon_release:.3g}: rows times "
        f"epsilon is {evidence:.3g}, below the {LABEL_RANGE_MIN_EVIDENCE:g} a reliable range "
        "needs, so the range may miss the labels (the model then predicts about one value "
        "far from them) or be far too wide. Pass y_bound= (a public bound on |y - centre|, "
        "e.g. from the label's documented range) or raise epsilon."
    )


def row_bound_warning(name, parameter, n_public, epsilon_release):
    """A message when the row bound ``parameter`` is released from too little evidence, or None.

    From public values and releases only: the released row count ``n~`` and
    the epsilon of the bound's release.  Below :data:`ROW_BOUND_MIN_EVIDENCE`
    the released bound may lie far below every row (the model, fitted on
    rows clipped to it, predicts wildly on the rows it is given unclipped)
    or far above them (noise to match), whatever the data.
    """
    evidence = float(n_public) * float(epsilon_release)
    if not evidence < ROW_BOUND_MIN_EVIDENCE:
        return None
    return (
        f"{name}: the row bound ({parameter}='auto') is released from about {n_public:.0f} "
        f"rows (the fit's DP row count) at epsilon {epsilon_release:.3g}: rows times epsilon "
        f"is {evidence:.3g}, below the {ROW_BOUND_MIN_EVIDENCE:g} a reliable bound needs, so "
        "it may lie far below the rows (predictions on new rows, which are not clipped, then "
        f"go far off) or far above them. Pass {parameter}= (a public bound, e.g. from the "
        "features' documented ranges), scale the features first (PublicRangeScaler) or raise "
        "epsilon."
    )
