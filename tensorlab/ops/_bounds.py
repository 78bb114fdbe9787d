"""Bounds on work sized by a user's argument (issue 38, item 6): an output size, a padding, a
resampling size is checked against what the machine can hold before any loop or allocation starts,
with torch's errors: int64 overflow of the byte count ("Storage size calculation overflowed"),
then more bytes than the device has ("DefaultCPUAllocator: can't allocate memory: you tried to
allocate N bytes", CUDA's out-of-memory error on a GPU)."""
from __future__ import annotations

import os

_INT64_MAX = 2 ** 63 - 1


def host_bytes():
    """The machine's physical memory in bytes (no host allocation can be larger)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: only the int64 bound applies
        return _INT64_MAX


def device_bytes(device):
    if device is None or device.type == "cpu":
        return host_bytes()
    try:
        from ..backends.cuda.active import driver
        return driver.mem_get_info(device.index if device.index is not None else driver.current_device())[1]
    except Exception:  # noqa: BLE001 - no usable device: the allocation itself will say why
        return _INT64_MAX


def check_shape_fits(shape, itemsize, device, op):
    """RuntimeError (torch's words) when a tensor of `shape` and `itemsize` cannot exist on
    `device`: its byte count overflows int64 or exceeds the device's memory."""
    numel = 1
    for n in shape:
        numel *= int(n)
    nbytes = numel * itemsize
    if nbytes > _INT64_MAX:
        raise RuntimeError(f"{op}: Storage size calculation overflowed with sizes={list(shape)}")
    check_bytes_fit(nbytes, device, op)
    return nbytes


def check_bytes_fit(nbytes, device, op):
    cap = device_bytes(device)
    if nbytes > cap:
        if device is not None and device.type == "cuda":
            from ..cuda.errors import OutOfMemoryError
            raise OutOfMemoryError(nbytes, None, device.index)
        raise RuntimeError(f"{op}: DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes "
                           f"(the machine has {cap} bytes of memory)")
