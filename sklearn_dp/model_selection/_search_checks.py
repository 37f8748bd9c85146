"""The searches' checks before any private value is read, and their group-level record.

Plain functions of a search (``DPGridSearchCV``, ``DPRandomizedSearchCV``):
which candidates it may run, which budget it charges and how it scores, all
decided from public inputs; and, after a fit, the unit of privacy recorded on
the search and on its best estimator.
"""

from __future__ import annotations

from sklearn.base import clone, is_classifier

from ._pipeline import check_target, final_estimator, target_budgets
from ._planning import RESERVED_PARAMETERS


def check_candidates(search, candidates):
    """Refuse an empty grid, a searched reserved parameter, or a candidate the search cannot fit."""
    name = type(search).__name__
    if not candidates:
        raise ValueError(f"{name}: the parameter grid has no candidate.")
    for params in candidates:
        reserved = sorted(key for key in params if key.rsplit("__", 1)[-1] in RESERVED_PARAMETERS)
        if reserved:
            raise ValueError(
                f"{name}: {reserved} cannot be searched: the search sets epsilon and "
                "delta of every run from its own guarantee, shares its budget and seeds "
                "the runs itself."
            )
        # A candidate may replace a Pipeline's step: each is checked whole.
        check_target(clone(search.estimator).set_params(**params), name)


def search_budget(search):
    """The budget the search charges: its own, or the one its estimator's DP steps share."""
    own = search.budget
    inner = [budget for budget in target_budgets(search.estimator) if budget is not None]
    if any(budget is not inner[0] for budget in inner) or (
        own is not None and inner and own is not inner[0]
    ):
        raise ValueError(
            f"{type(search).__name__}: the search and its estimator hold different budgets; "
            "set budget= on the search only (the runs are charged inside the search's "
            "entry)."
        )
    return own if own is not None else (inner[0] if inner else None)


def search_scoring(search):
    """The search's scoring and the public bound on one row's score term (None for accuracy)."""
    if search.scoring is not None:
        scoring = search.scoring
    else:
        scoring = "accuracy" if is_classifier(search.estimator) else "neg_mean_absolute_error"
    if is_classifier(search.estimator) != (scoring == "accuracy"):
        raise ValueError(
            f"{type(search).__name__}: scoring={scoring!r} does not fit a "
            f"{'classifier' if is_classifier(search.estimator) else 'regressor'}."
        )
    if scoring == "accuracy":
        return scoring, None
    bound = search.score_bound
    if bound is None:
        y_bound = getattr(final_estimator(search.estimator), "y_bound", None)
        if y_bound is None or isinstance(y_bound, str):
            # y_bound="auto" is released by each fit: not public before the search.
            raise ValueError(
                f"{type(search).__name__}: scoring={scoring!r} needs score_bound, a public "
                "bound on the absolute error of one row (the estimator's y_bound is "
                f"{y_bound!r}, not a public number)."
            )
        bound = 2.0 * float(y_bound)
    return scoring, float(bound)


def record_unit(search, group_rows):
    """``max_group_rows_`` on the search and on its best estimator's DP fits (group level only)."""
    best = search.best_estimator_
    fitted = [search, best] + [step for _, step in getattr(best, "steps", ()) if step is not None]
    for obj in fitted:
        if not hasattr(obj, "__dict__") or (obj is not search and "dp_event_" not in vars(obj)):
            continue
        if group_rows is None:
            obj.__dict__.pop("max_group_rows_", None)
        else:
            obj.max_group_rows_ = group_rows
