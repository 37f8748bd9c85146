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

import contextlib
import functools
import inspect
import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg.lapack import dpotrf as _potrf
from scipy.linalg.lapack import dpotrs as _potrs
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import softmax

from .._design import as_design
from .._memo import memoize
from .._public_errors import public_error

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
    """The result of the inner solve (:func:`certified_minimize`).

    Attributes
    ----------
    coef : ndarray of shape (n_columns, n_outputs)
        The iterate with the smallest gradient norm (finite).
    gradient_norm : float
        ``||grad F(coef)||_F``: the certificate ``||coef - W*|| <=
        gradient_norm / Lambda``.  Computed from the private data without
        noise: for tests and direct callers only, never printed or returned
        by the solvers.
    stage : {"newton", "newton-extended", "accelerated"}
        Which stage of :func:`certified_minimize` returned ``coef`` (its
        fixed-budget Newton solve is ``"newton"``).  Private, like ``gradient_norm``: for tests only.
    extra_steps : int
        Steps run after the public Newton budget (extension and accelerated
        stages); private, for tests only.
    """

    coef: np.ndarray
    gradient_norm: float
    stage: str = "newton"
    extra_steps: int = 0


def _silenced(function):
    """``function`` run with numpy's floating-point errors and every warning ignored.

    A solve on private data warns nothing (scipy's LinAlgWarning prints the
    private Hessian's condition number): silenced here, at the source.
    """

    @functools.wraps(function)
    def silenced(*args, **kwargs):
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return function(*args, **kwargs)

    return silenced


def _linear_term(linear_term, shape):
    """The linear term ``B`` of ``F`` as an array (zero when None)."""
    return np.zeros(shape) if linear_term is None else np.asarray(linear_term, dtype=float)


def _gradient(X, y, loss, W, lam, B, Z=None):
    """``grad F(W)``, from the scores ``Z = X W`` when the caller has them."""
    Z = X.matmul(W) if Z is None else Z
    return X.rmatmul(loss.derivative(Z, y)) + lam * W + B


def _norm(G):
    """``||G||_F``, ``inf`` if not finite."""
    value = float(np.linalg.norm(G))
    return value if math.isfinite(value) else math.inf


def _multinomial_hessian(design, P, chunk=2048):
    """``sum_i (diag(p_i) - p_i p_i^T) (x) x_i x_i^T`` as a dense (pK, pK) array.

    Index ``j * K + k`` (coefficient j, class k), matching ``W.ravel()``.  The
    rank-one part is ``M^T M`` with ``M[i, j*K + k] = x_ij p_ik``, built by row
    chunks so memory stays ``O(chunk * p * K)``.
    """
    n_samples, n_columns = design.shape
    n_outputs = P.shape[1]
    H = np.zeros((n_columns, n_outputs, n_columns, n_outputs))
    for k in range(n_outputs):
        H[:, k, :, k] = design.gram(P[:, k])
    H = H.reshape(n_columns * n_outputs, n_columns * n_outputs)
    for start in range(0, n_samples, chunk):
        stop = min(start + chunk, n_samples)
        Xc = design.rows(np.arange(start, stop)).toarray()
        M = (Xc[:, :, None] * P[start:stop, None, :]).reshape(Xc.shape[0], -1)
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
    with contextlib.suppress(np.linalg.LinAlgError, ValueError):  # (eigh fails on non-finite H)
        values, vectors = np.linalg.eigh(H)
        step = vectors @ ((vectors.T @ rhs) / np.maximum(values, lam))
        if np.all(np.isfinite(step)):
            return step
    return rhs / lam  # pragma: no cover


def _line_search(dphi, slope0, n_rounds=LINE_SEARCH_ROUNDS, width=LINE_SEARCH_WIDTH):
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
            ts = np.append(points, secant)
        slopes = list(zip(ts.tolist(), dphi(ts).tolist()))
        # A slope that is not finite counts as an overshoot (a fixed rule).
        for t, f in slopes:
            if not f < 0 and lo < t < hi:
                hi, f_hi = t, (f if math.isfinite(f) else math.inf)
        for t, f in slopes:
            if f < 0 and lo < t < hi:
                lo, f_lo = t, f
    return lo


@memoize(maxsize=8)
def _grids(width):
    """The line search's fixed grids for ``width`` points per round."""
    exponents = np.arange(width, dtype=float)
    first = 4.0 ** (exponents - width // 2)
    up = 4.0 ** (exponents + 1.0)
    interior = np.arange(1, width, dtype=float)
    return first, up, 4.0 ** (-interior), interior / width


def _directional_derivatives(loss, y, n_outputs, width):
    """``sum_i <dl/dz(z_i + t delta_i, y_i), delta_i>`` for every ``t`` of a batch: a function.

    The function, called as ``f(Z, Delta, ts)``, evaluates the loss's
    derivative at all the points of a round at once, by chunks of rows so
    memory stays bounded (single-output losses: an ``n x width`` array;
    multinomial: ``width`` stacked copies of the rows).
    """
    n_samples = len(y)
    chunk = max(1, _LINE_SEARCH_CHUNK // max(1, width * n_outputs))
    column = np.asarray(y, dtype=float)[:, None]

    def single(Z, Delta, ts):
        total = np.zeros(len(ts))
        for start in range(0, n_samples, chunk):
            rows = slice(start, start + chunk)
            delta = Delta[rows, 0]
            U = Z[rows, 0:1] + delta[:, None] * ts
            total += delta @ loss.scalar_derivative(U, column[rows])
        return total

    def joint(Z, Delta, ts):
        total = np.zeros(len(ts))
        for start in range(0, n_samples, chunk):
            stop = min(start + chunk, n_samples)
            Zc, Dc = Z[start:stop], Delta[start:stop]
            stacked = Zc[None, :, :] + ts[:, None, None] * Dc[None, :, :]
            labels = np.tile(y[start:stop], len(ts))
            derivative = loss.derivative(stacked.reshape(-1, n_outputs), labels)
            total += (derivative.reshape(stacked.shape) * Dc).sum(axis=(1, 2))
        return total

    return single if n_outputs == 1 and not loss.multi_output else joint


def _minimize(X, y, loss, *, lam, B, n_steps, progress=None, start=None, stop_below=None):
    """The Newton iteration; ``start`` and ``stop_below`` serve the certified solve only.

    Minimises ``F`` with ``Lambda = lam`` and the linear term ``B``, an
    array of the coefficients' shape ``(n_columns, n_outputs)`` (zeros for
    none).  ``start`` is the first iterate (default ``0``); with ``stop_below`` the
    iteration ends as soon as an iterate's gradient norm is at most that value
    (an internal decision of the certified solve's extension phase, whose only
    observable effect is run time; the public phase never passes it).
    """
    X = as_design(X)
    shape, n_params, n_outputs = B.shape, B.size, B.shape[1]
    multinomial = loss.multi_output

    def direction(Z, grad, forcing):
        P = softmax(Z, axis=1) if multinomial else None
        curvature = None if multinomial else loss.curvature(Z, y)
        if n_params <= DENSE_HESSIAN_MAX_PARAMS:
            H = _multinomial_hessian(X, P) if multinomial else X.gram(curvature)
            H.flat[:: n_params + 1] += lam
            return -_solve_dense(H, grad.ravel(), lam).reshape(shape)

        def hessian_vector(v):
            V = v.reshape(shape)
            ZV = X.matmul(V)
            if multinomial:
                SZ = P * ZV - P * np.sum(P * ZV, axis=1, keepdims=True)
            else:
                SZ = curvature[:, None] * ZV
            return (X.rmatmul(SZ) + lam * V).ravel()

        operator = LinearOperator((n_params, n_params), matvec=hessian_vector, dtype=float)
        step, _ = cg(operator, grad.ravel(), atol=0.0, maxiter=CG_ITERATIONS, **{_CG_RTOL: forcing})
        return -step.reshape(shape)

    directional = _directional_derivatives(loss, y, n_outputs, LINE_SEARCH_WIDTH)
    if start is None:
        W = np.zeros(shape)
        Z = np.zeros((X.shape[0], n_outputs))
    else:
        W = np.array(start, dtype=float).reshape(shape)
        Z = X.matmul(W)
    grad = _gradient(X, y, loss, W, lam, B, Z)
    grad_norm = _norm(grad)
    best, best_norm = W, grad_norm
    initial_norm = grad_norm if 0 < grad_norm < math.inf else 1.0
    for step in range(1, n_steps + 1):
        if stop_below is not None and best_norm <= stop_below:
            break
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
            grad_new = _gradient(X, y, loss, W_new, lam, B, Z_new)
            norm_new = _norm(grad_new)
            # A step to a non-finite point is not taken (a fixed rule).
            if np.all(np.isfinite(W_new)) and math.isfinite(norm_new):
                W, Z, grad, grad_norm = W_new, Z_new, grad_new, norm_new
                if grad_norm < best_norm:
                    best, best_norm = W, grad_norm
        if progress is not None:
            progress(step)
    # The certificate of the returned point, recomputed from scratch.
    final = _norm(_gradient(X, y, loss, best, lam, B))
    return InnerSolve(coef=np.array(best, dtype=float), gradient_norm=final)


# --------------------------------------------------------------------------
# The certified solve
# --------------------------------------------------------------------------

#: The certified solve aims at this fraction of the caller's tolerance; the
#: other half absorbs the rounding of the gradient evaluation that verifies a
#: point (and of the accelerated iteration), which the perturbation solvers'
#: public check keeps far smaller.
CERTIFICATE_MARGIN = 0.5
#: Newton steps of the extension stage (run only when the public budget did
#: not verify; it stops as soon as a point verifies).
EXTENSION_NEWTON_STEPS = 100
#: Relative slack on the computed largest eigenvalue of ``X^T X`` (its rounding
#: error is of the order of ``n u trace``, far below this for any n < 1e9).
_EIGENVALUE_SLACK = 1e-6


def smoothness_bound(X, curvature, regularization):
    """An upper bound ``L`` on the smoothness of ``F``: ``Lambda + curvature * lambda_max(X^T X)``.

    ``curvature`` bounds the per-row loss Hessian in the scores (``l'' <=
    1/4`` logistic, ``1`` Huber's generalised Hessian, ``1/2`` softmax:
    ``diag(p) - p p^T <= I / 2``, Boehning 1992), so the loss sum's Hessian
    (or, for Huber, the Lipschitz constant of its gradient) is at most
    ``curvature * lambda_max(X^T X)`` and ``grad F`` is ``L``-Lipschitz.
    ``lambda_max`` is the top eigenvalue of the Gram matrix plus a relative
    slack of 1e-6 of its trace (up to ``DENSE_HESSIAN_MAX_PARAMS`` columns),
    else the trace itself (``sum_i ||x_i||^2 >= lambda_max``).  Never below
    ``Lambda``.  Computed from the private data: for the certified solve's
    internal step count only.
    """
    X = as_design(X)
    sigma = math.inf
    if X.shape[1] <= DENSE_HESSIAN_MAX_PARAMS:
        gram = X.gram()
        trace = float(np.trace(gram))
        sigma = trace * (1.0 + _EIGENVALUE_SLACK)
        if np.all(np.isfinite(gram)):
            # (eigvalsh does not fail on a finite symmetric matrix; a fixed rule if it does.)
            with contextlib.suppress(np.linalg.LinAlgError):
                top = float(np.linalg.eigvalsh(gram)[-1])
                sigma = min(sigma, top + _EIGENVALUE_SLACK * trace)
    if not math.isfinite(sigma):
        sigma = float(np.sum(np.square(X.row_norms()))) * (1.0 + _EIGENVALUE_SLACK)
    return float(regularization) + float(curvature) * max(sigma, 0.0)


def accelerated_steps(initial_gradient_norm, target, smoothness, regularization):
    r"""Steps of :func:`accelerated_descent` that provably reach ``||W - W*|| <= target / Lambda``.

    For ``F`` ``Lambda``-strongly convex with ``L``-Lipschitz gradient, ``kappa
    = L / Lambda`` and ``q = 1 - 1/sqrt(kappa)``, Nesterov's constant-momentum
    method from ``x_0`` satisfies (Nesterov 2004, *Introductory Lectures on
    Convex Optimization*, Theorem 2.2.3 with ``gamma_0 = mu``, i.e. constant
    step scheme III (2.2.22))

        F(x_T) - F* <= q^T (F(x_0) - F* + (Lambda/2) ||x_0 - W*||^2) <= 2 q^T (F(x_0) - F*),

    and strong convexity gives ``F(x_0) - F* <= ||grad F(x_0)||^2 / (2 Lambda)``
    and ``||x_T - W*||^2 <= 2 (F(x_T) - F*) / Lambda``, so

        ||x_T - W*||^2 <= 2 q^T ||grad F(x_0)||^2 / Lambda^2,

    at most ``(target / Lambda)^2`` once ``q^T <= target^2 / (2 r_0^2)``: the
    returned ``T = ceil(log(2 r_0^2 / target^2) / -log q)`` (at least 1 when
    ``r_0 > target``; 0 when ``r_0 <= target``, where Lemma 2 already gives
    the bound at ``x_0``).
    """
    r0, target = float(initial_gradient_norm), float(target)
    if r0 <= target:
        return 0
    kappa = float(smoothness) / float(regularization)
    if kappa <= 1.0:
        # L = Lambda: F is a quadratic with Hessian Lambda I, one step of size 1/L is exact.
        return 1
    rate = -math.log1p(-1.0 / math.sqrt(kappa))
    return max(1, int(math.ceil(math.log(2.0 * (r0 / target) ** 2) / rate)))


def accelerated_descent(
    X, y, loss, *, n_outputs, regularization, linear_term, start, smoothness, n_steps
):
    """``n_steps`` of Nesterov's constant-momentum method from ``start`` (no stop, no test).

    ``y_k = x_k + m (x_k - x_{k-1})`` with ``m = (sqrt(L) - sqrt(Lambda)) /
    (sqrt(L) + sqrt(Lambda))``, ``x_{k+1} = y_k - grad F(y_k) / L``,
    ``x_{-1} = x_0 = start``: two products with the design per step.  Returns
    ``x_T``.  A step to a non-finite point (which bounded inputs and a valid
    ``L`` do not produce) is not taken and ends the iteration, by a fixed rule.
    """
    X = as_design(X)
    shape = (X.shape[1], n_outputs)
    lam, L = float(regularization), float(smoothness)
    B = _linear_term(linear_term, shape)
    momentum = (math.sqrt(L) - math.sqrt(lam)) / (math.sqrt(L) + math.sqrt(lam))
    x = x_previous = np.array(start, dtype=float).reshape(shape)
    for _ in range(int(n_steps)):
        point = x + momentum * (x - x_previous)
        x_next = point - _gradient(X, y, loss, point, lam, B) / L
        if not np.all(np.isfinite(x_next)):  # pragma: no cover - a fixed rule
            break
        x_previous, x = x, x_next
    return x


def gradient_norm(X, y, loss, W, *, regularization, linear_term=None):
    """``||grad F(W)||_F`` (``inf`` if not finite): the certificate of ``W``."""
    W = np.asarray(W, dtype=float)
    B = _linear_term(linear_term, W.shape)
    return _norm(_gradient(as_design(X), y, loss, W, float(regularization), B))


@_silenced
def certified_minimize(
    X,
    y,
    loss,
    *,
    n_outputs,
    regularization,
    tol,
    linear_term=None,
    n_steps=DEFAULT_NEWTON_STEPS,
    progress=None,
    accelerate=True,
    public_smoothness=None,
    public_gradient_bound=None,
):
    r"""A point ``W`` with ``||W - W*|| <= tol / Lambda``, whatever the data: a certified solve.

    ``F(W) = sum_i l(x_i W, y_i) + (Lambda / 2) ||W||^2 + <B, W>`` is
    ``Lambda``-strongly convex with an ``L``-Lipschitz gradient
    (:func:`smoothness_bound`).  Three stages, with ``target =
    CERTIFICATE_MARGIN * tol``:

    1. the public phase: exactly ``n_steps`` safeguarded Newton steps
       (``progress`` is called after each); if the best iterate's gradient norm is at most ``target``, it
       is returned (Lemma 2: ``||W - W*|| <= ||grad F(W)|| / Lambda``);
    2. otherwise up to ``EXTENSION_NEWTON_STEPS`` more Newton steps from it,
       stopping as soon as an iterate's gradient norm is at most ``target``
       (returned then);
    3. otherwise Nesterov's accelerated method (:func:`accelerated_descent`)
       from whichever of ``0`` and the best Newton point has the smaller
       gradient norm ``r_0``, with step ``1 / L`` (``L`` from
       :func:`smoothness_bound`, a valid bound on the data's smoothness), for
       ``T`` steps, ``x_T`` returned.  ``T`` is the count
       :func:`accelerated_steps` proves sufficient from the PUBLIC constants
       when the caller gives them, ``T_pub = ceil(log(2 r_pub^2 / target^2) /
       -log(1 - sqrt(Lambda / L_pub)))`` with ``L_pub = public_smoothness``
       (the perturbation solvers: ``Lambda + c R^2 n_public``) and ``r_pub =
       public_gradient_bound`` (``n_public G + ||b||``), and never less than
       the count proven from the actual ``r_0`` and ``L``: whenever the public
       constants bound the actual ones (``L <= L_pub``, ``r_0 <= r_pub``; always
       for a direct call, whose ``n_public`` is the row count) the latter is
       at most ``T_pub``, so the number of steps is the public ``T_pub``; when
       they do not (a DP row count below the true one), the proof still
       holds with the larger private count, whose only effect is run time.

    In exact arithmetic the returned point is therefore always within
    ``target / Lambda = tol / (2 Lambda)`` of the minimiser: by a verified
    certificate (stages 1 and 2) or by the convergence theorem (stage 3).
    The other half of ``tol`` absorbs floating-point rounding (see the
    perturbation solvers' public check of the tolerance).  No convergence
    assumption is left.

    Stages 2 and 3 are internal decisions on private values whose only
    observable effect is run time: they call no ``progress``, print, warn
    and raise nothing, and the result is the same kind of object; the public
    phase is the same whatever happens.  Stage 3's length grows like
    ``sqrt(L / Lambda)`` times a logarithm; the solvers refuse, from public
    values, configurations whose condition number makes it impractical.

    ``accelerate=False`` skips stage 3 (non-private fits, ``epsilon=inf``, which
    need no certificate and no public check of the condition number) and
    returns the best Newton point.

    Parameters
    ----------
    public_smoothness, public_gradient_bound : float, optional
        Public bounds on ``L`` and on ``||grad F(0)||`` that fix the length of
        stage 3 (see above); without them the count is the one proven from
        the actual ``r_0`` and ``L``.

    Returns
    -------
    InnerSolve
        With ``stage`` and ``extra_steps`` telling which stage returned the
        point (private: for tests).
    """
    X = as_design(X)
    lam = float(regularization)
    target = CERTIFICATE_MARGIN * float(tol)
    kwargs = dict(n_outputs=n_outputs, regularization=lam, linear_term=linear_term)
    B = _linear_term(linear_term, (X.shape[1], n_outputs))
    newton = functools.partial(_minimize, X, y, loss, lam=lam, B=B)
    first = newton(n_steps=int(n_steps), progress=progress)
    if first.gradient_norm <= target:
        return first
    second = newton(n_steps=EXTENSION_NEWTON_STEPS, start=first.coef, stop_below=target)
    # (A second point that verifies is better than the first, which did not.)
    best = second if second.gradient_norm < first.gradient_norm else first
    if second.gradient_norm <= target or not accelerate:
        return replace(best, stage="newton-extended", extra_steps=EXTENSION_NEWTON_STEPS)

    zero_norm = _norm(_gradient(X, y, loss, np.zeros_like(B), lam, B))  # the certificate of 0
    start, r0 = best.coef, best.gradient_norm
    if r0 > zero_norm:  # the accelerated stage starts at the better of the two
        start, r0 = np.zeros_like(B), zero_norm
    smoothness = smoothness_bound(X, loss.smoothness, lam)
    n_accelerated = accelerated_steps(r0, target, smoothness, lam)
    if public_smoothness is not None and public_gradient_bound is not None:
        # The public count; the proven private one only when the public
        # constants fail to bound the actual ones (then it is larger).
        public_steps = accelerated_steps(public_gradient_bound, target, public_smoothness, lam)
        n_accelerated = max(n_accelerated, public_steps)
    coef = accelerated_descent(
        X, y, loss, start=start, smoothness=smoothness, n_steps=n_accelerated, **kwargs
    )
    return InnerSolve(
        coef=np.array(coef, dtype=float),
        gradient_norm=_norm(_gradient(X, y, loss, coef, lam, B)),
        stage="accelerated",
        extra_steps=EXTENSION_NEWTON_STEPS + n_accelerated,
    )


# --------------------------------------------------------------------------
# Public conditions of the certified solve (objective / output perturbation)
# --------------------------------------------------------------------------

#: Public tolerance of the inner solve's certificate, relative to the per-row gradient bound G.
DEFAULT_GRADIENT_TOL = 1e-6
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
    :func:`accelerated_steps` proves sufficient
    from the worst start ``||grad F(0)|| <= n_public G + ||b||``; ``smoothness``
    (``L``, with the relative slack of
    :func:`smoothness_bound`, so that it is at
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

    Returns
    -------
    CertificationBounds
        The bounds of the configuration, which the certified solve runs with.
    """
    gradient_tol = DEFAULT_GRADIENT_TOL if gradient_tol is None else gradient_tol
    G, R = glm.gradient_bound, glm.row_norm_bound
    lam = float(regularization)
    n_rows = max(float(n_public), 1.0)
    smoothness = lam + float(glm.loss.smoothness) * R**2 * n_rows * (1.0 + _EIGENVALUE_SLACK)
    kappa = smoothness / lam
    target = CERTIFICATE_MARGIN * float(gradient_tol) * G
    initial = n_rows * G + float(noise_norm)
    bounds = CertificationBounds(
        condition_number=kappa,
        rounding_scale=UNIT_ROUNDOFF * (kappa + n_rows) * (G + noise_norm),
        target=target,
        accelerated_steps=accelerated_steps(initial, target, smoothness, lam),
        smoothness=smoothness,
        initial_gradient_bound=initial,
    )
    penalty = "Use a stronger L2 penalty (a larger alpha, a smaller C)"
    other = "solver='dp_gd' (delta > 0)"
    setting = (
        f"With L2 strength Lambda={regularization:.3g} for {n_public:.6g} (public) rows of norm "
        f"at most {R:.3g}, the condition number is up to "
        f"{bounds.condition_number:.3g}, and"
    )
    if bounds.rounding_scale > bounds.target:
        raise public_error(
            ValueError(
                f"{solver}: the solve cannot be certified in double precision. {setting} the "
                f"rounding of the gradient at the coefficients' public scale "
                f"({bounds.rounding_scale / G:.2g} G) exceeds half the tolerance (gradient_tol="
                f"{bounds.target / (CERTIFICATE_MARGIN * G):.3g}, in units of G). {penalty}, a "
                f"larger solver_options['gradient_tol'], or {other}."
            )
        )
    if bounds.accelerated_steps > MAX_ACCELERATED_STEPS:
        raise public_error(
            ValueError(
                f"{solver}: the solve cannot be certified in a bounded time. {setting} the proven "
                f"fallback of the certified solve could need {bounds.accelerated_steps:.3g} "
                f"accelerated gradient steps (more than {MAX_ACCELERATED_STEPS:.0e}). {penalty}, "
                f"or {other}."
            )
        )
    return bounds
