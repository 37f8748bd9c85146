"""Fits on Dask arrays: per-chunk clipped sums, reduced, noise added once on the client.

A Dask fit follows the in-memory fit step by step.  Every quantity that noise
is added to is a sum over rows (a clipped gradient sum, a Hessian or Gram sum,
``X~^T y``, the row count, a label histogram, the counts that score the
candidates of an ``"auto"`` bound): each chunk of rows is bounded exactly as
in memory (:func:`sklearn_dp._data.bound_data`: clipping is per row) and
summed where it lives, the chunk sums are added up in a tree on the workers,
and only the reduced value (a vector, a ``d x d`` matrix or counts over a
public grid) reaches the client, which adds the noise through the gateway
(:mod:`sklearn_dp._noise`) as for in-memory data.  A chunk is bounded once per
fit, in the solver's first pass, and its rows stay with their factors on its
worker for the later passes (:class:`_ChunkBounds`), which never read X again;
on a ``dask.distributed`` cluster a later pass runs one task per worker
thread, over the chunks that worker holds (:func:`worker_groups`).  A sum over rows is the sum
of its chunks' sums, so the pre-noise values, their sensitivities and the
noise (drawn on the client, in the same order from the same generator) are
those of the in-memory fit: with the same ``random_state`` the models agree
up to floating-point rounding of the sums.

Nothing here imports Dask at import time: without it installed, everything
else works and Dask input gets an error naming what to install (the ``dask``
extra's requirements, installable by name whichever way sklearn_dp was installed).

Supported: the solvers registered with ``dask=True`` (:func:`dask_solvers`),
the private row count, the
label set (``classes=None``), the ``"auto"`` bounds and warm starts.  Other
solvers, and weighted fits (``sample_weight``, ``class_weight``), refuse
Dask input before the budget is charged.
"""

from __future__ import annotations

import copy
import functools
import math
import numbers
import threading

import numpy as np

from . import _bounds
from ._data import BoundedData, bound_data
from ._validation import maps_a_file

__all__ = [
    "dask_solvers",
    "EXTRA",
    "DaskBoundedData",
    "DaskDesign",
    "is_dask_array",
    "is_dask_input",
    "require_dask",
    "validate_fit_data",
    "check_solver",
    "refuse_weights",
    "row_count",
    "label_histogram",
    "ChunkCounts",
    "bound_dask_data",
    "reduce_chunks",
    "worker_groups",
    "map_rows",
    "map_labels",
    "filter_rows",
]


def dask_solvers():
    """Names of the solvers that fit on Dask arrays (``SolverSpec.dask``)."""
    from .solvers._registry import registered_solvers

    return [spec.name for spec in registered_solvers(dask=True)]


#: How to install the optional dependency.
EXTRA = 'pip install "dask[array]>=2024.1" "distributed>=2024.1"'

#: Chunk results added per task of the tree reduction.
SPLIT_EVERY = 8


def is_dask_collection(obj):
    """Whether ``obj`` is a Dask collection (checked without importing Dask)."""
    return hasattr(obj, "__dask_graph__") and type(obj).__module__.split(".")[0] == "dask"


def is_dask_array(obj):
    """Whether ``obj`` is a ``dask.array.Array`` (checked without importing Dask)."""
    return is_dask_collection(obj) and hasattr(obj, "chunks") and hasattr(obj, "map_blocks")


def is_dask_input(*objects):
    """Whether any of ``objects`` is a Dask collection."""
    return any(is_dask_collection(obj) for obj in objects)


def require_dask():
    """``(dask, dask.array)``, or an ImportError that names the extra."""
    try:
        import dask
        import dask.array as da
    except ImportError:
        raise ImportError(
            "sklearn_dp fits on Dask arrays need the optional dependency dask; install it "
            f"with {EXTRA} (the dask extra of sklearn_dp)."
        ) from None
    return dask, da


# -- reductions ------------------------------------------------------------------


def _add(a, b):
    """Sum of two chunk results: arrays, numbers, or tuples of them (None stays None)."""
    if isinstance(a, tuple):
        return tuple(_add(u, v) for u, v in zip(a, b))
    if a is None:
        return None
    return a + b


def _sum_all(combine, *results):
    return functools.reduce(combine, results)


def _group_sum(func, combine, *chunks):
    """``combine`` of ``func(chunk)`` over chunks that live on one worker: one task."""
    return functools.reduce(combine, [func(chunk) for chunk in chunks])


def worker_groups(objects):
    """Indices of persisted ``objects``, grouped by the worker thread that runs them, or None.

    On a ``dask.distributed`` cluster, each worker's objects (``who_has``,
    asked anew at each call: the scheduler may have moved some) are split
    into one group per thread of that worker; a pass then runs one task per
    group, next to its data, instead of one per chunk: a task costs the
    scheduler, the client and the worker a few milliseconds each, and with
    many chunks that was a sizeable part of a pass.  None without a
    ``dask.distributed`` client (the threaded scheduler's tasks cost little).
    """
    try:
        from distributed import futures_of
    except ImportError:
        return None
    futures = [futures_of(obj) for obj in objects]
    if not futures or any(len(f) != 1 for f in futures):
        return None
    client = futures[0][0].client
    holders = client.who_has([f[0] for f in futures])
    threads = client.nthreads()
    by_worker = {}
    for index, (future,) in enumerate(futures):
        where = sorted(holders.get(future.key) or ())
        by_worker.setdefault(where[0] if where else None, []).append(index)
    groups = []
    for worker, indices in by_worker.items():
        n = max(1, min(len(indices), int(threads.get(worker, 1)) if worker else 1))
        groups += [indices[i::n] for i in range(n)]
    return groups


def reduce_chunks(func, *arrays, combine=_add, split_every=SPLIT_EVERY, keep=None, groups=None):
    """``combine`` of ``func(*blocks)`` over the row chunks of ``arrays`` (computed).

    ``arrays`` are Dask arrays with the same row chunks and one chunk across
    their other axes, or lists of one Dask delayed object per row chunk.
    ``func`` runs on each chunk where it lives; the results are combined in a
    tree of ``split_every`` on the workers, and only the final result comes
    to the client.  ``keep``: a list of per-chunk delayed objects computed in
    the same run and kept where they are computed (``dask.persist``: on the
    workers of a ``dask.distributed`` cluster, never sent to the client); it
    is replaced, in place, by the persisted objects.  ``groups``: lists of
    chunk indices (of one list of delayed objects, :func:`worker_groups`),
    each group summed in one task.  Runs on the current scheduler (a
    ``dask.distributed`` client when one is active).
    """
    dask, _ = require_dask()
    blocks = [list(a) if isinstance(a, list) else a.to_delayed().ravel() for a in arrays]
    if groups is not None:
        (chunks,) = blocks
        task = dask.delayed(_group_sum, pure=False)
        parts = [task(func, combine, *[chunks[i] for i in group]) for group in groups]
    else:
        task = dask.delayed(func, pure=False)
        parts = [task(*chunk) for chunk in zip(*blocks)]
    if not parts:
        raise ValueError("no chunks to reduce")
    total = dask.delayed(_sum_all, pure=False)
    while len(parts) > 1:
        parts = [
            total(combine, *parts[i : i + split_every]) for i in range(0, len(parts), split_every)
        ]
    if not keep:
        return parts[0].compute()
    result, *kept = dask.persist(parts[0], *keep)
    keep[:] = kept
    return result.compute()


def _aligned(block):
    """A chunk as a NumPy array whose items are aligned (a copy of the chunk if they are not).

    A chunk that a worker received from another (deserialised from network
    frames) can start at any byte; NumPy does not hand unaligned arrays to
    BLAS, and its own loops on them are many times slower.
    """
    block = np.asarray(block)
    return block if block.flags.aligned else np.array(block, copy=True)


def _owned(block):
    """A chunk to keep: aligned, and a copy in the process's memory if it maps a file.

    A memory-mapped chunk (``da.from_npy_stack(..., mmap_mode="r")``,
    ``np.load(..., mmap_mode="r")``) is a view of the file: a write to the
    file during the fit would change the kept rows under the factors computed
    for them, and a row could then exceed its bound in a later pass.
    """
    block = np.asarray(block)
    return np.array(block, copy=True) if maps_a_file(block) else _aligned(block)


class _ChunkBounds:
    """One row chunk, bounded, with its rows: kept on its worker between passes.

    Bounding a chunk (its row norms and factors) costs more than a pass of
    products over it; it is done once per fit.  This holds the chunk's
    :class:`~sklearn_dp._data.BoundedData` (the rows it bounded, their
    factors, the labels, the public attributes), so that later passes
    multiply without reading X again.  The rows stay with their factors: a
    later read of X could return other values (a source that changes, a
    non-deterministic recompute), and factors computed for one set of rows
    bound nothing on another; for the same reason a chunk that maps a file
    is kept as a copy (:func:`_owned`).  Private per-row values: it lives on the worker
    (a persisted Dask object), for the duration of the fit.
    """

    def __init__(self, X_chunk, y_chunk, bound_args):
        self.part = bound_data(_owned(X_chunk), _owned(y_chunk), **bound_args)


#: Per worker thread: the float64 buffer that chunk products convert float32 blocks into.
_WORKSPACE = threading.local()


def _workspace(size):
    """A float64 buffer of at least ``size`` items, one per thread, reused from pass to pass.

    Dask's worker processes tell the C allocator to hand every large free
    back to the system (``MALLOC_TRIM_THRESHOLD_``), so a float64 copy of a
    float32 block made afresh in every pass is paged in afresh too: on a
    ``LocalCluster`` that cost several times the product itself.
    """
    space = getattr(_WORKSPACE, "buffer", None)
    if space is None or space.size < size:
        space = _WORKSPACE.buffer = np.empty(size)
    return space


def _bounded_kernel(bounds, kernel):
    """``kernel(bounds.part)`` on a worker, float32 blocks converted into the thread's buffer.

    The buffer is wiped afterwards: private rows stay in the chunk, which
    lives as long as the fit, not in a buffer that outlives it.
    """
    part = bounds.part
    designs = [part.design, getattr(part.design, "inner", None)]
    designs = [d for d in designs if d is not None and d.dtype == np.float32 and not d.sparse]
    space = None
    if designs and part.n_samples:
        rows = max(stop - start for start, stop in part.design.blocks())
        space = _workspace(rows * part.design.n_features)
    for design in designs:
        design.workspace = space
    try:
        return kernel(part)
    finally:
        for design in designs:
            design.workspace = None
        if space is not None:
            space.fill(0.0)


class DaskDesign:
    """The bounded design of a Dask fit: rows in chunks, bounded chunk by chunk where they live.

    Holds the public shape and the bounding parameters; its only product is
    :meth:`sum_over_chunks` (sums over rows, reduced).  Per-row values (scores,
    norms, scale factors) exist only on the workers: each chunk is bounded
    once, in the fit's first pass, and kept there with its factors
    (:class:`_ChunkBounds`, persisted) for the later passes.
    """

    def __init__(self, X, y, bound_args, n_columns):
        self.X = X
        self.y = y
        self.bound_args = dict(bound_args)
        self.n_features = int(X.shape[1])
        self.n_columns = int(n_columns)
        self.dtype = X.dtype
        self.sparse = False
        self._bounds = None

    def sum_over_chunks(self, kernel):
        """``sum_c kernel(bound_data(X_c, y_c, ...))`` over the row chunks ``c``, as NumPy."""
        func = functools.partial(_bounded_kernel, kernel=kernel)
        if self._bounds is not None:
            return reduce_chunks(func, self._bounds, groups=worker_groups(self._bounds))
        dask, _ = require_dask()
        bound = dask.delayed(_ChunkBounds, pure=False)
        bounds = [
            bound(x, y, self.bound_args)
            for x, y in zip(self.X.to_delayed().ravel(), self.y.to_delayed().ravel())
        ]
        total = reduce_chunks(func, bounds, keep=bounds)
        self._bounds = bounds
        return total


class DaskBoundedData:
    """The Dask counterpart of :class:`~sklearn_dp._data.BoundedData`: public attributes only.

    The public attributes (``row_norm_bound``, ``feature_bound``,
    ``penalized``, ``fit_intercept``, ``intercept_scaling``, ``n_public``,
    ``normalizer``) are those of the in-memory bounding; the rows stay in
    their chunks.  Solvers compute through
    :func:`sklearn_dp._data.row_sum`, which calls :meth:`sum_over_chunks`.
    """

    def __init__(self, X, y, bound_args):
        template = bound_data(np.zeros((0, X.shape[1]), dtype=X.dtype), np.zeros(0), **bound_args)
        self.design = DaskDesign(X, y, bound_args, template.design.n_columns)
        self.y = y
        for name in (
            "row_norm_bound",
            "penalized",
            "fit_intercept",
            "intercept_scaling",
            "feature_bound",
            "n_public",
            "normalizer",
            "sample_weight",
            "weight_bound",
        ):
            setattr(self, name, getattr(template, name))
        if bound_args.get("n_public") is None:
            # A direct call without a DP count: the row count is treated as public.
            count = float(row_count(X))
            self.n_public = count
            self.normalizer = (
                count if bound_args.get("normalizer") is None else (bound_args["normalizer"])
            )

    split_coef = BoundedData.split_coef

    @property
    def n_columns(self):
        return self.design.n_columns

    def sum_over_chunks(self, kernel):
        """See :meth:`DaskDesign.sum_over_chunks`."""
        return self.design.sum_over_chunks(kernel)

    def _refuse(self, name):
        raise TypeError(
            f"The rows of a Dask fit are not collected to the client ({name}); compute sums "
            "over rows with sklearn_dp._data.row_sum(data, kernel)."
        )

    @property
    def X(self):
        self._refuse("data.X")

    @property
    def row_norms(self):
        self._refuse("data.row_norms")


def bound_dask_data(X, y, **bound_args):
    """:func:`~sklearn_dp._data.bound_data` for Dask arrays: a :class:`DaskBoundedData`."""
    return DaskBoundedData(X, y, bound_args)


# -- schema checks ------------------------------------------------------------------


def _as_dask_rows(da, X, name):
    if is_dask_array(X):
        return X
    if is_dask_collection(X):
        raise TypeError(
            f"{name} is a Dask collection that is not a dask.array.Array; convert it (for "
            "example ddf.to_dask_array(lengths=True))."
        )
    return None


def validate_fit_data(estimator, X, y, *, y_numeric, classes=None, classification=False):
    """Schema checks of Dask training data (before any spend); ``(X, y)`` chunked by rows.

    X becomes a 2-d Dask array with one chunk across its columns (rechunked
    if needed; float32 stays float32, other real types become float64), y a
    1-d Dask array with X's row chunks.  One pass over the data checks what
    scikit-learn's validation checks in memory: finite values (even under
    ``sklearn.set_config(assume_finite=True)``), for classifiers discrete
    labels and, with public ``classes``, labels in them.  Messages never show
    private values or the row count.
    """
    _, da = require_dask()

    name = type(estimator).__name__
    X_dask = _as_dask_rows(da, X, "X")
    if X_dask is None:
        raise TypeError(
            f"{name}: y is a Dask array but X is not; pass X as a dask.array.Array chunked by "
            "rows (da.from_array(X, chunks=(rows, -1)))."
        )
    X = X_dask
    if X.ndim != 2:
        raise ValueError(
            f"{name}: X must be 2-d, of shape (n_samples, n_features); got a {X.ndim}-d Dask array."
        )
    meta = getattr(X, "_meta", None)
    if meta is not None and not isinstance(meta, np.ndarray):
        raise TypeError(
            f"{name}: Dask arrays of {type(meta).__name__} chunks (e.g. sparse) are not "
            "supported; chunks must be NumPy arrays."
        )
    if X.shape[1] == 0:
        raise ValueError(f"{name}: X has 0 features; at least one is required.")
    kind = X.dtype.kind
    if kind == "c":
        raise ValueError(f"{name}: Complex data not supported: X has complex values.")
    if kind not in "fiub":
        raise ValueError(
            f"{name}: X and y must hold real numbers; X has dtype {X.dtype}. Convert the data "
            "to a float array before fitting."
        )
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    if is_dask_array(y):
        pass
    elif is_dask_collection(y):
        _as_dask_rows(da, y, "y")
    else:
        y = np.asarray(y)
        if any(np.isnan(c) for c in X.chunks[0]):
            raise ValueError(
                f"{name}: X has chunks of unknown size; pass y as a Dask array with the same "
                "row chunks, or call X.compute_chunk_sizes() first."
            )
        if y.ndim >= 1 and y.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name}: X and y have inconsistent numbers of samples (rows); pass one label "
                "per row of X."
            )
        y = da.from_array(y, chunks=(X.chunks[0],) + tuple((s,) for s in y.shape[1:]))
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name}: y must be 1-d, of shape (n_samples,); got {y.ndim}-d.")
    if y.dtype.kind == "c":
        raise ValueError(f"{name}: Complex data not supported: y has complex values.")
    if y.chunks[0] != X.chunks[0]:
        known = not any(np.isnan(c) for c in X.chunks[0] + y.chunks[0])
        if known and X.shape[0] != y.shape[0]:
            raise ValueError(
                f"{name}: X and y have inconsistent numbers of samples (rows); pass one label "
                "per row of X."
            )
        if not known:
            raise ValueError(
                f"{name}: X and y have chunks of unknown size that differ; chunk them alike."
            )
        y = y.rechunk({0: X.chunks[0]})
    if y_numeric:
        if y.dtype.kind not in "fiub":
            raise ValueError(f"{name}: y must hold real numbers; it has dtype {y.dtype}.")
        if y.dtype != np.float64:
            y = y.astype(np.float64)
    # Finiteness is checked whatever sklearn.set_config(assume_finite=...) says:
    # a non-finite row would otherwise make the fit fail after the reservation.
    checks = {"X": da.isfinite(X).all()}
    if y.dtype.kind == "f":
        checks["y"] = da.isfinite(y).all()
        if classification:
            checks["discrete"] = (y == da.floor(y)).all()
    if classification and y.dtype.kind not in "fiubUSO":
        raise ValueError(f"{name}: unknown label type {y.dtype}.")
    if classification and y.dtype.kind == "O":
        # Object labels are compared when the label set is formed (after the
        # reservation): a None, or numbers mixed with strings, would make the
        # fit fail there.  Checked here with the schema, as in memory.
        kinds = y.map_blocks(_label_kinds, dtype=np.int8)
        checks["numbers"] = (kinds == _NUMBER).any()
        checks["strings"] = (kinds == _STRING).any()
        checks["other"] = (kinds == _OTHER).any()
    if classes is not None:
        try:
            checks["known"] = y.map_blocks(
                _in_classes, classes=np.asarray(classes), dtype=bool
            ).all()
        except TypeError:
            raise ValueError(
                f"{name}: the labels in y (and classes) must be of one comparable type."
            ) from None
    if checks:
        import dask

        try:
            (results,) = dask.compute(checks)
        except TypeError:
            raise ValueError(
                f"{name}: the labels in y (and classes) must be of one comparable type, all "
                "numbers or all strings; y mixes types or does not match the type of classes."
            ) from None
        if not results.get("X", True):
            raise ValueError(f"{name}: Input X contains NaN or infinity.")
        if not results.get("y", True):
            raise ValueError(
                f"{name}: y contains NaN, infinity or a missing value; pass finite labels."
            )
        if results.get("other", False):
            raise ValueError(
                f"{name}: y contains a missing value (None or NaN) or a label that is neither "
                "a number nor a string; pass labels of one type, all numbers or all strings."
            )
        if results.get("numbers", False) and results.get("strings", False):
            raise ValueError(
                f"{name}: the labels in y must be of one comparable type, all numbers or all "
                "strings; y mixes types."
            )
        if not results.get("discrete", True):
            raise ValueError(
                f"{name}: Unknown label type: continuous. Classifiers need discrete labels."
            )
        if not results.get("known", True):
            raise ValueError(
                f"y contains labels that are not in classes={np.asarray(classes).tolist()}. Fix "
                "the labels or pass the full public label set."
            )
    estimator.n_features_in_ = int(X.shape[1])
    estimator.__dict__.pop("feature_names_in_", None)
    return X, y


def _in_classes(block, classes):
    return np.isin(block, classes)


_NUMBER, _STRING, _OTHER = 0, 1, 2


def _label_kind(value):
    if isinstance(value, (str, np.str_)):
        return _STRING
    if isinstance(value, (numbers.Real, np.bool_)) and math.isfinite(value):
        return _NUMBER
    return _OTHER


_label_kinds_ufunc = np.frompyfunc(_label_kind, 1, 1)


def _label_kinds(block):
    """Kind of each object label: a finite number, a string, or anything else (None, NaN)."""
    return np.asarray(_label_kinds_ufunc(block), dtype=np.int8).reshape(block.shape)


def check_solver(name, *, inside=False):
    """Refuse a solver that does not fit on Dask arrays (a public ValueError)."""
    supported = dask_solvers()
    if name in supported:
        return
    from ._public_errors import public_error

    error = ValueError(
        f"solver={name!r} does not fit on Dask arrays; Dask input supports the solvers "
        f"{supported} (pass solver=... explicitly), or pass NumPy arrays."
    )
    raise public_error(error) if inside else error


def refuse_weights(estimator_name):
    """Refuse a weighted fit (``sample_weight`` or ``class_weight``) on Dask input.

    A public ValueError, raised before the budget is reserved: the weights
    (private, one per row) would have to be chunked like the rows and
    carried through the label filtering and the bound releases; Dask fits
    are unweighted for now.
    """
    raise ValueError(
        f"{estimator_name}: sample_weight and class_weight are not supported on Dask input; "
        "fit without weights, or pass NumPy arrays (X, y and sample_weight) for a weighted "
        "fit."
    )


# -- releases that are sums over rows ----------------------------------------------------


def _chunk_rows(block):
    return int(block.shape[0])


def row_count(X):
    """The number of rows of a Dask array (private: only for the noisy count)."""
    if not any(np.isnan(c) for c in X.chunks[0]):
        return int(X.shape[0])
    return int(reduce_chunks(_chunk_rows, X))


def _chunk_labels(block):
    return np.unique(np.asarray(block), return_counts=True)


def _merge_labels(a, b):
    keys = np.concatenate([a[0], b[0]])
    counts = np.concatenate([a[1], b[1]])
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse.ravel(), weights=counts, minlength=unique.size).astype(
        np.int64
    )


def label_histogram(y):
    """``(labels, counts)`` of a Dask array of labels, as ``np.unique(y, return_counts=True)``.

    A histogram over the labels present, computed chunk by chunk and merged on
    the workers; only the histogram reaches the client (for the thresholded
    release of the label set).
    """
    return reduce_chunks(_chunk_labels, y, combine=_merge_labels)


def _score_counts(block, score, window):
    return _bounds.upper_bound_counts(score(_aligned(block)), window=window)


def _spread_counts(block, center, window):
    values = np.abs(np.asarray(block, dtype=np.float64) - center)
    return _bounds.upper_bound_counts(values, window=window)


def _center_counts(block, candidates):
    return _bounds.center_counts_on(np.asarray(block), candidates)


class ChunkCounts(_bounds.RowCounts):
    """:class:`sklearn_dp._bounds.RowCounts` of a Dask array: each chunk's counts, summed.

    The ``"auto"`` bound releases of :mod:`sklearn_dp._bounds` read the rows
    only through these counts over public candidates; only the summed counts
    reach the client.
    """

    def spread(self, center, window):
        return reduce_chunks(
            functools.partial(_spread_counts, center=center, window=window), self.rows
        )

    def at_or_below(self, candidates):
        return reduce_chunks(functools.partial(_center_counts, candidates=candidates), self.rows)

    def signed_magnitude(self, window):
        return reduce_chunks(
            functools.partial(_bounds.signed_magnitude_counts, window=window), self.rows
        )

    def scores(self, score, window):
        return reduce_chunks(
            functools.partial(_score_counts, score=score, window=window), self.rows
        )


# -- row-wise maps (lazy) ----------------------------------------------------------------


def map_labels(func, y, dtype=np.float64):
    """``func`` applied to each chunk of a Dask array of labels (lazy), or to ``y`` itself."""
    if is_dask_array(y):
        return y.map_blocks(func, dtype=dtype)
    return func(y)


def _keep_rows(block, keep):
    return block[np.asarray(keep)]


def filter_rows(X, y, found):
    """Rows of ``(X, y)`` whose label is in ``found`` (lazy; a per-row rule)."""
    keep = y.map_blocks(_in_classes, classes=np.asarray(found), dtype=bool)
    return X[keep], y[keep]


def map_rows(estimator, method, X):
    """``estimator.<method>`` on each row chunk of a Dask array: a lazy Dask array.

    The method runs on NumPy chunks exactly as on in-memory input (same
    validation, same values row by row).  The estimator is shipped without its
    budget.
    """
    require_dask()
    if not is_dask_array(X):
        raise TypeError(
            f"{type(estimator).__name__}.{method}: X is a Dask collection that is "
            "not a dask.array.Array."
        )
    if X.ndim != 2:
        raise ValueError(f"{type(estimator).__name__}.{method}: X must be 2-d.")
    expected = getattr(estimator, "n_features_in_", None)
    if expected is not None and X.shape[1] != expected:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
            f"{expected} features as input."
        )
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    shipped = copy.copy(estimator)
    if "budget" in shipped.__dict__:
        shipped.budget = None
    func = getattr(shipped, method)
    dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.float64
    sample = np.asarray(func(np.zeros((1, X.shape[1]), dtype=dtype)))
    if sample.ndim == 1:
        return X.map_blocks(
            func, drop_axis=1, dtype=sample.dtype, meta=np.empty((0,), dtype=sample.dtype)
        )
    return X.map_blocks(
        func,
        chunks=(X.chunks[0], (sample.shape[1],)),
        dtype=sample.dtype,
        meta=np.empty((0, 0), dtype=sample.dtype),
    )
