"""Sensitivity as a property, for every registered solver and the row count.

For each solver the quantity that receives noise (or, for a selection, the
scores the exponential mechanism draws from; for objective and output
perturbation, the minimiser or the noise pre-image) is computed with the
package function the solver itself calls, on two neighbouring data sets: D,
and D with one row added (or, symmetrically, removed) at any position.  The
property asserted is the one the solver's noise is calibrated with:

* the change is at most the stated sensitivity (read from the same code path
  as the noise scale: the clip, the block threshold, ``max_weight * L``,
  ``radius * C / N`` for scores, ...), in the norm the mechanism needs;
* the change is exactly the added row's own contribution, built here from
  the definition of each loss's derivative and of the clip (per sample, never
  taken from the package).

The extra row is drawn to be hostile: huge (1e12) or tiny (1e-12) norms,
entries whose squares underflow (1e-160, 1e-300) or are subnormal, zero,
exactly at the public bound, one large entry in a sparse row, with extreme
(finite, up to 1e300) labels; iterates, snapshots, query points and
perturbations are drawn by hypothesis as well.  The noise itself is not drawn here (its
scale is tested in the solvers' own test files); the links between the
sensitivity tested here and the noise a fit draws are checked for each solver
at the end (``test_*_noise_is_calibrated_to_the_tested_sensitivity``).

dp_gd, dp_sgd and output_perturbation already have such properties in
``tests/test_sensitivity.py`` and ``tests/test_perturbation.py``;
``test_every_registered_solver_has_a_sensitivity_property`` fails when a
registered solver is covered nowhere.

Runtime: the default run draws 20 to 120 examples per property (about 15 s
for the whole module on this machine).  For a thorough run (25 times the
examples, about 4 minutes)::

    HYPOTHESIS_PROFILE=thorough PYTHONPATH=. python -m pytest -q -p no:cacheprovider \\
        tests/test_sensitivity_properties.py

(the ``thorough`` profile is registered in ``tests/conftest.py``; it multiplies
the examples of every property here by ``THOROUGH_FACTOR``).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from _helpers import linf_row_norms, minimize_strongly_convex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import expit, softmax

from sklearn_dp._clipped_sums import (
    block_clipped_gradient_sum,
    capped_resque_sum,
    clipped_gradient_sum,
    clipped_residual_squares,
    clipped_sum,
    frank_wolfe_gradient,
    l2_clipped_derivatives,
    resque_query_derivatives,
    sufficient_statistics,
    svec,
    svrg_difference_sum,
    svrg_snapshot_sum,
    vertex_scores,
    vr_correction,
    vr_root_estimate,
)
from sklearn_dp._data import bound_data
from sklearn_dp._losses import (
    AbsoluteLoss,
    BinaryLogisticLoss,
    HingeLoss,
    HuberLoss,
    MultinomialLoss,
    QuantileLoss,
    SquaredLoss,
)
from sklearn_dp._protocol import release_count
from sklearn_dp.solvers import SOLVERS
from sklearn_dp.solvers._coordinate_descent import (
    _ColumnBlocks,
    block_clip_thresholds,
    sampling_structure,
    set_clip_threshold,
)
from sklearn_dp.solvers._frank_wolfe import vertex_scales
from sklearn_dp.solvers._gradient_descent import gradient_bound
from sklearn_dp.solvers._l1_geometry import linf_gradient_bound, make_domain
from sklearn_dp.solvers._mirror_descent import _resolve_p
from sklearn_dp.solvers._perturbation import _smooth_glm
from sklearn_dp.solvers._svrg import _difference_bound
from sklearn_dp.testing import trace_releases

THOROUGH_FACTOR = 25
_THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"


def examples(n):
    """``n`` examples by default, ``THOROUGH_FACTOR * n`` under the thorough profile."""
    return n * THOROUGH_FACTOR if _THOROUGH else n


def prop(n):
    return settings(
        max_examples=examples(n),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# Relative slack of the bounds (rounding of the clip itself) and absolute slack
# of sums recomputed in a different order.
REL = 1e-12


def slack(*arrays):
    return 1e-9 * (1.0 + sum(float(np.sum(np.abs(a))) for a in arrays))


# --------------------------------------------------------------------------
# Losses: the package's objects, and their derivatives written out here
# --------------------------------------------------------------------------

N_CLASSES = 3
HUBER_K = 0.8
QUANTILE_Q = 0.3
RESIDUAL_BOUND = 2.0


def make_loss(name):
    return {
        "binary": BinaryLogisticLoss(),
        "multinomial": MultinomialLoss(),
        "squared": SquaredLoss(residual_bound=RESIDUAL_BOUND),
        "squared_unbounded": SquaredLoss(),
        "huber": HuberLoss(HUBER_K),
        "absolute": AbsoluteLoss(),
        "quantile": QuantileLoss(QUANTILE_Q),
        "hinge": HingeLoss(),
    }[name]


def reference_derivative(name, z, y):
    """dl/dz of one sample from the loss's definition (z of shape (k,))."""
    if name == "binary":
        return np.array([-y * expit(-y * z[0])])
    if name == "multinomial":
        d = softmax(z)
        d[int(y)] -= 1.0
        return d
    r = z[0] - y
    if name in ("squared", "squared_unbounded"):
        return np.array([r])
    if name == "huber":
        return np.array([min(max(r, -HUBER_K), HUBER_K)])
    if name == "absolute":
        return np.array([np.sign(r)])
    if name == "quantile":
        return np.array([1.0 - QUANTILE_Q if z[0] > y else -QUANTILE_Q])
    if name == "hinge":
        return np.array([-y if y * z[0] < 1.0 else 0.0])
    raise AssertionError(name)


def n_outputs_of(name):
    return N_CLASSES if name == "multinomial" else 1


def dense_row(X, i):
    return np.asarray(X[i].toarray()).ravel() if sp.issparse(X) else np.asarray(X[i], dtype=float)


def clip_l2(g, bound):
    """``g`` scaled to Frobenius norm at most ``bound`` (overflow-safe norm)."""
    top = float(np.max(np.abs(g))) if g.size else 0.0
    if top == 0.0:
        return g
    norm = top * float(np.linalg.norm(g / top))
    return g * (bound / norm) if norm > bound else g


def clip_linf(g, bound):
    top = float(np.max(np.abs(g))) if g.size else 0.0
    return g * (bound / top) if top > bound else g


def reference_gradient(name, x, y, W):
    """The per-sample gradient ``outer(x, dl/dz)`` of one row, from the definitions."""
    return np.outer(x, reference_derivative(name, x @ W, y))


# --------------------------------------------------------------------------
# The shared strategy: a data set and its neighbour, one hostile row apart
# --------------------------------------------------------------------------

ROW_KINDS = (
    "ordinary",
    "huge",
    "tiny",
    "zero",
    "at_bound",
    "spike",
    "underflow",
    "deep_underflow",
    "subnormal",
)
REGRESSION_LABELS = (0.0, 1.0, -1.0, 3.0, -1e6, 1e12, -1e100, 1e300)


@dataclass
class Neighbours:
    """``big`` is ``small`` with the row ``index`` (the hostile one) inserted."""

    X_small: object
    y_small: np.ndarray
    X_big: object
    y_big: np.ndarray
    index: int
    row_kind: str
    label: float
    removed: bool

    def pair(self):
        return (self.X_small, self.y_small), (self.X_big, self.y_big)


def _labels(loss_name, rng, n):
    if loss_name in ("binary", "hinge"):
        return rng.choice([-1.0, 1.0], size=n)
    if loss_name == "multinomial":
        return rng.integers(0, N_CLASSES, size=n)
    return rng.normal(scale=2.0, size=n)


def _hostile_row(kind, d, rng, geometry, bound):
    x = rng.normal(size=d)
    if kind == "huge":
        return 1e12 * x
    if kind == "tiny":
        return 1e-12 * x
    if kind == "underflow":  # squares underflow to subnormals: sum-of-squares norms lose digits
        return 1e-160 * x
    if kind == "deep_underflow":  # squares underflow to 0
        return 1e-300 * x
    if kind == "subnormal":
        return 1e-310 * np.sign(x)
    if kind == "zero":
        return np.zeros(d)
    if kind == "spike":
        row = np.zeros(d)
        row[rng.integers(d)] = rng.choice([-1.0, 1.0]) * 1e9
        return row
    if kind == "at_bound":
        if geometry == "l2":
            # exactly at the L2 bound (up to the rounding of the division)
            return x / np.linalg.norm(x) * bound
        return np.sign(x + (x == 0)) * bound  # every entry at the l-inf bound
    return x


@st.composite
def neighbours(draw, loss_name, geometry, bound, max_rows=8, max_features=4):
    """D and D + {hostile row} (in either role: the row is added or removed).

    ``bound`` is the public row bound of ``geometry`` ("l2": data_norm,
    "linf": feature_bound), used only to place rows exactly at it; the rows
    are not bounded here (each test bounds them as its solver does).
    """
    n = draw(st.integers(0, max_rows))
    d = draw(st.integers(1, max_features))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d)) * draw(st.sampled_from([1e-3, 1.0, 30.0]))
    X[rng.random(size=X.shape) < 0.3] = 0.0
    y = _labels(loss_name, rng, n)
    kind = draw(st.sampled_from(ROW_KINDS))
    row = _hostile_row(kind, d, rng, geometry, bound)
    if loss_name in ("binary", "hinge"):
        label = draw(st.sampled_from([-1.0, 1.0]))
    elif loss_name == "multinomial":
        label = draw(st.integers(0, N_CLASSES - 1))
    else:
        label = draw(st.sampled_from(REGRESSION_LABELS))
    index = draw(st.integers(0, n))
    X_big = np.insert(X, index, row, axis=0)
    y_big = np.insert(y.astype(float), index, label)
    if loss_name == "multinomial":
        y, y_big = y.astype(int), y_big.astype(int)
    if draw(st.booleans()):
        X, X_big = sp.csr_matrix(X), sp.csr_matrix(X_big)
    return Neighbours(X, y, X_big, y_big, index, kind, label, draw(st.booleans()))


def bound_both(nb, **kwargs):
    """Both neighbours bounded with the same public bounds (what a fit does to each)."""
    (Xs, ys), (Xb, yb) = nb.pair()
    return bound_data(Xs, ys, **kwargs), bound_data(Xb, yb, **kwargs)


def change(nb, small_value, big_value):
    """The release's change between the neighbours, in the direction of the draw."""
    return (small_value - big_value) if nb.removed else (big_value - small_value)


@st.composite
def iterates(draw, shape):
    """An arbitrary iterate (or snapshot, or query point): from 0 to huge."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    scale = draw(st.sampled_from([0.0, 1e-8, 0.1, 1.0, 10.0, 1e6]))
    return scale * rng.normal(size=shape)


def moderate(label):
    """Labels whose derivative squared stays finite: the per-sample reference applies exactly."""
    return abs(label) <= 1e100


# --------------------------------------------------------------------------
# The private row count
# --------------------------------------------------------------------------


@prop(80)
@given(
    n=st.integers(0, 10**9),
    epsilon_count=st.floats(1e-4, 1e3),
    seed=st.integers(0, 2**32 - 1),
)
def test_row_count_moves_by_at_most_one(n, epsilon_count, seed):
    """The count's pre-noise value moves by 1 (its Laplace scale is 1 / epsilon_count)."""
    small = release_count(n, epsilon_count, np.random.default_rng(seed))
    big = release_count(n + 1, epsilon_count, np.random.default_rng(seed))
    # Same noise draw: the releases differ by the count's own change (or less, at the clamp).
    rounding = 1e-12 * (1.0 + abs(big.estimate))
    assert 0.0 <= big.estimate - small.estimate <= 1.0 + rounding
    assert 0.0 <= big.normalizer - small.normalizer <= 1.0 + rounding
    scale = 1.0 / epsilon_count
    assert big.event.noise_multiplier == small.event.noise_multiplier == pytest.approx(scale)


# --------------------------------------------------------------------------
# Rows whose sum-of-squares norm underflows stay within the per-sample clip
# --------------------------------------------------------------------------


def _underflow_neighbours(geometry):
    """D, and D plus a row of norm ~1e-300 (its squares underflow to 0) with a label of 1e300."""
    X = np.array([[0.5, 0.2], [0.1, -0.3]])
    y = np.array([0.1, 0.2])
    big_X = np.vstack([X, [[1e-300, -1e-300]]])
    big_y = np.append(y, -1e300)
    kwargs = dict(fit_intercept=False)
    if geometry == "l2":
        kwargs["data_norm"] = 1.0
    else:
        kwargs.update(geometry="linf", feature_bound=1.0)
    return bound_data(X, y, **kwargs), bound_data(big_X, big_y, **kwargs)


@pytest.mark.parametrize("sparse", [False, True])
def test_underflowing_row_norms_are_exact(sparse):
    from sklearn_dp._data import row_l2_norms

    X = np.array(
        [
            [1e-300, -1e-300, 0.0],
            [3e-170, 4e-170, 0.0],
            [0.0, 0.0, 0.0],
            [3.0, 4.0, 0.0],
            [1e200, 1e200, 0.0],
            [3e-310, 4e-310, 0.0],
        ]
    )
    expected = np.array([math.sqrt(2) * 1e-300, 5e-170, 0.0, 5.0, math.sqrt(2) * 1e200, 5e-310])
    got = row_l2_norms(sp.csr_matrix(X) if sparse else X)
    # (subnormals carry fewer digits)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # ...and a block of the data (what dp_cd clips with)
    from sklearn_dp._clipped_sums import block_row_norms

    block = sp.csr_matrix(X[:, :2]) if sparse else np.asfortranarray(X)[:, :2]
    np.testing.assert_allclose(block_row_norms(block), expected, rtol=1e-12)


def test_underflowing_row_cannot_escape_the_clip():
    """sqrt(sum x^2) underflows to 0 for a row of entries ~1e-300: a clip that saw a zero-norm
    row, with an unclipped label of 1e300 (squared loss, direct solver call), would square an
    overflowing derivative, get a nan clip factor and let the row in unclipped (the sums would
    move by ~1.4 for a clip of 0.01, by ~1e100 for a row of 1e-200)."""
    clip = 0.01
    loss = SquaredLoss()
    small, big = _underflow_neighbours("l2")
    W = np.zeros((2, 1))
    moved = {}
    # dp_gd, dp_sgd (the same sum on a batch), dp_accmd
    sums = [clipped_gradient_sum(d.X, d.y, W, loss, clip, d.row_norms) for d in (small, big)]
    moved["clipped_gradient_sum"] = sums[1] - sums[0]
    # dp_svrg / dp_svrg_pp: snapshot and inner difference
    snaps = [svrg_snapshot_sum(d.X, d.y, W, loss, clip, d.row_norms) for d in (small, big)]
    moved["svrg snapshot"] = snaps[1][0] - snaps[0][0]
    W_now = np.full((2, 1), 0.3)
    diffs = [
        svrg_difference_sum(d.X, d.y, W_now, loss, clip, d.row_norms, D, 2 * clip)
        for d, (_, D) in zip((small, big), snaps)
    ]
    moved["svrg difference"] = diffs[1] - diffs[0]
    # mirror descent (L2 clip on rows bounded entrywise)
    small_l, big_l = _underflow_neighbours("linf")
    sums = [clipped_sum(d.X, d.y, W[:, 0], loss, clip, d.row_norms) for d in (small_l, big_l)]
    moved["mirror_descent"] = sums[1] - sums[0]
    # dp_cd: the full block
    sums = []
    for d in (small_l, big_l):
        rows, X_block = _ColumnBlocks(d.design, budget=math.inf).block(None, np.arange(2))
        sums.append(block_clipped_gradient_sum(X_block, d.design.matmul(W), d.y, loss, clip))
    moved["dp_cd"] = sums[1] - sums[0]
    # dp_cd: the same block as an operator on the design (no copy)
    sums = []
    for d in (small_l, big_l):
        rows, X_block = _ColumnBlocks(d.design, budget=0).block(None, np.arange(2))
        sums.append(block_clipped_gradient_sum(X_block, d.design.matmul(W), d.y, loss, clip))
    moved["dp_cd operator"] = sums[1] - sums[0]
    stated = {name: 2 * clip if name == "svrg difference" else clip for name in moved}
    over = {
        name: float(np.linalg.norm(value))
        for name, value in moved.items()
        if not (np.all(np.isfinite(value)) and np.linalg.norm(value) <= stated[name] * (1 + REL))
    }
    assert not over, f"moved by more than the stated sensitivity: {over}"


# --------------------------------------------------------------------------
# dp_cd: every block's clipped gradient sum against its block threshold
# --------------------------------------------------------------------------

CD_SAMPLINGS = (
    ("uniform", {}),
    ("importance", {}),
    ("uniform", {"block_size": 2}),
    ("importance", {"block_size": 3}),
    ("uniform", {"blocks": [[0], [1, 2]]}),
    ("tau_nice", {"tau": 1}),
    ("tau_nice", {"tau": 2}),
    ("full", {}),
)


@st.composite
def cd_cases(draw):
    loss_name = draw(st.sampled_from(["binary", "multinomial", "squared", "huber"]))
    feature_bound = draw(st.sampled_from([0.5, 1.0, 3.0]))
    return loss_name, feature_bound, draw(neighbours(loss_name, "linf", feature_bound))


@prop(120)
@given(
    case=cd_cases(),
    sampling=st.sampled_from(CD_SAMPLINGS),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.3, 50.0]),
    w_seed=st.integers(0, 2**32 - 1),
    w_scale=st.sampled_from([0.0, 0.1, 1.0, 1e3]),
    copied=st.booleans(),
)
def test_dp_cd_block_sums_move_by_at_most_their_thresholds(
    case, sampling, fit_intercept, clip_norm, w_seed, w_scale, copied
):
    loss_name, feature_bound, nb = case
    loss = make_loss(loss_name)
    small, big = bound_both(
        nb, fit_intercept=fit_intercept, geometry="linf", feature_bound=feature_bound
    )
    n_columns = small.n_columns
    kind, options = sampling
    options = dict(options)
    if "blocks" in options:
        options["blocks"] = [[j for j in b if j < n_columns] for b in options["blocks"]]
        options["blocks"] = [b for b in options["blocks"] if b] or None
    if "block_size" in options:
        options["block_size"] = min(options["block_size"], n_columns)
    if "tau" in options:
        options["tau"] = min(options["tau"], n_columns)
    structure = sampling_structure(n_columns, kind, **options)
    # The clip and thresholds exactly as dp_cd computes them (public inputs only).
    feature_norm = float(np.sqrt(np.sum(small.feature_bound**2)))
    if loss_name == "squared" and clip_norm is None:
        clip_norm = 1.0
    clip = gradient_bound(loss, feature_norm, clip_norm, private=True)
    rng = np.random.default_rng(w_seed)
    W = w_scale * rng.normal(size=(n_columns, n_outputs_of(loss_name)))
    if structure.kind == "partition":
        thresholds = block_clip_thresholds(clip, small.feature_bound, structure)
        sets = list(zip(structure.blocks, thresholds))
    else:
        cols = np.sort(rng.choice(n_columns, size=structure.tau, replace=False))
        sets = [(cols, set_clip_threshold(clip, small.feature_bound, cols))]
    # Total clip split over a partition: sum of squared thresholds is C^2.
    if structure.kind == "partition":
        assert np.sum(thresholds**2) == pytest.approx(clip**2, rel=1e-12)
    x_new = dense_row(big.X, nb.index)
    for cols, threshold in sets:
        expected = np.sqrt(np.sum(small.feature_bound[cols] ** 2)) * clip / feature_norm
        assert threshold == pytest.approx(expected, rel=1e-14)
        sums = []
        for data in (small, big):
            # A copy of the block's columns, or an operator on the design (no copy).
            blocks = _ColumnBlocks(data.design, budget=math.inf if copied else 0)
            rows, X_block = blocks.block(None, np.asarray(cols))
            Z = data.design.matmul(W)
            Z_rows = Z if rows is None else Z[rows]
            y_rows = data.y if rows is None else data.y[rows]
            sums.append(block_clipped_gradient_sum(X_block, Z_rows, y_rows, loss, threshold))
        moved = change(nb, *sums)
        assert np.all(np.isfinite(moved))
        assert np.linalg.norm(moved) <= threshold * (1 + REL) + slack(*sums)
        if moderate(nb.label):
            g = np.outer(x_new[cols], reference_derivative(loss_name, x_new @ W, nb.label))
            sign = -1.0 if nb.removed else 1.0
            np.testing.assert_allclose(
                moved, sign * clip_l2(g, threshold), rtol=1e-7, atol=slack(*sums) + 1e-12
            )


# --------------------------------------------------------------------------
# frank_wolfe: the gradient estimate (l-inf) and the vertex scores (sup norm)
# --------------------------------------------------------------------------


@st.composite
def l1_cases(draw, losses=("squared", "huber")):
    loss_name = draw(st.sampled_from(losses))
    feature_bound = draw(st.sampled_from([0.5, 1.0, 3.0]))
    return loss_name, feature_bound, draw(neighbours(loss_name, "linf", feature_bound))


def _l1_setup(case, fit_intercept, intercept_bound, alpha, l1_ratio, radius, solver):
    loss_name, feature_bound, nb = case
    small, big = bound_both(
        nb, fit_intercept=fit_intercept, geometry="linf", feature_bound=feature_bound
    )
    if not fit_intercept:
        intercept_bound = None
    domain = make_domain(
        small,
        radius=radius,
        intercept_bound=intercept_bound,
        alpha=alpha,
        l1_ratio=l1_ratio,
        solver=solver,
    )
    return make_loss(loss_name), small, big, domain


def _check_scores(nb, domain, gradients, unit):
    """Ball scores move by at most radius * unit, box coordinate j's by box_j * unit."""
    (ball_0, box_0), (ball_1, box_1) = (vertex_scores(g, domain) for g in gradients)
    moved_ball = np.max(np.abs(ball_1 - ball_0))
    assert moved_ball <= domain.radius * unit * (1 + REL) + slack(ball_0, ball_1)
    for j, s0, s1 in zip(np.flatnonzero(~domain.ball), box_0, box_1):
        assert np.max(np.abs(s1 - s0)) <= domain.box[j] * unit * (1 + REL) + slack(s0, s1)
    # ...and every score moves by at most the sensitivity the fit reports.
    assert moved_ball <= domain.vertex_radius * unit * (1 + REL) + slack(ball_0, ball_1)


@prop(100)
@given(
    case=l1_cases(),
    fit_intercept=st.booleans(),
    intercept_bound=st.sampled_from([None, 0.5, 4.0]),
    alpha=st.sampled_from([0.0, 0.1]),
    l1_ratio=st.sampled_from([0.0, 0.5, 1.0]),
    radius=st.sampled_from([0.1, 1.0, 10.0]),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    normalizer=st.floats(0.5, 1e4),
    w=iterates(8),
)
def test_frank_wolfe_gradient_and_scores_move_by_at_most_the_score_sensitivity(
    case, fit_intercept, intercept_bound, alpha, l1_ratio, radius, clip_norm, normalizer, w
):
    loss, small, big, domain = _l1_setup(
        case, fit_intercept, intercept_bound, alpha, l1_ratio, radius, "frank_wolfe"
    )
    loss_name, _, nb = case
    if loss_name == "squared" and clip_norm is None:
        clip_norm = 1.0
    clip = linf_gradient_bound(loss, small, clip_norm, True, "frank_wolfe")
    w = w[: small.n_columns]
    w = np.pad(w, (0, small.n_columns - w.size))
    gradients = [
        frank_wolfe_gradient(d.X, d.y, w, loss, clip, linf_row_norms(d.X), normalizer, domain)
        for d in (small, big)
    ]
    unit = clip / normalizer  # what frank_wolfe calibrates with
    moved = change(nb, *gradients)
    assert np.max(np.abs(moved)) <= unit * (1 + REL) + slack(*gradients) / normalizer
    if moderate(nb.label):
        x_new = dense_row(big.X, nb.index)
        g = x_new * reference_derivative(loss_name, x_new @ w[:, None], nb.label)[0]
        sign = -1.0 if nb.removed else 1.0
        np.testing.assert_allclose(
            moved,
            sign * clip_linf(g, clip) / normalizer,
            rtol=1e-7,
            atol=slack(*gradients) / normalizer + 1e-15,
        )
    _check_scores(nb, domain, gradients, unit)


@prop(30)
@given(
    n_ball=st.integers(1, 50),
    n_box=st.integers(0, 2),
    radius=st.floats(1e-3, 1e3),
    box=st.floats(1e-3, 1e3),
    l1=st.booleans(),
    unit=st.floats(1e-9, 1e3),
    eps0=st.floats(1e-4, 10.0),
)
def test_vertex_scales_spend_exactly_eps0_on_the_score_sensitivities(
    n_ball, n_box, radius, box, l1, unit, eps0
):
    """Part i drawn with scale 2 Delta_i / eps_i is eps_i-DP; the eps_i must add up to eps0."""
    from sklearn_dp.solvers._l1_geometry import L1Domain

    n = n_ball + n_box
    ball = np.arange(n) < n_ball
    domain = L1Domain(
        radius=radius,
        ball=ball,
        box=np.where(ball, np.inf, box),
        l1_penalty=np.full(n, 0.1 if l1 else 0.0),
        l2_penalty=np.zeros(n),
    )
    ball_scale, box_scales = vertex_scales(domain, unit, eps0)
    deltas = [radius * unit] + [box * unit] * n_box
    spent = sum(2.0 * delta / scale for delta, scale in zip(deltas, [ball_scale, *box_scales]))
    assert spent == pytest.approx(eps0, rel=1e-12)


@prop(60)
@given(
    case=l1_cases(losses=("squared",)),
    fit_intercept=st.booleans(),
    columns=st.sets(st.integers(0, 4), min_size=1),
)
def test_frank_wolfe_refit_statistics_move_by_at_most_their_sensitivities(
    case, fit_intercept, columns
):
    """The refit's ``X_S^T X_S`` moves by ``svec(x_S x_S^T)`` (Frobenius norm at most ``R_S^2``)
    and ``X_S^T y`` by ``clip(y) x_S`` (at most ``R_S``), ``R_S^2 = sum_{j in S} feature_bound_j^2``."""
    _, feature_bound, nb = case
    small, big = bound_both(
        nb, fit_intercept=fit_intercept, geometry="linf", feature_bound=feature_bound
    )
    support = np.array(sorted(j for j in columns if j < small.n_columns) or [0])
    bound_sq = float(np.sum(small.feature_bound[support] ** 2))  # as refit_support computes it
    stats = [sufficient_statistics(d.design.column_view(support), d.y, 1.0) for d in (small, big)]
    grams = [svec(G) for G, _ in stats]
    xtys = [b for _, b in stats]
    moved_gram, moved_xty = change(nb, *grams), change(nb, *xtys)
    assert np.linalg.norm(moved_gram) <= bound_sq * (1 + REL) + slack(*grams)
    assert np.linalg.norm(moved_xty) <= math.sqrt(bound_sq) * (1 + REL) + slack(*xtys)
    x_new = dense_row(big.X, nb.index)[support]
    sign = -1.0 if nb.removed else 1.0
    np.testing.assert_allclose(
        moved_gram, sign * svec(np.outer(x_new, x_new)), rtol=1e-7, atol=slack(*grams) + 1e-15
    )
    y_new = float(np.clip(nb.label, -1.0, 1.0))
    np.testing.assert_allclose(
        moved_xty, sign * y_new * x_new, rtol=1e-7, atol=slack(*xtys) + 1e-15
    )


# --------------------------------------------------------------------------
# vr_frank_wolfe: root estimates and SPIDER corrections, per slot
# --------------------------------------------------------------------------


@prop(100)
@given(
    case=l1_cases(),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    size=st.floats(1.0, 1e4),
    depth=st.integers(0, 6),
    radius=st.sampled_from([0.1, 1.0, 10.0]),
    w_now=iterates(8),
    w_parent=iterates(8),
)
def test_vr_frank_wolfe_root_and_correction_move_by_at_most_clip_over_slot_size(
    case, fit_intercept, clip_norm, size, depth, radius, w_now, w_parent
):
    loss, small, big, domain = _l1_setup(
        case, fit_intercept, 1.0, 0.0, 0.0, radius, "vr_frank_wolfe"
    )
    loss_name, _, nb = case
    if loss_name == "squared" and clip_norm is None:
        clip_norm = 1.0
    clip = linf_gradient_bound(loss, small, clip_norm, True, "vr_frank_wolfe")
    p = small.n_columns
    w_now = np.pad(w_now[:p], (0, p - min(p, w_now.size)))
    w_parent = np.pad(w_parent[:p], (0, p - min(p, w_parent.size)))
    # A slot at depth j of a tree with root batch b has public size b / 2^j.
    slot = size / 2.0**depth
    roots = [
        vr_root_estimate(d.X, d.y, w_now, loss, clip, linf_row_norms(d.X), slot)
        for d in (small, big)
    ]
    corrections = [
        vr_correction(d.X, d.y, w_now, w_parent, loss, clip, linf_row_norms(d.X), slot)
        for d in (small, big)
    ]
    x_new = dense_row(big.X, nb.index)
    sign = -1.0 if nb.removed else 1.0
    for values in (roots, corrections):
        moved = change(nb, *values)
        assert np.max(np.abs(moved)) <= clip / slot * (1 + REL) + slack(*values) / slot
    if moderate(nb.label):

        def d_clipped(w):
            d = reference_derivative(loss_name, x_new @ w[:, None], nb.label)[0]
            return clip_linf(x_new * d, clip)

        np.testing.assert_allclose(
            change(nb, *roots),
            sign * d_clipped(w_now) / slot,
            rtol=1e-7,
            atol=slack(*roots) / slot + 1e-15,
        )
        expected = clip_linf(d_clipped(w_now) - d_clipped(w_parent), clip) / slot
        np.testing.assert_allclose(
            change(nb, *corrections),
            sign * expected,
            rtol=1e-7,
            atol=slack(*corrections) / slot + 1e-15,
        )
    # A leaf scores v = root + corrections: its scores move by radius * (C / slot).
    _check_scores(nb, domain, [r + c for r, c in zip(roots, corrections)], 2 * clip / slot)
    _check_scores(nb, domain, roots, clip / slot)


@prop(40)
@given(
    n=st.integers(0, 300),
    n_public=st.floats(1.0, 1e4),
    sizes=st.lists(st.floats(0.0, 500.0), min_size=1, max_size=8),
    seed=st.integers(0, 2**32 - 1),
)
def test_row_allocation_is_independent_per_row(n, n_public, sizes, seed):
    """vr_frank_wolfe and (localized) mirror descent allocate rows to slots independently with
    public probabilities: an added row draws its own slot and leaves every other row's unchanged
    (the coupling their per-slot sensitivity argument uses)."""
    from sklearn_dp.solvers._l1_geometry import allocate_rows

    small = allocate_rows(np.random.default_rng(seed), n, n_public, sizes)
    big = allocate_rows(np.random.default_rng(seed), n + 1, n_public, sizes)
    np.testing.assert_array_equal(big[:n], small)
    assert np.all((0 <= big) & (big <= len(sizes)))


# --------------------------------------------------------------------------
# mirror_descent / localized_mirror_descent: L2 clipped minibatch sum (and its q-norm)
# --------------------------------------------------------------------------


@prop(100)
@given(
    case=l1_cases(("squared", "huber", "absolute")),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    p=st.sampled_from([None, 1.0, 1.5, 2.0]),
    constraint=st.sampled_from(["l1", "lp"]),
    in_batch=st.booleans(),
    w=iterates(8),
)
def test_mirror_descent_batch_sum_moves_by_at_most_the_l2_clip(
    case, fit_intercept, clip_norm, p, constraint, in_batch, w
):
    loss_name, _, nb = case
    loss, small, big, _ = _l1_setup(case, fit_intercept, None, 0.0, 0.0, 1.0, "mirror_descent")
    if loss_name == "squared" and clip_norm is None:
        clip_norm = 1.0
    # What _mirror_descent_fit computes: an L2 clip from the L2 row bound.
    clip2 = gradient_bound(loss, small.row_norm_bound, clip_norm, private=True)
    n_columns = small.n_columns
    w = np.pad(w[:n_columns], (0, n_columns - min(n_columns, w.size)))
    # A Poisson batch of the big data set that contains the extra row or not.
    rng = np.random.default_rng(nb.index)
    keep = rng.random(small.n_samples) < 0.5
    batch_small = np.flatnonzero(keep)
    batch_big = np.flatnonzero(np.insert(keep, nb.index, in_batch))
    sums = [
        clipped_sum(d.X[b], d.y[b], w, loss, clip2, d.row_norms[b])
        for d, b in ((small, batch_small), (big, batch_big))
    ]
    moved = change(nb, *sums)
    assert np.linalg.norm(moved) <= clip2 * (1 + REL) + slack(*sums)
    # The dual norm of the map's exponent: the l1 geometry's, or an lp ball's own p.
    q = _resolve_p(1.5 if constraint == "lp" and p in (None, 1.0) else p, n_columns, constraint)
    q = q / (q - 1.0)
    assert np.sum(np.abs(moved) ** q) ** (1 / q) <= clip2 * (1 + REL) + slack(*sums)
    if not in_batch:
        np.testing.assert_allclose(moved, 0.0, atol=slack(*sums))
    elif moderate(nb.label):
        x_new = dense_row(big.X, nb.index)
        g = x_new * reference_derivative(loss_name, x_new @ w[:, None], nb.label)[0]
        sign = -1.0 if nb.removed else 1.0
        np.testing.assert_allclose(
            moved, sign * clip_l2(g, clip2), rtol=1e-7, atol=slack(*sums) + 1e-15
        )


# --------------------------------------------------------------------------
# resque: each inner step's sum of weight-capped ReSQue terms
# --------------------------------------------------------------------------


@st.composite
def l2_cases(draw, losses=("binary", "multinomial", "squared_unbounded", "huber")):
    loss_name = draw(st.sampled_from(losses))
    data_norm = draw(st.sampled_from([0.5, 1.0, 3.0]))
    return loss_name, data_norm, draw(neighbours(loss_name, "l2", data_norm))


@prop(100)
@given(
    case=l2_cases(losses=("absolute", "quantile", "huber", "hinge", "binary")),
    fit_intercept=st.booleans(),
    max_weight=st.sampled_from([1.0, 3.0, 50.0]),
    rho=st.sampled_from([1e-6, 1e-2, 1.0, 100.0]),
    center=iterates(8),
    offset=iterates(8),
    xi_scale=st.sampled_from([0.0, 1.0, 1e3, 1e12]),
    seed=st.integers(0, 2**32 - 1),
)
def test_resque_step_sum_moves_by_at_most_max_weight_times_lipschitz(
    case, fit_intercept, max_weight, rho, center, offset, xi_scale, seed
):
    loss_name, data_norm, nb = case
    loss = make_loss(loss_name)
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    n_params = small.n_columns
    center = np.pad(center[:n_params], (0, n_params - min(n_params, center.size)))
    offset = np.pad(offset[:n_params], (0, n_params - min(n_params, offset.size)))
    # One step whose batch holds every row (the coupling of the sensitivity):
    # the perturbations are data-independent draws, one per row, and the
    # shared rows keep theirs.  The hostile row's may be pushed anywhere
    # (aligned with the offset: a huge weight before the cap).
    xi = rho * np.random.default_rng(seed).standard_normal((big.n_samples, n_params))
    xi[nb.index] += xi_scale * offset
    scale = 1.0 / (2.0 * rho**2)
    args = (offset, scale, math.log(max_weight), max_weight)
    sums = []
    for data, perturbations in ((small, np.delete(xi, nb.index, axis=0)), (big, xi)):
        features = data.X.toarray() if sp.issparse(data.X) else np.asarray(data.X, dtype=float)
        derivative = resque_query_derivatives(features, data.y, loss, center, perturbations)
        assert np.all(np.abs(derivative) <= loss.derivative_bound)
        sums.append(capped_resque_sum(perturbations, derivative, features, *args))
    moved = change(nb, *sums)
    # resque's stated sensitivity: max_weight * derivative_bound * row_norm_bound.
    sensitivity = max_weight * loss.derivative_bound * small.row_norm_bound
    assert np.all(np.isfinite(moved))
    assert np.linalg.norm(moved) <= sensitivity * (1 + REL) + slack(*sums)
    # The per-sample reference: min(w, w_max) * clip(l'(x . (c + xi)), bound) * x.
    x_new = dense_row(big.X, nb.index)
    z = x_new @ (center + xi[nb.index])
    d = float(
        np.clip(
            reference_derivative(loss_name, np.array([z]), nb.label)[0],
            -loss.derivative_bound,
            loss.derivative_bound,
        )
    )
    log_w = (2.0 * xi[nb.index] @ offset - offset @ offset) / (2.0 * rho**2)
    weight = max_weight if log_w >= math.log(max_weight) else min(math.exp(log_w), max_weight)
    sign = -1.0 if nb.removed else 1.0
    np.testing.assert_allclose(
        moved, sign * weight * d * x_new, rtol=1e-7, atol=slack(*sums) + 1e-15
    )


# --------------------------------------------------------------------------
# dp_svrg / dp_svrg_pp: the snapshot sum and every inner difference sum
# --------------------------------------------------------------------------


@prop(120)
@given(
    case=l2_cases(),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    kind=st.sampled_from(["smoothness", "clip"]),
    in_batch=st.booleans(),
    W=iterates(8 * N_CLASSES),
    W_snapshot=iterates(8 * N_CLASSES),
    closeness=st.sampled_from([0.0, 1e-9, 1e-3, 1.0]),
)
def test_svrg_snapshot_and_difference_sums_move_by_at_most_their_sensitivities(
    case, fit_intercept, clip_norm, kind, in_batch, W, W_snapshot, closeness
):
    loss_name, data_norm, nb = case
    loss = make_loss(loss_name)
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    if loss_name == "squared_unbounded" and clip_norm is None:
        clip_norm = 1.0
    clip = gradient_bound(loss, small.row_norm_bound, clip_norm, private=True)
    shape = (small.n_columns, n_outputs_of(loss_name))
    size = shape[0] * shape[1]
    W_snapshot = W_snapshot[:size].reshape(shape)
    # Inner iterates anywhere, including near the snapshot (the smoothness bound is then tiny).
    W = W_snapshot + closeness * W[:size].reshape(shape)
    snapshots = [
        svrg_snapshot_sum(d.X, d.y, W_snapshot, loss, clip, d.row_norms) for d in (small, big)
    ]
    sums = [s for s, _ in snapshots]
    moved = change(nb, *sums)
    assert np.linalg.norm(moved) <= clip * (1 + REL) + slack(*sums)
    x_new = dense_row(big.X, nb.index)
    sign = -1.0 if nb.removed else 1.0
    if moderate(nb.label):
        g_snap = clip_l2(reference_gradient(loss_name, x_new, nb.label, W_snapshot), clip)
        np.testing.assert_allclose(moved, sign * g_snap, rtol=1e-7, atol=slack(*sums) + 1e-15)
    # The inner step: its sensitivity is public at the time of the step.
    row_smoothness = float(loss.smoothness) * small.row_norm_bound**2
    bound = _difference_bound(kind, clip, row_smoothness, W, W_snapshot)
    assert bound <= 2 * clip
    keep = np.random.default_rng(nb.index).random(small.n_samples) < 0.5
    batches = (np.flatnonzero(keep), np.flatnonzero(np.insert(keep, nb.index, in_batch)))
    diffs = [
        svrg_difference_sum(d.X[b], d.y[b], W, loss, clip, d.row_norms[b], D_snap[b], bound)
        for d, b, (_, D_snap) in zip((small, big), batches, snapshots)
    ]
    moved = change(nb, *diffs)
    assert np.linalg.norm(moved) <= bound * (1 + REL) + slack(*diffs)
    if not in_batch:
        np.testing.assert_allclose(moved, 0.0, atol=slack(*diffs))
    elif moderate(nb.label):
        g_now = clip_l2(reference_gradient(loss_name, x_new, nb.label, W), clip)
        difference = g_now - g_snap
        if kind == "smoothness":
            # The smoothness bound holds before the re-clip for rows within the public bound.
            assert np.linalg.norm(difference) <= bound * (1 + 1e-7) + 1e-12
        np.testing.assert_allclose(
            moved,
            sign * clip_l2(difference, bound),
            rtol=1e-6,
            atol=slack(*diffs) + 1e-12 * max(bound, 1e-300),
        )


@prop(20)
@given(
    case=l2_cases(("binary", "multinomial", "huber")),
    W=iterates(8 * N_CLASSES),
    W_snapshot=iterates(8 * N_CLASSES),
)
def test_clipped_derivatives_clip_every_sample_gradient(case, W, W_snapshot):
    """The snapshot's kept per-sample derivatives are the clipped ones (they enter the inner steps)."""
    loss_name, data_norm, nb = case
    loss = make_loss(loss_name)
    _, big = bound_both(nb, fit_intercept=True, data_norm=data_norm)
    shape = (big.n_columns, n_outputs_of(loss_name))
    W = W[: shape[0] * shape[1]].reshape(shape)
    clip = gradient_bound(loss, big.row_norm_bound, None, private=True)
    D = l2_clipped_derivatives(big.X, big.y, W, loss, clip, big.row_norms)
    norms = np.linalg.norm(D, axis=1) * big.row_norms
    assert np.all(norms <= clip * (1 + REL))


# --------------------------------------------------------------------------
# dp_accmd: the full-batch clipped gradient sum at the coupling point
# --------------------------------------------------------------------------


@prop(80)
@given(
    case=l2_cases(),
    fit_intercept=st.booleans(),
    clip_norm=st.sampled_from([None, 1e-3, 0.4, 100.0]),
    constraint=st.sampled_from(["l2", "l1"]),
    radius=st.sampled_from([1e-3, 1.0, 1e3]),
    W=iterates(8 * N_CLASSES),
)
def test_dp_accmd_gradient_sum_moves_by_at_most_the_clip(
    case, fit_intercept, clip_norm, constraint, radius, W
):
    loss_name, data_norm, nb = case
    loss = make_loss(loss_name)
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    if loss_name == "squared_unbounded" and clip_norm is None:
        clip_norm = 1.0
    clip = gradient_bound(loss, small.row_norm_bound, clip_norm, private=True)
    shape = (small.n_columns, n_outputs_of(loss_name))
    W = W[: shape[0] * shape[1]].reshape(shape)
    # A point of the constraint ball (the coupling point is a convex combination of such).
    norm = np.sum(np.abs(W)) if constraint == "l1" else np.linalg.norm(W)
    if norm > radius:
        W = W * (radius / norm)
    sums = [clipped_gradient_sum(d.X, d.y, W, loss, clip, d.row_norms) for d in (small, big)]
    moved = change(nb, *sums)
    assert np.linalg.norm(moved) <= clip * (1 + REL) + slack(*sums)
    if moderate(nb.label):
        x_new = dense_row(big.X, nb.index)
        g = clip_l2(reference_gradient(loss_name, x_new, nb.label, W), clip)
        sign = -1.0 if nb.removed else 1.0
        np.testing.assert_allclose(moved, sign * g, rtol=1e-7, atol=slack(*sums) + 1e-15)


# --------------------------------------------------------------------------
# objective_perturbation: the noise pre-image and the perturbed minimiser
# --------------------------------------------------------------------------


@prop(80)
@given(
    case=l2_cases(("binary", "multinomial", "squared", "huber")),
    fit_intercept=st.booleans(),
    W=iterates(8 * N_CLASSES),
)
def test_objective_perturbation_noise_preimage_moves_by_at_most_G(case, fit_intercept, W):
    """b_D(W) = -(sum_i grad l_i(W) + Lambda W) moves by grad l_new(W), of norm <= G = L R.

    The output density is nu(b_D(W)) |det(H_D(W) + Lambda I)|: the noise b is
    calibrated to this shift (b_scale = G / epsilon_noise, or sigma * G).
    """
    loss_name, data_norm, nb = case
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    n_outputs = n_outputs_of(loss_name)
    glm = _smooth_glm(
        make_loss(loss_name), small.row_norm_bound, n_outputs, "objective_perturbation"
    )
    shape = (small.n_columns, n_outputs)
    W = W[: shape[0] * shape[1]].reshape(shape)
    regularization = 0.7
    preimages = [
        -(np.asarray(d.X.T @ glm.loss.derivative(np.asarray(d.X @ W), d.y)) + regularization * W)
        for d in (small, big)
    ]
    moved = change(nb, *preimages)
    assert np.linalg.norm(moved) <= glm.gradient_bound * (1 + REL) + slack(*preimages)
    if moderate(nb.label):
        x_new = dense_row(big.X, nb.index)
        name = "huber_k" if loss_name == "squared" else loss_name
        if name == "huber_k":  # the squared loss's derivative clipped at the residual bound
            r = x_new @ W[:, 0] - nb.label
            g = np.outer(x_new, [min(max(r, -RESIDUAL_BOUND), RESIDUAL_BOUND)])
        else:
            g = reference_gradient(loss_name, x_new, nb.label, W)
        sign = 1.0 if nb.removed else -1.0
        np.testing.assert_allclose(moved, sign * g, rtol=1e-7, atol=slack(*preimages) + 1e-15)


@prop(40)
@given(
    case=l2_cases(("binary", "multinomial", "squared", "huber")),
    fit_intercept=st.booleans(),
    regularization=st.sampled_from([0.05, 1.0, 20.0]),
    b=iterates(8 * N_CLASSES),
)
def test_objective_perturbation_minimiser_moves_by_at_most_G_over_lambda(
    case, fit_intercept, regularization, b
):
    """For any noise draw b, the perturbed minimiser moves by at most (G + 2 tol) / Lambda.

    The solve is the solvers' own fixed-budget one, and meets its certificate
    ``||grad|| <= tol`` on both neighbours, whatever the label (up to 1e300).
    """
    loss_name, data_norm, nb = case
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=data_norm)
    n_outputs = n_outputs_of(loss_name)
    glm = _smooth_glm(
        make_loss(loss_name), small.row_norm_bound, n_outputs, "objective_perturbation"
    )
    shape = (small.n_columns, n_outputs)
    b = b[: shape[0] * shape[1]].reshape(shape)
    tol = 1e-6 * glm.gradient_bound
    solutions = []
    for d in (small, big):
        solve = minimize_strongly_convex(
            d.X,
            d.y,
            glm.loss,
            n_outputs=n_outputs,
            regularization=regularization,
            linear_term=b,
        )
        assert solve.gradient_norm <= tol
        solutions.append(solve.coef)
    moved = np.linalg.norm(solutions[1] - solutions[0])
    assert moved <= (glm.gradient_bound + 2 * tol) / regularization * (1 + REL)


def test_output_perturbation_solve_with_an_extreme_label():
    # Was a strict xfail: with a label of 1e15 or more (direct solver calls;
    # estimators clip labels) the objective's magnitude swamped the Armijo line
    # search, the solve cycled and the fit raised, depending on that one row.  The
    # line search now uses the signs of bounded derivatives only: no raise, and
    # the certificate is met.
    X = np.array([[0.94708096, -0.70373524, -1.26542147], [0.0, -0.13210486, 0.64042265]])
    data = bound_data(X, np.array([-1e15, 2.608]), fit_intercept=False, data_norm=0.5)
    result = SOLVERS["output_perturbation"].run(
        data,
        SquaredLoss(2.0),
        n_outputs=1,
        alpha=0.025,
        epsilon=1.0,
        delta=0.0,
        random_state=0,
        verbose=0,
    )
    assert np.all(np.isfinite(result.coef))
    glm = _smooth_glm(SquaredLoss(2.0), data.row_norm_bound, 1, "output_perturbation")
    solve = minimize_strongly_convex(
        data.X, data.y, glm.loss, n_outputs=1, regularization=result.plan.details["regularization"]
    )
    assert solve.gradient_norm <= result.plan.details["gradient_tol"]


# --------------------------------------------------------------------------
# Links: the noise each solver draws is calibrated to the sensitivity tested above
# --------------------------------------------------------------------------


class _Scales:
    """The noise scale of every Gaussian release of a fit, from the gateway's trace."""

    def __init__(self, trace):
        self.normal_scales = [r.scale for r in trace.releases if r.mechanism == "gaussian"]


def _link_data(geometry, loss_name, n=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 3
    y = _labels(loss_name, rng, n)
    if geometry == "l2":
        return bound_data(X, y, fit_intercept=True, data_norm=1.5)
    return bound_data(X, y, fit_intercept=True, geometry="linf", feature_bound=0.7)


def _run_spied(monkeypatch, module, name, data, loss, **options):
    with trace_releases() as trace:
        result = SOLVERS[name].run(data, loss, epsilon=1.0, verbose=0, random_state=0, **options)
    return result, _Scales(trace)


@pytest.mark.parametrize(
    "sampling, options",
    [
        ("uniform", {}),
        ("importance", {"block_size": 2}),
        ("tau_nice", {"tau": 2}),
        ("full", {}),
    ],
)
def test_dp_cd_noise_is_calibrated_to_the_tested_sensitivity(monkeypatch, sampling, options):
    from sklearn_dp.solvers import _coordinate_descent as module

    data = _link_data("linf", "huber")
    result, spy = _run_spied(
        monkeypatch,
        module,
        "dp_cd",
        data,
        make_loss("huber"),
        n_outputs=1,
        alpha=0.1,
        delta=1e-5,
        max_iter=2,
        sampling=sampling,
        **options,
    )
    details = result.plan.details
    z, clip = details["noise_multiplier"], details["clip_norm"]
    feature_norm = float(np.sqrt(np.sum(data.feature_bound**2)))
    assert clip == gradient_bound(make_loss("huber"), feature_norm, None, private=True)
    allowed = (
        {float(z * t) for t in details["block_clip"]} if details["block_clip"] is not None else None
    )
    assert len(spy.normal_scales) == result.n_iter
    for scale in spy.normal_scales:
        ratio = float(scale) / z
        if allowed is not None:
            assert float(scale) in allowed
        # every threshold is C ||X_U|| / ||X|| for some set U: at most C
        assert 0 < ratio <= clip * (1 + REL)


def test_frank_wolfe_scales_are_calibrated_to_the_tested_score_sensitivity():
    data = _link_data("linf", "huber")
    result = SOLVERS["frank_wolfe"].run(
        data,
        make_loss("huber"),
        n_outputs=1,
        alpha=0.0,
        epsilon=1.0,
        delta=0.0,
        radius=2.0,
        intercept_bound=1.0,
        max_iter=5,
        random_state=0,
        verbose=0,
    )
    details = result.plan.details
    domain = make_domain(
        data, radius=2.0, intercept_bound=1.0, alpha=0.0, l1_ratio=0.0, solver="frank_wolfe"
    )
    unit = details["clip_norm"] / data.normalizer
    ball_scale, box_scales = details["gumbel_scales"]
    spent = 2 * domain.radius * unit / ball_scale + sum(
        2 * domain.box[j] * unit / s for j, s in zip(np.flatnonzero(~domain.ball), box_scales)
    )
    assert spent == pytest.approx(details["step_epsilon"], rel=1e-12)


def test_vr_frank_wolfe_scales_are_calibrated_to_the_tested_root_sensitivity():
    data = _link_data("linf", "huber", n=400)
    # epsilon 10: at 1 its public bound is vacuous on 400 rows, and it returns
    # the zero model without a selection.
    result = SOLVERS["vr_frank_wolfe"].run(
        data,
        make_loss("huber"),
        n_outputs=1,
        alpha=0.0,
        epsilon=10.0,
        delta=0.0,
        radius=2.0,
        random_state=0,
        verbose=0,
    )
    details = result.plan.details
    domain = make_domain(
        data, radius=2.0, intercept_bound=None, alpha=0.0, l1_ratio=0.0, solver="vr_frank_wolfe"
    )
    unit = details["clip_norm"] / details["root_batch"]
    for (ball_scale, _), leaf_epsilon in zip(details["gumbel_scales"], details["leaf_epsilons"]):
        assert 2 * domain.radius * unit / ball_scale == pytest.approx(leaf_epsilon, rel=1e-12)


@pytest.mark.parametrize("name", ["mirror_descent", "localized_mirror_descent"])
def test_mirror_descent_noise_is_calibrated_to_the_tested_sensitivity(monkeypatch, name):
    from sklearn_dp.solvers import _mirror_descent as module

    data = _link_data("linf", "huber", n=200)
    result, spy = _run_spied(
        monkeypatch,
        module,
        name,
        data,
        make_loss("huber"),
        n_outputs=1,
        alpha=0.0,
        delta=1e-5,
        radius=2.0,
        max_iter=5,
    )
    details = result.plan.details
    clip2 = gradient_bound(make_loss("huber"), data.row_norm_bound, None, private=True)
    assert details["clip_norm"] == clip2
    allowed = {float(m * clip2) for m in details["noise_multipliers"]}
    assert spy.normal_scales and all(float(s) in allowed for s in spy.normal_scales)


def test_resque_noise_is_calibrated_to_the_tested_sensitivity(monkeypatch):
    from sklearn_dp.solvers import _resque as module
    from sklearn_dp.testing import trace_releases

    data = _link_data("l2", "binary", n=100)
    with trace_releases() as trace:
        result, spy = _run_spied(
            monkeypatch,
            module,
            "resque",
            data,
            make_loss("binary"),
            n_outputs=1,
            alpha=0.0,
            delta=1e-5,
            passes=1,
            max_weight=3.0,
            # log-loss needs a schedule of the caller's own
            # (no default converges on it: refused otherwise).
            radius=5.0,
            tol=0.1,
        )
    details = result.plan.details
    sensitivity = 3.0 * 1.0 * data.row_norm_bound
    assert details["sensitivity"] == pytest.approx(sensitivity, rel=1e-15)
    assert len(spy.normal_scales) == result.n_iter == len(trace.releases)
    for scale in spy.normal_scales:
        assert float(scale) == pytest.approx(result.plan.noise_multiplier * sensitivity, rel=1e-15)
    # Each release declares the sensitivity the property above tests.
    for release in trace.releases:
        assert (release.mechanism, release.norm) == ("gaussian", "l2")
        assert release.sensitivity == pytest.approx(sensitivity, rel=1e-15)


@pytest.mark.parametrize("name", ["dp_svrg", "dp_svrg_pp"])
def test_svrg_noise_is_calibrated_to_the_tested_sensitivities(name):
    """Every release of a fit is one of the kernels tested above, noised for its sensitivity.

    Through the noise gateway's trace: the snapshot sums (sensitivity the clip,
    noise ``s_snap * C``) and the inner difference sums (sensitivity the public
    bound of the step, at most ``2 C``, noise ``s_diff`` times it), in order.
    """
    data = _link_data("l2", "huber", n=100)
    with trace_releases() as trace:
        result = SOLVERS[name].run(
            data,
            make_loss("huber"),
            n_outputs=1,
            alpha=0.1,
            epsilon=1.0,
            delta=1e-5,
            max_iter=2,
            inner_steps=5,
            random_state=0,
            verbose=0,
        )
    details = result.plan.details
    clip = details["clip_norm"]
    lengths = details["epoch_lengths"]
    assert [r.label for r in trace.releases] == [
        label
        for length in lengths
        for label in ["svrg snapshot gradient sum"] + ["svrg gradient difference sum"] * length
    ]
    assert len(trace.samples) == sum(lengths)
    assert all(s.parameters["rate"] == details["sampling_probability"] for s in trace.samples)
    for release in trace.releases:
        assert release.mechanism == "gaussian" and release.norm == "l2"
        if release.label == "svrg snapshot gradient sum":
            assert release.sensitivity == clip
            assert release.scale == details["snapshot_multiplier"] * clip
        else:
            assert 0 <= release.sensitivity <= 2 * clip
            assert release.scale == details["difference_multiplier"] * release.sensitivity
    bounds = [r.sensitivity for r in trace.releases if r.label == "svrg gradient difference sum"]
    assert result.info["mean_difference_bound"] == pytest.approx(np.mean(bounds), rel=1e-12)


def test_dp_accmd_noise_is_calibrated_to_the_tested_sensitivity():
    data = _link_data("l2", "multinomial")
    with trace_releases() as trace:
        result = SOLVERS["dp_accmd"].run(
            data,
            make_loss("multinomial"),
            n_outputs=N_CLASSES,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-5,
            radius=1.0,
            max_iter=4,
            random_state=0,
            verbose=0,
        )
    clip = gradient_bound(make_loss("multinomial"), data.row_norm_bound, None, private=True)
    assert result.plan.details["clip_norm"] == clip
    assert [(r.mechanism, r.label, r.sensitivity, r.scale) for r in trace.releases] == [
        ("gaussian", "clipped gradient sum", clip, result.plan.noise_multiplier * clip)
    ] * 4


@pytest.mark.parametrize("delta", [0.0, 1e-5])
@pytest.mark.parametrize("loss_name", ["binary", "huber", "multinomial"])
def test_perturbation_noise_is_calibrated_to_the_tested_sensitivity(loss_name, delta):
    """The gateway releases carry the sensitivities the properties above test.

    output_perturbation: ``plan.details["sensitivity"]`` (tested in
    ``test_perturbation.py::test_minimiser_sensitivity_is_at_most_the_stated_bound``);
    objective_perturbation: ``G`` of the noise pre-image and ``2 tol / Lambda``
    of the residual (the two properties of this file), plus ``sqrt(m) g /
    Lambda`` for the rounding of the linear term to its grid ``g``.
    """
    from sklearn_dp.accounting import gaussian_noise_multiplier
    from sklearn_dp.testing import trace_releases

    data = _link_data("l2", loss_name)
    loss = make_loss(loss_name)
    K = n_outputs_of(loss_name)
    epsilon = 1.0
    with trace_releases() as trace:
        result = SOLVERS["output_perturbation"].run(
            data,
            loss,
            n_outputs=K,
            alpha=0.1,
            epsilon=epsilon,
            delta=delta,
            random_state=0,
        )
    (release,) = trace.releases
    sensitivity = result.plan.details["sensitivity"]
    glm = _smooth_glm(loss, data.row_norm_bound, K, "output_perturbation")
    G = glm.gradient_bound
    assert sensitivity == (G + 2e-6 * G) / (data.n_public * 0.1)
    assert release.norm == "l2" and release.sensitivity == sensitivity
    expected = (
        sensitivity / epsilon
        if delta == 0
        else gaussian_noise_multiplier(epsilon, delta, 1) * sensitivity
    )
    assert release.scale == expected
    with trace_releases() as trace:
        result = SOLVERS["objective_perturbation"].run(
            data,
            loss,
            n_outputs=K,
            alpha=0.1,
            epsilon=epsilon,
            delta=delta,
            random_state=0,
        )
    first, second = trace.releases
    details = result.plan.details
    assert first.sensitivity == G == details["gradient_bound"]
    assert first.scale == details["objective_noise_scale"]
    assert first.scale == (
        G / details["epsilon_noise"] if delta == 0 else result.plan.noise_multiplier * G
    )
    m = data.n_columns * K
    residual = (2 * 1e-6 * G + math.sqrt(m) * first.grid.spacing) / details["regularization"]
    assert details["residual_sensitivity"] == residual
    assert second.sensitivity == residual and second.norm == "l2"
    assert second.scale == details["residual_noise_scale"]


# --------------------------------------------------------------------------
# Inference: the clipped residual squares released after a fit
# --------------------------------------------------------------------------


@prop(100)
@given(
    nb=neighbours("squared_unbounded", "l2", 1.0),
    fit_intercept=st.booleans(),
    residual_bound=st.sampled_from([1e-3, 0.5, 2.0, 1e6]),
    y_bound=st.sampled_from([None, 0.5, 3.0]),
    coef=iterates(5),
)
def test_clipped_residual_squares_move_by_at_most_the_squared_residual_bound(
    nb, fit_intercept, residual_bound, y_bound, coef
):
    small, big = bound_both(nb, fit_intercept=fit_intercept, data_norm=1.0)
    coef = np.pad(coef, (0, max(0, small.n_columns - coef.size)))[: small.n_columns]
    sums = [
        clipped_residual_squares(d.design, d.y, coef, residual_bound, y_bound=y_bound)
        for d in (small, big)
    ]
    moved = change(nb, *sums)
    assert abs(moved[0]) <= residual_bound**2 * (1 + REL) + slack(*sums)
    # Exactly the added row's own term, from the definition.
    x_new = big.design.row_block(nb.index, nb.index + 1).matmul(coef[:, None])[0, 0]
    label = nb.label if y_bound is None else min(max(nb.label, -y_bound), y_bound)
    with np.errstate(over="ignore"):
        own = min((label - x_new) ** 2, residual_bound**2)
    sign = -1.0 if nb.removed else 1.0
    np.testing.assert_allclose(moved[0], sign * own, rtol=1e-7, atol=slack(*sums) + 1e-15)


# --------------------------------------------------------------------------
# Every registered solver is covered by a property
# --------------------------------------------------------------------------

HERE = Path(__file__).resolve().parent
THIS = HERE / "test_sensitivity_properties.py"

_SUM = HERE / "test_sensitivity.py"
_GRADIENT_SUM = [
    (_SUM, "test_adding_any_row_moves_clipped_sum_by_at_most_clip"),
    (_SUM, "test_adding_a_bounded_row_moves_the_sum_by_at_most_the_gradient_bound"),
    (THIS, "test_dp_accmd_gradient_sum_moves_by_at_most_the_clip"),
]
_FRANK_WOLFE = [
    (THIS, "test_frank_wolfe_gradient_and_scores_move_by_at_most_the_score_sensitivity"),
    (THIS, "test_vertex_scales_spend_exactly_eps0_on_the_score_sensitivities"),
]
_SVRG = [(THIS, "test_svrg_snapshot_and_difference_sums_move_by_at_most_their_sensitivities")]
_SSP = [(HERE / "test_ssp.py", "test_sufficient_statistics_move_by_at_most_their_sensitivities")]
_NEWTON = [(HERE / "test_second_order.py", "test_newton_sums_move_by_at_most_their_sensitivities")]
_RESQUE = [(THIS, "test_resque_step_sum_moves_by_at_most_max_weight_times_lipschitz")]
_VR_FRANK_WOLFE = [
    (THIS, "test_vr_frank_wolfe_root_and_correction_move_by_at_most_clip_over_slot_size")
]
_MINIMISER = [
    (HERE / "test_perturbation.py", "test_minimiser_sensitivity_is_at_most_the_stated_bound"),
    (THIS, "test_objective_perturbation_noise_preimage_moves_by_at_most_G"),
    (THIS, "test_objective_perturbation_minimiser_moves_by_at_most_G_over_lambda"),
]

#: What a solver computes before the noise (a function it imports), and the hypothesis
#: properties that test it.  Every function of ``sklearn_dp._clipped_sums`` that the solver
#: package imports must be listed; the other entries are the pre-noise computations that live
#: beside their solvers.  Which of them a registered solver uses is read off its module (and
#: the solver modules it imports), so a solver built on listed kernels needs no entry here.
KERNEL_PROPERTIES = {
    "sklearn_dp._clipped_sums.clipped_gradient_sum": _GRADIENT_SUM,
    "sklearn_dp._clipped_sums.block_clipped_gradient_sum": [
        (THIS, "test_dp_cd_block_sums_move_by_at_most_their_thresholds")
    ],
    "sklearn_dp._clipped_sums.frank_wolfe_gradient": _FRANK_WOLFE,
    "sklearn_dp._clipped_sums.vertex_scores": _FRANK_WOLFE,
    "sklearn_dp._clipped_sums.vr_root_estimate": _VR_FRANK_WOLFE,
    "sklearn_dp._clipped_sums.vr_correction": _VR_FRANK_WOLFE,
    "sklearn_dp._clipped_sums.clipped_sum": [
        (THIS, "test_mirror_descent_batch_sum_moves_by_at_most_the_l2_clip")
    ],
    "sklearn_dp._clipped_sums.capped_resque_sum": _RESQUE,
    "sklearn_dp._clipped_sums.resque_query_derivatives": _RESQUE,
    "sklearn_dp._clipped_sums.svrg_snapshot_sum": _SVRG,
    "sklearn_dp._clipped_sums.svrg_difference_sum": _SVRG,
    "sklearn_dp._clipped_sums.newton_sums": _NEWTON,
    "sklearn_dp._clipped_sums.curvature_bound": _NEWTON,
    "sklearn_dp._clipped_sums.gram_sketch": [
        (HERE / "test_nystrom.py", "test_gram_sketch_moves_by_at_most_R_squared"),
        (
            HERE / "test_nystrom.py",
            "test_gram_sketch_of_wide_float32_rows_moves_by_at_most_R_squared",
        ),
    ],
    "sklearn_dp._clipped_sums.sufficient_statistics": [
        *_SSP,
        (THIS, "test_frank_wolfe_refit_statistics_move_by_at_most_their_sensitivities"),
    ],
    "sklearn_dp._clipped_sums.smallest_eigenvalue": _SSP,
    "sklearn_dp._clipped_sums.clip_labels_to": _SSP,
    "sklearn_dp._clipped_sums.clipped_residual_squares": [
        (THIS, "test_clipped_residual_squares_move_by_at_most_the_squared_residual_bound")
    ],
    "sklearn_dp.solvers._l1_geometry.allocate_rows": [
        (THIS, "test_row_allocation_is_independent_per_row")
    ],
    "sklearn_dp.solvers._newton.certified_minimize": _MINIMISER,
}

#: Functions of ``_clipped_sums`` that release nothing themselves (reshapes of released values).
NOT_PRE_NOISE = {"sklearn_dp._clipped_sums.svec", "sklearn_dp._clipped_sums.unsvec"}

#: Solver modules every solver imports for the shared machinery; their kernels are checked once.
SHARED_SOLVER_MODULES = {"_common", "_noisy_steps", "_registry"}

#: The private row count is not a registered solver, but every estimator fit releases it.
ROW_COUNT_TESTS = [(THIS, "test_row_count_moves_by_at_most_one")]


def _hypothesis_tests(path):
    """Names of the functions of a test file decorated with hypothesis' ``@given``."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if getattr(target, "id", getattr(target, "attr", None)) == "given":
                    names.add(node.name)
    return names


def _imported_functions(module_name):
    """``module.name`` of every name a module imports with ``from ... import``."""
    module = importlib.import_module(module_name)
    tree = ast.parse(Path(module.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = importlib.util.resolve_name(
                "." * node.level + (node.module or ""), module.__package__
            )
            for alias in node.names:
                yield f"{source}.{alias.name}"


def _solver_kernels(spec):
    """The pre-noise functions a registered solver's module and its solver modules import."""
    modules = {spec.run.__module__}
    for name in _imported_functions(spec.run.__module__):
        source = name.rsplit(".", 1)[0]
        if source.startswith("sklearn_dp.solvers._"):
            if source.rsplit(".", 1)[1] not in SHARED_SOLVER_MODULES:
                modules.add(source)
    return {
        name
        for module in modules
        for name in _imported_functions(module)
        if name in KERNEL_PROPERTIES or name.startswith("sklearn_dp._clipped_sums.")
    }


def test_every_registered_solver_has_a_sensitivity_property():
    found = {}

    def check(owner, tests):
        assert tests, owner
        for path, function in tests:
            if path not in found:
                found[path] = _hypothesis_tests(path)
            assert function in found[path], (
                f"{owner}: {path.name}::{function} is not a hypothesis property (renamed?)."
            )

    for solver, spec in sorted(SOLVERS.items()):
        kernels = _solver_kernels(spec) - NOT_PRE_NOISE
        assert kernels, (
            f"{solver} imports none of the pre-noise functions of KERNEL_PROPERTIES: compute what "
            "it releases with a function of sklearn_dp._clipped_sums, give that function a "
            "hypothesis property and list it in KERNEL_PROPERTIES."
        )
        unlisted = sorted(kernels - set(KERNEL_PROPERTIES))
        assert not unlisted, (
            f"{solver} releases what {unlisted} compute, which no sensitivity property covers: add "
            "a hypothesis property (tests/test_sensitivity_properties.py) and list it in "
            "KERNEL_PROPERTIES."
        )
    shared = {
        name
        for module in SHARED_SOLVER_MODULES
        for name in _imported_functions(f"sklearn_dp.solvers.{module}")
        if name.startswith("sklearn_dp._clipped_sums.")
    }
    assert not sorted(shared - NOT_PRE_NOISE - set(KERNEL_PROPERTIES))
    for kernel, tests in [*KERNEL_PROPERTIES.items(), ("row count", ROW_COUNT_TESTS)]:
        check(kernel, tests)
