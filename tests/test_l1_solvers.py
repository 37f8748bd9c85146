"""l1-geometry solvers: exact Bregman steps, noise scales, one pass, sparsity, the optimum."""

import math

import numpy as np
import pytest
from _helpers import without_bound_fallback
from scipy.optimize import minimize

import sklearn_dp.solvers._frank_wolfe as fw_module
import sklearn_dp.solvers._vr_frank_wolfe as vr_module
from sklearn_dp import accounting
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.accounting import epsilon_of_event
from sklearn_dp.solvers import SOLVERS, plan_call
from sklearn_dp.solvers._frank_wolfe import frank_wolfe_step_epsilon, vertex_scales, zcdp_budget
from sklearn_dp.solvers._gradient_descent import gradient_bound
from sklearn_dp.solvers._l1_geometry import make_domain
from sklearn_dp.solvers._mirror_descent import (
    mirror_descent_phases,
)
from sklearn_dp.solvers._pnorm import (
    bregman_step,
    default_p,
    pnorm,
    pnorm_mirror_gradient,
)
from sklearn_dp.solvers._vr_frank_wolfe import vr_frank_wolfe_schedule
from sklearn_dp.testing._l1_reference import (
    in_domain,
    l1_objective,
    pnorm_bregman_divergence,
    reference_solve,
)

# --------------------------------------------------------------------------
# The exact Bregman step
# --------------------------------------------------------------------------


def _random_step_problem(rng, trial):
    d = int(rng.integers(2, 30))
    p = [1.2, default_p(d), 1.5, 2.0, 1.05, default_p(10_000)][trial % 6]
    kappa = 1 / (2 * (p - 1)) * rng.uniform(0.5, 2)
    ball = np.ones(d, bool)
    box = np.full(d, np.inf)
    if trial % 2:
        ball[-1] = False
        box[-1] = rng.uniform(0.2, 2)
    radius = rng.uniform(0.3, 2)
    c = rng.normal(size=d) * (rng.uniform(size=d) < 0.5)
    c[~ball] = np.clip(c[~ball], -box[~ball], box[~ball])
    if np.abs(c[ball]).sum() > radius:
        c[ball] *= radius / np.abs(c[ball]).sum() * rng.uniform(0.2, 1)
    if trial % 3 == 0:
        c[:] = 0
    s = rng.normal(size=d) * rng.choice([1e-3, 0.1, 1, 10, 1e3])
    m = (rng.uniform(size=d) < 0.5) * rng.uniform(0, 1, size=d) * (trial % 4 == 0)
    R = rng.choice([np.inf, rng.uniform(0.01, 1)])
    return dict(s=s, c=c, kappa=kappa, p=p, ball=ball, radius=radius, box=box, m=m, R=R)


def _primal(x, s, c, kappa, p, m):
    return -s @ x + kappa * pnorm(x - c, p) ** 2 + m @ np.abs(x)


def _dual(w, s, c, kappa, p, ball, radius, box, m, R):
    """Lagrange dual of the step at the dual point w (conjugate of the lp-ball-restricted map)."""
    q = p / (p - 1)
    wq = pnorm(w, q)
    conjugate = wq**2 / (4 * kappa) if wq / (2 * kappa) <= R else R * wq - kappa * R**2
    excess = np.maximum(np.abs(w - s) - m, 0.0)
    inner = -radius * np.max(excess[ball], initial=0.0) - np.sum(box[~ball] * excess[~ball])
    return inner - w @ c - conjugate


def _solve(pb):
    return bregman_step(
        pb["s"],
        pb["c"],
        kappa=pb["kappa"],
        p=pb["p"],
        ball=pb["ball"],
        radius=pb["radius"],
        box=pb["box"],
        l1_weights=pb["m"],
        p_radius=pb["R"],
    )


def test_bregman_step_duality_gap_certifies_optimality():
    # Weak duality: primal(x) - dual(w) >= primal(x) - optimum >= 0 for any feasible x
    # and any w; a gap of ~1e-12 certifies that x is optimal to that precision.
    rng = np.random.default_rng(1)
    for trial in range(400):
        pb = _random_step_problem(rng, trial)
        res = _solve(pb)
        x = res.x
        assert np.abs(x[pb["ball"]]).sum() <= pb["radius"] * (1 + 1e-12)
        assert np.all(np.abs(x[~pb["ball"]]) <= pb["box"][~pb["ball"]] * (1 + 1e-12))
        assert pnorm(x - pb["c"], pb["p"]) <= pb["R"] * (1 + 1e-12)
        primal = _primal(x, pb["s"], pb["c"], pb["kappa"], pb["p"], pb["m"])
        dual = _dual(
            res.w,
            pb["s"],
            pb["c"],
            pb["kappa"],
            pb["p"],
            pb["ball"],
            pb["radius"],
            pb["box"],
            pb["m"],
            pb["R"],
        )
        scale = abs(primal) + np.max(np.abs(pb["s"])) * pb["radius"]
        assert -1e-10 <= (primal - dual) / scale <= 1e-10, trial


def test_bregman_step_kkt_conditions():
    # Stationarity of each coordinate with the returned multipliers, and
    # complementary slackness: mu > 0 only on the l1 sphere, p tau = 2 kappa rho^(2-p)
    # unless the lp ball is active.
    rng = np.random.default_rng(2)
    for trial in range(300):
        pb = _random_step_problem(rng, trial)
        pb["R"] = np.inf if trial % 3 else pb["R"]
        res = _solve(pb)
        x, p, c = res.x, pb["p"], pb["c"]
        ball = pb["ball"]
        l1 = np.abs(x[ball]).sum()
        if res.mu > 0:
            assert l1 == pytest.approx(pb["radius"], rel=1e-9)
        rho = pnorm(x - c, p)
        if rho < pb["R"] * (1 - 1e-9) and rho > 0:
            assert p * res.tau == pytest.approx(2 * pb["kappa"] * rho ** (2 - p), rel=1e-8)
        # In dual coordinates (w = p tau sign(u)|u|^(p-1)), stationarity reads
        # s - w in (m + mu) * subdifferential of |x| on ball coordinates.
        weights = pb["m"] + res.mu * ball
        residual = pb["s"] - res.w
        scale = np.max(np.abs(pb["s"])) + 1.0
        on = ball & (x != 0)
        np.testing.assert_allclose(residual[on], (weights * np.sign(x))[on], atol=1e-9 * scale)
        off = ball & (x == 0)
        assert np.all(np.abs(residual[off]) <= weights[off] + 1e-9 * scale)


def test_bregman_step_matches_generic_solver():
    rng = np.random.default_rng(3)
    for trial in range(20):
        d = 5
        p = [1.3, 1.6, 2.0][trial % 3]
        kappa = 1 / (2 * (p - 1))
        s = rng.normal(size=d) * 3
        c = np.zeros(d)
        ball = np.ones(d, bool)
        res = bregman_step(s, c, kappa=kappa, p=p, ball=ball, radius=1.0)

        def objective(z):
            x = z[:d] - z[d:]
            return -s @ x + kappa * pnorm(x, p) ** 2

        cons = [{"type": "ineq", "fun": lambda z: 1.0 - z.sum()}]
        ref = minimize(
            objective,
            np.full(2 * d, 0.05),
            method="SLSQP",
            bounds=[(0, None)] * 2 * d,
            constraints=cons,
            options=dict(ftol=1e-15, maxiter=1000),
        )
        ours = _primal(res.x, s, c, kappa, p, np.zeros(d))
        assert ours <= ref.fun + 1e-7 * abs(ref.fun)  # SLSQP stops within ~1e-9 of the constraint


def test_mirror_map_round_trip_and_strong_convexity():
    rng = np.random.default_rng(4)
    for p in (default_p(1000), 1.5, 2.0):
        q = p / (p - 1)
        kappa = 1 / (2 * (p - 1))
        for _ in range(50):
            u, v = rng.normal(size=20), rng.normal(size=20)
            theta = pnorm_mirror_gradient(u, p, kappa)
            # grad psi*(theta) = ||theta||_q^(2-q) sign(theta)|theta|^(q-1) / (2 kappa)
            back = (
                pnorm(theta, q)
                * np.sign(theta)
                * (np.abs(theta) / pnorm(theta, q)) ** (q - 1)
                / (2 * kappa)
            )
            np.testing.assert_allclose(back, u, rtol=1e-9, atol=1e-12)
            # psi = ||.||_p^2 / (2 (p-1)) is 1-strongly convex in ||.||_p.
            assert (
                pnorm_bregman_divergence(u, v, 0.0, p, kappa) >= 0.5 * pnorm(u - v, p) ** 2 - 1e-9
            )


def test_default_p_is_one_plus_one_over_ln_d():
    assert default_p(1000) == pytest.approx(1 + 1 / math.log(1000))
    assert default_p(2) == 2.0
    z = np.random.default_rng(0).normal(size=1000)
    # ||z||_1 <= d^(1 - 1/p) ||z||_p < e ||z||_p (erratum E1: e, not 2, with ln).
    assert np.abs(z).sum() <= math.e * pnorm(z, default_p(1000))


# --------------------------------------------------------------------------
# Noise scales and sensitivities
# --------------------------------------------------------------------------


def _sparse_problem(n=400, d=30, seed=0, intercept=True):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    w = np.zeros(d)
    w[:3] = [0.5, -0.3, 0.2]
    y = np.clip(X @ w + 0.2 + 0.05 * rng.normal(size=n), -1, 1)
    data = bound_data(X, y, fit_intercept=intercept, geometry="linf", feature_bound=1.0)
    return data, get_loss("squared", residual_bound=2.0)


def test_frank_wolfe_pure_noise_scales_exact():
    data, loss = _sparse_problem(n=400, d=30)
    radius, box = 1.5, 2.5
    res = SOLVERS["frank_wolfe"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=2.0,
        delta=0.0,
        max_iter=10,
        radius=radius,
        intercept_bound=box,
        clip_norm=0.8,
        random_state=0,
    )
    eps0 = 2.0 / 10 * (1 - 1e-12)
    assert res.plan.details["step_epsilon"] == pytest.approx(eps0, rel=1e-15)
    unit = 0.8 / 400  # l-inf change of the gradient average from one row
    # split eps0 between the ball (60 candidates) and the intercept (2) ~ sqrt(Delta ln m)
    w_ball, w_box = math.sqrt(radius * unit * math.log(60)), math.sqrt(box * unit * math.log(2))
    eps_ball, eps_box = eps0 * w_ball / (w_ball + w_box), eps0 * w_box / (w_ball + w_box)
    ball_scale, box_scales = res.plan.details["gumbel_scales"]
    assert ball_scale == pytest.approx(2 * radius * unit / eps_ball, rel=1e-12)
    assert box_scales[0] == pytest.approx(2 * box * unit / eps_box, rel=1e-12)
    assert res.plan.details["sensitivity"] == pytest.approx((radius + box) * unit)
    assert epsilon_of_event(res.dp_event, 0.0) <= 2.0
    assert epsilon_of_event(res.dp_event, 0.0) == pytest.approx(2.0, rel=1e-9)


def test_frank_wolfe_zcdp_accounting():
    eps0, event = frank_wolfe_step_epsilon(1.0, 1e-6, 200)
    rho = zcdp_budget(1.0, 1e-6)
    assert eps0 == pytest.approx(math.sqrt(8 * rho / 200))
    assert isinstance(event.event, accounting.dpe.ZCDpEvent)
    assert event.event.rho == pytest.approx(eps0**2 / 8)
    eps = epsilon_of_event(event, 1e-6)
    assert 0.99 < eps <= 1.0
    # zCDP wins over pure composition for many steps, loses for a single one.
    assert eps0 > 1.0 / 200
    eps1, event1 = frank_wolfe_step_epsilon(1.0, 1e-6, 1)
    assert eps1 == pytest.approx(1.0, rel=1e-9) and accounting.is_pure_event(event1)


def test_vertex_scale_is_half_the_seed_lambda():
    # Seed Theorem 6 (replace-one, correction terms clipped at L): lambda_t = 2 L D 2^t / (b eps)
    # with D = 2r.  Add/remove halves it: 2^(t+1) r C / (b eps).
    data, _ = _sparse_problem(n=50, d=1000, intercept=False)
    domain = make_domain(
        data, radius=1.0, intercept_bound=None, alpha=0.0, l1_ratio=0.0, solver="t"
    )
    b, L, eps = 2517, 1.0, 1.0
    for t in (1, 2, 3, 4):
        scale, _ = vertex_scales(domain, unit=L / b, eps0=eps / 2**t)
        seed = 2 * L * 2.0 * 2**t / (b * eps)
        assert scale == pytest.approx(seed / 2, rel=1e-12)
    assert 2 * L * 2.0 * 2 / (b * eps) == pytest.approx(3.18e-3, rel=1e-3)  # seed's worked example


def test_vr_frank_wolfe_schedule_fills_the_data():
    for n in (1000, 10_000, 100_000):
        T, b = vr_frank_wolfe_schedule(n, 500, 1.0, 0.0)
        assert b % 2**T == 0 and b >= 2**T
        used = b * (T + T * (T + 1) / 4)
        assert used <= n
        # the next multiple of 2^T would not fit: the data is filled
        assert (b + 2**T) * (T + T * (T + 1) / 4) > n
        # the seed's b = n / log2(n)^2 uses a few percent of it
        assert used > 5 * (n / math.log2(n) ** 2) * (T + T * (T + 1) / 4)
    plan = plan_call("vr_frank_wolfe", 10_000, 100, 2.0, 0.0, n_phases=3)
    assert plan.details["leaf_epsilons"] == [2.0 / 2, 2.0 / 4, 2.0 / 8]
    assert plan.n_steps == 2**4 - 2
    approx = plan_call("vr_frank_wolfe", 10_000, 100, 2.0, 1e-6, n_phases=3, schedule="approximate")
    # One scale for every leaf, set by the deepest vertices: never below the pure one's.
    assert approx.details["leaf_epsilons"] == [2.0 / 8] * 3
    assert epsilon_of_event(approx.event, 1e-6) <= 2.0


def test_mirror_descent_noise_multiplier_matches_accountant():
    plan = plan_call("mirror_descent", 2000, 101, 1.0, 1e-6)
    (phase,) = plan.details["phases"]
    b = math.ceil(
        max(math.sqrt(2000 / math.log(101)), math.sqrt(101) / 1.0, 2000 / math.sqrt(2000))
    )
    assert phase.batch == b
    assert phase.steps == min(math.ceil((2000 / b) ** 2), 2000)
    sigma = accounting.subsampled_gaussian_noise_multiplier(1.0, 1e-6, b / 2000, phase.steps)
    assert plan.noise_multiplier == pytest.approx(sigma)
    assert plan.event == accounting.subsampled_gaussian_steps_event(sigma, b / 2000, phase.steps)


def test_localized_phases_follow_the_seed_schedule():
    n, d, eps = 4000, 101, 2.0
    phases = mirror_descent_phases("localized", n, d, eps)
    for ph in phases:
        i = ph.index
        n_i = math.floor(n / 2**i)
        # E9: sqrt(d) / eps_i; at least n_i / sqrt(T_max) so that T = n_i^2 / b_i^2 fits the cap
        b_i = math.ceil(
            max(math.sqrt(n_i / math.log(d)), math.sqrt(d) / (eps / 2**i), n_i / math.sqrt(2000))
        )
        assert ph.block == n_i and ph.batch == min(b_i, n_i)
        assert ph.steps == min(math.ceil((n_i / ph.batch) ** 2), 2000)
        assert ph.weight == 2 ** (i - 1)
    plan = plan_call("localized_mirror_descent", n, d, eps, 1e-6)
    assert 0.97 * eps <= epsilon_of_event(plan.event, 1e-6) <= eps
    assert plan.details["noise_multipliers"] == pytest.approx(
        [plan.noise_multiplier * ph.weight for ph in phases]
    )


def test_mirror_descent_needs_delta():
    data, loss = _sparse_problem()
    with pytest.raises(ValueError, match="needs delta > 0"):
        SOLVERS["mirror_descent"].run(
            data, loss, n_outputs=1, alpha=0.0, epsilon=1.0, delta=0.0, radius=1.0
        )


def test_clip_bounds_every_gradient_in_l_infinity():
    # Adversarial rows (huge features) are clipped entrywise, and each per-sample
    # gradient is clipped to C in l-infinity: the gradient average moves by <= C / n.
    data, loss = _sparse_problem(n=100, d=5)
    X = data.X.copy()
    X[0] = 1e9
    y = data.y.copy()
    y[0] = 1e9
    bounded = bound_data(
        X[:, :-1], np.clip(y, -1, 1), fit_intercept=True, geometry="linf", feature_bound=1.0
    )
    assert np.abs(bounded.X).max() <= 1.0
    from _helpers import linf_row_norms

    from sklearn_dp._clipped_sums import clipped_sum

    w = np.full(bounded.n_columns, 0.3)
    full = clipped_sum(bounded.X, bounded.y, w, loss, 0.5, linf_row_norms(bounded.X))
    without = clipped_sum(bounded.X[1:], bounded.y[1:], w, loss, 0.5, linf_row_norms(bounded.X[1:]))
    assert np.max(np.abs(full - without)) <= 0.5 + 1e-12


# --------------------------------------------------------------------------
# One pass, sparsity, feasibility
# --------------------------------------------------------------------------


def test_vr_frank_wolfe_is_one_pass():
    data, loss = _sparse_problem(n=3000, d=40)
    res = SOLVERS["vr_frank_wolfe"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=0.0,
        radius=1.0,
        intercept_bound=2.0,
        n_phases=4,
        random_state=0,
    )
    uses, allocation, sizes = (
        res.info["sample_uses"],
        res.info["allocation"],
        res.info["slot_sizes"],
    )
    T, b = res.plan.details["n_phases"], res.plan.details["root_batch"]
    assert uses.max() <= 2  # every row's gradient is evaluated at most twice
    # Slots in DFS order: per phase the root (b) and 2^t - 1 right children.
    roots = np.cumsum([0] + [2**t for t in range(1, T)])
    assert len(sizes) == sum(2**t for t in range(1, T + 1))
    assert np.all(sizes[roots] == b)
    in_root = np.isin(allocation, roots)
    unused = allocation == len(sizes)
    assert np.all(uses[in_root] == 1)
    assert np.all(uses[~in_root & ~unused] == 2)
    assert np.all(uses[unused] == 0)
    assert sizes.sum() == b * (T + T * (T + 1) / 4) <= 3000
    # right children at depth j hold b / 2^j rows: 2^(j-1) of them per depth
    for t in range(1, T + 1):
        right = sorted(vr_module._phase_sizes(t, b)[1:], reverse=True)
        expected = sorted(
            [b / 2**j for j in range(1, t + 1) for _ in range(2 ** (j - 1))], reverse=True
        )
        assert right == expected
    assert res.n_iter == 2 ** (T + 1) - 2


@pytest.mark.parametrize("solver", ["frank_wolfe", "vr_frank_wolfe"])
@pytest.mark.parametrize("alpha", [0.0, 0.01])
def test_frank_wolfe_gains_at_most_one_nonzero_per_step(monkeypatch, solver, alpha):
    data, loss = _sparse_problem(n=2000, d=50)
    vertices = []
    original = fw_module.select_vertex

    def recording(*args, **kwargs):
        vertex = original(*args, **kwargs)
        vertices.append(vertex)
        return vertex

    # Both solvers step through frank_wolfe's FrankWolfeSteps.
    monkeypatch.setattr(fw_module, "select_vertex", recording)
    options = dict(max_iter=30) if solver == "frank_wolfe" else dict(n_phases=3)
    options["output"] = "last"
    res = SOLVERS[solver].run(
        data,
        loss,
        n_outputs=1,
        alpha=alpha,
        l1_ratio=1.0,
        epsilon=5.0,
        delta=0.0,
        radius=1.0,
        intercept_bound=2.0,
        random_state=0,
        **options,
    )
    penalized = data.penalized
    w = np.zeros(data.n_columns)
    support = 0
    for k, vertex in enumerate(vertices, start=1):
        assert np.count_nonzero(vertex[penalized]) <= 1  # a vertex of the l1 ball (or 0)
        eta = 2.0 / (k + 1)
        w = (1 - eta) * w + eta * vertex
        new_support = np.count_nonzero(w[penalized])
        assert new_support <= support + 1
        support = new_support
        assert np.abs(w[penalized]).sum() <= 1.0 + 1e-12
    np.testing.assert_allclose(w, res.coef[:, 0], atol=1e-12)
    # The default output, the average of the second half of the iterates, has
    # the support of the last iterate (supports only grow along the run).
    vertices.clear()
    options["output"] = "tail_average"
    averaged = (
        SOLVERS[solver]
        .run(
            data,
            loss,
            n_outputs=1,
            alpha=alpha,
            l1_ratio=1.0,
            epsilon=5.0,
            delta=0.0,
            radius=1.0,
            intercept_bound=2.0,
            random_state=0,
            **options,
        )
        .coef[:, 0]
    )
    assert set(np.flatnonzero(averaged[penalized])) <= set(np.flatnonzero(w[penalized]))
    assert np.abs(averaged[penalized]).sum() <= 1.0 + 1e-12


# --------------------------------------------------------------------------
# epsilon = inf reaches the non-private optimum over the same polytope
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "alpha, l1_ratio, radius", [(0.0, 1.0, 0.6), (0.002, 1.0, 2.0), (0.01, 0.5, 1.0)]
)
def test_frank_wolfe_epsilon_inf_reaches_reference(alpha, l1_ratio, radius):
    data, loss = _sparse_problem(n=500, d=20)
    domain = make_domain(
        data, radius=radius, intercept_bound=1 + radius, alpha=alpha, l1_ratio=l1_ratio, solver="t"
    )
    ref = reference_solve(data, loss, domain)
    best = l1_objective(data, loss, ref, domain)
    res = SOLVERS["frank_wolfe"].run(
        data,
        loss,
        n_outputs=1,
        alpha=alpha,
        l1_ratio=l1_ratio,
        epsilon=math.inf,
        delta=0.0,
        max_iter=20_000,
        radius=radius,
        intercept_bound=1 + radius,
    )
    w = res.coef[:, 0]
    assert in_domain(domain, w)
    gap = l1_objective(data, loss, w, domain) - best
    # Frank-Wolfe: F(x_t) - F* <= 2 beta D^2 / (t + 2) (beta = 1 as |x_ij| <= 1, D the l1
    # diameter), so the average of the iterates t > T/2 is within 2 beta D^2 / (T/2 + 2).
    assert -1e-12 <= gap <= 2 * domain.diameter**2 / (10_000 + 2)
    assert gap < 1e-4


@pytest.mark.parametrize("p", [None, 1.5, 2.0])
def test_mirror_descent_epsilon_inf_reaches_reference(p):
    # Full batch, no noise, smooth loss: the average of T mirror-descent iterates
    # with step eta <= 1/beta_p is within D_psi(x*, 0) / (eta T) of the optimum.
    data, loss = _sparse_problem(n=500, d=20)
    radius = 0.6
    domain = make_domain(
        data, radius=radius, intercept_bound=1 + radius, alpha=0.0, l1_ratio=0.0, solver="t"
    )
    ref = reference_solve(data, loss, domain)
    best = l1_objective(data, loss, ref, domain)
    gaps = []
    for steps in (250, 1000):
        res = SOLVERS["mirror_descent"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=math.inf,
            delta=0.0,
            radius=radius,
            intercept_bound=1 + radius,
            batch_size=500,
            max_iter=steps,
            p=p,
            random_state=0,
        )
        w = res.coef[:, 0]
        assert in_domain(domain, w)
        q_p = res.plan.details["p"]
        d_psi = pnorm(ref, q_p) ** 2 / (2 * (q_p - 1))
        gap = l1_objective(data, loss, w, domain) - best
        assert -1e-12 <= gap <= d_psi / (res.plan.details["step_sizes"][0] * steps)
        gaps.append(gap)
    assert gaps[1] < gaps[0] / 2.5  # the O(1/T) rate
    assert gaps[1] < 2e-3


@pytest.mark.slow
def test_mirror_descent_epsilon_inf_reaches_reference_precisely():
    data, loss = _sparse_problem(n=500, d=20)
    domain = make_domain(data, radius=0.6, intercept_bound=1.6, alpha=0.0, l1_ratio=0.0, solver="t")
    best = l1_objective(data, loss, reference_solve(data, loss, domain), domain)
    res = SOLVERS["mirror_descent"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=0.6,
        intercept_bound=1.6,
        batch_size=500,
        max_iter=30_000,
        random_state=0,
    )
    assert 0 <= l1_objective(data, loss, res.coef[:, 0], domain) - best < 1e-4


@pytest.mark.parametrize("solver", ["frank_wolfe", "mirror_descent"])
def test_epsilon_inf_finds_the_vertex_of_the_smooth_lower_bound_family(solver):
    # Asi et al. (2021), Theorem 11's family: squared loss on the l1 ball of
    # radius D, ||a_i||_inf <= 1, b_i = a_i @ x* for a signed vertex x* (F* = 0).
    rng = np.random.default_rng(0)
    A = rng.choice([-1.0, 1.0], size=(300, 40))
    truth = np.zeros(40)
    truth[11] = -1.0
    data = bound_data(A, A @ truth, fit_intercept=False, geometry="linf", feature_bound=1.0)
    loss = get_loss("squared", residual_bound=2.0)
    extra = {"batch_size": 300} if solver == "mirror_descent" else {}
    res = SOLVERS[solver].run(
        data, loss, n_outputs=1, alpha=0.0, epsilon=math.inf, delta=0.0, radius=1.0,
        max_iter=2000, random_state=0, **extra,
    )  # fmt: skip
    w = res.coef[:, 0]
    assert np.abs(w).sum() <= 1.0 + 1e-9
    assert np.argmax(np.abs(w)) == 11 and w[11] < 0
    assert 0.5 * np.mean((A @ w - A @ truth) ** 2) < 1e-3


def test_vr_frank_wolfe_epsilon_inf_uses_every_row_and_converges():
    # Without noise nothing is spent: every tree vertex uses every row (exact
    # gradient estimates), over NONPRIVATE_VR_PHASES phases (the one-pass split
    # would leave a statistical error ~ sqrt(ln d / b) at epsilon=inf).
    data, loss = _sparse_problem(n=2000, d=10, seed=1)
    domain = make_domain(data, radius=0.6, intercept_bound=1.6, alpha=0.0, l1_ratio=0.0, solver="t")
    best = l1_objective(data, loss, reference_solve(data, loss, domain), domain)
    res = SOLVERS["vr_frank_wolfe"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=0.6,
        intercept_bound=1.6,
        random_state=0,
    )
    T = vr_module.NONPRIVATE_VR_PHASES
    assert res.plan.details["n_phases"] == T
    assert res.n_iter == 2 ** (T + 1) - 2
    assert res.info["allocation"] is None
    # every row: once per root, twice per right child
    assert np.all(res.info["sample_uses"] == T + 2 * sum(2**t - 1 for t in range(1, T + 1)))
    assert 0 <= l1_objective(data, loss, res.coef[:, 0], domain) - best < 1e-5


def test_localized_mirror_descent_iterates_stay_local():
    data, loss = _sparse_problem(n=800, d=10)
    res = SOLVERS["localized_mirror_descent"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=0.6,
        intercept_bound=1.6,
        random_state=0,
    )
    domain = make_domain(data, radius=0.6, intercept_bound=1.6, alpha=0.0, l1_ratio=0.0, solver="t")
    w = res.coef[:, 0]
    assert in_domain(domain, w)
    assert l1_objective(data, loss, w, domain) < l1_objective(data, loss, np.zeros_like(w), domain)


# --------------------------------------------------------------------------
# The strongly convex wrapper and lp geometry
# --------------------------------------------------------------------------


def test_strongly_convex_wrapper_rounds_and_accounting():
    data, loss = _sparse_problem(n=4000, d=20, intercept=False)
    domain = make_domain(
        data, radius=1.0, intercept_bound=None, alpha=0.05, l1_ratio=0.0, solver="t"
    )
    best = l1_objective(data, loss, reference_solve(data, loss, domain), domain)
    gaps = {}
    for wrapped in (False, True):
        res = SOLVERS["mirror_descent"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.05,
            l1_ratio=0.0,
            epsilon=2.0,
            delta=1e-6,
            radius=1.0,
            strongly_convex=wrapped,
            max_iter=200,
            random_state=0,
        )
        assert epsilon_of_event(res.dp_event, 1e-6) <= 2.0
        gaps[wrapped] = l1_objective(data, loss, res.coef[:, 0], domain) - best
        if wrapped:
            phases = res.plan.details["phases"]
            # ceil(log2 log2 n) rounds on blocks of 2^(i-2) n / log2 n rows (seed section 5)
            log_n = math.log2(4000)
            assert [ph.round for ph in phases] == list(range(math.ceil(math.log2(log_n))))
            assert [ph.block for ph in phases] == pytest.approx(
                [2 ** (i - 2) * 4000 / log_n for i in range(1, len(phases) + 1)]
            )
            assert sum(ph.block for ph in phases) <= 4000
            # l2 strength 0.05 is 0.05 d^(1 - 2/p)-strongly convex in ||.||_p
            p = res.plan.details["p"]
            assert res.plan.details["strong_convexity"] == pytest.approx(0.05 * 20 ** (1 - 2 / p))
    assert all(gap >= 0 for gap in gaps.values())


def test_strongly_convex_wrapper_noise_scales_are_exact():
    """Every round's steps release the clipped gradient sum of a Poisson batch
    (sensitivity C in L2) with noise sigma C, sigma calibrated for the
    composition of every round's steps at their own sampling rates."""
    from sklearn_dp.testing import trace_releases

    n, d, epsilon, delta = 4000, 20, 2.0, 1e-6
    data = bound_data(
        np.zeros((n, d)), np.zeros(n), fit_intercept=False, geometry="linf", feature_bound=1.0
    )
    loss = get_loss("squared", residual_bound=2.0)
    with trace_releases() as trace:
        res = SOLVERS["mirror_descent"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.05,
            l1_ratio=0.0,
            epsilon=epsilon,
            delta=delta,
            radius=1.0,
            strongly_convex=True,
            max_iter=30,
            random_state=0,
        )
    phases, clip = res.plan.details["phases"], res.plan.details["clip_norm"]
    assert [ph.round for ph in phases] == list(range(len(phases))) and len(phases) > 1
    sigma = res.plan.noise_multiplier
    assert res.dp_event == accounting.dpe.ComposedDpEvent(
        [
            accounting.subsampled_gaussian_steps_event(sigma, ph.sampling_probability, ph.steps)
            for ph in phases
        ]
    )
    assert 0.97 * epsilon <= epsilon_of_event(res.dp_event, delta) <= epsilon
    releases = [r for r in trace.releases if r.mechanism == "gaussian"]
    assert len(releases) == res.plan.n_steps == sum(ph.steps for ph in phases)
    assert all(r.norm == "l2" and r.sensitivity == clip for r in releases)
    assert all(r.scale == pytest.approx(sigma * clip, rel=1e-15) for r in releases)
    assert all(np.array_equal(r.value, np.zeros_like(r.value)) for r in releases)
    # Each round's batches come from the gateway's Poisson sampler at its phase's rate.
    rates = sorted({s.parameters["rate"] for s in trace.samples if s.kind == "poisson"})
    assert rates == pytest.approx(sorted({ph.sampling_probability for ph in phases}))


def test_strongly_convex_wrapper_needs_public_strong_convexity():
    data, loss = _sparse_problem(n=500, d=5)
    with pytest.raises(ValueError, match="strongly convex from public knowledge"):
        SOLVERS["mirror_descent"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-6,
            radius=1.0,
            strongly_convex=True,
        )


@pytest.mark.parametrize("solver", ["mirror_descent", "localized_mirror_descent"])
def test_lp_geometry_runs_and_stays_feasible(solver):
    data, loss = _sparse_problem(n=1000, d=20)
    domain = make_domain(data, radius=0.6, intercept_bound=1.6, alpha=0.0, l1_ratio=0.0, solver="t")
    for p in (1.0, 1.5, 2.0):
        res = SOLVERS[solver].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=2.0,
            delta=1e-6,
            radius=0.6,
            intercept_bound=1.6,
            p=p,
            max_iter=50,
            random_state=0,
        )
        assert res.plan.details["p"] == (default_p(21) if p == 1.0 else p)
        assert in_domain(domain, res.coef[:, 0])


# --------------------------------------------------------------------------
# Every release goes through the noise gateway, with the calibrated scale
# --------------------------------------------------------------------------


def test_frank_wolfe_selections_are_gateway_exponential_mechanisms():
    """Per step: one release for the l1 ball (utilities -scores, sensitivity radius * C / N)
    and one for the intercept's interval (box * C / N), at the calibrated temperatures;
    together they spend eps0."""
    from _helpers import linf_row_norms

    from sklearn_dp._clipped_sums import frank_wolfe_gradient, vertex_scores
    from sklearn_dp.testing import trace_releases

    data, loss = _sparse_problem(n=400, d=30)
    radius, box, clip, steps = 1.5, 2.5, 0.8, 10
    with trace_releases() as trace:
        res = SOLVERS["frank_wolfe"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=2.0,
            delta=0.0,
            max_iter=steps,
            radius=radius,
            intercept_bound=box,
            clip_norm=clip,
            random_state=0,
            output="last",
        )
    unit = clip / data.normalizer
    ball_scale, (box_scale,) = res.plan.details["gumbel_scales"]
    eps0 = res.plan.details["step_epsilon"]
    releases = trace.releases
    assert len(releases) == 2 * steps and not trace.samples
    domain = make_domain(
        data, radius=radius, intercept_bound=box, alpha=0.0, l1_ratio=0.0, solver="frank_wolfe"
    )
    w = np.zeros(data.n_columns)
    for t, (ball, interval) in enumerate(zip(releases[::2], releases[1::2])):
        assert ball.mechanism == interval.mechanism == "exponential"
        assert ball.norm == interval.norm == "linf"
        assert ball.sensitivity == pytest.approx(radius * unit, rel=1e-15)
        assert interval.sensitivity == pytest.approx(box * unit, rel=1e-15)
        assert (ball.scale, interval.scale) == (ball_scale, box_scale)
        spent = 2 * ball.sensitivity / ball.scale + 2 * interval.sensitivity / interval.scale
        assert spent == pytest.approx(eps0, rel=1e-12)
        # The utilities are minus the vertex scores at the current iterate.
        gradient = frank_wolfe_gradient(
            data.X, data.y, w, loss, clip, linf_row_norms(data.X), data.normalizer, domain
        )
        scores, (box_scores,) = vertex_scores(gradient, domain)
        np.testing.assert_allclose(ball.value, -scores, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(interval.value, -box_scores, rtol=1e-12, atol=1e-15)
        # Replay the step from the released indices.
        vertex = np.zeros(data.n_columns)
        k = data.n_columns - 1
        if ball.output < 2 * k:
            vertex[ball.output % k] = radius if ball.output < k else -radius
        vertex[-1] = box if interval.output == 0 else -box
        eta = 2.0 / (t + 2.0)
        w = (1 - eta) * w + eta * vertex
    np.testing.assert_allclose(res.coef[:, 0], w, rtol=1e-12, atol=1e-15)


def test_frank_wolfe_prints_released_quantities_only(capsys):
    """No exact duality gap (a function of the exact gradient) in the progress lines."""
    data, loss = _sparse_problem(n=200, d=10)
    SOLVERS["frank_wolfe"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=0.0,
        max_iter=5,
        radius=1.0,
        random_state=0,
        verbose=2,
    )
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5
    assert all("gap" not in line and "eta=" in line and "l1_norm=" in line for line in lines)


def _right_depth(leaf, depth):
    """Depth of the deepest right child on the path to leaf ``leaf`` of a depth-``depth`` tree."""
    if leaf == 0:
        return 0
    trailing = (leaf & -leaf).bit_length() - 1
    return depth - trailing


def test_vr_frank_wolfe_leaves_declare_the_sensitivity_of_their_path():
    """A leaf's estimate is a root estimate plus the corrections on its path; a row sits in
    one slot, so the estimate moves by at most clip / (smallest slot on the path)."""
    from sklearn_dp.testing import trace_releases

    data, loss = _sparse_problem(n=3000, d=40)
    with trace_releases() as trace:
        res = SOLVERS["vr_frank_wolfe"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=0.0,
            radius=1.0,
            intercept_bound=2.0,
            n_phases=3,
            clip_norm=0.5,
            random_state=0,
        )
    details = res.plan.details
    T, b, clip = details["n_phases"], details["root_batch"], details["clip_norm"]
    (allocation,) = trace.samples
    assert allocation.kind == "allocation"
    np.testing.assert_array_equal(allocation.output, res.info["allocation"])
    releases = trace.releases
    assert len(releases) == 2 * res.n_iter
    index = 0
    for t in range(1, T + 1):
        ball_scale, (box_scale,) = details["gumbel_scales"][t - 1]
        for leaf in range(2**t):
            ball, interval = releases[index], releases[index + 1]
            index += 2
            unit = clip * 2 ** _right_depth(leaf, t) / b
            assert ball.sensitivity == pytest.approx(1.0 * unit, rel=1e-12)
            assert interval.sensitivity == pytest.approx(2.0 * unit, rel=1e-12)
            assert (ball.scale, interval.scale) == (ball_scale, box_scale)
            # the root slot's rows are calibrated exactly to the phase's leaf epsilon
            if leaf == 0:
                spent = 2 * ball.sensitivity / ball.scale + 2 * interval.sensitivity / box_scale
                assert spent == pytest.approx(details["leaf_epsilons"][t - 1], rel=1e-12)
    assert index == len(releases)


@pytest.mark.parametrize("name", ["mirror_descent", "localized_mirror_descent"])
def test_mirror_descent_steps_are_gateway_gaussians_on_poisson_samples(name, monkeypatch):
    from sklearn_dp.testing import trace_releases

    without_bound_fallback(monkeypatch, name)  # 600 rows: its bound is vacuous
    data, loss = _sparse_problem(n=600, d=10)
    with trace_releases() as trace:
        res = SOLVERS[name].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-6,
            radius=1.0,
            intercept_bound=2.0,
            max_iter=5,
            random_state=0,
        )
    details = res.plan.details
    clip2 = details["clip_norm"]
    allowed = {m * clip2 for m in details["noise_multipliers"]}
    assert len(trace.releases) == res.n_iter
    for release in trace.releases:
        assert (release.mechanism, release.norm) == ("gaussian", "l2")
        assert release.sensitivity == clip2 and release.scale in allowed
    poisson = [s for s in trace.samples if s.kind == "poisson"]
    allocations = [s for s in trace.samples if s.kind == "allocation"]
    assert len(poisson) == res.n_iter
    rates = {ph.sampling_probability for ph in details["phases"]}
    assert {s.parameters["rate"] for s in poisson} <= rates
    assert len(allocations) == (1 if name == "localized_mirror_descent" else 0)


# --------------------------------------------------------------------------
# Zero-copy data path: the design operator, float32 and CSR
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "solver",
    [
        "frank_wolfe",
        "vr_frank_wolfe",
        "mirror_descent",
        # The same batch path as mirror_descent, phase by phase (2 s): with -m slow.
        pytest.param("localized_mirror_descent", marks=pytest.mark.slow),
    ],
)
def test_float64_float32_and_csr_fits_agree(solver):
    """The same seeded fit on float64, float32 and CSR data: the same model up to rounding.

    The solvers work on ``data.design`` (products with the caller's X, no
    bounded copy); float32 products round differently, the released vertices
    and the sampled rows are the same.
    """
    import scipy.sparse as sp

    from sklearn_dp import DPLasso

    rng = np.random.default_rng(3)
    X = rng.uniform(-1, 1, (1500, 12))
    X[rng.random(X.shape) < 0.02] = 2.5  # some entries clipped to the bound
    X[rng.random(X.shape) < 0.3] = 0.0
    y = X[:, :3] @ np.array([1.0, -0.5, 0.3]) + 0.1 * rng.normal(size=1500)
    fits = []
    # A few steps suffice to compare the paths (calibrating many subsampled
    # steps is what takes time, not the data).
    steps = {} if solver == "vr_frank_wolfe" else dict(max_iter=5)
    for data in (X, X.astype(np.float32), sp.csr_matrix(X)):
        model = DPLasso(
            epsilon=1.0,
            solver=solver,
            feature_bound=1.0,
            y_bound=2.0,
            radius=1.5,
            random_state=0,
            **steps,
        ).fit(data, y)
        fits.append(model)
    for other in fits[1:]:
        assert other.n_iter_ == fits[0].n_iter_
        np.testing.assert_allclose(other.coef_, fits[0].coef_, atol=1e-5)
        np.testing.assert_allclose(other.intercept_, fits[0].intercept_, atol=1e-5)


@pytest.mark.parametrize("fmt, limit", [("dense64", 0.3), ("dense32", 0.35)])
@pytest.mark.parametrize(
    "solver",
    # mirror_descent calibrates 100 subsampled steps for 20000 rows (about 5 s):
    # its memory check runs with -m slow.
    ["frank_wolfe", pytest.param("mirror_descent", marks=pytest.mark.slow)],
)
def test_l1_fits_allocate_little_beyond_X(solver, fmt, limit):
    """tracemalloc peak beyond X (tests/test_memory.py): measured 0.16x / 0.11x for float64,
    0.31x / 0.21x for float32 (half the bytes of X; the per-row vectors are a larger share)."""
    from test_memory import _data, _peak_ratio

    from sklearn_dp import DPLasso

    X, y = _data(20000, 100, fmt)
    # mirror_descent: fewer steps than its default (the memory of a step does not
    # depend on how many there are) to keep the test fast.
    options = dict(max_iter=100) if solver == "mirror_descent" else {}
    model = DPLasso(
        feature_bound=1.0, y_bound=5.0, radius=2.0, solver=solver, random_state=0, **options
    )
    ratio = _peak_ratio(model, X, y)
    assert ratio <= limit, f"{solver} on {fmt}: {ratio:.3f}x of X beyond X"


def test_mirror_descent_epsilon_inf_takes_exact_full_batch_steps():
    """Without noise: every row at every step, 2000 steps; a user's
    batch_size keeps the minibatch schedule."""
    from sklearn_dp.solvers._mirror_descent import DEFAULT_MAX_STEPS

    plan = plan_call("mirror_descent", 5000, 20, math.inf, 0.0)
    (phase,) = plan.details["phases"]
    assert phase.batch == 5000 and phase.sampling_probability == 1.0
    assert phase.steps == plan.n_steps == DEFAULT_MAX_STEPS
    assert plan_call("mirror_descent", 5000, 20, math.inf, 0.0, max_iter=50).n_steps == 50
    (phase,) = plan_call("mirror_descent", 5000, 20, math.inf, 0.0, batch_size=100).details[
        "phases"
    ]
    assert phase.batch == 100 and phase.steps == min(DEFAULT_MAX_STEPS, (5000 // 100) ** 2)
    # the private schedule is unchanged
    (phase,) = plan_call("mirror_descent", 5000, 20, 1.0, 1e-6).details["phases"]
    assert phase.batch < 5000


@pytest.mark.parametrize(
    "solver, options, match",
    [
        ("mirror_descent", dict(p=3.0), "'p' parameter of mirror_descent"),
        ("localized_mirror_descent", dict(clip_norm=-1.0), "'clip_norm' parameter"),
        ("frank_wolfe", dict(output="median"), "'output' parameter of frank_wolfe"),
        ("vr_frank_wolfe", dict(schedule="fast"), "'schedule' parameter of vr_frank_wolfe"),
        ("vr_frank_wolfe", dict(n_phases=0), "'n_phases' parameter"),
        ("frank_wolfe", dict(radius=None), "needs radius"),
    ],
)
def test_direct_calls_refuse_options_outside_their_declared_values(solver, options, match):
    # A direct call of the solver validates its options (read off its signature)
    # as the estimators do, and the refusal is public: it reads no private value.
    data, loss = _sparse_problem(n=50, d=5)
    kwargs = dict(n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-5, radius=1.0, random_state=0)
    with pytest.raises(ValueError, match=match) as raised:
        SOLVERS[solver].run(data, loss, **{**kwargs, **options})
    assert getattr(raised.value, "__sklearn_dp_public__", False)


def test_default_frank_wolfe_steps_in_the_sparse_regime():
    # n = 5000, d = 2000, the default radius (1.31 in scaled units) at epsilon
    # 0.95 (what the count leaves of 1): the error bound's minimiser, 42 steps
    # (63 in the benchmark's fits), spent the budget on steps that measured fits
    # do not need (R^2 0.57; 0.71 at the default below, bench_regimes.py).
    t = fw_module.default_frank_wolfe_iterations(5000.0, 2000, 0.95, 1e-5, 1.31)
    assert fw_module.MIN_DEFAULT_ITERATIONS <= t <= 35
    bound_t = fw_module._minimising_iterations(
        5000.0, 2000, 0.95, 1e-5, 1.31, fw_module.OPTIMISATION_WEIGHT, 40
    )
    assert bound_t > 40


def test_default_frank_wolfe_steps_are_public_and_floored():
    # Small data (diabetes-sized): the floor; no noise: the fixed count.
    assert fw_module.default_frank_wolfe_iterations(353.0, 10, 0.5, 1e-6, 0.2) == 32
    assert fw_module.default_frank_wolfe_iterations(353.0, 10, math.inf, 0.0, 0.2) == 1000
    # The minimiser of the damped bound, by brute force over the candidates.
    n, d, eps, delta, r = 5000.0, 2000, 0.95, 1e-5, 1.31
    rho = zcdp_budget(eps, delta)

    def bound(t):  # damped FW error plus the selection noise (one step at a time)
        eps0 = max(eps / t * (1.0 - 1e-12), math.sqrt(8.0 * rho / t))
        weight = fw_module.STEP_CURVATURE_WEIGHT
        return weight * 8.0 * r**2 / (t + 2.0) + 2.0 * r / (n * eps0) * math.log(2 * d)

    best = min(range(32, 2001), key=bound)
    assert fw_module.default_frank_wolfe_iterations(n, d, eps, delta, r) == best


# --------------------------------------------------------------------------
# The lp ball (constraint="lp", 1 < p <= 2): (localized) mirror descent
# --------------------------------------------------------------------------


def _lp_reference(data, loss, radius, p):
    """The non-private optimum over ``||x||_p <= radius`` by a generic solver (SLSQP)."""
    X, y = data.design.toarray() if hasattr(data.design, "toarray") else data.design, data.y

    def objective(w):
        return float(np.mean(loss.value((X @ w)[:, None], y)))

    def gradient(w):
        return X.T @ loss.derivative((X @ w)[:, None], y).ravel() / X.shape[0]

    ball = {"type": "ineq", "fun": lambda w: radius**p - np.sum(np.abs(w) ** p)}
    res = minimize(
        objective,
        np.zeros(X.shape[1]),
        jac=gradient,
        constraints=[ball],
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 2000},
    )
    return res.x, objective(res.x)


@pytest.mark.parametrize("p", [1.3, 1.7, 2.0])
def test_lp_ball_mirror_descent_epsilon_inf_reaches_constrained_optimum(p):
    data, loss = _sparse_problem(n=400, d=8)
    radius = 0.5  # active: the unconstrained optimum has ||w||_p about 0.7
    _, best = _lp_reference(data, loss, radius, p)
    res = SOLVERS["mirror_descent"].run(
        data,
        loss,
        n_outputs=1,
        alpha=0.0,
        epsilon=math.inf,
        delta=0.0,
        radius=radius,
        constraint="lp",
        p=p,
        max_iter=2000,
        random_state=0,
    )
    w = res.coef[:, 0]
    assert res.plan.details["p"] == p  # the ball's own exponent, never raised to 1 + 1/ln d
    assert pnorm(w, p) <= radius * (1 + 1e-12)
    assert pnorm(w, p) == pytest.approx(radius, rel=1e-6)  # on the boundary, as x* is
    value = float(np.mean(loss.value(data.design.matmul(w)[:, None], data.y)))
    assert -1e-9 <= value - best < 1e-6


@pytest.mark.parametrize("p", [1.3, 1.7, 2.0])
def test_lp_ball_frank_wolfe_epsilon_inf_reaches_constrained_optimum(p):
    data, loss = _sparse_problem(n=400, d=8)
    radius = 0.5  # active: the unconstrained optimum has ||w||_p about 0.7
    _, best = _lp_reference(data, loss, radius, p)
    res = SOLVERS["frank_wolfe"].run(
        data, loss, n_outputs=1, alpha=0.0, epsilon=math.inf, delta=0.0, radius=radius,
        constraint="lp", p=p, random_state=0,
    )  # fmt: skip
    w = res.coef[:, 0]
    assert res.n_iter == fw_module.DEFAULT_NONPRIVATE_ITERATIONS
    assert pnorm(w, p) <= radius * (1 + 1e-12)
    value = float(np.mean(loss.value(data.design.matmul(w)[:, None], data.y)))
    assert -1e-9 <= value - best < 1e-6


def test_lp_ball_vertex_is_the_exact_linear_minimiser():
    rng = np.random.default_rng(3)
    for p in (1.1, 1.5, 2.0):
        g = rng.normal(size=6) * rng.uniform(0.1, 10)
        v = fw_module.lp_ball_vertex(g, p, 0.7)
        q = p / (p - 1)
        assert pnorm(v, p) == pytest.approx(0.7, rel=1e-12)
        assert v @ g == pytest.approx(-0.7 * pnorm(g, q), rel=1e-12)  # Hoelder's equality case
    assert not np.any(fw_module.lp_ball_vertex(np.zeros(3), 1.5, 1.0))


def test_lp_ball_frank_wolfe_noise_scales_are_exact():
    from sklearn_dp.testing import trace_releases

    data, loss = _sparse_problem(n=600, d=6)
    eps, delta, p, radius = 1.0, 1e-6, 1.5, 1.0
    with trace_releases() as trace:
        res = SOLVERS["frank_wolfe"].run(
            data, loss, n_outputs=1, alpha=0.0, epsilon=eps, delta=delta, radius=radius,
            constraint="lp", p=p, random_state=0,
        )  # fmt: skip
    T = res.n_iter
    # The default step count: the first minimiser of the public bound
    # w 2 beta D^2 / (T + 2) + D sqrt(T E||N(0, (sigma_1 C / n)^2 I)||_q^2).
    q, diameter = p / (p - 1), 2 * radius
    clip = 0.5 * loss.derivative_bound * data.row_norm_bound  # the default L2 clip
    beta = loss.smoothness * pnorm(data.feature_bound, q) ** 2
    sigma_1 = accounting.gaussian_noise_multiplier(eps, delta, 1) * clip / data.n_public
    # E||N(0, I_d)||_q^2 <= (E||N||_q^q)^(2/q) = (d E|Z|^q)^(2/q) (Jensen).
    moment = 2 ** (q / 2) * math.gamma((q + 1) / 2) / math.sqrt(math.pi)
    noise_q = (data.n_columns * moment) ** (1 / q) * sigma_1
    t = np.arange(1, 2001)
    weight = fw_module.STEP_CURVATURE_WEIGHT
    bounds = weight * 2 * beta * diameter**2 / (t + 2) + diameter * noise_q * np.sqrt(t)
    assert T == t[np.argmin(bounds)]
    assert res.plan.details["clip_norm"] == pytest.approx(clip)
    # T full-data Gaussian steps, each of L2 sensitivity C: one Gaussian of multiplier sigma / sqrt(T).
    sigma = accounting.gaussian_noise_multiplier(eps, delta, T)
    assert res.plan.noise_multiplier == pytest.approx(sigma, rel=1e-12)
    assert len(trace.releases) == T
    for release in trace.releases:
        assert (release.mechanism, release.norm) == ("gaussian", "l2")
        assert release.sensitivity == pytest.approx(clip, rel=1e-12)
        assert release.scale == pytest.approx(sigma * clip, rel=1e-12)
    assert res.plan.event == accounting.gaussian_steps_event(sigma, T)
    assert accounting.epsilon_of_event(res.plan.event, delta) <= eps * (1 + 1e-9)


def test_lp_ball_frank_wolfe_estimator_epsilon_inf_reaches_constrained_optimum():
    from sklearn_dp import DPSCORegressor

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(300, 5))
    y = np.clip(X @ np.array([0.8, -0.5, 0.0, 0.3, 0.0]) + 0.05 * rng.normal(size=300), -1, 1)
    p, radius = 1.5, 0.6
    model = DPSCORegressor(
        epsilon=math.inf, constraint="lp", p=p, radius=radius, feature_bound=1.0, y_bound=1.0,
        fit_intercept=False, alpha=0.0, penalty=None, solver="frank_wolfe", max_iter=3000,
    ).fit(X, y)  # fmt: skip
    data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
    loss = get_loss("squared", residual_bound=4.0)
    _, best = _lp_reference(data, loss, radius, p)
    value = float(np.mean(loss.value((X @ model.coef_)[:, None], y)))
    assert model.solver_ == "frank_wolfe" and model.n_iter_ == 3000
    assert -1e-9 <= value - best < 1e-6


def test_lp_ball_estimator_epsilon_inf_reaches_constrained_optimum():
    from sklearn_dp import DPSCORegressor

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(300, 5))
    y = np.clip(X @ np.array([0.8, -0.5, 0.0, 0.3, 0.0]) + 0.05 * rng.normal(size=300), -1, 1)
    p, radius = 1.5, 0.6
    model = DPSCORegressor(
        epsilon=math.inf,
        constraint="lp",
        p=p,
        radius=radius,
        feature_bound=1.0,
        y_bound=1.0,
        fit_intercept=False,
        alpha=0.0,
        penalty=None,
        max_iter=2000,
    ).fit(X, y)
    assert model.solver_ == "mirror_descent"
    data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
    loss = get_loss("squared", residual_bound=4.0)
    ref, best = _lp_reference(data, loss, radius, p)
    np.testing.assert_allclose(model.coef_, ref, atol=1e-3)
    value = float(np.mean(loss.value((X @ model.coef_)[:, None], y)))
    assert -1e-9 <= value - best < 1e-6


def test_bregman_step_over_an_outer_lp_ball_matches_a_generic_solver():
    # The localised step: the map centred at c inside ||x||_p <= outer, with or
    # without the localisation ball ||x - c||_p <= p_radius and an L1 penalty.
    rng = np.random.default_rng(4)
    for trial in range(24):
        d, p, outer = 4, [1.3, 1.6, 2.0][trial % 3], 1.0
        kappa = 1 / (2 * (p - 1)) * rng.uniform(0.5, 3)
        c = rng.normal(size=d)
        c *= rng.uniform(0, 1) * outer / pnorm(c, p) if trial % 4 else 0.0
        s, m = rng.normal(size=d) * rng.uniform(0.5, 10), rng.uniform(0, 1, d) * (trial % 2)
        r = [np.inf, 0.3, 0.05][trial % 3 if trial % 5 else 0]
        res = bregman_step(
            s, c, kappa=kappa, p=p, ball=np.ones(d, bool), radius=np.inf,
            l1_weights=m, p_radius=r, outer=outer,
        )  # fmt: skip

        def objective(x):
            return -s @ x + kappa * pnorm(x - c, p) ** 2 + m @ np.abs(x)

        balls = [{"type": "ineq", "fun": lambda x: outer**p - np.sum(np.abs(x) ** p)}]
        if r < np.inf:
            balls.append({"type": "ineq", "fun": lambda x: r**p - np.sum(np.abs(x - c) ** p)})
        assert pnorm(res.x, p) <= outer * (1 + 1e-12)
        assert r == np.inf or pnorm(res.x - c, p) <= r * (1 + 1e-12)
        best = min(
            objective(o.x)
            for start in (res.x, c, np.zeros(d))
            for o in [
                minimize(
                    objective,
                    start + 1e-9,
                    constraints=balls,
                    method="SLSQP",
                    options={"ftol": 1e-15, "maxiter": 1000},
                )
            ]  # fmt: skip
            if pnorm(o.x, p) <= outer * (1 + 1e-9)
            and (r == np.inf or pnorm(o.x - c, p) <= r * (1 + 1e-9))
        )
        assert objective(res.x) <= best + 1e-8 * (abs(best) + 1), trial


def test_lp_ball_localized_mirror_descent_epsilon_inf_reaches_constrained_optimum():
    # At its default (public) step, not the theorem's, which keeps the output
    # near the zero model at this size (within 3% of F(0) - F* is the bar).
    from sklearn_dp import DPSCORegressor

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(300, 4))
    y = np.clip(X @ np.array([0.8, -0.5, 0.3, 0.0]) + 0.05 * rng.normal(size=300), -1, 1)
    data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
    loss = get_loss("squared", residual_bound=4.0)
    for p, radius in ((1.5, 0.6), (2.0, 0.6)):
        model = DPSCORegressor(
            epsilon=math.inf, constraint="lp", p=p, radius=radius, feature_bound=1.0,
            y_bound=1.0, fit_intercept=False, alpha=0.0, penalty=None,
            solver="localized_mirror_descent", max_iter=10, random_state=0,
        ).fit(X, y)  # fmt: skip
        _, best = _lp_reference(data, loss, radius, p)
        value = float(np.mean(loss.value((X @ model.coef_)[:, None], y)))
        zero = float(np.mean(loss.value(np.zeros((300, 1)), y)))
        assert pnorm(model.coef_, p) <= radius * (1 + 1e-12)
        assert -1e-9 <= value - best <= 0.03 * (zero - best), p


@pytest.mark.slow
def test_lp_ball_strongly_convex_mirror_descent_epsilon_inf_reaches_constrained_optimum():
    # Later rounds are localised around their start: the exact step over the
    # intersection with the lp ball (about 5 minutes at max_iter=300: gap 0.03%).
    rng = np.random.default_rng(0)
    n, d, p, radius, alpha = 2000, 4, 1.5, 0.6, 0.1
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(X @ np.array([0.8, -0.5, 0.3, 0.0]) + 0.1 * rng.normal(size=n), -1, 1)
    data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
    loss = get_loss("squared", residual_bound=4.0)

    def objective(w):
        return float(np.mean(loss.value((X @ w)[:, None], y))) + alpha / 2 * w @ w

    ball = {"type": "ineq", "fun": lambda w: radius**p - np.sum(np.abs(w) ** p)}
    ref = minimize(objective, np.zeros(d), constraints=[ball], method="SLSQP",
                   options={"ftol": 1e-14})  # fmt: skip
    res = SOLVERS["mirror_descent"].run(
        data, loss, n_outputs=1, alpha=alpha, l1_ratio=0.0, epsilon=math.inf, delta=0.0,
        radius=radius, constraint="lp", p=p, strongly_convex=True, max_iter=60, random_state=0,
    )  # fmt: skip
    w = res.coef[:, 0]
    assert pnorm(w, p) <= radius * (1 + 1e-12)
    gap = objective(w) - objective(ref.x)
    assert -1e-9 <= gap <= 0.02 * (objective(np.zeros(d)) - objective(ref.x))


@pytest.mark.parametrize("solver", ["mirror_descent", "localized_mirror_descent"])
@pytest.mark.parametrize("loss", ["absolute", "huber"])
def test_lp_ball_releases_the_noise_of_the_l1_ball(loss, solver):
    # The noise depends on the L2 clip and the schedule, never on the geometry:
    # the same settings release the same number of sums at the same scales.
    from sklearn_dp import DPSCORegressor
    from sklearn_dp.testing import trace_releases

    rng = np.random.default_rng(2)
    X = rng.uniform(-1, 1, size=(400, 6))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=400)
    settings = dict(
        epsilon=1.0,
        delta=1e-6,
        loss=loss,
        solver=solver,
        radius=1.0,
        feature_bound=1.0,
        y_bound=2.0,
        max_iter=20,
        random_state=0,
    )
    traced = {}
    for constraint, extra in (("l1", {}), ("lp", {"p": 1.5})):
        with trace_releases() as trace:
            model = DPSCORegressor(constraint=constraint, **settings, **extra).fit(X, y)
        traced[constraint] = (
            [(r.mechanism, r.norm, r.sensitivity, r.scale) for r in trace.releases],
            model.privacy_spent_,
            repr(model.dp_event_),
        )
    assert traced["lp"] == traced["l1"]
    gaussians = [r for r in traced["lp"][0] if r[0] == "gaussian"]
    assert len(gaussians) == model.n_iter_


def test_lp_ball_localized_mirror_descent_noise_scales_are_exact():
    from sklearn_dp.testing import trace_releases

    data, loss = _sparse_problem(n=600, d=6)
    with trace_releases() as trace:
        res = SOLVERS["localized_mirror_descent"].run(
            data, loss, n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-6, radius=1.0,
            constraint="lp", p=1.5, max_iter=4, random_state=0,
        )  # fmt: skip
    plan = res.plan
    phases = plan.details["phases"]
    sigma = accounting.calibrate_noise_multiplier(
        lambda s: accounting.dpe.ComposedDpEvent(
            [
                accounting.subsampled_gaussian_steps_event(
                    s * ph.weight, ph.sampling_probability, ph.steps
                )
                for ph in phases
            ]  # fmt: skip
        ),
        1.0,
        1e-6,
    )
    assert plan.noise_multiplier == pytest.approx(sigma, rel=1e-9)
    clip2 = plan.details["clip_norm"]
    assert clip2 == gradient_bound(loss, data.row_norm_bound, None, private=True)
    # Phase i's steps in order: sensitivity the L2 clip, scale sigma 2^(i-1) clip.
    expected = [sigma * 2.0 ** (ph.index - 1) * clip2 for ph in phases for _ in range(ph.steps)]
    assert [(r.mechanism, r.norm, r.sensitivity) for r in trace.releases] == [
        ("gaussian", "l2", clip2)
    ] * len(expected)
    np.testing.assert_allclose([r.scale for r in trace.releases], expected, rtol=1e-9)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(constraint="lp", p=1.0), "p"),
        (dict(constraint="lp", p=2.5), "p"),
        (dict(constraint="lp", p=0.5), "p"),
        (dict(constraint="lp"), "needs radius= .* and p="),
        (dict(constraint="l1", p=1.5), "used only with constraint='lp'"),
        (dict(p=1.5), "used only with constraint='lp'"),
    ],
)
def test_lp_ball_bad_parameters_are_refused_before_the_spend(params, match):
    from sklearn_dp import DPSCORegressor, PrivacyBudget

    params = {"radius": 1.0, **params} if "needs radius" not in match else params
    budget = PrivacyBudget(10.0, 1e-3)
    X, y = np.random.default_rng(0).uniform(-1, 1, size=(50, 3)), np.zeros(50)
    model = DPSCORegressor(
        epsilon=1.0, delta=1e-6, feature_bound=1.0, y_bound=1.0, budget=budget, **params
    )
    with pytest.raises(ValueError, match=match):
        model.fit(X, y)
    assert budget.spent == (0.0, 0.0) and not budget.ledger


@pytest.mark.parametrize(
    "settings, match",
    [
        (dict(solver="vr_frank_wolfe"), "does not support constraint='lp'"),
        (dict(solver="frank_wolfe", delta=0.0), "needs delta > 0"),
        (dict(solver="frank_wolfe", penalty="l1", alpha=0.1), "no L1 part"),
        (dict(solver="frank_wolfe", solver_options={"refit": 0.5}), "refit=0"),
    ],
)
def test_lp_ball_refusals_come_before_the_spend(settings, match):
    from sklearn_dp import DPSCORegressor, PrivacyBudget
    from sklearn_dp.testing import trace_releases

    budget = PrivacyBudget(10.0, 1e-3)
    X, y = np.random.default_rng(0).uniform(-1, 1, size=(50, 3)), np.zeros(50)
    model = DPSCORegressor(
        **{
            **dict(epsilon=1.0, delta=1e-6, constraint="lp", p=1.5, radius=1.0),
            **dict(feature_bound=1.0, y_bound=1.0, budget=budget),
            **settings,
        }
    )
    with trace_releases() as trace, pytest.raises(ValueError, match=match):
        model.fit(X, y)
    assert budget.spent == (0.0, 0.0) and not budget.ledger
    assert not trace.releases


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(p=None), "needs the ball's exponent p"),
        (dict(p=1.5, intercept_bound=1.0), "intercept_bound"),
    ],
)
def test_lp_ball_direct_calls_refuse_what_it_does_not_support(options, match):
    data, loss = _sparse_problem(n=100, d=5)
    with pytest.raises(ValueError, match=match):
        SOLVERS["mirror_descent"].run(
            data,
            loss,
            n_outputs=1,
            alpha=0.1,
            l1_ratio=0.0,
            epsilon=1.0,
            delta=1e-6,
            radius=1.0,
            constraint="lp",
            random_state=0,
            **options,
        )


# --------------------------------------------------------------------------
# frank_wolfe's debiasing refit (least squares on the released support)
# --------------------------------------------------------------------------


def _refit_fit(epsilon=1.0, delta=1e-5, refit=0.4):
    from sklearn_dp.testing import trace_releases

    data, loss = _sparse_problem(n=400, d=30)
    kwargs = dict(n_outputs=1, alpha=0.0, radius=1.5, intercept_bound=2.5, max_iter=20)
    with trace_releases() as trace:
        res = SOLVERS["frank_wolfe"].run(
            data, loss, epsilon=epsilon, delta=delta, refit=refit, random_state=0, **kwargs
        )
    return data, res, trace


def test_frank_wolfe_refit_noise_scales_exact():
    data, res, trace = _refit_fit()
    by_label = {r.label: r for r in trace.releases if r.label.startswith("refit")}
    gram, xty = by_label["refit gram matrix"], by_label["refit X^T y"]
    rho = zcdp_budget(1.0, 1e-5)
    multiplier = 1.0 / math.sqrt(0.4 * rho)
    assert res.plan.details["refit_multiplier"] == pytest.approx(multiplier, rel=1e-12)
    # The support (public: a function of the vertices, the intercept column
    # included) and the bound of its rows: every column is bounded by 1 here.
    m = res.plan.details["refit_support"]
    assert np.all(data.feature_bound == 1.0) and 2 <= m <= 21 and len(xty.value) == m
    bound_sq = float(m)
    assert gram.sensitivity == pytest.approx(bound_sq) and gram.norm == "l2"
    assert gram.scale == pytest.approx(multiplier * bound_sq)
    assert xty.sensitivity == pytest.approx(math.sqrt(bound_sq))
    assert xty.scale == pytest.approx(multiplier * math.sqrt(bound_sq))
    # Steps and refit compose to rho-zCDP: at most (epsilon, delta), and no slack.
    steps_rho = 20 * res.plan.details["step_epsilon"] ** 2 / 8
    assert steps_rho + 1.0 / multiplier**2 == pytest.approx(rho, rel=1e-9)
    assert 0.99 < epsilon_of_event(res.plan.event, 1e-5) <= 1.0


def test_frank_wolfe_refit_without_noise_is_least_squares_on_the_support():
    from types import SimpleNamespace

    from sklearn_dp.solvers._common import PrivacyPlan

    data, _ = _sparse_problem(n=400, d=30)
    w = np.zeros(31)
    w[:4] = [0.5, -0.3, 0.2, 0.01]  # the last below REFIT_THRESHOLD of the largest
    domain = make_domain(data, radius=5.0, intercept_bound=2.5, alpha=0.0, l1_ratio=0.0)
    args = SimpleNamespace(data=data, alpha=0.0, l1_ratio=0.0, intercept_bound=2.5)
    plan = PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, 1, dict(refit_multiplier=0.0))
    refitted = fw_module.refit_support(args, w, domain, plan, np.random.default_rng(0))
    Z = data.design.columns([0, 1, 2, 30])
    expected = np.linalg.lstsq(Z, data.y, rcond=None)[0]
    assert np.count_nonzero(refitted) == 4 and refitted[3] == 0
    np.testing.assert_allclose(refitted[[0, 1, 2, 30]], expected, atol=1e-5)


def test_frank_wolfe_refit_is_planned_only_with_noise_and_delta():
    # epsilon=inf: the T steps reach the optimum, no refit and nothing spent.
    _, res, trace = _refit_fit(epsilon=math.inf)
    assert "refit_multiplier" not in res.plan.details
    assert not any(r.label.startswith("refit") for r in trace.releases)
    # delta = 0: Gaussian releases are not pure DP, a public refusal.
    with pytest.raises(ValueError, match="refit releases Gaussian") as raised:
        _refit_fit(delta=0.0)
    assert getattr(raised.value, "__sklearn_dp_public__", False)


# --------------------------------------------------------------------------
# vr_frank_wolfe's strongly convex reduction (Asi et al. 2021, Theorem 9)
# --------------------------------------------------------------------------


def _strongly_convex_problem(n=4000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = np.clip(X @ (0.4 * np.linspace(1, -1, d)) + 0.1 * rng.normal(size=n), -1, 1)
    data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
    return data, get_loss("squared", residual_bound=4.0)


def _strongly_convex_run(data, loss, **params):
    settings = dict(n_outputs=1, alpha=1.0, l1_ratio=0.0, delta=0.0, radius=2.0)
    settings.update(params)
    return SOLVERS["vr_frank_wolfe"].run(data, loss, strongly_convex=True, **settings)


def test_vr_frank_wolfe_strongly_convex_epsilon_inf_reaches_the_optimum():
    # alpha = 1 on d = 4 coordinates: 1/4-strongly convex in ||.||_1, so the
    # public bounds shrink the l1 ball of each later round around the last output.
    data, loss = _strongly_convex_problem()
    domain = make_domain(data, radius=2.0, intercept_bound=None, alpha=1.0, l1_ratio=0.0)
    best = l1_objective(data, loss, reference_solve(data, loss, domain), domain)
    zero = l1_objective(data, loss, np.zeros(4), domain)
    res = _strongly_convex_run(data, loss, epsilon=math.inf, random_state=0)
    details = res.plan.details
    # ceil(log2 log2 n) rounds, every row at every vertex (nothing spent)
    assert len(details["rounds"]) == math.ceil(math.log2(math.log2(4000)))
    assert details["rounds"][0] == (vr_module.NONPRIVATE_VR_PHASES, 4000.0)
    radii = details["round_radii"]
    assert radii[0] == math.inf and all(r < 2.0 for r in radii[1:])
    assert radii[1:] == sorted(radii[1:], reverse=True)
    w = res.coef[:, 0]
    assert in_domain(domain, w)
    assert 0 <= l1_objective(data, loss, w, domain) - best <= 1e-4 * (zero - best)


@pytest.mark.parametrize("delta, schedule", [(0.0, "pure"), (1e-6, "approximate")])
def test_vr_frank_wolfe_strongly_convex_rounds_are_disjoint_and_compose_in_parallel(
    delta, schedule
):
    from sklearn_dp.solvers._l1_geometry import strongly_convex_rounds

    data, loss = _strongly_convex_problem(n=3000, d=6)
    settings = dict(epsilon=2.0, delta=delta, schedule=schedule, random_state=0)
    res = _strongly_convex_run(data, loss, **settings)
    plain = SOLVERS["vr_frank_wolfe"].run(
        data, loss, n_outputs=1, alpha=1.0, l1_ratio=0.0, radius=2.0, **settings
    )
    # Each round is calibrated alone on disjoint rows: the event of a single run.
    assert res.dp_event == plain.dp_event
    assert epsilon_of_event(res.dp_event, delta) <= 2.0
    details = res.plan.details
    blocks = strongly_convex_rounds(3000)
    assert len(blocks) > 1
    expected = [vr_frank_wolfe_schedule(n, 6, 2.0, delta, schedule, None) for n in blocks]
    assert details["rounds"] == expected
    assert res.n_iter == sum(2 ** (t + 1) - 2 for t, _ in expected)
    # one allocation over the slots of every round: each row in one slot at most
    allocation, sizes = res.info["allocation"], res.info["slot_sizes"]
    assert sizes.size == res.n_iter and sizes.sum() <= 3000  # a slot per leaf
    assert np.all(res.info["sample_uses"] <= 2)
    assert np.all((res.info["sample_uses"] == 0) == (allocation == sizes.size))


def test_vr_frank_wolfe_strongly_convex_local_rounds_declare_their_radius(monkeypatch):
    """A local round chooses among centre +- R e_j: its scores move by R times the
    estimate's change, and its Gumbel scales are calibrated to that."""
    from sklearn_dp.solvers._l1_geometry import L1Domain
    from sklearn_dp.testing import trace_releases

    data, loss = _strongly_convex_problem(n=3000, d=5)
    plan = plan_call("vr_frank_wolfe", 3000, 5, 4.0, 0.0, radius=2.0, strongly_convex=True)
    # A small public error bound after each round (the private bounds at this n
    # never localise): later rounds run over l1 balls of radius 2 sqrt(2e-4 / (1/5)).
    monkeypatch.setattr(vr_module, "_vr_error_bound", lambda *args: 1e-4)
    with trace_releases() as trace:
        res = _strongly_convex_run(
            data, loss, epsilon=4.0, clip_norm=0.5, plan=plan, random_state=0
        )
    details = res.plan.details
    local = 2.0 * math.sqrt(2.0 * 1e-4 / 0.2)
    assert details["round_radii"] == [math.inf] + [pytest.approx(local)] * (
        len(details["rounds"]) - 1
    )
    releases = iter(trace.releases)
    for (T, b), radius in zip(details["rounds"], details["round_radii"]):
        radius = min(radius, 2.0)
        round_domain = L1Domain(
            radius, np.ones(5, bool), np.full(5, np.inf), np.zeros(5), np.ones(5)
        )
        leaf = vr_module._leaf_epsilons(4.0, T, "pure")
        for t in range(1, T + 1):
            scale, _ = vertex_scales(round_domain, 0.5 / b, leaf[t - 1])
            for leaf_index in range(2**t):
                release = next(releases)
                unit = 0.5 * 2 ** _right_depth(leaf_index, t) / b
                assert release.sensitivity == pytest.approx(radius * unit, rel=1e-12)
                assert release.scale == pytest.approx(scale, rel=1e-12)
                if leaf_index == 0:  # the root slot's rows: exactly the phase's leaf epsilon
                    assert 2 * release.sensitivity / release.scale == pytest.approx(leaf[t - 1])
    assert next(releases, None) is None
    assert np.abs(res.coef).sum() <= 2.0 * (1 + 1e-12)


@pytest.mark.parametrize(
    "params",
    [dict(alpha=0.0), dict(l1_ratio=0.1), dict(intercept=True)],
    ids=["no-l2", "l1-part", "intercept"],
)
def test_vr_frank_wolfe_strongly_convex_needs_a_public_l2_penalty_only(params):
    from sklearn_dp import DPSCORegressor

    intercept = params.pop("intercept", False)
    penalty = "elasticnet" if "l1_ratio" in params else "l2"
    model = DPSCORegressor(
        epsilon=1.0,
        delta=0.0,
        solver="vr_frank_wolfe",
        constraint="l1",
        radius=1.0,
        feature_bound=1.0,
        penalty=penalty,
        alpha=params.get("alpha", 1.0),
        fit_intercept=intercept,
        solver_options={"strongly_convex": True},
        **({"l1_ratio": params["l1_ratio"]} if "l1_ratio" in params else {}),
    )
    X = np.random.default_rng(0).uniform(-1, 1, size=(50, 3))
    with pytest.raises(ValueError, match="strongly_convex=True"):
        model.fit(X, X[:, 0])
