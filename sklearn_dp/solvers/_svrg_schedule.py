"""Public hyper-parameters of ``dp_svrg`` and ``dp_svrg_pp``: epochs, batches, steps, epoch lengths.

Functions of public inputs only (the released row count ``n_public``, the
bounds, epsilon, the options); :mod:`sklearn_dp.solvers._svrg` plans and
runs the solvers with them.  The analysis is that of Wang, Ye and Xu (2017)
with a Poisson mini-batch (docs/solvers/erm_revisited.md).
"""

from __future__ import annotations

import math

#: Default number of epochs of dp_svrg: the best of {1, 2, 4, 6, 8} at every epsilon in
#: {0.2, 0.5, 1} on the 200000-row benchmark (docs/solvers/erm_revisited.md).  The paper's
#: T = log2(n^2 eps^2 mu / (d G^2 ln(1/delta))) (about 19 there) assumes the worst-case
#: contraction 1/2 per epoch; measured epochs contract much faster, and every epoch adds noise.
DEFAULT_SVRG_EPOCHS = 6

#: Rows times epsilon per default epoch of dp_svrg (public: the released row
#: count and epsilon).  Every epoch adds noise, and with few rows the noise of
#: six epochs swamps the signal: on breast cancer (455 training rows) six
#: epochs fall below the majority class at epsilon 0.1 and 0.5 (median 0.63,
#: worst 0.27) where one epoch gives 0.77 / 0.80, and on diabetes (353 rows)
#: R^2 -6.7 at epsilon 1 against 0.16 with one epoch (a default must never
#: make a fit worse than the trivial predictor).  ``n epsilon / 400`` epochs (at least
#: one, at most DEFAULT_SVRG_EPOCHS) keeps six on the 200000-row benchmark at
#: every epsilon >= 0.012.
SVRG_ROWS_EPSILON_PER_EPOCH = 400.0


def default_svrg_epochs(n_samples, epsilon, cap=DEFAULT_SVRG_EPOCHS):
    """Default epochs from the public (released) row count and epsilon."""
    if n_samples is None:
        return cap
    return int(min(cap, max(1, math.floor(n_samples * epsilon / SVRG_ROWS_EPSILON_PER_EPOCH))))


#: Default epochs of dp_svrg without noise (epsilon = inf; epsilon is public):
#: every private epoch adds noise, a noiseless one only costs time (at most 8
#: passes, SVRG_MAX_EPOCH_PASSES); 6 epochs stopped 20% above the logistic
#: optimum of breast cancer (bench_solvers.py), 32 reach 0.6%.
DEFAULT_SVRG_EPOCHS_NOISELESS = 32

#: Default number of (doubling) epochs of dp_svrg_pp.
DEFAULT_SVRG_PP_EPOCHS = 5

#: Default epochs of dp_svrg_pp without noise (epsilon = inf; epsilon is public):
#: 5 doubling epochs stopped 42% / 9.4% above the logistic / ridge optima of
#: breast cancer / diabetes (bench_solvers.py); 9 reach 0.16% / 0.77% (each epoch
#: doubles, so 9 epochs are 1022 m inner steps, about 255 passes).
DEFAULT_SVRG_PP_EPOCHS_NOISELESS = 9

#: Largest ``a = 8 L step_size / b`` for which dp_svrg derives its epoch length
#: from condition (4) of the paper.  (4) needs ``a < 1/3``, and the epoch
#: length it asks for grows without bound as ``a`` approaches 1/3; at ``a = 1/4``
#: it is about 4/3 of its minimum (reached at ``a = 1/6``, the default step).
MAX_VARIANCE_RATIO = 0.25


def default_svrg_batch_size(n_samples):
    """Expected inner mini-batch from (a stand-in for) n: ``sqrt(n)``, at least 16 (at most n)."""
    return int(min(n_samples, max(16, round(math.sqrt(n_samples)))))


def _two_digits(value):
    return float(f"{value:.2g}")


#: Points per decade of the geometric grid that default epoch lengths are
#: rounded up to (steps of about 12%).
EPOCH_GRID_POINTS = 20


def _ceil_to_grid(value):
    """Smallest integer >= value on the geometric grid ``10 ** (k / EPOCH_GRID_POINTS)``, rounded up.

    The default epoch length grows with the L2 strength's inverse ``C n``, so
    with a noisy count it differs on every fit; on a grid with 12% steps, fits
    on counts of similar size share one cached calibration.  Rounding up only
    lowers the contraction factor of the analysis.
    """
    k = math.ceil(EPOCH_GRID_POINTS * math.log10(value) - 1e-9)
    return int(math.ceil(10.0 ** (k / EPOCH_GRID_POINTS) - 1e-9))


def svrg_sampling(n_samples, batch_size=None):
    """``(rate, nominal_batch)`` of the inner Poisson sampling, from the public stand-in for n.

    The rate ``batch_size / n`` (default batch :func:`default_svrg_batch_size`)
    is rounded to two significant digits; ``nominal_batch`` is the given
    ``batch_size``, or ``rate * n`` rounded to two digits, and enters the step
    size and epoch length.  Both are then stable under the noise of a DP count.
    """
    if batch_size is None:
        rate = min(1.0, _two_digits(default_svrg_batch_size(n_samples) / n_samples))
        return rate, max(1.0, _two_digits(rate * n_samples))
    # A given batch_size is a count >= 1: the registry's constraint (COUNT).
    return min(1.0, _two_digits(batch_size / n_samples)), float(batch_size)


def svrg_step_size(smoothness, batch_size=1):
    """Step size of dp_svrg: ``min(b / (48 L), 1 / L)``.

    With ``a = 8 L eta / b``, condition (4) of the paper, ``1 / (eta (1 - a)
    mu m) + a (m + 1) / (m (1 - a)) < 1/2``, needs the fewest inner steps at
    ``a = 1/6``, i.e. ``eta = b / (48 L)``; for ``b = 1`` this is docs/solvers/erm_revisited.md's
    corrected ``eta = 1 / (48 L)`` (the paper's ``1 / (12 L)`` cannot meet
    (4)).  The proximal step lemma (Xiao and Zhang 2014, Lemma 3) needs
    ``eta <= 1 / L``, which caps it for ``b >= 48``.
    """
    return min(batch_size / (48.0 * smoothness), 1.0 / smoothness)


def svrg_max_step_size(smoothness, batch_size=1):
    """Largest step dp_svrg derives an epoch length for: ``MAX_VARIANCE_RATIO * b / (8 L)``.

    That is ``b / (32 L)``: ``a = 8 L eta / b = 1/4`` (condition (4) of the
    paper needs ``a < 1/3``; see :data:`MAX_VARIANCE_RATIO`).
    """
    return MAX_VARIANCE_RATIO * batch_size / (8.0 * smoothness)


def svrg_inner_steps(smoothness, strong_convexity, step_size, batch_size=1):
    """Smallest inner length m meeting condition (4) of the paper (contraction < 1/2 per epoch).

    ``m > (1 / (eta (1 - a) mu) + a / (1 - a)) / (1/2 - a / (1 - a))`` with
    ``a = 8 L eta / b``.  For ``b = 1`` and ``eta = 1 / (48 L)`` this is
    ``m > 192 L / mu + 2/3``.  Raises if ``eta`` is too large for (4).
    """
    if not strong_convexity > 0:
        raise ValueError("dp_svrg needs a strongly convex objective (an L2 penalty alpha > 0).")
    # a = 8 L eta / b: the variance constant of Prox-SVRG's analysis (the
    # paper's 8L, eq. 35) divided by the mini-batch size, since a Poisson
    # mini-batch of expected size b normalised by b has variance at most
    # (1/b) mean_i ||d_i||^2.
    a = 8.0 * smoothness * step_size / batch_size
    if a >= 1.0 / 3.0:
        raise ValueError(
            f"step_size={step_size:.4g} is too large for the dp_svrg analysis with batch_size="
            f"{batch_size} (needs 8 L step_size / batch_size < 1/3); lower it or pass inner_steps."
        )
    bound = (1.0 / (step_size * (1.0 - a) * strong_convexity) + a / (1.0 - a)) / (
        0.5 - a / (1.0 - a)
    )
    return int(math.floor(bound)) + 1


#: Longest default epoch of dp_svrg, in passes over the data (``m b / n``).  Condition (4)
#: asks for ``m ~ 192 L / (mu b)`` inner steps, which for the L2 strength ``1 / (C n)`` of
#: DPLogisticRegression is hundreds of passes per epoch and grows with n (423 s for one fit
#: at n = 200000); practical SVRG uses an epoch of one or two passes
#: (Johnson and Zhang 2013 use m = 2n); eight passes reach the noiseless optimum of breast
#: cancer in the default six epochs.  Capping m only shortens the schedule: the
#: calibration covers whatever m is used.
SVRG_MAX_EPOCH_PASSES = 8.0


def default_svrg_inner_steps(smoothness, strong_convexity, step_size, batch_size, n_samples):
    """Default epoch length of dp_svrg, from public values only.

    The smallest length meeting condition (4) of the paper
    (:func:`svrg_inner_steps`), capped at :data:`SVRG_MAX_EPOCH_PASSES` passes
    (``8 n / b`` steps of expected batch ``b``), both rounded up to the
    geometric grid of :func:`_ceil_to_grid`.  ``n_samples`` is the public
    stand-in for the row count (the DP count); the cost of an epoch is then
    at most eight passes whatever the L2 strength.
    """
    theory = svrg_inner_steps(smoothness, strong_convexity, step_size, batch_size)
    cap = SVRG_MAX_EPOCH_PASSES * float(n_samples) / float(batch_size)
    return _ceil_to_grid(max(1.0, min(float(theory), cap)))


def svrg_pp_step_size(smoothness, batch_size=1):
    """Step size of dp_svrg_pp: ``b / ((12 + b) L)``.

    The analysis (B.5, eqs. 50-52) needs ``4 eta L' / (1 - eta L) = 1/3``
    where ``L' = L / b`` is the variance constant of a Poisson mini-batch of
    expected size b; for ``b = 1`` this is the paper's ``1 / (13 L)``.
    """
    return batch_size / ((12.0 + batch_size) * smoothness)


def default_svrg_pp_inner_steps(n_samples, batch_size):
    """Base epoch length of dp_svrg_pp: ``n / (4 b)`` steps (Allen-Zhu and Yuan's m ~ n/4), two digits."""
    return max(1, int(_two_digits(n_samples / (4.0 * batch_size))))
