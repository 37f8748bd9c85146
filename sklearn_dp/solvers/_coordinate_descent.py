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
penalty and the options.  Nothing is read off the private design matrix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .. import _noise, accounting
from .._clipped_sums import block_clipped_gradient_sum
from ._common import (
    PrivacyPlan,
    Progress,
    SolverResult,
    check_finite_iterate,
    make_rng,
    moved_less_than,
)
from ._gradient_descent import gradient_bound
from ._l1_geometry import public_setup

__all__ = [
    "dp_cd",
    "plan_dp_cd",
    "sampling_structure",
    "smoothness_constants",
    "block_clip_thresholds",
    "set_clip_threshold",
    "check_dp_cd",
    "noiseless_coordinate_smoothness",
    "DEFAULT_CD_EPOCHS",
]

#: Default number of passes (epochs) over the coordinates.
DEFAULT_CD_EPOCHS = 10

SAMPLINGS = ("uniform", "importance", "tau_nice", "full")
SMOOTHNESS_RULES = ("auto", "coordinate", "gershgorin", "eso", "scalar")
OUTPUTS = ("average", "tail_average", "last")

# Relative slack when checking that a diagonal is a valid smoothness bound;
# the Gershgorin rule sits exactly on the boundary of validity.
_VALIDITY_TOLERANCE = 1e-9


# --------------------------------------------------------------------------
# Sampling structure (public: depends on the number of columns and options)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplingStructure:
    """Which coordinate sets a step can draw, and how many steps make a pass.

    Attributes
    ----------
    kind : {"partition", "tau_nice"}
        Sets are the blocks of a partition of the columns, or uniformly random
        subsets of size ``tau``.
    blocks : tuple of ndarray or None
        The partition (sorted column indices per block), for ``"partition"``.
    tau : int or None
        Subset size, for ``"tau_nice"``.
    weighting : {"uniform", "importance"}
        How blocks of a partition are drawn.
    steps_per_epoch : int
        Steps of one pass: the number of blocks of a partition,
        ``ceil(n_columns / tau)`` for tau-nice sampling (1 for full sampling).
    """

    kind: str
    blocks: tuple | None
    tau: int | None
    weighting: str
    steps_per_epoch: int
    n_columns: int

    @property
    def singletons(self):
        return self.kind == "partition" and len(self.blocks) == self.n_columns


def _check_positive_int(value, name, upper=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    if upper is not None and value > upper:
        raise ValueError(f"{name}={value} exceeds the number of columns {upper}.")
    return int(value)


def sampling_structure(n_columns, sampling="uniform", blocks=None, block_size=None, tau=None):
    """Validate the sampling options and return the :class:`SamplingStructure`.

    Parameters
    ----------
    n_columns : int
        Number of coefficients per output, the intercept column included (it
        is the last column).
    sampling : {"uniform", "importance", "tau_nice", "full"}
        ``"uniform"`` / ``"importance"`` draw one block of a partition per step
        (single coordinates unless ``blocks`` or ``block_size`` is given), with
        equal probabilities or probabilities proportional to the block's
        largest smoothness constant; ``"tau_nice"`` draws ``tau`` distinct
        coordinates uniformly; ``"full"`` updates every coordinate.
    blocks : sequence of sequences of int, optional
        A partition of the columns (indices into the columns of the bounded
        data, the intercept column being ``n_columns - 1``).  Columns that no
        block lists (typically the intercept) form one extra block.
    block_size : int, optional
        Contiguous blocks of this many columns (the last may be smaller).
    tau : int, optional
        Subset size of ``"tau_nice"`` sampling.
    """
    n_columns = _check_positive_int(n_columns, "n_columns")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}.")
    if sampling in ("tau_nice", "full") and (blocks is not None or block_size is not None):
        raise ValueError(f"sampling={sampling!r} does not take blocks or block_size.")
    if sampling != "tau_nice" and tau is not None:
        raise ValueError("tau is an option of sampling='tau_nice' only.")
    if blocks is not None and block_size is not None:
        raise ValueError("Pass either blocks or block_size, not both.")

    if sampling == "tau_nice":
        if tau is None:
            raise ValueError("sampling='tau_nice' needs tau (the number of coordinates per step).")
        tau = _check_positive_int(tau, "tau", upper=n_columns)
        steps = math.ceil(n_columns / tau)
        return SamplingStructure("tau_nice", None, tau, "uniform", steps, n_columns)

    if sampling == "full":
        partition = [np.arange(n_columns)]
        weighting = "uniform"
    else:
        weighting = sampling
        if blocks is not None:
            partition = _check_partition(blocks, n_columns)
        elif block_size is not None:
            block_size = _check_positive_int(block_size, "block_size", upper=n_columns)
            partition = [
                np.arange(start, min(start + block_size, n_columns))
                for start in range(0, n_columns, block_size)
            ]
        else:
            partition = [np.array([j]) for j in range(n_columns)]
    return SamplingStructure(
        "partition", tuple(partition), None, weighting, len(partition), n_columns
    )


def _check_partition(blocks, n_columns):
    if isinstance(blocks, (str, bytes)) or not hasattr(blocks, "__iter__"):
        raise ValueError("blocks must be a sequence of sequences of column indices.")
    partition = []
    seen = np.zeros(n_columns, dtype=bool)
    for block in blocks:
        index = np.asarray(block)
        if index.ndim != 1 or index.size == 0 or not np.issubdtype(index.dtype, np.integer):
            raise ValueError(
                f"Every block must be a non-empty sequence of integers, got {block!r}."
            )
        if index.min() < 0 or index.max() >= n_columns:
            raise ValueError(
                f"Block {index.tolist()} has indices outside [0, {n_columns - 1}] "
                "(columns of the data, the intercept column last)."
            )
        if np.any(seen[index]) or np.unique(index).size != index.size:
            raise ValueError("blocks must be disjoint (a partition of the columns).")
        seen[index] = True
        partition.append(np.sort(index))
    if not seen.all():
        # Typically the intercept column, which a user's feature blocks do not name.
        partition.append(np.flatnonzero(~seen))
    return partition


# --------------------------------------------------------------------------
# Public constants: smoothness, probabilities, clip thresholds
# --------------------------------------------------------------------------


def _block_validity(ratios, structure):
    """Largest ``sum_{j in U} beta X_j^2 / (M_j - lambda_j)`` over the sets U the sampling draws."""
    if structure.kind == "tau_nice":
        return float(np.sum(np.sort(ratios)[::-1][: structure.tau]))
    return max(float(np.sum(ratios[block])) for block in structure.blocks)


def check_smoothness_rule(rule, structure):
    """Refuse a ``smoothness`` option that no public bound can validate; returns the rule.

    A string must be one of ``SMOOTHNESS_RULES`` (``"coordinate"`` only for
    single coordinates); an array must hold one finite constant > 0 per
    column (it is returned as a float array).  Whether an array dominates
    the Hessian under the feature bounds is checked by
    :func:`smoothness_constants`.
    """
    if isinstance(rule, str):
        if rule not in SMOOTHNESS_RULES:
            raise ValueError(
                f"smoothness must be one of {SMOOTHNESS_RULES} or an array of constants, "
                f"got {rule!r}."
            )
        if rule == "coordinate" and not structure.singletons:
            raise ValueError(
                "smoothness='coordinate' (the Hessian diagonal, beta * X_j**2) is only valid when "
                "single coordinates are sampled: a block or full update with it is a Jacobi step "
                "that can diverge (d identical columns make the error grow by a factor d - 1 per "
                "step). Use smoothness='gershgorin' (default), 'eso' or 'scalar'."
            )
        return rule
    try:
        M = np.asarray(rule, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"smoothness must be one of {SMOOTHNESS_RULES} or an array of constants."
        ) from None
    if M.shape != (structure.n_columns,):
        raise ValueError(
            f"smoothness array must have one constant per column ({structure.n_columns}, the "
            f"intercept column last), got shape {M.shape}."
        )
    if not np.all(np.isfinite(M)) or np.any(M <= 0):
        raise ValueError(
            "smoothness constants must be finite and larger than the L2 penalty strength."
        )
    return M


def smoothness_constants(feature_bound, loss_smoothness, l2, structure, rule="auto"):
    """Diagonal ``M`` with ``Hessian restricted to every drawable set <= Diag(M)``.

    For a GLM the Hessian of the average loss is ``(1/n) sum_i phi''_i x_i
    x_i^T`` with ``phi'' <= beta``; on a set ``U`` it is below ``Diag(M_U)``
    for every data set whose entries satisfy ``|x_ij| <= X_j`` exactly when
    ``sum_{j in U} beta X_j^2 / (M_j - lambda_j) <= 1`` (``x x^T <= D`` iff
    ``x^T D^-1 x <= 1``, maximised over the box at ``|x_j| = X_j``).  Every
    rule below meets that condition with public inputs only.

    Parameters
    ----------
    feature_bound : ndarray of shape (n_columns,)
        Public per-column bounds ``X_j``.
    loss_smoothness : float
        ``beta``, the loss's bound on its second derivative in the score.
    l2 : ndarray of shape (n_columns,)
        L2 penalty strength per column (0 on unpenalised columns), added to
        ``M_j`` because the L2 term is part of the smooth objective.
    structure : SamplingStructure
    rule : {"auto", "coordinate", "gershgorin", "eso", "scalar"} or array-like
        * ``"coordinate"``: ``beta X_j^2`` (the coordinate-wise constant of
          DP-CD); valid for single-coordinate sampling only, refused otherwise.
        * ``"gershgorin"``: ``beta X_j sum_{k in U} X_k`` (row sums of the
          worst-case block of ``x x^T``); for tau-nice sets the largest such
          sum over the sets containing ``j``.
        * ``"eso"``: ``beta |U| X_j^2`` (Cauchy-Schwarz on the block).
        * ``"scalar"``: ``beta sum_{k in U} X_k^2`` for every ``j`` of ``U``
          (the block's largest eigenvalue bound; with full sampling this is
          the step ``1 / L`` of dp_gd).
        * ``"auto"``: ``"coordinate"`` for single coordinates (where all rules
          coincide), ``"gershgorin"`` otherwise.
        * an array: public constants supplied by the user (for example from a
          data dictionary); refused if they are not valid for the sampling
          under the public bounds (this is where the Hessian diagonal, which a
          Jacobi-type block update can diverge with, is caught).

    Returns
    -------
    M : ndarray of shape (n_columns,)
    """
    X = np.asarray(feature_bound, dtype=float)
    beta = float(loss_smoothness)
    l2 = np.asarray(l2, dtype=float)
    squared = beta * X**2
    rule = check_smoothness_rule(rule, structure)
    if isinstance(rule, str):
        if rule == "auto":
            rule = "coordinate" if structure.singletons else "gershgorin"
        M = np.empty_like(X)
        if structure.kind == "tau_nice":
            tau = structure.tau
            if rule in ("coordinate", "eso"):
                M[:] = (tau if rule == "eso" else 1) * squared
            elif rule == "gershgorin":
                # The worst tau-set containing j adds the tau - 1 largest other bounds.
                order = np.sort(X)[::-1]
                top = np.sum(order[:tau])
                top_minus = np.sum(order[: tau - 1])
                # X_j among the tau largest: the top tau; otherwise j plus the top tau - 1.
                kth = order[tau - 1]
                M[:] = beta * X * np.where(X >= kth, top, X + top_minus)
            else:  # scalar
                M[:] = beta * np.sum(np.sort(X**2)[::-1][:tau])
        else:
            for block in structure.blocks:
                if rule == "coordinate":
                    M[block] = squared[block]
                elif rule == "gershgorin":
                    M[block] = beta * X[block] * np.sum(X[block])
                elif rule == "eso":
                    M[block] = block.size * squared[block]
                else:
                    M[block] = beta * np.sum(X[block] ** 2)
        M = M + l2
    else:
        M = rule
        if M.shape != X.shape:
            raise ValueError(
                f"smoothness array must have one constant per column ({X.size}, the "
                f"intercept column last), got shape {M.shape}."
            )
        if np.any(M <= l2):
            raise ValueError(
                "smoothness constants must be finite and larger than the L2 penalty strength."
            )
    curvature = M - l2
    with np.errstate(divide="ignore"):
        ratios = np.where(squared > 0, squared / np.maximum(curvature, np.finfo(float).tiny), 0.0)
    worst = _block_validity(ratios, structure)
    if worst > 1 + _VALIDITY_TOLERANCE:
        raise ValueError(
            "The smoothness constants are not a valid bound for this sampling under the public "
            "feature bounds: sum over a drawable set of beta X_j^2 / (M_j - l2_j) is "
            f"{worst:.4g} > 1. "
            "A block step with them can diverge (the Hessian diagonal is valid for single "
            "coordinates only). Use smoothness='gershgorin', 'eso' or 'scalar'."
        )
    if np.any(M <= 0):
        raise ValueError(
            "A smoothness constant is 0 (a zero feature bound on an unpenalised column); "
            "feature bounds must be > 0."
        )
    return M


def block_probabilities(M, structure):
    """Probability of each block of a partition: equal, or proportional to ``max_{j in A} M_j``."""
    if structure.kind != "partition":
        return None
    n_blocks = len(structure.blocks)
    if structure.weighting == "uniform":
        return np.full(n_blocks, 1.0 / n_blocks)
    weights = np.array([np.max(M[block]) for block in structure.blocks])
    return weights / weights.sum()


def block_clip_thresholds(clip_norm, feature_bound, structure):
    """Per-block clip ``C_A = C * ||X_A|| / ||X||`` of a partition (``None`` for tau-nice).

    The thresholds split the total clip ``C`` over the blocks in proportion to
    the public feature bounds, so ``sum_A C_A^2 = C^2``: a per-sample gradient
    whose norm is below ``C`` because of the bounds alone is clipped nowhere,
    and with single coordinates ``C_j`` is proportional to ``sqrt(M_j)``, the
    coordinate-wise clipping of DP-CD (Mangold et al., 2022).  For tau-nice
    sampling the same formula is applied to the drawn set at each step.
    """
    X = np.asarray(feature_bound, dtype=float)
    total = float(np.sqrt(np.sum(X**2)))
    if structure.kind != "partition":
        return None
    return np.array(
        [clip_norm * np.sqrt(np.sum(X[block] ** 2)) / total for block in structure.blocks]
    )


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


def default_cd_epochs(epsilon=None):
    """Default number of passes of dp_cd, a function of the public epsilon only.

    ``DEFAULT_CD_EPOCHS`` (10) up to epsilon = 1, then ``10 epsilon``, at most
    :data:`MAX_DEFAULT_CD_EPOCHS` (50, also without noise).  Ten passes are
    what the noise allows at small epsilon (every pass adds noise), but the
    step ``1 / M_j`` uses the worst-case curvature ``beta X_j^2`` of the
    public bounds, so ten passes stop far from the optimum once the noise is
    small (the majority class at every epsilon on unit-norm rows).
    """
    if epsilon is None:
        return DEFAULT_CD_EPOCHS
    epsilon = float(epsilon)
    if math.isinf(epsilon):
        return NONPRIVATE_CD_EPOCHS
    return int(min(MAX_DEFAULT_CD_EPOCHS, max(DEFAULT_CD_EPOCHS, math.ceil(10 * epsilon))))


def _schedule(structure, max_iter, n_outer, epsilon=None):
    epochs = (
        default_cd_epochs(epsilon)
        if max_iter is None
        else _check_positive_int(max_iter, "max_iter")
    )
    total = epochs * structure.steps_per_epoch
    n_outer = epochs if n_outer is None else _check_positive_int(n_outer, "n_outer")
    n_outer = min(n_outer, total)
    n_inner = math.ceil(total / n_outer)
    return epochs, n_inner, n_outer


@public_setup()  # a plan reads public inputs (and the released row count) only
def plan_dp_cd(
    n_samples,
    n_params,
    epsilon,
    delta,
    *,
    n_outputs=1,
    max_iter=None,
    sampling="uniform",
    blocks=None,
    block_size=None,
    tau=None,
    n_outer=None,
):
    """Privacy plan of ``dp_cd``: ``K * T`` Gaussian steps with one noise multiplier.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (unused by the event: it is not subsampled).
    n_params : int
        ``n_columns * n_outputs`` (intercept column included).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` gives a noiseless plan.
    n_outputs : int
        Columns of the coefficient matrix.
    max_iter : int, optional
        Number of passes (epochs); default ``DEFAULT_CD_EPOCHS``.  A pass is
        ``steps_per_epoch`` steps (see :func:`sampling_structure`).
    sampling, blocks, block_size, tau
        See :func:`sampling_structure`.
    n_outer : int, optional
        Outer rounds ``T``; default one round per pass.  The ``max_iter *
        steps_per_epoch`` steps are split into ``T`` rounds of ``K =
        ceil(total / T)`` inner steps.

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
    n_outputs = _check_positive_int(n_outputs, "n_outputs")
    if n_params % n_outputs:
        raise ValueError(f"n_params={n_params} is not a multiple of n_outputs={n_outputs}.")
    structure = sampling_structure(n_params // n_outputs, sampling, blocks, block_size, tau)
    epochs, n_inner, n_outer = _schedule(structure, max_iter, n_outer, epsilon)
    n_steps = n_inner * n_outer
    details = dict(
        structure=structure,
        epochs=epochs,
        n_inner=n_inner,
        n_outer=n_outer,
        steps_per_epoch=structure.steps_per_epoch,
    )
    if math.isinf(epsilon):
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    sigma = accounting.gaussian_noise_multiplier(epsilon, delta, n_steps)
    return PrivacyPlan(accounting.gaussian_steps_event(sigma, n_steps), sigma, n_steps, details)


# --------------------------------------------------------------------------
# The solver
# --------------------------------------------------------------------------


def _check_options(
    n_columns,
    *,
    n_outputs=1,
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
):
    """The options dp_cd refuses, from public inputs only; returns the sampling structure."""
    n_outputs = _check_positive_int(n_outputs, "n_outputs")
    if output is not None and output not in OUTPUTS:
        raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}.")
    if not 0.0 <= l1_ratio <= 1.0:
        raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}.")
    if not (step_scale > 0 and math.isfinite(step_scale)):
        raise ValueError(f"step_scale must be a finite float > 0, got {step_scale!r}.")
    if normalizer is not None and not (normalizer > 0 and math.isfinite(normalizer)):
        raise ValueError(f"normalizer must be a finite float > 0, got {normalizer!r}.")
    if clip_norm is not None and not (clip_norm > 0 and math.isfinite(clip_norm)):
        raise ValueError(f"clip_norm must be a finite float > 0, got {clip_norm!r}.")
    structure = sampling_structure(n_columns, sampling, blocks, block_size, tau)
    _schedule(structure, max_iter, n_outer)
    check_smoothness_rule(smoothness, structure)
    return structure


def check_dp_cd(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Refuse ``dp_cd`` options from public inputs only (``SolverSpec.check``).

    Estimators call it before they reserve the spend, so a refused
    configuration costs nothing; :func:`dp_cd` repeats the same checks for
    direct callers.  (Whether a user's ``smoothness`` array dominates the
    Hessian under the feature bounds is checked by the solver, from public
    bounds only.)
    """
    keys = (
        "max_iter",
        "sampling",
        "blocks",
        "block_size",
        "tau",
        "n_outer",
        "smoothness",
        "clip_norm",
        "step_scale",
        "output",
        "normalizer",
    )
    _check_options(
        public.n_features + int(public.fit_intercept),
        n_outputs=n_outputs,
        l1_ratio=float(l1_ratio or 0.0),
        **{key: options[key] for key in keys if key in options},
    )


#: Share of the size of X that dp_cd may hold in copies of column blocks.
COLUMN_CACHE_SHARE = 0.1


def _nbytes(X):
    if sp.issparse(X):
        return X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    return X.nbytes


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
        self.budget = COLUMN_CACHE_SHARE * _nbytes(design.X) if budget is None else budget
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
                self._buffer = None
                full = int(self.budget) // 8 if math.isfinite(self.budget) else 0
                self._buffer = np.empty(max(need, full))
            copy = self.design.columns(union, out=self._buffer)
            # Views of one Fortran-ordered array: each block is contiguous.
            return [(None, copy[:, a:b]) for a, b in zip(edges[:-1], edges[1:])]
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

        ``rows``: the rows the block holds (None: all); ``block``: a matrix or
        a :class:`~sklearn_dp._design.ColumnView` of those rows.  ``key`` is
        the block's index in the partition (None for a set drawn for this step
        only); ``upcoming`` the indices of the blocks drawn next (from this one on).
        """
        if key is not None and key in self._cache:
            return self._cache[key]
        if self._cost(cols) > self.budget:
            return None, self.design.column_view(cols)
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


def set_clip_threshold(clip_norm, feature_bound, cols):
    """Clip ``C_U = C * ||X_U|| / ||X||`` of a drawn coordinate set ``U`` (tau-nice sampling).

    The same split as :func:`block_clip_thresholds`, for a set drawn at a step.
    """
    feature_bound = np.asarray(feature_bound, dtype=float)
    feature_norm = float(np.sqrt(np.sum(feature_bound**2)))
    return clip_norm * np.sqrt(np.sum(feature_bound[cols] ** 2)) / feature_norm


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
        Number of passes (epochs); default ``DEFAULT_CD_EPOCHS`` (10).  A pass
        is one step per block of a partition (``n_columns`` steps for single
        coordinates, 1 for full sampling), ``ceil(n_columns / tau)`` steps for
        tau-nice sampling; it costs about one full gradient.
    sampling : {"uniform", "importance", "tau_nice", "full"}, default="uniform"
        How the set ``U`` is drawn: one block of a partition (single
        coordinates unless ``blocks``/``block_size`` is given) uniformly
        (DP-CD) or with probability proportional to the block's largest
        ``M_j`` (importance sampling); ``tau`` distinct coordinates uniformly;
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
        progress of a pass).  Without noise the default schedule also visits
        the blocks of a uniform partition in a fresh random order each pass
        (random reshuffling) and stops once a pass moves no coefficient by
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
        _check_options(
            n_columns,
            n_outputs=n_outputs,
            l1_ratio=l1_ratio,
            max_iter=max_iter,
            sampling=sampling,
            blocks=blocks,
            block_size=block_size,
            tau=tau,
            n_outer=n_outer,
            smoothness=smoothness,
            clip_norm=clip_norm,
            step_scale=step_scale,
            output=output,
            normalizer=normalizer,
        )
        feature_bound = np.asarray(data.feature_bound, dtype=float)
        if feature_bound.shape != (n_columns,):
            raise ValueError(
                f"data.feature_bound has shape {feature_bound.shape}; expected ({n_columns},)."
            )

        if plan is None:
            plan = plan_dp_cd(
                data.n_public,
                n_columns * n_outputs,
                epsilon,
                delta,
                n_outputs=n_outputs,
                max_iter=max_iter,
                sampling=sampling,
                blocks=blocks,
                block_size=block_size,
                tau=tau,
                n_outer=n_outer,
            )
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
        if not (normalizer > 0 and math.isfinite(normalizer)):
            raise ValueError(f"normalizer must be a finite float > 0, got {normalizer!r}.")

    if (
        not private
        and structure.singletons
        and isinstance(smoothness, str)
        and smoothness == "auto"
    ):
        # Without noise (epsilon=inf: nothing private, nothing promised) the
        # default rule uses the actual coordinate curvature of the bounded
        # design instead of the worst case over the public bounds.
        M = noiseless_coordinate_smoothness(design, loss.smoothness, l2, normalizer, M)
    step = step_scale / M  # per column
    threshold = l1 * step  # soft-threshold of the L1 prox with step 1 / M_j
    has_l1 = bool(np.any(threshold > 0))
    columns = _ColumnBlocks(design, structure.blocks)
    rng = make_rng(random_state)
    progress = Progress("dp_cd", plan.n_steps, verbose)

    W = np.zeros((n_columns, n_outputs))
    steps_done = 0
    Z = None
    # A convergence test reads the data, so it runs only without noise and
    # only on the default schedule (a given max_iter is run in full).
    stop_tol = NONPRIVATE_CD_TOL if not private and max_iter is None else None
    pass_start = W.copy() if stop_tol is not None else None
    converged = False
    for _ in range(n_outer):
        Z = None  # the old scores go before the new ones are made (one n-vector, not two)
        Z = design.matmul(W)
        # Lazy running sum of the averaged iterates theta^(s+1)..theta^K (s = 0,
        # or half the run for the tail average): column j's current value has
        # been counted in every averaged iterate from since[j] on.
        since = np.full(n_columns, tail_start + 1, dtype=np.int64)
        running = np.zeros_like(W)
        if structure.kind == "partition" and len(structure.blocks) > 1:
            if stop_tol is not None and structure.weighting == "uniform":
                # Without noise, the default schedule visits the blocks in a fresh
                # random order each pass (random reshuffling), which converges in
                # fewer passes than draws with replacement.
                n_blocks = len(structure.blocks)
                draws = np.concatenate(
                    [rng.permutation(n_blocks) for _ in range(-(-n_inner // n_blocks))]
                )[:n_inner]
            elif structure.weighting == "uniform":
                draws = rng.integers(len(structure.blocks), size=n_inner)
            else:
                draws = rng.choice(len(structure.blocks), size=n_inner, p=probabilities)
        else:
            draws = None
        for k in range(n_inner):
            if structure.kind == "partition":
                index = 0 if draws is None else int(draws[k])
                cols = structure.blocks[index]
                rows, X_block = columns.block(
                    index, cols, upcoming=None if draws is None else draws[k:]
                )
                block_bound = block_clip[index]
            else:
                cols = np.sort(rng.choice(n_columns, size=structure.tau, replace=False))
                rows, X_block = columns.block(None, cols)
                block_bound = set_clip_threshold(clip, feature_bound, cols)

            Z_rows = Z if rows is None else Z[rows]
            y_rows = y if rows is None else y[rows]
            # The Gaussian mechanism of the gateway on the block's clipped gradient sum
            # (sensitivity block_bound in L2, noise z * block_bound).
            grad = _noise.gaussian(
                block_clipped_gradient_sum(X_block, Z_rows, y_rows, loss, block_bound),
                sensitivity=block_bound,
                noise_std=z * block_bound,
                rng=rng,
                label=f"dp_cd block gradient sum {steps_done + 1}",
            )
            grad /= normalizer

            old = W[cols]
            grad += l2[cols, None] * old
            new = old - step[cols, None] * grad
            if has_l1:
                t = threshold[cols, None]
                new = np.sign(new) * np.maximum(np.abs(new) - t, 0.0)
            change = new - old
            if k >= tail_start:
                running[cols] += old * (k + 1 - since[cols])[:, None]
                since[cols] = k + 1
            W[cols] = new
            if rows is None:
                Z += _block_product(X_block, change)
            else:
                Z[rows] += _block_product(X_block, change)
            # Release this step's block before the next one may refill the cache.
            rows = X_block = Z_rows = y_rows = None
            steps_done += 1
            if verbose:
                # W is a function of the noisy sums and public constants: so is its change.
                progress(steps_done, step_norm=float(np.linalg.norm(change)))
            if (
                stop_tol is not None
                and output == "last"
                and steps_done % structure.steps_per_epoch == 0
            ):
                if moved_less_than(W, pass_start, stop_tol):
                    converged = True
                    break
                pass_start = W.copy()
        if output != "last":
            running += W * (n_inner + 1 - since)[:, None]
            W = running / (n_inner - tail_start)
        check_finite_iterate(W, "dp_cd")
        if converged:
            break
        if stop_tol is not None and output == "average":
            if moved_less_than(W, pass_start, stop_tol):
                break
            pass_start = W.copy()

    block_noise_std = None if block_clip is None else z * block_clip
    plan.details.update(
        smoothness=M,
        probabilities=probabilities,
        clip_norm=clip,
        block_clip=block_clip,
        block_noise_std=block_noise_std,
        noise_multiplier=z,
        step_scale=step_scale,
        output=output,
        l1_ratio=l1_ratio,
        normalizer=float(normalizer),
    )
    return SolverResult(coef=W, n_iter=steps_done, plan=plan)
