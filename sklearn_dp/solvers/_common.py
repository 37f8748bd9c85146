"""Pieces every solver shares: results, random generators, progress output."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np
from dp_accounting import dp_event as dpe

from .._protocol import FIT_CLOCK
from .._public_errors import public_error
from .._random import make_rng  # noqa: F401 - the solvers' generators, from one place
from ..exceptions import ConvergenceError


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


def check_finite_iterate(W, solver):
    """Raise ConvergenceError if ``W`` has a non-finite entry.

    Only for iterates computed from noisy releases and public values (the
    error is then a function of released values and marked public); never
    for a quantity computed from private data directly.
    """
    if not np.all(np.isfinite(W)):
        raise public_error(
            ConvergenceError(
                f"{solver} diverged (non-finite coefficients). Lower the step size "
                "(learning_rate) or check the data bounds."
            )
        )


class Progress:
    """Progress lines on stderr every ~10% of the iterations when ``verbose``."""

    def __init__(self, solver, total, verbose):
        self.solver = solver
        self.total = int(total)
        self.verbose = int(verbose or 0)
        self.every = max(1, self.total // 10) if self.verbose == 1 else 1
        # One clock for every line of a fit (the estimator's and its solver's).
        self.start = FIT_CLOCK.get() or time.perf_counter()

    def note(self, text):
        """One line for a phase of the fit (a pass, a release), whatever the level."""
        if self.verbose:
            elapsed = time.perf_counter() - self.start
            print(f"[{self.solver}] {text} ({elapsed:.2f}s)", file=sys.stderr, flush=True)

    def __call__(self, iteration, **values):
        if not self.verbose or (iteration % self.every and iteration != self.total):
            return
        shown = " ".join(f"{k}={v:.4g}" for k, v in values.items())
        self.note(f"iter {iteration}/{self.total} {shown}")


def moved_less_than(W, previous, tolerance):
    """Whether no coefficient moved by more than ``tolerance`` times the largest one.

    The convergence test of the noiseless (``epsilon=inf``) default schedules
    of dp_cd, dp_svrg and dp_svrg_pp; it reads exact iterates, so it never
    runs in a private fit.
    """
    largest = max(float(np.max(np.abs(W))), np.finfo(float).tiny)
    return float(np.max(np.abs(W - previous))) <= tolerance * largest


def add_warnings(info, *texts):
    """Put the warning texts that are not None into ``info["warnings"]``.

    Solvers do not warn: they hand texts computed from public values and
    releases to the estimator, which emits them through its private phase.
    """
    texts = [text for text in texts if text]
    if texts:
        info.setdefault("warnings", []).extend(texts)
