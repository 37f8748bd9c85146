"""The DP scalers: a differentially private mean and scale, or range, per feature."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.utils.validation import check_is_fitted

from .. import _noise
from .._bounds import composed_release_epsilon, feature_columns
from .._memo import memoize
from .._protocol import (
    COUNT_EPSILON_FRACTION,
    FitPlan,
    record_spend,
    release_count,
    restore_on_failure,
)
from .._sklearn_compat import StrOptions
from .._validation import saturate, validate_rows
from ._base import (
    _bound_events,
    _calibrate_sums,
    _check_ranges,
    _DPTransformer,
    _noisy_sums,
    _release_feature_bounds,
    _sums_event,
)

if TYPE_CHECKING:
    from .._typing import ArrayLike, Auto, MatrixLike, RandomStateLike
    from ..budget import PrivacyBudget

__all__ = ["DPStandardScaler", "DPMinMaxScaler"]

#: Shares of epsilon of DPStandardScaler with ``bounds="auto"``: the row
#: count (5%), the feature bounds (50%), the noisy sums (the rest; all of
#: epsilon with given bounds).  On a few hundred rows and tens of features
#: the bounds decide the scaler's use downstream (a bound far off the data
#: loses the feature; a noisy mean within a good bound costs little), so
#: they get half: breast cancer (398 rows, 30 features), DP scaler + model
#: at total epsilon 1 and 0.5, median accuracy over 40 seeds (the tables of
#: ``benchmarks/bench_raw_tables.py``, ``classes`` given) 0.90 and 0.66 with
#: 35%, 0.91 and 0.66 with 50%; with the leaning bounds and shrunk means
#: 0.92 and 0.79.
STANDARD_BOUNDS_FRACTION = 0.5
#: The public default of a feature's mean, in units of its bound ``h``: the
#: centre of its range, ``c``.  A released mean ``mean_u`` (in ``[-1, 1]``)
#: with noise of standard deviation ``s`` is shrunk to ``mean_u * tau^2 /
#: (tau^2 + s^2)``, ``tau = STANDARD_MEAN_SPREAD`` (the posterior mean under
#: a normal prior of spread ``tau`` around the default): unchanged where the
#: noise is small, near ``c`` where it dominates.  Measured with
#: ``benchmarks/bench_raw_tables.py``.
STANDARD_MEAN_SPREAD = 0.3
#: Shares of epsilon of DPMinMaxScaler: the row count (5%), the feature
#: bounds (35%), the noisy means (the rest), the half-widths (40%).
MINMAX_BOUNDS_FRACTION = 0.35
MINMAX_WIDTHS_FRACTION = 0.4


@memoize(maxsize=256)
def _standard_plan(n_features, epsilon, delta, auto):
    """``(epsilon of each feature bound, noise multiplier of the sums)`` of DPStandardScaler (public, cached).

    With given bounds the sums are the only release (the row count is one of
    them); with ``"auto"`` the count and the bounds come first.
    """
    prefix, each = [], math.inf
    if auto:
        count = dpe.LaplaceDpEvent(1.0 / (COUNT_EPSILON_FRACTION * epsilon))
        each = composed_release_epsilon(
            n_features, STANDARD_BOUNDS_FRACTION * epsilon, delta, count
        )
        prefix = [count] + _bound_events(each, n_features, "bound")
    return each, _calibrate_sums(prefix, epsilon, delta, delta == 0)


def standard_sensitivities(n_features):
    """``(L2, L1)`` add/remove-one sensitivity of DPStandardScaler's sums (public).

    One row adds ``u_j`` in ``[-1, 1]`` and ``u_j^2`` in ``[0, 1]`` for each
    feature, and 1 to the row count: ``sqrt(2 d + 1)`` in L2, ``2 d + 1`` in L1.
    """
    return math.sqrt(2.0 * n_features + 1.0), 2.0 * n_features + 1.0


def combined_count(laplace_count, laplace_scale, summed_count, summed_std):
    """The inverse-variance average of two unbiased releases of the row count (post-processing).

    ``laplace_count`` has variance ``2 * laplace_scale^2``, ``summed_count``
    ``summed_std^2``; either may be None (not released).  At least 1.
    """
    estimates = []
    if laplace_count is not None:
        estimates.append((laplace_count, 2.0 * laplace_scale**2))
    if summed_count is not None:
        estimates.append((summed_count, summed_std**2))
    if any(variance == 0 for _, variance in estimates):
        value = next(v for v, variance in estimates if variance == 0)
    else:
        weights = [1.0 / variance for _, variance in estimates]
        value = sum(w * v for w, (v, _) in zip(weights, estimates)) / sum(weights)
    return max(1.0, float(value))


def summed_noise_std(multiplier, sensitivity_l2, sensitivity_l1, pure):
    """Standard deviation of the noise on each of a scaler's summed releases (public).

    Gaussian of std ``multiplier * sensitivity_l2``, or for pure DP Laplace
    of scale ``multiplier * sensitivity_l1`` (std ``sqrt(2)`` times the scale).
    """
    return multiplier * (sensitivity_l1 * math.sqrt(2.0) if pure else sensitivity_l2)


def shrunk_mean(mean_u, noise_std):
    """``mean_u * tau^2 / (tau^2 + noise_std^2)``, ``tau = STANDARD_MEAN_SPREAD`` (public post-processing)."""
    tau2 = STANDARD_MEAN_SPREAD**2
    return mean_u * (tau2 / (tau2 + float(noise_std) ** 2))


#: Fewest features for :func:`pooled_mean` to pool them (the positive-part
#: James-Stein estimator towards the features' average improves on the raw
#: means from four on).
POOLED_MIN_FEATURES = 4


def pooled_mean(mean_u, noise_std):
    """The features' noisy means shrunk towards their average (public post-processing).

    ``g + (m - g) * max(0, 1 - (d - 3) s^2 / sum((m - g)^2))`` with ``m``
    the ``d`` released means (in units of their bounds), ``g`` their average
    and ``s`` the noise of each (Efron and Morris, JASA 1973): where the
    noise dominates the spread of the means, each moves towards what the
    features share (on a table of positive measurements, all lie on one
    side of the centre ``0`` that :func:`shrunk_mean` would pull them to);
    where the means differ well beyond the noise they stay.  Below
    :data:`POOLED_MIN_FEATURES` features: :func:`shrunk_mean`.
    """
    mean_u = np.asarray(mean_u, dtype=float)
    d = mean_u.size
    if d < POOLED_MIN_FEATURES:
        return shrunk_mean(mean_u, noise_std)
    average = float(np.mean(mean_u))
    spread = float(np.sum((mean_u - average) ** 2))
    variance = float(noise_std) ** 2
    factor = max(0.0, 1.0 - (d - 3) * variance / spread) if spread > 0 else 0.0
    return average + (mean_u - average) * factor


@memoize(maxsize=256)
def _minmax_plan(n_features, epsilon, delta):
    """``(epsilon of each bound, of each half-width, noise multiplier of the sums)`` of DPMinMaxScaler."""
    count = dpe.LaplaceDpEvent(1.0 / (COUNT_EPSILON_FRACTION * epsilon))
    bound_each = composed_release_epsilon(
        n_features, MINMAX_BOUNDS_FRACTION * epsilon, delta, count
    )
    bounds = _bound_events(bound_each, n_features, "bound")
    width_each = composed_release_epsilon(
        n_features, MINMAX_WIDTHS_FRACTION * epsilon, delta, dpe.ComposedDpEvent([count] + bounds)
    )
    prefix = [count] + bounds + _bound_events(width_each, n_features, "half-width")
    return bound_each, width_each, _calibrate_sums(prefix, epsilon, delta, delta == 0)


class DPStandardScaler(_DPTransformer):
    """Standardise features with a differentially private mean and standard deviation.

    The private counterpart of scikit-learn's ``StandardScaler``:
    ``transform(X) = (X - mean_) / scale_``, with ``mean_`` and ``scale_``
    released with differential privacy.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon in [1e-3, 100]; ``float("inf")`` computes
        the exact statistics (not private, spends nothing, cannot be combined
        with ``budget``).
    delta : float, default=1e-5
        Privacy parameter delta in [0, 1).  ``delta=0`` gives pure epsilon-DP
        (Laplace noise on the sums instead of Gaussian).
    bounds : "auto" or array-like, default="auto"
        Public range of each feature, a ``(min, max)`` pair (for all
        features) or one pair per feature; values are clipped to it for the
        sums.  ``"auto"`` releases a range ``[-h_j, h_j]`` per feature
        privately (5% of epsilon on the row count, 50% on a DP bound
        ``h_j`` of ``|X[:, j]|`` per feature, see :mod:`sklearn_dp._bounds`).
        Given ranges cost nothing, and the whole of epsilon goes to the sums.
    with_mean : bool, default=True
        Centre the data (refused for sparse input, as in scikit-learn).
    with_std : bool, default=True
        Scale the data to unit variance.
    clip : bool, default=True
        ``transform`` clips values to each feature's range ``bounds_``
        first, as the fit did: a noisy range then gives a bounded feature
        (at worst a constant one), never an exploding one.  Unclipped, a
        value beyond the float range saturates at the largest float of its
        sign: finite rows stay finite.
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
    mean_ : ndarray of shape (n_features,)
        DP mean (released even with ``with_mean=False``, which only skips
        the centring in ``transform``).
    var_ : ndarray of shape (n_features,)
        DP variance.
    scale_ : ndarray of shape (n_features,)
        ``sqrt(var_)`` (ones when ``with_std=False``).
    bounds_ : ndarray of shape (n_features, 2)
        The range each feature was clipped to (given or released).
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
    Public: the number of features, ``bounds`` when given, and the
    parameters.  Releases, in order: with ``bounds="auto"``, the row count
    (Laplace, 5% of epsilon) and for each feature a DP bound ``h_j`` on
    ``|X[i, j]|`` (exponential mechanisms, 50% of epsilon together, composed
    by zCDP when that is tighter), so ``c_j = 0``; with given bounds
    ``[lo_j, hi_j]``, ``c_j`` and ``h_j`` are their centre and half-width.
    Then, with ``u_ij = clip((X[i, j] - c_j) / h_j, -1, 1)``, the sums over
    the rows of ``u_ij`` and ``u_ij^2`` for all features at once and the
    number of rows (a constant column), as one Gaussian mechanism of L2
    sensitivity ``sqrt(2 d + 1)`` (Laplace of L1 sensitivity ``2 d + 1``
    when ``delta=0``), calibrated so that the whole fit meets (epsilon,
    delta).  The rest is post-processing of these releases: the row count
    ``n~`` is the inverse-variance average of the released counts; ``m_j = sum(u_j) / n~`` has noise of a standard
    deviation ``s`` known from the mechanism, and where it dominates the
    spread of the means they are shrunk towards their average (positive-part
    James-Stein; with fewer than four features, towards the public default
    ``c_j``: ``mean_ = c + h * m * tau^2 / (tau^2 + s^2)`` with ``tau =
    0.3``), unchanged when ``s`` is small;
    ``var_ = h^2 * v`` with ``v`` the second moment of ``u`` about that
    mean, clipped to ``[s', 1]`` at the noise level ``s'`` of its estimate,
    so a near-zero spread estimate falls back to about the released range
    instead of blowing the feature up.  ``transform`` uses these released
    values only and costs nothing.

    With few rows per feature the statistics are noisy: a bound the data
    cannot decide leans large (the feature then stays near its centre and
    weighs little downstream) rather than clipping the feature to a
    constant; see ``docs/guide/choosing_parameters.md``.
    With ``fit(X, groups=g)`` the unit is one group instead: (epsilon,
    delta)-DP with respect to adding or removing one group of at most
    ``max_group_rows`` rows (each group keeps its first ``max_group_rows``
    rows; every release has ``max_group_rows`` times its row sensitivity and
    noise, and the count is of kept rows).
    """

    _parameter_constraints = {
        **_DPTransformer._privacy_parameter_constraints,
        "bounds": [StrOptions({"auto"}), "array-like"],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "clip": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        bounds: Auto | ArrayLike = "auto",
        with_mean: bool = True,
        with_std: bool = True,
        clip: bool = True,
        budget: PrivacyBudget | None = None,
        random_state: RandomStateLike = None,
        max_group_rows: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.clip = clip
        self.budget = budget
        self.random_state = random_state
        self.max_group_rows = max_group_rows

    def _plan(self, X):
        """``(X validated, FitPlan)``: the public checks and the plan of ``fit``."""
        self._validate_params()
        self._check_privacy_request()
        X = self._validate_fit(X, accept_sparse="csr")
        if sp.issparse(X) and self.with_mean:
            raise ValueError(
                "Cannot center sparse matrices: pass with_mean=False instead (as in "
                "scikit-learn's StandardScaler)."
            )
        d = X.shape[1]
        auto = isinstance(self.bounds, str)
        given = None if auto else _check_ranges(self.bounds, d, "bounds")
        private = not math.isinf(self.epsilon)
        pure = self.delta == 0
        # The shares, events and noise, before the reservation.  With given
        # bounds the row count is a coordinate of the sums (no release of
        # its own); "auto" bounds need it first.
        epsilon_count = COUNT_EPSILON_FRACTION * self.epsilon if private and auto else math.inf
        prefix, epsilon_each, multiplier = [], math.inf, 0.0
        if private:
            epsilon_each, multiplier = _standard_plan(
                d, float(self.epsilon), float(self.delta), auto
            )
            if auto:
                prefix = [dpe.LaplaceDpEvent(1.0 / epsilon_count)]
                prefix += _bound_events(epsilon_each, d, "bound")
        plan = self._make_plan(
            event=dpe.ComposedDpEvent(prefix + [_sums_event(multiplier, pure)])
            if private
            else None,
            shares={"count": epsilon_count, "bound": epsilon_each},
            options={"bounds": given},
            context={"n_features": d, "auto": auto, "multiplier": multiplier},
        )
        return X, plan

    @restore_on_failure
    def fit(
        self, X: MatrixLike, y: None = None, groups: ArrayLike | None = None
    ) -> DPStandardScaler:
        """Compute the DP mean and standard deviation of each feature.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
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
        self : DPStandardScaler
            The fitted scaler.
        """
        X, plan = self._with_groups(X, groups)
        d, auto, given = plan.context["n_features"], plan.context["auto"], plan.options["bounds"]
        private, pure = plan.private, self.delta == 0
        epsilon_count, epsilon_each = plan.shares["count"], plan.shares["bound"]
        multiplier = plan.context["multiplier"]
        # One row moves the 2d sums of u and u^2 (each in [-1, 1] and [0, 1])
        # and the row count (a constant column) by at most sqrt(2 d + 1) in
        # L2 and 2 d + 1 in L1.
        sensitivity_l2, sensitivity_l1 = standard_sensitivities(d)

        def release(X, rng):
            count, events = None, []
            if auto:
                count = release_count(X.shape[0], epsilon_count, rng)
                widths, events = _release_feature_bounds(
                    X, epsilon_each, count.estimate, rng, leaning=private
                )
                centers = np.zeros(d)
            else:
                lo, hi = given
                centers, widths = (lo + hi) / 2.0, (hi - lo) / 2.0
            sums = np.zeros(2 * d + 1)
            for j, column in feature_columns(X):
                u = np.clip((column - centers[j]) / widths[j], -1.0, 1.0)
                sums[j] = np.sum(u)
                sums[d + j] = np.sum(u * u)
            sums[2 * d] = X.shape[0]
            noisy = _noisy_sums(
                sums,
                sensitivity_l2=sensitivity_l2,
                sensitivity_l1=sensitivity_l1,
                multiplier=multiplier,
                pure=pure,
                rng=rng,
                label="feature sums and sums of squares",
            )
            # The noise of each released sum (public; the gateway's unit
            # multiplier of a group fit scales every noise alike).
            noise_std = summed_noise_std(multiplier, sensitivity_l2, sensitivity_l1, pure)
            noise_std *= _noise.released_rows()
            # The row count: the sums' constant column, averaged with the
            # count released before the bounds (both already paid for).
            n = combined_count(
                None if count is None else count.estimate,
                0.0 if count is None else _noise.released_rows() / epsilon_count,
                noisy[2 * d],
                noise_std,
            )
            mean_hat = np.clip(noisy[:d] / n, -1.0, 1.0)
            square_u = np.clip(noisy[d : 2 * d] / n, 0.0, 1.0)
            # Where the noise dominates the means, shrink them towards their
            # average (with few features, to the centre of each range: a
            # public default); the spread is then the second moment about
            # the centre used.
            mean_u = pooled_mean(mean_hat, noise_std / n) if private else mean_hat
            # Clip the variance at the noise level of its estimate (public)
            # rather than let a near-zero estimate blow the feature up: with
            # few rows per feature the scale falls back to about the released
            # bound rather than to noise.
            floor = max(noise_std / n, _MIN_RELATIVE_VARIANCE) if private else 0.0
            var_u = np.clip(square_u - 2.0 * mean_u * mean_hat + mean_u**2, floor, 1.0)
            self.mean_ = centers + widths * mean_u
            self.var_ = widths**2 * var_u
            # A constant feature (exact fits only) keeps scale 1, as in scikit-learn.
            scale = np.sqrt(self.var_)
            self.scale_ = np.where(scale > 0, scale, 1.0) if self.with_std else np.ones(d)
            self.bounds_ = np.column_stack([centers - widths, centers + widths])
            if not private:
                return None
            prefix = [] if count is None else [count.event]
            return dpe.ComposedDpEvent(prefix + events + [_sums_event(multiplier, pure)])

        self._run_private(X, plan, release)
        return self

    def transform(self, X: MatrixLike, copy: bool | None = None) -> MatrixLike:
        """``(clip(X, bounds_) - mean_) / scale_`` (released statistics only: costs nothing).

        With ``clip=True`` values are first clipped to the feature's range
        ``bounds_``, as in the fit: a noisy bound then yields a bounded
        feature (at worst a constant), never an exploding one.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).
        copy : bool, default=None
            Copy ``X`` first (``None``: the ``copy`` parameter of the scaler).

        Returns
        -------
        X_new : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The scaled data.
        """
        check_is_fitted(self)
        X = validate_rows(
            self,
            X,
            reset=False,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            copy=True if copy is None else copy,
        )
        if sp.issparse(X):
            if self.with_mean:
                raise ValueError("Cannot center sparse matrices: pass with_mean=False.")
            X = sp.csr_matrix(X, copy=True)
            if self.clip:
                lo, hi = self.bounds_[:, 0], self.bounds_[:, 1]
                np.clip(X.data, lo[X.indices], hi[X.indices], out=X.data)
            return saturate(sp.csr_matrix(X @ sp.diags(1.0 / self.scale_)))
        if self.clip:
            X = np.clip(X, self.bounds_[:, 0], self.bounds_[:, 1])
        with np.errstate(over="ignore"):
            if self.with_mean:
                X = X - self.mean_
            return saturate(X / self.scale_)

    def inverse_transform(self, X: MatrixLike, copy: bool | None = None) -> MatrixLike:
        """Undo :meth:`transform`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).
        copy : bool, default=None
            Copy ``X`` first (``None``: the ``copy`` parameter of the scaler).

        Returns
        -------
        X_original : {ndarray, sparse matrix} of shape (n_samples, n_features)
            The data on its original scale.
        """
        check_is_fitted(self)
        X = validate_rows(
            self,
            X,
            reset=False,
            accept_sparse="csr",
            dtype=[np.float64, np.float32],
            copy=True if copy is None else copy,
        )
        if sp.issparse(X):
            return sp.csr_matrix(X @ sp.diags(self.scale_))
        X = X * self.scale_
        return X + self.mean_ if self.with_mean else X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self.with_mean
        tags.input_tags.allow_nan = False
        return tags


#: Smallest variance of a feature relative to its squared released half-width
#: (private fits; the noise level of the estimate is usually larger).
_MIN_RELATIVE_VARIANCE = 1e-12


class DPMinMaxScaler(_DPTransformer):
    """Scale each feature to ``feature_range`` with a differentially private range.

    The private counterpart of scikit-learn's ``MinMaxScaler``: each feature's
    range ``[data_min_, data_max_]`` is released with differential privacy
    and mapped to ``feature_range``; values outside it are clipped (``clip=True``).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon in [1e-3, 100]; ``float("inf")`` computes
        the exact ranges of the mechanism without noise (not private).
    delta : float, default=1e-5
        Privacy parameter delta in [0, 1).  The ranges are pure epsilon-DP;
        with ``delta > 0`` their composition over the features is accounted
        by zCDP when that is tighter (more epsilon per feature).
    feature_range : tuple (min, max), default=(0, 1)
        Desired range of the transformed data.
    bounds : "auto" or array-like, default="auto"
        ``"auto"``: release each feature's range privately.  A ``(min,
        max)`` pair or one pair per feature: public ranges, used as the data
        ranges; the fit then spends nothing (it is :class:`PublicRangeScaler`
        with ``feature_range``).
    clip : bool, default=True
        Clip transformed values to ``feature_range`` (a released range does
        not contain every value).  Unclipped, a value beyond the float range
        saturates at the largest float of its sign: finite rows stay finite.
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
    data_min_, data_max_, data_range_ : ndarray of shape (n_features,)
        The released (or given) range of each feature.
    scale_, min_ : ndarray of shape (n_features,)
        ``transform(X) = X * scale_ + min_`` (then clipped), as in scikit-learn.
    n_features_in_ : int
    privacy_spent_ : tuple of (float, float)
    dp_event_ : dp_accounting.DpEvent
    max_group_rows_ : int
        Only after a fit with ``groups=``: the unit of privacy was one group
        of at most this many rows, and ``dp_event_`` and ``privacy_spent_``
        hold under "add or remove one group" (:doc:`/guide/groups`).

    Privacy
    -------
    epsilon-DP (and, with zCDP composition over many features,
    (epsilon, delta)-DP) with respect to adding or removing one row.
    Releases the row count (Laplace, 5% of epsilon); for each feature a
    DP bound ``B_j`` of ``|X[i, j]|`` (exponential mechanism, 35% of
    epsilon together); the sums of ``clip(X[i, j] / B_j, -1, 1)`` over the
    rows and the number of rows (a constant column), as one Gaussian
    mechanism of L2 sensitivity ``sqrt(d + 1)`` (Laplace of L1 sensitivity
    ``d + 1`` when ``delta=0``), which give a centre ``c_j`` (the released
    sum over the inverse-variance average of the two released counts); and
    for each feature a DP bound ``h_j`` of ``|X[i, j] - c_j|`` (40%; see
    :mod:`sklearn_dp._bounds`).  The range is ``[c_j - h_j, c_j + h_j]``.  ``transform`` costs nothing.
    The range is a robust one, not the exact minimum and maximum: it
    excludes a sparse tail of extreme values (which are then clipped).
    With ``fit(X, groups=g)`` the unit is one group instead: (epsilon,
    delta)-DP with respect to adding or removing one group of at most
    ``max_group_rows`` rows (each group keeps its first ``max_group_rows``
    rows; every release has ``max_group_rows`` times its row sensitivity and
    noise, and the count is of kept rows).
    """

    _parameter_constraints = {
        **_DPTransformer._privacy_parameter_constraints,
        "feature_range": [tuple],
        "bounds": [StrOptions({"auto"}), "array-like"],
        "clip": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        feature_range: tuple[float, float] = (0, 1),
        bounds: Auto | ArrayLike = "auto",
        clip: bool = True,
        budget: PrivacyBudget | None = None,
        random_state: RandomStateLike = None,
        max_group_rows: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.feature_range = feature_range
        self.bounds = bounds
        self.clip = clip
        self.budget = budget
        self.random_state = random_state
        self.max_group_rows = max_group_rows

    def _plan(self, X):
        """``(X validated, FitPlan)``: the public checks and the plan of ``fit``."""
        self._validate_params()
        self._check_privacy_request()
        low, high = self.feature_range
        if not low < high:
            raise ValueError(
                f"Minimum of desired feature range must be smaller than maximum. Got {self.feature_range}."
            )
        X = self._validate_fit(X, accept_sparse=False)
        d = X.shape[1]
        if not isinstance(self.bounds, str):
            lo, hi = _check_ranges(self.bounds, d, "bounds")
            # Public ranges: nothing is read from the data; nothing is spent.
            plan = FitPlan(
                owner=type(self).__name__,
                solver=None,
                options={"bounds": (lo, hi)},
                epsilon=0.0,
                delta=0.0,
                private=True,
                shares={},
                event=dpe.NoOpDpEvent(),
                context={"public_ranges": (lo, hi)},
            )
            return X, plan
        private = not math.isinf(self.epsilon)
        pure = self.delta == 0
        epsilon_count = COUNT_EPSILON_FRACTION * self.epsilon if private else math.inf
        prefix, bound_each, width_each, multiplier = [], math.inf, math.inf, 0.0
        if private:
            bound_each, width_each, multiplier = _minmax_plan(
                d, float(self.epsilon), float(self.delta)
            )
            prefix = (
                [dpe.LaplaceDpEvent(1.0 / epsilon_count)]
                + _bound_events(bound_each, d, "bound")
                + _bound_events(width_each, d, "half-width")
            )
        plan = self._make_plan(
            event=dpe.ComposedDpEvent(prefix + [_sums_event(multiplier, pure)])
            if private
            else None,
            shares={"count": epsilon_count, "bound": bound_each, "half-width": width_each},
            context={"n_features": d, "multiplier": multiplier},
        )
        return X, plan

    @restore_on_failure
    def fit(self, X: MatrixLike, y: None = None, groups: ArrayLike | None = None) -> DPMinMaxScaler:
        """Release the range of each feature.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The private data; entries are clipped to the released ranges.
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
        self : DPMinMaxScaler
            The fitted scaler.
        """
        X, plan = self._with_groups(X, groups)
        if "public_ranges" in plan.context:
            self._set_range(*plan.context["public_ranges"])
            record_spend(self, plan, plan.event)
            return self
        d, private, pure = plan.context["n_features"], plan.private, self.delta == 0
        epsilon_count = plan.shares["count"]
        bound_each, width_each = plan.shares["bound"], plan.shares["half-width"]
        multiplier = plan.context["multiplier"]
        # One row moves the d sums of u (each in [-1, 1]) and the row count (a
        # constant column) by sqrt(d + 1) in L2, d + 1 in L1.
        sensitivity_l2, sensitivity_l1 = math.sqrt(d + 1.0), d + 1.0

        def release(X, rng):
            count = release_count(X.shape[0], epsilon_count, rng)
            bounds, bound_events = _release_feature_bounds(X, bound_each, count.estimate, rng)
            sums = np.zeros(d + 1)
            for j, column in feature_columns(X):
                sums[j] = np.sum(np.clip(column / bounds[j], -1.0, 1.0))
            sums[d] = X.shape[0]
            noisy = _noisy_sums(
                sums,
                sensitivity_l2=sensitivity_l2,
                sensitivity_l1=sensitivity_l1,
                multiplier=multiplier,
                pure=pure,
                rng=rng,
                label="feature sums",
            )
            # The row count: the Laplace count averaged with the sums' constant
            # column (post-processing of both).
            noise_std = summed_noise_std(multiplier, sensitivity_l2, sensitivity_l1, pure)
            rows = _noise.released_rows()
            n = combined_count(count.estimate, rows / epsilon_count, noisy[d], noise_std * rows)
            centers = bounds * np.clip(noisy[:d] / n, -1.0, 1.0)
            widths, width_events = _release_feature_bounds(
                X, width_each, n, rng, what="half-width", centers=centers
            )
            self._set_range(centers - widths, centers + widths)
            if not private:
                return None
            return dpe.ComposedDpEvent(
                [count.event] + bound_events + width_events + [_sums_event(multiplier, pure)]
            )

        self._run_private(X, plan, release)
        return self

    def _set_range(self, lo, hi):
        low, high = self.feature_range
        self.data_min_ = np.asarray(lo, dtype=float)
        self.data_max_ = np.asarray(hi, dtype=float)
        self.data_range_ = self.data_max_ - self.data_min_
        self.scale_ = (high - low) / self.data_range_
        self.min_ = low - self.data_min_ * self.scale_

    def transform(self, X: MatrixLike) -> MatrixLike:
        """``X * scale_ + min_``, clipped to ``feature_range`` if ``clip`` (costs nothing).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            The scaled data.
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, dtype=[np.float64, np.float32], copy=True)
        with np.errstate(over="ignore"):
            X = saturate(X * self.scale_ + self.min_)
        if self.clip:
            X = np.clip(X, self.feature_range[0], self.feature_range[1])
        return X

    def inverse_transform(self, X: MatrixLike) -> MatrixLike:
        """Undo :meth:`transform` (clipped values stay at the range's ends).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The data (public: costs nothing).

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            The data on its original scale.
        """
        check_is_fitted(self)
        X = validate_rows(self, X, reset=False, dtype=[np.float64, np.float32], copy=True)
        return (X - self.min_) / self.scale_
