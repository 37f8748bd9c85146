"""The certified solve of the perturbation solvers: no privacy claim rests on convergence.

The privacy arguments of ``output_perturbation`` and ``objective_perturbation``
need the solve's point within ``tol / Lambda`` of the exact minimiser
(``sklearn_dp/solvers/_perturbation.py``, Lemmas 1 and 2).  Here:

* the pieces of the proof, exactly: Nesterov's bound for the accelerated
  stage at every step, the step count it implies, the smoothness bound
  against explicit Hessians;
* the certified solve is within ``target / Lambda`` of the minimiser whatever
  the Newton phase did: 0 or 1 step, no extension, or a garbage point;
* add/remove one hostile row: the released value of output perturbation
  moves by at most its declared sensitivity, and objective perturbation's
  residual release by at most ``2 tol / Lambda`` for the same exact
  minimiser, including runs where the public Newton budget did not converge;
* the hard problems found by search (weak penalties, large row norms, the
  objective's noise) are certified, or refused by the public check;
* the public conditions: refusals before the reservation when the public
  inputs decide them, after the row count otherwise, never a data-dependent
  one; a fit whose Newton phase fails on one neighbour only shows nothing.
"""

import math

import numpy as np
import pytest
from _helpers import minimize_strongly_convex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sklearn_dp.solvers._perturbation as perturbation
from sklearn_dp._data import bound_data
from sklearn_dp._losses import BinaryLogisticLoss, HuberLoss, MultinomialLoss
from sklearn_dp.solvers import _newton, output_perturbation
from sklearn_dp.testing import trace_releases

LOSSES = {
    "logistic": (BinaryLogisticLoss(), 1),
    "huber": (HuberLoss(0.7), 1),
    "multinomial": (MultinomialLoss(), 3),
}


def _linear_term(rng, shape, scale):
    """A data-independent linear term of the law objective perturbation draws (pure DP).

    Density proportional to ``exp(-||b|| / scale)``: a Gamma(m, scale) norm
    times a uniform direction, from numpy's float samplers.  The solver
    draws the same law exactly, through the noise gateway; these tests need
    only a realistic term, and this one keeps the seeded problems below (and
    the seed they pin) as they were.
    """
    size = int(np.prod(shape))
    direction = rng.standard_normal(size)
    radius = rng.gamma(size, scale)
    return (radius * direction / np.linalg.norm(direction)).reshape(shape)


def _labels(kind, rng, n):
    if kind == "logistic":
        return rng.choice([-1.0, 1.0], size=n)
    if kind == "multinomial":
        return rng.integers(0, 3, size=n)
    return rng.normal(size=n) * 3.0


def _problem(kind, seed, n=30, d=3, scale=1.0, fit_intercept=True, data_norm=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * scale
    data = bound_data(X, _labels(kind, rng, n), fit_intercept=fit_intercept, data_norm=data_norm)
    return data, rng


def _objective(data, loss, W, lam, B):
    Z = data.X @ W
    return float(np.sum(loss.value(Z, data.y)) + 0.5 * lam * np.sum(W * W) + np.sum(B * W))


def _gradient(data, loss, W, lam, B):
    return data.X.T @ loss.derivative(data.X @ W, data.y) + lam * W + B


#: The unpatched Newton iteration: the reference never goes through a test's monkeypatch.
_ORIGINAL_MINIMIZE = _newton._minimize


def _reference(data, loss, K, lam, B):
    """A minimiser to near machine precision: Newton with a generous budget, checked.

    Always the unpatched iteration (a hypothesis example must not see the
    simulated failure of an earlier one), and its residual is recomputed here
    from the test's own gradient, not taken from the code under test.
    """
    solve = _ORIGINAL_MINIMIZE(
        data.X,
        data.y,
        loss,
        lam=float(lam),
        B=_newton._linear_term(None if np.isscalar(B) else B, (data.X.shape[1], K)),
        n_steps=200,
        progress=None,
    )
    residual = float(np.linalg.norm(_gradient(data, loss, solve.coef, lam, B)))
    return solve.coef, residual


def _hessian(data, loss, W):
    X = data.X
    Z = X @ W
    if isinstance(loss, MultinomialLoss):
        from scipy.special import softmax

        P = softmax(Z, axis=1)
        return sum(np.kron(np.outer(x, x), np.diag(p) - np.outer(p, p)) for x, p in zip(X, P))
    if isinstance(loss, BinaryLogisticLoss):
        s = 1.0 / (1.0 + np.exp(-Z[:, 0]))
        return (X.T * (s * (1 - s))) @ X
    return (X.T * (np.abs(Z[:, 0] - data.y) <= loss.epsilon_huber)) @ X


# --------------------------------------------------------------------------
# The pieces of the proof
# --------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(sorted(LOSSES)),
    seed=st.integers(0, 2**31 - 1),
    lam=st.sampled_from([1e-3, 0.1, 3.0]),
    noisy=st.booleans(),
    scale=st.sampled_from([0.3, 3.0]),
)
def test_accelerated_stage_meets_nesterovs_bound_at_every_step(kind, seed, lam, noisy, scale):
    # F(x_k) - F* <= (1 - 1/sqrt(kappa))^k (F(x_0) - F* + Lambda/2 ||x_0 - W*||^2) for
    # the constant-momentum method with L = smoothness_bound (Nesterov 2004, Thm 2.2.3).
    loss, K = LOSSES[kind]
    data, rng = _problem(kind, seed, scale=scale)
    shape = (data.n_columns, K)
    B = rng.normal(size=shape) * 5.0 if noisy else np.zeros(shape)
    W_star, r_star = _reference(data, loss, K, lam, B)
    assert r_star <= 1e-9 * (1 + np.linalg.norm(B))
    F_star = _objective(data, loss, W_star, lam, B)
    L = _newton.smoothness_bound(data.X, loss.smoothness, lam)
    q = 1 - math.sqrt(lam / L)
    x0 = rng.normal(size=shape) * 3.0
    initial = _objective(data, loss, x0, lam, B) - F_star + 0.5 * lam * np.sum((x0 - W_star) ** 2)
    for k in (1, 2, 3, 5, 10, 30, 100):
        x = _newton.accelerated_descent(
            data.X,
            data.y,
            loss,
            n_outputs=K,
            regularization=lam,
            linear_term=B,
            start=x0,
            smoothness=L,
            n_steps=k,
        )
        gap = _objective(data, loss, x, lam, B) - F_star
        assert gap <= q**k * initial + 1e-9 * (1 + abs(F_star))


@pytest.mark.parametrize("kind", sorted(LOSSES))
@pytest.mark.parametrize("seed", range(4))
def test_smoothness_bound_dominates_every_hessian(kind, seed):
    loss, K = LOSSES[kind]
    data, rng = _problem(kind, seed, n=12, d=2, scale=2.0)
    lam = 0.05
    L = _newton.smoothness_bound(data.X, loss.smoothness, lam)
    trace = float(np.sum(data.X**2))
    assert L <= lam + loss.smoothness * trace * (1 + 1e-6)
    worst = 0.0
    for spread in (0.01, 0.3, 3.0, 30.0):
        for _ in range(25):
            W = rng.normal(size=(data.n_columns, K)) * spread
            top = np.linalg.eigvalsh(_hessian(data, loss, W))[-1] + lam
            worst = max(worst, top)
    assert worst <= L
    # The bound is c lambda_max(X^T X) + Lambda up to its relative slack of 1e-6 of the
    # trace: attained by the logistic loss at 0 and Huber inside its band.
    top = loss.smoothness * np.linalg.eigvalsh(data.X.T @ data.X)[-1] + lam
    assert top <= L <= top + 2e-6 * loss.smoothness * trace


def test_accelerated_step_count_is_the_smallest_the_bound_allows():
    assert _newton.accelerated_steps(1.0, 1.0, 10.0, 1.0) == 0
    assert _newton.accelerated_steps(2.0, 1.0, 1.0, 1.0) == 1  # L = Lambda: one exact step
    for r0, target, L, lam in [
        (1e3, 1e-6, 1e4, 1.0),
        (5.0, 1e-3, 2.0, 1.0),
        (1e9, 1e-7, 1e12, 3.0),
    ]:
        T = _newton.accelerated_steps(r0, target, L, lam)
        q = 1 - math.sqrt(lam / L)
        assert 2 * q**T * r0**2 <= target**2 * (1 + 1e-9)
        assert 2 * q ** (T - 1) * r0**2 > target**2


# --------------------------------------------------------------------------
# The certified solve, whatever the Newton phase does
# --------------------------------------------------------------------------


def _garbage_first_phase(monkeypatch, rng, spread):
    """The public Newton phase returns a far, random point (a simulated failure)."""
    original = _newton._minimize

    def broken(X, y, loss, **kwargs):
        result = original(X, y, loss, **kwargs)
        if kwargs.get("start") is None:  # the public phase
            far = result.coef + rng.normal(size=result.coef.shape) * spread
            lam = kwargs["lam"]
            B = kwargs["B"]
            return _newton.InnerSolve(
                coef=far,
                gradient_norm=_newton.gradient_norm(
                    X, y, loss, far, regularization=lam, linear_term=B
                ),
            )
        return result

    monkeypatch.setattr(_newton, "_minimize", broken)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    kind=st.sampled_from(sorted(LOSSES)),
    seed=st.integers(0, 2**31 - 1),
    lam=st.sampled_from([1e-2, 0.3, 10.0]),
    noisy=st.booleans(),
    failure=st.sampled_from(["no-steps", "one-step", "garbage"]),
    extension=st.sampled_from([0, 3]),
)
def test_certified_solve_is_within_target_whatever_the_newton_phase(
    monkeypatch, kind, seed, lam, noisy, failure, extension
):
    loss, K = LOSSES[kind]
    data, rng = _problem(kind, seed)
    shape = (data.n_columns, K)
    B = rng.normal(size=shape) * 5.0 if noisy else None
    W_star, r_star = _reference(data, loss, K, lam, 0.0 if B is None else B)
    tol = 1e-6 * loss.derivative_bound * data.row_norm_bound
    target = _newton.CERTIFICATE_MARGIN * tol
    n_steps = {"no-steps": 0, "one-step": 1, "garbage": 50}[failure]
    # One patch scope per hypothesis example: the fixture is shared by all of
    # them, and a simulated failure must not leak into the next example.
    with monkeypatch.context() as patch:
        patch.setattr(_newton, "EXTENSION_NEWTON_STEPS", extension)
        if failure == "garbage":
            _garbage_first_phase(patch, rng, spread=100.0)
        solve = _newton.certified_minimize(
            data.X,
            data.y,
            loss,
            n_outputs=K,
            regularization=lam,
            tol=tol,
            linear_term=B,
            n_steps=n_steps,
        )
    distance = np.linalg.norm(solve.coef - W_star)
    # ||W_hat - W*|| <= ||W_hat - W_ref|| + ||W_ref - W*||, the latter <= r_ref / Lambda.
    assert distance + r_star / lam <= (target / lam) * (1 + 1e-6) + 1e-12
    if solve.stage != "accelerated":  # a verified certificate
        assert solve.gradient_norm <= target
    if failure == "garbage" and extension == 0:
        assert solve.stage == "accelerated"


def test_certified_solve_verifies_before_it_falls_back(monkeypatch):
    data, _ = _problem("logistic", 0)
    loss, K = LOSSES["logistic"]
    tol = 1e-6 * data.row_norm_bound
    calls = []
    solve = _newton.certified_minimize(
        data.X, data.y, loss, n_outputs=K, regularization=0.1, tol=tol, progress=calls.append
    )
    assert solve.stage == "newton" and solve.extra_steps == 0
    assert calls == list(range(1, _newton.DEFAULT_NEWTON_STEPS + 1))
    # A garbage public phase: repaired by the extension stage, which prints nothing.
    rng = np.random.default_rng(0)
    _garbage_first_phase(monkeypatch, rng, spread=10.0)
    calls.clear()
    solve = _newton.certified_minimize(
        data.X, data.y, loss, n_outputs=K, regularization=0.1, tol=tol, progress=calls.append
    )
    assert solve.stage == "newton-extended"
    assert calls == list(range(1, _newton.DEFAULT_NEWTON_STEPS + 1))
    assert solve.gradient_norm <= _newton.CERTIFICATE_MARGIN * tol
    # Without the accelerated stage (epsilon=inf fits) the best Newton point is kept.
    monkeypatch.setattr(_newton, "EXTENSION_NEWTON_STEPS", 0)
    solve = _newton.certified_minimize(
        data.X, data.y, loss, n_outputs=K, regularization=0.1, tol=tol, accelerate=False
    )
    assert solve.stage == "newton-extended" and solve.gradient_norm > tol


@pytest.mark.parametrize("kind", sorted(LOSSES))
def test_accelerated_step_count_is_public(monkeypatch, kind):
    # Newton phase and extension disabled, so every solve falls back: with the
    # public constants (L_pub = Lambda + c R^2 n_public, r_pub = n_public G + ||b||)
    # the number of accelerated steps is the public count, the same for two
    # neighbours and for a hostile row, and the point is still certified.
    loss, K = LOSSES[kind]
    monkeypatch.setattr(_newton, "EXTENSION_NEWTON_STEPS", 0)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20, 3))
    y = _labels(kind, rng, 21)
    n_public = 21.0
    lam = 0.05 * n_public
    datasets = [
        bound_data(X, y[:-1], fit_intercept=True, data_norm=1.0),
        bound_data(np.vstack([X, np.full(3, 1e9)]), y, fit_intercept=True, data_norm=1.0),
    ]
    glm = perturbation._smooth_glm(loss, datasets[0].row_norm_bound, K, "test")
    tol = _newton.DEFAULT_GRADIENT_TOL * glm.gradient_bound
    b = rng.normal(size=(datasets[0].n_columns, K))
    bounds = _newton.check_certifiable(
        "test", glm, regularization=lam, n_public=n_public, noise_norm=float(np.linalg.norm(b))
    )
    expected = _newton.accelerated_steps(
        bounds.initial_gradient_bound, bounds.target, bounds.smoothness, lam
    )
    assert expected == bounds.accelerated_steps > 0
    for data in datasets:
        assert _newton.smoothness_bound(data.X, loss.smoothness, lam) <= bounds.smoothness
        solve = _newton.certified_minimize(
            data.X,
            data.y,
            loss,
            n_outputs=K,
            regularization=lam,
            tol=tol,
            linear_term=b,
            n_steps=0,
            public_smoothness=bounds.smoothness,
            public_gradient_bound=bounds.initial_gradient_bound,
        )
        assert solve.stage == "accelerated"
        assert solve.extra_steps == expected  # no extension steps: EXTENSION_NEWTON_STEPS = 0
        W_star, r_star = _reference(data, loss, K, lam, b)
        distance = np.linalg.norm(solve.coef - W_star)
        assert distance + r_star / lam <= (bounds.target / lam) * (1 + 1e-6)


# --------------------------------------------------------------------------
# Add/remove one hostile row: the releases move by at most their sensitivity
# --------------------------------------------------------------------------


@st.composite
def neighbours(draw):
    kind = draw(st.sampled_from(sorted(LOSSES)))
    seed = draw(st.integers(0, 2**31 - 1))
    n = draw(st.integers(2, 20))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    hostile = draw(st.sampled_from(["huge", "tiny", "aligned"]))
    row = {"huge": np.full(3, 1e12), "tiny": np.full(3, 1e-300), "aligned": X.sum(axis=0) + 1.0}[
        hostile
    ]
    y = _labels(kind, rng, n + 1)
    if kind == "huber":
        y[-1] = 1e300
    alpha = draw(st.sampled_from([1e-3, 0.05, 1.0]))
    fit_intercept = draw(st.booleans())
    newton_steps = draw(st.sampled_from([0, 1, 2, 50]))
    return kind, np.vstack([X, row]), y, alpha, fit_intercept, newton_steps


def _budgeted(monkeypatch, n_steps):
    """Run the solvers' certified solve with a public Newton budget of ``n_steps`` and no extension."""
    original = _newton.certified_minimize
    stages = []

    def solve(*args, **kwargs):
        kwargs["n_steps"] = n_steps
        result = original(*args, **kwargs)
        stages.append(result.stage)
        return result

    monkeypatch.setattr(_newton, "EXTENSION_NEWTON_STEPS", 0)
    monkeypatch.setattr(perturbation, "certified_minimize", solve)
    return stages


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(neighbours(), st.sampled_from([0.0, 1e-5]))
def test_output_release_moves_at_most_its_sensitivity_even_without_convergence(
    monkeypatch, problem, delta
):
    kind, X_prime, y_prime, alpha, fit_intercept, newton_steps = problem
    loss, K = LOSSES[kind]
    # The same public row count, hence the same Lambda = n_public alpha, for both neighbours.
    n = X_prime.shape[0] - 1
    small = bound_data(
        X_prime[:-1], y_prime[:-1], fit_intercept=fit_intercept, data_norm=1.0, n_public=float(n)
    )
    big = bound_data(
        X_prime, y_prime, fit_intercept=fit_intercept, data_norm=1.0, n_public=float(n)
    )
    values = []
    with monkeypatch.context() as patch:  # one patch scope per hypothesis example
        stages = _budgeted(patch, newton_steps)
        for data in (small, big):
            with trace_releases() as trace:
                output_perturbation(
                    data, loss, n_outputs=K, alpha=alpha, epsilon=1.0, delta=delta, random_state=0
                )
            (release,) = trace.releases
            values.append((release.value, release.sensitivity))
    assert values[0][1] == values[1][1]
    moved = np.linalg.norm(values[1][0] - values[0][0])
    assert moved <= values[0][1]
    if newton_steps == 0:
        assert set(stages) == {"accelerated"}


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(neighbours())
def test_objective_residual_moves_at_most_its_sensitivity_for_the_same_minimiser(
    monkeypatch, problem
):
    # The residual release covers W_hat = h(D, W*): for neighbours with the SAME
    # exact perturbed minimiser W* (b' = b - grad l_x'(W*), the change of
    # variables of the proof), the certified points are at most 2 tol / Lambda apart.
    kind, X_prime, y_prime, alpha, fit_intercept, newton_steps = problem
    loss, K = LOSSES[kind]
    monkeypatch.setattr(_newton, "EXTENSION_NEWTON_STEPS", 0)
    small = bound_data(X_prime[:-1], y_prime[:-1], fit_intercept=fit_intercept, data_norm=1.0)
    big = bound_data(X_prime, y_prime, fit_intercept=fit_intercept, data_norm=1.0)
    lam = max(small.n_samples * alpha, 0.1)
    G = loss.derivative_bound * small.row_norm_bound
    tol = _newton.DEFAULT_GRADIENT_TOL * G
    shape = (small.n_columns, K)
    b = _linear_term(np.random.default_rng(0), shape, G)
    W_star, r_star = _reference(small, loss, K, lam, b)
    added = bound_data(X_prime[-1:], y_prime[-1:], fit_intercept=fit_intercept, data_norm=1.0)
    b_prime = b - added.X.T @ loss.derivative(added.X @ W_star, added.y)
    points = [
        _newton.certified_minimize(
            data.X,
            data.y,
            loss,
            n_outputs=K,
            regularization=lam,
            tol=tol,
            linear_term=noise,
            n_steps=newton_steps,
        ).coef
        for data, noise in ((small, b), (big, b_prime))
    ]
    # W* (to r_star / Lambda) minimises both perturbed objectives.
    assert np.linalg.norm(_gradient(big, loss, W_star, lam, b_prime)) <= r_star + 1e-9 * G
    assert np.linalg.norm(points[1] - points[0]) + 2 * r_star / lam <= 2 * tol / lam


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(neighbours(), st.sampled_from([0.05, 0.3]))
def test_objective_residual_covers_the_rounding_of_the_noise(monkeypatch, problem, spacing):
    # The solver minimises with b = g (floor(N / g) + 1/2), the rounding of an exact N: for
    # neighbours with the same exact minimiser W* for N (N' = N - grad l_x'(W*)), the
    # certified points for the ROUNDED terms are at most (2 tol + sqrt(m) g) / Lambda
    # apart.  A coarse grid makes the rounding term dominate.
    kind, X_prime, y_prime, alpha, fit_intercept, newton_steps = problem
    loss, K = LOSSES[kind]
    monkeypatch.setattr(_newton, "EXTENSION_NEWTON_STEPS", 0)
    small = bound_data(X_prime[:-1], y_prime[:-1], fit_intercept=fit_intercept, data_norm=1.0)
    big = bound_data(X_prime, y_prime, fit_intercept=fit_intercept, data_norm=1.0)
    lam = max(small.n_samples * alpha, 0.1)
    G = loss.derivative_bound * small.row_norm_bound
    tol = _newton.DEFAULT_GRADIENT_TOL * G
    shape = (small.n_columns, K)
    m = small.n_columns * K
    g = spacing * G

    def rounded(noise):
        return g * (np.floor(noise / g) + 0.5)

    N = _linear_term(np.random.default_rng(1), shape, G)
    W_star, r_star = _reference(small, loss, K, lam, N)
    added = bound_data(X_prime[-1:], y_prime[-1:], fit_intercept=fit_intercept, data_norm=1.0)
    N_prime = N - added.X.T @ loss.derivative(added.X @ W_star, added.y)
    points = [
        _newton.certified_minimize(
            data.X,
            data.y,
            loss,
            n_outputs=K,
            regularization=lam,
            tol=tol,
            linear_term=rounded(noise),
            n_steps=newton_steps,
        ).coef
        for data, noise in ((small, N), (big, N_prime))
    ]
    moved = np.linalg.norm(points[1] - points[0])
    assert moved + 2 * r_star / lam <= (2 * tol + math.sqrt(m) * g) / lam


# --------------------------------------------------------------------------
# Hard problems
# --------------------------------------------------------------------------


def _hard_problem(seed):
    """Weak penalties (alpha 1e-9..1e-2), large row norms, the objective's noise.

    Of seeds 0..2499, 37 solves missed the certified solve's target after the 50
    public Newton steps (35 of them multinomial or Huber by factors up to 2e7);
    the public check refuses all of them but seed 50 (a third of the family is
    refused: its tolerance is below the rounding of the gradient).
    """
    rng = np.random.default_rng(seed)
    kind = rng.choice(["logistic", "huber", "multinomial"])
    n = int(rng.integers(5, 300))
    d = int(rng.integers(1, 8))
    X = rng.normal(size=(n, d)) * 10 ** rng.uniform(-2, 2)
    if rng.random() < 0.3:
        X[:, 0] = X[:, 1 % d] * (1 + 1e-6 * rng.normal(size=n))
    data_norm = 10 ** rng.uniform(-1, 2)
    fit_intercept = bool(rng.random() < 0.7)
    intercept_scaling = float(10 ** rng.uniform(0, 2))
    alpha = 10 ** rng.uniform(-9, -2)
    if kind == "logistic":
        y = np.where(X @ rng.normal(size=d) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
        loss, K = BinaryLogisticLoss(), 1
    elif kind == "huber":
        y = X @ rng.normal(size=d) * 10 ** rng.uniform(-1, 2) + rng.normal(size=n)
        loss, K = HuberLoss(float(10 ** rng.uniform(-3, 0.5))), 1
    else:
        K = int(rng.integers(3, 5))
        y = np.argmax(X @ rng.normal(size=(d, K)) + rng.gumbel(size=(n, K)), axis=1)
        loss = MultinomialLoss()
    data = bound_data(
        X, y, fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, data_norm=data_norm
    )
    G = loss.derivative_bound * data.row_norm_bound
    epsilon = float(10 ** rng.uniform(-1, 1))
    b = _linear_term(rng, (data.n_columns, K), G / (0.79 * epsilon))
    return data, loss, K, n * alpha, G, b


#: The seed of ``_hard_problem`` (0..2499) whose 50 public Newton steps missed the
#: target (gradient norm / tol after them: 1.9e6) and that the public check accepts,
#: and seeds that missed it and are refused by the public check (their tolerance is
#: below double-precision rounding; gradient norm / tol 3.9e6, 7.9e5, 0.7).
HARD_SEEDS = [50]
REFUSED_SEEDS = [2, 17, 307]


@pytest.mark.parametrize("seed", HARD_SEEDS)
def test_hard_problems_are_certified(seed):
    data, loss, K, lam, G, b = _hard_problem(seed)
    tol = _newton.DEFAULT_GRADIENT_TOL * G
    glm = perturbation._smooth_glm(loss, data.row_norm_bound, K, "test")
    _newton.check_certifiable(
        "objective_perturbation",
        glm,
        regularization=lam,
        n_public=data.n_samples,
        noise_norm=float(np.linalg.norm(b)),
    )
    public = minimize_strongly_convex(
        data.X, data.y, loss, n_outputs=K, regularization=lam, linear_term=b
    )
    assert public.gradient_norm > _newton.CERTIFICATE_MARGIN * tol  # the former failure
    solve = _newton.certified_minimize(
        data.X, data.y, loss, n_outputs=K, regularization=lam, tol=tol, linear_term=b
    )
    assert solve.stage != "newton"
    recomputed = np.linalg.norm(_gradient(data, loss, solve.coef, lam, b))
    assert recomputed <= _newton.CERTIFICATE_MARGIN * tol


@pytest.mark.parametrize("seed", REFUSED_SEEDS)
def test_hard_problems_beyond_double_precision_are_refused(seed):
    data, loss, K, lam, G, b = _hard_problem(seed)
    glm = perturbation._smooth_glm(loss, data.row_norm_bound, K, "test")
    with pytest.raises(ValueError, match="cannot be certified in double precision"):
        _newton.check_certifiable(
            "objective_perturbation",
            glm,
            regularization=lam,
            n_public=data.n_samples,
            noise_norm=float(np.linalg.norm(b)),
        )
