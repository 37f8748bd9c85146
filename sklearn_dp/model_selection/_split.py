"""Row-wise splitters: each row draws its own part.

scikit-learn's ``KFold`` and ``StratifiedKFold`` cut the rows into folds by
position and by the number of rows: fold ``k`` holds rows
``[k n / K, (k + 1) n / K)`` (after an optional shuffle that is itself a
permutation of ``range(n)``).  Under add/remove-one neighbouring the number
of rows is private, and adding one row moves fold boundaries: rows cross
from one fold to the next (without shuffling, about one per boundary; with a
fixed shuffle seed, the whole permutation changes).  A fold fit on D and the
same fold fit on D plus one row can then differ in many rows, and the
guarantee of each fold fit only holds by group privacy, which nothing
charges.

A row-wise splitter assigns each row to a part by a draw of its own,
independently of the other rows and of the row count: adding a row leaves
every other row where it was, so neighbouring data sets differ by one row in
exactly one part.  That is what the private searches
(:class:`~sklearn_dp.model_selection.DPGridSearchCV`) need for their
train/validation split, and what keeps fold fits of a ``GridSearchCV`` or
``cross_val_score`` neighbours.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np

from .. import _noise
from .._protocol import group_codes
from .._sklearn_compat import Interval, validate_parameter_constraints
from ..solvers._common import make_rng

if TYPE_CHECKING:
    from collections.abc import Iterator

    from .._typing import ArrayLike, MatrixLike, RandomStateLike


__all__ = ["RowwiseKFold", "rowwise_parts"]


def rowwise_parts(n_rows, probabilities, rng, groups=None):
    """Part of each row, drawn independently with public ``probabilities``.

    Parameters
    ----------
    n_rows : int
        Number of rows (used to index them, never to size the parts).
    probabilities : array-like of shape (n_parts,)
        Public probability of each part; they must sum to 1.
    rng : numpy.random.Generator
    groups : array-like of shape (n_rows,), optional
        The group of each row: each group then draws one part and all its
        rows go there (so adding or removing a group changes one part).

    Returns
    -------
    ndarray of shape (n_rows,)
        The part of each row.  Row ``i`` gets the ``i``-th draw of ``rng``:
        a row appended to the data draws after every other row, and moves
        no other row.

    Notes
    -----
    Privacy: the draw goes through the noise gateway
    (:func:`sklearn_dp._noise.allocate_rows`), where traces record it.  Part
    sizes are Binomial, not a function of the row count: a part is never
    sized from ``n_rows``.
    """
    probabilities = np.asarray(probabilities, dtype=float)
    if groups is not None:
        groups = group_codes(groups)
    return _noise.allocate_rows(int(n_rows), probabilities, rng, groups=groups)


class RowwiseKFold:
    """K-fold cross-validation where each row draws its own fold.

    Each row is put in fold ``k`` with probability ``fold_probabilities[k]``
    (default: ``1 / n_splits`` each), by a draw of its own.  Split ``k``
    validates on fold ``k`` and trains on the other rows.  Use it wherever
    scikit-learn takes ``cv=``.

    Parameters
    ----------
    n_splits : int, default=5
        Number of folds, at least 2.
    fold_probabilities : array-like of shape (n_splits,), optional
        Public probability of each fold (must sum to 1).  Default uniform.
    random_state : int, RandomState, Generator or None, default=None
        Seed of the draws.  With an int, every call of :meth:`split` draws
        the same folds for the same rows (as ``GridSearchCV`` needs for its
        candidates to share folds); with None, each call draws afresh.

    Notes
    -----
    Fold sizes are random (Binomial): a fold may be empty on a small data
    set.  Folds are not stratified: stratifying needs label counts, which
    are private.

    Privacy
    -------
    Adding or removing a row leaves every other row in its fold (the draws
    of the other rows do not depend on it), so the data sets of fold ``k``
    on neighbouring inputs are neighbours, and a fold fit charged as one fit
    is charged correctly.  (Draws are taken in row order: a row appended at
    the end moves no other row with the same seed; one inserted in the
    middle shifts the later rows' draws, which changes nothing in
    distribution, since every row's fold is an independent draw, and a
    guarantee is a statement about distributions.)  ``KFold`` (and ``StratifiedKFold``,
    ``ShuffleSplit``) derive folds from positions and the row count: one
    added row can move many rows between folds, so a fold fit on
    neighbouring inputs is only protected by group privacy.  This splitter
    reads nothing but the number of rows, to index them.  The folds
    themselves are not released by anything in this library; do not
    publish them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_dp.model_selection import RowwiseKFold
    >>> X = np.zeros((10, 2))
    >>> folds = RowwiseKFold(n_splits=2, random_state=0)
    >>> [len(train) + len(test) for train, test in folds.split(X)]
    [10, 10]
    """

    _parameter_constraints = {
        "n_splits": [Interval(Integral, 2, None, closed="left")],
        "fold_probabilities": ["array-like", None],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(
        self,
        n_splits: int = 5,
        *,
        fold_probabilities: ArrayLike | None = None,
        random_state: RandomStateLike = None,
    ) -> None:
        self.n_splits = n_splits
        self.fold_probabilities = fold_probabilities
        self.random_state = random_state

    def _probabilities(self):
        validate_parameter_constraints(
            self._parameter_constraints,
            {
                "n_splits": self.n_splits,
                "fold_probabilities": self.fold_probabilities,
                "random_state": self.random_state,
            },
            caller_name=type(self).__name__,
        )
        if self.fold_probabilities is None:
            return np.full(self.n_splits, 1.0 / self.n_splits)
        probabilities = np.asarray(self.fold_probabilities, dtype=float)
        if (
            probabilities.shape != (self.n_splits,)
            or not np.all(np.isfinite(probabilities))
            or np.any(probabilities < 0)
            or not np.isclose(probabilities.sum(), 1.0)
        ):
            raise ValueError(
                f"fold_probabilities must be {self.n_splits} non-negative numbers that sum "
                f"to 1; got {self.fold_probabilities!r}."
            )
        return probabilities / probabilities.sum()

    def _rng(self):
        if isinstance(self.random_state, Integral):
            return np.random.default_rng(int(self.random_state))
        return make_rng(self.random_state)

    def folds(self, X: MatrixLike, groups: ArrayLike | None = None) -> np.ndarray:
        """The fold of each row of ``X`` (an array of fold numbers).

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Only its number of rows is read.
        groups : array-like of shape (n_samples,), optional
            The group of each row: each group draws its fold and all its
            rows go there (as ``GroupKFold``, a group is never split).  Ids
            are numbers, strings, booleans or dates; rows with a missing id
            (NaN, NaT) are one group; object arrays raise a TypeError.

        Returns
        -------
        ndarray of shape (n_samples,)
            The fold number of each row.
        """
        probabilities = self._probabilities()
        return rowwise_parts(_num_rows(X), probabilities, self._rng(), groups=groups)

    def split(
        self, X: MatrixLike, y: object = None, groups: object = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Generate (train, test) indices, one pair per fold.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Only its number of rows is read.
        y : ignored
            For compatibility (folds do not look at labels).
        groups : array-like of shape (n_samples,), optional
            The group of each row: each group draws its own fold, so a
            group is never split between training and test (the folds of a
            group-level fit, ``fit(..., groups=...)``, stay neighbours when a
            group is added or removed).  Ids as in :meth:`folds`.

        Yields
        ------
        train, test : ndarray of int
        """
        folds = self.folds(X, groups)
        for k in range(self.n_splits):
            yield np.flatnonzero(folds != k), np.flatnonzero(folds == k)

    def get_n_splits(self, X: object = None, y: object = None, groups: object = None) -> int:
        """Number of splits (``n_splits``).

        Parameters
        ----------
        X, y, groups : object
            Ignored, present for API consistency.

        Returns
        -------
        int
            ``n_splits``.
        """
        return self.n_splits

    def __repr__(self):
        return (
            f"{type(self).__name__}(n_splits={self.n_splits}, "
            f"fold_probabilities={self.fold_probabilities!r}, random_state={self.random_state!r})"
        )


def _num_rows(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(X)
