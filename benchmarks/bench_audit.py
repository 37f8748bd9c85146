"""Thorough privacy audits of every registered solver, at solver and estimator level.

For each solver (``sklearn_dp/testing/_audit_configs.py`` holds the canaries and statistics)
the mechanism runs many times on D and on D' = D plus one canary row; a
threshold test chosen on the first quarter of the runs is evaluated on the
rest, and Clopper-Pearson bounds on its error rates give a 95% lower bound on
the epsilon the mechanism really has.  Positive controls (noise off; noise
calibrated for one step of T; kernel releases with too little noise) show the
same audits have the power to find a violation.

Writes ``benchmarks/results/audit.md``.  One command, one core::

    PYTHONPATH=. python benchmarks/bench_audit.py            # 9-15 min
    PYTHONPATH=. python benchmarks/bench_audit.py --quick    # ~2 min, 10x fewer runs
    # Re-run some solvers and update their rows of results/audit.md in place:
    PYTHONPATH=. python benchmarks/bench_audit.py --solvers resque,dp_svrg_pp --merge

Audits with a ``power_factor`` (``sklearn_dp/testing/_audit_configs.py``) also get a power
control: the same audit on fits calibrated for ``power_factor`` times the
claimed epsilon, with the claim unchanged.

Any lower bound above the claimed epsilon is a privacy bug.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import sklearn_dp.solvers._gradient_descent as gd_module  # noqa: E402
from sklearn_dp.accounting import (  # noqa: E402
    gaussian_noise_multiplier,
    subsampled_gaussian_noise_multiplier,
)
from sklearn_dp.solvers import PrivacyPlan, _registry  # noqa: E402
from sklearn_dp.testing import (  # noqa: E402
    audit_mechanism,
    audit_noisy_gradient_sum,
    max_epsilon_lower_bound,
)
from sklearn_dp.testing._audit_configs import estimator_variants, solver_audits  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CALIBRATION_FRACTION = 4  # a quarter of the runs choose the threshold, the rest bound

#: Runs per data set.  Fits that recalibrate their noise for every noisy row
#: count (PLD compositions) are slow at estimator level and get fewer runs.
DEFAULT_RUNS = 4000
RUNS = {
    "dp_gd-estimator": 2000,
    "dp_cd-estimator": 2000,
    "mirror_descent-estimator": 2000,
    "dp_accmd-estimator": 2000,
    "dp_sgd-estimator": 2000,
    # Strong configurations (sklearn_dp/testing/_audit_configs.py): about 1 ms per fit, and
    # the selection / phase-allocation mechanisms need rare events to show.
    "vr_frank_wolfe-solver": 40000,
    "vr_frank_wolfe-estimator": 20000,
    "localized_mirror_descent-solver": 40000,
    "localized_mirror_descent-estimator": 20000,
    "resque-solver": 10000,
    "resque-estimator": 4000,
    "dp_svrg-estimator": 4000,
    "dp_svrg_pp-solver": 10000,
    "dp_svrg_pp-estimator": 4000,
    # Second-estimator variants share their id, so the counts above, with their solver.
}
CONTROL_RUNS = 200


def run_audit(run, epsilon, delta, n_runs, **options):
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_mechanism(
            run,
            claimed_epsilon=epsilon,
            delta=max(delta, 1e-12),
            n_runs=n_runs,
            calibration_runs=max(1, n_runs // CALIBRATION_FRACTION),
            seed_offset=7,
            include_observed=True,
            **options,
        )
    return result, time.perf_counter() - start


def broken_plan_dp_gd(n_samples, n_params, epsilon, delta, call):
    """A deliberate bug: noise calibrated for one step, used for every step."""
    plan = broken_plan_dp_gd.original(n_samples, n_params, epsilon, delta, call)
    if plan is None or plan.n_steps <= 1:
        return plan
    one = broken_plan_dp_gd.original(n_samples, n_params, epsilon, delta, call.replace(max_iter=1))
    return PrivacyPlan(plan.event, one.noise_multiplier, plan.n_steps, plan.details)


broken_plan_dp_gd.original = gd_module.plan_dp_gd


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x fewer runs (a smoke test)")
    parser.add_argument("--only", nargs="*", help="audit ids (e.g. dp_gd-solver) to run")
    parser.add_argument(
        "--variants-only",
        action="store_true",
        help="only the second-estimator audits (results/audit_variants.md)",
    )
    parser.add_argument("--solvers", help="comma-separated solver names to run (both levels)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="replace the rows of the audits run in the existing output "
        "(results/audit.md) instead of writing a new file",
    )
    parser.add_argument("--output", help="default results/audit.md (partial runs: audit_quick.md)")
    args = parser.parse_args(argv)
    solvers = set(args.solvers.split(",")) if args.solvers else None
    if args.output is None:
        partial = (args.quick or args.only or solvers) and not args.merge
        name = "audit_variants.md" if args.variants_only else "audit.md"
        args.output = str(RESULTS / ("audit_quick.md" if partial else name))
    scale = 10 if args.quick else 1
    total_start = time.perf_counter()
    rows, controls = [], []

    def log(text):
        print(text, flush=True)

    audits = [] if args.variants_only else solver_audits()
    audits += estimator_variants()
    for audit in audits:
        if args.only and audit.id not in args.only:
            continue
        if solvers and audit.solver not in solvers:
            continue
        n_runs = RUNS.get(audit.id, DEFAULT_RUNS) // scale
        if n_runs < 8:
            rows.append((audit, None, 0.0))
            log(f"{audit.id:40s} skipped (too slow per fit for a thorough audit)")
            continue
        result, seconds = run_audit(
            audit.make_run(audit.epsilon), audit.epsilon, audit.delta, n_runs
        )
        rows.append((audit, result, seconds))
        flag = "" if result.consistent else "   <-- PRIVACY BUG?"
        name = audit.id if audit.level == "solver" else f"{audit.id} {audit.estimator}"
        log(
            f"{name:55s} eps={audit.epsilon:g} delta={audit.delta:g} runs={n_runs} "
            f"lb={result.epsilon_lower_bound:.3f} max={result.max_lower_bound:.2f} "
            f"({seconds:.0f}s){flag}"
        )
        # Positive control: the same audit with the noise off.
        result, seconds = run_audit(
            audit.make_run(math.inf), audit.epsilon, audit.delta, max(8, CONTROL_RUNS // scale)
        )
        controls.append((f"{name}: noise off", audit.epsilon, audit.delta, result, seconds))
        log(f"  control noise off: lb={result.epsilon_lower_bound:.3f} ({seconds:.0f}s)")
        if audit.power_factor:
            factor = audit.power_factor
            result, seconds = run_audit(
                audit.make_run(factor * audit.epsilon), audit.epsilon, audit.delta, n_runs
            )
            ratio = noise_ratio(audit, factor)
            label = f"{name}: calibrated for {factor:g} x epsilon" + (
                f" (noise x {ratio:.2f})" if ratio else ""
            )
            controls.append((label, audit.epsilon, audit.delta, result, seconds))
            log(
                f"  power control {factor:g} x epsilon: lb={result.epsilon_lower_bound:.3f} "
                f"({seconds:.0f}s)"
            )

    if not args.only and not args.variants_only and not solvers:
        # Subtler positive controls: noise calibrated for one step of T.
        audit = next(a for a in solver_audits("solver") if a.solver == "dp_gd")
        # Direct calls and estimators alike plan through the registry.
        spec = _registry.SOLVERS["dp_gd"]
        _registry._REGISTRY["dp_gd"] = dataclasses.replace(spec, plan=broken_plan_dp_gd)
        try:
            n_runs = 2000 // scale
            result, seconds = run_audit(
                audit.make_run(audit.epsilon), audit.epsilon, audit.delta, n_runs
            )
        finally:
            _registry._REGISTRY["dp_gd"] = spec
        controls.append(
            ("dp_gd-solver: noise for 1 of 8 steps", audit.epsilon, audit.delta, result, seconds)
        )
        log(f"control dp_gd one-step noise: lb={result.epsilon_lower_bound:.3f}")
        for label, steps, rate, broken_steps in (
            ("kernel, 8 full-batch steps", 8, 1.0, (1,)),
            ("kernel, 100 Poisson steps q=0.1", 100, 0.1, (1, 10)),
        ):
            cases = [("calibrated", steps)] + [("noise for fewer steps", b) for b in broken_steps]
            for name, calibrated_for in cases:
                epsilon, delta, clip = 2.0, 1e-5, 1.0
                if rate >= 1:
                    sigma = gaussian_noise_multiplier(epsilon, delta, calibrated_for)
                else:
                    sigma = subsampled_gaussian_noise_multiplier(
                        epsilon, delta, rate, calibrated_for
                    )
                start = time.perf_counter()
                result = audit_noisy_gradient_sum(
                    sigma * clip,
                    clip,
                    claimed_epsilon=epsilon,
                    delta=delta,
                    n_steps=steps,
                    sampling_rate=rate,
                    n_runs=20000 // scale,
                    calibration_runs=20000 // scale // CALIBRATION_FRACTION,
                    seed_offset=7,
                )
                seconds = time.perf_counter() - start
                entry = (
                    f"{label}, {name}"
                    + ("" if name == "calibrated" else f" ({calibrated_for} of {steps})"),
                    epsilon,
                    delta,
                    result,
                    seconds,
                )
                (controls if name != "calibrated" else rows).append(
                    entry if name != "calibrated" else ("kernel", label, entry)
                )
                log(f"{entry[0]}: lb={result.epsilon_lower_bound:.3f}")

    total = time.perf_counter() - total_start
    if args.merge:
        command = "PYTHONPATH=. python benchmarks/bench_audit.py" + "".join(
            f" {a}" for a in (argv if argv is not None else sys.argv[1:])
        )
        merge_markdown(Path(args.output), rows, controls, total, command)
    else:
        write_markdown(Path(args.output), rows, controls, total, scale)
    log(f"total {total / 60:.1f} min; wrote {args.output}")


def noise_ratio(audit, factor):
    """Noise multiplier of the power control over the calibrated one (solver-level plan).

    The snapshot multiplier for the SVRG solvers (the release the canary
    moves), else ``plan.noise_multiplier``; None when there is no solver-level fit.
    """
    fit = getattr(audit.make_run, "fit", None)
    if fit is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plans = [fit(epsilon, True, 0).plan for epsilon in (factor * audit.epsilon, audit.epsilon)]
    sigmas = [plan.details.get("snapshot_multiplier", plan.noise_multiplier) for plan in plans]
    return sigmas[0] / sigmas[1] if sigmas[1] else None


def _table_row(audit, result, seconds):
    epsilon, delta = audit.epsilon, audit.delta
    return (
        f"| {audit.solver} | {audit.level} | {audit.estimator} | ({epsilon:g}, {delta:g}) | "
        f"{result.n_runs} | {result.epsilon_lower_bound:.3f} | {result.max_lower_bound:.2f} | "
        f"{result.epsilon_lower_bound / epsilon:.2f} | {seconds:.0f} |"
    )


def _control_row(name, epsilon, delta, result, seconds):
    return (
        f"| {name} | ({epsilon:g}, {delta:g}) | {result.n_runs} | "
        f"{result.epsilon_lower_bound:.3f} | {result.max_lower_bound:.2f} | "
        f"{'yes' if not result.consistent else '**no**'} | {seconds:.0f} |"
    )


def merge_markdown(path, rows, controls, total, command):
    """Replace, in an existing results file, the rows of the audits just run.

    Audit rows are matched on (solver, level, estimator), control rows on
    their name; new control rows go after the last control of the same audit.
    """
    lines = path.read_text().splitlines()
    bugs = []
    for audit, result, seconds in rows:
        if result is None:
            continue
        if not result.consistent:
            bugs.append(f"{audit.solver} {audit.level}")
        key = f"| {audit.solver} | {audit.level} | {audit.estimator} |"
        hits = [i for i, line in enumerate(lines) if line.startswith(key)]
        if len(hits) != 1:
            raise ValueError(f"expected one row starting with {key!r} in {path}, got {hits}")
        lines[hits[0]] = _table_row(audit, result, seconds)
    for name, epsilon, delta, result, seconds in controls:
        row = _control_row(name, epsilon, delta, result, seconds)
        stem = name.split(":")[0]
        hits = [
            i for i, line in enumerate(lines) if line.startswith(f"| {name.split(' (noise x')[0]}")
        ]
        if hits:
            lines[hits[0]] = row
            continue
        same = [i for i, line in enumerate(lines) if line.startswith(f"| {stem}:")]
        if not same:
            raise ValueError(f"no control row of {stem!r} in {path}")
        lines.insert(same[-1] + 1, row)
    note = (
        f"Rows of {', '.join(sorted({a.solver for a, r, s in rows}))} updated by "
        f"`{command}` ({total / 60:.1f} min)."
    )
    # Earlier notes stay (their rows may still be in the table); a rerun of
    # the same solvers replaces its own note.
    lines = [line for line in lines if not line.startswith(note.split(" updated by")[0])]
    anchor = lines.index("<!-- table -->")
    lines.insert(anchor - 1, note)
    if bugs:
        lines.append("")
        lines.append("Privacy bugs found by the merged run: " + ", ".join(bugs) + ".")
    path.write_text("\n".join(lines) + "\n")


def write_markdown(path, rows, controls, total, scale):
    lines = [
        "# Privacy audits: lower bounds on epsilon per solver",
        "",
        "Produced by `PYTHONPATH=. python benchmarks/bench_audit.py"
        + (" --quick" if scale > 1 else "")
        + f"` in {total / 60:.1f} min on one core "
        f"({platform.processor() or platform.machine()}, Python {platform.python_version()}).",
        "Confidence 95% (both error rates bounded at once); a quarter of the runs chose "
        "the threshold, the rest gave the bound. *max* is the largest bound those runs "
        "could give (no test error at all): a claim above it cannot be refuted by them.",
        "",
        "<!-- table -->",
        "",
        "| solver | level | estimator | claimed (epsilon, delta) | runs per data set "
        "| lower bound | max | lower / claimed | time (s) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    bugs = []
    for row in rows:
        if row[0] == "kernel":
            _, label, (name, epsilon, delta, result, seconds) = row
            solver, level, estimator = "(gradient-sum kernel)", label, "-"
        else:
            audit, result, seconds = row
            solver, level, estimator = audit.solver, audit.level, audit.estimator
            epsilon, delta = audit.epsilon, audit.delta
        if result is None:
            lines.append(
                f"| {solver} | {level} | {estimator} | ({epsilon:g}, {delta:g}) | not run | | | | |"
            )
            continue
        if not result.consistent:
            bugs.append(f"{solver} {level}")
        lines.append(
            f"| {solver} | {level} | {estimator} | ({epsilon:g}, {delta:g}) | {result.n_runs} | "
            f"{result.epsilon_lower_bound:.3f} | {result.max_lower_bound:.2f} | "
            f"{result.epsilon_lower_bound / epsilon:.2f} | {seconds:.0f} |"
        )
    lines += [
        "",
        "## Positive controls (must exceed the claimed epsilon) and power controls",
        "",
        "Noise off and noise for fewer steps must exceed the claim. A power control "
        "(*calibrated for k x epsilon*) runs the same audit on fits calibrated for k times "
        "the claimed epsilon (the noise multiplier shrinks by the factor shown) while the claim "
        "stays: it measures how large an under-calibration the audit would catch, and a "
        "**no** there is a limit of the audit, not a failure.",
        "",
        "| broken mechanism | claimed (epsilon, delta) | runs per data set | lower bound "
        "| max | exceeds claim | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, epsilon, delta, result, seconds in controls:
        lines.append(_control_row(name, epsilon, delta, result, seconds))
    lines += [
        "",
        "Maximal achievable lower bound by runs used for the bound (delta=1e-5, 95%): "
        + ", ".join(
            f"{n}: {max_epsilon_lower_bound(n, 1e-5):.2f}" for n in (100, 300, 1000, 3000, 10000)
        )
        + ".",
        "",
        "Privacy bugs found: " + (", ".join(bugs) if bugs else "none") + ".",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
