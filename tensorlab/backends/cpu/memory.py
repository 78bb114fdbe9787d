"""CPU memory primitives: host buffers (NumPy uint8 arrays), typed strided views of tensors, and the
copy/fill primitives every other op builds on."""
from __future__ import annotations

import numpy as np

from ... import _faults

__all__ = ("allocate", "buffer_nbytes", "buffer_ptr", "buffer_tolist", "copy_bytes", "retire", "wrap_numpy",
           "array", "copy", "copy_from_host", "to_host", "fill")

_EMPTY_BUF = np.empty(0, dtype=np.uint8)


def allocate(nbytes, device=None):
    _faults.hit("alloc")
    try:
        return np.empty(nbytes, dtype=np.uint8)
    except MemoryError:
        raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} bytes.") from None


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


def array(t):
    """The tensor's elements as a NumPy view over its storage (no copy). Refuses a layout that the
    storage can no longer hold (after someone shrank the storage) instead of reading past it."""
    storage, lay = t._meta
    shape, stride, offset = lay
    np_dtype = t._dtype.np
    itemsize = np_dtype.itemsize
    try:  # the hot path of every primitive: NumPy itself refuses a view reaching past the buffer
        return np.ndarray(tuple(shape), np_dtype, storage._buf, offset * itemsize, [s * itemsize for s in stride])
    except (ValueError, TypeError):
        return _checked_array(storage, lay, np_dtype)


def _checked_array(storage, lay, np_dtype):
    buf = storage._buf
    shape = lay.shape
    for n in shape:
        if n == 0:
            return np.empty(shape, dtype=np_dtype)
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
    return np.ndarray(shape, np_dtype, buf, lay.offset * itemsize, tuple(s * itemsize for s in stride))


def copy(dst, src):
    """dst[...] = src with casting; `src` broadcasts to dst. NumPy buffers overlapping operands."""
    _faults.hit("copy")
    d = array(dst)
    s = array(src)
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(d, s, casting="unsafe")


def copy_from_host(dst, arr):
    """Copy a host NumPy array (already the destination's shape) into dst."""
    _faults.hit("copy")
    with np.errstate(invalid="ignore", over="ignore"):
        np.copyto(array(dst), arr, casting="unsafe")


def to_host(t):
    """A NumPy array holding the tensor's values; on the CPU a view (shares memory)."""
    return array(t)


def fill(dst, value):
    _faults.hit("launch")
    with np.errstate(invalid="ignore", over="ignore"):
        array(dst)[...] = value
