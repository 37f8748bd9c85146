"""What the l1-geometry solvers share: the feasible polytope, l-infinity clipping, public constants.

The solvers ``frank_wolfe``, ``vr_frank_wolfe``, ``mirror_descent`` and
``localized_mirror_descent`` optimise over a bounded set

    { x : sum_{j in ball} |x_j| <= radius,  |x_j| <= box_j for j not in ball }

i.e. an l1 ball, times an interval for each coordinate kept out of the ball.
By default every coordinate (the intercept column included) is in the ball,
which is what ``DPSCORegressor(constraint="l1", radius=...)`` documents.
``DPLasso`` keeps its intercept out of the ball (``intercept_bound``): the
intercept then lives in a public interval that provably contains its optimal
value, so the l1 constraint applies to the coefficients only, as in
scikit-learn's ``Lasso``.

The rows of the data are bounded entrywise (``geometry="linf"``), so a
per-sample gradient ``D_i x_i`` of a GLM loss is bounded in l-infinity by
``|D_i| * ||x_i||_inf``; clipping it to ``C`` rescales the scalar ``D_i``
(the gradient of a per-row Huberised loss, still convex), which keeps the
clipped sums at two mat-vecs.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import numpy as np

from .. import _noise
from .._public_errors import public_error
from ._common import SolverResult
from ._gradient_descent import gradient_bound
from ._registry import check_declared_options


@dataclass(frozen=True)
class L1Domain:
    """The feasible polytope and the penalty, in the solver's (scaled) units.

    Attributes
    ----------
    radius : float
        Radius of the l1 ball on the ``ball`` coordinates.
    ball : ndarray of bool of shape (n_columns,)
    box : ndarray of shape (n_columns,)
        Bound ``|x_j| <= box[j]`` for coordinates outside the ball (inf inside).
    l1_penalty : ndarray of shape (n_columns,)
        Weight of ``|x_j|`` in the objective (0 on unpenalised coordinates).
    l2_penalty : ndarray of shape (n_columns,)
        Weight of ``x_j^2 / 2`` in the objective.
    """

    radius: float
    ball: np.ndarray
    box: np.ndarray
    l1_penalty: np.ndarray
    l2_penalty: np.ndarray

    @property
    def vertex_radius(self):
        """Largest l1 norm of a vertex: ``radius + sum of the box bounds``."""
        return float(self.radius + np.sum(self.box[~self.ball]))

    @property
    def diameter(self):
        """l1 diameter of the polytope."""
        return 2.0 * self.vertex_radius

    @property
    def has_l1_penalty(self):
        return bool(np.any(self.l1_penalty > 0))


@contextlib.contextmanager
def public_setup():
    """Mark the ValueErrors raised in the block as public (:func:`~sklearn_dp._public_errors.public_error`).

    Only for blocks that read public inputs (options, bounds, the released
    row count ``data.n_public`` / ``data.normalizer``) and never a private
    value: a solver's own option checks, kept for direct callers, and its
    plan, which the estimators compute before the count is released.
    """
    try:
        yield
    except ValueError as exc:
        raise public_error(exc) from None


def check_l1_options(solver, *, n_outputs, options):
    """Refuse, from public inputs only, what every l1-geometry solver refuses.

    One output (regression or binary classification), a ``radius`` in
    ``options``, the declared types and ranges of the ``options``
    (:func:`~sklearn_dp.solvers._registry.check_declared_options`:
    the registry's ranges, and the values of the string options ``output``
    and ``schedule``), and over an lp ball (``constraint="lp"``) an exponent
    p in (1, 2], no ``intercept_bound`` and no ``refit``.
    The estimators call it (through ``SolverSpec.check``) before they
    reserve the spend; the solvers call it again for direct callers.
    """
    if n_outputs != 1:
        raise ValueError(f"{solver} fits one output (regression or binary classification).")
    if options.get("radius") is None:
        raise ValueError(
            f"{solver} optimises over an l1 ball: it needs radius (constraint='l1'), "
            "a public bound on the l1 norm of the coefficients."
        )
    check_declared_options(solver, options)
    if options.get("constraint", "l1") != "lp":
        return
    # What the lp ball does not support.
    p = options.get("p")
    if p is None or not 1.0 < float(p) <= 2.0:
        raise ValueError(f"constraint='lp' needs the ball's exponent p in (1, 2], got p={p!r}.")
    if options.get("intercept_bound") is not None:
        raise ValueError(
            f"{solver}: constraint='lp' puts every coordinate (the intercept too) in the "
            "lp ball; intercept_bound is for constraint='l1'."
        )
    if options.get("refit"):
        raise ValueError("frank_wolfe's refit is over the l1 polytope: use refit=0 here.")


def checked_domain(solver, args):
    """Check a direct call's options and build its :class:`L1Domain` (public inputs only).

    ``args`` is a namespace of the solver's arguments; its options are the
    keyword parameters of its signature, as the registry reads them.
    """
    from ._registry import SOLVERS  # filled once the package is imported

    options = {name: getattr(args, name) for name in SOLVERS[solver].options}
    check_l1_options(solver, n_outputs=args.n_outputs, options=options)
    return make_domain(
        args.data,
        radius=args.radius,
        intercept_bound=args.intercept_bound,
        alpha=args.alpha,
        l1_ratio=args.l1_ratio,
    )


def make_domain(data, *, radius, intercept_bound, alpha, l1_ratio, solver=None):
    """The :class:`L1Domain` of a fit (all inputs public, checked by :func:`check_l1_options`)."""
    n_columns = data.n_columns
    ball = np.ones(n_columns, dtype=bool)
    box = np.full(n_columns, np.inf)
    if intercept_bound is not None:
        free = ~data.penalized
        ball[free] = False
        box[free] = intercept_bound
    l1_ratio = float(l1_ratio or 0.0)
    penalized = data.penalized.astype(float)
    return L1Domain(
        radius=float(radius),
        ball=ball,
        box=box,
        l1_penalty=alpha * l1_ratio * penalized,
        l2_penalty=alpha * (1.0 - l1_ratio) * penalized,
    )


def linf_gradient_bound(loss, data, clip_norm, private, solver):
    """Public l-infinity bound ``C`` on each per-sample gradient (the clip).

    The loss alone bounds it by ``loss.derivative_bound * max_j feature_bound[j]``;
    ``clip_norm=None`` clips at ``DEFAULT_CLIP_FRACTION`` of that when private
    (as every solver of the library does), not at all otherwise.
    """
    if data.feature_bound is None:
        raise ValueError(
            f"{solver} bounds rows entrywise: the data must be bounded with feature_bound "
            "(geometry='linf')."
        )
    row_bound = float(np.max(np.asarray(data.feature_bound, dtype=float)))
    return gradient_bound(loss, row_bound, clip_norm, private=private)


def allocate_rows(rng, n_rows, n_public, sizes):
    """Independent random allocation of rows to slots of public expected sizes.

    Row i goes to slot k with probability ``sizes[k] / n_public`` (``n_public``:
    the public stand-in for the row count) and to no slot (index
    ``len(sizes)``) with the rest; if the sizes add up to more than
    ``n_public`` they are normalised instead.  The probabilities are public (a
    function of public inputs only), and each row draws independently of the
    other rows, so adding or removing a row leaves the others' slots
    unchanged.  The draw goes through the noise gateway
    (:func:`sklearn_dp._noise.allocate_rows`): every one of the ``n_rows``
    actual rows draws its slot.  Returns the slot index of each row.
    """
    sizes = np.asarray(sizes, dtype=float)
    probabilities = np.append(sizes / n_public, max(0.0, 1.0 - sizes.sum() / n_public))
    probabilities = np.maximum(probabilities, 0.0)
    return _noise.allocate_rows(int(n_rows), probabilities / probabilities.sum(), rng)


def project_l1_ball(v, radius):
    """Euclidean projection onto ``{||x||_1 <= radius}`` (sort-based, Duchi et al. 2008)."""
    if np.sum(np.abs(v)) <= radius:
        return v.copy()
    u = np.sort(np.abs(v))[::-1]
    cumulative = np.cumsum(u) - radius
    index = np.arange(1, u.size + 1)
    # The first entry always qualifies (u[0] - (u[0] - radius) = radius > 0),
    # but not in floats when radius is below u[0]'s resolution.
    positive = np.flatnonzero(u - cumulative / index > 0)
    k = positive[-1] if positive.size else 0
    threshold = cumulative[k] / (k + 1.0)
    return np.sign(v) * np.maximum(np.abs(v) - threshold, 0.0)


def zero_model_result(n_rows, n_columns, plan, warning):
    """The fallback of a solver whose public error bound is vacuous: the zero model, unrun.

    Every coefficient 0 (the estimators then predict the label centre),
    ``n_iter = 0``, no row read and no noise drawn; ``warning`` (a function of
    public values and the released row count) names the alternatives.  The
    fit keeps its planned charge and ``dp_event``.
    """
    info = dict(sample_uses=np.zeros(n_rows, dtype=np.int64), warnings=[warning])
    return SolverResult(coef=np.zeros((n_columns, 1)), n_iter=0, plan=plan, info=info)


def _not_strongly_convex(solver, l1_part):
    """The refusal of ``strongly_convex=True`` (``l1_part``: whether an L1 part is allowed)."""
    extra = "" if l1_part else ", and no L1 part (its rounds' vertices x +- R e_j have none)"
    return ValueError(
        f"{solver}: strongly_convex=True needs an objective that is strongly convex from "
        f"public knowledge: an L2 (elastic-net) penalty on every coefficient and no intercept{extra}."
    )


def check_strongly_convex(solver, penalty, alpha, l1_ratio, public, options, l1_part=True):
    """Refuse ``strongly_convex=True`` unless the objective is strongly convex from public inputs."""
    l1 = float(l1_ratio or 0.0)
    if options.get("strongly_convex", False) and (
        public.fit_intercept
        or public.n_features == 0
        or penalty not in ("l2", "elasticnet")
        or 1.0 - l1 <= 0
        or (alpha is not None and not alpha > 0)
        or (not l1_part and penalty == "elasticnet" and l1 > 0)
    ):
        raise _not_strongly_convex(solver, l1_part)


def strong_convexity(solver, domain, p=1.0, l1_part=True):
    """Public modulus of strong convexity of the objective w.r.t. ||.||_p, from the L2 penalty.

    ``(a / 2) ||x||_2^2`` is a-strongly convex in ``||.||_2``, and ``||x||_2 >=
    d^(1/2 - 1/p) ||x||_p``.  Raises (public inputs only) when it is 0, or
    on an L1 penalty unless ``l1_part``.
    """
    if np.any(domain.l2_penalty == 0) or (not l1_part and domain.has_l1_penalty):
        raise _not_strongly_convex(solver, l1_part)
    return float(np.min(domain.l2_penalty)) * domain.l2_penalty.size ** (1.0 - 2.0 / p)


def strongly_convex_rounds(n_samples):
    """Expected block sizes of the strongly convex reduction (Asi et al. 2021, section 5).

    ``ceil(log2 log2 n)`` rounds on disjoint blocks of ``2^(i-2) n / log2 n``
    rows (their sum is below n); blocks of fewer than 3 rows are dropped
    (a single round of n if none is left).
    """
    log_n = math.log2(max(n_samples, 4))
    k = max(1, math.ceil(math.log2(log_n)))
    sizes = [2 ** (i - 2) * n_samples / log_n for i in range(1, k + 1)]
    return [s for s in sizes if s >= 3] or [float(n_samples)]
