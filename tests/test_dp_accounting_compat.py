"""The dp_accounting internals sklearn_dp reads, pinned against dp_accounting's public results.

A dp_accounting release that renames them fails here first, and in a fit
with an error that names what moved.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution

from sklearn_dp._dp_accounting_compat import (
    DpAccountingInternalsError,
    accountant_pld,
    pld_directions,
    pmf_atoms,
)
from sklearn_dp.accounting import NEIGHBORING_RELATION

EPSILONS = [0.0, 0.5, 1.0, 2.0]


def _accountant(event):
    accountant = pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION, 1e-3)
    return accountant.compose(event)


def _delta_from_atoms(losses, probabilities, infinity_mass, epsilon):
    above = losses > epsilon
    return infinity_mass + float(np.sum(probabilities[above] * -np.expm1(epsilon - losses[above])))


def test_the_accountant_pld_is_what_the_accountant_composed():
    event = dpe.ComposedDpEvent([dpe.LaplaceDpEvent(10.0), dpe.GaussianDpEvent(2.0)])
    accountant = _accountant(event)
    pld = accountant_pld(accountant)
    for epsilon in EPSILONS:
        assert pld.get_delta_for_epsilon(epsilon) == accountant.get_delta(epsilon)


@pytest.mark.parametrize(
    "event, n_directions",
    [
        (dpe.GaussianDpEvent(2.0), 1),
        (dpe.PoissonSampledDpEvent(0.1, dpe.GaussianDpEvent(1.0)), 2),
    ],
    ids=["symmetric", "remove-and-add"],
)
def test_each_direction_is_read_and_the_larger_is_the_pld_curve(event, n_directions):
    pld = accountant_pld(_accountant(event))
    directions = pld_directions(pld)
    assert len(directions) == n_directions
    for epsilon in EPSILONS:
        deltas = [pmf.get_delta_for_epsilon(epsilon) for pmf in directions]
        assert max(deltas) == pld.get_delta_for_epsilon(epsilon)
        # Each direction's atoms give its own curve.
        for pmf, delta in zip(directions, deltas):
            assert _delta_from_atoms(*pmf_atoms(pmf), epsilon) == pytest.approx(delta, abs=1e-12)
    if n_directions == 2:
        # The two directions of a subsampled mechanism differ.
        assert deltas[0] != deltas[1]


def test_the_atoms_are_on_the_grid_in_ascending_order():
    pld = privacy_loss_distribution.from_laplace_mechanism(2.0, value_discretization_interval=1e-2)
    (pmf,) = pld_directions(pld)
    losses, probabilities, infinity_mass = pmf_atoms(pmf)
    assert np.all(np.diff(losses) > 0)
    np.testing.assert_allclose(losses / 1e-2, np.round(losses / 1e-2), atol=1e-9)
    assert math.fsum(probabilities) + infinity_mass == pytest.approx(1.0, abs=1e-9)
    assert losses.max() == pytest.approx(0.5, abs=1e-2)  # the Laplace loss is at most 1 / b


def test_a_missing_internal_is_a_clear_error():
    class Moved:
        pass

    with pytest.raises(DpAccountingInternalsError, match=r"Moved\._pld .*_dp_accounting_compat"):
        accountant_pld(Moved())
    pld = privacy_loss_distribution.from_gaussian_mechanism(2.0)
    del pld._pmf_remove  # as if a release renamed it
    with pytest.raises(DpAccountingInternalsError, match="PrivacyLossDistribution._pmf_remove"):
        pld_directions(pld)
