"""The solver registry: derived options, option constraints and ``auto`` preference lists."""

import itertools
import warnings

import numpy as np
import pytest

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers import (
    SOLVERS,
    AutoChoice,
    PrivacyPlan,
    SolverResult,
    SolverSpec,
    plan_call,
    register_solver,
    unregister_solver,
    unsupported_reasons,
)
from sklearn_dp.solvers._registry import (
    OPTION_CONSTRAINTS,
    SOLVER_ARGUMENTS,
    choose_solver,
    solver_call,
)


def _plan(n_samples, n_params, epsilon, delta, call):  # pragma: no cover - never called
    raise AssertionError


def _spec(function, **fields):
    base = dict(
        name="toy",
        run=function,
        plan=_plan,
        losses=frozenset({"squared"}),
        penalties=frozenset({None}),
    )
    return SolverSpec(**{**base, **fields})


def test_options_and_warm_start_are_read_off_the_signature():
    def toy(
        data,
        loss,
        *,
        n_outputs,
        alpha,
        epsilon,
        delta,
        random_state,
        verbose,
        max_iter=None,
        shrinkage=0.5,
    ):
        return None

    def warm(
        data,
        loss,
        *,
        n_outputs,
        alpha,
        epsilon,
        delta,
        random_state,
        verbose,
        coef_init=None,
        step_size=None,
    ):
        return None

    assert _spec(toy).options == ("max_iter", "shrinkage")
    assert not _spec(toy).warm_start
    assert _spec(warm).options == ("step_size",)
    assert _spec(warm).warm_start


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_registered_option_is_a_keyword_parameter(name):
    spec = SOLVERS[name]
    assert spec.options, name
    assert not set(spec.options) & SOLVER_ARGUMENTS
    # Each numeric option a user sets is validated before any spend by one
    # table: the shared names plus the spec's own, every flag (an option
    # whose default is True or False) as a boolean, and a constraint option
    # as the names of the spec's constraint sets.
    table = {**OPTION_CONSTRAINTS, **spec.option_constraints}
    flags = {key for key, value in spec.call_defaults.items() if isinstance(value, bool)}
    constraints = spec.constraints_of(spec.options)
    assert set(constraints) == set(spec.options) & (set(table) | flags | {"constraint"})
    assert all(constraints[key] == ["boolean"] for key in flags)
    if "constraint" in constraints:
        names, *unconstrained = constraints["constraint"]
        assert names.options == set(spec.constraints) - {None}
        assert unconstrained == ([None] if None in spec.constraints else [])


def test_register_refuses_kwargs_and_constraints_of_unknown_options():
    def loose(data, loss, *, n_outputs, alpha, epsilon, delta, random_state, verbose, **options):
        return None

    def toy(data, loss, *, n_outputs, alpha, epsilon, delta, random_state, verbose, max_iter=None):
        return None

    with pytest.raises(ValueError, match="keyword-only"):
        register_solver(_spec(loose, name="loose_toy"))
    with pytest.raises(ValueError, match="not keyword parameters"):
        register_solver(_spec(toy, name="toy2", option_constraints={"bogus": [int]}))
    assert "loose_toy" not in SOLVERS and "toy2" not in SOLVERS


def test_register_refuses_a_plan_that_declares_options():
    def toy(data, loss, *, n_outputs, alpha, epsilon, delta, random_state, verbose, max_iter=None):
        return None

    def declaring(n_samples, n_params, epsilon, delta, *, max_iter=None):  # pragma: no cover
        return None

    with pytest.raises(ValueError, match="delta, call"):
        register_solver(_spec(toy, name="toy3", plan=declaring))
    assert "toy3" not in SOLVERS


def test_a_plan_call_holds_every_argument_as_the_solver_sees_it():
    call = solver_call(
        SOLVERS["dp_sgd"], {"max_iter": 3}, n_outputs=2, alpha=None, loss=None, row_norm_bound=1.5
    )
    # The call's options, the others at the defaults of dp_sgd's signature.
    assert (call.max_iter, call.batch_size, call.momentum) == (3, None, "nesterov")
    assert (call.n_outputs, call.alpha, call.loss, call.row_norm_bound) == (2, None, None, 1.5)
    # A plan is given its own epsilon and delta; nothing else of the run.
    for name in ("epsilon", "delta", "random_state", "coef_init", "plan"):
        with pytest.raises(AttributeError):
            getattr(call, name)
    with pytest.raises(AttributeError, match="read-only"):
        call.max_iter = 4
    watched = call.watched()
    assert watched.max_iter == 3 and watched.read == {"max_iter"} and call.read == set()
    assert call.replace(max_iter=1).max_iter == 1 and call.max_iter == 3


def test_plan_call_checks_the_options_as_an_estimator_does():
    assert plan_call("dp_gd", 1000, 10, 1.0, 1e-5, max_iter=5).n_steps == 5
    assert plan_call("dp_sgd", None, 10, 1.0, 1e-5, batch_size=10) is None  # needs the count
    with pytest.raises(ValueError, match="not options of solver='dp_gd'"):
        plan_call("dp_gd", 1000, 10, 1.0, 1e-5, batch_size=10)
    with pytest.raises(ValueError, match="max_iter"):
        plan_call("dp_gd", 1000, 10, 1.0, 1e-5, max_iter=0)
    with pytest.raises(ValueError, match="Unknown solver"):
        plan_call("no_such_solver", 1000, 10, 1.0, 1e-5)


def test_option_constraints_of_a_spec_validate_solver_options_before_any_spend():
    X = np.random.default_rng(0).normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="n_probes"):
        DPSCORegressor(
            solver="resque",
            loss="absolute",
            data_norm=1.0,
            y_bound=1.0,
            solver_options={"n_probes": 0},
        ).fit(X, X[:, 0])
    with pytest.raises(ValueError, match="tau"):
        DPLogisticRegression(
            solver="dp_cd", feature_bound=1.0, classes=[0, 1], solver_options={"tau": 0}
        ).fit(X, y)


def test_choose_solver_skips_conditions_that_fail_and_solvers_that_do_not_fit():
    problem = dict(
        loss="absolute", penalty=None, delta=1e-6, multiclass=False, sparse=False, constraint=None
    )
    preferences = (
        AutoChoice("dp_newton"),  # does not fit: absolute loss
        AutoChoice("resque", when=lambda *context: False),  # condition fails
        AutoChoice("dp_sgd"),
    )
    chosen = choose_solver(
        preferences, estimator="E", context=(None, None, None), problem_for=lambda spec: problem
    )
    assert chosen == "dp_sgd"
    with pytest.raises(ValueError, match="solver='auto' found no solver.*dp_newton: loss"):
        choose_solver(
            preferences[:2],
            estimator="E",
            context=(None, None, None),
            problem_for=lambda spec: problem,
        )


def test_auto_never_picks_a_solver_the_registry_refuses():
    """auto skips what the registry refuses: the quantile loss in an l1 ball is not frank_wolfe's."""
    X = np.random.default_rng(0).uniform(-1, 1, size=(80, 3))
    model = DPSCORegressor(
        loss="quantile", constraint="l1", radius=1.0, feature_bound=1.0, y_bound=1.0
    )
    with pytest.raises(ValueError) as info:
        model.fit(X, X[:, 0])
    message = str(info.value)
    assert "solver='auto' found no solver" in message
    assert "frank_wolfe: loss='quantile'" in message


def _configurations():
    regressor = itertools.product(
        ["squared", "huber", "absolute", "quantile"],
        ["l2", "l1", "elasticnet", None],
        [None, "l1", "l2"],  # constraint (None: no radius)
        [0.0, 1e-6],
        ["auto", 1.0],  # feature_bound
    )
    for loss, penalty, constraint, delta, feature_bound in regressor:
        params = dict(
            loss=loss,
            penalty=penalty,
            delta=delta,
            feature_bound=feature_bound,
            data_norm=1.0,
            y_bound=1.0,
        )
        if penalty == "elasticnet":
            params["l1_ratio"] = 0.5
        if constraint is not None:
            params.update(constraint=constraint, radius=1.0)
        yield pytest.param(
            DPSCORegressor, params, id=f"reg-{loss}-{penalty}-{constraint}-{delta}-{feature_bound}"
        )
    classifier = itertools.product(
        ["l2", "l1", None], [None, "l1", "l2"], [0.0, 1e-6], ["auto", 1.0]
    )
    for penalty, constraint, delta, feature_bound in classifier:
        params = dict(
            penalty=penalty, delta=delta, feature_bound=feature_bound, data_norm=1.0, classes=[0, 1]
        )
        if constraint is not None:
            params.update(constraint=constraint, radius=1.0)
        yield pytest.param(
            DPLogisticRegression, params, id=f"log-{penalty}-{constraint}-{delta}-{feature_bound}"
        )
    for radius, delta, alpha in itertools.product([None, 1.0], [0.0, 1e-6], [None, 0.01]):
        yield pytest.param(
            DPLasso,
            dict(radius=radius, delta=delta, alpha=alpha, feature_bound=1.0, y_bound=1.0),
            id=f"lasso-{radius}-{delta}-{alpha}",
        )


@pytest.mark.parametrize("estimator, params", list(_configurations()))
def test_auto_picks_a_supported_solver_or_says_none_fits(estimator, params):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(120, 3))
    y = (X[:, 0] > 0).astype(int) if estimator is DPLogisticRegression else X[:, 0]
    model = estimator(epsilon=1.0, random_state=0, max_iter=3, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            model.fit(X, y)
        except ValueError as exc:
            # Refusals before the spend are allowed (e.g. a solver's public check),
            # but never the registry's own "does not support" for auto's pick.
            assert "does not support" not in str(exc), str(exc)
            return
    spec = SOLVERS[model.solver_]
    assert spec.name in [c.solver for c in estimator._auto_preferences]
    if isinstance(model, DPLasso):
        loss = "squared"
        penalty, constraint = model._form(spec, 0.0 if model.alpha is None else model.alpha)
    else:
        loss = params.get("loss", "log_loss")
        penalty = params["penalty"]
        constraint = None if model.radius is None else model.constraint
    assert not unsupported_reasons(
        spec, loss=loss, penalty=penalty, delta=params["delta"], constraint=constraint
    )


def test_auto_preferences_name_registered_solvers_with_reasons():
    for estimator in (DPLogisticRegression, DPSCORegressor, DPLasso):
        assert estimator._auto_preferences
        for choice in estimator._auto_preferences:
            assert choice.solver in SOLVERS
            assert choice.why


def test_a_toy_solver_is_picked_up_from_one_registry_entry():
    """What CONTRIBUTING.md promises: a module and one entry, nothing else."""
    from sklearn_dp.accounting import gaussian_noise_multiplier, gaussian_steps_event

    def toy_plan(n_samples, n_params, epsilon, delta, call=None):
        sigma = gaussian_noise_multiplier(epsilon, delta, 1)
        return PrivacyPlan(gaussian_steps_event(sigma, 1), sigma, 1)

    def toy_zero(
        data, loss, *, n_outputs, alpha, epsilon, delta, random_state, verbose, max_iter=None
    ):
        return SolverResult(
            coef=np.zeros((data.n_columns, n_outputs)),
            n_iter=1,
            plan=toy_plan(1, 1, epsilon, delta),
        )

    register_solver(
        SolverSpec(
            name="toy_zero",
            run=toy_zero,
            plan=toy_plan,
            losses=frozenset({"squared"}),
            penalties=frozenset({None, "l2"}),
        )
    )
    try:
        X = np.random.default_rng(0).normal(size=(50, 2))
        model = DPSCORegressor(
            solver="toy_zero", data_norm=1.0, y_bound=1.0, max_iter=4, random_state=0
        ).fit(X, X[:, 0])
        assert model.solver_ == "toy_zero" and model.n_iter_ == 1
        with pytest.raises(ValueError, match="does not support loss='huber'"):
            DPSCORegressor(solver="toy_zero", loss="huber").fit(X, X[:, 0])
        with pytest.raises(ValueError, match="max_iter"):
            DPSCORegressor(solver="toy_zero", solver_options={"max_iter": 0}).fit(X, X[:, 0])
    finally:
        unregister_solver("toy_zero")


def test_an_option_set_to_none_takes_its_default():
    """The option table admits None ("its default"), and every solver takes it.

    A solver that crashed on ``tol=None`` would do so after the reservation."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(80, 3))
    y = X @ np.array([0.5, -0.2, 0.0])
    fits = [
        DPLasso(
            alpha=0.1,
            solver="dp_ssp",
            feature_bound=1.0,
            y_bound=1.0,
            random_state=0,
            solver_options=options,
        ).fit(X, y)
        for options in ({"tol": None}, None)
    ]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
