r"""The inner solve of the perturbation solvers: a fixed-budget, safeguarded Newton method.

Minimises, for a GLM loss with bounded derivative and bounded curvature,

    F(W) = sum_i l(x_i^T W, y_i) + (Lambda / 2) ||W||_F^2 + <B, W>

(``B`` the linear term of objective perturbation, zero for output
perturbation).  ``F`` is ``Lambda``-strongly convex, so for every ``W``

    ||W - W*|| <= ||grad F(W)|| / Lambda          (Lemma 2 of ``_perturbation``),

and the gradient norm at a point *certifies* its distance to the exact
minimiser.  The privacy arguments of both solvers rest on that certificate,
never on the iteration that produced the point.

Data independence
-----------------
The solve runs on private data, so nothing about it may be observable except
through the noisy release that follows:

* exactly ``n_steps`` Newton steps (public), each with a line search of
  exactly ``LINE_SEARCH_ROUNDS`` rounds of ``LINE_SEARCH_WIDTH``
  directional-derivative evaluations; no convergence test, no early stop,
  no exception raised because of the data;
* the point returned is the iterate with the smallest gradient norm (the best
  certificate); the public start ``W = 0`` is always a candidate;
* non-finite intermediate values (which bounded, finite inputs do not
  produce, but overflow of an astronomically long Newton direction might)
  are handled by fixed rules, never by an exception: a non-finite Newton
  direction is replaced by the scaled gradient ``-grad / Lambda``, a step to
  a point whose coefficients or gradient are not finite is not taken (the
  iterate stays), and a non-finite slope in the line search counts as an
  overshoot; so the point returned is always finite;
* numerical trouble in a Newton system (a Cholesky factorisation that fails
  on a nearly singular Hessian) falls back, by a fixed rule, to an
  eigenvalue-floored solve and then to the scaled gradient direction; numpy
  floating-point errors are ignored and warnings (scipy's LinAlgWarning
  prints the private Hessian's condition number) are silenced here, at the
  source, not only by the estimators' private phase.

These rules are private for the same reason as the rest of the solve: they
are part of the deterministic map from the data to the returned point, whose
only use is as the value of a noisy release with a sensitivity that covers
any point meeting the certificate; they change neither the number of steps,
nor what is printed, nor whether anything is raised.

Robustness
----------
The line search never compares objective values (with labels of 1e15 or
more the objective's magnitude swamps the differences a line search needs,
which made the former Armijo search cycle).  It finds the minimiser of the
convex function ``phi(t) = F(W + t d)`` along the Newton direction ``d`` from
the sign of ``phi'(t) = <grad F(W + t d), d>``, a sum of bounded per-row
derivatives times ``<x_i, d>``: rounds of grid points (geometric, then
linear inside a bracket) plus the secant point of the bracket, evaluated in
one vectorised call per round.  It returns the largest point known to have
``phi' < 0``, so that ``phi`` decreases at every step in exact arithmetic
(``phi`` is convex).  For the Huber loss the Hessian is the generalised
one (curvature 1 inside the threshold, 0 outside: semismooth Newton); with
the exact line search this converges even when the threshold is tiny
compared with the residuals and ``Lambda`` is tiny compared with the
curvature (the configuration where the Armijo search failed).
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotrs as _potrs
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit, softmax

from .._design import Design
from .._losses import BinaryLogisticLoss, HuberLoss, MultinomialLoss

__all__ = [
    "minimize_strongly_convex",
    "InnerSolve",
    "DEFAULT_NEWTON_STEPS",
    "LINE_SEARCH_ROUNDS",
    "LINE_SEARCH_WIDTH",
    "DENSE_HESSIAN_MAX_PARAMS",
]

#: Newton steps of the inner solve (public; every solve runs exactly this many).
DEFAULT_NEWTON_STEPS = 50
#: Rounds of each line search, and points evaluated per round (public, fixed).
LINE_SEARCH_ROUNDS = 6
LINE_SEARCH_WIDTH = 12
#: Largest number of entries of one batch of line-search scores.
_LINE_SEARCH_CHUNK = 1 << 20
#: Largest number of coefficients for which the Newton step builds the dense Hessian.
DENSE_HESSIAN_MAX_PARAMS = 2000
#: Conjugate-gradient iterations per Newton step beyond ``DENSE_HESSIAN_MAX_PARAMS``.
CG_ITERATIONS = 200

# scipy renamed cg's relative tolerance from ``tol`` to ``rtol`` in 1.12.
_CG_RTOL = "rtol" if "rtol" in inspect.signature(cg).parameters else "tol"


@dataclass(frozen=True)
class InnerSolve:
    """The result of :func:`minimize_strongly_convex`.

    Attributes
    ----------
    coef : ndarray of shape (n_columns, n_outputs)
        The iterate with the smallest gradient norm (finite).
    gradient_norm : float
        ``||grad F(coef)||_F``: the certificate ``||coef - W*|| <=
        gradient_norm / Lambda``.  Computed from the private data without
        noise: for tests and direct callers only, never printed or returned
        by the solvers.
    """

    coef: np.ndarray
    gradient_norm: float


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


def _as_design(X):
    """The bounded design as an operator: a :class:`Design` as it is, a matrix wrapped (no copy)."""
    if isinstance(X, Design):
        return X
    return Design(sp.csr_matrix(X) if sp.issparse(X) else np.asarray(X))


def _multinomial_hessian(design, P, chunk=2048, sample_weight=None):
    """``sum_i w_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` as a dense (pK, pK) array.

    Index ``j * K + k`` (coefficient j, class k), matching ``W.ravel()``.  The
    rank-one part is ``M^T M`` with ``M[i, j*K + k] = x_ij p_ik``, built by row
    chunks so memory stays ``O(chunk * p * K)``.
    """
    n_samples, n_columns = design.shape
    n_outputs = P.shape[1]
    H = np.zeros((n_columns, n_outputs, n_columns, n_outputs))
    root = None if sample_weight is None else np.sqrt(sample_weight)
    for k in range(n_outputs):
        H[:, k, :, k] = design.gram(P[:, k] if sample_weight is None else P[:, k] * sample_weight)
    H = H.reshape(n_columns * n_outputs, n_columns * n_outputs)
    for start in range(0, n_samples, chunk):
        stop = min(start + chunk, n_samples)
        Xc = design.rows(np.arange(start, stop)).toarray()
        Pc = P[start:stop] if root is None else P[start:stop] * root[start:stop, None]
        M = (Xc[:, :, None] * Pc[:, None, :]).reshape(Xc.shape[0], -1)
        H -= M.T @ M
    return H


def _solve_dense(H, rhs, lam):
    """``H^{-1} rhs`` for a symmetric ``H >= lam I``, with fixed fallbacks.

    Cholesky first (LAPACK ``potrf``/``potrs``: a failure is a return code,
    never a warning, unlike ``scipy.linalg.solve``, whose LinAlgWarning prints
    the private Hessian's condition number); if it fails (rounding made a
    nearly singular ``H`` indefinite) or gives a non-finite result, an
    eigendecomposition with the eigenvalues floored at ``lam`` (the exact
    lower bound of the true Hessian); if that fails too, ``rhs / lam``.  Every
    branch gives a direction of descent for the gradient ``rhs``.
    """
    factor, info = _potrf(H, lower=1, clean=1)
    if info == 0:
        step, info = _potrs(factor, rhs, lower=1)
        if info == 0 and np.all(np.isfinite(step)):
            return step
    try:
        values, vectors = np.linalg.eigh(H)
        values = np.maximum(values, lam)
        step = vectors @ ((vectors.T @ rhs) / values)
        if np.all(np.isfinite(step)):
            return step
    except (np.linalg.LinAlgError, ValueError):  # pragma: no cover - eigh on finite input
        pass
    return rhs / lam  # pragma: no cover


def _line_search(dphi, slope0, n_rounds=None, width=None):
    """A step ``t >= 0`` near the minimiser of a convex ``phi`` with ``phi'(0) = slope0 < 0``.

    ``dphi(ts)`` returns ``phi'`` at every point of the array ``ts`` (one
    vectorised call per round); it is called exactly ``n_rounds`` times, on
    ``width`` points each.  The search keeps ``lo``, the largest point found
    with ``phi' < 0`` (``phi`` decreases on ``[0, lo]``, so ``phi(lo) < phi(0)`` in
    exact arithmetic), and ``hi``, the smallest with ``phi' >= 0`` or not
    finite.  The first round probes ``4^k`` around the Newton step ``t = 1``;
    while one end is missing, the next round continues that geometric grid;
    inside a bracket, a round evaluates a grid (geometric when the ends are
    more than a factor 4 apart, linear otherwise) plus the secant point of
    the two ends (exact when ``phi'`` is linear there, i.e. on quadratic
    pieces).  The grid makes the bracket shrink by ``width`` per round even
    when ``phi'`` is nearly a step function (a Huber band or a saturated
    softmax crossed by a long direction).  Returns ``lo``.
    """
    n_rounds = LINE_SEARCH_ROUNDS if n_rounds is None else n_rounds
    width = LINE_SEARCH_WIDTH if width is None else width
    first, up, down, fractions = _grids(width)
    lo, f_lo = 0.0, slope0
    hi, f_hi = math.inf, math.inf
    for round_ in range(n_rounds):
        if round_ == 0:
            ts = first
        elif hi == math.inf:
            ts = lo * up
        else:
            if lo == 0.0:
                points = hi * down
            elif hi > 4.0 * lo:
                points = lo * (hi / lo) ** fractions
            else:
                points = lo + (hi - lo) * fractions
            secant = 0.5 * (lo + hi)
            if f_hi != math.inf and f_hi > f_lo:
                secant = lo - f_lo * (hi - lo) / (f_hi - f_lo)
                secant = min(max(secant, lo + 1e-12 * (hi - lo)), hi - 1e-12 * (hi - lo))
            ts = np.empty(width)
            ts[:-1] = points
            ts[-1] = secant
        values = dphi(ts).tolist()
        points = ts.tolist()
        # A slope that is not finite counts as an overshoot (a fixed rule).
        for t, f in zip(points, values):
            if not f < 0 and lo < t < hi:
                hi, f_hi = t, (f if math.isfinite(f) else math.inf)
        for t, f in zip(points, values):
            if f < 0 and lo < t < hi:
                lo, f_lo = t, f
    return lo


@functools.lru_cache(maxsize=8)
def _grids(width):
    """The line search's fixed grids for ``width`` points per round."""
    exponents = np.arange(width, dtype=float)
    first = 4.0 ** (exponents - width // 2)
    up = 4.0 ** (exponents + 1.0)
    interior = np.arange(1, width, dtype=float)
    return first, up, 4.0 ** (-interior), interior / width


class _DirectionalDerivatives:
    """``sum_i <dl/dz(z_i + t delta_i, y_i), delta_i>`` for every ``t`` of a batch.

    One vectorised evaluation of the loss's derivative at all the points of
    a round, by chunks of rows so memory stays bounded (single-output losses:
    an ``n x width`` array; multinomial: ``width`` stacked copies of the rows).
    """

    def __init__(self, loss, y, n_outputs, width, sample_weight=None):
        self.loss = loss
        self.y = y
        self.weights = sample_weight
        self.n_samples = len(y)
        self.chunk = max(1, _LINE_SEARCH_CHUNK // max(1, width * n_outputs))
        self.single = n_outputs == 1 and isinstance(loss, (BinaryLogisticLoss, HuberLoss))
        self.column = np.asarray(y, dtype=float)[:, None] if self.single else None
        self.huber = isinstance(loss, HuberLoss)

    def __call__(self, Z, Delta, ts):
        m = len(ts)
        if self.single:
            total = np.zeros(m)
            for start in range(0, self.n_samples, self.chunk):
                if self.chunk >= self.n_samples:
                    z, delta, y = Z[:, 0:1], Delta[:, 0], self.column
                    w = self.weights
                else:
                    rows = slice(start, start + self.chunk)
                    z, delta, y = Z[rows, 0:1], Delta[rows, 0], self.column[rows]
                    w = None if self.weights is None else self.weights[rows]
                U = z + delta[:, None] * ts
                if self.huber:
                    k = self.loss.epsilon_huber
                    D = np.minimum(np.maximum(U - y, -k), k)
                else:
                    D = -y * expit(-y * U)
                total += (delta if w is None else delta * w) @ D
            return total
        n_outputs = Z.shape[1]
        total = np.zeros(m)
        for start in range(0, self.n_samples, self.chunk):
            stop = min(start + self.chunk, self.n_samples)
            Zc, Dc = Z[start:stop], Delta[start:stop]
            size = stop - start
            stacked = (Zc[None, :, :] + ts[:, None, None] * Dc[None, :, :]).reshape(
                m * size, n_outputs
            )
            derivative = self.loss.derivative(stacked, np.tile(self.y[start:stop], m))
            if self.weights is not None:
                Dc = Dc * self.weights[start:stop, None]
            total += (derivative.reshape(m, size, n_outputs) * Dc).sum(axis=(1, 2))
        return total


def minimize_strongly_convex(
    X,
    y,
    loss,
    *,
    n_outputs,
    regularization,
    linear_term=None,
    n_steps=DEFAULT_NEWTON_STEPS,
    progress=None,
    sample_weight=None,
):
    """Minimise ``sum_i l(x_i W, y_i) + regularization/2 ||W||^2 + <linear_term, W>``.

    Exactly ``n_steps`` safeguarded Newton steps from ``W = 0`` (see the
    module docstring); returns the iterate with the smallest gradient norm.

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
    sample_weight : ndarray of shape (n_samples,), optional
        Non-negative row weights: minimises ``sum_i w_i l(x_i W, y_i) + ...``.

    Returns
    -------
    InnerSolve
        ``coef`` and its ``gradient_norm`` (private: see :class:`InnerSolve`).

    Notes
    -----
    Never raises because of the data and always runs the same number of
    Newton steps and line-search evaluations.  The Newton system is solved
    densely up to ``DENSE_HESSIAN_MAX_PARAMS`` coefficients, otherwise by
    conjugate gradients on Hessian-vector products (two mat-vecs each, at
    most ``CG_ITERATIONS``).
    """
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _minimize(
            X, y, loss, n_outputs=n_outputs, regularization=regularization,
            linear_term=linear_term, n_steps=int(n_steps), progress=progress,
            sample_weight=sample_weight,
        )


def _minimize(X, y, loss, *, n_outputs, regularization, linear_term, n_steps, progress,
              sample_weight=None):
    X = _as_design(X)
    n_columns = X.shape[1]
    shape = (n_columns, n_outputs)
    n_params = n_columns * n_outputs
    lam = float(regularization)
    B = np.zeros(shape) if linear_term is None else np.asarray(linear_term, dtype=float)
    multinomial = isinstance(loss, MultinomialLoss)

    weights = None if sample_weight is None else np.asarray(sample_weight, dtype=float)

    def gradient(W, Z):
        D = loss.derivative(Z, y)
        if weights is not None:
            D = D * weights[:, None]
        return X.rmatmul(D) + lam * W + B

    def norm(G):
        value = float(np.linalg.norm(G))
        return value if math.isfinite(value) else math.inf

    def direction(Z, grad, forcing):
        if multinomial:
            P = softmax(Z, axis=1)
        else:
            curvature = _curvature(loss, Z, y)
            if weights is not None:
                curvature = curvature * weights
        if n_params <= DENSE_HESSIAN_MAX_PARAMS:
            H = (
                _multinomial_hessian(X, P, sample_weight=weights) if multinomial
                else X.gram(curvature)
            )
            H.flat[:: n_params + 1] += lam
            return -_solve_dense(H, grad.ravel(), lam).reshape(shape)

        def hessian_vector(v):
            V = v.reshape(shape)
            ZV = X.matmul(V)
            if multinomial:
                SZ = P * ZV - P * np.sum(P * ZV, axis=1, keepdims=True)
                if weights is not None:
                    SZ *= weights[:, None]
            else:
                SZ = curvature[:, None] * ZV
            return (X.rmatmul(SZ) + lam * V).ravel()

        operator = LinearOperator((n_params, n_params), matvec=hessian_vector, dtype=float)
        step, _ = cg(operator, grad.ravel(), atol=0.0, maxiter=CG_ITERATIONS,
                     **{_CG_RTOL: forcing})
        return -step.reshape(shape)

    directional = _DirectionalDerivatives(loss, y, n_outputs, LINE_SEARCH_WIDTH, weights)
    W = np.zeros(shape)
    Z = np.zeros((X.shape[0], n_outputs))
    grad = gradient(W, Z)
    grad_norm = norm(grad)
    best, best_norm = W, grad_norm
    initial_norm = grad_norm if 0 < grad_norm < math.inf else 1.0
    for step in range(1, n_steps + 1):
        if math.isfinite(grad_norm):
            # Inexact Newton forcing term (CG path only): superlinear convergence.
            forcing = max(min(0.1, math.sqrt(grad_norm / initial_norm)), 1e-12)
            d = direction(Z, grad, forcing)
            if not np.all(np.isfinite(d)):
                d = -grad / lam  # a fixed fallback: the scaled gradient
            slope = float(np.sum(grad * d))
        else:  # pragma: no cover - the start and every accepted point are finite
            d, slope = np.zeros(shape), 0.0
        if slope < 0 and math.isfinite(slope):
            Delta = X.matmul(d)
            wd, dd, bd = float(np.sum(W * d)), float(np.sum(d * d)), float(np.sum(B * d))

            def dphi(ts, Z=Z, Delta=Delta, wd=wd, dd=dd, bd=bd):
                return directional(Z, Delta, ts) + lam * (wd + ts * dd) + bd

            t = _line_search(dphi, slope)
            W_new = W + t * d
            Z_new = X.matmul(W_new)
            grad_new = gradient(W_new, Z_new)
            norm_new = norm(grad_new)
            # A step to a non-finite point is not taken (a fixed rule).
            if np.all(np.isfinite(W_new)) and math.isfinite(norm_new):
                W, Z, grad, grad_norm = W_new, Z_new, grad_new, norm_new
                if grad_norm < best_norm:
                    best, best_norm = W, grad_norm
        if progress is not None:
            progress(step)
    # The certificate of the returned point, recomputed from scratch.
    final = norm(gradient(best, X.matmul(best)))
    return InnerSolve(coef=np.array(best, dtype=float), gradient_norm=final)
