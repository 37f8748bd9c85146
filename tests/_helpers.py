"""Small data sets shared by the test modules.

Each is drawn from ``np.random.default_rng(seed)`` in a fixed order (the
features first, then the label noise), so a test that passes the same
arguments always gets the same rows.  Modules whose data carry a purpose of
their own (outliers, scales, sparsity patterns) keep their own generators.
"""

import numpy as np

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
    options = dict(n_outputs=n_outputs, regularization=regularization, linear_term=linear_term)
    solve = _newton._silenced(_newton._minimize)
    return solve(X, y, loss, n_steps=int(n_steps), progress=progress, **options)
