"""DPPCA: exact releases and noise scales, the protocol, the non-private limit, pipelines, audit."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event as dpe
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant
from sklearn.base import clone
from sklearn.decomposition import PCA
from sklearn.pipeline import Pipeline, make_pipeline

import sklearn_dp.decomposition._pca as pca_module
from sklearn_dp import DPLogisticRegression, PrivacyBudget, privacy_spent
from sklearn_dp._bounds import GRID, REGRESSOR_ROW_WINDOW, upper_bound_utilities
from sklearn_dp._clipped_sums import svec
from sklearn_dp._data import row_l2_norms
from sklearn_dp.accounting import (
    EXPONENTIAL_MECHANISM,
    NEIGHBORING_RELATION,
    PureEpsilonDpEvent,
    accountant_epsilon,
    accountant_event,
    epsilon_of_event,
)
from sklearn_dp.decomposition import DPPCA
from sklearn_dp.exceptions import PrivacyLeakWarning
from sklearn_dp.model_selection import DPGridSearchCV
from sklearn_dp.preprocessing import DPStandardScaler
from sklearn_dp.solvers._noisy_steps import release_symmetric
from sklearn_dp.testing import audit_mechanism, check_dp_event, trace_releases

DELTA = 1e-5


def _data(n=3000, d=5, seed=0, offset=0.5):
    """Rows with three dominant directions, a random rotation, and an offset from the origin."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    scales = np.array([3.0, 2.0, 1.5] + [0.2] * (d - 3))
    return (rng.standard_normal((n, d)) * scales) @ rotation.T + offset


def _clipped(X, bound):
    norms = row_l2_norms(X)
    return X * np.minimum(1.0, bound / np.maximum(norms, np.finfo(float).tiny))[:, None]


def _captured(components, X):
    """Variance of X along the rows of ``components`` (orthonormal)."""
    covariance = np.cov(X.T)
    return float(np.trace(components @ covariance @ components.T))


# --------------------------------------------------------------------------
# The releases, exactly
# --------------------------------------------------------------------------


def test_dppca_releases_exactly_what_it_claims():
    X = _data()
    d = X.shape[1]
    epsilon = 1.0
    with trace_releases() as trace:
        model = DPPCA(3, epsilon=epsilon, delta=DELTA, random_state=1).fit(X)
    releases = trace.releases
    assert [r.label for r in releases] == [
        "row count",
        "row norm bound",
        "row sum",
        "second-moment matrix",
    ]
    count = releases[0].used
    assert releases[0].mechanism == "laplace" and releases[0].sensitivity == 1.0
    bound_release = releases[1]
    assert bound_release.mechanism == "exponential" and bound_release.sensitivity == 1.0
    np.testing.assert_array_equal(
        bound_release.value,
        upper_bound_utilities(row_l2_norms(X), count, window=REGRESSOR_ROW_WINDOW),
    )
    R = GRID[bound_release.used]
    assert model.data_norm_ == R
    clipped = _clipped(X, R)
    total, second = releases[2], releases[3]
    # Sensitivities: one row moves the sum by ||x|| <= R in L2, and x x^T by
    # ||x||^2 <= R^2 in Frobenius norm (the L2 norm of its svec).
    assert total.mechanism == second.mechanism == "gaussian"
    assert total.norm == second.norm == "l2"
    assert total.sensitivity == R and second.sensitivity == R**2
    np.testing.assert_allclose(total.value, clipped.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(second.value, svec(clipped.T @ clipped), rtol=1e-12)
    events = model.dp_event_.events
    assert events[0] == dpe.LaplaceDpEvent(1.0 / (0.05 * epsilon))
    assert isinstance(events[1], PureEpsilonDpEvent)
    assert events[1].mechanism.startswith(EXPONENTIAL_MECHANISM)
    assert events[1].epsilon == pytest.approx(0.1 * epsilon)
    m_sum, m_gram = events[2].noise_multiplier, events[3].noise_multiplier
    assert total.scale == pytest.approx(m_sum * R, rel=1e-12)
    assert second.scale == pytest.approx(m_gram * R**2, rel=1e-12)
    # The precision split: together one Gaussian mechanism of multiplier m.
    m = (m_sum**-2 + m_gram**-2) ** -0.5
    assert m_sum == pytest.approx(m / math.sqrt(pca_module.MEAN_PRECISION_SHARE), rel=1e-12)
    # Calibrated: within the claim, and 1% less noise breaks it.
    assert epsilon_of_event(model.dp_event_, DELTA) <= epsilon * (1 + 1e-9)
    tighter = dpe.ComposedDpEvent(
        events[:2] + [dpe.GaussianDpEvent(0.99 * m_sum), dpe.GaussianDpEvent(0.99 * m_gram)]
    )
    assert epsilon_of_event(tighter, DELTA) > epsilon
    # The fitted attributes are these releases, post-processed.
    mean = total.used / count
    if np.linalg.norm(mean) > R:
        mean *= R / np.linalg.norm(mean)
    np.testing.assert_allclose(model.mean_, mean, rtol=1e-12)
    from sklearn_dp._clipped_sums import unsvec

    covariance = (unsvec(second.used, d) / count - np.outer(mean, mean)) * count / (count - 1)
    lam, V = np.linalg.eigh(covariance)
    np.testing.assert_allclose(model.explained_variance_, np.maximum(lam[::-1][:3], 0))
    np.testing.assert_allclose(np.abs(model.components_), np.abs(V[:, ::-1][:, :3].T), atol=1e-10)
    assert model.privacy_spent_ == (epsilon, DELTA)


def test_dppca_dp_event_is_read_by_dp_accountings_own_accountants():
    model = DPPCA(2, epsilon=1.0, random_state=0).fit(_data(500))
    assert check_dp_event(model) <= 1.0 * (1 + 1e-6)
    for name, accountant in (
        ("pld", pld_privacy_accountant.PLDAccountant(NEIGHBORING_RELATION)),
        ("rdp", rdp_privacy_accountant.RdpAccountant(neighboring_relation=NEIGHBORING_RELATION)),
    ):
        readable, apart = accountant_event(model.dp_event_, name)
        assert apart == [] and accountant.supports(readable)
    # PLD is nearly tight; RDP (with the pure parts as zCDP) is looser but finite.
    assert accountant_epsilon(model.dp_event_, DELTA, "pld") <= 1.0 * 1.02
    assert 1.0 <= accountant_epsilon(model.dp_event_, DELTA, "rdp") < 1.5


def test_dppca_given_data_norm_spends_on_the_sums_only():
    X = _data(500)
    with trace_releases() as trace:
        model = DPPCA(epsilon=1.0, data_norm=2.0, random_state=0).fit(X)
    assert [r.label for r in trace.releases] == ["row count", "row sum", "second-moment matrix"]
    assert trace.releases[1].sensitivity == 2.0 and trace.releases[2].sensitivity == 4.0
    assert model.data_norm_ == 2.0 and len(model.dp_event_.events) == 3
    assert epsilon_of_event(model.dp_event_, DELTA) <= 1.0 * (1 + 1e-9)


@pytest.mark.parametrize("data_norm", [1e200, 1e-200])
def test_dppca_data_norm_outside_the_public_scale_range_is_refused_before_any_spend(data_norm):
    # Its square is the second-moment matrix's sensitivity: far outside the
    # range it overflows (or vanishes) after the charge.
    budget = PrivacyBudget(10.0, 1e-4)
    with pytest.raises(ValueError, match="data_norm"):
        DPPCA(2, data_norm=data_norm, budget=budget).fit(_data(200))
    assert budget.ledger == []


def test_release_symmetric_mirrors_the_noise_of_the_upper_triangle():
    # The release dp_ssp and DPPCA share: noise std s on the diagonal,
    # s / sqrt(2) off it, symmetric; the traced value is svec (Frobenius = L2).
    m, s = 4, 3.0
    A = np.arange(16.0).reshape(4, 4)
    A = A + A.T
    rng = np.random.default_rng(0)
    draws = []
    with trace_releases() as trace:
        for _ in range(400):
            draws.append(release_symmetric(A, 1.0, s, rng, "gram matrix") - A)
    draws = np.array(draws)
    np.testing.assert_array_equal(draws, np.transpose(draws, (0, 2, 1)))
    np.testing.assert_array_equal(trace.releases[0].value, svec(A))
    assert trace.releases[0].sensitivity == 1.0 and trace.releases[0].scale == s
    diagonal = draws[:, np.arange(m), np.arange(m)].std()
    off = draws[:, 0, 1:].std()
    assert diagonal == pytest.approx(s, rel=0.1)
    assert off == pytest.approx(s / math.sqrt(2), rel=0.1)


# --------------------------------------------------------------------------
# The non-private limit and scikit-learn's PCA API
# --------------------------------------------------------------------------


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("whiten", [False, True])
def test_dppca_at_epsilon_inf_is_scikit_learns_pca(sparse, whiten):
    X = _data(400, d=6)
    exact = PCA(n_components=4, whiten=whiten).fit(X)
    Xin = sp.csr_matrix(X) if sparse else X
    model = DPPCA(4, epsilon=math.inf, data_norm=1e6, whiten=whiten).fit(Xin)
    assert model.privacy_spent_ == (math.inf, 0.0)
    assert isinstance(model.dp_event_, dpe.NonPrivateDpEvent)
    np.testing.assert_allclose(model.mean_, exact.mean_, rtol=1e-10)
    np.testing.assert_allclose(model.components_, exact.components_, atol=1e-8)
    for name in (
        "explained_variance_",
        "explained_variance_ratio_",
        "singular_values_",
        "noise_variance_",
    ):
        np.testing.assert_allclose(getattr(model, name), getattr(exact, name), rtol=1e-8)
    assert model.n_components_ == exact.n_components_ == 4
    np.testing.assert_allclose(model.transform(Xin), exact.transform(X), atol=1e-8)
    np.testing.assert_allclose(
        model.inverse_transform(model.transform(Xin)),
        exact.inverse_transform(exact.transform(X)),
        atol=1e-8,
    )
    assert list(model.get_feature_names_out()) == [f"dppca{i}" for i in range(4)]
    assert model.fit_transform(Xin).shape == (400, 4)


def test_dppca_keeps_all_components_by_default_and_reconstructs_exactly():
    X = _data(200, d=4)
    model = DPPCA(epsilon=math.inf, data_norm=1e6).fit(X)
    assert model.n_components_ == 4 and model.noise_variance_ == 0.0
    np.testing.assert_allclose(model.inverse_transform(model.transform(X)), X, atol=1e-10)
    np.testing.assert_allclose(model.components_ @ model.components_.T, np.eye(4), atol=1e-12)


def test_dppca_captures_the_variance_of_the_leading_components_at_epsilon_one():
    X = _data(5000, d=8)
    exact = PCA(3).fit(X)
    model = DPPCA(3, epsilon=1.0, random_state=0).fit(X)
    assert _captured(model.components_, X) >= 0.95 * _captured(exact.components_, X)
    np.testing.assert_allclose(model.components_ @ model.components_.T, np.eye(3), atol=1e-10)
    np.testing.assert_allclose(model.explained_variance_, exact.explained_variance_, rtol=0.2)


# --------------------------------------------------------------------------
# The protocol: public refusals, one charge before the data, plans
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "params, message",
    [
        (dict(delta=0.0), "delta > 0"),
        (dict(n_components=9), "at most the number of features"),
        (dict(n_components=0.9), "variance fraction"),
        (dict(n_components="mle"), "not supported"),
        (dict(data_norm=math.inf), "data_norm"),
        (dict(data_norm=-1.0), "data_norm"),
    ],
)
def test_dppca_refuses_bad_settings_before_spending(params, message):
    X = _data(100)
    budget = PrivacyBudget(5.0, 1e-4)
    with trace_releases() as trace:
        with pytest.raises(ValueError, match=message):
            DPPCA(budget=budget, **params).fit(X)
    assert trace.releases == [] and budget.ledger == []


def test_dppca_refuses_epsilon_inf_with_a_budget_and_an_overdraft_before_reading():
    X = _data(100)
    budget = PrivacyBudget(0.5, 1e-5)
    with trace_releases() as trace:
        with pytest.raises(ValueError, match="inf"):
            DPPCA(epsilon=math.inf, budget=budget).fit(X)
        with pytest.raises(Exception, match="exceed"):
            DPPCA(epsilon=1.0, budget=budget).fit(X)
    assert trace.releases == [] and budget.ledger == []


def test_dppca_spends_once_before_reading_and_transform_is_free():
    X = _data(400)
    budget = PrivacyBudget(2.0, 1e-5)
    seen = []
    original = budget.reserve

    def reserve(*args, **kwargs):
        seen.append((len(trace.releases), kwargs.get("event")))
        return original(*args, **kwargs)

    budget.reserve = reserve
    model = DPPCA(2, epsilon=0.5, budget=budget, random_state=0)
    plan = model._fit_plan(X)
    assert model._fit_plan(X[:2]) == plan  # the row count is not an input
    with trace_releases() as trace:
        model.fit(X)
        before = len(trace.releases)
        model.inverse_transform(model.transform(X))
    assert seen == [(0, plan.event)]
    assert len(trace.releases) == before
    assert [(e.estimator, e.status, e.epsilon) for e in budget.ledger] == [
        ("DPPCA", "completed", 0.5)
    ]
    assert budget.ledger[0].event == model.dp_event_


def test_dppca_keeps_no_generator_and_refits_independently():
    X = _data(300)
    model = DPPCA(2, epsilon=1.0).fit(X)
    first = model.components_.copy()
    assert not any(isinstance(v, np.random.Generator) for v in vars(model).values())
    assert not np.allclose(model.fit(X).components_, first)


# --------------------------------------------------------------------------
# Pipelines, privacy_spent and searches
# --------------------------------------------------------------------------


def _classification(n=600, d=6, seed=0):
    X = _data(n, d=d, seed=seed, offset=0.0)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    return X, y


def test_pipeline_dppca_then_logistic_regression_on_one_budget():
    X, y = _classification()
    budget = PrivacyBudget(2.0, 2e-5)
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, budget=budget, random_state=0),
        DPPCA(3, epsilon=0.5, budget=budget, random_state=0),
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], budget=budget, random_state=0),
    ).fit(X, y)
    assert [e.estimator for e in budget.ledger] == [
        "DPStandardScaler",
        "DPPCA",
        "DPLogisticRegression",
    ]
    epsilon, delta = privacy_spent(pipe)
    assert (epsilon, delta) == budget.spent
    assert epsilon <= 2.0 * (1 + 1e-9)
    assert pipe[-1].n_features_in_ == 3


def test_privacy_spent_vouches_for_dppca_not_for_scikit_learns_pca():
    X, y = _classification()
    pipe = make_pipeline(
        DPPCA(3, epsilon=0.5, random_state=0),
        DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0),
    ).fit(X, y)
    epsilon, _ = privacy_spent(pipe)
    assert 1.0 < epsilon <= 1.5 * (1 + 1e-9)
    public = make_pipeline(
        PCA(3), DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0)
    ).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="DPPCA in place of PCA"):
        assert privacy_spent(public)[0] == math.inf


def test_search_over_a_dppca_pipeline_plans_the_changed_width():
    X, y = _classification(400)
    pipe = Pipeline(
        [
            ("pca", DPPCA(2, epsilon=0.5, data_norm=3.0)),
            (
                "clf",
                DPLogisticRegression(
                    epsilon=1.0, classes=[0, 1], solver="dp_gd", max_iter=5, data_norm=3.0
                ),
            ),
        ]
    )
    budget = PrivacyBudget(2.0, 1e-5, composition="basic")
    search = DPGridSearchCV(
        pipe,
        {"pca__n_components": [1, 4]},
        epsilon=2.0,
        delta=1e-5,
        n_candidates=3,
        budget=budget,
        random_state=0,
    ).fit(X, y)
    best = search.best_estimator_
    pca, clf = best.named_steps["pca"], best.named_steps["clf"]
    assert pca.n_components_ == search.best_params_["pca__n_components"]
    assert clf.n_features_in_ == pca.n_components_
    # The refit's part of the search's entry is the event it planned on the
    # narrower stand-in.
    refit_event = dpe.ComposedDpEvent([pca.dp_event_, clf.dp_event_])
    assert budget.ledger[0].event == dpe.ComposedDpEvent([search.selection_dp_event_, refit_event])
    assert search.privacy_spent_ == (2.0, 1e-5)
    assert budget.spent == pytest.approx(search.privacy_spent_)


# --------------------------------------------------------------------------
# Audit on neighbouring data sets
# --------------------------------------------------------------------------


def _canary_variance_run():
    """run(with_canary, seed): the released second moment along the canary's direction.

    Many rows keep the noisy count (whose noise divides every statistic)
    close to n; the canary adds 1 to the second moment of feature 1.
    """
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(2000, 2))
    X_prime = np.vstack([X, [0.0, 1e6]])  # norm 1e6, scaled to data_norm = 1

    def run(with_canary, seed):
        model = DPPCA(epsilon=1.0, delta=DELTA, data_norm=1.0, random_state=seed)
        model.fit(X_prime if with_canary else X)
        # singular_values_**2 undo the division by the noisy count:
        # sum_k s_k^2 V[k, 1]^2 = S[1, 1] - (released sum of feature 1)^2 / n~.
        loadings = model.components_[:, 1]
        return float(np.sum(model.singular_values_**2 * loadings**2))

    return run


def test_audit_of_dppca_does_not_exceed_its_claim():
    result = audit_mechanism(_canary_variance_run(), claimed_epsilon=1.0, delta=DELTA, n_runs=600)
    assert result.epsilon_lower_bound <= 1.0


@pytest.mark.slow
def test_audit_of_dppca_finds_too_little_noise_and_not_the_real_mechanism(monkeypatch):
    result = audit_mechanism(
        _canary_variance_run(), claimed_epsilon=1.0, delta=DELTA, n_runs=4000, seed_offset=7
    )
    assert result.epsilon_lower_bound <= 1.0
    # Positive control: a sixth of the calibrated noise is found out.
    original = pca_module._pca_plan
    monkeypatch.setattr(pca_module, "_pca_plan", lambda *args: original(*args) / 6.0)
    control = audit_mechanism(_canary_variance_run(), claimed_epsilon=1.0, delta=DELTA, n_runs=1000)
    assert control.epsilon_lower_bound > 1.0


def test_dppca_is_clonable_with_its_parameters():
    model = DPPCA(3, epsilon=0.7, delta=1e-6, data_norm=2.0, whiten=True, random_state=4)
    assert clone(model).get_params() == model.get_params()


@pytest.mark.parametrize("whiten", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_transform_maps_finite_rows_to_finite_rows(whiten, sparse):
    X = _data(n=400, d=3)
    pca = DPPCA(n_components=2, epsilon=1.0, whiten=whiten, random_state=0).fit(X)
    huge = np.finfo(np.float64).max
    # Entries near the float range of both signs: +inf and -inf partial sums.
    rows = np.array([[huge, huge, huge], [huge, -huge, huge], [1e-300, -huge, 0.0]])
    out = pca.transform(sp.csr_matrix(rows) if sparse else rows)
    assert np.all(np.isfinite(out))
    # Ordinary rows are projected as before.
    np.testing.assert_array_equal(
        pca.transform(X[:5]),
        (X[:5] @ pca.components_.T - pca.components_ @ pca.mean_)
        / (pca._whitening() if whiten else 1.0),
    )


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_pipeline_after_dppca_fits_whether_or_not_a_row_overflows(dtype):
    rng = np.random.default_rng(0)
    z = rng.normal(size=400)
    X = (np.outer(z, [1.0, 1.0, 1.0]) + 0.1 * rng.normal(size=(400, 3))).astype(dtype)
    y = (z > 0).astype(int)
    huge = np.finfo(dtype).max
    for A, b in ((X, y), (np.vstack([X, np.full((1, 3), huge, dtype)]), np.append(y, 1))):
        model = make_pipeline(
            DPPCA(n_components=2, epsilon=1.0, random_state=0),
            DPLogisticRegression(epsilon=1.0, classes=[0, 1], max_iter=5, random_state=0),
        ).fit(A, b)
        assert np.all(np.isfinite(model[-1].coef_))
