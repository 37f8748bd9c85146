"""Statistical privacy audits on neighbouring data sets, and recomputed dp_event_.

The audit: D and D' = D plus one extreme canary row (add/remove-one
neighbours).  Fit many times on each, reduce each fit to a scalar statistic,
and test "D' was used" by a threshold on it.  For an (epsilon, delta)-DP
mechanism every test satisfies

    FPR + e^eps * FNR >= 1 - delta   and   FNR + e^eps * FPR >= 1 - delta,

so Clopper-Pearson upper bounds on FPR and FNR give a lower bound on the
true epsilon that holds with probability >= 95%.  The threshold is chosen on
one set of runs and evaluated on fresh runs.  The audit must not find more
epsilon than claimed; positive controls (deliberately broken mechanisms
built here) show that it can find a violation.

The canary lives in a feature the rest of D never uses (column 1 is zero in
D), so the statistic "coefficient of column 1" sees only noise under D and
noise plus the canary's clipped gradients under D'.  A small public
``clip_norm`` keeps the canary's gradient at the clip in every step (the
logistic derivative stays above it), so each step uses its full sensitivity.
"""

import dataclasses
import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpe

import sklearn_dp.solvers._gradient_descent as gd_module
from sklearn_dp import DPLogisticRegression
from sklearn_dp.accounting import epsilon_of_event
from sklearn_dp.solvers import PrivacyPlan, _registry
from sklearn_dp.testing import audit_mechanism

DELTA = 1e-5


# --------------------------------------------------------------------------
# The audit
# --------------------------------------------------------------------------


def audit(run, n_runs, claimed_epsilon, seed_offset=0):
    """run(dataset, seed) -> scalar statistic; dataset 0 is D, 1 is D'.

    ``n_runs`` runs per data set choose the threshold and ``n_runs`` fresh ones
    give the 95% lower bound (:func:`sklearn_dp.testing.audit_mechanism`).
    """
    return audit_mechanism(
        run,
        claimed_epsilon=claimed_epsilon,
        delta=DELTA,
        n_runs=2 * n_runs,
        calibration_runs=n_runs,
        seed_offset=seed_offset * 10_000_019,
        criterion="empirical",
    ).epsilon_lower_bound


def canary_data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.uniform(-1, 1, n), np.zeros(n)])
    y = (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)
    X_prime = np.vstack([X, [0.0, 1e6]])  # norm 1e6, clipped to data_norm
    y_prime = np.append(y, 1)
    return (X, y), (X_prime, y_prime)


def coef_on_canary_feature(solver, epsilon, max_iter, **params):
    datasets = canary_data()

    def run(dataset, seed):
        X, y = datasets[dataset]
        model = DPLogisticRegression(
            epsilon=epsilon,
            delta=DELTA,
            solver=solver,
            max_iter=max_iter,
            fit_intercept=False,
            clip_norm=0.05,
            classes=[0, 1],
            random_state=seed,
            data_norm=1.0,  # a fixed public bound: the audit isolates the solver
            **params,
        ).fit(X, y)
        return model.coef_[0, 1]

    return run


def broken_plan_dp_gd(n_samples, n_params, epsilon, delta, call):
    """A deliberate bug: noise calibrated for one step, used for max_iter steps."""
    one_step = broken_plan_dp_gd.original(
        n_samples, n_params, epsilon, delta, call.replace(max_iter=1)
    )
    return PrivacyPlan(one_step.event, one_step.noise_multiplier, int(call.max_iter))


broken_plan_dp_gd.original = gd_module.plan_dp_gd


# --------------------------------------------------------------------------
# Audits of the real mechanisms (must not exceed the claim)
# --------------------------------------------------------------------------


# Plain gradient steps, no penalty, last iterate: the canary coefficient is then
# exactly the sum of the per-step releases, so the audit sees the whole mechanism.
GD_LINEAR = {"penalty": None, "solver_options": {"momentum": None, "output": "last"}}
SGD_LINEAR = {"penalty": None, "solver_options": {"momentum": None}}

AUDITS = [
    # solver, epsilon, max_iter, extra params
    ("dp_gd", 1.0, 1, {}),
    ("dp_gd", 4.0, 16, GD_LINEAR),
    # Default sampling rate 0.1: an explicit batch_size is turned into a rate
    # with the noisy row count, so at n = 20 every fit would calibrate anew.
    ("dp_sgd", 2.0, 10, SGD_LINEAR),
]


@pytest.mark.parametrize("solver, epsilon, max_iter, params", AUDITS)
def test_audit_does_not_exceed_claimed_epsilon(solver, epsilon, max_iter, params):
    run = coef_on_canary_feature(solver, epsilon, max_iter, **params)
    eps_lb = audit(run, n_runs=300, claimed_epsilon=epsilon)
    assert eps_lb <= epsilon, f"audit found epsilon >= {eps_lb:.3f} > claimed {epsilon}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "solver, epsilon, max_iter, params",
    AUDITS
    + [
        ("dp_gd", 5.0, 4, GD_LINEAR),  # 8.0 was above the largest bound of 3000 runs (6.70)
        ("dp_gd", 2.0, 64, {}),
        ("dp_sgd", 4.0, 30, {"batch_size": 10, **SGD_LINEAR}),
    ],
)
def test_audit_does_not_exceed_claimed_epsilon_thorough(solver, epsilon, max_iter, params):
    run = coef_on_canary_feature(solver, epsilon, max_iter, **params)
    eps_lb = audit(run, n_runs=3000, claimed_epsilon=epsilon, seed_offset=7)
    assert eps_lb <= epsilon, f"audit found epsilon >= {eps_lb:.3f} > claimed {epsilon}"


# --------------------------------------------------------------------------
# Positive controls: the audit has power against real mistakes
# --------------------------------------------------------------------------


def test_audit_detects_noise_calibrated_for_one_step(monkeypatch):
    """64 steps at the one-step multiplier: the true epsilon at delta=1e-5 is about 11."""
    # The estimator plans through the registry and hands the plan to dp_gd.
    spec = _registry.SOLVERS["dp_gd"]
    monkeypatch.setitem(
        _registry._REGISTRY, "dp_gd", dataclasses.replace(spec, plan=broken_plan_dp_gd)
    )
    monkeypatch.setattr(gd_module, "plan_dp_gd", broken_plan_dp_gd)
    epsilon = 1.0
    run = coef_on_canary_feature("dp_gd", epsilon, 64, **GD_LINEAR)
    eps_lb = audit(run, n_runs=300, claimed_epsilon=epsilon)
    assert eps_lb > epsilon + 0.5, eps_lb


# --------------------------------------------------------------------------
# The private row count n: estimators never release it except through a DP
# count (fixed after this suite found dp_gd dividing by the true n)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd"])
def test_output_scale_does_not_reveal_the_row_count(solver):
    # 200 zero features keep the audit's power against the bug it guards (the
    # noise divided by the true n: 5 under D, 6 under D'): on that statistic,
    # 200 runs find epsilon >= 3.8 at d = 200 (4.0 at d = 1000, 2.0 at d = 100).
    n, d, epsilon = 5, 200, 1.0
    X, y = np.zeros((n, d)), np.array([0, 1, 0, 1, 0])
    X_prime, y_prime = np.zeros((n + 1, d)), np.append(y, 1)  # canary: one all-zero row
    datasets = ((X, y), (X_prime, y_prime))

    def run(dataset, seed):
        Xi, yi = datasets[dataset]
        # dp_sgd's default batch size is min(n, 32): the full data, normalised by n.
        model = DPLogisticRegression(
            epsilon=epsilon,
            delta=DELTA,
            solver=solver,
            max_iter=1,
            fit_intercept=False,
            penalty=None,
            classes=[0, 1],
            random_state=seed,
        ).fit(Xi, yi)
        return -float(np.sum(model.coef_**2))  # the noise is divided by n + 1 under D'

    eps_lb = audit(run, n_runs=200, claimed_epsilon=epsilon)
    assert eps_lb <= epsilon, f"audit found epsilon >= {eps_lb:.3f} > claimed {epsilon}"


def test_output_scale_does_not_reveal_the_row_count_taken_from_the_label_set():
    # Without classes the count is the sum of the label set's noisy counts:
    # the noise divided by it must not tell n from n + 1 either.
    n, d, epsilon = 200, 200, 1.0
    y = np.arange(n) % 2
    X, X_prime = np.zeros((n, d)), np.zeros((n + 1, d))
    datasets = ((X, y), (X_prime, np.append(y, 1)))

    def run(dataset, seed):
        Xi, yi = datasets[dataset]
        model = DPLogisticRegression(
            epsilon=epsilon,
            delta=DELTA,
            solver="dp_gd",
            max_iter=1,
            fit_intercept=False,
            penalty=None,
            data_norm=1.0,
            random_state=seed,
        ).fit(Xi, yi)
        return -float(np.sum(model.coef_**2))

    eps_lb = audit(run, n_runs=200, claimed_epsilon=epsilon)
    assert eps_lb <= epsilon, f"audit found epsilon >= {eps_lb:.3f} > claimed {epsilon}"


def _gaussian_pair_epsilon(delta, p, q):
    """Exact epsilon at delta of the pair of 1-d Gaussians p = (mean, std), q = (mean, std),
    both directions (hockey-stick divergence by quadrature on a fine grid)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    lo = min(p[0], q[0]) - 20 * max(p[1], q[1])
    hi = max(p[0], q[0]) + 20 * max(p[1], q[1])
    x = np.linspace(lo, hi, 400_001)

    def divergence(eps, a, b):
        gap = norm.pdf(x, b[0], b[1]) - math.exp(eps) * norm.pdf(x, a[0], a[1])
        return np.trapezoid(np.maximum(gap, 0.0), x)

    result = 0.0
    for a, b in ((p, q), (q, p)):
        if divergence(0.0, a, b) > delta:
            result = max(result, brentq(lambda e: divergence(e, a, b) - delta, 0.0, 100.0))
    return result


def test_dp_gd_normalised_release_has_sensitivity_of_the_clip():
    """Exact computation, no sampling: one step of dp_gd on D (n identical rows whose
    gradients all sit at the clip) and D' = D + one row with the opposite label.

    Both runs average with the same public normaliser (as estimators do with
    their DP count): the release then moves by at most the clip."""
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import BinaryLogisticLoss
    from sklearn_dp.solvers import dp_gd

    n, epsilon, delta = 1000, 1.0, DELTA
    X, y = np.ones((n, 1)), np.ones(n)
    X_prime, y_prime = np.ones((n + 1, 1)), np.append(y, -1.0)
    common = dict(n_outputs=1, alpha=0.0, delta=delta, max_iter=1, momentum=None, output="last")
    laws = []
    for Xi, yi in ((X, y), (X_prime, y_prime)):
        data = bound_data(Xi, yi, data_norm=1.0, fit_intercept=False, n_public=n, normalizer=n)
        private = dp_gd(data, BinaryLogisticLoss(), epsilon=epsilon, random_state=0, **common)
        details = private.plan.details
        # the mean of the release: the same step without noise, same clip
        mean = dp_gd(
            data, BinaryLogisticLoss(), epsilon=math.inf, clip_norm=details["clip_norm"], **common
        ).coef[0, 0]
        std = details["step_size"] * details["noise_std"] / data.normalizer
        laws.append((mean, std))
    # In units of the noise, the release may move by 1 / noise_multiplier at most.
    shift = abs(laws[1][0] - laws[0][0]) / laws[1][1]
    true_epsilon = _gaussian_pair_epsilon(delta, laws[0], laws[1])
    assert shift <= 1.0001 / private.plan.noise_multiplier, (shift, true_epsilon)
    assert true_epsilon <= epsilon


def test_dp_sgd_n_iter_does_not_reveal_the_row_count():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1001, 3)) / 3
    y = (X[:, 0] > 0).astype(int)
    fits = [
        DPLogisticRegression(
            epsilon=1.0, delta=DELTA, solver="dp_sgd", classes=[0, 1], random_state=0
        ).fit(X[:m], y[:m])
        for m in (1000, 1001)
    ]
    assert fits[0].n_iter_ == fits[1].n_iter_


# --------------------------------------------------------------------------
# Recorded dp_event_ recomputes to at most the claimed epsilon
# --------------------------------------------------------------------------


def _classification_data(n, n_classes, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(n_classes, 4))
    y = rng.integers(0, n_classes, size=n)
    X = centers[y] + rng.normal(size=(n, 4))
    return X / 4, y


EVENT_SETTINGS = [
    # solver, n_classes, epsilon, delta, extra params, exact (closed form)
    ("dp_gd", 2, 1.0, 1e-5, {}, True),
    ("dp_gd", 2, 0.1, 1e-6, {"max_iter": 7}, True),
    ("dp_gd", 3, 2.0, 1e-5, {"max_iter": 20, "C": 10.0}, True),
    ("dp_gd", 4, 8.0, 1e-7, {"penalty": None, "max_iter": 5}, True),
    ("dp_sgd", 2, 1.0, 1e-5, {"batch_size": 50, "max_iter": 100}, False),
    ("dp_sgd", 3, 2.0, 1e-5, {"batch_size": 50, "max_iter": 100}, False),
    ("dp_sgd", 2, 1.0, 1e-5, {}, False),
]


@pytest.mark.parametrize("solver, n_classes, epsilon, delta, params, exact", EVENT_SETTINGS)
def test_recorded_dp_event_meets_claimed_epsilon(solver, n_classes, epsilon, delta, params, exact):
    X, y = _classification_data(500, n_classes)
    model = DPLogisticRegression(
        epsilon=epsilon,
        delta=delta,
        solver=solver,
        classes=list(range(n_classes)),
        random_state=0,
        data_norm=1.5,
        **params,
    ).fit(X, y)
    assert model.solver_ == solver
    assert model.privacy_spent_ == (epsilon, delta)
    recomputed = epsilon_of_event(model.dp_event_, model.delta)
    assert recomputed <= epsilon
    # Calibrated, not wasteful: the row count and the solver share epsilon by
    # a numerical (PLD) composition, searched to within a fraction of a percent;
    # a sampling rate set from the noisy count (an explicit batch_size) makes
    # the solver's profile adaptive, which gets the basic-composition share.
    adaptive = "batch_size" in params
    assert recomputed >= epsilon * (0.995 if exact else 0.95 if adaptive else 0.97)
    count, leaves = model.dp_event_.events
    assert isinstance(count, dpe.LaplaceDpEvent)
    if isinstance(leaves, dpe.SelfComposedDpEvent):
        assert leaves.count == model.n_iter_
        leaves = leaves.event
    if solver == "dp_gd":
        assert isinstance(leaves, dpe.GaussianDpEvent)
    else:
        assert isinstance(leaves, dpe.PoissonSampledDpEvent)
        assert isinstance(leaves.event, dpe.GaussianDpEvent)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd"])
def test_infinite_epsilon_records_a_non_private_event(solver):
    X, y = _classification_data(200, 2)
    model = DPLogisticRegression(
        epsilon=math.inf, solver=solver, classes=[0, 1], random_state=0
    ).fit(X, y)
    assert isinstance(model.dp_event_, dpe.NonPrivateDpEvent)
    assert model.privacy_spent_ == (math.inf, 0.0)
    assert epsilon_of_event(model.dp_event_, 1e-5) == math.inf
