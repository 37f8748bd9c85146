"""Marking an exception that may leave a private phase (internal to the library).

After a fit's reservation, an exception escapes as it is only if it is a
function of public inputs and noisy releases; every other exception is
withheld (:class:`~sklearn_dp.exceptions.PrivateFitError`,
:class:`sklearn_dp._protocol.PrivatePhase`).  Solver and protocol code marks
the admissible ones here.
"""

__all__ = ["public_error"]


def public_error(exception):
    """Mark ``exception`` as a function of public inputs and noisy releases only.

    Exceptions raised after a fit's reservation are withheld (replaced by
    :class:`PrivateFitError`) unless marked; mark only exceptions whose
    occurrence and message depend on nothing but public values and released
    (noisy) values.  Returns the exception, for ``raise public_error(...)``.
    """
    exception.__sklearn_dp_public__ = True
    return exception
