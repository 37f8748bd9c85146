"""Differentially private (block) coordinate descent with diagonal sketches (``dp_cd``).

DP-SkGD of Maranjyan, Sadiev and Richtarik ("Differentially Private Random
Block Coordinate Descent", see ``docs/solvers/coordinate_descent.md``): at each step a
random set ``S`` of coordinates is drawn independently of the data, the
per-sample gradients restricted to ``S`` are clipped, summed and noised, and
every coordinate ``j`` of ``S`` moves by ``-(g_j + noise_j) / M_j`` (the step
matrix ``Gamma = P M^-1`` of the paper, so the sampling probabilities only
decide how often a coordinate moves).  Inner iterates are averaged and the
average restarts the next outer round.

Special cases, all through options of one function: DP-CD (uniform single
coordinates), importance sampling (``p_j`` proportional to ``M_j``), block
sampling over a partition (uniform or importance weights), tau-nice sampling
and full sampling (diagonally preconditioned full-batch DP-GD).

Everything that shapes the run (the smoothness constants ``M``, the sampling
probabilities, the per-block clip thresholds, the number of steps) is computed
from public quantities only: the per-column feature bounds
``data.feature_bound`` (``|X[i, j]| <= X_j``), the loss's own constants, the
penalty and the options (:mod:`sklearn_dp.solvers._cd_sampling`).  Nothing
is read off the private design matrix.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .._clipped_sums import block_clipped_gradient_sum
from ._cd_sampling import (
    block_clip_thresholds,
    block_probabilities,
    check_smoothness_rule,
    noise_amplification_warning,
    sampling_structure,
    set_clip_threshold,
    smoothness_constants,
)
from ._common import Progress, SolverResult, check_finite_iterate, make_rng, moved_less_than
from ._gradient_descent import gradient_bound
from ._l1_geometry import public_setup
from ._noisy_steps import gaussian_plan, noisy_steps, plan_of_call, release

#: Default number of passes (epochs) over the coordinates.
DEFAULT_CD_EPOCHS = 10

# --------------------------------------------------------------------------
# Privacy plan
# --------------------------------------------------------------------------


#: Most passes of the default private schedule (reached at epsilon >= 5).
MAX_DEFAULT_CD_EPOCHS = 50
#: Passes without noise (epsilon=inf spends nothing): the step 1 / M_j uses the
#: worst-case curvature of the public bounds, 5-10x the actual one on breast
#: cancer, so 50 passes stop 10% above the optimum there; 400 (dp_gd's
#: noiseless step count, each pass about one of its steps) reach it within 1%.
NONPRIVATE_CD_EPOCHS = 400

#: Without noise (epsilon=inf, nothing to protect) the default schedule stops
#: early once a round moves no coefficient by more than this fraction of the
#: largest one: on 100k rows the 400 passes took over 10 s where dp_gd takes 1.
#: With the actual coordinate curvature and random reshuffling (epsilon=inf
#: only), 1e-3 stops the 100k-row benchmark after about 55 passes (gap below
#: 0.01%) and breast cancer at a 0.27% gap (1e-4: 100 passes, 0.06%).
NONPRIVATE_CD_TOL = 1e-3


def default_cd_epochs(epsilon):
    """Default number of passes of dp_cd, a function of the public epsilon only.

    ``DEFAULT_CD_EPOCHS`` (10) up to epsilon = 1, then ``10 epsilon``, at most
    :data:`MAX_DEFAULT_CD_EPOCHS` (50); :data:`NONPRIVATE_CD_EPOCHS` (400)
    without noise (``epsilon=inf``).  Ten passes are
    what the noise allows at small epsilon (every pass adds noise), but the
    step ``1 / M_j`` uses the worst-case curvature ``beta X_j^2`` of the
    public bounds, so ten passes stop far from the optimum once the noise is
    small (the majority class at every epsilon on unit-norm rows).
    """
    epsilon = float(epsilon)
    if math.isinf(epsilon):
        return NONPRIVATE_CD_EPOCHS
    return int(min(MAX_DEFAULT_CD_EPOCHS, max(DEFAULT_CD_EPOCHS, math.ceil(10 * epsilon))))


@public_setup()  # a plan reads public inputs (and the released row count) only
def plan_dp_cd(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_cd``: ``K * T`` Gaussian steps with one noise multiplier.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (unused by the event: it is not subsampled).
    n_params : int
        ``n_columns * n_outputs`` (intercept column included).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` gives a noiseless plan.
    call : SolverCall
        The arguments of the run (a :class:`~sklearn_dp.solvers.SolverCall`):
        ``n_outputs`` (columns of the coefficient matrix); ``max_iter``, the
        number of passes (epochs), default :func:`default_cd_epochs`, a pass
        being ``steps_per_epoch`` steps; ``sampling``, ``blocks``,
        ``block_size``, ``tau`` (see :func:`sampling_structure`), and the
        ``smoothness`` rule, refused here (before any spend) when no public
        bound can validate it (:func:`check_smoothness_rule`);
        ``n_outer``, the outer rounds ``T``, default one round per pass (the
        ``max_iter * steps_per_epoch`` steps are split into ``T`` rounds of
        ``K = ceil(total / T)`` inner steps).

    Returns
    -------
    PrivacyPlan
        ``details`` holds the structure and schedule (all public).

    Notes
    -----
    Every step is a Gaussian mechanism on the clipped gradient sum of the
    drawn set ``U`` with sensitivity ``C_U`` (add/remove one row) and noise
    ``N(0, (z C_U)^2 I)``: its privacy loss is that of a Gaussian mechanism
    with multiplier ``z`` whatever ``U`` is, and ``U`` is drawn independently
    of the data.  The ``K T`` adaptive steps therefore compose exactly into
    one Gaussian mechanism with multiplier ``z / sqrt(K T)`` (Gaussian
    differential privacy composition); ``z`` is the smallest multiplier for
    which the analytic Gaussian mechanism meets (epsilon, delta).
    """
    structure = sampling_structure(
        n_params // call.n_outputs, call.sampling, call.blocks, call.block_size, call.tau
    )
    check_smoothness_rule(call.smoothness, structure)
    # max_iter and n_outer are counts (the registry's constraints, checked before a plan).
    epochs = default_cd_epochs(epsilon) if call.max_iter is None else call.max_iter
    total = epochs * structure.steps_per_epoch
    n_outer = min(epochs if call.n_outer is None else call.n_outer, total)
    n_inner = math.ceil(total / n_outer)
    details = dict(
        structure=structure,
        epochs=epochs,
        n_inner=n_inner,
        n_outer=n_outer,
        steps_per_epoch=structure.steps_per_epoch,
    )
    return gaussian_plan(epsilon, delta, n_inner * n_outer, details)


# --------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------


#: Share of the size of X that dp_cd may hold in copies of column blocks.
COLUMN_CACHE_SHARE = 0.1
#: Share of the columns (of a float64 X) in a chunk of the default draw order
#: (:func:`reshuffled_draws`): one refill of the default cache.  The order is
#: part of the algorithm, so it does not follow a change of the cache's size.
DRAW_CHUNK_SHARE = 0.1


class _ColumnBlocks:
    """Column blocks of the bounded design for the steps of dp_cd, without a copy of all of X.

    A step needs the drawn columns of ``X~`` for all rows, three times (row
    norms, the clipped sum, the update of the scores).  Rows of ``X`` are
    stored one after the other, so reading one column touches every row:
    blocks are copied once (``design.columns``: Fortran-ordered float64 for
    dense data; for sparse data the rows where the block is non-zero and the
    block on them, CSR) and the copies are held in a cache of at most
    ``budget`` bytes (``COLUMN_CACHE_SHARE`` of the size of X by default).

    The blocks of a round are drawn before its steps (public randomness), so
    when a drawn block is not cached the cache is refilled with the next
    distinct blocks of the draw sequence, the drawn one first, all extracted
    in one pass over X.  A block whose copy would exceed the budget is never
    copied: it is served as a :class:`~sklearn_dp._design.ColumnView`
    (products through the whole design).  Tau-nice sets (drawn step by step)
    are copied for their step only.  What is cached (private sizes of
    sparse columns decide it) changes the speed, never a value.
    """

    def __init__(self, design, blocks=None, budget=None):
        self.design = design
        self.blocks = blocks
        self.sparse = design.sparse
        X = design.X
        nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes if self.sparse else X.nbytes
        self.budget = COLUMN_CACHE_SHARE * nbytes if budget is None else budget
        # Blocks per chunk of the draw order, public (width, dtype, block sizes): what
        # fits in a refill of the default cache (float64 copies of the caller's dtype).
        share = DRAW_CHUNK_SHARE * design.X.dtype.itemsize / 8 * design.n_features
        self.chunk = max(1, int(share / (max(map(len, blocks)) if blocks else 1)))
        self._cache = {}
        self._buffer = None  # dense: one buffer of the budget's size, reused by every refill

    def _cost(self, cols):
        """Bytes of the copy of the block ``cols`` (an upper bound for sparse data)."""
        n = self.design.n_rows
        features = cols[cols < self.design.n_features]
        if not features.size:
            return math.inf  # the intercept column alone: a ColumnView is free
        if not self.sparse:
            return 8 * n * cols.size
        entries = int(np.sum(self.design._column_counts()[features]))
        entries += n * (features.size < cols.size)
        if cols.size == 1:
            return 12 * entries  # values and row indices (views of the CSC copy)
        # The CSC copy, then CSR on the non-zero rows with their row indices.
        return 24 * entries + 16 * min(n, entries)

    def _extract(self, blocks):
        """Copies of several blocks made in one pass over X: ``[(rows, matrix), ...]``."""
        union = np.concatenate(blocks)
        edges = np.cumsum([0] + [cols.size for cols in blocks])
        if not self.sparse:
            need = self.design.n_rows * union.size
            if self._buffer is None or self._buffer.size < need:
                self._buffer = None  # the old buffer goes before the new one is made
                full = int(self.budget) // 8 if math.isfinite(self.budget) else 0
                self._buffer = np.empty(max(need, full))
            copy = self.design.columns(union, out=self._buffer)
            # Views of one Fortran-ordered array: each block is contiguous.
            return [(slice(None), copy[:, a:b]) for a, b in zip(edges[:-1], edges[1:])]
        copy = self.design.columns(union, format="csc")
        entries = []
        for a, b in zip(edges[:-1], edges[1:]):
            if b - a == 1:
                # One column: its non-zero rows and values, as views of the CSC copy.
                lo, hi = copy.indptr[a], copy.indptr[b]
                entries.append((copy.indices[lo:hi], copy.data[lo:hi, None]))
                continue
            sub = copy[:, a:b].tocsr()
            rows = np.flatnonzero(np.diff(sub.indptr))
            entries.append((rows, sub[rows]))
        return entries

    def block(self, key, cols, upcoming=None):
        """``(rows, block)`` for the columns ``cols``.

        ``rows``: the rows the block holds (``slice(None)`` for all of them, so
        that ``Z[rows]`` is a view of ``Z``); ``block``: a matrix or
        a :class:`~sklearn_dp._design.ColumnView` of those rows.  ``key`` is
        the block's index in the partition (None for a set drawn for this step
        only); ``upcoming`` the indices of the blocks drawn next (from this one on).
        """
        if key is not None and key in self._cache:
            return self._cache[key]
        if self._cost(cols) > self.budget:
            return slice(None), self.design.column_view(cols)
        if key is None:
            self._cache.clear()  # the buffer is reused
            return self._extract([cols])[0]
        chosen, total = [], 0
        for index in [key] if upcoming is None else upcoming:
            index = int(index)
            if index in chosen:
                continue
            cost = self._cost(self.blocks[index])
            if cost > self.budget:
                continue  # served by a ColumnView, never cached
            if total + cost > self.budget:
                break
            chosen.append(index)
            total += cost
        self._cache.clear()  # drop the old copies before making the new ones
        entries = self._extract([self.blocks[index] for index in chosen])
        self._cache = dict(zip(chosen, entries))
        return self._cache[key]


def reshuffled_draws(rng, n_blocks, n_draws, chunk):
    """Block indices of ``n_draws`` steps: every pass visits each block once (random reshuffling).

    A pass takes the chunks of ``chunk`` consecutive blocks in a random order
    and the blocks of a chunk in order, so the copies of column blocks
    (:class:`_ColumnBlocks`, whose cache holds a chunk) are made from
    contiguous column ranges of row-major X: about one read of X per pass,
    where independent uniform draws read all of X at every refill of the
    cache.  Public randomness; ``chunk`` is a function of public inputs.
    """
    chunks = np.array_split(np.arange(n_blocks), range(chunk, n_blocks, chunk))
    n_passes = -(-n_draws // n_blocks)  # a fresh order of the chunks for each pass
    order = [chunks[i] for _ in range(n_passes) for i in rng.permutation(len(chunks))]
    return np.concatenate(order)[:n_draws]


def _block_product(X_block, change):
    """``X_block @ change`` for a copied block or a ColumnView (float64)."""
    if hasattr(X_block, "matmul"):
        if getattr(X_block, "features", None) is not None and not X_block.features.size:
            # The intercept column alone: a constant for every row (broadcast, no n-vector).
            return X_block.design.intercept * change[-1:]
        return X_block.matmul(change)
    if not sp.issparse(X_block) and X_block.shape[1] == 1:
        return X_block * change  # one product per entry: no BLAS call for an outer product
    return np.asarray(X_block @ change)


def noiseless_coordinate_smoothness(design, loss_smoothness, l2, normalizer, public_M):
    """Actual coordinate curvature ``beta sum_i x~_ij^2 / normalizer + l2_j`` (epsilon=inf only).

    Reads the bounded design: used only without noise (``epsilon=inf``:
    nothing is private and nothing is promised), for the default
    ``smoothness="auto"`` with single coordinates.  The second derivative of
    the objective along coordinate ``j`` is ``sum_i l''_i x~_ij^2 /
    normalizer + l2_j <= M_j``, so ``1 / M_j`` is still a descent step; the
    public rule's ``beta X_j^2`` is the worst case over every data set in the
    bounds (6-25x larger on the 100k-row benchmark, hence 6-25x shorter
    steps).  Columns with no curvature at all keep the public constant.
    """
    squares = np.zeros(design.n_columns)
    for start, stop in design.blocks():
        block = design.row_block(start, stop).materialize()
        if sp.issparse(block):
            squares += np.asarray(block.multiply(block).sum(axis=0)).ravel()
        else:
            squares += np.einsum("ij,ij->j", block, block)
    M = float(loss_smoothness) * squares / float(normalizer) + np.asarray(l2, dtype=float)
    return np.where(M > 0, np.minimum(M, public_M), public_M)


def dp_cd(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    l1_ratio=0.0,
    max_iter=None,
    sampling="uniform",
    blocks=None,
    block_size=None,
    tau=None,
    n_outer=None,
    smoothness="auto",
    clip_norm=None,
    step_scale=1.0,
    output=None,
    normalizer=None,
    random_state=None,
    verbose=0,
    plan=None,
):
    """Differentially private random (block) coordinate descent (DP-SkGD / DP-CD).

    Minimises ``mean_i l(x_i @ W, y_i) + alpha * (l1_ratio * ||W_pen||_1 +
    (1 - l1_ratio) / 2 * ||W_pen||_2^2)`` over ``W`` (``W_pen``: the penalised
    rows, not the intercept).  Each step draws a set ``U`` of columns
    independently of the data, computes the per-sample gradients restricted
    to ``U`` (a scalar times ``x_{i,U}`` for a GLM), clips each to L2 norm
    ``C_U``, sums them, adds ``N(0, (z C_U)^2)`` noise, divides by ``n``, and
    moves each ``j`` in ``U`` by ``-(g_j + noise_j + l2 W_j) / M_j`` followed by
    the L1 proximal map (soft-thresholding at ``alpha * l1_ratio / M_j``).
    The average of the inner iterates of a round restarts the next round; the
    output is the last round's average (the paper's ``w_priv``) or the last
    iterate.

    Parameters
    ----------
    data : BoundedData
        Rows bounded entrywise: ``data.feature_bound`` holds the public bound
        of every column (the intercept column's is ``intercept_scaling``).
        All constants are computed from it.
    loss : GLMLoss
        A smooth loss (``loss.smoothness`` is not None).
    n_outputs : int
        Columns of the coefficient matrix (1, or K for a multinomial model;
        a coordinate is then one row of ``W``, its K entries updated together).
    alpha : float
        Penalty strength on the average loss.
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same steps without noise.
    l1_ratio : float in [0, 1]
        Share of the L1 term in the elastic-net penalty (1: Lasso).  The L2
        part is in the smooth objective (``M_j`` grows by it), the L1 part is
        applied by its proximal map.
    max_iter : int, optional
        Number of passes (epochs); default :func:`default_cd_epochs` (10 up
        to epsilon 1, ``10 epsilon`` up to 50, and 400 at ``epsilon=inf``).  A pass
        is one step per block of a partition (``n_columns`` steps for single
        coordinates, 1 for full sampling), ``ceil(n_columns / tau)`` steps for
        tau-nice sampling; it costs about one full gradient.
    sampling : {"uniform", "importance", "tau_nice", "full"}, default="uniform"
        How the set ``U`` is drawn: one block of a partition (single
        coordinates unless ``blocks``/``block_size`` is given), each pass
        visiting every block once in a random order (DP-CD with random
        reshuffling, by chunks of consecutive blocks:
        :func:`reshuffled_draws`), or with probability proportional to the
        block's largest ``M_j`` (importance sampling); ``tau`` distinct coordinates uniformly;
        or every coordinate (diagonally preconditioned full-batch DP-GD).
    blocks : sequence of sequences of int, optional
        A partition of the columns of the bounded data (intercept column last);
        columns that no block names form one extra block.
    block_size : int, optional
        Contiguous blocks of this many columns.
    tau : int, optional
        Set size of ``sampling="tau_nice"``.
    n_outer : int, optional
        Outer rounds ``T`` (restarts from the average); default one per pass.
        Only ``output="average"`` restarts; the others run the ``K * T``
        steps in one go.
    smoothness : {"auto", "coordinate", "gershgorin", "eso", "scalar"} or array-like
        Rule for the diagonal ``M`` that must dominate the Hessian on every
        drawable set (see :func:`smoothness_constants`); ``"auto"`` is the
        coordinate-wise constant for single coordinates and the Gershgorin
        bound for larger sets.  An array gives public constants directly
        (checked for validity against the public bounds).  Without noise
        (``epsilon=inf``: nothing private, nothing promised) ``"auto"`` with
        single coordinates uses the actual coordinate curvature ``beta
        sum_i x~_ij^2 / normalizer + l2_j`` of the bounded design
        (:func:`noiseless_coordinate_smoothness`; still a valid descent step)
        instead of the worst case ``beta X_j^2`` over the public bounds.
    clip_norm : float, optional
        Total per-sample clip ``C``, split over the blocks as ``C_U = C
        ||X_U|| / ||X||`` (see :func:`block_clip_thresholds`); default half
        the loss's own bound ``derivative_bound * ||X||`` when private, that
        bound when not.  The squared loss without a residual bound needs it.
    step_scale : float, default=1.0
        Multiplies every step ``1 / M_j`` (values above 1 leave the theory).
    output : {"average", "tail_average", "last"}, optional
        The average of the last round's inner iterates (the paper's output,
        with a restart from the average after every round); or, in one run
        without restarts, the average of the iterates of its second half, or
        the last iterate.  Default: ``"average"`` with noise, ``"last"``
        without (``epsilon=inf``: averaging only tames noise, and halves the
        progress of a pass).  Without noise the default schedule also
        stops once a pass moves no coefficient by
        more than :data:`NONPRIVATE_CD_TOL` (1e-3) of the largest (nothing is
        private then; a given ``max_iter`` runs in full).
        All three are post-processing.  In the benchmark the paper's
        averaging was the most robust when noise dominates (small n or
        epsilon), the other two converge faster when it does not.
    normalizer : float, optional
        Public number the noisy gradient sums are divided by (the objective
        is then ``sum_i l_i / normalizer`` plus the penalty).  Default:
        ``data.normalizer``, as in the other solvers (estimators set it from
        a DP count; the true row count differs between add/remove neighbours
        and is not public).
    random_state : None, int, RandomState or Generator
        Source of the block draws and the noise.  For each round the block
        sequence is drawn first (nothing for full sampling), then one noise
        vector per step.
    verbose : int
        Progress lines on stderr when > 0.
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_cd` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        ``n_iter`` is the number of noisy steps ``K * T``; ``plan.details``
        holds the public constants (``smoothness``, ``probabilities``,
        ``block_clip``, ``block_noise_std`` on the gradient sum).

    Privacy
    -------
    Released: at each step, the block's clipped gradient sum plus Gaussian
    noise, through the noise gateway (:func:`sklearn_dp._noise.gaussian`,
    sensitivity ``C_U`` in L2, noise standard deviation ``z C_U``).  The
    coordinate sets are drawn from public probabilities on the generator
    (public randomness: no data involved).  The iterates, the progress lines
    (the norm of each step's change, a function of the noisy sums), ``n_iter``
    and every exception are functions of public values, of the released row
    count and of the releases only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Step ``k``
    releases the sum over rows of the per-sample gradients restricted to the
    drawn set ``U_k``, each clipped to L2 norm ``C_{U_k}`` (adding or removing
    a row moves the sum by at most ``C_{U_k}``), plus ``N(0, (z C_{U_k})^2
    I)``.  ``U_k`` is drawn independently of the data, so every step is a
    Gaussian mechanism with multiplier ``z`` whatever set it touches, and the
    ``K T`` adaptive steps compose exactly into one Gaussian mechanism with
    multiplier ``z / sqrt(K T)``; ``z`` is the smallest value for which the
    analytic Gaussian mechanism meets (epsilon, delta) (no amplification by
    coordinate sampling is claimed, as in the paper).  The paper's closed
    form ``sigma_U^2 = 12 L_U^2 K T log(1/delta) / (n^2 eps^2)`` (replace-one,
    RDP) is not used: the exact calibration needs less noise.  Public: the
    feature bounds, the penalty, every option (hence ``M``, the sampling
    probabilities and the clip thresholds), and the number of steps.  At
    ``epsilon=inf`` (no releases, no guarantee) the default step rule and
    schedule may read the data (actual curvature, early stop): never with
    noise.
    Averaging, restarts, the L1 proximal map and the division by
    ``normalizer`` are post-processing of the noisy sums: the default
    ``data.normalizer`` comes from the estimators' DP row count (the true
    row count differs between add/remove neighbours and is never used).

    Notes
    -----
    The utility theorem of the paper (Theorem 4.2) covers the smooth
    objective (here: loss plus L2) with exact (unclipped) gradients and the
    averaged output.  It does not cover the L1 proximal step (the paper has
    no composite term), clipping that binds, tau-nice sampling, or the
    ``"tail_average"`` and ``"last"`` outputs; all of these are
    post-processing or public choices, so privacy is unaffected.

    Memory: the solver works on the bounded design as an operator on the
    caller's X (no clipped or intercept-augmented copy; float32 stays
    float32).  The columns of the drawn blocks are copied into a cache of at
    most ``COLUMN_CACHE_SHARE`` (10%) of the size of X, refilled along the
    public draw sequence (see :class:`_ColumnBlocks`); a block larger than
    that is used through the design's products instead.
    """
    design, y = data.design, data.y
    n_columns = design.n_columns
    with public_setup():  # public inputs and the released row count only
        if loss.smoothness is None:
            raise ValueError(f"dp_cd needs a smooth loss; {loss.name!r} is not smooth.")
        if data.feature_bound is None:
            raise ValueError(
                "dp_cd needs public per-column bounds (data.feature_bound): bound the data with "
                "geometry='linf' (pass feature_bound to the estimator)."
            )
        if not 0.0 <= l1_ratio <= 1.0:
            raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}.")
        feature_bound = np.asarray(data.feature_bound, dtype=float)
        if feature_bound.shape != (n_columns,):
            raise ValueError(
                f"data.feature_bound has shape {feature_bound.shape}; expected ({n_columns},)."
            )

        plan = plan_of_call("dp_cd", locals())
        structure = plan.details["structure"]
        n_inner, n_outer = plan.details["n_inner"], plan.details["n_outer"]
        if output is None:
            output = "average" if not math.isinf(epsilon) else "last"
        if output != "average":
            # One run without restarts: the last iterate, or the average of the second half.
            n_inner, n_outer = n_inner * n_outer, 1
        tail_start = n_inner // 2 if output == "tail_average" else 0

        penalized = np.asarray(data.penalized, dtype=bool)
        l2 = alpha * (1.0 - l1_ratio) * penalized
        l1 = alpha * l1_ratio * penalized
        M = smoothness_constants(feature_bound, loss.smoothness, l2, structure, smoothness)
        probabilities = block_probabilities(M, structure)
        private = not math.isinf(epsilon)
        feature_norm = float(np.sqrt(np.sum(feature_bound**2)))
        clip = gradient_bound(loss, feature_norm, clip_norm, private=private)
        block_clip = block_clip_thresholds(clip, feature_bound, structure)
        z = plan.noise_multiplier
        if normalizer is None:
            # The public stand-in for the row count (a DP count from estimators):
            # the true n is private under add/remove neighbouring.
            normalizer = data.normalizer

    default_rule = isinstance(smoothness, str) and smoothness == "auto"
    if not private and structure.singletons and default_rule:
        # Without noise (epsilon=inf: nothing private, nothing promised) the
        # default rule uses the actual coordinate curvature of the bounded
        # design instead of the worst case over the public bounds.
        M = noiseless_coordinate_smoothness(design, loss.smoothness, l2, normalizer, M)
    step_sizes = step_scale / M  # per column
    threshold = l1 * step_sizes  # soft-threshold of the L1 prox with step 1 / M_j
    has_l1 = bool(np.any(threshold > 0))
    columns = _ColumnBlocks(design, structure.blocks)
    rng = make_rng(random_state)
    progress = Progress("dp_cd", plan.n_steps, verbose)

    def step(k, W):
        nonlocal steps_done
        if structure.kind == "partition":
            index = int(draws[k])
            cols = structure.blocks[index]
            rows, X_block = columns.block(index, cols, upcoming=draws[k:])
            block_bound = block_clip[index]
        else:
            cols = np.sort(rng.choice(n_columns, size=structure.tau, replace=False))
            rows, X_block = columns.block(None, cols)
            block_bound = set_clip_threshold(clip, feature_bound, cols)
        # The Gaussian mechanism of the gateway on the block's clipped gradient sum
        # (sensitivity block_bound in L2, noise z * block_bound).
        total = block_clipped_gradient_sum(X_block, Z[rows], y[rows], loss, block_bound)
        label = f"dp_cd block gradient sum {steps_done + 1}"
        grad = release(total, block_bound, z * block_bound, rng, label) / normalizer
        old = W[cols]
        grad += l2[cols, None] * old
        new = old - step_sizes[cols, None] * grad
        if has_l1:
            new = np.sign(new) * np.maximum(np.abs(new) - threshold[cols, None], 0.0)
        change = new - old
        Z[rows] += _block_product(X_block, change)
        steps_done += 1
        if verbose:
            # W is a function of the noisy sums and public constants: so is its change.
            progress(steps_done, step_norm=float(np.linalg.norm(change)))
        return cols, new, None

    def converged(W):
        # Whether no coefficient moved since the last test (epsilon=inf only).
        nonlocal pass_start
        moved_little, pass_start = moved_less_than(W, pass_start, stop_tol), W.copy()
        return moved_little

    def end_of_pass(k, W):
        # The stop of a noiseless output="last" run (one round), tested after every pass.
        return k > 0 and k % structure.steps_per_epoch == 0 and converged(W)

    W = np.zeros((n_columns, n_outputs))
    steps_done = 0
    # A convergence test reads the data, so it runs only without noise and
    # only on the default schedule (a given max_iter is run in full).
    stop_tol = NONPRIVATE_CD_TOL if not private and max_iter is None else None
    pass_start = W.copy() if stop_tol is not None else None
    for _ in range(n_outer):
        Z = None  # the old scores go before the new ones are made (one n-vector, not two)
        Z = design.matmul(W)
        draws = np.zeros(n_inner, dtype=np.int64)  # a single block: block 0 at every step
        if structure.kind == "partition" and len(structure.blocks) > 1:
            if structure.weighting == "uniform":
                draws = reshuffled_draws(rng, len(structure.blocks), n_inner, columns.chunk)
            else:
                draws = rng.choice(len(structure.blocks), size=n_inner, p=probabilities)
        stop = end_of_pass if stop_tol is not None and output == "last" else None
        last, average = noisy_steps(
            step, W, n_inner, name="dp_cd", tail_start=tail_start, callback=stop, row_steps=True
        )
        W = last if output == "last" else average
        check_finite_iterate(W, "dp_cd")
        if stop_tol is not None and output == "average" and converged(W):
            break

    plan.details.update(
        smoothness=M,
        probabilities=probabilities,
        clip_norm=clip,
        block_clip=block_clip,
        block_noise_std=None if block_clip is None else z * block_clip,
        noise_multiplier=z,
        step_scale=step_scale,
        output=output,
        l1_ratio=l1_ratio,
        normalizer=float(normalizer),
    )
    # Public inputs only (the diagonal, the bounds, the sampling).
    text = private and noise_amplification_warning(M, feature_bound, loss.smoothness, l2, structure)
    info = {"warnings": [text]} if text else {}
    return SolverResult(coef=W, n_iter=steps_done, plan=plan, info=info)
