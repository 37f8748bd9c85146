"""Small data sets shared by the test modules.

Each is drawn from ``np.random.default_rng(seed)`` in a fixed order (the
features first, then the label noise), so a test that passes the same
arguments always gets the same rows.  Modules whose data carry a purpose of
their own (outliers, scales, sparsity patterns) keep their own generators.
"""

import numpy as np


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
