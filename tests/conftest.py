"""Shared test configuration.

Hypothesis profiles: ``HYPOTHESIS_PROFILE=thorough`` selects a profile with many
more examples (and no deadline) for on-request runs of the property tests, e.g.
``HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_sensitivity_properties.py``.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
