"""CPU memory primitives: host buffers (NumPy uint8 arrays), typed strided views of tensors, and the
copy/fill primitives every other op builds on."""
from __future__ import annotations

import numpy as np

from ... import _faults
from ...layout import MAX_DIMS, contiguous_strides, raise_too_many_dims
from ...memo import memoized
from . import parallel as _par

__all__ = ("allocate", "allocate_view", "contiguous_view", "buffer_nbytes", "buffer_ptr", "buffer_tolist", "copy_bytes", "retire", "release",
           "wrap_numpy", "array", "view_array", "copy", "copy_from_host", "to_host", "fill")

_EMPTY_BUF = np.empty(0, dtype=np.uint8)


_plans = _faults._plans  # _faults.hit's "is any plan installed" test, read without the call
_U8 = np.dtype(np.uint8)


def allocate(nbytes, device=None):
    if _plans:
        _faults.hit("alloc")
    try:
        buf = np.empty(nbytes, _U8)
    except MemoryError:
        raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} bytes.") from None
    if _faults.alloc_listeners:  # tl.profiler's memory records
        _faults.allocated(buf, nbytes)
    return buf


def allocate_view(nbytes, shape, np_dtype, device=None):
    """allocate(nbytes) and its contiguous_view(buf, shape, np_dtype) in one call: (buffer, view
    or None), the fresh output of an op on the front end's straight paths."""
    buf = allocate(nbytes)  # only called while allocate is not wrapped (ops/_common.py)
    if nbytes > _CACHE_MAX:
        return buf, None
    try:
        return buf, np.ndarray(shape, np_dtype, buf)
    except ValueError:
        return buf, None


def contiguous_view(buf, shape, np_dtype):
    """The NumPy view array() builds for a new C-contiguous tensor of `shape` (a plain tuple) over
    `buf`, when the buffer is small enough for the view to be cached on the tensor (Tensor._hview),
    else None: the fresh output of every op gets its view without a second lookup."""
    if buf.nbytes > _CACHE_MAX:
        return None
    try:
        return np.ndarray(shape, np_dtype, buf)
    except ValueError:  # an empty shape whose other dimensions NumPy cannot represent: array() handles it
        return None


def buffer_nbytes(buf):
    return buf.nbytes


def buffer_ptr(buf):
    return buf.ctypes.data if buf.nbytes else 0


def buffer_tolist(buf):
    return buf.tolist()


def copy_bytes(dst, src, n):
    _faults.hit("copy")
    if n:
        dst[:n] = src[:n]


def retire(buf):
    """Host buffers are freed by reference counting; nothing can still be reading them."""


def release(buf):
    """Host buffers are freed by reference counting: a thread still holding one keeps it."""


class _Borrowed:
    """Presents foreign memory (a NumPy array's extent) as a flat uint8 buffer, keeping it alive."""

    def __init__(self, arr, ptr, nbytes):
        self._keep = arr
        self.__array_interface__ = {"data": (ptr, not arr.flags.writeable), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


def wrap_numpy(arr):
    """A flat byte buffer over the memory `arr` spans (shared, not copied), and its layout in
    elements: (buffer, shape, strides). Negative or unaligned strides raise ValueError like torch."""
    itemsize = arr.itemsize
    for s in arr.strides:
        if s < 0:
            raise ValueError("At least one stride in the given numpy array is negative, and tensors with negative "
                             "strides are not currently supported. (You can probably work around this by making a "
                             "copy of your array  with array.copy().) ")
        if s % itemsize:
            raise ValueError(f"given numpy array strides not a multiple of the element byte size "
                             f"({arr.strides} for itemsize {itemsize}). Copy the numpy array to reallocate the memory.")
    strides = tuple(s // itemsize for s in arr.strides)
    if arr.size == 0:
        return _EMPTY_BUF[:0].copy(), arr.shape, strides
    nbytes = (1 + sum((n - 1) * s for n, s in zip(arr.shape, strides))) * itemsize
    buf = np.asarray(_Borrowed(arr, arr.__array_interface__["data"][0], nbytes))
    return buf, arr.shape, strides


_CACHE_MAX = 1 << 16  # views of buffers up to this many bytes are kept on the tensor (Tensor._hview)


@memoized
def _np_layout(lay, itemsize):
    """A layout as np.ndarray's arguments: a plain tuple shape (NumPy reads a Size element by
    element through its Python __getitem__), byte strides, byte offset. Keyed on the immutable
    Layout value, so it is the same answer for every tensor with that layout."""
    shape, stride, offset = lay
    shape = tuple(shape)
    strides = None if offset == 0 and tuple(stride) == contiguous_strides(shape) else \
        tuple(s * itemsize for s in stride)
    return shape, strides, offset * itemsize


def array(t):
    """The tensor's elements as a NumPy view over its storage (no copy). Refuses a layout that the
    storage can no longer hold (after someone shrank the storage) instead of reading past it.

    Reads `t._meta` once. The view of a small buffer is cached on the tensor (Tensor._hview, a
    one-element list that pinned copies share with their tensor) together with the Meta record,
    the buffer and the dtype it was built from, and reused only while all three are still the
    tensor's (identity checks: resize_/set_ publish a new record, a storage resize installs a new
    buffer), so it is exactly the view this call would build. Callers must not change the
    returned array's own attributes (shape, strides, flags); `view_array` gives a private one."""
    meta = t._meta
    buf = meta[0]._buf
    dt = t._dtype
    h = t._hview
    if h is not None:
        c = h[0]
        if c is not None and c[0] is meta and c[1] is buf and c[2] is dt:
            return c[3]
    np_dtype = dt.np
    shape, strides, offset = _np_layout(meta[1], np_dtype.itemsize)
    try:  # NumPy itself refuses a view reaching past the buffer
        if strides is None:
            a = np.ndarray(shape, np_dtype, buf)
        else:
            a = np.ndarray(shape, np_dtype, buf, offset, strides)
    except (ValueError, TypeError):
        return _checked_array(meta[0], meta[1], np_dtype)
    if buf.nbytes <= _CACHE_MAX:
        if h is None:
            t._hview = [(meta, buf, dt, a)]
        else:  # the holder pinned copies share with their tensor (ops/_common.pinned)
            h[0] = (meta, buf, dt, a)
    return a


def arrays(tensors):
    """[array(t) for t in tensors], the cached views read in the loop itself (the same identity
    checks as array's): the many small inputs of a stack or cat, no call per cached input."""
    out = []
    for t in tensors:
        h = t._hview
        if h is not None:
            c = h[0]
            if c is not None and c[0] is t._meta and c[1] is c[0][0]._buf and c[2] is t._dtype:
                out.append(c[3])
                continue
        out.append(array(t))
    return out


def view_array(t):
    """array(t) as a NumPy array of its own (never the cached one): what users get (numpy())."""
    storage, lay = t._meta
    np_dtype = t._dtype.np
    shape, strides, offset = _np_layout(lay, np_dtype.itemsize)
    try:
        return np.ndarray(shape, np_dtype, storage._buf, offset, strides)
    except (ValueError, TypeError):
        return _checked_array(storage, lay, np_dtype)


def _empty_array(shape, np_dtype):
    """A zero-element array for `shape`. NumPy refuses shapes whose nonzero dimensions multiply
    past its index range ((0, 2**62) is a valid torch tensor), so those get every nonzero
    dimension as 1: the result still has no elements and the same number of dimensions."""
    try:
        return np.empty(shape, dtype=np_dtype)
    except ValueError:
        return np.empty(tuple(min(n, 1) for n in shape), dtype=np_dtype)


def _checked_array(storage, lay, np_dtype):
    buf = storage._buf
    shape = lay.shape
    if len(shape) > MAX_DIMS:
        raise_too_many_dims("view", len(shape))
    for n in shape:
        if n == 0:
            return _empty_array(shape, np_dtype)
    itemsize = np_dtype.itemsize
    stride = lay.stride
    end = lay.offset + 1
    for n, s in zip(shape, stride):
        end += (n - 1) * s
    if end * itemsize > buf.nbytes:
        raise RuntimeError(
            f"tensor of shape {list(shape)} with strides {list(stride)} and storage offset {lay.offset} needs "
            f"{end * itemsize} bytes but its storage holds only {buf.nbytes}; the storage was shrunk by "
            f"UntypedStorage.resize_ after this tensor was made. Call resize_ or set_ on the tensor to fix it.")
    try:
        return np.ndarray(shape, np_dtype, buf, lay.offset * itemsize, tuple(s * itemsize for s in stride))
    except ValueError:  # stride-0 layouts can span more elements than NumPy indexes (torch allows them)
        raise RuntimeError(f"tensor of shape {list(shape)} with strides {list(stride)} has more elements than the CPU "
                           f"backend's NumPy views can address (2**63 bytes); make it smaller or reduce over the "
                           f"expanded dimensions first") from None


try:  # np.errstate(invalid="ignore", over="ignore") without its Python object and frames (~1 us)
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj

    def _quiet_casts():
        return _extobj_contextvar.set(_make_extobj(all=None, divide=None, over="ignore", under=None,
                                                   invalid="ignore"))

    _loud = _extobj_contextvar.reset
except ImportError:  # pragma: no cover - other NumPy versions
    def _quiet_casts():
        es = np.errstate(invalid="ignore", over="ignore")
        es.__enter__()
        return es

    def _loud(es):
        es.__exit__(None, None, None)


def copy(dst, src):
    """dst[...] = src with casting; `src` broadcasts to dst. NumPy buffers overlapping operands."""
    _faults.hit("copy")
    d = array(dst)
    s = array(src)
    token = _quiet_casts()
    try:
        if d.size >= _par.elem_min:  # large copies: split over the CPU pool
            if not _par.copyto(d, s):
                np.copyto(d, s, casting="unsafe")
        elif d.size < _par.TILED_MIN or s.ndim < 2 or not s.strides[-1] or s.strides[-1] % _par.ALIASED or \
                not _par.tiled_copy(d, s):  # a source transposed at an aliased stride: tiles
            np.copyto(d, s, casting="unsafe")
    finally:
        _loud(token)


def copy_from_host(dst, arr):
    """Copy a host NumPy array (already the destination's shape) into dst."""
    _faults.hit("copy")
    token = _quiet_casts()
    try:
        np.copyto(array(dst), arr, casting="unsafe")
    finally:
        _loud(token)


def to_host(t):
    """A NumPy array holding the tensor's values; on the CPU a view (shares memory)."""
    return array(t)


def fill(dst, value):
    _faults.hit("launch")
    token = _quiet_casts()
    try:
        a = array(dst)
        if a.size < _par.elem_min or not _par.fill(a, value):  # large fills: split over the CPU pool
            a[...] = value
    finally:
        _loud(token)
