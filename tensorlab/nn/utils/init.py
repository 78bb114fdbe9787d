"""tensorlab.nn.utils.init: skip_init, a module built without running its initializers.

torch builds the module on the meta device and then allocates it empty; tensorlab has no meta
device, so it builds the module on the target device with nn.init's fill functions switched off
for the construction (nn.init.skipping): the parameters are allocated and left uninitialized."""
from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def _accepts_device(cls):
    return "device" in inspect.signature(cls).parameters


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with parameters and buffers allocated but not initialized; the
    class must take a `device` argument (as torch requires)."""
    from .. import init
    from ..module import Module
    is_module_class = isinstance(module_cls, type) and issubclass(module_cls, Module)
    if not is_module_class:
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if not _accepts_device(module_cls):
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    with init._skipping():
        return module_cls(*args, **{"device": "cpu", **kwargs})
