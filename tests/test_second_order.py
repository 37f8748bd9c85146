"""dp_newton: second-order kernels, their sensitivities, exact noise scales, the non-private optimum.

The kernels of ``sklearn_dp._clipped_sums`` ("Second-order and sufficient
statistics") are tested exactly: adding or removing one hostile row moves the
gradient sum by at most the clip and by exactly the row's clipped gradient,
and the ``svec`` of the Hessian sum by at most ``curvature_bound * R^2`` and
by exactly the row's own term ``A (x) x x^T``.
"""

from __future__ import annotations

import math
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import expit, softmax
from sklearn.linear_model import LogisticRegression, Ridge
from test_sensitivity_properties import (
    N_CLASSES,
    bound_both,
    change,
    clip_l2,
    dense_row,
    iterates,
    l2_cases,
    make_loss,
    moderate,
    n_outputs_of,
    prop,
    reference_gradient,
    slack,
)

from sklearn_dp import DPLogisticRegression, DPSCORegressor, PrivacyBudget
from sklearn_dp._clipped_sums import curvature_bound, newton_sums, svec, unsvec
from sklearn_dp._data import bound_data
from sklearn_dp._losses import get_loss
from sklearn_dp.accounting import epsilon_of_event, gaussian_noise_multiplier
from sklearn_dp.solvers import SOLVERS, dp_newton, plan_call
from sklearn_dp.solvers import _second_order as module
from sklearn_dp.solvers._second_order import (
    hessian_noise_norm,
    newton_multipliers,
)
from sklearn_dp.testing import trace_releases

# --------------------------------------------------------------------------
# svec and the curvature bounds
# --------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(m=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
def test_svec_is_an_isometry_and_unsvec_inverts_it(m, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, m))
    M = A + A.T
    v = svec(M)
    assert v.shape == (m * (m + 1) // 2,)
    assert np.linalg.norm(v) == pytest.approx(np.linalg.norm(M), rel=1e-12)
    np.testing.assert_allclose(unsvec(v, m), M, rtol=1e-12, atol=1e-12)
    # Any vector maps to a symmetric matrix (noise on the released vector).
    w = rng.normal(size=v.shape)
    S = unsvec(w, m)
    np.testing.assert_array_equal(S, S.T)
    assert np.linalg.norm(S) == pytest.approx(np.linalg.norm(w), rel=1e-12)


def test_unsvec_of_gaussian_noise_has_the_stated_variances_and_spectral_norm():
    """Diagonal variance s^2, off-diagonal s^2 / 2; spectral norm about sqrt(2 m) s."""
    rng = np.random.default_rng(0)
    m, s = 60, 0.7
    norms, diagonal, off = [], [], []
    for _ in range(40):
        E = unsvec(rng.normal(0.0, s, size=m * (m + 1) // 2), m)
        norms.append(np.linalg.norm(E, 2))
        diagonal.append(np.diag(E))
        off.append(E[np.triu_indices(m, 1)])
    assert np.var(np.concatenate(diagonal)) == pytest.approx(s**2, rel=0.1)
    assert np.var(np.concatenate(off)) == pytest.approx(s**2 / 2, rel=0.05)
    assert np.mean(norms) == pytest.approx(hessian_noise_norm(s, m), rel=0.1)


@settings(max_examples=200, deadline=None)
@given(k=st.integers(2, 12), seed=st.integers(0, 2**32 - 1), spike=st.floats(0, 50))
def test_multinomial_curvature_has_frobenius_norm_at_most_one_half(k, seed, spike):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=k) * spike
    p = softmax(z)
    A = np.diag(p) - np.outer(p, p)
    assert np.linalg.norm(A) <= curvature_bound(make_loss("multinomial")) + 1e-12
    # The bound is attained by two classes at 1/2 (the binary loss's 1/4, in z-units).
    half = np.array([0.5, 0.5])
    assert np.linalg.norm(np.diag(half) - np.outer(half, half)) == pytest.approx(0.5)


def test_curvature_bounds_of_the_losses():
    assert curvature_bound(make_loss("binary")) == 0.25
    assert curvature_bound(make_loss("multinomial")) == 0.5
    assert curvature_bound(make_loss("squared")) == 1.0
    assert curvature_bound(make_loss("huber")) == 1.0
    assert curvature_bound(make_loss("absolute")) is None


# --------------------------------------------------------------------------
# Sensitivity of the kernel's gradient and Hessian sums (hypothesis)
# --------------------------------------------------------------------------


def _reference_curvature(loss_name, z, y):
    """d^2 l / dz^2 of one sample from the loss's definition (k x k)."""
    if loss_name == "binary":
        p = expit(z[0])
        return np.array([[p * (1 - p)]])
    if loss_name == "multinomial":
        p = softmax(z)
        return np.diag(p) - np.outer(p, p)
    if loss_name in ("squared", "squared_unbounded"):
        return np.array([[1.0]])
    if loss_name == "huber":
        from test_sensitivity_properties import HUBER_K

        return np.array([[1.0 if abs(z[0] - y) <= HUBER_K else 0.0]])
    raise AssertionError(loss_name)


@prop(120)
@given(
    case=l2_cases(),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    W=iterates(8 * N_CLASSES),
)
def test_newton_sums_move_by_at_most_their_sensitivities(case, fit_intercept, clip_norm, W):
    """Gradient sum: at most the clip, exactly the row's clipped gradient; Hessian svec: at most
    curvature_bound * R^2, exactly svec(A (x) x x^T) of the added row."""
    loss_name, data_norm, nb = case
    loss = make_loss(loss_name)
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    if loss_name == "squared_unbounded" and clip_norm is None:
        clip_norm = 1.0
    k = n_outputs_of(loss_name)
    shape = (small.n_columns, k)
    W = W[: shape[0] * shape[1]].reshape(shape)
    sums = [newton_sums(d.design, d.y, W, loss, clip_norm, d.row_norms) for d in (small, big)]
    R2 = small.row_norm_bound**2
    sensitivity = curvature_bound(loss) * R2
    grads = [g for g, _ in sums]
    hessians = [svec(H) for _, H in sums]
    moved_g = change(nb, *grads)
    moved_h = change(nb, *hessians)
    bound = math.inf if clip_norm is None else clip_norm
    if clip_norm is not None:
        assert np.linalg.norm(moved_g) <= bound * (1 + 1e-12) + slack(*grads)
    assert np.linalg.norm(moved_h) <= sensitivity * (1 + 1e-12) + slack(*hessians)
    x_new = dense_row(big.X, nb.index)
    z = x_new @ W
    A = _reference_curvature(loss_name, z, nb.label)
    expected_h = svec(np.kron(A, np.outer(x_new, x_new)))
    sign = -1.0 if nb.removed else 1.0
    np.testing.assert_allclose(moved_h, sign * expected_h, rtol=1e-7, atol=slack(*hessians) + 1e-15)
    if moderate(nb.label):
        g = reference_gradient(loss_name, x_new, nb.label, W)
        if clip_norm is not None:
            g = clip_l2(g, clip_norm)
        np.testing.assert_allclose(moved_g, sign * g, rtol=1e-7, atol=slack(*grads) + 1e-15)


def test_gram_release_moves_by_at_most_R_squared():
    """hessian="bound" releases svec(X~^T X~): one row moves it by ||x||^2 <= R^2 in L2."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4)) * 5
    row = np.array([1e9, -3e9, 0.0, 2e9])
    small = bound_data(X, np.ones(30), fit_intercept=True, data_norm=2.0)
    big = bound_data(np.vstack([X, row]), np.ones(31), fit_intercept=True, data_norm=2.0)
    moved = svec(big.design.gram()) - svec(small.design.gram())
    assert np.linalg.norm(moved) == pytest.approx(big.row_norm_bound**2, rel=1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_sums_keep_their_sensitivities_under_rounding(sparse):
    """float32 X: row factors (rounded down) and row norms (rounded up) are float32.

    A hostile row (long, in float32) moves the gradient sum by at most the clip and
    the Gram matrix by at most R^2, and every bounded row stays within its bound,
    although the factors and norms are stored with float32 rounding.
    """
    rng = np.random.default_rng(3)
    X = (rng.normal(size=(400, 6)) * 3).astype(np.float32)
    X[::7] *= np.float32(1e4)  # many rows far beyond the bound: scaled by float32 factors
    row = np.array([[3e37, -2e37, 1e37, 0, 5, -7]], dtype=np.float32)
    Xs = [X, np.vstack([X, row])]
    if sparse:
        Xs = [sp.csr_matrix(A) for A in Xs]
    y = rng.choice([-1.0, 1.0], size=401).astype(np.float32)
    small, big = (bound_data(A, y[: A.shape[0]], fit_intercept=True, data_norm=1.7) for A in Xs)
    assert small.design.row_scale.dtype == np.float32
    assert small.row_norms.dtype == np.float32
    R = big.row_norm_bound
    bounded = big.design.toarray()
    norms = np.sqrt(np.einsum("ij,ij->i", bounded, bounded))
    assert np.all(norms <= R * (1 + 1e-15))
    assert np.all(big.row_norms.astype(np.float64) >= norms * (1 - 1e-15))
    loss = get_loss("log_loss", n_classes=2)
    W = rng.normal(size=(7, 1)) * 3
    clip = 0.5 * R
    g_small, _ = newton_sums(small.design, small.y, W, loss, clip, small.row_norms)
    g_big, _ = newton_sums(big.design, big.y, W, loss, clip, big.row_norms)
    assert np.linalg.norm(g_big - g_small) <= clip * (1 + 1e-9)
    moved = svec(big.design.gram()) - svec(small.design.gram())
    assert np.linalg.norm(moved) <= R**2 * (1 + 1e-9)


@pytest.mark.parametrize("position", [0, 2500, 5000])
def test_float32_newton_sums_over_several_row_blocks_keep_their_sensitivities(position):
    """float32 X over several row blocks (each converted to float64 once for its products).

    A hostile row inserted before, inside or after the others shifts every later
    row to another place in its block: the gradient sum still moves by at most
    the clip and the Hessian sum by at most ``curvature_bound * R^2``, at a
    point W where every score is a product.
    """
    rng = np.random.default_rng(5)
    X = (rng.normal(size=(5000, 6)) * 3).astype(np.float32)
    X[::7] *= np.float32(1e4)
    row = np.array([[3e37, -2e37, 1e37, 0, 5, -7]], dtype=np.float32)
    y = rng.choice([-1.0, 1.0], size=5000).astype(np.float32)
    small = bound_data(X, y, fit_intercept=True, data_norm=1.7)
    big = bound_data(
        np.insert(X, position, row, axis=0),
        np.insert(y, position, np.float32(1.0)),
        fit_intercept=True,
        data_norm=1.7,
    )
    assert len(small.design.blocks()) > 2
    loss = get_loss("log_loss", n_classes=2)
    W = rng.normal(size=(7, 1)) * 3
    R = big.row_norm_bound
    clip = 0.5 * R
    g_small, H_small = newton_sums(small.design, small.y, W, loss, clip, small.row_norms)
    g_big, H_big = newton_sums(big.design, big.y, W, loss, clip, big.row_norms)
    assert np.linalg.norm(g_big - g_small) <= clip * (1 + 1e-9)
    moved = np.linalg.norm(svec(H_big) - svec(H_small))
    assert moved <= curvature_bound(loss) * R**2 * (1 + 1e-9)


@pytest.mark.parametrize("seed", [24, 31])
def test_an_added_float32_row_moves_no_other_rows_newton_gradient_term(seed):
    # BLAS rounds a float32 row's dot product by where the row falls in its
    # block: newton_sums' scores (float64 products of the converted block)
    # must not let an added row move the other rows' clipped terms.
    loss = get_loss("log_loss", n_classes=2)
    rng = np.random.default_rng(seed)
    d = 9000
    X = (rng.standard_normal((1, d)) / np.sqrt(d)).astype(np.float32)
    y = rng.choice([-1.0, 1.0], size=1)
    W = rng.standard_normal((d, 1)) * 3
    hostile = (W[:, 0] / np.linalg.norm(W)).astype(np.float32)
    label = -float(np.sign(hostile.astype(float) @ W[:, 0]))
    for at in (0, 1):
        sums = []
        for XX, yy in ((X, y), (np.insert(X, at, hostile, axis=0), np.insert(y, at, label))):
            data = bound_data(XX, yy, fit_intercept=False, data_norm=1.0)
            C = 0.25 * data.row_norm_bound
            g, _ = newton_sums(data.design, data.y, W, loss, C, data.row_norms, hessian=False)
            sums.append(g)
        assert np.linalg.norm(sums[1] - sums[0]) <= C * (1 + 2.0**-30)


# --------------------------------------------------------------------------
# Exact noise scales and calibration
# --------------------------------------------------------------------------


def _link_data(loss_name="binary", n=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 2
    if loss_name == "multinomial":
        y = rng.integers(0, N_CLASSES, size=n)
    elif loss_name == "binary":
        y = rng.choice([-1.0, 1.0], size=n)
    else:
        y = np.clip(rng.normal(size=n), -1, 1)
    return bound_data(X, y, fit_intercept=True, data_norm=1.5)


@pytest.mark.parametrize(
    "hessian, loss_name, steps",
    [
        ("bound", "binary", 5),
        ("exact", "binary", 3),
        ("exact", "multinomial", 2),
        ("exact", "squared", 4),
        ("bound", "huber", 3),
    ],
)
def test_noise_scales_are_exactly_the_calibrated_ones(hessian, loss_name, steps):
    data = _link_data(loss_name)
    loss = make_loss(loss_name)
    epsilon, delta = 1.3, 1e-6
    k = n_outputs_of(loss_name)
    with trace_releases() as trace:
        result = dp_newton(
            data,
            loss,
            n_outputs=k,
            alpha=0.01,
            epsilon=epsilon,
            delta=delta,
            max_iter=steps,
            hessian=hessian,
        )
    normal_scales = [r.scale for r in trace.releases if r.mechanism == "gaussian"]
    details = result.plan.details
    R2 = data.row_norm_bound**2
    clip = 0.5 * loss.derivative_bound * data.row_norm_bound  # the default clip
    n_hessian = 1 if hessian == "bound" or loss_name == "squared" else steps
    sg, sh, total = newton_multipliers(epsilon, delta, steps, n_hessian, 0.25)
    assert total == gaussian_noise_multiplier(epsilon, delta, 1)
    # The composition is exactly one Gaussian of the single-release multiplier.
    assert steps / sg**2 + n_hessian / sh**2 == pytest.approx(1 / total**2, rel=1e-12)
    sensitivity = R2 if hessian == "bound" else curvature_bound(loss) * R2
    assert details["clip_norm"] == pytest.approx(clip)
    assert details["hessian_sensitivity"] == pytest.approx(sensitivity)
    expected = sorted([sg * clip] * steps + [sh * sensitivity] * n_hessian)
    np.testing.assert_allclose(sorted(normal_scales), expected, rtol=1e-12)
    # The recorded event meets the target, and not with room to spare.
    recomputed = epsilon_of_event(result.plan.event, delta)
    assert epsilon * (1 - 1e-6) <= recomputed <= epsilon * (1 + 1e-9)


def test_trace_records_every_release_with_its_declared_sensitivity():
    data = _link_data("binary")
    with trace_releases() as trace:
        result = dp_newton(
            data,
            make_loss("binary"),
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-5,
            max_iter=4,
            random_state=0,
        )
    labels = [r.label for r in trace.releases]
    assert labels == ["gram matrix"] + ["clipped gradient sum"] * 4
    R2 = data.row_norm_bound**2
    gram = trace.releases[0]
    assert gram.sensitivity == pytest.approx(R2) and gram.norm == "l2"
    assert gram.scale == pytest.approx(result.plan.details["hessian_multiplier"] * R2)
    assert np.asarray(gram.value).shape == (data.n_columns * (data.n_columns + 1) // 2,)


def test_plan_is_public_and_matches_the_fit():
    plan = plan_call("dp_newton", None, 8, 1.0, 1e-5)
    assert plan.n_steps == module.DEFAULT_NEWTON_STEPS
    assert plan.details["hessian"] == "bound" and plan.details["hessian_releases"] == 1
    exact = plan_call("dp_newton", None, 8, 1.0, 1e-5, hessian="exact", hessian_steps=2, max_iter=6)
    assert exact.details["hessian_releases"] == 2
    squared = plan_call("dp_newton", None, 8, 1.0, 1e-5, hessian="exact", loss=get_loss("squared"))
    assert squared.details["hessian_releases"] == 1  # a constant Hessian is released once
    assert epsilon_of_event(exact.event, 1e-5) <= 1.0 + 1e-9


def test_modified_direction_floors_eigenvalues():
    H = np.diag([4.0, 1e-3, -2.0])
    g = np.ones((3, 1))

    def modified_newton_direction(H, g, floor, eigenvalue):
        lam, V = module.modified_eigendecomposition(H, floor, eigenvalue)
        return V @ ((V.T @ g) / lam[:, None])

    clip = modified_newton_direction(H, g, 0.5, "clip")[:, 0]
    np.testing.assert_allclose(clip, [0.25, 2.0, 2.0])
    add = modified_newton_direction(H, g, 0.5, "add")[:, 0]
    np.testing.assert_allclose(add, [1 / 4.5, 1 / 0.501, 2.0])


def test_squared_loss_floor_falls_from_two_noise_norms_to_one_as_the_noise_shrinks():
    from sklearn_dp._losses import SQUARED_FLOOR_NOISE

    squared = get_loss("squared", residual_bound=2.0)
    assert squared.newton_eigenvalue_floor == ("add", 2.0)
    for relative, scale in [(0.0, 1.0), (0.25, 1.25), (0.5, 1.5), (1.0, 2.0), (40.0, 2.0)]:
        assert squared.newton_floor_scale(relative * SQUARED_FLOOR_NOISE) == pytest.approx(scale)
    # The other losses keep their one floor at every noise level.
    for loss, floor in [(get_loss("log_loss"), 0.3), (get_loss("huber", epsilon_huber=1.0), 0.5)]:
        assert [loss.newton_floor_scale(r) for r in (0.0, 0.01, 10.0)] == [floor] * 3


@pytest.mark.parametrize("n", [40, 4000])
def test_default_squared_floor_is_the_rule_at_the_public_noise_ratio(n):
    # Few rows: the noise is large against R^2 (two norms); many: near one.
    data = _link_data("squared", n=n)
    result = dp_newton(
        data, make_loss("squared"), n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-6, random_state=0
    )
    details = result.plan.details
    R2 = data.row_norm_bound**2
    nu = hessian_noise_norm(details["hessian_noise_std"] / data.normalizer, data.n_columns)
    ratio = nu / R2  # public: the noise scale, the row bound and the count
    expected_scale = 1.0 + min(1.0, ratio / 0.05)
    assert details["floor"] == pytest.approx(expected_scale * nu, rel=1e-12)
    assert (expected_scale == 2.0) if n == 40 else (1.0 < expected_scale < 1.5)
    # An explicit floor_scale still wins.
    given = dp_newton(
        data,
        make_loss("squared"),
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=1e-6,
        random_state=0,
        floor_scale=2.0,
    )
    assert given.plan.details["floor"] == pytest.approx(2.0 * nu, rel=1e-12)


# --------------------------------------------------------------------------
# epsilon = inf: the non-private optimum
# --------------------------------------------------------------------------


def _classification(n=400, d=4, k=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    W = rng.normal(size=(d, k)) * 2
    y = np.argmax(X @ W + rng.gumbel(size=(n, k)), axis=1)
    return X, y


@pytest.mark.parametrize("hessian, steps", [("exact", 15), ("bound", 60)])
def test_epsilon_inf_reaches_sklearn_binary_logistic_regression(hessian, steps):
    X, y = _classification()
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_newton",
        data_norm=10.0,
        classes=[0, 1],
        max_iter=steps,
        solver_options={"hessian": hessian},
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-6, atol=1e-7)


def _imbalanced(n, d=5, seed=0):
    """About 6% positives: the log-loss's curvature is far below the bound 1/4 there."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / np.sqrt(d)
    z = X @ (3 * rng.normal(size=d)) - 4.0
    return X, (rng.random(n) < expit(z)).astype(int)


def _distance_to_sklearn(X, y, **params):
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPLogisticRegression(data_norm=3.0, classes=[0, 1], **params).fit(X, y)
    return max(
        np.abs(model.coef_ - reference.coef_).max(),
        np.abs(model.intercept_ - reference.intercept_).max(),
    )


def test_epsilon_inf_default_steps_reach_the_optimum_on_imbalanced_classes():
    """The secant pairs of the gradients correct the bound where the curvature is far below
    it: the default ten noiseless steps reach the optimum, the bound's steps alone do not."""
    X, y = _imbalanced(4000)
    assert _distance_to_sklearn(X, y, epsilon=math.inf) < 0.01
    assert _distance_to_sklearn(X, y, epsilon=math.inf, solver_options={"secant": False}) > 0.1


def test_secant_steps_close_the_private_fits_optimisation_gap_at_large_n():
    X, y = _imbalanced(100_000)
    private = dict(epsilon=1.0, delta=1e-6, random_state=0)
    with_pairs = _distance_to_sklearn(X, y, **private)
    assert _distance_to_sklearn(X, y, solver_options={"secant": False}, **private) > 3 * with_pairs


def test_secant_pairs_below_the_noise_leave_a_small_fit_unchanged():
    """At 400 rows no pair passes the noise test: the fit is the bound's, to the bit."""
    X, y = _imbalanced(400)
    fits = [
        DPLogisticRegression(
            epsilon=1.0, delta=1e-6, data_norm=3.0, classes=[0, 1], random_state=0, **options
        ).fit(X, y)
        for options in ({}, {"solver_options": {"secant": False}})
    ]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_secant_steps_are_a_function_of_the_releases_only(monkeypatch):
    """With every release substituted (gradients that shrink along one direction, so
    that secant pairs pass the noise test), a data set and the same plus a hostile row
    give the same model: the quasi-Newton steps read nothing but releases."""
    accepted = []

    def spy(*args):
        pair = secant_pair(*args)
        accepted.append(pair is not None)
        return pair

    secant_pair = module.secant_pair
    monkeypatch.setattr(module, "secant_pair", spy)
    X, y = _imbalanced(60)
    u = np.linspace(1.0, 2.0, X.shape[1] + 1)[:, None]

    def substitute(release):
        if release.label == "row count":
            return 60.0
        if release.label == "gram matrix":
            return svec(60.0 * np.eye(X.shape[1] + 1))
        substitute.gradients += 1
        return 1e4 * u / 2.0**substitute.gradients

    models = []
    for rows, labels in ((X, y), (np.vstack([X, [[1e6] * X.shape[1]]]), np.append(y, 1))):
        substitute.gradients = 0
        with trace_releases(substitute=substitute), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            models.append(
                DPLogisticRegression(
                    epsilon=1.0, delta=1e-6, data_norm=3.0, classes=[0, 1], random_state=0
                ).fit(rows, labels)
            )
    assert sum(accepted) >= 4  # the pairs did change the steps
    np.testing.assert_array_equal(models[0].coef_, models[1].coef_)
    np.testing.assert_array_equal(models[0].intercept_, models[1].intercept_)


def test_secant_pair_passes_the_noise_test_and_never_exceeds_the_bound():
    s = np.array([[3.0], [4.0]])  # ||s|| = 5
    y = np.array([[2.0], [0.5]])  # s^T y = 8
    margin = module.SECANT_NOISE_MARGIN
    assert module.secant_pair(s, y, 100.0, 8.0 / (5 * margin) * 1.01) is None
    kept_s, kept_y = module.secant_pair(s, y, 100.0, 8.0 / (5 * margin) * 0.99)
    np.testing.assert_array_equal(kept_s, s)
    np.testing.assert_array_equal(kept_y, y)
    # A secant curvature above the bound's (s^T B s = 4) is shrunk to it.
    _, shrunk = module.secant_pair(s, y, 4.0, 0.0)
    assert float(np.sum(s * shrunk)) == pytest.approx(4.0)
    assert module.secant_pair(s, -y, 100.0, 0.0) is None  # negative curvature: never
    assert module.secant_pair(s, np.full_like(y, np.nan), 100.0, 0.0) is None


def test_secant_direction_is_the_bound_step_without_pairs_and_meets_the_secant_equation():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    B = A @ A.T + 4 * np.eye(4)

    def inverse_bound(G):
        return np.linalg.solve(B, G)

    g = rng.normal(size=(4, 1))
    np.testing.assert_allclose(module.secant_direction(g, [], inverse_bound), inverse_bound(g))
    s = rng.normal(size=(4, 1))
    y = 0.3 * B @ s
    # The updated inverse curvature maps the last gradient change to its step.
    np.testing.assert_allclose(module.secant_direction(y, [(s, y)], inverse_bound), s)


def test_epsilon_inf_reaches_sklearn_multinomial_logistic_regression():
    X, y = _classification(k=3)
    reference = LogisticRegression(C=2.0, tol=1e-12, max_iter=10000).fit(X, y)
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_newton",
        data_norm=10.0,
        classes=[0, 1, 2],
        C=2.0,
        max_iter=15,
        solver_options={"hessian": "exact"},
    ).fit(X, y)
    # The multinomial coefficients are identified up to a shift common to the classes,
    # which the L2 penalty fixes (the intercepts are not penalised: compare their differences).
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        np.diff(model.intercept_), np.diff(reference.intercept_), rtol=1e-6, atol=1e-7
    )


def _regression(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d))
    y = X @ rng.normal(size=d) + 0.2 + 0.1 * rng.normal(size=n)
    return X, y


def test_epsilon_inf_squared_loss_matches_ridge():
    X, y = _regression()
    alpha = 1e-2
    reference = Ridge(alpha=alpha * X.shape[0]).fit(X, y)
    model = DPSCORegressor(
        epsilon=math.inf, solver="dp_newton", alpha=alpha, data_norm=2.0, y_bound=2.0, max_iter=3
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-9, atol=1e-10)
    assert model.intercept_ == pytest.approx(reference.intercept_, rel=1e-9)


def test_epsilon_inf_huber_loss_reaches_its_minimiser():
    X, y = _regression()
    y[:10] += 5.0  # outliers
    alpha, k, scale = 1e-3, 0.5, 3.0
    # The Gram bound (the default) is a majorant: monotone, globally convergent.  (Newton
    # steps on Huber's exact Hessian, zero on the outliers, need not converge from 0.)
    model = DPSCORegressor(
        epsilon=math.inf,
        loss="huber",
        huber_threshold=k,
        solver="dp_newton",
        alpha=alpha,
        data_norm=2.0,
        y_bound=scale,
        max_iter=300,
    ).fit(X, y)
    yc = np.clip(y, -scale, scale)

    def objective(theta):
        r = np.abs(X @ theta[:-1] + theta[-1] - yc)
        value = np.where(r <= k, 0.5 * r**2, k * r - 0.5 * k**2).mean()
        return value + 0.5 * alpha * np.sum(theta[:-1] ** 2)

    best = minimize(
        objective,
        np.zeros(X.shape[1] + 1),
        method="BFGS",
        options={"gtol": 1e-12, "maxiter": 10000},
    ).x
    np.testing.assert_allclose(model.coef_, best[:-1], atol=1e-5)
    assert model.intercept_ == pytest.approx(best[-1], abs=1e-5)


# --------------------------------------------------------------------------
# Inputs: float32 and sparse, zero copies of X
# --------------------------------------------------------------------------


def test_float32_and_sparse_inputs_fit_the_same_model():
    X, y = _classification(n=500, d=6)
    data64 = bound_data(X, np.where(y == 1, 1.0, -1.0), fit_intercept=True, data_norm=1.0)
    outputs = []
    for Xi in (X, X.astype(np.float32), sp.csr_matrix(X)):
        data = bound_data(Xi, np.where(y == 1, 1.0, -1.0), fit_intercept=True, data_norm=1.0)
        result = dp_newton(
            data,
            make_loss("binary"),
            n_outputs=1,
            alpha=1e-3,
            epsilon=1.0,
            delta=1e-5,
            random_state=0,
        )
        outputs.append(result.coef)
    np.testing.assert_allclose(outputs[2], outputs[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(outputs[1], outputs[0], rtol=1e-4, atol=1e-5)
    assert data64.design.X is X


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solver_allocates_little_beyond_X(dtype):
    """The solver's own allocations (bounded data excluded) stay far below the size of X."""
    rng = np.random.default_rng(0)
    n, d = 200_000, 20
    X = (rng.normal(size=(n, d)) / np.sqrt(d)).astype(dtype)
    y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    data = bound_data(X, y, fit_intercept=True, data_norm=1.5)
    loss = make_loss("binary")
    tracemalloc.start()
    try:
        dp_newton(data, loss, n_outputs=1, alpha=1e-4, epsilon=1.0, delta=1e-6, random_state=0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # A few n-vectors of float64 (scores, derivatives, clip factors): 8 n bytes each.
    assert peak <= 5 * 8 * n + 8 * 2**20
    assert peak <= (0.35 if dtype == np.float64 else 0.7) * X.nbytes


# --------------------------------------------------------------------------
# Public checks, estimators, verbose
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(hessian="cubic"), "hessian"),
        (dict(hessian_share=1.0), "hessian_share"),
        (dict(eigenvalue="abs"), "eigenvalue"),
        (dict(floor_scale=-1.0), "floor_scale"),
        (dict(momentum="heavy"), "momentum"),
        (dict(hessian_steps=0), "hessian_steps"),
    ],
)
def test_bad_options_are_refused_before_any_spend(options, match):
    X, y = _classification(n=50)
    budget = PrivacyBudget(5.0, 1e-4)
    with pytest.raises(ValueError, match=match):
        DPLogisticRegression(
            solver="dp_newton", classes=[0, 1], budget=budget, solver_options=options
        ).fit(X, y)
    assert budget.ledger == []


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(hessian_share=1.5), "hessian_share"),
        (dict(floor_scale=-1.0), "floor_scale"),
        (dict(hessian="exact", hessian_steps=0), "hessian_steps"),
    ],
)
def test_a_direct_call_refuses_options_outside_their_declared_ranges(options, match):
    # The estimators check the registry's ranges before the spend; a direct
    # call of the solver refuses the same values itself.
    X, y = _classification(n=50)
    data = bound_data(X, np.where(y == 1, 1.0, -1.0), fit_intercept=True, data_norm=1.0)
    loss = make_loss("binary")
    with pytest.raises(ValueError, match=match):
        dp_newton(data, loss, n_outputs=1, alpha=1e-3, epsilon=1.0, delta=1e-5, **options)


def test_too_wide_a_hessian_is_refused_before_any_spend():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 1200)) / 40
    y = np.arange(20) % 3
    budget = PrivacyBudget(5.0, 1e-4)
    with pytest.raises(ValueError, match="at most"):
        DPLogisticRegression(
            solver="dp_newton",
            classes=[0, 1, 2],
            budget=budget,
            solver_options={"hessian": "exact"},
        ).fit(X, y)
    assert budget.ledger == []
    assert SOLVERS["dp_newton"].check is not None


def test_private_fit_is_accurate_and_records_its_event():
    X, y = _classification(n=20000, d=10, seed=1)
    reference = LogisticRegression().fit(X, y).score(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPLogisticRegression(
            epsilon=1.0, data_norm=1.5, classes=[0, 1], random_state=0
        ).fit(X, y)
    assert model.solver_ == "dp_newton" and model.n_iter_ == module.DEFAULT_NEWTON_STEPS
    assert model.score(X, y) >= reference - 0.01
    assert epsilon_of_event(model.dp_event_, 1e-5) <= 1.0 + 1e-9


def test_verbose_prints_released_norms(capsys):
    X, y = _classification(n=100)
    DPLogisticRegression(
        solver="dp_newton", classes=[0, 1], verbose=2, max_iter=3, random_state=0
    ).fit(X, y)
    err = capsys.readouterr().err
    assert "[dp_newton] iter 3/3 grad_norm=" in err and "step_norm=" in err
