"""dp_nystrom: the sketch's sensitivity, exact noise scales, the plan, convergence without noise."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression, Ridge
from test_second_order import _classification, _link_data
from test_sensitivity_properties import (
    bound_both,
    change,
    dense_row,
    l2_cases,
    make_loss,
    n_outputs_of,
    prop,
    slack,
)

from sklearn_dp import DPLogisticRegression, DPSCORegressor
from sklearn_dp._clipped_sums import gram_sketch
from sklearn_dp._data import bound_data
from sklearn_dp.accounting import epsilon_of_event, gaussian_noise_multiplier
from sklearn_dp.solvers import _nystrom as module
from sklearn_dp.solvers import dp_nystrom, plan_call
from sklearn_dp.solvers._second_order import newton_multipliers
from sklearn_dp.testing import trace_releases


@prop(120)
@given(
    case=l2_cases(), fit_intercept=st.booleans(), rank=st.integers(1, 6), seed=st.integers(0, 99)
)
def test_gram_sketch_moves_by_at_most_R_squared(case, fit_intercept, rank, seed):
    """One row moves ``X~^T X~ Omega`` by exactly ``x x^T Omega``, of Frobenius norm <= R^2."""
    _, data_norm, nb = case
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    rng = np.random.default_rng(seed)
    sketch = module.public_sketch(small.n_columns, rank, rng, fit_intercept)
    assert np.linalg.norm(sketch, 2) <= 1.0
    sums = [gram_sketch(d.design, sketch, d.row_norm_bound) for d in (small, big)]
    moved = change(nb, *sums)
    assert np.linalg.norm(moved) <= small.row_norm_bound**2 * (1 + 1e-12) + slack(*sums)
    x_new = dense_row(big.design.materialize(), nb.index)
    expected = np.outer(x_new, x_new @ sketch) * (-1.0 if nb.removed else 1.0)
    np.testing.assert_allclose(moved, expected, rtol=1e-7, atol=slack(*sums) + 1e-15)


@prop(20)
@given(
    width=st.sampled_from([2**13 + 1, 20000, 60000]),
    scale=st.sampled_from([1.0, 3e4]),
    fit_intercept=st.booleans(),
    sparse=st.booleans(),
    other_rows=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
)
def test_gram_sketch_of_wide_float32_rows_moves_by_at_most_R_squared(
    width, scale, fit_intercept, sparse, other_rows, seed
):
    """float32 rows wider than the float32 norm bound's width, along a sketch column.

    Their norms are float64 norms without slack, and ``x^T Omega`` computed in
    float32 rounds by up to about ``d 2**-24`` relative, differently for the
    other rows once the hostile row joins their block (another BLAS kernel):
    the release must move by at most ``R^2`` anyway, far inside the gateway's
    ``2**-30`` margin.
    """
    rng = np.random.default_rng(seed)
    rank = 16
    sketch = module.public_sketch(width + fit_intercept, rank, rng, fit_intercept)
    column = sketch[:width, rng.integers(int(fit_intercept), rank)]
    hostile = column + 1e-7 * rng.standard_normal(width)
    hostile = (scale * hostile / np.linalg.norm(hostile)).astype(np.float32)
    others = rng.standard_normal((other_rows, width)).astype(np.float32) / 50
    X_small, X_big = others, np.vstack([others, hostile])
    if sparse:
        X_small, X_big = sp.csr_matrix(X_small), sp.csr_matrix(X_big)
    small, big = (
        bound_data(X, np.zeros(X.shape[0]), fit_intercept=fit_intercept, data_norm=1.0)
        for X in (X_small, X_big)
    )
    sums = [gram_sketch(d.design, sketch, d.row_norm_bound) for d in (small, big)]
    moved = sums[1] - sums[0]
    rounding = 2.0**-40 * (1.0 + sum(float(np.sum(np.abs(s))) for s in sums))
    assert np.linalg.norm(moved) <= big.row_norm_bound**2 * (1 + 2.0**-40) + rounding


def test_gram_sketch_with_weights_and_sparse_rows_is_the_weighted_product():
    rng = np.random.default_rng(0)
    X = sp.random(50, 7, density=0.3, format="csr", random_state=1)
    weights = rng.uniform(0, 2, size=50)
    data = bound_data(X, np.zeros(50), fit_intercept=True, data_norm=0.8)
    sketch = module.public_sketch(data.n_columns, 3, rng, True)
    dense = data.design.materialize()
    dense = dense.toarray() if sp.issparse(dense) else dense
    expected = dense.T @ (weights[:, None] * (dense @ sketch))
    np.testing.assert_allclose(
        gram_sketch(data.design, sketch, data.row_norm_bound, weights), expected, atol=1e-12
    )


def test_public_sketch_is_orthonormal_and_holds_the_intercept():
    rng = np.random.default_rng(0)
    sketch = module.public_sketch(40, 5, rng, True)
    np.testing.assert_allclose(sketch.T @ sketch, np.eye(5), atol=1e-12)
    assert abs(sketch[-1, 0]) == pytest.approx(1.0)
    np.testing.assert_array_equal(module.public_sketch(4, 9, rng, False), np.eye(4))


def test_nystrom_curvature_is_exact_on_a_low_rank_matrix_and_floored():
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.normal(size=(30, 3)))
    G = basis @ np.diag([5.0, 2.0, 0.5]) @ basis.T
    sketch = module.public_sketch(30, 6, rng, False)
    values, vectors = module.nystrom_curvature(G @ sketch, sketch, 1e-3)
    approx = vectors @ np.diag(values) @ vectors.T
    top = vectors[:, :3] @ np.diag(values[:3]) @ vectors[:, :3].T
    np.testing.assert_allclose(top, G, atol=1e-8)
    np.testing.assert_allclose(np.sort(values)[:3], 1e-3)  # the null directions at the floor
    assert approx.shape == G.shape


@pytest.mark.parametrize("loss_name, steps", [("binary", 4), ("multinomial", 2), ("huber", 3)])
def test_noise_scales_are_exactly_the_calibrated_ones(loss_name, steps):
    data = _link_data(loss_name, d=6)
    loss = make_loss(loss_name)
    epsilon, delta = 1.3, 1e-6
    with trace_releases() as trace:
        result = dp_nystrom(
            data,
            loss,
            n_outputs=n_outputs_of(loss_name),
            alpha=0.01,
            epsilon=epsilon,
            delta=delta,
            max_iter=steps,
            rank=3,
            random_state=0,
        )
    sg, sh, total = newton_multipliers(epsilon, delta, steps, 1, 0.25)
    assert total == gaussian_noise_multiplier(epsilon, delta, 1)
    assert steps / sg**2 + 1 / sh**2 == pytest.approx(1 / total**2, rel=1e-12)
    R2 = data.row_norm_bound**2
    clip = 0.5 * loss.derivative_bound * data.row_norm_bound  # the default clip
    details = result.plan.details
    assert details["clip_norm"] == pytest.approx(clip)
    assert details["sketch_sensitivity"] == pytest.approx(R2)
    labels = [r.label for r in trace.releases]
    assert labels == ["sketch"] + ["clipped gradient sum"] * steps
    sketch = trace.releases[0]
    assert sketch.sensitivity == pytest.approx(R2) and sketch.norm == "l2"
    assert np.asarray(sketch.value).shape == (data.n_columns, 3)
    expected = [sh * R2] + [sg * clip] * steps
    np.testing.assert_allclose([r.scale for r in trace.releases], expected, rtol=1e-12)
    recomputed = epsilon_of_event(result.plan.event, delta)
    assert epsilon * (1 - 1e-6) <= recomputed <= epsilon * (1 + 1e-9)


def test_weights_multiply_both_sensitivities():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(60, 5)), rng.choice([-1.0, 1.0], size=60)
    weights = rng.uniform(0, 3, size=60)
    data = bound_data(X, y, fit_intercept=True, data_norm=1.5, sample_weight=weights, max_weight=3)
    with trace_releases() as trace:
        result = dp_nystrom(
            data, make_loss("binary"), n_outputs=1, alpha=0.0, epsilon=1.0, delta=1e-5, max_iter=2
        )
    R2 = data.row_norm_bound**2
    assert trace.releases[0].sensitivity == pytest.approx(3 * R2)
    assert trace.releases[1].sensitivity == pytest.approx(3 * result.plan.details["clip_norm"])


def test_plan_is_public_and_its_event_meets_the_target():
    plan = plan_call("dp_nystrom", None, 5000, 1.0, 1e-5)
    assert plan.n_steps == module.DEFAULT_STEPS and plan.details["rank"] == module.DEFAULT_RANK
    assert epsilon_of_event(plan.event, 1e-5) <= 1.0 + 1e-9
    noiseless = plan_call("dp_nystrom", None, 5000, math.inf, 0.0)
    assert noiseless.n_steps == module.DEFAULT_STEPS_NOISELESS
    assert noiseless.details["hessian_multiplier"] == 0.0


@pytest.mark.parametrize(
    ("options", "match"), [({"rank": 0}, "rank"), ({"hessian_share": 1.0}, "hessian_share")]
)
def test_options_outside_their_ranges_are_refused(options, match):
    with pytest.raises(ValueError, match=match):
        plan_call("dp_nystrom", None, 8, 1.0, 1e-5, **options)


# --------------------------------------------------------------------------
# epsilon = inf: the non-private optimum
# --------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [2, 64])
def test_epsilon_inf_reaches_sklearn_binary_logistic_regression(rank):
    """A full-rank sketch is the Gram matrix (dp_newton's bound steps); a low rank converges too."""
    X, y = _classification(d=6)
    reference = LogisticRegression(C=1.0, tol=1e-12, max_iter=10000).fit(X, y)
    model = DPLogisticRegression(
        epsilon=math.inf,
        solver="dp_nystrom",
        data_norm=10.0,
        classes=[0, 1],
        max_iter=200,
        solver_options={"rank": rank},
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model.intercept_, reference.intercept_, rtol=1e-6, atol=1e-7)


def test_epsilon_inf_multinomial_and_squared_loss_reach_sklearn():
    X, y = _classification(k=3)
    reference = LogisticRegression(C=2.0, tol=1e-12, max_iter=10000).fit(X, y)
    model = DPLogisticRegression(
        epsilon=math.inf,
        C=2.0,
        solver="dp_nystrom",
        data_norm=10.0,
        classes=[0, 1, 2],
        max_iter=100,
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, reference.coef_, rtol=1e-5, atol=1e-6)
    rng = np.random.default_rng(0)
    Xr = rng.normal(size=(300, 5)) / 3
    yr = np.clip(Xr @ rng.normal(size=5) + 0.1 * rng.normal(size=300), -1, 1)
    model = DPSCORegressor(
        epsilon=math.inf, alpha=1e-2, solver="dp_nystrom", data_norm=10.0, y_bound=1.0
    ).fit(Xr, yr)
    ridge = Ridge(alpha=1e-2 * 300).fit(Xr, yr)
    np.testing.assert_allclose(model.coef_, ridge.coef_, rtol=1e-5, atol=1e-6)


def test_private_wide_sparse_fit_beats_the_majority_and_prints_each_step(capsys):
    rng = np.random.default_rng(0)
    X = sp.random(6000, 1500, density=0.01, format="csr", random_state=0)
    X.data = rng.normal(size=X.nnz) / math.sqrt(15)
    w = rng.normal(size=1500) * 3
    y = (rng.random(6000) < 1 / (1 + np.exp(-(X @ w) - 0.5))).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = DPLogisticRegression(
            epsilon=5.0, data_norm=1.5, classes=[0, 1], random_state=0, verbose=1
        ).fit(X, y)
    assert model.solver_ == "dp_nystrom" and model.n_iter_ == module.DEFAULT_STEPS
    assert model.score(X, y) >= max(y.mean(), 1 - y.mean())
    err = capsys.readouterr().err
    assert "curvature sketch released" in err and "[dp_nystrom] iter 10/10 grad_norm=" in err


@pytest.mark.parametrize(
    "make, labels",
    [
        (lambda: DPLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0), "binary"),
        (lambda: DPSCORegressor(data_norm=1.0, y_bound=1.0, random_state=0), "real"),
    ],
)
def test_auto_switches_from_dp_newton_to_dp_nystrom_at_a_public_width(make, labels):
    """Dense X: dp_newton up to AUTO_NEWTON_MAX_COLUMNS columns (intercept included), then dp_nystrom."""
    rng = np.random.default_rng(0)
    widest = module.AUTO_NEWTON_MAX_COLUMNS
    for n_features, intercept, solver in [
        (widest - 1, True, "dp_newton"),
        (widest, True, "dp_nystrom"),
        (widest, False, "dp_newton"),
    ]:
        X = rng.normal(size=(200, n_features)) / math.sqrt(n_features)
        y = (X[:, 0] > 0).astype(int) if labels == "binary" else np.clip(X[:, 0], -1, 1)
        model = make().set_params(fit_intercept=intercept)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert model.fit(X, y).solver_ == solver
