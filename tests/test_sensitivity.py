"""Exact unit tests of every sensitivity and noise scale of dp_gd and dp_sgd.

Per-sample gradients are built explicitly here (np.outer(x_i, dl/dz_i) with
the derivative written out in the test, never taken from the package), so
the package's two-mat-vec implementation is checked against the definition.
Neighbouring relation: add/remove one row.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit, softmax

from sklearn_dp import _noise
from sklearn_dp._clipped_sums import clipped_gradient_sum
from sklearn_dp._data import bound_data, clip_labels, clip_rows_l2, row_l2_norms
from sklearn_dp._losses import (
    AbsoluteLoss,
    BinaryLogisticLoss,
    HuberLoss,
    MultinomialLoss,
    SquaredLoss,
)
from sklearn_dp.accounting import (
    epsilon_of_event,
    gaussian_noise_multiplier,
    subsampled_gaussian_noise_multiplier,
)
from sklearn_dp.solvers import dp_gd, dp_sgd, plan_call
from sklearn_dp.solvers._gradient_descent import DEFAULT_CLIP_FRACTION, gradient_bound

LOSS_NAMES = ["binary", "multinomial", "squared", "huber", "absolute"]
N_CLASSES = 3


def make_loss(name):
    return {
        "binary": BinaryLogisticLoss(),
        "multinomial": MultinomialLoss(),
        "squared": SquaredLoss(),
        "huber": HuberLoss(0.8),
        "absolute": AbsoluteLoss(),
    }[name]


def reference_derivative(name, z, y):
    """dl/dz of one sample, from the definition of each loss (z of shape (k,))."""
    if name == "binary":
        return np.array([-y * expit(-y * z[0])])
    if name == "multinomial":
        d = softmax(z)
        d[int(y)] -= 1.0
        return d
    r = z[0] - y
    if name == "squared":
        return np.array([r])
    if name == "huber":
        return np.array([np.clip(r, -0.8, 0.8)])
    if name == "absolute":
        return np.array([np.sign(r)])
    raise AssertionError(name)


def reference_clipped_sum(X, y, W, name, clip_norm):
    """Sum of explicitly built, explicitly clipped per-sample gradients."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    total = np.zeros_like(W, dtype=float)
    for x_i, y_i in zip(X, y):
        g = np.outer(x_i, reference_derivative(name, x_i @ W, y_i))
        norm = np.linalg.norm(g)
        if clip_norm is not None and norm > clip_norm:
            g = g * (clip_norm / norm)
        total += g
    return total


def make_labels(name, rng, n, extreme=False):
    if name == "binary":
        return rng.choice([-1.0, 1.0], size=n)
    if name == "multinomial":
        return rng.integers(0, N_CLASSES, size=n)
    scale = 1e6 if extreme else 3.0
    return rng.normal(scale=scale, size=n)


def n_outputs_of(name):
    return N_CLASSES if name == "multinomial" else 1


# --------------------------------------------------------------------------
# clipped_gradient_sum
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", LOSS_NAMES)
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("clip_norm", [None, 0.05, 0.7, 50.0])
def test_clipped_gradient_sum_equals_per_sample_loop(name, sparse, clip_norm):
    rng = np.random.default_rng(1)
    n, d = 40, 6
    X = rng.normal(size=(n, d)) * rng.uniform(0.01, 5, size=(n, 1))
    X[rng.random(size=X.shape) < 0.3] = 0.0
    X[3] = 0.0  # an all-zero row
    y = make_labels(name, rng, n)
    W = rng.normal(size=(d, n_outputs_of(name)))
    expected = reference_clipped_sum(X, y, W, name, clip_norm)
    Xin = sp.csr_matrix(X) if sparse else X
    got = clipped_gradient_sum(Xin, y, W, make_loss(name), clip_norm, row_l2_norms(Xin))
    assert isinstance(got, np.ndarray) and got.shape == W.shape
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


def test_clipped_gradient_sum_sample_weight_and_inf_clip():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 4))
    y = rng.choice([-1.0, 1.0], size=30)
    W = rng.normal(size=(4, 1))
    w = rng.uniform(0, 1, size=30)
    loss = BinaryLogisticLoss()
    got = clipped_gradient_sum(X, y, W, loss, 0.3, row_l2_norms(X), sample_weight=w)
    expected = sum(
        w[i] * reference_clipped_sum(X[i : i + 1], y[i : i + 1], W, "binary", 0.3)
        for i in range(30)
    )
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        clipped_gradient_sum(X, y, W, loss, math.inf, row_l2_norms(X)),
        reference_clipped_sum(X, y, W, "binary", None),
        rtol=1e-10,
    )


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(LOSS_NAMES),
    n=st.integers(0, 12),
    d=st.integers(1, 5),
    sparse=st.booleans(),
    row_scale=st.sampled_from([0.0, 1e-3, 1.0, 1e3, 1e6, 1e9]),
    extreme_label=st.booleans(),
    clip_norm=st.floats(1e-3, 10.0),
    w_scale=st.sampled_from([0.0, 0.1, 1.0, 100.0]),
)
def test_adding_any_row_moves_clipped_sum_by_at_most_clip(
    seed, name, n, d, sparse, row_scale, extreme_label, clip_norm, w_scale
):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = make_labels(name, rng, n)
    W = w_scale * rng.normal(size=(d, n_outputs_of(name)))
    new_row = row_scale * rng.normal(size=(1, d))
    new_label = make_labels(name, rng, 1, extreme=extreme_label)
    if name == "binary" and extreme_label:
        new_label = -np.sign(new_row @ W[:, :1]).ravel() if np.any(new_row @ W) else new_label
    X_plus = np.vstack([X, new_row])
    y_plus = np.concatenate([y, new_label])
    if sparse:
        X, X_plus = sp.csr_matrix(X), sp.csr_matrix(X_plus)
    loss = make_loss(name)
    before = clipped_gradient_sum(X, y, W, loss, clip_norm, row_l2_norms(X))
    after = clipped_gradient_sum(X_plus, y_plus, W, loss, clip_norm, row_l2_norms(X_plus))
    change = np.linalg.norm(after - before)
    # float slack: the sums of the other rows are recomputed in another order
    slack = 1e-9 * (1 + np.abs(before).sum())
    assert change <= clip_norm * (1 + 1e-12) + slack
    assert np.all(np.isfinite(after))
    # ...and the change is exactly the new row's clipped gradient
    np.testing.assert_allclose(
        after - before,
        reference_clipped_sum(new_row, new_label, W, name, clip_norm),
        rtol=1e-7,
        atol=slack + 1e-12 * clip_norm,
    )


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(LOSS_NAMES),
    n=st.integers(1, 12),
    d=st.integers(1, 5),
    sparse=st.booleans(),
    row_scale=st.sampled_from([1e-3, 1.0, 1e6, 1e9]),
    fit_intercept=st.booleans(),
    data_norm=st.floats(0.1, 10.0),
)
def test_adding_a_bounded_row_moves_the_sum_by_at_most_the_gradient_bound(
    seed, name, n, d, sparse, row_scale, fit_intercept, data_norm
):
    """Through bound_data and the default clip of a private fit (what the solvers do)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = make_labels(name, rng, n)
    new_row = row_scale * rng.normal(size=(1, d))
    new_label = make_labels(name, rng, 1, extreme=True)
    X_plus = np.vstack([X, new_row])
    y_plus = np.concatenate([y, new_label])
    if name in ("squared", "huber", "absolute"):
        y, y_plus = clip_labels(y, 5.0), clip_labels(y_plus, 5.0)
    if sparse:
        X, X_plus = sp.csr_matrix(X), sp.csr_matrix(X_plus)
    kw = dict(data_norm=data_norm, fit_intercept=fit_intercept, intercept_scaling=1.0)
    a, b = bound_data(X, y, **kw), bound_data(X_plus, y_plus, **kw)
    loss = make_loss(name)
    clip = gradient_bound(loss, a.row_norm_bound, 2.0 if name == "squared" else None)
    W = rng.normal(size=(a.n_columns, n_outputs_of(name)))
    change = np.linalg.norm(
        clipped_gradient_sum(b.X, b.y, W, loss, clip, b.row_norms)
        - clipped_gradient_sum(a.X, a.y, W, loss, clip, a.row_norms)
    )
    assert change <= clip * (1 + 1e-9) + 1e-9 * n


# --------------------------------------------------------------------------
# bound_data
# --------------------------------------------------------------------------


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("intercept_scaling", [1.0, 3.0])
def test_bound_data_clips_rows_and_appends_intercept(fit_intercept, intercept_scaling):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(6, 4)) * 0.1
    X[2] *= 1e10  # norm ~ 1e9
    X[4] = 0.0
    data_norm = 0.7
    results = []
    for Xin in (X, sp.csr_matrix(X)):
        b = bound_data(
            Xin,
            np.ones(6),
            data_norm=data_norm,
            fit_intercept=fit_intercept,
            intercept_scaling=intercept_scaling,
        )
        Xb = b.X.toarray() if sp.issparse(b.X) else b.X
        features = Xb[:, :4]
        norms = np.linalg.norm(features, axis=1)
        assert norms[2] == pytest.approx(data_norm, rel=1e-12)
        # direction of the clipped row is kept
        np.testing.assert_allclose(features[2] / norms[2], X[2] / np.linalg.norm(X[2]), rtol=1e-12)
        # short rows untouched
        short = [0, 1, 3, 4, 5]
        np.testing.assert_array_equal(features[short], X[short])
        expected_bound = math.hypot(data_norm, intercept_scaling) if fit_intercept else data_norm
        assert b.row_norm_bound == pytest.approx(expected_bound, rel=1e-15)
        assert np.all(b.row_norms <= b.row_norm_bound * (1 + 1e-12))
        np.testing.assert_allclose(b.row_norms, np.linalg.norm(Xb, axis=1), rtol=1e-12)
        if fit_intercept:
            assert Xb.shape == (6, 5)
            np.testing.assert_array_equal(Xb[:, -1], intercept_scaling)
            assert b.row_norms[2] == pytest.approx(expected_bound, rel=1e-12)
            assert b.penalized.tolist() == [True] * 4 + [False]
        else:
            assert Xb.shape == (6, 4)
            assert b.penalized.all()
        results.append(Xb)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-14)
    # the input is never modified
    assert np.linalg.norm(X[2]) > 1e8


def test_clip_rows_l2_overflowing_row_stays_bounded():
    X = np.array([[1e200, 1e200], [0.3, 0.4]])
    for Xin in (X, sp.csr_matrix(X)):
        out = clip_rows_l2(Xin, 1.0)
        out = out.toarray() if sp.issparse(out) else out
        assert np.all(np.isfinite(out))
        assert np.all(np.linalg.norm(out, axis=1) <= 1.0 + 1e-12)


# --------------------------------------------------------------------------
# gradient_bound
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "loss, derivative_bound",
    [
        (BinaryLogisticLoss(), 1.0),
        (MultinomialLoss(), math.sqrt(2)),
        (HuberLoss(0.8), 0.8),
        (AbsoluteLoss(), 1.0),
    ],
)
def test_gradient_bound(loss, derivative_bound):
    R = math.hypot(2.0, 1.0)
    natural = derivative_bound * R
    default = gradient_bound(loss, R, None)
    assert default == pytest.approx(DEFAULT_CLIP_FRACTION * natural, rel=1e-15)
    assert gradient_bound(loss, R, None, private=False) == pytest.approx(natural, rel=1e-15)
    assert gradient_bound(loss, R, 0.1) == 0.1
    assert gradient_bound(loss, R, 1e9) == pytest.approx(natural, rel=1e-15)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="clip_norm"):
            gradient_bound(loss, R, bad)


def test_multinomial_and_logistic_derivative_bounds_hold():
    rng = np.random.default_rng(4)
    Z = rng.normal(scale=30, size=(2000, 5))
    y = rng.integers(0, 5, size=2000)
    assert np.linalg.norm(MultinomialLoss().derivative(Z, y), axis=1).max() <= math.sqrt(2)
    yb = rng.choice([-1.0, 1.0], size=2000)
    assert np.abs(BinaryLogisticLoss().derivative(Z[:, :1], yb)).max() <= 1.0


def test_squared_loss_needs_clip_norm():
    with pytest.raises(ValueError, match="clip_norm"):
        gradient_bound(SquaredLoss(), 1.0, None)
    assert gradient_bound(SquaredLoss(), 1.0, 2.5) == 2.5


# --------------------------------------------------------------------------
# dp_gd: noise scale and the first steps, reproduced exactly
# --------------------------------------------------------------------------


def _binary_data(n=50, d=4, seed=0, fit_intercept=True, sparse=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    if sparse:
        X = sp.csr_matrix(X)
    return bound_data(X, y, data_norm=1.5, fit_intercept=fit_intercept)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("epsilon, clip_norm", [(1.0, None), (0.3, 0.2)])
def test_dp_gd_first_step_reproduced_exactly(sparse, epsilon, clip_norm):
    data = _binary_data(sparse=sparse)
    loss = BinaryLogisticLoss()
    seed, alpha, delta, T = 123, 0.01, 1e-5, 1
    result = dp_gd(
        data,
        loss,
        n_outputs=1,
        alpha=alpha,
        epsilon=epsilon,
        delta=delta,
        max_iter=T,
        clip_norm=clip_norm,
        momentum=None,
        output="last",
        random_state=seed,
    )
    sigma = gaussian_noise_multiplier(epsilon, delta, T)
    C = clip_norm if clip_norm else DEFAULT_CLIP_FRACTION * data.row_norm_bound
    step = 1.0 / (0.25 * data.row_norm_bound**2 + alpha)
    W0 = np.zeros((data.n_columns, 1))
    grad_sum = reference_clipped_sum(data.X, data.y, W0, "binary", C)
    noisy = _noise.gaussian(
        grad_sum, sensitivity=C, noise_std=sigma * C, rng=np.random.default_rng(seed)
    )
    expected = W0 - step * (noisy / data.n_samples)
    np.testing.assert_allclose(result.coef, expected, rtol=1e-12, atol=1e-14)

    assert result.plan.noise_multiplier == sigma
    assert result.plan.details["noise_std"] == pytest.approx(sigma * C, rel=1e-15)
    assert result.plan.details["clip_norm"] == pytest.approx(C, rel=1e-15)
    assert result.plan.details["step_size"] == pytest.approx(step, rel=1e-15)
    assert result.dp_event == dpe.GaussianDpEvent(sigma)
    achieved = epsilon_of_event(result.dp_event, delta)
    assert achieved <= epsilon
    assert achieved == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize("multinomial", [False, True])
def test_dp_gd_several_steps_reproduced_exactly(multinomial):
    """Plain gradient descent (no momentum) with the L2 penalty, T steps, last iterate."""
    rng = np.random.default_rng(5)
    n, d = 60, 3
    X = rng.normal(size=(n, d))
    if multinomial:
        y, name, loss = rng.integers(0, N_CLASSES, size=n), "multinomial", MultinomialLoss()
        k = N_CLASSES
    else:
        y, name, loss, k = np.where(X[:, 1] > 0, 1.0, -1.0), "binary", BinaryLogisticLoss(), 1
    data = bound_data(X, y, data_norm=1.0, fit_intercept=True)
    seed, alpha, epsilon, delta, T = 7, 0.05, 2.0, 1e-6, 6
    result = dp_gd(
        data,
        loss,
        n_outputs=k,
        alpha=alpha,
        epsilon=epsilon,
        delta=delta,
        max_iter=T,
        momentum=None,
        output="last",
        random_state=seed,
    )
    sigma = gaussian_noise_multiplier(epsilon, delta, T)
    C = DEFAULT_CLIP_FRACTION * loss.derivative_bound * data.row_norm_bound
    step = 1.0 / (loss.smoothness * data.row_norm_bound**2 + alpha)
    noise_rng = np.random.default_rng(seed)
    W = np.zeros((data.n_columns, k))
    for _ in range(T):
        g = reference_clipped_sum(data.X, data.y, W, name, C)
        g = _noise.gaussian(g, sensitivity=C, noise_std=sigma * C, rng=noise_rng) / n
        g[:-1] += alpha * W[:-1]  # intercept (last row) not penalised
        W = W - step * g
    np.testing.assert_allclose(result.coef, W, rtol=1e-10, atol=1e-13)
    assert result.n_iter == T
    assert result.dp_event == dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(sigma), T)
    assert epsilon_of_event(result.dp_event, delta) <= epsilon
    assert epsilon_of_event(result.dp_event, delta) == pytest.approx(epsilon, rel=1e-6)


@pytest.mark.parametrize("solver", ["dp_gd", "dp_sgd"])
def test_noise_std_is_multiplier_times_clip(solver):
    """Empirical noise scale on data whose gradients are all zero (all-zero rows).

    Independent of the order of random draws: with zero gradients the first
    iterate is -step * noise / normaliser.
    """
    n, d = 40, 5000
    data = bound_data(np.zeros((n, d)), np.ones(n), data_norm=2.0, fit_intercept=False)
    loss = BinaryLogisticLoss()
    common = dict(
        n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-5, max_iter=1, momentum=None, random_state=0
    )
    if solver == "dp_gd":
        result = dp_gd(data, loss, output="last", **common)
        sigma = gaussian_noise_multiplier(1.0, 1e-5, 1)
        normaliser = n
    else:
        result = dp_sgd(data, loss, batch_size=10, **common)
        sigma = subsampled_gaussian_noise_multiplier(1.0, 1e-5, 10 / n, 1)
        normaliser = 10
    C = DEFAULT_CLIP_FRACTION * 2.0
    step = 1.0 / (0.25 * 4.0)
    noise = -result.coef.ravel() * normaliser / step
    assert result.plan.details["noise_std"] == pytest.approx(sigma * C, rel=1e-15)
    # sample std of 5000 normals is within ~2% (4 standard errors 4/sqrt(2*5000) = 4%)
    assert np.std(noise) == pytest.approx(sigma * C, rel=0.04)
    assert abs(np.mean(noise)) < 4 * sigma * C / math.sqrt(d)


def test_plan_dp_gd_event_and_public_inputs_only():
    for T in (1, 5, 100):
        plan = plan_call("dp_gd", 1000, 10, 1.0, 1e-5, max_iter=T)
        sigma = gaussian_noise_multiplier(1.0, 1e-5, T)
        assert plan.noise_multiplier == sigma
        assert plan.n_steps == T
        expected = dpe.GaussianDpEvent(sigma)
        if T > 1:
            expected = dpe.SelfComposedDpEvent(expected, T)
        assert plan.event == expected
    inf_plan = plan_call("dp_gd", 1000, 10, math.inf, 1e-5, max_iter=3)
    assert inf_plan.noise_multiplier == 0.0
    assert isinstance(inf_plan.event, dpe.NonPrivateDpEvent)


# --------------------------------------------------------------------------
# dp_sgd: event, Poisson sampling, first steps reproduced exactly
# --------------------------------------------------------------------------


# (q, T) pairs shared with other tests, so the (cached) calibrations run once.
@pytest.mark.parametrize("n, batch_size, T", [(1000, 100, 100), (2000, 200, 50), (40, 10, 1)])
def test_plan_dp_sgd_event(n, batch_size, T):
    plan = plan_call("dp_sgd", n, 10, 1.0, 1e-5, batch_size=batch_size, max_iter=T)
    q = batch_size / n
    sigma = subsampled_gaussian_noise_multiplier(1.0, 1e-5, q, T)
    step = dpe.PoissonSampledDpEvent(q, dpe.GaussianDpEvent(sigma))
    assert plan.event == (step if T == 1 else dpe.SelfComposedDpEvent(step, T))
    assert plan.noise_multiplier == sigma
    assert plan.details["sampling_probability"] == q
    assert plan.n_steps == T
    assert epsilon_of_event(plan.event, 1e-5) <= 1.0


def test_plan_dp_sgd_rejects_bad_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        plan_call("dp_sgd", 100, 3, 1.0, 1e-5, batch_size=0, max_iter=3)
    # The row count is a noisy stand-in: a batch larger than it means full batches.
    plan = plan_call("dp_sgd", 100, 3, 1.0, 1e-5, batch_size=101, max_iter=3)
    assert plan.details["sampling_probability"] == 1.0


def test_plan_dp_sgd_default_does_not_depend_on_the_row_count():
    plans = [plan_call("dp_sgd", n, 3, 1.0, 1e-5) for n in (None, 1000, 1001)]
    assert plans[0].event == plans[1].event == plans[2].event


def test_poisson_batch_size_is_binomial_and_rows_uniform():
    n, q, draws = 40, 0.15, 20000
    rng = np.random.default_rng(11)
    sizes = np.empty(draws, dtype=int)
    counts = np.zeros(n)
    pair = 0
    for i in range(draws):
        batch = _noise.poisson_sample(n, q, rng)
        assert np.all(np.diff(batch) > 0)  # sorted, no repeats
        assert batch.size == 0 or (batch[0] >= 0 and batch[-1] < n)
        sizes[i] = batch.size
        counts[batch] += 1
        pair += (0 in batch) and (1 in batch)
    # batch size ~ Binomial(n, q): chi-square goodness of fit (bins with expected >= 5)
    ks = np.arange(n + 1)
    expected = stats.binom.pmf(ks, n, q) * draws
    observed = np.bincount(sizes, minlength=n + 1)
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-3
    # each row is in the batch independently with probability q
    z = (counts - draws * q) / math.sqrt(draws * q * (1 - q))
    assert stats.chi2.sf(np.sum(z**2), df=n) > 1e-3
    assert abs(pair / draws - q**2) < 5 * math.sqrt(q**2 / draws)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("name", ["binary", "multinomial", "absolute"])
def test_dp_sgd_steps_reproduced_exactly(sparse, name):
    """The batch is drawn first, then the noise, from one generator seeded by random_state."""
    rng = np.random.default_rng(8)
    n, d, T, batch_size = 80, 3, 4, 12
    X = rng.normal(size=(n, d))
    y = make_labels(name, rng, n)
    k = n_outputs_of(name)
    loss = make_loss(name)
    data = bound_data(sp.csr_matrix(X) if sparse else X, y, data_norm=1.0, fit_intercept=True)
    seed, alpha, epsilon, delta = 99, 0.02, 1.5, 1e-5
    step = 0.3
    result = dp_sgd(
        data,
        loss,
        n_outputs=k,
        alpha=alpha,
        epsilon=epsilon,
        delta=delta,
        max_iter=T,
        batch_size=batch_size,
        step_size=step,
        momentum=None,
        random_state=seed,
    )
    q = batch_size / n
    sigma = subsampled_gaussian_noise_multiplier(epsilon, delta, q, T)
    C = DEFAULT_CLIP_FRACTION * loss.derivative_bound * data.row_norm_bound
    Xd = data.X.toarray() if sparse else data.X
    g_rng = np.random.default_rng(seed)
    W = np.zeros((d + 1, k))
    tail = []
    for t in range(T):
        size = g_rng.binomial(n, q)
        batch = np.sort(g_rng.choice(n, size=size, replace=False))
        g = reference_clipped_sum(Xd[batch], data.y[batch], W, name, C)
        g = _noise.gaussian(g, sensitivity=C, noise_std=sigma * C, rng=g_rng) / (q * n)
        g[:-1] += alpha * W[:-1]
        W = W - step * g
        if t >= T // 2:
            tail.append(W)
    np.testing.assert_allclose(result.coef, np.mean(tail, axis=0), rtol=1e-10, atol=1e-13)
    assert result.plan.noise_multiplier == sigma
    assert result.plan.details["noise_std"] == pytest.approx(sigma * C, rel=1e-15)
    assert result.plan.details["clip_norm"] == pytest.approx(C, rel=1e-15)
    assert epsilon_of_event(result.dp_event, delta) <= epsilon


def test_dp_sgd_first_step_reproduced_exactly():
    data = _binary_data(n=40)
    seed, epsilon, delta, batch_size = 123, 1.0, 1e-5, 10
    result = dp_sgd(
        data,
        BinaryLogisticLoss(),
        n_outputs=1,
        alpha=0.01,
        epsilon=epsilon,
        delta=delta,
        max_iter=1,
        batch_size=batch_size,
        momentum=None,
        random_state=seed,
    )
    q = batch_size / 40
    sigma = subsampled_gaussian_noise_multiplier(epsilon, delta, q, 1)
    C = DEFAULT_CLIP_FRACTION * data.row_norm_bound
    step = 1.0 / (0.25 * data.row_norm_bound**2 + 0.01)
    g_rng = np.random.default_rng(seed)
    batch = np.sort(g_rng.choice(40, size=g_rng.binomial(40, q), replace=False))
    W0 = np.zeros((data.n_columns, 1))
    grad_sum = reference_clipped_sum(data.X[batch], data.y[batch], W0, "binary", C)
    noisy = _noise.gaussian(grad_sum, sensitivity=C, noise_std=sigma * C, rng=g_rng)
    np.testing.assert_allclose(result.coef, -step * noisy / batch_size, rtol=1e-12, atol=1e-14)
    assert result.plan.noise_multiplier == sigma
    assert result.plan.details["noise_std"] == pytest.approx(sigma * C, rel=1e-15)
    assert result.dp_event == dpe.PoissonSampledDpEvent(q, dpe.GaussianDpEvent(sigma))
    assert epsilon_of_event(result.dp_event, delta) <= epsilon


# --------------------------------------------------------------------------
# Rows with huge norms cannot raise a step's sensitivity (end to end)
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize(
    "name, clip_norm",
    [("binary", None), ("binary", 0.3), ("multinomial", None), ("squared", 0.5), ("huber", None)],
)
def test_huge_row_cannot_raise_step_sensitivity(sparse, name, clip_norm):
    rng = np.random.default_rng(12)
    n, d = 30, 4
    X = rng.normal(size=(n, d))
    y = make_labels(name, rng, n)
    huge = 1e8 * rng.normal(size=(1, d))
    huge_label = make_labels(name, rng, 1, extreme=True)
    if name in ("squared", "huber"):
        y, huge_label = clip_labels(y, 10.0), clip_labels(huge_label, 10.0)
    X_plus, y_plus = np.vstack([X, huge]), np.concatenate([y, huge_label])
    if sparse:
        X, X_plus = sp.csr_matrix(X), sp.csr_matrix(X_plus)
    loss = make_loss(name)
    k = n_outputs_of(name)
    sums = []
    for Xi, yi in ((X, y), (X_plus, y_plus)):
        data = bound_data(Xi, yi, data_norm=1.0, fit_intercept=True)
        result = dp_gd(
            data,
            loss,
            n_outputs=k,
            alpha=0.0,
            epsilon=math.inf,
            delta=1e-5,
            max_iter=1,
            clip_norm=clip_norm,
            momentum=None,
            output="last",
            random_state=0,
        )
        step = result.plan.details["step_size"]
        # W1 = -step * grad_sum / n  =>  grad_sum = -W1 * n / step
        sums.append(-result.coef * data.n_samples / step)
        clip = result.plan.details["clip_norm"]
    natural = loss.derivative_bound * math.hypot(1.0, 1.0) if loss.derivative_bound else None
    expected_clip = clip_norm if clip_norm is not None else natural  # no noise: full bound
    if natural is not None and clip_norm is not None:
        expected_clip = min(clip_norm, natural)
    assert clip == pytest.approx(expected_clip, rel=1e-15)
    assert np.linalg.norm(sums[1] - sums[0]) <= clip * (1 + 1e-9)
