"""The public audit tools in sklearn_dp.testing, including their power."""

import math

import numpy as np
import pytest

from sklearn_dp import DPLogisticRegression
from sklearn_dp.accounting import gaussian_noise_multiplier
from sklearn_dp.testing import (
    audit_estimator,
    audit_mechanism,
    audit_noisy_gradient_sum,
    check_audit_power,
    check_dp_event,
    choose_threshold,
    clopper_pearson,
    epsilon_lower_bound,
    max_epsilon_lower_bound,
)


def test_clopper_pearson_known_values():
    low, high = clopper_pearson(0, 10, 0.95)
    assert low == 0.0
    assert high == pytest.approx(0.3085, abs=1e-4)
    low, high = clopper_pearson(5, 10, 0.95)
    assert (low, high) == pytest.approx((0.1871, 0.8129), abs=1e-4)


def test_lower_bound_of_perfectly_separable_runs_is_large():
    bound, _ = epsilon_lower_bound(np.zeros(1000), np.ones(1000), 1e-5)
    assert bound > 4


def test_lower_bound_of_identical_distributions_is_small():
    rng = np.random.default_rng(0)
    bound, _ = epsilon_lower_bound(rng.normal(size=2000), rng.normal(size=2000), 1e-5)
    assert bound < 0.3


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_kernel_audit_passes_correct_noise_and_catches_one_step_noise(epsilon):
    clip = 2.0
    sigma = gaussian_noise_multiplier(epsilon, 1e-5, 1)
    correct = audit_noisy_gradient_sum(sigma * clip, clip, claimed_epsilon=epsilon, delta=1e-5)
    assert correct.consistent
    # Noise calibrated for one step of a 10-step run is too small for each step.
    broken = audit_noisy_gradient_sum(
        sigma * clip / math.sqrt(10), clip, claimed_epsilon=epsilon, delta=1e-5
    )
    assert not broken.consistent


def test_kernel_audit_catches_missing_clipping():
    sigma = gaussian_noise_multiplier(1.0, 1e-5, 1)
    # Noise for clip 1, but rows are "clipped" at 1e3: the canary is obvious.
    broken = audit_noisy_gradient_sum(sigma * 1.0, 1e3, claimed_epsilon=1.0, delta=1e-5, n_runs=500)
    assert broken.epsilon_lower_bound > 3


def test_estimator_audit_dp_gd():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    model = DPLogisticRegression(epsilon=1.0, max_iter=5, classes=[0, 1], data_norm=1.0)
    result = audit_estimator(model, X, y, canary_x=[0.0, 0.0, 50.0], canary_y=1, n_runs=150)
    assert result.consistent, result


def test_check_dp_event():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    model = DPLogisticRegression(epsilon=0.7, classes=[0, 1], random_state=0).fit(X, y)
    assert check_dp_event(model) <= 0.7 * (1 + 1e-9)
    model.privacy_spent_ = (0.5, model.delta)
    with pytest.raises(AssertionError, match="above the claimed"):
        check_dp_event(model)


def test_clopper_pearson_two_sided_ends_are_one_sided_bounds():
    # Each end of the 95% interval is a 97.5% one-sided bound: the audit's
    # confidence holds for both error rates at once (union bound).
    from scipy.stats import beta

    low, high = clopper_pearson(3, 50, 0.95)
    assert high == pytest.approx(beta.ppf(0.975, 4, 47))
    assert low == pytest.approx(beta.ppf(0.025, 3, 48))


def test_lower_bound_at_a_given_threshold_by_hand():
    from scipy.stats import beta

    without = np.array([0.0] * 95 + [1.0] * 5)  # 5 false positives at threshold 0.5
    with_canary = np.array([1.0] * 80 + [0.0] * 20)  # 20 false negatives
    bound, threshold = epsilon_lower_bound(without, with_canary, 1e-5, threshold=0.5)
    fpr, fnr = beta.ppf(0.975, 6, 95), beta.ppf(0.975, 21, 80)
    assert threshold == 0.5
    assert bound == pytest.approx(
        max(math.log((1 - 1e-5 - fnr) / fpr), math.log((1 - 1e-5 - fpr) / fnr))
    )


def test_lower_bound_is_never_negative():
    bound, _ = epsilon_lower_bound(np.ones(100), np.zeros(100), 1e-5, threshold=0.5)
    assert bound == 0.0


def test_max_epsilon_lower_bound_is_reached_without_errors():
    for n in (10, 100, 1000):
        bound, _ = epsilon_lower_bound(np.zeros(n), np.ones(n), 1e-5, threshold=0.5)
        assert bound == pytest.approx(max_epsilon_lower_bound(n, 1e-5))
    # log(n / -log(0.025)) roughly: 100 runs cannot refute epsilon = 4.
    assert 3.0 < max_epsilon_lower_bound(100, 1e-5) < 3.5
    assert max_epsilon_lower_bound(1000, 1e-5) > max_epsilon_lower_bound(100, 1e-5)


def test_choose_threshold_finds_the_cut_of_a_discrete_statistic():
    without = np.array([0.0] * 90 + [1.0] * 10)
    with_canary = np.array([0.0] * 30 + [1.0] * 70)
    threshold = choose_threshold(without, with_canary, 1e-5, include_observed=True)
    assert 0.0 <= threshold < 1.0
    for criterion in ("empirical", "bound"):
        t = choose_threshold(np.arange(100.0), np.arange(100.0) + 50, 1e-5, criterion=criterion)
        assert 40 < t < 110
    with pytest.raises(ValueError, match="criterion"):
        choose_threshold(without, with_canary, 1e-5, criterion="best")


def test_audit_mechanism_splits_runs_and_uses_distinct_seeds():
    seen = []

    def run(with_canary, seed):
        seen.append((with_canary, seed))
        return float(with_canary)

    result = audit_mechanism(run, claimed_epsilon=1.0, delta=1e-5, n_runs=40, calibration_runs=10)
    assert len(seen) == 80 and len({seed for _, seed in seen}) == 80
    assert result.n_runs == 40 and result.n_bound_runs == 30
    assert result.epsilon_lower_bound == pytest.approx(max_epsilon_lower_bound(30, 1e-5))
    assert result.max_lower_bound == pytest.approx(result.epsilon_lower_bound)
    assert not result.consistent
    again = audit_mechanism(
        run, claimed_epsilon=1.0, delta=1e-5, n_runs=40, calibration_runs=10, seed_offset=5
    )
    assert again.n_runs == 40
    with pytest.raises(ValueError, match="calibration_runs"):
        audit_mechanism(run, claimed_epsilon=1.0, delta=1e-5, n_runs=10, calibration_runs=10)


@pytest.mark.parametrize("n_steps", [16])
def test_multi_step_kernel_audit_catches_noise_for_one_step(n_steps):
    epsilon, delta, clip = 2.0, 1e-5, 1.0
    calibrated = gaussian_noise_multiplier(epsilon, delta, n_steps)
    correct = audit_noisy_gradient_sum(
        calibrated * clip, clip, claimed_epsilon=epsilon, delta=delta, n_steps=n_steps
    )
    assert correct.consistent, correct
    one_step = gaussian_noise_multiplier(epsilon, delta, 1)
    broken = audit_noisy_gradient_sum(
        one_step * clip, clip, claimed_epsilon=epsilon, delta=delta, n_steps=n_steps
    )
    assert not broken.consistent, broken


def test_poisson_kernel_audit_catches_noise_for_fewer_steps():
    from sklearn_dp.accounting import subsampled_gaussian_noise_multiplier

    epsilon, delta, rate, steps = 2.0, 1e-5, 0.2, 50
    sigma = subsampled_gaussian_noise_multiplier(epsilon, delta, rate, steps)
    correct = audit_noisy_gradient_sum(
        sigma, 1.0, claimed_epsilon=epsilon, delta=delta, n_steps=steps, sampling_rate=rate
    )
    assert correct.consistent, correct
    sigma_one = subsampled_gaussian_noise_multiplier(epsilon, delta, rate, 1)
    broken = audit_noisy_gradient_sum(
        sigma_one, 1.0, claimed_epsilon=epsilon, delta=delta, n_steps=steps, sampling_rate=rate
    )
    assert not broken.consistent, broken


def test_estimator_audit_passes_options_and_catches_noise_off():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) / 3
    X[:, 2] = 0.0  # the canary's feature: unused by D
    y = (X[:, 0] > 0).astype(int)
    model = DPLogisticRegression(
        epsilon=1.0,
        max_iter=5,
        classes=[0, 1],
        data_norm=1.0,
        penalty=None,
        fit_intercept=False,
        clip_norm=0.05,
    )

    def coefficient(fitted):
        return float(fitted.coef_[0, 2])

    # The claim is epsilon=inf, which no audit can refute: this test checks the machinery.
    broken = audit_estimator(
        model.set_params(epsilon=math.inf),
        X,
        y,
        [0.0, 0.0, 50.0],
        1,
        n_runs=100,
        statistic=coefficient,
        calibration_runs=20,
        require_power=False,
    )
    assert broken.n_bound_runs == 80
    # Noise off: D and D' are told apart in every run (the model claims epsilon=inf).
    assert broken.epsilon_lower_bound == pytest.approx(max_epsilon_lower_bound(80, 1e-5))
    assert broken.claimed_epsilon == math.inf


def test_audit_power_check_refuses_audits_that_cannot_fail():
    # 250 bound runs at delta=1e-5 give at most 4.21: a claim of 6 can never be refuted.
    assert max_epsilon_lower_bound(250, 1e-5) == pytest.approx(4.2087, abs=1e-3)
    with pytest.raises(ValueError, match="cannot refute"):
        check_audit_power(6.0, 1e-5, 250)
    assert check_audit_power(3.0, 1e-5, 250) == pytest.approx(4.2087, abs=1e-3)

    calls = []

    def run(with_canary, seed):
        calls.append(seed)
        return float(with_canary)

    # Checked before the first run; the test-suite turns require_power on for every audit.
    with pytest.raises(ValueError, match="cannot refute"):
        audit_mechanism(run, claimed_epsilon=6.0, delta=1e-5, n_runs=500, calibration_runs=250)
    assert calls == []
    result = audit_mechanism(
        run, claimed_epsilon=6.0, delta=1e-5, n_runs=500, calibration_runs=250, require_power=False
    )
    assert not result.can_refute and result.max_lower_bound < 6.0
    result = audit_mechanism(run, claimed_epsilon=3.0, delta=1e-5, n_runs=500, calibration_runs=250)
    assert result.can_refute and result.epsilon_lower_bound == pytest.approx(result.max_lower_bound)
