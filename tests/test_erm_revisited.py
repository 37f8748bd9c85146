"""Solvers of "DP-ERM revisited" (Wang, Ye and Xu 2017): dp_svrg, dp_svrg_pp, dp_accmd, and
the dp_gd schedules (PL last iterate, random iterate).

Covers the tests that docs/solvers/erm_revisited.md promises for Wang, Ye and Xu (2017),
"Differentially Private Empirical Risk Minimization Revisited: Faster and More General": exact step sizes,
epoch lengths and noise scales for given inputs, sensitivities under adversarial rows, the
count of noisy releases, proximal steps, convergence to a high-precision non-private optimum at
epsilon=inf, the dp_accmd privacy fix (the output depends on the data only through the noisy
gradients), a Gaussian random-walk test of the noise, and audits on neighbouring data sets.
"""

import dataclasses
import functools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import regression_data
from dp_accounting import dp_event as dpe
from scipy.optimize import minimize, minimize_scalar
from sklearn.datasets import make_classification, make_regression
from sklearn.linear_model import Lasso, LogisticRegression, Ridge

import sklearn_dp.solvers as solvers_module
from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget, _noise
from sklearn_dp._clipped_sums import l2_clipped_derivatives
from sklearn_dp._data import BoundedData, bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.accounting import epsilon_of_event, gaussian_noise_multiplier, gaussian_steps_event
from sklearn_dp.exceptions import ConvergenceError
from sklearn_dp.solvers import (
    _accmd,
    _registry,
    _svrg,
    dp_accmd,
    dp_gd,
    dp_svrg,
    dp_svrg_pp,
    plan_call,
)
from sklearn_dp.solvers._accmd import accmd_iterations, accmd_row_bound
from sklearn_dp.solvers._gradient_descent import (
    initial_gap_bound,
    schedule_iterations,
)
from sklearn_dp.solvers._svrg import (
    difference_release,
    prox_elastic_net,
    snapshot_release,
    svrg_event,
    svrg_noise_multipliers,
)
from sklearn_dp.solvers._svrg_schedule import (
    MAX_VARIANCE_RATIO,
    svrg_inner_steps,
    svrg_max_step_size,
    svrg_pp_step_size,
    svrg_step_size,
)
from sklearn_dp.testing import audit_mechanism, trace_releases

LOGISTIC = get_loss("log_loss")


def _max_norm(X):
    """The largest row norm: a row bound that clips nothing, so references see the same data."""
    return float(np.linalg.norm(X, axis=1).max()) * (1 + 1e-12)


def _bounded(X, y, *, fit_intercept=False, data_norm=1.0):
    return bound_data(X, y, fit_intercept=fit_intercept, data_norm=data_norm)


# --------------------------------------------------------------------------
# Public hyper-parameters: exact values for given inputs
# --------------------------------------------------------------------------


def svrg_contraction(smoothness, strong_convexity, step_size, batch_size, inner_steps):
    """The factor A of condition (4): per-epoch contraction of the expected gap, noise aside."""
    a = 8.0 * smoothness * step_size / batch_size
    m = inner_steps
    return 1.0 / (step_size * (1.0 - a) * strong_convexity * m) + a * (m + 1) / (m * (1.0 - a))


def test_svrg_step_and_epoch_length_match_the_corrected_spec():
    # Unit-norm rows, logistic loss: L = 1/4; mu = 0.01 (spec 7.2 / 5.3: m_min = 4801).
    L, mu = 0.25, 0.01
    step = svrg_step_size(L, batch_size=1)
    assert step == pytest.approx(1 / (48 * L), rel=1e-15)
    m = svrg_inner_steps(L, mu, step, batch_size=1)
    assert m == 4801  # m > 192 kappa + 2/3 = 4800.67
    assert svrg_contraction(L, mu, step, 1, m) < 0.5 <= svrg_contraction(L, mu, step, 1, m - 1)
    assert svrg_contraction(L, mu, step, 1, 5000) == pytest.approx(0.488, abs=1e-3)


def test_svrg_minibatch_step_and_epoch_length():
    # b >= 48: eta = 1/L (the prox lemma's cap), a = 8/b.
    L, mu, b = 0.5, 0.01, 100
    step = svrg_step_size(L, b)
    assert step == pytest.approx(1 / L)
    a = 8 * L * step / b
    expected = math.floor((1 / (step * (1 - a) * mu) + a / (1 - a)) / (0.5 - a / (1 - a))) + 1
    assert svrg_inner_steps(L, mu, step, b) == expected
    assert svrg_step_size(L, 24) == pytest.approx(24 / (48 * L))
    with pytest.raises(ValueError, match="too large"):
        svrg_inner_steps(L, mu, 1 / (24 * L), 1)  # a = 1/3: (4) cannot hold
    with pytest.raises(ValueError, match="strongly convex"):
        svrg_inner_steps(L, 0.0, step, b)


def test_svrg_pp_step_size_and_release_count():
    assert svrg_pp_step_size(0.25, 1) == pytest.approx(1 / (13 * 0.25))
    assert svrg_pp_step_size(0.25, 100) == pytest.approx(100 / (112 * 0.25))
    # The paper's Figure 2: m = 10, T = 15, b = 1: K = m (2^(T+1) - 2) = 655340 inner steps.
    plan = plan_call(
        "dp_svrg_pp",
        200_000,
        54,
        math.inf,
        1e-3,
        loss=LOGISTIC,
        row_norm_bound=1.0,
        max_iter=15,
        batch_size=1,
        inner_steps=10,
    )
    assert sum(plan.details["epoch_lengths"]) == 655_340
    assert plan.details["epoch_lengths"][:3] == [20, 40, 80]
    assert plan.n_steps == 15 + 655_340
    assert plan.details["step_size"] == pytest.approx(1 / (13 * 0.25))


def test_svrg_plan_counts_epochs_times_inner_steps():
    plan = plan_call(
        "dp_svrg",
        10_000,
        11,
        math.inf,
        1e-5,
        loss=LOGISTIC,
        row_norm_bound=1.0,
        alpha=0.01,
        max_iter=7,
        batch_size=1,
    )
    # 4801 rounded up to the grid 10^(k/20): 10^(74/20) = 5011.9 (fits on noisy
    # counts share calibrations).
    assert plan.details["inner_steps"] == 5012
    assert plan.n_steps == 7 + 7 * 5012
    assert plan.details["step_size"] == pytest.approx(1 / 12)


def test_dp_gd_schedule_step_counts():
    n, d, eps, delta = 10_000, 10, 1.0, 1e-5
    single = gaussian_noise_multiplier(eps, delta, 1)
    L, mu, C, e0 = 0.26, 0.01, 0.5, math.log(2)
    expected = math.ceil((L / mu) * math.log(2 * mu**2 * n**2 * e0 / (L * d * single**2 * C**2)))
    constants = dict(smoothness=L, clip=C, initial_gap=e0)
    got = schedule_iterations("pl", n, d, eps, delta, pl_constant=mu, **constants)
    assert got == expected
    expected = math.ceil(n / (single * C) * math.sqrt(2 * L * e0 / d))
    assert schedule_iterations("gradient_norm", n, d, eps, delta, **constants) == expected
    # Without noise: (L / mu) ln(1e12) steps for "pl", the cap for "gradient_norm".
    inf = math.inf
    expected = math.ceil((L / mu) * math.log(1e12))
    assert schedule_iterations("pl", n, d, inf, delta, pl_constant=mu, **constants) == expected
    assert schedule_iterations("gradient_norm", n, d, inf, delta, **constants) == 5000
    assert initial_gap_bound(LOGISTIC) == pytest.approx(math.log(2))
    assert initial_gap_bound(get_loss("log_loss", n_classes=3), 3) == pytest.approx(math.log(3))
    assert initial_gap_bound(get_loss("squared", residual_bound=2.0)) == pytest.approx(0.5)


def test_accmd_default_iterations():
    n, d, eps, delta, R, B, C = 5000, 20, 1.0, 1e-5, 2.0, 1.0, 0.5
    single = gaussian_noise_multiplier(eps, delta, 1)
    Lc = 0.25 * B**2 * R**2
    for constraint, bregman, width in [
        ("l2", 0.5, R**2 * d),
        ("l1", math.log(2 * d), R**2 * (2 * math.log(2 * d) + 1)),
    ]:
        expected = math.ceil((48 * Lc**2 * bregman * n**2 / (single**2 * C**2 * width)) ** 0.25)
        got = accmd_iterations(
            n,
            d,
            eps,
            delta,
            smoothness=0.25,
            row_norm_bound=B,
            radius=R,
            constraint=constraint,
            clip=C,
        )
        assert got == expected


def test_accmd_entrywise_smoothness_is_the_l1_constant_of_the_largest_entry_bound():
    d, R, beta = 400, 1.5, 0.25
    bounds = np.append(np.full(d, 0.5), 2.0)  # the intercept column's bound is the largest
    row_norm = float(np.linalg.norm(bounds))
    loss = get_loss("log_loss")
    assert accmd_row_bound(row_norm, bounds, "l2") == row_norm
    assert accmd_row_bound(row_norm, bounds, "entrywise") == 2.0
    with pytest.raises(ValueError, match="feature_bound"):
        accmd_row_bound(row_norm, None, "entrywise")
    # The plan's default T uses it (the L1 width and Bregman bound unchanged).
    n, eps, delta, C = 5000, 1.0, 1e-5, 0.5 * 0.5 * row_norm
    entry = np.full(d + 1, 0.5)
    plan = plan_call(
        "dp_accmd",
        n,
        d + 1,
        eps,
        delta,
        loss=loss,
        row_norm_bound=float(np.linalg.norm(entry)),
        feature_bound=entry,
        radius=R,
        constraint="l1",
        smoothness="entrywise",
        clip_norm=C,
    )
    single = gaussian_noise_multiplier(eps, delta, 1)
    Lc, bregman = beta * 0.25 * R**2, math.log(2 * (d + 1))
    width = R**2 * (2 * math.log(2 * (d + 1)) + 1)
    expected = math.ceil((48 * Lc**2 * bregman * n**2 / (single**2 * C**2 * width)) ** 0.25)
    assert plan.n_steps == expected


def test_accmd_entrywise_smoothness_refuses_the_l2_ball_and_l2_bounded_rows_before_the_spend():
    X, y = make_regression(n_samples=60, n_features=5, random_state=0)
    budget = PrivacyBudget(5.0, 1e-3)
    common = dict(penalty=None, radius=1.0, y_bound=1.0, budget=budget)
    entrywise = dict(solver_options={"smoothness": "entrywise"})
    with pytest.raises(ValueError, match="constraint='l1'"):
        DPSCORegressor(solver="dp_accmd", feature_bound=1.0, **common, **entrywise).fit(X, y)
    with pytest.raises(ValueError, match="feature_bound"):
        DPSCORegressor(
            solver="dp_accmd", constraint="l1", data_norm=2.0, **common, **entrywise
        ).fit(X, y)
    with pytest.raises(ValueError, match="pass a number as feature_bound"):
        DPSCORegressor(solver="dp_accmd", constraint="l1", **common, **entrywise).fit(X, y)
    assert budget.ledger == []


def test_accmd_entrywise_smoothness_without_noise_reaches_the_l1_constrained_optimum_faster():
    X, y = make_regression(n_samples=300, n_features=8, n_informative=4, noise=1.0, random_state=2)
    X, y = X / 8.0, y / np.abs(y).max()
    radius, bound = 0.6, float(np.abs(X).max()) * (1 + 1e-12)
    data = bound_data(X, y, fit_intercept=False, feature_bound=bound)
    loss = get_loss("squared", residual_bound=radius * bound + 1.0)
    kwargs = dict(n_outputs=1, alpha=0.0, delta=0.0, radius=radius, constraint="l1")
    objective = lambda w: 0.5 * np.mean((X @ w - y) ** 2)
    best = objective(_projected_gradient_l1_ball(X, y, radius))
    gaps = {}
    for smoothness in ("l2", "entrywise"):
        W = dp_accmd(
            data, loss, epsilon=math.inf, max_iter=3000, smoothness=smoothness, **kwargs
        ).coef[:, 0]
        assert np.abs(W).sum() <= radius * (1 + 1e-9)
        gaps[smoothness] = objective(W) - best
    assert -1e-9 < gaps["entrywise"] < 1e-6
    # The l2 constant is sum_j b_j^2 / max_j b_j^2 (about 4 here) times larger:
    # its steps are that much shorter, and the gap after 3000 steps ~9 times larger.
    assert gaps["l2"] > 5 * gaps["entrywise"]


def test_accmd_entrywise_smoothness_noise_scales_are_exact():
    """The entrywise constant changes the default T only: T full-batch releases of
    the clipped gradient sum (sensitivity C), each with noise sigma_T C, sigma_T
    calibrated for T Gaussian steps."""
    n, d, epsilon, delta, radius, bound = 500, 40, 1.0, 1e-5, 1.5, 0.5
    data = bound_data(np.zeros((n, d)), np.ones(n), fit_intercept=False, feature_bound=bound)
    clip = 0.5 * bound * math.sqrt(d)  # default fraction of the logistic loss's bound
    steps = {}
    for smoothness in ("l2", "entrywise"):
        with trace_releases() as trace:
            result = dp_accmd(
                data,
                LOGISTIC,
                n_outputs=1,
                alpha=0.0,
                epsilon=epsilon,
                delta=delta,
                radius=radius,
                constraint="l1",
                smoothness=smoothness,
                random_state=0,
            )
        expected_steps = accmd_iterations(
            n,
            d,
            epsilon,
            delta,
            smoothness=LOGISTIC.smoothness,
            row_norm_bound=bound if smoothness == "entrywise" else bound * math.sqrt(d),
            radius=radius,
            constraint="l1",
            clip=clip,
        )
        sigma = gaussian_noise_multiplier(epsilon, delta, expected_steps)
        assert result.n_iter == result.plan.n_steps == expected_steps
        assert result.plan.noise_multiplier == sigma
        assert result.dp_event == gaussian_steps_event(sigma, expected_steps)
        releases = trace.releases
        assert len(releases) == expected_steps
        assert {(r.mechanism, r.label, r.norm) for r in releases} == {
            ("gaussian", "clipped gradient sum", "l2")
        }
        assert all(r.sensitivity == pytest.approx(clip, rel=1e-15) for r in releases)
        assert all(r.scale == pytest.approx(sigma * clip, rel=1e-15) for r in releases)
        assert all(np.array_equal(r.value, np.zeros((d, 1))) for r in releases)
        steps[smoothness] = expected_steps
    # sqrt(d) times smaller a row bound: T (proportional to the bound) shrinks with it.
    assert steps["entrywise"] < steps["l2"]


def test_accmd_without_noise_finds_the_vertex_of_the_smooth_lower_bound_family():
    # Asi et al. (2021), Theorem 11's family: squared loss on the L1 ball of radius D with
    # ||a_i||_inf <= 1 and |b_i| <= D; at b_i = a_i @ x* for a signed vertex x*, F* = 0.
    rng = np.random.default_rng(0)
    A = rng.choice([-1.0, 1.0], size=(200, 30))
    truth = np.zeros(30)
    truth[7] = -1.0
    data = bound_data(A, A @ truth, fit_intercept=False, feature_bound=1.0)
    loss = get_loss("squared", residual_bound=2.0)
    W = dp_accmd(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=1.0,
        constraint="l1",
        smoothness="entrywise",
        max_iter=300,
    ).coef[:, 0]
    assert np.argmax(np.abs(W)) == 7 and W[7] < 0
    assert 0.5 * np.mean((A @ W - A @ truth) ** 2) < 1e-3


# --------------------------------------------------------------------------
# Noise calibration and noise scales
# --------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon, mu", [(0.2, 0.1010), (0.5, 0.2169), (1.0, 0.3884)])
def test_full_batch_calibration_matches_the_spec_table(epsilon, mu):
    """Spec 7.2: T full-batch Gaussian steps are mu-GDP; mu for (epsilon, delta=1e-3)."""
    assert 1.0 / gaussian_noise_multiplier(epsilon, 1e-3, 1) == pytest.approx(mu, rel=2e-3)
    # T steps need sqrt(T) times the one-step multiplier (exact composition).
    assert gaussian_noise_multiplier(epsilon, 1e-3, 1500) == pytest.approx(
        math.sqrt(1500) / mu, rel=2e-3
    )


def test_svrg_noise_multipliers_split_and_calibration():
    eps, delta, q, T, K, share = 1.0, 1e-5, 0.01, 5, 500, 0.75
    snapshot, difference = svrg_noise_multipliers(eps, delta, q, T, K, share)
    single = gaussian_noise_multiplier(eps, delta, 1)
    assert snapshot == pytest.approx(single * math.sqrt(T / share), rel=1e-12)
    # The snapshots alone are a Gaussian mechanism of GDP parameter sqrt(share) / single.
    alone = epsilon_of_event(gaussian_steps_event(snapshot, T), delta)
    assert alone == pytest.approx(
        epsilon_of_event(gaussian_steps_event(single / math.sqrt(share), 1), delta)
    )
    assert alone < eps
    spent = epsilon_of_event(svrg_event(snapshot, difference, q, T, K), delta)
    assert eps * 0.99 <= spent <= eps
    # Tight: 5% less noise on the inner steps breaks the target.
    assert epsilon_of_event(svrg_event(snapshot, 0.95 * difference, q, T, K), delta) > eps


def test_plan_event_is_the_calibrated_composition():
    plan = plan_call(
        "dp_svrg_pp",
        1000,
        5,
        1.0,
        1e-5,
        loss=LOGISTIC,
        row_norm_bound=1.0,
        max_iter=2,
        batch_size=10,
        inner_steps=5,
    )
    snapshot, difference = svrg_noise_multipliers(
        1.0, 1e-5, 0.01, 2, 30, _svrg.DEFAULT_SNAPSHOT_SHARE
    )
    assert plan.event == svrg_event(snapshot, difference, 0.01, 2, 30)
    assert plan.details["snapshot_multiplier"] == snapshot
    assert plan.noise_multiplier == difference


def _gateway_noise(shape, sensitivity, noise_std, seed):
    """The gateway's noise on a zero value: discrete Gaussian steps on its grid."""
    grid = _noise.gaussian_grid(noise_std, sensitivity, int(np.prod(shape)))
    steps = _noise.sample_discrete_gaussian(
        np.random.default_rng(seed), grid.scale, int(np.prod(shape))
    )
    return (steps * grid.spacing).reshape(shape)


def test_release_noise_is_exactly_the_stated_gaussian():
    shape = (4, 1)
    X = np.zeros((0, 4))
    with trace_releases() as trace:
        got = difference_release(
            X,
            np.zeros(0),
            np.zeros(0),
            np.zeros((0, 1)),
            np.zeros(shape),
            LOGISTIC,
            0.5,
            0.7,
            2.5,
            np.random.default_rng(3),
        )
        np.testing.assert_array_equal(got, _gateway_noise(shape, 0.7, 2.5 * 0.7, 3))
        X = np.zeros((6, 4))
        total, _ = snapshot_release(
            X,
            np.ones(6),
            np.zeros(shape),
            LOGISTIC,
            0.5,
            np.zeros(6),
            1.3,
            np.random.default_rng(4),
        )
        np.testing.assert_array_equal(total, _gateway_noise(shape, 0.5, 1.3, 4))
        total = _accmd.noisy_gradient_release(
            X,
            np.ones(6),
            np.zeros(shape),
            LOGISTIC,
            0.5,
            np.zeros(6),
            0.9,
            np.random.default_rng(5),
        )
        np.testing.assert_array_equal(total, _gateway_noise(shape, 0.5, 0.9, 5))
    # Each through the noise gateway, with its declared sensitivity and noise scale.
    assert [(r.mechanism, r.label, r.sensitivity, r.scale, r.norm) for r in trace.releases] == [
        ("gaussian", "svrg gradient difference sum", 0.7, 2.5 * 0.7, "l2"),
        ("gaussian", "svrg snapshot gradient sum", 0.5, 1.3, "l2"),
        ("gaussian", "clipped gradient sum", 0.5, 0.9, "l2"),
    ]
    for release in trace.releases:
        np.testing.assert_array_equal(release.value, 0.0)


@pytest.mark.parametrize("solver", ["dp_svrg", "dp_svrg_pp", "dp_accmd"])
def test_every_release_and_sample_goes_through_the_gateway(monkeypatch, solver):
    """No random draw of the fit happens outside the noise gateway but public ones.

    The generator's float and sampling draws are counted: the gateway draws
    its noise as uniform integers, so no float draw may happen at all, and
    the trace must account for the sampling draws: one binomial and one
    choice per Poisson sample.
    """
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    data = _bounded(X / 3, np.where(y == 1, 1.0, -1.0))
    rng = np.random.default_rng(0)
    draws = {"normal": 0, "standard_normal": 0, "laplace": 0, "binomial": 0, "choice": 0}

    class Counting:
        def __getattr__(self, name):
            attribute = getattr(rng, name)
            if name in draws:

                def counted(*args, **kwargs):
                    draws[name] += 1
                    return attribute(*args, **kwargs)

                return counted
            return attribute

    kwargs = dict(n_outputs=1, epsilon=1.0, delta=1e-5, random_state=Counting())
    if solver == "dp_accmd":
        kwargs.update(alpha=0.0, radius=2.0, max_iter=6)
    else:
        kwargs.update(alpha=0.05, max_iter=2, batch_size=10, inner_steps=4)
    monkeypatch.setattr(_svrg, "make_rng", lambda random_state: random_state)
    monkeypatch.setattr(_accmd, "make_rng", lambda random_state: random_state)
    with trace_releases() as trace:
        getattr(solvers_module, solver)(data, LOGISTIC, **kwargs)
    noisy = [r for r in trace.releases if r.scale > 0]
    assert noisy and draws["normal"] == draws["standard_normal"] == draws["laplace"] == 0
    rate = [s.parameters["rate"] for s in trace.samples]
    assert draws["binomial"] == draws["choice"] == sum(r < 1 for r in rate)


def test_solver_noise_is_a_gaussian_random_walk():
    """All-zero features: every gradient is 0 and the iterate is pure noise.

    One epoch of dp_svrg_pp (2m steps, no penalty, last iterate) then gives
    ``W = -eta (sum_t u_t / b + 2m e / n)`` with ``u_t ~ N(0, (2 C s_diff)^2)`` and
    ``e ~ N(0, (C s_snap)^2)``: check the variance over 4000 coordinates.
    """
    n, d, b, m = 50, 4000, 10, 3
    data = _bounded(np.zeros((n, d)), np.ones(n))
    result = dp_svrg_pp(
        data,
        LOGISTIC,
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=1e-5,
        max_iter=1,
        batch_size=b,
        inner_steps=m,
        difference_bound="clip",
        output="last",
        random_state=0,
    )
    details = result.plan.details
    C, eta, steps = details["clip_norm"], details["step_size"], 2 * m
    expected = eta**2 * (
        steps * (2 * C * details["difference_multiplier"] / b) ** 2
        + (steps * C * details["snapshot_multiplier"] / n) ** 2
    )
    observed = np.var(result.coef)
    assert abs(np.mean(result.coef)) < 4 * math.sqrt(expected / (n * d)) + 4 * math.sqrt(
        expected / d
    )
    # The sample variance of 4000 normals is within 10% with overwhelming probability.
    assert observed == pytest.approx(expected, rel=0.1)


def test_dp_gd_noise_is_a_gaussian_random_walk():
    n, d, T = 40, 4000, 5
    data = _bounded(np.zeros((n, d)), np.ones(n))
    result = dp_gd(
        data,
        LOGISTIC,
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=1e-5,
        max_iter=T,
        momentum=None,
        output="last",
        random_state=1,
    )
    details = result.plan.details
    expected = T * (details["step_size"] * details["noise_std"] / n) ** 2
    assert np.var(result.coef) == pytest.approx(expected, rel=0.1)


# --------------------------------------------------------------------------
# Sensitivity and release counts
# --------------------------------------------------------------------------


def test_difference_and_snapshot_sensitivity_under_extreme_rows():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1, 6)) * 1e6  # not bounded: the clips alone must hold
    y = np.array([1.0])
    norms = np.linalg.norm(X, axis=1)
    W, W_snap = rng.normal(size=(6, 1)) * 1e3, rng.normal(size=(6, 1)) * 1e3
    C = 0.5
    D_snap = l2_clipped_derivatives(X, y, W_snap, LOGISTIC, C, norms)
    for bound in (2 * C, 1e-3):
        total = difference_release(X, y, norms, D_snap, W, LOGISTIC, C, bound, 0.0, rng)
        assert np.linalg.norm(total) <= bound * (1 + 1e-12)
    total, _ = snapshot_release(X, y, W_snap, LOGISTIC, C, norms, 0.0, rng)
    assert np.linalg.norm(total) <= C * (1 + 1e-12)
    total = _accmd.noisy_gradient_release(X, y, W, LOGISTIC, C, norms, 0.0, rng)
    assert np.linalg.norm(total) <= C * (1 + 1e-12)


@pytest.mark.parametrize(
    "loss, n_outputs",
    [
        (get_loss("log_loss"), 1),
        (get_loss("log_loss", n_classes=3), 3),
        (get_loss("squared", residual_bound=3.0), 1),
        (get_loss("huber", epsilon_huber=0.3), 1),
    ],
)
def test_smoothness_bound_of_gradient_differences(loss, n_outputs):
    """||clip(g_i(W)) - clip(g_i(W'))|| <= smoothness * ||x_i||^2 * ||W - W'||_F (the adaptive bound)."""
    rng = np.random.default_rng(1)
    n, d, B = 500, 5, 1.5
    X = rng.normal(size=(n, d))
    X *= (B * rng.uniform(0, 1, n) / np.linalg.norm(X, axis=1))[:, None]
    y = rng.integers(0, 3, n) if n_outputs > 1 else rng.choice([-1.0, 1.0], n)
    norms = np.linalg.norm(X, axis=1)
    for scale in (1e-3, 1.0, 10.0):
        W = rng.normal(size=(d, n_outputs)) * scale
        W2 = W + rng.normal(size=(d, n_outputs)) * scale
        for clip in (0.2, np.inf):
            diff = l2_clipped_derivatives(X, y, W, loss, clip, norms) - l2_clipped_derivatives(
                X, y, W2, loss, clip, norms
            )
            per_sample = np.linalg.norm(diff, axis=1) * norms
            bound = loss.smoothness * B**2 * np.linalg.norm(W - W2)
            assert np.all(per_sample <= bound * (1 + 1e-9))


def _count_calls(monkeypatch, module, name):
    original = getattr(module, name)
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize("solver", [dp_svrg, dp_svrg_pp])
def test_svrg_release_counts_match_the_accountant(monkeypatch, solver):
    snapshots = _count_calls(monkeypatch, _svrg, "snapshot_release")
    inner = _count_calls(monkeypatch, _svrg, "difference_release")
    X, y = make_classification(n_samples=200, n_features=4, random_state=0)
    data = _bounded(X / 4, np.where(y == 1, 1.0, -1.0))
    result = solver(
        data,
        LOGISTIC,
        n_outputs=1,
        alpha=0.05,
        epsilon=2.0,
        delta=1e-5,
        max_iter=3,
        batch_size=10,
        inner_steps=4,
        random_state=0,
    )
    lengths = result.plan.details["epoch_lengths"]
    assert len(snapshots) == 3 == result.n_iter
    assert len(inner) == sum(lengths) == result.plan.n_steps - 3
    event = result.dp_event
    assert event.events[0].count == 3 and event.events[1].count == sum(lengths)


def test_accmd_and_gd_release_counts(monkeypatch):
    calls = _count_calls(monkeypatch, _accmd, "noisy_gradient_release")
    X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    data = _bounded(X / 4, np.where(y == 1, 1.0, -1.0))
    result = dp_accmd(
        data,
        LOGISTIC,
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=1e-5,
        radius=2.0,
        max_iter=17,
        random_state=0,
    )
    assert len(calls) == 17 == result.n_iter
    assert result.dp_event.count == 17


# --------------------------------------------------------------------------
# Proximal steps
# --------------------------------------------------------------------------


@pytest.mark.parametrize("l1_ratio", [0.0, 0.3, 1.0])
def test_prox_elastic_net_is_the_proximal_map(l1_ratio):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(7, 2)) * 2
    penalized = np.array([True] * 6 + [False])
    step, alpha = 0.7, 0.9
    got = prox_elastic_net(W, step, alpha, l1_ratio, penalized)
    for (i, j), v in np.ndenumerate(W):
        if not penalized[i]:
            assert got[i, j] == v
            continue

        def objective(x):
            penalty = alpha * (l1_ratio * abs(x) + 0.5 * (1 - l1_ratio) * x**2)
            return 0.5 * (x - v) ** 2 + step * penalty

        reference = minimize_scalar(
            objective, bounds=(-10, 10), method="bounded", options={"xatol": 1e-12}
        ).x
        assert got[i, j] == pytest.approx(reference, abs=1e-7)
    np.testing.assert_array_equal(prox_elastic_net(W, step, 0.0, l1_ratio, penalized), W)


# --------------------------------------------------------------------------
# epsilon = inf: the same algorithms without noise reach the non-private optimum
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def classification():
    X, y = make_classification(n_samples=600, n_features=5, n_informative=3, random_state=0)
    return X / 4.0, y


def test_svrg_without_noise_reaches_sklearn_logistic_regression(classification):
    X, y = classification
    C = 0.05
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_svrg",
        C=C,
        data_norm=_max_norm(X),
        max_iter=40,
        batch_size=100,
        classes=[0, 1],
        random_state=0,
    ).fit(X, y)
    reference = LogisticRegression(C=C, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, atol=1e-6)


def test_svrg_without_noise_reaches_ridge():
    X, y = make_regression(n_samples=400, n_features=4, noise=5.0, bias=3.0, random_state=0)
    X, y = X / 6.0, y / 60.0
    alpha = 0.1
    model = DPSCORegressor(
        epsilon=math.inf,
        solver="dp_svrg",
        alpha=alpha,
        data_norm=_max_norm(X),
        y_bound=10.0,
        max_iter=40,
        batch_size=100,
        random_state=0,
    ).fit(X, y)
    reference = Ridge(alpha=len(y) * alpha).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-6)


def test_svrg_pp_without_noise_reaches_lasso():
    X, y = make_regression(n_samples=400, n_features=6, n_informative=3, noise=5.0, random_state=1)
    X, y = X / 6.0, y / 60.0
    alpha = 2e-3
    model = DPSCORegressor(
        epsilon=math.inf,
        solver="dp_svrg_pp",
        penalty="l1",
        alpha=alpha,
        data_norm=_max_norm(X),
        y_bound=10.0,
        max_iter=9,
        batch_size=20,
        solver_options={"inner_steps": 5},
        random_state=0,
    ).fit(X, y)
    reference = Lasso(alpha=alpha, tol=1e-12, max_iter=100_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-5)
    assert model.intercept_ == pytest.approx(reference.intercept_, abs=1e-5)
    assert np.sum(model.coef_ == 0) == np.sum(reference.coef_ == 0)  # exact zeros from the prox


def _logistic_objective(X, y_pm, W, alpha, l1_ratio):
    value = np.mean(np.logaddexp(0, -y_pm * (X @ W)))
    return value + alpha * (l1_ratio * np.abs(W).sum() + 0.5 * (1 - l1_ratio) * W @ W)


def _fista_l1_logistic(X, y_pm, alpha, n_iter=20_000):
    n, d = X.shape
    L = 0.25 * np.max(np.sum(X**2, axis=1))
    W = Z = np.zeros(d)
    t = 1.0
    for _ in range(n_iter):
        grad = X.T @ (-y_pm / (1 + np.exp(y_pm * (X @ Z)))) / n
        W_next = prox_elastic_net((Z - grad / L)[:, None], 1 / L, alpha, 1.0, np.ones(d, bool))[
            :, 0
        ]
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        Z = W_next + (t - 1) / t_next * (W_next - W)
        W, t = W_next, t_next
    return W


def test_svrg_pp_without_noise_reaches_l1_logistic_optimum(classification):
    X, y = classification
    y_pm = np.where(y == 1, 1.0, -1.0)
    alpha = 5e-3
    data = _bounded(X, y_pm, data_norm=_max_norm(X))
    result = dp_svrg_pp(
        data,
        LOGISTIC,
        n_outputs=1,
        alpha=alpha,
        l1_ratio=1.0,
        epsilon=math.inf,
        delta=0.0,
        max_iter=10,
        batch_size=20,
        inner_steps=8,
        random_state=0,
    )
    reference = _fista_l1_logistic(X, y_pm, alpha)
    gap = _logistic_objective(X, y_pm, result.coef[:, 0], alpha, 1.0) - _logistic_objective(
        X, y_pm, reference, alpha, 1.0
    )
    assert -1e-12 < gap < 1e-8
    np.testing.assert_allclose(result.coef[:, 0], reference, atol=1e-4)


def _projected_gradient_l1_ball(A, b, radius, n_iter=20_000):
    """Reference: accelerated projected gradient for mean (Ax - b)^2 / 2 over an L1 ball."""
    n, d = A.shape
    L = np.linalg.eigvalsh(A.T @ A / n).max()

    def project(v):
        if np.abs(v).sum() <= radius:
            return v
        u = np.sort(np.abs(v))[::-1]
        css = np.cumsum(u)
        k = np.nonzero(u * np.arange(1, d + 1) > css - radius)[0][-1]
        theta = (css[k] - radius) / (k + 1)
        return np.sign(v) * np.maximum(np.abs(v) - theta, 0)

    x = z = np.zeros(d)
    t = 1.0
    for _ in range(n_iter):
        x_next = project(z - A.T @ (A @ z - b) / (n * L))
        t_next = (1 + math.sqrt(1 + 4 * t * t)) / 2
        z = x_next + (t - 1) / t_next * (x_next - x)
        x, t = x_next, t_next
    return x


@pytest.mark.parametrize("constraint", ["l1", "l2"])
def test_accmd_without_noise_reaches_constrained_least_squares(constraint):
    X, y = make_regression(n_samples=300, n_features=8, n_informative=4, noise=1.0, random_state=2)
    X, y = X / 8.0, y / np.abs(y).max()
    radius = 0.6
    data = _bounded(X, y, data_norm=_max_norm(X))
    loss = get_loss("squared", residual_bound=radius * _max_norm(X) + 1.0)
    result = dp_accmd(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=radius,
        constraint=constraint,
        max_iter=3000,
    )
    W = result.coef[:, 0]
    objective = lambda w: 0.5 * np.mean((X @ w - y) ** 2)
    if constraint == "l1":
        reference = _projected_gradient_l1_ball(X, y, radius)
        assert np.abs(W).sum() <= radius * (1 + 1e-9)
    else:
        reference = minimize(
            lambda w: (objective(w), X.T @ (X @ w - y) / len(y)),
            np.zeros(8),
            jac=True,
            constraints=[{"type": "ineq", "fun": lambda w: radius**2 - w @ w}],
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 1000},
        ).x
        assert np.linalg.norm(W) <= radius * (1 + 1e-9)
    gap = objective(W) - objective(reference)
    assert -1e-9 < gap < 1e-6


def test_accmd_logistic_l2_ball_matches_unconstrained_optimum_inside(classification):
    # A large ball does not bind: the constrained optimum is LogisticRegression(penalty=None).
    X, y = classification
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_accmd",
        penalty=None,
        radius=50.0,
        data_norm=_max_norm(X),
        max_iter=4000,
        classes=[0, 1],
    ).fit(X, y)
    reference = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-3)


def test_dp_gd_pl_schedule_without_noise_reaches_ridge():
    X, y = make_regression(n_samples=300, n_features=4, noise=5.0, random_state=3)
    X, y = X / 6.0, y / 60.0
    alpha = 5e-2
    model = DPSCORegressor(
        epsilon=math.inf,
        solver="dp_gd",
        alpha=alpha,
        data_norm=_max_norm(X),
        y_bound=10.0,
        solver_options={"schedule": "pl"},
    ).fit(X, y)
    reference = Ridge(alpha=len(y) * alpha).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, atol=1e-6)


def test_dp_gd_random_iterate_is_uniform_over_the_trajectory():
    X, y = make_classification(n_samples=100, n_features=3, n_redundant=0, random_state=0)
    data = _bounded(X / 4, np.where(y == 1, 1.0, -1.0))
    T = 4
    counts = np.zeros(T, int)
    for seed in range(400):
        result = dp_gd(
            data,
            LOGISTIC,
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-5,
            max_iter=T,
            schedule="gradient_norm",
            random_state=seed,
        )
        assert result.plan.details["momentum"] is None
        counts[result.plan.details["random_index"]] += 1
        if result.plan.details["random_index"] == 0:
            np.testing.assert_array_equal(result.coef, 0.0)  # x_0
    # Chi-square goodness of fit to the uniform law on {0, ..., T-1}.
    chi2 = np.sum((counts - 100) ** 2 / 100)
    assert chi2 < 16.3  # 99.9% quantile with 3 degrees of freedom


# --------------------------------------------------------------------------
# The privacy fix of dp_accmd: the output is post-processing of the noisy releases
# --------------------------------------------------------------------------


def _nan_data(data):
    return BoundedData(
        X=np.full(data.X.shape, np.nan),
        y=np.full(data.y.shape, np.nan),
        row_norms=np.full(data.row_norms.shape, np.nan),
        row_norm_bound=data.row_norm_bound,
        penalized=data.penalized,
        fit_intercept=data.fit_intercept,
        intercept_scaling=data.intercept_scaling,
    )


def _record_and_replay(monkeypatch, module, name, position):
    """Patch ``module.name``: record its outputs, then replay them ignoring the data."""
    original = getattr(module, name)
    recorded, mode = [], {"replay": False}

    def patched(*args, **kwargs):
        if mode["replay"]:
            value = recorded[patched.index]
            patched.index += 1
            return value
        value = original(*args, **kwargs)
        recorded.append(value)
        return value

    patched.index = 0
    monkeypatch.setattr(module, name, patched)
    return mode


@pytest.mark.parametrize("constraint", ["l2", "l1"])
def test_accmd_output_depends_on_data_only_through_noisy_gradients(monkeypatch, constraint):
    """Replay the recorded noisy gradient sums on data made of NaN: the output must not change.

    The printed algorithm's y-step uses the exact gradient, so it would read the data
    outside the noisy release (and return NaN here).
    """
    X, y = make_classification(n_samples=150, n_features=4, random_state=0)
    data = _bounded(X / 3, np.where(y == 1, 1.0, -1.0))
    mode = _record_and_replay(monkeypatch, _accmd, "noisy_gradient_release", 0)
    kwargs = dict(
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=1e-5,
        radius=3.0,
        constraint=constraint,
        max_iter=25,
    )
    first = dp_accmd(data, LOGISTIC, random_state=0, **kwargs).coef
    mode["replay"] = True
    second = dp_accmd(_nan_data(data), LOGISTIC, random_state=123, **kwargs).coef
    np.testing.assert_array_equal(first, second)


@pytest.mark.parametrize("solver", [dp_svrg, dp_svrg_pp])
def test_svrg_output_depends_on_data_only_through_noisy_releases(monkeypatch, solver):
    X, y = make_classification(n_samples=150, n_features=4, random_state=0)
    data = _bounded(X / 3, np.where(y == 1, 1.0, -1.0))
    snap = _record_and_replay(monkeypatch, _svrg, "snapshot_release", 0)
    diff = _record_and_replay(monkeypatch, _svrg, "difference_release", 0)
    kwargs = dict(
        n_outputs=1, alpha=0.05, epsilon=1.0, delta=1e-5, max_iter=2, batch_size=8, inner_steps=6
    )
    first = solver(data, LOGISTIC, random_state=0, **kwargs).coef
    snap["replay"] = diff["replay"] = True
    second = solver(_nan_data(data), LOGISTIC, random_state=99, **kwargs).coef
    np.testing.assert_array_equal(first, second)


# --------------------------------------------------------------------------
# Audits on neighbouring data sets (D and D plus one extreme canary row)
# --------------------------------------------------------------------------

AUDIT_DELTA = 1e-5


def _audit(run, n_runs, claimed_epsilon):
    """Pick the threshold on ``n_runs`` runs per data set, bound epsilon on fresh runs."""
    return audit_mechanism(
        run,
        claimed_epsilon=claimed_epsilon,
        delta=AUDIT_DELTA,
        n_runs=2 * n_runs,
        calibration_runs=n_runs,
        candidates=49,
        criterion="empirical",
    ).epsilon_lower_bound


def _canary_datasets(n=20):
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(-1, 1, n), np.zeros(n)])
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    X_prime = np.vstack([X, [0.0, 1e6]])  # clipped to the row bound 1
    return [_bounded(X, y), _bounded(X_prime, np.append(y, 1.0))]


def _canary_run(solver, epsilon, **kwargs):
    datasets = _canary_datasets()

    def run(dataset, seed):
        result = solver(
            datasets[dataset],
            LOGISTIC,
            n_outputs=1,
            epsilon=epsilon,
            delta=AUDIT_DELTA,
            random_state=seed,
            clip_norm=0.05,
            **kwargs,
        )
        return result.coef[1, 0]

    return run


SVRG_AUDIT = dict(alpha=0.05, max_iter=2, batch_size=4, inner_steps=3)
AUDITS = [
    (dp_svrg, 2.0, SVRG_AUDIT),
    (dp_svrg_pp, 2.0, dict(SVRG_AUDIT, alpha=0.0, difference_bound="clip")),
    (dp_accmd, 2.0, dict(alpha=0.0, radius=2.0, max_iter=4)),
]


@pytest.mark.parametrize(
    "solver, epsilon, kwargs", AUDITS, ids=lambda v: getattr(v, "__name__", "")
)
def test_audit_does_not_exceed_claimed_epsilon(solver, epsilon, kwargs):
    eps_lb = _audit(_canary_run(solver, epsilon, **kwargs), n_runs=150, claimed_epsilon=epsilon)
    assert eps_lb <= epsilon, f"audit found epsilon >= {eps_lb:.3f} > claimed {epsilon}"


def test_audit_of_accmd_entrywise_smoothness():
    # Rows bounded entrywise (the canary's column clipped to 1): the entrywise
    # constant lengthens the steps on the same T Gaussian releases.
    datasets = [
        bound_data(data.X, data.y, fit_intercept=False, feature_bound=1.0)
        for data in _canary_datasets()
    ]

    def run(dataset, seed):
        result = dp_accmd(
            datasets[dataset],
            LOGISTIC,
            n_outputs=1,
            alpha=0.0,
            epsilon=2.0,
            delta=AUDIT_DELTA,
            radius=2.0,
            constraint="l1",
            smoothness="entrywise",
            max_iter=4,
            clip_norm=0.05,
            random_state=seed,
        )
        return result.coef[1, 0]

    eps_lb = _audit(run, n_runs=150, claimed_epsilon=2.0)
    assert eps_lb <= 2.0, f"audit found epsilon >= {eps_lb:.3f} > claimed 2.0"


def test_audit_detects_under_noised_svrg(monkeypatch):
    """Positive control: 20x too little noise on every release is caught."""
    original = _svrg.svrg_noise_multipliers

    def broken(*args):
        snapshot, difference = original(*args)
        return snapshot / 20, difference / 20

    monkeypatch.setattr(_svrg, "svrg_noise_multipliers", broken)
    eps_lb = _audit(_canary_run(dp_svrg, 1.0, **SVRG_AUDIT), n_runs=150, claimed_epsilon=1.0)
    assert eps_lb > 1.5, eps_lb


# --------------------------------------------------------------------------
# Observables after the reservation are public (step clamp, progress, info)
# --------------------------------------------------------------------------


def test_svrg_step_too_large_for_the_count_derived_batch_is_clamped():
    """A step too large for some DP row counts is clamped for every count, never refused.

    The largest step of the analysis depends on the batch, which comes from the
    DP row count: raising for some counts (learning_rate=4.49, C=0.01 would in
    5% of fits at n=3000 and 62% at n=2960) lets the failure rate reveal n.
    The plan clamps the step instead, and records both steps.
    """
    L = 0.25 * 2.0  # unit rows plus the intercept column: row_norm_bound**2 = 2
    for n in np.linspace(2900.0, 3100.0, 21):
        plan = plan_call(
            "dp_svrg",
            n,
            4,
            math.inf,
            1e-5,
            loss=LOGISTIC,
            row_norm_bound=math.sqrt(2.0),
            alpha=1.0 / (0.01 * n),
            max_iter=1,
            step_size=4.49,
        )
        details = plan.details
        limit = svrg_max_step_size(L, details["batch_size"])
        assert details["requested_step_size"] == 4.49
        assert details["step_size"] == pytest.approx(min(4.49, limit), rel=1e-15)
        assert 8 * L * details["step_size"] / details["batch_size"] <= MAX_VARIANCE_RATIO + 1e-12
        assert details["inner_steps"] >= 1
    # A step within the limit is kept; the default step is never clamped.
    plan = plan_call(
        "dp_svrg",
        3000.0,
        4,
        math.inf,
        1e-5,
        loss=LOGISTIC,
        row_norm_bound=1.0,
        alpha=0.01,
        max_iter=1,
        step_size=0.5,
    )
    assert plan.details["step_size"] == 0.5
    plan = plan_call(
        "dp_svrg",
        3000.0,
        4,
        math.inf,
        1e-5,
        loss=LOGISTIC,
        row_norm_bound=1.0,
        alpha=0.01,
        max_iter=1,
    )
    assert plan.details["requested_step_size"] is None
    assert plan.details["step_size"] == svrg_step_size(0.25, plan.details["batch_size"])


@pytest.mark.parametrize("n", [2960, 3000])
def test_svrg_large_learning_rate_fits_whatever_the_count(n):
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(n, 3))
    y = np.arange(n) % 2
    budget = PrivacyBudget(100.0, 1e-3)
    for seed in range(5):
        model = DPLogisticRegression(
            solver="dp_svrg",
            learning_rate=4.49,
            C=0.01,
            max_iter=1,
            classes=[0, 1],
            budget=budget,
            random_state=seed,
        ).fit(X, y)
        assert np.all(np.isfinite(model.coef_))
    assert [entry.status for entry in budget.ledger] == ["completed"] * 5


def test_svrg_step_too_large_for_a_public_batch_is_refused_before_the_spend():
    plan_kwargs = dict(
        loss=LOGISTIC,
        row_norm_bound=1.0,
        alpha=0.01,
        batch_size=10,
        step_size=10 / (32 * 0.25) * 1.01,
    )
    for n in (None, 1000.0):  # refused before the count is known
        with pytest.raises(ValueError, match="too large") as raised:
            plan_call("dp_svrg", n, 4, 1.0, 1e-5, **plan_kwargs)
        assert getattr(raised.value, "__sklearn_dp_public__", False)
    # At the limit it is accepted (and not clamped).
    plan = plan_call("dp_svrg", 1000.0, 4, 1.0, 1e-5, **dict(plan_kwargs, step_size=10 / 8))
    assert plan.details["step_size"] == 10 / 8
    X, y = make_classification(
        n_samples=200, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    for epsilon in (1.0, math.inf):
        budget = PrivacyBudget(5.0, 1e-5) if epsilon < math.inf else None
        with pytest.raises(ValueError, match="too large"):
            DPLogisticRegression(
                solver="dp_svrg",
                learning_rate=100.0,
                batch_size=10,
                epsilon=epsilon,
                classes=[0, 1],
                budget=budget,
            ).fit(X / 10, y)
        if budget is not None:
            assert budget.ledger == []


@pytest.mark.parametrize(
    "estimator, params, message",
    [
        ("logistic", dict(solver="dp_gd", solver_options={"momentum": "heavy"}), "momentum"),
        ("logistic", dict(solver="dp_gd", solver_options={"output": "best"}), "output"),
        ("logistic", dict(solver="dp_gd", solver_options={"schedule": "fast"}), "schedule"),
        (
            "regressor",
            dict(solver="dp_gd", penalty=None, solver_options={"schedule": "pl"}),
            "pl_constant",
        ),
        ("logistic", dict(solver="dp_sgd", solver_options={"momentum": "auto"}), "momentum"),
        ("logistic", dict(solver="dp_svrg", solver_options={"output": "best"}), "output"),
        (
            "logistic",
            dict(solver="dp_svrg", solver_options={"difference_bound": "x"}),
            "difference_bound",
        ),
        ("logistic", dict(solver="dp_svrg", penalty="elasticnet", l1_ratio=1.0), "strongly convex"),
        ("regressor", dict(solver="dp_svrg", alpha=0.0), "strongly convex"),
        ("logistic", dict(solver="dp_svrg_pp", solver_options={"output": "tail"}), "output"),
        (
            "regressor",
            dict(solver="dp_accmd", penalty=None, radius=1.0, solver_options={"max_iter": 0}),
            "max_iter",
        ),
    ],
)
@pytest.mark.parametrize("epsilon", [1.0, math.inf])
def test_public_option_checks_fail_before_the_reservation(estimator, params, message, epsilon):
    """Refused options raise their own message (not PrivateFitError) and spend nothing."""
    X, y = make_classification(
        n_samples=100, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    budget = PrivacyBudget(5.0, 1e-5) if epsilon < math.inf else None
    if estimator == "logistic":
        model = DPLogisticRegression(classes=[0, 1], **params)
    else:
        model = DPSCORegressor(**params)
        y = X[:, 0] / 4
    model.set_params(epsilon=epsilon, budget=budget)
    with pytest.raises(ValueError, match=message):
        model.fit(X / 10, y)
    if budget is not None:
        assert budget.ledger == []


def test_public_checks_are_registered():
    # Every option has a registry constraint (checked before the reservation),
    # and the checks that relate options to the problem are registered.
    for name in ("dp_gd", "dp_sgd", "dp_svrg", "dp_svrg_pp", "dp_accmd"):
        spec = solvers_module.SOLVERS[name]
        assert set(spec.constraints_of(spec.options)) == set(spec.options), name
    for name in ("dp_gd", "dp_svrg", "dp_accmd"):
        assert solvers_module.SOLVERS[name].check is not None, name


def test_divergence_is_a_public_error_and_the_fit_stays_charged():
    """A diverging fit (iterates computed from noisy releases only) fails after the reservation.

    Before the reservation protocol such a fit spent nothing; now its ledger
    entry stands, marked failed, and the ConvergenceError (a function of the
    released values) keeps its message.
    """
    X, y = make_classification(
        n_samples=200, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    budget = PrivacyBudget(5.0, 1e-5)
    with pytest.raises(ConvergenceError, match="diverged"):
        DPLogisticRegression(
            solver="dp_gd",
            learning_rate=1e30,
            max_iter=40,
            classes=[0, 1],
            budget=budget,
            random_state=0,
            solver_options={"momentum": None, "output": "last"},
        ).fit(X / 10, y)
    assert [(e.status, e.error) for e in budget.ledger] == [("failed", "ConvergenceError")]


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd"])
def test_a_diverging_run_stops_at_its_first_non_finite_iterate(solver):
    """No release after the first non-finite iterate: the public divergence error comes first,
    so no non-finite point reaches the gateway as a pre-noise value."""
    X, y = make_classification(
        n_samples=200, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    model = DPLogisticRegression(
        solver=solver,
        learning_rate=1e30,
        max_iter=40,
        classes=[0, 1],
        random_state=0,
        solver_options={"momentum": None},
    )
    with trace_releases() as trace, pytest.raises(ConvergenceError, match="diverged"):
        model.fit(X / 10, y)
    steps = [r for r in trace.releases if r.label == "clipped gradient sum"]
    assert 1 < len(steps) < 40
    assert all(np.all(np.isfinite(r.value)) for r in steps)


def test_svrg_calibration_failure_is_a_public_error_and_stays_charged():
    """The plan needs the DP count (for the sampling rate): a calibration that fails then
    fails after the reservation, with a public message (no private value in it)."""
    X, y = make_classification(
        n_samples=100, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    budget = PrivacyBudget(5.0, 1e-5)
    with pytest.raises(ValueError, match="cannot be calibrated for delta=1e-300"):
        DPLogisticRegression(
            solver="dp_svrg",
            delta=1e-300,
            C=0.1,
            max_iter=2,
            classes=[0, 1],
            budget=budget,
            random_state=0,
        ).fit(X / 10, y)
    assert [(e.status, e.error) for e in budget.ledger] == [("failed", "ValueError")]


@pytest.mark.parametrize(
    "solver, kwargs, key",
    [
        # The settings of test_every_release_and_sample_goes_through_the_gateway (cached calibrations).
        (dp_svrg, dict(alpha=0.05, max_iter=2, batch_size=10, inner_steps=4), "snapshot_grad_norm"),
        (
            dp_svrg_pp,
            dict(alpha=0.05, max_iter=2, batch_size=10, inner_steps=4),
            "snapshot_grad_norm",
        ),
        (dp_accmd, dict(alpha=0.0, radius=2.0, max_iter=6), "grad_norm"),
        (dp_gd, dict(alpha=0.0, max_iter=4), "grad_norm"),
    ],
    ids=lambda v: getattr(v, "__name__", v if isinstance(v, str) else ""),
)
def test_progress_lines_print_released_values_only(capsys, solver, kwargs, key):
    """With every release replaced by zeros, the printed gradient norms are 0.

    The true gradients are not: a line computed from the exact private
    gradient (or from noise drawn outside the gateway) would print something else.
    """
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    data = _bounded(X / 3, np.where(y == 1, 1.0, -1.0))
    with trace_releases(substitute=lambda release: np.zeros(np.shape(release.output))):
        result = solver(
            data,
            LOGISTIC,
            n_outputs=1,
            epsilon=1.0,
            delta=1e-5,
            random_state=0,
            verbose=2,
            **kwargs,
        )
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == result.n_iter
    for line in lines:
        assert f"{key}=0 " in line, line


def test_info_counts_use_the_public_row_count():
    """``gradient_evaluations`` comes from ``n_public`` (the DP count), never the true n."""
    X, y = make_classification(
        n_samples=100, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    y = np.where(y == 1, 1.0, -1.0)
    data = bound_data(
        X / 3, y, fit_intercept=False, data_norm=1.0, n_public=137.0, normalizer=150.0
    )
    # Without noise: the counts do not depend on epsilon.
    common = dict(n_outputs=1, epsilon=math.inf, delta=1e-5, random_state=0)
    result = dp_gd(data, LOGISTIC, alpha=0.0, max_iter=3, **common)
    assert result.info == {"gradient_evaluations": 137.0 * 3}
    result = dp_accmd(data, LOGISTIC, alpha=0.0, radius=1.0, max_iter=5, **common)
    assert result.info == {"gradient_evaluations": 137.0 * 5}
    for solver in (dp_svrg, dp_svrg_pp):
        result = solver(
            data, LOGISTIC, alpha=0.05, max_iter=2, batch_size=10, inner_steps=3, **common
        )
        details = result.plan.details
        n_inner = sum(details["epoch_lengths"])
        expected = 137.0 * (2 + 2 * details["sampling_probability"] * n_inner)
        assert result.info["gradient_evaluations"] == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------
# Estimators
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        dict(solver="dp_svrg", C=0.1),
        dict(solver="dp_svrg_pp"),
        dict(solver="dp_svrg_pp", penalty="l1", C=0.05),
        dict(solver="dp_svrg_pp", penalty="elasticnet", l1_ratio=0.5),
        dict(solver="dp_accmd", penalty=None, radius=4.0),
        dict(solver="dp_accmd", penalty=None, radius=4.0, constraint="l1"),
        dict(solver="dp_gd", solver_options={"schedule": "pl"}, C=0.1),
        dict(solver="dp_gd", solver_options={"schedule": "gradient_norm"}),
    ],
)
def test_logistic_private_fits_spend_a_planned_event(monkeypatch, params):
    """The solver's event is one its plan gave from public inputs before the solver ran.

    The estimators first release a DP row count; a plan that needs it (all of
    these do, for the sampling rate or a step count) is None at the budget check
    (basic composition decides there) and is then computed with the count when
    the solver's share of epsilon is chosen.
    """
    X, y = make_classification(
        n_samples=3000, n_features=5, n_informative=3, class_sep=2.0, random_state=0
    )
    X = X / 4.0
    budget = PrivacyBudget(10.0, 1e-5, composition="basic")
    name = params["solver"]
    spec = solvers_module.SOLVERS[name]
    planned = []

    def spy(*args, **kwargs):
        plan = spec.plan(*args, **kwargs)
        planned.append(None if plan is None else plan.event)
        return plan

    monkeypatch.setitem(_registry._REGISTRY, name, dataclasses.replace(spec, plan=spy))
    model = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], budget=budget, random_state=0, data_norm=2.0, **params
    ).fit(X, y)
    count_event, solver_event = model.dp_event_.events
    assert isinstance(count_event, dpe.LaplaceDpEvent)
    assert solver_event in planned
    assert budget.ledger[0].event == model.dp_event_
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9
    assert model.score(X, y) > LogisticRegression().fit(X, y).score(X, y) - 0.05


def test_multiclass_and_sparse_svrg(classification):
    X, y = make_classification(
        n_samples=300, n_features=6, n_informative=4, n_classes=3, random_state=0
    )
    X = X / 4.0
    dense = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_svrg_pp",
        classes=[0, 1, 2],
        data_norm=3.0,
        random_state=0,
    ).fit(X, y)
    sparse = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_svrg_pp",
        classes=[0, 1, 2],
        data_norm=3.0,
        random_state=0,
    ).fit(sp.csr_matrix(X), y)
    assert dense.coef_.shape == (3, 6)
    np.testing.assert_allclose(dense.coef_, sparse.coef_, atol=1e-10)
    assert dense.score(X, y) > 0.7


def test_regressor_solvers_private(classification):
    X, y = make_regression(n_samples=500, n_features=4, noise=5.0, random_state=0)
    X, y = X / 6.0, y / 60.0
    for params in [
        dict(solver="dp_svrg", alpha=0.1),
        dict(solver="dp_svrg", loss="huber", alpha=0.1),
        dict(solver="dp_svrg_pp", penalty="l1", alpha=1e-3),
        dict(solver="dp_accmd", penalty=None, radius=2.0, constraint="l1"),
    ]:
        model = DPSCORegressor(epsilon=2.0, y_bound=3.0, data_norm=2.0, random_state=0, **params)
        model.fit(X, y)
        assert model.solver_ == params["solver"]
        assert epsilon_of_event(model.dp_event_, 1e-5) <= 2.0 + 1e-9
        assert np.all(np.isfinite(model.predict(X)))


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(solver="dp_svrg", penalty=None), "penalty=None"),
        (dict(solver="dp_svrg", penalty="l1"), "penalty='l1'"),
        (dict(solver="dp_accmd", penalty=None), "constraint=None"),
        (dict(solver="dp_accmd", radius=1.0), "penalty='l2'"),
        (dict(solver="dp_svrg_pp", radius=1.0), "constraint='l2'"),
    ],
)
def test_solvers_refuse_what_their_analysis_does_not_cover(classification, params, message):
    X, y = classification
    with pytest.raises(ValueError, match=message):
        DPLogisticRegression(classes=[0, 1], **params).fit(X, y)


def test_regressor_refusals(classification):
    X, y = make_regression(n_samples=100, n_features=3, random_state=0)
    with pytest.raises(ValueError, match="strongly convex"):
        DPSCORegressor(solver="dp_svrg", alpha=0.0).fit(X, y)
    with pytest.raises(ValueError, match="loss='absolute'"):
        DPSCORegressor(solver="dp_svrg_pp", loss="absolute").fit(X, y)
    with pytest.raises(ValueError, match="pl_constant"):
        DPSCORegressor(solver="dp_gd", penalty=None, solver_options={"schedule": "pl"}).fit(X, y)


def test_auto_picks_these_solvers_only_where_nothing_else_fits(classification):
    X, y = classification
    fit = lambda **p: DPLogisticRegression(classes=[0, 1], random_state=0, **p).fit(X, y)
    assert fit().solver_ == "dp_newton"  # second order for L2 / none
    assert fit(penalty="l1").solver_ == "dp_svrg_pp"  # dp_cd needs feature_bound
    assert fit(penalty="l1", feature_bound=1.0).solver_ == "dp_cd"
    assert fit(penalty="elasticnet", l1_ratio=0.5).solver_ == "dp_svrg_pp"
    assert fit(penalty=None, radius=3.0, constraint="l1").solver_ == "dp_accmd"
    assert fit(penalty=None, radius=3.0).solver_ == "dp_gd"  # L2 ball: projected dp_gd
    Xr, yr = make_regression(n_samples=200, n_features=3, random_state=0)
    reg = lambda **p: DPSCORegressor(random_state=0, **p).fit(Xr / 10, yr / 100)
    assert reg().solver_ == "dp_newton"
    assert reg(penalty="l1").solver_ == "dp_ssp"  # least squares: sufficient statistics
    assert reg(loss="huber", penalty="l1").solver_ == "dp_svrg_pp"
    assert reg(penalty=None, radius=1.0, constraint="l1").solver_ == "dp_accmd"
    assert reg(loss="absolute").solver_ == "dp_sgd"


# --------------------------------------------------------------------------
# The paper's explicit bounds hold for the implemented noise (any sigma)
# --------------------------------------------------------------------------


def _logistic_setup(n=200, d=3, alpha=0.0):
    X, y = make_classification(n_samples=n, n_features=d, n_redundant=0, random_state=4)
    X = X / (2 * _max_norm(X))
    data = _bounded(X, np.where(y == 1, 1.0, -1.0), data_norm=0.5)
    full = data.X

    def value(W):
        return float(np.mean(np.logaddexp(0, -data.y * (full @ W)))) + 0.5 * alpha * float(W @ W)

    def gradient(W):
        return full.T @ (-data.y / (1 + np.exp(data.y * (full @ W)))) / n + alpha * W

    best = minimize(
        lambda w: (value(w), gradient(w)),
        np.zeros(d),
        jac=True,
        method="BFGS",
        options={"gtol": 1e-12},
    ).fun
    return data, value, gradient, best


def test_dp_gd_random_iterate_meets_the_gradient_norm_bound():
    """E ||grad F(x_tau)||^2 <= 2 L e_0 / T + d s^2 (B.9, eqs. 85-87), s the noise std of the mean gradient."""
    data, value, gradient, best = _logistic_setup()
    T, eps = 8, 2.0
    norms, details = [], None
    for seed in range(300):
        result = dp_gd(
            data,
            LOGISTIC,
            n_outputs=1,
            alpha=0.0,
            epsilon=eps,
            delta=1e-5,
            max_iter=T,
            schedule="gradient_norm",
            random_state=seed,
        )
        norms.append(np.sum(gradient(result.coef[:, 0]) ** 2))
        details = result.plan.details
    L = 1.0 / details["step_size"]
    d, n = data.n_columns, data.n_samples
    bound = 2 * L * (value(np.zeros(d)) - best) / T + d * (details["noise_std"] / n) ** 2
    assert np.mean(norms) <= bound


def test_dp_gd_last_iterate_meets_the_pl_bound():
    """E F(x_T) - F* <= (1 - mu/L)^T e_0 + d s^2 / (2 mu) (B.8 with the geometric sum)."""
    alpha = 0.05
    data, value, gradient, best = _logistic_setup(alpha=alpha)
    T = 12
    gaps, details = [], None
    for seed in range(300):
        result = dp_gd(
            data,
            LOGISTIC,
            n_outputs=1,
            alpha=alpha,
            epsilon=2.0,
            delta=1e-5,
            max_iter=T,
            schedule="pl",
            random_state=seed,
        )
        gaps.append(value(result.coef[:, 0]) - best)
        details = result.plan.details
    L = 1.0 / details["step_size"]
    d, n = data.n_columns, data.n_samples
    bound = (1 - alpha / L) ** T * (value(np.zeros(d)) - best) + d * (
        details["noise_std"] / n
    ) ** 2 / (2 * alpha)
    assert np.mean(gaps) <= bound


def test_default_epoch_length_is_shared_by_nearby_counts():
    # A Laplace count of about 455 rows varies by a few percent; the default
    # epoch length (which grows with C n) takes at most two values over +-4%.
    from sklearn_dp.solvers._svrg_schedule import _ceil_to_grid

    lengths = {
        plan_call(
            "dp_svrg",
            n,
            11,
            1.0,
            1e-5,
            loss=LOGISTIC,
            row_norm_bound=1.0,
            alpha=1.0 / n,
            max_iter=3,
        ).details["inner_steps"]
        for n in np.linspace(437.0, 473.0, 13)
    }
    assert len(lengths) <= 2
    assert [_ceil_to_grid(v) for v in (1, 1.5, 9.9, 10, 10.01, 4801)] == [1, 2, 10, 10, 12, 5012]


def test_dp_svrg_default_epochs_follow_rows_times_epsilon():
    """Few rows or a small epsilon: fewer noisy epochs (a default never below trivial)."""
    from sklearn_dp.solvers._svrg_schedule import DEFAULT_SVRG_EPOCHS, default_svrg_epochs

    assert default_svrg_epochs(455, 0.1) == 1
    assert default_svrg_epochs(455, 1.0) == 1
    assert default_svrg_epochs(455, 5.0) == 5
    assert default_svrg_epochs(200_000, 0.2) == DEFAULT_SVRG_EPOCHS
    assert default_svrg_epochs(None, 1.0) == DEFAULT_SVRG_EPOCHS
    from sklearn_dp._losses import BinaryLogisticLoss

    plan = plan_call(
        "dp_svrg", 455, 31, 0.5, 1e-5, alpha=0.01, loss=BinaryLogisticLoss(), row_norm_bound=1.0
    )
    assert len(plan.details["epoch_lengths"]) == 1


def test_a_plan_from_the_released_count_is_calibrated_once_per_fit(monkeypatch):
    """Its share is the basic-composition floor, so no share search (each candidate a calibration)."""
    import functools

    import numpy as np
    from sklearn.datasets import make_classification

    from sklearn_dp import DPLogisticRegression
    from sklearn_dp.solvers import _svrg

    seen = []
    original = _svrg.svrg_noise_multipliers.__wrapped__

    def counting(*args):
        seen.append(args)
        return original(*args)

    monkeypatch.setattr(_svrg, "svrg_noise_multipliers", functools.lru_cache(16)(counting))
    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    X = X / np.abs(X).max()
    DPLogisticRegression(
        epsilon=1.0, delta=1e-5, solver="dp_svrg", data_norm=2.0, random_state=0
    ).fit(X, y)
    assert len(seen) == 1


# --------------------------------------------------------------------------
# epsilon = inf: the default schedule stops once converged (nothing is private)
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solver, cap",
    [("dp_svrg", _svrg.DEFAULT_SVRG_EPOCHS_NOISELESS), ("dp_svrg_pp", None)],
)
def test_svrg_noiseless_default_stops_early_and_a_given_max_iter_runs_in_full(solver, cap):
    X, y = make_classification(n_samples=2000, n_features=4, n_redundant=0, random_state=0)
    X = X / 4.0
    common = dict(solver=solver, C=0.05, data_norm=_max_norm(X), classes=[0, 1], random_state=0)
    stopped = DPLogisticRegression(epsilon=math.inf, **common).fit(X, y)
    cap = cap or _svrg.DEFAULT_SVRG_PP_EPOCHS_NOISELESS
    assert stopped.n_iter_ < cap  # stopped early (a convergence test: epsilon=inf only)
    reference = LogisticRegression(C=0.05, tol=1e-12, max_iter=10_000).fit(X, y)
    np.testing.assert_allclose(stopped.coef_, reference.coef_, rtol=1e-2, atol=1e-3)
    # A given max_iter runs in full.
    given = DPLogisticRegression(epsilon=math.inf, max_iter=cap, **common).fit(X, y)
    assert given.n_iter_ == cap


@pytest.mark.parametrize("solver", [dp_svrg, dp_svrg_pp])
def test_svrg_private_default_schedule_runs_in_full(solver):
    """With noise nothing stops early: every planned release happens, n_iter is the plan's."""
    X, y = make_classification(n_samples=400, n_features=4, random_state=0)
    data = _bounded(X / 4, np.where(y == 1, 1.0, -1.0))
    with trace_releases() as trace:
        result = solver(
            data, LOGISTIC, n_outputs=1, alpha=0.05, epsilon=2.0, delta=1e-5, random_state=0
        )
    lengths = result.plan.details["epoch_lengths"]
    assert result.n_iter == len(lengths)
    assert len(trace.releases) == len(lengths) + sum(lengths) == result.plan.n_steps


# --------------------------------------------------------------------------
# Default epochs: the plan the estimator makes is the plan the solver runs
# --------------------------------------------------------------------------


_SVRG_CASES = [
    ("DPLasso", "dp_svrg_pp", dict(alpha=0.1)),
    ("DPLasso", "dp_svrg_pp", dict(alpha=0.1, fit_intercept=False)),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5)),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5, loss="huber")),
    ("DPSCORegressor", "dp_svrg", dict(alpha=0.5, penalty="elasticnet", l1_ratio=0.5)),
    ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l1")),
    ("DPSCORegressor", "dp_svrg_pp", dict(penalty="l2", y_bound=100.0, data_norm=10.0)),
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("estimator, solver, params", _SVRG_CASES)
@pytest.mark.parametrize("epsilon", [0.1, 5.0])
def test_svrg_default_epochs_run_exactly_the_recorded_plan(estimator, solver, params, epsilon):
    """The quiet default epochs: the plan the estimator makes is the plan the solver runs and records."""
    spec = solvers_module.SOLVERS[solver]
    original_plan, original_function = spec.plan, spec.run
    estimator_plans, results = [], []

    @functools.wraps(original_plan)
    def plan(n_samples, *args, **kwargs):
        made = original_plan(n_samples, *args, **kwargs)
        if n_samples is not None and made is not None:
            estimator_plans.append(made)
        return made

    def function(*args, **kwargs):
        result = original_function(*args, **kwargs)
        results.append(result)
        return result

    object.__setattr__(spec, "plan", plan)
    object.__setattr__(spec, "run", function)
    try:
        X, y = regression_data(2000, 5, coef=np.linspace(0.5, -0.5, 5))
        model = {"DPLasso": DPLasso, "DPSCORegressor": DPSCORegressor}[estimator](
            epsilon=epsilon, delta=1e-5, solver=solver, random_state=0, **params
        )
        with trace_releases() as trace:
            model.fit(X, y)
    finally:
        object.__setattr__(spec, "plan", original_plan)
        object.__setattr__(spec, "run", original_function)
    (result,) = results
    lengths = result.plan.details["epoch_lengths"]
    # The estimator's last in-phase plan (the share rule's) is the solver's.
    assert estimator_plans[-1].details["epoch_lengths"] == lengths
    assert estimator_plans[-1].event == result.plan.event
    # Every epoch planned runs (no stop with noise), each release traced once.
    assert model.n_iter_ == len(lengths)
    svrg = [r for r in trace.releases if "svrg" in (r.label or "")]
    assert len(svrg) == len(lengths) + sum(lengths)
    assert model.dp_event_.events[-1] == result.plan.event
