"""tensorlab.nn.modules: torch.nn.modules' import paths (`nn.modules.linear.Linear`,
`nn.modules.container.Sequential`, ...), re-exports only.

Each file here is named for a torch.nn.modules submodule and holds one import line per class that
tensorlab implements; a new layer family adds its file (e.g. conv.py: `from ..conv import Conv2d`)
and nothing else: this package re-exports every public class of every file it holds (Module subclasses
whose names have no leading underscore), as torch.nn.modules does."""
from __future__ import annotations

import importlib as _importlib
import pkgutil as _pkgutil

from ..module import Module as _Module

__all__ = []
for _info in sorted(_pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_"):
        continue
    _mod = _importlib.import_module(f"{__name__}.{_info.name}")
    for _name, _value in vars(_mod).items():
        if not _name.startswith("_") and isinstance(_value, type) and issubclass(_value, _Module) and _name not in __all__:
            globals()[_name] = _value
            __all__.append(_name)
del _info, _mod, _name, _value
