"""A solver's options checked by the types and ranges the registry declares for them.

The estimators validate ``solver_options`` against the registry's constraints
(:data:`~sklearn_dp.solvers._registry.OPTION_CONSTRAINTS` and a spec's
``option_constraints``) before they reserve the spend.  Direct calls of a
solver, its ``plan`` and its ``check`` run the same validation through
:func:`check_declared_options`, so each range is declared once.
"""

from __future__ import annotations

from .._sklearn_compat import validate_parameter_constraints


def check_declared_options(solver, options):
    """Raise a ValueError for an option of ``solver`` outside its declared type or range.

    Parameters
    ----------
    solver : str
        A registered solver name.
    options : dict
        Option names and values (public inputs); names without a declared
        constraint are left to the solver's own checks.
    """
    from ._registry import SOLVERS  # filled once the package is imported

    constraints = SOLVERS[solver].constraints_of(options)
    validate_parameter_constraints(
        constraints, {key: options[key] for key in constraints}, caller_name=solver
    )
