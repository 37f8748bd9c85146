"""Randomness: fresh OS entropy by default, reproducible integer seeds, documented
RandomState and Generator behaviour (docs/randomness.md)."""

import numpy as np
import pytest
from joblib import Parallel, delayed
from sklearn.model_selection import GridSearchCV

from sklearn_dp import DPLasso, DPLogisticRegression, DPSCORegressor
from sklearn_dp.solvers._common import make_rng


def _fresh_entropy():
    return make_rng(None).bit_generator.seed_seq.entropy


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


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
# random_state=None: fresh OS entropy, never a fixed or global seed
# --------------------------------------------------------------------------


def test_none_draws_128_bits_from_the_os_for_every_generator():
    # numpy's SeedSequence(None) reads 128 bits from the OS (secrets.randbits):
    # the entropy is recorded on the generator and differs between calls.
    entropies = {_fresh_entropy() for _ in range(20)}
    assert len(entropies) == 20
    assert all(isinstance(e, int) and 0 <= e < 2**128 for e in entropies)
    assert max(entropies) > 2**64  # not a 32- or 64-bit seed (fails with prob. 2^-1280)


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
    import random
    import secrets

    import numpy.random.bit_generator as bit_generator

    # numpy's SeedSequence(None) reads its 128 bits through this function: an
    # OS-backed source (random.SystemRandom, i.e. os.urandom, or secrets).
    source = bit_generator.randbits
    assert isinstance(getattr(source, "__self__", None), random.SystemRandom) or (
        source is secrets.randbits
    )
    monkeypatch.setattr(bit_generator, "randbits", lambda bits: 2**100 + 17)
    assert make_rng(None).bit_generator.seed_seq.entropy == 2**100 + 17

    # Were the OS entropy source to fail, the error must surface: no fixed seed.
    def broken(bits):
        raise OSError("no entropy")

    monkeypatch.setattr(bit_generator, "randbits", broken)
    with pytest.raises(OSError, match="no entropy"):
        make_rng(None)
    with pytest.raises(OSError, match="no entropy"):
        _fit(None)


def test_two_fits_with_none_differ_even_after_np_random_seed():
    np.random.seed(0)
    first = _fit(None)
    np.random.seed(0)
    second = _fit(None)
    assert not np.array_equal(first, second)


def _entropy_and_fit(_):
    return _fresh_entropy(), _fit(None)


def test_none_in_joblib_workers_draws_fresh_entropy_in_each():
    # loky workers are separate processes (and are reused between tasks):
    # neither may repeat a stream.
    results = Parallel(n_jobs=2)(delayed(_entropy_and_fit)(i) for i in range(6))
    entropies = [entropy for entropy, _ in results]
    assert len(set(entropies)) == 6
    coefs = [coef.tobytes() for _, coef in results]
    assert len(set(coefs)) == 6


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
# RandomState and Generator instances (scikit-learn conventions)
# --------------------------------------------------------------------------


def test_random_state_instance_seeds_from_its_state_and_advances_it():
    # Same state -> same fit; reusing one instance gives a new fit each time,
    # as scikit-learn estimators do with a RandomState.
    assert np.array_equal(_fit(np.random.RandomState(5)), _fit(np.random.RandomState(5)))
    shared = np.random.RandomState(5)
    assert not np.array_equal(_fit(shared), _fit(shared))


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


def test_estimators_accept_a_generator():
    assert np.array_equal(_fit(np.random.default_rng(5)), _fit(np.random.default_rng(5)))


def test_bad_random_state_is_refused():
    with pytest.raises(ValueError):
        make_rng("seed")
    with pytest.raises(ValueError):
        make_rng(1.5)
