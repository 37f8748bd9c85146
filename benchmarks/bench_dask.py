"""Fits on Dask arrays beyond the client's memory: fit time, peak client memory, accuracy.

A binary logistic problem with ``--features`` float32 features, chunk ``i``
a function of ``i`` alone, is either written to disk chunk by chunk
(``dask.array.to_npy_stack``: never whole in memory) and read back as a Dask
array of memory-mapped chunks (``da.from_npy_stack``), or, with
``--generate``, built where each chunk is computed (on the workers of a
``--scheduler distributed`` cluster, and kept there: the client never holds
a chunk).  Each measurement runs in its own process, so its peak resident
memory (``ru_maxrss``) is its own:

* ``dask``: ``DPLogisticRegression(solver="dp_newton")`` on the Dask array of
  ``--rows`` rows (threaded scheduler, or ``--scheduler distributed`` for a
  ``LocalCluster`` of worker processes of one thread each: the client's
  memory is then the client's and the scheduler's alone), with the number of
  passes over the data it makes, its CPU time in every process, and the peak
  client RSS when the fit returns; then, alternated in the same process, a
  gradient pass of the fit against bare NumPy passes (float32 with one and
  with two BLAS threads, float64 with one) over rows in the client's memory;
* ``dask-small`` and ``memory``: the same fit on the first ``--memory-rows``
  rows as a Dask array and as an in-memory NumPy array (same ``random_state``:
  the models must agree up to rounding);
* non-private scikit-learn on the in-memory rows, for reference accuracy.

Accuracy is measured on held-out rows.  ``--quick`` runs small sizes (a few
seconds).  Results: ``benchmarks/results/dask.md`` and
``benchmarks/results/dask_local_cluster.md``.

    python benchmarks/bench_dask.py                      # 1e7 x 50 (about 10 minutes here)
    python benchmarks/bench_dask.py --rows 4e6 --memory-rows 1e6 --scheduler distributed
    python benchmarks/bench_dask.py --rows 1e7 --memory-rows 0 --scheduler distributed \
        --generate --no-numpy                            # client memory of a 1e7-row fit
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


def _generated_block(block_info=None, *, d, part):
    location = block_info[None]["chunk-location"][0]
    rows = block_info[None]["chunk-shape"][0]
    return _chunk(location, rows, d)[part]


def generate(n_rows, d, chunk_rows):
    """X and y built chunk by chunk where they are computed (on the workers of a cluster).

    Chunk ``i`` is ``_chunk(i, ...)``, as in the files :func:`write_data`
    writes: the client never holds a chunk.
    """
    import dask.array as da

    sizes = tuple(min(chunk_rows, n_rows - s) for s in range(0, n_rows, chunk_rows))
    X = da.map_blocks(
        _generated_block,
        d=d,
        part=0,
        chunks=(sizes, (d,)),
        dtype=np.float32,
        meta=np.empty((0, 0), np.float32),
    )
    y = da.map_blocks(
        _generated_block, d=d, part=1, chunks=(sizes,), dtype=np.int8, meta=np.empty((0,), np.int8)
    )
    return X, y


def _memory_rows(rows, d, chunk_rows):
    """The first ``rows`` rows of the generated data set, in the client's memory."""
    parts = [_chunk(i, chunk_rows, d) for i in range(-(-rows // chunk_rows))]
    X = np.concatenate([p[0] for p in parts])[:rows]
    y = np.concatenate([p[1] for p in parts])[:rows]
    return np.ascontiguousarray(X), y


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


def _cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cluster_cpu(client):
    """CPU seconds used so far by this process (client and, for a LocalCluster, scheduler)
    and by every worker process."""
    own = _cpu_seconds()
    if client is None:
        return own
    return own + sum(client.run(_cpu_seconds).values())


def _numpy_pass(X, y, w, threads):
    """One bare gradient pass ``X.T @ (sigmoid(X @ w) - y)`` in X's dtype: (wall, CPU) seconds."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        cpu, start = _cpu_seconds(), time.perf_counter()
        z = X @ w
        X.T @ (1.0 / (1.0 + np.exp(-z)) - y).astype(X.dtype)
        return time.perf_counter() - start, _cpu_seconds() - cpu


def _passes_against_numpy(X, y, numpy_rows, client=None, repeats=3):
    """Gradient passes of a Dask fit against bare NumPy passes, alternated in one process.

    The Dask pass is the solver's (``DaskDesign.sum_over_chunks`` of the
    ``dp_newton`` gradient kernel on the bounded chunks, after the pass that
    bounds them): wall clock, and CPU time of every process it runs in (the
    client, the scheduler and the workers).  The NumPy pass is
    ``X.T @ f(X @ w)`` over the first ``numpy_rows`` rows in the client's
    memory, scaled to the Dask array's rows: float32 (the data's dtype) with
    one BLAS thread and with two (the cores the workers have), and float64
    with one.  Alternating them, one after the other, exposes both to the
    same load of a shared machine.  Returns the medians (seconds) and the
    ratios: wall clock against the faster float32 NumPy pass, CPU time
    against the one-thread float32 pass.
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
    scale = X.shape[0] / rows
    # A fresh copy: an array gathered from workers may be unaligned (no BLAS).
    X32 = np.array(X[:rows].compute(), order="C", copy=True)
    y32 = np.asarray(y[:rows].compute(), dtype=np.float32)
    X64, y64 = X32.astype(np.float64), y32.astype(np.float64)
    w32 = np.full(d, 0.01, dtype=np.float32)
    times = {key: [] for key in ("dask", "dask_cpu", "f32_1", "f32_2", "f64_1", "f32_1_cpu")}
    for _ in range(repeats):
        cpu, start = _cluster_cpu(client), time.perf_counter()
        data.sum_over_chunks(gradient)
        times["dask"].append(time.perf_counter() - start)
        times["dask_cpu"].append(_cluster_cpu(client) - cpu)
        wall, cpu = _numpy_pass(X32, y32, w32, 1)
        times["f32_1"].append(wall * scale)
        times["f32_1_cpu"].append(cpu * scale)
        times["f32_2"].append(_numpy_pass(X32, y32, w32, 2)[0] * scale)
        times["f64_1"].append(_numpy_pass(X64, y64, w32.astype(np.float64), 1)[0] * scale)
    med = {key: float(np.median(value)) for key, value in times.items()}
    numpy_pass = min(med["f32_1"], med["f32_2"])
    return dict(
        first=first,
        numpy_rows=rows,
        chunks=int(X.numblocks[0]),
        **med,
        numpy=numpy_pass,
        ratio=med["dask"] / numpy_pass,
        cpu_ratio=med["dask_cpu"] / med["f32_1_cpu"],
    )


def _start_scheduler(args):
    """``(client, cluster)`` for ``--scheduler distributed``, else ``(None, None)``."""
    import dask

    if args.scheduler != "distributed":
        dask.config.set(scheduler="threads", num_workers=args.workers)
        return None, None
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        host="127.0.0.1",
    )
    return Client(cluster), cluster


def _data(args, rows, client):
    """The Dask arrays of the first ``rows`` rows: generated on the workers, or read from disk."""
    if not args.generate:
        return load(args.path, rows)
    X, y = generate(int(args.full_rows), args.features, args.chunk_rows)
    X, y = X[:rows], y[:rows]
    if client is not None:
        # Computed and kept on the workers, as data loaded there would be.
        from distributed import wait

        X, y = client.persist([X, y])
        wait([X, y])
    return X, y


def part_dask(args, rows):
    client, cluster = _start_scheduler(args)
    X, y = _data(args, rows, client)
    ready_mb = _peak_mb()
    cpu, start = _cluster_cpu(client), time.perf_counter()
    model, passes, pass_seconds = _count_passes(lambda: _estimator().fit(X, y))
    seconds = time.perf_counter() - start
    fit_cpu = _cluster_cpu(client) - cpu
    fit_peak_mb = _peak_mb()  # before any test or NumPy rows reach the client
    X_test, y_test = _chunk(10**6, args.test_rows, args.features)
    accuracy = float(np.mean(model.predict(X_test) == y_test))
    del X_test, y_test
    passes_against_numpy = None
    if not args.no_numpy:
        passes_against_numpy = _passes_against_numpy(X, y, args.numpy_rows, client)
    if client is not None:
        client.close()
        cluster.close()
    return dict(
        rows=int(X.shape[0]),
        seconds=seconds,
        cpu_seconds=fit_cpu,
        passes=passes,
        pass_seconds=pass_seconds,
        passes_against_numpy=passes_against_numpy,
        ready_mb=ready_mb,
        fit_peak_mb=fit_peak_mb,
        peak_mb=_peak_mb(),
        accuracy=accuracy,
        coef=model.coef_.ravel().tolist(),
        intercept=float(model.intercept_[0]),
        scheduler=args.scheduler,
    )


def part_memory(args, rows):
    from sklearn.linear_model import LogisticRegression

    if args.generate:
        X, y = _memory_rows(rows, args.features, args.chunk_rows)
    else:
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
        "--chunk-rows",
        str(args.chunk_rows),
        "--full-rows",
        str(int(args.rows)),
    ]
    command += ["--generate"] if args.generate else []
    command += ["--no-numpy"] if args.no_numpy else []
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _pass_line(big, numpy_pass):
    """The solver's passes of the large Dask fit against a bare NumPy pass over as many rows."""
    solver = big["pass_seconds"]["solver"]
    if len(solver) < 2:
        return f"* The solver made {len(solver)} pass(es) over the chunks."
    later = float(np.median(solver[1:]))
    others = [round(t, 2) for t in big["pass_seconds"]["all"]]
    return (
        f"* The solver's passes over the {big['rows']:.3g} rows (wall clock): the first "
        f"{solver[0]:.2f} s (it bounds each chunk once, keeps its factors on the workers, and "
        f"sums the Hessian bound), the {len(solver) - 1} later ones {later:.2f} s each (median; "
        f"gradient sums from the kept factors): {later / numpy_pass:.2f}x a bare float32 NumPy "
        f"pass over as many rows ({numpy_pass:.2f} s). Every reduction of the fit, in order "
        f"(s): {others}. CPU time of the whole fit, client, scheduler and workers: "
        f"{big['cpu_seconds']:.1f} s."
    )


def _alternated_lines(big, args):
    p = big["passes_against_numpy"]
    return [
        f"* Alternated in one process ({args.scheduler} scheduler, {args.workers} workers of "
        f"one thread, {p['chunks']} chunks), 3 times each, medians: a gradient pass of the Dask "
        f"fit over the {big['rows']:.3g} rows {p['dask']:.2f} s wall clock, {p['dask_cpu']:.2f} "
        f"s CPU (client, scheduler and workers; its first pass, which bounds the chunks, "
        f"{p['first']:.2f} s). A bare NumPy pass (X @ w, then X.T @ r) over as many rows "
        f"(scaled from {p['numpy_rows']:.3g} rows in memory): float32 {p['f32_1']:.2f} s with one "
        f"BLAS thread ({p['f32_1_cpu']:.2f} s CPU), {p['f32_2']:.2f} s with two; float64 "
        f"{p['f64_1']:.2f} s with one.",
        f"* **{p['ratio']:.2f}x** the faster float32 NumPy pass in wall clock (the same two "
        f"cores); **{p['cpu_ratio']:.2f}x** its CPU time (one thread).",
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument(
        "--memory-rows",
        type=float,
        default=2e6,
        help="rows of the Dask and in-memory fits compared (0: the large fit only)",
    )
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
    parser.add_argument(
        "--generate",
        action="store_true",
        help="generate the chunks where they are computed (the workers), not on disk",
    )
    parser.add_argument("--no-numpy", action="store_true", help="skip the alternated NumPy passes")
    parser.add_argument("--quick", action="store_true", help="small sizes, a few seconds")
    parser.add_argument("--output", help="write the markdown table here")
    parser.add_argument("--part", help=argparse.SUPPRESS)
    parser.add_argument("--path", help=argparse.SUPPRESS)
    parser.add_argument("--full-rows", type=float, help=argparse.SUPPRESS)
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
    write_seconds = None
    small = memory = None
    try:
        if not args.generate:
            start = time.perf_counter()
            write_data(directory, rows, args.features, args.chunk_rows)
            write_seconds = time.perf_counter() - start
        big = _run_part(args, "dask", rows)
        if memory_rows:
            small = _run_part(args, "dask", memory_rows)
            memory = _run_part(args, "memory", memory_rows)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    gib = rows * args.features * 4 / 2**30
    source = (
        f"generated on the workers, chunk by chunk, and kept there ({gib:.2f} GiB)"
        if args.generate
        else f"{gib:.2f} GiB on disk, written chunk by chunk in {write_seconds:.0f} s"
    )
    lines = [
        f"Data: {rows:.3g} x {args.features} float32 ({source}; chunks of {args.chunk_rows} "
        f"rows), held-out {args.test_rows} rows; DPLogisticRegression(solver='dp_newton', "
        f"epsilon={EPSILON}, delta={DELTA:g}, classes=[0, 1], data_norm='auto'); scheduler: "
        f"{args.scheduler}, {args.workers} workers.",
        "",
        "| fit | rows | fit time (s) | passes over X | time per pass (s) | peak client RSS (MB) "
        "| test accuracy |",
        "|---|---|---|---|---|---|---|",
    ]
    for run in (big, small):
        if run is not None:
            lines.append(
                f"| Dask | {run['rows']:.3g} | {run['seconds']:.1f} | {run['passes']} | "
                f"{run['seconds'] / run['passes']:.2f} | {run['fit_peak_mb']:.0f} (data ready: "
                f"{run['ready_mb']:.0f}) | {run['accuracy']:.4f} |"
            )
    if memory is not None:
        lines += [
            f"| in memory (NumPy) | {memory['rows']:.3g} | {memory['seconds']:.1f} | - | - | "
            f"{memory['peak_mb']:.0f} (data loaded: {memory['load_peak_mb']:.0f}) | "
            f"{memory['accuracy']:.4f} |",
            f"| scikit-learn, non-private | {memory['rows']:.3g} | "
            f"{memory['sklearn_seconds']:.1f} | - | - | - | {memory['sklearn_accuracy']:.4f} |",
        ]
    lines.append("")
    if memory is not None:
        difference = float(np.max(np.abs(np.subtract(small["coef"], memory["coef"]))))
        scale = float(np.max(np.abs(memory["coef"])))
        lines.append(
            f"* Dask vs in-memory fit on the same {memory['rows']:.3g} rows, same random_state: "
            f"max |coef difference| = {difference:.2e} (coefficients up to {scale:.2f})."
        )
    if big["passes_against_numpy"] is not None:
        p = big["passes_against_numpy"]
        lines.append(_pass_line(big, p["numpy"]))
        lines += _alternated_lines(big, args)
    else:
        lines.append(
            f"* CPU time of the whole fit, client, scheduler and workers: "
            f"{big['cpu_seconds']:.1f} s; reductions, in order (s): "
            f"{[round(t, 2) for t in big['pass_seconds']['all']]}."
        )
    text = "\n".join(lines)
    print(text)
    if args.output:
        with open(args.output, "w") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    main()
