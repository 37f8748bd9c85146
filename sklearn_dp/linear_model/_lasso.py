"""Differentially private Lasso: l1-constrained or l1-penalised least squares."""

from __future__ import annotations

import functools
import math
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .. import _dask
from .._bounds import BOUNDS_EPSILON_FRACTION, LABEL_RANGE_EPSILON_FRACTION
from .._data import scale_labels
from .._losses import get_loss
from .._memo import memoize
from .._protocol import COUNT_EPSILON_FRACTION
from .._sklearn_compat import Interval, StrOptions
from ..solvers import AutoChoice, get_solver
from ..solvers._second_order import AUTO_SSP_ENTRYWISE_MAX_FEATURES
from ..solvers._ssp import solve_statistics
from ._base import BaseDPEstimator, FitProblem, FitRequest, public_scale, restore_on_failure

if TYPE_CHECKING:
    from .._typing import ArrayLike, Auto, FeatureBound, MatrixLike, RandomStateLike
    from ..budget import PrivacyBudget

__all__ = ["DPLasso", "l1_radius_for_alpha", "alpha_for_l1_radius", "default_l1_radius"]

#: Residuals are clipped at this many ``y_bound`` (the squared loss's public
#: derivative bound; DPSCORegressor uses the same without a radius).  Private
#: fits clip at half of it, ``y_bound``, unless ``clip_norm`` is given.
RESIDUAL_BOUND = 2.0

#: Default share of ``frank_wolfe``'s zCDP budget for its debiasing refit (the
#: relaxed Lasso: least squares on the released support, from two Gaussian
#: releases), used with delta > 0 on wide X (more than
#: ``AUTO_SSP_ENTRYWISE_MAX_FEATURES`` features: the sparse regime, where auto
#: runs Frank-Wolfe).  At n = 5000, d = 2000, a 5-sparse truth and epsilon 1
#: (benchmarks/bench_regimes.py, 5 seeds) the test R^2 median is 0.71 without
#: it, 0.82 / 0.84 / 0.82 with shares 0.3 / 0.4 / 0.5 (LassoCV 0.87).  On
#: diabetes (d = 10, n = 353; frank_wolfe at epsilon 1 to 16) a refit cost 0.2
#: to 0.9 R^2: the Gram release of a few hundred rows is mostly noise, so
#: narrow X keeps refit=0 (docs/solvers/lasso.md).
DEFAULT_REFIT_SHARE = 0.4


def l1_radius_for_alpha(alpha, y_bound):
    """The l1 ball that contains every minimiser of the penalised Lasso objective.

    For ``(1 / (2 n)) ||y - X w - b||^2 + alpha ||w||_1`` with ``|y_i| <= y_bound``,
    the point ``(w, b) = (0, 0)`` has objective at most ``y_bound^2 / 2``, and
    the objective is at least ``alpha ||w||_1``, so every minimiser has
    ``||w||_1 <= y_bound^2 / (2 alpha)``.  (The same holds with the residuals
    clipped, which only lowers the loss.)  Only public numbers are involved:
    constraining the penalised problem to this ball does not change its
    solution, and gives the l1-geometry solvers the bounded domain they need.
    """
    return float(y_bound) ** 2 / (2.0 * float(alpha))


#: The default radius keeps Frank-Wolfe's public excess-risk bound at or below
#: this, in the fit's scaled units (labels divided by their bound: the zero
#: model's risk is at most 1/2).  Measured with benchmarks/bench_regimes.py.
DEFAULT_RADIUS_ERROR_BOUND = 0.35


def default_l1_radius(
    y_bound, feature_bound, n_features, *, n_samples=None, epsilon=math.inf, delta=0.0
):
    """The default l1 radius of DPLasso's constrained form, from public values only.

    The smaller of two radii:

    * the **dense cap** ``sqrt(d) y_bound / feature_bound`` (``d =
      n_features``): the worst-case radius ``y_bound / feature_bound`` (the
      largest l1 norm whose predictions ``|x @ coef| <= ||x||_inf ||coef||_1``
      stay in the label range for every row of the box) times ``sqrt(d)``,
      since typical predictions scale with ``||coef||_2`` and ``||coef||_1 <=
      sqrt(d) ||coef||_2``.  The worst-case radius alone was the limit on
      diabetes (d = 10), whose least-squares solution has 3x its l1 norm;
    * the **noise-level radius**: the largest radius whose Frank-Wolfe
      excess-risk bound (Talwar, Thakurta and Zhang 2015; the bound
      ``frank_wolfe``'s default schedule minimises, which grows with the
      radius: the curvature ``~ radius^2 / T`` and the selection noise ``~
      radius ln(d) / (n eps0)``) stays at :data:`DEFAULT_RADIUS_ERROR_BOUND`
      in units of ``y_bound^2``.  A larger ball only lets the noise of each
      step move the iterate further: with ``d`` in the thousands the dense cap
      is so large that Frank-Wolfe recovered none of a 5-sparse support at
      epsilon 1 (``benchmarks/bench_regimes.py``).  Without ``n_samples``
      (before the row count is released) only the cap applies.

    Parameters
    ----------
    y_bound : float
        The label bound (the fit's scale: 1.0 in scaled units).
    feature_bound : float
        The largest feature bound.
    n_features : int
        The number of features ``d``.
    n_samples : float or None, default=None
        The DP row count that stands in for n (a released value).
    epsilon, delta : float
        The privacy parameters of the solver's share (``inf``: no noise, the
        cap alone).

    Returns
    -------
    float
        The radius, in the units of ``y_bound / feature_bound``.
    """
    d = max(1, int(n_features))
    cap = math.sqrt(d)
    if n_samples is not None and not math.isinf(epsilon):
        cap = _noise_level_radius(float(n_samples), d, float(epsilon), float(delta), cap)
    return cap * float(y_bound) / float(feature_bound)


@memoize(maxsize=256)
def _noise_level_radius(n_samples, d, epsilon, delta, cap):
    """The largest radius in ``(0, cap]`` whose Frank-Wolfe public bound stays at the threshold."""
    from ..solvers._frank_wolfe import fw_public_error_bound

    def excess(radius):
        return fw_public_error_bound(n_samples, d, epsilon, delta, radius)

    if excess(cap) <= DEFAULT_RADIUS_ERROR_BOUND:
        return cap
    lo, hi = cap * 1e-6, cap
    if excess(lo) > DEFAULT_RADIUS_ERROR_BOUND:
        return lo
    # The bound grows with the radius: bisection in log-radius.
    for _ in range(40):
        middle = math.sqrt(lo * hi)
        lo, hi = (middle, hi) if excess(middle) <= DEFAULT_RADIUS_ERROR_BOUND else (lo, middle)
    return lo


def alpha_for_l1_radius(radius, y_bound):
    """The smallest alpha whose penalised solution is guaranteed inside the l1 ball of ``radius``.

    The inverse of :func:`l1_radius_for_alpha`.  The exact Lagrangian
    correspondence between ``radius`` and ``alpha`` depends on the data (it is
    the penalty at which the constrained solution's multiplier equals alpha),
    so it cannot be computed without spending privacy; this data-independent
    map only guarantees that the penalised fit is feasible for the
    constrained problem.
    """
    return float(y_bound) ** 2 / (2.0 * float(radius))


class DPLasso(RegressorMixin, BaseDPEstimator):
    """Lasso (l1-regularised least squares) with differential privacy.

    Two forms, as users of scikit-learn know them:

    * **constrained** (``radius``): minimise ``(1 / (2 n)) ||y - X coef -
      intercept||^2`` over ``||coef||_1 <= radius``;
    * **penalised** (``alpha``, scikit-learn's ``Lasso`` scaling): minimise
      ``(1 / (2 n)) ||y - X coef - intercept||^2 + alpha ||coef||_1``.

    With both, the penalised objective is minimised over the ball.  With
    ``alpha`` alone, solvers that need a bounded domain (all l1-geometry
    solvers) get the ball of radius ``y_bound^2 / (2 alpha)``
    (:func:`l1_radius_for_alpha`), which provably contains the penalised
    solution, so the problem is unchanged and nothing is read from the data;
    solvers for unconstrained penalised problems get no ball.  With neither,
    the radius is :func:`default_l1_radius` (public and released values
    only): the largest ball on which Frank-Wolfe's public error bound at the
    DP row count, ``n_features``, epsilon and delta stays small, at most
    ``sqrt(n_features) y_bound / max(feature_bound)``.  With ``d`` in the
    thousands and a sparse truth it is a fraction of the dense cap: a
    larger ball only lets the noise move the iterate further.

    **Intercept.** The intercept is neither penalised nor part of the l1 ball
    (as in scikit-learn's ``Lasso``): it is constrained to ``|intercept| <=
    y_bound + radius * max(feature_bound)``, an interval that provably contains
    the best intercept for any feasible ``coef`` (the mean residual of clipped
    data lies in it), so the constraint does not change the solution.  It
    does cost privacy: the l1-geometry solvers choose the intercept's
    direction privately too, with a share of the budget (see
    :func:`~sklearn_dp.solvers.frank_wolfe`).  Fit centred labels with
    ``fit_intercept=False`` when a public centre is known.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon in [1e-3, 100]; ``float("inf")`` fits without
        noise (not private, spends nothing, cannot be combined with ``budget``).
        Public scales (bounds, radius, alpha, step sizes) must lie in
        [1e-30, 1e30] (0 is allowed for alpha).
    delta : float, default=1e-5
        Privacy parameter delta in [0, 1).  ``delta=0`` gives pure epsilon-DP
        (Frank-Wolfe solvers); choose delta well below ``1 / n_samples``.
    radius : float or None, default=None
        The l1 radius of the coefficient ball (constrained form).
    alpha : float or None, default=None
        The l1 penalty strength (penalised form), on the ``1 / (2 n)``-scaled loss.
    feature_bound : float, array-like of shape (n_features,) or "auto", default="auto"
        Bound on each feature, ``|X[i, j]| <= feature_bound[j]``; larger
        entries are clipped to it (l1-geometry solvers bound rows entrywise).
        A number is public and free; ``"auto"`` releases one bound on
        ``max_j |X[i, j]|`` privately (10% of epsilon; ``feature_bound_``).
    y_bound : float or "auto", default="auto"
        Bound on the labels.  A number: labels are clipped to
        ``[-y_bound, y_bound]``.  ``"auto"``: a label range is released (15%
        of epsilon, one event: a DP bound ``M`` on ``|y|``, a DP median
        ``y_center_`` among centres within ``M`` and a DP half-width
        ``y_bound_ <= M + |y_center_|``; below 100 released rows times that
        epsilon, one signed magnitude ``[-M, M]``, ``[0, M]`` or ``[-M, 0]``;
        10% for the half-width alone without an intercept).
        Fits run on labels centred and divided by the half-width (and
        coefficients likewise); the results are mapped back.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept through a constant column of value
        ``intercept_scaling``.
    intercept_scaling : float or "auto", default="auto"
        Value of the constant intercept column (part of each row's bounds);
        ``"auto"``: the largest feature bound.
    max_weight : float, default=1.0
        Public bound on the weight of a row: ``sample_weight`` is clipped to
        ``[0, max_weight]`` and every sensitivity of a weighted fit is
        multiplied by ``max_weight``, so the noise grows in proportion
        (``max_weight > 1`` means more noise for the same epsilon).  Unused
        without weights.
    warm_start : bool, default=False
        Start from the previous fit's ``coef_`` and ``intercept_`` (with the
        solvers that take an initial point: ``dp_newton``, ``dp_gd``,
        ``dp_sgd``; the others warn and start cold).  The new fit
        charges ``budget`` what a cold fit charges, but its model carries the
        previous release of the same rows too: ``dp_event_`` and
        ``privacy_spent_`` compose the previous fit's with the new one's.  The previous model must have the
        new fit's number of features (checked before anything is spent).
    solver : str, default="auto"
        ``"frank_wolfe"``, ``"vr_frank_wolfe"``, ``"mirror_descent"``,
        ``"localized_mirror_descent"`` or any registered solver for the
        squared loss with an l1 ball (or, for the penalised form, an L1
        penalty, such as ``"dp_cd"``), and ``"dp_ssp"`` (one release of
        ``X^T X`` and ``X^T y``; both forms, and :meth:`path` for free).
        ``"auto"`` picks ``"dp_ssp"`` with ``delta > 0`` up to 128 features
        (its Gram release gets noisier with the width: with fewer than about
        ``10 d^2`` rows prefer ``"dp_cd"``), beyond that ``"dp_cd"`` for the
        penalised form (``alpha`` without ``radius``, ``delta > 0``), and
        ``"frank_wolfe"`` otherwise: on the user's ``radius`` or on the
        default ball (see docs/solvers/second_order.md and
        docs/solvers/lasso.md for measurements).
    max_iter, learning_rate, batch_size : int, float, int or None
        Passed to solvers that use them (a warning says when one does not).
    clip_norm : float or None, default=None
        Bound on each per-sample gradient in the solver's norm (l-infinity
        for Frank-Wolfe, L2 for mirror descent).  None: residuals are clipped
        at ``2 * y_bound`` without privacy and at ``y_bound`` with it (a Huber
        loss beyond that; identical to the squared loss while the fit's
        residuals stay below it).
    solver_options : dict or None, default=None
        Further solver-specific options (for example ``{"schedule":
        "approximate"}`` for ``vr_frank_wolfe``, ``{"p": 1.5}`` for mirror
        descent).  ``frank_wolfe`` on more than 128 features with ``delta >
        0`` spends, by default, 40% of its zCDP budget on a debiasing refit
        (least squares on the released support from two Gaussian releases,
        inside the same ball and the same ``dp_event_``); ``{"refit": 0.0}``
        turns it off, another share in ``[0, 1)`` replaces it.
    budget : PrivacyBudget or None, default=None
        Shared budget checked before the fit touches the data and charged
        once, atomically, after it succeeds.
    random_state : None or int, default=None
        Source of noise and sampling.  None (for anything you release) keys
        a cryptographically secure generator (ChaCha20) with fresh OS
        entropy at every fit; an int makes fits reproducible, for demos and
        tests only (the seed regenerates the noise; a fit charged to a
        budget keys it with its ledger entry).  A ``Generator`` or
        ``RandomState`` is refused when ``epsilon`` is finite: it would stay
        in the fitted object's parameters and replay its noise
        (docs/randomness.md).
    verbose : int, default=0
        Print progress of long fits to stderr.
    max_group_rows : int or None, default=None
        With ``fit(X, y, groups=...)``: the most rows one group (a person,
        an account) may contribute; each group keeps its first
        ``max_group_rows`` rows in input order and the rest are dropped, and
        the guarantee protects one whole group.  Public: choose it without
        looking at the data.  Ignored without ``groups`` (the guarantee is
        then per row).  See :doc:`/guide/groups`.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    radius_ : float
        The l1 radius the fit used (original units; ``inf`` when the solver
        had no ball).
    intercept_bound_ : float
        The bound on ``|intercept_ - y_center_|`` (original units; 0 without
        intercept).
    feature_bound_ : ndarray of shape (n_features,)
    data_norm_, intercept_scaling_, y_bound_, y_center_ : float
        The bounds the fit used (given or released), as in
        :class:`DPSCORegressor`.
    released_statistics_ : dict
        Only with ``solver="dp_ssp"``: what the fit released (the noisy
        ``X^T X`` repaired to PSD as ``"gram"``, the noisy ``X^T y`` as
        ``"xty"``, the adaptive ``"ridge"``), in the fit's scaled units,
        with the public constants needed to solve again; :meth:`path`
        computes a whole regularisation path from it at no privacy cost.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.
    n_iter_ : int
    solver_ : str
    privacy_spent_ : tuple of (float, float)
    dp_event_ : dp_accounting.DpEvent
    max_group_rows_ : int
        Only after a fit with ``groups=``: the unit of privacy was one group
        of at most this many rows, and ``dp_event_`` and ``privacy_spent_``
        hold under "add or remove one group" (:doc:`/guide/groups`).

    Privacy
    -------
    (epsilon, delta)-DP with respect to adding or removing one row of ``X``
    together with its label.  Public: the number of features, the bounds
    that are given (``feature_bound``, ``y_bound``), ``radius``, ``alpha``
    and every hyper-parameter.  ``"auto"`` bounds are released after the row
    count by pure epsilon-DP exponential mechanisms over public grids (10% of
    epsilon for the feature bound, 15% for the label range, one event: a
    bound on ``|y|``, a centre within it and a half-width, a third each, or
    below 100 released rows times that epsilon one signed magnitude; 10% for
    the half-width alone without an intercept), recorded in
    ``dp_event_`` and used as public values from then on (the default radius
    is then a function of released values: the bounds and the DP row count).
    The number of rows is protected: 5% of epsilon buys a Laplace count that
    stands in for n (averaging, step counts, the radius implied by
    ``alpha`` and the default radius), jointly calibrated with the solver.
    Entries of ``X`` are clipped to ``feature_bound`` and labels to
    ``y_bound``; per-sample gradients are clipped to ``clip_norm`` (its
    default above), so one row moves every noisy quantity by a known
    amount.  Choosing ``radius`` or ``alpha`` by validation on the private data
    leaks beyond this guarantee.
    With ``sample_weight``, one row with its weight is one record (the
    neighbouring relation is unchanged): each row's terms in the released
    sums are multiplied by its weight, clipped to the public ``max_weight``,
    so every sensitivity of the solver is multiplied by ``max_weight`` and
    the noise with it; the row count and the ``"auto"`` bounds are released
    unweighted as before, and averages still divide by the DP row count
    (not by a sum of weights).  The guarantee is the same (epsilon, delta)
    for any weights.
    The spend is reserved on ``budget`` before any private value is read
    (after the public checks of parameters and of the input's schema: shape,
    type, finiteness), and stands if the fit fails afterwards.
    Everything observable (coefficients, ``n_iter_``, every fitted
    attribute, printed progress, warnings, exceptions) is a function of
    public inputs and of the noisy releases only; see
    ``docs/guide/privacy_model.md``.
    With ``fit(..., groups=g)`` the unit is one group instead: the fit is
    (epsilon, delta)-DP with respect to adding or removing one group of at
    most ``max_group_rows`` rows (each group keeps its first
    ``max_group_rows`` rows; every release has ``max_group_rows`` times its
    row sensitivity and noise, and the count is of kept rows).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dp import DPLasso
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(5000, 50))
    >>> y = X[:, 0] - X[:, 1] + 0.1 * rng.normal(size=5000)
    >>> model = DPLasso(epsilon=2.0, radius=2.0, feature_bound=1.0, y_bound=3.0,
    ...                 random_state=0).fit(X, y)
    >>> model.privacy_spent_
    (2.0, 1e-05)
    """

    _parameter_constraints = {
        **BaseDPEstimator._privacy_parameter_constraints,
        "radius": [*public_scale(), None],
        "alpha": [*public_scale(zero=True), None],
        "feature_bound": [*public_scale(), "array-like", StrOptions({"auto"})],
        "y_bound": [*public_scale(), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [*public_scale(), StrOptions({"auto"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_weight": [*public_scale()],
        "warm_start": ["boolean"],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        radius: float | None = None,
        alpha: float | None = None,
        feature_bound: FeatureBound = "auto",
        y_bound: float | Auto = "auto",
        fit_intercept: bool = True,
        intercept_scaling: float | Auto = "auto",
        max_weight: float = 1.0,
        warm_start: bool = False,
        solver: str = "auto",
        max_iter: int | None = None,
        learning_rate: float | None = None,
        batch_size: int | None = None,
        clip_norm: float | None = None,
        solver_options: dict[str, Any] | None = None,
        budget: PrivacyBudget | None = None,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        max_group_rows: int | None = None,
    ) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.radius = radius
        self.alpha = alpha
        self.feature_bound = feature_bound
        self.y_bound = y_bound
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.max_weight = max_weight
        self.warm_start = warm_start
        self.solver = solver
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.batch_size = batch_size
        self.clip_norm = clip_norm
        self.solver_options = solver_options
        self.budget = budget
        self.random_state = random_state
        self.verbose = verbose
        self.max_group_rows = max_group_rows

    # The first entry that fits wins; the registry's support check filters out
    # dp_ssp and dp_cd when delta=0 (they are Gaussian: no pure epsilon-DP mode).
    _auto_preferences = (
        # dp_ssp releases X^T X and X^T y once and solves both forms (and a
        # whole path of alphas) on them: at n = 30000, d = 30 within 0.3
        # points of scikit-learn's R^2, 10x faster than dp_cd and far ahead of
        # Frank-Wolfe (benchmarks/results/speed.md).  Its Gram release gets
        # noisier with the width (the L2 bound feature_bound implies grows as
        # sqrt(d)), so wide X keeps the coordinate-wise solvers.  n_features
        # is public; the row count is not consulted.
        AutoChoice(
            "dp_ssp",
            when=lambda est, problem, public: public.n_features <= AUTO_SSP_ENTRYWISE_MAX_FEATURES,
            why="one release of the sufficient statistics solves every form and a path",
        ),
        # The penalised form (alpha, no radius) is what coordinate descent with
        # an L1 proximal step solves directly; Frank-Wolfe would need the
        # (loose) public ball of radius y_bound^2 / (2 alpha), whose vertices
        # make its steps very noisy.  The constrained form is Frank-Wolfe's.
        # With neither radius nor alpha, wide X is the sparse regime the l1
        # ball is for: Frank-Wolfe on the default ball, whose radius follows
        # the noise level (default_l1_radius).  dp_cd there fits least
        # squares without a ball, which the noise swamps when d is in the
        # thousands (n = 5000, d = 2000, 5-sparse, epsilon 1: R^2 -48 and no
        # true feature among its 5 largest, Frank-Wolfe 0.6 and 5 of 5;
        # benchmarks/bench_regimes.py).
        AutoChoice(
            "dp_cd",
            when=lambda est, problem, public: est.radius is None and est.alpha is not None,
            why="the penalised form, wide X",
        ),
        AutoChoice(
            "frank_wolfe",
            why="the constrained form (a radius or the default ball), or pure epsilon-DP",
        ),
    )

    def _form(self, spec, alpha):
        """``(penalty, constraint)`` of the problem ``spec`` solves (public)."""
        penalty = "l1" if alpha > 0 else None
        if (
            self.radius is None
            and (alpha > 0 or spec.name == "dp_cd")
            and "l1" not in spec.constraints
            and None in spec.constraints
        ):
            # An unconstrained solver of the penalised form (e.g. coordinate
            # descent): no ball; with alpha = 0 least squares without the
            # default ball (dp_cd only: what auto picks when no radius is given;
            # other unconstrained solvers keep refusing the ball-less form).
            return penalty, None
        return penalty, "l1"

    def _solver_form(self, spec, problem):
        # The penalised or constrained form depends on the solver (problem may
        # be None: auto is resolved before the placeholder problem exists).
        penalty, constraint = self._form(spec, 0.0 if self.alpha is None else float(self.alpha))
        return dict(loss="squared", penalty=penalty, multiclass=False, constraint=constraint)

    # -- public constants of the fit (all in the scaled units of the solver) --

    _bounds_labels = True

    @staticmethod
    def _max_feature_bound(bounds):
        entry = bounds.entry_bound
        return float(np.max(entry)) if entry is not None and np.size(entry) else 1.0

    def _scaled_radius(self, spec, bounds):
        """l1 radius for scaled labels (y - center) / scale; None only if the solver needs no ball."""
        scale = bounds.y_scale
        if self.radius is not None:
            return float(self.radius) / scale
        if self.alpha:
            return l1_radius_for_alpha(self.alpha / scale, 1.0)
        return default_l1_radius(
            1.0,
            self._max_feature_bound(bounds),
            self._n_features(),
            n_samples=bounds.n_public,
            epsilon=self._solver_epsilon_floor(spec),
            delta=float(self.delta),
        )

    def _solver_epsilon_floor(self, spec):
        """The least epsilon the solver gets (public): what the count and the "auto" bounds leave.

        The fit's planner may certify a little more by numerical composition;
        the default radius uses this public floor, known before the data.
        """
        epsilon = float(self.epsilon)
        if math.isinf(epsilon):
            return epsilon
        rows, labels = self._bound_request(spec)
        share = 1.0 - COUNT_EPSILON_FRACTION
        if rows:
            share -= BOUNDS_EPSILON_FRACTION
        if labels:
            share -= LABEL_RANGE_EPSILON_FRACTION if labels == "range" else BOUNDS_EPSILON_FRACTION
        return epsilon * share

    def _n_features(self):
        # Public: the width of X (set by the input validation before any spend).
        return int(getattr(self, "n_features_in_", 1))

    def _problem(self, spec, bounds):
        """The fit's problem in the units of labels scaled by ``bounds.y_scale`` (public)."""
        scale = bounds.y_scale
        alpha = 0.0 if self.alpha is None else float(self.alpha) / scale
        penalty, constraint = self._form(spec, alpha)
        radius = None if constraint is None else self._scaled_radius(spec, bounds)
        return FitProblem(
            loss_name="squared",
            make_loss=self._make_loss,
            penalty=penalty,
            alpha=alpha,
            l1_ratio=1.0 if alpha > 0 else 0.0,
            constraint=constraint,
            radius=radius,
        )

    def _check_arguments(self, spec, problem, kwargs, public):
        arguments = super()._check_arguments(spec, problem, kwargs, public)
        if self.y_bound == "auto" and self.radius is not None:
            # A given radius and alpha are compared in the label scale, which
            # is released inside the fit: unknown here (the placeholder
            # scale would refuse or pass the wrong fits).  The
            # Frank-Wolfe solvers warn in the fit instead.
            arguments["alpha"] = None
        return arguments

    def _solver_kwargs(self, spec, problem, bounds=None, quiet=False):
        kwargs = super()._solver_kwargs(spec, problem, bounds, quiet)
        if self.fit_intercept and problem.constraint == "l1":
            if "intercept_bound" not in spec.options:
                raise ValueError(
                    f"DPLasso: solver={spec.name!r} would put the intercept inside the l1 ball; "
                    "use a solver that accepts intercept_bound, or fit_intercept=False."
                )
            kwargs["intercept_bound"] = (
                self._intercept_bound(problem.radius, bounds) / bounds.intercept_scaling
            )
        if spec.name == "frank_wolfe" and "refit" not in (self.solver_options or {}):
            kwargs["refit"] = self._default_refit()
        return kwargs

    def _default_refit(self):
        """``frank_wolfe``'s default ``refit`` share (public: width, epsilon, delta)."""
        private = not math.isinf(float(self.epsilon)) and float(self.delta) > 0
        wide = self._n_features() > AUTO_SSP_ENTRYWISE_MAX_FEATURES
        return DEFAULT_REFIT_SHARE if private and wide else 0.0

    def _intercept_bound(self, radius, bounds):
        """Bound on the intercept in scaled units (labels centred and divided by the label scale).

        The best intercept for any coef in the ball is the mean residual of the
        clipped data, within ``1 + radius * max(feature_bound)``.
        """
        return 1.0 + (radius or 0.0) * self._max_feature_bound(bounds)

    def _make_loss(self, data):
        return get_loss("squared", residual_bound=RESIDUAL_BOUND)

    @restore_on_failure
    def fit(
        self,
        X: MatrixLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        groups: ArrayLike | None = None,
    ) -> DPLasso:
        """Fit the model with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Entries are clipped to ``[-feature_bound, feature_bound]``.
        y : array-like of shape (n_samples,)
            Clipped to the label range (``[-y_bound, y_bound]``, or the
            released range with ``y_bound="auto"``).

        sample_weight : array-like of shape (n_samples,), default=None
            Finite, non-negative weight of each row (private), clipped to
            ``max_weight``; multiplies the row's loss.  A negative, NaN or
            infinite weight, or a wrong length, is an error raised before
            anything is spent (its message shows no weight).  All-zero
            weights are accepted by a private fit (whether all are zero
            depends on every row): it fits zero effective rows, the noise
            alone; ``epsilon=inf`` refuses them, as scikit-learn does.  Needs a solver
            that fits weighted rows (``dp_newton``, ``dp_ssp``, ``dp_gd``,
            ``dp_sgd``, ``objective_perturbation``, ``output_perturbation``).
        groups : array-like of shape (n_samples,), default=None
            The group (person, account, ...) each row belongs to (private;
            scikit-learn's name for it, as in ``GroupKFold``).  With it the
            guarantee is for adding or removing one whole group of at most
            ``max_group_rows`` rows (each group keeps its first
            ``max_group_rows`` rows), and every sensitivity is a group's.
            Needs ``max_group_rows``, and a solver without row sampling
            (``dp_sgd``, ``dp_svrg``, the mirror-descent solvers,
            ``vr_frank_wolfe``, ``resque`` and ``objective_perturbation`` are
            refused before anything is spent).

        Returns
        -------
        self : DPLasso
            The fitted estimator.
        """
        return self._fit(X, y, sample_weight, groups)

    def _fit_request(self, X, y, sample_weight=None):
        self._validate_params()
        self._check_privacy_request()
        X, y = self._validate_fit_data(X, y, y_numeric=True)
        sample_weight = self._check_sample_weight(sample_weight, X)
        initial_point = self._regressor_warm_start(X.shape[1])
        name = self.solver
        if name == "auto":
            name = self._auto_solver(None, self._public_setting(X))
        spec = get_solver(name)
        # Placeholder bounds (1.0 for "auto") describe the problem for the
        # public checks; the fit's problem is rebuilt once they are released.
        placeholder = self._resolve_bounds(spec, X.shape[1])
        problem = self._problem(spec, placeholder)

        def finish(y, bounds):
            y = _dask.map_labels(
                functools.partial(
                    scale_labels,
                    center=bounds.y_center,
                    scale=bounds.y_scale,
                    dtype=np.float32 if np.dtype(X.dtype) == np.float32 else np.float64,
                ),
                y,
            )
            return y, self._problem(spec, bounds)

        def store(data, result, bounds):
            scale = bounds.y_scale
            radius = self._problem(spec, bounds).radius
            coef, intercept = data.split_coef(result.coef)
            # float32 input gives float32 coefficients (as scikit-learn does).
            self.coef_ = self._as_input_dtype(coef.ravel() * scale, X)
            self.intercept_ = self._as_input_dtype(float(intercept[0]) * scale + bounds.y_center, X)
            self.radius_ = math.inf if radius is None else radius * scale
            self.intercept_bound_ = (
                self._intercept_bound(radius, bounds) * scale if self.fit_intercept else 0.0
            )
            statistics = result.info.get("statistics")
            if statistics is not None:
                # Released values and public constants only (see path()).
                self.released_statistics_ = dict(
                    statistics,
                    y_scale=scale,
                    y_center=float(bounds.y_center),
                    intercept_scaling=float(bounds.intercept_scaling),
                    fit_intercept=bool(self.fit_intercept),
                )
            else:
                self.__dict__.pop("released_statistics_", None)

        return FitRequest(
            X,
            y,
            problem,
            store,
            finish=finish,
            sample_weight=sample_weight,
            initial_point=initial_point,
        )

    def path(
        self,
        alphas: ArrayLike | None = None,
        *,
        n_alphas: int = 100,
        eps: float = 1e-3,
        l1_ratio: float = 1.0,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Coefficients for many penalties from the statistics this fit released: no new spend.

        After a fit with ``solver="dp_ssp"`` (the default for up to 128
        features with ``delta > 0``) every least-squares problem on the data
        is post-processing of the released ``X^T X`` and ``X^T y``
        (:attr:`released_statistics_`), so a whole regularisation path, in
        the spirit of :func:`sklearn.linear_model.lasso_path`, costs nothing
        beyond the fit: it reads neither the data nor the budget, and the
        fit's ``privacy_spent_`` covers it.

        Parameters
        ----------
        alphas : array-like of float, optional
            Penalties (scikit-learn's ``Lasso`` scaling, original units of
            ``y``).  Default: ``n_alphas`` values log-spaced from
            ``alpha_max``, the smallest penalty whose solution on the
            released statistics is all zero, down to ``eps * alpha_max``.
        n_alphas : int, default=100
            Number of penalties when ``alphas`` is None.
        eps : float, default=1e-3
            Ratio of the smallest to the largest penalty when ``alphas`` is None.
        l1_ratio : float in (0, 1], default=1.0
            Elastic-net mixing (1: Lasso).

        Returns
        -------
        alphas : ndarray of shape (n_alphas,)
            Sorted in decreasing order, as ``lasso_path`` returns them.
        coefs : ndarray of shape (n_features, n_alphas)
            The coefficients for each penalty (original units).
        intercepts : ndarray of shape (n_alphas,)
            The intercept for each penalty.

        Notes
        -----
        The path is of the penalised form without the fit's ball (a public
        ball only shrinks the noisy solutions; it does not contain the
        unpenalised ones).  Each alpha is solved by coordinate descent from
        the previous solution (warm start).  Choosing an alpha by
        validation on the private training data leaks beyond the fit's
        guarantee, as for any hyper-parameter.
        """
        check_is_fitted(self)
        stats = getattr(self, "released_statistics_", None)
        if stats is None:
            raise ValueError(
                f"DPLasso.path needs the statistics of a fit with solver='dp_ssp'; this fit "
                f"used solver={self.solver_!r}. Refit with solver='dp_ssp' (or 'auto' for up "
                f"to {AUTO_SSP_ENTRYWISE_MAX_FEATURES} features and delta > 0)."
            )
        if not 0.0 < float(l1_ratio) <= 1.0:
            raise ValueError(f"l1_ratio must be in (0, 1], got {l1_ratio!r}.")
        scale = stats["y_scale"]
        Q = (stats["gram"] + stats["ridge"] * np.eye(stats["gram"].shape[0])) / stats["normalizer"]
        c = stats["xty"] / stats["normalizer"]
        penalized = stats["penalized"]
        if alphas is None:
            free = ~penalized
            residual = c.copy()
            if np.any(free):
                # The unpenalised (intercept) fit first: the gradient at that point.
                block = Q[np.ix_(free, free)]
                w_free = np.linalg.lstsq(block, c[free], rcond=None)[0]
                residual = c - Q[:, free] @ w_free
            alpha_max = float(np.max(np.abs(residual[penalized]), initial=0.0)) / float(l1_ratio)
            alpha_max = max(alpha_max, np.finfo(float).tiny) * scale
            alphas = np.geomspace(alpha_max, alpha_max * float(eps), int(n_alphas))
        alphas = np.sort(np.asarray(alphas, dtype=float).ravel())[::-1]
        if alphas.size == 0 or not np.all(np.isfinite(alphas)) or np.any(alphas < 0):
            raise ValueError("alphas must be finite floats >= 0.")
        m = Q.shape[0]
        coefs = np.zeros((m, alphas.size))
        w = np.zeros(m)
        for k, alpha in enumerate(alphas):
            w, _ = solve_statistics(
                stats["gram"],
                stats["xty"],
                normalizer=stats["normalizer"],
                ridge=stats["ridge"],
                alpha=alpha / scale,
                l1_ratio=float(l1_ratio),
                penalized=penalized,
                coef_init=w,
                force_iterative=True,
            )
            coefs[:, k] = w
        if stats["fit_intercept"]:
            intercepts = coefs[-1] * stats["intercept_scaling"] * scale
            coefs = coefs[:-1]
        else:
            intercepts = np.zeros(alphas.size)
        # Labels were fitted centred on the released (or given) centre.
        return alphas, coefs * scale, intercepts + stats["y_center"]

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Predicted values ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict (public: costs nothing).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted values.
        """
        if _dask.is_dask_input(X):
            return _dask.map_rows(self, "predict", X)  # lazy, chunk by chunk
        check_is_fitted(self)
        X = self._validate_predict_data(X)
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.regressor_tags.poor_score = not math.isinf(self.epsilon)
        tags.non_deterministic = self.random_state is None and not math.isinf(self.epsilon)
        return tags
