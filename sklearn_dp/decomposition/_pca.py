"""DPPCA: principal components of a differentially private covariance matrix.

The fit releases the row count, the rows' L2 bound (when ``"auto"``), the sum
of the rows and their second-moment matrix ``sum_i x_i x_i^T``, each row
scaled down to the bound first; the Gram release is the one ``dp_ssp`` makes
(:func:`sklearn_dp.solvers._noisy_steps.release_symmetric`).  The covariance,
its eigendecomposition and everything ``transform`` does are post-processing
of these releases (the "Analyze Gauss" approach: Dwork, Talwar, Thakurta and
Zhang 2014, "Analyze Gauss: optimal bounds for privacy-preserving principal
component analysis", STOC).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import ClassNamePrefixFeaturesOutMixin
from sklearn.utils.validation import check_array, check_is_fitted

from .._bounds import (
    BOUNDS_EPSILON_FRACTION,
    REGRESSOR_ROW_WINDOW,
    planned_events,
    release_row_norm_bound,
)
from .._data import bound_data
from .._memo import memoize
from .._protocol import (
    COUNT_EPSILON_FRACTION,
    check_sampler_range,
    release_count,
    restore_on_failure,
)
from .._sklearn_compat import Interval, StrOptions
from .._validation import public_validation_errors, saturate, validate_rows
from ..accounting import calibrate_noise_multiplier
from ..linear_model._base import public_scale
from ..preprocessing._base import _DPTransformer
from ..solvers._noisy_steps import release, release_symmetric

if TYPE_CHECKING:
    from .._typing import ArrayLike, Auto, MatrixLike, RandomStateLike
    from ..budget import PrivacyBudget

__all__ = ["DPPCA", "MEAN_PRECISION_SHARE", "ROW_WINDOW", "pca_multipliers"]

#: Share of the precision ``1 / sigma^2`` of the two Gaussian releases that
#: goes to the sum of the rows (the rest to the second-moment matrix).  The
#: mean's noise enters the covariance through ``mean mean^T``, which matters
#: only for data far from the origin; the second-moment matrix carries the
#: components.  The two releases compose exactly into one Gaussian mechanism
#: whatever the split.  On the tables of ``benchmarks/bench_pca.py`` (offset
#: 0.1, and 0.5) at epsilon 0.5 with ``data_norm=sqrt(d)``, 0.25 captured more
#: variance than 0.1 or 0.5 (median of 4 seeds: 0.963 vs 0.960 and 0.946;
#: 0.955 vs 0.921 and 0.939).
MEAN_PRECISION_SHARE = 0.25

#: The window of the ``"auto"`` row bound (see :mod:`sklearn_dp._bounds`):
#: clipping a long row shrinks its contribution to the covariance (a bias),
#: so the bound sits near the largest rows, as for regressors.
ROW_WINDOW = REGRESSOR_ROW_WINDOW


#: The power of two by which ``transform`` scales a row whose projection
#: overflows to an undefined value (entries near the float range of both signs).
_SHRINK = 2.0**-600


def _gaussian_events(multiplier):
    """The events of the two Gaussian releases for a total multiplier ``multiplier``."""
    mean, second = pca_multipliers(multiplier)
    return [dpe.GaussianDpEvent(mean), dpe.GaussianDpEvent(second)]


def pca_multipliers(multiplier):
    """``(multiplier of the row sum, multiplier of the second-moment matrix)``.

    The shares of the precision: ``1 / m_sum^2 + 1 / m_gram^2 = 1 /
    multiplier^2``, so the two Gaussian releases are together one Gaussian
    mechanism of noise multiplier ``multiplier``.
    """
    return (
        multiplier / math.sqrt(MEAN_PRECISION_SHARE),
        multiplier / math.sqrt(1.0 - MEAN_PRECISION_SHARE),
    )


def _prefix_events(epsilon, auto):
    """The events before the Gaussian releases: the row count, then the row bound if ``"auto"``."""
    events = [dpe.LaplaceDpEvent(1.0 / (COUNT_EPSILON_FRACTION * epsilon))]
    if auto:
        events += planned_events(("data_norm", False), (BOUNDS_EPSILON_FRACTION * epsilon, 0.0))
    return events


@memoize(maxsize=256)
def _pca_plan(epsilon, delta, auto):
    """The total noise multiplier of the Gaussian releases (public inputs only; cached).

    The smallest multiplier for which the whole fit's event (count, bound,
    the two Gaussian releases) meets (epsilon, delta) under dp_accounting.
    """
    prefix = _prefix_events(epsilon, auto)
    return calibrate_noise_multiplier(
        lambda m: dpe.ComposedDpEvent(prefix + _gaussian_events(m)), epsilon, delta
    )


def _flip_signs(components):
    """Each component's sign set so that its largest entry in absolute value is positive.

    scikit-learn's convention (``svd_flip`` on the components), so that a
    noiseless fit gives its ``components_``.
    """
    largest = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), largest])
    signs[signs == 0] = 1.0
    return components * signs[:, None]


class DPPCA(ClassNamePrefixFeaturesOutMixin, _DPTransformer):
    """Principal component analysis with a differentially private covariance matrix.

    The private counterpart of scikit-learn's ``PCA``: the components are the
    leading eigenvectors of a covariance matrix built from a differentially
    private mean and second-moment matrix of the rows ("Analyze Gauss").
    ``transform(X) = (X - mean_) @ components_.T``.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components to keep (at most the number of features); None
        keeps all.  A variance fraction or ``"mle"`` is refused: the number
        of output columns must be public before the fit (a search plans the
        next step on it).
    epsilon : float, default=1.0
        Privacy parameter epsilon in [1e-3, 100]; ``float("inf")`` computes
        the exact statistics of the bounded rows (not private, spends
        nothing, cannot be combined with ``budget``).
    delta : float, default=1e-5
        Privacy parameter delta in (0, 1).  The second-moment matrix is
        released with the Gaussian mechanism, which needs ``delta > 0``:
        ``delta=0`` is refused before anything is spent.
    data_norm : float or "auto", default="auto"
        Bound on the L2 norm of each row of ``X``, in ``[1e-30, 1e30]``.
        Longer rows are scaled down to it (clipped, not rejected).  A number
        is public knowledge
        and costs nothing; ``"auto"`` estimates it privately with 10% of
        epsilon (an exponential mechanism over the public grid 1e-8..1e8, as
        for the estimators' ``data_norm``, see
        ``docs/guide/choosing_parameters.md``); the result is ``data_norm_``.
        The noise grows as ``data_norm ** 2``: centre the data (for example
        with :class:`~sklearn_dp.preprocessing.DPStandardScaler`) when it lies
        far from the origin.
    whiten : bool, default=False
        ``transform`` divides each component's scores by the square root of
        its released variance (``explained_variance_``), as in scikit-learn.
    budget : PrivacyBudget or None, default=None
        Shared budget, charged once per fit, before the data is read.
    random_state : None or int, default=None
        Source of noise.  None (for anything you release) keys a
        cryptographically secure generator (ChaCha20) with fresh OS entropy
        at every fit; an int makes fits reproducible, for demos and tests
        only (the seed regenerates the noise; a fit charged to a budget keys
        it with its ledger entry).  A ``Generator`` or ``RandomState`` is
        refused when ``epsilon`` is finite (docs/randomness.md).
    max_group_rows : int or None, default=None
        With ``fit(X, groups=...)``: the most rows one group (a person, an
        account) may contribute; each group keeps its first
        ``max_group_rows`` rows in input order, and the guarantee protects
        one whole group.  Public.  Ignored without ``groups``.  See
        :doc:`/guide/groups`.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        The principal axes (orthonormal rows), by decreasing released
        variance; each signed so that its largest entry in absolute value is
        positive.
    explained_variance_ : ndarray of shape (n_components,)
        The released variance along each component (eigenvalues of the
        released covariance, negative ones set to 0).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        Each component's share of the released total variance (the trace of
        the released covariance, negative eigenvalues set to 0).
    singular_values_ : ndarray of shape (n_components,)
        ``sqrt(explained_variance_ * (n~ - 1))``, ``n~`` the released row
        count: what the singular values of the centred data would be.
    noise_variance_ : float
        The mean of the released variances of the components not kept (0
        when all are kept), as in scikit-learn's probabilistic PCA.
    mean_ : ndarray of shape (n_features,)
        The released mean of the (bounded) rows.
    n_components_ : int
        The number of components kept.
    data_norm_ : float
        The bound the rows were scaled to (given or released).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.
    privacy_spent_ : tuple of (float, float)
    dp_event_ : dp_accounting.DpEvent
    max_group_rows_ : int
        Only after a fit with ``groups=``: the unit of privacy was one group
        of at most this many rows, and ``dp_event_`` and ``privacy_spent_``
        hold under "add or remove one group" (:doc:`/guide/groups`).

    Privacy
    -------
    (epsilon, delta)-DP with respect to adding or removing one row of ``X``.
    Public: the number of features, ``n_components``, ``data_norm`` when
    given, and the other parameters.  Releases, in order: the row count
    (Laplace, 5% of epsilon); with ``data_norm="auto"`` a DP bound ``R`` on
    the rows' L2 norms (exponential mechanism, 10% of epsilon); then, with
    every row scaled to L2 norm at most ``R``, the sum of the rows (Gaussian,
    L2 sensitivity ``R``) and the second-moment matrix ``sum_i x_i x_i^T``
    (Gaussian on its upper triangle, mirrored; one row adds ``x x^T``, of
    Frobenius norm ``||x||^2 <= R^2``: sensitivity ``R^2``).  The two
    Gaussian releases split the precision of one Gaussian mechanism
    (``MEAN_PRECISION_SHARE`` to the sum), whose multiplier is the smallest
    for which the whole fit's event meets (epsilon, delta) under
    dp_accounting.  Noise is exact (discrete, on a grid) through the noise
    gateway.  The mean (projected onto the ball of radius ``R``), the
    covariance ``S / n~ - mean mean^T`` (times ``n~ / (n~ - 1)``), its
    eigendecomposition and ``transform`` are post-processing of these
    releases and cost nothing more.
    With ``fit(X, groups=g)`` the unit is one group instead: (epsilon,
    delta)-DP with respect to adding or removing one group of at most
    ``max_group_rows`` rows (each group keeps its first ``max_group_rows``
    rows; every release has ``max_group_rows`` times its row sensitivity and
    noise, and the count is of kept rows).
    """

    _parameter_constraints = {
        **_DPTransformer._privacy_parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        # A public scale, within the range the gateway handles: the Gram
        # matrix's sensitivity is data_norm ** 2.
        "data_norm": [StrOptions({"auto"}), *public_scale()],
        "whiten": ["boolean"],
    }

    def __init__(
        self,
        n_components: int | None = None,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        data_norm: Auto | float = "auto",
        whiten: bool = False,
        budget: PrivacyBudget | None = None,
        random_state: RandomStateLike = None,
        max_group_rows: int | None = None,
    ) -> None:
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.whiten = whiten
        self.budget = budget
        self.random_state = random_state
        self.max_group_rows = max_group_rows

    def _plan(self, X):
        """``(X validated, FitPlan)``: the public checks and the plan of ``fit``."""
        if isinstance(self.n_components, Real) and not isinstance(self.n_components, Integral):
            raise ValueError(
                f"DPPCA: n_components={self.n_components!r}: a variance fraction would choose "
                "the number of output columns from private data; pass an int (the number of "
                "components to keep) or None (all)."
            )
        if isinstance(self.n_components, str):
            raise ValueError(
                f"DPPCA: n_components={self.n_components!r} is not supported: pass an int "
                "(the number of components to keep) or None (all)."
            )
        self._validate_params()
        self._check_privacy_request()
        private = not math.isinf(self.epsilon)
        if private and self.delta == 0:
            raise ValueError(
                "DPPCA releases its second-moment matrix with the Gaussian mechanism, which "
                "needs delta > 0; pass a small delta (for example delta=1e-5, well below "
                "1 / n_samples). Nothing was spent."
            )
        auto = isinstance(self.data_norm, str)
        X = self._validate_fit(X, accept_sparse=True)
        d = X.shape[1]
        k = d if self.n_components is None else int(self.n_components)
        if k > d:
            raise ValueError(
                f"DPPCA: n_components={k} must be at most the number of features ({d})."
            )
        epsilon_count = COUNT_EPSILON_FRACTION * self.epsilon if private else math.inf
        epsilon_bound = BOUNDS_EPSILON_FRACTION * self.epsilon if private else math.inf
        multiplier, event = 0.0, None
        if private:
            multiplier = _pca_plan(float(self.epsilon), float(self.delta), auto)
            event = dpe.ComposedDpEvent(
                _prefix_events(float(self.epsilon), auto) + _gaussian_events(multiplier)
            )
            check_sampler_range(event, type(self).__name__)
        plan = self._make_plan(
            event=event,
            shares={"count": epsilon_count, "bound": epsilon_bound if auto else 0.0},
            options={"data_norm": None if auto else float(self.data_norm)},
            context={
                "n_features": d,
                "n_features_out": k,
                "auto": auto,
                "multipliers": pca_multipliers(multiplier),
            },
        )
        return X, plan

    @restore_on_failure
    def fit(self, X: MatrixLike, y: None = None, groups: ArrayLike | None = None) -> DPPCA:
        """Release the mean and the second-moment matrix of the rows, keep the leading components.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The private data; rows longer than ``data_norm`` are scaled down
            to it.
        y : None
            Ignored.
        groups : array-like of shape (n_samples,), default=None
            The group (person, account, ...) each row belongs to (private).
            With it the guarantee is for adding or removing one whole group
            of at most ``max_group_rows`` rows (each group keeps its first
            ``max_group_rows`` rows); every release has ``max_group_rows``
            times its row sensitivity and noise.  Needs ``max_group_rows``.

        Returns
        -------
        self : DPPCA
            The fitted transformer.
        """
        X, plan = self._with_groups(X, groups)
        context = plan.context
        auto, k = context["auto"], context["n_features_out"]
        sum_multiplier, gram_multiplier = context["multipliers"]
        private = plan.private

        def release_statistics(X, rng):
            count = release_count(X.shape[0], plan.shares["count"], rng)
            events = [count.event]
            if auto:
                bound = release_row_norm_bound(
                    X,
                    epsilon=plan.shares["bound"],
                    n_public=count.estimate,
                    rng=rng,
                    window=ROW_WINDOW,
                )
                norm, events = float(bound.value), events + bound.events
            else:
                norm = plan.options["data_norm"]
            design = bound_data(X, None, fit_intercept=False, data_norm=norm).design
            # One row moves the sum by at most R in L2 and x x^T by R^2 in Frobenius norm.
            total = release(
                design.rmatmul(np.ones(X.shape[0])),
                norm,
                sum_multiplier * norm,
                rng,
                "row sum",
            )
            second = release_symmetric(
                design.gram(), norm**2, gram_multiplier * norm**2, rng, "second-moment matrix"
            )
            self._set_components(total, second, count.estimate, norm, k)
            if not private:
                return None
            return dpe.ComposedDpEvent(
                events + [dpe.GaussianDpEvent(sum_multiplier), dpe.GaussianDpEvent(gram_multiplier)]
            )

        self._run_private(X, plan, release_statistics)
        return self

    def _set_components(self, total, second, n, norm, k):
        """The fitted attributes from the released sums (post-processing only)."""
        mean = np.asarray(total, dtype=float) / n
        # The mean of rows in the ball of radius R lies in it.
        length = float(np.linalg.norm(mean))
        if length > norm:
            mean *= norm / length
        covariance = np.asarray(second, dtype=float) / n - np.outer(mean, mean)
        if n > 1:
            covariance *= n / (n - 1.0)
        covariance = 0.5 * (covariance + covariance.T)
        eigenvalues, vectors = np.linalg.eigh(covariance)
        order = np.argsort(eigenvalues)[::-1]
        variances = np.maximum(eigenvalues[order], 0.0)
        components = _flip_signs(vectors[:, order].T)
        total_variance = float(np.sum(variances))
        self.mean_ = mean
        self.components_ = components[:k].copy()
        self.explained_variance_ = variances[:k].copy()
        self.explained_variance_ratio_ = (
            variances[:k] / total_variance if total_variance > 0 else np.zeros(k)
        )
        self.singular_values_ = np.sqrt(variances[:k] * max(n - 1.0, 0.0))
        self.noise_variance_ = float(np.mean(variances[k:])) if k < variances.size else 0.0
        self.n_components_ = int(k)
        self.data_norm_ = float(norm)

    @property
    def _n_features_out(self):
        return self.n_components_

    def _whitening(self):
        variances = self.explained_variance_
        return np.sqrt(np.where(variances > 0, variances, 1.0))

    def transform(self, X: MatrixLike) -> np.ndarray:
        """Project ``X`` on the released components (costs nothing).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (``transform`` uses released values only).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            ``(X - mean_) @ components_.T``, divided by the square root of
            ``explained_variance_`` when ``whiten``.  Finite for finite
            input: a score beyond the float range saturates at the largest
            float of its sign (so that the next DP step never refuses a
            finite private row).
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, accept_sparse="csr", dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            products = np.asarray(X @ self.components_.T)
            undefined = np.flatnonzero(np.isnan(products).any(axis=1))
            if undefined.size:
                # A finite row near the float range: partial sums of +inf and
                # -inf.  Projected scaled down by a power of two (exact), then
                # scaled back, it overflows to a signed infinity instead.
                shrunk = np.asarray((X[undefined] * _SHRINK) @ self.components_.T)
                products[undefined] = shrunk / _SHRINK
            scores = products - self.components_ @ self.mean_
            if self.whiten:
                scores /= self._whitening()
        return saturate(scores)

    def inverse_transform(self, X: MatrixLike) -> np.ndarray:
        """Map scores back to the feature space (costs nothing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Scores, as :meth:`transform` returns them.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            ``X @ components_ + mean_`` (the scores first multiplied back by
            the square root of ``explained_variance_`` when ``whiten``).
        """
        check_is_fitted(self)
        with public_validation_errors(type(self).__name__):
            X = check_array(X, dtype=np.float64)
        if X.shape[1] != self.n_components_:
            raise ValueError(
                f"DPPCA.inverse_transform: X must have shape (n_samples, {self.n_components_})."
            )
        if self.whiten:
            X = X * self._whitening()
        return X @ self.components_ + self.mean_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = False
        return tags
