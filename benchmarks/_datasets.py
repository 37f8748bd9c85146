"""Data sets for the benchmarks, scaled with public knowledge only.

Each loader returns a :class:`Dataset` whose features were mapped with
constants that do not come from the data being fitted, and whose
``data_norm`` (the public row-norm bound passed to the DP estimators) is
derived from those constants alone.  Nothing here computes a statistic of the
data that a fit later relies on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_iris,
    load_wine,
    make_classification,
)
from sklearn.model_selection import train_test_split

__all__ = [
    "Dataset",
    "DATASETS",
    "MULTICLASS_DATASETS",
    "load_dataset",
    "breast_cancer_public_ranges",
    "documented_ranges",
]


@dataclass
class Dataset:
    """Features, labels, the public row-norm bound and how the split is made.

    Attributes
    ----------
    name : str
        Short identifier (``--datasets`` value).
    title : str
        Human-readable name for tables and plots.
    X, y : ndarray
        Features after the public scaling, and labels ``0 .. k - 1`` (``{0, 1}``
        for the data sets of :data:`DATASETS`).
    data_norm : float
        Public bound on the L2 norm of a row of ``X`` (from public constants).
    test_size : float or int
        ``test_size`` of the per-seed stratified ``train_test_split``.
    public : list of str
        What is assumed public, one sentence each (printed with the results).
    """

    name: str
    title: str
    X: np.ndarray
    y: np.ndarray
    data_norm: float
    test_size: float | int
    public: list = field(default_factory=list)

    def split(self, seed):
        """Stratified train/test split for one seed: ``(X_train, X_test, y_train, y_test)``."""
        return train_test_split(
            self.X, self.y, test_size=self.test_size, random_state=seed, stratify=self.y
        )


# A row of the "Summary Statistics" table in load_breast_cancer().DESCR, e.g.
# "radius (mean):                        6.981  28.11"
_RANGE_ROW = re.compile(
    r"^(?P<feature>[a-z ]+\((?:mean|standard error|worst)\)):\s+"
    r"(?P<lo>[-+]?\d+(?:\.\d*)?)\s+(?P<hi>[-+]?\d+(?:\.\d*)?)\s*$",
    re.MULTILINE,
)


def breast_cancer_public_ranges(descr, n_features=30):
    """Per-feature (min, max) parsed from the data set's documentation.

    The documented ranges are treated as public knowledge about the feature
    domain (they are printed in scikit-learn's docs), not as statistics
    computed during the experiment.  The table lists the features in the
    column order of ``load_breast_cancer().data``.
    """
    rows = _RANGE_ROW.findall(descr)
    if len(rows) != n_features:
        raise ValueError(
            f"Expected {n_features} Min/Max rows in the breast cancer DESCR, found {len(rows)}; "
            "the documentation format changed, update the regex in benchmarks/_datasets.py."
        )
    lo = np.array([float(r[1]) for r in rows])
    hi = np.array([float(r[2]) for r in rows])
    if np.any(hi <= lo):
        raise ValueError("A documented feature range is empty (max <= min).")
    return lo, hi


def _breast_cancer():
    bunch = load_breast_cancer()
    lo, hi = breast_cancer_public_ranges(bunch.DESCR, bunch.data.shape[1])
    # Centre and scale each feature with its documented range: [lo, hi] -> [-0.5, 0.5].
    X = (bunch.data - (lo + hi) / 2.0) / (hi - lo)
    # The documented ranges are rounded to 3-4 significant digits, so a few
    # values land just outside [-0.5, 0.5]; clipping each value to the public
    # range is data-independent and makes data_norm a true bound.
    X = np.clip(X, -0.5, 0.5)
    n_features = X.shape[1]
    return Dataset(
        name="breast_cancer",
        title=f"Breast cancer (n={X.shape[0]}, d={n_features})",
        X=X,
        y=bunch.target,
        data_norm=0.5 * math.sqrt(n_features),
        test_size=0.2,
        public=[
            "Feature ranges: the Min/Max table of `load_breast_cancer().DESCR` (the data set's "
            "documentation); each feature is mapped to [-0.5, 0.5] with `(x - (lo+hi)/2) / "
            "(hi - lo)` and clipped to that interval.",
            f"`data_norm = 0.5 * sqrt({n_features}) = {0.5 * math.sqrt(n_features):.4g}`: the "
            "largest row norm possible after that map (nothing read from the data).",
            "Split: stratified 80/20 `train_test_split(random_state=seed)` per seed.",
        ],
    )


def _synthetic_100k():
    n_train, n_test, n_features = 100_000, 20_000, 100
    X, y = make_classification(
        n_samples=n_train + n_test,
        n_features=n_features,
        n_informative=20,
        n_redundant=10,
        flip_y=0.01,
        random_state=0,
    )
    # Nominally the generator's features are on a unit scale per coordinate;
    # dividing by sqrt(d) uses only that public constant (the informative and
    # redundant coordinates spread wider, so the estimator clips most rows).
    X = X / math.sqrt(n_features)
    return Dataset(
        name="synthetic_100k",
        title=f"make_classification (n_train={n_train}, d={n_features})",
        X=X,
        y=y,
        data_norm=1.5,
        test_size=n_test,
        public=[
            "Public by construction: `make_classification(n_samples=120000, n_features=100, "
            "n_informative=20, n_redundant=10, flip_y=0.01, random_state=0)`; the scaling "
            "(divide by sqrt(100), the generator's nominal unit scale per coordinate) and "
            "`data_norm = 1.5` are fixed constants, not computed from the drawn data. The 30 "
            "informative and redundant coordinates in fact spread wider than unit scale, so most "
            "rows are longer than 1.5 and the estimator clips them (the guarantee holds either "
            "way; see the diagnostic below).",
            "Split: stratified `train_test_split(test_size=20000, random_state=seed)` per seed "
            "(100000 training rows).",
        ],
    )


# A row of a "Summary Statistics" table of a scikit-learn DESCR (wine, iris), e.g.
# "Malic Acid:                   0.74  5.80    2.34  1.12"
_SUMMARY_ROW = re.compile(
    r"^(?P<feature>[A-Za-z0-9/ ]+?):\s+(?P<lo>[-+]?\d+(?:\.\d*)?)\s+(?P<hi>[-+]?\d+(?:\.\d*)?)"
    r"\s+[-+]?\d+(?:\.\d*)?\s+[-+]?\d+(?:\.\d*)?.*$",
    re.MULTILINE,
)


def documented_ranges(descr, n_features):
    """Per-feature (min, max) from the Min/Max columns of a DESCR's summary table (public)."""
    rows = _SUMMARY_ROW.findall(descr)
    if len(rows) != n_features:
        raise ValueError(
            f"Expected {n_features} rows in the DESCR's summary statistics, found {len(rows)}; "
            "the documentation format changed, update the regex in benchmarks/_datasets.py."
        )
    lo = np.array([float(r[1]) for r in rows])
    hi = np.array([float(r[2]) for r in rows])
    if np.any(hi <= lo):
        raise ValueError("A documented feature range is empty (max <= min).")
    return lo, hi


def _documented(name, loader):
    bunch = loader()
    lo, hi = documented_ranges(bunch.DESCR, bunch.data.shape[1])
    X = np.clip((bunch.data - (lo + hi) / 2.0) / (hi - lo), -0.5, 0.5)
    n_samples, n_features = X.shape
    return Dataset(
        name=name,
        title=f"{name.capitalize()} (n={n_samples}, d={n_features}, "
        f"{len(np.unique(bunch.target))} classes)",
        X=X,
        y=bunch.target,
        data_norm=0.5 * math.sqrt(n_features),
        test_size=0.2,
        public=[
            f"Feature ranges: the Min/Max columns of the summary table in `load_{name}().DESCR`; "
            "each feature is mapped to [-0.5, 0.5] with `(x - (lo+hi)/2) / (hi - lo)` and "
            "clipped to it.",
            f"`data_norm = 0.5 * sqrt({n_features})`; the label set (`classes=`) is public.",
            "Split: stratified 80/20 `train_test_split(random_state=seed)` per seed.",
        ],
    )


def _digits():
    bunch = load_digits()
    # Pixels are counts in 0..16 (the data set's documentation): a fixed map to [-0.5, 0.5].
    X = bunch.data / 16.0 - 0.5
    n_samples, n_features = X.shape
    return Dataset(
        name="digits",
        title=f"Digits (n={n_samples}, d={n_features}, 10 classes)",
        X=X,
        y=bunch.target,
        data_norm=0.5 * math.sqrt(n_features),
        test_size=0.2,
        public=[
            "Pixel range 0..16 (the data set's documentation): `x / 16 - 0.5`; "
            f"`data_norm = 0.5 * sqrt({n_features}) = 4`; the label set 0..9 is public.",
            "Split: stratified 80/20 `train_test_split(random_state=seed)` per seed.",
        ],
    )


#: name -> loader; add a data set by adding a loader here.
DATASETS = {
    "breast_cancer": _breast_cancer,
    "synthetic_100k": _synthetic_100k,
}

#: Real data sets bundled with scikit-learn with more than two classes (no
#: download), scaled with documented ranges; not part of the binary benchmarks.
MULTICLASS_DATASETS = {
    "digits": _digits,
    "wine": lambda: _documented("wine", load_wine),
    "iris": lambda: _documented("iris", load_iris),
}


def load_dataset(name):
    """The :class:`Dataset` called ``name`` (see :data:`DATASETS` and :data:`MULTICLASS_DATASETS`)."""
    loader = DATASETS.get(name) or MULTICLASS_DATASETS.get(name)
    if loader is None:
        known = sorted(DATASETS) + sorted(MULTICLASS_DATASETS)
        raise ValueError(f"Unknown data set {name!r}; known: {known}.") from None
    return loader()
