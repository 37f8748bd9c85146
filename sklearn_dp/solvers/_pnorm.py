"""The p-norm mirror map and its exact Bregman step over an l1 ball (and boxes, and an lp ball).

Mirror descent in l1 / lp geometry (Asi, Feldman, Koren, Talwar 2021) uses the
mirror map ``psi(x) = kappa * ||x - c||_p^2`` with ``1 < p <= 2``.  Its step

    x+ = argmin_x  <a, x> + kappa ||x - c||_p^2 + sum_j m_j |x_j|
         subject to  sum_{j in ball} |x_j| <= radius,
                     |x_j| <= box_j           for j outside the ball,
                     ||x - c||_p <= p_radius   (localisation)

(``a = eta * g - grad psi(x_k)``; ``m_j`` is a fixed L1 penalty weight for
composite steps) has no closed form.  It is solved here to machine precision
through its optimality conditions, not approximated:

* With ``u = x - c`` and ``rho = ||u||_p``, the gradient of ``kappa ||u||_p^2``
  is ``p tau sign(u) |u|^(p-1)`` with ``tau = 2 kappa rho^(2-p) / p``.  For a
  fixed ``tau`` and a fixed multiplier ``mu`` of the l1-ball constraint the
  problem separates over coordinates into
  ``min_v  -s_j v + (m_j + mu) |v + c_j| + tau |v|^p`` (``s = -a``), solved in
  closed form: in the dual coordinate ``theta = p tau sign(v) |v|^(p-1)`` it is a
  soft-threshold around ``t_j = theta(-c_j)`` (where ``x_j = 0``), and boxes are
  a clip.  Each coordinate's ``|v|`` is non-increasing in ``tau``.
* ``tau`` is then fixed by the consistency equation ``||u(tau)||_p = rho`` with
  ``tau = tau(rho)``: the left side decreases and the right side increases in
  ``rho``, so a 1-D root find (Brent, in log rho) gives the unique solution.
  If that ``rho`` exceeds ``p_radius`` the lp-ball is active: ``rho = p_radius``
  and ``tau`` grows (its multiplier) until ``||u(tau)||_p = p_radius``.
* ``mu`` is 0 if that solution lies in the l1 ball; otherwise it is the root of
  ``||x_ball(mu)||_1 = radius``, non-increasing in ``mu`` (the derivative of the
  concave dual function), found by an outer Brent search.

Both searches are bracketed and monotone, so they cannot fail silently; the
solution satisfies the KKT conditions to about 1e-12 (tests check them).  With
``c = 0`` and no box coordinates the inner search has a closed form.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from scipy.optimize import brentq

_TINY = np.finfo(float).tiny
_LOG_TINY = math.log(_TINY)


def default_p(n_coordinates):
    """``1 + 1 / ln(d)``, the exponent that makes lp geometry match l1 geometry (capped at 2).

    With this p, ``||z||_1 <= d^(1 - 1/p) ||z||_p < e ||z||_p`` (the seed uses
    log base 2 and gets the constant 2 instead of e; only constants change).
    """
    d = max(int(n_coordinates), 1)
    if d <= math.e:
        return 2.0
    return min(2.0, 1.0 + 1.0 / math.log(d))


def pnorm(u, p):
    """``||u||_p``, scaled by the largest entry so that large ``q`` cannot overflow."""
    u = np.abs(np.asarray(u, dtype=float))
    top = u.max(initial=0.0)
    if top == 0.0:
        return 0.0
    return float(top * np.sum((u / top) ** p) ** (1.0 / p))


def pnorm_mirror_gradient(u, p, kappa):
    """Gradient of ``kappa * ||u||_p^2``: ``2 kappa ||u||_p^(2-p) sign(u) |u|^(p-1)``."""
    u = np.asarray(u, dtype=float)
    norm = pnorm(u, p)
    if norm == 0.0:
        return np.zeros_like(u)
    return 2.0 * kappa * norm * np.sign(u) * (np.abs(u) / norm) ** (p - 1.0)


#: The solution of :func:`bregman_step` and its multipliers (for warm starts and tests).
BregmanStepResult = namedtuple("BregmanStepResult", "x w mu rho tau")


class _Problem:
    """The data of one step, with the per-coordinate closed forms."""

    def __init__(self, s, center, kappa, p, ball, box, l1_weights, p_radius, outer):
        self.s = np.asarray(s, dtype=float)
        self.c = np.asarray(center, dtype=float)
        self.kappa = float(kappa)
        self.p = float(p)
        self.exponent = 1.0 / (self.p - 1.0)  # q - 1, the inverse of the power p - 1
        self.ball = ball
        self.box_index = np.flatnonzero(np.isfinite(box))
        self.box_values = box[self.box_index]
        self.m0 = l1_weights
        self.p_radius = p_radius
        # With an outer lp ball ``||x||_p <= outer`` the multiplier ``mu`` is that
        # ball's (of ``||x||_p^p / p``), not the l1 ball's (then absent).
        self.outer = outer
        # sign(c) |c|^(p-1): theta(-c_j) = -p tau * this.
        self.c_power = np.sign(self.c) * np.abs(self.c) ** (self.p - 1.0)
        self.centered = not np.any(self.c)

    def _theta(self, log_ptau, mu):
        """The dual coordinates theta(tau, mu) before the boxes, ``s - t`` and the weights.

        A soft-threshold of ``s`` by the weights around ``t = theta(-c)`` (0
        when centred: then theta does not depend on tau).
        """
        weights = self.m0 + mu * self.ball if mu and self.outer == math.inf else self.m0
        if self.centered:
            return np.sign(self.s) * np.maximum(np.abs(self.s) - weights, 0.0), self.s, weights
        t = -math.exp(log_ptau) * self.c_power
        shifted = self.s - t
        return t + np.sign(shifted) * np.maximum(np.abs(shifted) - weights, 0.0), shifted, weights

    def coordinates(self, log_ptau, mu):
        """x(tau, mu) and ||x - c||_p, with ``log_ptau = log(p * tau)``.

        Only coordinates whose dual value is non-zero move away from the
        centre, so the powers (the expensive part) are taken on those alone.
        """
        if mu and self.outer < math.inf:  # the outer ball's term (never centred: bregman_step)
            x = _separable_minimisers(self.s, self.c, math.exp(log_ptau), mu, self.m0, self.p)
            return x, pnorm(x - self.c, self.p)
        theta, shifted, weights = self._theta(log_ptau, mu)
        moving_mask = theta != 0.0
        moving = np.flatnonzero(moving_mask)
        x = self.c.copy()
        if moving.size:
            theta_m = theta[moving]
            # v = sign(theta) (|theta| / (p tau))^(q-1), in logs to survive q ~ 10.
            log_v = self.exponent * (np.log(np.abs(theta_m)) - log_ptau)
            x[moving] += np.sign(theta_m) * np.exp(np.minimum(log_v, 700.0))
            if not self.centered:
                # At the kink theta = t the exact solution is x_j = 0; c_j + v_j would
                # leave a rounding residue there.
                x[np.abs(shifted) <= weights] = 0.0
        if self.box_index.size:
            low, high = self._box_duals(log_ptau)
            theta_box = theta[self.box_index]
            # Decide clipping in dual coordinates (exact): x_j reaches +-box_j exactly
            # when theta_j passes the dual value of that bound.
            x[self.box_index] = np.where(
                theta_box >= high,
                self.box_values,
                np.where(theta_box <= low, -self.box_values, x[self.box_index]),
            )
            moving_mask[self.box_index] = True
            moving = np.flatnonzero(moving_mask)
        return x, pnorm(x[moving] - self.c[moving], self.p)

    def _box_duals(self, log_ptau):
        """Dual values ``p tau sign(u)|u|^(p-1)`` of ``x_j = -box_j`` and ``x_j = +box_j``."""
        ptau = math.exp(log_ptau)
        c = self.c[self.box_index]
        ends = np.stack([-self.box_values - c, self.box_values - c])  # x_j = -box_j, +box_j
        return ptau * np.sign(ends) * np.abs(ends) ** (self.p - 1.0)

    def dual_point(self, log_ptau, mu):
        """The solution and its optimal dual variable ``w`` (the gradient of the mirror term).

        ``w = p tau sign(u) |u|^(p-1)`` equals the dual coordinate theta, clipped
        to the dual values of a box's ends; it is taken from theta (exact)
        rather than recomputed from ``u = x - c``, which rounding can flatten
        to 0 when ``|u_j|`` is far below ``|c_j|``.
        """
        x, rho = self.coordinates(log_ptau, mu)
        if mu and self.outer < math.inf:  # the mirror term's part of the dual coordinate
            u = x - self.c
            return x, rho, math.exp(log_ptau) * np.sign(u) * np.abs(u) ** (self.p - 1)
        theta = self._theta(log_ptau, mu)[0]
        if self.box_index.size:
            low, high = self._box_duals(log_ptau)
            theta[self.box_index] = np.clip(theta[self.box_index], low, high)
        return x, rho, theta

    def log_ptau_of_rho(self, log_rho):
        # tau = 2 kappa rho^(2-p) / p  =>  p tau = 2 kappa rho^(2-p)
        return math.log(2.0 * self.kappa) + (2.0 - self.p) * log_rho

    def rho_function(self, mu):
        """``log p tau -> ||u(tau, mu)||_p`` for a fixed ``mu``.

        Centred (``c = 0``), the dual coordinates theta do not depend on tau and
        every unclipped coordinate scales as ``|v_j|^p = (|theta_j| / (p tau))^q``,
        so the norm is a closed form in tau plus the (few) box coordinates:
        each evaluation is O(#boxes), not O(d).  Otherwise it is O(d).
        """
        if not self.centered:
            return lambda log_ptau: self.coordinates(log_ptau, mu)[1]
        theta = self._theta(None, mu)[0]
        q = self.p / (self.p - 1.0)
        free = np.abs(theta[self.ball])
        top = float(free.max(initial=0.0))
        log_sum = q * math.log(top) + math.log(np.sum((free / top) ** q)) if top > 0 else -math.inf
        theta_box = theta[self.box_index]
        e, p = self.exponent, self.p

        def rho(log_ptau):
            total = math.exp(log_sum - q * log_ptau) if log_sum > -math.inf else 0.0
            if theta_box.size:
                with np.errstate(divide="ignore"):
                    v = np.exp(np.minimum(e * (np.log(np.abs(theta_box)) - log_ptau), 700.0))
                total += float(np.sum(np.minimum(v, self.box_values) ** p))
            return total ** (1.0 / p)

        return rho

    def solve_tau(self, mu, warm_log_rho):
        """Inner solve: (x, rho, log p tau) for a fixed l1 multiplier ``mu``."""
        rho_of = self.rho_function(mu)

        def gap(log_rho):
            rho = rho_of(self.log_ptau_of_rho(log_rho))
            return (math.log(rho) if rho > 0 else -1e300) - log_rho

        log_rho_ball = math.log(self.p_radius) if math.isfinite(self.p_radius) else math.inf
        if math.isfinite(log_rho_ball) and gap(log_rho_ball) >= 0.0:
            log_ptau = self._solve_ball(rho_of, self.log_ptau_of_rho(log_rho_ball))
        else:
            start = (
                warm_log_rho if warm_log_rho is not None and math.isfinite(warm_log_rho) else 0.0
            )
            start = min(start, log_rho_ball)
            lo, hi = _bracket_decreasing(gap, start, upper=log_rho_ball)
            if lo is None:
                # u = 0 is the solution (the gap stays negative down to the tiniest rho).
                log_rho = hi
            else:
                log_rho = brentq(gap, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=300)
            log_ptau = self.log_ptau_of_rho(log_rho)
        x, rho = self.coordinates(log_ptau, mu)
        return x, rho, log_ptau

    def _solve_ball(self, rho_of, log_ptau_min):
        """The lp ball is active: raise tau from its free value until ||u||_p = p_radius."""
        target = math.log(self.p_radius)

        def gap(log_ptau):
            rho = rho_of(log_ptau)
            return (math.log(rho) if rho > 0 else -1e300) - target

        hi = log_ptau_min + 1.0
        while gap(hi) > 0.0:
            hi += 2.0 * (hi - log_ptau_min)
        return brentq(gap, log_ptau_min, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=300)


def _separable_minimisers(s, c, a, nu, m, p):
    """``argmin_v -s_j v + (a |v - c_j|^p + nu |v|^p) / p + m_j |v|`` for every j (a, nu > 0).

    The derivative of the smooth part, ``a phi(v - c_j) + nu phi(v)`` with
    ``phi(t) = sign(t) |t|^(p-1)``, is increasing: past the kink at 0 the
    minimiser is its root on one side of 0, found by bisection down to
    adjacent floats (Newton steps cycle around the inflection at ``c_j`` and
    stall where the derivative is infinite).
    """

    def phi(t, power=p - 1.0):
        return np.sign(t) * np.abs(t) ** power

    slope_at_zero = a * phi(-c) - s
    target = s + m * np.sign(slope_at_zero)  # the side of 0 where the minimiser lies
    # (a + nu) phi(v - max(c, 0)) bounds the derivative below for v >= max(c, 0): a bracket.
    reach = phi(target / (a + nu), 1.0 / (p - 1.0))
    lo = np.where(slope_at_zero < 0, 0.0, np.minimum(c, 0.0) + np.minimum(reach, 0.0))
    hi = np.where(slope_at_zero > 0, 0.0, np.maximum(c, 0.0) + np.maximum(reach, 0.0))
    for _ in range(2200):  # at most ~2100 halvings between two floats
        middle = 0.5 * (lo + hi)
        if not np.any((lo < middle) & (middle < hi)):
            break
        above = a * phi(middle - c) + nu * phi(middle) > target
        lo, hi = np.where(above, lo, middle), np.where(above, middle, hi)
    return np.where(np.abs(slope_at_zero) <= m, 0.0, 0.5 * (lo + hi))


def _bracket_decreasing(f, start, upper=math.inf, step=2.0):
    """[lo, hi] with f(lo) > 0 >= f(hi) for a decreasing f; lo=None if f <= 0 down to ~0."""
    if f(start) > 0.0:
        lo, step_size = start, step
        while True:
            hi = min(lo + step_size, upper)
            # hi >= upper cannot stop it when the caller checked the upper end.
            if f(hi) <= 0.0 or hi >= upper:
                return lo, hi
            lo, step_size = hi, 2.0 * step_size
    hi, step_size = start, step
    while True:
        lo = hi - step_size
        if lo < 2.0 * _LOG_TINY:
            return None, lo
        if f(lo) > 0.0:
            return lo, hi
        hi, step_size = lo, 2.0 * step_size


def bregman_step(
    s,
    center,
    *,
    kappa,
    p,
    ball,
    radius,
    box=None,
    l1_weights=None,
    p_radius=math.inf,
    outer=math.inf,
    warm=None,
):
    """Exact minimiser of ``-<s, x> + kappa ||x - c||_p^2 + sum_j m_j |x_j|`` over the domain.

    Parameters
    ----------
    s : ndarray of shape (d,)
        Minus the linear term (``grad psi(x_k) - eta * g`` in a mirror step).
    center : ndarray of shape (d,)
        Centre ``c`` of the mirror map (and of the lp ball); must lie in the domain.
    kappa : float
        Scale of the mirror map (``1 / (2 (p - 1))`` is 1-strongly convex in ||.||_p).
    p : float in (1, 2]
    ball : ndarray of bool of shape (d,)
        Coordinates constrained to the l1 ball ``sum |x_j| <= radius``.
    radius : float
    box : ndarray of shape (d,), optional
        ``|x_j| <= box[j]`` for coordinates outside the ball (inf elsewhere).
    l1_weights : ndarray of shape (d,), optional
        Penalty weights ``m_j`` (for a composite step with an L1 penalty).
    p_radius : float, default=inf
        Radius of the lp ball ``||x - c||_p <= p_radius``.
    outer : float, default=inf
        Radius of an lp ball ``||x||_p <= outer`` around 0 (the constraint of an
        lp domain, for a map centred elsewhere), instead of the l1 ball (whose
        ``radius`` must then be inf).
    warm : BregmanStepResult, optional
        The previous step's solution, to start the searches near their roots.

    Returns
    -------
    BregmanStepResult
        ``x`` and the multipliers: ``mu`` (l1 ball, or the ``outer`` ball's of
        ``||x||_p^p / p``), ``rho = ||x - c||_p`` and
        ``tau`` (so that ``p tau = 2 kappa rho^(2-p)`` unless the lp ball is active).
    """
    if not 1.0 < p <= 2.0:
        raise ValueError(f"p must be in (1, 2], got {p!r}.")
    d = len(s)
    ball = np.asarray(ball, dtype=bool)
    box = (
        np.full(d, np.inf) if box is None else np.where(ball, np.inf, np.asarray(box, dtype=float))
    )
    l1_weights = np.zeros(d) if l1_weights is None else np.asarray(l1_weights, dtype=float)
    if outer < math.inf and not np.any(center):  # then the same ball as p_radius's
        p_radius, outer = min(p_radius, outer), math.inf
    problem = _Problem(s, center, kappa, p, ball, box, l1_weights, float(p_radius), float(outer))
    warm_log_rho = math.log(warm.rho) if warm is not None and warm.rho > 0 else None

    x, rho, log_ptau = problem.solve_tau(0.0, warm_log_rho)

    def violation(x_):
        # The l1 ball's excess, or the outer lp ball's (one of them at most is finite).
        return pnorm(x_, p) - outer if outer < math.inf else np.sum(np.abs(x_[ball])) - radius

    mu = 0.0
    if violation(x) > 0:
        last = {"log_rho": math.log(rho) if rho > 0 else warm_log_rho}

        def excess(mu_):
            x_, rho_, _ = problem.solve_tau(mu_, last["log_rho"])
            if rho_ > 0:
                last["log_rho"] = math.log(rho_)
            return float(violation(x_))

        guess = warm.mu if warm is not None and warm.mu > 0 else None
        scale = float(np.max(np.abs(s[ball]), initial=0.0)) + 1.0
        lo, hi = 0.0, guess * 2.0 if guess else scale
        while excess(hi) > 0.0:
            lo, hi = hi, 2.0 * hi
        if guess and lo == 0.0 and excess(guess / 2.0) > 0.0:
            lo = guess / 2.0
        mu = brentq(
            excess, lo, hi, xtol=1e-15 * max(hi, 1.0), rtol=4 * np.finfo(float).eps, maxiter=300
        )
        x, rho, log_ptau = problem.solve_tau(mu, last["log_rho"])
    x, rho, w = problem.dual_point(log_ptau, mu)
    # Last-ulp safety: the root finds stop within rounding of the boundary;
    # pull back onto the l1 ball and the lp balls so every iterate is feasible.
    if violation(x) > 0:
        x[ball] *= (outer / pnorm(x, p)) if outer < math.inf else radius / np.sum(np.abs(x[ball]))
    if rho > p_radius:
        x = center + (x - center) * (p_radius / rho)
        rho = float(p_radius)
    tau = math.exp(log_ptau) / p
    return BregmanStepResult(x, w, float(mu), float(rho), tau)
