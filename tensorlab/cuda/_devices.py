"""Device queries and selection for tl.cuda: availability, the current device, properties,
synchronize. Everything goes through the CUDA backend's driver (real GPU or emulation)."""
from __future__ import annotations

from .. import backends
from ..device import Device
from ..sync import host_wait


def _driver():
    """The active CUDA driver; RuntimeError naming what to install when there is none."""
    return backends.load_cuda().driver


def _usable():
    """Whether the CUDA backend can run here: a real GPU, or the emulation driver."""
    return backends.cuda_emulated() or backends.cuda_unavailable_reason() is None


def is_available():
    """True when a real CUDA GPU can be used (never raises; False under the emulation driver)."""
    try:
        return not backends.cuda_emulated() and backends.cuda_unavailable_reason() is None
    except Exception:
        return False


def device_count():
    """Number of CUDA devices the active driver sees, emulated ones included (0 without CUDA;
    never raises)."""
    try:
        return int(_driver().device_count()) if _usable() else 0
    except Exception:
        return 0


def current_device():
    return _driver().current_device()


def _index(device, optional=True):
    """A CUDA device index from None (the current device), an int, 'cuda[:N]', a Device or a
    tl.cuda.device context; checked against the device count."""
    if device is None:
        if not optional:
            raise ValueError("Expected a cuda device with a specified index or an integer, but got: None")
        return current_device()
    if hasattr(device, "idx") and not isinstance(device, (int, str, Device)):  # a tl.cuda.device
        device = device.idx
    if isinstance(device, bool):
        raise TypeError(f"Invalid device, must be a cuda device index, 'cuda:N' or tensorlab.device, got {device!r}")
    if isinstance(device, int):
        idx = device
    elif isinstance(device, (str, Device)):
        d = Device(device)
        if d.type != "cuda":
            raise ValueError(f"Expected a cuda device, but got: {d}")
        if d.index is None:
            if not optional:
                raise ValueError(f"Expected a cuda device with a specified index or an integer, but got: {d}")
            return current_device()
        idx = d.index
    else:
        raise TypeError(f"Invalid device, must be a cuda device index, 'cuda:N' or tensorlab.device, got "
                        f"{type(device).__name__}")
    n = _driver().device_count()
    if not 0 <= idx < n:
        raise RuntimeError(f"CUDA error: invalid device ordinal: cuda:{idx} was asked for but there "
                           f"{'is' if n == 1 else 'are'} only {n} CUDA device{'' if n == 1 else 's'} "
                           f"(cuda:0{'' if n == 1 else f' .. cuda:{n - 1}'})")
    return idx


def set_device(device):
    """Select the current CUDA device of this thread (a negative index is a no-op, as torch)."""
    if isinstance(device, int) and not isinstance(device, bool) and device < 0:
        return
    idx = _index(device, optional=False)
    _driver().set_device(idx)


class device:
    """Context manager selecting a CUDA device: `with tl.cuda.device(1): ...` (None or a negative
    index: no change)."""

    def __init__(self, device):
        if device is None or (isinstance(device, int) and not isinstance(device, bool) and device < 0):
            self.idx = -1
        else:
            self.idx = _index(device, optional=True)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx != -1:
            drv = _driver()
            self.prev_idx = drv.current_device()
            if self.prev_idx != self.idx:
                drv.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.idx != -1 and self.prev_idx != self.idx:
            _driver().set_device(self.prev_idx)
        return False


class device_of(device):
    """Context manager selecting the device of a tensor (no change for a CPU tensor)."""

    def __init__(self, obj):
        d = obj.device
        super().__init__(d.index if d.type == "cuda" else None)


class _CudaDeviceProperties:
    """What get_device_properties returns (torch's attribute names)."""

    __slots__ = ("name", "major", "minor", "total_memory", "multi_processor_count", "max_threads_per_block",
                 "shared_memory_per_block", "warp_size", "L2_cache_size")

    def __init__(self, p):
        self.name = p["name"]
        self.major = p["major"]
        self.minor = p["minor"]
        self.total_memory = p["total_memory"]
        self.multi_processor_count = p["multi_processor_count"]
        self.max_threads_per_block = p["max_threads_per_block"]
        self.shared_memory_per_block = p["max_shared_memory_per_block"]
        self.warp_size = p["warp_size"]
        self.L2_cache_size = p["l2_cache_size"]

    def __repr__(self):
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
                f"total_memory={self.total_memory // (1 << 20)}MB, multi_processor_count="
                f"{self.multi_processor_count}, L2_cache_size={self.L2_cache_size // (1 << 20)}MB)")


def get_device_properties(device=None):
    return _CudaDeviceProperties(_driver().device_properties(_index(device)))


def get_device_name(device=None):
    return _driver().device_name(_index(device))


def get_device_capability(device=None):
    p = _driver().device_properties(_index(device))
    return p["major"], p["minor"]


def synchronize(device=None):
    """Wait for all work queued on a device (an explicit sync: traced, never refused)."""
    idx = _index(device)
    drv = _driver()
    host_wait("synchronize", Device("cuda", idx), wait=lambda: drv.device_synchronize(idx), explicit=True)
