"""Warnings that point at the user's line.

Every ``warnings.warn`` in sklearn_dp passes ``stacklevel=user_stacklevel()``:
the warning is then reported at the first frame outside the package (the
user's ``model.fit(X, y)``, or scikit-learn's frame that called it inside a
search or a Pipeline), however deep in the library it was raised and
whatever decorators lie between.  A hard-coded ``stacklevel`` breaks as soon
as a helper or a decorator frame is added.
"""

from __future__ import annotations

import os
import sys
from types import FrameType

__all__ = ["user_stacklevel"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_stacklevel() -> int:
    """``stacklevel`` for ``warnings.warn`` called here that points at the first frame outside sklearn_dp."""
    frame: FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level
