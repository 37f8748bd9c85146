"""Shared test configuration.

Hypothesis profiles, selected with the ``HYPOTHESIS_PROFILE`` environment variable:

* ``thorough``: many more examples (and no deadline) for on-request runs of the
  property tests, e.g.
  ``HYPOTHESIS_PROFILE=thorough python -m pytest tests/test_sensitivity_properties.py``;
* ``long``: a long randomised fuzz run (the default run is derandomised, see
  tests/test_fuzz.py).
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "thorough",
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("long", max_examples=3000, deadline=None, derandomize=False)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
