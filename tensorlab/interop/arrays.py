"""NumPy's and CUDA's array interfaces: Tensor.__array__ (NumPy 2's copy= rule), Tensor.numpy,
__array_interface__ (CPU tensors), __cuda_array_interface__ (version 3, with its stream), and the
consumers tl.as_tensor / tl.asarray for objects that expose any of them or DLPack.

Memory handed out through an interface dict is pinned on the tensor (the consumer keeps the
tensor alive, as NumPy and CuPy do, but a later set_/resize_ may move the tensor to other bytes):
every buffer a dict named stays alive as long as the tensor. Memory that comes in becomes a
non-resizable UntypedStorage whose buffer holds the producer (dlpack._wrap)."""
from __future__ import annotations

import operator

import numpy as np

from .. import dtypes
from ..device import canonical
from ..layout import contiguous_strides
from . import dlpack

_COPY_NEEDED = ("Unable to avoid copy while creating an array as requested.\nIf using `np.array(obj, copy=False)` "
                "replace it with `np.asarray(obj)` to allow a copy when needed (no behavior change in NumPy 1.x).\n"
                "For more details, see https://numpy.org/devdocs/numpy_2_0_migration_guide.html"
                "#adapting-to-changes-in-the-copy-keyword.")


def _grad_check(t, what):
    from ..autograd import is_grad_enabled
    if t.requires_grad and is_grad_enabled():
        raise RuntimeError(what)


def numpy(t, force=False):
    """Tensor.numpy: a NumPy array sharing a CPU tensor's memory. torch's checks, in torch's order:
    a non-CPU tensor is a TypeError, one that requires grad (with grad mode on) a RuntimeError;
    force=True copies to the host and detaches instead."""
    from .. import backends
    if force:
        t = t.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        return backends.cpu.view_array(t)
    if t.device.type != "cpu":
        raise TypeError(f"can't convert {t.device} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to "
                        "host memory first.")
    _grad_check(t, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
    return backends.cpu.view_array(t)  # the user's own array object (array() may share a cached one)


def array(t, dtype=None, copy=None):
    """Tensor.__array__ with NumPy 2's contract: copy=False raises ValueError when an array cannot
    share the tensor's memory (a CUDA tensor, another dtype); copy=True always returns new memory.
    CUDA tensors are copied to the host when a copy is allowed (a named host wait)."""
    if t.device.type != "cpu":
        if copy is False:
            raise ValueError(f"{_COPY_NEEDED}\n(the tensor is on {t.device}: NumPy can only read host memory)")
        _grad_check(t, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        arr = numpy(t, force=True)
        copy = None  # already new memory
    else:
        arr = numpy(t)
    if dtype is not None and np.dtype(dtype) != arr.dtype:
        if copy is False:
            raise ValueError(f"{_COPY_NEEDED}\n(the tensor is {t.dtype}; {np.dtype(dtype)} needs a converted copy)")
        return arr.astype(dtype)
    return arr.copy() if copy else arr


def _pin(t, keep):
    """Keep `keep` (the bytes an interface dict points at) alive as long as the tensor."""
    pins = t.__dict__.setdefault("_interop_pins", {})
    pins[id(keep)] = keep


def array_interface(t):
    """Tensor.__array_interface__ (version 3) for CPU tensors. AttributeError where NumPy should
    use __array__ instead (a CUDA tensor, bfloat16, which has no typestr, a tensor that requires grad)."""
    if t.device.type != "cpu":
        raise AttributeError(f"Can't get __array_interface__ on a {t.device} tensor: it describes host memory. Use "
                             "__cuda_array_interface__, DLPack, or Tensor.cpu() to copy it to the host first.")
    if t.dtype is dtypes.bfloat16:
        raise AttributeError("Can't get __array_interface__ of a bfloat16 tensor: the interface has no typestr for "
                             "bfloat16 (use numpy(), which gives ml_dtypes.bfloat16, or DLPack)")
    if t.requires_grad:
        raise AttributeError("Can't get __array_interface__ on a tensor that requires grad; use tensor.detach()")
    a = numpy(t)
    _pin(t, t._meta.storage._buf)
    d = dict(a.__array_interface__)
    d["descr"] = [("", a.dtype.str)]
    return d


def _stream_field(device):
    from ..cuda import current_stream
    ptr = current_stream(device.index).cuda_stream
    return 1 if ptr == 0 else ptr  # 0 is not allowed in the interface: 1 names the legacy default stream


def cuda_array_interface(t):
    """Tensor.__cuda_array_interface__, version 3: its `stream` is this thread's current stream on
    the tensor's device (the work that writes the tensor is queued there); a consumer orders its
    own stream after it before reading (as tl.as_tensor does)."""
    if t.device.type != "cuda":
        raise AttributeError(f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {t.dtype} on {t.device} If "
                             "CUDA data is required use tensor.cuda() to copy tensor to device memory.")
    if t.requires_grad:
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad. If gradients aren't "
                           "required, use var.detach() to get Variable that doesn't require grad.")
    if t.dtype is dtypes.bfloat16:
        raise AttributeError("Can't get __cuda_array_interface__ of a bfloat16 tensor: the interface has no typestr "
                             "for bfloat16 (use DLPack: __dlpack__, which names kDLBfloat)")
    storage, lay = t._meta
    isz = t.dtype.itemsize
    shape = tuple(lay.shape)
    numel = 1
    for n in shape:
        numel *= n
    if numel:
        reach = sum((n - 1) * s for n, s in zip(shape, lay.stride))
        if (lay.offset + reach + 1) * isz > storage.nbytes():
            raise RuntimeError(f"__cuda_array_interface__: tensor of shape {list(shape)} with strides {list(lay.stride)} "
                               f"reaches past its storage ({storage.nbytes()} bytes); the storage was shrunk")
        _pin(t, storage._buf)
    ptr = storage.data_ptr() + lay.offset * isz if numel else 0
    strides = None if tuple(lay.stride) == contiguous_strides(shape) else tuple(s * isz for s in lay.stride)
    return {"shape": shape, "typestr": t.dtype.np.str, "descr": [("", t.dtype.np.str)], "data": (ptr, storage._readonly),
            "strides": strides, "version": 3, "stream": _stream_field(t.device)}


def from_cuda_array_interface(obj):
    """A CUDA tensor sharing the memory `obj.__cuda_array_interface__` describes, holding `obj`.
    The interface's `stream` (when not None) is waited on by this thread's current stream, so
    later work here runs after the producer's; the host does not wait."""
    from .. import backends
    from ..device import Device
    iface = obj.__cuda_array_interface__
    if not isinstance(iface, dict):
        raise TypeError(f"__cuda_array_interface__ must be a dict, got {type(iface).__name__}")
    if iface.get("mask") is not None:
        raise NotImplementedError("masked arrays are not supported (__cuda_array_interface__ has a mask)")
    raw_shape = iface.get("shape")
    if not isinstance(raw_shape, (tuple, list)) or not all(isinstance(n, int) and not isinstance(n, bool)
                                                           for n in raw_shape):
        raise TypeError(f"__cuda_array_interface__: shape must be a tuple of ints, got {raw_shape!r}")
    shape = tuple(raw_shape)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"__cuda_array_interface__: Trying to create tensor with negative dimension: shape "
                           f"{list(shape)} (every size must be >= 0)")
    try:
        np_dtype = np.dtype(iface["typestr"])
        dt = dtypes.from_numpy_dtype(np_dtype)
    except TypeError as e:
        raise TypeError(f"__cuda_array_interface__: unsupported typestr {iface['typestr']!r}: {e}") from None
    isz = np_dtype.itemsize
    raw = iface.get("strides")
    if raw is None:
        strides = contiguous_strides(shape)
    else:
        if any(int(s) % isz for s in raw):
            raise ValueError(f"__cuda_array_interface__: strides {tuple(raw)} are not a multiple of the element size "
                             f"({isz} bytes)")
        strides = tuple(int(s) // isz for s in raw)
        if any(s < 0 for n, s in zip(shape, strides) if n > 1):
            raise ValueError(f"__cuda_array_interface__: negative strides {tuple(raw)} are not supported; copy the "
                             "array first")
    ptr, readonly = iface["data"]
    ptr = int(ptr or 0)
    numel = 1
    for n in shape:
        numel *= n
    if numel and not ptr:
        raise ValueError(f"__cuda_array_interface__: a NULL data pointer for shape {list(shape)}")
    be = backends.get(Device("cuda"))
    drv = be.driver
    idx = drv.pointer_device(ptr) if numel and ptr else drv.current_device()
    dev = Device("cuda", idx)
    stream = iface.get("stream") if int(iface.get("version", 0)) >= 3 else None
    if stream is not None:
        stream = int(stream)
        if stream == 0:
            raise ValueError("__cuda_array_interface__: stream 0 is not allowed (1 names the legacy default stream)")
        theirs = drv.external_stream(0 if stream == 1 else stream, idx)
        ev = drv.create_event(False, False)
        drv.event_record(ev, theirs)
        drv.stream_wait_event(drv.current_stream(idx), ev)
    return dlpack._wrap(obj, ptr, shape, tuple(max(s, 0) for s in strides), dt, dev, bool(readonly))


def _has(obj, name):
    try:
        return hasattr(obj, name)
    except Exception:  # a property that fails for another reason: not this protocol
        return False


def _shared(obj):
    """A tensor sharing obj's memory through the first protocol it offers, or None."""
    from ..ops.creation import from_numpy
    from ..tensor import Tensor
    if isinstance(obj, Tensor):
        return obj
    if isinstance(obj, np.ndarray):
        return from_numpy(obj) if _numpy_shareable(obj) else None
    if _has(obj, "__cuda_array_interface__"):
        return from_cuda_array_interface(obj)
    if _has(obj, "__dlpack__") and _has(obj, "__dlpack_device__"):
        return dlpack.from_dlpack(obj)
    if _has(obj, "__array_interface__") or _has(obj, "__array_struct__"):
        arr = np.asarray(obj)
        return from_numpy(arr) if _numpy_shareable(arr) else None
    return None


def _numpy_shareable(arr):
    try:
        dtypes.from_numpy_dtype(arr.dtype)
    except TypeError:
        return False
    return all(s >= 0 and s % arr.itemsize == 0 for s in arr.strides)


def foreign(data):
    """as_tensor's hook: objects that are neither tensors, arrays nor Python data but expose a
    protocol (CUDA array interface, DLPack, NumPy array interface) become a shared tensor; None
    for everything else (as_tensor's own path)."""
    if isinstance(data, (list, tuple, int, float, bool, complex, str, bytes, np.ndarray, np.generic)):
        return None
    from ..tensor import Tensor
    if isinstance(data, Tensor):
        return None
    return _shared(data)


def as_tensor_foreign(data, dtype, device):
    t = foreign(data)
    if t is None:
        return None
    return t.to(device=canonical(device) if device is not None else t.device, dtype=dtype if dtype is not None else t.dtype)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """tl.asarray (torch.asarray): a tensor from `obj` (a tensor, an object with the CUDA array
    interface, DLPack or the NumPy array interface, an object with the buffer protocol, or Python
    data). copy=None shares memory when dtype and device allow, copy=True always copies,
    copy=False raises ValueError when sharing is impossible."""
    from ..ops.creation import tensor
    dt = dtypes.as_dtype(dtype, "asarray") if dtype is not None else None
    dev = canonical(device) if device is not None else None
    src = None
    if not isinstance(obj, (list, tuple, int, float, bool, complex, str, bytes)):
        src = _shared(obj)
        if src is None and not isinstance(obj, (np.ndarray, np.generic)) and not _has(obj, "__array__"):
            try:
                mv = memoryview(obj)
            except TypeError:
                mv = None
            if mv is not None:
                from ..ops.creation import from_numpy
                arr = np.frombuffer(mv, dtype=(dt or dtypes.get_default_dtype()).np)
                src = from_numpy(arr)
    if src is None:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        r = tensor(obj, dtype=dt, device=dev)
    else:
        want_dt = dt or src.dtype
        want_dev = dev or src.device
        if copy is False:
            if want_dt is not src.dtype:
                raise ValueError(f"can't alias tensor with dtype '{src.dtype.torch_name}' into dtype "
                                 f"'{want_dt.torch_name}'.")
            if want_dev != src.device:
                raise ValueError(f"can't alias tensor from device '{src.device}' to '{want_dev}'.")
        r = src.to(device=want_dev, dtype=want_dt)
        if copy and r is src:
            r = src.clone()
    if requires_grad:
        r.requires_grad_(True)
    return r


def array_ufunc(ufunc, method, inputs, kwargs):
    """Tensor.__array_ufunc__: a NumPy ufunc over CPU tensors computes on their memory and returns tensors, as
    torch's do (np.exp(t), np.add(t, 1), np.maximum.reduce(t)); a CUDA tensor raises torch's TypeError (never
    a silent copy to the host), one that requires grad torch's RuntimeError. An out= array keeps NumPy's
    result; an out= tensor is refused."""
    from ..tensor import Tensor
    from ..ops.creation import tensor
    out = kwargs.get("out", ())
    if any(isinstance(o, Tensor) for o in (out if isinstance(out, tuple) else (out,))):
        raise TypeError(f"numpy.{ufunc.__name__}(out=...): a tensorlab Tensor cannot be a NumPy ufunc's out=; "
                        "pass a NumPy array, or call the tensorlab op with its out= instead")
    if method == "__call__" and not kwargs and len(inputs) == 2 and ufunc.__name__ in _SCALAR_OPERATORS:
        a, b = inputs
        if isinstance(b, Tensor) and isinstance(a, np.generic) and not isinstance(a, np.ndarray):
            # np.float64(2) * t: a NumPy scalar is a Python number to torch (it does not promote the tensor)
            return _SCALAR_OPERATORS[ufunc.__name__](a.item(), b)
        if isinstance(a, Tensor) and isinstance(b, np.generic):
            return _SCALAR_OPERATORS[ufunc.__name__](a, b.item())
    args = [numpy(x) if isinstance(x, Tensor) else x for x in inputs]  # torch's errors for CUDA / requires grad
    result = getattr(ufunc, method)(*args, **kwargs)
    if out or result is None:  # out= arrays, ufunc.at
        return result

    def wrap(r):
        return tensor(np.asarray(r)) if isinstance(r, (np.ndarray, np.generic)) else r
    return tuple(wrap(r) for r in result) if isinstance(result, tuple) else wrap(result)


# the ufuncs NumPy scalars reach through their operators (np.float64(2) * t), as the tensor's own operators
_SCALAR_OPERATORS = {"add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
                     "true_divide": operator.truediv, "divide": operator.truediv, "floor_divide": operator.floordiv,
                     "remainder": operator.mod, "power": operator.pow, "equal": operator.eq,
                     "not_equal": operator.ne, "less": operator.lt, "less_equal": operator.le,
                     "greater": operator.gt, "greater_equal": operator.ge}
