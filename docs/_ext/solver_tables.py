"""Tables of solvers generated from the code, so the docs cannot drift from it.

Three directives (usable from MyST as ```` ```{solver-capabilities} ```` etc.):

``solver-capabilities``
    One row per registered solver (``sklearn_dp.solvers.SOLVERS``): losses,
    penalties, constraint sets, how rows are bounded, multiclass, sparse
    input, pure and approximate DP.
``estimator-solver-support``
    Which estimator can run which solver, and with which settings: the
    registry's fields intersected with what each estimator can ask for
    (``DPLasso`` follows its ``fit``: the penalised form goes to solvers
    without an l1 ball unconstrained; it has no ``data_norm``, so only the
    entrywise-geometry solvers can run).
``auto-solver-choices``
    What ``solver="auto"`` picks in typical settings, obtained by calling each
    estimator's ``_auto_solver`` with the public setting of a fit (30
    features unless the scenario says), and whether the registry then
    accepts the problem.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp._losses import loss_names
from sklearn_dp.linear_model._base import FitProblem, PublicSetting
from sklearn_dp.solvers import SOLVERS, get_solver
from sklearn_dp.solvers._registry import check_solver_supports

_LOSS_ORDER = ["squared", "huber", "absolute", "quantile"]
_LOSS_ORDER += sorted(set(loss_names(classification=False)) - set(_LOSS_ORDER))
_ESTIMATOR_LOSSES = {
    "DPLogisticRegression": ("log_loss",),
    "DPSCORegressor": tuple(sorted(loss_names(classification=False), key=_LOSS_ORDER.index)),
    "DPLasso": ("squared",),
}
_PENALTIES = ("l2", "l1", "elasticnet", None)
_CONSTRAINTS = (None, "l2", "l1")


def _name(value):
    return "none" if value is None else str(value)


def _constraint_name(value):
    return "unconstrained" if value is None else f"{value} ball"


# --------------------------------------------------------------------------
# docutils helpers
# --------------------------------------------------------------------------


def _cell(content):
    """A table entry from a string, or a list of (text, is_code) pieces."""
    entry = nodes.entry()
    paragraph = nodes.paragraph()
    if isinstance(content, str):
        content = [(content, False)]
    for text, code in content:
        paragraph += nodes.literal(text, text) if code else nodes.Text(text)
    entry += paragraph
    return entry


def _code_list(values):
    pieces = []
    for i, value in enumerate(values):
        if i:
            pieces.append((", ", False))
        pieces.append((value, True))
    return pieces


def _table(header, rows, widths=None):
    table = nodes.table(classes=["sklearn-dp-generated"])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths or [1] * len(header):
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    row = nodes.row()
    for title in header:
        row += _cell(title)
    head += row
    group += head
    body = nodes.tbody()
    for cells in rows:
        row = nodes.row()
        for content in cells:
            row += _cell(content)
        body += row
    group += body
    return table


# --------------------------------------------------------------------------
# Solver capabilities
# --------------------------------------------------------------------------


class SolverCapabilities(SphinxDirective):
    has_content = False

    def run(self):
        rows = []
        for name, spec in SOLVERS.items():
            rows.append(
                [
                    [(name, True)],
                    _code_list(sorted(spec.losses)),
                    _code_list([_name(p) for p in sorted(spec.penalties, key=str)]),
                    ", ".join(_constraint_name(c) for c in sorted(spec.constraints, key=str)),
                    [("data_norm", True), (" (L2)", False)]
                    if spec.geometry == "l2"
                    else [("feature_bound", True), (" (entrywise)", False)],
                    "yes" if spec.multiclass else "no",
                    "yes" if spec.sparse else "no",
                    "yes" if spec.pure_dp else "no",
                    "yes" if spec.approximate_dp else "no",
                ]
            )
        header = [
            "solver",
            "losses",
            "penalties",
            "coefficients",
            "rows bounded by",
            "multiclass",
            "sparse X",
            "delta = 0",
            "delta > 0",
        ]
        return [_table(header, rows, widths=[14, 18, 16, 14, 14, 8, 7, 7, 7])]


# --------------------------------------------------------------------------
# Estimator x solver support
# --------------------------------------------------------------------------


def _glm_support(estimator, spec):
    """Settings of a logistic / regression estimator that ``spec`` accepts, or None."""
    losses = [loss for loss in _ESTIMATOR_LOSSES[estimator] if loss in spec.losses]
    penalties = [p for p in _PENALTIES if p in spec.penalties]
    constraints = [c for c in _CONSTRAINTS if c in spec.constraints]
    if not (losses and penalties and constraints):
        return None
    # The registry checks each property on its own, so every combination of
    # the lists above is accepted; confirm one with the real check.
    check_solver_supports(
        spec,
        estimator=estimator,
        loss=losses[0],
        penalty=penalties[0],
        delta=None,
        constraint=constraints[0],
    )
    pieces = []
    if estimator != "DPLogisticRegression":
        pieces += [("loss ", False)] + _code_list(losses) + [("; ", False)]
    pieces += [("penalty ", False)] + _code_list([_name(p) for p in penalties])
    pieces += [("; " + ", ".join(_constraint_name(c) for c in constraints), False)]
    if spec.geometry == "linf":
        pieces += [("; needs ", False), ("feature_bound", True)]
    if estimator == "DPLogisticRegression":
        pieces += [("; " + ("multiclass" if spec.multiclass else "binary only"), False)]
    return pieces


def _lasso_support(spec):
    """Forms of ``DPLasso`` that ``spec`` can fit (mirrors ``DPLasso.fit``), or None."""
    if "squared" not in spec.losses:
        return None
    # DPLasso has no data_norm: L2-geometry solvers get the L2 bound that
    # feature_bound implies (bound_data).
    forms = []
    # Penalised form (alpha, no radius): unconstrained where the solver has
    # no l1 ball but accepts unconstrained problems; else the public l1 ball.
    if "l1" not in spec.constraints and None in spec.constraints:
        if "l1" in spec.penalties:
            forms.append("alpha (unconstrained)")
    elif "l1" in spec.constraints and "l1" in spec.penalties:
        forms.append("alpha (inside the public ball)")
    if "l1" in spec.constraints and None in spec.penalties:
        forms.append("radius")
    if not forms:
        return None
    pieces = [(", ".join(forms), False)]
    if "l1" in spec.constraints and "intercept_bound" not in spec.options:
        pieces.append(("; the l1-ball forms only with ", False))
        pieces.append(("fit_intercept=False", True))
    return pieces


class EstimatorSolverSupport(SphinxDirective):
    has_content = False

    def run(self):
        rows = []
        for name, spec in SOLVERS.items():
            cells = [[(name, True)]]
            for estimator in ("DPLogisticRegression", "DPSCORegressor"):
                cells.append(_glm_support(estimator, spec) or "—")
            cells.append(_lasso_support(spec) or "—")
            rows.append(cells)
        header = ["solver", "DPLogisticRegression", "DPSCORegressor", "DPLasso"]
        return [_table(header, rows, widths=[14, 30, 30, 26])]


# --------------------------------------------------------------------------
# What solver="auto" picks
# --------------------------------------------------------------------------


def _glm_problem(estimator, loss_name):
    return FitProblem(
        loss_name=loss_name,
        make_loss=None,
        penalty=estimator.penalty,
        alpha=0.0,
        constraint=None if estimator.radius is None else estimator.constraint,
        radius=estimator.radius,
    )


_SCENARIOS = [
    (DPLogisticRegression, {}, "defaults (L2 penalty, delta > 0)"),
    (DPLogisticRegression, {"penalty": None}, ""),
    (DPLogisticRegression, {"delta": 0.0}, ""),
    (DPLogisticRegression, {"penalty": "l1", "feature_bound": 1.0}, ""),
    (DPLogisticRegression, {"penalty": "elasticnet", "l1_ratio": 0.5}, "no feature_bound"),
    (DPLogisticRegression, {"radius": 5.0}, "L2 ball"),
    (DPLogisticRegression, {"penalty": None, "radius": 5.0, "constraint": "l1"}, ""),
    (DPSCORegressor, {}, "defaults (squared loss, L2 penalty, delta > 0)"),
    (DPSCORegressor, {"loss": "huber"}, ""),
    (DPSCORegressor, {"loss": "absolute"}, ""),
    (DPSCORegressor, {"loss": "quantile", "quantile": 0.9}, ""),
    (DPSCORegressor, {"delta": 0.0}, ""),
    (DPSCORegressor, {"penalty": "l1", "feature_bound": 1.0}, ""),
    (DPSCORegressor, {"penalty": "l1"}, "no feature_bound"),
    (DPSCORegressor, {"radius": 5.0}, "L2 ball"),
    (DPSCORegressor, {"radius": 5.0, "constraint": "l1", "feature_bound": 1.0}, ""),
    (
        DPSCORegressor,
        {"loss": "absolute", "radius": 5.0, "constraint": "l1", "feature_bound": 1.0},
        "",
    ),
    (DPSCORegressor, {"penalty": None, "radius": 5.0, "constraint": "l1"}, "no feature_bound"),
    (DPSCORegressor, {"radius": 5.0, "constraint": "l1"}, "no feature_bound"),
    (DPSCORegressor, {"delta": 0.0, "radius": 5.0, "constraint": "l1", "feature_bound": 1.0}, ""),
    (DPSCORegressor, {"delta": 0.0, "loss": "absolute"}, ""),
    (DPLasso, {"radius": 2.0}, "constrained form"),
    (DPLasso, {"alpha": 0.01}, "penalised form"),
    (DPLasso, {"alpha": 0.01, "delta": 0.0}, "penalised form, pure DP"),
    (DPLasso, {}, "neither radius nor alpha"),
    # The width of X is public: the second-order solvers stop where their
    # d x d matrices cost more than the first-order passes.
    (DPLogisticRegression, {}, "defaults, 2000 features", 2000),
    (DPSCORegressor, {}, "defaults, 2000 features", 2000),
    (DPLasso, {"alpha": 0.01}, "penalised form, 200 features", 200),
    (DPLasso, {"radius": 2.0}, "constrained form, 200 features", 200),
]

#: Features of X in the scenarios that do not say (the auto rules read n_features).
_DEFAULT_FEATURES = 30


def _public(estimator, n_features):
    return PublicSetting(
        n_features=n_features,
        n_outputs=1,
        multiclass=False,
        sparse=False,
        fit_intercept=bool(getattr(estimator, "fit_intercept", True)),
        epsilon=float(estimator.epsilon),
        delta=float(estimator.delta),
    )


def _no_choice(message):
    """The note of a scenario where ``solver="auto"`` refuses: which solvers
    would fit if named, or that none does."""
    fitting = re.search(r"Solvers that fit: ([^;]+);", message)
    if fitting:
        return "refused: no automatic choice; solvers that fit: " + fitting.group(1)
    return "refused: no registered solver fits this setting"


def _auto_choice(cls, params, n_features=_DEFAULT_FEATURES):
    """``(solver name or None, note or None)``: what ``solver="auto"`` picks in
    the scenario, and why a fit would be refused (None when it would run)."""
    estimator = cls(**params)
    public = _public(estimator, n_features)
    loss_name = "log_loss" if cls is DPLogisticRegression else getattr(estimator, "loss", None)
    problem = None if cls is DPLasso else _glm_problem(estimator, loss_name)
    try:
        name = estimator._auto_solver(problem, public=public)
    except ValueError as exc:
        # A setting that no solver fits is a row of the table, not a failed build.
        return None, _no_choice(str(exc))
    if cls is DPLasso:
        return name, None
    spec = get_solver(name)
    try:
        check_solver_supports(
            spec,
            estimator=cls.__name__,
            loss=loss_name,
            penalty=problem.penalty,
            delta=estimator.delta,
            constraint=problem.constraint,
        )
    except ValueError as exc:
        return name, "refused by the solver: " + str(exc).split(": ", 1)[-1].split(".")[0]
    if spec.geometry == "linf" and estimator.feature_bound is None:
        return name, "refused: the solver needs feature_bound"
    return name, None


class AutoSolverChoices(SphinxDirective):
    has_content = False

    def run(self):
        rows = []
        for cls, params, note, *width in _SCENARIOS:
            name, problem = _auto_choice(cls, params, *width)
            settings = ", ".join(f"{k}={v!r}" for k, v in params.items())
            setting_cell = [(settings, True)] if settings else []
            if note:
                setting_cell.append(((" — " if settings else "") + note, False))
            rows.append(
                [
                    [(cls.__name__, True)],
                    setting_cell or "defaults",
                    ([(name, True)] if name else [("no solver", False)])
                    + ([(" (" + problem + ")", False)] if problem else []),
                ]
            )
        header = ["estimator", "settings", 'solver="auto" picks']
        return [_table(header, rows, widths=[18, 50, 32])]


def setup(app):
    app.add_directive("solver-capabilities", SolverCapabilities)
    app.add_directive("estimator-solver-support", EstimatorSolverSupport)
    app.add_directive("auto-solver-choices", AutoSolverChoices)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
