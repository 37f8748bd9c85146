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
   public margin; on tables too small for the runs to beat that margin, as
   the released count shows, no run is made and the default is refitted
   with what the count leaves, the two composed numerically).  Nothing but the
   selected run leaves this phase: not ``K``, not which candidates ran, not
   the other scores, not the runs' warnings or errors.
4. *Refit* (optional): one more private fit, of the selected candidate on
   all rows, with its own share of the guarantee, in the search's one
   ledger entry.
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
from .._composition import vouch
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
from .._public_errors import public_error
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
    plan_skip,
    search_shares,
    stand_in,
)
from ._runs import SKIP_MARGIN_SHARE, release_label_set, results_table, score_range, select
from ._search_checks import check_candidates, record_unit, search_budget, search_scoring
from ._search_doc import SHARED_DOC

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
        # release is part of the selection.
        label, count, runs, refit_share = search_shares(self, discover_labels)
        label_epsilon, label_delta = label
        classes_parameter = f"{final_prefix(self.estimator)}classes"
        # A placeholder label set for planning.
        fixed = {classes_parameter: [0, 1]} if discover_labels else {}
        X_public, y_public = stand_in(X, [0, 1] if discover_labels else classes)
        rest = (self.epsilon - label_epsilon, self.delta - label_delta)
        skip = plan_skip(self, candidates, X_public, y_public, fixed, rest, count[0])
        if skip.skippable:
            # The count picks the runs or the default's refit; the runs and
            # their refit keep the delta under which the count composed with
            # that refit still meets the guarantee (plan_skip).
            scale = skip.branch_delta / rest[1]
            runs = (runs[0], runs[1] * scale)
            refit_share = (refit_share[0], refit_share[1] * scale)
        epsilon_refit, delta_refit = refit_share
        epsilon_selection = label[0] + count[0] + runs[0]
        delta_selection = label[1] + count[1] + runs[1]
        # What the whole search guarantees, whichever branch runs.
        guarantee = (
            (float(self.epsilon), float(self.delta))
            if skip.skippable
            else (epsilon_selection + epsilon_refit, delta_selection + delta_refit)
        )
        plan = plan_selection(
            self,
            candidates,
            X_public,
            y_public,
            count[0] + runs[0],
            runs[1],
            fixed,
            count[0],
            skip.default_index,
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
                    + (
                        " (no run, and a refit of the default at epsilon="
                        f"{skip.refit_epsilon:.4g}, below "
                        f"{plan.evidence_threshold * 0.5 / SKIP_MARGIN_SHARE:.4g} "
                        "released validation rows)"
                        if plan.skippable
                        else ""
                    )
                )
                + (
                    f", refit (epsilon={epsilon_refit:.4g}, delta={delta_refit:.3g})"
                    if self.refit
                    else ""
                ),
                file=sys.stdout,
            )

        # Charge before touching: the whole search (the selection and the
        # refit) is reserved as one ledger entry before the first read of a
        # private value.  Whichever branch the released count takes (the
        # runs and a refit, or the default's refit), the search meets it.
        plan_search = FitPlan(
            owner=name,
            solver="+".join(sorted(set(plan.solvers))),
            options={},
            epsilon=guarantee[0],
            delta=guarantee[1],
            private=True,
            shares={"labels": label, "count": count, "runs": runs, "refit": refit_share},
            event=None if self.refit else selection_event,
            max_group_rows=group_rows,
        )
        reservation = None
        if budget is not None:
            budget.check(
                guarantee[0],
                guarantee[1],
                unit="row" if group_rows is None else "group",
            )
            (reservation,) = reserve(budget, [plan_search])
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
            # With a refit the entry is settled after it (below).
            with PrivatePhase(
                name, None if self.refit else reservation, max_group_rows=group_rows
            ) as phase:
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
            if self.refit and reservation is not None:
                # The refit never ran; the entry stays charged, marked failed.
                reservation.fail(exc)
            raise
        index, model, noisy_sum, noisy_count = best
        # No run was made: the released count showed the runs could not
        # separate candidates; the default's refit, composed with the count.
        skipped = noisy_sum is None
        if skipped:
            epsilon_selection, delta_selection = label[0] + count[0], label[1] + count[1]
            epsilon_refit, delta_refit = skip.refit_epsilon, skip.refit_delta
            count_event = dpe.LaplaceDpEvent(1.0 / count[0])
            selection_event = (
                dpe.ComposedDpEvent([label_event, count_event]) if discover_labels else count_event
            )
            score = math.nan
        else:
            middle = 0.5 * (low + high)
            score = float(np.clip(middle + noisy_sum / max(1.0, noisy_count), low, high))

        self.best_index_ = int(index)
        self.best_params_ = dict(candidates[index])
        self.best_score_ = score
        self.runs_skipped_ = bool(skipped)
        # The noise on best_score_ (public plan over the released count).
        spread = plan.score_noise_multiplier * 0.5 * (high - low)
        if plan.score_mechanism == "laplace":
            spread *= math.sqrt(2.0)
        self.best_score_noise_ = math.nan if skipped else float(spread / max(1.0, noisy_count))
        self.scorer_ = scoring
        self.score_bound_ = bound
        self.multimetric_ = False
        self.n_splits_ = 1
        self.cv_results_ = results_table(candidates, index, score)
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
                refit_event = fit_event(refit_model)
                if skipped and skip.refit_event is not None and refit_event != skip.refit_event:
                    # Never expected: the plan is the refit's own pre-data plan,
                    # and the guarantee composes the count with it.
                    raise public_error(
                        RuntimeError(
                            f"{name}: the default's refit ran another mechanism than "
                            "planned; the spend stands."
                        )
                    )
            except BaseException as exc:
                if reservation is not None:
                    reservation.fail(exc)
                raise
            self.refit_time_ = time.perf_counter() - refit_start
            self.best_estimator_ = released(refit_model, self.estimator)
            self.dp_event_ = dpe.ComposedDpEvent([selection_event, refit_event])
            if reservation is not None:
                reservation.complete(self.dp_event_)
        else:
            # The selected run's model is part of the selection's output.
            self.best_estimator_ = released(model, self.estimator)
            self.dp_event_ = selection_event
        self.selection_dp_event_ = selection_event
        self.selection_privacy_spent_ = (float(epsilon_selection), float(delta_selection))
        self.privacy_spent_ = (float(guarantee[0]), float(guarantee[1]))
        if self.dp_event_ is selection_event and "privacy_spent_" in vars(self.best_estimator_):
            # The selected run's model is the selection's output: it claims
            # the search's guarantee, never its run's smaller share.
            self.best_estimator_.privacy_spent_ = self.privacy_spent_
            self.best_estimator_.dp_event_ = self.dp_event_
        # The released model's parameters were chosen from the search's
        # releases: privacy_spent and privacy_report read the search's spend.
        vouch(self.best_estimator_, name, self.privacy_spent_, self.dp_event_)
        keep_entries(self, [reservation])
        record_unit(self, group_rows)
        if self.verbose:
            print(
                f"[{name}] selected {self.best_params_} "
                + (
                    "(runs skipped: the released validation count is too small for them); "
                    if skipped
                    else f"(noisy validation {scoring}: {self.best_score_:.4g}); "
                )
                + f"spent epsilon={self.privacy_spent_[0]:.4g}, "
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


class DPGridSearchCV(BaseDPSearchCV):
    __doc__ = (
        """Differentially private search over a parameter grid (private selection).

    Each of a random number of runs trains a uniformly drawn candidate of
    the grid privately on a training part of the rows and scores it with a
    noisy validation score on the disjoint validation part; only the best
    run is released (Liu and Talwar 2019; Papernot and Steinke 2022).  The
    selected candidate is then refitted on all rows (``refit=True``).  One
    ledger entry for the whole search.
"""
        + SHARED_DOC.format(
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
    (1, (2.0, 1e-05))
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
        + SHARED_DOC.format(
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
