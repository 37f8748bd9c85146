"""Private hyper-parameter search: DPGridSearchCV and DPRandomizedSearchCV.

A search on private data releases the scores it compares and the choice it
makes.  These searches release only the result of a private selection
(Liu and Talwar 2019; Papernot and Steinke 2022):

1. *Public phase.*  Validate the parameters, the candidates and the input's
   schema; plan every candidate's mechanism from public inputs (its
   ``FitPlan``, from the input's schema; a Pipeline's DP steps' plans
   composed); find the largest
   per-run epsilon whose search event meets the requested guarantee.
2. *Reservation.*  Reserve the search's exact spend on the budget (and the
   refit's, if any) before any private value is read.
3. *Private phase.*  Split the rows into training and validation parts by a
   draw per row; release the validation row count once; draw the number of
   runs ``K`` (truncated negative binomial or Poisson); each run trains a
   uniformly drawn candidate on the training part (``budget=None``: its cost
   is inside the search's event) and releases its validation score with
   the Laplace mechanism; the best run is selected (with the default
   candidate in the grid, only if it beats that candidate's own run by a
   public margin).  Nothing but the
   selected run leaves this phase: not ``K``, not which candidates ran, not
   the other scores, not the runs' warnings or errors.
4. *Refit* (optional): one more private fit, of the selected candidate on
   all rows, with its own share of the guarantee and its own ledger entry.
"""

from __future__ import annotations

import copy
import math
import sys
import time
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.metrics import get_scorer
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .. import _noise, _random
from .._protocol import (
    FitPlan,
    PrivatePhase,
    check_group_options,
    check_group_solver,
    check_groups,
    kept_group_rows,
    reserve,
    warn_unused_group_bound,
)
from .._saving import SavedWithoutLedger, keep_entries
from .._sklearn_compat import HasMethods, Interval, StrOptions
from ..accounting import ApproximateDpEvent
from ..budget import PrivacyBudget
from ..linear_model._base import (
    MAX_EPSILON,
    MIN_EPSILON,
    restore_on_failure,
)
from ._pipeline import (
    candidate_model,
    check_target,
    configure,
    final_estimator,
    final_prefix,
    fit_event,
    fit_target,
    released,
)
from ._planning import (
    plan_selection,
    search_shares,
    stand_in,
)
from ._runs import release_label_set, results_table, score_range, select
from ._search_checks import check_candidates, record_unit, search_budget, search_scoring

if TYPE_CHECKING:
    from .._typing import ArrayLike, MatrixLike, RandomStateLike


__all__ = ["DPGridSearchCV", "DPRandomizedSearchCV"]


#: Scores the searches can release: per-row terms with a public range.
SCORINGS = ("accuracy", "neg_mean_absolute_error", "neg_mean_squared_error")


def _delegate(method):
    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, method)
        return hasattr(self.estimator, method)

    return check


class BaseDPSearchCV(SavedWithoutLedger, MetaEstimatorMixin, BaseEstimator):
    """What DPGridSearchCV and DPRandomizedSearchCV share (see their docstrings)."""

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "epsilon": [Interval(Real, MIN_EPSILON, MAX_EPSILON, closed="both")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "budget": [PrivacyBudget, None],
        "n_candidates": [Interval(Real, 1, 1e4, closed="both")],
        "distribution": [StrOptions({"truncated_negative_binomial", "poisson"})],
        "shape": [Interval(Real, 0, 1e3, closed="both")],
        "scoring": [StrOptions(set(SCORINGS)), None],
        "score_bound": [Interval(Real, 1e-30, 1e30, closed="both"), None],
        "validation_fraction": [Interval(Real, 0.01, 0.99, closed="both")],
        "score_fraction": [Interval(Real, 0.01, 0.99, closed="both")],
        "refit": ["boolean"],
        "refit_fraction": [Interval(Real, 0.01, 0.99, closed="both")],
        "prefer_default": ["boolean"],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
        "max_group_rows": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(
        self,
        estimator: BaseEstimator,
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        budget: PrivacyBudget | None = None,
        n_candidates: float = 10,
        distribution: Literal[
            "truncated_negative_binomial", "poisson"
        ] = "truncated_negative_binomial",
        shape: float = 1.0,
        scoring: str | None = None,
        score_bound: float | None = None,
        validation_fraction: float = 0.3,
        score_fraction: float = 0.25,
        refit: bool = True,
        refit_fraction: float = 0.9,
        prefer_default: bool = True,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        max_group_rows: int | None = None,
    ) -> None:
        self.estimator = estimator
        self.epsilon = epsilon
        self.delta = delta
        self.budget = budget
        self.n_candidates = n_candidates
        self.distribution = distribution
        self.shape = shape
        self.scoring = scoring
        self.score_bound = score_bound
        self.validation_fraction = validation_fraction
        self.score_fraction = score_fraction
        self.refit = refit
        self.refit_fraction = refit_fraction
        self.prefer_default = prefer_default
        self.random_state = random_state
        self.verbose = verbose
        self.max_group_rows = max_group_rows

    # -- public checks ---------------------------------------------------------

    def _candidates(self, rng):  # pragma: no cover - interface
        raise NotImplementedError

    def _check_estimator(self):
        check_target(self.estimator, type(self).__name__)

    # -- fit ----------------------------------------------------------------------

    @restore_on_failure
    def fit(self, X: MatrixLike, y: ArrayLike, groups: ArrayLike | None = None) -> BaseDPSearchCV:
        """Select a candidate privately (and refit it, if ``refit``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        groups : array-like of shape (n_samples,), default=None
            The group (person, account, ...) each row belongs to (private).
            With it the whole search protects one group of at most
            ``max_group_rows`` rows: each group keeps its first
            ``max_group_rows`` rows, draws its part (training or validation)
            as a whole, as scikit-learn's group-aware splitters do, and every
            run, score and the refit are fitted at group level.  Needs
            ``max_group_rows`` and candidates whose solvers support groups.

        Returns
        -------
        self

        Raises
        ------
        BudgetExceededError
            If ``budget`` cannot afford the search and its refit; raised
            before the data is read, with nothing spent.
        """
        self._validate_params()
        name = type(self).__name__
        _random.check_random_state(self.random_state, private=True, owner=name)
        self._check_estimator()
        # The candidates (a public output) come from their own stream of the
        # seed; the private phase uses the others.
        rng = _random.fit_generator(self.random_state, private=True, owner=name)
        (candidate_rng, split_rng, schedule_rng, count_rng, run_seeds, refit_rng, label_rng) = (
            _random.split(rng, 7)
        )
        candidates = self._candidates(candidate_rng)
        check_candidates(self, candidates)
        scoring, bound = search_scoring(self)
        low, high = score_range(scoring, bound)
        budget = search_budget(self)
        if budget is not None and budget.composition != "basic":
            raise ValueError(
                f"{name}: the budget uses composition={budget.composition!r}, and private "
                "selection has no zCDP bound (its Renyi-DP curve is not linear in the order). "
                "Use a budget with composition='basic' (zCDP is the default for delta > 0): "
                "PrivacyBudget(epsilon, delta, composition='basic')."
            )
        # Schema checks of the input (public: whether it is well-formed).
        # A Pipeline's input is validated as its final estimator validates its own.
        validator = clone(final_estimator(self.estimator)).set_params(budget=None)
        X, y = validator._validate_fit_data(X, y, y_numeric=not is_classifier(validator))
        group_rows = None
        if groups is None:
            warn_unused_group_bound(self.max_group_rows, name)
        else:
            groups = check_groups(groups, X.shape[0], self.max_group_rows, name)
            group_rows = int(self.max_group_rows)
        classes = validator._check_labels(y) if is_classifier(validator) else None
        discover_labels = is_classifier(validator) and classes is None
        # With classes=None the search first releases the label set (a
        # thresholded noisy histogram, as the estimators do) with a share of
        # the guarantee; the runs and the refit then get it as public.  The
        # release is part of the selection's ledger entry.
        label, count, runs, (epsilon_refit, delta_refit) = search_shares(self, discover_labels)
        label_epsilon, label_delta = label
        epsilon_selection = label[0] + count[0] + runs[0]
        delta_selection = label[1] + count[1] + runs[1]
        classes_parameter = f"{final_prefix(self.estimator)}classes"
        # A placeholder label set for planning.
        fixed = {classes_parameter: [0, 1]} if discover_labels else {}
        X_public, y_public = stand_in(X, [0, 1] if discover_labels else classes)
        plan = plan_selection(
            self, candidates, X_public, y_public, count[0] + runs[0], runs[1], fixed, count[0]
        )
        if group_rows is not None:
            for solver in sorted(set(plan.solvers)):
                check_group_solver(solver, name)
            base = self.estimator.get_params(deep=True)
            for candidate in candidates:
                for key, value in {**base, **candidate}.items():
                    if key.split("__")[-1] == "solver_options" and isinstance(value, dict):
                        check_group_options(value, name)
        label_event = (
            ApproximateDpEvent(label_epsilon, label_delta, "label set") if discover_labels else None
        )
        selection_event = (
            dpe.ComposedDpEvent([label_event, plan.event]) if discover_labels else plan.event
        )
        if self.verbose:
            print(
                f"[{name}] {len(candidates)} candidates, {float(self.n_candidates):g} runs on "
                f"average ({self._distribution_name()}); each run: fit at epsilon="
                f"{plan.fit_epsilon:.4g}, score with {plan.score_mechanism} noise of "
                f"multiplier {plan.score_noise_multiplier:.4g}; "
                f"selection (epsilon={epsilon_selection:.4g}, delta={delta_selection:.3g})"
                + (
                    ""
                    if plan.default_index is None
                    else f"; default candidate {candidates[plan.default_index]} kept unless "
                    "the best run's score sum beats its own by "
                    f"{plan.evidence_threshold * 0.5 * (high - low):.4g}"
                )
                + (
                    f", refit (epsilon={epsilon_refit:.4g}, delta={delta_refit:.3g})"
                    if self.refit
                    else ""
                ),
                file=sys.stdout,
            )

        # Charge before touching: the selection and the refit are reserved
        # before the first read of a private value.
        plans = [
            FitPlan(
                owner=name,
                solver="+".join(sorted(set(plan.solvers))),
                options={},
                epsilon=epsilon_selection,
                delta=delta_selection,
                private=True,
                shares={"labels": label, "count": count, "runs": runs},
                event=selection_event,
                max_group_rows=group_rows,
            )
        ]
        if self.refit:
            # The refit's own entry; its event is known once it has run.
            plans.append(
                FitPlan(
                    owner=f"{name}.refit",
                    solver=None,
                    options={},
                    epsilon=epsilon_refit,
                    delta=delta_refit,
                    private=True,
                    shares={},
                    max_group_rows=group_rows,
                )
            )
        reservation = refit_reservation = None
        if budget is not None:
            budget.check(
                epsilon_selection + epsilon_refit,
                delta_selection + delta_refit,
                unit="row" if group_rows is None else "group",
            )
            reservation, *refit = reserve(budget, plans)
            refit_reservation = refit[0] if refit else None
            if self.random_state is not None:
                # A seeded search would draw the same split, runs and noise as
                # every other search with that seed: key its private streams
                # on its ledger entry.
                charged = _random.fit_generator(
                    self.random_state, private=True, reservation=reservation, owner=name
                )
                (split_rng, schedule_rng, count_rng, run_seeds, refit_rng, label_rng) = (
                    _random.split(charged, 6)
                )

        try:
            with PrivatePhase(name, reservation, max_group_rows=group_rows) as phase:
                if group_rows is not None:
                    # Each group's first max_group_rows rows; every release of
                    # the selection (runs included) protects one group.
                    keep = kept_group_rows(groups, group_rows)
                    if keep is not None:
                        X, y, groups = X[keep], y[keep], groups[keep]
                if discover_labels:
                    X, y, labels, groups = release_label_set(
                        name, X, y, label_epsilon, label_delta, label_rng, groups=groups
                    )
                    fixed = {classes_parameter: labels}
                best = select(
                    self,
                    candidates,
                    plan,
                    X,
                    y,
                    scoring,
                    bound,
                    (low, high),
                    fixed,
                    split_rng,
                    schedule_rng,
                    count_rng,
                    run_seeds,
                    groups=groups,
                )
                phase.event = selection_event
        except BaseException as exc:
            if refit_reservation is not None:
                # The refit never ran; its entry stays charged, marked failed.
                refit_reservation.fail(exc)
            raise
        index, model, noisy_sum, noisy_count = best
        middle = 0.5 * (low + high)
        score = float(np.clip(middle + noisy_sum / max(1.0, noisy_count), low, high))

        self.best_index_ = int(index)
        self.best_params_ = dict(candidates[index])
        self.best_score_ = score
        # The noise on best_score_ (public plan over the released count).
        spread = plan.score_noise_multiplier * 0.5 * (high - low)
        if plan.score_mechanism == "laplace":
            spread *= math.sqrt(2.0)
        self.best_score_noise_ = float(spread / max(1.0, noisy_count))
        self.scorer_ = scoring
        self.score_bound_ = bound
        self.multimetric_ = False
        self.n_splits_ = 1
        self.cv_results_ = results_table(candidates, index, score)
        self.selection_dp_event_ = selection_event
        self.selection_privacy_spent_ = (float(epsilon_selection), float(delta_selection))
        self.run_epsilon_ = float(plan.fit_epsilon)
        self.n_features_in_ = int(X.shape[1])

        if self.refit:
            refit_model = configure(
                candidate_model(self.estimator, {**candidates[index], **fixed}),
                epsilon_refit,
                delta_refit,
                refit_rng,
                quiet=False,
            )
            refit_start = time.perf_counter()
            # An ordinary private fit: its own private phase withholds what
            # must be withheld, and its warnings and public errors (functions
            # of its own releases) reach the caller.  Its entry was reserved
            # above; it is settled here.
            try:
                # At group level: X holds at most max_group_rows rows per group.
                with _noise.contribution_bound(group_rows):
                    fit_target(refit_model, X, y, f"{name}.refit")
            except BaseException as exc:
                if refit_reservation is not None:
                    refit_reservation.fail(exc)
                raise
            refit_event = fit_event(refit_model)
            if refit_reservation is not None:
                refit_reservation.complete(refit_event)
            self.refit_time_ = time.perf_counter() - refit_start
            self.best_estimator_ = released(refit_model, self.estimator)
            self.dp_event_ = dpe.ComposedDpEvent([selection_event, refit_event])
        else:
            # The selected run's model is part of the selection's output.
            self.best_estimator_ = released(model, self.estimator)
            self.dp_event_ = selection_event
        self.privacy_spent_ = (
            float(epsilon_selection + epsilon_refit),
            float(delta_selection + delta_refit),
        )
        keep_entries(self, [reservation, refit_reservation])
        record_unit(self, group_rows)
        if self.verbose:
            print(
                f"[{name}] selected {self.best_params_} (noisy validation {scoring}: "
                f"{self.best_score_:.4g}); spent epsilon={self.privacy_spent_[0]:.4g}, "
                f"delta={self.privacy_spent_[1]:.3g}",
                file=sys.stdout,
            )
        return self

    def _distribution_name(self):
        if self.distribution == "poisson":
            return "Poisson"
        return f"truncated negative binomial, shape {float(self.shape):g}"

    # -- delegation --------------------------------------------------------------

    @property
    def classes_(self) -> np.ndarray:
        """Class labels of the selected estimator (classifiers)."""
        check_is_fitted(self)
        return self.best_estimator_.classes_

    @available_if(_delegate("predict"))
    def predict(self, X: MatrixLike) -> np.ndarray:
        """Predict with the selected (refitted) estimator."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X: MatrixLike) -> np.ndarray:
        """Class probabilities of the selected (refitted) estimator."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_delegate("predict_log_proba"))
    def predict_log_proba(self, X: MatrixLike) -> np.ndarray:
        """Log class probabilities of the selected (refitted) estimator."""
        check_is_fitted(self)
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Decision function of the selected (refitted) estimator."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    def score(self, X: MatrixLike, y: ArrayLike) -> float:
        """The search's scoring (unclipped) of the selected estimator on ``(X, y)``.

        Evaluating on rows is a further use of them: on private rows, the
        result is not covered by the search's guarantee.
        """
        check_is_fitted(self)
        scoring = self.scorer_
        return float(get_scorer(scoring)(self.best_estimator_, X, y))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = copy.deepcopy(inner.classifier_tags)
        tags.regressor_tags = copy.deepcopy(inner.regressor_tags)
        tags.input_tags.sparse = inner.input_tags.sparse
        tags.non_deterministic = self.random_state is None
        return tags


_SHARED_DOC = """
    Parameters
    ----------
    estimator : sklearn_dp estimator or Pipeline
        ``DPLogisticRegression``, ``DPSCORegressor`` or ``DPLasso``, or a
        ``Pipeline`` ending in one whose other steps are DP transformers
        (``DPStandardScaler``, ``DPMinMaxScaler``) and public row-wise steps
        (``PublicRangeScaler``, ``RowWiseTransformer``, the scikit-learn
        steps :func:`sklearn_dp.privacy_spent` vouches for, checked with
        their parameters); anything else is refused before any spend.  The
        DP steps' ``epsilon``, ``delta``, ``budget``, ``random_state`` and
        ``verbose`` are set by the search: each fit of a Pipeline divides its
        share among its DP steps in proportion to the epsilons (and deltas)
        set on them.  ``X`` is validated as the final estimator validates
        it.  A classifier with ``classes=None`` has its label set released
        once by the search (a thresholded noisy histogram with 20% of
        epsilon and half of delta, as the estimators do; see
        ``docs/guide/privacy_model.md``); ``classes=[...]`` costs nothing.
    {space}
    epsilon : float, default=1.0
        Total epsilon of the search and its refit, in [1e-3, 100].
    delta : float, default=1e-5
        Total delta, in (0, 1): Renyi-DP selection needs delta > 0.
    budget : PrivacyBudget or None, default=None
        Charged with one entry for the selection (with the label release,
        if any) and one for the refit,
        reserved together before any private value is read.  Default: the
        estimator's budget, if it has one.  A ``composition="zcdp"`` budget
        refuses the search (its selection event has no zCDP bound).
    n_candidates : float, default=10
        Mean number of candidate runs ``K`` (at least 1).  ``K`` is random
        and secret (see Privacy); each run trains one candidate drawn
        uniformly from the {what}.
    distribution : {{"truncated_negative_binomial", "poisson"}}, default="truncated_negative_binomial"
        Distribution of ``K``.
    shape : float, default=1.0
        Shape of the truncated negative binomial (1: geometric, 0:
        logarithmic).  Smaller shapes cost less privacy and try fewer
        candidates (Papernot and Steinke 2022, Fig. 2).
    scoring : {{"accuracy", "neg_mean_absolute_error", "neg_mean_squared_error"}} or None
        The validation score: a sum of per-row terms with a public range.
        Default ``"accuracy"`` for classifiers, ``"neg_mean_absolute_error"``
        for regressors.
    score_bound : float or None, default=None
        Regression scores: per-row absolute errors are clipped at this public
        bound (squared errors at its square).  Default ``2 * y_bound`` of the
        estimator, when it is a number (with ``y_bound="auto"``, the default,
        pass ``score_bound``).
    validation_fraction : float, default=0.3
        Probability that a row is drawn into the validation part.
    score_fraction : float, default=0.25
        Used only when no candidate has a full-data Gaussian part (``dp_sgd``
        alone): the score is then paid for with this share of each run's
        epsilon.  Otherwise the score costs nothing on top of the fit (see
        Notes).
    refit : bool, default=True
        Refit the selected candidate on all rows, with its own share of the
        guarantee.  With False, ``best_estimator_`` is the selected run's
        model (trained on the training part only) and the whole guarantee
        goes to the selection.
    refit_fraction : float, default=0.9
        Share of the guarantee for the refit (with ``refit=True``), after the
        label release if any; the selection (validation row count and runs)
        gets the rest.  The selection only has to tell good candidates from
        bad ones, and the refit is the model you keep:
        ``benchmarks/bench_search.py`` measures the trade-off (0.9 beat 0.5
        on every data set there, 120 to 1437 training rows, where a run's
        score is mostly noise; lower it on large data sets whose candidates
        differ, where the selection is cheap).
    prefer_default : bool, default=True
        When the {what} holds the candidate the estimator fits as given
        (each parameter at the estimator's own value, or at the value that
        plans the same fit when the estimator leaves it to ``None``, such
        as ``max_iter`` at the solver's default number of steps), run it
        once more and select the best run only if its noisy score beats the
        default's by more than the best of ``K`` runs of equal candidates
        would with probability 1%; else select the default candidate.  The
        extra run is part of the selection's event.  False: the best run,
        whatever its margin.
    random_state : None or int, default=None
        Source of the split, of ``K``, of the candidates drawn and of all
        noise.  None (for anything you release): a cryptographically secure
        generator keyed with fresh OS entropy; an int: a reproducible demo
        (the seed is as secret as the noise it draws; a search charged to a
        budget keys it with its ledger entry).  ``Generator`` and
        ``RandomState`` objects are refused (docs/randomness.md).
    verbose : int, default=0
        Print the public plan and the released result (never a run).
    max_group_rows : int or None, default=None
        With ``fit(X, y, groups=...)``: the most rows one group (a person,
        an account) may contribute; each group keeps its first
        ``max_group_rows`` rows in input order, and the whole search
        protects one group.  Public.  Ignored without ``groups``.  See
        :doc:`/guide/groups`.

    Attributes
    ----------
    best_params_ : dict
        Parameters of the selected candidate.
    best_index_ : int
        Its index in ``cv_results_["params"]``.
    best_score_ : float
        Its noisy validation score: the selected run's noisy score sum over
        the noisy validation row count, clipped to the score's range.  It is
        the largest of the runs' noisy scores, so it is optimistic (by one or
        two times ``best_score_noise_`` with ten runs); it ranks nothing.
    best_score_noise_ : float
        Standard deviation of the noise on ``best_score_`` (in score units,
        from the public plan and the released count).
    best_estimator_ : estimator
        The refit (or, with ``refit=False``, the selected run's model).
    cv_results_ : dict of arrays
        ``params`` and ``param_<name>`` for every candidate of the {what},
        ``mean_test_score`` (NaN except the selected candidate),
        ``std_test_score`` (NaN), ``rank_test_score`` (1 for the selected
        candidate, 2 for the others: they are not ranked) and ``selected``.
        Which candidates ran, how often and their scores are not released.
    scorer_ : str
        The scoring used.
    score_bound_ : float or None
    run_epsilon_ : float
        The epsilon each run's candidate is fitted at, from the public plan.
    privacy_spent_ : tuple of float
        ``(epsilon, delta)`` of the selection and the refit together (basic
        composition of the two ledger entries).
    dp_event_ : dp_accounting.DpEvent
        ``ComposedDpEvent([selection_dp_event_, refit])`` with a refit, else
        ``selection_dp_event_``; ``refit`` is ``best_estimator_.dp_event_``
        (for a Pipeline, its DP steps' events composed, in order).
    max_group_rows_ : int
        Only after a fit with ``groups=``: the unit of privacy was one group
        of at most this many rows, and ``dp_event_`` and ``privacy_spent_``
        hold under "add or remove one group" (:doc:`/guide/groups`).
    selection_dp_event_ : dp_accounting.DpEvent
        The selection: ``ComposedDpEvent([LaplaceDpEvent(count),
        RepeatAndSelectDpEvent(run, n_candidates, shape)])``, which
        dp_accounting's RDP accountant recomputes to at most
        ``selection_privacy_spent_``; with ``classes=None``, preceded by the
        label release's ``ApproximateDpEvent`` (basic composition: subtract
        its epsilon and delta first).
    selection_privacy_spent_ : tuple of float
        ``(epsilon, delta)`` of the selection's ledger entry.
    n_features_in_ : int
    classes_ : ndarray
        The selected estimator's classes (classifiers).
    refit_time_ : float
        Seconds the refit took (it does not depend on the number of runs).
        The selection's time is not recorded: it grows with the number of
        runs (see Privacy).
    n_splits_ : int
        1: one row-wise train/validation split.
    multimetric_ : bool
        False.

    Notes
    -----
    Each run draws one candidate uniformly, fits it on the training part at
    ``(run_epsilon_, delta of the runs)`` with ``budget=None`` and releases
    its validation score sum ``sum_i (s_i - m)`` plus noise, where ``s_i``
    is the per-row score clipped to the public range ``[a, b]`` and
    ``m = (a + b) / 2``: each term lies in ``[-(b - a) / 2, (b - a) / 2]``,
    so the sum has add/remove sensitivity ``(b - a) / 2`` (0.5 for
    accuracy).  Centring halves the noise against an uncentred count, and
    ranks runs exactly as the mean does, because every run is scored on the
    same validation rows.

    The guarantee is split by basic composition: 20% of epsilon (at least
    0.14, at most 40%) and half of delta for the label set (``classes=None``
    only), ``refit_fraction`` of the rest for the refit, and the remainder
    for the selection: the validation row count (5% of the rest, at most a
    fifth of the selection's part) and the runs.  The per-run epsilon is the largest for
    which ``ComposedDpEvent([Laplace(count), RepeatAndSelect(run,
    n_candidates, shape)])`` (followed by ``run``, the default candidate's
    own run, with ``prefer_default``) meets the selection's share under
    dp_accounting's RDP accountant.  The default candidate's run is kept
    unless the best run's noisy score sum exceeds its own by more than
    ``t`` times the score's noise, where ``t`` is the 99% quantile of
    ``max(Z_1, ..., Z_K) - Z_0`` for independent draws ``Z`` of the noise
    and ``K`` drawn as the runs are: a public margin, compared with released
    scores.  One run is accounted as the candidate
    fits that no other dominates at every order (a grid over ``C``, or over
    ``dp_gd``'s number of steps, pays for one fit; ``dp_gd`` beside
    ``dp_sgd`` pays for both, a pessimistic bound on their mixture); the
    score adds nothing when the candidates have a full-data Gaussian part
    (its Gaussian noise has that part's multiplier, and a row is in either
    the training or the validation part), else it is paid for with Laplace
    noise at ``score_fraction`` of the run.

    Privacy
    -------
    Under add/remove-one neighbouring, the whole search (label release,
    selection and refit) is ``(epsilon, delta)``-DP: the selection is
    ``selection_privacy_spent_``-DP by Papernot and Steinke (2022, Theorems 2
    and 6) as implemented by dp_accounting's ``RepeatAndSelectDpEvent``,
    composed with the label release by basic composition; the refit is an
    ordinary fit at its share; the two compose by basic composition (the
    budget's own rule).  The selection's argument needs: the rows split by a
    draw per row (:class:`RowwiseKFold`'s rule), so one added row lands in
    one part and both parts stay neighbours (a run then costs the larger of
    its fit's and its score's divergence); each run an independent draw of
    the same randomised mechanism (a uniformly drawn candidate, whose Renyi
    divergence is at most the largest of the candidates', by joint
    quasi-convexity); every run's mechanism known before the data is read
    (each candidate's planned event; a run whose fit reports another
    mechanism outputs nothing); and only the best run released.

    A searched Pipeline is one mechanism per fit: its DP steps, each planned
    from public inputs at its part of the fit's share, run on the same rows
    one after the other (adaptive composition; the event composes them), and
    its public steps read nothing but the input's schema (the allow-list of
    :func:`sklearn_dp.privacy_spent`).  The public steps' fits and the
    transforms of private rows run in a private phase of their own: nothing
    they raise or warn escapes.  ``privacy_spent(best_estimator_)`` reports
    the refit's share only; ``privacy_spent_`` covers the whole search.

    The default candidate's run (``prefer_default``) is one more run of a
    candidate fixed before the data is read, composed with the repeated
    runs in the selection's event; whether the best run replaces it is a
    comparison of the two released noisy scores with a margin computed
    from the public plan.

    What is public: the candidates, the estimator's public settings (a
    Pipeline's steps and their parameters), the
    plan (per-run epsilons, the default candidate and its margin), the
    schema of the input.  What is released:
    the selected candidate, its noisy score, the selected run's model (or
    the refit), the noisy validation row count (through ``best_score_``).
    What stays secret: the number of runs ``K`` (publishing it with the
    selection breaks the bound, which comes from ``K`` being random and
    unseen), which candidates ran, their scores and models, the split.  No
    run prints, warns or raises: a failed run outputs nothing.  The wall
    clock of ``fit`` grows with ``K``: the search does not record it, and
    timing must stay out of what an adversary sees.  The row count is never
    used for a public decision (the parts are drawn per row).

    With ``fit(X, y, groups=g)`` the unit is one group instead: the search
    is (epsilon, delta)-DP with respect to adding or removing one group of
    at most ``max_group_rows`` rows.  Each group keeps its first
    ``max_group_rows`` rows and draws its part as a whole (so one group
    lands in one part), every release of the selection and of the refit has
    ``max_group_rows`` times its row sensitivity and noise, and candidates
    whose solvers sample rows are refused before the spend.
"""


class DPGridSearchCV(BaseDPSearchCV):
    __doc__ = (
        """Differentially private search over a parameter grid (private selection).

    Each of a random number of runs trains a uniformly drawn candidate of
    the grid privately on a training part of the rows and scores it with a
    noisy validation score on the disjoint validation part; only the best
    run is released (Liu and Talwar 2019; Papernot and Steinke 2022).  The
    selected candidate is then refitted on all rows (``refit=True``).  One
    ledger entry for the selection and one for the refit.
"""
        + _SHARED_DOC.format(
            space="""param_grid : dict or list of dicts
        The candidates, as for ``GridSearchCV``.""",
            what="grid",
        )
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dp import DPLogisticRegression, PrivacyBudget
    >>> from sklearn_dp.model_selection import DPGridSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / 2
    >>> y = (X[:, 0] + 0.1 * rng.normal(size=2000) > 0).astype(int)
    >>> budget = PrivacyBudget(2.0, 1e-5, composition="basic")
    >>> search = DPGridSearchCV(
    ...     DPLogisticRegression(classes=[0, 1]), {"C": [0.1, 1.0, 10.0]},
    ...     epsilon=2.0, delta=1e-5, budget=budget, random_state=0,
    ... ).fit(X, y)
    >>> sorted(search.best_params_)
    ['C']
    >>> len(budget.ledger), search.privacy_spent_
    (2, (2.0, 1e-05))
    """
    )

    _parameter_constraints = {
        **BaseDPSearchCV._parameter_constraints,
        "param_grid": [dict, list],
    }

    def __init__(
        self,
        estimator: BaseEstimator,
        param_grid: dict[str, Any] | list[dict[str, Any]],
        *,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        budget: PrivacyBudget | None = None,
        n_candidates: float = 10,
        distribution: Literal[
            "truncated_negative_binomial", "poisson"
        ] = "truncated_negative_binomial",
        shape: float = 1.0,
        scoring: str | None = None,
        score_bound: float | None = None,
        validation_fraction: float = 0.3,
        score_fraction: float = 0.25,
        refit: bool = True,
        refit_fraction: float = 0.9,
        prefer_default: bool = True,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        max_group_rows: int | None = None,
    ) -> None:
        super().__init__(
            estimator,
            epsilon=epsilon,
            delta=delta,
            budget=budget,
            n_candidates=n_candidates,
            distribution=distribution,
            shape=shape,
            scoring=scoring,
            score_bound=score_bound,
            validation_fraction=validation_fraction,
            score_fraction=score_fraction,
            refit=refit,
            refit_fraction=refit_fraction,
            prefer_default=prefer_default,
            random_state=random_state,
            verbose=verbose,
            max_group_rows=max_group_rows,
        )
        self.param_grid = param_grid

    def _candidates(self, rng):
        return [dict(params) for params in ParameterGrid(self.param_grid)]


class DPRandomizedSearchCV(BaseDPSearchCV):
    __doc__ = (
        """Differentially private randomized search (private selection).

    Draws ``n_iter`` candidates from ``param_distributions`` with public
    randomness (before any data is read, like ``RandomizedSearchCV``), then
    selects among them privately exactly as :class:`DPGridSearchCV` does.
"""
        + _SHARED_DOC.format(
            space="""param_distributions : dict or list of dicts
        As for ``RandomizedSearchCV``: lists are sampled uniformly,
        distributions with an ``rvs`` method are sampled.
    n_iter : int, default=10
        Number of candidates drawn (the candidate set; the number of runs
        is ``n_candidates`` on average).""",
            what="drawn candidates",
        )
        + """
    Examples
    --------
    >>> import numpy as np
    >>> from scipy.stats import loguniform
    >>> from sklearn_dp import DPLogisticRegression
    >>> from sklearn_dp.model_selection import DPRandomizedSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(2000, 3)) / 2
    >>> y = (X[:, 0] > 0).astype(int)
    >>> search = DPRandomizedSearchCV(
    ...     DPLogisticRegression(classes=[0, 1]), {"C": loguniform(0.01, 100)},
    ...     n_iter=5, epsilon=2.0, random_state=0,
    ... ).fit(X, y)
    >>> len(search.cv_results_["params"])
    5
    """
    )

    _parameter_constraints = {
        **BaseDPSearchCV._parameter_constraints,
        "param_distributions": [dict, list],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        estimator: BaseEstimator,
        param_distributions: dict[str, Any] | list[dict[str, Any]],
        *,
        n_iter: int = 10,
        epsilon: float = 1.0,
        delta: float = 1e-5,
        budget: PrivacyBudget | None = None,
        n_candidates: float = 10,
        distribution: Literal[
            "truncated_negative_binomial", "poisson"
        ] = "truncated_negative_binomial",
        shape: float = 1.0,
        scoring: str | None = None,
        score_bound: float | None = None,
        validation_fraction: float = 0.3,
        score_fraction: float = 0.25,
        refit: bool = True,
        refit_fraction: float = 0.9,
        prefer_default: bool = True,
        random_state: RandomStateLike = None,
        verbose: int = 0,
        max_group_rows: int | None = None,
    ) -> None:
        super().__init__(
            estimator,
            epsilon=epsilon,
            delta=delta,
            budget=budget,
            n_candidates=n_candidates,
            distribution=distribution,
            shape=shape,
            scoring=scoring,
            score_bound=score_bound,
            validation_fraction=validation_fraction,
            score_fraction=score_fraction,
            refit=refit,
            refit_fraction=refit_fraction,
            prefer_default=prefer_default,
            random_state=random_state,
            verbose=verbose,
            max_group_rows=max_group_rows,
        )
        self.param_distributions = param_distributions
        self.n_iter = n_iter

    def _candidates(self, rng):
        # Public randomness, drawn before the data, from the seed's own stream
        # for candidates (the private phase draws from the other streams).
        seed = np.random.RandomState(int(rng.integers(2**32)))
        sampler = ParameterSampler(self.param_distributions, self.n_iter, random_state=seed)
        return [dict(params) for params in sampler]
