r"""Output perturbation and objective perturbation: the classic DP-ERM baselines.

Two solvers for L2-regularised, smooth, convex GLM losses, after Chaudhuri,
Monteleoni and Sarwate (2011, JMLR, "Differentially private empirical risk
minimization": Algorithm 1 output perturbation, Theorem 6; Algorithm 2
objective perturbation, Theorem 9) and, for Gaussian objective perturbation,
Kifer, Smith and Thakurta (2012, COLT).  Both give pure epsilon-DP
(``delta=0``, L2 Laplace noise) or (epsilon, delta)-DP (Gaussian noise), for
the add/remove-one relation and an inexact (certified) numerical solve.
Every noise is exact: the releases go through the gateway's exact samplers
and objective perturbation's linear term is the rounding, on a fine public
grid, of an exactly sampled continuous vector (docs/solvers/perturbation.md,
"Exact noise").

The proofs (sensitivity of the regularised minimiser, the inexact solve, the
certified solve, output and objective perturbation re-derived) are in
``docs/solvers/perturbation.md``, section "Proofs"; the code below cites its
lemmas.  The certified inner solve is :mod:`sklearn_dp.solvers._newton`, the
accountant of Gaussian objective perturbation
:mod:`sklearn_dp.solvers._objective_accounting`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from types import SimpleNamespace

import numpy as np
from dp_accounting import dp_event as dpe

from .. import _noise, accounting
from .._losses import loss_names
from ._common import PrivacyPlan, Progress, SolverResult, make_rng
from ._newton import (
    DEFAULT_GRADIENT_TOL,
    DEFAULT_NEWTON_STEPS,
    certified_minimize,
    check_certifiable,
)
from ._noisy_steps import plan_of_call
from ._objective_accounting import ObjectivePerturbationDpEvent, objective_gaussian_noise_multiplier
from ._registry import check_declared_options

#: Fewest Newton steps accepted (``max_iter``): a smaller budget would rarely meet the certificate.
MIN_NEWTON_STEPS = 10
#: Share of epsilon given to the Jacobian-determinant term of objective perturbation.
DEFAULT_EPSILON_SPLIT = 0.2
#: Share of epsilon (and delta) paying for the inexact solve of objective perturbation.
DEFAULT_RESIDUAL_FRACTION = 0.01
# Calibrated budgets are shaved by this relative margin, so that float
# rounding in "eps_det + eps_noise + eps_residual" can never exceed epsilon.
_ROUNDING_MARGIN = 1e-9

#: How far objective perturbation's rounded linear term may move the exact
#: perturbed minimiser, relative to the solve's tolerance: the grid of the
#: term is chosen so that ``sqrt(m) g / 2 <= COUPLING_SHARE * tol`` (unless
#: the noise would then need more than ``2**26`` grid steps).
COUPLING_SHARE = 2.0**-12

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

    def epsilon_det(self, regularization):
        curvature = self.direction_curvature * self.row_norm_bound**2
        return self.hessian_rank * math.log1p(curvature / regularization)

    def regularization_needed(self, epsilon_det_budget):
        """Smallest Lambda with ``epsilon_det(Lambda) <= epsilon_det_budget`` (0 for inf)."""
        curvature = self.direction_curvature * self.row_norm_bound**2
        return curvature / math.expm1(epsilon_det_budget / self.hessian_rank)


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
    if not (row_norm_bound > 0 and math.isfinite(row_norm_bound)):
        raise ValueError(f"row_norm_bound must be finite and > 0, got {row_norm_bound!r}.")
    R = float(row_norm_bound)
    return _SmoothGLM(loss, float(loss.derivative_bound) * R, rank, curvature, row_norm_bound=R)


# --------------------------------------------------------------------------
# Plans (public inputs only)
# --------------------------------------------------------------------------


def _check_splits(epsilon_split, residual_fraction):
    """Objective perturbation's shares of epsilon, with a sum below 1.

    Each is in its declared range (the registry's ``option_constraints``):
    the estimators and :func:`~sklearn_dp.solvers.plan_call` check them
    before they plan, and a direct call of the solver in ``plan_of_call``.
    """
    if epsilon_split + residual_fraction >= 1:
        raise ValueError("epsilon_split + residual_fraction must be < 1 (the noise needs a share).")
    return float(epsilon_split), float(residual_fraction)


def _certify(solver, n_samples, call, *, epsilon_det=math.inf, noise_norm=None):
    """The public conditions of the certified solve, from a plan's public inputs.

    Runs :func:`check_certifiable` for ``n_samples`` public rows, or, before
    the row count is released (``n_samples=None``), for one row (the
    conditions only get harder with more rows, so a refusal then is
    conclusive and comes before any spend), with ``Lambda = max(n alpha,
    Lambda_needed)`` (``Lambda_needed`` from ``epsilon_det``, 0 without it)
    and the noise norm ``noise_norm(glm)`` (0 without it).
    Returns the plan details ``{"certification": CertificationBounds}``, or
    no details without the loss, the row bound and ``alpha`` (or for a loss
    these solvers do not take).
    """
    loss, row_norm_bound, alpha = call.loss, call.row_norm_bound, call.alpha
    if None in (loss, row_norm_bound, alpha):
        return {}
    try:
        glm = _smooth_glm(loss, row_norm_bound, call.n_outputs, "plan")
    except ValueError:
        return {}
    n_public = 1.0 if n_samples is None else float(n_samples)
    bounds = check_certifiable(
        solver,
        glm,
        regularization=max(n_public * float(alpha), glm.regularization_needed(epsilon_det)),
        n_public=n_public,
        noise_norm=0.0 if noise_norm is None else noise_norm(glm),
        gradient_tol=call.gradient_tol,
    )
    return dict(certification=bounds)


def _plan(noise, event, noise_multiplier, details):
    """The plan of one perturbation fit whose noise law is ``noise`` ("none": ``event`` None).

    ``details["noise"]`` names the law the solver samples.
    """
    details["noise"] = noise
    return PrivacyPlan(event or dpe.NonPrivateDpEvent(), noise_multiplier, 1, details)


def plan_output_perturbation(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``output_perturbation``: one noisy release of the minimiser.

    ``noise_multiplier`` is the noise std per coordinate divided by the
    sensitivity: ``sigma`` for Gaussian noise, ``sqrt(m + 1) / epsilon`` for
    the L2 Laplace noise of pure epsilon-DP (density ``~ exp(-epsilon ||b||
    / Delta)``: ``E||b||^2 = m (m + 1) (Delta / epsilon)^2``).

    When the ``call`` (a :class:`~sklearn_dp.solvers.SolverCall`) has the
    loss, the row bound and ``alpha`` (estimators pass them, from public
    inputs), the plan also runs the public conditions of
    the certified solve (:func:`check_certifiable`) for ``n_samples`` public
    rows, or, before the row count is released (``n_samples=None``), for one
    row: the conditions only get harder with more rows, so a refusal then is
    conclusive and comes before any spend.  ``details["certification"]``
    then holds their :class:`CertificationBounds`, which the solver runs with.
    A pure plan keeps its epsilon in ``details["epsilon_noise"]``: the solver
    scales the L2 Laplace noise by it.
    """
    if math.isinf(epsilon):
        return _plan("none", None, 0.0, {})
    details = _certify("output_perturbation", n_samples, call)
    if delta == 0:  # the epsilon that scales the L2 Laplace noise
        event = accounting.PureEpsilonDpEvent(epsilon, "output_perturbation")
        details["epsilon_noise"] = epsilon
        return _plan("l2_laplace", event, math.sqrt(n_params + 1.0) / epsilon, details)
    sigma = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    return _plan("gaussian", dpe.GaussianDpEvent(sigma), sigma, details)


def plan_objective_perturbation(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``objective_perturbation`` from public inputs.

    Splits epsilon into the determinant budget ``epsilon_split * epsilon``,
    the residual (inexact solve) budget ``residual_fraction * epsilon`` and the
    rest for the noise of the perturbed objective.  ``noise_multiplier`` is
    the std of the objective noise ``b`` per coordinate divided by the
    per-row gradient bound G.

    With the loss, the row bound and ``alpha`` (from public inputs), it also
    runs the public conditions of the certified solve, as
    :func:`plan_output_perturbation` does, with ``Lambda = max(n alpha,
    Lambda_needed)`` and the expected norm of ``b``, and keeps their bounds
    in ``details["certification"]``.
    """
    epsilon_split, residual_fraction = _check_splits(call.epsilon_split, call.residual_fraction)
    if math.isinf(epsilon):
        return _plan("none", None, 0.0, dict(epsilon_det=math.inf))
    epsilon_det = epsilon_split * epsilon
    epsilon_residual = residual_fraction * epsilon * (1 - _ROUNDING_MARGIN)
    epsilon_noise = (epsilon - epsilon_det - epsilon_residual) * (1 - _ROUNDING_MARGIN)
    details = dict(
        epsilon_det=epsilon_det, epsilon_noise=epsilon_noise, epsilon_residual=epsilon_residual
    )
    if delta == 0:
        event = accounting.PureEpsilonDpEvent(epsilon, "objective_perturbation")
        plan = _plan("l2_laplace", event, math.sqrt(n_params + 1.0) / epsilon_noise, details)
        # The expected norm of b (public), its scale for the check: Gamma(m, G / eps)'s mean.
        noise_norm = lambda glm: n_params * glm.gradient_bound / epsilon_noise
    else:
        chi_dof = call.n_outputs - 1 if call.n_outputs > 1 else 1
        delta_residual = residual_fraction * delta
        residual_sigma = accounting.gaussian_noise_multiplier(epsilon_residual, delta_residual, 1)
        sigma = objective_gaussian_noise_multiplier(
            epsilon_noise, (1 - residual_fraction) * delta, chi_dof
        )
        event = ObjectivePerturbationDpEvent(
            epsilon_det, sigma, chi_dof, residual_sigma, residual_fraction
        )
        details.update(chi_dof=chi_dof, residual_noise_multiplier=residual_sigma)
        plan = _plan("gaussian", event, sigma, details)
        # E||b|| <= sqrt(E||b||^2) = sigma G sqrt(m)
        noise_norm = lambda glm: sigma * glm.gradient_bound * math.sqrt(n_params)
    solver = "objective_perturbation"
    details.update(
        _certify(solver, n_samples, call, epsilon_det=epsilon_det, noise_norm=noise_norm)
    )
    return plan


# --------------------------------------------------------------------------
# Public checks (before the reservation) and solvers
# --------------------------------------------------------------------------


def _check_options(solver, alpha, options):
    """The public option checks both solvers share; returns ``(gradient_tol, n_steps)``.

    ``options`` maps option names to values (an estimator's options, or a
    direct call's ``locals()``); their declared ranges are the registry's.
    ``alpha=None`` (a strength that scales with the private row count, known
    only inside the fit) skips the penalty check.
    """
    positive = isinstance(alpha, Real) and not isinstance(alpha, bool) and 0 < alpha < math.inf
    if alpha is not None and not positive:
        raise ValueError(
            f"{solver} needs an L2 penalty (alpha > 0): its privacy proof rests on the strong "
            "convexity the penalty gives. Use penalty='l2' with a finite C (or alpha > 0)."
        )
    gradient_tol, max_iter = options.get("gradient_tol"), options.get("max_iter")
    if isinstance(gradient_tol, bool):  # the declared range would take True for 1.0
        raise ValueError(f"gradient_tol must be a finite float > 0, got {gradient_tol!r}.")
    check_declared_options(solver, options)  # names without a declared range are skipped
    n_steps = DEFAULT_NEWTON_STEPS if max_iter is None else int(max_iter)
    if n_steps < MIN_NEWTON_STEPS:
        raise ValueError(
            f"{solver}: max_iter={n_steps} Newton steps is below {MIN_NEWTON_STEPS}. The inner "
            "solve runs a fixed budget of Newton steps before its (much slower) certified "
            "fallback, and so few steps would rarely reach the public gradient tolerance; leave "
            "max_iter=None (50 steps) or raise it."
        )
    return float(DEFAULT_GRADIENT_TOL if gradient_tol is None else gradient_tol), n_steps


def check_perturbation(solver, *, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public checks of ``solver`` (``SolverSpec.check``, ``solver`` bound), before any spend.

    For both solvers, a ValueError for ``alpha <= 0``, a bad
    ``gradient_tol`` or a Newton budget below ``MIN_NEWTON_STEPS`` (the
    registry refuses a loss these proofs do not cover before); for
    ``objective_perturbation``, also for ``epsilon_split`` and
    ``residual_fraction`` with a sum of 1 or more (output perturbation has
    neither: their defaults pass).  A function of public inputs only.
    """
    _check_options(solver, alpha, options)
    epsilon_split = options.get("epsilon_split", DEFAULT_EPSILON_SPLIT)
    _check_splits(epsilon_split, options.get("residual_fraction", DEFAULT_RESIDUAL_FRACTION))


class _CertifiedRun:
    """What both solvers do around their noise: checks, plan, certified solve, result.

    Built from the solver's ``locals()``.  ``bounds`` are the plan's
    :class:`CertificationBounds` (None without noise), ``tol`` the solve's
    tolerance on the objective's gradient (``gradient_tol * G``), ``noise``
    the plan's kind of noise, ``pure`` whether it is L2 Laplace noise and
    ``rng`` the generator of the releases.
    """

    def __init__(self, solver, arguments):
        a = self.arguments = SimpleNamespace(**arguments)
        gradient_tol, self.n_steps = _check_options(solver, a.alpha, arguments)
        self.solver = solver
        self.glm = _smooth_glm(a.loss, a.data.row_norm_bound, a.n_outputs, solver)
        self.plan = plan_of_call(solver, arguments)
        self.noise = self.plan.details["noise"]
        self.pure = self.noise != "gaussian"
        self.bounds = self.plan.details.get("certification")  # (None without noise)
        if self.noise != "none" and self.bounds is None:
            raise ValueError(
                f"{solver}: the plan holds no bounds of the certified solve; plan with the "
                "loss, the row bound and alpha."
            )
        self.tol = gradient_tol * self.glm.gradient_bound
        self.rng = make_rng(a.random_state)

    def scale(self, sensitivity, epsilon, multiplier):
        """The noise scale of one release (0 without noise).

        ``sensitivity / epsilon`` for L2 Laplace noise, ``multiplier *
        sensitivity`` (the standard deviation) for Gaussian noise.
        """
        if self.noise == "none":
            return 0.0
        return sensitivity / epsilon if self.pure else multiplier * sensitivity

    def release(self, value, sensitivity, scale, label):
        """One release of ``value`` through the gateway: L2 Laplace noise if ``pure``, else Gaussian."""
        common = dict(sensitivity=sensitivity, rng=self.rng, label=label)
        if self.pure:
            return _noise.l2_laplace(value, scale=scale, **common)
        return _noise.gaussian(value, noise_std=scale, **common)

    def solve(self, regularization, public_gradient_bound, linear_term=None):
        """The certified minimiser (:func:`certified_minimize`), its last stage sized by ``bounds``.

        ``public_gradient_bound`` bounds the objective's gradient at 0 from
        public values (and data-independent noise); read with ``bounds`` only.
        """
        a, bounds = self.arguments, self.bounds
        return certified_minimize(
            a.data.design,
            a.data.y,
            self.glm.loss,
            n_outputs=a.n_outputs,
            regularization=regularization,
            tol=self.tol,
            linear_term=linear_term,
            n_steps=self.n_steps,
            progress=Progress(self.solver, self.n_steps, a.verbose),
            accelerate=bounds is not None,
            public_smoothness=None if bounds is None else bounds.smoothness,
            public_gradient_bound=None if bounds is None else public_gradient_bound,
        ).coef

    def result(self, coef, info=None, **details):
        """The solver's result, with the public constants of its solve added to the plan's details."""
        self.plan.details.update(
            details,
            gradient_tol=self.tol,
            gradient_bound=self.glm.gradient_bound,
            newton_steps=self.n_steps,
            loss=repr(self.glm.loss),
        )
        return SolverResult(np.asarray(coef, dtype=float), 1, self.plan, info or {})


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
    plan=None,
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
        ``delta=0``: pure epsilon-DP with L2 Laplace noise; ``delta > 0``:
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
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_output_perturbation` computed it for these
        arguments with the loss, the row bound and ``alpha`` (estimators hand
        down the plan their budget was charged for; its ``details`` hold the
        public bounds of the certified solve); None plans here.

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
    Noise, exact on a grid (:mod:`sklearn_dp._noise`): pure, density ``~
    exp(-epsilon ||b||_2 / Delta)`` (the L2 Laplace, or Gamma-norm, noise;
    event ``PureEpsilonDpEvent(epsilon, "output_perturbation")``); or the
    Gaussian mechanism, ``N(0, (sigma Delta)^2 I)`` with the
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
    run = _CertifiedRun("output_perturbation", locals())
    glm, plan = run.glm, run.plan
    n_params = data.n_columns * n_outputs
    # Lambda = n * alpha with the public stand-in for n: the row count is
    # private under add/remove, and the sensitivity G / Lambda needs a Lambda
    # that is the same on neighbouring data sets.
    regularization = data.n_public * float(alpha)
    sensitivity = (glm.gradient_bound + 2.0 * run.tol) / regularization
    scale = run.scale(sensitivity, plan.details.get("epsilon_noise"), plan.noise_multiplier)
    solution = run.solve(regularization, getattr(run.bounds, "initial_gradient_bound", None))
    coef = run.release(solution, sensitivity, scale, "minimiser")
    warning = output_noise_warning(loss, n_params, n_outputs, float(alpha), scale, run.pure)
    info = dict(warnings=[warning]) if warning else {}
    details = dict(sensitivity=sensitivity, noise_scale=scale, regularization=regularization)
    return run.result(coef, info, **details)


def output_noise_warning(loss, n_params, n_outputs, alpha, scale, pure):
    """A warning when output perturbation's noise outweighs every coefficient the penalty allows.

    The root mean square norm of the noise (``scale sqrt(p)`` for Gaussian
    noise of standard deviation ``scale``, ``scale sqrt(p (p + 1))`` for the
    L2 Laplace noise of scale ``scale`` of pure epsilon-DP) is compared with
    the public bound ``sqrt(2 l0 / alpha)`` on the norm of the minimiser of
    ``mean loss + (alpha / 2) ||W||^2`` (the objective at 0 is at most
    ``l0``, the loss's ``zero_score_value_bound``: ``log 2`` for the
    logistic loss, ``log K`` multinomial, ``1/2`` for the squared and Huber
    losses on labels scaled to [-1, 1] as the estimators fit them).
    Inputs: public values and the released row count (in ``scale``) only,
    so the warning is an admissible output.  Returns None
    when the noise is smaller than that bound.
    """
    if not scale > 0 or not alpha > 0:
        return None
    l0 = loss.zero_score_value_bound(n_outputs)
    bound = math.sqrt(2.0 * l0 / alpha)
    noise = scale * math.sqrt(n_params * (n_params + 1.0) if pure else n_params)
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
    plan=None,
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
        ``delta=0``: pure epsilon-DP (L2 Laplace ``b``); ``delta > 0``:
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
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_objective_perturbation` computed it for these
        arguments with the loss, the row bound and ``alpha`` (estimators hand
        down the plan their budget was charged for; its ``details`` hold the
        public bounds of the certified solve); None plans here.

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
    multinomial ``r = K - 1, c_dir = 1/K``).  The noise is an exact
    continuous ``N``: pure, density ``~ exp(-eps_noise ||N||_2 / G)`` (the
    density ratio is at most ``exp(eps_noise ||g|| / G) <= exp(eps_noise)``);
    Gaussian, ``N(0, (sigma G)^2 I)``
    with ``sigma`` from :func:`objective_gaussian_noise_multiplier`.  The
    solver minimises with ``b``, the rounding of ``N`` to a public grid ``g``
    (``||b - N|| <= sqrt(m) g / 2``; ``sqrt(m) g <= 2**-11 tol`` unless the
    noise would need more than ``2**26`` steps).  (2) The solve returns a
    point within ``tol / Lambda`` of the exact minimiser for ``b`` (``tol =
    gradient_tol * G``), which is within ``sqrt(m) g / (2 Lambda)`` of the
    exact minimiser for ``N`` (strong convexity); the output noise covers
    both, for the L2 sensitivity ``(2 tol + sqrt(m) g) / Lambda``, at
    ``residual_fraction`` of the budget (label ``"inexact-solve
    residual"``).  That distance is
    guaranteed, not assumed: the certified
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
    and the budget.  The proof: docs/solvers/perturbation.md, "Proofs".
    """
    run = _CertifiedRun("objective_perturbation", locals())
    glm, plan = run.glm, run.plan
    details, tol, G = plan.details, run.tol, run.glm.gradient_bound
    n_params = data.n_columns * n_outputs
    base_regularization = data.n_public * float(alpha)  # public stand-in for n
    regularization = max(base_regularization, glm.regularization_needed(details["epsilon_det"]))
    epsilon_det = glm.epsilon_det(regularization)
    if epsilon_det > details["epsilon_det"] * (1 + 1e-12):  # pragma: no cover - by construction
        raise AssertionError("Determinant term over its budget; please report this.")
    b_scale = run.scale(G, details.get("epsilon_noise"), plan.noise_multiplier)
    # b is the rounding of an exact continuous noise vector N on a grid g, with
    # ||b - N|| <= sqrt(m) g / 2: the solve lands within tol / Lambda (half of it
    # for rounding) plus sqrt(m) g / (2 Lambda) of the exact minimiser for N.
    coupling = 0.0
    if run.noise != "none":
        grid = _noise.objective_noise_grid(b_scale, n_params, 2.0 * COUPLING_SHARE * tol)
        coupling = math.sqrt(n_params) * grid.spacing
    residual_sensitivity = (2.0 * tol + coupling) / regularization
    residual_multiplier = details.get("residual_noise_multiplier")
    epsilon_residual = details.get("epsilon_residual")
    residual_scale = run.scale(residual_sensitivity, epsilon_residual, residual_multiplier)

    def solve(b):
        # The accelerated stage's step count: public constants and the norm of
        # b (data-independent noise), ||grad J_b(0)|| <= n_public G + ||b||.
        public_gradient_bound = max(float(data.n_public), 1.0) * G + float(np.linalg.norm(b))
        return run.solve(regularization, public_gradient_bound, linear_term=b)

    W = _noise.objective_perturbation(
        solve,
        shape=(data.n_columns, n_outputs),
        noise="l2_laplace" if run.pure else "gaussian",
        scale=b_scale,
        coupling=2.0 * COUPLING_SHARE * tol,
        sensitivity=G,
        rng=run.rng,
        label="perturbed minimiser",
    )
    coef = run.release(W, residual_sensitivity, residual_scale, "inexact-solve residual")
    return run.result(
        coef,
        regularization=regularization,
        extra_regularization=regularization - base_regularization,
        epsilon_det_actual=epsilon_det,
        objective_noise_scale=b_scale,
        objective_noise_coupling=coupling,
        residual_sensitivity=residual_sensitivity,
        residual_noise_scale=residual_scale,
    )
