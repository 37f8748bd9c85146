"""Noise warnings: a fit whose noise likely swamps the signal says so.

The noisy first-order solvers (``dp_gd``, ``dp_sgd``, ``dp_svrg``,
``dp_svrg_pp``) add Gaussian noise to every step.  With few rows, a large
label bound or a small epsilon, that noise can leave the model worse than the
trivial predictor (the majority class, or the mean label: R^2 0) without any
sign of it.  This module turns the public quantities of a fit (step size,
noise standard deviation, expected batch, the number of parameters and the
released row count) into a public proxy of the excess loss the noise alone
causes, and into a warning when that proxy exceeds a threshold measured on
the benchmark (``benchmarks/bench_solvers.py``; docs/solvers/gradient_descent.md
and docs/solvers/erm_revisited.md).

The proxy is the stationary excess loss of noisy gradient descent on a
quadratic: a step ``eta`` on a gradient with noise of standard deviation
``s`` per coordinate keeps the iterate at an expected excess loss of about
``eta s^2 p / 2`` (``p`` parameters), whatever the curvature.  Momentum,
averaging, the loss's curvature and the label scale move the constant, so the
thresholds are measured per solver and per kind of loss (regression losses,
whose excess loss is unbounded, fall below R^2 0 much sooner than the bounded
classification losses fall below the majority class).

Privacy: every input is public (options, bounds, epsilon, delta, the plan's
noise, and ``n_public``, the released row count), so the warning and its
text are admissible outputs; solvers return it in ``SolverResult.info
["warnings"]`` and the estimators emit it through their private phase.
"""

from __future__ import annotations

import math

from .._losses import loss_names

#: Classification losses (bounded effect of noise on accuracy); every other
#: loss uses the regression thresholds.
_CLASSIFICATION_LOSSES = loss_names(classification=True)


def _threshold(name, kind):
    """``name``'s registered threshold ``kind`` (``SolverSpec.noise_warning`` or
    ``bound_warning``; where they are measured is said in the registry), or None."""
    from ._registry import SOLVERS

    return getattr(SOLVERS.get(name), kind, None)


_TRIVIAL_AND_ALTERNATIVES = {  # by whether the loss is a classification loss
    False: ("the mean label (R^2 0)", "solver='dp_newton' or 'dp_ssp' (squared loss) or 'dp_cd'"),
    True: ("the majority class", "solver='dp_newton' or 'dp_cd'"),
}


def noise_excess_proxy(step_size, noise_std, batch, n_params):
    """Public proxy of the excess loss the step noise alone causes: ``eta (s / b)^2 p / 2``.

    ``noise_std`` is the standard deviation of the noise added to a sum of
    clipped gradients over an (expected) batch of ``batch`` rows, so the
    averaged gradient's noise has ``s / b`` per coordinate.  All inputs are
    public (``batch`` comes from the released row count).
    """
    if not noise_std > 0 or not batch > 0 or not step_size > 0:
        return 0.0
    return 0.5 * float(step_size) * (float(noise_std) / float(batch)) ** 2 * int(n_params)


def is_classification(loss_name):
    """Whether ``loss_name`` is a classification loss (bounded effect of noise on accuracy)."""
    return loss_name in _CLASSIFICATION_LOSSES


def _noise_threshold(name, loss_name):
    """``name``'s threshold on the noise proxy for ``loss_name``'s kind of loss (None: none)."""
    thresholds = _threshold(name, "noise_warning")
    return None if thresholds is None else thresholds[is_classification(loss_name)]


def is_quiet(name, loss_name, proxy, fraction=1.0):
    """Whether ``proxy`` stays below ``fraction`` of ``name``'s threshold for ``loss_name`` (public)."""
    threshold = _noise_threshold(name, loss_name)
    return threshold is None or proxy < fraction * threshold


def noise_dominated_warning(name, loss_name, proxy, *, epsilon):
    """A warning when ``proxy`` exceeds ``name``'s threshold for ``loss_name``; else None.

    The text names the proxy, the threshold and what to do instead.  Inputs
    are public (see the module docstring).
    """
    threshold = _noise_threshold(name, loss_name)
    if threshold is None or not proxy > 0 or math.isinf(epsilon) or proxy < threshold:
        return None
    trivial, alternatives = _TRIVIAL_AND_ALTERNATIVES[is_classification(loss_name)]
    return (
        f"{name}: the noise of its steps likely outweighs the signal at epsilon={epsilon:g} "
        f"with this row count and these bounds (public estimate of the excess loss from noise "
        f"{proxy:.3g}, above {threshold:g}): the model may predict worse than {trivial}. Use "
        f"{alternatives}, which spend the budget on far fewer noisy releases; or a larger "
        "epsilon, tighter public bounds (y_bound, data_norm) or more rows."
    )


def frank_wolfe_warning(name, loss_name, n_public, n_params, epsilon, delta, radius):
    """The honest warning for ``frank_wolfe`` / ``vr_frank_wolfe``; None when quiet.

    The proxy is the public error bound of ``frank_wolfe``'s default schedule
    (:func:`~sklearn_dp.solvers._frank_wolfe._fw_error_bound` at
    :func:`~sklearn_dp.solvers._frank_wolfe.default_frank_wolfe_iterations`
    steps), a function of the released row count, the number of parameters,
    epsilon, delta and the radius only.  For ``vr_frank_wolfe`` it is also its
    fallback's decision: where it warns, the solver returns the zero model
    without a selection (:func:`~sklearn_dp.solvers.vr_frank_wolfe`), and the
    text says so.
    """
    from ._frank_wolfe import fw_public_error_bound

    threshold = _threshold(name, "bound_warning")
    if threshold is None or is_classification(loss_name) or math.isinf(epsilon) or radius is None:
        return None
    bound = fw_public_error_bound(n_public, n_params, epsilon, delta, radius)
    if bound < threshold:
        return None
    if name == "vr_frank_wolfe":  # its fits are then below the zero model: it returns that
        return (
            "vr_frank_wolfe: returned the zero model (every coefficient 0: the model predicts "
            f"its label centre) without running: its public error bound at epsilon={epsilon:g} "
            f"with this row count, radius and number of features ({bound:.3g}, above "
            f"{threshold:g}) is vacuous. The fit's charge stands. Use solver='frank_wolfe' (or "
            "'dp_ssp' / 'dp_cd' for the penalised form), more rows or a larger epsilon."
        )
    return (
        f"{name}: the noise of its vertex choices likely outweighs the signal at "
        f"epsilon={epsilon:g} with this row count, radius and number of features (public "
        f"error bound {bound:.3g}, above {threshold:g}): the model may predict worse than the "
        f"mean label (R^2 0). Use solver='dp_ssp' or 'dp_cd' (the penalised form), a smaller "
        "radius, a larger epsilon or more rows."
    )
