"""Differentially private logistic regression."""

from __future__ import annotations

import functools
import math
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from scipy.special import expit, log_softmax, softmax
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .. import _dask
from .._labels import label_set_count
from .._losses import get_loss
from .._public_errors import public_error
from .._sklearn_compat import Interval, StrOptions
from ..solvers import AutoChoice
from ..solvers._nystrom import AUTO_NEWTON_MAX_COLUMNS
from ..solvers._second_order import second_order_fits
from ._base import (
    BaseDPEstimator,
    FitProblem,
    FitRequest,
    _given,
    penalty_strengths,
    public_scale,
    release_labels,
    restore_on_failure,
)
from ._inference import InferenceMixin

if TYPE_CHECKING:
    from .._typing import ArrayLike, Auto, FeatureBound, MatrixLike, RandomStateLike
    from ..budget import PrivacyBudget

__all__ = ["DPLogisticRegression"]


class DPLogisticRegression(InferenceMixin, ClassifierMixin, BaseDPEstimator):
    """Logistic regression (binary or multinomial) with differential privacy.

    Minimises ``C * sum_i log_loss(x_i, y_i) + penalty(coef)`` (the objective of
    scikit-learn's ``LogisticRegression``, ``||coef||^2 / 2`` for the default L2
    penalty; the intercept is not penalised) with a differentially private
    optimiser chosen by ``solver``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy parameter epsilon in [1e-3, 100] (beyond 100 a guarantee says
        nothing).  ``float("inf")`` runs the same solver without noise: the
        result is not private and spends nothing (it cannot be combined with
        ``budget``).  Public scales (bounds, radius, C, step sizes) must lie
        in [1e-30, 1e30].
    delta : float, default=1e-5
        Privacy parameter delta in [0, 1); choose it well below ``1 / n_samples``.
        ``delta=0`` (pure epsilon-DP) needs a solver with a pure mode.
    penalty : {"l2", "l1", "elasticnet"} or None, default="l2"
        As in scikit-learn.  ``None`` fits the unpenalised objective (not
        strongly convex: slower and noisier; prefer a finite ``C``).  Each
        solver supports some penalties; an unsupported one is refused with
        the list of solvers that take it.
    C : float, default=1.0
        Inverse regularisation strength, as in scikit-learn.  On the average
        loss the penalty strength is ``1 / (C * n_samples)``.
    l1_ratio : float in [0, 1] or None, default=None
        Elastic-net mixing (``penalty="elasticnet"`` only), as in scikit-learn.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept through a constant column of value
        ``intercept_scaling`` (part of each row's norm bound).
    intercept_scaling : float or "auto", default="auto"
        Value of the constant intercept column (part of each row's bound).
        ``"auto"``: the rows' bound (``data_norm_``, or the largest feature
        bound), so that the intercept is on the scale of the features.
    radius : float or None, default=None
        Constrain the coefficient vector (the intercept included, in units of
        ``intercept_scaling``; all classes jointly) to the ball of this radius
        in the ``constraint`` norm.  Public.  Needed by ``dp_accmd``; the
        gradient-descent solvers project onto the L2 ball.
    constraint : {"l2", "l1"}, default="l2"
        Norm of the constraint ball (used only with ``radius``).
    data_norm : float or "auto", default="auto"
        Bound on the L2 norm of each row of ``X``.  Rows that are longer are
        scaled down to it before fitting (clipped, not rejected), so no row
        can raise the sensitivity.  A number is public knowledge (for
        example ``sqrt(n_features)`` after mapping documented ranges to
        [-1, 1]) and costs nothing.  ``"auto"`` estimates it privately: 10%
        of epsilon (of what the label set leaves) buys an exponential
        mechanism over the public grid 1e-8..1e8 (see
        ``docs/guide/choosing_parameters.md``); the result is ``data_norm_``.
        Never compute it from the data yourself.
    feature_bound : float, array-like of shape (n_features,), "auto" or None, default="auto"
        Bound on each feature, ``|X[i, j]| <= feature_bound[j]`` (larger
        entries are clipped), used by the solvers that bound rows entrywise
        (``dp_cd``).  A number (or one per feature) is public knowledge and
        costs nothing; ``"auto"`` releases one bound on ``max_j |X[i, j]|``
        privately when such a solver runs (10% of epsilon, see
        ``data_norm``); None refuses those solvers.  A given bound also
        bounds the rows in L2 for the other solvers when ``data_norm`` is
        ``"auto"`` (then nothing is released).
    feature_scaling : bool or "auto", default="auto"
        Fit in per-feature standardised units, with each feature's location
        and scale released privately (a share of epsilon split over the
        features), and report ``coef_`` and ``intercept_`` in the caller's
        units, as a DP scaler followed by this model would, in one fit and
        one ledger entry.  Used only while the rows' bound is ``"auto"``
        (``data_norm``, or ``feature_bound`` for the solvers that bound rows
        entrywise). ``"auto"`` first releases a Laplace count (2% of epsilon) of
        the rows holding an entry beyond 10^1.5 in absolute value, and scales
        only if that count is at least a quarter of the released row count
        (columns in natural units, e.g. an income in dollars): already-scaled
        and 0/1 columns keep one bound for all features, and the scales
        they were charged for are not released.  ``True``
        scales whenever there are enough rows per feature; ``False`` never.
        From 100 features on (with centres), the scales come from three
        vector releases over all features, whose noise grows with
        ``sqrt(d)``.  Helps on features of very different scales and enough
        rows per feature; on few rows and many features the per-feature releases
        cost more than they give, and the fit keeps one bound (``True``
        warns; see ``docs/guide/choosing_parameters.md``).  The released
        values are ``feature_center_`` and ``feature_scale_``; the model is
        fitted on the rows clipped to ``feature_bound_`` and, in
        standardised units, scaled to the released row bound, and
        predictions bound rows the same way.
    classes : array-like or None, default=None
        The public set of labels.  With ``classes`` given (recommended), labels
        outside it raise an error before anything is spent, and classes
        absent from ``y`` are still part of the model.  If None, the label set
        is released privately: 20% of epsilon (at least 0.14, at most 40%)
        and half of delta buy noisy counts of the labels (labels held by few
        rows are likely left out, and their rows with them: about ``3 /
        epsilon_labels`` rows or fewer for small integer labels, ``1 +
        log(1 / delta) / epsilon_labels`` for others); it needs ``delta > 0``.
    class_weight : dict or None, default=None
        Public weights of the classes, ``{label: weight}`` (labels not in
        the dict weigh 1), as in scikit-learn: each row's weight is its
        class's weight times its ``sample_weight``, clipped to
        ``max_weight``.  Every class weight must lie in ``[0, max_weight]``
        (checked before anything is spent).  ``"balanced"`` is refused: it
        needs the class counts, which are private (pass weights from public
        knowledge of the class frequencies instead).  Needs a solver that
        fits weighted rows (``dp_newton``, ``dp_gd``, ``dp_sgd``,
        ``objective_perturbation``, ``output_perturbation``).
    max_weight : float, default=1.0
        Public bound on the weight of a row (``sample_weight`` times its
        class weight): weights are clipped to ``[0, max_weight]`` and every
        sensitivity of a weighted fit is multiplied by ``max_weight``, so
        the noise grows in proportion (``max_weight > 1`` means more noise
        for the same epsilon).  Unused without weights.
    warm_start : bool, default=False
        Start from the previous fit's ``coef_`` and ``intercept_`` (with the
        solvers that take an initial point: ``dp_newton``, ``dp_gd``,
        ``dp_sgd``; the others warn and start cold).  The new fit
        charges ``budget`` what a cold fit charges, but its model carries the
        previous release of the same rows too: ``dp_event_`` and
        ``privacy_spent_`` compose the previous fit's with the new one's.  The previous model must
        have the new fit's shape (checked before anything is spent); when
        the label set is released privately and differs from the previous
        ``classes_``, the fit starts cold.  A ``coef_`` and ``intercept_``
        set by hand are a public starting point (nothing to compose); their
        rows stand for ``classes``, which must then be given.
    solver : str, default="auto"
        ``"dp_newton"`` (private Newton-type steps: noisy gradients with a
        noisy Gram matrix or Hessian as curvature; see
        docs/solvers/second_order.md), ``"dp_gd"`` (full-batch noisy gradient
        descent), ``"dp_sgd"``
        (Poisson-subsampled DP-SGD), ``"dp_cd"`` (DP coordinate descent with
        uniform, importance, block, tau-nice or full sampling; needs
        ``feature_bound``; its options go in ``solver_options``, see
        :func:`sklearn_dp.solvers.dp_cd`), ``"objective_perturbation"`` or
        ``"output_perturbation"`` (exact solve of the L2-penalised problem with
        the intercept penalised too; pure epsilon-DP with ``delta=0``),
        ``"dp_svrg"`` (noisy proximal SVRG; needs an L2 penalty),
        ``"dp_svrg_pp"`` (noisy proximal SVRG++; L1, L2, elastic-net or no
        penalty) or ``"dp_accmd"`` (accelerated mirror descent over the ball of
        ``radius``; ``penalty=None``); see docs/solvers/erm_revisited.md.
        ``"auto"`` picks ``objective_perturbation`` when ``delta=0``,
        ``dp_accmd`` for an L1-ball constraint, for the ``"l1"`` and
        ``"elasticnet"`` penalties ``dp_cd`` (``dp_svrg_pp`` when no
        ``feature_bound`` is given, which dp_cd needs), otherwise ``dp_newton``
        on dense X up to 256 columns (features plus intercept), ``dp_nystrom``
        on sparse X or beyond, without ``radius``, and ``dp_gd`` with an L2
        ball (never a function of the private row count: the number of
        features is public).
    max_iter : int or None, default=None
        Number of noisy steps (for ``dp_cd``: passes over the coordinates; for
        ``dp_svrg`` and ``dp_svrg_pp``: epochs); None uses the solver's default
        (100 steps for ``dp_gd``; 10 expected passes at sampling rate 0.1 for
        ``dp_sgd``; 6 and 5 epochs for ``dp_svrg`` and ``dp_svrg_pp``).
    learning_rate : float or None, default=None
        Step size; None uses ``1 / L``, the objective's smoothness computed
        from the rows' bound.
    batch_size : int or None, default=None
        Expected batch size of ``dp_sgd`` (and of the inner steps of
        ``dp_svrg`` / ``dp_svrg_pp``), turned into a sampling rate with the
        private row count's DP stand-in; None uses the rate 0.1 (``dp_sgd``) or
        ``1 / sqrt(n)`` (the SVRG solvers).
    clip_norm : float or None, default=None
        Per-sample gradient clip, at most the loss's own bound ``data_norm``
        (times sqrt(2) for the multinomial loss, with the intercept column
        included); None clips at half that bound when private.
    solver_options : dict or None, default=None
        Further solver-specific options (see each solver's documentation).
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
    feature_center_, feature_scale_ : ndarray of shape (n_features,)
        When the fit scaled its features (``feature_scaling=True``, or
        ``"auto"`` on features far from the unit scale): the released
        centres and scales the fit standardised the features with (``feature_bound_`` is then the
        released entrywise clip of the raw values, and ``data_norm_`` its L2
        norm).  Absent when the fit kept one bound for all features.
    classes_ : ndarray of shape (n_classes,)
    data_norm_ : float
        The L2 bound on the rows of ``X`` the fit used (given, released, or
        implied by the feature bounds).
    feature_bound_ : ndarray of shape (n_features,) or None
        The entrywise bound, when the rows were bounded entrywise.
    intercept_scaling_ : float
        The value of the intercept column.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string column names.
    n_iter_ : int
        Noisy steps taken.
    solver_ : str
        The solver actually used.
    privacy_spent_ : tuple of (float, float)
        The (epsilon, delta) this fit guarantees; ``(inf, 0.0)`` without noise.
    dp_event_ : dp_accounting.DpEvent
        The whole fit as a mechanism (add/remove-one neighbouring); recompute
        its epsilon with ``sklearn_dp.accounting.epsilon_of_event``.
    max_group_rows_ : int
        Only after a fit with ``groups=``: the unit of privacy was one group
        of at most this many rows, and ``dp_event_`` and ``privacy_spent_``
        hold under "add or remove one group" (:doc:`/guide/groups`).
    bse_, coef_covariance_, interval_center_ : ndarray
        Only after a fit with ``solver_options={"inference": True}`` (solver
        ``dp_newton``, two classes): standard errors, covariance and the centre of
        the confidence intervals of :meth:`conf_int`, the intercept first,
        covering sampling and privacy noise (``docs/guide/inference.md``).

    Privacy
    -------
    The fit is (epsilon, delta)-differentially private with respect to adding
    or removing one row of ``X`` together with its label.  Public (assumed
    known to an adversary, and not protected): the number of features,
    ``data_norm`` and ``feature_bound`` when given, ``radius``, ``classes``
    (when given) and every hyper-parameter.  With ``"auto"`` bounds, the
    bound the solver needs is released by a pure epsilon-DP exponential
    mechanism (monotone utility of sensitivity 1 over a public grid; 10% of
    epsilon; ``PureEpsilonDpEvent`` in ``dp_event_``), after the row count
    and before the solver, which uses it as a public value; it is composed
    with the count and the solver numerically.  Without ``classes`` the label set is
    released from noisy counts (20% of epsilon, at least 0.14 and at most
    40%, and half of delta; an ``ApproximateDpEvent`` in ``dp_event_``): a
    Laplace histogram over the public candidate labels ``-1..31`` of a
    numeric ``y`` and a thresholded histogram of the other labels
    (:func:`sklearn_dp._labels.release_labels`), and labels held by few rows
    are left out with their rows.
    The number of rows is protected: 5% of epsilon buys a Laplace count of
    the rows, which stands in for n wherever n would be used (averaging,
    ``1 / (C n)``, sampling rates), jointly calibrated with the solver.
    Without ``classes`` there is no such release: the label set's noisy
    counts (released with it) sum to the count of the rows fitted.
    Rows are clipped to ``data_norm``; for the logistic loss the per-sample
    gradient is then bounded by ``data_norm`` (by ``sqrt(2) * data_norm`` for
    the multinomial loss, one joint mechanism over all classes, not a split
    of epsilon), with the intercept column included in the row norm.  With
    ``solver="dp_cd"`` each entry is clipped to ``feature_bound`` instead, and
    the gradients restricted to each drawn block are clipped per sample to a
    share of the clip set by the public bounds.  Noise is calibrated
    numerically (see :mod:`sklearn_dp.accounting`).  Choosing
    hyper-parameters (including epsilon) by validation score on the private
    data leaks beyond this guarantee.
    With ``sample_weight`` or ``class_weight``, one row with its weight is
    one record (the neighbouring relation is unchanged): each row's terms in
    the released sums are multiplied by its weight, clipped to the public
    ``max_weight``, so every sensitivity of the solver is multiplied by
    ``max_weight`` and the noise with it; the row count, the label set and
    the ``"auto"`` bounds are released unweighted as before, and averages
    still divide by the DP row count (not by a sum of weights).  The
    guarantee is the same (epsilon, delta) for any weights.
    The spend is reserved on ``budget`` before any private value is read
    (after the public checks of parameters and of the input's schema: shape,
    type, finiteness, labels in ``classes``), and stands if the fit fails afterwards.
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
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_dp import DPLogisticRegression
    >>> X, y = make_classification(n_samples=2000, random_state=0)
    >>> clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    >>> clf.privacy_spent_
    (1.0, 1e-05)
    >>> bool(clf.data_norm_ > 1)   # released privately ("auto")
    True
    """

    _parameter_constraints = {
        **BaseDPEstimator._privacy_parameter_constraints,
        "penalty": [StrOptions({"l2", "l1", "elasticnet"}), None],
        "C": [*public_scale()],
        "l1_ratio": [Interval(Real, 0, 1, closed="both"), None],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [*public_scale(), StrOptions({"auto"})],
        "radius": [*public_scale(), None],
        "constraint": [StrOptions({"l2", "l1"})],
        "data_norm": [*public_scale(), StrOptions({"auto"})],
        "feature_bound": [*public_scale(), "array-like", StrOptions({"auto"}), None],
        "feature_scaling": ["boolean", StrOptions({"auto"})],
        "classes": ["array-like", None],
        "class_weight": [dict, StrOptions({"balanced"}), None],
        "max_weight": [*public_scale()],
        "warm_start": ["boolean"],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        *,
        penalty: Literal["l2", "l1", "elasticnet"] | None = "l2",
        C: float = 1.0,
        l1_ratio: float | None = None,
        fit_intercept: bool = True,
        intercept_scaling: float | Auto = "auto",
        radius: float | None = None,
        constraint: Literal["l2", "l1"] = "l2",
        data_norm: float | Auto = "auto",
        feature_bound: FeatureBound = "auto",
        feature_scaling: bool | str = "auto",
        classes: ArrayLike | None = None,
        class_weight: dict[Any, float] | None = None,
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
        self.penalty = penalty
        self.C = C
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.radius = radius
        self.constraint = constraint
        self.data_norm = data_norm
        self.feature_bound = feature_bound
        self.feature_scaling = feature_scaling
        self.classes = classes
        self.class_weight = class_weight
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

    # Classifiers clip rows tighter than regressors (see sklearn_dp._bounds).
    _row_window = "CLASSIFIER_ROW_WINDOW"
    # A bound far below the rows costs a classifier little (clipping keeps
    # the rows' directions), one far above them its signal: no lean.
    _lean_row_bound = False

    # Not a function of n anywhere: the chosen solver is released (solver_)
    # and the row count is private, so a size threshold would leak at its edge.
    _auto_preferences = (
        AutoChoice(
            "objective_perturbation",
            when=lambda est, problem, public: est.delta == 0,
            why="only the perturbation solvers give pure epsilon-DP",
        ),
        AutoChoice(
            "dp_accmd",
            when=lambda est, problem, public: problem.constraint == "l1",
            why="the one solver here for an l1-ball constraint on log-loss",
        ),
        AutoChoice(
            "dp_newton",
            when=lambda est, problem, public: (
                second_order_fits(public, AUTO_NEWTON_MAX_COLUMNS) and not public.sparse
            ),
            why="one Gram matrix and five accelerated steps: as accurate as dp_gd's 100 "
            "steps or more and 10-20x faster (benchmarks/results/speed.md), up to the "
            "width where its d x d Gram matrix costs more than dp_nystrom's sketch",
        ),
        AutoChoice(
            "dp_nystrom",
            why="sparse X, or beyond dp_newton's width: a rank-16 sketch of the Gram matrix "
            "and ten steps; dense 1e5 x 1001 at 0.8x lbfgs where dp_gd took 5.4x, CSR 1e5 x 999 "
            "at 2x where dp_newton took 10x, both more accurate (docs/solvers/nystrom.md)",
        ),
        AutoChoice("dp_gd", why="L2 penalty or none in an L2 ball"),
        AutoChoice(
            "dp_cd",
            when=lambda est, problem, public: _given(est.feature_bound),
            why="L1 / elastic-net penalties when the user gives entrywise feature bounds",
        ),
        AutoChoice(
            "dp_svrg_pp",
            why="L1 / elastic-net penalties on L2-bounded rows (the DP-ERM revisited solvers "
            "do not beat dp_gd elsewhere: docs/solvers/erm_revisited.md)",
        ),
    )

    def _public_classes(self):
        """The public ``classes`` checked without ``y`` (Dask input), or None."""
        if self.classes is None:
            return None
        if np.ndim(self.classes) != 1:
            raise ValueError(f"classes must be a 1-d list of labels; got classes={self.classes!r}.")
        try:
            classes = np.unique(np.asarray(self.classes))
        except TypeError:
            raise ValueError(
                "DPLogisticRegression: the labels in classes must be of one comparable type."
            ) from None
        if classes.size < 2:
            raise ValueError(
                f"DPLogisticRegression needs at least 2 classes; got classes={classes.tolist()}. "
                "Pass the full public label set."
            )
        return classes

    def _check_labels(self, y):
        """Schema checks of the labels (before any spend); the public classes, or None.

        These reveal only whether ``y`` is well-formed: discrete labels of one
        type and, with ``classes`` given, all in it.
        """
        # Messages name the public classes, never labels read from y (private).
        try:
            # scikit-learn casts float labels to int to tell classes from
            # continuous targets: huge labels overflow the cast (silenced;
            # they are then refused as continuous or as unknown classes).
            with np.errstate(invalid="ignore", over="ignore"):
                check_classification_targets(y)
            if self.classes is None:
                return None
            if np.ndim(self.classes) != 1:
                raise ValueError(
                    f"classes must be a 1-d list of labels; got classes={self.classes!r}."
                )
            classes = np.unique(np.asarray(self.classes))
            unknown = np.setdiff1d(np.unique(y), classes)
        except TypeError:
            raise ValueError(
                "DPLogisticRegression: the labels in y (and classes) must be of one comparable "
                "type, all numbers or all strings; y mixes types or does not match the type of "
                "classes."
            ) from None
        if unknown.size:
            raise ValueError(
                f"y contains labels that are not in classes={classes.tolist()}. Fix the "
                "labels or pass the full public label set."
            )
        if classes.size < 2:
            raise ValueError(
                f"DPLogisticRegression needs at least 2 classes; got classes={classes.tolist()}. "
                "Pass the full public label set."
            )
        return classes

    @staticmethod
    def _encode(y, classes):
        indices = np.searchsorted(classes, y)
        if classes.size == 2:
            # +-1 in float32 (exact): half the memory of a float64 label vector.
            labels = np.full(indices.shape, -1.0, dtype=np.float32)
            labels[indices == 1] = 1.0
            return labels
        return indices

    def _problem(self, n_classes):
        multiclass = n_classes > 2
        # scikit-learn's C * sum(loss) + penalty is, on the average loss, a
        # penalty of strength 1 / (C n); n is the fit's public stand-in (at
        # least one row: a non-private fit on zero rows has n = 0).
        alpha, l1_ratio = penalty_strengths(self.penalty, 1.0, self.l1_ratio)
        inverse_C = alpha / self.C
        return FitProblem(
            loss_name="log_loss",
            make_loss=lambda data: get_loss("log_loss", n_classes=n_classes),
            penalty=self.penalty,
            alpha=lambda n_public: inverse_C / max(n_public, 1.0),
            l1_ratio=l1_ratio,
            n_outputs=n_classes if multiclass else 1,
            multiclass=multiclass,
            constraint=None if self.radius is None else self.constraint,
            radius=self.radius,
        )

    def _check_class_weight(self, classes):
        """The public class weights as a dict, or None; refused before any spend."""
        class_weight = self.class_weight
        if class_weight is None:
            return None
        if isinstance(class_weight, str):
            raise ValueError(
                "DPLogisticRegression: class_weight='balanced' needs the number of rows of "
                "each class, which is private (releasing it would need its own share of "
                "epsilon). Pass class_weight={label: weight, ...} with public weights (for "
                "example from publicly known class frequencies), each at most max_weight."
            )
        max_weight = float(self.max_weight)
        for label, weight in class_weight.items():
            if not isinstance(weight, Real) or not (0 <= weight <= max_weight):
                raise ValueError(
                    f"DPLogisticRegression: class_weight[{label!r}]={weight!r}; class weights "
                    f"must be numbers in [0, max_weight={max_weight:g}] (raise max_weight, "
                    "which scales the noise, or rescale the weights)."
                )
        if classes is not None:
            unknown = [label for label in class_weight if label not in set(classes.tolist())]
            if unknown:
                raise ValueError(
                    f"DPLogisticRegression: class_weight has labels {unknown!r} that are not "
                    f"in classes={classes.tolist()}."
                )
        return dict(class_weight)

    @restore_on_failure
    def fit(
        self,
        X: MatrixLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        groups: ArrayLike | None = None,
    ) -> DPLogisticRegression:
        """Fit the model with differential privacy.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows longer than the row bound (L2) are scaled down to it.
        y : array-like of shape (n_samples,)
            Labels; with ``classes`` given, rows whose label is not in it are
            an error raised before anything is spent.
        sample_weight : array-like of shape (n_samples,), default=None
            Finite, non-negative weight of each row (private), clipped to
            ``max_weight``; multiplies the row's loss.  A negative, NaN or
            infinite weight, or a wrong length, is an error raised before
            anything is spent (its message shows no weight).  All-zero
            weights are accepted by a private fit (whether all are zero
            depends on every row): it fits zero effective rows, the noise
            alone; ``epsilon=inf`` refuses them, as scikit-learn does.  Needs a solver
            that fits weighted rows (see ``class_weight``).
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
        self : DPLogisticRegression
            The fitted estimator.

        Raises
        ------
        BudgetExceededError
            If ``budget`` cannot afford this fit; raised before the data is
            read, with nothing spent and the estimator unchanged.
        """
        return self._fit(X, y, sample_weight, groups)

    def _fit_request(self, X, y, sample_weight=None):
        self._validate_params()
        self._check_privacy_request()
        dask_input = _dask.is_dask_input(X, y)
        if dask_input:
            # Lazy Dask arrays: the schema and label checks in one pass.
            classes = self._public_classes()
            X, y = _dask.validate_fit_data(
                self, X, y, y_numeric=False, classes=classes, classification=True
            )
        else:
            X, y = self._validate_fit_data(X, y, y_numeric=False)
            classes = self._check_labels(y)
        sample_weight = self._check_sample_weight(sample_weight, X)
        class_weight = self._check_class_weight(classes)
        if classes is None and (self.solver_options or {}).get("inference"):
            # Without public classes the number of outputs is known only after
            # the label-set release: refuse now rather than after the spend.
            raise ValueError(
                "DPLogisticRegression: solver_options={'inference': True} gives intervals "
                "for two classes, and the number of classes must be public before the "
                "spend: pass classes=[label_0, label_1]."
            )
        weighted = sample_weight is not None or class_weight is not None
        if dask_input and weighted:
            # Before the reservation: weighted fits need in-memory data.
            _dask.refuse_weights(type(self).__name__)
        previous = None
        if self.warm_start and hasattr(self, "coef_"):
            if "classes_" not in vars(self):
                # A coef_ set by hand (a public starting point): its rows stand
                # for the public label set.
                if classes is None:
                    raise ValueError(
                        "DPLogisticRegression: warm_start=True with a coef_ set by hand needs "
                        "classes=[...], the public label set its rows stand for (a fitted "
                        "model has classes_). Pass classes=, or set warm_start=False."
                    )
                self.classes_ = classes.copy()
            n_outputs = None
            if classes is not None:
                n_outputs = 1 if classes.size == 2 else classes.size
                if not np.array_equal(np.asarray(self.classes_), classes):
                    raise ValueError(
                        "DPLogisticRegression: warm_start=True reuses the previous model, "
                        f"fitted on classes_={np.asarray(self.classes_).tolist()}, but this "
                        f"fit has classes={classes.tolist()}. Set warm_start=False."
                    )
            previous = self._warm_start_model(X.shape[1], n_outputs)
            previous_classes = np.asarray(self.classes_).copy()
        released = {}

        def encode(y, classes):
            if dask_input:
                dtype = np.float64 if classes.size == 2 else np.intp
                return _dask.map_labels(
                    functools.partial(self._encode, classes=classes), y, dtype=dtype
                )
            return self._encode(y, classes)

        def weigh(y, found, phase):
            # Public class weights become per-row weights (inside the private phase).
            if class_weight is not None:
                factors = np.array([float(class_weight.get(c, 1.0)) for c in found.tolist()])
                row_factors = factors[np.searchsorted(found, y)]
                phase.sample_weight = (
                    row_factors
                    if phase.sample_weight is None
                    else row_factors * phase.sample_weight
                )

        def prepare(X, y, phase):
            if classes is not None:
                released["classes"] = classes
                weigh(y, classes, phase)
                return X, encode(y, classes), self._problem(classes.size)
            if math.isinf(self.epsilon):
                found = _dask.label_histogram(y)[0] if dask_input else np.unique(y)
            else:
                found, phase.label_event, phase.label_threshold, counts = release_labels(
                    y, phase.label_epsilon, phase.label_delta, phase.rng, with_counts=True
                )
                # The fit's row count: the rows kept below are those of the
                # released labels, whose noisy counts are part of the release.
                phase.label_count = label_set_count(counts, phase.label_epsilon)
                phase.label_counts = (found, counts)
            if found.size < 2:
                raise public_error(
                    ValueError(
                        "DPLogisticRegression needs at least 2 classes: at most one class "
                        "passed the private release of the label set (labels held by few rows "
                        "are not released). Pass classes=[...], the public label set."
                    )
                )
            released["classes"] = found
            if dask_input:
                # The same per-row rule, lazily.
                X, y = _dask.filter_rows(X, y, found)
                return X, encode(y, found), self._problem(found.size)
            keep = np.isin(y, found)
            if not np.all(keep):
                # Rows whose label was not released take no part in the fit
                # (a per-row rule: neighbours stay neighbours).
                X, y = X[keep], y[keep]
                if phase.sample_weight is not None:
                    phase.sample_weight = phase.sample_weight[keep]
            weigh(y, found, phase)
            return X, self._encode(y, found), self._problem(found.size)

        def initial_point(bounds, problem):
            # The previous released model in the new fit's units (post-processing).
            if previous is None or not np.array_equal(previous_classes, released["classes"]):
                return None
            coef, intercept = previous
            if coef.shape[0] != problem.n_outputs:
                return None
            W = coef.T
            if self.fit_intercept:
                W = np.vstack([W, intercept[None, :] / bounds.intercept_scaling])
            return W

        def store(data, result, bounds):
            self.classes_ = released["classes"]
            coef, intercept = data.split_coef(result.coef)
            # float32 input gives float32 coefficients (as scikit-learn does).
            self.coef_ = coef.astype(X.dtype, copy=False)
            self.intercept_ = np.asarray(intercept).astype(X.dtype, copy=False)
            units = [1.0] * (result.coef.shape[0] - int(self.fit_intercept))
            if self.fit_intercept:
                units.append(float(data.intercept_scaling))
            self._store_inference(result, units, self.fit_intercept)

        n_classes = 2 if classes is None else classes.size
        return FitRequest(
            X,
            y,
            self._problem(n_classes),
            store,
            prepare=prepare,
            discover_labels=classes is None,
            sample_weight=sample_weight,
            weighted=weighted,
            initial_point=None if previous is None else initial_point,
        )

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Scores ``X @ coef_.T + intercept_``; 1-d for two classes (positive: ``classes_[1]``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict (public: costs nothing).

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
            The scores.
        """
        if _dask.is_dask_input(X):
            return _dask.map_rows(self, "decision_function", X)  # lazy, chunk by chunk
        check_is_fitted(self)
        X = self._validate_predict_data(X)
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X: MatrixLike) -> np.ndarray:
        """Most likely class of each row.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict (public: costs nothing).

        Returns
        -------
        ndarray of shape (n_samples,)
            The predicted classes.
        """
        if _dask.is_dask_input(X):
            return _dask.map_rows(self, "predict", X)  # lazy, chunk by chunk
        scores = self.decision_function(X)
        indices = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[indices]

    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Class probabilities, columns in the order of ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict (public: costs nothing).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The probability of each class.
        """
        if _dask.is_dask_input(X):
            return _dask.map_rows(self, "predict_proba", X)  # lazy, chunk by chunk
        scores = self.decision_function(X)
        if scores.ndim == 1:
            positive = expit(scores)
            return np.column_stack([1.0 - positive, positive])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X: MatrixLike) -> np.ndarray:
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to predict (public: costs nothing).

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
            The log-probability of each class.
        """
        if _dask.is_dask_input(X):
            return _dask.map_rows(self, "predict_log_proba", X)  # lazy, chunk by chunk
        scores = self.decision_function(X)
        if scores.ndim == 1:
            scores = np.column_stack([np.zeros_like(scores), scores])
        return log_softmax(scores, axis=1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.non_deterministic = self.random_state is None and not math.isinf(self.epsilon)
        return tags
