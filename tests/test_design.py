"""The bounded design matrix as an operator (sklearn_dp._design): exact against a materialised copy."""

import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_dp import DPLogisticRegression, DPSCORegressor
from sklearn_dp._data import bound_data, clip_rows_l2, clip_rows_linf, row_l2_norms
from sklearn_dp._design import BLOCK_ROWS, Design
from sklearn_dp.testing import trace_releases


def _reference(X, geometry, bound, fit_intercept, scaling=1.5):
    """The bounded matrix the way sklearn_dp 0.1 materialised it."""
    X = sp.csr_matrix(X, dtype=float) if sp.issparse(X) else np.asarray(X, dtype=float)
    Xb = clip_rows_l2(X, bound) if geometry == "l2" else clip_rows_linf(X, bound)
    Xb = Xb.toarray() if sp.issparse(Xb) else Xb
    if fit_intercept:
        Xb = np.hstack([Xb, np.full((Xb.shape[0], 1), scaling)])
    return Xb


def _data(kind, dtype, seed=0, n=300, d=7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if kind == "outliers":
        X[3] *= 1e12
        X[5, 2] = 1e300
        X[7] = 1e-200
        X[9, 1] = 40.0  # moderately beyond an entrywise bound of 1
        X[11] = 0.0
        X[13, 4] = -3e7
    if dtype == np.float32:
        X = np.clip(X, -1e30, 1e30)
        X[7] = 1e-30
    X = X.astype(dtype)
    return X


CASES = [
    (kind, dtype, sparse, geometry, fit_intercept)
    for kind in ("plain", "outliers")
    for dtype in (np.float64, np.float32)
    for sparse in (False, True)
    for geometry in ("l2", "linf")
    for fit_intercept in (False, True)
]


@pytest.mark.parametrize("kind, dtype, sparse, geometry, fit_intercept", CASES)
def test_design_products_match_the_materialised_matrix(
    kind, dtype, sparse, geometry, fit_intercept
):
    X = _data(kind, dtype)
    if sparse:
        X[np.abs(X) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    bounds = (
        {"data_norm": 2.0} if geometry == "l2" else {"feature_bound": [1.0, 2, 1, 0.5, 1, 1, 3]}
    )
    data = bound_data(
        X,
        np.zeros(X.shape[0]),
        fit_intercept=fit_intercept,
        intercept_scaling=1.5,
        geometry=geometry,
        **bounds,
    )
    design = data.design
    assert design.X is X  # no copy
    bound = bounds.get("data_norm", np.array(bounds.get("feature_bound", 0.0)))
    reference = _reference(
        X.astype(np.float64) if not sparse else X.astype(np.float64), geometry, bound, fit_intercept
    )
    if dtype == np.float32 and geometry == "l2" and design.row_scale is not None:
        # float32 X: float32 row factors, each rounded down (half the memory),
        # from norms bounded in float32 arithmetic: within a few float32 ulps
        # per feature of the float64 factors and never above them, so every
        # scaled row stays within the bound.  The products are then checked
        # against the operator's own (materialised) matrix.
        assert design.row_scale.dtype == np.float32
        bounded = design.toarray()
        slack = 3 * (X.shape[1] + 2) * 2.0**-23
        np.testing.assert_allclose(bounded, reference, rtol=slack, atol=1e-300)
        assert np.all(np.abs(bounded) <= np.abs(reference))
        assert np.all(row_l2_norms(bounded[:, : X.shape[1]]) <= 2.0 * (1.0 + 1e-12))
        reference = bounded
    np.testing.assert_allclose(design.toarray(), reference, rtol=1e-12, atol=1e-300)
    rng = np.random.default_rng(1)
    W = rng.normal(size=(design.n_columns, 3))
    V = rng.normal(size=(design.n_rows, 2))
    rtol = 1e-5 if dtype == np.float32 else 1e-10
    scale = np.abs(reference) @ np.abs(W) + 1e-300
    assert np.all(np.abs(design.matmul(W) - reference @ W) <= rtol * scale)
    np.testing.assert_allclose(design.rmatmul(V), reference.T @ V, rtol=1e-10, atol=1e-12)
    weights = rng.uniform(0, 2, size=design.n_rows)
    np.testing.assert_allclose(
        design.gram(weights), reference.T @ (weights[:, None] * reference), rtol=1e-10, atol=1e-12
    )
    float32_l2 = dtype == np.float32 and not sparse and design.excess is None
    _assert_norms(design.row_norms(), row_l2_norms(reference), float32_l2, X.shape[1])
    rows = np.array([0, 3, 5, 7, 9, 13, 200])
    np.testing.assert_allclose(design.rows(rows).toarray(), reference[rows], rtol=1e-12)
    cols = np.array([design.n_columns - 1, 0, 2])
    block = design.columns(cols)
    block = block.toarray() if sp.issparse(block) else block
    np.testing.assert_allclose(block, reference[:, cols], rtol=1e-12)
    materialized = data.X
    materialized = materialized.toarray() if sp.issparse(materialized) else materialized
    np.testing.assert_allclose(materialized, reference, rtol=1e-12)
    # Only n-vectors and the out-of-bound entries are held beyond X.
    dense = X.toarray() if sparse else np.asarray(X, dtype=np.float64)
    beyond = 0 if geometry == "l2" else int(np.sum(np.abs(dense) > bound))
    assert design.nbytes_beyond_X <= 8 * X.shape[0] + 20 * beyond + 8 * 7 * 10 + 200


def test_float32_sums_accumulate_in_float64():
    rng = np.random.default_rng(0)
    n = 2 * BLOCK_ROWS + 17
    X = rng.uniform(0.5, 1.0, size=(n, 3)).astype(np.float32)
    design = Design(X)
    V = np.full(n, 1.0 + 1e-9)
    exact = X.astype(np.float64).T @ V
    np.testing.assert_allclose(design.rmatmul(V), exact, rtol=1e-13)
    # float32 accumulation would be off by about 1e-4 here.
    assert np.max(np.abs(X.T @ V.astype(np.float32) - exact) / exact) > 1e-9


def test_design_on_zero_rows():
    data = bound_data(np.zeros((0, 3)), np.zeros(0), fit_intercept=True, data_norm=1.0)
    assert data.design.matmul(np.ones(4)).shape == (0,)
    assert data.design.rmatmul(np.zeros(0)).shape == (4,)
    assert data.design.gram().shape == (4, 4)


def _assert_norms(norms, exact, float32_l2, width):
    """Exact L2 norms, or for dense float32 rows (not clipped entrywise) the float32 bounds."""
    if float32_l2:
        assert np.all(norms >= exact)
        np.testing.assert_allclose(norms, exact, rtol=3 * (width + 2) * 2.0**-23)
    else:
        np.testing.assert_allclose(norms, exact, rtol=1e-12)


@pytest.mark.parametrize("kind, dtype, sparse, geometry, fit_intercept", CASES)
def test_columns_norms_and_column_views_match_the_materialised_matrix(
    kind, dtype, sparse, geometry, fit_intercept
):
    X = _data(kind, dtype)
    if sparse:
        X[np.abs(X) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    bounds = (
        {"data_norm": 2.0} if geometry == "l2" else {"feature_bound": [1.0, 2, 1, 0.5, 1, 1, 3]}
    )
    data = bound_data(
        X,
        np.zeros(X.shape[0]),
        fit_intercept=fit_intercept,
        intercept_scaling=1.5,
        geometry=geometry,
        **bounds,
    )
    design = data.design
    reference = data.X.toarray() if sparse else data.X  # the materialised copy
    # Dense float32 rows not clipped entrywise: L2 norms bounded in float32.
    float32_l2 = dtype == np.float32 and not sparse and design.excess is None
    last = design.n_columns - 1
    # Unsorted columns, the intercept (if any) in the middle: values bit for bit.
    for cols in ([4, 0, 2], [last, 3, 1], [5, last, 0, 6], [last], [2]):
        cols = np.array(sorted(set(cols), key=cols.index))
        block = design.columns(cols)
        if sparse:
            assert sp.isspmatrix_csr(block)
            csc = design.columns(cols, format="csc")
            assert sp.isspmatrix_csc(csc) and csc.has_canonical_format
            np.testing.assert_array_equal(csc.toarray(), reference[:, cols])
            block = block.toarray()
        else:
            assert block.flags.f_contiguous
            buffer = np.full(design.n_rows * cols.size + 5, np.nan)
            np.testing.assert_array_equal(design.columns(cols, out=buffer), reference[:, cols])
        np.testing.assert_array_equal(block, reference[:, cols])
    np.testing.assert_array_equal(design.row_norms(np.inf), np.max(np.abs(reference), axis=1))
    exact = row_l2_norms(reference)
    if dtype == np.float32:
        # Stored as float32, each rounded up: an upper bound (clips stay exact), half the memory.
        assert data.row_norms.dtype == np.float32
        in_float64 = design.row_norms()
        # Bounds computed in float32 arithmetic (the bounding pass's).
        _assert_norms(in_float64, exact, float32_l2, X.shape[1])
        assert np.all(data.row_norms.astype(np.float64) >= in_float64)
        np.testing.assert_allclose(data.row_norms, in_float64, rtol=2.5e-7)
    else:
        np.testing.assert_allclose(data.row_norms, exact, rtol=1e-12)
    rng = np.random.default_rng(2)
    for cols in ([0, 2, 3], [1, last], [last], list(range(design.n_columns))):
        cols = np.array(sorted(set(cols)))
        view = design.column_view(cols)
        sub = reference[:, cols]
        W = rng.normal(size=(cols.size, 2))
        V = rng.normal(size=(design.n_rows, 2))
        rtol = 1e-5 if dtype == np.float32 else 1e-10
        scale = np.abs(sub) @ np.abs(W) + 1e-300
        assert np.all(np.abs(view.matmul(W) - sub @ W) <= rtol * scale)
        assert np.all(np.abs(view.matmul(W[:, 0]) - view.matmul(W)[:, 0]) <= rtol * scale[:, 0])
        np.testing.assert_allclose(view.rmatmul(V), sub.T @ V, rtol=1e-10, atol=1e-12)
        _assert_norms(view.row_norms(), row_l2_norms(sub), float32_l2, X.shape[1])
        np.testing.assert_array_equal(view.row_norms(np.inf), np.max(np.abs(sub), axis=1))
        np.testing.assert_array_equal(view.toarray(), sub)


def test_blocks_of_rows_are_sized_by_bytes_and_a_small_share_of_X():
    from sklearn_dp._blocks import (
        BLOCK_BYTES_SHARE,
        GRAM_BLOCK_BYTES,
        MIN_BLOCK_BYTES,
        MIN_BLOCK_ROWS,
        SPARSE_BLOCK_BYTES_SHARE,
        block_ranges,
        block_rows,
    )

    for n, d, nnz, itemsize in [
        (0, 3, None, 8),
        (10, 3, None, 8),
        (20000, 50, None, 8),
        (20000, 20, None, 4),
        (10**6, 100, None, 8),
        (10**6, 100, None, 4),
        (10**6, 10**5, None, 8),
        (10**5, 500, 10**6, 8),
        (10**5, 500, 0, 8),
    ]:
        ranges = block_ranges(n, d, nnz, itemsize)
        step = block_rows(n, d, nnz, itemsize)
        assert [start for start, _ in ranges] == list(range(0, n, step))
        assert all(stop - start <= step for start, stop in ranges)
        assert (ranges[-1][1] if ranges else 0) == n
        per_row = 8 * d if nnz is None else 12 * max(1, nnz / n)
        share = (
            n * d * max(8, itemsize) * BLOCK_BYTES_SHARE  # float32: the float64 X's blocks
            if nnz is None
            else 12 * max(nnz, n) * SPARSE_BLOCK_BYTES_SHARE
        )
        # The float64 copy of a block: a small share of X, or 64 kB at most.
        assert step * per_row <= max(MIN_BLOCK_ROWS * per_row, MIN_BLOCK_BYTES, share)
        assert step <= max(MIN_BLOCK_ROWS, GRAM_BLOCK_BYTES / per_row)


@pytest.mark.parametrize("n, d", [(10**4, 20), (10**4, 100), (3 * 10**4, 20)])
def test_a_pass_over_a_small_X_makes_few_blocks(n, d):
    # Each block costs a few numpy calls and a block design: 64 blocks a pass
    # (a share of the rows) made small fits several times slower than one.
    X = np.zeros((n, d))
    # (A block's float64 copy stays within 1/16 of X's bytes, or 64 kB: the
    # memory beyond X of a fit stays small.)
    assert len(Design(X).blocks()) <= 16
    # A float32 X gets the float64 X's blocks (each copy 1/8 of its bytes):
    # halving them doubled the per-block costs of its passes.
    assert Design(X.astype(np.float32)).blocks() == Design(X).blocks()


def test_bounded_data_computes_row_norms_on_first_use():
    X = np.random.default_rng(0).normal(size=(50, 3))
    data = bound_data(X, np.zeros(50), fit_intercept=True, data_norm=1.0)
    assert data._row_norms is None
    np.testing.assert_allclose(data.row_norms, row_l2_norms(data.X), rtol=1e-12)
    assert data.row_norms is data.row_norms


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_the_bounding_pass_gives_the_row_norms_of_a_separate_pass_bit_for_bit(
    sparse, dtype, fit_intercept, monkeypatch
):
    import sklearn_dp._blocks as blocks_module

    rng = np.random.default_rng(3)
    X = rng.normal(size=(700, 9)) * rng.choice([1e-3, 1.0, 30.0], size=(700, 1))
    X[5] = 0.0
    X[17, 2] = 1e-160 if dtype == np.float64 else 1e-30  # underflowing squares
    X[40, :] = 1e200 if dtype == np.float64 else 3e38  # overflowing squares
    X = X.astype(dtype)
    if sparse:
        X[rng.random(X.shape) < 0.6] = 0.0
        X = sp.csr_matrix(X)
    fresh = bound_data(X, np.zeros(700), fit_intercept=fit_intercept, data_norm=2.0)
    # Blocks of 128 rows in the bounding pass, the default ones in the other.
    monkeypatch.setattr(blocks_module, "MIN_BLOCK_BYTES", 8)
    monkeypatch.setattr(blocks_module, "GRAM_BLOCK_BYTES", 8)
    data = bound_data(X, np.zeros(700), fit_intercept=fit_intercept, data_norm=2.0)
    monkeypatch.undo()
    out = np.float32 if dtype == np.float32 else np.float64
    cached = data.design.row_norms(dtype=out)
    assert cached is data.design._l2_norms
    separate = fresh.design._row_norms(None, 2, fit_intercept, out)
    np.testing.assert_array_equal(cached, separate)
    assert cached.dtype == out
    np.testing.assert_array_equal(
        data.design.row_block(100, 300).row_norms(dtype=out), cached[100:300]
    )
    np.testing.assert_array_equal(
        data.design.rows([3, 40, 17]).row_norms(dtype=out), cached[[3, 40, 17]]
    )
    # Upper bounds of the exact norms of the bounded rows (what clipping relies on).
    exact = row_l2_norms(data.X)
    assert np.all(cached >= exact * (1 - 1e-12))


def test_a_fit_makes_one_row_norm_pass(monkeypatch):
    calls = []
    original = Design._row_norms

    def counted(self, *args, **kwargs):
        calls.append(self.n_rows)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Design, "_row_norms", counted)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = (X[:, 0] > 0).astype(int)
    for dtype in (np.float64, np.float32):
        DPLogisticRegression(data_norm=2.0, classes=[0, 1], random_state=0).fit(X.astype(dtype), y)
    assert calls == []  # the bounding pass's norms are used, no second pass


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gram_with_weights_of_any_sign_and_small_blocks(sparse, dtype, monkeypatch):
    """Nonnegative weights take the symmetric (syrk) path, weights of any sign the general one;
    both match the materialised matrix, also when the rows span many blocks."""
    import sklearn_dp._blocks as blocks_module

    monkeypatch.setattr(blocks_module, "GRAM_BLOCK_BYTES", 8 * 7 * 16)  # 256 rows a block
    X = _data("outliers", dtype, n=1000)
    if sparse:
        X[np.abs(X) < 0.5] = 0.0
        X = sp.csr_matrix(X)
    data = bound_data(
        X, np.zeros(X.shape[0]), fit_intercept=True, intercept_scaling=1.5, data_norm=2.0
    )
    reference = data.design.toarray()
    rng = np.random.default_rng(3)
    for weights in (None, rng.uniform(0, 2, size=1000), rng.normal(size=1000)):
        w = np.ones(1000) if weights is None else weights
        np.testing.assert_allclose(
            data.design.gram(weights),
            reference.T @ (w[:, None] * reference),
            rtol=1e-10,
            atol=1e-12,
        )


@pytest.mark.parametrize("standardized", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_column_view_statistics_are_those_of_its_columns_block_by_block(
    standardized, sparse, dtype, monkeypatch
):
    """A column view's row blocks are its columns' rows bit for bit; its Gram matrix and
    sufficient statistics match the materialised columns over many blocks, and are those of
    the copied columns bit for bit when the rows make one block."""
    import sklearn_dp._blocks as blocks_module
    from sklearn_dp._clipped_sums import clip_labels_to, sufficient_statistics
    from sklearn_dp._scaled_design import scaled_design

    def make(n):
        X = _data("outliers", dtype, n=n)
        if sparse:
            X[np.abs(X) < 0.5] = 0.0
            X = sp.csr_matrix(X)
        if standardized:
            center = np.zeros(7) if sparse else np.linspace(-0.5, 0.5, 7)
            return scaled_design(
                X,
                center=center,
                scale=np.full(7, 2.0),
                clip=np.full(7, 3.0),
                geometry="l2",
                row_bound=1.5,
                intercept=1.5,
            )[0]
        return bound_data(
            X, np.zeros(n), fit_intercept=True, intercept_scaling=1.5, data_norm=2.0
        ).design

    rng = np.random.default_rng(4)
    cols = np.array([0, 2, 5, 7])  # the intercept last
    design = make(300)
    assert len(design.blocks()) == 1
    y = 3.0 * rng.normal(size=300)
    Z = design.columns(cols)
    gram, cross = sufficient_statistics(design.column_view(cols), y, 1.0)
    expected = Z.T @ Z
    np.testing.assert_array_equal(gram, expected.toarray() if sparse else expected)
    np.testing.assert_array_equal(cross, Z.T @ clip_labels_to(y, 1.0))

    monkeypatch.setattr(blocks_module, "GRAM_BLOCK_BYTES", 8 * 8 * 16)  # 128 rows a block
    design = make(1000)
    assert len(design.blocks()) > 4
    view = design.column_view(cols)
    # A narrow view's blocks copy about a full-width block's bytes: fewer, longer blocks.
    assert 1 < len(view.blocks()) < len(design.blocks())
    assert design.column_view(np.arange(8)).blocks() == design.blocks()
    sub = design.columns(cols)
    sub = sub.toarray() if sparse else sub
    for start, stop in view.blocks():
        block = view.row_block(start, stop)
        assert sp.issparse(block) == sparse
        np.testing.assert_array_equal(block.toarray() if sparse else block, sub[start:stop])
    for weights in (None, rng.uniform(0, 2, size=1000), rng.normal(size=1000)):
        w = np.ones(1000) if weights is None else weights
        np.testing.assert_allclose(
            view.gram(weights), sub.T @ (w[:, None] * sub), rtol=1e-10, atol=1e-12
        )
    y = 3.0 * rng.normal(size=1000)
    gram, cross = sufficient_statistics(view, y, 1.0)
    np.testing.assert_allclose(gram, sub.T @ sub, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cross, sub.T @ np.clip(y, -1, 1), rtol=1e-10, atol=1e-12)
    empty = Design(np.zeros((0, 7), dtype=dtype), intercept=1.5).column_view(cols)
    np.testing.assert_array_equal(empty.gram(), np.zeros((4, 4)))


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_rows_keep_their_bound_exactly(sparse):
    """float32 X is never rounded after clipping: the bounded values (and every product
    the solvers use) are float64 functions of the exact float32 entries, so the stated
    bounds hold as for float64 input, with no float32 margin needed.

    Checked exactly: entrywise bounds with no slack; L2 row norms, recomputed in
    extended precision, within a few float64 ulps of the bound; and the L2 clipped
    gradient sum through the design moves by at most the clip when a hostile float32
    row is added."""
    from sklearn_dp._clipped_sums import clipped_gradient_sum
    from sklearn_dp._losses import SquaredLoss

    rng = np.random.default_rng(5)
    n, d = 400, 6
    X = rng.normal(size=(n, d)).astype(np.float32)
    # Values just above the bounds (in float32) and huge ones.
    X[0] = np.nextafter(np.float32(1.0), np.float32(2.0))
    X[1, 0] = np.float32(3e38)
    X[2] = np.float32(0.4082483)  # ||row|| ~ 1.0000001 in float32 terms
    X[3, 2] = np.float32(-1e-30)
    bound = 1.0
    Xin = sp.csr_matrix(X) if sparse else X
    linf = bound_data(Xin, np.zeros(n), fit_intercept=True, geometry="linf", feature_bound=bound)
    assert linf.design.dtype == np.float32  # no float64 copy of X
    values = linf.design.toarray()
    assert np.all(np.abs(values[:, :d]) <= bound)  # exact, no slack
    l2 = bound_data(Xin, np.zeros(n), fit_intercept=False, geometry="l2", data_norm=bound)
    rows = l2.design.toarray().astype(np.longdouble)
    norms = np.sqrt(np.sum(rows * rows, axis=1))
    assert np.all(norms <= bound * (1 + 4 * np.finfo(np.float64).eps))
    # The clipped sum through the design (as dp_gd / dp_sgd use it) and a hostile row.
    hostile = np.full((1, d), np.float32(3e38))
    X_plus = np.vstack([X, hostile])
    X_plus = sp.csr_matrix(X_plus) if sparse else X_plus
    y = rng.normal(size=n)
    y_plus = np.append(y, 1e6)
    W = rng.normal(size=(d, 1))
    clip = 0.5
    sums = []
    for Xs, ys in ((Xin, y), (X_plus, y_plus)):
        data = bound_data(Xs, ys, fit_intercept=False, geometry="l2", data_norm=bound)
        sums.append(clipped_gradient_sum(data.design, ys, W, SquaredLoss(), clip, data.row_norms))
    change = np.linalg.norm(sums[1] - sums[0])
    assert change <= clip * (1 + 1e-12) + 1e-12 * np.abs(sums[0]).sum()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_entries_far_beyond_their_bound_move_a_clipped_sum_by_at_most_its_sensitivity(dtype):
    # Every row holds entries nearly a million times their bound (below the
    # factor that patches a row): were the excess subtracted from X^T u after
    # the fact, the running sum would reach ~1e12 and its rounding (growing
    # with n) would survive the subtraction, so one more row would move the
    # Frank-Wolfe gradient sum by more than the clip (by 1.3% of it at this n, float64).
    from _helpers import linf_row_norms

    from sklearn_dp._clipped_sums import clipped_sum
    from sklearn_dp._losses import get_loss

    n, d, clip = 1_000_000, 3, 1.0
    rng = np.random.default_rng(0)
    X = rng.uniform(5e5, 9.9e5, size=(n, d)).astype(dtype)
    y = -rng.uniform(0.5, 1.0, size=n)  # squared loss at w = 0: derivatives of one sign
    loss = get_loss("squared")

    def gradient_sum(X, y):
        data = bound_data(X, y, fit_intercept=False, geometry="linf", feature_bound=1.0)
        design = data.design
        return clipped_sum(design, y, np.zeros(d), loss, clip, linf_row_norms(design))

    before = gradient_sum(X, y)
    for at in (0, 1, n // 2):
        after = gradient_sum(np.insert(X, at, 9.9e5, axis=0), np.insert(y, at, -1.0))
        # The added row contributes exactly +clip to every coordinate.
        assert np.max(np.abs(after - before - clip)) < 1e-6 * clip


# --------------------------------------------------------------------------
# float32 rows near the float32 maximum
# --------------------------------------------------------------------------


def _float32_separable(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


def test_float32_hostile_row_scores_stay_finite_and_within_the_sensitivity():
    # Scores are computed in float64 after the row factor: X @ W in float32
    # would overflow on such a row (inf - inf = NaN), its clipped gradient
    # would be NaN and the fit on D + row would fail where the fit on D runs.
    X, y = _float32_separable()
    hostile = np.array([[3.0e38, -3.0e38]], dtype=np.float32)
    data = bound_data(np.vstack([X, hostile]), np.append(y, 1), fit_intercept=True, data_norm=2.0)
    W = np.array([3.0, 3.0, 0.5])
    Z = data.design.matmul(W)
    reference = data.design.toarray() @ W
    assert np.all(np.isfinite(Z))
    np.testing.assert_allclose(Z, reference, rtol=1e-5, atol=1e-5)

    def fit(X, y):
        with trace_releases(
            substitute=lambda r: (
                np.zeros_like(np.asarray(r.output, float))
                if r.mechanism != "exponential"
                else r.output
            )
        ) as trace:
            DPLogisticRegression(epsilon=1.0, classes=[0, 1], data_norm=2.0, random_state=0).fit(
                X, y
            )
        return trace.releases

    base = fit(X, y)
    neighbour = fit(np.vstack([X, hostile]), np.append(y, 1))
    assert len(base) == len(neighbour)
    for a, b in zip(base, neighbour):
        if a.value is None or a.mechanism == "exponential":
            continue
        assert np.all(np.isfinite(b.value)), a.label
        diff = np.asarray(b.value, float) - np.asarray(a.value, float)
        assert np.linalg.norm(diff.ravel()) <= a.sensitivity * (1 + 1e-9), a.label


@pytest.mark.parametrize("geometry", ["l2", "linf"])
def test_passes_over_a_sparse_X_never_modify_it(geometry):
    # Blocks of a CSR X are views of its arrays: a block clipped in place
    # must be copied first.
    rng = np.random.default_rng(5)
    X = sp.random(600, 7, density=0.4, format="csr", random_state=5)
    X.data *= 5.0
    X.data[::17] = 1e9  # far beyond the bound: patched rows
    X.data[::5] = 3.0  # beyond the bound: excess entries
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    kwargs = {"data_norm": 1.0} if geometry == "l2" else {"feature_bound": 1.0}
    data = bound_data(X, np.zeros(600), fit_intercept=True, geometry=geometry, **kwargs)
    design = data.design
    design.gram()
    design.gram(rng.uniform(-1, 1, 600))
    design.rmatmul(rng.normal(size=600))
    design.matmul(rng.normal(size=design.n_columns))
    design._row_norms(None, 2, True)
    design.row_norms(np.inf)
    design.materialize()
    design.columns([0, 3, 7])
    for start, stop in design.blocks():
        block = design.row_block(start, stop)
        block.gram(np.ones(stop - start))
        block.rmatmul(np.ones(stop - start))
    for array, original in zip((X.data, X.indices, X.indptr), before):
        np.testing.assert_array_equal(array, original)


# -- float32: what may be computed in float32 and what must accumulate in float64 --------


def _float32_adversarial(n=600, d=6, seed=4):
    """float32 rows of ordinary size and rows built to break float32 arithmetic."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-0.5, 0.5, size=(n, d)).astype(np.float32)
    big = 3.0e38
    rows = {
        3: [big, -big, big, -big, big, -big],  # margins and sums of squares overflow, cancel
        8: [1e20, 1.0, -1e20, 0.5, 1e20, -1e20],  # a margin that cancels to a small value
        13: [1e-45],  # subnormal entries: squares underflow to 0
        21: [1e30, 1e-30, -1e30, 1e-30, 0.0, 1e-38],  # huge and tiny in one row
        34: [0.0],
        55: [1e-19, -1e-19, 1e-19, 0, 0, 0],  # squares near float32's smallest normal
        89: [0.9, 0.0, 0.0, 0.0, 0.0, 0.436],  # at the bound (norm ~1)
    }
    for i, row in rows.items():
        X[i] = np.resize(np.array(row, dtype=np.float32), d)
    return X


FLOAT32_HOSTILE = {
    "overflowing-cancellation": lambda d: np.array([3.0e38, -3.0e38] * (d // 2), np.float32),
    "subnormal": lambda d: np.full(d, 1e-45, np.float32),
    "huge-and-tiny": lambda d: np.array([1e30, 1e-30] * (d // 2), np.float32),
}


@pytest.mark.parametrize("hostile", sorted(FLOAT32_HOSTILE))
@pytest.mark.parametrize(
    "estimator, params",
    [
        ("DPLogisticRegression", dict(solver="dp_newton", classes=[0, 1])),
        ("DPLogisticRegression", dict(solver="dp_gd", classes=[0, 1], max_iter=4)),
        ("DPSCORegressor", dict(solver="dp_ssp", alpha=0.01, y_bound=1.0)),
    ],
)
def test_float32_releases_move_by_at_most_their_sensitivity_on_adversarial_rows(
    estimator, params, hostile
):
    # The releases of a float32 fit (margins and row norms in float32, sums over
    # rows accumulated in float64) under substitution: one hostile row moves
    # each pre-noise value by at most its declared sensitivity, and nothing
    # else a user sees changes.
    from test_substitution import _assert_same, _check_sensitivities, _observe

    X = _float32_adversarial()
    y = (np.arange(X.shape[0]) % 2).astype(float)
    X_prime = np.vstack([X, FLOAT32_HOSTILE[hostile](X.shape[1])])
    y_prime = np.append(y, 1.0)
    assert X_prime.dtype == np.float32
    cls = {"DPLogisticRegression": DPLogisticRegression, "DPSCORegressor": DPSCORegressor}
    seen = []
    for data in ((X, y), (X_prime, y_prime)):
        model = cls[estimator](epsilon=1.0, delta=1e-6, data_norm=1.0, random_state=0, **params)
        seen.append(_observe(model, *data, classes=[0, 1]))
    a, b = seen
    assert a["error"] is None and b["error"] is None
    _assert_same(a["attributes"], b["attributes"])
    assert a["warnings"] == b["warnings"] and a["printed"] == b["printed"]
    _check_sensitivities(a["trace"], b["trace"])
    assert a["trace"].releases


def test_float32_sums_over_rows_are_the_exact_sums_of_bounded_terms():
    # The pre-noise sums of a float32 fit: every row's term is within its bound
    # (factors from float32 norm bounds), and the sums over rows (X~^T v, the
    # Gram matrix) are the exact sums of those terms up to float64 rounding (a
    # few units of 2**-52 of the sum of |terms|): no float32 accumulation.
    import math

    X = _float32_adversarial(n=3000)
    data = bound_data(X, np.zeros(X.shape[0]), fit_intercept=True, data_norm=1.0)
    design = data.design
    bounded = design.toarray()  # exact: float32 factor times float32 entry, in float64
    norms = np.sqrt(np.einsum("ij,ij->i", bounded[:, :-1], bounded[:, :-1]))
    assert np.all(norms <= 1.0)
    assert np.all(data.row_norms.astype(np.float64) >= row_l2_norms(bounded))
    rng = np.random.default_rng(0)
    v = rng.choice([-1.0, 1.0], size=X.shape[0]) * (1.0 + rng.random(X.shape[0]))
    terms = bounded * v[:, None]
    exact = np.array([math.fsum(terms[:, j]) for j in range(terms.shape[1])])
    slack = 8 * 2.0**-52 * np.sum(np.abs(terms), axis=0)
    assert np.all(np.abs(design.rmatmul(v) - exact) <= slack)
    gram = design.gram(np.abs(v))
    for j in range(bounded.shape[1]):
        products = bounded * (np.abs(v) * bounded[:, j])[:, None]
        exact = np.array([math.fsum(products[:, k]) for k in range(bounded.shape[1])])
        slack = 8 * 2.0**-52 * np.sum(np.abs(products), axis=0)
        assert np.all(np.abs(gram[j] - exact) <= slack)
    # The same sums accumulated in float32 miss by far more than that.
    in_float32 = bounded.astype(np.float32).T @ v.astype(np.float32)
    assert np.max(np.abs(in_float32 - design.rmatmul(v))) > 1e3 * np.max(slack)


def test_float32_row_norm_bounds_do_not_depend_on_the_row_position():
    # A row's factor is a function of that row alone: the same bits whatever
    # its position and alignment in X, so adding a row elsewhere changes no
    # other row's term.
    X = _float32_adversarial(n=257, d=37)
    base = row_l2_norms(X)
    for shift in range(1, 5):
        padded = np.vstack([np.ones((shift, X.shape[1]), np.float32), X])
        np.testing.assert_array_equal(row_l2_norms(padded)[shift:], base)
    assert np.all(base >= row_l2_norms(X.astype(np.float64)))


@pytest.mark.parametrize("seed", [24, 31])
def test_an_added_float32_row_moves_no_other_rows_score(seed):
    # BLAS rounds a float32 row's dot product by where the row falls in its
    # block; an added row must not move the other rows' clipped terms.
    from sklearn_dp._clipped_sums import clipped_gradient_sum
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import BinaryLogisticLoss

    loss = BinaryLogisticLoss()
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
            sums.append(clipped_gradient_sum(data.design, data.y, W, loss, C, data.row_norms))
        assert np.linalg.norm(sums[1] - sums[0]) <= C * (1 + 2.0**-30)
