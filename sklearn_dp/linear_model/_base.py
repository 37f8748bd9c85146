"""What every sklearn_dp estimator shares: privacy parameters, solver dispatch,
budget handling and the fitted privacy attributes.

An estimator's ``fit`` validates its parameters and the input's schema
(shape, type, finiteness, labels in the public ``classes``) and describes the
fit as a :class:`FitRequest` (:meth:`BaseDPEstimator._fit_request`); then it
follows the privacy protocol of :mod:`sklearn_dp._protocol`:

1. *Plan* (:meth:`BaseDPEstimator._plan_request`).  Resolve ``solver``
   against the registry, check its options, split epsilon and delta and plan
   the solver, from public inputs only (:class:`PublicSetting`: never the
   row count): a :class:`~sklearn_dp._protocol.FitPlan`, computed once.
   :meth:`BaseDPEstimator._fit_plan` returns it without fitting (the
   searches use it).
2. *Reservation.*  Reserve the plan's spend on the budget, atomically,
   before the first read of a private value.  From then on the spend
   stands: a fit that raises keeps its ledger entry, marked failed.
3. *Private phase* (:meth:`BaseDPEstimator._private_fit`).  Release the
   label set (when ``classes`` is not given), the row count and the
   ``"auto"`` bounds, re-plan the solver's share where released values
   change it, bound the data, run the solver.  Everything observable from
   here is a function of public inputs and noisy releases only (see
   :class:`~sklearn_dp._protocol.PrivatePhase`).
4. *Completion.*  The reservation is completed with the fit's final event.

If anything fails, the estimator's attributes are restored to what they were
before ``fit``; the budget keeps what was reserved.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator

from .. import _bounds, _dask, _noise, _random
from .._bounds import planned_events
from .._data import bound_data, check_feature_bound
from .._design import fine_block_ranges
from .._limits import MAX_EPSILON, MAX_SCALE, MIN_EPSILON, MIN_SCALE
from .._protocol import (
    COUNT_EPSILON_FRACTION,
    FitPlan,
    PrivatePhase,
    SolverPlanner,
    debug_mode,
    open_phase,
    record_spend,
    release_count,
)
from .._sklearn_compat import (
    Interval,
    Options,
    finite_checks,
    validate_data,
    validate_parameter_constraints,
)
from .._warnings import user_stacklevel
from ..accounting import ApproximateDpEvent
from ..budget import PrivacyBudget
from ..exceptions import public_error
from ..solvers import get_solver
from ..solvers._registry import check_solver_supports, choose_solver

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

#: Shares of epsilon and delta a classifier spends on releasing its label set
#: when ``classes`` is not given (see :func:`release_labels`).
LABEL_EPSILON_FRACTION = 0.1
LABEL_DELTA_FRACTION = 0.5


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
    """

    n_features: int
    n_outputs: int
    multiclass: bool
    sparse: bool
    fit_intercept: bool
    epsilon: float
    delta: float
    discover_labels: bool = False


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
    """

    data_norm: float | None
    feature_bound: object
    intercept_scaling: float
    row_bound: float | None
    entry_bound: object = None
    y_center: float = 0.0
    y_scale: float = 1.0


def check_weights_supported(spec, estimator):
    """Refuse (publicly, before any spend) a weighted fit with a solver that ignores weights."""
    from ..solvers import SOLVERS

    if spec.sample_weight:
        return
    supported = ", ".join(name for name, s in SOLVERS.items() if s.sample_weight)
    raise ValueError(
        f"{estimator}: solver={spec.name!r} does not support sample_weight or class_weight. "
        f"Solvers that fit weighted rows: {supported}; pass one as solver=..."
    )


def release_labels(y, epsilon, delta, rng):
    """Release the set of labels present in ``y`` with a thresholded noisy histogram.

    Each distinct label's count gets ``Laplace(1 / epsilon)`` noise and the
    label is released if the noisy count exceeds ``1 + log(1 / (2 delta)) /
    epsilon``: ``(epsilon, delta)``-DP under add/remove-one neighbouring (see
    :func:`sklearn_dp._noise.thresholded_histogram`).  A label held by a few
    rows is almost never released; one held by many rows (several times the
    threshold) always is.

    Returns
    -------
    classes : ndarray
        The released labels, sorted.
    event : ApproximateDpEvent
    threshold : float
    """
    scale = 1.0 / epsilon
    threshold = 1.0 + scale * math.log(1.0 / (2.0 * delta))
    if _dask.is_dask_array(y):
        # The histogram by chunks, merged on the workers (the same keys and counts).
        keys, counts = _dask.label_histogram(y)
    else:
        keys, counts = np.unique(y, return_counts=True)
    classes = _noise.thresholded_histogram(
        keys, counts, scale=scale, threshold=threshold, rng=rng, label="label set"
    )
    event = ApproximateDpEvent(epsilon, delta, "thresholded Laplace histogram of the labels")
    return _canonical_labels(classes), event, threshold


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


def public_scale(*, zero=False):
    """Parameter constraint of a public scale: a float in [MIN_SCALE, MAX_SCALE] (or 0)."""
    constraint = [Interval(Real, MIN_SCALE, MAX_SCALE, closed="both")]
    return constraint + [Options(Real, {0.0})] if zero else constraint


# Messages of numpy / scikit-learn conversions that would show private values
# (numpy's "could not convert string to float: '<value>'", scikit-learn's
# "array=[...]" dumps of 1-d and complex input) or the private row count
# (inconsistent lengths): replaced by messages without data.
_NON_NUMERIC_MARKERS = (
    "could not convert",
    "invalid literal",
    "setting an array element with a sequence",
    "inhomogeneous",
    "Complex data not supported",
    "dtype='numeric' is not compatible",
)


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
    constraint : {None, "l2", "l1"}
        Ball the coefficients are constrained to.
    radius : float or None
        Its radius, in the solver's units.
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


def _stores_out_of_order(X):
    """Whether a row of CSR ``X`` stores a column twice or out of order, read off its indices.

    scipy caches ``has_canonical_format``, and a caller that rewrites
    ``indices`` in place (or sets the flag) leaves it stale: scikit-learn's
    validation returns that same object.  Checked block by block of rows
    (temporaries the size of a block).
    """
    indptr, indices = X.indptr, X.indices
    for start, stop in fine_block_ranges(X.shape[0], X.shape[1], X.nnz):
        lo, hi = int(indptr[start]), int(indptr[stop])
        if hi - lo < 2:
            continue
        piece = indices[lo:hi]
        increasing = piece[1:] > piece[:-1]
        # Comparisons across the start of a row do not count.
        firsts = indptr[start + 1 : stop] - lo
        firsts = firsts[(firsts > 0) & (firsts < hi - lo)]
        increasing[firsts - 1] = True
        if not np.all(increasing):
            return True
    return False


def _canonical(X):
    """A CSR matrix with its duplicate entries summed (a copy; the caller's matrix is untouched).

    Bounds are applied to the stored entries of a sparse matrix, so two
    stored entries of one cell would each be clipped and then add up to more
    than the bound: duplicates are summed first.  Dense input is returned as it is.
    """
    if sp.issparse(X) and (not X.has_canonical_format or _stores_out_of_order(X)):
        X = X.copy()
        # scipy trusts its cached flags; they may be stale (checked above).
        X.has_sorted_indices = False
        X.has_canonical_format = False
        X.sum_duplicates()
        # scikit-learn checked the stored entries; finite duplicates can sum
        # beyond the dtype's range.  An inf cell would make every release of
        # the fit NaN: refused here, with the other schema checks (before any
        # spend), as scikit-learn refuses an inf entry.
        if not np.all(np.isfinite(X.data)):
            raise ValueError(
                "Input X contains infinity or a value too large for its dtype once the "
                "duplicate entries of a sparse matrix are summed; pass finite values."
            )
    return X


def validate_private(estimator, X, y="no_validation", x_dtype=np.float64, **kwargs):
    """``validate_data`` for private data, with messages that show no private value.

    Used by the estimators and the DP transformers: complex values,
    non-numeric entries, ragged rows, 1-d input and inconsistent lengths are
    refused with messages that say what is wrong, not where or with which
    value; CSR input is canonicalised (duplicate entries summed).
    """
    name = type(estimator).__name__
    for part, value in (("X", X), ("y", y)):
        dtype = getattr(value, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", None) == "c":
            raise ValueError(
                f"{name}: Complex data not supported: {part} has complex values; pass "
                f"real numbers (for example {part}.real, if the imaginary part is known "
                "to be 0)."
            )
    try:
        validated = validate_data(estimator, X, y, accept_sparse="csr", dtype=x_dtype, **kwargs)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        if "Expected 2D array" in message:
            got = "a scalar" if "scalar" in message else "a 1-d array"
            raise ValueError(
                f"{name}: X must be 2-d, of shape (n_samples, n_features); got {got}. "
                "Reshape your data with X.reshape(-1, 1) if it has a single feature "
                "or X.reshape(1, -1) if it is a single sample."
            ) from None
        if "inconsistent numbers of samples" in message:
            raise ValueError(
                f"{name}: X and y have inconsistent numbers of samples (rows); pass one "
                "label per row of X."
            ) from None
        if any(marker in message for marker in _NON_NUMERIC_MARKERS):
            raise ValueError(
                f"{name}: X and y must hold real numbers in a rectangular array: found a "
                "non-numeric entry (such as a string or None), a ragged row or a complex "
                "value. Encode categorical columns with a public encoding and convert the "
                "data to a float array before fitting."
            ) from None
        raise
    if isinstance(validated, tuple):
        labels = validated[1]
        # scikit-learn checks finiteness before it converts an object array to
        # float, so a None label becomes NaN unchecked: refuse it here, with
        # the other schema checks (before any spend).
        if (
            getattr(labels, "dtype", None) is not None
            and labels.dtype.kind == "f"
            and not (np.all(np.isfinite(labels)))
        ):
            raise ValueError(
                f"{name}: y contains NaN, infinity or a missing value (such as None in an "
                "object array); pass finite labels."
            )
        return (_canonical(validated[0]),) + tuple(validated[1:])
    return _canonical(validated)


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


def restore_on_failure(fit):
    """Make ``fit`` all-or-nothing: on any exception the estimator is left as it was."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    return wrapper


class BaseDPEstimator(BaseEstimator):
    """Privacy parameters, solver dispatch and budget handling.

    Subclasses define ``_parameter_constraints`` (starting from
    ``_privacy_parameter_constraints``), ``_auto_solver`` and ``fit``.
    """

    _privacy_parameter_constraints = {
        # inf is allowed: the same solver without noise (a non-private reference).
        "epsilon": [
            Interval(Real, MIN_EPSILON, MAX_EPSILON, closed="both"),
            Options(Real, {math.inf}),
        ],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "solver": [str],
        "budget": [PrivacyBudget, None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [*public_scale(), None],
        "clip_norm": [*public_scale(), None],
        "solver_options": [dict, None],
        "random_state": ["random_state", np.random.Generator, _random.SecretStream],
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

        Public (the previous model is a release; reusing it is
        post-processing): its shape is checked against the new fit's public
        shape here, before any spend.  Returns 2-d ``coef`` (n_outputs,
        n_features) and 1-d ``intercept`` copies.
        """
        if not getattr(self, "warm_start", False) or not hasattr(self, "coef_"):
            return None
        name = type(self).__name__
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
        """``validate_data(reset=False)`` for rows to predict on (private too, often)."""
        return self._validate_private(X, reset=False)

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

    def _warn_weak_delta(self, n_public, phase):
        # Compared with the fit's DP row count, not the true one: the warning
        # (and its text) is an output too, and the row count is private.
        if 0 < self.delta and self.delta * n_public >= 1:
            phase.warn(
                f"delta={self.delta:g} is not much smaller than 1/n_samples (about "
                f"{1 / n_public:.3g} from the fit's DP row count): a mechanism that publishes "
                "one random row is (0, 1/n)-DP. Choose delta well below 1/n_samples."
            )

    #: ``solver="auto"``: an ordered tuple of :class:`~sklearn_dp.solvers.AutoChoice`;
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
        return choose_solver(
            self._auto_preferences,
            estimator=type(self).__name__,
            context=(self, problem, public),
            problem_for=lambda spec: self._support_problem(spec, problem, public),
        )

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
    #: Name of the constant of ``sklearn_dp._bounds`` that sets the window of
    #: the rows' bound (see ``docs/guide/choosing_parameters.md``).
    _row_window = "REGRESSOR_ROW_WINDOW"

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

    def _bounds_epsilons(self, request, epsilon_rest, private):
        """Epsilon of each bound release (public): a documented share each."""
        rows, labels = request
        share = _bounds.BOUNDS_EPSILON_FRACTION * epsilon_rest if private else math.inf
        return (share if rows else 0.0), (share if labels else 0.0)

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

    def _release_bounds(self, X, y, request, epsilons, n_public, rng):
        """Release the bounds of ``request`` (inside the private phase); ``(released, events)``."""
        return _bounds.release_bounds(
            X,
            y,
            request,
            epsilons,
            n_public=n_public,
            rng=rng,
            window=getattr(_bounds, self._row_window),
            releases=_dask.BOUND_RELEASES if _dask.is_dask_array(X) else _bounds.IN_MEMORY,
        )

    def _set_bound_attributes(self, bounds):
        """Fitted attributes of the bounds the fit used (given or released: public)."""
        self.data_norm_ = bounds.row_bound
        self.feature_bound_ = None if bounds.entry_bound is None else bounds.entry_bound.copy()
        self.intercept_scaling_ = bounds.intercept_scaling
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

    def _fit(self, X, y, sample_weight=None):
        """``fit``: the request, its plan, the protocol, the fitted attributes."""
        request = self._fit_request(X, y, sample_weight)
        data, result, bounds = self._fit_solver(request, self._plan_request(request))
        request.store(data, result, bounds)
        return self

    def _fit_plan(self, X, y=None, sample_weight=None):
        """The :class:`~sklearn_dp._protocol.FitPlan` of ``fit(X, y)``, from public inputs only.

        Runs ``fit``'s public checks on ``X`` and ``y`` and plans the fit; no
        private value is read (the plan depends on the input's schema only,
        so a public stand-in of the data gives the same plan) and the
        estimator is left as it was.
        """
        saved = dict(self.__dict__)
        try:
            return self._plan_request(self._fit_request(X, y, sample_weight))
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)

    def _plan_request(self, request):
        """The fit's :class:`~sklearn_dp._protocol.FitPlan`: public checks, shares, solver plan.

        Reads the input's schema (number of features, types, sparsity)
        only: never its rows, nor their number.  A refused configuration
        raises here, before the reservation, and spends nothing.
        """
        X, y, problem = request.X, request.y, request.problem
        name = type(self).__name__
        public = self._public_setting(X, problem, request.discover_labels)
        spec = self._resolve_solver(problem, public)
        dask_input = _dask.is_dask_array(X)
        if dask_input:
            # Before the reservation: a solver without a Dask path spends nothing.
            _dask.check_solver(spec.name)
        # Zero rows of the input's schema, for the public checks and plans
        # (copies: the plan keeps no view of the private arrays).
        X0, y0 = (
            (np.zeros((0, X.shape[1]), dtype=X.dtype), np.zeros(0, dtype=y.dtype))
            if dask_input
            else (X[:0].copy(), y[:0].copy())
        )
        bound_request = self._bound_request(spec)
        # The bounds the solver's geometry needs, checked on zero rows (public).
        planned = self._resolve_bounds(spec, X.shape[1], request=bound_request)
        kwargs = self._solver_kwargs(spec, problem, planned)
        self._bound_zero_rows(spec, X0, y0, planned)
        if spec.check is not None:
            spec.check(**self._check_arguments(spec, problem, kwargs, public))
        weighted = request.weighted
        if weighted is None:
            weighted = request.sample_weight is not None
        if weighted:
            if dask_input:
                _dask.refuse_weights(name)
            check_weights_supported(spec, name)
        initial_point = request.initial_point
        if initial_point is not None and not spec.warm_start:
            from ..solvers import SOLVERS

            takes = ", ".join(name for name, s in SOLVERS.items() if s.warm_start)
            warnings.warn(
                f"warm_start=True is ignored by solver={spec.name!r}, which takes no initial "
                f"point (solvers that do: {takes}); this fit starts cold.",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
            initial_point = None
        private = not math.isinf(self.epsilon)
        _random.check_random_state(self.random_state, private=private, owner=name)
        if request.discover_labels and private and self.delta == 0:
            raise ValueError(
                f"{name}: with delta=0 the label set cannot be released "
                "privately (it needs delta > 0); pass classes=[...], the public label set."
            )
        discover = request.discover_labels
        label_epsilon = LABEL_EPSILON_FRACTION * self.epsilon if discover else 0.0
        label_delta = LABEL_DELTA_FRACTION * self.delta if discover else 0.0
        # The count, the bounds and the solver share what the labels leave.
        epsilon_rest = self.epsilon - label_epsilon
        delta_rest = self.delta - label_delta
        # Under add/remove neighbouring the row count is private: a share of
        # epsilon buys a noisy count that stands in for n (see PrivateCount).
        epsilon_count = COUNT_EPSILON_FRACTION * epsilon_rest if private else math.inf
        # "auto" bounds: a share each, released by the exponential mechanism
        # (pure epsilon-DP; known before the data, so part of the reservation).
        bound_epsilons = self._bounds_epsilons(bound_request, epsilon_rest, private)
        planned_bound_events = planned_events(bound_request, bound_epsilons) if private else []
        # The solver gets what the count and the bounds leave: at least the
        # basic-composition remainder, more where numerical composition of
        # the mechanisms certifies it.
        planner = SolverPlanner(
            spec.plan,
            functools.partial(self._plan_arguments, spec, X0, y0),
            epsilon=epsilon_rest,
            delta=delta_rest,
            floor=epsilon_rest - epsilon_count - sum(bound_epsilons) if private else math.inf,
        )
        share, solver_plan, event = math.inf, None, None
        if private:
            prefix = dpe.ComposedDpEvent(
                [dpe.LaplaceDpEvent(1.0 / epsilon_count)] + planned_bound_events
            )
            share, solver_plan = planner.before_data(problem, planned, kwargs, prefix)
            if solver_plan is not None:
                event = _fit_event(
                    ApproximateDpEvent(label_epsilon, label_delta, "label set")
                    if discover
                    else None,
                    dpe.LaplaceDpEvent(1.0 / epsilon_count),
                    planned_bound_events,
                    solver_plan.event,
                )
        return FitPlan(
            owner=name,
            solver=spec.name,
            options=kwargs,
            epsilon=self.epsilon,
            delta=self.delta,
            private=private,
            shares={
                "labels": (label_epsilon, label_delta),
                "count": epsilon_count,
                "bounds": bound_epsilons,
                "solver": (share, delta_rest),
            },
            solver_plan=solver_plan,
            event=event,
            context=dict(
                spec=spec,
                public=public,
                bound_request=bound_request,
                weighted=bool(weighted),
                initial_point=initial_point,
                dask_input=dask_input,
                schema=(X0, y0),
                planner=planner,
            ),
        )

    def _bound_zero_rows(self, spec, X0, y0, bounds):
        """``bound_data`` of zero rows: the public checks of the bounds, and their public constants."""
        return bound_data(
            X0,
            y0,
            fit_intercept=self.fit_intercept,
            intercept_scaling=bounds.intercept_scaling,
            geometry=spec.geometry,
            data_norm=bounds.data_norm,
            feature_bound=bounds.feature_bound,
        )

    def _plan_arguments(self, spec, X0, y0, problem, n_public, bounds, kwargs):
        """``(n_params, plan_kwargs)``: what ``spec.plan`` receives, from public inputs."""
        plan_parameters = inspect.signature(spec.plan).parameters
        n_params = (X0.shape[1] + int(self.fit_intercept)) * problem.n_outputs
        plan_kwargs = {k: v for k, v in kwargs.items() if k in plan_parameters}
        if "n_outputs" in plan_parameters:
            plan_kwargs["n_outputs"] = problem.n_outputs
        if {"loss", "row_norm_bound"} & set(plan_parameters):
            # Plans whose step sizes and step counts depend on the loss's
            # public constants get them from a bounding of zero rows, which
            # carries the public bounds and nothing else.
            zero_rows = self._bound_zero_rows(spec, X0, y0, bounds)
            if "loss" in plan_parameters:
                plan_kwargs["loss"] = problem.make_loss(zero_rows)
            if "row_norm_bound" in plan_parameters:
                plan_kwargs["row_norm_bound"] = zero_rows.row_norm_bound
        if "alpha" in plan_parameters:
            # A strength that scales with n (1 / (C n)) is unknown until the count.
            plan_kwargs["alpha"] = (
                problem.alpha
                if not callable(problem.alpha)
                else None
                if n_public is None
                else problem.alpha(n_public)
            )
        return n_params, plan_kwargs

    def _fit_solver(self, request, plan):
        """Run ``plan`` under the protocol: reserve, private phase, fitted attributes.

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
        with open_phase(plan, self.budget, self.random_state) as phase:
            spec, data, result, bounds = self._private_fit(request, plan, phase)
        record_spend(self, plan, phase.event)
        self.solver_ = spec.name
        self.n_iter_ = int(result.n_iter)
        self._set_bound_attributes(bounds)
        for key in self._solver_info_attributes:
            if key in result.info:
                setattr(self, f"{key}_", result.info[key])
            else:  # not reported by this solver: drop a previous fit's value
                self.__dict__.pop(f"{key}_", None)
        return data, result, bounds

    def _private_fit(self, request, plan, phase):
        """The private phase: labels, count, bounds, the solver's share, the solver."""
        context = plan.context
        spec, bound_request = context["spec"], context["bound_request"]
        X, y, problem, kwargs = request.X, request.y, request.problem, plan.options
        public = context["public"]
        rng = phase.rng
        phase.label_epsilon, phase.label_delta = plan.shares["labels"]
        phase.label_event = None
        phase.sample_weight = request.sample_weight
        if request.prepare is not None:
            X, y, problem = request.prepare(X, y, phase)
            if request.discover_labels:
                public = self._public_setting(X, problem, discover_labels=True)
                try:
                    spec = self._resolve_solver(problem, public)
                except ValueError as exc:
                    # A function of the released label set.
                    raise public_error(ValueError(str(exc))) from None
                if context["dask_input"]:
                    _dask.check_solver(spec.name, inside=True)
        # The number of rows (of a Dask array: a sum over its chunks).
        n_rows = _dask.row_count(X) if context["dask_input"] else X.shape[0]
        count = release_count(n_rows, plan.shares["count"], rng)
        self._warn_weak_delta(count.estimate, phase)
        released, bound_events = self._release_bounds(
            X, y, bound_request, plan.shares["bounds"], count.estimate, rng
        )
        bounds = self._resolve_bounds(spec, X.shape[1], released, bound_request)
        if request.finish is not None:
            y, problem = request.finish(y, bounds)
        if released or request.finish is not None or request.discover_labels:
            # Options that depend on the bounds (e.g. DPLasso's intercept
            # bound), from released values; checked publicly before.
            kwargs = self._solver_kwargs(spec, problem, bounds, quiet=True)
        if request.discover_labels and spec.check is not None:
            # The solver (and its problem) may have changed with the
            # released label set: its public check again, on released
            # values, so a refusal says why instead of PrivateFitError.
            try:
                spec.check(**self._check_arguments(spec, problem, kwargs, public))
            except ValueError as exc:
                raise public_error(ValueError(str(exc))) from None
        epsilon_solver, solver_plan = math.inf, None
        if plan.private:
            planner = context["planner"]
            if spec is not context["spec"]:
                # Another solver for the released label set: its own plans.
                planner = planner.for_solver(
                    spec.plan, functools.partial(self._plan_arguments, spec, *context["schema"])
                )
            prefix = dpe.ComposedDpEvent(
                [dpe.LaplaceDpEvent(1.0 / plan.shares["count"])] + bound_events
            )
            epsilon_solver, solver_plan = planner.after_release(
                problem, count.estimate, bounds, kwargs, prefix
            )
        weighted = context["weighted"]
        max_weight = float(getattr(self, "max_weight", 1.0))
        data = (_dask.bound_dask_data if context["dask_input"] else bound_data)(
            X,
            y,
            fit_intercept=self.fit_intercept,
            intercept_scaling=bounds.intercept_scaling,
            geometry=spec.geometry,
            data_norm=bounds.data_norm,
            feature_bound=bounds.feature_bound,
            n_public=count.estimate,
            normalizer=count.normalizer,
            sample_weight=phase.sample_weight if weighted else None,
            max_weight=max_weight,
        )
        if weighted and data.sample_weight is None:
            # class weights only: every row weighs 1 before them.
            data.sample_weight = np.ones(data.n_samples)
            data.weight_bound = max_weight
        alpha = problem.alpha(count.estimate) if callable(problem.alpha) else problem.alpha
        initial_point = context["initial_point"]
        if initial_point is not None and spec.warm_start:
            start = initial_point(bounds, problem)
            if start is not None:
                kwargs = dict(kwargs, coef_init=start)
        if solver_plan is not None and spec.takes_plan:
            # The plan the share was certified for: the solver runs it, never plans again.
            kwargs = dict(kwargs, plan=solver_plan)
        result = spec.function(
            data,
            problem.make_loss(data),
            n_outputs=problem.n_outputs,
            alpha=alpha,
            epsilon=epsilon_solver,
            delta=plan.shares["solver"][1],
            random_state=rng,
            verbose=self.verbose,
            **kwargs,
        )
        if plan.private:
            phase.event = _fit_event(phase.label_event, count.event, bound_events, result.dp_event)
        # Solvers do not warn; they hand warnings computed from public values
        # and releases to the estimator, which defers them through the phase.
        for message in result.info.pop("warnings", ()):
            phase.warn(message)
        return spec, data, result, bounds


def _fit_event(label_event, count_event, bound_events, solver_event):
    """The whole fit's event: the label set (if released), the count, the bounds, the solver."""
    parts = [count_event] + list(bound_events) + [solver_event]
    return dpe.ComposedDpEvent(([label_event] if label_event is not None else []) + parts)
