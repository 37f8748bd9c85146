"""Loss classes declare the properties solvers read (no isinstance chains elsewhere)."""

import numpy as np
import pytest

from sklearn_dp._losses import (
    LOSSES,
    BinaryLogisticLoss,
    HuberLoss,
    MultinomialLoss,
    SquaredLoss,
    get_loss,
    loss_names,
)


def test_loss_names_by_property():
    smooth, lipschitz = loss_names(smooth=True), loss_names(lipschitz=True)
    assert {"log_loss", "squared", "huber"} <= smooth
    assert not {"absolute", "quantile", "hinge"} & smooth
    assert {"log_loss", "huber", "absolute", "quantile", "hinge"} <= lipschitz
    assert "squared" not in lipschitz
    assert loss_names() == set(LOSSES)
    for name, cls in LOSSES.items():
        assert (name in smooth) == (cls.smoothness is not None), name
        assert (name in lipschitz) == cls.lipschitz, name
        assert (name in loss_names(classification=True)) == cls.is_classification, name


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_scalar_derivative_matches_the_value(name):
    rng = np.random.default_rng(0)
    loss = get_loss(name)
    y = rng.choice([-1.0, 1.0], 50) if loss.is_classification else rng.normal(size=50)
    Z = rng.normal(size=(50, 1)) * 2
    h = 1e-6
    numeric = (loss.value(Z + h, y) - loss.value(Z - h, y)) / (2 * h)
    analytic = loss.derivative(Z, y)[:, 0]
    # Kinks (absolute, quantile, hinge, Huber's threshold) are measure zero here.
    np.testing.assert_allclose(analytic, numeric, atol=1e-5)
    if loss.derivative_bound is not None:
        assert np.all(np.abs(analytic) <= loss.derivative_bound + 1e-12)


@pytest.mark.parametrize("loss", [BinaryLogisticLoss(), HuberLoss(0.7), SquaredLoss()])
def test_curvature_matches_the_derivative_and_the_smoothness(loss):
    rng = np.random.default_rng(1)
    y = rng.choice([-1.0, 1.0], 40) if loss.is_classification else rng.normal(size=40)
    Z = rng.normal(size=(40, 1)) * 2
    h = 1e-6
    numeric = (loss.derivative(Z + h, y) - loss.derivative(Z - h, y))[:, 0] / (2 * h)
    np.testing.assert_allclose(loss.curvature(Z, y), numeric, atol=1e-4)
    assert np.all(loss.curvature(Z, y) <= loss.smoothness + 1e-12)
    assert loss.score_hessian_bound(1) == (1, loss.smoothness)


def test_multinomial_hessian_bound_and_bounded_squared_loss():
    assert MultinomialLoss().score_hessian_bound(4) == (3, 0.25)
    with pytest.raises(ValueError, match="n_outputs >= 2"):
        MultinomialLoss().score_hessian_bound(1)
    with pytest.raises(ValueError, match="one output"):
        HuberLoss().score_hessian_bound(2)
    with pytest.raises(ValueError, match="not smooth"):
        get_loss("absolute").score_hessian_bound(1)
    clipped = SquaredLoss(residual_bound=2.0).with_bounded_derivative()
    assert isinstance(clipped, HuberLoss) and clipped.epsilon_huber == 2.0
    with pytest.raises(ValueError, match="residual bound"):
        SquaredLoss().with_bounded_derivative()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_zero_score_value_bound_holds_on_the_fitted_label_range(name):
    loss = get_loss(name)
    y = np.array([-1.0, 1.0]) if loss.is_classification else np.linspace(-1.0, 1.0, 201)
    values = loss.value(np.zeros((y.size, 1)), y)
    assert values.max() <= loss.zero_score_value_bound(1) + 1e-12


def test_multinomial_zero_score_value_is_log_k():
    loss = get_loss("log_loss", n_classes=4)
    y = np.arange(4)
    assert np.allclose(loss.value(np.zeros((4, 4)), y), loss.zero_score_value_bound(4))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_constant_curvature_is_declared_truthfully(name):
    loss = get_loss(name)
    if loss.smoothness is None:
        assert not loss.constant_curvature
        return
    rng = np.random.default_rng(0)
    y = rng.choice([-1.0, 1.0], 50) if loss.is_classification else rng.uniform(-1, 1, 50)
    curvature = loss.curvature(rng.normal(size=(50, 1)) * 3, y)
    assert (np.ptp(curvature) == 0) == loss.constant_curvature
