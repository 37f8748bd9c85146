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
They are properties of the loss alone, never of the data.  Solvers read what
they need from the loss objects (``lipschitz``, ``smoothness``,
:meth:`GLMLoss.score_hessian_bound`, :meth:`GLMLoss.curvature`) and the
registry reads the loss names by property (:func:`loss_names`): a new loss
declares its constants here and every solver that can use it sees it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import expit, log_expit, logsumexp, softmax

from ._clipped_sums import clipped_gradient_sum

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
    "loss_names",
    "LOSSES",
    "clipped_gradient_sum",
    "objective",
    "objective_gradient",
]


class GLMLoss:
    """Base class: ``value`` and ``derivative`` of ``l(z, y)`` per sample.

    Single-output losses implement :meth:`scalar_derivative` (and, when
    smooth, :meth:`scalar_curvature`) on scores of any shape; ``derivative``
    and ``curvature`` are built from them.
    """

    name = "base"
    #: sup over z, y of ||dl/dz||_2, or None if unbounded.
    derivative_bound: float | None = None
    #: sup of the Hessian's largest eigenvalue in z, or None if not smooth.
    smoothness: float | None = None
    #: Whether the derivative is bounded for every score and label without a
    #: public bound on the scores (the squared loss needs one: it is not).
    lipschitz = True
    is_classification = False
    multi_output = False
    #: Whether the curvature is the same at every score (dp_newton then
    #: releases the exact Hessian once).
    constant_curvature = False

    @property
    def newton_eigenvalue_floor(self):
        """``(eigenvalue, floor_scale)``: dp_newton's defaults for this loss.

        The eigenvalue modification and the floor, in units of the curvature
        noise's spectral norm, by the loss's kind (a loss may set its own): a
        regression loss's curvature bound is (nearly) its curvature at small
        residuals, so noise that lowers an eigenvalue makes the step overshoot
        and two noise norms are added to every eigenvalue; a classification
        loss's bound has slack away from the decision boundary, and
        eigenvalues clipped at 0.3 noise norms let the steps move along flat
        directions.  Measured in docs/solvers/second_order.md.
        """
        return ("clip", 0.3) if self.is_classification else ("add", 2.0)

    def newton_floor_scale(self, relative_noise):
        """dp_newton's default floor, in noise norms, at a public relative noise level.

        ``relative_noise`` is the expected spectral norm of the averaged
        curvature's noise over the largest curvature one row can have
        (``curvature_bound * R^2``): a function of the noise scale, the row
        bound and the released row count only.  By default the floor of
        :attr:`newton_eigenvalue_floor` at every noise level.
        """
        return self.newton_eigenvalue_floor[1]

    def value(self, Z, y):  # pragma: no cover - interface
        raise NotImplementedError

    def scalar_derivative(self, U, y):  # pragma: no cover - interface
        """``dl/dz`` at scores ``U`` (any shape broadcasting with ``y``), single output."""
        raise NotImplementedError

    def scalar_curvature(self, U, y):
        """``d2l/dz2`` at scores ``U`` (a generalised one where it jumps), single output."""
        raise ValueError(f"The {self.name!r} loss is not smooth: it has no curvature.")

    def derivative(self, Z, y):
        return self.scalar_derivative(Z[:, 0], y)[:, None]

    def derivative_in_place(self, Z, y):
        """:meth:`derivative`, which may overwrite the scores ``Z`` (a loss may save the copy)."""
        return self.derivative(Z, y)

    def curvature(self, Z, y):
        """Per-row second derivative ``l''(z)``, shape (n,) (single-output smooth losses)."""
        return self.scalar_curvature(Z[:, 0], y)

    @property
    def curvature_frobenius_bound(self):
        """Bound on the Frobenius norm of one sample's Hessian in the scores, or None.

        For a single output it is the bound on ``|l''(z)|``: ``smoothness``.
        The per-sample Hessian in the coefficients is ``A (x) x x^T``, of
        Frobenius norm ``||A||_F ||x||^2``, which bounds dp_newton's
        Hessian-sum sensitivity.
        """
        return self.smoothness

    def score_hessian_bound(self, n_outputs):
        """``(rank, bound)`` of the Hessian of ``l`` in the scores, for ``n_outputs`` outputs.

        The Hessian has rank at most ``rank`` and trace at most ``rank *
        bound`` (one output: its eigenvalue is at most ``bound``).  Not a
        bound on each eigenvalue for several outputs (the multinomial
        Hessian at ``p = (1/2, 1/2, 0)`` has an eigenvalue 1/2 > 1/3): it is
        what the determinant term of objective perturbation's proof needs,
        ``log det(I + H / Lambda) <= rank log(1 + bound / Lambda)`` by the
        AM-GM inequality on the non-zero eigenvalues.  A ValueError for a
        non-smooth loss or a number of outputs the loss does not have.
        """
        if self.smoothness is None:
            raise ValueError(
                f"The {self.name!r} loss is not smooth (no bounded second derivative)."
            )
        if n_outputs != 1:
            raise ValueError(f"The {self.name!r} loss has one output, got n_outputs={n_outputs}.")
        return 1, float(self.smoothness)

    def with_bounded_derivative(self):
        """The loss whose derivative is this one's clipped to ``derivative_bound`` (itself here)."""
        return self

    def zero_score_value_bound(self, n_outputs):
        """Bound on the mean loss of the zero model, on labels as the estimators fit them.

        Regression labels are scaled to ``[-1, 1]``, where a loss with
        ``|l'| <= |z - y|`` and ``l(y, y) = 0`` is at most ``1/2`` at ``z = 0``
        (squared, Huber); a loss that can exceed it overrides this.
        """
        return 0.5

    def __repr__(self):
        return f"{type(self).__name__}()"


class BinaryLogisticLoss(GLMLoss):
    """``log(1 + exp(-y z))`` with labels ``y`` in {-1, +1}; ``|dl/dz| <= 1``."""

    name = "log_loss"
    derivative_bound = 1.0
    smoothness = 0.25
    is_classification = True

    def zero_score_value_bound(self, n_outputs):
        return math.log(2.0)

    def value(self, Z, y):
        return -log_expit(y * Z[:, 0])

    def scalar_derivative(self, U, y):
        return -y * expit(-y * U)

    def scalar_curvature(self, U, y):
        # One exponential: sigma (1 - sigma) from sigma alone.
        h = 1.0 / (1.0 + np.exp(-np.clip(U, -700.0, 700.0)))
        h *= 1.0 - h
        return h

    def derivative_in_place(self, Z, y):
        # -y sigmoid(-y z), in the scores' own buffer (no temporaries).
        Z[:, 0] *= y
        np.negative(Z, out=Z)
        expit(Z, out=Z)
        Z[:, 0] *= y
        np.negative(Z, out=Z)
        return Z


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

    def zero_score_value_bound(self, n_outputs):
        return math.log(max(2, n_outputs))

    def value(self, Z, y):
        return logsumexp(Z, axis=1) - Z[np.arange(Z.shape[0]), y]

    def derivative(self, Z, y):
        P = softmax(Z, axis=1)
        P[np.arange(Z.shape[0]), y] -= 1.0
        return P

    def curvature(self, Z, y):  # pragma: no cover - the solvers form diag(p) - p p^T
        raise ValueError("The multinomial loss has a matrix curvature, not one per row.")

    @property
    def curvature_frobenius_bound(self):
        # A = diag(p) - p p^T: ||A||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2
        # <= sum p^2 - sum p^3 (Cauchy-Schwarz: (sum p^2)^2 <= sum p^3)
        # = sum p_k^2 (1 - p_k) <= max_k p_k (1 - p_k) <= 1/4.
        return 0.5

    def score_hessian_bound(self, n_outputs):
        # S = diag(p) - p p^T: rank <= K - 1, trace <= 1 - 1/K, so that the
        # determinant term uses K - 1 directions of curvature 1/K each.
        if n_outputs < 2:
            raise ValueError("The multinomial loss needs n_outputs >= 2.")
        return n_outputs - 1, 1.0 / n_outputs


#: The noise level (spectral norm of the averaged Gram matrix's noise over
#: ``R^2``, public) from which the squared loss's dp_newton floor is the full
#: two noise norms; below it the floor falls linearly to one.  Measured with
#: benchmarks/bench_regressor_defaults.py (paired splits, epsilon 0.5 to 2):
#: diabetes (309 rows) lies at 0.065 to 0.18 and keeps two norms, the
#: 3,000-row tables at 0.015 to 0.033 (R^2 +0.9 to +2.1 points against two
#: norms), 10,000 rows of 20 standard-normal features at 0.006 (-0.2 to
#: +0.2); a threshold of 0.1 gained 0.5 more on the 3,000-row tables but lost
#: 1.8 points on diabetes at epsilon 2.
SQUARED_FLOOR_NOISE = 0.05


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
    lipschitz = False
    constant_curvature = True

    def __init__(self, residual_bound=None):
        self.derivative_bound = None if residual_bound is None else float(residual_bound)

    def newton_floor_scale(self, relative_noise):
        """Two noise norms added to every eigenvalue where the noise is large, one where it is small.

        ``1 + min(1, relative_noise / SQUARED_FLOOR_NOISE)``.  One noise norm
        added keeps the released Gram matrix plus the floor above the true
        one along every direction (Weyl's inequality, at the expected norm
        of the noise), so the steps do not overshoot; the second norm is a
        margin that pays where the noise is large against the curvature
        (it damps the steps, like a ridge) and costs where it is small: the
        five steps then stop short of the optimum along the directions of
        small curvature (the noiseless fit of the 3,000-row housing table
        loses 4.6 points of R^2 to the floor of two).  Measured in
        docs/solvers/second_order.md.
        """
        return 1.0 + min(1.0, relative_noise / SQUARED_FLOOR_NOISE)

    def __repr__(self):
        return f"SquaredLoss(residual_bound={self.derivative_bound!r})"

    def value(self, Z, y):
        return 0.5 * (Z[:, 0] - y) ** 2

    def scalar_derivative(self, U, y):
        return U - y

    def scalar_curvature(self, U, y):
        return np.ones(np.broadcast(U, y).shape)

    def with_bounded_derivative(self):
        # Clipping the derivative z - y at +-k *is* the Huber loss with threshold k.
        if self.derivative_bound is None:
            raise ValueError(
                "The squared loss needs a public residual bound for a bounded derivative "
                "(the estimator sets one)."
            )
        return HuberLoss(epsilon_huber=self.derivative_bound)


class HuberLoss(GLMLoss):
    """Huber loss with threshold ``epsilon_huber``: ``|dl/dz| <= epsilon_huber``."""

    name = "huber"
    smoothness = 1.0
    # Its bound is its curvature on the inliers, with a clipped (small)
    # gradient: half a noise norm added is enough.
    newton_eigenvalue_floor = ("add", 0.5)

    def __init__(self, epsilon_huber=1.35):
        self.epsilon_huber = float(epsilon_huber)
        self.derivative_bound = self.epsilon_huber

    def value(self, Z, y):
        r = np.abs(Z[:, 0] - y)
        k = self.epsilon_huber
        return np.where(r <= k, 0.5 * r**2, k * r - 0.5 * k**2)

    def scalar_derivative(self, U, y):
        return np.clip(U - y, -self.epsilon_huber, self.epsilon_huber)

    def scalar_curvature(self, U, y):
        # Huber is C^1 with l'' = 1 inside the threshold and 0 outside; Newton
        # uses this generalised Hessian (semismooth Newton).
        return (np.abs(U - y) <= self.epsilon_huber).astype(float)

    def __repr__(self):
        return f"HuberLoss(epsilon_huber={self.epsilon_huber!r})"


class AbsoluteLoss(GLMLoss):
    """``|z - y|``: 1-Lipschitz, not smooth (subgradient ``sign(z - y)``)."""

    name = "absolute"
    derivative_bound = 1.0
    smoothness = None

    def value(self, Z, y):
        return np.abs(Z[:, 0] - y)

    def zero_score_value_bound(self, n_outputs):
        return 1.0

    def scalar_derivative(self, U, y):
        return np.sign(U - y)


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

    def zero_score_value_bound(self, n_outputs):
        return self.derivative_bound

    def scalar_derivative(self, U, y):
        # A subgradient: 1 - q above the label, -q below (and at) it.
        return np.where(U > y, 1.0 - self.quantile, -self.quantile)

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

    def zero_score_value_bound(self, n_outputs):
        return 1.0

    def scalar_derivative(self, U, y):
        return np.where(y * U < 1.0, -y, 0.0)


#: Loss name -> its class (``log_loss``: the binary class; the multinomial
#: one is chosen by :func:`get_loss` for more than two classes and shares its
#: properties).
LOSSES = {
    cls.name: cls
    for cls in (BinaryLogisticLoss, SquaredLoss, HuberLoss, AbsoluteLoss, QuantileLoss, HingeLoss)
}


def loss_names(*, smooth=None, lipschitz=None, classification=None):
    """The names of the losses with the given properties (None: either)."""
    return frozenset(
        name
        for name, cls in LOSSES.items()
        if (smooth is None or (cls.smoothness is not None) == smooth)
        and (lipschitz is None or cls.lipschitz == lipschitz)
        and (classification is None or cls.is_classification == classification)
    )


def get_loss(name, n_classes=None, **params):
    """The loss object for a public loss name."""
    if name == "log_loss" and n_classes is not None and n_classes > 2:
        return MultinomialLoss()
    try:
        cls = LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}.") from None
    return cls(**params)


def objective(X, y, W, loss, alpha, penalized):
    """Average loss plus ``alpha / 2 * ||W[penalized]||^2`` (no clipping, no noise)."""
    value = np.mean(loss.value(np.asarray(X @ W), y))
    return value + 0.5 * alpha * np.sum(W[penalized] ** 2)


def objective_gradient(X, y, W, loss, alpha, penalized):
    """Exact gradient of :func:`objective` (non-private helper for references and tests)."""
    grad = clipped_gradient_sum(X, y, W, loss, None, None) / X.shape[0]
    grad[penalized] += alpha * W[penalized]
    return grad
