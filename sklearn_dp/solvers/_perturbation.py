r"""Output perturbation and objective perturbation: the classic DP-ERM baselines.

Two solvers for L2-regularised, smooth, convex GLM losses, after Chaudhuri,
Monteleoni and Sarwate (2011, JMLR, "Differentially private empirical risk
minimization": Algorithm 1 output perturbation, Theorem 6; Algorithm 2
objective perturbation, Theorem 9) and, for Gaussian objective perturbation,
Kifer, Smith and Thakurta (2012, COLT).  Both give pure epsilon-DP
(``delta=0``, Gamma-norm noise) or (epsilon, delta)-DP (Gaussian noise).
Chaudhuri et al. prove their theorems for the replace-one relation; everything
below is re-derived for the library's add/remove-one relation, and for an
inexact (numerical) solve.  ``docs/solvers/perturbation.md`` has the same
derivation with more words.

Setting and notation
--------------------
Rows ``x_i`` (intercept column included) satisfy ``||x_i||_2 <= R`` (``R =
data.row_norm_bound``, public; rows are clipped to it).  The coefficients are
a ``p x K`` matrix ``W`` (``K = 1`` for binary logistic and regression, ``K``
classes for the multinomial model), the per-row loss is ``l_i(W) = l(x_i^T W,
y_i)``.  Constants of the loss (public, properties of the loss alone):

* ``L``: ``||dl/dz||_2 <= L`` (1 logistic, sqrt(2) multinomial, the threshold
  ``k`` for Huber), so ``||grad l_i(W)||_F = ||x_i|| ||dl/dz|| <= G := L R``;
* ``c``: ``0 <= d2l/dz2 <= c`` (1/4 logistic, 1 Huber/squared); for the
  multinomial loss the Hessian in z is ``S = diag(p) - p p^T``, of rank at most
  ``K - 1`` and trace ``1 - ||p||^2 <= 1 - 1/K``.

Both solvers work on the SUM form

    F_D(W) = sum_{i in D} l_i(W) + (Lambda / 2) ||W||_F^2,

with ``Lambda = n * alpha`` computed from the public ``n`` and the
estimator's penalty ``alpha`` (on the average loss), so that adding or
removing a row changes the loss sum by one term and leaves the regulariser
alone.  The analysis treats ``Lambda`` as a fixed public constant; neighbours
``D`` and ``D' = D + {x'}`` are fitted with the same ``Lambda`` (this is how the
library treats ``n`` everywhere: public).  **Every coordinate is penalised,
the intercept too**: an unpenalised direction makes ``F_D`` not strongly
convex and the sensitivity unbounded (all labels +1 sends the intercept to
infinity).  The intercept is therefore shrunk by ``Lambda / 2 * (b / s)^2``
(``s = intercept_scaling``), as in liblinear; a larger ``intercept_scaling``
weakens that shrinkage at the price of a larger ``R``.

Squared loss.  Its derivative ``z - y`` is not bounded.  These solvers clip it
at the public residual bound ``k = loss.derivative_bound`` (2 in the
regressor's scaled units: labels in [-1, 1]), which is *exactly* the Huber loss
with threshold ``k``: the objective minimised equals the squared loss for
every row whose residual at the solution is at most ``k`` (in original units
``2 * y_bound``) and grows linearly beyond.  What is bounded is therefore the
per-row derivative, ``|dl/dz| <= k``, by construction.

Lemma 1 (add/remove sensitivity of the regularised minimiser)
-----------------------------------------------------------
Let ``F`` be ``Lambda``-strongly convex and differentiable, ``g`` convex and
differentiable with ``||grad g|| <= G`` everywhere, ``w* = argmin F`` and
``w'* = argmin (F + g)``.  Then ``||w'* - w*|| <= G / Lambda``.

*Proof.* Optimality gives ``grad F(w*) = 0`` and ``grad F(w'*) = -grad
g(w'*)``.  Strong convexity of ``F`` gives, with ``u = w'* - w*``,
``Lambda ||u||^2 <= <grad F(w'*) - grad F(w*), u> = -<grad g(w'*), u> <= G
||u||``.  []

With ``F = F_D`` and ``g = l_{x'}`` (adding ``x'``), or ``F = F_{D'}`` and
``g = l_{x'}`` (removing it from ``D'``), the minimiser moves by at most
``G / Lambda`` in L2 (Frobenius) norm: the add/remove sensitivity is ``G /
Lambda = L R / (n alpha)``, half of Chaudhuri et al.'s replace-one ``2 L R /
(n lambda)``.  Only the strong convexity of ``F`` is used, so the argument is
the same for one or K outputs (multinomial: ``G = sqrt(2) R`` jointly, one
mechanism over all classes, no split of epsilon).

Lemma 2 (inexact solve)
-----------------------
If ``F`` is ``Lambda``-strongly convex then ``||w - w*|| <= ||grad F(w)|| /
Lambda`` for every ``w``: ``Lambda ||w - w*||^2 <= <grad F(w) - grad F(w*),
w - w*> <= ||grad F(w)|| ||w - w*||``.

The privacy proofs assume the exact minimiser; a numerical solve only
reaches ``||grad F(w_hat)|| <= tol``.  The solvers stop on a PUBLIC tolerance
``tol = gradient_tol * G`` (default ``gradient_tol = 1e-6``), verify the
achieved gradient norm against it after the solve, and raise (releasing
nothing and spending nothing) if it was not reached: the guarantee is never
silently weakened.  (The raise itself depends on the data; for these
strongly convex, smooth problems the damped Newton method below reaches the
tolerance in exact arithmetic, so it signals a numerical failure, not a
property of one row.)

Output perturbation (Algorithm 1, re-derived)
---------------------------------------------
Release ``W_hat + B``, ``W_hat`` the numerical minimiser of ``F_D``.  By Lemmas
1 and 2, for neighbours ``||W_hat(D) - W_hat(D')|| <= G / Lambda + 2 tol /
Lambda =: Delta`` (the tolerance costs a factor ``1 + 2 gradient_tol`` on the
sensitivity: 2e-6 by default).  Then

* pure epsilon-DP: ``B`` has density proportional to ``exp(-epsilon ||B||_F /
  Delta)`` on R^m (``m = p K``), i.e. ``||B|| ~ Gamma(shape=m, scale=Delta /
  epsilon)`` and ``B / ||B||`` uniform on the sphere.  The density ratio at
  any output ``o`` is ``exp(epsilon (||o - W_D'|| - ||o - W_D||) / Delta) <=
  exp(epsilon ||W_D - W_D'|| / Delta) <= e^epsilon``.  Recorded as
  ``PureEpsilonDpEvent(epsilon, "output_perturbation")``.
* (epsilon, delta)-DP: ``B ~ N(0, (sigma Delta)^2 I)`` with ``sigma =
  gaussian_noise_multiplier(epsilon, delta, 1)`` (the exact analytic Gaussian
  mechanism on L2 sensitivity ``Delta``); recorded as ``GaussianDpEvent(sigma)``.

Objective perturbation (Algorithm 2, re-derived)
------------------------------------------------
Release the minimiser of the perturbed objective

    J_b(W) = sum_{i in D} l_i(W) + (Lambda / 2) ||W||^2 + <b, W>,
    Lambda = max(n alpha, Lambda_needed),

where ``Lambda - n alpha`` is Chaudhuri et al.'s extra quadratic term.  For a
loss twice differentiable with ``0 <= l'' <= c``, ``J_b`` is strongly convex
and smooth and ``W -> b_D(W) = -(sum_i grad l_i(W) + Lambda W)`` is a
C^1 bijection of R^m with Jacobian ``-(H_D(W) + Lambda I)``, ``H_D = sum_i
grad^2 l_i``.  The output density is therefore

    p_D(W) = nu(b_D(W)) det(H_D(W) + Lambda I)        (nu: density of b).

For ``D' = D + {x'}``: ``b_{D'}(W) = b_D(W) - g(W)`` with ``g = grad l_{x'}(W) =
x' v^T``, ``v = dl/dz`` at ``x'`` (a fixed direction ``x'`` times a K-vector),
``||g|| <= G``; and ``H_{D'} = H_D + A`` with ``A = S (x) x' x'^T`` (``S =
l''`` for K = 1).

*Determinant term.*  ``det(H_D + A + Lambda I) / det(H_D + Lambda I) =
det(I + A^{1/2} (H_D + Lambda I)^{-1} A^{1/2}) <= det(I + A / Lambda)``
(because ``H_D >= 0``), which lies in ``[1, prod_j (1 + mu_j R^2 / Lambda)]``,
``mu_j`` the eigenvalues of ``S``.  For K = 1 that is ``1 + c R^2 / Lambda``.
For the multinomial loss at most ``K - 1`` eigenvalues are non-zero and they
sum to at most ``1 - 1/K``; by concavity of the logarithm the product is at
most ``(1 + R^2 / (K Lambda))^(K-1)``.  So, with ``r`` the rank (1, or K - 1)
and ``c_dir`` the per-direction curvature (``c``, or 1/K),

    0 <= log det-ratio(D' vs D) <= eps_det(Lambda) := r log(1 + c_dir R^2 / Lambda),

and the ratio in the other direction is at most 1.  Adding ONE row changes
the Hessian by ONE term: this replaces Chaudhuri et al.'s replace-one
``log(1 + 2c/(n lambda) + c^2/(n lambda)^2)`` (two terms).  The solver gives
the determinant the budget ``eps_det_budget = epsilon_split * epsilon``
(default 0.2: Chaudhuri et al. use about 1/2, but on synthetic problems a
smaller share, i.e. more regularisation and less noise, was clearly better
for accuracy, log-loss and R^2) and sets ``Lambda_needed = c_dir R^2 / (exp(eps_det_budget / r)
- 1)``, so ``eps_det(Lambda) <= eps_det_budget`` always; the extra term is
zero when the user's penalty is already strong enough (the unused part of
``eps_det_budget`` is not reallocated, so that the event depends on public
(epsilon, delta) alone).  Chaudhuri et al. instead use the whole
``epsilon - eps_det`` for the noise when it is positive, which makes the noise
blow up just above their threshold; a fixed split is continuous.

*Noise term, pure DP.*  ``nu(b) ~ exp(-beta ||b||)``: ``nu(b_D) / nu(b_{D'})
= exp(beta (||b_{D'}|| - ||b_D||)) in [exp(-beta G), exp(beta G)]``.  With
``beta = eps_noise / G`` (``||b|| ~ Gamma(m, G / eps_noise)``, direction
uniform) the output is ``(eps_noise + eps_det)``-DP in both directions.

*Noise term, Gaussian (Kifer, Smith and Thakurta 2012, re-derived).*  With
``b ~ N(0, sigma_b^2 I)``, ``sigma_b = sigma G``, the privacy loss of output
``W`` is ``log nu(b) / nu(b - g) + log det-ratio`` with ``log nu(b) / nu(b - g)
= (||g||^2 - 2 <b, g>) / (2 sigma_b^2)``.  Although ``g`` depends on ``W`` and
so on ``b``, it always has the form ``x' v^T`` with ``x'`` FIXED and ``v``
orthogonal to the all-ones vector (softmax; any v for K = 1), so ``|<b, g>| =
|v^T P U| <= ||v|| ||P U||`` with ``U = b^T x' ~ N(0, sigma_b^2 ||x'||^2 I_K)``
and ``P`` the projection onto ``1^perp`` (identity for K = 1): ``T := ||P U|| /
(sigma_b ||x'||) ~ chi(r)`` exactly, whatever ``W``.  Hence the privacy loss
is at most ``eps_det + mu^2 / 2 + mu T`` with ``mu = 1 / sigma`` (worst case
``||v|| ||x'|| = G``, the bound being increasing in it), in both directions,
and for every set S, ``P_D(S) - e^eps P_{D'}(S) <= E[(1 - exp(eps - L))_+]``
gives

    delta(eps) <= delta_chi(eps - eps_det) := E[(1 - exp(eps - eps_det - mu^2/2 - mu T))_+],
    T ~ chi(r).

For ``r = 1`` this is ``2 [Phi(-t0) - e^eps' Phi(-t0 - mu)]`` with ``t0 =
max(eps'/mu - mu/2, 0)``: twice the analytic Gaussian delta (the factor 2 is
the two-sided |<b, x'>|, cf. the ``log(2/delta)`` of Iyengar et al. 2019); for
``r >= 2`` it is one numerical integral.  :func:`objective_gaussian_noise_multiplier`
finds the smallest ``sigma`` meeting it (cached).

*Non-twice-differentiable losses (Huber, clipped squared loss).*  Huber's
``l''`` jumps at ``|z - y| = k``.  Mollify: ``l_m = l * phi_m`` is C^inf,
convex, with ``|l_m'| <= k`` and ``0 <= l_m'' <= 1`` (``l'`` is 1-Lipschitz), and
``l_m' -> l'`` uniformly.  For fixed ``(D, b)`` the minimisers ``W_m ->
W*`` (Lemma 2: ``||W_m - W*|| <= n R sup|l_m' - l'| / Lambda``), so each
``M_m(D)`` (epsilon, delta)-DP with the same constants converges almost
surely, hence weakly, to ``M(D)``.  For a closed set C and its open
r-neighbourhoods ``U_r``: ``P(C) <= P(U_r) <= liminf P_m(U_r) <= e^eps limsup
P'_m(cl U_r) + delta <= e^eps P'(cl U_r) + delta`` -> ``e^eps P'(C) + delta``
as r -> 0, and inner regularity extends this to every Borel set.  So the
theorem holds for the Huber loss with ``c = 1``.

*Inexact solve (approximate minima perturbation, Iyengar et al. 2019).*  The
exact minimiser ``W*`` is (epsilon_obj, delta_obj)-DP as above; the solver
returns ``W_hat`` with ``||grad J_b(W_hat)|| <= tol``, so ``||W_hat - W*|| <= tol
/ Lambda`` (Lemma 2), and ``W_hat = h(D, W*)`` (given D, b and W* determine
each other).  For neighbours and the same ``W*``, ``||h(D, W*) - h(D', W*)|| <=
2 tol / Lambda``: releasing ``W_hat + E`` with ``E`` Gamma-norm (pure) or
Gaussian noise for sensitivity ``2 tol / Lambda`` at budget ``eps_residual =
residual_fraction * epsilon`` (and ``residual_fraction * delta``) is an
adaptive composition, and dropping ``W*`` is post-processing.  The tolerance
thus costs 1% of epsilon (and of delta) by default, and the extra noise has a
norm about ``2 gradient_tol / residual_fraction = 2e-4`` times that of the
main noise's effect: negligible.

Totals: pure: ``eps_det + eps_noise + eps_residual = epsilon``, recorded as
``PureEpsilonDpEvent(epsilon, "objective_perturbation")``.  Gaussian:
``epsilon(delta) = eps_det_budget + eps_chi(sigma; (1 - rho) delta) +
eps_gauss(sigma_res; rho delta)`` (``rho = residual_fraction``), recorded as an
:class:`ObjectivePerturbationDpEvent` whose :meth:`~ObjectivePerturbationDpEvent.epsilon`
recomputes it (``accounting.epsilon_of_event`` calls it).

Checked conditions (a clear ``ValueError`` otherwise): a loss with bounded
derivative and bounded second derivative whose curvature is known here
(binary or multinomial log-loss, Huber, squared -> clipped); ``alpha > 0``
(strong convexity); rows bounded by ``R`` (the data layer clips them); no
constraint set.

The exact inner solve is a damped Newton method (dense Hessian up to 2000
coefficients, conjugate gradients on Hessian-vector products beyond, two
mat-vecs each), aimed at ``||grad|| <= tol / 1000`` (Newton converges
quadratically, so this costs about one step more) and verified against
``tol``; typical fits need 5-10 Newton steps.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from scipy import integrate, stats
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit, softmax

from .. import accounting
from .._losses import BinaryLogisticLoss, HuberLoss, MultinomialLoss, SquaredLoss
from ..exceptions import ConvergenceError
from ._common import PrivacyPlan, Progress, SolverResult, check_finite_iterate, make_rng

__all__ = [
    "output_perturbation",
    "objective_perturbation",
    "plan_output_perturbation",
    "plan_objective_perturbation",
    "ObjectivePerturbationDpEvent",
    "objective_gaussian_delta",
    "objective_gaussian_epsilon",
    "objective_gaussian_noise_multiplier",
    "sample_gamma_norm_noise",
    "minimize_strongly_convex",
    "DEFAULT_GRADIENT_TOL",
    "DEFAULT_EPSILON_SPLIT",
    "DEFAULT_RESIDUAL_FRACTION",
]

#: Public stopping tolerance of the inner solve, relative to the per-row gradient bound G.
DEFAULT_GRADIENT_TOL = 1e-6
#: Newton iterations before giving up (the solve then raises).
DEFAULT_NEWTON_ITERATIONS = 100
#: Share of epsilon given to the Jacobian-determinant term of objective perturbation.
DEFAULT_EPSILON_SPLIT = 0.2
#: Share of epsilon (and delta) paying for the inexact solve of objective perturbation.
DEFAULT_RESIDUAL_FRACTION = 0.01
#: Largest number of coefficients for which the Newton step builds the dense Hessian.
DENSE_HESSIAN_MAX_PARAMS = 2000
# Calibrated budgets are shaved by this relative margin, so that float
# rounding in "eps_det + eps_noise + eps_residual" can never exceed epsilon.
_ROUNDING_MARGIN = 1e-9


# --------------------------------------------------------------------------
# The loss, as the proofs need it
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _SmoothGLM:
    """The loss minimised and the public constants of the privacy proofs.

    ``gradient_bound`` is ``G = L * R``; the determinant term is
    ``hessian_rank * log(1 + direction_curvature * R^2 / Lambda)``.
    """

    loss: object
    gradient_bound: float
    hessian_rank: int
    direction_curvature: float

    def epsilon_det(self, row_norm_bound, regularization):
        return self.hessian_rank * math.log1p(
            self.direction_curvature * row_norm_bound**2 / regularization
        )

    def regularization_needed(self, row_norm_bound, epsilon_det_budget):
        """Smallest Lambda with ``epsilon_det(Lambda) <= epsilon_det_budget``."""
        if math.isinf(epsilon_det_budget):
            return 0.0
        return (
            self.direction_curvature
            * row_norm_bound**2
            / math.expm1(epsilon_det_budget / self.hessian_rank)
        )


def _smooth_glm(loss, row_norm_bound, n_outputs, solver):
    """Check the conditions of the proofs and return the loss actually minimised."""
    if isinstance(loss, SquaredLoss):
        if loss.derivative_bound is None:
            raise ValueError(
                f"{solver} needs a bounded derivative: the squared loss needs a public "
                "residual bound (the estimator sets one)."
            )
        # Clipping the derivative z - y at +-k *is* the Huber loss with threshold k.
        loss = HuberLoss(epsilon_huber=loss.derivative_bound)
    if isinstance(loss, MultinomialLoss):
        if n_outputs < 2:
            raise ValueError("The multinomial loss needs n_outputs >= 2.")
        # S = diag(p) - p p^T: rank <= K - 1, trace <= 1 - 1/K.
        rank, curvature = n_outputs - 1, 1.0 / n_outputs
    elif isinstance(loss, (BinaryLogisticLoss, HuberLoss)):
        if n_outputs != 1:
            raise ValueError(f"The {loss.name!r} loss has one output, got n_outputs={n_outputs}.")
        rank, curvature = 1, float(loss.smoothness)
    else:
        reason = (
            "it is not smooth (no bounded second derivative)"
            if getattr(loss, "smoothness", None) is None
            else "its curvature is not implemented here"
        )
        raise ValueError(
            f"{solver} needs a smooth convex loss with bounded derivative and bounded "
            f"second derivative (log_loss, huber, squared); {loss!r} does not fit: {reason}. "
            "Use dp_sgd for non-smooth losses."
        )
    if loss.derivative_bound is None or loss.smoothness is None:  # pragma: no cover
        raise ValueError(f"{solver}: the loss {loss!r} lacks a derivative or curvature bound.")
    if not (row_norm_bound > 0 and math.isfinite(row_norm_bound)):
        raise ValueError(f"row_norm_bound must be finite and > 0, got {row_norm_bound!r}.")
    return _SmoothGLM(
        loss=loss,
        gradient_bound=float(loss.derivative_bound) * float(row_norm_bound),
        hessian_rank=rank,
        direction_curvature=curvature,
    )


def _curvature(loss, Z, y):
    """Per-row second derivative ``l''(z)`` (single-output losses), shape (n,)."""
    if isinstance(loss, BinaryLogisticLoss):
        z = Z[:, 0]
        return expit(z) * expit(-z)
    if isinstance(loss, HuberLoss):
        # Huber is C^1 with l'' = 1 inside the threshold and 0 outside; Newton
        # uses this generalised Hessian (semismooth Newton).
        return (np.abs(Z[:, 0] - y) <= loss.epsilon_huber).astype(float)
    raise TypeError(f"No curvature for {loss!r}.")  # pragma: no cover


# --------------------------------------------------------------------------
# The exact inner solve
# --------------------------------------------------------------------------


def minimize_strongly_convex(
    X,
    y,
    loss,
    *,
    n_outputs,
    regularization,
    linear_term=None,
    tol,
    max_iter=DEFAULT_NEWTON_ITERATIONS,
    progress=None,
):
    """Minimise ``sum_i l(x_i W, y_i) + regularization/2 ||W||^2 + <linear_term, W>`` to ``||grad|| <= tol``.

    Damped Newton with an Armijo backtracking line search (with a rounding
    allowance, so that steps are not refused for differences below the
    precision of the objective).  The Newton system is solved densely up to
    ``DENSE_HESSIAN_MAX_PARAMS`` coefficients, otherwise by conjugate
    gradients on Hessian-vector products (two mat-vecs each).

    Returns
    -------
    W : ndarray of shape (n_columns, n_outputs)
    gradient_norm : float
        ``||grad||_F`` at ``W``, recomputed from scratch.
    n_iter : int

    Raises
    ------
    ConvergenceError
        If ``||grad|| <= tol`` is not reached within ``max_iter`` steps (an
        ``ArithmeticError``).
    """
    n_samples, n_columns = X.shape
    shape = (n_columns, n_outputs)
    n_params = n_columns * n_outputs
    lam = float(regularization)
    B = np.zeros(shape) if linear_term is None else np.asarray(linear_term, dtype=float)
    multinomial = isinstance(loss, MultinomialLoss)

    def value_and_gradient(W):
        Z = np.asarray(X @ W)
        value = np.sum(loss.value(Z, y)) + 0.5 * lam * np.sum(W * W) + np.sum(B * W)
        grad = np.asarray(X.T @ loss.derivative(Z, y)) + lam * W + B
        return value, grad, Z

    def newton_direction(W, grad, Z, forcing):
        if multinomial:
            P = softmax(Z, axis=1)
        else:
            curvature = _curvature(loss, Z, y)
        if n_params <= DENSE_HESSIAN_MAX_PARAMS:
            if multinomial:
                H = _multinomial_hessian(X, P)
            else:
                H = _weighted_gram(X, curvature)
            H[np.diag_indices_from(H)] += lam
            try:
                step = scipy.linalg.solve(H, grad.ravel(), assume_a="pos")
            except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):  # pragma: no cover
                step = scipy.linalg.lstsq(H, grad.ravel())[0]
            return -step.reshape(shape)

        def hessian_vector(v):
            V = v.reshape(shape)
            ZV = np.asarray(X @ V)
            if multinomial:
                SZ = P * ZV - P * np.sum(P * ZV, axis=1, keepdims=True)
            else:
                SZ = curvature[:, None] * ZV
            return (np.asarray(X.T @ SZ) + lam * V).ravel()

        operator = LinearOperator((n_params, n_params), matvec=hessian_vector, dtype=float)
        step, _ = cg(operator, grad.ravel(), atol=0.0, maxiter=max(50, 10 * n_params),
                     **{_CG_RTOL: forcing})
        return -step.reshape(shape)

    W = np.zeros(shape)
    value, grad, Z = value_and_gradient(W)
    grad_norm = initial_norm = max(float(np.linalg.norm(grad)), np.finfo(float).tiny)
    # Newton converges quadratically: aim far below the tolerance (one more
    # step at most), and stop early only if progress stalls below it.
    target = 1e-3 * tol
    n_iter = 0
    previous_norm = math.inf
    while grad_norm > target and n_iter < max_iter:
        if grad_norm <= tol and grad_norm > 0.5 * previous_norm:
            break  # at the precision floor, already within the tolerance
        previous_norm = grad_norm
        n_iter += 1
        # Inexact Newton forcing term (CG path only): superlinear convergence.
        forcing = max(min(0.1, math.sqrt(grad_norm / initial_norm)), 1e-12)
        direction = newton_direction(W, grad, Z, forcing)
        slope = float(np.sum(grad * direction))
        if not slope < 0:  # pragma: no cover - the Hessian is positive definite
            direction, slope = -grad, -grad_norm**2
        # Rounding allowance: below this, differences of the objective are noise.
        allowance = 1e3 * np.finfo(float).eps * (abs(value) + n_samples)
        t = 1.0
        while True:
            W_new = W + t * direction
            value_new, grad_new, Z_new = value_and_gradient(W_new)
            if value_new <= value + 1e-4 * t * slope + allowance or t < 1e-12:
                break
            t *= 0.5
        if t < 1e-12 and value_new > value + allowance:
            break  # no progress possible: reported below
        W, value, grad, Z = W_new, value_new, grad_new, Z_new
        grad_norm = float(np.linalg.norm(grad))
        if progress is not None:
            progress(n_iter, grad_norm=grad_norm, step=t)
    check_finite_iterate(W, "the inner Newton solve")
    # Recompute from scratch: the certified quantity is the gradient at the returned W.
    _, grad, _ = value_and_gradient(W)
    grad_norm = float(np.linalg.norm(grad))
    if not grad_norm <= tol:
        # The message leaves out the gradient norm reached: computed from the
        # private data before any noise, it is not differentially private.
        raise ConvergenceError(
            f"The exact inner solve did not reach the public gradient tolerance {tol:.3g} "
            f"(at most max_iter={max_iter} Newton steps). Nothing was released: "
            "the privacy proof needs the minimiser. Raise max_iter or gradient_tol "
            "(solver_options), or check the data for non-finite values."
        )
    return W, grad_norm, n_iter


def _multinomial_hessian(X, P, chunk=2048):
    """``sum_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` as a dense (pK, pK) array.

    Index ``j * K + k`` (coefficient j, class k), matching ``W.ravel()``.  The
    rank-one part is ``M^T M`` with ``M[i, j*K + k] = x_ij p_ik``, built by row
    chunks so memory stays ``O(chunk * p * K)``.
    """
    n_samples, n_columns = X.shape
    n_outputs = P.shape[1]
    H = np.zeros((n_columns, n_outputs, n_columns, n_outputs))
    for k in range(n_outputs):
        H[:, k, :, k] = _weighted_gram(X, P[:, k])
    H = H.reshape(n_columns * n_outputs, n_columns * n_outputs)
    for start in range(0, n_samples, chunk):
        rows = slice(start, min(start + chunk, n_samples))
        Xc = X[rows]
        Xc = Xc.toarray() if sp.issparse(Xc) else Xc
        M = (Xc[:, :, None] * P[rows, None, :]).reshape(Xc.shape[0], -1)
        H -= M.T @ M
    return H


# scipy renamed cg's relative tolerance from ``tol`` to ``rtol`` in 1.12.
_CG_RTOL = "rtol" if "rtol" in inspect.signature(cg).parameters else "tol"


def _weighted_gram(X, weight):
    """``X^T diag(weight) X`` as a dense array."""
    if sp.issparse(X):
        return np.asarray((X.T @ sp.diags(weight) @ X).toarray())
    return X.T @ (weight[:, None] * X)


# --------------------------------------------------------------------------
# Noise
# --------------------------------------------------------------------------


def sample_gamma_norm_noise(rng, shape, scale):
    """Noise with density proportional to ``exp(-||b||_2 / scale)`` on R^m.

    The norm is ``Gamma(shape=m, scale=scale)`` (the density in polar
    coordinates is ``r^(m-1) exp(-r / scale)``) and the direction is uniform
    on the sphere (a normalised standard Gaussian vector), independent of it.
    """
    size = int(np.prod(shape))
    direction = rng.standard_normal(size)
    norm = np.linalg.norm(direction)
    while norm == 0.0:  # pragma: no cover - probability zero
        direction = rng.standard_normal(size)
        norm = np.linalg.norm(direction)
    radius = rng.gamma(size, scale)
    return (radius * direction / norm).reshape(shape)


def _add_noise(rng, shape, *, pure, scale):
    """Gamma-norm noise of ``scale`` (pure) or N(0, scale^2) (Gaussian); zeros for scale 0."""
    if scale == 0.0:
        return np.zeros(shape)
    if pure:
        return sample_gamma_norm_noise(rng, shape, scale)
    return rng.normal(0.0, scale, size=shape)


# --------------------------------------------------------------------------
# Accounting of Gaussian objective perturbation
# --------------------------------------------------------------------------


def objective_gaussian_delta(epsilon, noise_multiplier, chi_dof):
    """``E[(1 - exp(epsilon - mu^2/2 - mu T))_+]``, ``T ~ chi(chi_dof)``, ``mu = 1/noise_multiplier``.

    The delta at ``epsilon`` of the noise term of Gaussian objective
    perturbation (see the module docstring): the privacy loss is at most
    ``mu^2 / 2 + mu T`` with ``T = ||P b^T x'|| / (sigma_b ||x'||) ~ chi(r)``.
    Closed form for ``chi_dof = 1`` (twice the analytic Gaussian delta when
    ``epsilon >= mu^2/2``); one numerical integral otherwise.
    """
    if noise_multiplier <= 0:
        return 1.0
    mu = 1.0 / noise_multiplier
    epsilon = max(float(epsilon), 0.0)
    t0 = max(epsilon / mu - 0.5 * mu, 0.0)
    if chi_dof == 1:
        value = 2.0 * (stats.norm.sf(t0) - math.exp(epsilon + stats.norm.logsf(t0 + mu)))
    else:
        value = _chi_delta_integral(epsilon, mu, chi_dof)
    return float(min(1.0, max(value, 0.0)))


def _chi_delta_integral(epsilon, mu, chi_dof):
    """``integral over t > t0 of (1 - exp(epsilon - mu^2/2 - mu t)) chi_pdf(t)``: no cancellation."""
    t0 = max(epsilon / mu - 0.5 * mu, 0.0)
    # The chi density is below 1e-300 beyond sqrt(dof) + 40.
    upper = max(t0, math.sqrt(chi_dof)) + 40.0
    middle = max(t0, math.sqrt(max(chi_dof - 1.0, 0.0))) + 8.0

    # log of the chi density's normalising constant, 2^(k/2 - 1) Gamma(k/2).
    log_norm = (0.5 * chi_dof - 1.0) * math.log(2.0) + math.lgamma(0.5 * chi_dof)

    def integrand(t):
        if t <= 0.0:
            return 0.0
        density = math.exp((chi_dof - 1) * math.log(t) - 0.5 * t * t - log_norm)
        return -math.expm1(epsilon - 0.5 * mu * mu - mu * t) * density

    total = 0.0
    for a, b in ((t0, middle), (middle, upper)):
        if b > a:
            part, _ = integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-11, limit=400)
            total += part
    return total


@functools.lru_cache(maxsize=1024)
def objective_gaussian_epsilon(noise_multiplier, delta, chi_dof):
    """Smallest epsilon >= 0 with ``objective_gaussian_delta(epsilon) <= delta`` (an upper end)."""
    if delta <= 0 or noise_multiplier <= 0:
        return math.inf
    if math.isinf(noise_multiplier):
        return 0.0
    if objective_gaussian_delta(0.0, noise_multiplier, chi_dof) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while objective_gaussian_delta(hi, noise_multiplier, chi_dof) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # pragma: no cover
            return math.inf
    for _ in range(200):
        if hi - lo <= 1e-13 * hi:
            break
        mid = 0.5 * (lo + hi)
        if objective_gaussian_delta(mid, noise_multiplier, chi_dof) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


@functools.lru_cache(maxsize=1024)
def objective_gaussian_noise_multiplier(epsilon, delta, chi_dof):
    """Smallest ``sigma`` (noise std / G) with ``objective_gaussian_delta(epsilon, sigma) <= delta``.

    ``delta_chi`` increases with ``mu = 1/sigma``; a bisection on ``mu``
    returns its lower (private) end, and the result is verified.
    """
    if math.isinf(epsilon):
        return 0.0
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"Need epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}.")
    # The analytic Gaussian at (epsilon, delta/2) is exact for chi_dof = 1 and
    # a good starting bracket otherwise.
    start = 1.0 / accounting.gaussian_noise_multiplier(epsilon, delta / 2.0, 1)
    lo, hi = start, start
    while objective_gaussian_delta(epsilon, 1.0 / lo, chi_dof) > delta:
        hi, lo = lo, lo / 2.0
    while objective_gaussian_delta(epsilon, 1.0 / hi, chi_dof) <= delta:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= 1e-12 * hi:
            break
        mid = 0.5 * (lo + hi)
        if objective_gaussian_delta(epsilon, 1.0 / mid, chi_dof) <= delta:
            lo = mid
        else:
            hi = mid
    sigma = 1.0 / lo
    if objective_gaussian_delta(epsilon, sigma, chi_dof) > delta:  # pragma: no cover
        raise AssertionError("Objective perturbation calibration failed its own check.")
    return float(sigma)


class ObjectivePerturbationDpEvent(accounting.ClosedFormDpEvent):
    """Gaussian objective perturbation with its residual (inexact-solve) noise.

    ``epsilon(delta) = epsilon_det + eps_chi(noise_multiplier; (1 - rho) delta)
    + eps_gauss(residual_noise_multiplier; rho delta)`` with ``rho =
    residual_fraction``: the determinant term (an upper bound), the noise
    term of the perturbed objective (:func:`objective_gaussian_delta`, chi
    with ``chi_dof`` degrees of freedom) and the Gaussian mechanism that
    covers the inexact solve, composed basically with a fixed split of delta.
    Add/remove-one neighbours.
    """

    __slots__ = (
        "epsilon_det",
        "noise_multiplier",
        "chi_dof",
        "residual_noise_multiplier",
        "residual_fraction",
    )

    def __init__(
        self, epsilon_det, noise_multiplier, chi_dof, residual_noise_multiplier, residual_fraction
    ):
        object.__setattr__(self, "epsilon_det", float(epsilon_det))
        object.__setattr__(self, "noise_multiplier", float(noise_multiplier))
        object.__setattr__(self, "chi_dof", int(chi_dof))
        object.__setattr__(self, "residual_noise_multiplier", float(residual_noise_multiplier))
        object.__setattr__(self, "residual_fraction", float(residual_fraction))

    def _key(self):
        return (
            self.epsilon_det,
            self.noise_multiplier,
            self.chi_dof,
            self.residual_noise_multiplier,
            self.residual_fraction,
        )

    def epsilon(self, delta):
        delta = float(delta)
        if delta <= 0:
            return math.inf
        rho = self.residual_fraction
        noise = objective_gaussian_epsilon(self.noise_multiplier, (1 - rho) * delta, self.chi_dof)
        residual = float(
            gaussian_mechanism.get_epsilon_gaussian(self.residual_noise_multiplier, rho * delta)
        )
        return math.fsum([self.epsilon_det, noise, residual])

    def __repr__(self):
        return (
            "ObjectivePerturbationDpEvent(epsilon_det={!r}, noise_multiplier={!r}, chi_dof={!r}, "
            "residual_noise_multiplier={!r}, residual_fraction={!r})".format(*self._key())
        )

    def __eq__(self, other):
        return isinstance(other, ObjectivePerturbationDpEvent) and other._key() == self._key()

    def __hash__(self):
        return hash((ObjectivePerturbationDpEvent,) + self._key())

    def __reduce__(self):
        return (ObjectivePerturbationDpEvent, self._key())


# --------------------------------------------------------------------------
# Plans (public inputs only)
# --------------------------------------------------------------------------


def _check_fraction(name, value):
    if isinstance(value, bool) or not (isinstance(value, Real) and 0 < value < 1):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}.")
    return float(value)


def plan_output_perturbation(n_samples, n_params, epsilon, delta):
    """Privacy plan of ``output_perturbation``: one noisy release of the minimiser.

    ``noise_multiplier`` is the noise std per coordinate divided by the
    sensitivity: ``sigma`` for Gaussian noise, ``sqrt(m + 1) / epsilon`` for the
    Gamma-norm noise (``E||b||^2 = m (m + 1) scale^2``).
    """
    if math.isinf(epsilon):
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, 1, dict(noise="none"))
    if delta == 0:
        event = accounting.PureEpsilonDpEvent(epsilon, "output_perturbation")
        multiplier = math.sqrt(n_params + 1.0) / epsilon
        return PrivacyPlan(event, multiplier, 1, dict(noise="gamma_norm", norm_scale=1.0 / epsilon))
    sigma = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    return PrivacyPlan(dpe.GaussianDpEvent(sigma), sigma, 1, dict(noise="gaussian"))


def plan_objective_perturbation(
    n_samples,
    n_params,
    epsilon,
    delta,
    *,
    n_outputs=1,
    epsilon_split=DEFAULT_EPSILON_SPLIT,
    residual_fraction=DEFAULT_RESIDUAL_FRACTION,
):
    """Privacy plan of ``objective_perturbation`` from public inputs.

    Splits epsilon into the determinant budget ``epsilon_split * epsilon``,
    the residual (inexact solve) budget ``residual_fraction * epsilon`` and the
    rest for the noise of the perturbed objective.  ``noise_multiplier`` is
    the std of the objective noise ``b`` per coordinate divided by the
    per-row gradient bound G.
    """
    epsilon_split = _check_fraction("epsilon_split", epsilon_split)
    residual_fraction = _check_fraction("residual_fraction", residual_fraction)
    if epsilon_split + residual_fraction >= 1:
        raise ValueError("epsilon_split + residual_fraction must be < 1 (the noise needs a share).")
    if math.isinf(epsilon):
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, 1, dict(noise="none", epsilon_det=math.inf))
    epsilon_det = epsilon_split * epsilon
    epsilon_residual = residual_fraction * epsilon * (1 - _ROUNDING_MARGIN)
    epsilon_noise = (epsilon - epsilon_det - epsilon_residual) * (1 - _ROUNDING_MARGIN)
    details = dict(
        epsilon_det=epsilon_det, epsilon_noise=epsilon_noise, epsilon_residual=epsilon_residual
    )
    if delta == 0:
        event = accounting.PureEpsilonDpEvent(epsilon, "objective_perturbation")
        multiplier = math.sqrt(n_params + 1.0) / epsilon_noise
        details.update(noise="gamma_norm", norm_scale=1.0 / epsilon_noise)
        return PrivacyPlan(event, multiplier, 1, details)
    chi_dof = n_outputs - 1 if n_outputs > 1 else 1
    delta_residual = residual_fraction * delta
    residual_sigma = accounting.gaussian_noise_multiplier(epsilon_residual, delta_residual, 1)
    sigma = objective_gaussian_noise_multiplier(
        epsilon_noise, (1 - residual_fraction) * delta, chi_dof
    )
    event = ObjectivePerturbationDpEvent(
        epsilon_det, sigma, chi_dof, residual_sigma, residual_fraction
    )
    details.update(noise="gaussian", chi_dof=chi_dof, residual_noise_multiplier=residual_sigma)
    return PrivacyPlan(event, sigma, 1, details)


# --------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------


def _check_common(alpha, gradient_tol, solver):
    if not (alpha > 0 and math.isfinite(alpha)):
        raise ValueError(
            f"{solver} needs an L2 penalty (alpha > 0): its privacy proof rests on the strong "
            "convexity the penalty gives. Use penalty='l2' with a finite C (or alpha > 0)."
        )
    if gradient_tol is None:
        gradient_tol = DEFAULT_GRADIENT_TOL
    if not (gradient_tol > 0 and math.isfinite(gradient_tol)):
        raise ValueError(f"gradient_tol must be a finite float > 0, got {gradient_tol!r}.")
    return float(gradient_tol)


def output_perturbation(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    gradient_tol=None,
    random_state=None,
    verbose=0,
):
    """Output perturbation: the exact regularised minimiser plus calibrated noise.

    Minimises ``sum_i l(x_i W, y_i) + (n alpha / 2) ||W||^2`` (every
    coefficient penalised, the intercept too) to a public gradient tolerance,
    then adds noise scaled to the L2 sensitivity of the minimiser.

    Parameters
    ----------
    data : BoundedData
        Rows clipped to L2 norm ``data.row_norm_bound``.
    loss : GLMLoss
        Binary or multinomial log-loss, Huber, or squared (whose derivative is
        clipped at its public residual bound, i.e. Huber with that threshold).
    n_outputs : int
        1, or the number of classes of a multinomial model (one joint mechanism).
    alpha : float
        L2 penalty on the average loss; must be > 0.
    epsilon, delta : float
        ``delta=0``: pure epsilon-DP with Gamma-norm noise; ``delta > 0``:
        Gaussian noise; ``epsilon=inf``: the exact minimiser, no noise.
    max_iter : int, optional
        Newton iterations allowed (default 100).
    gradient_tol : float, optional
        Public stopping tolerance relative to the per-row gradient bound G
        (default 1e-6): the solve must reach ``||grad|| <= gradient_tol * G``.
    random_state : None, int, RandomState or Generator
    verbose : int

    Returns
    -------
    SolverResult

    Privacy
    -------
    Pure epsilon-DP (``delta=0``) or (epsilon, delta)-DP under add/remove-one
    neighbouring.  With ``G = L * R`` (``L`` the loss's derivative bound, ``R``
    the row bound, sqrt(2) R jointly for the multinomial loss) and ``Lambda =
    n alpha``, the minimiser moves by at most ``G / Lambda`` when a row is added
    or removed (strong convexity), and the numerical solution by at most
    ``Delta = (G + 2 tol) / Lambda`` (tolerance ``tol = gradient_tol * G``,
    verified; the fit raises if it is not reached).  Noise: density
    ``~ exp(-epsilon ||b|| / Delta)`` (norm Gamma(m, Delta/epsilon), uniform
    direction; event ``PureEpsilonDpEvent(epsilon, "output_perturbation")``), or
    ``N(0, (sigma Delta)^2 I)`` with the analytic-Gaussian ``sigma`` (event
    ``GaussianDpEvent(sigma)``).  Public: ``data.n_public`` (a DP count from the
    estimators; the row count itself when called directly), the bounds, alpha,
    the tolerance.
    """
    gradient_tol = _check_common(alpha, gradient_tol, "output_perturbation")
    glm = _smooth_glm(loss, data.row_norm_bound, n_outputs, "output_perturbation")
    n_samples, n_columns = data.X.shape
    plan = plan_output_perturbation(n_samples, n_columns * n_outputs, epsilon, delta)
    # Lambda = n * alpha with the public stand-in for n: the row count is
    # private under add/remove, and the sensitivity G / Lambda needs a Lambda
    # that is the same on neighbouring data sets.
    regularization = data.n_public * float(alpha)
    tol = gradient_tol * glm.gradient_bound
    W, grad_norm, n_iter = minimize_strongly_convex(
        data.X,
        data.y,
        glm.loss,
        n_outputs=n_outputs,
        regularization=regularization,
        tol=tol,
        max_iter=DEFAULT_NEWTON_ITERATIONS if max_iter is None else int(max_iter),
        progress=Progress("output_perturbation", max_iter or DEFAULT_NEWTON_ITERATIONS, verbose),
    )
    sensitivity = (glm.gradient_bound + 2.0 * tol) / regularization
    rng = make_rng(random_state)
    pure = plan.details["noise"] == "gamma_norm"
    scale = 0.0
    if plan.details["noise"] != "none":
        scale = sensitivity / epsilon if pure else plan.noise_multiplier * sensitivity
    coef = W + _add_noise(rng, W.shape, pure=pure, scale=scale)
    plan.details.update(
        sensitivity=sensitivity,
        noise_scale=scale,
        regularization=regularization,
        gradient_tol=tol,
        gradient_norm=grad_norm,
        newton_steps=n_iter,
        loss=repr(glm.loss),
    )
    # One noisy release.  The Newton count depends on the data and is not
    # part of the accounted mechanism, so it stays with the direct caller.
    return SolverResult(coef=coef, n_iter=1, plan=plan)


def objective_perturbation(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    gradient_tol=None,
    epsilon_split=DEFAULT_EPSILON_SPLIT,
    residual_fraction=DEFAULT_RESIDUAL_FRACTION,
    random_state=None,
    verbose=0,
):
    """Objective perturbation: minimise the objective plus a random linear term.

    Minimises ``sum_i l(x_i W, y_i) + (Lambda / 2) ||W||^2 + <b, W>`` with
    ``Lambda = max(n alpha, Lambda_needed)`` (every coefficient penalised, the
    intercept too) to a public gradient tolerance, then adds a tiny noise
    that covers the solver's residual.

    Parameters
    ----------
    data : BoundedData
        Rows clipped to L2 norm ``data.row_norm_bound``.
    loss : GLMLoss
        Binary or multinomial log-loss, Huber, or squared (derivative clipped
        at its public residual bound: Huber with that threshold).
    n_outputs : int
        1, or the number of classes (multinomial: one joint mechanism).
    alpha : float
        L2 penalty on the average loss; must be > 0.
    epsilon, delta : float
        ``delta=0``: pure epsilon-DP (Gamma-norm ``b``); ``delta > 0``:
        Gaussian ``b``; ``epsilon=inf``: no noise, ``Lambda = n alpha``.
    max_iter : int, optional
        Newton iterations allowed (default 100).
    gradient_tol : float, optional
        Public stopping tolerance relative to G (default 1e-6).
    epsilon_split : float, default=0.2
        Share of epsilon for the Jacobian-determinant term; it sets the
        extra regularisation ``Lambda_needed``.  Smaller: more regularisation,
        less noise (0.2 was best or near-best on synthetic problems, see
        ``docs/solvers/perturbation.md``).
    residual_fraction : float, default=0.01
        Share of epsilon (and delta) paying for the inexact solve.
    random_state : None, int, RandomState or Generator
    verbose : int

    Returns
    -------
    SolverResult

    Privacy
    -------
    Pure epsilon-DP (``delta=0``) or (epsilon, delta)-DP under add/remove-one
    neighbouring, for losses with ``|l'| <= L`` and ``0 <= l'' <= c`` (Huber
    through a smoothing limit) on rows of norm ``<= R``.  Adding a row moves
    ``b`` (for a fixed output) by its gradient (norm ``<= G = L R``) and
    multiplies the Jacobian determinant by at most ``exp(eps_det)``,
    ``eps_det = r log(1 + c_dir R^2 / Lambda) <= epsilon_split * epsilon``
    (``r = 1, c_dir = c``; multinomial ``r = K - 1, c_dir = 1/K``).  Pure:
    ``||b|| ~ Gamma(m, G / eps_noise)``; Gaussian: ``b ~ N(0, (sigma G)^2 I)``
    with ``sigma`` from :func:`objective_gaussian_noise_multiplier`.  The
    inexact solve (``||grad|| <= tol``, verified) is covered by output noise of
    sensitivity ``2 tol / Lambda`` at ``residual_fraction`` of the budget.  The
    event is ``PureEpsilonDpEvent(epsilon, "objective_perturbation")`` or an
    :class:`ObjectivePerturbationDpEvent`.  Public: ``data.n_public``, the bounds, alpha,
    the splits and the tolerance.  See the module docstring for the proof.
    """
    gradient_tol = _check_common(alpha, gradient_tol, "objective_perturbation")
    glm = _smooth_glm(loss, data.row_norm_bound, n_outputs, "objective_perturbation")
    n_samples, n_columns = data.X.shape
    n_params = n_columns * n_outputs
    plan = plan_objective_perturbation(
        n_samples,
        n_params,
        epsilon,
        delta,
        n_outputs=n_outputs,
        epsilon_split=epsilon_split,
        residual_fraction=residual_fraction,
    )
    details = plan.details
    R = data.row_norm_bound
    base_regularization = data.n_public * float(alpha)  # public stand-in for n
    regularization = max(
        base_regularization, glm.regularization_needed(R, details["epsilon_det"])
    )
    epsilon_det = glm.epsilon_det(R, regularization)
    if epsilon_det > details["epsilon_det"] * (1 + 1e-12):  # pragma: no cover - by construction
        raise AssertionError("Determinant term over its budget; please report this.")
    shape = (n_columns, n_outputs)
    G = glm.gradient_bound
    rng = make_rng(random_state)
    noise = details["noise"]
    pure = noise == "gamma_norm"
    if noise == "none":
        b_scale = 0.0
    elif pure:
        b_scale = G / details["epsilon_noise"]
    else:
        b_scale = plan.noise_multiplier * G
    b = _add_noise(rng, shape, pure=pure, scale=b_scale)
    tol = gradient_tol * G
    W, grad_norm, n_iter = minimize_strongly_convex(
        data.X,
        data.y,
        glm.loss,
        n_outputs=n_outputs,
        regularization=regularization,
        linear_term=b,
        tol=tol,
        max_iter=DEFAULT_NEWTON_ITERATIONS if max_iter is None else int(max_iter),
        progress=Progress("objective_perturbation", max_iter or DEFAULT_NEWTON_ITERATIONS, verbose),
    )
    residual_sensitivity = 2.0 * tol / regularization
    if noise == "none":
        residual_scale = 0.0
    elif pure:
        residual_scale = residual_sensitivity / details["epsilon_residual"]
    else:
        residual_scale = details["residual_noise_multiplier"] * residual_sensitivity
    coef = W + _add_noise(rng, shape, pure=pure, scale=residual_scale)
    details.update(
        regularization=regularization,
        extra_regularization=regularization - base_regularization,
        epsilon_det_actual=epsilon_det,
        objective_noise_scale=b_scale,
        residual_sensitivity=residual_sensitivity,
        residual_noise_scale=residual_scale,
        gradient_tol=tol,
        gradient_norm=grad_norm,
        gradient_bound=G,
        newton_steps=n_iter,
        loss=repr(glm.loss),
    )
    # One noisy release (see output_perturbation).
    return SolverResult(coef=coef, n_iter=1, plan=plan)
