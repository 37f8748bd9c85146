"""Every solver at its defaults, on five data sets, at every epsilon.

One command, one run, one report::

    PYTHONPATH=. python benchmarks/bench_solvers.py --threads 1          # 3 seeds (default)
    PYTHONPATH=. python benchmarks/bench_solvers.py --quick --threads 1  # 1 seed on the large sets
    PYTHONPATH=. python benchmarks/bench_solvers.py --seeds 5 --large-seeds 3
    PYTHONPATH=. python benchmarks/bench_solvers.py --datasets diabetes --solvers dp_gd,dp_cd

For every data set, every estimator that fits it, and EVERY registered solver whose loss
the estimator uses (read from ``sklearn_dp.solvers.SOLVERS``), the estimator is fitted with
all hyper-parameters at their defaults (only the public data bounds are given) at epsilon in
{0.1, 0.5, 1, 2, 5, inf} (delta = 1e-5; ``inf`` is the same solver without noise).  Beside
them: the non-private scikit-learn estimator of the same problem and the trivial predictor
(the majority class of the training labels / their mean).  A configuration the estimator
refuses before any spend (a public check) is listed with its message.

Data sets (all public-scaled, ``benchmarks/_datasets.py``):

* ``breast_cancer``: 569 x 30, features mapped to [-0.5, 0.5] with the documented ranges;
* ``digits``: digits 0 vs rest (binary), 1797 x 64, pixels ``x / 16 - 0.5``;
* ``classification_100k``: ``make_classification`` with 100000 training rows, d = 100;
* ``diabetes``: 442 x 10, scikit-learn's scaled features times ``sqrt(442) / 3`` clipped to
  [-1, 1], labels centred on the middle of their documented range 25..346;
* ``sparse_regression``: 30000 training rows, d = 30, entries uniform in [-1, 1], five
  nonzero true coefficients.

Reported per cell: the median test accuracy (R^2 for regression) over the seeds (each seed
draws a new split and new noise); per solver the median fit time at epsilon = 1 and its ratio
to ``dp_gd``'s; the targets: at epsilon = 5 at least trivial + 70% of the gap to
non-private, and at epsilon = inf within 1% (relative) of the non-private score of the same
problem (the score is the proxy here; tests/test_default_convergence.py checks the objective
gap).  Fits longer than ``--timeout`` seconds are stopped and the solver's remaining cells on
that data set are skipped (marked ``timeout``).

Results: ``benchmarks/results/solvers.md`` (``solvers_quick.md`` with ``--quick``,
``solvers_partial.md`` with ``--solvers``) and, with
``--docs``, ``docs/solvers/table.md``.  ``--docs`` with ``--solvers`` re-measures those
solvers only and rewrites their rows (and their refusal and warning lines) in the docs table,
leaving every other row as it was; the run's other settings must be the table's (its
``Command:`` line), and the table's header gains a line naming the rows, the command, the
date and the versions of the update::

    PYTHONPATH=. python benchmarks/bench_solvers.py --quick --docs --threads 1 --seeds 1 \
        --timeout 120 --solvers vr_frank_wolfe,localized_mirror_descent
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import Lasso, LinearRegression, LogisticRegression, Ridge
from sklearn.model_selection import train_test_split

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers import SOLVERS

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import add_threads_argument, environment, limit_threads, log
from _datasets import load_dataset

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
DOCS_TABLE = HERE.parent / "docs" / "solvers" / "table.md"
EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0, math.inf]
DELTA = 1e-5

#: Public constants of the generated sparse regression.
SPARSE_W = [1.2, -0.8, 0.6, -1.0, 0.7]
SPARSE_NOISE = 0.5
SPARSE_Y_BOUND = float(np.sum(np.abs(SPARSE_W)) + 0.3 + 3 * SPARSE_NOISE)
#: Documented range of the diabetes target (disease progression, 25..346).
DIABETES_Y_LO, DIABETES_Y_HI = 25.0, 346.0
#: Penalised DPLasso rows: alpha on the data sets' label scale (public choices).
LASSO_ALPHA = {"diabetes": 1.0, "sparse_regression": 0.01}


@dataclass
class Data:
    name: str
    title: str
    task: str  # "classification" | "regression"
    splits: list  # [(X_train, X_test, y_train, y_test)] per seed
    bounds: dict = field(default_factory=dict)  # public bound keywords
    note: str = ""


def _class_splits(ds, seeds, y=None):
    y = ds.y if y is None else y
    return [
        train_test_split(ds.X, y, test_size=ds.test_size, random_state=s, stratify=y)
        for s in range(seeds)
    ]


def load(name, seeds):
    if name == "breast_cancer":
        ds = load_dataset("breast_cancer")
        return Data(
            name,
            ds.title,
            "classification",
            _class_splits(ds, seeds),
            dict(data_norm=ds.data_norm, feature_bound=0.5),
            "documented ranges -> [-0.5, 0.5]; data_norm 0.5 sqrt(30), feature_bound 0.5",
        )
    if name == "digits":
        ds = load_dataset("digits")
        y = (ds.y == 0).astype(int)
        return Data(
            name,
            "Digits 0 vs rest (n=1797, d=64)",
            "classification",
            _class_splits(ds, seeds, y),
            dict(data_norm=ds.data_norm, feature_bound=0.5),
            "x / 16 - 0.5; data_norm 4, feature_bound 0.5",
        )
    if name == "classification_100k":
        ds = load_dataset("synthetic_100k")
        return Data(
            name,
            ds.title,
            "classification",
            _class_splits(ds, seeds),
            dict(data_norm=ds.data_norm, feature_bound=0.5),
            "make_classification / sqrt(100); data_norm 1.5, feature_bound 0.5 "
            "(most rows are clipped)",
        )
    if name == "diabetes":
        bunch = load_diabetes()
        # scikit-learn publishes the features centred with unit sum of squares per column;
        # times sqrt(442) they have unit variance; / 3 and clipped: entries in [-1, 1].
        X = np.clip(bunch.data * math.sqrt(442) / 3.0, -1.0, 1.0)
        centre = (DIABETES_Y_LO + DIABETES_Y_HI) / 2
        y = bunch.target - centre
        splits = [train_test_split(X, y, test_size=0.2, random_state=s) for s in range(seeds)]
        return Data(
            name,
            "Diabetes (n=442, d=10)",
            "regression",
            splits,
            dict(
                data_norm=math.sqrt(10),
                feature_bound=1.0,
                y_bound=(DIABETES_Y_HI - DIABETES_Y_LO) / 2,
            ),
            "features x sqrt(442)/3 clipped to [-1, 1]; labels minus 185.5 (middle of "
            "the documented range 25..346), y_bound 160.5",
        )
    if name == "sparse_regression":
        n, n_test, d = 30_000, 10_000, 30
        rng = np.random.default_rng(1234)
        X = rng.uniform(-1.0, 1.0, size=(n + n_test, d))
        w = np.zeros(d)
        w[: len(SPARSE_W)] = SPARSE_W
        y = X @ w + 0.3 + SPARSE_NOISE * rng.standard_normal(n + n_test)
        splits = [train_test_split(X, y, test_size=n_test, random_state=s) for s in range(seeds)]
        return Data(
            name,
            f"Generated sparse regression (n_train={n}, d={d})",
            "regression",
            splits,
            dict(data_norm=math.sqrt(d), feature_bound=1.0, y_bound=SPARSE_Y_BOUND),
            f"uniform [-1, 1] entries, 5 nonzero weights; feature_bound 1, "
            f"y_bound {SPARSE_Y_BOUND:.2f}",
        )
    raise ValueError(name)


DATASETS = ["breast_cancer", "digits", "classification_100k", "diabetes", "sparse_regression"]
LARGE = {"classification_100k", "sparse_regression"}


@dataclass
class Estimator:
    label: str
    loss: str
    make: object  # (solver, epsilon, seed, bounds) -> estimator
    reference: object  # (n_train) -> scikit-learn estimator
    reference_label: str


def estimators_for(data):
    b = data.bounds
    if data.task == "classification":
        return [
            Estimator(
                "DPLogisticRegression",
                "log_loss",
                lambda s, e, seed: DPLogisticRegression(
                    epsilon=e,
                    delta=DELTA,
                    solver=s,
                    classes=[0, 1],
                    random_state=seed,
                    data_norm=b["data_norm"],
                    feature_bound=b["feature_bound"],
                ),
                lambda n: LogisticRegression(C=1.0, max_iter=1000),
                "LogisticRegression(C=1)",
            )
        ]
    alpha = LASSO_ALPHA[data.name]
    common = dict(feature_bound=b["feature_bound"], y_bound=b["y_bound"])
    return [
        Estimator(
            "DPSCORegressor",
            "squared",
            lambda s, e, seed: DPSCORegressor(
                epsilon=e,
                delta=DELTA,
                solver=s,
                random_state=seed,
                data_norm=b["data_norm"],
                **common,
            ),
            lambda n: Ridge(alpha=1e-4 * n),
            "Ridge(alpha=1e-4 n)",
        ),
        Estimator(
            "DPLasso",
            "squared",
            lambda s, e, seed: DPLasso(
                epsilon=e, delta=DELTA, solver=s, random_state=seed, **common
            ),
            lambda n: LinearRegression(),
            "LinearRegression (no ball)",
        ),
        Estimator(
            f"DPLasso(alpha={alpha})",
            "squared",
            lambda s, e, seed: DPLasso(
                epsilon=e, delta=DELTA, solver=s, alpha=alpha, random_state=seed, **common
            ),
            lambda n: Lasso(alpha=alpha),
            f"Lasso(alpha={alpha})",
        ),
    ]


class FitTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise FitTimeout()


def timed_fit(model, X, y, timeout):
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    start = time.perf_counter()
    fired = False
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.fit(X, y)
    except FitTimeout:
        fired = True
    except Exception as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)
        elapsed = time.perf_counter() - start
        if elapsed >= timeout * 0.99 or isinstance(exc.__context__, FitTimeout):
            fired = True
        else:
            raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if fired:
        raise FitTimeout()
    return time.perf_counter() - start, [str(w.message)[:120] for w in caught]


def run_case(data, est, solvers, epsilons, timeout, log):
    """{row: {"scores": {eps: [..]}, "time": [..], "note": str}} for one data set x estimator."""
    rows = {}
    # Non-private reference and trivial predictor.
    ref, triv, ref_time = [], [], []
    for X_tr, X_te, y_tr, y_te in data.splits:
        model = est.reference(X_tr.shape[0])
        t0 = time.perf_counter()
        model.fit(X_tr, y_tr)
        ref_time.append(time.perf_counter() - t0)
        ref.append(model.score(X_te, y_te))
        if data.task == "classification":
            majority = np.bincount(y_tr).argmax()
            triv.append(float(np.mean(y_te == majority)))
        else:
            pred = np.full(y_te.shape, np.mean(y_tr))
            triv.append(1.0 - np.sum((y_te - pred) ** 2) / np.sum((y_te - np.mean(y_te)) ** 2))
    rows["sklearn"] = dict(
        label=f"non-private {est.reference_label}",
        ref=float(np.median(ref)),
        time=float(np.median(ref_time)),
    )
    rows["trivial"] = dict(label="trivial predictor", ref=float(np.median(triv)))
    refused = {}
    for solver in ["auto"] + solvers:
        scores, times, chosen, warns, status = {}, [], set(), set(), ""
        for eps in epsilons:
            vals = []
            for seed, (X_tr, X_te, y_tr, y_te) in enumerate(data.splits):
                model = est.make(solver, eps, seed)
                try:
                    elapsed, w = timed_fit(model, X_tr, y_tr, timeout)
                except FitTimeout:
                    status = f"timeout (> {timeout:g} s at epsilon={eps:g})"
                    break
                except ValueError as exc:
                    if not hasattr(model, "coef_"):
                        refused[solver] = str(exc).split(". ")[0][:200]
                        status = "refused"
                        break
                    raise
                except Exception as exc:
                    status = f"error at epsilon={eps:g}: {type(exc).__name__}: {str(exc)[:100]}"
                    break
                warns.update(w)
                chosen.add(model.solver_)
                vals.append(model.score(X_te, y_te))
                if eps == 1.0:
                    times.append(elapsed)
            if status:
                break
            scores[eps] = float(np.median(vals))
        if status == "refused":
            continue
        label = solver if solver != "auto" else f"auto -> {'/'.join(sorted(chosen))}"
        rows[solver] = dict(
            label=label,
            scores=scores,
            time=float(np.median(times)) if times else math.nan,
            status=status,
            warnings=sorted(warns),
        )
        shown = " ".join(f"{scores.get(e, math.nan):.3f}" for e in epsilons)
        log(f"  {data.name} {est.label} {label}: {shown} {status}")
    return rows, refused


def _fmt(v):
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def _markdown(header, rows):
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return "\n".join(
        [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        + [line(r) for r in rows]
    )


def case_table(rows, epsilons):
    ref, triv = rows["sklearn"]["ref"], rows["trivial"]["ref"]
    target5 = triv + 0.7 * (ref - triv)
    gd_time = rows.get("dp_gd", {}).get("time", math.nan)
    header = (
        ["solver"]
        + [f"eps={e:g}" for e in epsilons]
        + ["fit s (eps=1)", "x dp_gd", "eps=5 >= target", "inf within 1%", "note"]
    )
    table = []
    verdicts = {}
    for key, row in rows.items():
        if key in ("sklearn", "trivial"):
            continue
        s = row["scores"]
        ok5 = s.get(5.0)
        ok5 = "" if ok5 is None else ("MET" if ok5 >= target5 else "missed")
        inf = s.get(math.inf)
        okinf = (
            ""
            if inf is None
            else ("MET" if inf >= ref - 0.01 * abs(ref) else f"missed ({inf - ref:+.3f})")
        )
        verdicts[key] = (ok5, okinf)
        ratio = row["time"] / gd_time if gd_time and not math.isnan(gd_time) else math.nan
        table.append(
            [row["label"]]
            + [_fmt(s.get(e)) for e in epsilons]
            + [_fmt(row["time"]), _fmt(ratio), ok5, okinf, row["status"]]
        )
    table.append(
        [rows["sklearn"]["label"]]
        + [""] * (len(epsilons) - 1)
        + [_fmt(ref), _fmt(rows["sklearn"]["time"]), "", "", "", ""]
    )
    table.append(
        [rows["trivial"]["label"]] + [""] * (len(epsilons) - 1) + [_fmt(triv), "", "", "", "", ""]
    )
    return _markdown(header, table), target5, verdicts


#: Options that change what a docs table measures: an update of some of its rows must
#: use the table's own values (``--timeout`` may differ: on a loaded machine the
#: table's cap can stop fits it let finish; the update line shows the command).
_TABLE_SETTINGS = ("quick", "seeds", "large_seeds")


def _table_rows(lines):
    """{first cell: line index} of the markdown table rows in ``lines``."""
    return {
        line.split("|")[1].strip(): i
        for i, line in enumerate(lines)
        if line.startswith("| ") and not line.startswith("| solver ")
    }


_NOTES = ("Refused before any spend (public checks):", "Warnings:")


def _split_notes(lines):
    """The lines of a docs-table section before its notes, and {title: bullet lines}."""
    titles = [i for i, line in enumerate(lines) if line in _NOTES]
    notes = {}
    for i in titles:
        bullets = lines[i + 2 :]
        end = next((k for k, line in enumerate(bullets) if not line.startswith("- ")), None)
        notes[lines[i]] = bullets[:end]
    return lines[: titles[0] if titles else len(lines)], notes


def _merge_section(old, new, solvers):
    """``old`` (a section of the docs table) with ``solvers``' rows and notes taken from ``new``.

    The table is re-rendered so that its columns stay aligned; a solver's refusal and
    warning lines are replaced (or dropped) with its new ones.
    """
    old_lines, new_lines = old.split("\n"), new.split("\n")
    old_rows, new_rows = _table_rows(old_lines), _table_rows(new_lines)
    cells = {i: [c.strip() for c in old_lines[i].split("|")[1:-1]] for i in old_rows.values()}
    reference = next(i for label, i in old_rows.items() if label.startswith("non-private"))
    for solver in solvers:
        if solver in new_rows:
            row = [c.strip() for c in new_lines[new_rows[solver]].split("|")[1:-1]]
            cells[old_rows.get(solver, reference - 0.5)] = row  # a new row: above the reference
        elif solver in old_rows:  # refused now: its row goes, its refusal is in the notes
            del cells[old_rows[solver]]
    header = next(line for line in new_lines if line.startswith("| solver "))
    header = [c.strip() for c in header.split("|")[1:-1]]
    table = _markdown(header, [cells[k] for k in sorted(cells)]).split("\n")
    first = min(old_rows.values()) - 2  # the header and the rule above the rows
    body = old_lines[:first] + table + old_lines[first + 2 + len(old_rows) :]
    body, old_notes = _split_notes(body)
    new_notes = _split_notes(new_lines)[1]
    for title in _NOTES:
        # A solver's line in place of its old one (or dropped), a new one at the end.
        fresh = {
            solver: line
            for solver in solvers
            for line in new_notes.get(title, [])
            if line.startswith(f"- `{solver}`:")
        }
        bullets = []
        for line in old_notes.get(title, []):
            solver = line[3:].split("`", 1)[0]
            bullets += (
                [fresh.pop(solver)] if solver in fresh else [] if solver in solvers else [line]
            )
        bullets += list(fresh.values())
        if bullets:
            body += [title, "", *bullets, ""]
    return "\n".join(body)


def update_docs_table(report, solvers, argv, command):
    """Rewrite ``solvers``' rows of :data:`DOCS_TABLE` from ``report`` (a run of those solvers)."""
    text = DOCS_TABLE.read_text()
    table_command = text.split("Command: `", 1)[1].split("`", 1)[0]
    table_args = _parser().parse_args(table_command.split("bench_solvers.py", 1)[1].split())
    for name in _TABLE_SETTINGS:
        if getattr(table_args, name) != getattr(argv, name):
            raise SystemExit(
                f"--{name.replace('_', '-')} differs from the docs table's command "
                f"({table_command}): re-measured rows must use its settings."
            )
    old_parts, new_parts = text.split("\n## "), report.split("\n## ")
    new_sections = {part.split("\n", 1)[0]: part for part in new_parts[1:]}
    merged = [
        _merge_section(part, new_sections[part.split("\n", 1)[0]], solvers)
        if part.split("\n", 1)[0] in new_sections
        else part
        for part in old_parts[1:]
    ]
    head = old_parts[0].split("\n")
    summary = [(row[-2], row[-1]) for part in merged for row in _verdicts(part)]
    n5 = sum(1 for ok5, _ in summary if ok5 == "MET")
    ninf = sum(1 for _, okinf in summary if okinf == "MET")
    head = [
        f"Targets: eps=5 target met by {n5}/{len(summary)} rows; eps=inf within 1% of "
        f"non-private by {ninf}/{len(summary)} rows."
        if line.startswith("Targets:")
        else line
        for line in head
    ]
    at = next(i for i, line in enumerate(head) if line.startswith("Cells:"))
    head[at:at] = [
        f"Rows of {', '.join(f'`{s}`' for s in solvers)} re-measured on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} with `{command}` ({environment()}).",
        "",
    ]
    DOCS_TABLE.write_text("\n## ".join(["\n".join(head)] + merged))


def _verdicts(section):
    """(eps=5 verdict, eps=inf verdict) of each solver row of a docs-table section."""
    lines = section.split("\n")
    rows = _table_rows(lines)
    return [
        [c.strip() for c in lines[i].split("|")[1:-1]][-3:-1]
        for label, i in rows.items()
        if not label.startswith(("non-private", "trivial predictor"))
    ]


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="1 seed on the large data sets, 30 s timeout"
    )
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--large-seeds", type=int, default=None)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--solvers", default=None, help="comma-separated subset")
    parser.add_argument("--timeout", type=float, default=None)
    add_threads_argument(parser)
    parser.add_argument("--output", default=None)
    parser.add_argument("--docs", action="store_true", help=f"also write {DOCS_TABLE}")
    return parser


def main(argv=None):
    args = _parser().parse_args(argv)
    limit_threads(args.threads)
    large_seeds = args.large_seeds or (1 if args.quick else args.seeds)
    timeout = args.timeout or (30.0 if args.quick else 120.0)
    wanted = None if args.solvers is None else set(args.solvers.split(","))

    start = time.time()
    load0 = os.getloadavg()[0]
    sections, summary = [], []
    for name in args.datasets.split(","):
        seeds = large_seeds if name in LARGE else args.seeds
        data = load(name, seeds)
        log(f"{data.title}: {seeds} seed(s)")
        for est in estimators_for(data):
            solvers = [
                s
                for s, spec in SOLVERS.items()
                if est.loss in spec.losses and (wanted is None or s in wanted)
            ]
            rows, refused = run_case(data, est, solvers, EPSILONS, timeout, log)
            text, target5, verdicts = case_table(rows, EPSILONS)
            for solver, (ok5, okinf) in verdicts.items():
                summary.append((data.name, est.label, rows[solver]["label"], ok5, okinf))
            part = [
                f"## {data.title}: {est.label}",
                "",
                f"Public: {data.note}. Seeds: {seeds}. Target at eps=5: "
                f"{target5:.3f} (trivial + 70% of the gap to non-private).",
                "",
                text,
                "",
            ]
            if refused:
                part += ["Refused before any spend (public checks):", ""]
                part += [f"- `{s}`: {m}" for s, m in refused.items()] + [""]
            warned = {
                rows[k]["label"]: rows[k]["warnings"] for k in rows if rows[k].get("warnings")
            }
            if warned:
                part += ["Warnings:", ""]
                part += [f"- `{k}`: " + "; ".join(v[:3]) for k, v in warned.items()] + [""]
            sections.append("\n".join(part))
    elapsed = time.time() - start
    command = "PYTHONPATH=. python benchmarks/bench_solvers.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    head = [
        "# Every solver at its defaults",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"Run on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {elapsed:.0f} s; load "
        f"average {load0:.1f} at start, {os.getloadavg()[0]:.1f} at end (2 shared cores: "
        "absolute times are noisy, ratios to dp_gd are steadier).",
        "",
        "Cells: median test accuracy (R^2 for regression) over the seeds, delta = 1e-5, every "
        "hyper-parameter at its default (only the public data bounds given). `eps=inf` is the "
        "same solver without noise. Fit time: median at epsilon = 1.",
        "",
    ]
    n5 = sum(1 for r in summary if r[3] == "MET")
    ninf = sum(1 for r in summary if r[4] == "MET")
    head += [
        f"Targets: eps=5 target met by {n5}/{len(summary)} rows; eps=inf within 1% of "
        f"non-private by {ninf}/{len(summary)} rows.",
        "",
    ]
    report = "\n".join(head + sections)
    out = (
        Path(args.output)
        if args.output
        else RESULTS / ("solvers_partial.md" if wanted else f"solvers{'_quick' * args.quick}.md")
    )
    out.write_text(report)
    if args.docs and wanted is not None:
        update_docs_table(report, sorted(wanted), args, command.strip())
    elif args.docs:
        DOCS_TABLE.write_text(report)
    log(f"wrote {out} ({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
