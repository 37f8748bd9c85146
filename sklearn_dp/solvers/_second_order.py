"""Private second-order optimisation of smooth GLM losses (``dp_newton``).

A few Newton steps, each on a noisy gradient sum and a noisy Hessian sum
(Ganesh, Haghifam, Steinke and Thakurta, "Faster differentially private
convex optimization via second-order methods", NeurIPS 2023).  The noisy
Hessian's eigenvalues are raised to a public floor (proportional to the
spectral norm of its own noise), so that a step never divides by noise.

All releases are full-batch Gaussian mechanisms, so the whole fit composes
exactly into one Gaussian mechanism (no accountant slack); the budget is split
between gradient and Hessian releases by a public share of the precision
``1 / sigma^2``.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
from dp_accounting import dp_event as dpe

from .. import _noise, accounting
from .._clipped_sums import curvature_bound, newton_sums, svec, unsvec
from .._data import row_sum
from .._losses import loss_names
from ._common import PrivacyPlan, Progress, SolverResult, check_finite_iterate, make_rng
from ._gradient_descent import gradient_bound
from ._noisy_steps import plan_of_call, release, release_residual_squares, release_symmetric

#: Default number of steps (each: one gradient release and, with
#: ``hessian="exact"``, one Hessian release).  Measured in
#: ``benchmarks/bench_speed.py`` and docs/solvers/second_order.md: five
#: accelerated steps on the released Gram matrix reach the non-private
#: accuracy at n >= 1e4, and more steps only add noise.
DEFAULT_NEWTON_STEPS = 5

#: Default steps without noise (epsilon = inf).  Each private step pays for its
#: own noise, so five is the private default; without noise a step costs only
#: time, and five stopped 2.8% above the logistic optimum of breast cancer
#: (bench_solvers.py); ten reach it (gap < 1e-4).  epsilon is public.
DEFAULT_NEWTON_STEPS_NOISELESS = 10

#: Default curvature model: the Gram matrix released once (see dp_newton).
DEFAULT_HESSIAN = "bound"

#: A secant pair ``(s, y)`` of two released gradients updates the curvature only
#: where ``s^T y`` is at least this many times ``||s||`` times the expected
#: norm of the noise of ``y`` (public: the gradients' noise scale and the
#: released count); below it the noise would decide the update.
SECANT_NOISE_MARGIN = 3.0

#: Floor of that noise scale, times the gradient clip: the rounding of the
#: averaged gradients, below which secant pairs (tiny steps near the optimum,
#: without noise) carry no information.
SECANT_ROUNDING = 1e-9

#: Secant pairs the quasi-Newton steps keep (the most recent ones).
SECANT_MEMORY = 10

#: Default share of the fit's precision (``1 / sigma^2`` of the one Gaussian
#: the fit composes into) that goes to the Hessian releases.
DEFAULT_HESSIAN_SHARE = 0.25

#: Share of the fit's precision that ``inference=True`` spends on its extra
#: release, by loss (the keys are the losses whose intervals it supports):
#: the Hessian sum of the binary log-loss (a matrix whose noise enters the
#: intervals' sampling part), or the sum of squared residuals of the squared
#: loss (one number); the gradient and curvature releases share the rest as
#: ``hessian_share`` says.
INFERENCE_SHARE = {"log_loss": 0.1, "squared": 0.02}

#: Default number of steps with ``inference=True`` for the log-loss: the
#: intervals assume the steps converged, and five steps from 0 left an
#: optimisation error of 0.3-0.4 standard errors at n = 20,000
#: (benchmarks/bench_inference.py); ten leave a negligible one.
INFERENCE_NEWTON_STEPS = 10


#: Relative floor that stays without noise (epsilon=inf), times the
#: largest curvature ``curvature_bound * R^2``: keeps steps finite along
#: directions the data does not span.
RELATIVE_FLOOR = 1e-8

#: Largest Hessian (coefficients x outputs) dp_newton releases: its svec has
#: m (m + 1) / 2 entries and each step decomposes it (O(m^3)).
MAX_HESSIAN_SIZE = 3000

#: Widest design (features plus intercept) for which ``solver="auto"`` picks
#: the second-order solvers (dp_newton, dp_ssp): their d x d Gram matrix
#: costs about d / 16 gradient passes (a symmetric rank-k product against
#: memory-bound mat-vecs), so beyond ~1000 columns it costs more than
#: dp_gd's 100 steps.
AUTO_MAX_COLUMNS = 1000

#: Widest X for which ``solver="auto"`` picks ``dp_ssp`` when rows are bounded
#: entrywise (``DPLasso``): the L2 bound that ``feature_bound`` implies grows
#: as sqrt(d), and the Gram release's noise relative to the data as
#: d^1.5 / n; at d = 30 it beats dp_cd from n ~ 1e4 (benchmarks).  Measured
#: (uniform entries, 5 true coefficients, epsilon 1, test R^2 dp_ssp / dp_cd):
#: d = 100: 0.47 / 0.86 at n = 1e4, 0.90 / 0.89 at 3e4, 1.00 / 0.89 at 1e5;
#: d = 128: 0.81 / 0.92 at 3e4, 0.99 / 0.92 at 1e5; so up to 128 columns
#: dp_ssp is the more accurate from n ~ 5e4 on, and 10-15x faster (dp_cd's
#: ten passes of single-column steps cost 4-6x scikit-learn's Lasso at
#: n = 1e5, dp_ssp 0.3-0.4x).  The row count is private, so the width alone
#: decides: below the crossover (few rows per squared feature) dp_ssp loses.
#: The switch is a ~10x step in fit time (1e5 rows: 0.11 s at 128 columns,
#: 1.5 s at 129); a larger width moves the step without removing it (the two
#: times meet only near 1000-2000 columns, where dp_ssp's R^2 at 1e5 rows is
#: 0.13 against dp_cd's 0.77: benchmarks/results/width_switch_lasso.md).
AUTO_SSP_ENTRYWISE_MAX_FEATURES = 128


def second_order_fits(public, max_columns=AUTO_MAX_COLUMNS):
    """Whether a fit's public setting is narrow enough for ``auto`` to pick dp_newton / dp_ssp.

    ``public`` is the estimator's ``PublicSetting`` (n_features,
    fit_intercept): public inputs only, never the row count.
    """
    return public is not None and public.n_features + int(public.fit_intercept) <= max_columns


def _check_problem(loss_name, n_outputs, inference, hessian, n_columns, multi_output=False):
    """Refuse what dp_newton cannot fit (public inputs); the size of its curvature matrix."""
    # The options' types and ranges are the registry's (option_constraints).
    if inference and (loss_name not in INFERENCE_SHARE or multi_output or int(n_outputs) != 1):
        raise ValueError(
            "dp_newton's inference=True supports the squared loss and the binary log-loss "
            f"only; got loss={loss_name!r} with {n_outputs} output(s)."
        )
    # Rows of the matrix dp_newton releases and decomposes.
    size = n_columns if hessian == "bound" else n_columns * int(n_outputs)
    if size > MAX_HESSIAN_SIZE:
        what = "a Gram matrix of (features plus intercept)"
        if hessian != "bound":
            what = "a Hessian of (features plus intercept) x classes"
        raise ValueError(
            f"dp_newton releases {what} = {size} rows and columns; it supports at most "
            f"{MAX_HESSIAN_SIZE}. Use dp_nystrom for wider problems."
        )
    return size


def check_dp_newton(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public checks of dp_newton's options (run before the reservation)."""
    hessian = options.get("hessian", DEFAULT_HESSIAN)
    n_columns = public.n_features + int(public.fit_intercept)
    _check_problem(loss_name, n_outputs, options.get("inference"), hessian, n_columns)


def newton_multipliers(epsilon, delta, n_steps, n_hessian, hessian_share, inference_share=0.0):
    """``(sigma_gradient, sigma_hessian, sigma_total)``: noise multipliers of one release each.

    The ``n_steps`` gradient releases and ``n_hessian`` Hessian releases are
    full-batch Gaussian mechanisms: they compose exactly into one Gaussian of
    multiplier ``(n_steps / sg^2 + n_hessian / sh^2)^(-1/2)``, set to
    ``sigma_total``, the smallest multiplier of one Gaussian meeting
    ``(epsilon, delta)`` (analytic Gaussian mechanism).  The Hessian releases
    get ``hessian_share`` of the precision ``1 / sigma_total^2``; with
    ``inference_share > 0`` one more release takes that share first (its
    multiplier is ``sigma_total / sqrt(inference_share)``) and the others
    split what is left.
    """
    total = accounting.gaussian_noise_multiplier(epsilon, delta, 1)  # 0 at epsilon=inf: no noise
    rest = 1.0 - inference_share
    sg = total * math.sqrt(n_steps / ((1.0 - hessian_share) * rest))
    sh = total * math.sqrt(n_hessian / (hessian_share * rest))
    return sg, sh, total


def plan_dp_newton(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_newton``: ``T`` gradient and ``T`` (or 1) Hessian Gaussian releases.

    ``noise_multiplier`` is the gradient releases' multiplier; ``details``
    holds the Hessian's.  The event is the composition of the two kinds of
    releases (dp_accounting folds it into one Gaussian, exactly).  With
    ``inference=True``, one more Gaussian release (``INFERENCE_SHARE`` of the
    precision, ``details["inference_multiplier"]``) joins the composition,
    and the log-loss's default number of steps is at least
    ``INFERENCE_NEWTON_STEPS``.  ``call`` holds the arguments of the run (a
    :class:`~sklearn_dp.solvers.SolverCall`).
    """
    max_iter, hessian, share = call.max_iter, call.hessian, call.hessian_share
    inference = bool(call.inference)
    log_loss = call.loss is None or call.loss.name == "log_loss"
    if max_iter is None:
        max_iter = DEFAULT_NEWTON_STEPS_NOISELESS if math.isinf(epsilon) else DEFAULT_NEWTON_STEPS
        if inference and log_loss:
            max_iter = max(max_iter, INFERENCE_NEWTON_STEPS)
    n_steps = int(max_iter)
    share = DEFAULT_HESSIAN_SHARE if share is None else float(share)
    # One curvature release for the bound or a constant Hessian, else one per step.
    steps = n_steps if call.hessian_steps is None else max(1, min(int(call.hessian_steps), n_steps))
    constant = hessian == "bound" or (call.loss is not None and call.loss.constant_curvature)
    n_hessian = 1 if constant else steps
    details = dict(
        hessian=hessian, hessian_share=share, hessian_releases=n_hessian, inference=inference
    )
    if math.isinf(epsilon):
        details.update(hessian_multiplier=0.0, inference_multiplier=0.0)
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    inference_share = INFERENCE_SHARE["log_loss" if log_loss else "squared"] if inference else 0.0
    sg, sh, total = newton_multipliers(epsilon, delta, n_steps, n_hessian, share, inference_share)
    si = total / math.sqrt(inference_share) if inference else math.inf
    details.update(hessian_multiplier=sh, total_multiplier=total, inference_multiplier=si)
    parts = [
        accounting.gaussian_steps_event(sg, n_steps),
        accounting.gaussian_steps_event(sh, n_hessian),
    ]
    if inference:
        parts.append(dpe.GaussianDpEvent(si))
    return PrivacyPlan(dpe.ComposedDpEvent(parts), sg, n_steps, details)


def hessian_noise_norm(noise_std, size):
    """Expected spectral norm of the symmetric noise ``unsvec(N(0, s^2 I))`` of a ``size``-square matrix.

    Diagonal variance ``s^2``, off-diagonal ``s^2 / 2``: a Wigner matrix whose
    spectrum fills ``[-sqrt(2 m) s, sqrt(2 m) s]`` (semicircle law).
    """
    return math.sqrt(2.0 * size) * float(noise_std)


def secant_pair(s, y, bound_curvature, noise_norm):
    """``(s, y)`` as a pair of the quasi-Newton update, or None where noise would decide it.

    Accepted where ``s^T y >= SECANT_NOISE_MARGIN ||s|| noise_norm``
    (``noise_norm`` the expected norm of the noise of ``y``; with no noise,
    where ``s^T y > 0``), with ``y`` shrunk so that ``s^T y`` is at most
    ``bound_curvature = s^T B s``: no Hessian of the loss exceeds the bound
    ``B``.  Post-processing of released gradients and public scales.
    """
    sy = float(np.sum(s * y))
    if not sy > SECANT_NOISE_MARGIN * float(np.linalg.norm(s)) * noise_norm:
        return None
    return s, y * min(1.0, bound_curvature / sy)


def secant_direction(grad, pairs, inverse_bound):
    """``H^{-1} grad`` for the inverse curvature ``inverse_bound`` updated by secant ``pairs``.

    The L-BFGS two-loop recursion (Nocedal and Wright 2006, *Numerical
    Optimization*, Algorithm 7.4) with ``inverse_bound`` (a function) as the
    initial inverse Hessian; with no pairs, ``inverse_bound(grad)``.
    """
    q, coefficients = grad.copy(), []
    for s, y in reversed(pairs):
        coefficients.append((1.0 / np.sum(s * y), np.sum(s * q) / np.sum(s * y)))
        q -= coefficients[-1][1] * y
    r = inverse_bound(q)
    for (s, y), (rho, a) in zip(pairs, reversed(coefficients)):
        r += (a - rho * np.sum(y * r)) * s
    return r


def modified_eigendecomposition(H, floor, eigenvalue="clip"):
    """``(mod(lambda), V)`` for the eigen-decomposition ``H = V diag(lambda) V^T``.

    ``"clip"`` raises every eigenvalue to ``floor``; ``"add"`` adds ``floor``
    to every eigenvalue after raising negative ones to 0; the modified
    Newton direction is ``V diag(1 / mod(lambda)) V^T g``.  Post-processing
    of released values only.

    LAPACK works in ``H``'s own buffer when it can (a C-ordered float64
    ``H``, whose values are then lost): no working copy of the matrix.
    """
    # H is symmetric: its transpose is the same matrix, Fortran-ordered,
    # which LAPACK decomposes in place (syevr: a workspace of O(m), where
    # numpy's syevd takes 2 m^2 more, allocated outside numpy).
    lam, V = scipy.linalg.eigh(H.T, overwrite_a=True, check_finite=False, driver="evr")
    return (np.maximum(lam, floor) if eigenvalue == "clip" else np.maximum(lam, 0.0) + floor), V


def dp_newton(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    clip_norm=None,
    hessian=DEFAULT_HESSIAN,
    hessian_share=None,
    eigenvalue="auto",
    floor_scale=None,
    hessian_steps=None,
    momentum="auto",
    secant=True,
    coef_init=None,
    inference=False,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Private (quasi-)Newton steps on the L2-penalised average loss of a smooth GLM.

    Minimises ``mean_i l(x_i @ W, y_i) + alpha / 2 * ||W[penalized]||^2``
    with ``max_iter`` steps ``W <- V - H~^{-1} g~(V)`` from ``W = 0``, where

    * ``g~(V)`` is the noisy sum of per-sample gradients at ``V`` (each
      clipped to ``clip_norm``) divided by the public ``data.normalizer``,
      plus the penalty's gradient;
    * ``H~`` is a noisy curvature matrix divided by the normaliser, plus
      ``alpha`` on the penalised coefficients, with its eigenvalues raised to
      the floor ``max(floor_scale * nu, 1e-8 * beta R^2)`` (``nu`` the
      expected spectral norm of its noise, :func:`hessian_noise_norm`;
      ``beta R^2`` the largest curvature one row can have), so that no step
      divides by noise;
    * ``V`` is the iterate, or with ``momentum="nesterov"`` Nesterov's
      look-ahead point ``W_t + k / (k + 3) (W_t - W_{t-1})``, restarted
      (``k = 0``) whenever a step goes uphill for the noisy gradient
      (O'Donoghue and Candes 2015).

    With ``secant=True`` (default) and the bound as curvature (log-loss and
    Huber; never with ``inference=True``), the released gradients refine the
    bound where the data make their noise small: each pair of consecutive
    evaluation points gives a secant pair ``(s, y)`` (the step and the change
    of the released gradient), kept when ``s^T y`` clears
    ``SECANT_NOISE_MARGIN`` times ``||s||`` times the expected norm of the
    noise of ``y`` (a function of the noise scale and the released count)
    and with ``y`` shrunk so that ``s^T y <= s^T H~ s`` (no Hessian exceeds
    the bound), and ``H~^{-1}`` is the L-BFGS update of the inverse bound by
    the kept pairs (:func:`secant_direction`), with the momentum as before
    (without it, steps with one or two kept pairs lost more than the pairs
    gave).  The bound overestimates the
    log-loss's curvature ``s (1 - s)`` wherever the fitted probabilities are
    far from 1/2 (rare classes, strong signals), and its steps alone then
    stop short of the optimum at any epsilon; the secant steps reach it
    (``benchmarks/results/newton_steps.md``).  Without a kept pair (few rows
    for the noise) the fit is the bound's, to the bit.

    The curvature matrix (``hessian``):

    * ``"bound"`` (default): the Gram matrix ``X~^T X~``, released once,
      times ``curvature_bound(loss)`` (for the multinomial loss ``I_K (x)
      X~^T X~ / 2``): an upper bound on every Hessian of the loss (Boehning
      and Lindsay 1988), so without noise each step minimises a quadratic
      majorant (monotone descent) and Nesterov's momentum accelerates it.
      One release for the whole fit: less noise per release than a Hessian
      per step, and one O(n d^2) pass instead of one per step.  This is the
      improvement the benchmark supports (docs/solvers/second_order.md).
    * ``"exact"``: the Hessian sum at the current point, released at each of
      the first ``hessian_steps`` steps (default: every step; later steps
      reuse the last one), as in Ganesh et al. (2023); for the squared loss,
      whose Hessian is constant, once.

    Parameters
    ----------
    data : BoundedData
        Rows bounded in L2 by ``data.row_norm_bound`` (intercept included).
    loss : GLMLoss
        ``log_loss`` (binary or multinomial), ``squared`` (with a residual
        bound, or give ``clip_norm``) or ``huber``.
    n_outputs : int
    alpha : float
        L2 penalty on the average loss (0 for none).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` takes the same steps without noise.
    max_iter : int, optional
        Number of steps; default ``DEFAULT_NEWTON_STEPS`` (5), and
        ``DEFAULT_NEWTON_STEPS_NOISELESS`` (10) at ``epsilon=inf``.
    clip_norm : float, optional
        Per-sample gradient clip, at most the loss's bound; default half of
        it when private (as the first-order solvers), none without noise
        (and none for the log-loss with ``inference=True``).
    hessian : {"bound", "exact"}, default="bound"
    hessian_share : float in (0, 1), optional
        Share of the precision spent on the curvature releases; default
        ``DEFAULT_HESSIAN_SHARE`` (0.25).
    hessian_steps : int, optional
        With ``hessian="exact"``: how many steps release a fresh Hessian.
    eigenvalue : {"auto", "clip", "add"}, default="auto"
        The eigenvalue modification (see :func:`modified_eigendecomposition`);
        ``"auto"``: the loss's ``newton_eigenvalue_floor`` (``"clip"`` for
        classification losses, ``"add"`` for regression losses).
    floor_scale : float, optional
        The floor in units of the curvature noise's spectral norm; default
        the loss's ``newton_floor_scale`` at the public ratio ``nu / (beta
        R^2)`` (0.3 for the log-loss, 0.5 for the Huber loss; for the
        squared loss 2 from a ratio of 0.05 on, falling linearly to 1 as
        the ratio falls to 0).
    momentum : {"auto", "nesterov", None}, default="auto"
        ``"auto"``: Nesterov with ``hessian="bound"``, none with ``"exact"``.
    secant : bool, default=True
        Quasi-Newton steps from the secant pairs of the released gradients
        that clear their noise (see above); ``hessian="bound"`` only.
    coef_init : ndarray of shape (n_columns, n_outputs), optional
        Starting point instead of 0 (a warm start from a released model:
        public, post-processing; it costs nothing).
    inference : bool, default=False
        After the steps, release what confidence intervals need besides the
        steps' own releases (:mod:`sklearn_dp.linear_model._inference`): the
        Hessian sum at the final coefficients (binary log-loss) or the sum
        of squared residuals there, each clipped to half the loss's residual
        bound (squared loss), with ``INFERENCE_SHARE`` of the precision
        (and, for the log-loss, at least ``INFERENCE_NEWTON_STEPS`` steps by
        default); the released values they need are returned in
        ``info["inference"]``.
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_newton` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one neighbouring.  Each step
    releases the sum of clipped per-sample gradients (L2 sensitivity ``C``,
    the clip) with ``N(0, (sigma_g C)^2)`` noise per entry.  The curvature
    releases are ``svec`` of a symmetric matrix (the diagonal, then sqrt(2)
    times the upper triangle: its L2 norm is the Frobenius norm of the
    matrix) with ``N(0, (sigma_h S)^2)`` noise per entry, where ``S``
    bounds the Frobenius norm of one row's term: ``R^2`` for ``X~^T X~``
    (``hessian="bound"``), ``curvature_bound * R^2`` for the Hessian sum
    ``sum_i A_i (x) x_i x_i^T`` (``A_i`` the loss's curvature in the scores:
    1/4 for the binary and 1/2 for the multinomial log-loss in Frobenius
    norm, 1 for the squared and Huber losses; ``R`` the row bound, intercept
    column included).  All releases are full-batch Gaussian mechanisms and
    compose exactly into one Gaussian of multiplier ``sigma``, the smallest
    meeting (epsilon, delta) by the analytic Gaussian mechanism; the public
    ``hessian_share`` of ``1 / sigma^2`` goes to the curvature releases.
    Averages divide by ``data.normalizer`` (the estimators' DP count; the
    row count itself is never used), and the floor is a function of public
    values and that count.  The steps, the momentum and its restarts, the
    secant pairs (their noise test reads the released gradients, the public
    noise scale and the released count), the eigen-decompositions and the verbose lines (norms of noisy gradients and
    steps) are post-processing; the number of steps is public.
    With ``data.sample_weight`` (weights in ``[0, data.weight_bound]``, the
    public ``max_weight``), each row's gradient and curvature terms are
    multiplied by its weight, so every sensitivity above is multiplied by
    ``max_weight`` (and the noise with it).  On data split in row chunks
    (Dask arrays, ``sklearn_dp._dask``; unweighted) every sum is the sum of
    its chunks' sums, computed where the chunks live; the noise is added
    once to the total, here.  With ``inference=True`` one more Gaussian
    release at the final (released) coefficients joins the same
    composition: the Hessian sum ``sum_i s_i (1 - s_i) x_i x_i^T``
    (sensitivity ``R^2 / 4`` in Frobenius norm) for the binary log-loss, or
    ``sum_i min(r_i^2, b^2)`` with ``b`` half the squared loss's residual
    bound (sensitivity ``b^2``), times ``max_weight`` with weights.
    """
    if curvature_bound(loss) is None:
        raise ValueError(
            f"dp_newton needs a smooth GLM loss ({', '.join(sorted(loss_names(smooth=True)))}); "
            f"got {loss.name!r}."
        )
    plan = plan_of_call("dp_newton", locals())
    n_columns = data.design.n_columns
    size = _check_problem(loss.name, n_outputs, inference, hessian, n_columns, loss.multi_output)
    if momentum == "auto":
        momentum = "nesterov" if hessian == "bound" else None
    eigenvalue = loss.newton_eigenvalue_floor[0] if eigenvalue == "auto" else eigenvalue
    private = not math.isinf(epsilon)
    # Intervals need the unclipped estimator: with inference=True the default
    # clip of the log-loss is its own bound (clipping at half of it moves the
    # estimate; the squared loss's default clips only residuals beyond the
    # label range).
    unclipped = inference and loss.name == "log_loss"
    clip = gradient_bound(loss, data.row_norm_bound, clip_norm, private=private and not unclipped)
    R2 = float(data.row_norm_bound) ** 2
    beta = curvature_bound(loss)
    bound = hessian == "bound"
    # Sample weights in [0, max_weight] multiply each row's gradient and
    # Hessian terms: every sensitivity by max_weight (1 without weights).
    weight_bound = float(getattr(data, "weight_bound", 1.0))
    hessian_sensitivity = weight_bound * R2 if bound else weight_bound * beta * R2
    gradient_sensitivity = weight_bound * clip
    gradient_std = plan.noise_multiplier * gradient_sensitivity
    hessian_std = plan.details["hessian_multiplier"] * hessian_sensitivity
    normalizer = float(data.normalizer)
    # Expected spectral norm of the noise of the averaged Hessian (for
    # "bound": of the noise on curvature_bound * G, the same on every class block).
    nu = hessian_noise_norm((hessian_std * beta if bound else hessian_std) / normalizer, size)
    nu *= _noise.group_rows()  # the noise the gateway adds: k times in a group fit
    if floor_scale is None:  # the noise relative to the largest curvature: public
        floor_scale = loss.newton_floor_scale(nu / (beta * R2))
    floor = max(float(floor_scale) * nu, RELATIVE_FLOOR * beta * R2)
    # The bound is one block for all classes (I_K (x) beta G); the exact
    # Hessian has class-major coefficients, as W.ravel("F").
    block_penalized = data.penalized if bound else np.tile(data.penalized, n_outputs)
    rng = make_rng(random_state)
    progress = Progress("dp_newton", plan.n_steps, verbose)

    def sums(part, V, curvature):
        # One pass over the rows (of each chunk, summed: row_sum) for both sums.
        weight = getattr(part, "sample_weight", None)
        exact = curvature == "exact"
        g, H = newton_sums(
            part.design, part.y, V, loss, clip, part.row_norms, hessian=exact, sample_weight=weight
        )
        return g, part.design.gram(weight) if curvature == "bound" else H

    def release_curvature():
        # The decomposition of the released curvature plus the penalty (later
        # steps reuse it); every temporary is freed as soon as it is used.
        nonlocal H_sum
        value = svec(H_sum)
        H_sum = None  # freed before the release's own temporaries are made
        label = "gram matrix" if bound else "hessian sum"
        released = release(value, hessian_sensitivity, hessian_std, rng, label)
        del value
        H = unsvec(released, size)
        del released
        H *= (beta if bound else 1.0) / normalizer
        H[np.diag_indices(size)] += alpha * block_penalized
        return modified_eigendecomposition(H, floor, eigenvalue)

    shape = (n_columns, n_outputs)  # a warm start, coef_init, is a released model (post-processing)
    W = np.zeros(shape) if coef_init is None else np.array(coef_init, dtype=float).reshape(shape)
    start = W[:, 0].copy()
    W_previous = W
    since_restart = 0
    eigen = H_sum = None
    momenta = []
    # Quasi-Newton: secant pairs of the released gradients refine the bound
    # where the count makes their noise small (never with the intervals,
    # which model the bound's steps).
    secant = secant and bound and not (loss.constant_curvature or plan.details.get("inference"))
    secant_noise = max(
        math.sqrt(2.0 * W.size) * gradient_std / normalizer * _noise.group_rows(),
        SECANT_ROUNDING * clip,
    )
    last, pairs = None, []
    # The points and released gradients of the steps (intervals only: post-processing).
    released_steps = []
    for t in range(plan.n_steps):
        # A fresh curvature release at each of the first steps (one for the bound).
        curvature = hessian if t < plan.details["hessian_releases"] else None
        # Nesterov's look-ahead point, with O'Donoghue and Candes's restart
        # (below): post-processing of released gradients.
        V = W
        momenta.append(0.0)
        if momentum == "nesterov" and since_restart > 0:
            momenta[-1] = since_restart / (since_restart + 3.0)
            V = W + momenta[-1] * (W - W_previous)
        # A pass with the d x d curvature sum is most of a fit's time: a line before and after.
        sums_text = f"step {t + 1}: gradient and {size} x {size} curvature sums"
        if curvature is not None:
            progress.note(f"{sums_text}: one pass over the rows")
        g_sum, H_sum = row_sum(data, lambda part: sums(part, V, curvature))
        if curvature is not None:
            progress.note(f"{sums_text} done")
        if curvature == "bound":  # the Gram matrix is drawn before the gradient
            eigen = release_curvature()
            progress.note("gram matrix released and decomposed")
        grad = release(g_sum, gradient_sensitivity, gradient_std, rng) / normalizer
        if curvature == "exact":  # the Hessian after it
            eigen = release_curvature()
            progress.note(f"step {t + 1}: hessian sum released and decomposed")
        grad[data.penalized] += alpha * V[data.penalized]
        if plan.details.get("inference"):
            released_steps.append((V[:, 0].copy(), grad[:, 0].copy()))
        lam, vectors = eigen

        def inverse_curvature(G):
            # The bound is the same block for every class; the exact Hessian's
            # coefficients are class-major, as W.ravel("F").
            flat = G if bound else G.reshape(-1, 1, order="F")
            return (vectors @ ((vectors.T @ flat) / lam[:, None])).reshape(G.shape, order="F")

        if secant and last is not None:
            s_k = V - last[0]
            curved = float(np.sum((vectors.T @ s_k) ** 2 * lam[:, None]))
            pair = secant_pair(s_k, grad - last[1], curved, secant_noise)
            pairs = pairs if pair is None else (pairs + [pair])[-SECANT_MEMORY:]
        last = (V, grad)
        step = secant_direction(grad, pairs, inverse_curvature)
        W_next = V - step
        check_finite_iterate(W_next, "dp_newton")
        if momentum == "nesterov":
            # Restart the momentum when the step goes uphill for the (noisy) gradient.
            uphill = float(np.sum(grad * (W_next - W))) > 0
            since_restart = 0 if uphill else since_restart + 1
            if private and since_restart >= DEFAULT_NEWTON_STEPS:
                # A public restart schedule: momentum adds up the noise of the
                # steps it carries (the weight k / (k + 3) of the previous
                # step nears 1 as k grows), so with noise it restarts every
                # DEFAULT_NEWTON_STEPS steps.  The default fit (5 steps) is
                # unchanged; a long run (max_iter=20) no longer amplifies its
                # (larger, per-step) noise.
                since_restart = 0
        W_previous, W = W, W_next
        progress(
            t + 1, grad_norm=float(np.linalg.norm(grad)), step_norm=float(np.linalg.norm(step))
        )
    plan.details.update(
        clip_norm=clip,
        noise_std=gradient_std,
        hessian_noise_std=hessian_std,
        hessian_sensitivity=hessian_sensitivity,
        eigenvalue=eigenvalue,
        floor=floor,
    )
    info = {}
    if plan.details.get("inference"):
        lam, vectors = eigen
        released = _inference_release(
            data, loss, W, rng, plan, weight_bound, lambda part: sums(part, W, "exact")[1]
        )
        info["inference"] = dict(
            released,
            kind="newton",
            loss=loss.name,
            curvature_values=lam.copy(),
            curvature_vectors=vectors.copy(),
            momenta=tuple(momenta),
            gradient_noise_std=gradient_std,
            normalizer=normalizer,
            floor=floor,
            eigenvalue=eigenvalue,
            steps=released_steps,
            alpha=float(alpha),
            penalized=data.penalized.copy(),
            start=start,
            hessian_mode=hessian,
            curvature_bound=beta,
            row_norm_bound=float(data.row_norm_bound),
            intercept_scaling=float(data.intercept_scaling) if data.fit_intercept else None,
        )
    return SolverResult(coef=W, n_iter=plan.n_steps, plan=plan, info=info)


def _inference_release(data, loss, W, rng, plan, weight_bound, hessian_sum):
    """The extra release of ``inference=True`` at the final (released) coefficients.

    The sum of clipped squared residuals (squared loss) or the Hessian sum
    ``hessian_sum(part)`` (binary log-loss), with its noise scale: the
    released values the confidence intervals need besides the steps' own.
    """
    multiplier = plan.details["inference_multiplier"]
    if loss.name == "squared":
        bound_r = 0.5 * float(loss.derivative_bound)
        sensitivity = weight_bound * bound_r**2
        std = multiplier * sensitivity
        squares = release_residual_squares(data, W[:, 0], bound_r, sensitivity, std, rng)
        return dict(residual_squares=squares, residual_noise_std=std)
    sensitivity = weight_bound * curvature_bound(loss) * float(data.row_norm_bound) ** 2
    std = multiplier * sensitivity
    hessian = release_symmetric(row_sum(data, hessian_sum), sensitivity, std, rng, "hessian sum")
    return dict(hessian=hessian, hessian_noise_std=std)
