"""tensorlab.serialization (torch.serialization's names): save/load of PyTorch's zip checkpoints and
the weights_only allowlist. The code lives in tensorlab/interop/serialization.py."""
from __future__ import annotations

from .interop.serialization import (DEFAULT_PROTOCOL, add_safe_globals, clear_safe_globals,  # noqa: F401
                                    get_safe_globals, load, safe_globals, save)

__all__ = ("save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL")
