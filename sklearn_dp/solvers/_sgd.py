"""Poisson-subsampled DP-SGD (``dp_sgd``) for GLM losses.

Each step draws a Poisson sample of the rows (each row independently with
probability q), clips every per-sample gradient in closed form (GLM gradients
are a scalar times x_i, so the clip is a scalar per row), adds Gaussian noise
to the clipped sum and divides by the expected batch size ``q * n``.  The whole
fit is ``T`` adaptive compositions of the Poisson-subsampled Gaussian
mechanism, calibrated with dp_accounting's PLD accountant.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

from .. import _noise
from .._clipped_sums import clipped_gradient_sum
from ._common import make_rng
from ._gradient_descent import gradient_bound, noisy_descent
from ._noise_warnings import noise_excess_proxy
from ._noisy_steps import gaussian_plan, plan_of_call, solver_result

#: Default Poisson sampling rate (expected batch: 10% of the rows).
DEFAULT_SAMPLING_RATE = 0.1
#: Default number of expected passes over the data.
DEFAULT_EPOCHS = 10

#: Default epochs without noise (epsilon = inf; epsilon is public): a
#: noiseless step costs only time; 10 epochs stopped 2% above the logistic
#: optimum of breast cancer (bench_solvers.py), 30 reach it (gap 0.04%).
DEFAULT_EPOCHS_NOISELESS = 30


def plan_dp_sgd(n_samples, n_params, epsilon, delta, call):
    """Privacy plan of ``dp_sgd``: T Poisson-subsampled Gaussian steps at rate q.

    Parameters
    ----------
    n_samples : float or None
        Public stand-in for the row count (a DP count from the estimator).  It
        is needed only to turn a ``batch_size`` into a rate; with
        ``batch_size`` given and ``n_samples=None`` the plan is not known yet
        and None is returned.
    n_params : int
        Unused.
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` gives a noiseless plan.
    call : SolverCall
        The arguments of the run (a :class:`~sklearn_dp.solvers.SolverCall`).
        ``batch_size`` is the expected batch size: the rate is ``min(1,
        batch_size / n_samples)`` rounded to two significant digits, or
        ``DEFAULT_SAMPLING_RATE`` whatever n without it.  ``max_iter`` is
        the number of steps; default ``DEFAULT_EPOCHS`` expected passes,
        ``ceil(DEFAULT_EPOCHS / rate)`` (``DEFAULT_EPOCHS_NOISELESS`` = 30
        at epsilon=inf).
    """
    batch_size, max_iter = call.batch_size, call.max_iter
    if batch_size is None:
        rate = DEFAULT_SAMPLING_RATE
    elif n_samples is None:
        return None
    else:
        # Two significant digits: the stand-in for n is a noisy count, and a
        # rounded rate lets fits share one (cached) calibration.
        rate = min(1.0, float(f"{batch_size / n_samples:.2g}"))
    if max_iter is None:
        epochs = DEFAULT_EPOCHS_NOISELESS if math.isinf(epsilon) else DEFAULT_EPOCHS
        max_iter = math.ceil(epochs / rate)
    return gaussian_plan(epsilon, delta, max_iter, dict(sampling_probability=rate), rate)


def dp_sgd(
    data,
    loss,
    *,
    n_outputs,
    alpha,
    epsilon,
    delta,
    max_iter=None,
    batch_size=None,
    step_size=None,
    clip_norm=None,
    momentum="nesterov",
    radius=None,
    coef_init=None,
    random_state=None,
    verbose=0,
    plan=None,
):
    """DP-SGD with Poisson subsampling on the L2-penalised average loss.

    Parameters
    ----------
    data : BoundedData
        Clipped rows and labels.
    loss : GLMLoss
        Any loss with a bounded derivative, or any loss with ``clip_norm`` set.
        Non-smooth losses need ``step_size``.
    n_outputs : int
        Columns of the coefficient matrix.
    alpha : float
        L2 penalty strength on the average loss.
    epsilon, delta : float
        Target guarantee; ``epsilon=inf`` runs the same steps with no noise.
    max_iter : int, optional
        Number of steps; default ``DEFAULT_EPOCHS`` expected passes (30 at epsilon=inf).
    batch_size : int, optional
        Expected batch size; the sampling rate is ``batch_size / n_public``.
        Default: rate ``DEFAULT_SAMPLING_RATE``.
    step_size : float, optional
        Default ``1 / L`` for smooth losses (the objective's smoothness from
        public bounds); ``radius / (C sqrt(T))`` (radius 1 when unconstrained)
        for non-smooth ones.
    clip_norm : float, optional
        Per-sample gradient clip, at most the loss's own bound; default as in
        :func:`~sklearn_dp.solvers.dp_gd`.
    momentum : {"nesterov", None}
        As in :func:`~sklearn_dp.solvers.dp_gd` (post-processing).
    radius : float, optional
        L2-ball constraint on the coefficients, as in :func:`~sklearn_dp.solvers.dp_gd`.
    coef_init : ndarray of shape (n_columns, n_outputs), optional
        Starting point instead of 0 (a warm start from a released model:
        post-processing, it costs nothing).
    random_state : None, int, RandomState or Generator
    verbose : int
    plan : PrivacyPlan or None
        The plan to run, as :func:`plan_dp_sgd` computed it for these
        arguments (estimators hand down the plan their budget was charged
        for); None plans here.

    Returns
    -------
    SolverResult
        The average of the iterates of the second half of the run.  A step
        copies its batch's rows of X only (``data.design.rows``), never a
        clipped or intercept-augmented X.

    Privacy
    -------
    ``info["warnings"]`` (the noise-dominated warning, see
    :mod:`sklearn_dp.solvers._noise_warnings`) is computed from the step size, the
    noise, the released row count and the number of parameters only.

    (epsilon, delta)-DP under add/remove-one-row neighbouring.  Each step is
    the Gaussian mechanism (noise ``N(0, (sigma C)^2 I)``, released through
    the noise gateway, :func:`sklearn_dp._noise.gaussian`) on the sum of
    per-sample gradients clipped to ``C``
    (:func:`sklearn_dp._clipped_sums.clipped_gradient_sum`) over a Poisson sample
    with rate ``q = batch_size / n`` (drawn by
    :func:`sklearn_dp._noise.poisson_sample`); adding or removing a row
    changes the sum by at most ``C``.  The T steps compose as ``SelfComposed(PoissonSampled(q,
    Gaussian(sigma)), T)``, and sigma is the smallest multiplier for which the
    PLD accountant certifies (epsilon, delta).  Dividing by the public
    expected batch size ``q * data.normalizer`` (not the drawn one, nor the
    true n) keeps the batch size and the row count private.  Public: bounds,
    q, T, step size, alpha.  Every observable (coefficients, ``n_iter``,
    details, progress lines of the noisy gradient's norm, exceptions) is a
    function of public values and of the releases; options are checked
    before the data is read (by estimators before their reservation, with
    the registry's constraints).  With ``data.sample_weight`` (weights in
    ``[0, data.weight_bound]``, the public ``max_weight``) each clipped
    per-sample gradient is multiplied by its row's weight: the sensitivity,
    and the noise, are ``max_weight * C``.
    """
    plan = plan_of_call("dp_sgd", locals())
    # The bounded design as an operator on the caller's X: a step copies its
    # batch's rows only (Design.rows), never a clipped or augmented X.
    X, y = data.design, data.y
    n_samples, n_columns = X.shape
    rate = plan.details["sampling_probability"]
    bound = gradient_bound(loss, data.row_norm_bound, clip_norm, private=not math.isinf(epsilon))
    if step_size is None:
        if loss.smoothness is None:
            # Projected subgradient method: D / (G sqrt(T)) with D the radius
            # of the constraint ball (1 without one), all public.
            step_size = (radius or 1.0) / (bound * math.sqrt(plan.n_steps))
        else:
            step_size = 1.0 / (loss.smoothness * data.row_norm_bound**2 + alpha)
    rng = make_rng(random_state)
    weights = getattr(data, "sample_weight", None)
    sensitivity = float(getattr(data, "weight_bound", 1.0)) * bound
    noise_std = plan.noise_multiplier * sensitivity

    def gradient_sum(V):
        batch = _noise.poisson_sample(n_samples, rate, rng)
        batch_weights = None if weights is None else weights[batch]
        return clipped_gradient_sum(
            X.rows(batch), y[batch], V, loss, bound, data.row_norms[batch], batch_weights
        )

    # The expected batch size from the public stand-in for n (an upper
    # confidence bound when it is a DP count), never the drawn batch size.
    expected_batch = rate * data.normalizer
    _, W_tail = noisy_descent("dp_sgd", SimpleNamespace(**locals()), expected_batch)
    # Public values only (step, noise, expected batch from the released row
    # count): the honest warning.
    proxy = noise_excess_proxy(step_size, noise_std, rate * data.n_public, n_columns * n_outputs)
    details = dict(step_size=step_size, clip_norm=bound, noise_std=noise_std, momentum=momentum)
    return solver_result("dp_sgd", plan, W_tail, loss, epsilon, proxy=proxy, **details)
