"""The one place sklearn_dp reads dp_accounting internals that are not public API.

dp_accounting 0.6 composes a privacy-loss distribution (PLD) but gives no
public way to read it back from its accountant, nor to read each direction of
add/remove-one neighbours apart, nor a distribution's atoms.  The curve
comparisons of :func:`sklearn_dp.accounting.mixture_delta` and the privacy
report's trade-off curves need all three.  Reading them here only means that
a dp_accounting release that renames them is a one-file fix, and that it
fails with :class:`DpAccountingInternalsError` naming what moved instead of
an ``AttributeError`` deep in a fit (``tests/test_dp_accounting_compat.py``
pins each reading against dp_accounting's public results).
"""

from __future__ import annotations

import numpy as np

__all__ = ["DpAccountingInternalsError", "accountant_pld", "pld_directions", "pmf_atoms"]


class DpAccountingInternalsError(RuntimeError):
    """dp_accounting no longer has an internal attribute that sklearn_dp reads."""


def _read(owner, name, what):
    try:
        return getattr(owner, name)
    except AttributeError:
        import dp_accounting

        version = getattr(dp_accounting, "__version__", "unknown")
        raise DpAccountingInternalsError(
            f"dp_accounting {version} has no {type(owner).__name__}.{name} ({what}), which "
            "sklearn_dp reads in sklearn_dp/_dp_accounting_compat.py; install a dp_accounting "
            "release that sklearn_dp supports (see its pyproject.toml) or update that module."
        ) from None


def accountant_pld(accountant):
    """The privacy-loss distribution a ``PLDAccountant`` has composed so far.

    Parameters
    ----------
    accountant : dp_accounting.pld.pld_privacy_accountant.PLDAccountant
        The accountant.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Its composed distribution (not a copy: compose onto it, do not change it).
    """
    return _read(accountant, "_pld", "the composed privacy-loss distribution")


def pld_directions(pld):
    """Each direction of add/remove-one neighbours of ``pld``: its probability mass functions.

    Parameters
    ----------
    pld : dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        The distribution.

    Returns
    -------
    list
        ``[remove]`` for a symmetric distribution, else ``[remove, add]``;
        each has dp_accounting's public ``get_delta_for_epsilon``, and
        ``pld.get_delta_for_epsilon`` is the larger of theirs.
    """
    remove = _read(pld, "_pmf_remove", "the remove direction's mass function")
    if _read(pld, "_symmetric", "whether both directions are one"):
        return [remove]
    return [remove, _read(pld, "_pmf_add", "the add direction's mass function")]


def pmf_atoms(pmf):
    """``(losses, probabilities, infinity_mass)`` of one direction's mass function, losses ascending.

    Parameters
    ----------
    pmf : dp_accounting.pld.pld_pmf.PLDPmf
        One direction of a distribution (:func:`pld_directions`).

    Returns
    -------
    losses, probabilities : ndarray
        The finite privacy losses and their masses.
    infinity_mass : float
        The mass of an infinite loss.
    """
    dense = pmf.to_dense_pmf()
    probabilities = np.asarray(_read(dense, "_probs", "the atoms' masses"), dtype=float)
    lower = _read(dense, "_lower_loss", "the lowest loss, in grid steps")
    step = _read(dense, "_discretization", "the loss grid")
    losses = (np.arange(probabilities.size) + lower) * step
    return losses, probabilities, float(_read(dense, "_infinity_mass", "the infinite loss's mass"))
