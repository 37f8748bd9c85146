"""Privacy audits users can run on their own configurations.

An (epsilon, delta)-DP mechanism M satisfies, for every set of outcomes S and
neighbouring data sets D, D',

    P[M(D) in S] <= e^epsilon P[M(D') in S] + delta,

so any test that tries to tell M(D) from M(D') has false-positive and
false-negative rates with ``FPR + e^epsilon FNR >= 1 - delta`` (and the same
with the roles swapped).  Running the mechanism many times on both data sets,
thresholding a scalar statistic and bounding the two error rates with
Clopper-Pearson intervals gives a *lower bound* on the epsilon the mechanism
really has, at a stated confidence.  A lower bound above the claimed epsilon
is evidence of a privacy bug (missing noise, missing clipping, noise for one
step instead of all, a bound read from the data).  A lower bound below it
proves nothing by itself: audits find bugs, they do not prove privacy.

Two levels are provided:

* :func:`audit_noisy_gradient_sum`: T noisy clipped-gradient-sum releases
  (optionally Poisson-sampled) with an extreme canary row; fast and powerful,
  catches noise calibrated for fewer steps than it is used for.
* :func:`audit_estimator`: a whole estimator fitted on D and on D plus a
  canary row; catches bounds read from the data and forgotten noise on any
  code path.

Both are built on :func:`audit_mechanism` (any ``run(with_canary, seed)``),
:func:`choose_threshold` and :func:`epsilon_lower_bound`;
:func:`max_epsilon_lower_bound` says how large a bound a number of runs can
give at all.  :func:`check_dp_event` recomputes a fitted model's recorded
``dp_event_`` with dp_accounting.  See ``docs/audits.md``.

Audits are black-box.  :func:`trace_releases` opens the box: it records every
noisy release of a fit (mechanism, exact pre-noise value, declared
sensitivity, norm, output) and can substitute data-independent outputs, so a
test can check that nothing observable escapes the noise (see
``docs/guide/privacy_model.md``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from joblib import Parallel, delayed
from scipy import stats
from sklearn.base import clone

from .. import _noise
from .._protocol import check_groups, group_codes
from ..accounting import epsilon_of_event

if TYPE_CHECKING:
    from sklearn.base import BaseEstimator

    from .._typing import ArrayLike

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "epsilon_lower_bound",
    "max_epsilon_lower_bound",
    "check_audit_power",
    "choose_threshold",
    "SEED_STRIDE",
    "audit_mechanism",
    "audit_noisy_gradient_sum",
    "audit_estimator",
    "check_dp_event",
    "trace_releases",
    "ReleaseTrace",
]


def clopper_pearson(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Two-sided Clopper-Pearson interval for a binomial proportion.

    Parameters
    ----------
    successes, trials : int
        Number of successes among ``trials`` independent trials.
    confidence : float, default=0.95
        Coverage of the interval; each end is a one-sided bound at
        ``1 - (1 - confidence) / 2``.

    Returns
    -------
    lower, upper : float
        The ends of the interval.
    """
    alpha = 1.0 - confidence
    lower = 0.0 if successes == 0 else stats.beta.ppf(alpha / 2, successes, trials - successes + 1)
    upper = (
        1.0
        if successes == trials
        else stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes)
    )
    return float(lower), float(upper)


def _epsilon_from_rates(fpr_upper, fnr_upper, delta):
    # FPR + e^eps FNR >= 1 - delta  =>  eps >= log((1 - delta - FPR) / FNR).
    if fnr_upper <= 0:
        return math.inf if 1 - delta - fpr_upper > 0 else 0.0
    numerator = 1.0 - delta - fpr_upper
    return max(0.0, math.log(numerator / fnr_upper)) if numerator > 0 else 0.0


def _bound_at_threshold(without, with_canary, threshold, delta, confidence):
    """Lower bound on epsilon for the test "statistic > threshold means canary present".

    The bound uses upper bounds on both error rates; each is one-sided at
    ``1 - (1 - confidence) / 2`` (the upper end of a two-sided interval at
    ``confidence``), so both hold at once with probability ``confidence``
    (union bound).  Given both, each direction of the DP inequality gives a
    valid bound, so their maximum is one too.
    """
    false_positives = int(np.sum(np.asarray(without) > threshold))
    false_negatives = int(np.sum(np.asarray(with_canary) <= threshold))
    fpr_upper = clopper_pearson(false_positives, len(without), confidence)[1]
    fnr_upper = clopper_pearson(false_negatives, len(with_canary), confidence)[1]
    return max(
        _epsilon_from_rates(fpr_upper, fnr_upper, delta),
        _epsilon_from_rates(fnr_upper, fpr_upper, delta),
    )


def _empirical_epsilon(without, with_canary, threshold, delta):
    # Point estimate of the bound (rates floored at one run), for choosing a threshold.
    fpr = max(np.mean(without > threshold), 1 / len(without))
    fnr = max(np.mean(with_canary <= threshold), 1 / len(with_canary))
    return max(
        math.log(max(1 - delta - fnr, 1e-12) / fpr), math.log(max(1 - delta - fpr, 1e-12) / fnr)
    )


def max_epsilon_lower_bound(n_runs: int, delta: float, *, confidence: float = 0.95) -> float:
    """The largest lower bound an audit with ``n_runs`` runs per data set can give.

    It is reached when the test makes no error at all: with ``n_runs`` runs
    per data set, Clopper-Pearson cannot certify an error rate below
    ``1 - ((1 - confidence) / 2) ** (1 / n_runs)``.  An audit can only refute
    a claimed epsilon below this value; compare it with the claim before
    reading anything into a low bound.

    Parameters
    ----------
    n_runs : int
        Runs per data set used for the bound (not for choosing the threshold).
    delta : float
        The delta of the claimed guarantee.
    confidence : float, default=0.95
        Confidence of the bound.

    Returns
    -------
    float
        The bound given by a test without a single error.
    """
    upper = clopper_pearson(0, int(n_runs), confidence)[1]
    return _epsilon_from_rates(upper, upper, delta)


def choose_threshold(
    without: ArrayLike,
    with_canary: ArrayLike,
    delta: float,
    *,
    candidates: int = 99,
    include_observed: bool = False,
    criterion: Literal["bound", "empirical"] = "bound",
    confidence: float = 0.95,
) -> float:
    """Choose the threshold of the test "statistic > threshold means canary present".

    Use runs that are *not* used for the bound afterwards: choosing and
    bounding on the same runs overstates the bound.

    Parameters
    ----------
    without, with_canary : array-like of float
        Calibration runs on D and on D'.
    delta : float
        The delta of the claimed guarantee.
    candidates : int, default=99
        Number of candidate thresholds: the quantiles ``k / (candidates + 1)``,
        k = 1 .. candidates, of the pooled runs.
    include_observed : bool, default=False
        Also try every observed value (for discrete statistics such as a
        selected vertex, where quantiles can miss the useful cut).
    criterion : {"bound", "empirical"}, default="bound"
        Maximise the Clopper-Pearson bound at ``confidence`` on these runs
        (favours thresholds that rest on many runs: usually the more
        powerful choice), or the point estimate of epsilon (error rates
        floored at one run).
    confidence : float, default=0.95
        Only for ``criterion="bound"``.

    Returns
    -------
    float
        The chosen threshold.
    """
    without = np.asarray(without, dtype=float)
    with_canary = np.asarray(with_canary, dtype=float)
    pooled = np.concatenate([without, with_canary])
    levels = np.arange(1, candidates + 1) / (candidates + 1)
    grid = np.quantile(pooled, levels)
    if include_observed:
        grid = np.unique(np.concatenate([grid, pooled]))
    if criterion == "empirical":
        scores = [_empirical_epsilon(without, with_canary, t, delta) for t in grid]
    elif criterion == "bound":
        scores = [_bound_at_threshold(without, with_canary, t, delta, confidence) for t in grid]
    else:
        raise ValueError(f"criterion must be 'empirical' or 'bound'; got {criterion!r}.")
    return float(grid[int(np.argmax(scores))])


def epsilon_lower_bound(
    without: ArrayLike,
    with_canary: ArrayLike,
    delta: float,
    *,
    confidence: float = 0.95,
    threshold: float | None = None,
    **choose_options: Any,
) -> tuple[float, float]:
    """Lower bound on epsilon from statistics of runs on neighbouring data sets.

    Parameters
    ----------
    without, with_canary : array-like of float
        One scalar statistic per run, on D and on the neighbour D'.
    delta : float
        The delta of the claimed guarantee.
    confidence : float, default=0.95
        Confidence of the bound (over the randomness of the runs): both
        error rates are bounded at once with this probability.
    threshold : float, optional
        The test's threshold.  If None, the first half of each sample chooses
        it (:func:`choose_threshold`) and the second half, independent of
        that choice, gives the confidence bound.
    **choose_options
        Passed to :func:`choose_threshold` when ``threshold`` is None.

    Returns
    -------
    epsilon_lb : float
        With probability at least ``confidence``, the mechanism is not
        (epsilon, delta)-DP for any epsilon below this value.
    threshold : float
        The threshold used.

    Notes
    -----
    Privacy: for an (epsilon, delta)-DP mechanism every test satisfies
    ``FPR + e^epsilon FNR >= 1 - delta`` and the same with the rates swapped;
    the bound is that inequality solved for epsilon at Clopper-Pearson upper
    bounds of the two rates.  It is a statement about the mechanism that
    produced the runs, for this pair of data sets only: a bound below the
    claim does not prove the claim.
    """
    without = np.asarray(without, dtype=float)
    with_canary = np.asarray(with_canary, dtype=float)
    if threshold is None:
        half0, half1 = len(without) // 2, len(with_canary) // 2
        threshold = choose_threshold(
            without[:half0], with_canary[:half1], delta, confidence=confidence, **choose_options
        )
        without, with_canary = without[half0:], with_canary[half1:]
    return _bound_at_threshold(without, with_canary, threshold, delta, confidence), threshold


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Parameters
    ----------
    epsilon_lower_bound : float
        Epsilon the mechanism provably exceeds (at ``confidence``) — evidence
        of a bug if above ``claimed_epsilon``.
    claimed_epsilon, delta : float
        The guarantee under audit.
    n_runs : int
        Runs per data set (calibration and bound together).
    confidence : float
        Confidence of the bound.
    threshold : float
        Threshold of the test "statistic > threshold means canary present".
    n_bound_runs : int
        Runs per data set used for the bound (the others chose the threshold).
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    n_runs: int
    confidence: float
    threshold: float
    n_bound_runs: int = 0

    @property
    def consistent(self) -> bool:
        """Whether the audit found no evidence against the claimed epsilon."""
        return self.epsilon_lower_bound <= self.claimed_epsilon

    @property
    def max_lower_bound(self) -> float:
        """The largest bound these runs could give (:func:`max_epsilon_lower_bound`)."""
        return max_epsilon_lower_bound(self.n_bound_runs, self.delta, confidence=self.confidence)

    @property
    def can_refute(self) -> bool:
        """Whether these runs could have refuted the claim (``max_lower_bound > claimed_epsilon``)."""
        return self.max_lower_bound > self.claimed_epsilon


def check_audit_power(
    claimed_epsilon: float, delta: float, n_bound_runs: int, *, confidence: float = 0.95
) -> float:
    """Raise if an audit with ``n_bound_runs`` runs cannot refute ``claimed_epsilon``.

    An audit's lower bound never exceeds :func:`max_epsilon_lower_bound`
    (reached when the test makes no error at all), so an audit of a claim at
    or above that value passes whatever the mechanism does: it cannot fail.

    Parameters
    ----------
    claimed_epsilon : float
        The epsilon under audit.
    delta : float
        The delta of the claimed guarantee.
    n_bound_runs : int
        Runs per data set that give the bound (not those that choose the threshold).
    confidence : float, default=0.95
        Confidence of the bound.

    Returns
    -------
    float
        The largest bound the audit can give (above ``claimed_epsilon``).

    Raises
    ------
    ValueError
        If that largest bound does not exceed ``claimed_epsilon``.
    """
    largest = max_epsilon_lower_bound(n_bound_runs, delta, confidence=confidence)
    if not largest > claimed_epsilon:
        raise ValueError(
            f"This audit cannot refute its claim: with {n_bound_runs} bound runs per data set "
            f"at confidence {confidence:g} its largest possible lower bound is {largest:.3f} "
            f"(delta={delta:g}), not above the claimed epsilon {claimed_epsilon:g}. Audit a "
            "smaller epsilon or use more runs (see max_epsilon_lower_bound)."
        )
    return largest


#: Seeds of run i of block b (0: calibration, 1: bound) on data set k (0: D, 1: D')
#: are ``seed_offset + (2 b + k) * SEED_STRIDE + i``: all distinct, so the samples
#: are independent.
SEED_STRIDE = 1_000_003


def audit_mechanism(
    run: Callable[[bool, int], float],
    *,
    claimed_epsilon: float,
    delta: float,
    n_runs: int = 1000,
    calibration_runs: int | None = None,
    confidence: float = 0.95,
    n_jobs: int | None = None,
    seed_offset: int = 0,
    require_power: bool = False,
    **choose_options: Any,
) -> AuditResult:
    """Audit any mechanism given as ``run(with_canary: bool, seed: int) -> float``.

    Parameters
    ----------
    run : callable
        ``run(with_canary, seed)`` runs the mechanism once with that seed on D
        (``with_canary=False``) or D' (``True``) and reduces the output to a
        scalar statistic that the canary tends to increase.
    claimed_epsilon, delta : float
        The guarantee under audit.
    n_runs : int, default=1000
        Runs per data set (``2 * n_runs`` in total).
    calibration_runs : int, optional
        How many of them choose the threshold (default ``n_runs // 2``); the
        rest, fresh runs, give the bound.
    confidence : float, default=0.95
        Confidence of the bound.
    n_jobs : int, optional
        Runs in parallel with joblib (the results do not depend on it).
    seed_offset : int, default=0
        Shifts every seed (see :data:`SEED_STRIDE`), for a second independent audit.
    require_power : bool, default=False
        Before any run, check that the configuration can refute the claim
        (:func:`check_audit_power`) and raise ``ValueError`` if it cannot.
        The test-suite turns this on for every audit (``tests/conftest.py``).
    **choose_options
        ``candidates``, ``include_observed``, ``criterion``: see :func:`choose_threshold`.

    Returns
    -------
    AuditResult
        The bound, with the claim and the audit's configuration.

    Notes
    -----
    Privacy: the audit is a statistical *lower* bound on the epsilon of the
    mechanism for this pair of neighbouring data sets, at ``confidence``.  A
    bound above ``claimed_epsilon`` is evidence of a privacy bug; a bound
    below it is not a proof of privacy (a weak canary or statistic finds
    nothing).  Check the audit's power with a deliberately broken mechanism,
    and compare with :attr:`AuditResult.max_lower_bound`.
    """
    n_runs = int(n_runs)
    calibration_runs = n_runs // 2 if calibration_runs is None else int(calibration_runs)
    if not 0 < calibration_runs < n_runs:
        raise ValueError(
            f"calibration_runs must be in (0, n_runs={n_runs}); got {calibration_runs}."
        )
    if require_power:
        check_audit_power(claimed_epsilon, delta, n_runs - calibration_runs, confidence=confidence)

    def seed(dataset, i):
        block, j = (0, i) if i < calibration_runs else (1, i - calibration_runs)
        return seed_offset + (2 * block + dataset) * SEED_STRIDE + j

    parallel = Parallel(n_jobs=n_jobs)
    without = np.array(parallel(delayed(run)(False, seed(0, i)) for i in range(n_runs)), float)
    with_canary = np.array(parallel(delayed(run)(True, seed(1, i)) for i in range(n_runs)), float)
    threshold = choose_threshold(
        without[:calibration_runs],
        with_canary[:calibration_runs],
        delta,
        confidence=confidence,
        **choose_options,
    )
    bound, _ = epsilon_lower_bound(
        without[calibration_runs:],
        with_canary[calibration_runs:],
        delta,
        confidence=confidence,
        threshold=threshold,
    )
    return AuditResult(
        bound,
        float(claimed_epsilon),
        float(delta),
        n_runs,
        confidence,
        threshold,
        n_runs - calibration_runs,
    )


def audit_noisy_gradient_sum(
    noise_std: float,
    clip_norm: float,
    *,
    claimed_epsilon: float,
    delta: float,
    n_steps: int = 1,
    sampling_rate: float = 1.0,
    n_runs: int = 4000,
    confidence: float = 0.95,
    seed: int = 0,
    **audit_options: Any,
) -> AuditResult:
    """Audit ``n_steps`` noisy clipped-gradient-sum releases with an extreme canary.

    The kernel of gradient methods: each step releases
    ``clipped_gradient_sum(...) + N(0, noise_std^2 I)``.  The rows of D have
    clipped gradients that cancel exactly (``x`` and ``-x``), so the canary
    (a row of norm 1e6, clipped to ``clip_norm``) alone moves the sum, by the
    full sensitivity, in every step where it is sampled (Poisson, with
    probability ``sampling_rate``).  The statistic is the log-likelihood
    ratio of the releases projected on the canary's direction, the most
    powerful test for this pair (for full batches: their sum).  This is the
    worst case of the kernel, so ``noise_std = noise_multiplier * clip_norm``
    with the multiplier calibrated for ``n_steps`` steps at the claimed
    epsilon and delta must pass, and one calibrated for fewer steps must fail.

    Parameters
    ----------
    noise_std : float
        Standard deviation of the Gaussian noise of each release.
    clip_norm : float
        The per-sample clip (the add/remove sensitivity of the sum).
    claimed_epsilon, delta : float
        The guarantee claimed for all ``n_steps`` releases together.
    n_steps : int, default=1
        Number of releases.
    sampling_rate : float, default=1.0
        Poisson sampling rate of the canary in each step.
    n_runs : int, default=4000
        Runs per data set.
    confidence : float, default=0.95
        Confidence of the bound.
    seed : int, default=0
        Seed of the data rows (the runs use :func:`audit_mechanism`'s seeds).
    **audit_options
        Passed to :func:`audit_mechanism` (``calibration_runs``, ``seed_offset``, ...).

    Returns
    -------
    AuditResult
        The bound, with the claim and the audit's configuration.

    Notes
    -----
    Privacy: the kernel is computed with the library's own
    ``clipped_gradient_sum``, so missing or wrong clipping shows up as a
    larger shift; the noise is drawn here from ``noise_std`` (the value a
    solver's plan gives), so the audit checks the calibration of that value,
    not a solver's use of it: audit solvers with :func:`audit_mechanism` or
    :func:`audit_estimator`.
    """
    from .._losses import BinaryLogisticLoss, clipped_gradient_sum

    rng = np.random.default_rng(seed)
    d = 5
    X = rng.normal(size=(20, d))
    # x and -x with the same label have opposite gradients at W=0, so the
    # clipped sum over D is exactly zero and the canary alone moves it.
    X = np.vstack([X, -X])
    y = np.ones(40)
    canary = np.zeros((1, d))
    canary[0, 0] = 1e6
    loss = BinaryLogisticLoss()
    W = np.zeros((d, 1))
    base = clipped_gradient_sum(X, y, W, loss, clip_norm, np.linalg.norm(X, axis=1))
    with_row = clipped_gradient_sum(
        np.vstack([X, canary]),
        np.append(y, 1.0),
        W,
        loss,
        clip_norm,
        np.linalg.norm(np.vstack([X, canary]), axis=1),
    )
    canary_gradient = with_row - base
    # Project on the canary's gradient (along -e_0): the canary increases the statistic.
    direction = np.sign(canary_gradient[0, 0]) if canary_gradient[0, 0] else 1.0
    shift = abs(float(canary_gradient[0, 0])) or float(clip_norm)
    n_steps = int(n_steps)

    def release(with_canary, run_seed):
        run_rng = np.random.default_rng(run_seed)
        sampled = run_rng.random(n_steps) < sampling_rate
        if not with_canary:
            sampled[:] = False
        sums = base[None] + sampled[:, None, None] * canary_gradient[None]
        noisy = sums + run_rng.normal(0.0, noise_std, size=sums.shape)
        projected = direction * noisy[:, 0, 0]
        if sampling_rate >= 1.0:
            return float(np.sum(projected))
        # log((1 - q) + q exp(LLR of one Gaussian step)), summed over steps.
        step_llr = (projected * shift - shift**2 / 2) / noise_std**2
        return float(
            np.sum(np.logaddexp(math.log1p(-sampling_rate), math.log(sampling_rate) + step_llr))
        )

    return audit_mechanism(
        release,
        claimed_epsilon=claimed_epsilon,
        delta=delta,
        n_runs=n_runs,
        confidence=confidence,
        **audit_options,
    )


def audit_estimator(
    estimator: BaseEstimator,
    X: ArrayLike,
    y: ArrayLike,
    canary_x: ArrayLike,
    canary_y: Any,
    *,
    n_runs: int = 200,
    statistic: Callable[[BaseEstimator], float] | None = None,
    confidence: float = 0.95,
    n_jobs: int | None = None,
    groups: ArrayLike | None = None,
    **audit_options: Any,
) -> AuditResult:
    """Audit a whole estimator on D = (X, y) against D' = D plus one canary row.

    With ``groups`` the audit is at group level: D is fitted with its
    groups (as integer codes of the same partition) and D' adds one canary
    *group*, of a code no row of D holds, of the estimator's
    ``max_group_rows`` copies of the canary row (all equal: the tightest
    group for every sum it enters).

    Parameters
    ----------
    estimator : sklearn_dp estimator
        Cloned for every run, with ``random_state`` set to the run's seed.
    X, y : arrays
        The data set D.
    canary_x : array-like of shape (n_features,)
        The canary row (make it extreme: large norm, far from the data).
    canary_y : object
        The label of the canary row.
    n_runs : int, default=200
        Fits per data set (2 * n_runs in total).
    statistic : callable, optional
        ``statistic(model) -> float``; default the model's prediction score at
        the canary (``decision_function`` for classifiers, ``predict``
        otherwise), which a leak of the canary moves.
    confidence : float, default=0.95
        Confidence of the bound.
    n_jobs : int, optional
        Runs in parallel with joblib.
    groups : array-like of shape (n_samples,), optional
        The group of each row of D: audit the group-level guarantee (the
        estimator must set ``max_group_rows``).
    **audit_options
        Passed to :func:`audit_mechanism` (``calibration_runs``,
        ``seed_offset``, ``candidates``, ``include_observed``, ``criterion``).

    Returns
    -------
    AuditResult
        The bound, with the claim and the audit's configuration.

    Notes
    -----
    Privacy: the whole fit is audited (validation, data bounds, the private
    row count, the solver), under add/remove-one neighbouring.  The tightest
    canaries are rows whose influence no other row shares, e.g. a feature the
    rest of D never uses, with ``statistic`` the coefficient of that feature.
    """
    X = np.asarray(X, dtype=float)
    canary_x = np.asarray(canary_x, dtype=float).reshape(1, -1)
    copies = 1
    fit_d, fit_prime = {}, {}
    if groups is not None:
        copies = estimator.get_params()["max_group_rows"]
        if copies is None:
            raise ValueError("audit_estimator with groups needs an estimator with max_group_rows.")
        # The fits see D's groups as the library's own codes 0 .. G - 1 (the
        # same partition of the rows), and the canary group as code G: a
        # label no row of D holds, whatever D's labels are (a NaN maximum, or
        # a string that a made-up name would collide with).
        codes = group_codes(check_groups(groups, X.shape[0], copies, "audit_estimator"))
        fit_d = dict(groups=codes)
        fit_prime = dict(groups=np.append(codes, np.full(copies, codes.max(initial=-1) + 1)))
    X_prime = np.vstack([X] + [canary_x] * copies)
    y_prime = np.append(np.asarray(y), [canary_y] * copies)

    if statistic is None:

        def statistic(model):
            scorer = getattr(model, "decision_function", None) or model.predict
            return float(np.ravel(scorer(canary_x))[0])

    def run(with_canary, seed):
        model = clone(estimator).set_params(random_state=seed, budget=None)
        if with_canary:
            model.fit(X_prime, y_prime, **fit_prime)
        else:
            model.fit(X, y, **fit_d)
        return statistic(model)

    return audit_mechanism(
        run,
        claimed_epsilon=estimator.epsilon,
        delta=estimator.delta,
        n_runs=n_runs,
        confidence=confidence,
        n_jobs=n_jobs,
        **audit_options,
    )


def check_dp_event(model: BaseEstimator, *, rtol: float = 1e-6) -> float:
    """Recompute a fitted model's ``dp_event_`` with dp_accounting; raise if it exceeds the claim.

    Parameters
    ----------
    model : fitted sklearn_dp estimator
        Needs ``dp_event_`` and ``privacy_spent_``.
    rtol : float, default=1e-6
        Relative tolerance for the numerical accountants.

    Returns
    -------
    float
        The recomputed epsilon at the model's delta.

    Raises
    ------
    AssertionError
        If the recomputed epsilon exceeds ``privacy_spent_[0] * (1 + rtol)``.

    Notes
    -----
    Privacy: this checks the bookkeeping (the event the fit recorded is
    within the claim), not the mechanism; a fit whose noise does not match
    its event passes it.  Audits (:func:`audit_mechanism`,
    :func:`audit_estimator`) test the mechanism.
    """
    claimed_epsilon, claimed_delta = model.privacy_spent_
    recomputed = epsilon_of_event(model.dp_event_, claimed_delta)
    if recomputed > claimed_epsilon * (1 + rtol):
        raise AssertionError(
            f"{type(model).__name__}: dp_event_ recomputes to epsilon={recomputed:.6g} at "
            f"delta={claimed_delta:g}, above the claimed privacy_spent_ epsilon={claimed_epsilon:.6g}."
        )
    return recomputed


class ReleaseTrace:
    """What :func:`trace_releases` recorded.

    Parameters
    ----------
    tracer : object
        The recorder of ``sklearn_dp._noise`` (built by :func:`trace_releases`).

    Attributes
    ----------
    releases : list of Release
        Every noisy release, in order.  Each has ``mechanism`` (str),
        ``value`` (the exact pre-noise quantity, or None where privacy does
        not come from noise on a value), ``sensitivity`` (its declared
        add/remove-one sensitivity in ``norm``), ``norm`` (``"l1"``,
        ``"l2"`` or ``"linf"``), ``output`` (what the mechanism released),
        ``scale`` (noise scale), ``label`` and ``used`` (what the caller got:
        ``output``, or the substitute).
    samples : list of Sample
        Every random draw of private rows (Poisson subsampling, row
        allocation), in order.
    """

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    @property
    def releases(self) -> list[Any]:
        """Every noisy release, in order (see the class docstring)."""
        return self._tracer.releases

    @property
    def samples(self) -> list[Any]:
        """Every random draw of private rows, in order."""
        return self._tracer.samples

    def __repr__(self):
        return f"ReleaseTrace({len(self.releases)} releases, {len(self.samples)} samples)"


@contextlib.contextmanager
def trace_releases(
    substitute: Callable[[Any], Any] | None = None,
) -> Iterator[ReleaseTrace]:
    """Record (and optionally replace) every noisy release made inside the block.

    Parameters
    ----------
    substitute : callable or None, default=None
        ``substitute(release) -> output``.  When given, every release's
        output is replaced by what it returns (reshaped and cast like the
        real output), and every Poisson sample takes all rows.  A substitute
        that ignores ``release.value`` and ``release.output`` makes the fit
        a function of public inputs only: on neighbouring data sets
        everything observable must then be identical.

    Yields
    ------
    ReleaseTrace
        With ``.releases`` and ``.samples``.

    Notes
    -----
    Privacy: the trace holds exact private values; it is a testing tool.
    A substituted fit is not private and its model is meaningless.
    Releases made in other processes (loky workers) are not seen; the
    library draws all noise in the calling process.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dp import DPLogisticRegression
    >>> from sklearn_dp.testing import trace_releases
    >>> X = np.random.default_rng(0).normal(size=(100, 3)) / 4
    >>> y = (X[:, 0] > 0).astype(int)
    >>> with trace_releases() as trace:
    ...     _ = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    >>> trace.releases[0].mechanism, trace.releases[0].label
    ('laplace', 'row count')
    """
    tracer = _noise._Tracer(substitute=substitute)
    _noise._push(tracer)
    try:
        yield ReleaseTrace(tracer)
    finally:
        _noise._pop(tracer)
