"""Randomness: a cryptographically secure stream from OS entropy by default,
reproducible integer seeds for demos, nothing replayable from a published
object, and independent noise for every charged fit (docs/randomness.md)."""

import functools
import pickle

import numpy as np
import pytest
from _helpers import binary_data
from joblib import Parallel, delayed
from randomgen import ChaCha
from sklearn.model_selection import GridSearchCV, KFold, cross_validate

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor, PrivacyBudget, _random
from sklearn_dp.solvers._common import make_rng


def _key(generator):
    """The 256-bit ChaCha key of a generator, as bytes."""
    return generator.bit_generator.state["state"]["keysetup"].tobytes()


#: Three uniform features on [-1, 1], noisy binary labels.
_data = functools.partial(binary_data, noise=0.3)


def _fit(random_state, **params):
    X, y = _data()
    return (
        DPLogisticRegression(
            epsilon=1.0, classes=[0, 1], max_iter=5, random_state=random_state, **params
        )
        .fit(X, y)
        .coef_
    )


# --------------------------------------------------------------------------
# random_state=None: ChaCha20 keyed with 256 bits of OS entropy at every fit
# --------------------------------------------------------------------------


def test_none_is_chacha20_keyed_with_256_fresh_os_bits(monkeypatch):
    keys = []
    source = _random._os_entropy

    def recording(bits):
        keys.append(source(bits))
        assert bits == 256
        return keys[-1]

    monkeypatch.setattr(_random, "_os_entropy", recording)
    generators = [make_rng(None) for _ in range(20)]
    for generator, key in zip(generators, keys):
        assert isinstance(generator.bit_generator, ChaCha)
        assert generator.bit_generator.state["state"]["rounds"] == 20
        assert _key(generator) == key.to_bytes(32, "little")  # the key is the OS bits, as is
    assert len(set(keys)) == 20
    assert max(keys) > 2**128  # a 256-bit key (fails with probability 2^-2560)


def test_every_private_fit_draws_from_its_own_secure_generator(monkeypatch):
    made = []
    secure = _random.secure_generator

    def recording(key=None):
        made.append(secure(key))
        return made[-1]

    monkeypatch.setattr(_random, "secure_generator", recording)
    from sklearn_dp.preprocessing import DPStandardScaler

    X, y = _data()
    DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=3).fit(X, y)
    DPStandardScaler(epsilon=1.0).fit(X)
    DPLasso(
        epsilon=1.0, alpha=0.1, max_iter=3, budget=PrivacyBudget(5.0, 1e-4, composition="basic")
    ).fit(X, y)
    assert len(made) == 3
    assert len({_key(g) for g in made}) == 3


def test_none_ignores_the_global_numpy_seed():
    states = []
    for _ in range(2):
        np.random.seed(0)
        states.append(make_rng(None).integers(2**63, size=4))
    np.random.seed(0)
    fixed = np.random.default_rng(0).integers(2**63, size=4)
    assert not np.array_equal(states[0], states[1])
    assert not np.array_equal(states[0], fixed)


def test_none_takes_its_entropy_from_the_os_source_and_never_falls_back(monkeypatch):
    import secrets

    monkeypatch.setattr(secrets, "randbits", lambda bits: 2**200 + 17)
    assert _key(make_rng(None)) == (2**200 + 17).to_bytes(32, "little")

    # Were the OS entropy source to fail, the error must surface: no fixed seed.
    def broken(bits):
        raise OSError("no entropy")

    monkeypatch.setattr(secrets, "randbits", broken)
    with pytest.raises(OSError, match="no entropy"):
        make_rng(None)
    with pytest.raises(OSError, match="no entropy"):
        _fit(None)
    # A charged fit: nothing was read, and its entry stands, marked failed.
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    with pytest.raises(OSError, match="no entropy"):
        _fit(None, budget=budget)
    assert [entry.status for entry in budget.ledger] == ["failed"]


def test_two_fits_with_none_differ_even_after_np_random_seed():
    np.random.seed(0)
    first = _fit(None)
    np.random.seed(0)
    second = _fit(None)
    assert not np.array_equal(first, second)


def _key_and_fit(_):
    return _key(make_rng(None)), _fit(None)


def test_none_in_joblib_workers_draws_fresh_entropy_in_each():
    # loky workers are separate processes (and are reused between tasks):
    # neither may repeat a stream.
    results = Parallel(n_jobs=2)(delayed(_key_and_fit)(i) for i in range(6))
    keys = [key for key, _ in results]
    assert len(set(keys)) == 6
    coefs = [coef.tobytes() for _, coef in results]
    assert len(set(coefs)) == 6


def test_split_gives_independent_secure_children():
    parent = make_rng(None)
    children = _random.split(parent, 3)
    assert all(isinstance(child.bit_generator, ChaCha) for child in children)
    assert len({_key(child) for child in children} | {_key(parent)}) == 4
    # Seeded generators spawn from their SeedSequence, as Generator.spawn does.
    seeded = [g.integers(2**63) for g in _random.split(np.random.default_rng(3), 2)]
    children = np.random.SeedSequence(3).spawn(2)
    assert seeded == [np.random.default_rng(child).integers(2**63) for child in children]


# --------------------------------------------------------------------------
# Integer seeds: bitwise reproducible fits
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "estimator, params",
    [
        (DPLogisticRegression, dict(classes=[0, 1], max_iter=5)),
        (DPLogisticRegression, dict(classes=[0, 1], solver="dp_cd", feature_bound=1.0, max_iter=2)),
        (DPLogisticRegression, dict(classes=[0, 1], delta=0.0)),  # objective perturbation
        (DPSCORegressor, dict(max_iter=5)),
        (DPSCORegressor, dict(solver="output_perturbation", delta=0.0)),
        (DPLasso, dict(alpha=0.1, max_iter=5)),
        (DPLasso, dict(radius=1.0, solver="frank_wolfe", max_iter=5, delta=0.0)),
    ],
    ids=lambda v: getattr(v, "__name__", None) or v.get("solver", "default"),
)
def test_integer_seed_gives_bitwise_equal_fits(estimator, params):
    X, y = _data()
    if estimator is not DPLogisticRegression:
        y = np.clip(X[:, 0] - 0.5 * X[:, 1], -1, 1)
    fits = [estimator(epsilon=1.0, random_state=7, **params).fit(X, y) for _ in range(2)]
    assert fits[0].coef_.tobytes() == fits[1].coef_.tobytes()
    assert np.array_equal(fits[0].intercept_, fits[1].intercept_)
    other = estimator(epsilon=1.0, random_state=8, **params).fit(X, y)
    assert not np.array_equal(fits[0].coef_, other.coef_)


def test_integer_seed_is_reproducible_in_grid_search_with_two_jobs():
    X, y = _data(300)
    grid = {"C": [0.1, 1.0], "max_iter": [3, 6]}

    def search():
        model = DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=3)
        return GridSearchCV(model, grid, cv=3, n_jobs=2).fit(X, y)

    first, second = search(), search()
    np.testing.assert_array_equal(
        first.cv_results_["mean_test_score"], second.cv_results_["mean_test_score"]
    )
    assert first.best_params_ == second.best_params_
    assert first.best_estimator_.coef_.tobytes() == second.best_estimator_.coef_.tobytes()
    # The same seed serially: the workers change nothing.
    serial = GridSearchCV(
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=3), grid, cv=3, n_jobs=1
    ).fit(X, y)
    np.testing.assert_array_equal(
        first.cv_results_["mean_test_score"], serial.cv_results_["mean_test_score"]
    )


# --------------------------------------------------------------------------
# Charged fits: independent noise within a budget and across budgets
# --------------------------------------------------------------------------


def _charged_objects():
    from sklearn_dp.decomposition import DPPCA
    from sklearn_dp.model_selection import DPGridSearchCV
    from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler

    logistic = dict(epsilon=2.0, classes=[0, 1], solver="output_perturbation", data_norm=1.0)
    return {
        "DPLogisticRegression": (lambda **kw: DPLogisticRegression(**logistic, **kw), "coef_"),
        "DPLasso": (lambda **kw: DPLasso(epsilon=2.0, alpha=0.001, solver="dp_ssp", **kw), "coef_"),
        "DPSCORegressor": (lambda **kw: DPSCORegressor(epsilon=2.0, max_iter=3, **kw), "coef_"),
        "DPStandardScaler": (lambda **kw: DPStandardScaler(epsilon=2.0, **kw), "mean_"),
        "DPMinMaxScaler": (lambda **kw: DPMinMaxScaler(epsilon=5.0, **kw), "data_min_"),
        "DPPCA": (lambda **kw: DPPCA(2, epsilon=2.0, **kw), "mean_"),
        "DPGridSearchCV": (
            lambda **kw: DPGridSearchCV(
                DPLogisticRegression(**logistic),
                {"C": [0.5, 1.0]},
                epsilon=4.0,
                n_candidates=2,
                # The runs always run (on 500 rows they would be skipped
                # for the default's refit, and best_score_ be NaN).
                prefer_default=False,
                **kw,
            ),
            "best_score_",
        ),
    }


def _released(name, model):
    _, attribute = _charged_objects()[name]
    names = (attribute, "intercept_") if attribute == "coef_" else (attribute,)
    return np.concatenate([np.ravel(getattr(model, name)) for name in names])


def _charged_fit(name, budget, seed=0):
    factory, _ = _charged_objects()[name]
    X, y = _data(500)
    X = X / 2
    model = factory(budget=budget, random_state=seed)
    model.fit(X, y if "Scaler" not in name else None)
    return _released(name, model)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(_charged_objects()))
def test_seeded_fits_charged_to_one_budget_draw_independent_noise(name):
    budget = PrivacyBudget(50.0, 1e-3, composition="basic")
    first, second = _charged_fit(name, budget), _charged_fit(name, budget)
    assert not np.array_equal(first, second)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_seeded_fits_on_copies_of_one_ledger_file_draw_independent_noise(tmp_path):
    # A ledger file copied (an image, a backup) and opened in two places has the
    # same path, creation time and next entry number in both.
    path = tmp_path / "ledger.sqlite"
    PrivacyBudget(50.0, 1e-3, composition="basic", storage=path)
    pristine = path.read_bytes()
    released = []
    for _ in range(2):
        path.write_bytes(pristine)
        budget = PrivacyBudget(50.0, 1e-3, composition="basic", storage=path)
        released.append(_charged_fit("DPSCORegressor", budget))
        del budget
    assert not np.array_equal(released[0], released[1])


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_seeded_fits_charge_a_reopened_ledger_file(tmp_path):
    # Worker processes (GridSearchCV(n_jobs=2)) reopen a file budget by pickle.
    budget = PrivacyBudget(50.0, 1e-3, composition="basic", storage=tmp_path / "b.sqlite")
    reopened = pickle.loads(pickle.dumps(budget))
    released = [_charged_fit("DPSCORegressor", ledger) for ledger in (budget, reopened)]
    assert len(budget.ledger) == 2
    assert not np.array_equal(released[0], released[1])


def test_secret_stream_cannot_be_built_around_a_users_generator():
    X, y = _data()
    with pytest.raises(ValueError, match="internal"):
        _random.SecretStream(np.random.default_rng(42))
    forged = object.__new__(_random.SecretStream)
    forged.generator = np.random.default_rng(42)
    with pytest.raises(ValueError, match="internal"):
        DPSCORegressor(epsilon=1.0, random_state=forged).fit(X, y)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(_charged_objects()))
def test_seeded_fits_charged_to_two_budgets_draw_independent_noise(name, tmp_path):
    # Both first entries of their budgets: the entry number alone does not key the noise.
    memory = [_charged_fit(name, PrivacyBudget(50.0, 1e-3, composition="basic")) for _ in range(2)]
    assert not np.array_equal(memory[0], memory[1])
    files = [
        _charged_fit(
            name, PrivacyBudget(50.0, 1e-3, composition="basic", storage=tmp_path / f"{i}.sqlite")
        )
        for i in range(2)
    ]
    assert not np.array_equal(files[0], files[1])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", list(_charged_objects()))
def test_seeded_fits_without_a_budget_are_reproducible(name):
    assert np.array_equal(_charged_fit(name, None), _charged_fit(name, None))
    assert not np.array_equal(_charged_fit(name, None, seed=0), _charged_fit(name, None, seed=1))


def test_charged_seed_is_keyed_on_the_budget_identity_and_the_entry():
    from sklearn_dp.budget import Reservation

    one, two = PrivacyBudget(1.0), PrivacyBudget(1.0)
    keys = {
        _random.charged_entropy(seed, Reservation(budget, entry, 0.1, 0.0, None))
        for seed in (0, 1)
        for budget in (one, two)
        for entry in (1, 2)
    }
    assert len(keys) == 8
    assert all(0 <= key < 2**256 for key in keys)


# --------------------------------------------------------------------------
# Generator and RandomState objects: refused for private fits
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
def test_private_fits_refuse_generator_objects_and_say_what_to_pass(kind):
    from sklearn_dp.decomposition import DPPCA
    from sklearn_dp.model_selection import DPGridSearchCV
    from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler

    X, y = _data()
    random_state = np.random.default_rng(5) if kind == "Generator" else np.random.RandomState(5)
    budget = PrivacyBudget(5.0, 1e-4, composition="basic")
    objects = [
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget),
        DPLasso(epsilon=1.0, alpha=0.1, budget=budget),
        DPSCORegressor(epsilon=1.0, budget=budget),
        DPStandardScaler(epsilon=1.0, budget=budget),
        DPMinMaxScaler(epsilon=1.0, budget=budget),
        DPPCA(epsilon=1.0, budget=budget),
        DPGridSearchCV(DPLogisticRegression(classes=[0, 1]), {"C": [1.0]}, budget=budget),
    ]
    for model in objects:
        state = random_state.bit_generator.state if kind == "Generator" else None
        model.set_params(random_state=random_state)
        with pytest.raises(ValueError, match="random_state=None .* int seed .* demo"):
            model.fit(X, y)
        assert model.get_params()["random_state"] is random_state  # parameters untouched
        if state is not None:
            assert random_state.bit_generator.state == state  # nothing drawn
    assert budget.ledger == []  # refused before the reservation: nothing spent


def test_non_private_fits_accept_generator_objects():
    # epsilon=inf releases the exact optimum: nothing to protect, nothing to replay.
    X, y = _data()
    for random_state in (np.random.default_rng(5), np.random.RandomState(5)):
        model = DPLogisticRegression(
            epsilon=float("inf"), classes=[0, 1], max_iter=3, random_state=random_state
        )
        model.fit(X, y)
        assert model.get_params()["random_state"] is random_state


def test_generator_is_used_as_it_is_by_the_solvers():
    from sklearn_dp._data import bound_data
    from sklearn_dp._losses import BinaryLogisticLoss
    from sklearn_dp.solvers import dp_gd

    X, y = _data()
    data = bound_data(X, np.where(y == 1, 1.0, -1.0), fit_intercept=False, data_norm=1.0)

    def fit(rng):
        return dp_gd(
            data,
            BinaryLogisticLoss(),
            n_outputs=1,
            alpha=0.0,
            epsilon=1.0,
            delta=1e-5,
            max_iter=3,
            random_state=rng,
        ).coef

    assert np.array_equal(fit(np.random.default_rng(5)), fit(np.random.default_rng(5)))
    shared = np.random.default_rng(5)
    before = shared.bit_generator.state["state"]["state"]
    first = fit(shared)
    assert shared.bit_generator.state["state"]["state"] != before  # consumed by the fit
    assert not np.array_equal(first, fit(shared))
    assert make_rng(shared) is shared


def test_bad_random_state_is_refused():
    with pytest.raises(ValueError):
        make_rng("seed")
    with pytest.raises(ValueError):
        make_rng(1.5)


# --------------------------------------------------------------------------
# Nothing replayable: a published object never regenerates its noise
# --------------------------------------------------------------------------


def _worlds():
    """D and D plus a target row; the adversary knows both and the public settings."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(40, 3))
    y = (X[:, 0] > 0).astype(int)
    target_X, target_y = np.array([[0.5, -0.5, 0.5]]), np.array([0])
    return (X, y), (np.vstack([X, target_X]), np.append(y, target_y))


def _logistic(**kw):
    return DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], solver="output_perturbation", data_norm=1.0, **kw
    )


def _replay_objects():
    from sklearn_dp.decomposition import DPPCA
    from sklearn_dp.model_selection import DPGridSearchCV, DPRandomizedSearchCV
    from sklearn_dp.preprocessing import DPMinMaxScaler, DPStandardScaler

    search = dict(epsilon=4.0, n_candidates=2)
    return {
        "DPLogisticRegression": (lambda **kw: _logistic(**kw), "classes"),
        "DPLasso": (
            lambda **kw: DPLasso(
                epsilon=1.0, alpha=0.1, solver="dp_ssp", feature_bound=0.5, y_bound=1.0, **kw
            ),
            "labels",
        ),
        "DPSCORegressor": (
            lambda **kw: DPSCORegressor(
                epsilon=1.0, solver="output_perturbation", data_norm=1.0, y_bound=1.0, **kw
            ),
            "labels",
        ),
        "DPStandardScaler": (
            lambda **kw: DPStandardScaler(epsilon=1.0, bounds=(-0.5, 0.5), **kw),
            None,
        ),
        "DPMinMaxScaler": (
            lambda **kw: DPMinMaxScaler(epsilon=5.0, **kw),
            None,
        ),
        "DPPCA": (lambda **kw: DPPCA(epsilon=1.0, data_norm=1.0, **kw), None),
        "DPGridSearchCV": (
            lambda **kw: DPGridSearchCV(_logistic(), {"C": [0.5, 1.0]}, **search, **kw),
            "classes",
        ),
        "DPRandomizedSearchCV": (
            lambda **kw: DPRandomizedSearchCV(
                _logistic(), {"C": [0.5, 1.0, 2.0]}, n_iter=2, **search, **kw
            ),
            "classes",
        ),
    }


def _published_numbers(model):
    """What a fitted object publishes that depends on its noise."""
    model = getattr(model, "best_estimator_", model)
    names = ("coef_", "intercept_", "mean_", "scale_", "data_min_", "data_max_")
    values = [np.ravel(getattr(model, name)) for name in names if hasattr(model, name)]
    return np.concatenate(values)


def _generators_in(value, found=None):
    """Every generator reachable from ``value``'s parameters (nested estimators too)."""
    found = [] if found is None else found
    if isinstance(value, (np.random.Generator, np.random.RandomState)):
        found.append(value)
    elif hasattr(value, "get_params"):
        for inner in value.get_params(deep=False).values():
            _generators_in(inner, found)
        if hasattr(value, "best_estimator_"):
            _generators_in(value.best_estimator_, found)
    return found


def _rewound(generator, max_draws):
    """Copies of ``generator`` as they were up to ``max_draws`` draws earlier.

    A PCG64 stream steps back exactly (its state is an LCG) and its seed
    sequence's spawn counter resets; a RandomState gives back the one 64-bit
    draw (two Mersenne-Twister words) that seeding a Generator from it takes.
    """
    import copy

    if isinstance(generator, np.random.RandomState):
        state = list(generator.get_state())
        if state[2] < 2:
            return []
        state[2] -= 2
        rs = np.random.RandomState()
        rs.set_state(tuple(state))
        return [rs]
    bits = generator.bit_generator
    seed_seq = getattr(bits, "seed_seq", None)
    copies = []
    for back in range(max_draws + 1):
        fresh = (
            np.random.SeedSequence(seed_seq.entropy, spawn_key=seed_seq.spawn_key)
            if isinstance(seed_seq, np.random.SeedSequence)
            else None
        )
        bit_generator = type(bits)(fresh)
        bit_generator.state = copy.deepcopy(bits.state)
        bit_generator.advance((-back) % 2**128)
        copies.append(np.random.Generator(bit_generator))
    return copies


def _draws_of_a_fit(factory, label_kind, kwargs, X, y):
    """How many 64-bit draws a fit takes from a PCG64 generator it is given (public settings)."""
    from sklearn_dp import PrivacyBudget

    reference = np.random.default_rng(99)
    start = np.random.Generator(np.random.PCG64())
    start.bit_generator.state = reference.bit_generator.state
    params = dict(kwargs, random_state=reference)
    if "budget" in kwargs:
        params["budget"] = PrivacyBudget(100.0, 1e-2, composition="basic")
    factory(**params).fit(X, y if label_kind else None)
    end = reference.bit_generator.state["state"]
    for draws in range(10_000):
        if start.bit_generator.state["state"] == end:
            return draws
        start.bit_generator.advance(1)
    raise AssertionError("the fit took more than 10000 draws")


def _replay_attack(generators, target, factory, label_kind, kwargs, worlds):
    """The world (0: D, 1: D plus the target) that replaying ``generators`` proves, else None.

    The adversary rewinds each generator that a published object carries to
    where it stood before the fit, refits on D and on D plus the target with
    the same public settings (and a fresh budget, whose first entry is the
    fit's), and compares with the published numbers ``target``.
    """
    import copy

    from sklearn_dp import PrivacyBudget

    draws = max(_draws_of_a_fit(factory, label_kind, kwargs, *world) for world in worlds)
    for generator in generators:
        for start in _rewound(generator, max_draws=draws + 3):
            matches = []
            for world, (X, y) in enumerate(worlds):
                params = dict(kwargs, random_state=copy.deepcopy(start))
                if "budget" in kwargs:
                    params["budget"] = PrivacyBudget(100.0, 1e-2, composition="basic")
                replay = factory(**params)
                try:
                    replay.fit(X, y if label_kind else None)
                except Exception:
                    continue
                if np.array_equal(_published_numbers(replay), target):
                    matches.append(world)
            if len(matches) == 1:
                return matches[0]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("kind", ["Generator", "RandomState"])
@pytest.mark.parametrize("charged", [False, True], ids=["no budget", "budget"])
@pytest.mark.parametrize("name", list(_replay_objects()))
def test_published_objects_cannot_replay_their_noise(name, charged, kind):
    """Pickles, get_params() and clone of a fitted object never let anyone regenerate its noise."""
    import pickle

    from sklearn.base import clone

    from sklearn_dp import PrivacyBudget

    factory, label_kind = _replay_objects()[name]
    worlds = _worlds()
    X, y = worlds[1]  # the secret world: the target row is in
    random_state = (
        np.random.default_rng(12345) if kind == "Generator" else np.random.RandomState(12345)
    )
    kwargs = {"budget": PrivacyBudget(100.0, 1e-2, composition="basic")} if charged else {}
    model = factory(**kwargs, random_state=random_state)
    try:
        model.fit(X, y if label_kind else None)
    except (TypeError, ValueError) as exc:
        # A private fit refuses a generator, and says what to pass instead.
        assert "random_state" in str(exc) and "None" in str(exc)
        return
    target = _published_numbers(model)
    routes = {
        "pickle": _generators_in(pickle.loads(pickle.dumps(model))),
        "get_params": _generators_in(model),
        "clone": _generators_in(clone(model)),
    }
    for route, generators in routes.items():
        world = _replay_attack(generators, target, factory, label_kind, kwargs, worlds)
        assert world is None, f"{name} via {route} reveals the world (world {world})"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_published_objects_of_default_fits_carry_no_generator():
    """With the default random_state, nothing reachable from a fitted object is a generator."""
    import pickle

    from sklearn.base import clone

    from sklearn_dp import PrivacyBudget

    for name, (factory, label_kind) in _replay_objects().items():
        X, y = _worlds()[1]
        for kwargs in ({}, {"budget": PrivacyBudget(100.0, 1e-2, composition="basic")}):
            model = factory(**kwargs).fit(X, y if label_kind else None)
            for published in (pickle.loads(pickle.dumps(model)), model, clone(model)):
                assert _generators_in(published) == [], name


# --------------------------------------------------------------------------
# Clones of one seeded estimator (cross-validation folds) charged to one budget
# --------------------------------------------------------------------------


def test_cross_validation_folds_of_one_seeded_estimator_draw_independent_noise():
    """Clones of one seeded estimator charged to one budget draw independent noise.

    With ``solver="output_perturbation"`` and shared noise ``b``, the two folds'
    coefficients would be ``w*(fold) + b``: their difference noise-free, the
    same for every secret seed, while the budget charges two independent fits.
    """
    X, y = binary_data(400, 3, half_width=0.5)
    differences = []
    for secret in (11, 22):
        budget = PrivacyBudget(10.0, 1e-4)
        model = DPLogisticRegression(
            epsilon=1.0,
            delta=1e-6,
            classes=[0, 1],
            solver="output_perturbation",
            budget=budget,
            random_state=secret,
        )
        out = cross_validate(model, X, y, cv=KFold(2), return_estimator=True)
        first, second = out["estimator"]
        assert len(budget.ledger) == 2
        differences.append(
            np.append(first.coef_ - second.coef_, first.intercept_ - second.intercept_)
        )
    # Independent noise in the two folds: the difference depends on the seed.
    assert not np.allclose(differences[0], differences[1])
