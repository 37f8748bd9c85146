"""Losses of generalised linear models, with the constants privacy needs.

A GLM loss is ``l(z, y)`` of the linear score ``z = x @ W`` (one column per
output).  Its per-sample gradient in ``W`` is ``outer(x, dl/dz)``, so

* the per-sample gradient norm is ``||dl/dz||_2 * ||x||_2`` (Frobenius norm for
  several outputs): clipping it needs one scalar per sample, never the
  gradient itself;
* a sum of (clipped) per-sample gradients is ``X.T @ (scale[:, None] * dl/dz)``:
  with ``Z = X @ W`` that is two mat-vecs (mat-mats for several outputs).

Each loss states ``derivative_bound`` (sup of ``||dl/dz||_2`` over the scores
and labels it accepts; ``None`` when unbounded) and ``smoothness`` (sup of the
largest eigenvalue of the Hessian of ``l`` in ``z``; ``None`` when not smooth).
They are properties of the loss alone, never of the data.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

from ._kernels import clipped_gradient_sum

__all__ = [
    "GLMLoss",
    "BinaryLogisticLoss",
    "MultinomialLoss",
    "SquaredLoss",
    "HuberLoss",
    "AbsoluteLoss",
    "QuantileLoss",
    "HingeLoss",
    "get_loss",
    "clipped_gradient_sum",
    "objective",
    "objective_gradient",
]


class GLMLoss:
    """Base class: ``value`` and ``derivative`` of ``l(z, y)`` per sample."""

    name = "base"
    #: sup over z, y of ||dl/dz||_2, or None if unbounded.
    derivative_bound: float | None = None
    #: sup of the Hessian's largest eigenvalue in z, or None if not smooth.
    smoothness: float | None = None
    is_classification = False
    multi_output = False

    def value(self, Z, y):  # pragma: no cover - interface
        raise NotImplementedError

    def derivative(self, Z, y):  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}()"


class BinaryLogisticLoss(GLMLoss):
    """``log(1 + exp(-y z))`` with labels ``y`` in {-1, +1}; ``|dl/dz| <= 1``."""

    name = "log_loss"
    derivative_bound = 1.0
    smoothness = 0.25
    is_classification = True

    def value(self, Z, y):
        return -log_expit(y * Z[:, 0])

    def derivative(self, Z, y):
        return (-y * expit(-y * Z[:, 0]))[:, None]


class MultinomialLoss(GLMLoss):
    """Cross-entropy of ``softmax(z)`` with integer labels in ``range(K)``.

    ``dl/dz = softmax(z) - e_y`` has L2 norm at most ``sqrt(2)`` (jointly over
    the K outputs: the multinomial model is one mechanism, not K), and the
    Hessian ``diag(p) - p p^T`` has largest eigenvalue at most 1/2.
    """

    name = "log_loss"
    derivative_bound = float(np.sqrt(2.0))
    smoothness = 0.5
    is_classification = True
    multi_output = True

    def value(self, Z, y):
        return logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y]

    def derivative(self, Z, y):
        P = softmax(Z, axis=1)
        P[np.arange(Z.shape[0]), y] -= 1.0
        return P


class SquaredLoss(GLMLoss):
    """``(z - y)^2 / 2``: smooth (1), derivative unbounded unless scores are.

    Parameters
    ----------
    residual_bound : float or None
        A public bound on ``|z - y|`` (for example ``radius * row_norm_bound +
        y_bound`` when coefficients live in an L2 ball of ``radius``); it
        becomes ``derivative_bound``.  None leaves the derivative unbounded,
        and solvers then need an explicit gradient clip.
    """

    name = "squared"
    smoothness = 1.0

    def __init__(self, residual_bound=None):
        self.derivative_bound = None if residual_bound is None else float(residual_bound)

    def __repr__(self):
        return f"SquaredLoss(residual_bound={self.derivative_bound!r})"

    def value(self, Z, y):
        return 0.5 * (Z[:, 0] - y) ** 2

    def derivative(self, Z, y):
        return (Z[:, 0] - y)[:, None]


class HuberLoss(GLMLoss):
    """Huber loss with threshold ``epsilon_huber``: ``|dl/dz| <= epsilon_huber``."""

    name = "huber"
    smoothness = 1.0

    def __init__(self, epsilon_huber=1.35):
        self.epsilon_huber = float(epsilon_huber)
        self.derivative_bound = self.epsilon_huber

    def value(self, Z, y):
        r = np.abs(Z[:, 0] - y)
        k = self.epsilon_huber
        return np.where(r <= k, 0.5 * r**2, k * r - 0.5 * k**2)

    def derivative(self, Z, y):
        return np.clip(Z[:, 0] - y, -self.epsilon_huber, self.epsilon_huber)[:, None]

    def __repr__(self):
        return f"HuberLoss(epsilon_huber={self.epsilon_huber!r})"


class AbsoluteLoss(GLMLoss):
    """``|z - y|``: 1-Lipschitz, not smooth (subgradient ``sign(z - y)``)."""

    name = "absolute"
    derivative_bound = 1.0
    smoothness = None

    def value(self, Z, y):
        return np.abs(Z[:, 0] - y)

    def derivative(self, Z, y):
        return np.sign(Z[:, 0] - y)[:, None]


class QuantileLoss(GLMLoss):
    """Pinball loss ``max(q (y - z), (q - 1) (y - z))`` of the ``quantile`` q in (0, 1).

    Not smooth; ``|dl/dz| <= max(q, 1 - q)``.  ``quantile=0.5`` is half the
    absolute loss.
    """

    name = "quantile"
    smoothness = None

    def __init__(self, quantile=0.5):
        quantile = float(quantile)
        if not 0.0 < quantile < 1.0:
            raise ValueError(f"quantile must be in (0, 1), got {quantile!r}.")
        self.quantile = quantile
        self.derivative_bound = max(quantile, 1.0 - quantile)

    def value(self, Z, y):
        residual = y - Z[:, 0]
        return np.maximum(self.quantile * residual, (self.quantile - 1.0) * residual)

    def derivative(self, Z, y):
        # A subgradient: 1 - q above the label, -q below (and at) it.
        return np.where(Z[:, 0] > y, 1.0 - self.quantile, -self.quantile)[:, None]

    def __repr__(self):
        return f"QuantileLoss(quantile={self.quantile!r})"


class HingeLoss(GLMLoss):
    """``max(0, 1 - y z)`` with labels ``y`` in {-1, +1}; ``|dl/dz| <= 1``, not smooth."""

    name = "hinge"
    derivative_bound = 1.0
    smoothness = None
    is_classification = True

    def value(self, Z, y):
        return np.maximum(0.0, 1.0 - y * Z[:, 0])

    def derivative(self, Z, y):
        return np.where(y * Z[:, 0] < 1.0, -y, 0.0)[:, None]


def get_loss(name, n_classes=None, **params):
    """The loss object for a public loss name."""
    if name == "log_loss":
        return MultinomialLoss() if n_classes is not None and n_classes > 2 else BinaryLogisticLoss()
    if name == "squared":
        return SquaredLoss(**params)
    if name == "huber":
        return HuberLoss(**params)
    if name == "absolute":
        return AbsoluteLoss()
    if name == "quantile":
        return QuantileLoss(**params)
    if name == "hinge":
        return HingeLoss()
    raise ValueError(f"Unknown loss {name!r}.")


def objective(X, y, W, loss, alpha, penalized):
    """Average loss plus ``alpha / 2 * ||W[penalized]||^2`` (no clipping, no noise)."""
    value = np.mean(loss.value(np.asarray(X @ W), y))
    return value + 0.5 * alpha * np.sum(W[penalized] ** 2)


def objective_gradient(X, y, W, loss, alpha, penalized):
    """Exact gradient of :func:`objective` (non-private helper for references and tests)."""
    grad = clipped_gradient_sum(X, y, W, loss, None, None) / X.shape[0]
    grad[penalized] += alpha * W[penalized]
    return grad
