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

* :func:`audit_noisy_gradient_sum`: the noisy clipped-gradient-sum kernel with
  an extreme canary row; fast and powerful.
* :func:`audit_estimator`: a whole estimator fitted on D and on D plus a
  canary row; catches bounds read from the data and forgotten noise on any
  code path.

and :func:`check_dp_event`, which recomputes a fitted model's recorded
``dp_event_`` with dp_accounting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy import stats
from sklearn.base import clone

from .accounting import epsilon_of_event

__all__ = [
    "AuditResult",
    "clopper_pearson",
    "epsilon_lower_bound",
    "audit_mechanism",
    "audit_noisy_gradient_sum",
    "audit_estimator",
    "check_dp_event",
]


def clopper_pearson(successes, trials, confidence=0.95):
    """Two-sided Clopper-Pearson interval for a binomial proportion."""
    alpha = 1.0 - confidence
    lower = 0.0 if successes == 0 else stats.beta.ppf(alpha / 2, successes, trials - successes + 1)
    upper = 1.0 if successes == trials else stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes)
    return float(lower), float(upper)


def _epsilon_from_rates(fpr_upper, fnr_upper, delta):
    # FPR + e^eps FNR >= 1 - delta  =>  eps >= log((1 - delta - FPR) / FNR).
    if fnr_upper <= 0:
        return math.inf if 1 - delta - fpr_upper > 0 else 0.0
    numerator = 1.0 - delta - fpr_upper
    return math.log(numerator / fnr_upper) if numerator > 0 else 0.0


def _bound_at_threshold(without, with_canary, threshold, delta, confidence):
    """Lower bound on epsilon for the test "statistic > threshold means canary present".

    Both error rates get a one-sided bound at ``confidence``; the two
    directions of the test are combined with a Bonferroni split.
    """
    n0, n1 = len(without), len(with_canary)
    false_positives = int(np.sum(without > threshold))
    false_negatives = int(np.sum(with_canary <= threshold))
    # Two-sided intervals at 1 - 2(1 - confidence) give one-sided bounds at confidence.
    two_sided = 1.0 - 2.0 * (1.0 - confidence)
    fpr_upper = clopper_pearson(false_positives, n0, two_sided)[1]
    fnr_upper = clopper_pearson(false_negatives, n1, two_sided)[1]
    return max(
        _epsilon_from_rates(fpr_upper, fnr_upper, delta),
        _epsilon_from_rates(fnr_upper, fpr_upper, delta),
    )


def epsilon_lower_bound(without, with_canary, delta, *, confidence=0.95, threshold=None):
    """Lower bound on epsilon from statistics of runs on neighbouring data sets.

    Parameters
    ----------
    without, with_canary : array-like of float
        One scalar statistic per run, on D and on the neighbour D'.
    delta : float
        The delta of the claimed guarantee.
    confidence : float, default=0.95
        Confidence of the bound (over the randomness of the runs).
    threshold : float, optional
        The test's threshold.  If None, the first half of each sample chooses
        the threshold that maximises the empirical bound and the second half,
        independent of that choice, gives the confidence bound (choosing and
        bounding on the same runs would overstate the bound).

    Returns
    -------
    epsilon_lb : float
        With probability at least ``confidence``, the mechanism is not
        (epsilon, delta)-DP for any epsilon below this value.
    threshold : float
        The threshold used.
    """
    without = np.asarray(without, dtype=float)
    with_canary = np.asarray(with_canary, dtype=float)
    if threshold is None:
        half0, half1 = len(without) // 2, len(with_canary) // 2
        choose0, choose1 = without[:half0], with_canary[:half1]
        candidates = np.quantile(np.concatenate([choose0, choose1]), np.linspace(0.01, 0.99, 99))
        # The point estimate is noisy; choose the threshold with the best
        # bound at a looser confidence on the selection half.
        scores = [_bound_at_threshold(choose0, choose1, t, delta, 0.5) for t in candidates]
        threshold = float(candidates[int(np.argmax(scores))])
        without, with_canary = without[half0:], with_canary[half1:]
    return _bound_at_threshold(without, with_canary, threshold, delta, confidence), threshold


@dataclass(frozen=True)
class AuditResult:
    """Outcome of an audit.

    Attributes
    ----------
    epsilon_lower_bound : float
        Epsilon the mechanism provably exceeds (at ``confidence``) — evidence
        of a bug if above ``claimed_epsilon``.
    claimed_epsilon, delta : float
    n_runs : int
        Runs per data set.
    confidence : float
    threshold : float
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    n_runs: int
    confidence: float
    threshold: float

    @property
    def consistent(self):
        """Whether the audit found no evidence against the claimed epsilon."""
        return self.epsilon_lower_bound <= self.claimed_epsilon


def audit_mechanism(run, *, claimed_epsilon, delta, n_runs=1000, confidence=0.95, n_jobs=None):
    """Audit any mechanism given as ``run(with_canary: bool, seed: int) -> float``.

    Seeds ``0 .. n_runs - 1`` are used on D and ``n_runs .. 2 n_runs - 1`` on D',
    so the two samples are independent.
    """
    parallel = Parallel(n_jobs=n_jobs)
    without = parallel(delayed(run)(False, seed) for seed in range(n_runs))
    with_canary = parallel(delayed(run)(True, n_runs + seed) for seed in range(n_runs))
    bound, threshold = epsilon_lower_bound(without, with_canary, delta, confidence=confidence)
    return AuditResult(bound, float(claimed_epsilon), float(delta), int(n_runs), confidence, threshold)


def audit_noisy_gradient_sum(
    noise_std, clip_norm, *, claimed_epsilon, delta, n_runs=2000, confidence=0.95, seed=0
):
    """Audit one noisy clipped-gradient-sum release with an extreme canary.

    The data are rows whose clipped gradients cancel; the canary's gradient
    is as large as the data allows (a row of norm 1e6, clipped).  The
    statistic is the noisy sum projected on the canary's direction.  This is
    the worst case for one Gaussian release, so a correctly calibrated
    ``noise_std`` (``noise_multiplier * clip_norm`` for one step, for the
    claimed epsilon and delta) must pass and a smaller one must fail.
    """
    from ._losses import BinaryLogisticLoss, clipped_gradient_sum

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

    def release(with_canary, run_seed):
        Xr, yr = (np.vstack([X, canary]), np.append(y, 1.0)) if with_canary else (X, y)
        total = clipped_gradient_sum(Xr, yr, W, loss, clip_norm, np.linalg.norm(Xr, axis=1))
        noisy = total + np.random.default_rng(run_seed).normal(0.0, noise_std, size=total.shape)
        return -float(noisy[0, 0])

    return audit_mechanism(
        release, claimed_epsilon=claimed_epsilon, delta=delta, n_runs=n_runs, confidence=confidence
    )


def audit_estimator(
    estimator,
    X,
    y,
    canary_x,
    canary_y,
    *,
    n_runs=200,
    statistic=None,
    confidence=0.95,
    n_jobs=None,
):
    """Audit a whole estimator on D = (X, y) against D' = D plus one canary row.

    Parameters
    ----------
    estimator : sklearn_dp estimator
        Cloned for every run, with ``random_state`` set to the run's seed.
    X, y : arrays
        The data set D.
    canary_x : array-like of shape (n_features,)
        The canary row (make it extreme: large norm, far from the data).
    canary_y : label of the canary
    n_runs : int, default=200
        Fits per data set (2 * n_runs in total).
    statistic : callable, optional
        ``statistic(model) -> float``; default the model's prediction score at
        the canary (``decision_function`` for classifiers, ``predict``
        otherwise), which a leak of the canary moves.
    confidence : float, default=0.95
    n_jobs : int, optional
        Runs in parallel with joblib.

    Returns
    -------
    AuditResult
    """
    X = np.asarray(X, dtype=float)
    canary_x = np.asarray(canary_x, dtype=float).reshape(1, -1)
    X_prime = np.vstack([X, canary_x])
    y_prime = np.append(np.asarray(y), canary_y)

    if statistic is None:

        def statistic(model):
            scorer = getattr(model, "decision_function", None) or model.predict
            return float(np.ravel(scorer(canary_x))[0])

    def run(with_canary, seed):
        model = clone(estimator).set_params(random_state=seed, budget=None)
        model.fit(X_prime, y_prime) if with_canary else model.fit(X, y)
        return statistic(model)

    return audit_mechanism(
        run,
        claimed_epsilon=estimator.epsilon,
        delta=estimator.delta,
        n_runs=n_runs,
        confidence=confidence,
        n_jobs=n_jobs,
    )


def check_dp_event(model, *, rtol=1e-6):
    """Recompute a fitted model's ``dp_event_`` with dp_accounting; raise if it exceeds the claim.

    Returns the recomputed epsilon at the model's delta.
    """
    claimed_epsilon, claimed_delta = model.privacy_spent_
    recomputed = epsilon_of_event(model.dp_event_, claimed_delta)
    if recomputed > claimed_epsilon * (1 + rtol):
        raise AssertionError(
            f"{type(model).__name__}: dp_event_ recomputes to epsilon={recomputed:.6g} at "
            f"delta={claimed_delta:g}, above the claimed privacy_spent_ epsilon={claimed_epsilon:.6g}."
        )
    return recomputed
