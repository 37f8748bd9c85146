"""A shared budget through Pipeline, cross_val_score and GridSearchCV."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import FitFailedWarning
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sklearn_dp import BudgetExceededError, BudgetStorageError, DPLogisticRegression, PrivacyBudget


@pytest.fixture
def data():
    X, y = make_classification(n_samples=300, n_features=4, random_state=1)
    return X, y


def _model(budget, **params):
    return DPLogisticRegression(
        budget=budget,
        classes=[0, 1],
        data_norm=3.0,
        random_state=0,
        max_iter=20,
        solver="dp_gd",
        **params,
    )


def test_clone_shares_budget(data):
    budget = PrivacyBudget(10.0, 1e-4)
    model = _model(budget)
    assert clone(model).budget is budget


def test_pipeline_spends_once_per_fit(data):
    X, y = data
    budget = PrivacyBudget(10.0, 1e-4)
    # The scaling is a fixed public map (no statistics of the data).
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z / 3.0), _model(budget, epsilon=0.5))
    pipe.fit(X, y)
    assert len(budget.ledger) == 1
    assert pipe.score(X, y) > 0.6


def test_cross_val_score_records_every_fold(data):
    X, y = data
    budget = PrivacyBudget(10.0, 1e-4)
    scores = cross_val_score(_model(budget, epsilon=0.5), X, y, cv=4)
    assert len(scores) == 4
    assert len(budget.ledger) == 4


def _grid_search(budget, n_jobs):
    grid = GridSearchCV(
        _model(budget), param_grid={"epsilon": [0.25, 0.5, 1.0]}, cv=3, n_jobs=n_jobs
    )
    return grid


def test_grid_search_n_jobs_1_records_every_fit_and_refit(data):
    X, y = data
    budget = PrivacyBudget(20.0, 1e-4)
    grid = _grid_search(budget, n_jobs=1).fit(X, y)
    # 3 candidates x 3 folds, plus the refit on the whole data.
    assert len(budget.ledger) == 10
    assert grid.best_estimator_.budget is budget
    spent = sorted(entry.epsilon for entry in budget.ledger)
    assert spent.count(grid.best_params_["epsilon"]) == 4


def test_grid_search_n_jobs_2_with_sqlite(data, tmp_path):
    X, y = data
    path = tmp_path / "budget.sqlite"
    budget = PrivacyBudget(20.0, 1e-4, storage=path)
    _grid_search(budget, n_jobs=2).fit(X, y)
    assert len(budget.ledger) == 10
    # A second handle on the same file sees the same ledger.
    assert len(PrivacyBudget(20.0, 1e-4, storage=path).ledger) == 10


def test_grid_search_n_jobs_2_in_memory_budget_refuses(data):
    X, y = data
    budget = PrivacyBudget(20.0, 1e-4)
    grid = _grid_search(budget, n_jobs=2)
    grid.set_params(error_score="raise")
    with pytest.raises(BudgetStorageError, match="storage="):
        grid.fit(X, y)


def test_grid_search_stops_when_budget_runs_out(data):
    X, y = data
    budget = PrivacyBudget(1.0, 1e-4)
    grid = _grid_search(budget, n_jobs=1)
    grid.set_params(error_score=np.nan)
    # Fits that the budget cannot afford fail (and spend nothing); the
    # search goes on with error_score and the ledger never overspends.
    with pytest.warns(FitFailedWarning, match="BudgetExceededError"):
        try:
            grid.fit(X, y)
        except BudgetExceededError:
            pass  # the refit itself may not be affordable
    assert 0 < len(budget.ledger) < 10
    assert budget.spent[0] <= 1.0 + 1e-9
