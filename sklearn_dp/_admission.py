"""How a :class:`~sklearn_dp.PrivacyBudget` admits a spend: the filters' arithmetic and its refusals.

:mod:`sklearn_dp.budget` keeps the ledger and decides each spend atomically;
the arithmetic of its two privacy filters is here: the split of a ``"zcdp"``
budget's delta into a pool and a conversion part, the largest rho it admits
(:func:`_rho_limit`), the charges a spend may take
(:func:`_approximate_charges`), and the messages of a refused spend, which
say which rule refused it and what would fit.  Every function here reads
public values only: limits, recorded charges and the spend asked for.
"""

from __future__ import annotations

import math

from dp_accounting import gaussian_mechanism

from ._memo import memoize
from .accounting import approximate_zcdp, epsilon_of_zcdp

# Relative slack when comparing a total with its limit: spending exactly what
# `remaining` reports must succeed even though float sums are not exact.
_RTOL = 1e-9

# The share of a "zcdp" budget's delta that pays for approximate-DP parts
# (the rest pays for the conversion).  Half: the estimators give their label
# set half of their delta, so a budget whose delta is the estimators' default
# admits one classifier fit without classes=; moving half of delta out of the
# conversion costs about 5% of the rho at delta = 1e-5.
_POOL_FRACTION = 0.5


def _split_delta(delta):
    """``(pool, conversion)``: the two parts of a ``"zcdp"`` budget's delta."""
    pool = _POOL_FRACTION * delta
    return pool, delta - pool


def _pool_epsilon(pool_delta):
    # delta-approximate zCDP converts with this extra epsilon when the
    # approximation is by conditioning on events of probability >= 1 - delta
    # (none when it is by mixtures): about delta, kept to be safe either way.
    return -math.log1p(-pool_delta) if pool_delta > 0 else 0.0


@memoize(maxsize=256)
def _rho_limit(epsilon, delta):
    """The largest rho a ``"zcdp"`` budget ``(epsilon, delta)`` admits (bisection).

    The interaction it admits is ``pool``-approximately ``rho``-zCDP; it is
    ``(epsilon, delta)``-DP when the conversion of rho at the other part of
    delta, plus the pool's epsilon term, is at most ``epsilon``.  The
    conversion is dp_accounting's (the RDP-to-DP bound of Canonne, Kamath and
    Steinke 2020 over its grid of orders: an upper bound on the true
    epsilon), so the rho returned is on the safe side.
    """
    pool, delta = _split_delta(delta)
    epsilon = epsilon - _pool_epsilon(pool)
    if epsilon <= 0:
        return 0.0
    low, high = 0.0, max(1.0, epsilon)
    while epsilon_of_zcdp(high, delta) <= epsilon:
        low, high = high, 2.0 * high
    for _ in range(100):
        middle = 0.5 * (low + high)
        if epsilon_of_zcdp(middle, delta) <= epsilon:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return low


def _epsilon_of_rho(rho, delta):
    return 0.0 if rho <= 0 else float(epsilon_of_zcdp(rho, delta))


def _left(limit, used):
    """``limit - used``, with float dust (within a relative ``_RTOL`` of the limit) as 0."""
    left = limit - used
    return 0.0 if left <= _RTOL * limit else left


def _approximate_charges(epsilon, delta, event):
    """The valid ``(rho, pool_delta, kind)`` charges of a spend, the description first.

    The event's own description (:func:`~sklearn_dp.accounting.approximate_zcdp`)
    when it has one, and the spend's ``(epsilon, delta)``-DP guarantee, which
    is ``delta``-approximately ``epsilon^2 / 2``-zCDP (Bun and Steinke 2016,
    Proposition 1.13; for ``delta = 0``, their Proposition 1.4).  The budget
    tries the smaller rho first; the second admits subsampled mechanisms
    (which the first charges without amplification).  A noiseless event
    (rho = inf) has only its own description: its claimed guarantee would be
    false.
    """
    own = (0.5 * epsilon * epsilon, float(delta), "own")
    if event is None:
        return [own]
    described = approximate_zcdp(event)
    if described is None:
        return [own]
    described = (float(described[0]), float(described[1]), "described")
    if described[0] == math.inf or described[:2] == own[:2]:
        return [described]
    return [described, own]


def _what_fits(rho_left, delta, pool_delta):
    """What the rho left admits, in the terms of the refused spend."""
    if rho_left <= 0:
        return "What would fit: nothing that costs rho (the rho is used up)."
    if delta > 0 and not pool_delta:
        # The largest Gaussian mechanism that the rho left pays for, at the
        # refused spend's delta: an estimator's fit at that epsilon costs
        # about as much (measured within a few percent for dp_newton).
        sigma = 1.0 / math.sqrt(2.0 * rho_left)
        largest = gaussian_mechanism.get_epsilon_gaussian(sigma, delta)
        return (
            f"What would fit: a Gaussian mechanism of epsilon up to {largest:.4g} at "
            f"delta={delta:.6g}; a fit at about that epsilon (ask for a little less: "
            "its row count and bounds also cost rho)."
        )
    return (
        f"What would fit: a spend charged as its (epsilon, delta) up to epsilon="
        f"{math.sqrt(2.0 * rho_left):.4g} (charged epsilon^2 / 2), or any fit costing at "
        f"most rho={rho_left:.6g}."
    )


def _refusal_head(budget, rows, epsilon, delta, rule):
    return (
        f"Spending (epsilon={epsilon:.6g}, delta={delta:.6g}) would exceed the "
        f"privacy budget (epsilon={budget._epsilon:.6g}, delta={budget._delta:.6g}), "
        f"refused by its composition rule, composition={budget._composition!r} ({rule}). "
        f"{len(rows)} spend(s) recorded; nothing was spent."
    )


#: The last sentence of every refusal.
_STOP = " Or stop: a fresh budget is only justified for fresh data."


def _basic_refusal(budget, rows, epsilon, delta, totals):
    rem_eps, rem_delta = budget._remaining_of(rows)
    parts = [
        _refusal_head(
            budget, rows, epsilon, delta, "basic composition: epsilons and deltas add up"
        ),
        f" With this spend the sums would be (epsilon={totals[0]:.6g}, "
        f"delta={totals[1]:.6g}); remaining (epsilon={rem_eps:.6g}, delta={rem_delta:.6g}).",
    ]
    if budget._delta == 0 and delta > 0:
        parts.append(
            " This budget has delta=0 and accepts only pure epsilon-DP spends "
            "(delta=0): use a solver with a pure-DP mode, or a budget with delta > 0."
        )
        return "".join(parts)
    if delta > rem_delta * (1 + _RTOL):
        parts.append(
            f" What would fit: a spend of delta at most {rem_delta:.6g} (this one's delta "
            "alone is too large) and epsilon at most "
            f"{rem_eps:.6g}."
        )
        if budget._delta > 0:
            parts.append(
                " Under basic composition every fit's delta counts; a budget with "
                "composition='zcdp' (the default when delta > 0) does not add up the "
                "deltas of Gaussian fits."
            )
    else:
        parts.append(f" What would fit: epsilon at most {rem_eps:.6g} at this delta.")
    parts.append(_STOP)
    return "".join(parts)


def _zcdp_refusal(budget, rows, epsilon, delta, rho, pool_delta, own):
    pool = budget.delta_pool
    rho_left = _left(budget.rho_limit, budget._rho_sum(rows))
    pool_left = _left(pool, budget._pool_sum(rows))
    parts = [
        _refusal_head(
            budget,
            rows,
            epsilon,
            delta,
            "the approximate-zCDP filter: the fits' rhos add up to at most "
            f"rho_limit={budget.rho_limit:.6g}, the deltas of their approximate-DP parts "
            f"to at most delta_pool={pool:.6g}",
        ),
        f" This spend costs rho={rho:.6g}"
        + (f" and pool delta={pool_delta:.6g}" if pool_delta else "")
        + f"; left: rho={rho_left:.6g}, pool delta={pool_left:.6g}.",
    ]
    if own:
        parts.append(
            " It is charged as its own (epsilon, delta)-DP guarantee, epsilon^2 / 2 and "
            "its whole delta: its mechanism has no cheaper zCDP description (none given, "
            "a subsampled one, which zCDP charges without amplification, or a closed form)."
        )
    if pool_delta > pool_left * (1 + _RTOL):
        if own:
            parts.append(
                f" Its delta={pool_delta:.6g} does not fit the pool ({pool_left:.6g} left): "
                f"give this fit a delta of at most {pool_left:.6g}, or use a budget with "
                "composition='basic' for fits like it."
            )
        else:
            parts.append(
                f" Its approximate-DP parts need delta={pool_delta:.6g} from the pool, "
                f"which has {pool_left:.6g} left: a classifier fitted without classes= "
                "releases its label set with half of its delta. Pass classes= (labels "
                "known in advance are public), or give the fit a smaller delta."
            )
    if rho > rho_left * (1 + _RTOL):
        parts.append(" " + _what_fits(rho_left, delta, pool_delta))
    if not rows and epsilon <= budget._epsilon and delta <= budget._delta:
        parts.append(
            " On a fresh budget, composition='basic' admits any one fit within "
            "(epsilon, delta) (but then every later fit's delta adds up)."
        )
    parts.append(_STOP)
    return "".join(parts)
