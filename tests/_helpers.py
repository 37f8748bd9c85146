"""Small data sets shared by the test modules.

Each is drawn from ``np.random.default_rng(seed)`` in a fixed order (the
features first, then the label noise), so a test that passes the same
arguments always gets the same rows.  Modules whose data carry a purpose of
their own (outliers, scales, sparsity patterns) keep their own generators.
"""

import math

import numpy as np
import scipy.sparse as sp

from sklearn_dp.solvers import _newton


def binary_data(n=200, d=3, *, seed=0, half_width=1.0, noise=0.0):
    """Features uniform on ``[-half_width, half_width]``; label 1 where the first one (plus noise) > 0.

    Parameters
    ----------
    n, d : int
        Rows and features.
    seed : int
        Seed of the generator.
    half_width : float
        Half the width of the features' range.
    noise : float
        Standard deviation of the Gaussian noise added to the first feature
        before thresholding; 0 draws no noise.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,), ints in {0, 1}
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-half_width, half_width, size=(n, d))
    score = X[:, 0] + noise * rng.normal(size=n) if noise else X[:, 0]
    return X, (score > 0).astype(int)


def regression_data(
    n=200, d=3, *, seed=0, half_width=1.0, coef=(0.5, -0.3, 0.2), noise=0.1, clip=None
):
    """Features uniform on ``[-half_width, half_width]``; a linear label on the first features.

    Parameters
    ----------
    n, d : int
        Rows and features.
    seed : int
        Seed of the generator.
    half_width : float
        Half the width of the features' range.
    coef : sequence of float
        Coefficients of the first ``len(coef)`` features (the others do not
        enter the label).
    noise : float
        Standard deviation of the Gaussian label noise.
    clip : float or None
        Labels clipped to ``[-clip, clip]``; None leaves them as drawn.

    Returns
    -------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    """
    rng = np.random.default_rng(seed)
    X = rng.uniform(-half_width, half_width, size=(n, d))
    coef = np.asarray(coef, dtype=float)
    y = X[:, : coef.size] @ coef + noise * rng.normal(size=n)
    return X, y if clip is None else np.clip(y, -clip, clip)


def minimize_strongly_convex(
    X,
    y,
    loss,
    *,
    n_outputs,
    regularization,
    linear_term=None,
    n_steps=_newton.DEFAULT_NEWTON_STEPS,
    progress=None,
):
    """Minimise ``sum_i l(x_i W, y_i) + regularization/2 ||W||^2 + <linear_term, W>``.

    Exactly ``n_steps`` safeguarded Newton steps from ``W = 0`` (the first
    stage of :func:`sklearn_dp.solvers._newton.certified_minimize`, see its
    module docstring); returns the iterate with the smallest gradient norm.
    A reference solve for the tests: the solvers run the certified solve.

    Parameters
    ----------
    X : Design, ndarray or sparse matrix of shape (n_samples, n_columns)
        The bounded rows (``BoundedData.design``: products without a copy of
        the caller's X; a matrix is wrapped).
    y : ndarray of shape (n_samples,)
    loss : BinaryLogisticLoss, MultinomialLoss or HuberLoss
    n_outputs : int
    regularization : float
        ``Lambda > 0``.
    linear_term : ndarray of shape (n_columns, n_outputs), optional
    n_steps : int
        Newton steps (public).
    progress : callable, optional
        Called as ``progress(step)`` after each step, with the public step
        number only.

    Returns
    -------
    InnerSolve
        ``coef`` and its ``gradient_norm`` (private: see :class:`~sklearn_dp.solvers._newton.InnerSolve`).

    Notes
    -----
    Never raises because of the data and always runs the same number of
    Newton steps and line-search evaluations.  The Newton system is solved
    densely up to ``DENSE_HESSIAN_MAX_PARAMS`` coefficients, otherwise by
    conjugate gradients on Hessian-vector products (two mat-vecs each, at
    most ``CG_ITERATIONS``).
    """
    B = _newton._linear_term(linear_term, (X.shape[1], n_outputs))
    solve = _newton._silenced(_newton._minimize)
    return solve(
        X, y, loss, lam=float(regularization), B=B, n_steps=int(n_steps), progress=progress
    )


# The ReSQue estimator, as the paper defines it: the reference the tests hold
# the library's capped sums (sklearn_dp._clipped_sums.capped_resque_sum) to.


def resque_log_weights(x, center, xi, rho):
    """Logarithm of the ReSQue weights ``w_xi(x)`` for each row of ``xi``.

    ``log w = (2 <x - c, xi> - ||x - c||^2) / (2 rho^2)``: the log-likelihood
    ratio of ``N(x - c, rho^2 I)`` to ``N(0, rho^2 I)`` at ``xi``.  Computed in
    closed form, never as a ratio of two Gaussian densities (whose
    ``(2 pi rho^2)^(-d/2)`` factors under- or overflow).

    Parameters
    ----------
    x, center : ndarray of shape (d,)
    xi : ndarray of shape (m, d)
        The Gaussian perturbations the queries were made at (``center + xi``).
    rho : float
        Smoothing radius (standard deviation of each coordinate of ``xi``).

    Returns
    -------
    ndarray of shape (m,)
    """
    offset = np.asarray(x, dtype=float) - np.asarray(center, dtype=float)
    return (2.0 * (xi @ offset) - offset @ offset) / (2.0 * rho**2)


def resque_weights(x, center, xi, rho, max_weight=None):
    """ReSQue weights ``w_xi(x)``, capped at ``max_weight`` if given (see resque_log_weights)."""
    log_weights = resque_log_weights(x, center, xi, rho)
    if max_weight is None or not math.isfinite(max_weight):
        return np.exp(log_weights)
    # Cap in log space (no overflow), then exactly: exp(log(3)) rounds above 3.
    np.minimum(log_weights, math.log(max_weight), out=log_weights)
    return np.minimum(np.exp(log_weights), max_weight)


def resque_gradient(x, center, xi, subgradients, rho, *, max_weight=None, average=True):
    """ReSQue estimates of the gradient of the Gaussian-smoothed loss at ``x``.

    Parameters
    ----------
    x : ndarray of shape (d,)
        Point at which the gradient of ``f_rho = f * N(0, rho^2 I)`` is wanted.
    center : ndarray of shape (d,)
        Reference point the queries were made around.
    xi : ndarray of shape (m, d)
        Perturbations, ``xi ~ N(0, rho^2 I)`` i.i.d..
    subgradients : ndarray of shape (m, d)
        ``g(center + xi_i)``: (stochastic) subgradients of ``f`` at the query
        points.
    rho : float
        Smoothing radius.
    max_weight : float, optional
        Cap on the weights (biased, but bounds each term by ``max_weight``
        times ``||g||``); ``None`` for the exact, unbiased estimator.
    average : bool, default=True
        Return the mean of the m estimates, or all of them.

    Returns
    -------
    ndarray of shape (d,) or (m, d)
        ``mean_i w_i(x) g_i`` or the rows ``w_i(x) g_i``.

    Notes
    -----
    Unbiased for ``grad f_rho(x)`` for every ``x`` and ``center`` (Lemma 1 of
    the paper): substituting ``z = center + xi`` gives
    ``E w g = int N(z; x, rho^2 I) E g(z) dz``.  Its second moment is at most
    ``L^2 exp(||x - center||^2 / rho^2)`` when ``E ||g||^2 <= L^2`` (at most
    ``3 L^2`` within ``rho`` of the centre), with equality when ``||g|| = L``.
    """
    weights = resque_weights(x, center, xi, rho, max_weight)
    if average:
        return weights @ subgradients / len(weights)
    return weights[:, None] * subgradients


def linf_row_norms(X):
    """``||x_i||_inf`` of each row of a dense or CSR matrix, or of a bounded design.

    The solvers read ``design.row_norms(np.inf)``; this reference also takes
    the plain matrices the tests build.
    """
    if hasattr(X, "row_norms"):
        return X.row_norms(np.inf)
    if sp.issparse(X):
        return np.asarray(abs(X).max(axis=1).todense()).ravel()
    return np.abs(X).max(axis=1) if X.shape[1] else np.zeros(X.shape[0])


def gaussian_curve(noise_multiplier, epsilon):
    """The analytic Gaussian mechanism's delta at ``epsilon`` (Balle and Wang 2018), with scipy's normal."""
    from scipy.stats import norm

    mu = 1.0 / noise_multiplier
    return norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)


def laplace_gaussian_curve(laplace_scale, noise_multiplier, epsilon):
    """The exact delta of a Laplace mechanism (sensitivity 1) composed with a Gaussian one.

    The hockey-stick divergence of independent parts decomposes over the
    Laplace part's privacy loss L: E[delta_G(epsilon - L)], with L = 1/b
    below 0 (probability 1/2), -1/b from 1 (probability e^(-1/b) / 2) and
    (1 - 2c) / b at c in between; integrated with scipy.
    """
    from scipy import integrate

    loss = 1.0 / laplace_scale

    def curve(value):
        return gaussian_curve(noise_multiplier, value)

    middle, _ = integrate.quad(
        lambda c: (
            math.exp(-c / laplace_scale) / (2 * laplace_scale) * curve(epsilon - (1 - 2 * c) * loss)
        ),
        0.0,
        1.0,
        epsabs=0.0,
        epsrel=1e-12,
    )
    return 0.5 * curve(epsilon - loss) + 0.5 * math.exp(-loss) * curve(epsilon + loss) + middle


def without_bound_fallback(monkeypatch, *solvers):
    """Let ``solvers`` run where their public error bound is vacuous (no fallback, no warning).

    ``vr_frank_wolfe`` and ``localized_mirror_descent`` return the zero model
    without a release where their bound reaches the registry's
    ``bound_warning``; tests of their releases on small data switch that off.
    """
    import dataclasses

    from sklearn_dp.solvers import SOLVERS, _registry

    for solver in solvers:
        spec = dataclasses.replace(SOLVERS[solver], bound_warning=None)
        monkeypatch.setitem(_registry._REGISTRY, solver, spec)
