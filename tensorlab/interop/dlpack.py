"""DLPack 1.x: Tensor.__dlpack__ / __dlpack_device__ and tl.from_dlpack.

Producing. tensorlab never puts a Python callback behind a capsule: a ctypes deleter can be
called from a thread without the GIL, while an exception is in flight, or after the interpreter
started to finalize, and a mistake there crashes the process. The capsule is made by NumPy's C
exporter over a private NumPy array that describes the tensor's bytes (the tensor's own view on
the CPU; for CUDA memory an array over the device address that nothing ever reads through) and
holds the storage's buffer alive; its deleter and capsule destructor are NumPy's C code. Where
NumPy's description is not ours, the struct is patched before the capsule is handed out: the
device (kDLCUDA), the dtype (bfloat16 travels as uint16 and is renamed kDLBfloat), the
IS_COPIED flag. Read-only storages give the READ_ONLY flag (versioned) or NumPy's BufferError
(legacy capsules cannot say it).

Consuming. A capsule ("dltensor_versioned" or legacy "dltensor") is validated, renamed "used_..."
(so it is consumed once), and its memory becomes a non-resizable UntypedStorage whose buffer
holds an _Owner; when the last tensor or view over it goes, the _Owner calls the producer's
deleter (a foreign C function called from Python, never a callback into Python).

Devices. CPU tensors say (kDLCPU, 0) ((kDLCUDAHost, 0) when pinned, as torch); CUDA tensors say
(kDLCUDA, index), also under the emulation driver, whose device memory is host memory: the
emulation stands for a GPU, so a consumer that reads only CPU memory (NumPy) refuses it exactly
as it would on a real GPU, and tensorlab consumers (and the CUDA array interface) take it.

Streams (CUDA). __dlpack__(stream=s) orders the consumer's stream s after the work queued on the
producer's current stream: an event recorded there, s made to wait on it; the host never waits.
None or 1: the legacy default stream; 2: the per-thread default stream (refused, as torch);
-1: no ordering; 0: invalid. tl.from_dlpack passes this thread's current stream (1 for legacy).
"""
from __future__ import annotations

import ctypes
import enum
import gc
import operator
import threading
from functools import partial
from itertools import takewhile

import numpy as np

from .. import dtypes
from ..device import CPU, Device, canonical
from ..layout import Layout, Size, contiguous_strides
from ..storage import ReadOnlyStorage, UntypedStorage

__all__ = ("DLDeviceType", "dlpack_device", "to_dlpack", "from_dlpack", "from_capsule")


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


# -- the DLPack structs (dlpack.h, v1.x) ---------------------------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_IS_SUBBYTE_TYPE_PADDED = 1 << 2
SUPPORTED_MAJOR = 1

kDLInt, kDLUInt, kDLFloat, kDLOpaqueHandle, kDLBfloat, kDLComplex, kDLBool = range(7)
_CODE_NAMES = {kDLInt: "kDLInt", kDLUInt: "kDLUInt", kDLFloat: "kDLFloat", kDLOpaqueHandle: "kDLOpaqueHandle",
               kDLBfloat: "kDLBfloat", kDLComplex: "kDLComplex", kDLBool: "kDLBool"}
_TO_DL = {dtypes.bool_: (kDLBool, 8), dtypes.uint8: (kDLUInt, 8), dtypes.int8: (kDLInt, 8),
          dtypes.int16: (kDLInt, 16), dtypes.int32: (kDLInt, 32), dtypes.int64: (kDLInt, 64),
          dtypes.float16: (kDLFloat, 16), dtypes.bfloat16: (kDLBfloat, 16), dtypes.float32: (kDLFloat, 32),
          dtypes.float64: (kDLFloat, 64), dtypes.complex64: (kDLComplex, 64), dtypes.complex128: (kDLComplex, 128)}
_FROM_DL = {v: k for k, v in _TO_DL.items()}

# -- the capsule C API (called with the GIL held; names live forever: a capsule keeps the pointer)
_api = ctypes.pythonapi
_IsValid = _api.PyCapsule_IsValid
_IsValid.restype, _IsValid.argtypes = ctypes.c_int, (ctypes.py_object, ctypes.c_char_p)
_GetPointer = _api.PyCapsule_GetPointer
_GetPointer.restype, _GetPointer.argtypes = ctypes.c_void_p, (ctypes.py_object, ctypes.c_char_p)
_SetName = _api.PyCapsule_SetName
_SetName.restype, _SetName.argtypes = ctypes.c_int, (ctypes.py_object, ctypes.c_char_p)
_NAME_V, _NAME = b"dltensor_versioned", b"dltensor"
_USED_V, _USED = b"used_dltensor_versioned", b"used_dltensor"
_IMMORTAL = (_USED_V, _USED)  # a renamed capsule points at these bytes for as long as it lives
for _b in _IMMORTAL:
    _api.Py_IncRef(ctypes.py_object(_b))
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_consume_lock = threading.Lock()  # check-and-rename of a capsule is one step for tensorlab's consumers

_INVALID = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you "
            "might have already constructed a tensor from it once.")


# -- producing -----------------------------------------------------------------------------------
def dlpack_device(t):
    dev = t.device
    if dev.type == "cuda":
        return (DLDeviceType.kDLCUDA, dev.index if dev.index is not None else 0)
    if t.is_pinned():
        return (DLDeviceType.kDLCUDAHost, 0)
    return (DLDeviceType.kDLCPU, 0)


def _device_of(dl_device, what):
    """A (DLDeviceType, index) pair as a tensorlab Device."""
    try:
        kind, idx = (int(x) for x in dl_device)
    except (TypeError, ValueError):
        raise TypeError(f"{what}: dl_device must be a (device_type, device_id) pair, got {dl_device!r}") from None
    if kind in (DLDeviceType.kDLCPU, DLDeviceType.kDLCUDAHost):
        return CPU
    if kind in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
        return Device("cuda", idx)
    name = DLDeviceType(kind).name if kind in DLDeviceType._value2member_map_ else str(kind)
    raise BufferError(f"{what}: unsupported device {name} (device_type {kind}); tensorlab tensors live on the CPU "
                      "(kDLCPU, kDLCUDAHost) or on CUDA devices (kDLCUDA, kDLCUDAManaged)")


def _sync_streams(t, stream):
    """Order the consumer's `stream` (an int, DLPack's convention) after the producer's current
    stream on t's device: an event recorded here, a wait queued there. The host does not wait."""
    from ..backends.cuda.active import driver
    idx = t.device.index
    if idx != driver.current_device():
        raise BufferError("Can't export tensors on a different CUDA device index. "
                          f"Expected: {idx}. Current device: {driver.current_device()}.")
    if stream == -1:
        return
    if stream is None or stream == 1:
        ptr = 0
    elif stream == 2:
        raise BufferError("per-thread default stream is not supported.")
    elif stream == 0:
        raise AssertionError("unsupported stream on CUDA: 0.")
    else:
        ptr = stream
    mine = driver.current_stream(idx)
    if int(getattr(mine, "ptr", 0)) == ptr:
        return
    theirs = driver.external_stream(ptr, idx)
    ev = driver.create_event(False, False)
    driver.event_record(ev, mine)
    driver.stream_wait_event(theirs, ev)


class _Describe:
    """Presents bytes tensorlab holds (a storage buffer) to NumPy by __array_interface__; holds
    the buffer, so the NumPy array made from it (and the capsule made from that) keeps it alive."""

    def __init__(self, keep, ptr, shape, strides, typestr, readonly):
        self._keep = keep
        self.__array_interface__ = {"data": (ptr, readonly), "shape": shape, "strides": strides,
                                    "typestr": typestr, "version": 3}


def _export_array(t):
    """A NumPy array with t's shape, strides and address, holding t's buffer; bfloat16 as uint16."""
    from .. import backends
    storage, lay = t._meta
    dt = t._dtype
    np_dtype = np.dtype(np.uint16) if dt is dtypes.bfloat16 else dt.np
    if storage.device.type == "cpu":
        a = backends.cpu.view_array(t)  # bounds-checked against the buffer; its base holds the buffer
        return a.view(np_dtype) if a.dtype != np_dtype else a
    shape = tuple(lay.shape)
    isz = dt.itemsize
    if 0 in shape:
        return np.empty(shape, np_dtype)  # nothing to read: any address will do
    reach = sum((n - 1) * s for n, s in zip(shape, lay.stride))
    buf = storage._buf
    if (lay.offset + reach + 1) * isz > storage.nbytes():
        raise RuntimeError(f"__dlpack__: tensor of shape {list(shape)} with strides {list(lay.stride)} and storage offset "
                           f"{lay.offset} reaches past its storage ({storage.nbytes()} bytes); the storage was shrunk "
                           "after the tensor was made")
    ptr = storage.data_ptr() + lay.offset * isz
    return np.asarray(_Describe(buf, ptr, shape, tuple(s * isz for s in lay.stride), np_dtype.str,
                                storage._readonly))


def _claim(capsule):
    """Take a capsule atomically: check its name and rename it "used_..." in one step that no other
    thread can enter, tensorlab's or another library's (torch's consumer checks and renames under
    the GIL, without a lock of ours). The two C calls run back to back from C (sum / takewhile /
    map over functools.partial objects, ctypes.pythonapi keeping the GIL): no Python bytecode runs
    between them, so the interpreter never switches threads there; the collector is held off
    so that no finalizer runs either. Returns True (versioned), False (legacy) or raises."""
    for name, used, versioned in ((_NAME_V, _USED_V, True), (_NAME, _USED, False)):
        steps = (partial(_IsValid, capsule, name), partial(_SetName, capsule, used))
        enabled = gc.isenabled()
        if enabled:
            gc.disable()
        try:
            # IsValid -> 1: SetName runs (-> 0, which ends the takewhile); IsValid -> 0: it does not
            taken = sum(takewhile(bool, map(operator.call, steps)))
        finally:
            if enabled:
                gc.enable()
        if taken:
            return versioned
    raise RuntimeError(_INVALID)


def _unclaim(capsule, versioned):
    """Give a claimed capsule back (the consumer refused it: it stays usable, as torch leaves it)."""
    _SetName(capsule, _NAME_V if versioned else _NAME)


def _managed(capsule):
    """(struct, versioned) for a live, unconsumed capsule."""
    if _IsValid(capsule, _NAME_V):
        return DLManagedTensorVersioned.from_address(_GetPointer(capsule, _NAME_V)), True
    if _IsValid(capsule, _NAME):
        return DLManagedTensor.from_address(_GetPointer(capsule, _NAME)), False
    raise RuntimeError(_INVALID)


def to_dlpack(t, stream=None, max_version=None, dl_device=None, copy=None):
    """Tensor.__dlpack__: a DLPack capsule sharing t's memory (versioned when the consumer's
    max_version is 1.x or later, the legacy unversioned one otherwise)."""
    if t.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and type(stream) is not int:
        raise TypeError("stream must be ``int`` or ``none``")
    if max_version is not None:
        try:
            max_version = (int(max_version[0]), int(max_version[1]))
        except (TypeError, ValueError, IndexError):
            raise TypeError(f"max_version must be a (major, minor) pair of ints or None, got {max_version!r}") from None
    copied = False
    want = t.device if dl_device is None else _device_of(dl_device, "__dlpack__")
    if want.type == "cpu" and stream is not None and stream != -1:
        raise AssertionError("stream should be None on cpu.")
    if want != t.device:
        if copy is False:
            raise BufferError(f"__dlpack__: the tensor is on {t.device} and dl_device asks for {want}, which needs a "
                              "copy, but copy=False; pass copy=None or copy=True")
        t = t.to(want)  # to the host: a named host wait (the bytes must have arrived)
        copied = True
    if copy and not copied:
        t = t.clone()
        copied = True
    if t.device.type == "cuda":
        _sync_streams(t, stream)  # after any copy queued here, so the consumer's stream waits for it too
    arr = _export_array(t)
    legacy = max_version is None or max_version[0] < 1
    capsule = arr.__dlpack__() if legacy else arr.__dlpack__(max_version=(SUPPORTED_MAJOR, max_version[1]))
    cuda = t.device.type == "cuda"
    if cuda or t._dtype is dtypes.bfloat16 or (copied and not legacy):
        mt, versioned = _managed(capsule)
        dl = mt.dl_tensor
        if cuda:
            dl.device.device_type = DLDeviceType.kDLCUDA
            dl.device.device_id = t.device.index
        if t._dtype is dtypes.bfloat16:
            dl.dtype.code = kDLBfloat
        if copied and versioned:
            mt.flags |= FLAG_IS_COPIED
    return capsule


# -- consuming -----------------------------------------------------------------------------------
class _Owner:
    """Holds a consumed DLManagedTensor(Versioned): calls its deleter when the last tensor over its
    memory is gone (the capsule was renamed "used_...", so the producer's destructor will not)."""

    __slots__ = ("ptr", "deleter")

    def __init__(self, ptr, deleter):
        self.ptr = ptr
        self.deleter = deleter

    def release(self):
        d, self.deleter = self.deleter, None
        if d:
            _Deleter(d)(self.ptr)

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown: ctypes may be gone; the process frees the memory
            pass


class _Extent:
    """Foreign host memory as the flat uint8 buffer of a CPU storage, holding its owner."""

    def __init__(self, owner, ptr, nbytes, readonly):
        self._owner = owner
        self.__array_interface__ = {"data": (ptr, readonly), "shape": (nbytes,), "typestr": "|u1", "version": 3}


def _dtype_of(dl):
    code, bits, lanes = dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
    if lanes != 1:
        raise BufferError(f"from_dlpack: tensorlab does not support lanes != 1 (the DLTensor has {lanes} lanes of "
                          f"{_CODE_NAMES.get(code, code)} {bits} bits)")
    dt = _FROM_DL.get((code, bits))
    if dt is None:
        if code in _CODE_NAMES:
            what = f"Unsupported {_CODE_NAMES[code]} bits {bits}"
        else:
            what = f"Unsupported code {code}"
        raise BufferError(f"{what}: tensorlab has no such dtype (it reads bool, uint8, int8, int16, int32, int64, complex64, complex128, "
                          "float16, bfloat16, float32, float64); convert it on the producer's side first")
    return dt


def _layout_of(dl, ndim):
    if ndim < 0 or ndim > 64:
        raise BufferError(f"from_dlpack: the DLTensor has ndim {ndim}; tensorlab tensors have at most 64 dimensions")
    shape = tuple(int(dl.shape[i]) for i in range(ndim)) if ndim else ()
    if any(n < 0 for n in shape):
        raise BufferError(f"from_dlpack: the DLTensor has a negative size in its shape {list(shape)}")
    if ndim and dl.strides:
        strides = tuple(int(dl.strides[i]) for i in range(ndim))
    else:
        strides = contiguous_strides(shape)
    if any(s < 0 for n, s in zip(shape, strides) if n > 1):
        raise BufferError(f"from_dlpack: the DLTensor has negative strides {list(strides)} (shape {list(shape)}), which "
                          "tensorlab tensors cannot represent; pass copy=True or give a copy with positive strides")
    strides = tuple(max(s, 0) for s in strides)
    return shape, strides


def from_capsule(capsule):
    """A tensor over the memory of a DLPack capsule (consumed: it cannot be used again)."""
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got "
                        f"{type(capsule).__name__}")
    with _consume_lock:
        versioned = _claim(capsule)  # from here on no other consumer can take it
        try:
            if versioned:
                mt = DLManagedTensorVersioned.from_address(_GetPointer(capsule, _USED_V))
            else:
                mt = DLManagedTensor.from_address(_GetPointer(capsule, _USED))
            flags = 0
            if versioned:
                v = mt.version
                if v.major > SUPPORTED_MAJOR:
                    raise BufferError(f"from_dlpack: the capsule is DLPack {v.major}.{v.minor}; tensorlab reads "
                                      f"DLPack {SUPPORTED_MAJOR}.x (pass max_version=({SUPPORTED_MAJOR}, 0) to the "
                                      "producer)")
                flags = mt.flags
            dl = mt.dl_tensor
            dev = _device_of((dl.device.device_type, dl.device.device_id), "from_dlpack")
            dt = _dtype_of(dl)
            if flags & FLAG_IS_SUBBYTE_TYPE_PADDED:
                raise BufferError("from_dlpack: sub-byte padded types are not supported")
            shape, strides = _layout_of(dl, dl.ndim)
            ptr = (dl.data or 0) + dl.byte_offset
            if not dl.data and all(shape):
                raise BufferError(f"from_dlpack: the DLTensor of shape {list(shape)} has a NULL data pointer")
        except BaseException:
            _unclaim(capsule, versioned)
            raise
        owner = _Owner(ctypes.addressof(mt), mt.deleter)
    readonly = bool(flags & FLAG_READ_ONLY)
    return _wrap(owner, ptr, shape, strides, dt, dev, readonly)


def _wrap(owner, ptr, shape, strides, dt, dev, readonly):
    """A tensor over foreign memory at `ptr` on `dev` with this layout; `owner` lives as long as it."""
    from .. import backends
    from ..tensor import Tensor
    isz = dt.itemsize
    numel = 1
    for n in shape:
        numel *= n
    if numel == 0:
        if hasattr(owner, "release"):
            owner.release()  # nothing to read: the producer's memory goes back now
        nbytes = 0
    else:
        nbytes = (1 + sum((n - 1) * s for n, s in zip(shape, strides))) * isz
    cls = ReadOnlyStorage if readonly else UntypedStorage
    if dev.type == "cpu":
        if nbytes:
            buf = np.asarray(_Extent(owner, ptr, nbytes, readonly))
        else:
            buf = np.empty(0, np.uint8)
        storage = cls._wrap(buf, CPU, False)
    else:
        be = backends.get(dev)  # no usable CUDA: the diagnosis (RuntimeError) says why
        drv = be.driver
        if nbytes:
            buf = drv.wrap_external(ptr, nbytes, dev.index, owner)
        else:
            buf = be.allocate(0, dev)
        storage = cls._wrap(buf, dev, False)
    return Tensor._make(storage, Layout(Size(shape), strides, 0), dt)


def _dl_device_of(device):
    if device.type == "cpu":
        return (int(DLDeviceType.kDLCPU), 0)
    return (int(DLDeviceType.kDLCUDA), device.index if device.index is not None else 0)


def _consumer_stream(idx):
    from ..cuda import current_stream
    ptr = current_stream(idx).cuda_stream
    return 1 if ptr == 0 else ptr


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """tl.from_dlpack: a tensor sharing the memory of any DLPack producer (an object with
    __dlpack__ and __dlpack_device__: NumPy, CuPy, torch, tensorlab) or of a capsule. `device`:
    where the result goes (a copy when the producer is elsewhere); `copy`: True always copies,
    False never does (an error when one is needed), None copies only when needed. Follows
    torch.from_dlpack, including its fallbacks for producers that predate DLPack 1.0's keywords."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        return from_capsule(ext_tensor)
    kwargs = {"max_version": (SUPPORTED_MAJOR, 0)}
    producer_handled_copy = True
    cross = False
    if copy is not None:
        kwargs["copy"] = copy
    ext_device = tuple(int(x) for x in ext_tensor.__dlpack_device__())
    if device is not None:
        device = canonical(device)
        target = _dl_device_of(device)
        mine = (int(DLDeviceType.kDLCPU) if ext_device[0] == DLDeviceType.kDLCUDAHost else ext_device[0], ext_device[1])
        cross = mine != target
        if not cross:
            kwargs["dl_device"] = target
        elif copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {ext_device} to {target} without copying. "
                             "Set copy=None or copy=True.")
    if ext_device[0] in (DLDeviceType.kDLCUDA, DLDeviceType.kDLCUDAManaged):
        kwargs["stream"] = _consumer_stream(ext_device[1])
    capsule = None
    for drop in (None, "max_version", "copy", "dl_device"):
        if drop is not None:
            kwargs.pop(drop, None)
            if drop == "copy":
                producer_handled_copy = False
        try:
            capsule = ext_tensor.__dlpack__(**kwargs)
            break
        except TypeError:
            if drop == "dl_device":
                raise
    t = from_capsule(capsule)
    if copy is True and not producer_handled_copy and not cross:
        t = t.clone()
    if cross:
        t = t.to(device)
    return t
