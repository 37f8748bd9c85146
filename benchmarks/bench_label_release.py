"""The label set released without ``classes=``: classes kept and absent labels released.

A classifier fitted without ``classes=`` releases the labels present with
noisy counts (:func:`sklearn_dp._labels.release_labels`): small integer
labels (``-1..31``) are public candidates whose noisy counts are released
whether present or not, other labels take a thresholded histogram whose
threshold (``1 + log(1 / (2 delta)) / epsilon`` rows) pays for privacy.  For
each table's training labels and each fit epsilon, the label release at the
estimators' share (:func:`sklearn_dp._labels.label_epsilon`, half of
``delta=1e-5``) is repeated and counted:

* **kept**: the share of releases that keep every class present;
* **absent released**: the share that also release a label no row holds.

The same labels written as strings take the thresholded path alone (the
release before candidates existed): the column ``thresholded path``.  Labels
only, no model: the fits that need the classes raise or lose a class where
``kept`` is low.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
from _common import RESULTS_DIR, environment, md_table, write_report
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.model_selection import train_test_split

from sklearn_dp._labels import LABEL_DELTA_FRACTION, label_epsilon, release_labels

DELTA = 1e-5


def tables():
    """Training labels (a stratified 70% split, as the raw-tables benchmark uses)."""
    out = {}
    for name, load in (
        ("iris", load_iris),
        ("wine", load_wine),
        ("breast_cancer", load_breast_cancer),
        ("digits", load_digits),
    ):
        X, y = load(return_X_y=True)
        out[name] = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)[2]
    out["iris, labels 1..3"] = out["iris"] + 1
    out["breast_cancer, labels -1/+1"] = np.where(out["breast_cancer"] == 1, 1, -1)
    out["650 rows, 15% minority"] = np.repeat([0, 1], [552, 98])
    return out


def rates(y, epsilon, repeats, rng):
    """(kept, absent released) over ``repeats`` label releases at the fit's ``epsilon``."""
    present = set(np.unique(y).tolist())
    kept = absent = 0
    for _ in range(repeats):
        released = set(
            release_labels(y, label_epsilon(epsilon), LABEL_DELTA_FRACTION * DELTA, rng)[0].tolist()
        )
        kept += present <= released
        absent += bool(released - present)
    return kept / repeats, absent / repeats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2000, help="releases per cell")
    parser.add_argument("--epsilons", nargs="*", type=float, default=[0.3, 0.5, 1.0])
    parser.add_argument("--output", default=None, help="report path")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    rows = []
    for name, y in tables().items():
        sizes = np.unique(y, return_counts=True)[1]
        as_text = np.array([f"class {v}" for v in y])
        for epsilon in args.epsilons:
            kept, absent = rates(y, epsilon, args.repeats, rng)
            text_kept, text_absent = rates(as_text, epsilon, args.repeats, rng)
            rows.append(
                [
                    f"{name} ({sizes.min()}-{sizes.max()} rows a class)",
                    f"{epsilon:g}",
                    f"{label_epsilon(epsilon):.2f}",
                    f"{kept:.3f}",
                    f"{absent:.3f}",
                    f"{text_kept:.3f}",
                    f"{text_absent:.3f}",
                ]
            )
    command = "PYTHONPATH=. python benchmarks/bench_label_release.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = "\n".join(
        [
            "# The label set released without classes=: classes kept, absent labels released",
            "",
            f"Command: `{command.strip()}`  ",
            f"{environment()}  ",
            f"{args.repeats} releases per cell; delta=1e-5; {time.perf_counter() - start:.0f} s.",
            "",
            "`kept`: every class present released; `absent`: a label no row holds released. "
            "`thresholded path`: the same labels as strings (no public candidates).",
            "",
            md_table(
                [
                    "training labels",
                    "fit epsilon",
                    "label epsilon",
                    "kept",
                    "absent",
                    "thresholded path: kept",
                    "thresholded path: absent",
                ],
                rows,
            ),
            "",
        ]
    )
    print(text)
    path = args.output or RESULTS_DIR / "label_release.md"
    write_report(path, text)


if __name__ == "__main__":
    main()
