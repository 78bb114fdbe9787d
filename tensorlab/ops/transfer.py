"""Host <-> device transfers: pinned (page-locked) host memory, and the cross-device half of
copy_into with its synchronization rules.

- pin_memory() copies a CPU tensor into page-locked memory from the CUDA driver (same shape and
  strides, as torch); is_pinned() asks the driver whether a CPU tensor's bytes are page-locked.
- CPU -> CUDA: non_blocking=False waits for the stream after queueing the copy, a named sync
  "copy to cuda" (torch's memcpy_and_sync: a blocking upload is a sync point, and the debug mode
  flags it). non_blocking=True never waits: from pinned memory the copy is truly asynchronous
  (the driver keeps the source alive until the copy ran; the data is valid on the device in
  stream order); from pageable memory CUDA stages the bytes before the call returns.
- CUDA -> CPU: the host waits (a named sync "copy to cpu") unless non_blocking=True into a
  pinned, contiguous destination of the same dtype from a contiguous source: then the bytes are
  DMA'd straight into the tensor and are valid once the stream has been synchronized.
  `to("cpu", non_blocking=True)` allocates such a pinned destination itself (as torch does).
- CUDA -> other CUDA device: staged through the host, a named sync.
"""
from __future__ import annotations

from .. import _faults, autograd_hooks, backends, layout as L
from ..device import CPU, Device
from ..storage import UntypedStorage
from ..sync import host_wait
from ..tensor import Tensor
from ._common import pinned as snapshot


def _loaded_driver():
    """The CUDA driver if the CUDA backend is already loaded, else None (then nothing in this
    process can have been pinned by tensorlab, and is_pinned must not load CuPy to say so)."""
    be = backends._cuda
    return None if be is None else be.driver


def _storage_pinned(storage):
    drv = _loaded_driver()
    return drv is not None and storage.device.type == "cpu" and bool(drv.is_pinned(storage._buf))


def is_pinned(self, device=None):
    """True when this CPU tensor's storage is page-locked host memory (False on CUDA tensors)."""
    return _storage_pinned(self._meta.storage)


def pin_memory(self, device=None):
    """A copy of this CPU tensor in page-locked memory (self when it already is), with the same
    shape and strides: the source of truly asynchronous host-to-device copies."""
    if device is not None and Device(device).type != "cuda":
        raise RuntimeError(f"pin_memory(): pinned memory serves CUDA devices, got device={device!r}")
    src = snapshot(self)
    storage, lay = src._meta
    if storage.device.type != "cpu":
        raise RuntimeError(f"cannot pin a tensor on {storage.device}: only dense CPU tensors can be pinned "
                           "(pin_memory() prepares CPU tensors for fast, asynchronous copies to the GPU)")
    if _storage_pinned(storage):
        return self
    drv = backends.load_cuda().driver  # RuntimeError naming what to install when there is no CUDA
    nbytes = L.extent(lay.shape, lay.stride, 0) * src._dtype.itemsize
    _faults.hit("alloc")
    buf = drv.pinned_empty(nbytes)
    out = Tensor._make(UntypedStorage._wrap(buf, CPU, False), L.Layout(lay.shape, lay.stride, 0), src._dtype)
    if out.numel():
        backends.cpu.copy(out, src)
    return autograd_hooks.record(out, "pin_memory", (self,))


def pinned_empty_like(src, dtype):
    """An empty contiguous CPU tensor of src's shape in page-locked memory: the destination of an
    asynchronous device-to-host copy (to("cpu", non_blocking=True))."""
    shape = src._meta.layout.shape
    drv = backends.load_cuda().driver
    _faults.hit("alloc")
    buf = drv.pinned_empty(L.numel(shape) * dtype.itemsize)
    return Tensor._make(UntypedStorage._wrap(buf, CPU, False), L.Layout(shape, L.contiguous_strides(shape), 0), dtype)


def _dense_same(dst, src):
    """Byte-for-byte transferable: same dtype, both C-contiguous (src already broadcast to dst)."""
    dl, sl = dst._meta.layout, src._meta.layout
    return (dst._dtype is src._dtype and L.is_contiguous(dl.shape, dl.stride)
            and L.is_contiguous(sl.shape, sl.stride))


def _to_pinned_async(dst, src):
    """Queue a device-to-host DMA straight into a pinned CPU tensor; False when the layout,
    dtype or memory does not allow it (the caller then copies synchronously)."""
    if not (_dense_same(dst, src) and _storage_pinned(dst._meta.storage)):
        return False
    itemsize = dst._dtype.itemsize
    n = dst.numel() * itemsize
    start, dstart = src._meta.layout.offset * itemsize, dst._meta.layout.offset * itemsize
    dev_buf, host_buf = src._meta.storage._buf, dst._meta.storage._buf
    if start + n > dev_buf.nbytes or dstart + n > host_buf.nbytes:
        return False  # a storage shrunk under its tensor: the checked path reports it
    from ..backends.cuda.driver import Pointer
    sd = src._meta.storage.device
    drv = backends.get(sd).driver
    _faults.hit("copy")
    drv.memcpy_dtoh(host_buf[dstart:dstart + n], Pointer(dev_buf, start), n, drv.current_stream(sd.index), True)
    return True


def upload(dst, host, non_blocking=False):
    """dst (on a CUDA device) <- the host NumPy array `host`: the copy is queued (the driver keeps
    a pinned source alive until it ran), then a blocking upload waits for the stream where the
    debug mode and sync_trace see it."""
    dd = dst._meta.storage.device
    backends.get(dd).copy_from_host(dst, host, non_blocking=True)
    if not non_blocking:
        host_wait("copy to cuda", dd)


def copy_across_devices(dst, src, non_blocking):
    """dst <- src for tensors on different devices (src already broadcast to dst's shape); every
    host wait here is a named sync."""
    sd, dd = src._meta.storage.device, dst._meta.storage.device
    if dd.type == "cpu":
        if non_blocking and _to_pinned_async(dst, src):
            return
        host_wait("copy to cpu", sd)
        backends.cpu.copy_from_host(dst, backends.get(sd).to_host(src))
    elif sd.type == "cpu":
        upload(dst, backends.cpu.array(src), non_blocking)
    else:
        host_wait(f"copy {sd} to {dd}", sd)
        backends.get(dd).copy_from_host(dst, backends.get(sd).to_host(src))


FUNCTIONS = ()
METHODS = {"pin_memory": pin_memory, "is_pinned": is_pinned}
