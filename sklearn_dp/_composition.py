"""The privacy spent by a fitted Pipeline or ColumnTransformer: its private steps composed.

:func:`privacy_spent` vouches only for steps it can check: the steps of this
package (their recorded ``privacy_spent_`` / ``dp_event_``) and an allow-list
of scikit-learn steps and parameter values that are row-wise and read nothing
from the data but its public schema (column count, names, dtypes), checked
against the source of the scikit-learn versions in :data:`CHECKED_SKLEARN`.
"""

from __future__ import annotations

import hashlib
import math
import warnings
from typing import TYPE_CHECKING

import numpy as np
import sklearn
from dp_accounting import dp_event as dpe

from ._warnings import user_stacklevel
from .accounting import epsilon_of_zcdp
from .budget import _approximate_charges, _pool_epsilon
from .exceptions import PrivacyLeakWarning

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

__all__ = ["privacy_spent", "CHECKED_SKLEARN", "COMPOSITIONS", "vouch", "vouched_by"]

#: The scikit-learn releases (major.minor) whose source the allow-list was
#: read against (1.6.1, 1.7.2, 1.8.0 and 1.9.1).  On any other release every
#: scikit-learn step, containers included, is refused: a new release may read
#: the data where the old one did not (``SimpleImputer(strategy="constant")``
#: warns about the columns that are all missing from 1.6, and drops them from
#: 1.8, unless ``keep_empty_features=True``).
CHECKED_SKLEARN = ("1.6", "1.7", "1.8", "1.9")

#: The composition rules :func:`privacy_spent` knows (those of
#: :class:`~sklearn_dp.PrivacyBudget`).
COMPOSITIONS = ("basic", "zcdp")


class _Refused(Exception):
    """A step that :func:`privacy_spent` cannot vouch for (its path and the reason)."""

    def __init__(self, path, step, reason):
        super().__init__(reason)
        self.path = path
        self.step = step
        self.reason = reason


def _sklearn_release():
    return ".".join(sklearn.__version__.split(".")[:2])


def _is_ours(step):
    """A step of this package that records its own spend (not :class:`sklearn_dp.pipeline.Pipeline`)."""
    module = type(step).__module__
    return module.split(".")[0] == "sklearn_dp" and module != "sklearn_dp.pipeline"


def _unknown_params(params, known):
    unknown = sorted(set(params) - set(known))
    return f"parameters {unknown} are not on the allow-list" if unknown else None


def _categories_problem(categories):
    if isinstance(categories, str):
        return (
            'categories="auto" lists the values present in the private rows; pass the '
            "categories known without the private rows (categories=[[...], ...], not the "
            "fitted categories_) and fit again"
        )
    if any(isinstance(c, bytes) for cats in categories for c in cats):
        return "bytes categories make a type mismatch error name a private value's type"
    return None


def _one_hot_encoder(params):
    problem = _categories_problem(params["categories"])
    if problem is not None:
        return problem
    if params["handle_unknown"] not in ("ignore", "infrequent_if_exist"):
        return (
            f"handle_unknown={params['handle_unknown']!r} raises or warns on a value outside "
            'the categories in a private row; use handle_unknown="ignore"'
        )
    if params["drop"] is not None:
        return "drop= makes the encoder warn when a private row holds an unknown value"
    if params["min_frequency"] is not None or params["max_categories"] is not None:
        return "min_frequency / max_categories count the private rows of each category"
    return None


def _ordinal_encoder(params):
    problem = _categories_problem(params["categories"])
    if problem is not None:
        return problem
    if params["handle_unknown"] != "use_encoded_value":
        return (
            f"handle_unknown={params['handle_unknown']!r} raises on a value outside the "
            'categories in a private row; use handle_unknown="use_encoded_value"'
        )
    if params["min_frequency"] is not None or params["max_categories"] is not None:
        return "min_frequency / max_categories count the private rows of each category"
    for name in ("unknown_value", "encoded_missing_value"):
        if _overflows(params[name], params["dtype"]):
            return f"{name}={params[name]!r} overflows to inf in dtype {params['dtype']}"
    return None


def _overflows(value, dtype):
    """Whether a numeric parameter becomes ``inf`` in ``dtype``: the next DP step would refuse the rows it fills."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return False
    try:
        limit = float(np.finfo(dtype).max)
    except (TypeError, ValueError):
        return False
    try:
        value = float(value)
    except OverflowError:
        return True
    return math.isfinite(value) and abs(value) > limit


def _simple_imputer(params):
    if params["strategy"] != "constant":
        return f"strategy={params['strategy']!r} computes a statistic of the private rows"
    if params["add_indicator"]:
        return "add_indicator=True keeps only the columns where the private rows miss values"
    if not params["keep_empty_features"]:
        return (
            "keep_empty_features=False warns about (and from scikit-learn 1.8 drops) the "
            "columns whose private values are all missing; pass keep_empty_features=True"
        )
    if _overflows(params["fill_value"], np.float32):
        # The imputer keeps its input's dtype: float32 rows would get inf.
        return f"fill_value={params['fill_value']!r} overflows to inf in float32"
    return None


def _polynomial_features(params):
    degree = params["degree"]
    highest = degree[1] if isinstance(degree, tuple) else degree
    if highest > 1:
        return (
            f"degree={degree!r}: its products can overflow a finite private row to inf, which "
            "the next DP step refuses (so whether the fit fails would depend on one row); "
            "expand the features after a clipping step, with "
            "sklearn_dp.preprocessing.RowWiseTransformer(func), whose output saturates at "
            "the float range"
        )
    return None


def _function_transformer(params):
    if params["func"] is not None:
        return (
            "its func cannot be checked to be row-wise and data-blind (and check_inverse "
            "samples private rows); if it is, say so with "
            "sklearn_dp.preprocessing.RowWiseTransformer(func)"
        )
    # func=None is the identity; the inverse is then never checked.
    return None


def _column_transformer(params):
    if params["sparse_threshold"] != 0:
        return (
            f"sparse_threshold={params['sparse_threshold']!r} chooses a sparse or dense "
            "output from the density of the private rows; pass sparse_threshold=0"
        )
    from sklearn.compose import make_column_selector

    for _name, _step, columns in params["transformers"]:
        if callable(columns) and type(columns) is not make_column_selector:
            return "a callable column selection may read the private values"
    return None


def _same_values(fitted, given):
    """Whether two lists (categories, column selections) hold the same values in order (NaN equal)."""
    fitted, given = list(fitted), list(given)
    if len(fitted) != len(given):
        return False
    for a, b in zip(fitted, given, strict=True):
        both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        if not (both_nan or bool(a == b)):
            return False
    return True


def _encoder_state(step, params):
    """The fitted categories must be the given ones, none of them grouped as infrequent."""
    if not hasattr(step, "categories_"):
        return None
    given = params["categories"]
    if len(step.categories_) != len(given) or not all(
        _same_values(np.asarray(fitted, dtype=object).tolist(), list(public))
        for fitted, public in zip(step.categories_, given, strict=True)
    ):
        return (
            "its fitted categories_ are not the categories its parameters give: it was "
            "fitted with other parameters (categories read off the private rows); fit it "
            "again"
        )
    try:
        infrequent = step.infrequent_categories_
    except AttributeError:  # no infrequent grouping at fit
        infrequent = ()
    # A fit without grouping leaves an earlier fit's groups in place, unused
    # (scikit-learn's flag says whether transform reads them).
    grouped = getattr(step, "_infrequent_enabled", True)
    if grouped and any(part is not None for part in infrequent):
        return "its fit grouped categories as infrequent by counting the private rows; fit it again"
    if getattr(step, "drop_idx_", None) is not None:
        return "its fit chose columns to drop; fit it again with drop=None"
    return None


def _imputer_state(step, params):
    """The fitted fill values must be the constant its parameters give, and no indicator."""
    if not hasattr(step, "statistics_"):
        return None
    statistics = np.asarray(step.statistics_, dtype=object).ravel().tolist()
    fills = [params["fill_value"]] if params["fill_value"] is not None else [0, "missing_value"]
    constant = any(
        all(not isinstance(value, float) or not math.isnan(value) for value in statistics)
        and all(value == fill for value in statistics)
        for fill in fills
    )
    if not constant or getattr(step, "indicator_", None) is not None:
        return (
            "its fitted statistics_ are not the constant fill_value (or it keeps a missing "
            "indicator): it was fitted with other parameters, and fills with statistics of "
            "the private rows; fit it again"
        )
    return None


def _column_transformer_state(step, params):
    """The fitted output format and column selections must be those the parameters give."""
    if not hasattr(step, "transformers_"):
        return None
    if getattr(step, "sparse_output_", False):
        return "its fit chose a sparse output from the density of the private rows; fit it again"
    fitted = {name: columns for name, _, columns in step.transformers_}
    for name, _, columns in params["transformers"]:
        if callable(columns):  # make_column_selector: the schema only
            continue
        if name not in fitted or not _same_values(
            np.atleast_1d(np.asarray(fitted[name], dtype=object)).tolist(),
            np.atleast_1d(np.asarray(columns, dtype=object)).tolist(),
        ):
            return (
                f"its fitted column selection of {name!r} is not the one its parameters give "
                "(it was fitted with other columns, maybe selected from the private values); "
                "fit it again"
            )
    return None


def _allow_list():
    """``{class: (known parameters, check, fitted_check)}``: scikit-learn steps vouched for, and how.

    Each ``check(params)`` returns None when the parameter values keep the
    step row-wise and blind to the data, else the reason it is refused.  A
    parameter outside ``known`` is refused too (a release may add one).
    Parameters can be changed after a fit (``set_params``), so
    ``fitted_check(step, params)`` checks that what the step learned in its
    fit is what those parameters give on any data (None when it is, or when
    the step is not fitted).
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import FeatureUnion, Pipeline
    from sklearn.preprocessing import (
        FunctionTransformer,
        OneHotEncoder,
        OrdinalEncoder,
        PolynomialFeatures,
    )

    from .pipeline import Pipeline as RecordingPipeline

    allowed = {
        OneHotEncoder: (
            (
                "categories",
                "drop",
                "dtype",
                "feature_name_combiner",
                "handle_unknown",
                "max_categories",
                "min_frequency",
                "sparse_output",
            ),
            _one_hot_encoder,
            _encoder_state,
        ),
        OrdinalEncoder: (
            (
                "categories",
                "dtype",
                "encoded_missing_value",
                "handle_unknown",
                "max_categories",
                "min_frequency",
                "unknown_value",
            ),
            _ordinal_encoder,
            _encoder_state,
        ),
        SimpleImputer: (
            (
                "add_indicator",
                "copy",
                "fill_value",
                "keep_empty_features",
                "missing_values",
                "strategy",
            ),
            _simple_imputer,
            _imputer_state,
        ),
        FunctionTransformer: (
            (
                "accept_sparse",
                "check_inverse",
                "feature_names_out",
                "func",
                "inv_kw_args",
                "inverse_func",
                "kw_args",
                "validate",
            ),
            # Its fit learns the schema only, whatever its parameters then.
            _function_transformer,
            None,
        ),
        # Its fit reads the column count only, and what it learns (the degrees
        # and the number of outputs) comes from its parameters and that count;
        # degree 1 only (products overflow).
        PolynomialFeatures: (
            ("degree", "include_bias", "interaction_only", "order"),
            _polynomial_features,
            None,
        ),
        Pipeline: (("memory", "steps", "transform_input", "verbose"), None, None),
        RecordingPipeline: (("memory", "steps", "transform_input", "verbose"), None, None),
        FeatureUnion: (
            (
                "n_jobs",
                "transformer_list",
                "transformer_weights",
                "verbose",
                "verbose_feature_names_out",
            ),
            None,
            None,
        ),
        ColumnTransformer: (
            (
                # Until 1.8: how the remainder's columns are listed (names or
                # indices), from the schema.
                "force_int_remainder_cols",
                "n_jobs",
                "remainder",
                "sparse_threshold",
                "transformer_weights",
                "transformers",
                "verbose",
                "verbose_feature_names_out",
            ),
            _column_transformer,
            _column_transformer_state,
        ),
    }
    try:
        from sklearn.frozen import FrozenEstimator
    except ImportError:  # pragma: no cover - scikit-learn < 1.6
        pass
    else:
        # Its fit inside the pipeline does nothing, but the step it holds was
        # fitted before, maybe on the private rows: that step is checked as
        # if it were not frozen (see _leaves).
        allowed[FrozenEstimator] = (("estimator",), None, None)
    return allowed


def is_frozen(step):
    """Whether ``step`` is scikit-learn's ``FrozenEstimator`` (it holds an estimator fitted before)."""
    return type(step).__name__ == "FrozenEstimator" and hasattr(step, "estimator")


def allow_list_problem(step, entry, *, fitted=True):
    """Why the allow-listed ``step`` (its ``entry`` of :func:`_allow_list`) is refused, or None.

    Its parameters and, if ``fitted``, what it learned in its fit (which may
    have used other parameters) and the record of the parameters it was
    fitted with (:func:`record_fit`); a step that will be fitted again (a
    clone in a search) is checked on its parameters only.
    """
    known, check, fitted_check = entry
    params = step.get_params(deep=False)
    return (
        _unknown_params(params, known)
        or (check(params) if check else None)
        or (fitted_check(step, params) if fitted and fitted_check else None)
        or (_record_problem(step, params) if fitted and type(step).__name__ in _RECORDED else None)
    )


#: The allow-listed steps whose parameters decide whether their fit reads the
#: rows (categories, a fill value, a function): vouched for only with a record
#: of the parameters they were fitted with.  The others' fits read the schema
#: only, whatever their parameters.
_RECORDED = frozenset(
    {"OneHotEncoder", "OrdinalEncoder", "SimpleImputer", "FunctionTransformer", "ColumnTransformer"}
)


#: The private attribute in which :func:`record_fit` keeps, on an allow-listed
#: scikit-learn step, a snapshot of the parameters it was fitted with.
FIT_RECORD_ATTRIBUTE = "_sklearn_dp_fitted_with"


class _Same:
    """A parameter value compared by identity (a function, an estimator): equal only to itself."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return isinstance(other, _Same) and other.value is self.value

    def __hash__(self):
        return id(self.value)

    def __getstate__(self):
        return self.value

    def __setstate__(self, value):
        self.value = value


def _snapshot(value):
    """``value`` as a comparable description: data by value, any other object by identity.

    Types are kept (``1`` is not ``1.0`` nor ``True``) and NaN equals NaN, so
    a snapshot equals another exactly when the parameters are the same.
    """
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (type(value).__name__, value)
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else value)
    if isinstance(value, np.generic):
        return (str(value.dtype), _snapshot(value.item()))
    if isinstance(value, np.ndarray) and value.dtype != object:
        return ("ndarray", str(value.dtype), value.shape, value.tobytes())
    if isinstance(value, (list, tuple, np.ndarray)):
        return (type(value).__name__, tuple(_snapshot(part) for part in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _snapshot(v)) for k, v in value.items())))
    # A function or an estimator may change behind an equal-looking value;
    # its identity survives pickling together with the step that holds it.
    return _Same(value)


def _params_snapshot(step):
    return _snapshot(step.get_params(deep=False))


def _record_problem(step, params):
    """Why the record of the parameters ``step`` was fitted with does not vouch for them, or None."""
    recorded = getattr(step, "__dict__", {}).get(FIT_RECORD_ATTRIBUTE)
    if recorded is None:
        return (
            "no record of the parameters it was fitted with: privacy_spent cannot tell "
            "parameters set before the fit from values copied from what a fit on the private "
            "rows learned (categories_, statistics_) or set after it; fit it inside "
            "sklearn_dp.pipeline.make_pipeline (or sklearn_dp.pipeline.Pipeline), which "
            "records each step's parameters when it fits them"
        )
    if recorded != _snapshot(params):
        return (
            "its parameters changed after its fit (set_params): what it learned came from "
            "the parameters it was fitted with; fit it again"
        )
    return None


def _fitted_children(step):
    """``[(name, child)]`` of a fitted container, as fitted (a ColumnTransformer's ``transformers_``)."""
    if is_frozen(step):
        return [("estimator", step.estimator)]
    if hasattr(step, "named_steps"):  # Pipeline
        return list(step.steps)
    if hasattr(step, "transformer_list"):  # FeatureUnion
        return list(step.transformer_list)
    if hasattr(step, "transformers"):  # ColumnTransformer: the fitted ones, remainder included
        # A step given no column is never fitted: it read nothing.
        return [
            (n, s)
            for n, s, columns in getattr(step, "transformers_", ())
            if not _no_columns(columns)
        ]
    return []


def record_fit(step):
    """Record, on every allow-listed step that ``step`` just fitted, the parameters it was fitted with.

    Called right after the fit by :class:`sklearn_dp.pipeline.Pipeline` and
    the private searches: :func:`privacy_spent` then vouches for such a step
    only while its parameters are the recorded ones.  The step a
    ``FrozenEstimator`` holds was not fitted here and keeps its own record.
    """
    if step is None or isinstance(step, str) or is_frozen(step):
        return
    entry = _allow_list().get(type(step))
    if entry is not None and entry[1] is not None:
        setattr(step, FIT_RECORD_ATTRIBUTE, _params_snapshot(step))
    for _, child in _fitted_children(step):
        record_fit(child)


def _is_search(step):
    params = step.get_params(deep=False) if hasattr(step, "get_params") else {}
    return hasattr(step, "cv_results_") or "param_grid" in params or "param_distributions" in params


#: The attribute a private search sets on the model it releases
#: (``best_estimator_``): its parameters (which candidate won, the share its
#: refit was fitted at) were chosen from the search's releases, so what
#: vouches for it is the whole search.  A dict with ``owner``,
#: ``privacy_spent`` and ``dp_event``.
VOUCHED_ATTRIBUTE = "vouched_by_"


def _public_value(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return repr(np.asarray(value).tolist())
    if isinstance(value, (list, tuple)):
        return tuple(_public_value(part) for part in value)
    if isinstance(value, dict):
        return tuple(sorted((str(key), _public_value(part)) for key, part in value.items()))
    # Estimators are described by their own parameters (get_params(deep=True));
    # budgets, generators and other objects by their type only.
    return type(value).__name__


def _fitted_state(value, seen):
    """A description of ``value`` by what fits computed: fitted attributes, nested fitted steps."""
    if hasattr(value, "get_params"):
        if id(value) in seen:
            return type(value).__name__
        seen.add(id(value))
        attributes = sorted(
            (name, part)
            for name, part in vars(value).items()
            if name.endswith("_") and not name.startswith("_") and name != VOUCHED_ATTRIBUTE
        )
        return (
            type(value).__name__,
            tuple((name, _fitted_state(part, seen)) for name, part in attributes),
        )
    if isinstance(value, (list, tuple)):
        return tuple(_fitted_state(part, seen) for part in value)
    if isinstance(value, dict):
        return tuple(sorted((str(key), _fitted_state(part, seen)) for key, part in value.items()))
    if isinstance(value, dpe.DpEvent):
        return repr(value)
    return _public_value(value)


def _released_state(model):
    """A digest of what a search released: every step's class and fitted state (coef_, dp_event_, ...).

    Parameters are left out: a parameter changed after the fit (``verbose``,
    ``warm_start``) changes nothing the search computed.  A record whose
    state no longer matches (the model fitted again, a coefficient set by
    hand, a step replaced) is stale: it vouches for nothing, and neither
    does the model's own smaller spend (:func:`stale_record`).
    """
    parts = [("", model)]
    if hasattr(model, "get_params"):
        parts += sorted(
            (
                (key, value)
                for key, value in model.get_params(deep=True).items()
                if hasattr(value, "get_params")
            ),
            key=lambda item: item[0],
        )
    seen = set()
    state = [(key, _fitted_state(value, seen)) for key, value in parts]
    return hashlib.sha256(repr(state).encode()).hexdigest()


def vouched_by(step):
    """The record of the search that released ``step`` (:data:`VOUCHED_ATTRIBUTE`), or None.

    None also when ``step``'s fitted state changed since the search released
    it (fitted again, a coefficient set, a step replaced): the search's
    guarantee covers what it released, not what the model became (see
    :func:`stale_record`).
    """
    record = getattr(step, "__dict__", {}).get(VOUCHED_ATTRIBUTE)
    if record is None or record.get("state") != _released_state(step):
        return None
    return record


def stale_record(step):
    """Whether ``step`` holds a search's record that its fitted state no longer matches.

    Such a model was released by a search and then changed; its own
    ``privacy_spent_`` leaves out the selection that chose it, so nothing
    vouches for it: :func:`privacy_spent` reports ``epsilon = inf``.
    """
    record = getattr(step, "__dict__", {}).get(VOUCHED_ATTRIBUTE)
    return record is not None and record.get("state") != _released_state(step)


def vouch(model, owner, spent, event):
    """Mark ``model`` as released by the search ``owner``, whose guarantee is ``spent`` (``event``)."""
    setattr(
        model,
        VOUCHED_ATTRIBUTE,
        {
            "owner": str(owner),
            "privacy_spent": (float(spent[0]), float(spent[1])),
            "dp_event": event,
            "state": _released_state(model),
        },
    )


def spent_of(step):
    """``(epsilon, delta)`` that vouches for ``step``: its search's, else its own ``privacy_spent_``.

    ``(inf, 0.0)`` for a model changed since a search released it.
    """
    if stale_record(step):
        return (math.inf, 0.0)
    record = vouched_by(step)
    return record["privacy_spent"] if record is not None else tuple(step.privacy_spent_)


def event_of(step):
    """The event that describes ``step``: its search's (also once changed), else its own ``dp_event_``."""
    record = getattr(step, "__dict__", {}).get(VOUCHED_ATTRIBUTE)
    return record["dp_event"] if record is not None else step.dp_event_


def _leaves(step, path, allowed, *, vouched=True):
    """The DP steps under ``step`` as ``(path, step)``; raises :class:`_Refused` on anything else.

    A model released by a private search (:func:`vouched_by`) is one leaf,
    whatever it holds, unless ``vouched`` is False (its own steps then).
    """
    name = path or type(step).__name__
    if step is None or (isinstance(step, str) and step in ("drop", "passthrough")):
        return []
    if vouched and vouched_by(step) is not None:
        return [(name, step)]
    if stale_record(step):
        raise _Refused(
            name,
            step,
            "it changed after the private search that released it (fitted again, a "
            "coefficient set or a step replaced): the search's guarantee covers what it "
            "released, and the model's own spend leaves out the selection that chose it; "
            "warm-start the model as the search released it (warm_start=True composes the "
            "search's guarantee), or fit a clone",
        )
    if _is_ours(step):
        if not (hasattr(step, "dp_event_") and hasattr(step, "privacy_spent_")):
            raise _Refused(name, step, "it is not fitted (no dp_event_)")
        return [(name, step)]
    if _is_search(step):
        raise _Refused(
            name,
            step,
            "a scikit-learn search picks its best candidate from scores on the private rows, "
            "outside any guarantee; use sklearn_dp.model_selection.DPGridSearchCV or "
            "DPRandomizedSearchCV",
        )
    entry = allowed.get(type(step))
    if entry is None:
        raise _Refused(
            name,
            step,
            "its fit read the private rows outside any guarantee (it is not on the allow-list "
            "of row-wise, data-blind scikit-learn steps); use sklearn_dp's preprocessing "
            "(DPStandardScaler, DPMinMaxScaler, PublicRangeScaler), "
            "sklearn_dp.decomposition.DPPCA in place of PCA, or public parameters",
        )
    release = _sklearn_release()
    if release not in CHECKED_SKLEARN:
        raise _Refused(
            name,
            step,
            f"the allow-list was checked against scikit-learn {', '.join(CHECKED_SKLEARN)} "
            f"only, and this is scikit-learn {sklearn.__version__}",
        )
    reason = allow_list_problem(step, entry)
    if reason:
        raise _Refused(name, step, reason)
    prefix = f"{path}." if path else ""
    if hasattr(step, "transformers") and not hasattr(step, "transformers_"):
        raise _Refused(name, step, "it is not fitted")
    # A frozen step's fit in the pipeline does nothing, but the step it holds
    # was fitted before, maybe on these rows: checked as if not frozen (a
    # step of this package contributes its recorded spend).
    found = []
    for child_name, child in _fitted_children(step):
        found.extend(_leaves(child, f"{prefix}{child_name}", allowed))
    return found


def _no_columns(columns):
    if isinstance(columns, (str, int, slice)) or callable(columns):
        return False
    try:
        values = list(columns)
    except TypeError:
        return False
    if values and all(isinstance(v, (bool, np.bool_)) for v in values):
        return not any(values)
    return not values


def _shared_budget(steps):
    budgets = [step.get_params(deep=False).get("budget") for _, step in steps]
    if budgets and budgets[0] is not None and all(b is budgets[0] for b in budgets):
        return budgets[0]
    return None


def privacy_spent(
    estimator: BaseEstimator, delta: float | None = None, *, composition: str | None = None
) -> tuple[float, float]:
    """The (epsilon, delta) that a fitted Pipeline, ColumnTransformer or estimator guarantees.

    Every step of a Pipeline (or a ColumnTransformer, a FeatureUnion, nested)
    was fitted on the same rows, and each step's mechanism was chosen after
    the earlier steps' releases: the steps' spends compose adaptively, by a
    rule valid under adaptive composition (the rules of
    :class:`~sklearn_dp.PrivacyBudget`):

    * ``"basic"``: the steps' ``privacy_spent_`` epsilons and deltas add
      (Dwork, Rothblum and Vadhan 2010);
    * ``"zcdp"``: the zCDP costs of the steps' ``dp_event_`` add
      (:func:`~sklearn_dp.accounting.zcdp_rho`; Bun and Steinke 2016) and the
      total is converted to epsilon at ``delta``.

    ``transform`` and ``predict`` use released values only and add nothing.

    **What is vouched for.** Steps of this package contribute their recorded
    spend (:class:`~sklearn_dp.preprocessing.PublicRangeScaler` and
    :class:`~sklearn_dp.preprocessing.RowWiseTransformer` spend nothing).
    A model a private search released (its ``best_estimator_``, an
    estimator or a Pipeline) contributes the whole search's
    ``privacy_spent_``, not its own fit's share: which candidate won, and
    the share its refit was fitted at, were chosen from the search's
    releases.
    Of scikit-learn, only these steps and parameter values, which are
    row-wise and read nothing from the data but its schema (checked against
    the source of scikit-learn 1.6 to 1.9, :data:`CHECKED_SKLEARN`; on
    another release, or with a parameter the list does not know, they are
    refused):

    * ``Pipeline``, ``FeatureUnion``, and ``ColumnTransformer`` with
      ``sparse_threshold=0`` (otherwise the output format depends on the
      density of the private rows) and columns given by names, indices,
      masks or ``make_column_selector`` (``remainder`` is checked like any
      step);
    * ``OneHotEncoder`` with public ``categories``, ``handle_unknown=
      "ignore"`` (or ``"infrequent_if_exist"``), ``drop=None``, no
      ``min_frequency`` / ``max_categories`` (``"error"`` raises and
      ``"warn"`` or ``drop`` warn on a private row's unknown value);
    * ``OrdinalEncoder`` with public ``categories``, ``handle_unknown=
      "use_encoded_value"``, no ``min_frequency`` / ``max_categories``, and
      codes finite in its ``dtype``;
    * ``SimpleImputer(strategy="constant", keep_empty_features=True)``
      without ``add_indicator`` (otherwise the columns kept depend on which
      private values are missing), with a ``fill_value`` finite in float32
      (every step here maps finite rows to finite rows: the next DP step
      refuses non-finite ones);
    * ``FunctionTransformer()`` with ``func=None`` (the identity): any other
      function cannot be checked (and its default ``check_inverse`` samples
      private rows); assert a function row-wise with
      :class:`~sklearn_dp.preprocessing.RowWiseTransformer`;
    * ``PolynomialFeatures`` of degree at most 1 (its fit reads the column
      count only; a product of finite values can overflow to ``inf``, which
      the next DP step would refuse, depending on one row: for a polynomial
      expansion use :class:`~sklearn_dp.preprocessing.RowWiseTransformer`,
      whose output saturates at the float range);
    * ``FrozenEstimator``: the step it holds was fitted before, maybe on the
      same private rows, so it is checked as if it were not frozen (a step
      of this package contributes its recorded spend, ``inf`` for
      ``epsilon=inf``; a scikit-learn step must be on this list, with its
      parameters and fitted state; anything else is refused);
    * ``"passthrough"`` and ``"drop"``.

    Parameters can change after a fit (``set_params``), so the fitted state
    of each allow-listed step is checked too: a ``SimpleImputer``'s
    ``statistics_`` must be its constant ``fill_value``, an encoder's
    ``categories_`` the given categories with none grouped as infrequent
    and none dropped, a ``ColumnTransformer``'s fitted column selections
    those of its parameters and its output dense.  And a step whose
    parameters decide whether its fit reads the private rows (the encoders,
    ``SimpleImputer``, ``FunctionTransformer``, ``ColumnTransformer``) is
    vouched for only if :class:`sklearn_dp.pipeline.Pipeline` or a private
    search recorded the parameters it was fitted with, and only while its
    parameters are those: values copied after the fit from what it learned
    are refused, and so is such a step fitted by a scikit-learn
    ``Pipeline`` or alone (no record).  Where parameters came from before
    the fit cannot be checked: they are the user's public claim.  Private steps that
    protect different units of privacy (one row for some, one group, with
    ``groups=``, for others) do not compose: the result is then
    ``(inf, 0.0)`` with a warning.

    The input's schema (number of columns, names, dtypes) is public here as
    for every estimator of this package, and a value that scikit-learn's
    validation refuses (an ``inf`` where ``NaN`` is the missing value) is
    outside the steps' domain: their messages are scikit-learn's and can
    quote the value (``FunctionTransformer(validate=True)`` on a string
    cell); :class:`~sklearn_dp.preprocessing.RowWiseTransformer` is a
    validated identity whose messages show no value.

    Anything else (for example scikit-learn's ``StandardScaler``, or a
    scikit-learn ``GridSearchCV``) read the data outside any guarantee: it is
    named in a :class:`~sklearn_dp.exceptions.PrivacyLeakWarning` and the
    result is ``(inf, 0.0)``.

    Parameters
    ----------
    estimator : fitted estimator, Pipeline, ColumnTransformer or FeatureUnion
        The fitted model; its private steps are found recursively.
    delta : float, optional
        Report epsilon at this delta.  ``"basic"``: at least the sum of the
        steps' deltas, default that sum (a larger delta does not lower the
        epsilon).  ``"zcdp"``: any delta in (0, 1), default the shared
        budget's delta, else the sum of the steps' deltas.
    composition : {"basic", "zcdp"}, optional
        The composition rule.  Default: the rule of the
        :class:`~sklearn_dp.PrivacyBudget` that every private step was
        charged to, when they share one; otherwise ``"basic"``.

    Returns
    -------
    (epsilon, delta) : tuple of float
        The guarantee of the whole model.

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
    if composition is not None and composition not in COMPOSITIONS:
        raise ValueError(f"composition must be one of {COMPOSITIONS} or None, got {composition!r}.")
    try:
        steps = _leaves(estimator, "", _allow_list())
    except _Refused as refused:
        warnings.warn(
            f"Step {refused.path!r} ({type(refused.step).__name__}) cannot be vouched for: "
            f"{refused.reason}. The pipeline's guarantee is reported as epsilon=inf.",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )
        return (math.inf, 0.0)
    spends = [
        (path, step)
        for path, step in steps
        if not isinstance(event_of(step), dpe.NoOpDpEvent) and spent_of(step) != (0.0, 0.0)
    ]
    units = {_unit_of(step) for _, step in spends}
    if len(units) > 1:
        rows = [path for path, step in spends if _unit_of(step) == "row"]
        warnings.warn(
            f"The private steps protect different units of privacy: {rows} one row, the "
            "others one group (fits with groups=). Their epsilons do not add up to a "
            "guarantee for either; fit every private step with the same groups=. The "
            "pipeline's guarantee is reported as epsilon=inf.",
            PrivacyLeakWarning,
            stacklevel=user_stacklevel(),
        )
        return (math.inf, 0.0)
    shared = _shared_budget(spends)
    if composition is None:
        composition = shared.composition if shared is not None else "basic"
    return compose_spends(
        [(spent_of(step), event_of(step)) for _, step in spends],
        delta,
        composition=composition,
        budget=shared,
    )


def _unit_of(step):
    """``"group"`` if the fit protected groups (``max_group_rows_``), else ``"row"``.

    A search records the unit on itself and on the DP steps of the Pipeline
    it released.
    """
    fits = [step] + [part for _, part in getattr(step, "steps", ())]
    return "group" if any("max_group_rows_" in getattr(f, "__dict__", {}) for f in fits) else "row"


def compose_spends(spends, delta=None, *, composition="basic", budget=None):
    """``(epsilon, delta)`` of fits on the same rows, composed adaptively.

    Parameters
    ----------
    spends : list of ((float, float), DpEvent)
        Each fit's recorded ``privacy_spent_`` and ``dp_event_``, of one
        unit of privacy.
    delta : float, optional
        As for :func:`privacy_spent`.
    composition : {"basic", "zcdp"}, default="basic"
        The rule (those of :class:`~sklearn_dp.PrivacyBudget`).
    budget : PrivacyBudget, optional
        The budget every fit was charged to, if one: ``"zcdp"`` then
        converts at its delta by default.

    Returns
    -------
    (epsilon, delta) : tuple of float
    """
    spends = [((float(spent[0]), float(spent[1])), event) for spent, event in spends]
    if not spends:
        return (0.0, 0.0)
    if any(math.isinf(spent[0]) for spent, _ in spends):
        return (math.inf, 0.0)
    total_epsilon = math.fsum(spent[0] for spent, _ in spends)
    total_delta = math.fsum(spent[1] for spent, _ in spends)
    if composition == "basic":
        if delta is None:
            return (total_epsilon, total_delta)
        if delta < total_delta:
            raise ValueError(
                f"delta={delta!r} is below the sum of the steps' deltas ({total_delta:g}), "
                "which basic composition needs."
            )
        return (total_epsilon, float(delta))
    # Each step is charged as the budget charges it: its mechanism's
    # approximate-zCDP description (a label set read off the data takes its
    # delta from the pool), or its own (epsilon, delta) guarantee.
    charges = [_approximate_charges(spent[0], spent[1], event)[0] for spent, event in spends]
    rho = math.fsum(charge[0] for charge in charges)
    pool = math.fsum(charge[1] for charge in charges)
    if delta is None:
        if budget is not None and budget.delta > 0:
            conversion = budget.delta - (budget.delta_pool or 0.0)
        else:
            conversion = total_delta
    else:
        conversion = float(delta) - pool
    if not 0 < conversion < 1:
        raise ValueError(
            f"composition='zcdp' needs a delta in (0, 1) above the steps' approximate-DP "
            f"deltas ({pool:g}), got {delta!r}."
        )
    epsilon = 0.0 if rho <= 0 else float(epsilon_of_zcdp(rho, conversion))
    return (epsilon + _pool_epsilon(pool), conversion + pool)
