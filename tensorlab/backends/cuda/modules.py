"""Kernel modules: each kernels/*.cu is compiled once per (source, options, device) with every
name expression its tensorlab.kernel_table row lists, on first use; functions are then looked up
by name expression from a flat cache (the hot path of every launch is one dict lookup)."""
from __future__ import annotations

import threading

from ...kernel_table import KERNELS
from ...kernels_path import kernel_dir
from .active import driver

OPTIONS = ("-std=c++17",)  # the drivers add the include path of kernels/

_modules = {}    # (source, options, device) -> driver module
_functions = {}  # (source, name_expression, device) -> driver function
_lock = threading.Lock()  # one compile per module even when threads race to the first launch


def module(source, device, options=OPTIONS):
    key = (source, options, device)
    m = _modules.get(key)
    if m is None:
        with _lock:
            m = _modules.get(key)
            if m is None:
                exprs = KERNELS.get(source)
                if exprs is None:
                    raise RuntimeError(f"no kernel source {source!r} in tensorlab/kernel_table.py (sources: "
                                       f"{', '.join(sorted(KERNELS))})")
                m = _modules[key] = driver.load_module(kernel_dir() / source, exprs, options, device)
    return m


def function(source, name_expression, device):
    """The compiled kernel `name_expression` of `source` on device index `device`."""
    key = (source, name_expression, device)
    f = _functions.get(key)
    if f is None:
        if name_expression not in KERNELS.get(source, ()):
            raise RuntimeError(f"kernel {name_expression!r} is not instantiated by {source}: add it to that "
                               "source's row in tensorlab/kernel_table.py")
        f = _functions[key] = module(source, device).get_function(name_expression)
    return f
