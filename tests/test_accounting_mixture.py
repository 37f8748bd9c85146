"""A pure-DP release followed by one of two branches it picks: the bound of ``mixture_delta``.

Checked against curves computed by hand (scipy's normal and quadrature) and
against dp_accounting's own accountant; the callers' mixtures (a fit's two
shares, a search's runs against the default's refit) are checked where they
are made (``test_solver_share_branches.py``, ``test_model_selection_private.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import gaussian_curve, laplace_gaussian_curve
from dp_accounting import dp_event as dpe
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution

from sklearn_dp import accounting
from sklearn_dp.accounting import NEIGHBORING_RELATION, PureEpsilonDpEvent, mixture_delta

EPSILON, DELTA, COUNT_EPSILON = 1.0, 1e-5, 0.02
COUNT = dpe.LaplaceDpEvent(1.0 / COUNT_EPSILON)
# A default fit's own count and its Gaussian steps: with COUNT, (1, 0.97e-5)-DP.
SIGMA = 3.81
REFERENCE = dpe.ComposedDpEvent([dpe.LaplaceDpEvent(20.0), dpe.GaussianDpEvent(SIGMA)])


def _lower(event, epsilon):
    return accounting._lower_pld(event).get_delta_for_epsilon(epsilon)


@pytest.mark.parametrize("epsilon", [0.9, 1.0, 1.1])
def test_the_reference_lower_curve_is_below_the_exact_curve_and_close(epsilon):
    exact = gaussian_curve(SIGMA, epsilon)
    assert exact * (1 - 2e-3) <= _lower(dpe.GaussianDpEvent(SIGMA), epsilon) <= exact
    # Gaussian steps are folded into one Gaussian.
    steps = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(SIGMA * math.sqrt(5)), 5)
    assert _lower(steps, epsilon) == pytest.approx(_lower(dpe.GaussianDpEvent(SIGMA), epsilon))
    # Randomized response (a pure part, as the PLD accountant composes it)
    # with a Gaussian: two atoms.
    pure = dpe.ComposedDpEvent([PureEpsilonDpEvent(0.1, "exponential mechanism"), steps])
    high = math.exp(0.1) / (1 + math.exp(0.1))
    exact = high * gaussian_curve(SIGMA, epsilon - 0.1) + (1 - high) * gaussian_curve(
        SIGMA, epsilon + 0.1
    )
    assert exact * (1 - 2e-3) <= _lower(pure, epsilon) <= exact
    # A Laplace part with a Gaussian.
    exact = laplace_gaussian_curve(20.0, SIGMA, epsilon)
    assert exact * (1 - 2e-3) <= _lower(REFERENCE, epsilon) <= exact


def test_parts_without_a_known_pair_are_left_out():
    zcdp = dpe.ComposedDpEvent([dpe.ZCDpEvent(0.5), dpe.GaussianDpEvent(SIGMA)])
    assert _lower(zcdp, 1.0) == pytest.approx(_lower(dpe.GaussianDpEvent(SIGMA), 1.0))
    assert accounting._lower_pld(dpe.ZCDpEvent(0.5)) is None


def test_a_subsampled_reference_is_below_its_pessimistic_curve_in_each_direction():
    from sklearn_dp._dp_accounting_compat import pld_directions

    event = dpe.PoissonSampledDpEvent(0.2, dpe.GaussianDpEvent(0.8))
    lower = pld_directions(accounting._lower_pld(event))
    upper = pld_directions(accounting._upper_pld(event))
    assert len(lower) == len(upper) == 2
    for low, up in zip(lower, upper):
        for epsilon in (0.05, 0.1, 0.2):
            # Close (the truncated tails add 1e-15 to the pessimistic one).
            assert 0.99 * up.get_delta_for_epsilon(epsilon) - 1e-14 <= low.get_delta_for_epsilon(
                epsilon
            )
            assert low.get_delta_for_epsilon(epsilon) <= up.get_delta_for_epsilon(epsilon)


def test_a_guarantee_curve_is_its_dominating_pair():
    epsilon, delta = 0.98, 3e-6
    curve = accounting._guarantee_curve(epsilon, delta)
    pair = privacy_loss_distribution.from_privacy_parameters(
        pld_common.DifferentialPrivacyParameters(epsilon, delta),
        value_discretization_interval=1e-6,
    )
    xs = np.linspace(-epsilon, 2 * epsilon, 31)
    np.testing.assert_allclose(curve(xs), pair.get_delta_for_epsilon(xs), rtol=1e-5)
    assert curve([-2 * epsilon])[0] == 1.0


def _composed_delta(events, epsilon):
    accountant = pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION, 1e-4)
    for event in events:
        accountant.compose(event)
    return accountant.get_delta(epsilon)


def test_a_branch_below_the_reference_costs_nothing_and_above_it_one_for_one():
    basic = EPSILON - COUNT_EPSILON
    composed = _composed_delta([COUNT, REFERENCE], EPSILON)
    # Below the reference's curve at epsilon + count: the composition alone.
    below = 0.5 * laplace_gaussian_curve(20.0, SIGMA, EPSILON + COUNT_EPSILON)
    bound = mixture_delta(COUNT, REFERENCE, (basic, below), EPSILON, COUNT_EPSILON)
    assert bound == pytest.approx(composed, rel=1e-9)
    # Above it, the excess over the reference's (lower) curve adds.
    above = 2.0 * laplace_gaussian_curve(20.0, SIGMA, EPSILON + COUNT_EPSILON)
    first = mixture_delta(COUNT, REFERENCE, (basic, above), EPSILON, COUNT_EPSILON)
    second = mixture_delta(COUNT, REFERENCE, (basic, above + 1e-7), EPSILON, COUNT_EPSILON)
    assert first > composed
    assert second - first == pytest.approx(1e-7, rel=1e-6)
    # A branch given as an event is read by its pessimistic curve: a
    # Gaussian one below the reference's Gaussian costs nothing.
    gaussian = dpe.GaussianDpEvent(4.0)
    bound = mixture_delta(COUNT, REFERENCE, gaussian, EPSILON, COUNT_EPSILON)
    assert bound == pytest.approx(composed, rel=1e-9)


def test_an_unaccountable_part_gives_no_bound():
    label_set = accounting.ApproximateDpEvent(0.1, 1e-6, "label set")
    basic = EPSILON - COUNT_EPSILON
    assert mixture_delta(COUNT, REFERENCE, label_set, EPSILON, COUNT_EPSILON) == math.inf
    assert mixture_delta(label_set, REFERENCE, (basic, 0.0), EPSILON, COUNT_EPSILON) == math.inf


def test_the_bound_covers_the_worst_mixture_computed_by_hand():
    """Whichever branch each count picks, the delta is at most the bound.

    For neighbours the delta is the average over the Laplace count's output
    c of the picked branch's curve at epsilon - L(c); the worst choice
    takes the larger curve at each c: the guarantee's (1 below its epsilon)
    or the reference's exact one.  An upper Riemann sum over c (the curves
    fall as epsilon - L(c) grows), with the largest runs' delta the bound
    admits.
    """
    basic = EPSILON - COUNT_EPSILON
    probe = mixture_delta(COUNT, REFERENCE, (basic, DELTA), EPSILON, COUNT_EPSILON)
    runs_delta = 2 * DELTA - probe
    assert mixture_delta(COUNT, REFERENCE, (basic, runs_delta), EPSILON, COUNT_EPSILON) <= (
        DELTA * (1 + 1e-9)
    )

    def worst(runs_delta):
        def larger(shifted):
            runs = runs_delta if shifted >= basic - 1e-12 else 1.0
            return max(runs, laplace_gaussian_curve(20.0, SIGMA, shifted))

        total = 0.5 * larger(EPSILON - COUNT_EPSILON)
        total += 0.5 * math.exp(-COUNT_EPSILON) * larger(EPSILON + COUNT_EPSILON)
        edges = np.linspace(0.0, 1.0, 41)
        for low, high in zip(edges[:-1], edges[1:]):
            mass = 0.5 * (math.exp(-low * COUNT_EPSILON) - math.exp(-high * COUNT_EPSILON))
            total += mass * larger(EPSILON - (1.0 - 2.0 * low) * COUNT_EPSILON)
        return total

    assert worst(runs_delta) <= DELTA
    assert worst(DELTA) > DELTA
