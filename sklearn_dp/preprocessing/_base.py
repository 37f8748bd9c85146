"""What the DP transformers share: the protocol of a transformer's fit and its releases.

A DP transformer's ``fit`` runs its public checks and plans its releases
(:class:`~sklearn_dp._protocol.FitPlan`, from the input's schema only), then
reserves the plan's spend and releases its statistics in the private phase of
:mod:`sklearn_dp._protocol` (:meth:`_DPTransformer._run_private`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from .. import _dask, _noise, _random
from .._bounds import (
    GRID,
    TILT,
    feature_columns,
    release_upper_bound,
    release_upper_bound_from_utilities,
    selection_event,
    upper_bound_counts,
)
from .._limits import MAX_SCALE, MIN_SCALE
from .._protocol import (
    PRIVACY_PARAMETER_CONSTRAINTS,
    FitPlan,
    check_groups,
    kept_group_rows,
    open_phase,
    record_spend,
    warn_unused_group_bound,
)
from .._saving import SavedWithoutLedger
from .._sklearn_compat import finite_checks
from .._validation import validate_private
from ..accounting import calibrate_noise_multiplier, epsilon_of_event


def _check_ranges(ranges, n_features, name="ranges"):
    """Public ranges as two arrays ``(lo, hi)`` of shape (n_features,), or a ValueError."""
    try:
        array = np.asarray(ranges, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name} must be a (min, max) pair or one (min, max) pair per feature; got {ranges!r}."
        ) from None
    if array.shape == (2,):
        array = np.broadcast_to(array, (n_features, 2))
    if array.shape != (n_features, 2):
        raise ValueError(
            f"{name} has shape {array.shape}; pass a (min, max) pair or one pair per feature "
            f"(shape ({n_features}, 2)) for X with {n_features} features."
        )
    lo, hi = array[:, 0].copy(), array[:, 1].copy()
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)) and np.all(hi > lo)):
        raise ValueError(f"{name}: every range must be finite with min < max.")
    # A range far outside the public scales overflows the sums' squares or
    # their noise; the check runs before the spend, on public values only.
    if np.any(np.maximum(np.abs(lo), np.abs(hi)) > MAX_SCALE) or np.any(hi - lo < MIN_SCALE):
        raise ValueError(
            f"{name}: every range must lie within [-{MAX_SCALE:g}, {MAX_SCALE:g}] and be at "
            f"least {MIN_SCALE:g} wide; rescale the data by a public constant to bring it there."
        )
    return lo, hi


class _DPTransformer(SavedWithoutLedger, OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """The privacy protocol for transformers: check, reserve, private phase, one ledger entry."""

    _privacy_parameter_constraints = PRIVACY_PARAMETER_CONSTRAINTS

    def _check_privacy_request(self):
        if math.isinf(self.epsilon) and self.budget is not None:
            raise ValueError(
                "epsilon=inf computes exact statistics: they are not private and cannot be "
                "charged to a finite privacy budget. Use a finite epsilon with budget=, or "
                "drop budget= for a non-private reference."
            )

    def _validate_fit(self, X, *, accept_sparse):
        # Messages free of private values; CSR input is canonicalised
        # (duplicate entries summed).
        with finite_checks():
            X = validate_private(self, X)
        if sp.issparse(X) and not accept_sparse:
            raise TypeError(
                f"{type(self).__name__}: A sparse matrix was passed, but dense data is "
                "required. Use X.toarray() to convert to a dense numpy array."
            )
        return X

    def _with_groups(self, X, groups):
        """``self._plan(X)`` with the fit's unit of privacy: rows, or groups (public checks only)."""
        if groups is not None and _dask.is_dask_array(X):
            # Checked on the input: planning reads a Dask array into memory.
            raise ValueError(f"{type(self).__name__}: groups= is not supported with Dask arrays.")
        X, plan = self._plan(X)
        if groups is None:
            warn_unused_group_bound(self.max_group_rows, type(self).__name__)
            return X, plan
        groups = check_groups(groups, X.shape[0], self.max_group_rows, type(self).__name__)
        context = dict(plan.context, groups=groups)
        return X, dataclasses.replace(
            plan, max_group_rows=int(self.max_group_rows), context=context
        )

    def _fit_plan(self, X, y=None, groups=None):
        """The :class:`~sklearn_dp._protocol.FitPlan` of ``fit(X)``, from public inputs only.

        Runs ``fit``'s public checks and plans its releases from the input's
        schema (never its rows or their number); the transformer is left as
        it was.
        """
        saved = dict(self.__dict__)
        try:
            return self._with_groups(X, groups)[1]
        finally:
            self.__dict__.clear()
            self.__dict__.update(saved)

    def _make_plan(self, *, event, shares, context, options=None):
        """The FitPlan of a private fit whose releases are known before the data."""
        private = not math.isinf(self.epsilon)
        owner = type(self).__name__
        _random.check_random_state(self.random_state, private=private, owner=owner)
        return FitPlan(
            owner=owner,
            solver=None,
            options=dict(options or {}),
            epsilon=self.epsilon,
            delta=self.delta,
            private=private,
            shares=shares,
            event=event if private else None,
            # Each release's noise and share are set here; released values
            # only set the clipping, never a mechanism's parameters.
            fixed=private,
            context=context,
        )

    def _run_private(self, X, plan, release):
        """Reserve ``plan``'s spend, run ``release(X, rng) -> event`` in the private phase."""
        with open_phase(plan, self.budget, self.random_state) as phase:
            if plan.max_group_rows is not None:
                # Each group's first max_group_rows rows; every release below
                # protects one group (the phase's unit of privacy).
                keep = kept_group_rows(plan.context["groups"], plan.max_group_rows)
                X = X if keep is None else X[keep]
            event = release(X, phase.rng)
            if plan.private:
                phase.event = event
        record_spend(self, plan, phase.event, phase.reservation)
        if plan.max_group_rows is None:
            self.__dict__.pop("max_group_rows_", None)
        else:
            self.max_group_rows_ = plan.max_group_rows

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.random_state is None and not math.isinf(self.epsilon)
        return tags


def _bound_events(epsilon_each, n_features, what):
    return [selection_event(epsilon_each, f"feature {j} {what}") for j in range(n_features)]


def _release_feature_bounds(
    X, epsilon_each, n_public, rng, what="bound", centers=None, leaning=False
):
    """A DP bound ``B_j`` of ``|X[:, j] - centers[j]|`` for each feature (exponential mechanisms).

    With ``leaning``, the utilities of :func:`leaning_bound_utilities`
    (DPStandardScaler's bounds), else those of
    :func:`~sklearn_dp._bounds.upper_bound_utilities`.
    """
    d = X.shape[1]
    bounds, events = np.zeros(d), []
    for j, column in feature_columns(X):
        scores = np.abs(column if centers is None else column - centers[j])
        label = f"feature {j} {what}"
        if leaning:
            release = release_upper_bound_from_utilities(
                leaning_bound_utilities(scores, n_public, epsilon_each),
                epsilon=epsilon_each,
                rng=rng,
                label=label,
            )
        else:
            release = release_upper_bound(
                scores, epsilon=epsilon_each, n_public=n_public, rng=rng, label=label
            )
        bounds[j] = release.value
        events += release.events
    return bounds, events


#: The tilt of DPStandardScaler's bounds towards smaller candidates, as a
#: part of :data:`~sklearn_dp._bounds.TILT` (in released rows over the grid).
LEANING_TILT_PART = 0.3
#: DPStandardScaler's data-independent preference for *larger* bounds, in
#: units of the release's temperature ``1 / epsilon``: the base measure
#: ``exp(LEANING_PRIOR * k / K)`` over the ``K`` candidates of
#: :data:`~sklearn_dp._bounds.GRID` (no privacy cost: it reads no data).
#: Where the rows decide (``n * epsilon`` well above 10) it changes little;
#: where they do not (a few hundred rows, tens of features, epsilon <= 0.3:
#: each bound gets an epsilon near 0.01), a random candidate far *below* the
#: data clips the feature to a constant that sits off its centre (an offset
#: in every row, which swamps the model's row bound), while one far *above*
#: it leaves the feature near its centre with a small spread (the model
#: weighs it less).  Measured with ``benchmarks/bench_raw_tables.py`` (breast
#: cancer, DP scaler + model at total epsilon 0.5: 0.64 to 0.78 median accuracy).
LEANING_PRIOR = 4.0


def leaning_bound_utilities(scores, n_public, epsilon):
    """Utilities of the candidates :data:`~sklearn_dp._bounds.GRID` for a bound of ``scores``, leaning large.

    ``-(#{s > b} + #{s < b / 10}) - LEANING_TILT_PART * TILT * n~ * k / K +
    LEANING_PRIOR * k / (K * epsilon)`` for candidate ``b = GRID[k]``: the
    counts of :func:`~sklearn_dp._bounds.upper_bound_utilities` (sensitivity
    1, monotone: adding a row adds 0 or 1 to each count, the other terms are
    public), a weaker tilt to smaller bounds and the base measure
    :data:`LEANING_PRIOR` to larger ones (none at ``epsilon=inf``).
    """
    above, small = upper_bound_counts(scores)
    k = np.arange(GRID.size) / GRID.size
    utilities = -(above + small).astype(np.float64) - LEANING_TILT_PART * TILT * float(n_public) * k
    if not math.isinf(epsilon):
        utilities = utilities + LEANING_PRIOR * k / float(epsilon)
    return utilities


def _noisy_sums(values, *, sensitivity_l2, sensitivity_l1, multiplier, pure, rng, label):
    """Gaussian (L2 sensitivity) or, for pure DP, Laplace (L1 sensitivity) noise on a vector of sums."""
    if pure:
        return _noise.laplace(
            values,
            sensitivity=sensitivity_l1,
            scale=multiplier * sensitivity_l1,
            rng=rng,
            label=label,
        )
    return _noise.gaussian(
        values,
        sensitivity=sensitivity_l2,
        noise_std=multiplier * sensitivity_l2,
        rng=rng,
        label=label,
    )


def _sums_event(multiplier, pure):
    return dpe.LaplaceDpEvent(multiplier) if pure else dpe.GaussianDpEvent(multiplier)


def _calibrate_sums(prefix, epsilon, delta, pure):
    """Noise multiplier of the sums so that ``prefix`` plus the sums meet (epsilon, delta)."""
    if pure:
        return _pure_multiplier(prefix, epsilon)
    return calibrate_noise_multiplier(
        lambda m: dpe.ComposedDpEvent(prefix + [_sums_event(m, False)]), epsilon, delta
    )


def _pure_multiplier(prefix, epsilon):
    """Laplace multiplier of the sums when everything is pure: the epsilon left after ``prefix``."""
    spent = epsilon_of_event(dpe.ComposedDpEvent(prefix), 0.0) if prefix else 0.0
    left = epsilon - spent
    if left <= 0:
        raise ValueError("No epsilon left for the noisy sums.")
    # A hair more noise so that rounding cannot take the sum above epsilon.
    return 1.0 / (left * (1.0 - 1e-9))
