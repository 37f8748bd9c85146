"""The plan of a solver called directly, without the plan an estimator charged for."""

from __future__ import annotations

import inspect

__all__ = ["plan_direct_call"]


def plan_direct_call(plan_function, data, n_params, epsilon, delta, values):
    """Plan a direct call of a solver (no ``plan=``) as the estimators would plan it.

    Parameters
    ----------
    plan_function : callable
        The solver's ``plan_*``: ``plan_function(n_samples, n_params,
        epsilon, delta, **options)``.
    data : BoundedData
        The bounded data: its public stand-in for the row count
        ``data.n_public`` and its row bound ``data.row_norm_bound``.
    n_params : int
        Number of coefficients.
    epsilon, delta : float
        The solver's target guarantee.
    values : dict
        The solver's arguments by name (its ``locals()``): the plan receives
        those of its keyword-only parameters found there, and the row bound
        if it takes one.

    Returns
    -------
    PrivacyPlan
        The plan, from public inputs only.
    """
    parameters = inspect.signature(plan_function).parameters
    values = dict(values, row_norm_bound=data.row_norm_bound)
    options = {
        name: values[name]
        for name, parameter in parameters.items()
        if parameter.kind is parameter.KEYWORD_ONLY and name in values
    }
    return plan_function(data.n_public, n_params, epsilon, delta, **options)
