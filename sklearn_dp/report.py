"""Privacy reports: what a fit guarantees, in a record anyone can file, check and read.

:func:`privacy_report` turns a fitted estimator, transformer, search or
Pipeline, or a :class:`~sklearn_dp.PrivacyBudget`, into a JSON-serialisable
record: the guarantee and its neighbouring relation, the mechanism as a
dp_accounting ``DpEvent`` (serialised by :func:`event_to_dict`, rebuilt by
:func:`event_from_dict`), its zero-concentrated DP view, the ledger entries,
the library versions, and the *attack view*: the largest true-positive rate
that any membership test can reach at a given false-positive rate
(:func:`membership_tpr`, drawn by :func:`plot_tradeoff`).

The attack view
---------------
A test that tries to tell whether one person's row was in the training data
("member") or not, from everything the fit released, has a false-positive rate
``alpha`` (it says "member" of a non-member) and a true-positive rate (it says
"member" of a member).  For an ``(epsilon, delta)``-DP mechanism every such
test has ``TPR <= min(delta + e^epsilon alpha, 1 - e^-epsilon (1 - delta -
alpha))`` (Kairouz, Oh and Viswanath 2015).  A mechanism is
``(epsilon, delta(epsilon))``-DP for every epsilon at once, and its
*privacy profile* ``delta(epsilon)`` gives the tightest such bound, the
trade-off curve (Dong, Roth and Su 2022)::

    TPR(alpha) = 1 - sup_{epsilon >= 0} max(0, 1 - delta(epsilon) - e^epsilon alpha,
                                             e^-epsilon (1 - delta(epsilon) - alpha))

For a single fit whose mechanism was fixed before it read the data (no value
it released, neither its row count nor its bounds nor its label set, can
change a parameter of a later mechanism; the fit's plan says so, an event
that merely equals the planned one is not enough), the profile is that of
the privacy-loss distribution (PLD) of its ``dp_event_``, composed by dp_accounting's ``PLDAccountant`` under
add/remove-one neighbours, the larger of the two directions.  The PLD is
discretised pessimistically, with losses on a grid of width ``1e-4``; the
supremum is taken over every grid point, where it is attained, so the curve
is exact for that PLD and never below the mechanism's true curve (a Gaussian
mechanism of multiplier ``s`` is ``mu``-GDP with ``mu = 1 / s``, and its
curve is ``Phi(Phi^-1(alpha) + mu)``).  dp_accounting 0.6 offers the profile
but not this conversion, which is why it is written here.  A label set
released by a classifier (an ``ApproximateDpEvent``) enters the PLD as the
dominating pair of an ``(epsilon, delta)``-DP mechanism
(``privacy_loss_distribution.from_privacy_parameters``).  Where no PLD
describes a part of the fit (objective perturbation's closed form, the zCDP
bound of Frank-Wolfe's exponential mechanisms), for a fit whose solver's
mechanism may follow its own released row count, bounds or label set (a
sampling rate from the released count, a solver that does not declare its
event free of released bounds, any classifier that releases its label set:
its releases compose adaptively, and the fit's guarantee rests on basic
composition), and for Pipelines, searches and
budgets (whose parts compose adaptively too), the curve is the one of the
recorded ``(epsilon, delta)`` guarantee, the one that is proven; the report
says which (``attack["basis"]``).  Where the PLD describes the fit, the curve
is the lower of the two (both bound every test: the recorded guarantee is the
tighter one where it rests on a zCDP reading of an exponential mechanism that
the PLD takes at its worst-case pure-DP dominating pair).

A random guess has ``TPR = alpha``; the gap above it is what the fit can give
away, at worst, about any one row.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Sequence
from numbers import Integral, Real

import attr
import numpy as np
from dp_accounting import dp_event as dpe
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import pld_privacy_accountant, privacy_loss_distribution
from sklearn.base import BaseEstimator
from sklearn.exceptions import NotFittedError

from ._dp_accounting_compat import (
    DpAccountingInternalsError,
    accountant_pld,
    pld_directions,
    pmf_atoms,
)
from ._dp_events import NEIGHBORING_RELATION, ApproximateDpEvent, _flatten
from ._event_epsilon import _fold_gaussians, accountant_event
from ._protocol import unit_of_privacy
from ._saving import RECORD_ATTRIBUTE, library_versions
from ._zcdp import approximate_zcdp
from .budget import LedgerEntry, PrivacyBudget

__all__ = [
    "privacy_report",
    "membership_tpr",
    "plot_tradeoff",
    "event_to_dict",
    "event_from_dict",
    "FALSE_POSITIVE_RATES",
    "REPORT_FORMAT",
]

#: The false-positive rates of the report's attack view.
FALSE_POSITIVE_RATES = (0.001, 0.01, 0.1)

#: The name and version of the report's layout (``report["format"]``).
REPORT_FORMAT = "sklearn_dp.privacy_report/1"

#: Width of the PLD's loss grid (dp_accounting's default).
PLD_DISCRETIZATION = 1e-4

_UNIT_TEXT = {
    "estimator": "one row of X together with its label (and its sample weight, if any)",
    "transformer": "one row of X",
    "search": "one row of X together with its label",
    "pipeline": "one row of X together with its label (and its sample weight, if any)",
    "budget": "one row of the data set every fit on this budget reads",
    "event": "one row (add/remove-one neighbours)",
}

# Past this epsilon a profile term contributes less than e^-40 to the curve.
_EPSILON_CAP = 40.0


# --------------------------------------------------------------------------
# Events as JSON-ready dicts
# --------------------------------------------------------------------------


def _event_classes():
    """The DpEvent classes a serialised event may name: dp_accounting's and sklearn_dp's."""
    found, todo = {}, [dpe.DpEvent]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            todo.append(sub)
            module = sub.__module__
            if module == dpe.__name__ or module.split(".")[0] == "sklearn_dp":
                found[(module, sub.__qualname__)] = sub
    return found


def _own_class(cls):
    return cls.__module__.split(".")[0] == "sklearn_dp"


def _encode(value):
    if isinstance(value, dpe.DpEvent):
        return event_to_dict(value)
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        value = float(value)
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    raise TypeError(f"Cannot serialise {type(value).__name__} value {value!r} of a DpEvent.")


def _decode(value, classes):
    if isinstance(value, list):
        return [_decode(v, classes) for v in value]
    if isinstance(value, dict):
        if "class_name" in value:
            return _event_from_dict(value, classes)
        if set(value) == {"float"} and value["float"] in ("inf", "-inf", "nan"):
            return float(value["float"])
        if set(value) == {"tuple"} and isinstance(value["tuple"], list):
            return tuple(_decode(v, classes) for v in value["tuple"])
        raise ValueError(f"Not a serialised DpEvent value: {value!r}.")
    if value is None or isinstance(value, (bool, str, int, float)):
        return value
    raise ValueError(f"Not a serialised DpEvent value: {value!r}.")


def event_to_dict(event: dpe.DpEvent) -> dict:
    """A ``DpEvent`` as a dict of JSON values, which :func:`event_from_dict` rebuilds.

    The layout is that of dp_accounting's ``DpEvent.to_named_tuple``: the
    keys ``module_name`` and ``class_name`` and one key per field, nested
    events as dicts of their own.  The events sklearn_dp defines
    (:class:`~sklearn_dp.accounting.PureEpsilonDpEvent` and the closed forms)
    are stored by their constructor's arguments, under ``arguments``, because
    ``to_named_tuple`` cannot describe them.  Non-finite floats are
    ``{"float": "inf"}`` and tuples ``{"tuple": [...]}``, so that
    ``json.dumps(..., allow_nan=False)`` accepts the result and a round trip
    returns an equal event.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event (a fit's ``dp_event_``, for example).

    Returns
    -------
    dict
        Its JSON-ready description.

    Examples
    --------
    >>> from dp_accounting import dp_event as dpe
    >>> from sklearn_dp.report import event_from_dict, event_to_dict
    >>> event = dpe.SelfComposedDpEvent(dpe.GaussianDpEvent(2.0), 10)
    >>> event_to_dict(event)["event"]["noise_multiplier"]
    2.0
    >>> event_from_dict(event_to_dict(event)) == event
    True
    """
    if not isinstance(event, dpe.DpEvent):
        raise TypeError(f"event must be a dp_accounting DpEvent, got {type(event).__name__}.")
    cls = type(event)
    out = {"module_name": cls.__module__, "class_name": cls.__qualname__}
    if _own_class(cls):
        constructor, arguments = event.__reduce__()[:2]
        if constructor is not cls:  # pragma: no cover - every own event reduces to itself
            raise TypeError(f"Cannot serialise {event!r}.")
        out["arguments"] = [_encode(a) for a in arguments]
        return out
    for field in attr.fields(cls):
        out[field.name] = _encode(getattr(event, field.name))
    return out


def _event_from_dict(data, classes):
    key = (data.get("module_name"), data.get("class_name"))
    cls = classes.get(key)
    if cls is None:
        raise ValueError(
            f"Unknown DpEvent class {key[0]}.{key[1]}: only the events of dp_accounting "
            "and sklearn_dp are rebuilt."
        )
    if _own_class(cls):
        if set(data) != {"module_name", "class_name", "arguments"}:
            raise ValueError(f"A serialised {key[1]} holds exactly its 'arguments'.")
        return cls(*[_decode(a, classes) for a in data["arguments"]])
    names = {field.name for field in attr.fields(cls)}
    given = set(data) - {"module_name", "class_name"}
    if given != names:
        raise ValueError(
            f"A serialised {key[1]} has the fields {sorted(names)}, got {sorted(given)}."
        )
    return cls(**{name: _decode(data[name], classes) for name in names})


def event_from_dict(data: dict) -> dpe.DpEvent:
    """Rebuild the ``DpEvent`` that :func:`event_to_dict` described.

    Only classes of dp_accounting's ``dp_event`` module and of sklearn_dp are
    rebuilt (a report from an untrusted source cannot make this call build
    anything else).

    Parameters
    ----------
    data : dict
        The description (for example ``report["dp_event"]``, after
        ``json.load``).

    Returns
    -------
    dp_accounting.DpEvent
        The event.

    Raises
    ------
    ValueError
        If ``data`` names another class or holds other fields.
    """
    if not isinstance(data, dict) or "class_name" not in data:
        raise ValueError("data must be a dict made by sklearn_dp.report.event_to_dict.")
    return _event_from_dict(data, _event_classes())


# --------------------------------------------------------------------------
# The attack view
# --------------------------------------------------------------------------


def _check_rates(false_positive_rates):
    rates = np.atleast_1d(np.asarray(false_positive_rates, dtype=float))
    if rates.ndim != 1 or rates.size == 0 or not np.all((rates > 0) & (rates <= 1)):
        raise ValueError(
            f"false_positive_rates must be numbers in (0, 1], got {false_positive_rates!r}."
        )
    return rates


def _event_pld(event: dpe.DpEvent, discretization: float = PLD_DISCRETIZATION):
    """dp_accounting's privacy-loss distribution of ``event``, or None when none describes it.

    ``PLDAccountant`` composes what it reads (add/remove-one neighbours, a
    pure part as randomized response); each label set
    (:class:`~sklearn_dp.accounting.ApproximateDpEvent`) is composed as the
    dominating pair of an ``(epsilon, delta)``-DP mechanism.  Closed forms and
    zCDP-only parts have no PLD: None.
    """
    readable, apart = accountant_event(event, "pld")
    extra = []
    for part in apart:
        leaf, count = next(iter(_flatten(part)))
        if not isinstance(leaf, ApproximateDpEvent):
            return None
        pld = privacy_loss_distribution.from_privacy_parameters(
            pld_common.DifferentialPrivacyParameters(
                leaf.approximate_epsilon, leaf.approximate_delta
            ),
            value_discretization_interval=discretization,
        )
        extra.append(pld if count == 1 else pld.self_compose(count))
    accountant = pld_privacy_accountant.PLDAccountant(
        NEIGHBORING_RELATION, value_discretization_interval=discretization
    )
    readable = _fold_gaussians(readable)
    if not accountant.supports(readable):
        return None
    accountant.compose(readable)
    pld = accountant_pld(accountant)
    for part in extra:
        pld = pld.compose(part)
    return pld


def _dense_directions(pld):
    """``[(losses, probs, infinity_mass)]`` of each direction of ``pld``, or None.

    Read off dp_accounting's internals (0.6 has no public accessor); None
    when they are not there, and the public (slower) profile is used.
    """
    try:
        return [pmf_atoms(pmf) for pmf in pld_directions(pld)]
    except DpAccountingInternalsError:  # pragma: no cover - another dp_accounting layout
        return None


def _profile_on_grid(pld, epsilons):
    """``delta(epsilons)`` of ``pld`` (the larger of its two directions), ``epsilons`` ascending."""
    directions = _dense_directions(pld)
    if directions is None:  # pragma: no cover - another dp_accounting layout
        return np.asarray(pld.get_delta_for_epsilon(epsilons), dtype=float)
    deltas = np.zeros_like(epsilons)
    for losses, probs, infinity_mass in directions:
        # delta(e) = inf_mass + sum_{l > e} p_l (1 - e^(e - l)), by suffix sums.
        upper = np.concatenate([np.cumsum(probs[::-1])[::-1], [0.0]])
        lower = np.concatenate([np.cumsum((probs * np.exp(-losses))[::-1])[::-1], [0.0]])
        first = np.searchsorted(losses, epsilons, side="right")
        delta = infinity_mass + upper[first] - np.exp(epsilons) * lower[first]
        deltas = np.maximum(deltas, delta)
    return np.clip(deltas, 0.0, 1.0)


def _tpr_of_profile(epsilons, deltas, rates):
    """``TPR(alpha)`` of the trade-off curve of the profile ``(epsilons, deltas)``, sup over the grid.

    The supremum over epsilon of each family of lines is attained at an atom
    of the (discretised) privacy-loss distribution, and the atoms are
    multiples of the grid's width: a grid of every multiple up to the cap
    gives the curve of that distribution exactly.
    """
    keep = 1.0 - deltas
    grow, shrink = np.exp(epsilons), np.exp(-epsilons)
    tprs = np.empty_like(rates)
    for i, alpha in enumerate(rates):
        best = max(0.0, float(np.max(keep - grow * alpha)), float(np.max(shrink * (keep - alpha))))
        tprs[i] = 1.0 - min(best, 1.0)
    return np.maximum(tprs, rates)


def _pld_tpr(pld, rates, discretization):
    # Past log(1 / alpha) the first family is negative; the second is at most
    # e^-epsilon, so past _EPSILON_CAP it moves the curve by less than 1e-17.
    epsilons = np.arange(int(math.ceil(_EPSILON_CAP / discretization)) + 1) * discretization
    return _tpr_of_profile(epsilons, _profile_on_grid(pld, epsilons), rates)


def _point_tpr(epsilon, delta, rates):
    """``TPR(alpha)`` of an ``(epsilon, delta)``-DP mechanism (Kairouz, Oh and Viswanath 2015)."""
    if not math.isfinite(epsilon) or delta >= 1:
        return np.ones_like(rates)
    tpr = np.minimum(
        delta + math.exp(epsilon) * rates, 1.0 - math.exp(-epsilon) * (1.0 - delta - rates)
    )
    return np.clip(np.maximum(tpr, rates), 0.0, 1.0)


def _event_tpr(event, rates, discretization=PLD_DISCRETIZATION):
    """``(tpr, basis)`` from the PLD of ``event``, or None when no PLD describes it."""
    leaves = [leaf for leaf, _ in _flatten(event)]
    # A part with delta >= 1 promises nothing (dp_accounting cannot build its
    # distribution): the attack may be perfect.
    if any(
        isinstance(leaf, dpe.NonPrivateDpEvent)
        or (isinstance(leaf, ApproximateDpEvent) and leaf.approximate_delta >= 1.0)
        for leaf in leaves
    ):
        return np.ones_like(rates), "non-private"
    pld = _event_pld(event, discretization)
    if pld is None:
        return None
    return _pld_tpr(pld, rates, discretization), "pld"


def membership_tpr(
    obj, false_positive_rates: Sequence[float] | float = FALSE_POSITIVE_RATES
) -> np.ndarray:
    """The largest true-positive rate of any membership test at each false-positive rate.

    Parameters
    ----------
    obj : fitted estimator, transformer, search or Pipeline, PrivacyBudget or DpEvent
        What to bound; see :func:`privacy_report` for which curve each gets.
        A ``DpEvent`` alone must be one that a privacy-loss distribution
        describes.
    false_positive_rates : float or sequence of float, default=(0.001, 0.01, 0.1)
        The false-positive rates, in ``(0, 1]``.

    Returns
    -------
    ndarray of shape (n_rates,)
        The bound on the true-positive rate at each rate (at least the rate
        itself, a random guess's).

    Examples
    --------
    >>> from dp_accounting import dp_event as dpe
    >>> from sklearn_dp.report import membership_tpr
    >>> membership_tpr(dpe.GaussianDpEvent(2.0), [0.01]).round(3)  # Phi(Phi^-1(0.01) + 1/2)
    array([0.034])
    """
    rates = _check_rates(false_positive_rates)
    return _attack(obj, rates)["tpr"]


def _attack(obj, rates):
    if isinstance(obj, dpe.DpEvent):
        found = _event_tpr(obj, rates)
        if found is None:
            raise ValueError(
                f"No privacy-loss distribution describes {obj!r}; pass the fitted object "
                "(its recorded (epsilon, delta) then bounds the curve)."
            )
        return {"tpr": found[0], "basis": found[1]}
    from ._composition import stale_record, vouched_by

    kind, _ = _describe(obj)
    epsilon, delta = _guarantee(obj, kind)
    # A model changed since a search released it: its own event leaves out
    # the selection, so only its (infinite) guarantee describes it.
    own = vouched_by(obj) is None and not stale_record(obj)
    if kind in ("estimator", "transformer") and own:
        planned = (vars(obj).get(RECORD_ATTRIBUTE) or {}).get("planned", False)
        if planned or not math.isfinite(epsilon):
            found = _event_tpr(obj.dp_event_, rates)
            if found is not None:
                tpr, basis = found
                if math.isfinite(epsilon):
                    # Both curves bound every test; the recorded guarantee can be
                    # the tighter one where it rests on a zCDP reading of a part
                    # that the PLD takes at its worst-case pure-DP dominating pair.
                    tpr = np.minimum(tpr, _point_tpr(epsilon, delta, rates))
                return {"tpr": tpr, "basis": basis}
    return {"tpr": _point_tpr(epsilon, delta, rates), "basis": "epsilon-delta"}


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


def _number(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else repr(value)


def _group_rows(obj, kind, leaves):
    """The largest group a fit protects (``max_group_rows_``), or None for one row.

    A Pipeline is reported per group only if every private step is
    group-level (a row-level step protects a group only by group privacy),
    with the most rows any step uses of one group.
    """
    if kind in ("estimator", "transformer", "search"):
        return getattr(obj, "max_group_rows_", None)
    if kind == "pipeline" and leaves:
        units = [getattr(step, "max_group_rows_", None) for step in _spending_steps(leaves)]
        if units and all(unit is not None for unit in units):
            return max(units)
    return None


def _spending_steps(leaves):
    """The private steps among a Pipeline's leaves (public steps of this package spend nothing)."""
    from ._composition import event_of

    return [
        step
        for _, step in leaves
        if "dp_event_" in vars(step)
        and _is_private_step(step)
        and not isinstance(event_of(step), dpe.NoOpDpEvent)
    ]


def _mixed_units(kind, leaves):
    """Whether a Pipeline's private steps protect different units (rows and groups)."""
    from ._composition import _unit_of

    if kind != "pipeline" or not leaves:
        return False
    return len({_unit_of(step) for step in _spending_steps(leaves)}) > 1


#: The unit of a Pipeline whose private steps protect different units.
_MIXED_UNIT = (
    "none: some private steps protect one row, others one group (fits with groups=); "
    "their epsilons do not add up to a guarantee for either (epsilon is reported as "
    "inf). Fit every private step with the same groups="
)


def _group_unit(max_rows):
    return (
        f"one group of rows (all rows of one person, account or other unit passed as "
        f"groups=), of which at most {int(max_rows)} rows are used"
    )


def _describe(obj):
    """``(kind, steps)`` of ``obj``; ``steps`` are the DP leaves of a Pipeline."""
    from ._composition import _allow_list, _leaves
    from .linear_model._base import BaseDPEstimator
    from .model_selection._search import BaseDPSearchCV
    from .preprocessing._base import _DPTransformer

    if isinstance(obj, PrivacyBudget):
        return "budget", None
    if isinstance(obj, (BaseDPEstimator, _DPTransformer, BaseDPSearchCV)):
        if "dp_event_" not in vars(obj):
            raise NotFittedError(
                f"This {type(obj).__name__} is not fitted yet: a privacy report describes a fit."
            )
        if isinstance(obj, BaseDPSearchCV):
            return "search", None
        return ("transformer" if isinstance(obj, _DPTransformer) else "estimator"), None
    if isinstance(obj, BaseEstimator) and any(
        hasattr(obj, name) for name in ("steps", "transformers", "transformer_list")
    ):
        try:
            # A Pipeline a search released: its own steps (its guarantee is
            # the search's, see _guarantee).
            leaves = _leaves(obj, "", _allow_list(), vouched=False)
        except Exception:
            leaves = None
        return "pipeline", leaves
    raise TypeError(
        "privacy_report takes a fitted sklearn_dp estimator, transformer or search, a "
        f"Pipeline of them, or a PrivacyBudget; got {type(obj).__name__}."
    )


def _is_private_step(step):
    """Whether ``step`` is a private fit (public steps of this package spend nothing)."""
    from ._composition import vouched_by
    from .linear_model._base import BaseDPEstimator
    from .preprocessing._base import _DPTransformer

    return isinstance(step, (BaseDPEstimator, _DPTransformer)) or vouched_by(step) is not None


def _guarantee(obj, kind):
    from ._composition import stale_record, vouched_by

    if kind == "budget":
        return obj.spent
    if kind in ("estimator", "transformer", "pipeline") and stale_record(obj):
        # Changed since a search released it: its own spend leaves out the
        # selection that chose it.
        return (math.inf, 0.0)
    if kind in ("estimator", "pipeline") and vouched_by(obj) is not None:
        # Released by a private search: the search's guarantee vouches for it.
        return tuple(float(v) for v in vouched_by(obj)["privacy_spent"])
    if kind == "pipeline":
        import warnings

        from ._composition import privacy_spent

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return privacy_spent(obj)
    return tuple(float(v) for v in obj.privacy_spent_)


def _entry_dict(entry: LedgerEntry):
    when = datetime.datetime.fromtimestamp(entry.timestamp, tz=datetime.timezone.utc)
    return {
        "id": entry.id,
        "estimator": entry.estimator,
        "solver": entry.solver,
        "epsilon": _number(entry.epsilon),
        "delta": _number(entry.delta),
        "rho": _number(entry.rho),
        "pool_delta": _number(entry.pool_delta),
        "status": entry.status,
        "unit": entry.unit,
        "error": entry.error,
        "time": when.isoformat(timespec="seconds"),
        "dp_event": None if entry.event is None else event_to_dict(entry.event),
    }


def _mechanisms(event):
    return [f"{count} x {leaf!r}" if count > 1 else repr(leaf) for leaf, count in _flatten(event)]


def _zcdp_view(event):
    """``{"rho", "delta", "exact"}``: the zCDP cost the budget charges, exact for Gaussian parts only."""
    charge = approximate_zcdp(event)
    if charge is None:
        return None
    rho, delta = charge
    exact = all(
        isinstance(leaf, (dpe.GaussianDpEvent, dpe.NoOpDpEvent)) for leaf, _ in _flatten(event)
    )
    return {"rho": _number(rho), "delta": _number(delta), "exact": bool(exact)}


def _fit_section(obj, kind):
    from ._composition import event_of

    event = event_of(obj)
    record = vars(obj).get(RECORD_ATTRIBUTE) or {}
    solver = getattr(obj, "solver_", None)
    return {
        "solver": solver if isinstance(solver, str) else None,
        "mechanisms": _mechanisms(event),
        "dp_event": event_to_dict(event),
        "zcdp": _zcdp_view(event),
        "ledger": [_entry_dict(entry) for entry in record.get("entries", ())],
        "fitted_with": record.get("versions"),
    }


def privacy_report(obj, *, false_positive_rates: Sequence[float] = FALSE_POSITIVE_RATES) -> dict:
    """A JSON-serialisable record of what a fit (or a budget) guarantees, with its attack view.

    Parameters
    ----------
    obj : fitted estimator, transformer, search or Pipeline, or PrivacyBudget
        A fitted object of sklearn_dp (or a Pipeline, ColumnTransformer or
        FeatureUnion holding some), or a budget.  A fitted object is reported
        from its own attributes: it needs no budget (a loaded model has
        none).
    false_positive_rates : sequence of float, default=(0.001, 0.01, 0.1)
        The false-positive rates of the attack view, in ``(0, 1]``.

    Returns
    -------
    dict
        ``json.dumps(report, allow_nan=False)`` accepts it (a non-finite
        number is the string ``"inf"``).  Keys:

        * ``format``: :data:`REPORT_FORMAT`; ``object``: the class name;
          ``kind``: ``"estimator"``, ``"transformer"``, ``"search"``,
          ``"pipeline"`` or ``"budget"``.
        * ``unit_of_privacy``, ``neighbouring_relation``: whom the
          guarantee protects, and against what change of the data.
        * ``epsilon``, ``delta``: the guarantee (``privacy_spent_``;
          :func:`~sklearn_dp.privacy_spent` for a Pipeline; ``spent`` for
          a budget).
        * ``attack``: ``false_positive_rates``, ``true_positive_rates``
          (the bound of :func:`membership_tpr` at each), and ``basis``:
          ``"pld"`` (the privacy-loss distribution of ``dp_event_``),
          ``"epsilon-delta"`` (the recorded guarantee) or
          ``"non-private"``.
        * For a fit: ``solver``, ``mechanisms`` (readable lines),
          ``dp_event`` (:func:`event_to_dict`), ``zcdp`` (the rho and delta
          for which the fit is delta-approximately rho-zCDP, as a
          ``composition="zcdp"`` budget charges it; ``exact`` when the fit
          is Gaussian mechanisms only, whose rho is exact), ``ledger`` (copies of the fit's
          ledger entries, empty without a budget) and ``fitted_with``
          (versions at fit time).  For a Pipeline, ``steps``: the report of
          each private step under its path.  For a budget: its limits,
          ``composition``, ``remaining`` and every ledger entry.
        * ``vouched_by``: only for a model a private search released (its
          ``best_estimator_``): the search's class.  ``epsilon``, ``delta``
          (and for an estimator ``dp_event``) are then the whole search's,
          which vouches for the model: which candidate won, and the share
          it was fitted at, were chosen from the search's releases.
        * ``versions``: of Python, sklearn_dp, dp_accounting, scikit-learn,
          numpy and scipy that wrote the report.

    Privacy
    -------
    The report is a function of the fitted object's public attributes (its
    guarantee, ``dp_event_``, ``solver_``) and of its ledger entries, which
    hold the same and when they were made: nothing in it reads the data.
    The attack view bounds every membership test on one row (add/remove-one
    neighbours) that sees everything the fit released; see the module
    docstring for how it is computed and when it is the curve of the
    recorded ``(epsilon, delta)`` only.

    Examples
    --------
    >>> import json
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn_dp import DPLogisticRegression, privacy_report
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
    >>> report = privacy_report(model)
    >>> report["epsilon"], report["attack"]["basis"]
    (1.0, 'pld')
    >>> [round(t, 3) for t in report["attack"]["true_positive_rates"]]
    [0.002, 0.02, 0.155]
    >>> text = json.dumps(report, allow_nan=False)
    """
    from ._composition import vouched_by

    rates = _check_rates(false_positive_rates)
    kind, leaves = _describe(obj)
    epsilon, delta = _guarantee(obj, kind)
    attack = _attack(obj, rates)
    group_rows = _group_rows(obj, kind, leaves)
    mixed = _mixed_units(kind, leaves)
    report = {
        "format": REPORT_FORMAT,
        "object": type(obj).__name__,
        "kind": kind,
        "unit_of_privacy": (
            _MIXED_UNIT
            if mixed
            else _UNIT_TEXT[kind]
            if group_rows is None
            else _group_unit(group_rows)
        ),
        "neighbouring_relation": (
            "none (the steps protect different units)" if mixed else unit_of_privacy(group_rows)
        ),
        "epsilon": _number(epsilon),
        "delta": _number(delta),
        "attack": {
            "false_positive_rates": [float(r) for r in rates],
            "true_positive_rates": [float(t) for t in attack["tpr"]],
            "basis": attack["basis"],
        },
    }
    vouched = vouched_by(obj) if kind in ("estimator", "pipeline") else None
    if vouched is not None:
        # Which candidate won and the share it was fitted at were chosen
        # from the search's releases.
        report["vouched_by"] = vouched["owner"]
    if kind in ("estimator", "transformer", "search"):
        report.update(_fit_section(obj, kind))
    elif kind == "pipeline":
        report["steps"] = (
            None
            if leaves is None
            else {
                path: privacy_report(step, false_positive_rates=rates)
                for path, step in leaves
                if "dp_event_" in vars(step) and _is_private_step(step)
            }
        )
        for step in (report["steps"] or {}).values():
            step.pop("versions", None)
    else:
        rows = obj.ledger
        if any(entry.unit == "group" for entry in rows):
            # A budget holds spends of one unit only (PrivacyBudget.reserve).
            report.update(
                unit_of_privacy=(
                    "one group of rows (all rows of one person, account or other unit "
                    "passed as groups=), of which each fit uses at most its max_group_rows"
                ),
                neighbouring_relation="add or remove one group",
            )
        report.update(
            epsilon_limit=_number(obj.epsilon),
            delta_limit=_number(obj.delta),
            composition=obj.composition,
            remaining=[_number(v) for v in obj.remaining],
            ledger=[_entry_dict(entry) for entry in rows],
        )
    report["versions"] = dict(library_versions())
    return report


# --------------------------------------------------------------------------
# The plot
# --------------------------------------------------------------------------


def plot_tradeoff(obj, *, ax=None, scale: str = "log", label: str | None = None):
    """Draw the attack view: the largest true-positive rate against the false-positive rate.

    Parameters
    ----------
    obj : fitted estimator, transformer, search or Pipeline, PrivacyBudget or DpEvent
        What to draw (see :func:`membership_tpr`).
    ax : matplotlib Axes, optional
        Where to draw; default a new figure's.
    scale : {"log", "linear"}, default="log"
        Axis scale (``"log"`` shows the small false-positive rates that
        matter for membership inference).
    label : str, optional
        The curve's legend label; default the object's class name.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is an optional extra
        raise ImportError(
            "plot_tradeoff needs matplotlib: pip install matplotlib (or sklearn_dp[examples])."
        ) from exc
    if scale not in ("log", "linear"):
        raise ValueError(f"scale must be 'log' or 'linear', got {scale!r}.")
    rates = np.logspace(-4, 0, 81) if scale == "log" else np.linspace(1e-3, 1.0, 200)
    tpr = membership_tpr(obj, rates)
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot(rates, tpr, label=label or type(obj).__name__)
    if "random guess" not in [line.get_label() for line in ax.get_lines()]:
        ax.plot(rates, rates, linestyle="--", color="grey", label="random guess")
    ax.set_xscale(scale)
    ax.set_yscale(scale)
    ax.set_xlabel("false-positive rate of a membership test")
    ax.set_ylabel("largest true-positive rate")
    ax.legend(loc="lower right")
    return ax
