"""A Pipeline that records the parameters its public scikit-learn steps were fitted with.

:func:`sklearn_dp.privacy_spent` vouches for an allow-listed scikit-learn
step (an encoder with public ``categories``, a ``SimpleImputer`` with a
constant fill value, ``FunctionTransformer()``, a ``ColumnTransformer``) by
its parameters.  Parameters can be set after a fit, for example copied from
what a fit on the private rows learned (``categories_``, ``statistics_``):
from the step alone, a value chosen before the fit and one copied after it
look the same.  :class:`Pipeline` records each such step's parameters when
it fits the step, and :func:`~sklearn_dp.privacy_spent` vouches for the step
only while its parameters are the recorded ones.
"""

from __future__ import annotations

from sklearn import pipeline as _sklearn_pipeline
from sklearn.utils.metaestimators import available_if

from ._composition import record_fit

__all__ = ["Pipeline", "make_pipeline"]


def _parent_has(method):
    """Whether scikit-learn's Pipeline offers ``method`` for this instance (its own ``available_if``)."""

    def check(self):
        getattr(super(Pipeline, self), method)
        return True

    return check


class Pipeline(_sklearn_pipeline.Pipeline):
    """The ``Pipeline`` of scikit-learn, recording the parameters its public steps were fitted with.

    Everything is scikit-learn's ``Pipeline`` (parameters, methods, metadata
    routing, slicing), except that ``fit``, ``fit_transform`` and
    ``fit_predict`` then record, on each allow-listed scikit-learn step they
    fitted (nested in a ``ColumnTransformer``, a ``FeatureUnion`` or another
    Pipeline included), the parameters it was fitted with.  A step held by a
    ``FrozenEstimator`` is not fitted by the Pipeline and keeps the record of
    its own earlier fit.

    Parameters
    ----------
    steps : list of tuples
        ``(name, estimator)`` pairs, as for scikit-learn's ``Pipeline``.
    transform_input : list of str, default=None
        As for scikit-learn's ``Pipeline``.
    memory : str or object with the joblib.Memory interface, default=None
        As for scikit-learn's ``Pipeline``.
    verbose : bool, default=False
        As for scikit-learn's ``Pipeline``.

    Attributes
    ----------
    named_steps : Bunch
        As for scikit-learn's ``Pipeline``.

    Privacy
    -------
    The Pipeline releases nothing of its own; its guarantee is the
    composition of its private steps' (:func:`sklearn_dp.privacy_spent`).
    :func:`~sklearn_dp.privacy_spent` vouches for an allow-listed
    scikit-learn step whose parameters decide whether its fit reads the
    private rows (``OneHotEncoder``, ``OrdinalEncoder``, ``SimpleImputer``,
    ``FunctionTransformer``, ``ColumnTransformer``) only if this Pipeline (or
    a private search) recorded the parameters it was fitted with, and only
    while they are unchanged.  The record cannot tell where the parameters
    came from before the fit: categories or a fill value copied from an
    earlier fit on the private rows are still your public claim.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import OneHotEncoder
    >>> from sklearn_dp import DPLogisticRegression, privacy_spent
    >>> from sklearn_dp.pipeline import make_pipeline
    >>> X = np.array([[0], [1], [2], [1]] * 50)
    >>> y = np.array([0, 1, 1, 0] * 50)
    >>> model = make_pipeline(
    ...     OneHotEncoder(categories=[[0, 1, 2]], handle_unknown="ignore"),
    ...     DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0),
    ... ).fit(X, y)
    >>> privacy_spent(model)
    (1.0, 1e-05)
    """

    def fit(self, X, y=None, **params):
        """Fit every step, as scikit-learn's ``Pipeline``, then record the public steps' parameters.

        Parameters
        ----------
        X : iterable
            Training data, as for scikit-learn's ``Pipeline.fit``.
        y : iterable, default=None
            Training targets.
        **params : dict of str -> object
            As for scikit-learn's ``Pipeline.fit``.

        Returns
        -------
        self : Pipeline
            The fitted pipeline.
        """
        super().fit(X, y, **params)
        record_fit(self)
        return self

    @available_if(_parent_has("fit_transform"))
    def fit_transform(self, X, y=None, **params):
        """Fit every step and transform, as scikit-learn's ``Pipeline``; record the public steps' parameters.

        Parameters
        ----------
        X : iterable
            Training data, as for scikit-learn's ``Pipeline.fit_transform``.
        y : iterable, default=None
            Training targets.
        **params : dict of str -> object
            As for scikit-learn's ``Pipeline.fit_transform``.

        Returns
        -------
        Xt : ndarray of shape (n_samples, n_transformed_features)
            The transformed samples.
        """
        transformed = super().fit_transform(X, y, **params)
        record_fit(self)
        return transformed

    @available_if(_parent_has("fit_predict"))
    def fit_predict(self, X, y=None, **params):
        """Fit every step and predict, as scikit-learn's ``Pipeline``; record the public steps' parameters.

        Parameters
        ----------
        X : iterable
            Training data, as for scikit-learn's ``Pipeline.fit_predict``.
        y : iterable, default=None
            Training targets.
        **params : dict of str -> object
            As for scikit-learn's ``Pipeline.fit_predict``.

        Returns
        -------
        y_pred : ndarray
            The final estimator's ``fit_predict`` on the transformed data.
        """
        predicted = super().fit_predict(X, y, **params)
        record_fit(self)
        return predicted


def make_pipeline(*steps, memory=None, transform_input=None, verbose=False):
    """Build a :class:`Pipeline` from estimators, named as scikit-learn's ``make_pipeline`` names them.

    Parameters
    ----------
    *steps : list of estimators
        The steps, in order.
    memory : str or object with the joblib.Memory interface, default=None
        As for scikit-learn's ``make_pipeline``.
    transform_input : list of str, default=None
        As for scikit-learn's ``make_pipeline``.
    verbose : bool, default=False
        As for scikit-learn's ``make_pipeline``.

    Returns
    -------
    p : Pipeline
        A :class:`Pipeline` (of this module) over ``steps``.
    """
    named = _sklearn_pipeline.make_pipeline(*steps)
    return Pipeline(named.steps, memory=memory, transform_input=transform_input, verbose=verbose)
