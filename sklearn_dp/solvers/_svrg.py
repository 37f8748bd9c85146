"""Noisy proximal SVRG: ``dp_svrg`` and ``dp_svrg_pp`` (Wang, Ye and Xu, 2017).

Both solvers run proximal SVRG on ``mean_i l(x_i @ W, y_i) + r(W)`` with the
elastic-net penalty ``r`` handled by its proximal map.  Every epoch releases
one noisy full gradient at the snapshot; every inner step releases one noisy
sum of per-sample *gradient differences* over a Poisson mini-batch.  The
whole fit is described by one DpEvent and calibrated with the PLD accountant;
the paper's closed-form noise (an unknown constant, valid only for
``epsilon <= c T m / n^2``) is not used.

Mechanism, under add/remove-one-row neighbouring
------------------------------------------------
Let ``C`` be the per-sample gradient clip (every per-sample gradient is
clipped to L2 norm ``C``, at the snapshot and at the inner iterate).

* Snapshot of epoch s: ``sum_i clip_C(grad f(W_snap, z_i)) + N(0, (s_snap C)^2 I)``.
  Adding or removing a row changes the sum by at most ``C``: a Gaussian
  mechanism on the full data with multiplier ``s_snap``.  The paper does not
  noise the snapshot separately (it relies on the noise of the inner steps);
  releasing it once per epoch is what lets an accountant describe the fit
  exactly, and it is reused by every inner step of the epoch (post-processing).
* Inner step: a Poisson sample ``B`` (rate ``q = b / n``), and
  ``sum_{i in B} d_i + N(0, (s_diff Delta)^2 I)`` with
  ``d_i = clip_C(grad f(W, z_i)) - clip_C(grad f(W_snap, z_i))`` clipped to
  norm ``Delta``.  One row enters the sum only when it is sampled, and its
  term has norm at most ``Delta``: a Poisson-subsampled Gaussian mechanism
  with multiplier ``s_diff``.  ``Delta`` is

  - ``2 C`` (``difference_bound="clip"``, the bound the paper's proof uses:
    two vectors of norm at most C differ by at most 2C); or
  - ``min(2 C, L_row ||W - W_snap||)`` (``difference_bound="smoothness"``,
    the default), with ``L_row = loss.smoothness * row_norm_bound**2`` the
    smoothness of one sample's loss.  For a GLM,
    ``||grad f(W, z) - grad f(W', z)|| = ||l'(x W) - l'(x W')|| ||x|| <=
    smoothness ||x||^2 ||W - W'||``, and clipping (a projection) does not
    increase it.  ``W`` and ``W_snap`` are functions of earlier noisy
    releases only, so ``Delta`` is public at the time of the step: each step
    is still a subsampled Gaussian mechanism of multiplier ``s_diff``
    relative to its own sensitivity, and adaptive composition applies
    unchanged.  This is an extension (not in the paper): near convergence
    the iterate stays close to its snapshot and the noise of the inner
    steps shrinks with the variance of the gradient estimate, which is the
    point of variance reduction.  The ``d_i`` are clipped to ``Delta``
    anyway, so the bound holds by construction even on data that violates
    the public row bound.

The row count is private under add/remove neighbouring: sums are averaged
with ``data.normalizer`` and every n-dependent default (the sampling rate,
the epoch lengths) uses ``data.n_public``, the DP count estimators release
(a direct call without one treats n as public).  Rates and epoch lengths are
rounded (rates to two significant digits, epoch lengths up to a geometric
grid with 12% steps) so that fits on noisy counts of similar size share one
cached calibration.

The pre-noise sums are the clipped sums ``svrg_snapshot_sum`` and
``svrg_difference_sum`` of :mod:`sklearn_dp._clipped_sums`; every release goes
through the noise gateway (:func:`sklearn_dp._noise.gaussian`) and every
inner batch is drawn by :func:`sklearn_dp._noise.poisson_sample`.

The fit is ``Compose(SelfComposed(Gaussian(s_snap), T), SelfComposed(
PoissonSampled(q, Gaussian(s_diff)), K))`` with ``T`` epochs and ``K`` inner
steps in total.  ``s_snap`` is fixed so that the snapshots alone would use
the fraction ``snapshot_share`` of the budget in the Gaussian-DP sense
(``mu_snap^2 = share * mu^2`` with ``mu`` the GDP parameter of the target
(epsilon, delta)); ``s_diff`` is then the smallest multiplier for which the
PLD accountant certifies the whole composition.
"""

from __future__ import annotations

import inspect
import math
from types import SimpleNamespace

import numpy as np
from dp_accounting import dp_event as dpe

from .. import _noise, accounting
from .._clipped_sums import svrg_difference_sum, svrg_snapshot_sum
from .._memo import memoize
from .._public_errors import public_error
from ._common import PrivacyPlan, Progress, make_rng, moved_less_than
from ._gradient_descent import gradient_bound
from ._noise_warnings import is_classification, is_quiet, noise_excess_proxy
from ._noisy_steps import noisy_steps, plan_of_call, release, solver_result
from ._svrg_schedule import (
    DEFAULT_SVRG_EPOCHS_NOISELESS,
    DEFAULT_SVRG_PP_EPOCHS,
    DEFAULT_SVRG_PP_EPOCHS_NOISELESS,
    MAX_VARIANCE_RATIO,
    default_svrg_epochs,
    default_svrg_inner_steps,
    default_svrg_pp_inner_steps,
    svrg_max_step_size,
    svrg_pp_step_size,
    svrg_sampling,
    svrg_step_size,
)

#: Fraction of the (Gaussian-DP) budget spent on the snapshot gradients.
#: Measured in prototype runs on the 200000-row data of benchmarks/bench_erm_revisited.py
#: (0.75 beat 0.5, which beat 1/3): with the smoothness bound
#: the inner noise shrinks as the iterates converge, so the snapshots, whose
#: noise biases a whole epoch, deserve the larger share.
DEFAULT_SNAPSHOT_SHARE = 0.75

#: Without noise (epsilon=inf: nothing private, nothing promised) the default
#: schedules of dp_svrg and dp_svrg_pp stop after the first epoch whose
#: snapshot moves no coefficient by more than this fraction of the largest
#: (a given max_iter runs in full; with noise nothing stops early).
NONPRIVATE_SVRG_TOL = 1e-3


# --------------------------------------------------------------------------
# Accounting
# --------------------------------------------------------------------------


def svrg_event(snapshot_multiplier, difference_multiplier, sampling_probability, n_epochs, n_inner):
    """DpEvent of a noisy-SVRG fit: T full-data Gaussian snapshots and K subsampled inner steps.

    The parts are a tuple (not a list) so that the event is hashable: budgets
    and the estimators' joint calibration with the row count cache on events.
    """
    snapshots = accounting.gaussian_steps_event(snapshot_multiplier, n_epochs)
    rate = sampling_probability
    inner = accounting.subsampled_gaussian_steps_event(difference_multiplier, rate, n_inner)
    return dpe.ComposedDpEvent((snapshots, inner))


def approximate_difference_multiplier(epsilon, delta, rate, n_inner, snapshot_share):
    """Central-limit (Gaussian DP) approximation of the inner steps' multiplier (public).

    The snapshots spend the share ``snapshot_share`` of ``mu^2`` exactly; the
    ``K`` inner steps at rate ``q`` get the rest, ``mu_diff^2 = q^2 K
    (exp(1/s^2) - 1)`` (Dong, Roth and Su 2019): the guess the calibration
    starts from (``accounting._gaussian_dp_guess`` of the whole event), here
    a cheap public stand-in when choosing a default schedule; never the noise
    itself (the accountant calibrates that).
    """
    single = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    mu_diff_squared = (1.0 - snapshot_share) / single**2
    ratio = mu_diff_squared / (rate**2 * max(1, n_inner))
    return 1.0 / math.sqrt(math.log1p(ratio))


def inner_noise_proxy(step_size, multiplier, clip, rate, n_public, n_params):
    """The honest-warning proxy of the SVRG inner steps (public values only).

    :func:`~sklearn_dp.solvers._noise_warnings.noise_excess_proxy` with the noise of
    a difference sum at its largest bound ``2 C`` (``multiplier * 2 C``) over
    the expected batch ``q n_public``.  The default epochs and the warning
    use the same proxy, so the epochs' ``QUIET_FRACTION`` is a fraction of
    the warning's threshold.
    """
    return noise_excess_proxy(step_size, multiplier * 2.0 * clip, rate * n_public, n_params)


#: A default SVRG schedule takes the most epochs (up to its default) whose
#: public noise proxy stays below this fraction of the honest-warning
#: threshold: noise-dominated epochs only add noise.
QUIET_FRACTION = 0.25


@memoize(maxsize=256)
def svrg_noise_multipliers(epsilon, delta, sampling_probability, n_epochs, n_inner, snapshot_share):
    """``(snapshot_multiplier, difference_multiplier)`` for (epsilon, delta), from public inputs.

    The snapshots get the multiplier that spends the fraction
    ``snapshot_share`` of the Gaussian-DP budget ``mu^2`` (exact for the T
    Gaussian snapshots alone); the inner steps get the smallest multiplier for
    which the PLD accountant certifies the composition of both.
    """
    # snapshot_share is in its declared range (FRACTION, checked before any plan).
    # One Gaussian step with multiplier s is mu-GDP with mu = 1/s, so T steps
    # with multiplier s_snap are (sqrt(T) / s_snap)-GDP.
    single = accounting.gaussian_noise_multiplier(epsilon, delta, 1)
    snapshot = single * math.sqrt(n_epochs / snapshot_share)

    def make_event(sigma):
        return svrg_event(snapshot, sigma, sampling_probability, n_epochs, n_inner)

    # The calibration starts at the Gaussian-DP guess of the whole event (the
    # snapshots' exact share plus the central limit of the inner steps, that
    # is approximate_difference_multiplier); the accountant decides.
    try:
        difference = accounting.calibrate_noise_multiplier(make_event, epsilon, delta)
    except ValueError:
        # A function of public inputs and of the rate and step count (which
        # may come from the released row count): public.
        raise public_error(
            ValueError(
                f"The noisy SVRG steps cannot be calibrated for delta={delta:.3g}: the "
                "accountant finds no noise multiplier in its range (typically for a delta "
                "far below 1e-12). Raise delta, or lower max_iter or inner_steps."
            )
        ) from None
    return float(snapshot), float(difference)


# --------------------------------------------------------------------------
# Plans (public inputs only) and the public check
# --------------------------------------------------------------------------

_STRONGLY_CONVEX = (
    "dp_svrg needs a strongly convex objective (an L2 penalty alpha > 0): use penalty='l2' "
    "or 'elasticnet' with l1_ratio < 1, or solver='dp_svrg_pp' for a convex one."
)


def check_dp_svrg(*, loss_name, n_outputs, penalty, alpha, l1_ratio, public, options):
    """Public check of a dp_svrg fit (registered as ``SolverSpec.check``): strong convexity.

    The registry's constraints check each option; dp_svrg's analysis needs
    ``alpha * (1 - l1_ratio) > 0`` (alpha None: a positive strength that
    scales with n).
    """
    # The registry admits only the penalties with an L2 part (SolverSpec.penalties).
    if float(l1_ratio or 0.0) >= 1.0 or (alpha is not None and not alpha > 0):
        raise ValueError(_STRONGLY_CONVEX)


def _check_public_step(smoothness, step_size, batch_size):
    """A given step with a given (public) batch: refuse one too large for condition (4)."""
    limit = svrg_max_step_size(smoothness, float(batch_size))
    if step_size > limit:
        raise public_error(
            ValueError(
                f"step_size={step_size:.4g} is too large for the dp_svrg analysis with "
                f"batch_size={batch_size} (it needs 8 L step_size / batch_size <= "
                f"{MAX_VARIANCE_RATIO:g}, i.e. step_size <= {limit:.4g} with L = "
                f"{smoothness:.4g}); lower it, raise batch_size or pass inner_steps."
            )
        )


def _plan_svrg(name, n_samples, n_params, epsilon, delta, call):
    """The plan of dp_svrg or dp_svrg_pp (``name``) from public inputs only.

    ``call`` holds the arguments of the run
    (a :class:`~sklearn_dp.solvers.SolverCall`).

    Without ``max_iter`` at finite epsilon the number of epochs is the
    default, fewer when noisy: the largest ``T`` (at most the default)
    whose inner steps' public noise proxy
    (:func:`~sklearn_dp.solvers._noise_warnings.noise_excess_proxy` with the
    Gaussian-DP multiplier of :func:`approximate_difference_multiplier`, the
    difference bound ``2 C`` of the default clip and the expected batch ``q
    n_public``) stays below :data:`QUIET_FRACTION` of the solver's warning
    threshold; at least 1.  Every epoch adds noise, so with few rows, a
    small epsilon or a wide label bound fewer epochs are better: on diabetes
    ``dp_svrg_pp`` went from R^2 -15.7 / -4.7 / 0.214 to -0.04 / 0.19 / 0.254
    at epsilon 0.5 / 1 / 5 with 3 epochs instead of 5 (median of 3 splits).
    Classification losses keep the default.
    """
    pp = name == "dp_svrg_pp"
    loss = call.loss
    if loss is None or call.row_norm_bound is None:
        raise ValueError(
            "The dp_svrg plans need the public loss and row_norm_bound (the smoothness "
            "L = loss.smoothness * row_norm_bound**2 sets the step size and epoch length)."
        )
    if loss.smoothness is None:
        raise ValueError(f"This solver needs a smooth loss; {loss.name!r} is not smooth.")
    smoothness = float(loss.smoothness) * float(call.row_norm_bound) ** 2
    if call.max_iter is not None:
        n_epochs = int(call.max_iter)
    elif math.isinf(epsilon):
        n_epochs = DEFAULT_SVRG_PP_EPOCHS_NOISELESS if pp else DEFAULT_SVRG_EPOCHS_NOISELESS
    else:
        n_epochs = DEFAULT_SVRG_PP_EPOCHS if pp else default_svrg_epochs(n_samples, epsilon)
    step_size, inner_steps = call.step_size, call.inner_steps
    if not pp and step_size is not None and inner_steps is None and call.batch_size is not None:
        _check_public_step(smoothness, step_size, call.batch_size)
    # dp_svrg_pp's schedule needs no strong convexity (nor the penalty).
    if n_samples is None or (not pp and call.alpha is None):
        return None
    strong_convexity = 0.0 if pp else float(call.alpha) * (1.0 - float(call.l1_ratio or 0.0))
    if not pp and not strong_convexity > 0:
        # alpha is public, or a function of the released count that is > 0
        # whenever the public penalty is.
        raise public_error(ValueError(_STRONGLY_CONVEX))
    rate, batch = svrg_sampling(n_samples, call.batch_size)
    requested = None if step_size is None else float(step_size)
    if step_size is None:
        step_size = (svrg_pp_step_size if pp else svrg_step_size)(smoothness, batch)
    elif not pp and inner_steps is None:
        # The batch (hence the largest step) may come from the DP count:
        # clamp rather than raise, so that nothing observable depends on it.
        step_size = min(float(step_size), svrg_max_step_size(smoothness, batch))
    if inner_steps is None and pp:
        inner_steps = default_svrg_pp_inner_steps(n_samples, batch)
    elif inner_steps is None:
        inner_steps = default_svrg_inner_steps(
            smoothness, strong_convexity, step_size, batch, n_samples
        )
    inner_steps = int(inner_steps)

    def lengths(epochs):
        return [inner_steps * 2**s for s in range(1, epochs + 1)] if pp else [inner_steps] * epochs

    quiet = is_classification(loss.name) or loss.derivative_bound is None
    if call.max_iter is None and not math.isinf(epsilon) and not quiet:
        clip = gradient_bound(loss, call.row_norm_bound, None, private=True)
        cap = n_epochs
        for n_epochs in range(cap, 0, -1):
            multiplier = approximate_difference_multiplier(
                epsilon, delta, rate, sum(lengths(n_epochs)), call.snapshot_share
            )
            proxy = inner_noise_proxy(step_size, multiplier, clip, rate, n_samples, n_params)
            if is_quiet(name, loss.name, proxy, QUIET_FRACTION):
                break
    details = dict(
        batch_size=batch,
        sampling_probability=rate,
        step_size=float(step_size),
        requested_step_size=requested,
        inner_steps=inner_steps,
        epoch_lengths=lengths(n_epochs),
        snapshot_share=float(call.snapshot_share),
    )
    n_inner = sum(lengths(n_epochs))
    if math.isinf(epsilon):
        return PrivacyPlan(dpe.NonPrivateDpEvent(), 0.0, n_epochs + n_inner, details)
    snapshot, difference = svrg_noise_multipliers(
        float(epsilon), float(delta), float(rate), n_epochs, n_inner, float(call.snapshot_share)
    )
    details.update(snapshot_multiplier=snapshot, difference_multiplier=difference)
    event = svrg_event(snapshot, difference, rate, n_epochs, n_inner)
    return PrivacyPlan(event, difference, n_epochs + n_inner, details)


def plan_dp_svrg(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_svrg`` from public inputs (n_params unused).

    ``n_samples`` is the public stand-in for the row count (a DP count from
    the estimator); the sampling rate needs it, so with ``n_samples=None``
    (or ``alpha=None``, a strength that scales with the count) the plan is
    not known yet and None is returned.  ``max_iter`` is the number of
    epochs T; ``inner_steps`` the epoch length m (default: the smallest m
    meeting the paper's condition (4) for the step size, rounded up to a
    geometric grid with 12% steps, which only lowers the contraction factor);
    ``batch_size`` the expected Poisson mini-batch b.

    A given ``step_size`` with the default epoch length must satisfy
    ``8 L step_size / b <= MAX_VARIANCE_RATIO`` (1/4; condition (4) needs
    less than 1/3).  With a given ``batch_size`` this is public and checked
    at once (a ValueError, also when ``n_samples`` is None, so estimators
    refuse it before they reserve the spend).  With the default batch, b
    comes from ``n_samples`` (the DP count), so instead of a raise that
    would depend on the count, the step is clamped to the largest one
    allowed, :func:`svrg_max_step_size`; ``details["step_size"]`` is the
    step used, ``details["requested_step_size"]`` the one given.
    """
    return _plan_svrg("dp_svrg", n_samples, n_params, epsilon, delta, call)


def plan_dp_svrg_pp(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_svrg_pp``: epoch s (1-based) has ``2**s * m`` inner steps.

    ``K = m (2**(T+1) - 2)`` inner steps in all (the paper's ``2**T m`` is
    off by about a factor 2, see docs/solvers/erm_revisited.md).  ``n_samples`` is
    the public stand-in for the row count; None (not released yet) gives a
    None plan.
    """
    return _plan_svrg("dp_svrg_pp", n_samples, n_params, epsilon, delta, call)


# --------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------


def prox_elastic_net(W, step, alpha, l1_ratio, penalized):
    """``prox_{step r}(W)`` for ``r = alpha (l1_ratio ||w||_1 + (1 - l1_ratio)/2 ||w||^2)`` on ``penalized`` rows.

    Soft-thresholding at ``step * alpha * l1_ratio``, then shrinking by
    ``1 + step * alpha * (1 - l1_ratio)`` (the prox of the elastic net);
    unpenalised rows (the intercept) are returned unchanged.  Returns a new array.
    """
    W = np.array(W, dtype=float, copy=True)
    if alpha <= 0:
        return W
    l1 = step * alpha * l1_ratio
    l2 = step * alpha * (1.0 - l1_ratio)
    block = W[penalized]
    if l1 > 0:
        block = np.sign(block) * np.maximum(np.abs(block) - l1, 0.0)
    if l2 > 0:
        block = block / (1.0 + l2)
    W[penalized] = block
    return W


def snapshot_release(X, y, W, loss, clip_norm, row_norms, noise_std, rng):
    """The noisy snapshot: ``(sum_i clip(grad_i(W)) + N(0, noise_std^2 I), D)``.

    The sum (:func:`~sklearn_dp._clipped_sums.svrg_snapshot_sum`, sensitivity
    ``clip_norm``) is released through the noise gateway.  ``D`` (the
    clipped per-sample derivatives, private) is kept for the inner steps,
    which use it only inside :func:`difference_release`.
    """
    total, D = svrg_snapshot_sum(X, y, W, loss, clip_norm, row_norms)
    return release(total, clip_norm, noise_std, rng, "svrg snapshot gradient sum"), D


def difference_release(
    X_batch, y_batch, row_norms_batch, D_snapshot_batch, W, loss, clip_norm, bound, multiplier, rng
):
    """Noisy sum over a batch of per-sample gradient differences, each clipped to ``bound``.

    The sum is :func:`~sklearn_dp._clipped_sums.svrg_difference_sum` (sensitivity
    ``bound``, add/remove one row), released through the noise gateway with
    noise ``N(0, (multiplier * bound)^2 I)``.
    """
    total = svrg_difference_sum(
        X_batch, y_batch, W, loss, clip_norm, row_norms_batch, D_snapshot_batch, bound
    )
    return release(total, bound, multiplier * bound, rng, "svrg gradient difference sum")


def _difference_bound(kind, clip, row_smoothness, W, W_snapshot):
    if kind == "clip":
        return 2.0 * clip
    return min(2.0 * clip, row_smoothness * float(np.linalg.norm(W - W_snapshot)))


# --------------------------------------------------------------------------
# The solvers
# --------------------------------------------------------------------------


def _fit_svrg(name, arguments):
    """The fit of dp_svrg (each epoch restarts at its snapshot) or dp_svrg_pp (it continues).

    ``arguments`` are the solver's own (its ``locals()``).  The snapshot of
    the next epoch is the average of this epoch's iterates.  Without noise (epsilon=inf: nothing
    private, nothing promised) the default schedule stops after the first
    epoch whose snapshot moved no coefficient by more than
    :data:`NONPRIVATE_SVRG_TOL` times the largest one (it reads the exact
    iterates of a noiseless run); a given max_iter runs in full.
    """
    a = SimpleNamespace(**arguments)
    data, loss = a.data, a.loss
    # A direct call's plan refuses a loss that is not smooth (the estimators' registry does).
    plan = plan_of_call(name, arguments)
    clip = gradient_bound(loss, data.row_norm_bound, a.clip_norm, private=not math.isinf(a.epsilon))
    rng = make_rng(a.random_state)
    details = plan.details
    # The bounded design as an operator on the caller's X (a batch copies its rows only).
    X, y, row_norms = data.design, data.y, data.row_norms
    n_samples, n_columns = X.shape
    step, rate = details["step_size"], details["sampling_probability"]
    # Averages use the public normaliser (an upper confidence bound on n when
    # n is private), never the true n or the drawn batch size.
    expected_batch = rate * data.normalizer
    snapshot_std = details.get("snapshot_multiplier", 0.0) * clip
    multiplier = details.get("difference_multiplier", 0.0)
    row_smoothness = float(loss.smoothness) * data.row_norm_bound**2
    stop = math.isinf(a.epsilon) and a.max_iter is None
    progress = Progress(name, len(details["epoch_lengths"]), a.verbose)
    W_snapshot, W = np.zeros((n_columns, a.n_outputs)), np.zeros((n_columns, a.n_outputs))
    bounds_used = []
    for epoch, length in enumerate(details["epoch_lengths"], start=1):
        snapshot_sum, D_snapshot = snapshot_release(
            X, y, W_snapshot, loss, clip, row_norms, snapshot_std, rng
        )
        snapshot_gradient = snapshot_sum / data.normalizer

        def inner_step(t, W):
            batch = _noise.poisson_sample(n_samples, rate, rng)
            bound = _difference_bound(a.difference_bound, clip, row_smoothness, W, W_snapshot)
            bounds_used.append(bound)
            rows = (X.rows(batch), y[batch], row_norms[batch], D_snapshot[batch])
            noisy = difference_release(*rows, W, loss, clip, bound, multiplier, rng)
            direction = noisy / expected_batch + snapshot_gradient
            W = prox_elastic_net(W - step * direction, step, a.alpha, a.l1_ratio, data.penalized)
            return W, None

        start = W_snapshot.copy() if name == "dp_svrg" else W
        previous, (W, W_snapshot) = W_snapshot, noisy_steps(inner_step, start, length, name=name)
        # The noisy snapshot over the public normaliser: a released value.
        progress(epoch, snapshot_grad_norm=float(np.linalg.norm(snapshot_gradient)))
        if stop and moved_less_than(W_snapshot, previous, NONPRIVATE_SVRG_TOL):
            break  # epsilon=inf only (see NONPRIVATE_SVRG_TOL): nothing is private
    coef = W_snapshot if a.output == "average" else W
    # Public counts only: the expected number of per-sample gradient
    # evaluations from the public stand-in for n (never the true n or the
    # drawn batch sizes), and the mean of the public inner sensitivities.
    steps_run = sum(details["epoch_lengths"][:epoch])
    info = dict(
        gradient_evaluations=float(data.n_public * (epoch + 2.0 * rate * steps_run)),
        mean_difference_bound=float(np.mean(bounds_used)) if bounds_used else 0.0,
    )
    # The honest warning, from public values only: the proxy of the inner
    # steps at the largest difference bound 2 C (inner_noise_proxy).
    proxy = inner_noise_proxy(step, multiplier, clip, rate, data.n_public, coef.size)
    details = dict(clip_norm=clip, difference_bound=a.difference_bound, output=a.output)
    return solver_result(
        name, plan, coef, loss, a.epsilon, proxy=proxy, info=info, n_iter=epoch, **details
    )


def dp_svrg(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    l1_ratio=0.0,
    max_iter=None,
    batch_size=None,
    step_size=None,
    inner_steps=None,
    clip_norm=None,
    difference_bound="smoothness",
    snapshot_share=DEFAULT_SNAPSHOT_SHARE,
    output="average",
    random_state=None,
    verbose=0,
    plan=None,
):
    """DP-SVRG: noisy proximal SVRG for a strongly convex penalised objective.

    Minimises ``mean_i l(x_i @ W, y_i) + alpha * (l1_ratio ||W||_1 +
    (1 - l1_ratio) / 2 ||W||^2)`` (penalty on ``data.penalized`` rows) with
    Algorithm 1 of Wang, Ye and Xu (2017): T epochs, each a noisy full
    gradient at the snapshot followed by m noisy variance-reduced proximal
    steps restarting from the snapshot; the next snapshot (and the output)
    is the average of the epoch's iterates.

    Parameters
    ----------
    data : BoundedData
        Rows bounded in L2 by ``data.row_norm_bound``.
    loss : GLMLoss
        A smooth, convex loss.
    n_outputs : int
    alpha : float
        Penalty strength; the L2 part ``alpha * (1 - l1_ratio)`` is the
        strong convexity ``mu`` the analysis needs (must be > 0).
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same iterations without
        noise (Prox-SVRG).
    l1_ratio : float, default=0
        Elastic-net mixing; the L1 part enters through soft-thresholding.
    max_iter : int, optional
        Number of epochs T; default :func:`default_svrg_epochs`: ``floor(n epsilon / 400)``
        between 1 and ``DEFAULT_SVRG_EPOCHS`` (6) from the public row count, and
        ``DEFAULT_SVRG_EPOCHS_NOISELESS`` = 32 at epsilon=inf.  Without noise
        the default schedule also stops after the first epoch whose snapshot
        moves no coefficient by more than :data:`NONPRIVATE_SVRG_TOL` (1e-3)
        of the largest (``epsilon=inf`` spends nothing and promises nothing,
        so a convergence test on the data is allowed there; ``n_iter`` is then
        the epochs run).  A given ``max_iter`` runs in full, and with noise
        nothing stops early.
    batch_size : int, optional
        Expected size b of the Poisson inner mini-batch (an extension: the
        paper has b = 1, which ``batch_size=1`` reproduces); default
        ``sqrt(n)`` (at least 16).
    step_size : float, optional
        Default ``min(b / (48 L), 1 / L)`` with ``L = loss.smoothness *
        row_norm_bound**2`` (see :func:`svrg_step_size`).  With the default
        ``inner_steps``, at most :func:`svrg_max_step_size` ``= b / (32 L)``:
        a larger one is refused when ``batch_size`` is given, and clamped to
        it when b comes from the row count (``plan.details`` records the
        ``step_size`` used and the ``requested_step_size``).
    inner_steps : int, optional
        Epoch length m; default the smallest m for which the per-epoch
        contraction factor of the paper's analysis is below 1/2 (condition
        (4) with the mini-batch variance; ``m > 192 L / mu`` for b = 1).
    clip_norm : float, optional
        Per-sample gradient clip C, as in :func:`~sklearn_dp.solvers.dp_gd`.
    difference_bound : {"smoothness", "clip"}, default="smoothness"
        Sensitivity of the inner steps: ``min(2C, L ||W - W_snap||)`` or the
        paper's constant ``2C`` (see Privacy).
    snapshot_share : float in (0, 1), default=DEFAULT_SNAPSHOT_SHARE
        Fraction of the Gaussian-DP budget spent on the T snapshots.
    output : {"average", "last"}, default="average"
        The average of the last epoch's iterates (what the theorem covers) or
        the last iterate (equally private).
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_svrg` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        ``n_iter`` is the number of epochs; ``info["gradient_evaluations"]``
        is the expected number of per-sample gradient evaluations (n per
        snapshot, 2 per sampled row per inner step) with ``n = n_public``,
        the public stand-in for the row count (never the true n or the drawn
        batch sizes); ``info["mean_difference_bound"]`` the mean of the inner
        steps' (public) sensitivities.

    Privacy
    -------
    ``info["warnings"]`` (the noise-dominated warning, see
    :mod:`sklearn_dp.solvers._noise_warnings`) is computed from the step size, the
    noise, the released row count and the number of parameters only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Per epoch,
    one Gaussian mechanism on the full data (the snapshot gradient sum,
    :func:`sklearn_dp._clipped_sums.svrg_snapshot_sum`, sensitivity C, multiplier
    ``s_snap``), and per inner step one Poisson-subsampled Gaussian mechanism
    (rate b/n, the sample drawn by :func:`sklearn_dp._noise.poisson_sample`)
    on the sum of per-sample gradient differences, each clipped to ``Delta``
    (:func:`sklearn_dp._clipped_sums.svrg_difference_sum`, sensitivity ``Delta``,
    multiplier ``s_diff``); every release goes through the noise gateway
    (:func:`sklearn_dp._noise.gaussian`); ``Delta = 2C`` or the adaptive
    ``min(2C, L_row ||W - W_snap||)``, a function of earlier noisy releases.
    The T + K mechanisms compose into the recorded DpEvent; ``s_snap``
    spends ``snapshot_share`` of the budget and ``s_diff`` is calibrated with
    the PLD accountant.  The batch indices are drawn independently of the
    data; the step size, m, T, b and C are public.  Sums are averaged with
    ``data.normalizer`` and the rate and epoch lengths use ``data.n_public``
    (the estimators' DP row count; a direct call without one treats n as
    public).  Everything else (the proximal steps, averaging) is
    post-processing of the noisy releases.  Every observable (coefficients,
    ``n_iter``, details, info, the progress lines, which print the norm of
    the noisy snapshot gradient, and exceptions) is a function of public
    values and of the releases: the options are checked before the data is
    read (by estimators before their reservation: the registry's
    constraints and :func:`check_dp_svrg`),
    and a ``step_size`` too large for a batch size derived from the DP count
    is clamped (:func:`plan_dp_svrg`), never refused in a count-dependent way.
    The one data-dependent stop, without noise the default schedule's
    convergence test, runs only at ``epsilon=inf``, where nothing is
    released and nothing is promised.

    Assumptions of the utility guarantee (Theorem 4.2): convex, smooth loss;
    objective ``mu``-strongly convex (``mu = alpha (1 - l1_ratio)``; the
    unpenalised intercept relies on the data for curvature).  The snapshot
    noise, which the paper does not have, tilts each epoch's objective by a
    linear term of norm ``~ s_snap C sqrt(d) / n``.
    """
    return _fit_svrg("dp_svrg", locals())


def dp_svrg_pp(data, loss, **options):
    """DP-SVRG++: noisy proximal SVRG++ for a convex (not necessarily strongly convex) objective.

    Minimises ``mean_i l(x_i @ W, y_i) + alpha * (l1_ratio ||W||_1 +
    (1 - l1_ratio) / 2 ||W||^2)`` (``alpha = 0`` allowed; ``l1_ratio=1`` is
    the Lasso / L1 penalty through soft-thresholding) with Algorithm 2 of
    Wang, Ye and Xu (2017): epoch s (s = 1..T) has ``2**s * m`` noisy
    variance-reduced proximal steps, continues from the previous epoch's
    last iterate, and its snapshot is the average of its iterates.

    Parameters
    ----------
    data, loss, n_outputs, alpha, epsilon, delta, l1_ratio
        As in :func:`dp_svrg` (``alpha`` may be 0).
    max_iter : int, optional
        Number of epochs T; default ``DEFAULT_SVRG_PP_EPOCHS`` (5), or
        ``DEFAULT_SVRG_PP_EPOCHS_NOISELESS`` (9) at ``epsilon=inf``.  Without
        noise the default schedule stops early as in :func:`dp_svrg` (the
        first epoch whose snapshot moves no coefficient by more than
        :data:`NONPRIVATE_SVRG_TOL` of the largest); a given ``max_iter``
        runs in full.
    batch_size : int, optional
        Expected Poisson inner mini-batch b (``1`` is the paper's algorithm);
        default ``sqrt(n)`` (at least 16).
    step_size : float, optional
        Default ``b / ((12 + b) L)``: the paper's ``1 / (13 L)`` at b = 1,
        generalised to a mini-batch (see :func:`svrg_pp_step_size`).
    inner_steps : int, optional
        Base epoch length m (the paper leaves it as Theta(L)); default
        ``n / (4 b)``.
    clip_norm, difference_bound, snapshot_share, output, random_state, verbose
        As in :func:`dp_svrg`.
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_svrg_pp` computed it for these
        arguments; None plans here.

    Returns
    -------
    SolverResult

    Privacy
    -------
    ``info["warnings"]`` (the noise-dominated warning, see
    :mod:`sklearn_dp.solvers._noise_warnings`) is computed from the step size, the
    noise, the released row count and the number of parameters only.

    As :func:`dp_svrg`, with ``K = m (2**(T+1) - 2)`` inner steps: T
    full-data Gaussian snapshots (sensitivity C) and K Poisson-subsampled
    Gaussian difference sums (sensitivity ``Delta``), each released through
    the noise gateway, composed into the recorded DpEvent and calibrated
    with the PLD accountant.  Every observable is a function of public
    values and of the releases (as for :func:`dp_svrg`; the step size is
    used as given).  At ``epsilon=inf`` (no releases, no guarantee) the
    default schedule's early stop reads the exact iterates.

    Assumptions of the utility guarantee (Theorem 4.4): convex, smooth loss;
    no strong convexity needed.
    """
    # dp_svrg's keyword-only parameters and defaults (__signature__, below).
    arguments = _SIGNATURE.bind(data, loss, **options)
    arguments.apply_defaults()
    return _fit_svrg("dp_svrg_pp", arguments.arguments)


# The two solvers take the same arguments: the registry, help() and the
# documentation read dp_svrg_pp's from its signature.
_SIGNATURE = inspect.signature(dp_svrg)
dp_svrg_pp.__signature__ = _SIGNATURE
