"""The docstring sections the two private searches share (their parameters and privacy)."""

__all__ = ["SHARED_DOC"]

SHARED_DOC = """
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
        Charged with one entry for the whole search (the label release, if
        any, the selection and the refit), reserved before any private
        value is read.  Default: the
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
        extra run is part of the selection's event.  With ``refit=True``,
        when that margin exceeds a quarter of the validation part's score
        range at the released validation row count (on small tables, where
        the runs could replace the default only by chance), no run is made
        and the default candidate is refitted with all that the count
        leaves, the count and the refit composed numerically, as an
        estimator composes its own count and steps (``runs_skipped_``).
        False: the best run, whatever its margin.
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
        NaN when the runs were skipped (no score was released).
    best_score_noise_ : float
        Standard deviation of the noise on ``best_score_`` (in score units,
        from the public plan and the released count); NaN when the runs
        were skipped.
    runs_skipped_ : bool
        Whether the released validation row count showed that the runs
        could not separate candidates (see ``prefer_default``): no run was
        made, the default candidate was selected and refitted with all that
        the count leaves.  A function of the released count and the public
        plan.
    best_estimator_ : estimator
        The refit (or, with ``refit=False``, the selected run's model, whose
        ``privacy_spent_`` and ``dp_event_`` are then the search's: it is the
        selection's output).  Its ``vouched_by_`` (a dict: ``owner``,
        ``privacy_spent``, ``dp_event``) names the search, whose guarantee
        :func:`sklearn_dp.privacy_spent` reports for it (see Privacy).
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
        ``(epsilon, delta)`` of the whole search (the selection and the
        refit, whichever branch the released count picked), the search's
        ledger entry.
    dp_event_ : dp_accounting.DpEvent
        ``ComposedDpEvent([selection_dp_event_, refit])`` with a refit, else
        ``selection_dp_event_``; ``refit`` is ``best_estimator_.dp_event_``
        (for a Pipeline, its DP steps' events composed, in order).  When
        the search may skip its runs, this is the event of the branch that
        ran, chosen from the released count: an accountant that composes it
        as a fixed sequence describes that branch only, and the guarantee of
        the whole adaptive search is ``privacy_spent_`` (see Privacy).  With
        skipped runs it is the count composed with the default's refit,
        which dp_accounting's PLD accountant recomputes to at most
        ``privacy_spent_`` (less the label release, if any).
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
        its epsilon and delta first).  When the runs were skipped: the
        count's ``LaplaceDpEvent`` alone (after the label release, if any).
    selection_privacy_spent_ : tuple of float
        ``(epsilon, delta)`` of the selection (the label release, the count
        and the runs, or the label release and the count when the runs were
        skipped).
    n_features_in_ : int
    classes_ : ndarray
        The selected estimator's classes (classifiers).
    refit_time_ : float
        Seconds the refit took (it does not depend on the number of runs).
        The selection's time is not recorded: it grows with the number of
        runs (see Privacy).  Like any run time (the estimators' ``verbose``
        lines, your own timer around ``fit``) it grows with the row count
        and is outside the guarantee: do not publish it.
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
    dp_accounting's RDP accountant; when the runs can be skipped (a default
    candidate and a refit) the runs alone meet the rest of the selection's
    share, and the count is accounted with the branch it picks (see
    Privacy): the runs and their refit then share the delta under which
    the count composed with the default's refit still meets the
    guarantee (60% to 73% of it for the default logistic fit).  The default candidate's run is kept
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
    they raise or warn escapes.

    ``best_estimator_`` is vouched for by the whole search: which candidate
    won, and the share its refit was fitted at, were chosen from the
    search's releases.  The search marks it (``vouched_by_``), so
    :func:`sklearn_dp.privacy_spent` and :func:`sklearn_dp.privacy_report`
    of the released model (an estimator or a Pipeline, also pickled or
    inside another Pipeline) report ``privacy_spent_``; its steps keep their
    own fit's ``privacy_spent_`` and ``dp_event_``.  Parameters set on it
    afterwards (``set_params``) change nothing the search computed and keep
    that record; a change of its fitted state (fitted again, a coefficient
    set by hand, a step replaced) voids it, and the model is then reported
    with ``epsilon = inf`` (its own spend leaves out the selection that
    chose it).  A warm start from it (``warm_start=True``) composes the
    search's guarantee with the new fit's.

    The default candidate's run (``prefer_default``) is one more run of a
    candidate fixed before the data is read, composed with the repeated
    runs in the selection's event; whether the best run replaces it is a
    comparison of the two released noisy scores with a margin computed
    from the public plan.

    Whether the runs are skipped is decided from the released validation
    row count and the public plan (post-processing).  The count ``C`` is
    pure ``epsilon_count``-DP.  In one branch the default candidate's refit
    ``R`` runs at the largest epsilon for which ``C`` composed with ``R``'s
    event meets ``(epsilon - label, delta - label)`` under dp_accounting's
    PLD accountant; in the other the runs (calibrated without the count)
    and their refit are ``(epsilon - label - epsilon_count, delta_b)``-DP
    by basic composition, with ``delta_b`` a lower bound on the delta of
    ``R``'s event at ``epsilon - label + epsilon_count``.  For
    neighbours, the search's hockey-stick divergence at ``e^eps`` is the
    average over the count's output ``c`` of the picked branch's divergence
    at ``e^(eps - L(c))``, where the count's privacy loss ``L(c)`` lies in
    ``[-epsilon_count, epsilon_count]``; on that range both branches are
    below the curve of ``R``'s event, so the search is below ``C``
    composed with ``R`` (the composition theorem of f-DP, Dong, Roth and
    Su 2022, with one dominating pair for every branch, on the range of the
    count's loss).  The search is ``(epsilon, delta)``-DP in both branches;
    the label release composes by basic composition.  Where ``R`` has no
    full-data Gaussian part (or ``delta_b`` would fall below a quarter of
    delta), both branches get ``(epsilon - label - epsilon_count, delta -
    label)`` and the count is paid by basic composition.  The ledger entry charges the whole search in both.

    What is public: the candidates, the estimator's public settings (a
    Pipeline's steps and their parameters), the
    plan (per-run epsilons, the default candidate and its margin), the
    schema of the input.  What is released:
    the selected candidate, its noisy score, the selected run's model (or
    the refit), the noisy validation row count (through ``best_score_``,
    and whether the runs were skipped).
    What stays secret: the number of runs ``K`` (publishing it with the
    selection breaks the bound, which comes from ``K`` being random and
    unseen), which candidates ran, their scores and models, the split.  No
    run prints, warns or raises: a failed run outputs nothing.  The wall
    clock of ``fit`` grows with ``K``: the search does not record it, and
    timing must stay out of what an adversary sees.  The true row count is
    never used for a public decision (the parts are drawn per row; only the
    released validation count decides whether the runs are skipped).

    With ``fit(X, y, groups=g)`` the unit is one group instead: the search
    is (epsilon, delta)-DP with respect to adding or removing one group of
    at most ``max_group_rows`` rows.  Each group keeps its first
    ``max_group_rows`` rows and draws its part as a whole (so one group
    lands in one part), every release of the selection and of the refit has
    ``max_group_rows`` times its row sensitivity and noise, and candidates
    whose solvers sample rows are refused before the spend.
"""
