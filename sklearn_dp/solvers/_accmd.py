"""Noisy accelerated mirror descent over a ball: ``dp_accmd`` (Wang, Ye and Xu, 2017, Alg. 3).

Linear coupling of a mirror-descent sequence ``z`` and a gradient sequence
``y`` (Allen-Zhu and Orecchia), with full-batch noisy gradients, over an L2
or L1 ball of public radius R.

The printed algorithm is not private: its y-step takes a gradient step with
the *exact* gradient and the output is ``y_T``.  Here (the fix derived in
docs/solvers/erm_revisited.md) the y-step is the "similar triangles" update
``y_{k+1} = r_k z_{k+1} + (1 - r_k) y_k``: a convex combination of points of
the ball built from the noisy mirror step only, so the whole output is
post-processing of the T noisy gradients.  The utility proof (B.7, eqs.
66-70) needs only that ``y_{k+1}`` makes the quadratic model no larger than at
that point, which it meets with equality.

Geometry
--------
The norm of the constraint set is ``||v||_C = ||v||_ball / R`` and the
smoothness constant in it is ``L' = L R^2`` with ``L = loss.smoothness *
row_norm_bound**2`` (``||v||_2 <= R ||v||_C`` for both balls: Lemma 5.1 of
erm_revisited.md, with the radius instead of the diameter, which suffices for a
centrally symmetric set).

The proof of the utility bound (Theorem 5.4) uses only that F is L'-smooth
in ``||.||_C`` (Definition 3.2 with that norm); Lemma 5.1 is one way to get
such an L' from the L2 constant.  On the L1 ball a direct bound is tighter:
``v^T x_i x_i^T v <= ||x_i||_inf^2 ||v||_1^2``, so F is
``loss.smoothness * max_j feature_bound_j**2``-smooth in the L1 norm and
``L' = loss.smoothness * max_j feature_bound_j**2 * R^2`` in ``||.||_C``
(option ``smoothness="entrywise"``, for rows bounded entrywise).  For rows
whose d entries share one bound b this is ``b^2`` instead of ``d b^2``: the
default constant makes the steps d times too short, and the fit stays near
the zero model when d is large.  The privacy analysis is unchanged (L' is a
public step-size constant; the noise is calibrated to the L2 clip).

* L2 ball: mirror map ``||x||^2 / (2 R^2)``; the mirror step is a projected
  gradient step ``z <- Proj(z - alpha R^2 g)``.
* L1 ball: ``x = R (u+ - u-)`` with ``(u+, u-)`` on the 2d-simplex and the
  entropy as mirror map (1-strongly convex in the L1 norm there); the mirror
  step is an exponentiated-gradient update of ``u``, started at the uniform
  point (``x_0 = 0``), and ``B_w(u*, u_0) <= ln(2d)``.
"""

from __future__ import annotations

import math

import numpy as np

from .. import accounting
from .._clipped_sums import clipped_gradient_sum
from ._common import Progress, make_rng
from ._gradient_descent import gradient_bound, project_l2_ball
from ._noisy_steps import (
    gaussian_plan,
    noisy_steps,
    plan_of_call,
    release,
    solver_result,
)

#: Iterations used when epsilon is infinite (the noise-optimal formula is unbounded).
NON_PRIVATE_ITERATIONS = 500

#: Cap on the default number of iterations.
MAX_DEFAULT_ITERATIONS = 2000


def _check_ball(alpha, radius):
    """dp_accmd takes no penalty and needs a radius (``alpha`` None: a strength that scales with n)."""
    if alpha is None or alpha != 0:
        raise ValueError(
            "dp_accmd optimises over a constraint ball and takes no penalty; use penalty=None "
            "(the radius plays the role of the regulariser)."
        )
    if radius is None:
        raise ValueError("dp_accmd needs a finite constraint radius > 0 (pass radius=...).")


def _check_smoothness(smoothness, constraint):
    if smoothness == "entrywise" and constraint != "l1":
        raise ValueError(
            "dp_accmd: smoothness='entrywise' bounds the smoothness in the L1 norm, which "
            "only the L1 ball uses; pass constraint='l1' or smoothness='l2'."
        )


def check_dp_accmd(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public check of a ``dp_accmd`` fit (registered as ``SolverSpec.check``).

    The registry's constraints check each option; this checks that there is
    no penalty, that there is a radius, and that ``smoothness="entrywise"``
    comes with the L1 ball.
    """
    _check_ball(0.0 if penalty is None else alpha, options.get("radius"))
    _check_smoothness(options.get("smoothness", "l2"), options.get("constraint", "l2"))


def accmd_row_bound(row_norm_bound, feature_bound, smoothness):
    """The rows' bound ``B`` in ``L' = loss.smoothness * B**2 * R**2`` (public).

    ``"l2"``: the L2 row bound (Lemma 5.1, any rows); ``"entrywise"`` (L1
    ball): ``max_j feature_bound_j``, the bound of the L1-norm smoothness of
    rows bounded entrywise (see the module docstring).
    """
    if smoothness == "l2":
        return row_norm_bound
    if feature_bound is None:
        raise ValueError(
            "dp_accmd: smoothness='entrywise' needs rows bounded entrywise: pass a number as "
            "feature_bound (a public bound on |X[i, j]|) and leave data_norm at its default."
        )
    return float(np.max(feature_bound))


def accmd_iterations(
    n_samples, n_params, epsilon, delta, *, smoothness, row_norm_bound, radius, constraint, clip
):
    """Default T from public inputs: the minimiser of the explicit bound of docs/solvers/erm_revisited.md (eqs. 74-76).

    ``E F(y_T) - F* <~ 8 L' B / T^2 + T^2 sigma_1^2 C^2 W / (6 L' n^2)`` (the
    noise of T full-batch steps has per-step std ``sqrt(T) sigma_1 C / n`` for
    the exact single-step multiplier ``sigma_1``), minimised at
    ``T = (48 L'^2 B n^2 / (sigma_1^2 C^2 W))^(1/4)``, with
    ``L' = smoothness * row_norm_bound**2 * radius**2`` (``row_norm_bound``:
    :func:`accmd_row_bound`).
    """
    if math.isinf(epsilon):
        return NON_PRIVATE_ITERATIONS
    single = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    smooth_c = smoothness * row_norm_bound**2 * radius**2
    # The ball's ``sup B_w(x, x_0)`` and ``W = E sup_{w in C} <w, v>^2`` in the normalised
    # geometry (v ~ N(0, I)): R^2 d for the L2 ball, R^2 E ||v||_inf^2 <= R^2 (2 ln(2d) + 1)
    # for the L1 ball (the registry's StrOptions admit no other).
    bregman, width = 0.5, radius**2 * n_params
    if constraint != "l2":
        bregman, width = math.log(2 * n_params), radius**2 * (2.0 * math.log(2 * n_params) + 1.0)
    value = (48.0 * smooth_c**2 * bregman * n_samples**2 / (single**2 * clip**2 * width)) ** 0.25
    return int(min(MAX_DEFAULT_ITERATIONS, max(1, math.ceil(value))))


def plan_dp_accmd(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_accmd``: T full-batch Gaussian steps (exact composition).

    ``n_samples`` is the public stand-in for the row count (a DP count from
    the estimator); the default T needs it, so without ``max_iter`` and with
    ``n_samples=None`` (the count is not released yet) the plan is None.
    ``call`` holds the arguments of the run
    (a :class:`~sklearn_dp.solvers.SolverCall`).
    """
    if call.smoothness == "entrywise" and call.feature_bound is None:
        # Before the count: a refusal that costs nothing (public bounds only).
        accmd_row_bound(call.row_norm_bound, None, "entrywise")
    max_iter = call.max_iter
    if max_iter is None:
        if n_samples is None:
            return None
        loss, row_norm_bound, radius = call.loss, call.row_norm_bound, call.radius
        if loss is None or row_norm_bound is None or radius is None:
            raise ValueError(
                "The default dp_accmd plan needs the public loss, row_norm_bound and radius."
            )
        clip = gradient_bound(loss, row_norm_bound, call.clip_norm, private=not math.isinf(epsilon))
        max_iter = accmd_iterations(
            n_samples,
            n_params,
            epsilon,
            delta,
            smoothness=loss.smoothness,
            row_norm_bound=accmd_row_bound(row_norm_bound, call.feature_bound, call.smoothness),
            radius=radius,
            constraint=call.constraint,
            clip=clip,
        )
    return gaussian_plan(epsilon, delta, max_iter)


def noisy_gradient_release(X, y, W, loss, clip, row_norms, noise_std, rng):
    """The only place dp_accmd reads the data: ``sum_i clip(grad_i(W)) + N(0, noise_std^2 I)``.

    The sum is :func:`~sklearn_dp._clipped_sums.clipped_gradient_sum` (sensitivity
    ``clip``), released through the noise gateway.
    """
    return release(clipped_gradient_sum(X, y, W, loss, clip, row_norms), clip, noise_std, rng)


class _L2Mirror:
    """Mirror map ``||x||^2 / (2 R^2)`` on the L2 ball: projected steps."""

    def __init__(self, shape, radius):
        self.radius = radius
        self.z = np.zeros(shape)

    def point(self):
        return self.z

    def step(self, gradient, alpha):
        self.z = project_l2_ball(self.z - alpha * self.radius**2 * gradient, self.radius)
        return self.z


class _L1Mirror:
    """Entropy on the 2d-simplex, ``x = R (u+ - u-)``: exponentiated-gradient steps."""

    def __init__(self, shape, radius):
        self.radius = radius
        size = int(np.prod(shape))
        self.shape = shape
        self.log_u = np.full(2 * size, -math.log(2 * size))

    def point(self):
        u = np.exp(self.log_u)
        half = u.size // 2
        return (self.radius * (u[:half] - u[half:])).reshape(self.shape)

    def step(self, gradient, alpha):
        g = self.radius * gradient.ravel()
        # The gradient in u-space is R [g; -g]; multiplicative update in logs.
        self.log_u = self.log_u - alpha * np.concatenate([g, -g])
        self.log_u -= np.logaddexp.reduce(self.log_u)
        return self.point()


def dp_accmd(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    radius=None,
    constraint="l2",
    smoothness="l2",
    max_iter=None,
    clip_norm=None,
    random_state=None,
    verbose=0,
    plan=None,
):
    """DP-AccMD: noisy accelerated mirror descent over an L2 or L1 ball.

    Minimises ``mean_i l(x_i @ W, y_i)`` over ``{W : ||W||_ball <= radius}``
    (intercept included) with Algorithm 3 of Wang, Ye and Xu (2017), with the
    privacy fix of its y-step and the constant ``L' = L R^2`` used
    consistently (docs/solvers/erm_revisited.md).

    For k = 0..T-1, with ``alpha_{k+1} = (k + 2) / (4 L')`` and
    ``r_k = 2 / (k + 2)``::

        x_{k+1} = r_k z_k + (1 - r_k) y_k
        g       = (sum_i clip(grad f(x_{k+1}, z_i)) + N(0, (sigma C)^2 I)) / n
        z_{k+1} = argmin_{z in ball} B_w(z, z_k) + alpha_{k+1} <g, z>
        y_{k+1} = r_k z_{k+1} + (1 - r_k) y_k

    and the output is ``y_T``.

    Parameters
    ----------
    data : BoundedData
    loss : GLMLoss
        A smooth convex loss.
    n_outputs : int
    alpha : float
        Must be 0: the algorithm has no regularizer (use the radius instead).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same iterations without noise.
    radius : float
        Radius R of the constraint ball (public; required).
    constraint : {"l2", "l1"}, default="l2"
        The ball's norm (the L1 ball is the paper's high-dimensional case).
    smoothness : {"l2", "entrywise"}, default="l2"
        How ``L'`` (the step sizes and the default T) is bounded: ``"l2"``
        from the rows' L2 bound (Lemma 5.1), ``"entrywise"`` (L1 ball, rows
        bounded entrywise by ``feature_bound``) from their largest entry
        bound, the L1-norm smoothness, d times smaller for d equal entry
        bounds (see :func:`accmd_row_bound`).
    max_iter : int, optional
        T; default the minimiser of the explicit utility bound of docs/solvers/erm_revisited.md (see
        :func:`accmd_iterations`), at most ``MAX_DEFAULT_ITERATIONS``, and
        ``NON_PRIVATE_ITERATIONS`` when ``epsilon=inf``.
    clip_norm : float, optional
        Per-sample gradient clip C, as in :func:`~sklearn_dp.solvers.dp_gd`.
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_accmd` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Each of the T
    iterations releases, through the noise gateway
    (:func:`noisy_gradient_release`, label ``"clipped gradient sum"``), the
    sum of per-sample gradients clipped to C
    (:func:`sklearn_dp._clipped_sums.clipped_gradient_sum`, sensitivity C) plus
    ``N(0, (sigma C)^2 I)``; the T adaptive Gaussian
    mechanisms compose exactly into one with multiplier ``sigma / sqrt(T)``.
    The coupling, mirror steps and y-steps use only these noisy sums and
    public constants, so the output ``y_T`` is post-processing.  The sums are
    averaged with ``data.normalizer`` and the default T uses
    ``data.n_public`` (a DP count from the estimators; a direct call without
    one treats n as public).  Public: the bounds, R, T, the mirror map, the
    smoothness constant.
    Every observable (coefficients, ``n_iter``, details,
    ``info["gradient_evaluations"] = n_public * T``, the progress lines,
    which print the norm of the noisy averaged gradient, and exceptions) is
    a function of public values and of the releases; the options are
    checked before the data is read (by estimators before their
    reservation, with the registry's constraints and :func:`check_dp_accmd`).

    Assumptions of the utility guarantee (Theorem 5.4): convex, smooth loss;
    a centrally symmetric constraint set; no regularizer.
    """
    if loss.smoothness is None:
        raise ValueError(f"dp_accmd needs a smooth loss; {loss.name!r} is not smooth.")
    _check_ball(alpha, radius)
    _check_smoothness(smoothness, constraint)
    plan = plan_of_call("dp_accmd", locals())
    X, y = data.design, data.y  # an operator on the caller's X (no bounded copy)
    shape = (X.n_columns, n_outputs)
    clip = gradient_bound(loss, data.row_norm_bound, clip_norm, private=not math.isinf(epsilon))
    noise_std = plan.noise_multiplier * clip
    row_bound = accmd_row_bound(data.row_norm_bound, data.feature_bound, smoothness)
    smooth_c = loss.smoothness * row_bound**2 * radius**2
    rng = make_rng(random_state)
    mirror = (_L2Mirror if constraint == "l2" else _L1Mirror)(shape, radius)

    def step(k, Y):
        coupling = 2.0 / (k + 2.0)
        point = coupling * mirror.point() + (1.0 - coupling) * Y
        gradient = noisy_gradient_release(X, y, point, loss, clip, data.row_norms, noise_std, rng)
        # Averaged with the public normaliser, never the (private) row count.
        Z = mirror.step(gradient / data.normalizer, (k + 2.0) / (4.0 * smooth_c))
        # The noisy sum over the public normaliser (a released value) for the progress lines.
        shown = float(np.linalg.norm(gradient)) / data.normalizer
        return coupling * Z + (1.0 - coupling) * Y, shown

    progress = Progress("dp_accmd", plan.n_steps, verbose)
    Y, _ = noisy_steps(step, np.zeros(shape), plan.n_steps, name="dp_accmd", progress=progress)
    # Per-sample gradient evaluations from the public stand-in for n.
    info = dict(gradient_evaluations=float(data.n_public * plan.n_steps))
    details = dict(
        clip_norm=clip,
        noise_std=noise_std,
        radius=radius,
        constraint=constraint,
        smoothness=smooth_c,
    )
    return solver_result("dp_accmd", plan, Y, loss, epsilon, info=info, **details)
