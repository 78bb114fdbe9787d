"""Every warning tensorlab emits goes through warn(): it points the warning at the user's line,
the first frame outside the tensorlab package, however deep inside tensorlab it was raised
(a fixed stacklevel is wrong as soon as the warning's call path changes)."""
from __future__ import annotations

import os
import sys
import warnings

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


_INSIDE = {}  # co_filename -> inside the package: abspath costs ~2 us, and a warning walks several frames


def _inside(code):
    name = code.co_filename
    r = _INSIDE.get(name)
    if r is None:
        r = _INSIDE[name] = os.path.abspath(name).startswith(_PACKAGE_DIR)
    return r


def user_stacklevel(start=1):
    """The warnings.warn stacklevel, counted from the frame `start` levels above the caller,
    that names the first frame outside tensorlab."""
    f = sys._getframe(start + 1)
    level = start + 1
    while f is not None and _inside(f.f_code):
        f = f.f_back
        level += 1
    return level


def warn(message, category=UserWarning):
    """warnings.warn(message, category) attributed to the user's code."""
    warnings.warn(message, category, stacklevel=user_stacklevel(1))
