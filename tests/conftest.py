"""Test-suite configuration.

Hypothesis: the default run is derandomised (see tests/test_fuzz.py); set
``HYPOTHESIS_PROFILE=long`` for a long randomised fuzz run on request.
"""

import os

from hypothesis import settings

settings.register_profile("long", max_examples=3000, deadline=None, derandomize=False)

if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
