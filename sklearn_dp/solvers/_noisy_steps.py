"""The noisy-step engine of the first-order solvers.

dp_gd, dp_sgd, dp_svrg, dp_svrg_pp, dp_accmd, dp_cd and the EpochSGD epochs
of resque run their steps here.  Every step is the same pipeline: sample the
rows (all of them, or a Poisson sample drawn by
:func:`sklearn_dp._noise.poisson_sample`; dp_cd also draws the coordinates
it moves, independently of the data), form the exact sum of per-sample
gradients clipped to a public bound (:mod:`sklearn_dp._clipped_sums`),
release it through the noise gateway (:func:`release`), divide by a public
normaliser, take the solver's update (a gradient step with momentum, a
proximal step, a projection or a mirror step), average the iterates and
report progress (:func:`noisy_steps`).  The solvers supply the sum and the
update; the loop, the averaging, the divergence check and the progress
lines are here, once.  Without noise (``epsilon=inf``) the same code runs
with zero noise.

Privacy
-------
Each step is one gateway release (:func:`sklearn_dp._noise.gaussian`) of a
sum whose add/remove-one sensitivity is the stated one: the clip bound of the
per-sample terms (times the public weight bound for weighted rows; for
dp_cd, the clip of the drawn block; for resque, the ReSQue weight cap times
the Lipschitz bound), or, for the SVRG inner steps, the bound the difference
terms are clipped to, a function of earlier releases.  The noise is
``multiplier * sensitivity`` with the multiplier of the solver's plan, which
calibrated the composition of all steps (:func:`gaussian_plan` for
full-data and Poisson-subsampled steps; the SVRG plans compose both kinds).
Everything after the release (normalising by a public value, the update,
averaging, the progress lines, the divergence error, and a noiseless run's
stop, which a callback decides only at ``epsilon=inf``) is post-processing
of the releases and of public values, so the observable outputs are
functions of them only.
"""

from __future__ import annotations

import math

import numpy as np

from .. import _noise, accounting
from .._clipped_sums import clipped_residual_squares, svec, unsvec
from .._data import row_sum
from ._common import PrivacyPlan, SolverResult, add_warnings, check_finite_iterate
from ._noise_warnings import noise_dominated_warning


def release(total, sensitivity, noise_std, rng, label="clipped gradient sum"):
    """The gateway release of a clipped sum: ``total + N(0, noise_std^2 I)`` on the gateway's grid.

    ``sensitivity`` is the add/remove-one L2 sensitivity of ``total``;
    ``noise_std`` 0 (``epsilon=inf``) releases ``total`` as it is.
    """
    return _noise.gaussian(
        total, sensitivity=sensitivity, noise_std=noise_std, rng=rng, label=label
    )


def release_symmetric(matrix, sensitivity, noise_std, rng, label="gram matrix"):
    """The gateway release of a symmetric ``(m, m)`` sum such as a Gram matrix.

    The matrix is released as its isometric vector ``svec`` (diagonal, then
    ``sqrt(2)`` times the upper triangle), whose L2 norm is the matrix's
    Frobenius norm, so ``sensitivity`` is the add/remove-one Frobenius
    sensitivity (``R^2`` for ``sum_i x_i x_i^T`` with ``||x_i|| <= R``).  The
    noise is drawn once per entry of the upper triangle and mirrored: a
    symmetric matrix with noise variance ``noise_std^2`` on the diagonal and
    ``noise_std^2 / 2`` off it.
    """
    return unsvec(release(svec(matrix), sensitivity, noise_std, rng, label), np.shape(matrix)[0])


def release_residual_squares(data, coef, bound, sensitivity, noise_std, rng, y_bound=None):
    """The gateway release of ``sum_i min(r_i^2, bound^2)`` at a released ``coef`` (one number).

    The residual scale of the confidence intervals
    (:func:`sklearn_dp._clipped_sums.clipped_residual_squares`, labels first
    clipped to ``y_bound`` when given), summed over the row chunks of
    ``data``; ``sensitivity`` is ``bound^2`` times the rows' weight bound.
    """

    def part_sum(part):
        weights = getattr(part, "sample_weight", None)
        return clipped_residual_squares(part.design, part.y, coef, bound, y_bound, weights)

    squares = row_sum(data, part_sum)
    return float(release(squares, sensitivity, noise_std, rng, "residual squares")[0])


def noisy_steps(
    step, W, n_steps, *, name, progress=None, tail_start=0, callback=None, row_steps=False
):
    """Run ``n_steps`` noisy steps ``W <- step(t, W)`` and average the iterates.

    ``step(t, W)`` returns the next iterate and the norm of the released
    (normalised) gradient it used, which ``progress`` prints.  With
    ``row_steps`` (coordinate descent) a step moves a few rows of ``W`` only:
    it returns ``(rows, values, shown)``, the engine writes ``W[rows] =
    values`` in place and counts a row in the average when it moves (once
    per iterate that held its old value), so a step costs the size of its
    rows, not of ``W``.

    ``callback(t, W)``, when given, sees every iterate ``x_t`` for t = 0
    (the start) to ``n_steps``; a callback that returns True stops the run
    after ``x_t`` (the average then covers the iterates run).  With noise it
    may stop only on public values and releases; a test on the data is
    allowed at ``epsilon=inf`` alone (dp_cd's noiseless stop).

    A run stops at its first non-finite iterate with a
    :class:`~sklearn_dp.exceptions.ConvergenceError`, so no non-finite point
    reaches the next release; the iterates are released values, so the error
    is a function of released values (public).

    Returns
    -------
    last : ndarray
        The last iterate.
    average : ndarray
        The average of the iterates ``x_{t+1}`` for ``t >= tail_start``.
    """
    total = np.zeros(np.shape(W))
    # Row steps: the first averaged iterate that holds each row's current value.
    since = np.full(len(W), tail_start + 1, dtype=np.int64) if row_steps else None
    if callback is not None:
        callback(0, W)
    for t in range(n_steps):
        if row_steps:
            rows, values, shown = step(t, W)
            # At the first non-finite iterate, before it reaches another release.
            check_finite_iterate(values, name)
            if t >= tail_start:
                total[rows] += W[rows] * (t + 1 - since[rows])[:, None]
                since[rows] = t + 1
            W[rows] = values
        else:
            W, shown = step(t, W)
            check_finite_iterate(W, name)
            if t >= tail_start:
                total += W
        if progress is not None:
            progress(t + 1, grad_norm=shown)
        if callback is not None and callback(t + 1, W):
            n_steps = t + 1
            break
    if row_steps:
        total += W * (n_steps + 1 - since)[:, None]
    return W, total / (n_steps - tail_start)


def gaussian_plan(epsilon, delta, n_steps, details=None, rate=None):
    """Plan of ``n_steps`` Gaussian steps, on the full data or on Poisson samples of ``rate``.

    Full-data steps compose exactly into one Gaussian mechanism: the
    multiplier is the smallest for which the analytic Gaussian mechanism
    meets (epsilon, delta).  Poisson-subsampled steps (``rate`` given) get
    the smallest multiplier the PLD accountant certifies.  ``epsilon=inf``
    gives a noiseless plan (multiplier 0).
    """
    n_steps = int(n_steps)
    details = {} if details is None else details
    if math.isinf(epsilon):
        return PrivacyPlan(accounting.dpe.NonPrivateDpEvent(), 0.0, n_steps, details)
    if rate is None:
        sigma = accounting.gaussian_noise_multiplier(epsilon, delta, n_steps)
        event = accounting.gaussian_steps_event(sigma, n_steps)
    else:
        sigma = accounting.subsampled_gaussian_noise_multiplier(epsilon, delta, rate, n_steps)
        event = accounting.subsampled_gaussian_steps_event(sigma, rate, n_steps)
    return PrivacyPlan(event, sigma, n_steps, details)


def plan_of_call(name, arguments):
    """The plan a call of solver ``name`` runs, from its arguments (its ``locals()``).

    The plan it was handed (``plan=``: the one an estimator was charged
    for), or for a direct call :func:`~sklearn_dp.solvers.plan_call` of
    these arguments: the options are checked against the registry's
    declared types and ranges, as the estimators check them before the
    spend (a direct call refuses what an estimator refuses), and planned as
    the estimators plan them (the public stand-in for the row count is
    ``data.n_public``, ``row_norm_bound`` the data's public bound).
    """
    from ._registry import get_solver, plan_call

    if arguments.get("plan") is not None:
        return arguments["plan"]
    data, epsilon, delta = arguments["data"], arguments["epsilon"], arguments["delta"]
    # Its options and n_outputs, alpha, l1_ratio: all the plan reads of the call.
    keywords = {key: arguments[key] for key in get_solver(name).call_defaults if key in arguments}
    n_params = data.design.n_columns * keywords["n_outputs"]
    public = dict(row_norm_bound=data.row_norm_bound, feature_bound=data.feature_bound)
    return plan_call(
        name, data.n_public, n_params, epsilon, delta, loss=arguments["loss"], **public, **keywords
    )


def solver_result(
    name, plan, coef, loss, epsilon, *, proxy=None, info=None, n_iter=None, **details
):
    """The :class:`SolverResult` of a run of ``plan``, with its public ``details`` and warning.

    ``details`` go into ``plan.details``; ``proxy`` (public values only) is
    the noise proxy of the honest warning
    (:func:`~sklearn_dp.solvers._noise_warnings.noise_dominated_warning`),
    whose text goes into ``info["warnings"]``; ``n_iter`` defaults to the
    plan's number of steps.
    """
    plan.details.update(details)
    info = {} if info is None else info
    if proxy is not None:
        add_warnings(info, noise_dominated_warning(name, loss.name, proxy, epsilon=epsilon))
    n_iter = plan.n_steps if n_iter is None else n_iter
    return SolverResult(coef=coef, n_iter=n_iter, plan=plan, info=info)
