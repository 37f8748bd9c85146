"""The exact samplers of the noise gateway, against an earlier version of them, back to back.

Loads ``sklearn_dp/_exact_sampling.py`` as it was at a git revision
(``--baseline``, default ``main``) beside the working tree's, and times both
in the same process, alternately, in CPU time (one BLAS thread): the
discrete Gaussian and the floored Laplace at 10 to 100,000 entries (the
secure ChaCha20 generator of every private fit, and numpy's float normal for
scale), then three fits with the gateway's samplers switched between the two
versions: one 10,000-entry Gaussian release, ``DPLasso(solver="dp_cd")`` on
10,000 x 200 and ``DPLogisticRegression`` on a CSR matrix of 100,000 x
10,000 at density 1e-3.  Also counts the random words each version draws
per entry.

Usage::

    PYTHONPATH=. python benchmarks/bench_exact_sampling.py            # ~3 min on a quiet machine
    PYTHONPATH=. python benchmarks/bench_exact_sampling.py --quick    # fewer repeats, no CSR fit

Writes ``benchmarks/results/exact_sampling.md`` (``exact_sampling_quick.md``
with ``--quick``).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import RESULTS_DIR, environment, log, md_table, write_report

from sklearn_dp import DPLasso, DPLogisticRegression, _exact_sampling, _noise
from sklearn_dp._random import secure_generator

ROOT = Path(__file__).resolve().parent.parent
# The names the gateway imports from the samplers' module.
GATEWAY_NAMES = (
    "_Bits",
    "_sample_gibbs",
    "sample_discrete_gaussian",
    "sample_floored_l2_laplace",
    "sample_floored_laplace",
    "sample_rounded_gaussian",
)


def load_baseline(revision):
    source = subprocess.run(
        ["git", "show", f"{revision}:sklearn_dp/_exact_sampling.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "baseline_exact_sampling.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("baseline_exact_sampling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def use_samplers(module):
    for name in GATEWAY_NAMES:
        setattr(_noise, name, getattr(module, name))


def alternate(functions, repeats):
    """CPU seconds per call of each function, called in turn ``repeats`` times."""
    totals = dict.fromkeys(functions, 0.0)
    for _ in range(repeats):
        for name, function in functions.items():
            start = time.process_time()
            function()
            totals[name] += time.process_time() - start
    return {name: total / repeats for name, total in totals.items()}


class CountingGenerator:
    """Counts the 62-bit words drawn through ``integers``."""

    def __init__(self):
        self.rng = np.random.default_rng(0)
        self.words = 0

    def integers(self, low, high, size):
        self.words += int(np.prod(size))
        return self.rng.integers(low, high, size=size)


def sampler_rows(baseline, quick):
    rows = []
    generator = secure_generator()
    for sampler in ("sample_discrete_gaussian", "sample_floored_laplace"):
        for size in (10, 100, 1_000, 10_000, 100_000):
            repeats = max(3, (20_000 if quick else 200_000) // size)
            times = alternate(
                {
                    "before": lambda m=baseline: getattr(m, sampler)(generator, 2**20, size),
                    "after": lambda: getattr(_exact_sampling, sampler)(generator, 2**20, size),
                    "float": lambda: generator.normal(0.0, 2.0**20, size),
                },
                repeats,
            )
            log(f"{sampler} {size}: {times}")
            rows.append(
                [
                    sampler,
                    f"{size:,}",
                    f"{times['before'] / size * 1e6:.3f}",
                    f"{times['after'] / size * 1e6:.3f}",
                    f"{times['before'] / times['after']:.1f}",
                    f"{times['float'] / size * 1e6:.4f}",
                ]
            )
    return rows


def word_rows(baseline):
    rows = []
    for sampler in (
        "sample_discrete_gaussian",
        "sample_floored_laplace",
        "sample_rounded_gaussian",
    ):
        counts = []
        for module in (baseline, _exact_sampling):
            counting = CountingGenerator()
            getattr(module, sampler)(counting, 2**20, 100_000)
            counts.append(counting.words / 100_000)
        rows.append([sampler, f"{counts[0]:.2f}", f"{counts[1]:.2f}"])
    return rows


def fit_rows(baseline, quick):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((10_000, 200))
    y = X[:, :5].sum(axis=1) + rng.standard_normal(10_000)
    generator = secure_generator()
    fits = {
        "one Gaussian release of 10,000 entries": lambda: _noise.gaussian(
            np.zeros(10_000), sensitivity=1.0, noise_std=1.0, rng=generator
        ),
        "DPLasso dp_cd, 10,000 x 200": lambda: DPLasso(epsilon=1.0, solver="dp_cd").fit(X, y),
    }
    if not quick:
        X_sparse = sp.random(100_000, 10_000, density=1e-3, format="csr", random_state=0)
        y_sparse = (X_sparse @ rng.standard_normal(10_000) > 0).astype(int)
        fits["DPLogisticRegression, CSR 100,000 x 10,000, density 1e-3"] = lambda: (
            DPLogisticRegression(epsilon=1.0).fit(X_sparse, y_sparse)
        )
    rows = []
    for name, fit in fits.items():
        repeats = 20 if name.startswith("one") else (2 if quick else 3)

        def before(fit=fit):
            use_samplers(baseline)
            fit()

        def after(fit=fit):
            use_samplers(_exact_sampling)
            fit()

        times = alternate({"before": before, "after": after}, repeats)
        use_samplers(_exact_sampling)
        log(f"{name}: {times}")
        rows.append(
            [
                name,
                f"{times['before'] * 1e3:.1f}",
                f"{times['after'] * 1e3:.1f}",
                f"{times['before'] / times['after']:.2f}",
            ]
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="main", help="git revision to compare with")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no CSR fit")
    parser.add_argument("--output", default=None, help="report path")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    baseline = load_baseline(args.baseline)
    load = os.getloadavg()
    samplers = sampler_rows(baseline, args.quick)
    words = word_rows(baseline)
    fits = fit_rows(baseline, args.quick)
    report = "\n\n".join(
        [
            "# Exact samplers: before and after, back to back",
            f"Before: `sklearn_dp/_exact_sampling.py` at `{args.baseline}`; after: the working "
            "tree. CPU time, one thread, the two versions called alternately in one process "
            f"(load average {load[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end). "
            f"{environment()}",
            "## Per entry (microseconds), scale 2**20 steps, ChaCha20 generator",
            md_table(
                ["sampler", "entries", "before", "after", "speed-up", "numpy float normal"],
                samplers,
            ),
            "## Random 62-bit words drawn per entry (100,000 entries)",
            md_table(["sampler", "before", "after"], words),
            "## Fits and releases (milliseconds of CPU time, whole fit)",
            md_table(["what", "before", "after", "speed-up"], fits),
            "Reproduce: `OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "
            "PYTHONPATH=. python benchmarks/bench_exact_sampling.py"
            + (" --quick" if args.quick else "")
            + "`",
        ]
    )
    name = "exact_sampling_quick.md" if args.quick else "exact_sampling.md"
    path = write_report(args.output or RESULTS_DIR / name, report + "\n")
    print(report)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
