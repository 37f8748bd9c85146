"""What every sklearn_dp estimator shares: privacy parameters, validation,
solver dispatch, bounds parameters and the fitted attributes.

An estimator's ``fit`` validates its parameters and the input's schema
(shape, type, finiteness, labels in the public ``classes``) and describes the
fit as a :class:`FitRequest` (:meth:`BaseDPEstimator._fit_request`); then it
follows the privacy protocol of :mod:`sklearn_dp._protocol`, whose steps for
estimators are :mod:`sklearn_dp.linear_model._fit`:

1. *Plan* (:func:`~sklearn_dp.linear_model._fit.plan_fit`).  Resolve
   ``solver`` against the registry, check its options, split epsilon and
   delta and plan the solver, from public inputs only (:class:`PublicSetting`:
   never the row count): a :class:`~sklearn_dp._protocol.FitPlan`, computed
   once.  :meth:`BaseDPEstimator._fit_plan` returns it without fitting (the
   searches use it).
2. *Reservation*, *private phase* and *completion*
   (:func:`~sklearn_dp.linear_model._fit.run_fit`).  Reserve the plan's
   spend on the budget, atomically, before the first read of a private
   value (from then on the spend stands: a fit that raises keeps its ledger
   entry, marked failed); release the label set (when ``classes`` is not
   given), the row count and the ``"auto"`` bounds, re-plan the solver's
   share where released values change it, bound the data, run the solver;
   complete the reservation with the fit's final event.  Everything
   observable from the reservation on is a function of public inputs and
   noisy releases only (see :class:`~sklearn_dp._protocol.PrivatePhase`).
3. *Storing* (:meth:`BaseDPEstimator._fit_solver` and the request's
   ``store``): the fitted attributes, from released values only.

If anything fails, the estimator's attributes are restored to what they were
before ``fit``; the budget keeps what was reserved.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from .. import _dask
from .._data import check_feature_bound
from .._labels import LABEL_DELTA_FRACTION, LABEL_EPSILON_FRACTION, release_labels
from .._limits import MAX_EPSILON, MAX_SCALE, MIN_EPSILON, MIN_SCALE
from .._protocol import (
    GROUP_SOLVERS,
    PRIVACY_PARAMETER_CONSTRAINTS,
    FitPlan,
    PrivatePhase,
    check_groups,
    debug_mode,
    restore_on_failure,
    warn_unused_group_bound,
)
from .._saving import SavedWithoutLedger
from .._sklearn_compat import (
    Interval,
    Options,
    finite_checks,
    validate_parameter_constraints,
)
from .._validation import validate_private
from .._warnings import user_stacklevel
from ..solvers import get_solver
from ..solvers._registry import check_solver_supports, choose_solver
from ._fit import check_weights_supported, plan_fit, run_fit
from ._released_warnings import released_fit_warnings

# Also imported from here by the estimators and the searches.
__all__ = [
    "BaseDPEstimator",
    "FitProblem",
    "FitRequest",
    "FitPlan",
    "debug_mode",
    "FitBounds",
    "PublicSetting",
    "PrivatePhase",
    "release_labels",
    "LABEL_EPSILON_FRACTION",
    "LABEL_DELTA_FRACTION",
    "user_stacklevel",
    "restore_on_failure",
    "penalty_strengths",
    "public_scale",
    "MIN_SCALE",
    "MAX_SCALE",
    "MIN_EPSILON",
    "MAX_EPSILON",
    "check_weights_supported",
    "validate_private",
]


@dataclass(frozen=True)
class PublicSetting:
    """What a fit knows before it reads a private value: public inputs only.

    Plans and ``auto`` solver choices receive this, never the data; the true
    row count is not in it (under add/remove neighbouring it is private).

    Attributes
    ----------
    n_features : int
    n_outputs : int
        Outputs of the model (classes of a multinomial model, else 1).
    multiclass : bool
    sparse : bool
    fit_intercept : bool
    epsilon, delta : float
        The fit's privacy parameters.
    discover_labels : bool
        Whether the label set is still to be released privately.
    max_group_rows : int or None
        The unit of privacy: None for one row, ``k`` for one group of at
        most ``k`` rows (a fit with ``groups=``).
    """

    n_features: int
    n_outputs: int
    multiclass: bool
    sparse: bool
    fit_intercept: bool
    epsilon: float
    delta: float
    discover_labels: bool = False
    max_group_rows: int | None = None


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


def _given(value):
    """Whether a bound parameter holds a number (or numbers) given by the user."""
    return value is not None and not isinstance(value, str)


@dataclass(frozen=True)
class FitBounds:
    """The public bounds of a fit: given by the user, or released privately.

    Attributes
    ----------
    data_norm : float or None
        L2 bound of the rows passed to :func:`~sklearn_dp._data.bound_data`
        (None when the rows are bounded entrywise).
    feature_bound : float, ndarray or None
        Entrywise bound passed to ``bound_data`` (None when a ``data_norm`` is used).
    intercept_scaling : float
        Value of the constant intercept column.
    row_bound : float or None
        L2 bound of the rows of X (``data_norm``, or implied by the feature bounds).
    entry_bound : ndarray or None
        The entrywise bound per feature, when the rows are bounded entrywise.
    y_center, y_scale : float
        Regressors: labels are clipped to ``[y_center - y_scale, y_center +
        y_scale]`` and fitted as ``(y - y_center) / y_scale``.
    feature_center, feature_scale, feature_clip : ndarray or None
        With per-feature scaling (``feature_scaling=True``): the released
        centres, scales and raw clips; the fit works on ``(clip(x, +-feature_clip)
        - feature_center) / feature_scale``, and ``data_norm`` and
        ``feature_bound`` are in those units.
    n_public : float or None
        The DP row count (a released value), once released; None before.
    """

    data_norm: float | None
    feature_bound: object
    intercept_scaling: float
    row_bound: float | None
    entry_bound: object = None
    y_center: float = 0.0
    y_scale: float = 1.0
    feature_center: object = None
    feature_scale: object = None
    feature_clip: object = None
    n_public: float | None = None


def public_scale(*, zero=False):
    """Parameter constraint of a public scale: a float in [MIN_SCALE, MAX_SCALE] (or 0)."""
    constraint = [Interval(Real, MIN_SCALE, MAX_SCALE, closed="both")]
    return constraint + [Options(Real, {0.0})] if zero else constraint


@dataclass(frozen=True)
class FitProblem:
    """The public description of what a fit optimises.

    Attributes
    ----------
    loss_name : str
        Name of the loss (for solver support checks).
    make_loss : callable
        ``make_loss(data) -> GLMLoss``; the loss may depend on the public
        bounds of the bounded data (for example a residual bound).
    penalty : {None, "l2", "l1", "elasticnet"}
    alpha : float or callable
        Penalty strength on the average loss: the penalty is
        ``alpha * (l1_ratio * ||w||_1 + (1 - l1_ratio) / 2 * ||w||_2^2)``.  A
        callable receives the public stand-in for n (for scikit-learn's
        ``1 / (C n)`` scaling) and returns the strength.
    l1_ratio : float
        0 for L2, 1 for L1.
    n_outputs : int
    multiclass : bool
    constraint : {None, "l2", "l1", "lp"}
        Ball the coefficients are constrained to.
    radius : float or None
        Its radius, in the solver's units.
    p : float or None
        Exponent of the ``"lp"`` ball (None for the others).
    """

    loss_name: str
    make_loss: Callable
    penalty: str | None
    alpha: float | Callable
    l1_ratio: float = 0.0
    n_outputs: int = 1
    multiclass: bool = False
    constraint: str | None = None
    radius: float | None = None
    p: float | None = None


@dataclass
class FitRequest:
    """What an estimator's ``fit`` hands to the protocol, once its public checks passed.

    Attributes
    ----------
    X : ndarray, CSR matrix or dask array
        Validated (schema-checked), unbounded features.
    y : ndarray
        Validated labels, not yet transformed.
    problem : FitProblem
        The public description of the optimisation problem (for a
        classifier that discovers its labels: the binary problem, a
        provisional description used for the public checks; for a regressor
        with ``"auto"`` bounds: the problem for placeholder bounds, replaced
        by ``finish``).
    store : callable
        ``store(data, result, bounds)``: sets the estimator's fitted model.
    prepare : callable, optional
        ``prepare(X, y, phase) -> (X, y, problem)``, run inside the private
        phase before the row count: the label encoding and the release of
        the label set.
    discover_labels : bool, default=False
        Whether ``prepare`` releases the label set (it then gets
        ``phase.label_epsilon`` and ``phase.label_delta``).
    finish : callable, optional
        ``finish(y, bounds) -> (y, problem)``, run inside the private phase
        once the bounds are known (given or released): label clipping and
        scaling, and the problem in the fit's units.
    sample_weight : ndarray of shape (n_samples,) or None
        Checked weights, clipped to ``[0, max_weight]`` when the data is
        bounded.  ``prepare`` may replace them (``phase.sample_weight``:
        class weights, rows dropped with unreleased labels).
    weighted : bool or None
        Whether the fit is weighted (public: ``sample_weight`` or
        ``class_weight`` given); None: ``sample_weight is not None``.  A
        weighted fit needs a solver with ``SolverSpec.sample_weight``
        (refused before the reservation otherwise), and its sensitivities
        are multiplied by ``max_weight``.
    initial_point : callable, optional
        ``initial_point(bounds, problem) -> ndarray or None``: a warm start
        (a previous fit's released coefficients in the new fit's units),
        passed as ``coef_init`` to solvers that take one.
    groups : ndarray of shape (n_samples,) or None
        The group of each row (private), with ``groups=``.
    max_group_rows : int or None
        The unit of privacy: None for one row; ``k`` for one group of at
        most ``k`` rows (each group keeps its first ``k`` rows).
    """

    X: object
    y: object
    problem: FitProblem
    store: Callable
    prepare: Callable | None = None
    discover_labels: bool = False
    finish: Callable | None = None
    sample_weight: object = None
    weighted: bool | None = None
    initial_point: Callable | None = None
    groups: object = None
    max_group_rows: int | None = None


def penalty_strengths(penalty, strength, l1_ratio):
    """(alpha, l1_ratio) of the solvers' elastic-net convention for an estimator penalty."""
    if penalty is None:
        return 0.0, 0.0
    if penalty == "l2":
        return float(strength), 0.0
    if penalty == "l1":
        return float(strength), 1.0
    if l1_ratio is None:
        raise ValueError("penalty='elasticnet' needs l1_ratio in [0, 1].")
    return float(strength), float(l1_ratio)


class BaseDPEstimator(SavedWithoutLedger, BaseEstimator):
    """Privacy parameters, solver dispatch and budget handling.

    Subclasses define ``_parameter_constraints`` (starting from
    ``_privacy_parameter_constraints``), ``_auto_solver`` and ``fit``.
    """

    _privacy_parameter_constraints = {
        **PRIVACY_PARAMETER_CONSTRAINTS,
        "solver": [str],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [*public_scale(), None],
        "clip_norm": [*public_scale(), None],
        "solver_options": [dict, None],
        "verbose": ["verbose"],
    }

    # Estimator parameters that map onto solver keyword arguments of the same
    # meaning; each solver declares which of them it uses in ``spec.options``.
    _generic_solver_options = {
        "max_iter": "max_iter",
        "learning_rate": "step_size",
        "batch_size": "batch_size",
        "clip_norm": "clip_norm",
        "n_jobs": "n_jobs",
    }

    # Keys of ``SolverResult.info`` stored as fitted attributes ``<key>_`` when
    # the solver reports them (for example the query depth of ``resque``);
    # each estimator declares and documents its own.
    _solver_info_attributes = ()

    def _validate_fit_data(self, X, y, *, y_numeric):
        """``validate_data`` for private training data, with messages free of private values.

        scikit-learn and numpy describe bad input with the data itself (the
        offending string, a dump of a 1-d or complex array, the row counts).
        An error message is an output a DP guarantee does not cover, so those
        are replaced by messages that say what is wrong and what to do, but
        not where or with which value.  (That the data is malformed at all
        remains visible: validate it against its public schema first.  One
        exception is kept for scikit-learn's conformance checks: X without
        columns is refused with scikit-learn's message, which shows its shape.)
        """
        if sp.issparse(y):
            raise TypeError(
                f"{type(self).__name__}: y is a sparse matrix; pass the labels as a 1-d array "
                "(for example y.toarray().ravel())."
            )
        if _dask.is_dask_input(X, y):
            # Dask arrays stay lazy: schema checks in one pass (sklearn_dp._dask).
            return _dask.validate_fit_data(self, X, y, y_numeric=y_numeric)
        # float32 X stays float32: the bounded design computes with it as it is
        # (sums accumulate in float64), so a fit makes no float64 copy of X.
        with finite_checks():
            return self._validate_private(
                X, y, y_numeric=y_numeric, x_dtype=[np.float64, np.float32]
            )

    def _check_sample_weight(self, sample_weight, X):
        """``sample_weight`` as a float64 vector, or a ValueError that states the rule only.

        Schema checks before any spend, as for X: one finite, non-negative
        number per row.  All-zero weights are refused only by non-private
        fits (``epsilon=inf``); a private fit runs on them.  The weights are private data, so the messages never
        show a weight or its position.  Weights above the public
        ``max_weight`` are not an error: they are clipped to it (silently:
        a warning would say that some row's weight exceeds it).
        """
        if sample_weight is None:
            return None
        name = type(self).__name__
        if _dask.is_dask_input(X, sample_weight):
            # Refused before any spend (and before computing anything lazy).
            _dask.refuse_weights(name)
        rule = (
            f"{name}: sample_weight must be a 1-d array of finite, non-negative numbers, one "
            "per row of X (weights above max_weight are clipped to it)"
        )
        if sp.issparse(sample_weight):
            raise ValueError(rule + "; got a sparse matrix.")
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                weights = np.asarray(sample_weight)
                if weights.dtype.kind not in "biuf":
                    raise TypeError
                weights = weights.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(rule + "; it holds a non-numeric or complex value.") from None
        if weights.ndim == 0:
            # A scalar weighs every row alike (as in scikit-learn).
            weights = np.full(X.shape[0], float(weights))
        if weights.ndim != 1 or weights.shape[0] != X.shape[0]:
            raise ValueError(rule + "; its shape does not match the rows of X.")
        with np.errstate(invalid="ignore"):
            valid = np.isfinite(weights) & (weights >= 0)
        if not np.all(valid):
            raise ValueError(rule + "; it holds a negative, NaN or infinite value.")
        # A private fit does not refuse all-zero weights: whether every weight
        # is zero is a property of the whole data set (one more row with a
        # positive weight flips it), so a refusal would answer a question
        # about the data for free.  Such a fit runs on zero effective rows
        # (the noise alone).  A non-private fit refuses them, as scikit-learn.
        if math.isinf(self.epsilon) and weights.size and not np.any(weights > 0):
            raise ValueError(
                rule + "; all sample weights are zero (pass at least one non-zero weight)."
            )
        return weights

    def _regressor_warm_start(self, n_features):
        """``initial_point`` for ``_fit_solver``: the previous model in the scaled units, or None."""
        previous = self._warm_start_model(n_features, 1)
        if previous is None:
            return None
        coef, intercept = previous

        def initial_point(bounds, problem):
            # Labels are fitted as (y - y_center) / y_scale: the previous
            # released model in those units (post-processing).
            W = coef.T / bounds.y_scale
            if self.fit_intercept:
                b = (intercept[0] - bounds.y_center) / (bounds.y_scale * bounds.intercept_scaling)
                W = np.vstack([W, [[b]]])
            return W

        return initial_point

    @staticmethod
    def _as_input_dtype(value, X):
        """``value`` in the input's float type (float32 input gives float32 results)."""
        if np.ndim(value) == 0:
            return X.dtype.type(value) if X.dtype == np.float32 else float(value)
        return np.asarray(value).astype(X.dtype, copy=False)

    def _warm_start_model(self, n_features, n_outputs=None):
        """The previous fit's released ``(coef_, intercept_)`` for a warm start, or None.

        Public (the previous model is a release, whose guarantee the new
        fit's composes with): its shape is checked against the new fit's
        public shape here, before any spend.  Returns 2-d ``coef`` (n_outputs,
        n_features) and 1-d ``intercept`` copies.
        """
        if not getattr(self, "warm_start", False) or not hasattr(self, "coef_"):
            return None
        name = type(self).__name__
        if not hasattr(self, "intercept_"):
            raise ValueError(
                f"{name}: warm_start=True starts from coef_ and intercept_, and only coef_ is "
                "set. Set intercept_ too (zeros of shape (n_outputs,) for none), or set "
                "warm_start=False."
            )
        coef = np.atleast_2d(np.asarray(self.coef_, dtype=np.float64))
        intercept = np.atleast_1d(np.asarray(self.intercept_, dtype=np.float64))
        if coef.shape[1] != n_features or (n_outputs is not None and coef.shape[0] != n_outputs):
            expected = "n_features" if n_outputs is None else "(n_outputs, n_features)"
            raise ValueError(
                f"{name}: warm_start=True reuses the previous coef_, of shape "
                f"{np.shape(self.coef_)}, which does not match this fit ({n_features} features"
                + ("" if n_outputs is None else f", {n_outputs} output(s)")
                + f": {expected}). Set warm_start=False, or fit data of the same shape."
            )
        return coef.copy(), intercept.copy()

    def _validate_predict_data(self, X):
        """``validate_data(reset=False)`` for rows to predict on (private too, often).

        After a fit with per-feature scaling the model is linear in the rows
        bounded as it was fitted on them (clipped to ``feature_bound_``, then
        scaled in standardised units to the released row bound), so the rows
        are bounded the same way: a feature whose released clip lies far
        below its values (a timestamp), or whose released scale lies far
        below its spread (a rare 0/1 column), would otherwise multiply a
        standardised coefficient by orders of magnitude the fit never saw.
        """
        X = self._validate_private(X, reset=False)
        if getattr(self, "feature_scale_", None) is None:
            return X
        from .._scaled_design import bound_like_fit

        return bound_like_fit(
            X,
            center=self.feature_center_,
            scale=self.feature_scale_,
            clip=self.feature_bound_,
            row_bound=getattr(self, "_standardized_row_bound", None),
        )

    def _validate_private(self, X, y="no_validation", x_dtype=np.float64, **kwargs):
        return validate_private(self, X, y, x_dtype, **kwargs)

    def _check_solver_options(self, spec, options):
        """Types and ranges of numeric solver options, before any plan or solver sees them."""
        constraints = spec.constraints_of(options)
        validate_parameter_constraints(
            constraints,
            {key: options[key] for key in constraints},
            caller_name=f"solver_options of solver={spec.name!r}",
        )

    def _check_privacy_request(self):
        """Refuse requests that would release data without accounting for it."""
        if math.isinf(self.epsilon) and self.budget is not None:
            raise ValueError(
                "epsilon=inf fits without noise: the model is not private and cannot be "
                "charged to a finite privacy budget. Use a finite epsilon with budget=, "
                "or drop budget= for a non-private reference fit."
            )

    #: the first whose condition holds and that the registry's support check
    #: accepts for this problem is used (so auto never picks a refused solver).
    _auto_preferences = ()

    def _support_problem(self, spec, problem, public, *, privacy_modes=True):
        """The keywords of :func:`~sklearn_dp.solvers.unsupported_reasons` for ``spec``.

        ``privacy_modes=False`` skips the checks of ``delta`` (a noiseless fit
        with an explicit solver runs it whatever its privacy modes).
        """
        return dict(
            self._solver_form(spec, problem),
            delta=float(self.delta) if privacy_modes else None,
            sparse=public.sparse,
        )

    def _solver_form(self, spec, problem):
        """``loss``, ``penalty``, ``multiclass`` and ``constraint`` of the problem ``spec`` gets."""
        return dict(
            loss=problem.loss_name,
            penalty=problem.penalty,
            multiclass=problem.multiclass,
            constraint=problem.constraint,
        )

    def _auto_solver(self, problem, public):
        # With the privacy modes also at epsilon=inf: the noiseless fit runs
        # the solver the private fit would (the same solver with no noise).
        preferences = self._auto_preferences
        grouped = getattr(public, "max_group_rows", None) is not None
        if grouped:
            preferences = [c for c in preferences if c.solver in GROUP_SOLVERS]
        try:
            return choose_solver(
                preferences,
                estimator=type(self).__name__,
                context=(self, problem, public),
                problem_for=lambda spec: self._support_problem(spec, problem, public),
            )
        except ValueError as exc:
            if not grouped:
                raise
            raise ValueError(
                f"{exc} With groups=, only these solvers can run: "
                f"{', '.join(sorted(GROUP_SOLVERS))} (the others sample rows or have a per-row "
                "analysis); fit without groups, or choose a problem one of them solves."
            ) from None

    def _resolve_solver(self, problem, public):
        name = self.solver
        if name == "auto":
            name = self._auto_solver(problem, public)
        spec = get_solver(name)
        check_solver_supports(
            spec,
            estimator=type(self).__name__,
            **self._support_problem(
                spec, problem, public, privacy_modes=not math.isinf(self.epsilon)
            ),
        )
        return spec

    def _public_setting(self, X, problem=None, discover_labels=False):
        """What is public about this fit (``problem=None``: one output, as DPLasso's)."""
        return PublicSetting(
            n_features=int(X.shape[1]),
            n_outputs=int(problem.n_outputs) if problem is not None else 1,
            multiclass=bool(problem.multiclass) if problem is not None else False,
            sparse=bool(sp.issparse(X)),
            fit_intercept=bool(getattr(self, "fit_intercept", True)),
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            discover_labels=bool(discover_labels),
        )

    def _solver_kwargs(self, spec, problem, bounds=None, quiet=False):
        """The solver's keyword arguments from public inputs (``bounds``: the fit's :class:`FitBounds`).

        ``quiet`` skips the warnings (a second call inside the private phase,
        once the bounds are released: the first call, before the
        reservation, warned).
        """
        kwargs = {}
        for param, option in self._generic_solver_options.items():
            value = getattr(self, param, None)
            if value is None:
                continue
            if option in spec.options:
                kwargs[option] = value
            elif not quiet:
                warnings.warn(
                    f"{param}={value!r} is not used by solver={spec.name!r}.",
                    UserWarning,
                    stacklevel=user_stacklevel(),
                )
        if problem.l1_ratio:
            kwargs["l1_ratio"] = problem.l1_ratio
        if problem.constraint is not None:
            kwargs["radius"] = problem.radius
            if "constraint" in spec.options:
                kwargs["constraint"] = problem.constraint
            if problem.p is not None:
                kwargs["p"] = problem.p
        extra = dict(self.solver_options or {})
        unknown = sorted(set(extra) - set(spec.options))
        if unknown:
            raise ValueError(
                f"solver_options {unknown} are not options of solver={spec.name!r}; "
                f"it accepts {sorted(spec.options)}."
            )
        reserved = sorted(set(extra) & set(kwargs))
        if reserved:
            raise ValueError(
                f"solver_options {reserved} duplicate estimator parameters; set them on "
                "the estimator instead."
            )
        self._check_solver_options(spec, extra)
        kwargs.update(extra)
        return kwargs

    def _check_arguments(self, spec, problem, kwargs, public):
        """What a solver's public ``check`` receives: the public problem and options."""
        return dict(
            loss_name=problem.loss_name,
            n_outputs=problem.n_outputs,
            penalty=problem.penalty,
            alpha=None if callable(problem.alpha) else problem.alpha,
            l1_ratio=problem.l1_ratio,
            public=public,
            options=dict(kwargs),
        )

    # -- bounds ------------------------------------------------------------------

    #: Whether the estimator bounds labels (regressors: ``y_bound``).
    _bounds_labels = False
    #: ``intercept_scaling="auto"`` when the fit scales its features: None
    #: keeps the rows' bound (as without scaling); a number is the intercept
    #: column's value in standardised units.
    _standardized_intercept_scaling = None
    #: Name of the constant of ``sklearn_dp._bounds`` that sets the window of
    #: the rows' bound (see ``docs/guide/choosing_parameters.md``).
    _row_window = "REGRESSOR_ROW_WINDOW"
    #: Whether the rows' bound leans to larger candidates at low evidence
    #: (``sklearn_dp._bounds.tilt_weight``): a bound far below the rows makes
    #: a regressor's predictions on new, unclipped rows explode.
    _lean_row_bound = True

    def _bound_request(self, spec):
        """Which bounds this fit estimates privately, from public inputs only.

        Returns ``(rows, labels)``: ``rows`` is None (given), ``"data_norm"``
        (a DP bound on the rows' L2 norms) or ``"feature_bound"`` (a DP bound
        on ``max_j |X[i, j]|``); ``labels`` says whether the label range is
        estimated.  A number given by the user is used as it is and costs
        nothing; ``"auto"`` is estimated only when the solver's geometry uses
        it (see :func:`_resolve_bounds`).
        """
        data_norm = getattr(self, "data_norm", None)
        feature_bound = getattr(self, "feature_bound", None)
        rows = None
        if spec.geometry == "l2":
            if _given(data_norm) or _given(feature_bound):
                rows = None
            elif _is_auto(data_norm):
                rows = "data_norm"
            elif _is_auto(feature_bound):
                # No data_norm parameter (DPLasso): the entrywise bound implies one.
                rows = "feature_bound"
        elif spec.geometry == "linf":
            if _is_auto(feature_bound):
                rows = "feature_bound"
        labels = False
        if self._bounds_labels and _is_auto(getattr(self, "y_bound", None)):
            # Without an intercept the model has no offset to absorb a centre:
            # the labels keep centre 0 and only their half-width is released.
            labels = "range" if self.fit_intercept else "symmetric"
        return rows, labels

    def _resolve_bounds(self, spec, n_features, released=None, request=None):
        """The public bounds of the fit: given values, released ones, or placeholders.

        ``released`` maps ``"data_norm"``, ``"feature_bound"`` and
        ``"labels"`` (a ``(center, half_width)`` pair) to released values;
        without them, ``"auto"`` bounds take the placeholder 1.0 (used only
        before the release, for public checks and the pre-data plan, whose
        privacy cost does not depend on the bound values).
        """
        released = released or {}
        data_norm = getattr(self, "data_norm", None)
        feature_bound = getattr(self, "feature_bound", None)
        rows, _ = self._bound_request(spec) if request is None else request
        if rows == "data_norm":
            data_norm, feature_bound = released.get("data_norm", 1.0), None
        elif rows == "feature_bound":
            data_norm, feature_bound = None, released.get("feature_bound", 1.0)
        else:
            data_norm = float(data_norm) if _given(data_norm) else None
            feature_bound = feature_bound if _given(feature_bound) else None
        if spec.geometry == "l2" and data_norm is not None:
            # A data_norm (given or released) bounds the rows in L2.
            used_norm, used_features = float(data_norm), None
        else:
            # Entrywise bounds (which imply an L2 bound for L2 solvers), or
            # nothing: bound_data then refuses (a public error).
            used_norm, used_features = None, feature_bound
        if used_features is not None:
            entry = check_feature_bound(used_features, n_features)
            row_bound = float(np.sqrt(np.sum(entry**2)))
            scale_auto = float(np.max(entry)) if entry.size else 1.0
        elif used_norm is not None:
            entry = None
            row_bound = used_norm
            scale_auto = used_norm
        else:
            entry, row_bound, scale_auto = None, None, 1.0
        intercept_scaling = self.intercept_scaling
        if _is_auto(intercept_scaling):
            intercept_scaling = scale_auto
        y_center, y_scale = 0.0, 1.0
        if self._bounds_labels:
            y_bound = getattr(self, "y_bound", 1.0)
            if _is_auto(y_bound):
                y_center, y_scale = released.get("labels", (0.0, 1.0))
            else:
                y_scale = float(y_bound)
        return FitBounds(
            data_norm=used_norm,
            feature_bound=None
            if entry is None
            else (used_features if np.ndim(used_features) == 0 else entry),
            intercept_scaling=float(intercept_scaling),
            row_bound=row_bound,
            entry_bound=entry,
            y_center=float(y_center),
            y_scale=float(y_scale),
        )

    def _set_bound_attributes(self, bounds):
        """Fitted attributes of the bounds the fit used (given or released: public)."""
        self.data_norm_ = bounds.row_bound
        self.feature_bound_ = None if bounds.entry_bound is None else bounds.entry_bound.copy()
        self.intercept_scaling_ = bounds.intercept_scaling
        if bounds.feature_scale is not None:
            # In the caller's units: the fit clipped every raw entry to
            # feature_bound_ (released), and data_norm_ is their L2 norm.
            self.feature_center_ = bounds.feature_center.copy()
            self.feature_scale_ = bounds.feature_scale.copy()
            self.feature_bound_ = bounds.feature_clip.copy()
            self.data_norm_ = float(np.linalg.norm(self.feature_bound_))
            # The standardised rows' L2 bound (None: bounded entrywise), so
            # that predictions bound a row as the fit did.
            self._standardized_row_bound = bounds.data_norm
        else:
            self.__dict__.pop("feature_center_", None)
            self.__dict__.pop("feature_scale_", None)
            self.__dict__.pop("_standardized_row_bound", None)
        if self._bounds_labels:
            self.y_bound_ = bounds.y_scale
            self.y_center_ = bounds.y_center

    # -- the fit -----------------------------------------------------------------

    def _fit_request(self, X, y, sample_weight=None):
        """``fit``'s public checks, and what it hands to the protocol: a :class:`FitRequest`.

        Each estimator defines it: parameter, schema and label checks (before
        any spend), the provisional problem and the callbacks of the private
        phase.
        """
        raise NotImplementedError  # pragma: no cover - each estimator defines it

    def _group_request(self, request, groups):
        """``request`` with the fit's unit of privacy: rows, or groups (public checks only)."""
        if groups is None:
            warn_unused_group_bound(self.max_group_rows, type(self).__name__)
            return request
        request.groups = check_groups(
            groups, request.X.shape[0], self.max_group_rows, type(self).__name__
        )
        request.max_group_rows = int(self.max_group_rows)
        return request

    def _fit(self, X, y, sample_weight=None, groups=None):
        """``fit``: the request, its plan, the protocol, the fitted attributes."""
        request = self._group_request(self._fit_request(X, y, sample_weight), groups)
        data, result, bounds = self._fit_solver(request, plan_fit(self, request))
        request.store(data, result, bounds)
        if groups is None:
            self.__dict__.pop("max_group_rows_", None)
        else:
            self.max_group_rows_ = request.max_group_rows
        if not math.isinf(self.epsilon):
            for message in released_fit_warnings(self):
                warnings.warn(message, UserWarning, stacklevel=user_stacklevel())
        return self

    def _fit_plan(self, X, y=None, sample_weight=None, groups=None):
        """The :class:`~sklearn_dp._protocol.FitPlan` of ``fit(X, y)``, from public inputs only.

        Runs ``fit``'s public checks on ``X`` and ``y`` and plans the fit; no
        private value is read (the plan depends on the input's schema only,
        so a public stand-in of the data gives the same plan) and the
        estimator is left as it was.
        """
        saved = dict(self.__dict__)
        try:
            return plan_fit(
                self, self._group_request(self._fit_request(X, y, sample_weight), groups)
            )
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)

    def _fit_solver(self, request, plan):
        """Run ``plan`` under the protocol (:func:`~sklearn_dp.linear_model._fit.run_fit`), then store.

        Returns
        -------
        data : BoundedData
            The bounded data the solver saw (for splitting coefficients).
        result : SolverResult
        bounds : FitBounds
            The bounds the fit used.

        Sets ``solver_``, ``n_iter_``, ``dp_event_``, ``privacy_spent_`` and
        the bound attributes (``data_norm_``, ``feature_bound_``,
        ``intercept_scaling_``; ``y_bound_`` and ``y_center_`` for regressors).
        """
        spec, data, result, bounds = run_fit(self, request, plan)
        self.solver_ = spec.name
        self.n_iter_ = int(result.n_iter)
        self._set_bound_attributes(bounds)
        for key in self._solver_info_attributes:
            if key in result.info:
                setattr(self, f"{key}_", result.info[key])
            else:  # not reported by this solver: drop a previous fit's value
                self.__dict__.pop(f"{key}_", None)
        return data, result, bounds
