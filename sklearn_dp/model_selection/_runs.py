"""The private phase of a search: the split, the runs, their noisy scores, the best run.

Everything here runs inside the search's private phase, after its
reservation; only the selected run leaves it (see
:class:`~sklearn_dp.model_selection.DPGridSearchCV`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _noise, _random
from .._memo import frozen
from .._public_errors import public_error
from ..linear_model._base import release_labels
from ._pipeline import candidate_model, configure, fit_event, fit_target
from ._selection import draw_number_of_runs
from ._split import rowwise_parts

__all__ = [
    "SKIP_MARGIN_SHARE",
    "runs_cannot_separate",
    "select",
    "keep_default_unless_beaten",
    "run_candidate",
    "row_scores",
    "score_range",
    "release_label_set",
    "results_table",
]


#: The runs are skipped (for a refit of the default candidate with their share)
#: when the margin a run must beat the default's noisy score by exceeds this
#: share of the validation part's score range: 25 points of accuracy.  With
#: the runs' small epsilon that margin is hundreds of rows; on fewer
#: validation rows the runs could replace the default only by chance (at most
#: 1%) or for a gain no grid around a working default shows.
SKIP_MARGIN_SHARE = 0.25


def runs_cannot_separate(margin, noisy_count, width):
    """Whether the runs can only replace the default for a gain above :data:`SKIP_MARGIN_SHARE`.

    ``margin`` is the public margin on the score sums (see
    :func:`keep_default_unless_beaten`), ``noisy_count`` the released
    validation row count and ``width`` the score's public range: only
    released values and the plan decide.
    """
    return margin > SKIP_MARGIN_SHARE * width * max(1.0, float(noisy_count))


def row_scores(scoring, y_true, y_pred, bound):
    """Per-row terms of the score, each clipped to the public range of ``scoring``."""
    if scoring == "accuracy":
        return (np.asarray(y_pred) == np.asarray(y_true)).astype(float)
    error = np.abs(np.asarray(y_true, dtype=float) - np.asarray(y_pred, dtype=float))
    if scoring == "neg_mean_squared_error":
        error = error * error
        cap = bound * bound
    else:
        cap = bound
    # A non-finite prediction counts as the worst error.
    return -np.where(np.isfinite(error), np.minimum(error, cap), cap)


def score_range(scoring, bound):
    """The public range ``(low, high)`` of one row's score."""
    if scoring == "accuracy":
        return 0.0, 1.0
    if scoring == "neg_mean_squared_error":
        return -bound * bound, 0.0
    return -bound, 0.0


def select(
    search,
    candidates,
    plan,
    X,
    y,
    scoring,
    bound,
    score_bounds,
    fixed,
    split_rng,
    schedule_rng,
    count_rng,
    run_seeds,
    groups=None,
):
    """The private part: K runs, noisy scores, the best run.  Returns only the best run.

    With ``groups`` each group draws its part (training or validation) and
    the runs fit at group level on the training part.

    Returns ``(index, model, noisy score sum, noisy count)``; where the
    plan allows it and the released count says the runs cannot separate
    candidates (:func:`runs_cannot_separate`), no run is made and the
    default candidate is returned with ``model`` and the score sum None.
    """
    low, high = score_bounds
    middle, half_width = 0.5 * (low + high), 0.5 * (high - low)
    parts = rowwise_parts(
        X.shape[0],
        [1.0 - search.validation_fraction, search.validation_fraction],
        split_rng,
        groups=groups,
    )
    train, validation = np.flatnonzero(parts == 0), np.flatnonzero(parts == 1)
    X_train, y_train = X[train], y[train]
    X_val, y_val = X[validation], y[validation]
    noisy_count = _noise.laplace(
        float(validation.size),
        sensitivity=1.0,
        scale=1.0 / plan.count_epsilon,
        rng=count_rng,
        label="validation row count",
    )
    if plan.skippable and runs_cannot_separate(
        plan.evidence_threshold * half_width, noisy_count, high - low
    ):
        # A decision on a released value: the default's refit follows (plan_skip).
        return plan.default_index, None, None, noisy_count
    shape = math.inf if search.distribution == "poisson" else float(search.shape)
    n_runs = draw_number_of_runs(search.n_candidates, shape, schedule_rng)
    scale = plan.score_noise_multiplier * half_width

    def noisy_score(value, score_rng):
        if plan.score_mechanism == "gaussian":
            return _noise.gaussian(
                value,
                sensitivity=half_width,
                noise_std=scale,
                rng=score_rng,
                label="validation score",
            )
        return _noise.laplace(
            value,
            sensitivity=half_width,
            scale=scale,
            rng=score_rng,
            label="validation score",
        )

    def one_run(index):
        """(index, model, noisy score sum) of a run of candidate ``index``, or None."""
        fit_rng, score_rng = _random.split(run_seeds, 2)
        outcome = run_candidate(
            search,
            {**candidates[index], **fixed},
            plan.candidate_events[index],
            plan,
            X_train,
            y_train,
            X_val,
            y_val,
            scoring,
            bound,
            middle,
            fit_rng,
        )
        if outcome is None:
            return None  # a failed run outputs nothing; it is never selected
        model, value = outcome
        return index, model, noisy_score(value, score_rng)

    # The default candidate's own run (accounted after the repeated runs in
    # the selection's event; the order of independent runs changes nothing).
    # The caches keep nothing a run computes: its keys can hold its own
    # released values (a released row bound sets later sensitivities), and
    # which of them exist would tell the runs' releases and their number.
    with frozen():
        default = None if plan.default_index is None else one_run(plan.default_index)
        best = None
        for _ in range(n_runs):
            outcome = one_run(int(schedule_rng.integers(len(candidates))))
            if outcome is not None and (best is None or outcome[2] > best[2]):
                best = outcome
    if plan.default_index is not None:
        best = keep_default_unless_beaten(
            best, default, plan.default_index, plan.evidence_threshold * half_width
        )
    if best is None:
        # The selection's output is "nothing" (no run, or every run failed).
        raise public_error(
            RuntimeError(
                f"{type(search).__name__}: the private selection returned no candidate "
                "(no run was drawn, or every run failed). The spend stands. Check that "
                "every candidate fits with the estimator's public settings."
            )
        )
    return best[0], best[1], best[2], noisy_count


def keep_default_unless_beaten(best, default, default_index, margin):
    """The default candidate's run, unless the best run beats it by more than ``margin``.

    ``best`` and ``default`` are ``(index, model, noisy score sum)`` or None
    (no run, or a failed run).  The best run replaces the default only when
    its noisy score sum exceeds the default's by more than the public
    ``margin``, which the best of the random number of runs exceeds with
    probability at most ``DEFAULT_EVIDENCE_LEVEL`` when every candidate
    scores what the default scores.  Both are noisy sums over the same
    validation rows, so they compare without the row count.  The decision
    reads released values only.
    """
    if default is None:
        return best  # the default's run output nothing: nothing to compare with
    if best is None or best[0] == default_index or best[2] - default[2] <= margin:
        return default
    return best


def run_candidate(
    search,
    params,
    planned_event,
    plan,
    X_train,
    y_train,
    X_val,
    y_val,
    scoring,
    bound,
    middle,
    rng,
):
    """One run: fit the candidate on the training part, score it on the validation part.

    Returns (model, centred score sum), or None if the run failed.  A
    failure (any exception, or a mechanism other than planned) is the
    run's output "nothing", a function of the run's own releases.
    """
    model = configure(
        candidate_model(search.estimator, params),
        plan.fit_epsilon,
        plan.delta,
        rng,
        quiet=True,
    )
    try:
        fit_target(model, X_train, y_train, type(search).__name__)
        if not fit_event(model) == planned_event:
            # Never expected: the plan is the fit's own pre-data plan.
            return None
        if X_val.shape[0] == 0:
            return model, 0.0
        terms = row_scores(scoring, y_val, model.predict(X_val), bound)
        return model, float(np.sum(terms - middle))
    except Exception:
        return None


def release_label_set(owner, X, y, epsilon, delta, rng, groups=None):
    """Release the label set once for the whole search; drop rows whose label is not released.

    Returns ``(X, y, labels, groups)`` (``groups`` filtered with the rows).
    """
    released, _, _ = release_labels(y, epsilon, delta, rng)
    if released.size < 2:
        raise public_error(
            ValueError(
                f"{owner}: at most one class passed the private release of "
                "the label set (labels held by few rows are not released). Pass "
                "classes=[...], the public label set, on the estimator."
            )
        )
    keep = np.isin(y, released)
    if not np.all(keep):
        # A per-row rule: neighbours stay neighbours.
        X, y = X[keep], y[keep]
        groups = None if groups is None else groups[keep]
    return X, y, released.tolist(), groups


def results_table(candidates, index, score):
    """cv_results_: every candidate of the grid, the selected one's noisy score only."""
    n = len(candidates)
    results = {"params": [dict(params) for params in candidates]}
    names = sorted({key for params in candidates for key in params})
    for key in names:
        column = np.ma.masked_all(n, dtype=object)
        for i, params in enumerate(candidates):
            if key in params:
                column[i] = params[key]
        results[f"param_{key}"] = column
    scores = np.full(n, np.nan)
    scores[index] = score
    results["mean_test_score"] = scores
    results["std_test_score"] = np.full(n, np.nan)
    ranks = np.full(n, 2, dtype=np.int32)
    ranks[index] = 1
    results["rank_test_score"] = ranks
    selected = np.zeros(n, dtype=bool)
    selected[index] = True
    results["selected"] = selected
    return results
