"""Regression tests for the findings of the adversarial privacy review of issue 13."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import KFold, cross_validate

from sklearn_dp import DPLogisticRegression, PrivacyBudget
from sklearn_dp.model_selection import DPGridSearchCV


def _binary_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 3)) / 2
    y = (X[:, 0] > 0).astype(int)
    return X, y


# --------------------------------------------------------------------------
# Finding 1: fits charged to one budget must not share their noise
# --------------------------------------------------------------------------


def test_charged_fits_with_one_seed_draw_independent_noise():
    """A seeded estimator and its clones (cross-validation) used to draw identical noise.

    With ``solver="output_perturbation"`` the two folds' coefficients were
    ``w*(fold) + b`` with the same ``b``: their difference was noise-free, the
    same for every secret seed, while the budget charged two independent fits.
    (Generator and RandomState objects are refused for private fits.)
    """
    X, y = _binary_data()
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


def test_charged_seeded_fits_are_independent_and_uncharged_ones_reproducible():
    """Charged seeded fits never share noise (one budget or two); uncharged ones reproduce."""
    X, y = _binary_data()
    params = dict(epsilon=1.0, delta=1e-6, classes=[0, 1], max_iter=5, random_state=3)
    coefs = [
        DPLogisticRegression(budget=PrivacyBudget(10.0, 1e-4), **params).fit(X, y).coef_
        for _ in range(2)
    ]
    assert not np.array_equal(coefs[0], coefs[1])
    # Two charged fits on one budget: independent noise.
    budget = PrivacyBudget(10.0, 1e-4)
    model = DPLogisticRegression(budget=budget, **params)
    first = model.fit(X, y).coef_.copy()
    second = clone(model).fit(X, y).coef_
    assert not np.array_equal(first, second)
    # Without a budget, a seed gives the same fit every time (tests, experiments).
    a = DPLogisticRegression(**params).fit(X, y).coef_
    b = DPLogisticRegression(**params).fit(X, y).coef_
    assert np.array_equal(a, b)


def test_seeded_searches_on_one_budget_draw_independent_streams():
    X, y = _binary_data(600)
    budget = PrivacyBudget(20.0, 1e-4, composition="basic")
    scores = []
    for _ in range(2):
        search = DPGridSearchCV(
            DPLogisticRegression(classes=[0, 1], max_iter=5),
            {"C": [0.1, 1.0]},
            epsilon=2.0,
            delta=1e-5,
            budget=budget,
            random_state=0,
        ).fit(X, y)
        scores.append((search.best_score_, search.best_estimator_.coef_.copy()))
    assert scores[0][0] != scores[1][0]
    assert not np.array_equal(scores[0][1], scores[1][1])


# --------------------------------------------------------------------------
# Finding 2: the released label set must not carry the representation of y
# --------------------------------------------------------------------------


def _labelled(labels, extra_label=None, first=False):
    rng = np.random.default_rng(0)
    n = len(labels)
    X = rng.uniform(-1, 1, size=(n, 3)) / 2
    y = np.asarray(labels)
    if extra_label is not None:
        row = np.zeros((1, 3))
        X = np.vstack([row, X]) if first else np.vstack([X, row])
        y = np.concatenate([[extra_label], labels]) if first else np.append(labels, extra_label)
    return X, y


def test_classes_do_not_show_the_width_of_an_unreleased_string_label():
    """classes_ was np.unique(y): its '<U12' dtype showed one unreleased row's label length."""
    labels = np.where(np.arange(2000) % 2 == 0, "cat", "dog")
    seen = []
    for extra in (None, "hippopotamus"):
        X, y = _labelled(labels, extra)
        model = DPLogisticRegression(max_iter=2, random_state=0).fit(X, y)
        seen.append(
            (model.classes_.tolist(), model.classes_.dtype.str, model.predict(X[:3]).dtype.str)
        )
    assert seen[0] == seen[1]
    assert seen[0][1] == "<U3"


def test_classes_do_not_show_a_negative_zero_label():
    """Of the equal keys 0.0 and -0.0, np.unique kept the first: one -0.0 row showed in classes_."""
    labels = np.where(np.arange(2000) % 2 == 0, 0.0, 1.0)
    X, y = _labelled(labels)
    X_prime, y_prime = _labelled(labels, -0.0, first=True)
    a = DPLogisticRegression(max_iter=2, random_state=0).fit(X, y).classes_
    b = DPLogisticRegression(max_iter=2, random_state=0).fit(X_prime, y_prime).classes_
    assert not np.any(np.signbit(a)) and not np.any(np.signbit(b))
    assert repr(a) == repr(b)


def test_object_labels_are_released_as_plain_strings():
    labels = np.empty(2000, dtype=object)
    labels[:] = ["a" if i % 2 else "b" for i in range(2000)]
    labels[0] = np.str_("a")  # one row's label is a numpy string
    X, y = _labelled(labels)
    classes = DPLogisticRegression(max_iter=2, random_state=0).fit(X, y).classes_
    assert [type(c) for c in classes] == [str, str]


# --------------------------------------------------------------------------
# Finding 3: one sparse row with a huge entry must not cost O(d) memory
# --------------------------------------------------------------------------


def test_sparse_entrywise_bounding_does_not_densify_huge_rows():
    """Rows with an entry beyond 1e6 x feature_bound were densified (16 d bytes each).

    With hashed features (d ~ 1e7) a single such row cost hundreds of MB: a
    MemoryError (PrivateFitError) that one row controls.
    """
    import tracemalloc

    import scipy.sparse as sp

    from sklearn_dp._data import bound_data

    d, n = 500_000, 50
    rng = np.random.default_rng(0)

    def peak(k_huge):
        values = rng.uniform(-1, 1, n)
        values[:k_huge] = 1e12
        X = sp.csr_matrix((values, (np.arange(n), rng.integers(d, size=n))), shape=(n, d))
        tracemalloc.start()
        try:
            data = bound_data(
                X, np.zeros(n), fit_intercept=True, geometry="linf", feature_bound=1.0
            )
            return tracemalloc.get_traced_memory()[1], data, X
        finally:
            tracemalloc.stop()

    base, _, _ = peak(0)
    many, data, X = peak(20)
    assert many - base < 8 * d  # less than one dense row for twenty patched rows
    # The bounded values are the entrywise clip.
    expected = X.copy()
    np.clip(expected.data, -1.0, 1.0, out=expected.data)
    bounded = data.design.materialize()[:, :-1]
    assert sp.issparse(bounded) and abs(bounded - expected).max() == 0


# --------------------------------------------------------------------------
# Finding 4: a pickled SQLite budget must never start a new ledger
# --------------------------------------------------------------------------


def test_pickled_sqlite_budget_refuses_a_missing_ledger(tmp_path):
    """Unpickled where its file is missing (another machine), it created an empty ledger."""
    import os
    import pickle

    from sklearn_dp import BudgetStorageError

    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, 1e-5, storage=path, composition="basic")
    budget.spend(1.0, 1e-5)
    blob = pickle.dumps(budget)
    # Same file: the copy counts with the original.
    assert pickle.loads(blob).remaining == (0.0, 0.0)
    os.remove(path)
    with pytest.raises(BudgetStorageError):
        pickle.loads(blob)
    assert not path.exists()


def test_pickled_sqlite_budget_refuses_another_ledger_at_its_path(tmp_path):
    import os
    import pickle
    import time

    from sklearn_dp import BudgetStorageError

    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(1.0, 1e-5, storage=path, composition="basic")
    budget.spend(1.0, 1e-5)
    blob = pickle.dumps(budget)
    os.remove(path)
    time.sleep(0.01)
    PrivacyBudget(1.0, 1e-5, storage=path)  # a new, empty ledger with the same limits
    with pytest.raises(BudgetStorageError):
        pickle.loads(blob)


# --------------------------------------------------------------------------
# Finding 5: SKLEARN_DP_DEBUG=0 switched the protection off, silently
# --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "false", "no", "off", ""])
def test_debug_switch_off_values_keep_the_protection(monkeypatch, value):
    from sklearn_dp.linear_model._base import PrivatePhase

    monkeypatch.setenv("SKLEARN_DP_DEBUG", value)
    with pytest.raises(Exception) as raised:
        with PrivatePhase("Test", None):
            raise IndexError("row 17 of 1234")
    assert type(raised.value).__name__ == "PrivateFitError"
    assert "1234" not in str(raised.value)


def test_debug_mode_says_the_fit_is_not_private(monkeypatch):
    import warnings

    from sklearn_dp import PrivacyLeakWarning

    monkeypatch.setenv("SKLEARN_DP_DEBUG", "1")
    X, y = _binary_data(100)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPLogisticRegression(classes=[0, 1], max_iter=2, random_state=0).fit(X, y)
    assert any(issubclass(w.category, PrivacyLeakWarning) for w in caught)
