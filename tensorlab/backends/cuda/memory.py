"""CUDA memory primitives (the names of backends/cpu/memory.py): device buffers from the driver,
transfers between host and device, and the copy/fill kernels every other op builds on."""
from __future__ import annotations

import numpy as np

from ... import _faults, dtypes
from ...cuda.errors import OutOfMemoryError
from ...device import Device
from ...layout import Layout, contiguous_strides, is_contiguous
from . import launch as K
from .active import driver
from .driver import OutOfMemory, Pointer

__all__ = ("allocate", "buffer_nbytes", "buffer_ptr", "buffer_tolist", "copy_bytes", "retire", "release", "copy",
           "copy_from_host", "to_host", "fill")


_fault_plans = _faults._plans


def allocate(nbytes, device=None):
    """A device buffer of `nbytes` bytes on the current stream of `device` (a cuda Device)."""
    if _fault_plans:  # _faults.hit's "is any plan installed" test, without the call
        _faults.hit("alloc")
    idx = driver.current_device() if device is None or device.index is None else device.index
    try:
        return driver.malloc(nbytes, idx, driver.current_stream(idx))
    except OutOfMemory as e:
        raise OutOfMemoryError(nbytes, e.free, idx) from None


def buffer_nbytes(buf):
    return buf.nbytes


def buffer_ptr(buf):
    return buf.ptr if buf.nbytes else 0


def buffer_tolist(buf):
    """The buffer's bytes as a list of ints (a host synchronization, named "tolist")."""
    from ...sync import host_wait
    host_wait("tolist", Device("cuda", buf.device))
    host = np.empty(buf.nbytes, dtype=np.uint8)
    driver.memcpy_dtoh(host, Pointer(buf), buf.nbytes, driver.current_stream(buf.device), False)
    return host.tolist()


def copy_bytes(dst, src, n):
    _faults.hit("copy")
    if n:
        driver.memcpy_dtod(Pointer(dst), Pointer(src), n, driver.current_stream(dst.device))


def retire(buf):
    """Free on the current stream: the memory is reused only after the work queued there."""
    driver.free(buf, driver.current_stream(buf.device))


def release(buf):
    """A storage lets go of `buf` (resize_, set_): reused only once no thread holds it any more and
    the work queued on the current stream has run (retire() is for an op's private scratch)."""
    driver.release(buf, driver.current_stream(buf.device))


def temp(shape, dtype, device):
    """A contiguous scratch operand, freed on the stream once the caller drops it (retire_temp)."""
    n = 1
    for s in shape:
        n *= s
    buf = allocate(n * dtype.itemsize, Device("cuda", device))
    return K.Operand(buf, Layout(tuple(shape), contiguous_strides(shape), 0), dtype)


_EXPR = {}  # (kernel, C types..., index) -> name expression (formatted once)


def _expr(kernel, *types):
    key = (kernel, *types)
    e = _EXPR.get(key)
    if e is None:
        e = _EXPR[key] = f"{kernel}<{', '.join(types)}>"
    return e


def copy_kernel(dst, src):
    """dst <- cast(src) for operands of one shape on one device, by the copy_cast kernels."""
    if K.operand(dst).dtype.category == 3 or K.operand(src).dtype.category == 3:  # over the parts (complex.py)
        from . import complex as _cx
        return _cx.copy(dst, src, copy_kernel)
    p = K.Plan((dst, src))
    if not p.n:
        return
    sd, dd = p.operands[1].dtype, p.operands[0].dtype
    s, d = sd.ctype, dd.ctype
    if p.contiguous:
        K.launch("copy.cu", _expr("copy_cast_contiguous", s, d, p.index), p.device,
                 (p.ptrs[0], p.ptrs[1], p.count, _copy_packs(p, dd.itemsize, sd.itemsize)), n=p.n, fault="copy")
    else:
        lay = p.layouts
        K.launch("copy.cu", _expr("copy_cast_strided", s, d, p.index), p.device,
                 (p.ptrs[0], p.ptrs[1], p.count, lay[0], lay[1]), n=p.n, fault="copy")


def _copy_packs(p, dst_size, src_size):
    """copy_cast_contiguous's `packs` (as its Index): n // lanes when both addresses are multiples of
    their pack widths (kernels/tensorlab/pack.cuh: 16 bytes of the wider type), else 0."""
    lanes = 16 // max(dst_size, src_size)
    dst, src = p.ptrs
    if (dst.buffer.ptr + dst.offset) % (lanes * dst_size) or (src.buffer.ptr + src.offset) % (lanes * src_size):
        return K.index_scalar(0, p.index)
    return K.index_scalar(p.n // lanes, p.index)


def byte_range(op):
    lay = op.layout
    isz = op.dtype.itemsize
    reach = sum((n - 1) * s for n, s in zip(lay.shape, lay.stride))
    return lay.offset * isz, (lay.offset + reach + 1) * isz


def _same_elements(a, b):
    """Every element of a is the element of b with the same index: an elementwise in-place copy
    reads each element before writing it."""
    ia, ib = a.dtype.itemsize, b.dtype.itemsize
    return (ia == ib and a.layout.offset == b.layout.offset and tuple(a.layout.stride) == tuple(b.layout.stride))


def _overlapping(dst, src):
    if dst.buffer is not src.buffer:
        return False
    d0, d1 = byte_range(dst)
    s0, s1 = byte_range(src)
    return d0 < s1 and s0 < d1 and not _same_elements(dst, src)


def copy(dst, src):
    """dst[...] = src with casting, both on one device; `src` already has dst's shape (broadcast
    dims have stride 0). Overlapping operands are staged through a temporary, as NumPy does."""
    d, s = K.operand(dst), K.operand(src)
    if d.dtype.category == 3 or s.dtype.category == 3:  # complex: the real kernels over the parts (complex.py)
        from . import complex as _cx
        return _cx.copy(d, s, copy)
    n = 1
    for k in d.layout.shape:
        n *= k
    if n == 0:
        return
    if _overlapping(d, s):
        tmp = temp(s.layout.shape, s.dtype, d.buffer.device)
        copy_kernel(tmp, s)
        copy_kernel(d, tmp)
        retire(tmp.buffer)
        return
    copy_kernel(d, s)


def _compact(host):
    """The host array's distinct values as a C-contiguous array, and the element strides that read
    it back in the original shape (broadcast dims, stride 0 in `host`, are stored once)."""
    if host.flags.c_contiguous:
        return host, contiguous_strides(host.shape)
    index = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for n, st in zip(host.shape, host.strides))
    small = np.ascontiguousarray(host[index])
    strides = contiguous_strides(small.shape)
    return small, tuple(0 if st == 0 and n > 1 else s for n, st, s in zip(host.shape, host.strides, strides))


def copy_from_host(dst, host, non_blocking=False):
    """Copy a host NumPy array of dst's shape (any dtype, any strides) into dst. Same dtype into a
    contiguous dst: one host-to-device copy; otherwise the values go to a device scratch buffer and
    the copy_cast kernel writes them through dst's strides, converting the dtype. non_blocking is
    honoured when the caller's own array is transferred (a staging copy made here is not kept
    alive for an asynchronous transfer)."""
    d = K.operand(dst)
    shape = tuple(d.layout.shape)
    if tuple(host.shape) != shape:
        raise ValueError(f"copy_from_host: host array of shape {list(host.shape)} for a tensor of shape {list(shape)}")
    n = 1
    for k in shape:
        n *= k
    if n == 0:
        return
    src_dtype = dtypes.from_numpy_dtype(host.dtype)
    small, strides = _compact(host)
    asynchronous = non_blocking and small is host
    dev = d.buffer.device
    stream = driver.current_stream(dev)
    p = K.Plan((d,))
    # one direct copy only when dst's memory order is the compact host array's (row-major): a dense
    # dst in another order (channels_last, a permutation) also plans as "contiguous"
    if src_dtype is d.dtype and p.contiguous and small.size == n and is_contiguous(shape, tuple(d.layout.stride)):
        _faults.hit("copy")
        driver.memcpy_htod(p.ptrs[0], small, small.nbytes, stream, asynchronous)
        return
    tmp = temp(small.shape, src_dtype, dev)
    _faults.hit("copy")
    driver.memcpy_htod(Pointer(tmp.buffer), small, small.nbytes, stream, asynchronous)
    copy_kernel(d, K.Operand(tmp.buffer, Layout(shape, strides, 0), src_dtype))
    retire(tmp.buffer)


def to_host(t):
    """A NumPy array of the tensor's values in its shape. The bytes the tensor spans come over in
    one copy when that is at most twice its size (then viewed with its strides); a sparser view
    (a column of a big matrix) is first gathered into a contiguous scratch buffer by the copy
    kernel. The caller synchronizes (a named host_wait) before asking."""
    op = K.operand(t)
    lay, dt = op.layout, op.dtype
    n = 1
    for k in lay.shape:
        n *= k
    if n == 0:
        return np.empty(tuple(lay.shape), dt.np)
    reach = sum((k - 1) * s for k, s in zip(lay.shape, lay.stride))
    K.check_bounds(op, reach)
    stream = driver.current_stream(op.buffer.device)
    isz = dt.itemsize
    if reach + 1 <= 2 * n:
        host = np.empty(reach + 1, dt.np)
        _faults.hit("copy")
        driver.memcpy_dtoh(host, Pointer(op.buffer, lay.offset * isz), host.nbytes, stream, False)
        if reach + 1 == n and tuple(lay.stride) == contiguous_strides(lay.shape):
            return host.reshape(tuple(lay.shape))
        # a view over the copied span; read-only because broadcast (stride 0) elements share bytes
        return np.lib.stride_tricks.as_strided(host, tuple(lay.shape), tuple(s * isz for s in lay.stride),
                                               writeable=False)
    tmp = temp(lay.shape, dt, op.buffer.device)
    copy_kernel(tmp, op)
    host = np.empty(tuple(lay.shape), dt.np)
    _faults.hit("copy")
    driver.memcpy_dtoh(host, Pointer(tmp.buffer), host.nbytes, stream, False)
    retire(tmp.buffer)
    return host


def fill(dst, value):
    if K.operand(dst).dtype.category == 3:  # complex: real and imaginary parts (complex.py)
        from . import complex as _cx
        return _cx.fill(dst, value, fill)
    p = K.plan(dst)
    if not p.n:
        return
    dt = p.operands[0].dtype
    v = K.scalar(value, dt)
    if p.contiguous:
        K.launch("fill.cu", _expr("fill_contiguous", dt.ctype, p.index), p.device, (p.ptrs[0], v, p.count), n=p.n)
    else:
        K.launch("fill.cu", _expr("fill_strided", dt.ctype, p.index), p.device,
                 (p.ptrs[0], v, p.count, p.layouts[0]), n=p.n)
