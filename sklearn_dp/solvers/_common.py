"""Pieces every solver shares: results, random generators, progress output."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np
from dp_accounting import dp_event as dpe

__all__ = ["SolverResult", "PrivacyPlan", "make_rng", "Progress", "check_finite_iterate"]


@dataclass(frozen=True)
class PrivacyPlan:
    """What a solver will release, computed from public inputs only.

    Attributes
    ----------
    event : dp_accounting.DpEvent
        The whole fit under add/remove-one neighbouring.
    noise_multiplier : float
        Noise standard deviation divided by the sensitivity it protects (0 when
        ``epsilon`` is infinite).
    n_steps : int
        Number of noisy releases.
    details : dict
        Solver-specific public settings (step size, batch size, ...).
    """

    event: dpe.DpEvent
    noise_multiplier: float
    n_steps: int
    details: dict = field(default_factory=dict)


@dataclass
class SolverResult:
    """What a solver returns to an estimator.

    ``coef`` has shape (n_columns, n_outputs): the intercept, if any, is the
    last row, in the scaled units of the intercept column.
    """

    coef: np.ndarray
    n_iter: int
    plan: PrivacyPlan
    info: dict = field(default_factory=dict)

    @property
    def dp_event(self):
        return self.plan.event


def make_rng(random_state):
    """A ``numpy.random.Generator`` for noise and sampling.

    ``None`` draws fresh entropy from the operating system; an int seeds a
    reproducible generator; a ``RandomState`` (as scikit-learn passes around)
    seeds a generator from it; a ``Generator`` is used as it is.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(np.iinfo(np.int64).max, dtype=np.int64))
    if isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(int(random_state))
    raise ValueError(
        f"random_state must be None, an int, a RandomState or a Generator; got {random_state!r}."
    )


def check_finite_iterate(W, solver):
    if not np.all(np.isfinite(W)):
        raise FloatingPointError(
            f"{solver} diverged (non-finite coefficients). Lower the step size "
            "(learning_rate) or check the data bounds."
        )


class Progress:
    """Progress lines on stderr every ~10% of the iterations when ``verbose``."""

    def __init__(self, solver, total, verbose):
        self.solver = solver
        self.total = int(total)
        self.verbose = int(verbose or 0)
        self.every = max(1, self.total // 10) if self.verbose == 1 else 1
        self.start = time.perf_counter()

    def __call__(self, iteration, **values):
        if not self.verbose:
            return
        if iteration % self.every and iteration != self.total:
            return
        shown = " ".join(f"{k}={v:.4g}" for k, v in values.items())
        elapsed = time.perf_counter() - self.start
        print(
            f"[{self.solver}] iter {iteration}/{self.total} {shown} ({elapsed:.2f}s)",
            file=sys.stderr,
            flush=True,
        )
