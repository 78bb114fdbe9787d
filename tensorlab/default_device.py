"""torch.set_default_device / get_default_device and the `with tl.device(...)` context: the device
factory functions (tensor, zeros, empty, arange, rand, ... and so every module's parameters)
use when called without device=. Per thread, as torch keeps it; an explicit device= always wins,
and ops that take their device from an input tensor are not affected."""
from __future__ import annotations

import threading

from .device import CPU, Device, canonical

_local = threading.local()


def _stack():
    st = getattr(_local, "stack", None)
    if st is None:
        st = _local.stack = []
    return st


def _current():
    st = _stack()
    if st:
        return st[-1]
    return getattr(_local, "default", None)


def factory_device(device):
    """The device a factory creates on: `device` when given, else the default device (cpu unless set)."""
    if device is None:
        d = _current()
        return CPU if d is None else canonical(d)
    return canonical(device)


def _push(device):
    _stack().append(Device(device))


def _pop():
    _stack().pop()


def set_default_device(device):
    """Make `device` (a torch.device, "cuda", "cuda:1", an index, or None for cpu) the device factory
    functions use when called without device=, in this thread."""
    if device is None:
        _local.default = None
        return
    d = Device(device)
    if d.type == "cuda":
        from . import cuda
        if cuda.device_count() == 0:  # (the emulation driver's devices count)
            raise RuntimeError(f"set_default_device({str(d)!r}): no CUDA device is available (tl.cuda.device_count() "
                               "is 0); use 'cpu'")
    _local.default = d


def get_default_device():
    """The device factory functions use without device= (a cuda device with its index filled in)."""
    d = _current()
    return CPU if d is None else canonical(d)
