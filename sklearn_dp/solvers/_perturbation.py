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

The privacy proofs are stated for the exact minimiser; a numerical solve
returns a point ``w_hat`` whose *certificate* ``||grad F(w_hat)||`` bounds its
distance to it.  Both solvers account for a PUBLIC tolerance ``tol =
gradient_tol * G`` (default ``gradient_tol = 1e-6``): every bound below holds
for any ``w_hat`` with ``||w_hat - w*|| <= tol / Lambda`` (for instance one with
``||grad F(w_hat)|| <= tol``), however it was computed.

The inner solve (:func:`sklearn_dp.solvers._newton.certified_minimize`) runs
on private data, so it may not reveal anything by itself: its public phase
takes a fixed, public number of safeguarded Newton steps (``max_iter``, default
``DEFAULT_NEWTON_STEPS = 50``; fewer than ``MIN_NEWTON_STEPS = 10`` are
refused), each with a fixed number of line-search evaluations, and prints
nothing but the public step number.  Non-finite intermediate values are
handled by fixed rules, never by an exception (the inputs are finite and
bounded, so the gradient at every finite point is finite; a non-finite Newton
direction is replaced by ``-grad / Lambda``, a step to a non-finite point is not
taken): these rules are part of the deterministic map ``D -> w_hat(D)`` whose
output the certificate covers.

The certified solve: the guarantee is unconditional
---------------------------------------------------
The bounds below need only that ``w_hat`` lies within ``tol / Lambda`` of the
exact minimiser, and the solve guarantees it whatever the data, with no
convergence assumption.  With ``target = tol / 2``: (1) if the best Newton
iterate's gradient norm is at most ``target``, Lemma 2 (the strong-convexity
certificate) places it within ``target / Lambda``; (2) otherwise at most
``EXTENSION_NEWTON_STEPS`` more Newton steps, returned as soon as one verifies;
(3) otherwise Nesterov's accelerated gradient method for ``Lambda``-strongly
convex, ``L``-smooth functions (Nesterov 2004, *Introductory Lectures on
Convex Optimization*, Thm 2.2.3, constant-momentum scheme), which guarantees
``F(x_T) - F* <= (1 - sqrt(Lambda / L))^T (F(x_0) - F* + Lambda/2 ||x_0 - w*||^2)``
and hence, by strong convexity, ``||x_T - w*|| <= target / Lambda`` after ``T =
ceil(log(2 r^2 / target^2) / -log(1 - sqrt(Lambda / L)))`` steps.  ``T`` is
computed from PUBLIC constants, ``L = Lambda + c R^2 n_public`` and ``r =
n_public G + ||b||`` (``||grad F(0)|| <= r``), and is never below the count
proven from the data's own ``L`` and start (larger only when the public
constants do not bound them, e.g. a DP row count below the true one).  So in
exact arithmetic ``||w_hat - w*|| <= tol / (2 Lambda)`` always; the other half of
``tol`` absorbs floating-point rounding.  :func:`check_certifiable` refuses,
from public values only (before the spend where the public inputs decide it,
else right after the DP row count), a tolerance below the estimated rounding
floor ``u (kappa + n_public) (G + E||b||)`` (``kappa = L / Lambda``) or a
fallback that could need more than ``MAX_ACCELERATED_STEPS`` steps.  Stages 2
and 3 print, warn and raise nothing and leave ``n_iter`` and every detail
unchanged: their only effect is run time.

Output perturbation (Algorithm 1, re-derived)
---------------------------------------------
Release ``W_hat + B``, ``W_hat`` the certified numerical minimiser of ``F_D``
(``||W_hat(D) - w*(D)|| <= tol / (2 Lambda) <= tol / Lambda`` on each side: the
certified solve above, by Lemma 2 or by Nesterov's bound), so by Lemma 1 and
the triangle inequality, for neighbours ``||W_hat(D) - W_hat(D')|| <= G / Lambda
+ 2 tol / Lambda =: Delta``: a public quantity (the tolerance costs a factor
``1 + 2 gradient_tol`` on the sensitivity: 2e-6 by default).  ``Delta`` is the
declared sensitivity of the one release, made through the noise gateway
(:func:`sklearn_dp._noise.gamma_norm` or :func:`sklearn_dp._noise.gaussian`,
label ``"minimiser"``).  Then

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
returns ``W_hat`` with ``||W_hat - W*|| <= tol / (2 Lambda) <= tol / Lambda``
(the same certified solve, on ``J_b``), and ``W_hat = h(D, W*)`` (given D, b and W* determine
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

Releases through the noise gateway: the objective noise ``b`` and the
perturbed solve go through :func:`sklearn_dp._noise.objective_perturbation`
(label ``"perturbed minimiser"``, declared sensitivity ``G``: the shift of
``b_D(W)``; its value is None because the noise enters the objective), and
the residual noise through :func:`sklearn_dp._noise.gamma_norm` or
:func:`sklearn_dp._noise.gaussian` on ``W_hat`` with sensitivity ``2 tol /
Lambda`` (label ``"inexact-solve residual"``).

Checked conditions (a clear ``ValueError`` otherwise, raised by the public
checks :func:`check_objective_perturbation` and
:func:`check_output_perturbation` that estimators run before they reserve
the spend, and again by the solver functions for direct callers): a loss with
bounded derivative and bounded second derivative whose curvature is known
here (binary or multinomial log-loss, Huber, squared -> clipped); ``alpha >
0`` (strong convexity); ``gradient_tol`` finite and positive; ``max_iter >=
MIN_NEWTON_STEPS``; the splits of objective perturbation in (0, 1) with a
positive remainder; rows bounded by ``R`` (the data layer clips them); no
constraint set.

The inner solve is a safeguarded Newton method (dense Hessian up to 2000
coefficients, conjugate gradients on Hessian-vector products beyond, two
mat-vecs each) with an exact line search on the directional derivative; see
:mod:`sklearn_dp.solvers._newton`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting import gaussian_mechanism
from scipy import integrate, stats

from .. import _noise, accounting
from .._losses import loss_names
from ..exceptions import public_error
from ._common import PrivacyPlan, Progress, SolverResult, make_rng
from ._newton import (  # noqa: F401 - re-exported for tests and direct callers
    _EIGENVALUE_SLACK,
    CERTIFICATE_MARGIN,
    DEFAULT_NEWTON_STEPS,
    DENSE_HESSIAN_MAX_PARAMS,
    InnerSolve,
    accelerated_steps,
    certified_minimize,
    minimize_strongly_convex,
)

__all__ = [
    "output_perturbation",
    "objective_perturbation",
    "plan_output_perturbation",
    "plan_objective_perturbation",
    "check_output_perturbation",
    "check_objective_perturbation",
    "ObjectivePerturbationDpEvent",
    "objective_gaussian_delta",
    "objective_gaussian_epsilon",
    "objective_gaussian_noise_multiplier",
    "sample_gamma_norm_noise",
    "minimize_strongly_convex",
    "DEFAULT_GRADIENT_TOL",
    "DEFAULT_NEWTON_STEPS",
    "MIN_NEWTON_STEPS",
    "DEFAULT_EPSILON_SPLIT",
    "DEFAULT_RESIDUAL_FRACTION",
]

#: Public tolerance of the inner solve's certificate, relative to the per-row gradient bound G.
DEFAULT_GRADIENT_TOL = 1e-6
#: Fewest Newton steps accepted (``max_iter``): a smaller budget would rarely meet the certificate.
MIN_NEWTON_STEPS = 10
#: Share of epsilon given to the Jacobian-determinant term of objective perturbation.
DEFAULT_EPSILON_SPLIT = 0.2
#: Share of epsilon (and delta) paying for the inexact solve of objective perturbation.
DEFAULT_RESIDUAL_FRACTION = 0.01
# Calibrated budgets are shaved by this relative margin, so that float
# rounding in "eps_det + eps_noise + eps_residual" can never exceed epsilon.
_ROUNDING_MARGIN = 1e-9

#: Noise with density proportional to ``exp(-||b|| / scale)`` (data-independent;
#: the gateway's :func:`sklearn_dp._noise.gamma_norm_noise`).
sample_gamma_norm_noise = _noise.gamma_norm_noise

#: Losses these solvers accept (the squared loss with its public residual bound).
SMOOTH_LOSSES = loss_names(smooth=True)


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
    row_norm_bound: float = 1.0

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
    if loss.smoothness is None:
        raise ValueError(
            f"{solver} needs a smooth convex loss with bounded derivative and bounded "
            f"second derivative ({', '.join(sorted(SMOOTH_LOSSES))}); {loss!r} does not fit: "
            "it is not smooth (no bounded second derivative). Use dp_sgd for non-smooth losses."
        )
    try:
        loss = loss.with_bounded_derivative()
        rank, curvature = loss.score_hessian_bound(n_outputs)
    except ValueError as exc:
        raise ValueError(f"{solver}: {exc}") from None
    if loss.derivative_bound is None:  # pragma: no cover
        raise ValueError(f"{solver}: the loss {loss!r} lacks a derivative bound.")
    if not (row_norm_bound > 0 and math.isfinite(row_norm_bound)):
        raise ValueError(f"row_norm_bound must be finite and > 0, got {row_norm_bound!r}.")
    return _SmoothGLM(
        loss=loss,
        gradient_bound=float(loss.derivative_bound) * float(row_norm_bound),
        hessian_rank=rank,
        direction_curvature=curvature,
        row_norm_bound=float(row_norm_bound),
    )


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


def plan_output_perturbation(
    n_samples,
    n_params,
    epsilon,
    delta,
    *,
    n_outputs=1,
    loss=None,
    row_norm_bound=None,
    alpha=None,
    gradient_tol=None,
):
    """Privacy plan of ``output_perturbation``: one noisy release of the minimiser.

    ``noise_multiplier`` is the noise std per coordinate divided by the
    sensitivity: ``sigma`` for Gaussian noise, ``sqrt(m + 1) / epsilon`` for the
    Gamma-norm noise (``E||b||^2 = m (m + 1) scale^2``).

    When the loss, the row bound and ``alpha`` are given (estimators pass
    them, from public inputs), the plan also runs the public conditions of
    the certified solve (:func:`check_certifiable`) for ``n_samples`` public
    rows, or, before the row count is released (``n_samples=None``), for one
    row: the conditions only get harder with more rows, so a refusal then is
    conclusive and comes before any spend.
    """
    if math.isinf(epsilon):
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, 1, dict(noise="none"))
    if None not in (loss, row_norm_bound, alpha):
        glm = _glm_or_none(loss, row_norm_bound, n_outputs)
        if glm is not None:
            n_public = 1.0 if n_samples is None else float(n_samples)
            check_certifiable(
                "output_perturbation", glm, regularization=n_public * float(alpha),
                n_public=n_public, noise_norm=0.0, gradient_tol=gradient_tol,
            )
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
    loss=None,
    row_norm_bound=None,
    alpha=None,
    gradient_tol=None,
):
    """Privacy plan of ``objective_perturbation`` from public inputs.

    Splits epsilon into the determinant budget ``epsilon_split * epsilon``,
    the residual (inexact solve) budget ``residual_fraction * epsilon`` and the
    rest for the noise of the perturbed objective.  ``noise_multiplier`` is
    the std of the objective noise ``b`` per coordinate divided by the
    per-row gradient bound G.

    With the loss, the row bound and ``alpha`` (from public inputs), it also
    runs the public conditions of the certified solve, as
    :func:`plan_output_perturbation` does, with ``Lambda = max(n alpha,
    Lambda_needed)`` and the expected norm of ``b``.
    """
    plan = _plan_objective(n_samples, n_params, epsilon, delta, n_outputs=n_outputs,
                           epsilon_split=epsilon_split, residual_fraction=residual_fraction)
    if not math.isinf(epsilon) and None not in (loss, row_norm_bound, alpha):
        glm = _glm_or_none(loss, row_norm_bound, n_outputs)
        if glm is not None:
            n_public = 1.0 if n_samples is None else float(n_samples)
            regularization = max(
                n_public * float(alpha),
                glm.regularization_needed(row_norm_bound, plan.details["epsilon_det"]),
            )
            check_certifiable(
                "objective_perturbation", glm, regularization=regularization,
                n_public=n_public, noise_norm=_objective_noise_norm(plan, glm, n_params),
                gradient_tol=gradient_tol,
            )
    return plan


def _plan_objective(n_samples, n_params, epsilon, delta, *, n_outputs, epsilon_split,
                    residual_fraction):
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


def _objective_noise_norm(plan, glm, n_params):
    """The expected norm of objective perturbation's ``b`` (public): its scale for the check."""
    details = plan.details
    if details["noise"] == "none":
        return 0.0
    if details["noise"] == "gaussian":  # E||b|| <= sqrt(E||b||^2) = sigma G sqrt(m)
        return plan.noise_multiplier * glm.gradient_bound * math.sqrt(n_params)
    return n_params * glm.gradient_bound / details["epsilon_noise"]  # Gamma(m, G / eps) mean


# --------------------------------------------------------------------------
# Public conditions of the certified solve
# --------------------------------------------------------------------------

#: Float64 unit roundoff.
UNIT_ROUNDOFF = 2.0**-53
#: Public cap on the accelerated steps the certified solve's last stage may need.
MAX_ACCELERATED_STEPS = 1_000_000


@dataclass(frozen=True)
class CertificationBounds:
    """Worst-case quantities of the certified solve, from public values only.

    For any data set of at most ``n_public`` rows of norm ``<= R``: the
    condition number ``kappa = L / Lambda`` with ``L = Lambda + c R^2
    n_public`` (``c`` the per-row curvature bound), the rounding scale
    ``u (kappa + n_public) (G + noise_norm)`` of the gradient at the
    coefficients' public scale ``(G + ||b||) / Lambda`` (to first order: the
    rounding of the scores ``X W`` propagated through the loss's curvature,
    ``u L ||W||``, plus that of a sum of ``n_public`` per-row terms of norm ``G``;
    an estimate of the floating-point floor, not a rigorous bound), the
    solve's target ``CERTIFICATE_MARGIN * tol`` and the number of accelerated steps that
    :func:`~sklearn_dp.solvers._newton.accelerated_steps` proves sufficient
    from the worst start ``||grad F(0)|| <= n_public G + ||b||``; ``smoothness``
    (``L``, with the relative slack of
    :func:`~sklearn_dp.solvers._newton.smoothness_bound`, so that it is at
    least the data's bound whenever the data has at most ``n_public`` rows)
    and ``initial_gradient_bound`` (``n_public G + ||b||``) are the public
    constants the certified solve takes its number of accelerated steps from.
    """

    condition_number: float
    rounding_scale: float
    target: float
    accelerated_steps: int
    smoothness: float = math.inf
    initial_gradient_bound: float = math.inf


def certification_bounds(glm, *, regularization, n_public, noise_norm, gradient_tol=None):
    """The :class:`CertificationBounds` of a configuration (public inputs only)."""
    if gradient_tol is None:
        gradient_tol = DEFAULT_GRADIENT_TOL
    G = glm.gradient_bound
    R = glm.row_norm_bound
    lam = float(regularization)
    n_rows = max(float(n_public), 1.0)
    smoothness = lam + float(glm.loss.smoothness) * R**2 * n_rows * (1.0 + _EIGENVALUE_SLACK)
    kappa = smoothness / lam
    target = CERTIFICATE_MARGIN * float(gradient_tol) * G
    initial = n_rows * G + float(noise_norm)
    steps = accelerated_steps(initial, target, smoothness, lam)
    return CertificationBounds(
        condition_number=kappa,
        rounding_scale=UNIT_ROUNDOFF * (kappa + n_rows) * (G + noise_norm),
        target=target,
        accelerated_steps=steps,
        smoothness=smoothness,
        initial_gradient_bound=initial,
    )


def check_certifiable(solver, glm, *, regularization, n_public, noise_norm, gradient_tol=None):
    """Refuse, from public values, a configuration whose solve cannot be certified in practice.

    Two conditions (:class:`CertificationBounds`):

    * the tolerance is attainable in double precision: the rounding scale
      ``u (kappa + n_public) (G + E||b||)`` is at most the solve's target, half the
      tolerance (below it, a verified gradient norm means what it says);
    * the certified solve's last stage, if it ever runs, is bounded: at most
      ``MAX_ACCELERATED_STEPS`` accelerated steps suffice for every data set
      of ``n_public`` rows.

    Raises a ValueError (marked public: a function of public inputs and of the
    released row count) saying what to change.  Both quantities grow with the
    row count, so a check for fewer rows than the fit's is a conclusive
    refusal, not a conclusive acceptance.
    """
    bounds = certification_bounds(glm, regularization=regularization, n_public=n_public,
                                  noise_norm=noise_norm, gradient_tol=gradient_tol)
    penalty = "Use a stronger L2 penalty (a larger alpha, a smaller C)"
    other = "solver='dp_gd' (delta > 0)"
    G = glm.gradient_bound
    if bounds.rounding_scale > bounds.target:
        raise public_error(ValueError(
            f"{solver}: the solve cannot be certified in double precision. With L2 strength "
            f"Lambda={regularization:.3g} for {n_public:.6g} (public) rows of norm at most "
            f"{glm.row_norm_bound:.3g}, the condition number is up to "
            f"{bounds.condition_number:.3g}, and the rounding of the gradient at the "
            f"coefficients' public scale ({bounds.rounding_scale / G:.2g} G) exceeds half the "
            f"tolerance (gradient_tol={bounds.target / (CERTIFICATE_MARGIN * G):.3g}, in units "
            f"of G). {penalty}, a larger solver_options['gradient_tol'], or {other}."
        ))
    if bounds.accelerated_steps > MAX_ACCELERATED_STEPS:
        raise public_error(ValueError(
            f"{solver}: the solve cannot be certified in a bounded time. With L2 strength "
            f"Lambda={regularization:.3g} for {n_public:.6g} (public) rows of norm at most "
            f"{glm.row_norm_bound:.3g}, the condition number is up to "
            f"{bounds.condition_number:.3g}, and the proven fallback of the certified solve "
            f"could need {bounds.accelerated_steps:.3g} accelerated gradient steps (more than "
            f"{MAX_ACCELERATED_STEPS:.0e}). {penalty}, or {other}."
        ))
    return bounds


def _glm_or_none(loss, row_norm_bound, n_outputs):
    """The proofs' loss constants, or None when the loss is not one these solvers take."""
    try:
        return _smooth_glm(loss, row_norm_bound, n_outputs, "plan")
    except ValueError:
        return None



# --------------------------------------------------------------------------
# Public checks (before the reservation) and solvers
# --------------------------------------------------------------------------


def _check_options(
    solver,
    *,
    alpha,
    gradient_tol=None,
    max_iter=None,
    epsilon_split=None,
    residual_fraction=None,
):
    """The public option checks both solvers share; returns ``(gradient_tol, n_steps)``.

    ``alpha=None`` (a strength that scales with the private row count, known
    only inside the fit) skips the penalty check.
    """
    if alpha is not None and not (
        isinstance(alpha, Real) and not isinstance(alpha, bool) and alpha > 0
        and math.isfinite(alpha)
    ):
        raise ValueError(
            f"{solver} needs an L2 penalty (alpha > 0): its privacy proof rests on the strong "
            "convexity the penalty gives. Use penalty='l2' with a finite C (or alpha > 0)."
        )
    if gradient_tol is None:
        gradient_tol = DEFAULT_GRADIENT_TOL
    if isinstance(gradient_tol, bool) or not (
        isinstance(gradient_tol, Real) and gradient_tol > 0 and math.isfinite(gradient_tol)
    ):
        raise ValueError(f"gradient_tol must be a finite float > 0, got {gradient_tol!r}.")
    if max_iter is None:
        n_steps = DEFAULT_NEWTON_STEPS
    elif isinstance(max_iter, bool) or not isinstance(max_iter, Integral):
        raise ValueError(f"max_iter must be an int (Newton steps), got {max_iter!r}.")
    else:
        n_steps = int(max_iter)
    if n_steps < MIN_NEWTON_STEPS:
        raise ValueError(
            f"{solver}: max_iter={n_steps} Newton steps is below {MIN_NEWTON_STEPS}. The inner "
            "solve runs a fixed budget of Newton steps before its (much slower) certified "
            "fallback, and so few steps would rarely reach the public gradient tolerance; leave "
            "max_iter=None (50 steps) or raise it."
        )
    if epsilon_split is not None or residual_fraction is not None:
        split = _check_fraction(
            "epsilon_split", DEFAULT_EPSILON_SPLIT if epsilon_split is None else epsilon_split
        )
        fraction = _check_fraction(
            "residual_fraction",
            DEFAULT_RESIDUAL_FRACTION if residual_fraction is None else residual_fraction,
        )
        if split + fraction >= 1:
            raise ValueError(
                "epsilon_split + residual_fraction must be < 1 (the noise needs a share)."
            )
    return float(gradient_tol), n_steps


def _check_loss_name(loss_name, solver):
    if loss_name not in SMOOTH_LOSSES:
        raise ValueError(
            f"{solver} needs a smooth convex loss with bounded derivative and bounded second "
            f"derivative ({', '.join(sorted(SMOOTH_LOSSES))}); got loss={loss_name!r}. "
            "Use dp_sgd for non-smooth losses."
        )


def check_output_perturbation(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public checks of ``output_perturbation`` (``SolverSpec.check``), before any spend.

    Raises a ValueError for a loss these proofs do not cover, ``alpha <= 0``,
    a bad ``gradient_tol`` or a Newton budget below ``MIN_NEWTON_STEPS``.  A
    function of public inputs only.
    """
    _check_loss_name(loss_name, "output_perturbation")
    _check_options(
        "output_perturbation",
        alpha=alpha,
        gradient_tol=options.get("gradient_tol"),
        max_iter=options.get("max_iter"),
    )


def check_objective_perturbation(
    *, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options
):
    """Public checks of ``objective_perturbation`` (``SolverSpec.check``), before any spend.

    As :func:`check_output_perturbation`, plus ``epsilon_split`` and
    ``residual_fraction`` in (0, 1) with a sum below 1.
    """
    _check_loss_name(loss_name, "objective_perturbation")
    _check_options(
        "objective_perturbation",
        alpha=alpha,
        gradient_tol=options.get("gradient_tol"),
        max_iter=options.get("max_iter"),
        epsilon_split=options.get("epsilon_split", DEFAULT_EPSILON_SPLIT),
        residual_fraction=options.get("residual_fraction", DEFAULT_RESIDUAL_FRACTION),
    )


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
    """Output perturbation: the regularised minimiser plus calibrated noise.

    Minimises ``sum_i l(x_i W, y_i) + (n alpha / 2) ||W||^2`` (every
    coefficient penalised, the intercept too) with a fixed number of Newton
    steps, then adds noise scaled to the L2 sensitivity of the minimiser
    (widened by the public tolerance of the solve).

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
        Gaussian noise; ``epsilon=inf``: the minimiser, no noise.
    max_iter : int, optional
        Newton steps of the inner solve, all of them always run (default 50,
        at least 10).
    gradient_tol : float, optional
        Public tolerance of the solve's certificate relative to the per-row
        gradient bound G (default 1e-6): the sensitivity covers any point
        with ``||grad|| <= gradient_tol * G``.
    random_state : None, int, RandomState or Generator
    verbose : int
        Progress lines show the public Newton step number only.

    Returns
    -------
    SolverResult
        ``n_iter`` is 1 (one noisy release).

    Privacy
    -------
    Pure epsilon-DP (``delta=0``) or (epsilon, delta)-DP under add/remove-one
    neighbouring.  One release, through the noise gateway (label
    ``"minimiser"``): the solve's point ``W_hat`` plus noise.  With ``G = L *
    R`` (``L`` the loss's derivative bound, ``R`` the row bound, sqrt(2) R
    jointly for the multinomial loss), ``Lambda = n alpha`` and the public
    tolerance ``tol = gradient_tol * G``, the exact minimiser moves by at
    most ``G / Lambda`` when a row is added or removed (strong convexity), and
    a point with ``||grad F(W_hat)|| <= tol`` lies within ``tol / Lambda`` of
    it, so the declared sensitivity is ``Delta = (G + 2 tol) / Lambda``.
    Noise: density ``~ exp(-epsilon ||b|| / Delta)`` (norm Gamma(m,
    Delta/epsilon), uniform direction; event ``PureEpsilonDpEvent(epsilon,
    "output_perturbation")``), or ``N(0, (sigma Delta)^2 I)`` with the
    analytic-Gaussian ``sigma`` (event ``GaussianDpEvent(sigma)``).  The
    guarantee is unconditional: the certified solve returns a point within
    ``tol / (2 Lambda)`` of the exact minimiser on every data set, by a
    verified gradient norm (strong convexity) or, when the public Newton
    budget does not verify, by Nesterov's accelerated method run for a step
    count proven sufficient from public constants (``Lambda + c R^2
    n_public``, ``n_public G``, the tolerance); configurations whose tolerance
    is below floating-point rounding, or whose fallback could need more than
    ``MAX_ACCELERATED_STEPS`` steps, are refused from public values.  The
    public Newton phase runs a fixed number of steps and prints only its step
    number; the later stages print, warn and raise nothing; the result's
    ``n_iter`` and every detail are public: every observable is a function of
    public values and of the release.  Public:
    ``data.n_public`` (a DP count from the estimators; the row count itself
    when called directly), the bounds, alpha, the tolerance, the budget.
    """
    gradient_tol, n_steps = _check_options(
        "output_perturbation", alpha=alpha, gradient_tol=gradient_tol, max_iter=max_iter
    )
    glm = _smooth_glm(loss, data.row_norm_bound, n_outputs, "output_perturbation")
    n_samples, n_columns = data.n_samples, data.n_columns
    plan = plan_output_perturbation(n_samples, n_columns * n_outputs, epsilon, delta)
    # Lambda = n * alpha with the public stand-in for n: the row count is
    # private under add/remove, and the sensitivity G / Lambda needs a Lambda
    # that is the same on neighbouring data sets.
    regularization = data.n_public * float(alpha)
    private = not math.isinf(epsilon)
    bounds = None
    if private:
        bounds = check_certifiable("output_perturbation", glm, regularization=regularization,
                                   n_public=data.n_public, noise_norm=0.0,
                                   gradient_tol=gradient_tol)
    tol = gradient_tol * glm.gradient_bound
    sensitivity = (glm.gradient_bound + 2.0 * tol) / regularization
    pure = plan.details["noise"] != "gaussian"
    scale = 0.0
    if plan.details["noise"] != "none":
        scale = sensitivity / epsilon if pure else plan.noise_multiplier * sensitivity
    solve = certified_minimize(
        data.design,
        data.y,
        glm.loss,
        n_outputs=n_outputs,
        regularization=regularization,
        tol=tol,
        n_steps=n_steps,
        progress=Progress("output_perturbation", n_steps, verbose),
        accelerate=private,
        public_smoothness=None if bounds is None else bounds.smoothness,
        public_gradient_bound=None if bounds is None else bounds.initial_gradient_bound,
    )
    rng = make_rng(random_state)
    if pure:
        coef = _noise.gamma_norm(
            solve.coef, sensitivity=sensitivity, scale=scale, rng=rng, label="minimiser"
        )
    else:
        coef = _noise.gaussian(
            solve.coef, sensitivity=sensitivity, noise_std=scale, rng=rng, label="minimiser"
        )
    plan.details.update(
        sensitivity=sensitivity,
        noise_scale=scale,
        regularization=regularization,
        gradient_tol=tol,
        gradient_bound=glm.gradient_bound,
        newton_steps=n_steps,
        loss=repr(glm.loss),
    )
    info = {}
    warning = output_noise_warning(
        loss.name, n_columns * n_outputs, n_outputs, float(alpha), scale, pure
    )
    if warning:
        info["warnings"] = [warning]
    return SolverResult(coef=np.asarray(coef, dtype=float), n_iter=1, plan=plan, info=info)


def output_noise_warning(loss_name, n_params, n_outputs, alpha, scale, pure):
    """A warning when output perturbation's noise outweighs every coefficient the penalty allows.

    The expected norm of the noise (``scale sqrt(p)`` for Gaussian noise,
    ``p scale`` for the gamma-norm noise of pure epsilon-DP) is compared with
    the public bound ``sqrt(2 l0 / alpha)`` on the norm of the minimiser of
    ``mean loss + (alpha / 2) ||W||^2`` (the objective at 0 is at most
    ``l0``: ``log 2`` for the logistic loss, ``log K`` multinomial, ``1/2``
    for regression losses on labels scaled to [-1, 1] as the estimators
    fit them).  Inputs: public values and the released row count (in
    ``scale``) only, so the warning is an admissible output.  Returns None
    when the noise is smaller than that bound.
    """
    if not scale > 0 or not alpha > 0:
        return None
    l0 = math.log(max(2, n_outputs)) if loss_name == "log_loss" else 0.5
    bound = math.sqrt(2.0 * l0 / alpha)
    noise = scale * (n_params if pure else math.sqrt(n_params))
    if noise <= bound:
        return None
    needed = alpha * (noise / bound) ** 2
    return (
        f"output_perturbation: the noise added to the coefficients (norm about {noise:.3g}) "
        f"exceeds the largest coefficient norm the L2 penalty allows ({bound:.3g}): the model "
        f"is mostly noise. The penalty would need to be about {needed:.2g} or more (noise "
        "shrinks as 1 / (n alpha)); or use solver='dp_newton' or 'objective_perturbation', "
        "which do not pay for a small penalty this way."
    )


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
    intercept too) with a fixed number of Newton steps, then adds a tiny
    noise that covers the solve's public tolerance.

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
        Newton steps of the inner solve, all of them always run (default 50,
        at least 10).
    gradient_tol : float, optional
        Public tolerance of the solve's certificate relative to G (default 1e-6).
    epsilon_split : float, default=0.2
        Share of epsilon for the Jacobian-determinant term; it sets the
        extra regularisation ``Lambda_needed``.  Smaller: more regularisation,
        less noise (0.2 was best or near-best on synthetic problems, see
        ``docs/solvers/perturbation.md``).
    residual_fraction : float, default=0.01
        Share of epsilon (and delta) paying for the inexact solve.
    random_state : None, int, RandomState or Generator
    verbose : int
        Progress lines show the public Newton step number only.

    Returns
    -------
    SolverResult
        ``n_iter`` is 1 (one perturbed minimiser, one residual release).

    Privacy
    -------
    Pure epsilon-DP (``delta=0``) or (epsilon, delta)-DP under add/remove-one
    neighbouring, for losses with ``|l'| <= L`` and ``0 <= l'' <= c`` (Huber
    through a smoothing limit) on rows of norm ``<= R``.  Two releases through
    the noise gateway.  (1) The perturbed minimiser
    (:func:`sklearn_dp._noise.objective_perturbation`, label ``"perturbed
    minimiser"``, declared sensitivity ``G = L R``): adding a row moves ``b``
    (for a fixed output) by its gradient, of norm ``<= G``, and multiplies the
    Jacobian determinant by at most ``exp(eps_det)``, ``eps_det = r log(1 +
    c_dir R^2 / Lambda) <= epsilon_split * epsilon`` (``r = 1, c_dir = c``;
    multinomial ``r = K - 1, c_dir = 1/K``).  Pure: ``||b|| ~ Gamma(m, G /
    eps_noise)``; Gaussian: ``b ~ N(0, (sigma G)^2 I)`` with ``sigma`` from
    :func:`objective_gaussian_noise_multiplier`.  (2) The solve returns a
    point within ``tol / Lambda`` of the exact perturbed minimiser (``tol =
    gradient_tol * G``), covered by output noise of sensitivity ``2 tol /
    Lambda`` at ``residual_fraction`` of the budget (label ``"inexact-solve
    residual"``).  That distance is guaranteed, not assumed: the certified
    solve returns a point within ``tol / (2 Lambda)`` on every data set and
    every ``b``, by a verified gradient norm (strong convexity) or by
    Nesterov's accelerated method run for a step count proven sufficient
    from public constants (``Lambda + c R^2 n_public``, ``n_public G + ||b||``,
    the tolerance); configurations beyond floating-point rounding or a
    public step cap are refused from public values.  The public Newton phase
    runs a fixed number of steps and prints only its step number; the later
    stages print, warn and raise nothing: every observable is a function of
    public values and of the releases.  The event is ``PureEpsilonDpEvent(epsilon,
    "objective_perturbation")`` or an :class:`ObjectivePerturbationDpEvent`.
    Public: ``data.n_public``, the bounds, alpha, the splits, the tolerance
    and the budget.  See the module docstring for the proof.
    """
    gradient_tol, n_steps = _check_options(
        "objective_perturbation",
        alpha=alpha,
        gradient_tol=gradient_tol,
        max_iter=max_iter,
        epsilon_split=epsilon_split,
        residual_fraction=residual_fraction,
    )
    glm = _smooth_glm(loss, data.row_norm_bound, n_outputs, "objective_perturbation")
    n_samples, n_columns = data.n_samples, data.n_columns
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
    noise = details["noise"]
    pure = noise != "gaussian"
    if noise == "none":
        b_scale = 0.0
    elif pure:
        b_scale = G / details["epsilon_noise"]
    else:
        b_scale = plan.noise_multiplier * G
    private = noise != "none"
    bounds = None
    if private:
        bounds = check_certifiable("objective_perturbation", glm, regularization=regularization,
                                   n_public=data.n_public,
                                   noise_norm=_objective_noise_norm(plan, glm, n_params),
                                   gradient_tol=gradient_tol)
    tol = gradient_tol * G
    residual_sensitivity = 2.0 * tol / regularization
    if noise == "none":
        residual_scale = 0.0
    elif pure:
        residual_scale = residual_sensitivity / details["epsilon_residual"]
    else:
        residual_scale = details["residual_noise_multiplier"] * residual_sensitivity

    def draw_noise(rng):
        # Data-independent: the linear term of the perturbed objective.
        if b_scale == 0.0:
            return np.zeros(shape)
        if pure:
            return _noise.gamma_norm_noise(rng, shape, b_scale)
        return rng.normal(0.0, b_scale, size=shape)

    def solve(b):
        # The accelerated stage's step count: public constants and the norm of
        # b (data-independent noise), ||grad J_b(0)|| <= n_public G + ||b||.
        public_gradient_bound = None
        if bounds is not None:
            public_gradient_bound = max(float(data.n_public), 1.0) * G + float(np.linalg.norm(b))
        return certified_minimize(
            data.design,
            data.y,
            glm.loss,
            n_outputs=n_outputs,
            regularization=regularization,
            tol=tol,
            linear_term=b,
            accelerate=private,
            n_steps=n_steps,
            progress=Progress("objective_perturbation", n_steps, verbose),
            public_smoothness=None if bounds is None else bounds.smoothness,
            public_gradient_bound=public_gradient_bound,
        ).coef

    rng = make_rng(random_state)
    W = _noise.objective_perturbation(
        solve, draw_noise=draw_noise, sensitivity=G, scale=b_scale, rng=rng,
        label="perturbed minimiser",
    )
    if pure:
        coef = _noise.gamma_norm(
            W, sensitivity=residual_sensitivity, scale=residual_scale, rng=rng,
            label="inexact-solve residual",
        )
    else:
        coef = _noise.gaussian(
            W, sensitivity=residual_sensitivity, noise_std=residual_scale, rng=rng,
            label="inexact-solve residual",
        )
    details.update(
        regularization=regularization,
        extra_regularization=regularization - base_regularization,
        epsilon_det_actual=epsilon_det,
        objective_noise_scale=b_scale,
        residual_sensitivity=residual_sensitivity,
        residual_noise_scale=residual_scale,
        gradient_tol=tol,
        gradient_bound=G,
        newton_steps=n_steps,
        loss=repr(glm.loss),
    )
    return SolverResult(coef=np.asarray(coef, dtype=float), n_iter=1, plan=plan)
