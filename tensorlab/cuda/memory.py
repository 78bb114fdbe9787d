"""tl.cuda memory statistics (torch.cuda names): bytes held by live tensors ("allocated"), bytes
the caching allocator holds from the device ("reserved"), their peaks, and the device's free and
total memory. Driver stats dicts carry the keys allocated, max_allocated, reserved, max_reserved."""
from __future__ import annotations

from ._devices import _driver, _index, _usable


_NO_STATS = {"allocated": 0, "max_allocated": 0, "reserved": 0, "max_reserved": 0}


def _stats(device):
    """The driver's counters; all zero without a usable CUDA (torch reports 0 there too, so
    portable scripts may log memory anywhere)."""
    if device is None and not _usable():
        return _NO_STATS
    idx = _index(device)
    return _driver().memory_stats(idx)


def memory_allocated(device=None):
    """Bytes occupied by tensors on `device` (block sizes of the caching allocator)."""
    return int(_stats(device)["allocated"])


def max_memory_allocated(device=None):
    """Peak of memory_allocated since the start or the last reset_peak_memory_stats."""
    return int(_stats(device)["max_allocated"])


def memory_reserved(device=None):
    """Bytes the caching allocator holds on `device` (allocated plus cached free blocks)."""
    return int(_stats(device)["reserved"])


def max_memory_reserved(device=None):
    return int(_stats(device)["max_reserved"])


def memory_stats(device=None):
    """The statistics under torch's key names."""
    s = _stats(device)
    return {"allocated_bytes.all.current": int(s["allocated"]), "allocated_bytes.all.peak": int(s["max_allocated"]),
            "reserved_bytes.all.current": int(s["reserved"]), "reserved_bytes.all.peak": int(s["max_reserved"])}


def reset_peak_memory_stats(device=None):
    """Start the peaks (max_memory_allocated / max_memory_reserved) again from the current values."""
    _driver().reset_peak_memory_stats(_index(device))


def empty_cache():
    """Return the allocator's cached free blocks to the device (tensors keep their memory). A no-op
    without CUDA, as in torch, so portable scripts may call it anywhere."""
    if _usable():
        _driver().empty_cache()


def mem_get_info(device=None):
    """(free, total) bytes of the device, as the CUDA driver reports them."""
    free, total = _driver().mem_get_info(_index(device))
    return int(free), int(total)
