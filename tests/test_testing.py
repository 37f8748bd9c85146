"""The public audit tools in sklearn_dp.testing, including their power."""

import math

import numpy as np
import pytest

from sklearn_dp import DPLogisticRegression
from sklearn_dp.accounting import gaussian_noise_multiplier
from sklearn_dp.testing import (
    audit_estimator,
    audit_noisy_gradient_sum,
    check_dp_event,
    clopper_pearson,
    epsilon_lower_bound,
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
