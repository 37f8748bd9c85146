"""Public constants of ``dp_cd``: which coordinate sets a step draws, and their step and clip.

Everything here is a function of public inputs only: the number of columns,
the sampling options, the per-column feature bounds ``X_j`` (``|X[i, j]| <=
X_j``), the loss's smoothness constant and the penalty.  Nothing is read off
the private design matrix.  The solver is
:func:`sklearn_dp.solvers._coordinate_descent.dp_cd`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

SAMPLINGS = ("uniform", "importance", "tau_nice", "full")
SMOOTHNESS_RULES = ("auto", "coordinate", "gershgorin", "eso", "scalar")

#: Noise amplification of a diagonal, relative to Gershgorin's, above which a fit warns
#: (``eso`` diverged on blocks with amplification 41.5, kept its gain at 2.4:
#: ``benchmarks/bench_regimes.py --regime cd``).
NOISE_AMPLIFICATION_WARNING = 10.0

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
        One of ``SAMPLINGS`` (the registry's declared values, checked before
        the plan).  ``"uniform"`` / ``"importance"`` draw one block of a partition per step
        (single coordinates unless ``blocks`` or ``block_size`` is given):
        every block once a pass in a random order, or with probabilities
        proportional to the block's largest smoothness constant; ``"tau_nice"`` draws ``tau`` distinct
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

    if blocks is not None:
        partition = _check_partition(blocks, n_columns)
    else:
        # Contiguous blocks: one of every column for full sampling, single coordinates by default.
        if block_size is not None:
            block_size = _check_positive_int(block_size, "block_size", upper=n_columns)
        size = n_columns if sampling == "full" else block_size or 1
        partition = [np.arange(j, min(j + size, n_columns)) for j in range(0, n_columns, size)]
    weighting = "uniform" if sampling == "full" else sampling
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


def check_smoothness_rule(rule, structure, l2=0.0):
    """Refuse a ``smoothness`` option that no public bound can validate; returns the rule.

    A string is one of ``SMOOTHNESS_RULES`` (the registry's declared values,
    checked before the plan; ``"coordinate"`` only for single coordinates);
    an array must hold one finite constant per column, larger than the L2
    penalty strength ``l2`` (0 before the penalty is known; it is returned
    as a float array).  Whether an array dominates the Hessian under the
    feature bounds is checked by :func:`smoothness_constants`.
    """
    if isinstance(rule, str):
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
    if not np.all(np.isfinite(M)) or np.any(M <= l2):
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
    rule = check_smoothness_rule(rule, structure, l2)
    if isinstance(rule, str):
        if rule == "auto":
            rule = "coordinate" if structure.singletons else "gershgorin"
        M = np.empty_like(X)
        if structure.kind == "tau_nice":
            tau = structure.tau
            if rule == "eso":  # "coordinate" needs single coordinates (refused above)
                M[:] = tau * squared
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
                if rule in ("coordinate", "eso"):  # coordinate: singletons only, size 1
                    M[block] = block.size * squared[block]
                elif rule == "gershgorin":
                    M[block] = beta * X[block] * np.sum(X[block])
                else:
                    M[block] = beta * np.sum(X[block] ** 2)
        M = M + l2
    else:
        M = rule  # checked above against the L2 penalty
    curvature = M - l2
    with np.errstate(divide="ignore"):
        ratios = np.where(squared > 0, squared / np.maximum(curvature, np.finfo(float).tiny), 0.0)
    # The largest sum_{j in U} beta X_j^2 / (M_j - lambda_j) over the sets U the sampling draws.
    if structure.kind == "tau_nice":
        worst = float(np.sum(np.sort(ratios)[::-1][: structure.tau]))
    else:
        worst = max(float(np.sum(ratios[block])) for block in structure.blocks)
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
    if structure.kind != "partition":
        return None
    return np.array(
        [set_clip_threshold(clip_norm, feature_bound, cols) for cols in structure.blocks]
    )


def set_clip_threshold(clip_norm, feature_bound, cols):
    """Clip ``C_U = C * ||X_U|| / ||X||`` of a drawn coordinate set ``U`` (tau-nice sampling).

    The same split as :func:`block_clip_thresholds`, for a set drawn at a step.
    """
    feature_bound = np.asarray(feature_bound, dtype=float)
    feature_norm = float(np.sqrt(np.sum(feature_bound**2)))
    return clip_norm * np.sqrt(np.sum(feature_bound[cols] ** 2)) / feature_norm


def noise_amplification_warning(M, feature_bound, loss_smoothness, l2, structure):
    """The warning for a diagonal that amplifies a block's noise on its narrow coordinates.

    A block's noise is isotropic in raw units (one clip per block); the step
    ``1 / M_j`` makes it noise of relative size ``r_j / X_j`` on coordinate j
    in units of the bounds (``r_j = beta X_j^2 / (M_j - l2_j)``).  Gershgorin
    makes that ``1 / sum_{k in A} X_k`` on every coordinate of a block; the
    amplification is ``max_A max_{j in A} r_j sum_{k in A} X_k / X_j`` (1 for
    Gershgorin and single coordinates; tau-nice sampling is not checked).
    Public inputs only; None when it is below ``NOISE_AMPLIFICATION_WARNING``.
    """
    if structure.kind != "partition":
        return None
    X = np.asarray(feature_bound, dtype=float)
    ratio = float(loss_smoothness) * X**2 / (np.asarray(M) - np.asarray(l2))
    worst = max(float(np.max(ratio[b] * np.sum(X[b]) / X[b])) for b in structure.blocks)
    if worst < NOISE_AMPLIFICATION_WARNING:
        return None
    return (
        f"dp_cd: these smoothness constants amplify the noise of a block on its narrowest "
        f"coordinates up to {worst:.3g} times more than the default (Gershgorin) diagonal, "
        "because the block's public feature ranges differ widely; the fit may end worse than "
        "the zero model. Use smoothness='auto', or blocks of features with similar ranges."
    )
