"""Confidence intervals for the coefficients of a private fit: sampling and privacy noise.

A private estimate differs from the truth for two reasons: the sample (as
any estimate) and the privacy noise.  The covariance here adds both, to
first order around the fitted coefficients, from released values and public
constants only (post-processing: it costs no privacy beyond the fit's own
extra release, see below):

* ``dp_ssp`` (least squares on released sufficient statistics ``G~ =
  X^T X + E``, ``b~ = X^T y + e``): the estimate solves ``A w = b~`` with
  ``A = G~ + ridge + N alpha``.  To first order ``w - w_ols = A^{-1} (e - E
  w - (ridge + N alpha) w)``; the noise terms have covariance ``s_b^2 I``
  and ``(s_G^2 / 2) (||w||^2 I + w w^T)`` (the symmetric noise of the Gram
  release: ``s_G^2`` on the diagonal, ``s_G^2 / 2`` off it), and the
  sampling part is ``sigma^2 A^{-1} G~ A^{-1}`` with the residual variance
  ``sigma^2`` from a released sum of squared residuals.
* ``dp_newton`` (steps ``W <- V - H~^{-1} (g(V) + xi_t / N)`` with a released,
  modified curvature ``H~`` and gradient noise ``xi_t ~ N(0, s_g^2 I)``):
  near the optimum ``g(V) = H (V - w_hat)``, so the error follows the
  linear recursion ``e_{t+1} = (I - H~^{-1} H) ((1 + c_t) e_t - c_t e_{t-1})
  - H~^{-1} xi_t / N`` with the momentum coefficients ``c_t`` the steps
  used.  For the squared loss the gradient is linear, so the gradients
  released at the last steps' points, averaged, give one more Newton step
  with a fraction of one step's gradient noise: the intervals' centre
  (:func:`newton_averaged_step`), whose error follows from the same
  recursion; for the log-loss the centre is the last iterate and the
  covariance of the recursion after the last step is the privacy part.  The
  sampling part is the model-based covariance of the M-estimator: ``H^{-1}``
  (the inverse of a released Hessian sum at the fitted coefficients) for the
  binary log-loss, ``sigma^2 (X^T X)^{-1}`` for the squared loss (the Gram
  matrix the steps released, ``sigma^2`` from a released sum of squared
  residuals).  For the log-loss, where the privacy variance of a parameter
  exceeds ``BOOTSTRAP_NOISE_RATIO`` times its sampling variance, the privacy
  part and a bias correction of the centre come from a parametric bootstrap
  of the steps instead (:func:`newton_logistic_bootstrap`).

The extra release (the residual squares, or the log-loss's Hessian sum) is
made by the solver, inside the same fit and on the same ledger entry, when
it runs with ``solver_options={"inference": True}``; the fitted estimator
keeps only the derived covariance (never the releases themselves).

The intervals are Wald intervals ``coef +/- z_{1 - alpha/2} bse``.  They
assume the model is right (linear model with homoscedastic errors, or a
logistic model), that the public bounds do not clip the data (rows inside
``data_norm``, labels inside ``y_bound``, residuals within the label
range), that the fit converged, and that the noise is small enough for the
first-order expansion (large ``n epsilon``).  Where the bounds clip, the
estimate is biased toward the clipped problem and the intervals can miss
the truth: see ``docs/guide/inference.md``.  They also assume independent
rows, so a fit with ``groups=`` refuses ``inference=True`` before its spend
(:func:`sklearn_dp._protocol.check_group_options`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm

__all__ = [
    "InferenceMixin",
    "INFERENCE_SOLVERS",
    "ssp_covariance",
    "newton_covariance",
    "newton_noise_covariance",
    "newton_averaged_step",
    "newton_logistic_bootstrap",
]

#: Which solvers give confidence intervals, per estimator.
INFERENCE_SOLVERS = {
    "DPSCORegressor": ("dp_ssp", "dp_newton"),
    "DPLogisticRegression": ("dp_newton",),
}


def _sym(M):
    return 0.5 * (M + M.T)


def _floored_inverse(M, floor):
    """``M^{-1}`` of a symmetric matrix with its eigenvalues raised to ``floor`` (> 0)."""
    lam, V = np.linalg.eigh(_sym(M))
    lam = np.maximum(lam, floor)
    return (V / lam) @ V.T


def _residual_variance(info, n_columns):
    """``sigma^2`` from the released sum of squared residuals, in the fit's label units.

    The released sum is raised by one standard deviation of its own noise
    (a conservative estimate where the noise matters, at small ``n
    epsilon``) and kept positive.
    """
    total = float(info["residual_squares"]) + float(info["residual_noise_std"])
    total = max(total, float(info["residual_noise_std"]), 1e-12)
    return total / max(float(info["normalizer"]) - n_columns, 1.0)


def ssp_covariance(info, coef):
    """Covariance of ``dp_ssp``'s coefficients (internal units: intercept column last).

    Parameters
    ----------
    info : dict
        The solver's ``info["inference"]``: the repaired Gram release, the
        ridge, the normaliser, the penalty, the noise scales of the Gram and
        ``X^T y`` releases and the released sum of squared residuals.
    coef : ndarray of shape (n_columns,)
        The fitted coefficients.

    Returns
    -------
    center : ndarray of shape (n_columns,)
        The estimate corrected, to first order, for the adaptive ridge.
    covariance : ndarray of shape (n_columns, n_columns)
    """
    w = np.asarray(coef, dtype=float).ravel()
    m = w.size
    gram = np.asarray(info["gram"], dtype=float)
    N = float(info["normalizer"])
    penalty = N * float(info["alpha"]) * np.asarray(info["penalized"], dtype=float)
    A = gram + np.diag(float(info["ridge"]) + penalty)
    scale = max(float(np.max(np.abs(np.diag(A)), initial=0.0)), 1e-300)
    A_inv = _floored_inverse(A, 1e-12 * scale)
    s_g = float(info["gram_noise_std"])
    s_b = float(info["xty_noise_std"])
    noise = s_b**2 * np.eye(m) + 0.5 * s_g**2 * (float(w @ w) * np.eye(m) + np.outer(w, w))
    sigma2 = _residual_variance(info, m)
    covariance = A_inv @ (sigma2 * gram + noise) @ A_inv
    # The adaptive ridge shrinks the estimate by A^{-1} ridge w (first order):
    # corrected, with the covariance of the corrected estimate.
    correction = np.eye(m) + float(info["ridge"]) * A_inv
    return correction @ w, _sym(correction @ covariance @ correction.T)


def _contraction(curvature_inverse, hessian):
    """``K = I - P H`` with the eigenvalues of ``P^{1/2} H P^{1/2}`` kept in ``[0, 1]``.

    Without noise the modified curvature bounds the Hessian (``H <= H~``: a
    majorant, raised to a floor), so a step contracts every direction; the
    clip keeps the noisy estimate of ``H`` from implying an unstable step.
    """
    lam, V = np.linalg.eigh(_sym(curvature_inverse))
    root = (V * np.sqrt(np.maximum(lam, 0.0))) @ V.T
    mu, U = np.linalg.eigh(_sym(root @ hessian @ root))
    inner = (U * np.clip(mu, 0.0, 1.0)) @ U.T
    # P H = P^{1/2} (P^{1/2} H P^{1/2}) P^{-1/2}; K in that similar form.
    inverse_root = (V / np.sqrt(np.maximum(lam, 1e-300))) @ V.T
    return np.eye(lam.size) - root @ inner @ inverse_root


def _transitions(K, momenta):
    """The matrices ``F_t`` of the recursion on ``(e_t, e_{t-1})``."""
    m = K.shape[0]
    for c in momenta:
        F = np.zeros((2 * m, 2 * m))
        F[:m, :m] = (1.0 + c) * K
        F[:m, m:] = -c * K
        F[m:, :m] = np.eye(m)
        yield F


def newton_noise_covariance(curvature_inverse, hessian, gradient_noise_std, normalizer, momenta):
    """Covariance of the privacy noise of dp_newton's last iterate (linear recursion).

    ``e_{t+1} = K ((1 + c_t) e_t - c_t e_{t-1}) - P xi_t / N`` with ``P``
    the inverse of the modified curvature the steps used, ``K = I - P H``
    (:func:`_contraction`), ``xi_t ~ N(0, s_g^2 I)`` and ``c_t`` the steps'
    momentum coefficients; from ``e_0 = e_{-1} = 0`` (the start is not
    random).
    """
    P = np.asarray(curvature_inverse, dtype=float)
    m = P.shape[0]
    K = _contraction(P, hessian)
    Q = (float(gradient_noise_std) / float(normalizer)) ** 2 * (P @ P.T)
    S = np.zeros((2 * m, 2 * m))  # joint covariance of (e_t, e_{t-1})
    for F in _transitions(K, momenta):
        S = F @ S @ F.T
        S[:m, :m] += Q
    return _sym(S[:m, :m])


#: The first step whose released gradient the squared loss's averaged step
#: uses.  The start is far from the optimum, and the first momentum step's
#: point overshoots by a fraction of that distance (``V_1 = W_1 + c (W_1 -
#: start)``); the curvature's floor and noise then move the averaged step by
#: a bias the covariance does not hold (from step 1, coverage 0.928-0.951
#: at n = 20,000 and epsilon = 1, over three sets of 200 data sets; from
#: step 2, 0.932-0.955, the last iterate's 0.948-0.960, with intervals 1.5
#: times as wide; benchmarks/bench_inference.py).
AVERAGED_FROM = 2


def newton_averaged_step(info, curvature_inverse, hessian):
    """Centre and privacy covariance of one Newton step with the averaged released gradients.

    For the squared loss the gradient is linear in the coefficients, so the
    mean of the gradients released at the points ``V_t`` of the steps
    ``t = AVERAGED_FROM .. T-1`` is the gradient at their mean ``V``, with
    the mean of their noise: ``w* = V - P g`` is one Newton step on ``k``
    times less gradient noise than a single step's (``k`` the number of
    steps averaged; see :data:`AVERAGED_FROM` for the steps left out).  Its
    error is ``K e_V - P u`` with ``e_V`` the mean error of the points (the
    linear recursion of :func:`newton_noise_covariance`), ``u`` the mean
    gradient noise and ``K = I - P H``.  Post-processing of the steps' own
    releases.

    Returns ``(center, privacy_covariance)``, or None with too few steps
    (the last iterate and its recursion then stand).
    """
    steps = info.get("steps") or ()
    if len(steps) <= AVERAGED_FROM:
        return None
    P = np.asarray(curvature_inverse, dtype=float)
    m = P.shape[0]
    T = len(steps)
    chosen = range(AVERAGED_FROM, T)
    points = np.array([steps[t][0] for t in chosen], dtype=float)
    gradients = np.array([steps[t][1] for t in chosen], dtype=float)
    center = points.mean(axis=0) - P @ gradients.mean(axis=0)
    # Each error as a linear map of the stacked noise (u_0, ..., u_{T-1}).
    K = _contraction(P, hessian)
    zero = np.zeros((m, m * T))
    e, e_previous = zero, zero
    point_errors = []
    for t, c in enumerate(info["momenta"]):
        v = (1.0 + c) * e - c * e_previous
        point_errors.append(v)
        e_next = K @ v
        e_next[:, t * m : (t + 1) * m] -= P
        e_previous, e = e, e_next
    error = K @ np.mean([point_errors[t] for t in chosen], axis=0)
    for t in chosen:
        error[:, t * m : (t + 1) * m] -= P / len(chosen)
    scale = (float(info["gradient_noise_std"]) / float(info["normalizer"])) ** 2
    return center, _sym(scale * error @ error.T)


def newton_covariance(info, coef, parts=False):
    """Centre and covariance of ``dp_newton``'s coefficients (internal units: intercept last).

    The centre is the fitted coefficients for the log-loss, and for the
    squared loss one more Newton step with the averaged released gradients
    of the last steps (:func:`newton_averaged_step`); the steps are assumed
    to have converged (the optimisation error of a fixed number of steps is
    not modelled; ``inference=True`` takes more steps by default for the
    log-loss for that).

    Parameters
    ----------
    info : dict
        The solver's ``info["inference"]``: the modified curvature of the
        steps (eigenvalues and vectors), its floor and modification, the
        momentum coefficients, the gradient noise scale, the
        normaliser, the penalty, and the extra release (the log-loss's
        Hessian sum or the sum of squared residuals) with its noise scale.
    coef : ndarray of shape (n_columns,)
        The fitted coefficients.

    parts : bool, default=False
        Return the sampling and the privacy parts of the covariance instead.

    Returns
    -------
    center : ndarray of shape (n_columns,)
    covariance : ndarray of shape (n_columns, n_columns)
    """
    lam = np.asarray(info["curvature_values"], dtype=float)
    V = np.asarray(info["curvature_vectors"], dtype=float)
    m = lam.size
    N = float(info["normalizer"])
    penalty = float(info["alpha"]) * np.asarray(info["penalized"], dtype=float)
    P = (V / lam) @ V.T
    if info["loss"] == "squared":
        # The released Gram matrix (average), undoing the floor the steps added.
        raw = lam - float(info["floor"]) if info["eigenvalue"] == "add" else lam
        raw = np.maximum(raw, 1e-12 * max(float(np.max(lam)), 1e-300))
        hessian = (V * raw) @ V.T  # the Gram average plus the penalty
        gram = hessian - np.diag(penalty)
        H_inv = _floored_inverse(hessian, 1e-12 * float(np.max(raw)))
        sampling = _residual_variance(info, m) * (H_inv @ gram @ H_inv) / N
    else:
        # The expected spectral norm of the release's noise: eigenvalues below
        # it are noise, raised to it.
        floor = math.sqrt(2.0 * m) * float(info["hessian_noise_std"])
        lam_i, V_i = np.linalg.eigh(_sym(np.asarray(info["hessian"], dtype=float)))
        tiny = 1e-12 * max(float(np.max(np.abs(lam_i))), 1e-300)
        information = (V_i * np.maximum(lam_i, max(floor, tiny))) @ V_i.T
        hessian = information / N + np.diag(penalty)
        J_inv = np.linalg.inv(hessian * N)
        sampling = J_inv @ information @ J_inv
    center = np.asarray(coef, dtype=float).ravel()
    averaged = newton_averaged_step(info, P, hessian) if info["loss"] == "squared" else None
    if averaged is not None:
        center, privacy = averaged
    else:
        privacy = newton_noise_covariance(
            P, hessian, info["gradient_noise_std"], N, info["momenta"]
        )
    if parts:
        return sampling, privacy
    return center, _sym(sampling + privacy)


#: The log-loss's intervals come from the bootstrap when the first-order
#: privacy variance of a coefficient exceeds this many times its sampling
#: variance: there the noise moves the estimate far enough for the loss's
#: curvature to change (an outward bias the linear recursion misses; at
#: n = 2,000 and epsilon = 0.5 the linear intervals covered 69-86%).  Below
#: it the linear recursion covered as well (benchmarks/bench_inference.py).
BOOTSTRAP_NOISE_RATIO = 4.0

#: Replicates of the parametric bootstrap of dp_newton's log-loss fits, and
#: the synthetic rows that stand in for the design's distribution.
BOOTSTRAP_REPLICATES = 200
BOOTSTRAP_ROWS = 2000

#: Public seed of the bootstrap: its draws simulate noise on released
#: values (no private value is read), and a fixed seed makes ``conf_int``
#: reproducible; it regenerates none of the fit's noise.
BOOTSTRAP_SEED = 20220503


def _synthetic_design(second_moment, intercept_scaling, row_norm_bound, rng, size):
    """Rows ``x~`` of a normal design with the released first and second moments.

    ``second_moment`` is the released ``X~^T X~ / N``; with an intercept
    column of constant ``s`` (last), its last row gives the features' means
    (``s E[x]``).  Rows are scaled into the public row bound, as the fit's.
    """
    m = second_moment.shape[0]
    d = m - (intercept_scaling is not None)
    moment = _sym(second_moment)[:d, :d]
    mean = np.zeros(d)
    if intercept_scaling is not None:
        mean = second_moment[:d, -1] / intercept_scaling
    lam, V = np.linalg.eigh(moment - np.outer(mean, mean))
    root = V * np.sqrt(np.maximum(lam, 0.0))
    rows = mean + rng.standard_normal((size, d)) @ root.T
    if intercept_scaling is not None:
        rows = np.column_stack([rows, np.full(size, intercept_scaling)])
    norms = np.linalg.norm(rows, axis=1)
    return rows * np.minimum(1.0, row_norm_bound / np.maximum(norms, 1e-300))[:, None]


def newton_logistic_bootstrap(info, coef, replicates=BOOTSTRAP_REPLICATES):
    """Centre and covariance of a log-loss ``dp_newton`` fit by a parametric bootstrap.

    In the bootstrap world the truth is the fitted ``w`` and the design is
    normal with the released moments (:func:`_synthetic_design`).  Each
    replicate reruns the fit's steps (from its start, with its momentum
    coefficients and its eigenvalue floor) on the population gradient
    ``E[x (s(x V) - s(x w))] + alpha V`` plus fresh gradient noise ``xi_t /
    N`` at each step, with the released curvature.  The replicates' mean
    minus their truth estimates the estimator's bias (the noise pushes a
    logistic fit outward, where the loss flattens), which the centre
    removes; their covariance is the privacy part of the interval's, to
    which the sampling part ``H^{-1}`` (``H`` the released Hessian sum at the
    fitted coefficients) is added.  The truth of the second round of replicates is ``w`` less
    the bias found by a first round (half as many).  Post-processing of released values and public
    constants only (Ferrando, Wang and Sheldon 2022).
    """

    rng = np.random.default_rng(BOOTSTRAP_SEED)
    w = np.asarray(coef, dtype=float).ravel()
    m = w.size
    N = float(info["normalizer"])
    penalty = float(info["alpha"]) * np.asarray(info["penalized"], dtype=float)
    lam = np.asarray(info["curvature_values"], dtype=float)
    vectors = np.asarray(info["curvature_vectors"], dtype=float)
    # The released Gram average (the curvature less the penalty, over beta).
    gram = ((vectors * lam) @ vectors.T - np.diag(penalty)) / float(info["curvature_bound"])
    rows = _synthetic_design(
        gram, info["intercept_scaling"], float(info["row_norm_bound"]), rng, BOOTSTRAP_ROWS
    )
    floor = math.sqrt(2.0 * m) * float(info["hessian_noise_std"])
    lam_i, V_i = np.linalg.eigh(_sym(np.asarray(info["hessian"], dtype=float)))
    s_g = float(info["gradient_noise_std"]) / N
    start = np.asarray(info["start"], dtype=float).ravel()

    def replicate(truth_coef, count):
        # The steps as the fit ran them, with the released curvature, for all
        # replicates at once (one row of W per replicate).
        truth = 1.0 / (1.0 + np.exp(-(rows @ truth_coef)))
        W = np.tile(start, (count, 1))
        W_previous = W
        for c in info["momenta"]:
            point = W + c * (W - W_previous)
            scores = 1.0 / (1.0 + np.exp(-(rows @ point.T)))
            gradient = (scores - truth[:, None]).T @ rows / len(rows)
            gradient += penalty * point + s_g * rng.standard_normal((count, m))
            step = ((gradient @ vectors) / lam) @ vectors.T
            W_previous, W = W, point - step
        return W

    # The fitted w is itself pushed outward: the bias is estimated in a world
    # whose truth is w less a first estimate of it (one correction), where
    # the replicates are as far out as the fit is from the truth.
    first = replicate(w, replicates // 2)
    center = w - (first.mean(axis=0) - w)
    draws = replicate(center, replicates)
    # The sampling part from the released Hessian (the synthetic design's
    # own Hessian would stand in for it less well).
    information = (V_i * np.maximum(lam_i, max(floor, 0.0))) @ V_i.T
    J_inv = np.linalg.inv(information + N * np.diag(penalty))
    sampling = J_inv @ information @ J_inv
    return w - (draws.mean(axis=0) - center), _sym(np.cov(draws, rowvar=False) + sampling)


def _covariance(info, coef):
    if info["kind"] == "ssp":
        return ssp_covariance(info, coef)
    if info["loss"] == "log_loss" and info["hessian_mode"] == "bound":
        sampling, privacy = newton_covariance(info, coef, parts=True)
        ratio = np.diag(privacy) / np.maximum(np.diag(sampling), 1e-300)
        if float(np.max(ratio)) > BOOTSTRAP_NOISE_RATIO:
            # Scores of far-out replicates overflow exp harmlessly (the sigmoid is 0).
            with np.errstate(over="ignore"):
                return newton_logistic_bootstrap(info, coef)
        return np.asarray(coef, dtype=float).ravel(), _sym(sampling + privacy)
    return newton_covariance(info, coef)


class InferenceMixin:
    """``conf_int``, ``bse_``, ``coef_covariance_`` and ``interval_center_`` of a private fit.

    After a fit with ``solver_options={"inference": True}`` and a solver that
    supports it, the fitted estimator has ``coef_covariance_`` (the
    covariance of the parameters, sampling and privacy noise together),
    ``bse_`` (its square roots: standard errors) and ``interval_center_``
    (the centre of the intervals: the parameters, corrected to first order
    for ``dp_ssp``'s adaptive ridge), each with the intercept first (when
    fitted), then the coefficients in the order of ``coef_``.  All three are
    derived from released values (no raw release is kept).
    """

    def _store_inference(self, result, unit_scales, fit_intercept):
        """Keep the covariance of the reported coefficients (or drop a previous fit's).

        ``unit_scales`` maps the solver's coefficients (intercept column last)
        to the reported ones (a diagonal change of units: ``coef_ =
        unit_scales * w`` up to the label centre).  The released values in
        ``result.info["inference"]`` are used here and not kept.
        """
        info = result.info.pop("inference", None)
        if info is None:
            for name in ("bse_", "coef_covariance_", "interval_center_"):
                self.__dict__.pop(name, None)
            return
        w = np.asarray(result.coef, dtype=float)[:, 0]
        scales = np.asarray(unit_scales, dtype=float)
        center, covariance = _covariance(info, w)
        # In reported units: the shift of the centre from coef_ scales with them.
        shift = (center - w) * scales
        covariance = covariance * np.outer(scales, scales)
        if fit_intercept:  # the intercept first, as statsmodels' add_constant puts it
            order = np.r_[w.size - 1, np.arange(w.size - 1)]
            covariance = covariance[np.ix_(order, order)]
            shift = shift[order]
        self.coef_covariance_ = covariance
        self.interval_center_ = self._reported_parameters() + shift
        self.bse_ = np.sqrt(np.maximum(np.diag(covariance), 0.0))

    def _reported_parameters(self):
        coef = np.ravel(np.asarray(self.coef_, dtype=np.float64))
        if self.fit_intercept:
            return np.r_[float(np.ravel(self.intercept_)[0]), coef]
        return coef

    def conf_int(self, alpha=0.05):
        """Confidence intervals for the coefficients (the privacy noise included).

        Wald intervals ``estimate +/- z_{1 - alpha / 2} * bse_`` with a
        covariance that adds the sampling variation and the privacy noise
        (see ``docs/guide/inference.md`` for the method and its
        assumptions).  Available after a fit with
        ``solver_options={"inference": True}`` and a solver that supports
        it (``DPSCORegressor``: ``dp_ssp`` and ``dp_newton`` with the
        squared loss; ``DPLogisticRegression``: ``dp_newton``, two classes).
        Costs nothing: post-processing of the fit's releases.

        Parameters
        ----------
        alpha : float, default=0.05
            One minus the confidence level, in (0, 1).

        Returns
        -------
        ndarray of shape (n_features + fit_intercept, 2)
            ``[low, high]`` per row: the intercept first (when fitted), then
            the coefficients in the order of ``coef_``, as ``bse_``.

        Raises
        ------
        ValueError
            For a solver or a fit without inference, or a bad ``alpha``.
        """
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        if not (isinstance(alpha, (int, float)) and 0 < alpha < 1):
            raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}.")
        name = type(self).__name__
        supported = INFERENCE_SOLVERS.get(name, ())
        if not hasattr(self, "coef_covariance_"):
            if self.solver_ not in supported:
                raise ValueError(
                    f"{name}.conf_int supports the solvers {', '.join(supported)}; this model "
                    f"was fitted with solver={self.solver_!r}. Refit with one of them and "
                    "solver_options={'inference': True}."
                )
            raise ValueError(
                f"{name}.conf_int needs the fit's extra release for inference: refit with "
                "solver_options={'inference': True} (it spends a small share of the same "
                "epsilon, see docs/guide/inference.md)."
            )
        z = float(norm.ppf(1.0 - alpha / 2.0))
        center = self.interval_center_
        return np.column_stack([center - z * self.bse_, center + z * self.bse_])
