"""Sufficient statistics perturbation for least squares (``dp_ssp``, AdaSSP).

Wang (2018), "Revisiting differentially private linear regression: optimal
and adaptive prediction & estimation in unbounded domain" (UAI), AdaSSP: one
Gaussian release of ``X~^T X~`` and one of ``X~^T y``, plus a noisy smallest
eigenvalue of ``X~^T X~`` that sets an adaptive ridge.  Every least-squares
problem on the rows (ridge, Lasso penalised or over an l1 ball, elastic-net,
an L2 ball) is then solved on the released statistics: post-processing, so a
whole regularisation path costs no more privacy than one fit
(:func:`solve_statistics`, :meth:`sklearn_dp.DPLasso.path`).

The three releases are full-batch Gaussian mechanisms and compose exactly
into one Gaussian mechanism; the budget is split between them by public
shares of the precision ``1 / sigma^2``.
"""

from __future__ import annotations

import math

import numpy as np
from dp_accounting import dp_event as dpe

from .. import _noise, accounting
from .._clipped_sums import smallest_eigenvalue, sufficient_statistics
from .._data import row_sum
from .._public_errors import public_error
from ._common import PrivacyPlan, Progress, SolverResult, check_finite_iterate, make_rng
from ._gradient_descent import project_l2_ball
from ._l1_geometry import project_l1_ball
from ._noisy_steps import plan_of_call, release, release_residual_squares, release_symmetric
from ._registry import check_declared_options

#: Default shares of the precision ``1 / sigma^2`` for the Gram matrix,
#: ``X^T y`` and the smallest eigenvalue (AdaSSP splits epsilon in thirds).
DEFAULT_SHARES = (0.45, 0.45, 0.1)

#: The noisy smallest eigenvalue is lowered by this many standard deviations
#: of its noise (a lower confidence bound that fails with probability about
#: 0.5%), and the ridge covers this many times the spectral norm expected of
#: the Gram matrix's noise.
EIGENVALUE_CONFIDENCE = 2.6

#: Share of the fit's precision ``1 / sigma^2`` that ``inference=True``
#: spends on its extra release, the sum of squared residuals at the fitted
#: coefficients (the residual variance of the confidence intervals); the
#: three statistics share the rest in their usual proportions.
INFERENCE_SHARE = 0.05
RIDGE_SCALE = 1.0

#: Default cap on the sweeps of coordinate descent (or the steps of the
#: accelerated projected gradient for constrained problems) on the released
#: statistics, and their tolerance (relative change of the coefficients).
DEFAULT_MAX_SWEEPS = 1000
DEFAULT_TOL = 1e-7


def _check_options(loss_name, n_outputs, options):
    """Refuse what dp_ssp cannot fit; ``options`` maps option names to values (public inputs)."""
    shares = options.get("shares")
    if loss_name != "squared" or n_outputs != 1:
        raise ValueError("dp_ssp fits the squared loss with one output only.")
    if shares is not None:
        try:
            values = np.asarray(shares, dtype=float)
        except (TypeError, ValueError):
            values = np.empty(0)
        valid = values.shape == (3,) and np.all(np.isfinite(values)) and np.all(values >= 0)
        if not valid or min(values[:2]) <= 0:
            raise ValueError(
                "shares must be three nonnegative floats (Gram matrix, X^T y, smallest "
                f"eigenvalue), the first two > 0; got {shares!r}."
            )
        if options.get("ridge", "adaptive") == "adaptive" and values[2] <= 0:
            raise ValueError("ridge='adaptive' needs a share > 0 for the smallest eigenvalue.")
    # The declared ranges (label_bound, ridge, constraint, ...), for direct
    # callers too: the labels' clip bounds a sensitivity.
    check_declared_options("dp_ssp", options)


def check_dp_ssp(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public checks of dp_ssp's options (run before the reservation)."""
    plain = not (l1_ratio or 0) > 0 and options.get("radius") is None and penalty in (None, "l2")
    if options.get("inference") and not plain:
        raise ValueError(
            "dp_ssp's inference=True needs an L2 penalty or none and no radius (the "
            "intervals of an L1 penalty or a constraint are not normal)."
        )
    _check_options(loss_name, n_outputs, options)


def ssp_multipliers(epsilon, delta, shares):
    """Noise multipliers ``(sigma_gram, sigma_xty, sigma_eigenvalue)`` (inf for a share of 0).

    The releases compose exactly into one Gaussian of multiplier
    ``(sum_i share_i / sigma_total^2)^(-1/2) = sigma_total``, the smallest
    multiplier meeting (epsilon, delta) for one Gaussian mechanism.
    """
    total = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    if total == 0.0:
        return 0.0, 0.0, 0.0
    return tuple(total / math.sqrt(s) if s > 0 else math.inf for s in shares)


def plan_dp_ssp(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_ssp``: two (three with the adaptive ridge) Gaussian releases.

    ``inference=True`` adds one more, the sum of squared residuals, with
    ``INFERENCE_SHARE`` of the precision (``details["inference_multiplier"]``).
    ``call`` holds the arguments of the run (a :class:`~sklearn_dp.solvers.SolverCall`).
    """
    inference = bool(call.inference)
    values = np.asarray(DEFAULT_SHARES if call.shares is None else call.shares, dtype=float)
    if call.ridge != "adaptive":  # a fixed ridge: no eigenvalue release
        values = np.array([values[0], values[1], 0.0])
    values = values / values.sum()
    if inference:
        values = np.append(values * (1.0 - INFERENCE_SHARE), INFERENCE_SHARE)
    details = dict(shares=tuple(float(v) for v in values[:3]), inference=bool(inference))
    n_releases = int(np.count_nonzero(values))
    if math.isinf(epsilon):
        details.update(multipliers=(0.0, 0.0, 0.0), inference_multiplier=0.0)
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, n_releases, details)
    multipliers = ssp_multipliers(epsilon, delta, values)
    details["multipliers"] = multipliers[:3]
    details["inference_multiplier"] = multipliers[3] if inference else math.inf
    events = [dpe.GaussianDpEvent(float(s)) for s in multipliers if math.isfinite(s)]
    return PrivacyPlan(dpe.ComposedDpEvent(events), multipliers[0], n_releases, details)


def repair_gram(gram):
    """The nearest PSD matrix in Frobenius norm: negative eigenvalues set to 0 (post-processing)."""
    lam, V = np.linalg.eigh(gram)
    return (V * np.maximum(lam, 0.0)) @ V.T


def adaptive_ridge(noise_std, size, min_eigenvalue):
    """AdaSSP's ridge: what the noise may remove from the smallest eigenvalue, beyond what it has.

    ``max(0, RIDGE_SCALE * sqrt(2 m) s - lambda_lo)`` with ``sqrt(2 m) s``
    the expected spectral norm of the symmetric noise of the Gram release
    (``s`` per ``svec`` entry) and ``lambda_lo`` the released lower
    confidence bound on the smallest eigenvalue.
    """
    return max(0.0, RIDGE_SCALE * math.sqrt(2.0 * size) * noise_std - max(0.0, min_eigenvalue))


def _coordinate_descent(Q, c, l1, l2, box, w, max_sweeps, tol):
    """Cyclic coordinate descent on ``w^T Q w / 2 - c^T w + sum_j l1_j |w_j| + l2_j w_j^2 / 2``.

    ``box`` bounds ``|w_j|`` (inf for none).  Exact coordinate minimisation;
    stops when a sweep changes no coefficient by more than ``tol`` times the
    largest one (all values released: post-processing).
    """
    m = Q.shape[0]
    diag = np.diag(Q) + l2
    grad = Q @ w - c  # kept up to date: Q w - c
    sweeps = 0
    for sweeps in range(1, max_sweeps + 1):  # noqa: B007 - the count is returned
        largest_change, largest = 0.0, 0.0
        for j in range(m):
            if diag[j] <= 0:
                continue
            old = w[j]
            # Minimise over w_j with the others fixed.
            rest = grad[j] - Q[j, j] * old
            new = math.copysign(max(abs(rest) - l1[j], 0.0), -rest) / diag[j]  # soft threshold
            if box[j] < math.inf:
                new = min(max(new, -box[j]), box[j])
            if new != old:
                grad += Q[:, j] * (new - old)
                w[j] = new
                largest_change = max(largest_change, abs(new - old))
            largest = max(largest, abs(new))
        if largest_change <= tol * max(largest, 1e-300):
            break
    return w, sweeps


def _projected_gradient(Q, c, l1, l2, box, ball, constraint, radius, w, max_steps, tol):
    """Accelerated proximal gradient (FISTA) with the projection onto the ball and the box."""
    lipschitz = float(np.linalg.eigvalsh(Q)[-1]) + float(np.max(l2, initial=0.0))
    step = 1.0 / max(lipschitz, 1e-300)

    def prox(v):
        v = np.sign(v) * np.maximum(np.abs(v) - step * l1, 0.0)
        v = v / (1.0 + step * l2)
        if constraint == "l1":
            v[ball] = project_l1_ball(v[ball], radius)
        elif constraint == "l2":
            v[ball] = project_l2_ball(v[ball], radius)
        return np.clip(v, -box, box)

    w = prox(w)
    z, t = w.copy(), 1.0
    steps = 0
    for steps in range(1, max_steps + 1):  # noqa: B007 - the count is returned
        w_next = prox(z - step * (Q @ z - c))
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        z = w_next + ((t - 1.0) / t_next) * (w_next - w)
        change = float(np.max(np.abs(w_next - w), initial=0.0))
        w, t = w_next, t_next
        if change <= tol * max(float(np.max(np.abs(w), initial=0.0)), 1e-300):
            break
    return w, steps


def solve_statistics(
    gram,
    xty,
    *,
    normalizer,
    ridge=0.0,
    alpha=0.0,
    l1_ratio=0.0,
    penalized=None,
    constraint=None,
    radius=None,
    intercept_bound=None,
    coef_init=None,
    max_iter=DEFAULT_MAX_SWEEPS,
    tol=DEFAULT_TOL,
    force_iterative=False,
):
    """Minimise the least-squares objective written with the (released) statistics.

    ``(1 / (2 N)) (w^T (A + ridge I) w - 2 b^T w) + alpha (l1_ratio ||w_p||_1 +
    (1 - l1_ratio) / 2 ||w_p||_2^2)``, with ``A = gram``, ``b = xty``, ``N =
    normalizer``, ``w_p`` the penalised coefficients; optionally over the
    ``constraint`` ball of ``radius`` (l1 or l2; on the penalised
    coefficients when ``intercept_bound`` is given, which then boxes the
    others, else on all of them).  Equal to ``(1 / (2N)) ||y - X w||^2 + ...``
    up to a constant when ``A = X^T X`` and ``b = X^T y``.

    Returns ``(w, iterations)``: the closed form (0 iterations) without L1
    penalty or constraint, else coordinate descent (sweeps) or, with a
    ball, the accelerated projected gradient (steps).  A function of its
    arguments only (post-processing when they are released values).
    """
    gram = np.asarray(gram, dtype=float)
    m = gram.shape[0]
    penalized = np.ones(m, dtype=bool) if penalized is None else np.asarray(penalized, bool)
    Q = (gram + ridge * np.eye(m)) / normalizer
    c = np.asarray(xty, dtype=float) / normalizer
    l1 = alpha * l1_ratio * penalized
    l2 = alpha * (1.0 - l1_ratio) * penalized
    box = np.full(m, np.inf)
    ball = np.ones(m, dtype=bool)
    if intercept_bound is not None:
        box[~penalized] = float(intercept_bound)
        ball = penalized.copy()
    has_ball = constraint is not None and radius is not None
    if not has_ball and not np.any(l1 > 0) and intercept_bound is None and not force_iterative:
        lam, V = np.linalg.eigh(Q + np.diag(l2))
        cutoff = max(float(lam[-1]), 0.0) * m * np.finfo(float).eps
        inverse = np.where(lam > cutoff, 1.0 / np.where(lam > cutoff, lam, 1.0), 0.0)
        return V @ (inverse * (V.T @ c)), 0
    w = np.zeros(m) if coef_init is None else np.array(coef_init, dtype=float)
    w, iterations = _coordinate_descent(Q, c, l1, l2, box, w, max_iter, tol)
    if has_ball:
        norm = np.sum(np.abs(w[ball])) if constraint == "l1" else np.linalg.norm(w[ball])
        if not norm <= radius * (1 + 1e-12):  # outside the ball (or not finite)
            w, iterations = _projected_gradient(
                Q, c, l1, l2, box, ball, constraint, float(radius), w, 20 * max_iter, tol
            )
    return w, iterations


def dp_ssp(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    l1_ratio=0.0,
    radius=None,
    constraint=None,
    intercept_bound=None,
    shares=None,
    ridge="adaptive",
    label_bound=1.0,
    max_iter=None,
    tol=DEFAULT_TOL,
    inference=False,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Least squares from privately released sufficient statistics (AdaSSP).

    Releases ``svec(X~^T X~)``, ``X~^T y`` (labels clipped to
    ``label_bound``) and, for the adaptive ridge, ``lambda_min(X~^T X~)``,
    each with Gaussian noise; then, as post-processing: repairs the noisy
    Gram matrix to the nearest PSD matrix, adds the ridge ``max(0, nu -
    lambda_lo)`` (``nu`` the expected spectral norm of the Gram noise,
    ``lambda_lo`` the released eigenvalue lowered by ``EIGENVALUE_CONFIDENCE``
    standard deviations) and minimises

    ``(1 / (2 N)) ||y - X~ w||^2 + alpha (l1_ratio ||w||_1 + (1 - l1_ratio) / 2 ||w||^2)``

    written with the released statistics (``N = data.normalizer``; the
    intercept column is not penalised), optionally over the l1 or L2 ball of
    ``radius``, by a closed form (ridge), coordinate descent (L1 and
    elastic-net) or accelerated projected gradient (balls).

    Parameters
    ----------
    data : BoundedData
        Rows bounded in L2 by ``data.row_norm_bound`` (intercept included).
    loss : GLMLoss
        The squared loss (its residual bound is not used: nothing is clipped
        but the labels).
    n_outputs : int
        1.
    alpha, l1_ratio : float
        Elastic-net penalty on the average loss (``l1_ratio=1``: Lasso).
    radius : float, optional
        Radius of the ``constraint`` ball (post-processing: any public value).
    constraint : {None, "l1", "l2"}
    intercept_bound : float, optional
        Bound on ``|intercept|`` (in the units of the intercept column); the
        ball then excludes the intercept (as ``DPLasso`` does).
    shares : tuple of 3 floats, optional
        Shares of the precision ``1 / sigma^2`` for the Gram matrix, ``X^T y``
        and the smallest eigenvalue; default ``DEFAULT_SHARES``.
    ridge : "adaptive" or float >= 0, default="adaptive"
        AdaSSP's adaptive ridge, or a fixed public ridge added to the Gram
        matrix sum (then no eigenvalue is released).
    label_bound : float, default=1.0
        Labels are clipped to ``[-label_bound, label_bound]`` (the estimators
        pass labels already divided by ``y_bound``).
    max_iter : int, optional
        Cap on the sweeps of coordinate descent (default 1000).
    tol : float, optional
        Its tolerance (relative change of the coefficients); default ``DEFAULT_TOL``.
    inference : bool, default=False
        Also release the sum of squared residuals at the fitted coefficients
        (each clipped to ``label_bound``), with ``INFERENCE_SHARE`` of the
        precision, for confidence intervals
        (:mod:`sklearn_dp.linear_model._inference`); the released values
        they need are returned in ``info["inference"]``.
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_ssp` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        ``info["statistics"]`` holds the released statistics and the public
        constants needed to solve again (``DPLasso.path``); ``n_iter`` is the
        number of sweeps (a function of the releases).

    Privacy
    -------
    (epsilon, delta)-DP under add/remove-one neighbouring.  With rows of
    ``X~`` bounded by ``R`` in L2 (intercept column included) and labels
    clipped to ``B = label_bound``, one row moves ``X~^T X~`` by ``x x^T``, of
    Frobenius norm ``||x||^2 <= R^2``, which is the L2 norm of the change of
    its released ``svec`` (diagonal, then sqrt(2) times the upper triangle):
    sensitivity ``R^2``; ``X~^T y`` by ``y x``: sensitivity ``R B``; and
    every eigenvalue of ``X~^T X~`` by at most ``||x||^2`` (Weyl's
    inequality; PSD update): sensitivity ``R^2``.  The three Gaussian
    releases compose exactly into one Gaussian mechanism of multiplier
    ``sigma``, the smallest meeting (epsilon, delta); the public ``shares``
    split ``1 / sigma^2`` between them.  The PSD repair, the ridge, the solve
    and its iteration count use released values, the public bounds and
    ``data.normalizer`` (the estimators' DP count) only.  With
    ``data.sample_weight`` (weights in ``[0, data.weight_bound]``, the public
    ``max_weight``) the statistics are ``X~^T W X~`` and ``X~^T W y`` and
    every sensitivity above is multiplied by ``max_weight``.  On data split
    in row chunks (Dask arrays, ``sklearn_dp._dask``; unweighted) the
    statistics are sums of their chunks' sums, computed where the chunks
    live (the smallest eigenvalue is that of the reduced Gram matrix); the
    noise is added once, here.  With ``inference=True`` a fourth Gaussian
    release, of ``sum_i min(r_i^2, B^2)`` at the fitted (released)
    coefficients, adds ``B^2`` to the sensitivities (times ``max_weight``)
    and composes with the others into the same one Gaussian mechanism.
    """
    _check_options(loss.name, n_outputs, locals())
    m = data.design.n_columns
    plan = plan_of_call("dp_ssp", locals())
    sigma_gram, sigma_xty, sigma_eig = plan.details["multipliers"]
    # Sample weights in [0, max_weight]: every sensitivity times max_weight.
    weight_bound = float(getattr(data, "weight_bound", 1.0))
    R2 = weight_bound * float(data.row_norm_bound) ** 2
    xty_sensitivity = weight_bound * float(data.row_norm_bound) * float(label_bound)
    rng = make_rng(random_state)
    progress = Progress("dp_ssp", 1, verbose)

    def statistics_of(part):  # one pass over the rows (of each chunk: row_sum)
        weight = getattr(part, "sample_weight", None)
        return sufficient_statistics(part.design, part.y, label_bound, weight)

    gram, xty = row_sum(data, statistics_of)
    progress.note(f"pass over the rows done ({m} x {m} gram matrix and X^T y)")
    gram_std = sigma_gram * R2
    noisy_gram = release_symmetric(gram, R2, gram_std, rng, "gram matrix")
    noisy_xty = release(xty, xty_sensitivity, sigma_xty * xty_sensitivity, rng, "X^T y")
    if ridge == "adaptive":
        eig_std = sigma_eig * R2
        noisy_eig = release(smallest_eigenvalue(gram), R2, eig_std, rng, "smallest eigenvalue")
        # The noise actually added: k times the planned one in a group fit.
        rows = _noise.released_rows()
        lower = noisy_eig - EIGENVALUE_CONFIDENCE * eig_std * rows
        ridge_value = adaptive_ridge(gram_std * rows, m, lower)
    else:
        lower, ridge_value = None, float(ridge)
    del gram
    progress.note("sufficient statistics released")
    repaired = repair_gram(noisy_gram)
    # What solve_statistics needs to solve again (DPLasso.path): released values only.
    statistics = dict(
        gram=repaired,
        xty=noisy_xty,
        ridge=ridge_value,
        normalizer=float(data.normalizer),
        penalized=data.penalized.copy(),
    )
    if not np.all(np.isfinite(repaired)) or not np.all(np.isfinite(noisy_xty)):
        raise public_error(ValueError("dp_ssp: the released statistics are not finite."))
    w, iterations = solve_statistics(
        **statistics,
        alpha=alpha,
        l1_ratio=l1_ratio,
        constraint=constraint,
        radius=radius,
        intercept_bound=intercept_bound,
        max_iter=DEFAULT_MAX_SWEEPS if max_iter is None else int(max_iter),
        tol=DEFAULT_TOL if tol is None else float(tol),
    )
    check_finite_iterate(w, "dp_ssp")
    progress(1, ridge=ridge_value, iterations=float(iterations))
    noise = dict(gram_noise_std=gram_std, xty_noise_std=sigma_xty * xty_sensitivity)
    plan.details.update(
        noise, ridge=ridge_value, gram_sensitivity=R2, xty_sensitivity=xty_sensitivity
    )
    info = dict(statistics=dict(statistics, min_eigenvalue_lower=lower))
    if plan.details.get("inference"):
        # The residual scale at the released coefficients (public once released).
        sensitivity = weight_bound * float(label_bound) ** 2
        std = plan.details["inference_multiplier"] * weight_bound * float(label_bound) ** 2
        squares = release_residual_squares(data, w, label_bound, sensitivity, std, rng, label_bound)
        info["inference"] = dict(
            statistics,
            kind="ssp",
            alpha=float(alpha),
            **noise,
            residual_squares=squares,
            residual_noise_std=std,
        )
    return SolverResult(coef=w[:, None], n_iter=max(1, int(iterations)), plan=plan, info=info)
