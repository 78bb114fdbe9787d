"""tensorlab.nn.utils.init: skip_init, a module built without running its initializers.

torch builds the module on the meta device and then allocates it empty; tensorlab has no meta
device, so it builds the module on the target device with nn.init's fill functions switched off
for the construction (nn.init.skipping): the parameters are allocated and left uninitialized."""
from __future__ import annotations

import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) with parameters and buffers allocated but not initialized; the
    class must take a `device` argument (as torch requires)."""
    from ..module import Module
    from .. import init
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    with init._skipping():
        return module_cls(*args, **kwargs)
