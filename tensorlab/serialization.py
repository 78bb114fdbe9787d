"""tensorlab.serialization (torch.serialization's names): save/load of PyTorch's zip checkpoints and
the weights_only allowlist. The code lives in tensorlab/interop/serialization.py; the load limits
MAX_DECOMPRESSION_RATIO and MAX_DECOMPRESSED_BYTES are read and set through this module too."""
from __future__ import annotations

import sys
import types

from .interop import serialization as _impl
from .interop.serialization import (DEFAULT_PROTOCOL, add_safe_globals, clear_safe_globals,  # noqa: F401
                                    get_safe_globals, load, safe_globals, save)

__all__ = ("save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "DEFAULT_PROTOCOL", "MAX_DECOMPRESSION_RATIO", "MAX_DECOMPRESSED_BYTES")

_LIMITS = ("MAX_DECOMPRESSION_RATIO", "MAX_DECOMPRESSED_BYTES")


class _Module(types.ModuleType):
    """Forwards the load limits to the module that reads them."""

    def __getattr__(self, name):
        if name in _LIMITS:
            return getattr(_impl, name)
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name, value):
        if name in _LIMITS:
            setattr(_impl, name, value)
        else:
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Module
