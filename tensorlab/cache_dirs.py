"""Where tensorlab keeps compiled kernels between processes."""
from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir(override_env, name):
    """$<override_env> when set, else $XDG_CACHE_HOME/tensorlab/<name>, else ~/.cache/tensorlab/<name>."""
    d = os.environ.get(override_env)
    if d:
        return Path(d)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tensorlab" / name
