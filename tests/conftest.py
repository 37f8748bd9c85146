"""Shared test configuration.

Hypothesis profiles, selected with the ``HYPOTHESIS_PROFILE`` environment variable:

* ``thorough``: many more examples (and no deadline) for on-request runs of the
  property tests, e.g.
  ``HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_sensitivity_properties.py``;
* ``long``: a long randomised fuzz run (the default run is derandomised, see
  tests/test_fuzz.py).

Seeded charged fits are reproducible within a test: a seeded fit charged to a
budget keys its noise on the budget's identity (a random uuid, or a ledger file
and a random nonce of its opening), so that no two budgets share noise; that
makes a test's outcome vary from run to run.  Here, for the duration of each
test, each distinct identity is replaced by its rank of first use in that test
("test budget 0", "test budget 1", ...): distinct budgets still draw distinct
streams, and a test draws the same noise on every run.  Worker processes
(joblib's loky) are not patched.

Audits that can fail: every statistical audit in the suite goes through
``sklearn_dp.testing.audit_mechanism`` (directly, or through ``audit_estimator``
and ``audit_noisy_gradient_sum``), and here, before any test module imports
it, its ``require_power`` default is turned on: an audit whose configuration
cannot refute its claim (its largest possible lower bound, given the number of
bound runs and the confidence, is not above the claimed epsilon) raises before
its first run.  So each audit must state its real claim as ``claimed_epsilon``;
a test of the audit machinery itself that needs a claim it cannot refute
passes ``require_power=False``.
"""

import functools
import os
import types

import pytest
from hypothesis import HealthCheck, settings

import sklearn_dp._random as _random
import sklearn_dp.testing as _testing


def _require_power_by_default(audit_mechanism):
    @functools.wraps(audit_mechanism)
    def audit(*args, require_power=True, **kwargs):
        return audit_mechanism(*args, require_power=require_power, **kwargs)

    audit.__wrapped_for_tests__ = audit_mechanism
    return audit


if not hasattr(_testing.audit_mechanism, "__wrapped_for_tests__"):
    _testing.audit_mechanism = _require_power_by_default(_testing.audit_mechanism)

_charged_entropy = _random.charged_entropy


@pytest.fixture(autouse=True)
def _budget_identities_ranked_within_each_test(monkeypatch):
    ranks = {}

    def charged_entropy(seed, reservation):
        rank = ranks.setdefault(reservation.budget._identity, len(ranks))
        stand_in = types.SimpleNamespace(
            budget=types.SimpleNamespace(_identity=f"test budget {rank}"),
            entry_id=reservation.entry_id,
        )
        return _charged_entropy(seed, stand_in)

    monkeypatch.setattr(_random, "charged_entropy", charged_entropy)


settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("long", max_examples=3000, deadline=None, derandomize=False)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
