"""tl.accelerator: torch's device-generic accelerator API over tl.cuda. tensorlab's one accelerator
is CUDA: current_accelerator() is device("cuda") when the CUDA backend can run (a GPU, or the
emulation driver), else None (what a CPU-only torch build answers); is_available() is
tl.cuda.is_available() (a real GPU), and current_accelerator(check_available=True) follows it. The
functions that need a device raise torch's RuntimeError when there is none."""
from __future__ import annotations

from . import cuda as _cuda
from .cuda._devices import _usable
from .device import Device, device as _device

_NONE = "Cannot access accelerator device when none is available."


def current_accelerator(check_available=False):
    usable = _cuda.is_available() if check_available else _usable()
    return _device("cuda") if usable else None


def is_available():
    return _cuda.is_available()


def device_count():
    return _cuda.device_count()


def _require():
    if not _usable():
        raise RuntimeError(_NONE)


def _index(device, optional):
    _require()
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _device(device)
    index = None
    if isinstance(device, Device):
        if device.type != "cuda":
            raise ValueError(f"{device.type} doesn't match the current accelerator cuda.")
        index = device.index
    elif device is not None:
        raise TypeError(f"expected a device (int, str or tensorlab.device), got {type(device).__name__}")
    if index is None:
        if not optional:
            raise ValueError(f"Expected a torch.device with a specified index or an integer, but got:{device}")
        return _cuda.current_device()
    return index


def current_device_index():
    _require()
    return _cuda.current_device()


def set_device_index(device, /):
    _cuda.set_device(_index(device, optional=False))


def synchronize(device=None, /):
    _cuda.synchronize(_index(device, optional=True))


def current_stream(device=None, /):
    return _cuda.current_stream(_index(device, optional=True))


def set_stream(stream):
    _require()
    _cuda.set_stream(stream)


def get_device_capability(device=None, /):
    major, minor = _cuda.get_device_capability(_index(device, optional=True))
    return {"major": major, "minor": minor}


class device_index:
    """Context manager: the current accelerator device is `device` inside, restored on exit
    (None: no change)."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx is not None:
            set_device_index(self.prev_idx)


def empty_cache():
    _require()
    _cuda.empty_cache()


def memory_allocated(device_index=None, /):
    return _cuda.memory_allocated(_index(device_index, optional=True))


def max_memory_allocated(device_index=None, /):
    return _cuda.max_memory_allocated(_index(device_index, optional=True))


def memory_reserved(device_index=None, /):
    return _cuda.memory_reserved(_index(device_index, optional=True))


def max_memory_reserved(device_index=None, /):
    return _cuda.max_memory_reserved(_index(device_index, optional=True))


def memory_stats(device_index=None, /):
    return _cuda.memory_stats(_index(device_index, optional=True))


def reset_peak_memory_stats(device_index=None, /):
    _cuda.reset_peak_memory_stats(_index(device_index, optional=True))


def get_memory_info(device_index=None, /):
    return _cuda.mem_get_info(_index(device_index, optional=True))


__all__ = ["current_accelerator", "current_device_index", "current_stream", "device_count", "device_index",
           "empty_cache", "get_device_capability", "get_memory_info", "is_available", "max_memory_allocated",
           "max_memory_reserved", "memory_allocated", "memory_reserved", "memory_stats", "reset_peak_memory_stats",
           "set_device_index", "set_stream", "synchronize"]
