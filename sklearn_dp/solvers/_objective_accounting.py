"""The accountant of Gaussian objective perturbation (Kifer, Smith and Thakurta 2012).

The privacy loss of the noise term of objective perturbation with Gaussian
noise is at most ``mu^2 / 2 + mu T`` with ``T ~ chi(r)`` (``r`` the rank of the
loss's Hessian in the scores, ``mu = 1 / noise_multiplier``): its delta at
epsilon is an expectation over a chi distribution, in closed form for
``r = 1`` and by quadrature otherwise.  The derivation is in
``docs/solvers/perturbation.md`` (section "Objective perturbation"; the full
proof in "Proofs").  :class:`ObjectivePerturbationDpEvent` records it so that
dp_accounting composes it with the rest of a fit.
"""

from __future__ import annotations

import math

from dp_accounting import gaussian_mechanism
from scipy import integrate, stats

from .. import accounting
from .._memo import memoize


def objective_gaussian_delta(epsilon, noise_multiplier, chi_dof):
    """``E[(1 - exp(epsilon - mu^2/2 - mu T))_+]``, ``T ~ chi(chi_dof)``, ``mu = 1/noise_multiplier``.

    The delta at ``epsilon`` of the noise term of Gaussian objective
    perturbation (docs/solvers/perturbation.md, "Objective perturbation"): the privacy loss is at most
    ``mu^2 / 2 + mu T`` with ``T = ||P b^T x'|| / (sigma_b ||x'||) ~ chi(r)``.
    Closed form for ``chi_dof = 1`` (twice the analytic Gaussian delta when
    ``epsilon >= mu^2/2``); one numerical integral otherwise.
    """
    if noise_multiplier <= 0:
        return 1.0
    mu = 1.0 / noise_multiplier
    epsilon = max(float(epsilon), 0.0)
    t0 = max(epsilon / mu - 0.5 * mu, 0.0)
    if chi_dof == 1:
        value = 2.0 * (stats.norm.sf(t0) - math.exp(epsilon + stats.norm.logsf(t0 + mu)))
    else:
        value = _chi_delta_integral(epsilon, mu, chi_dof)
    return float(min(1.0, max(value, 0.0)))


def _chi_delta_integral(epsilon, mu, chi_dof):
    """``integral over t > t0 of (1 - exp(epsilon - mu^2/2 - mu t)) chi_pdf(t)``: no cancellation."""
    t0 = max(epsilon / mu - 0.5 * mu, 0.0)
    # The chi density is below 1e-300 beyond sqrt(dof) + 40.
    upper = max(t0, math.sqrt(chi_dof)) + 40.0
    middle = max(t0, math.sqrt(max(chi_dof - 1.0, 0.0))) + 8.0

    # log of the chi density's normalising constant, 2^(k/2 - 1) Gamma(k/2).
    log_norm = (0.5 * chi_dof - 1.0) * math.log(2.0) + math.lgamma(0.5 * chi_dof)

    def integrand(t):
        if t <= 0.0:
            return 0.0
        density = math.exp((chi_dof - 1) * math.log(t) - 0.5 * t * t - log_norm)
        return -math.expm1(epsilon - 0.5 * mu * mu - mu * t) * density

    total = 0.0
    for a, b in ((t0, middle), (middle, upper)):
        if b > a:
            part, _ = integrate.quad(integrand, a, b, epsabs=0.0, epsrel=1e-11, limit=400)
            total += part
    return total


def bisect(holds, good, bad, rtol=1e-12, max_halvings=200):
    """Bisect between ``good`` (where ``holds``) and ``bad`` (where not); the good end.

    At most ``max_halvings`` halvings, until the ends are within ``rtol`` of
    the larger (both are >= 0).
    """
    for _ in range(max_halvings):
        if abs(bad - good) <= rtol * max(good, bad):
            break
        mid = 0.5 * (good + bad)
        good, bad = (mid, bad) if holds(mid) else (good, mid)
    return good


@memoize(maxsize=1024)
def objective_gaussian_epsilon(noise_multiplier, delta, chi_dof):
    """Smallest epsilon >= 0 with ``objective_gaussian_delta(epsilon) <= delta`` (an upper end)."""
    if delta <= 0 or noise_multiplier <= 0:
        return math.inf
    if math.isinf(noise_multiplier):
        return 0.0
    if objective_gaussian_delta(0.0, noise_multiplier, chi_dof) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while objective_gaussian_delta(hi, noise_multiplier, chi_dof) > delta:
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:  # pragma: no cover
            return math.inf
    return bisect(
        lambda mid: objective_gaussian_delta(mid, noise_multiplier, chi_dof) <= delta, hi, lo, 1e-13
    )


@memoize(maxsize=1024)
def objective_gaussian_noise_multiplier(epsilon, delta, chi_dof):
    """Smallest ``sigma`` (noise std / G) with ``objective_gaussian_delta(epsilon, sigma) <= delta``.

    ``delta_chi`` increases with ``mu = 1/sigma``; a bisection on ``mu``
    returns its lower (private) end, and the result is verified.
    """
    if math.isinf(epsilon):
        return 0.0
    if not (epsilon > 0 and 0 < delta < 1):
        raise ValueError(f"Need epsilon > 0 and 0 < delta < 1, got {epsilon!r}, {delta!r}.")
    # The analytic Gaussian at (epsilon, delta/2) is exact for chi_dof = 1 and
    # a good starting bracket otherwise.
    start = 1.0 / accounting.gaussian_noise_multiplier(epsilon, delta / 2.0, 1)
    lo, hi = start, start
    while objective_gaussian_delta(epsilon, 1.0 / lo, chi_dof) > delta:
        hi, lo = lo, lo / 2.0
    while objective_gaussian_delta(epsilon, 1.0 / hi, chi_dof) <= delta:
        lo, hi = hi, 2.0 * hi
    mu = bisect(lambda mid: objective_gaussian_delta(epsilon, 1.0 / mid, chi_dof) <= delta, lo, hi)
    sigma = 1.0 / mu
    if objective_gaussian_delta(epsilon, sigma, chi_dof) > delta:  # pragma: no cover
        raise AssertionError("Objective perturbation calibration failed its own check.")
    return float(sigma)


class ObjectivePerturbationDpEvent(accounting.ClosedFormDpEvent):
    """Gaussian objective perturbation with its residual (inexact-solve) noise.

    ``epsilon(delta) = epsilon_det + eps_chi(noise_multiplier; (1 - rho) delta)
    + eps_gauss(residual_noise_multiplier; rho delta)`` with ``rho =
    residual_fraction``: the determinant term (an upper bound), the noise
    term of the perturbed objective (:func:`objective_gaussian_delta`, chi
    with ``chi_dof`` degrees of freedom) and the Gaussian mechanism that
    covers the inexact solve, composed basically with a fixed split of delta.
    Add/remove-one neighbours.
    """

    __slots__ = (
        "epsilon_det",
        "noise_multiplier",
        "chi_dof",
        "residual_noise_multiplier",
        "residual_fraction",
    )

    def __init__(
        self, epsilon_det, noise_multiplier, chi_dof, residual_noise_multiplier, residual_fraction
    ):
        arguments = locals()
        for name in self.__slots__:
            object.__setattr__(self, name, (int if name == "chi_dof" else float)(arguments[name]))

    def epsilon(self, delta):
        delta = float(delta)
        if delta <= 0:
            return math.inf
        rho = self.residual_fraction
        noise = objective_gaussian_epsilon(self.noise_multiplier, (1 - rho) * delta, self.chi_dof)
        residual = float(
            gaussian_mechanism.get_epsilon_gaussian(self.residual_noise_multiplier, rho * delta)
        )
        return math.fsum([self.epsilon_det, noise, residual])
