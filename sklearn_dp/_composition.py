"""The privacy spent by a fitted Pipeline or ColumnTransformer: its private steps composed."""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

from dp_accounting import dp_event as dpe

from ._warnings import user_stacklevel
from .accounting import epsilon_of_events
from .exceptions import PrivacyLeakWarning

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

__all__ = ["privacy_spent", "private_steps"]


def _is_public_step(step):
    """Whether a scikit-learn step reads nothing from the data but its schema (a short allowlist)."""
    if step is None or (isinstance(step, str) and step in ("drop", "passthrough")):
        return True
    name = type(step).__name__
    params = step.get_params(deep=False) if hasattr(step, "get_params") else {}
    if name in ("OneHotEncoder", "OrdinalEncoder"):
        # Public categories; an unknown value must not raise (that would
        # depend on the data).
        return params.get("categories") not in (None, "auto") and (
            name != "OneHotEncoder" or params.get("handle_unknown") != "error"
        )
    if name == "SimpleImputer":
        return params.get("strategy") == "constant"
    if name == "FunctionTransformer":
        return True  # stateless: fit learns the input's schema only
    if name == "FrozenEstimator":
        # Fitted before the pipeline (on public data, by the user's
        # account); its fit inside the pipeline does nothing.
        return True
    return False


def private_steps(estimator, path=""):
    """Yield ``(path, step)`` for every fitted step of ``estimator`` that is not a container.

    Walks Pipelines (``steps``), ColumnTransformers (``transformers_``) and
    FeatureUnions (``transformer_list``), recursively.
    """
    if hasattr(estimator, "steps") and hasattr(estimator, "named_steps"):
        for name, step in estimator.steps:
            yield from private_steps(step, f"{path}{name}.")
        return
    if hasattr(estimator, "transformers_"):
        for name, step, _columns in estimator.transformers_:
            yield from private_steps(step, f"{path}{name}.")
        return
    if hasattr(estimator, "transformer_list"):
        for name, step in estimator.transformer_list:
            yield from private_steps(step, f"{path}{name}.")
        return
    yield path.rstrip("."), estimator


def privacy_spent(estimator: BaseEstimator, delta: float | None = None) -> tuple[float, float]:
    """The (epsilon, delta) that a fitted Pipeline, ColumnTransformer or estimator guarantees.

    Every step of a Pipeline (or a ColumnTransformer, a FeatureUnion,
    nested) was fitted on the same rows, so their guarantees compose: the
    steps' ``dp_event_`` are composed (:func:`~sklearn_dp.accounting.
    epsilon_of_events`) at the sum of their deltas, and the result is never
    more than basic composition (the sums of their ``privacy_spent_``).
    ``transform`` and ``predict`` use released values only and add nothing.
    A step shared by reference with another budget's ledger is counted
    here all the same: this is the pipeline's guarantee, the budget's
    ledger shows each step's entry.

    Steps that read nothing from the data are skipped: sklearn_dp's
    :class:`~sklearn_dp.preprocessing.PublicRangeScaler`, scikit-learn's
    ``OneHotEncoder`` / ``OrdinalEncoder`` with ``categories`` given (and
    ``handle_unknown`` other than ``"error"``), ``SimpleImputer(strategy=
    "constant")``, ``FunctionTransformer``, ``"passthrough"`` and ``"drop"``.
    Any other step without ``dp_event_`` (for example scikit-learn's
    ``StandardScaler``) read the data outside any guarantee: it is reported
    with a :class:`~sklearn_dp.exceptions.PrivacyLeakWarning` and the result
    is ``(inf, 0.0)``.

    Parameters
    ----------
    estimator : fitted estimator, Pipeline, ColumnTransformer or FeatureUnion
        The fitted model; its private steps are found recursively.
    delta : float, optional
        Report epsilon at this delta (at least the sum of the steps' deltas
        is needed by their approximate-DP parts); default: that sum.

    Returns
    -------
    (epsilon, delta) : tuple of float
        The guarantee of the whole model (steps composed adaptively).

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_dp import DPLogisticRegression, PrivacyBudget, privacy_spent
    >>> from sklearn_dp.preprocessing import DPStandardScaler
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> budget = PrivacyBudget(1.0, 1e-5)
    >>> model = make_pipeline(
    ...     DPStandardScaler(epsilon=0.3, delta=5e-6, budget=budget, random_state=0),
    ...     DPLogisticRegression(epsilon=0.7, delta=5e-6, classes=[0, 1], budget=budget,
    ...                          random_state=0),
    ... ).fit(X, y)
    >>> eps, delta = privacy_spent(model)
    >>> bool(eps <= 1.0), delta
    (True, 1e-05)
    """
    events, epsilons, deltas = [], [], []
    for path, step in private_steps(estimator):
        if hasattr(step, "dp_event_") and hasattr(step, "privacy_spent_"):
            step_epsilon, step_delta = step.privacy_spent_
            if isinstance(step.dp_event_, dpe.NoOpDpEvent):
                continue
            events.append(step.dp_event_)
            epsilons.append(float(step_epsilon))
            deltas.append(float(step_delta))
        elif _is_public_step(step):
            continue
        else:
            warnings.warn(
                f"Step {path or type(step).__name__!r} ({type(step).__name__}) has no dp_event_: "
                "its fit read the data outside any privacy guarantee (use sklearn_dp's "
                "preprocessing, or public parameters). The pipeline is not private.",
                PrivacyLeakWarning,
                stacklevel=user_stacklevel(),
            )
            return (math.inf, 0.0)
    if not events:
        return (0.0, 0.0)
    total_delta = math.fsum(deltas)
    if delta is not None:
        if delta < total_delta:
            raise ValueError(
                f"delta={delta!r} is below the sum of the steps' deltas ({total_delta:g})."
            )
        total_delta = float(delta)
    basic = math.fsum(epsilons)
    if any(math.isinf(e) for e in epsilons):
        return (math.inf, 0.0)
    composed = epsilon_of_events(events, total_delta)
    return (min(basic, composed), total_delta)
