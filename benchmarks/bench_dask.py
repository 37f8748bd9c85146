"""Fits on Dask arrays beyond the client's memory: fit time, peak client memory, accuracy.

A binary logistic problem with ``--features`` float32 features is written to
disk chunk by chunk (``dask.array.to_npy_stack``: never whole in memory) and
read back as a Dask array of memory-mapped chunks (``da.from_npy_stack``).
Each measurement runs in its own process, so its peak resident memory
(``ru_maxrss``) is its own:

* ``dask``: ``DPLogisticRegression(solver="dp_newton")`` on the Dask array of
  ``--rows`` rows (threaded scheduler, or ``--scheduler distributed`` for a
  ``LocalCluster`` of worker processes: the client's memory is then the
  client's alone), with the number of passes over the data it makes;
* ``dask-small`` and ``memory``: the same fit on the first ``--memory-rows``
  rows as a Dask array and as an in-memory NumPy array (same ``random_state``:
  the models must agree up to rounding), and a bare NumPy pass
  (``X.T @ f(X @ w)``, what one gradient costs) over those rows in memory;
* non-private scikit-learn on the in-memory rows, for reference accuracy.

Accuracy is measured on held-out rows.  ``--quick`` runs small sizes (a few
seconds).  Results: ``benchmarks/results/dask.md``.

    python benchmarks/bench_dask.py                      # 1e7 x 50 (about 10 minutes here)
    python benchmarks/bench_dask.py --rows 4000000       # smaller
    python benchmarks/bench_dask.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EPSILON, DELTA = 1.0, 1e-8
SEED = 0


def _weights(d):
    return np.random.default_rng(12345).normal(size=d) / np.sqrt(d)


def _chunk(index, rows, d):
    """Chunk ``index`` of the data set: ``(X float32, y in {0, 1})``, a function of its index."""
    rng = np.random.default_rng([SEED, index])
    X = rng.standard_normal((rows, d), dtype=np.float32)
    X *= np.float32(0.5)
    logits = 2.0 * (X @ _weights(d).astype(np.float32)) + 0.3
    y = (rng.random(rows) < 1.0 / (1.0 + np.exp(-logits))).astype(np.int8)
    return X, y


def write_data(path, n_rows, d, chunk_rows):
    """Write X and y chunk by chunk as npy stacks under ``path`` (one chunk in memory at a time)."""
    import dask
    import dask.array as da

    sizes = [min(chunk_rows, n_rows - s) for s in range(0, n_rows, chunk_rows)]
    parts = [dask.delayed(_chunk, nout=2)(i, r, d) for i, r in enumerate(sizes)]
    X = da.concatenate(
        [da.from_delayed(p[0], shape=(r, d), dtype=np.float32) for p, r in zip(parts, sizes)]
    )
    y = da.concatenate(
        [da.from_delayed(p[1], shape=(r,), dtype=np.int8) for p, r in zip(parts, sizes)]
    )
    with dask.config.set(scheduler="threads"):
        da.to_npy_stack(os.path.join(path, "X"), X, axis=0)
        da.to_npy_stack(os.path.join(path, "y"), y, axis=0)


def load(path, rows=None):
    import dask.array as da

    X = da.from_npy_stack(os.path.join(path, "X"), mmap_mode="r")
    y = da.from_npy_stack(os.path.join(path, "y"), mmap_mode="r")
    if rows is not None:
        X, y = X[:rows], y[:rows]
    return X, y


def _estimator():
    from sklearn_dp import DPLogisticRegression

    return DPLogisticRegression(
        epsilon=EPSILON, delta=DELTA, solver="dp_newton", classes=[0, 1], random_state=SEED
    )


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _count_passes(fit):
    """Run ``fit()`` counting the passes over the data (reductions over all chunks).

    Returns ``(result, passes, seconds)``: ``seconds`` lists the wall-clock
    time of each reduction, in order (the schema pass is counted, not timed).
    """
    from sklearn_dp import _dask

    calls = {"passes": 0}
    seconds, solver_seconds = [], []
    original = _dask.reduce_chunks
    original_sum = _dask.DaskDesign.sum_over_chunks

    def timed_sum(self, kernel):
        start = time.perf_counter()
        try:
            return original_sum(self, kernel)
        finally:
            solver_seconds.append(time.perf_counter() - start)

    def counted(*args, **kwargs):
        calls["passes"] += 1
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds.append(time.perf_counter() - start)

    _dask.reduce_chunks = counted
    original_check = _dask.validate_fit_data

    def validate(*args, **kwargs):
        calls["passes"] += 1  # the schema pass (finite values, labels in classes)
        return original_check(*args, **kwargs)

    _dask.validate_fit_data = validate
    _dask.DaskDesign.sum_over_chunks = timed_sum
    try:
        result = fit()
    finally:
        _dask.reduce_chunks = original
        _dask.validate_fit_data = original_check
        _dask.DaskDesign.sum_over_chunks = original_sum
    return result, calls["passes"], dict(all=seconds, solver=solver_seconds)


def _passes_against_numpy(X, y, numpy_rows, repeats=3):
    """Gradient passes of a Dask fit against bare NumPy passes, alternated in one process.

    The Dask pass is the solver's (``DaskDesign.sum_over_chunks`` of the
    ``dp_newton`` gradient kernel on the bounded chunks, after the pass that
    bounds them); the NumPy pass is ``X.T @ f(X @ w)`` in float32 over the
    first ``numpy_rows`` rows in the client's memory, scaled to the Dask
    array's rows.  Alternating them, one after the other, exposes both to the
    same load of a shared machine.  Returns the medians (seconds) and the
    ratio.
    """
    from sklearn_dp import _dask
    from sklearn_dp._clipped_sums import newton_sums
    from sklearn_dp._losses import get_loss

    loss = get_loss("log_loss")
    d = X.shape[1]
    labels = y.map_blocks(lambda b: np.where(b == 1, 1.0, -1.0), dtype=np.float64)
    data = _dask.bound_dask_data(X, labels, fit_intercept=True, data_norm=2.0)
    W = np.full((d + 1, 1), 0.01)

    def gradient(part):
        g, _ = newton_sums(part.design, part.y, W, loss, 1.0, part.row_norms, hessian=False)
        return g

    start = time.perf_counter()
    data.sum_over_chunks(gradient)  # bounds the chunks, keeps their factors
    first = time.perf_counter() - start
    rows = min(int(numpy_rows), int(X.shape[0]))
    # A fresh copy: an array gathered from workers may be unaligned (no BLAS).
    X_memory = np.array(X[:rows].compute(), order="C", copy=True)
    y_memory = np.asarray(y[:rows].compute(), dtype=np.float32)
    w = np.full(d, 0.01, dtype=np.float32)
    dask_seconds, numpy_seconds = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        data.sum_over_chunks(gradient)
        dask_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        z = X_memory @ w
        X_memory.T @ (1.0 / (1.0 + np.exp(-z)) - y_memory).astype(np.float32)
        numpy_seconds.append((time.perf_counter() - start) * X.shape[0] / rows)
    dask_pass, numpy_pass = float(np.median(dask_seconds)), float(np.median(numpy_seconds))
    return dict(first=first, dask=dask_pass, numpy=numpy_pass, ratio=dask_pass / numpy_pass)


def part_dask(args, rows):
    import dask

    X, y = load(args.path, rows)
    client = cluster = None
    if args.scheduler == "distributed":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
        )
        client = Client(cluster)
    else:
        dask.config.set(scheduler="threads", num_workers=args.workers)
    start = time.perf_counter()
    model, passes, pass_seconds = _count_passes(lambda: _estimator().fit(X, y))
    seconds = time.perf_counter() - start
    X_test, y_test = _chunk(10**6, args.test_rows, args.features)
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    passes_against_numpy = _passes_against_numpy(X, y, args.numpy_rows)
    if client is not None:
        client.close()
        cluster.close()
    return dict(
        rows=int(X.shape[0]),
        seconds=seconds,
        passes=passes,
        pass_seconds=pass_seconds,
        passes_against_numpy=passes_against_numpy,
        peak_mb=_peak_mb(),
        accuracy=accuracy,
        coef=model.coef_.ravel().tolist(),
        intercept=float(model.intercept_[0]),
        scheduler=args.scheduler,
    )


def part_memory(args, rows):
    from sklearn.linear_model import LogisticRegression

    X, y = load(args.path, rows)
    X = np.ascontiguousarray(X.compute())
    y = np.asarray(y.compute())
    load_mb = _peak_mb()
    start = time.perf_counter()
    model = _estimator().fit(X, y)
    seconds = time.perf_counter() - start
    # One bare gradient pass in NumPy: scores, derivative, X^T (float32 data).
    w = np.full(X.shape[1], 0.01, dtype=np.float32)
    start = time.perf_counter()
    for _ in range(3):
        z = X @ w
        g = X.T @ (1.0 / (1.0 + np.exp(-z)) - y).astype(np.float32)
    numpy_pass = (time.perf_counter() - start) / 3
    del z, g
    X_test, y_test = _chunk(10**6, args.test_rows, args.features)
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    start = time.perf_counter()
    reference = LogisticRegression(C=1e4, max_iter=200).fit(X, y)
    sk_seconds = time.perf_counter() - start
    return dict(
        rows=int(X.shape[0]),
        seconds=seconds,
        peak_mb=_peak_mb(),
        load_peak_mb=load_mb,
        accuracy=accuracy,
        numpy_pass=numpy_pass,
        sklearn_accuracy=float(reference.score(X_test, y_test)),
        sklearn_seconds=sk_seconds,
        coef=model.coef_.ravel().tolist(),
        intercept=float(model.intercept_[0]),
    )


def _run_part(args, part, rows):
    command = [
        sys.executable,
        os.path.abspath(__file__),
        "--part",
        part,
        "--path",
        args.path,
        "--rows",
        str(rows),
        "--features",
        str(args.features),
        "--workers",
        str(args.workers),
        "--scheduler",
        args.scheduler,
        "--test-rows",
        str(args.test_rows),
        "--numpy-rows",
        str(args.numpy_rows),
    ]
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pass_line(big, memory, rows):
    """The solver's passes of the large Dask fit against a bare NumPy pass over as many rows."""
    solver = big["pass_seconds"]["solver"]
    numpy_pass = memory["numpy_pass"] * rows / memory["rows"]
    if len(solver) < 2:
        return f"* The solver made {len(solver)} pass(es) over the chunks."
    later = float(np.median(solver[1:]))
    others = [round(t, 2) for t in big["pass_seconds"]["all"]]
    return (
        f"* The solver's passes over the {rows:.3g} rows (wall clock): the first "
        f"{solver[0]:.2f} s (it bounds each chunk once, keeps its factors on the workers, and "
        f"sums the Hessian bound), the {len(solver) - 1} later ones {later:.2f} s each (median; "
        f"gradient sums from the kept factors): {later / numpy_pass:.2f}x a bare NumPy pass "
        f"over as many rows ({numpy_pass:.2f} s, scaled from the in-memory rows). Every "
        f"reduction of the fit, in order (s): {others}."
    )


def _alternated_line(big, args):
    p = big["passes_against_numpy"]
    return (
        f"* Alternated in one process ({args.scheduler} scheduler, {args.workers} workers), "
        f"3 times each: a gradient pass of the Dask fit over the {big['rows']:.3g} rows "
        f"{p['dask']:.2f} s (median; its first pass, which bounds the chunks, {p['first']:.2f} "
        f"s) against a bare NumPy pass (float32, X @ w and X.T @ r) over as many rows "
        f"{p['numpy']:.2f} s (scaled from {min(args.numpy_rows, big['rows']):.3g} rows in "
        f"memory): **{p['ratio']:.2f}x** a NumPy pass per pass."
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--memory-rows", type=float, default=2e6)
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--chunk-rows", type=int, default=250_000)
    parser.add_argument("--test-rows", type=int, default=200_000)
    parser.add_argument(
        "--numpy-rows",
        type=float,
        default=1e6,
        help="rows of the in-memory NumPy pass that Dask passes are compared with",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--scheduler", choices=("threads", "distributed"), default="threads")
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--output", help="write the markdown table here")
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        rows = int(args.rows)
        result = part_dask(args, rows) if args.part == "dask" else part_memory(args, rows)
        print(json.dumps(result))
        return
    if args.quick:
        args.rows, args.memory_rows, args.chunk_rows, args.test_rows = 2e5, 1e5, 25_000, 20_000
        args.numpy_rows = 1e5
    rows, memory_rows = int(args.rows), int(min(args.memory_rows, args.rows))
    directory = tempfile.mkdtemp(prefix="bench_dask_")
    args.path = directory
    try:
        start = time.perf_counter()
        write_data(directory, rows, args.features, args.chunk_rows)
        write_seconds = time.perf_counter() - start
        big = _run_part(args, "dask", rows)
        small = _run_part(args, "dask", memory_rows)
        memory = _run_part(args, "memory", memory_rows)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    gib = rows * args.features * 4 / 2**30
    difference = float(np.max(np.abs(np.subtract(small["coef"], memory["coef"]))))
    scale = float(np.max(np.abs(memory["coef"])))
    lines = [
        f"Data: {rows:.3g} x {args.features} float32 ({gib:.2f} GiB on disk, written chunk by "
        f"chunk in {write_seconds:.0f} s; chunks of {args.chunk_rows} rows), held-out "
        f"{args.test_rows} rows; DPLogisticRegression(solver='dp_newton', epsilon={EPSILON}, "
        f"delta={DELTA:g}, classes=[0, 1], data_norm='auto'); scheduler: {args.scheduler}, "
        f"{args.workers} workers.",
        "",
        "| fit | rows | fit time (s) | passes over X | time per pass (s) | peak client RSS (MB) "
        "| test accuracy |",
        "|---|---|---|---|---|---|---|",
        f"| Dask | {big['rows']:.3g} | {big['seconds']:.1f} | {big['passes']} | "
        f"{big['seconds'] / big['passes']:.2f} | {big['peak_mb']:.0f} | {big['accuracy']:.4f} |",
        f"| Dask | {small['rows']:.3g} | {small['seconds']:.1f} | {small['passes']} | "
        f"{small['seconds'] / small['passes']:.2f} | {small['peak_mb']:.0f} | "
        f"{small['accuracy']:.4f} |",
        f"| in memory (NumPy) | {memory['rows']:.3g} | {memory['seconds']:.1f} | - | - | "
        f"{memory['peak_mb']:.0f} (data loaded: {memory['load_peak_mb']:.0f}) | "
        f"{memory['accuracy']:.4f} |",
        f"| scikit-learn, non-private | {memory['rows']:.3g} | {memory['sklearn_seconds']:.1f} | "
        f"- | - | - | {memory['sklearn_accuracy']:.4f} |",
        "",
        f"* Dask vs in-memory fit on the same {memory['rows']:.3g} rows, same random_state: "
        f"max |coef difference| = {difference:.2e} (coefficients up to {scale:.2f}).",
        _pass_line(big, memory, rows),
        _alternated_line(big, args),
        f"* A bare NumPy gradient pass (X @ w, X.T @ r, float32) over {memory['rows']:.3g} "
        f"in-memory rows: {memory['numpy_pass']:.3f} s, i.e. "
        f"{memory['numpy_pass'] * rows / memory['rows']:.2f} s scaled to {rows:.3g} rows; the "
        f"Dask fit's time per pass at {rows:.3g} rows is "
        f"{big['seconds'] / big['passes'] / (memory['numpy_pass'] * rows / memory['rows']):.2f}x "
        "that (fit time over passes: it also counts the noise calibration, the bound releases and the "
        "first pass, which bounds the chunks and sums the Gram matrix).",
    ]
    text = "\n".join(lines)
    print(text)
    if args.output:
        with open(args.output, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
