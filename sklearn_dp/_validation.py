"""Validation of private training data: messages that show no private value.

Used by the estimators and the DP transformers before any spend: the input's
schema is checked (shape, numeric type, finiteness), CSR input is
canonicalised, and every refusal says what is wrong, never where or with
which value.
"""

from __future__ import annotations

import contextlib
import mmap

import numpy as np
import scipy.sparse as sp

from ._design import fine_block_ranges
from ._sklearn_compat import validate_data

__all__ = ["public_validation_errors", "saturate", "validate_private", "validate_rows"]

# Messages of numpy / scikit-learn conversions that would show private values
# (numpy's "could not convert string to float: '<value>'", scikit-learn's
# "array=[...]" dumps of 1-d and complex input) or the private row count
# (inconsistent lengths): replaced by messages without data.
_NON_NUMERIC_MARKERS = (
    "could not convert",
    "invalid literal",
    "setting an array element with a sequence",
    "inhomogeneous",
    "Complex data not supported",
    "dtype='numeric' is not compatible",
)


def _stores_out_of_order(X):
    """Whether a row of CSR ``X`` stores a column twice or out of order, read off its indices.

    scipy caches ``has_canonical_format``, and a caller that rewrites
    ``indices`` in place (or sets the flag) leaves it stale: scikit-learn's
    validation returns that same object.  Checked block by block of rows
    (temporaries the size of a block).
    """
    indptr, indices = X.indptr, X.indices
    for start, stop in fine_block_ranges(X.shape[0], X.shape[1], X.nnz):
        lo, hi = int(indptr[start]), int(indptr[stop])
        if hi - lo < 2:
            continue
        piece = indices[lo:hi]
        increasing = piece[1:] > piece[:-1]
        # Comparisons across the start of a row do not count.
        firsts = indptr[start + 1 : stop] - lo
        firsts = firsts[(firsts > 0) & (firsts < hi - lo)]
        increasing[firsts - 1] = True
        if not np.all(increasing):
            return True
    return False


def _canonical(X):
    """A CSR matrix with its duplicate entries summed (a copy; the caller's matrix is untouched).

    Bounds are applied to the stored entries of a sparse matrix, so two
    stored entries of one cell would each be clipped and then add up to more
    than the bound: duplicates are summed first.  Dense input is returned as it is.
    """
    if sp.issparse(X) and (not X.has_canonical_format or _stores_out_of_order(X)):
        X = X.copy()
        # scipy trusts its cached flags; they may be stale (checked above).
        X.has_sorted_indices = False
        X.has_canonical_format = False
        X.sum_duplicates()
        # scikit-learn checked the stored entries; finite duplicates can sum
        # beyond the dtype's range.  An inf cell would make every release of
        # the fit NaN: refused here, with the other schema checks (before any
        # spend), as scikit-learn refuses an inf entry.
        if not np.all(np.isfinite(X.data)):
            raise ValueError(
                "Input X contains infinity or a value too large for its dtype once the "
                "duplicate entries of a sparse matrix are summed; pass finite values."
            )
    return X


def maps_a_file(array):
    """Whether ``array`` views memory mapped from a file (``np.memmap``, ``mmap``)."""
    while array is not None:
        if isinstance(array, (np.memmap, mmap.mmap)):
            return True
        array = getattr(array, "base", None)
    return False


def in_process_memory(X):
    """``X``, or a copy of it in the process's memory if it maps a file.

    A fit computes each row's clip factor once and applies it on every later
    pass over the rows.  Rows read from a memory-mapped file could change
    between the passes (another process writing the file): the factors
    computed for the old values would then bound nothing, and a row could move
    a release by far more than its sensitivity.  A copy taken before the fit
    reads the rows fixes the values every pass sees.  (Data beyond memory:
    Dask, whose chunks are kept the same way.)
    """
    if sp.issparse(X):
        parts = (X.data, X.indices, X.indptr)
        return X.copy() if any(maps_a_file(part) for part in parts) else X
    return np.array(X, copy=True) if maps_a_file(X) else X


def _label_kind(value_type):
    if issubclass(value_type, (bool, np.bool_)):
        return "boolean"
    if issubclass(value_type, (int, np.integer)):
        return "integer"
    if issubclass(value_type, (float, np.floating)):
        return "float"
    if issubclass(value_type, (str, np.str_)):
        return "string"
    return None  # left to scikit-learn's checks (None, nested sequences, ...)


def _check_label_kinds(name, y):
    """Refuse class labels given as a list (or object array) that mixes kinds of value.

    numpy infers a list's dtype from all its elements, so one row labelled
    ``1.0`` among Python ints, or ``"a"`` among numbers, would change the
    dtype of ``classes_`` and of every prediction: that row's presence would
    show (an object array keeps each label's own type).  A typed array carries
    its dtype with it (public); a list must agree with itself.  A schema check: before any spend.
    """
    if not isinstance(y, (list, tuple)) and str(getattr(y, "dtype", "")) != "object":
        return
    kinds = {_label_kind(value_type) for value_type in set(map(type, y))} - {None}
    if len(kinds) > 1:
        raise ValueError(
            f"{name}: y is a list or object array whose labels mix kinds of value "
            f"({', '.join(sorted(kinds))}); the type of the labels is public, so pass them "
            "as an array of one dtype (for example np.asarray(y, dtype=int)) or as a list "
            "of one kind."
        )


def _public_message(name, message):
    """A message without data for a validation error whose ``message`` may show some, or None."""
    if "Expected 2D array" in message:
        got = "a scalar" if "scalar" in message else "a 1-d array"
        return (
            f"{name}: X must be 2-d, of shape (n_samples, n_features); got {got}. "
            "Reshape your data with X.reshape(-1, 1) if it has a single feature "
            "or X.reshape(1, -1) if it is a single sample."
        )
    if "Complex data not supported" in message:
        # scikit-learn's message prints the array after this phrase.
        return (
            f"{name}: Complex data not supported: X has complex values; pass real "
            "numbers (for example X.real, if the imaginary part is known to be 0)."
        )
    if "inconsistent numbers of samples" in message:
        return (
            f"{name}: X and y have inconsistent numbers of samples (rows); pass one "
            "label per row of X."
        )
    if any(marker in message for marker in _NON_NUMERIC_MARKERS):
        return (
            f"{name}: X and y must hold real numbers in a rectangular array: found a "
            "non-numeric entry (such as a string or None), a ragged row or a complex "
            "value. Encode categorical columns with a public encoding and convert the "
            "data to a float array first."
        )
    return None


@contextlib.contextmanager
def public_validation_errors(name):
    """Re-raise a validation error that may show private values with a message that shows none.

    numpy's and scikit-learn's own messages quote a cell that is not a
    number, or print a 1-d or complex array whole.
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        message = _public_message(name, str(exc))
        if message is None:
            raise
        raise ValueError(message) from None


def saturate(X):
    """``X`` with each infinity replaced by the largest finite value of its dtype, keeping its sign.

    The transforms of this package map finite rows to finite rows.  The
    next DP step refuses non-finite input (before its spend, as a malformed
    schema), so a finite private row that a transform overflowed to ``inf``
    would make a pipeline, or a private search over it, fail exactly when
    that row is in the data.  NaN is left as it is (no finite row gives one
    here).  ``X`` is returned as it is when every value is finite, else a
    copy.
    """
    values = X.data if sp.issparse(X) else X
    if not (isinstance(values, np.ndarray) and values.dtype.kind == "f"):
        return X
    if np.all(np.isfinite(values)):
        return X
    limit = np.finfo(values.dtype).max
    if sp.issparse(X):
        X = X.copy()
        X.data = np.clip(X.data, -limit, limit)
        return X
    return np.clip(values, -limit, limit)


def validate_rows(estimator, X, **kwargs):
    """``validate_data(estimator, X, **kwargs)`` with messages that show no private value.

    For rows that are transformed or scored, and for the fits that read only
    the input's schema: no copy and no canonicalisation beyond what
    ``kwargs`` ask of scikit-learn.
    """
    kwargs.setdefault("ensure_min_samples", 0)
    with public_validation_errors(type(estimator).__name__):
        return validate_data(estimator, X, **kwargs)


def validate_private(estimator, X, y="no_validation", x_dtype=np.float64, **kwargs):
    """``validate_data`` for private data, with messages that show no private value.

    Used by the estimators and the DP transformers: complex values,
    non-numeric entries, ragged rows, 1-d input and inconsistent lengths are
    refused with messages that say what is wrong, not where or with which
    value; CSR input is canonicalised (duplicate entries summed).
    """
    name = type(estimator).__name__
    if not kwargs.get("y_numeric", True):
        _check_label_kinds(name, y)
    for part, value in (("X", X), ("y", y)):
        dtype = getattr(value, "dtype", None)
        if dtype is not None and getattr(dtype, "kind", None) == "c":
            raise ValueError(
                f"{name}: Complex data not supported: {part} has complex values; pass "
                f"real numbers (for example {part}.real, if the imaginary part is known "
                "to be 0)."
            )
    with public_validation_errors(name):
        validated = validate_data(
            estimator, X, y, accept_sparse="csr", dtype=x_dtype, ensure_min_samples=0, **kwargs
        )
    reading_rows = kwargs.get("reset", True)

    def prepared(X):
        # A fit reads its rows on several passes; prediction reads them once.
        return _canonical(in_process_memory(X) if reading_rows else X)

    if isinstance(validated, tuple):
        labels = validated[1]
        # scikit-learn checks finiteness before it converts an object array to
        # float, so a None label becomes NaN unchecked: refuse it here, with
        # the other schema checks (before any spend).
        if (
            getattr(labels, "dtype", None) is not None
            and labels.dtype.kind == "f"
            and not (np.all(np.isfinite(labels)))
        ):
            raise ValueError(
                f"{name}: y contains NaN, infinity or a missing value (such as None in an "
                "object array); pass finite labels."
            )
        return (prepared(validated[0]),) + tuple(validated[1:])
    return prepared(validated)
