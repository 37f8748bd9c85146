"""Transformers that read nothing from the data but its schema: they cost no privacy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .._validation import public_validation_errors, saturate, validate_rows
from ._base import _check_ranges

if TYPE_CHECKING:
    from .._typing import ArrayLike, MatrixLike

__all__ = ["PublicRangeScaler", "RowWiseTransformer"]


class PublicRangeScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Map documented public ranges to [-1, 1]; costs no privacy.

    ``transform(X) = clip(2 * (X - lo) / (hi - lo) - 1, -1, 1)`` per feature,
    with ``ranges`` known *without looking at the data* (a data sheet, a
    sensor's specification, a questionnaire's scale).  After it every row
    has L2 norm at most ``sqrt(n_features)``: a public ``data_norm``.

    Parameters
    ----------
    ranges : array-like of shape (n_features, 2) or (2,)
        ``(min, max)`` of each feature, or one pair for all features.
    clip : bool, default=True
        Clip values outside the range to [-1, 1] (keeps ``sqrt(n_features)``
        a true bound on the row norms).  Unclipped, a value beyond the float
        range saturates at the largest float of its sign: finite rows stay
        finite.

    Attributes
    ----------
    scale_, offset_ : ndarray of shape (n_features,)
        ``transform(X) = X * scale_ + offset_`` (then clipped).
    n_features_in_ : int
    privacy_spent_ : (0.0, 0.0)
    dp_event_ : NoOpDpEvent

    Privacy
    -------
    Nothing is released: ``fit`` reads the input's shape only (its public
    schema).  Ranges computed from the data (``X.min(axis=0)``) are not
    public; use :class:`DPMinMaxScaler` for those.
    """

    _parameter_constraints = {
        "ranges": ["array-like"],
        "clip": ["boolean"],
    }

    def __init__(self, ranges: ArrayLike = (-1.0, 1.0), *, clip: bool = True) -> None:
        self.ranges = ranges
        self.clip = clip

    def fit(self, X: MatrixLike, y: None = None) -> PublicRangeScaler:
        """Check the ranges against the input's number of features (reads nothing else).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : PublicRangeScaler
            The fitted scaler.
        """
        self._validate_params()
        X = validate_rows(self, X, accept_sparse="csr", dtype=[np.float64, np.float32])
        lo, hi = _check_ranges(self.ranges, X.shape[1])
        self.scale_ = 2.0 / (hi - lo)
        self.offset_ = -1.0 - lo * self.scale_
        self.dp_event_ = dpe.NoOpDpEvent()
        self.privacy_spent_ = (0.0, 0.0)
        return self

    def transform(self, X: MatrixLike) -> MatrixLike:
        """Map each feature's public range to [-1, 1] (costs nothing).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).

        Returns
        -------
        X_new : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The scaled data.
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, accept_sparse="csr", dtype=[np.float64, np.float32])
        if sp.issparse(X):
            if np.any(self.offset_ != 0):
                raise ValueError(
                    "PublicRangeScaler: sparse input keeps its zeros only for ranges symmetric "
                    "around 0 (min = -max); densify X or use symmetric ranges."
                )
            X = saturate(sp.csr_matrix(X @ sp.diags(self.scale_)))
            if self.clip:
                np.clip(X.data, -1.0, 1.0, out=X.data)
            return X
        with np.errstate(over="ignore"):
            X = saturate(X * self.scale_ + self.offset_)
        return np.clip(X, -1.0, 1.0) if self.clip else X

    def inverse_transform(self, X: MatrixLike) -> MatrixLike:
        """Map [-1, 1] back to the public ranges.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).

        Returns
        -------
        X_original : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The data on its original scale.
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, accept_sparse="csr", dtype=[np.float64, np.float32])
        if sp.issparse(X):
            return sp.csr_matrix(X @ sp.diags(1.0 / self.scale_))
        return (X - self.offset_) / self.scale_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.requires_fit = True
        return tags


class RowWiseTransformer(TransformerMixin, BaseEstimator):
    """Apply a function that the user asserts row-wise and blind to the data; costs no privacy.

    ``transform(X) = func(X, **kw_args)``.  scikit-learn's
    ``FunctionTransformer`` runs any function, and :func:`sklearn_dp.
    privacy_spent` cannot check that a function is row-wise, so it refuses
    one.  Wrapping the function here is the user's assertion that it is:
    each output row depends on its own input row and on public constants
    only, the function raises, warns and prints nothing that depends on
    the values, and it gives no NaN for a finite row (``np.log1p``, a public
    affine map, a fixed polynomial expansion); an output beyond the float
    range saturates at the largest float of its sign.  ``fit`` learns nothing from the data and never calls the
    function on it (no inverse check).

    Parameters
    ----------
    func : callable, default=None
        The row-wise function; None is the identity.
    kw_args : dict, default=None
        Public keyword arguments of ``func``.
    feature_names_out : callable, "one-to-one" or None, default=None
        As for ``FunctionTransformer``: how ``get_feature_names_out`` names
        the output (from the input's names only).

    Attributes
    ----------
    transformer_ : FunctionTransformer
        The function, wrapped with ``check_inverse=False`` (the input is
        validated first: a finite numeric array, dense or sparse, of any
        number of rows).
    n_features_in_ : int
    privacy_spent_ : (0.0, 0.0)
    dp_event_ : NoOpDpEvent

    Privacy
    -------
    Nothing is released: ``fit`` reads the input's schema only.  The
    guarantee of a pipeline holding this step rests on the user's assertion
    about ``func``: a function that reads other rows (``X - X.mean(axis=0)``)
    breaks it.
    """

    def __init__(self, func=None, *, kw_args=None, feature_names_out=None) -> None:
        self.func = func
        self.kw_args = kw_args
        self.feature_names_out = feature_names_out

    def fit(self, X, y: None = None) -> RowWiseTransformer:
        """Record the input's schema; the function is not called.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (only its schema is read; non-finite values are refused).
        y : None
            Ignored.

        Returns
        -------
        self : RowWiseTransformer
            The fitted transformer.
        """
        transformer = FunctionTransformer(
            func=self.func,
            kw_args=self.kw_args,
            feature_names_out=self.feature_names_out,
            validate=False,
            accept_sparse=True,
            check_inverse=False,
        )
        # Validated here, with messages that quote no private cell, and on
        # zero rows too (the empty data set is a data set).
        X = validate_rows(self, X, accept_sparse=True)
        self.transformer_ = transformer.fit(X)
        self.dp_event_ = dpe.NoOpDpEvent()
        self.privacy_spent_ = (0.0, 0.0)
        return self

    def transform(self, X):
        """Apply the function (costs nothing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The data.

        Returns
        -------
        X_new : array-like
            ``func(X, **kw_args)``, an infinity in a float array replaced by
            the largest float of its sign (numpy's overflow warning
            silenced), so that the next DP step never refuses a finite
            private row.  A NaN is left as it is: a ``func`` that turns a
            finite row into NaN breaks the assertion above.
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, accept_sparse=True)
        matrix = sp.issparse(X) and not isinstance(X, sp.sparray)
        if matrix:
            # A scipy sparse *matrix* multiplies as a matrix (``X * X``,
            # ``np.square(X)`` are ``X @ X``: every row mixed with the others);
            # the function sees a sparse array, whose operations are elementwise.
            X = sp.csr_array(X)
        # An overflow saturates (below) instead of warning about a private row.
        with public_validation_errors(type(self).__name__), np.errstate(over="ignore"):
            out = saturate(self.transformer_.transform(X))
        return sp.csr_matrix(out) if matrix and sp.issparse(out) else out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    @available_if(lambda self: self.feature_names_out is not None)
    def get_feature_names_out(self, input_features=None):
        """Names of the output features (from the input's names only).

        Parameters
        ----------
        input_features : array-like of str, optional
            The input's feature names.

        Returns
        -------
        feature_names_out : ndarray of str
            The output's feature names.
        """
        check_is_fitted(self)
        return self.transformer_.get_feature_names_out(input_features)
