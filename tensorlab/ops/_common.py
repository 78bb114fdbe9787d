"""Front-end helpers every op family shares: allocation, device checks, out= targets, write
checks. Nothing here knows NumPy or CuPy."""
from __future__ import annotations

import warnings

from .. import backends, dtypes, layout as L
from ..device import canonical
from ..storage import UntypedStorage
from ..tensor import Tensor

_OVERLAP_SELF = ("unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location. Please clone() the tensor before performing the operation.")
_OVERLAP_INPUT = ("unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                  "single memory location. Please clone() the tensor before performing the operation.")


_CONTIGUOUS = {}  # shape -> (Size, strides, numel): ops allocate outputs of a few recurring shapes


def _contiguous_layout(shape):
    hit = _CONTIGUOUS.get(shape)
    if hit is None:
        size = L.Size(shape)
        for n in size:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
        if len(_CONTIGUOUS) >= 4096:
            _CONTIGUOUS.clear()
        hit = _CONTIGUOUS[tuple(size)] = (size, L.contiguous_strides(size), L.prod(size))
    return hit


def empty_tensor(shape, dtype, device, stride=None):
    """A fresh tensor of `shape` (contiguous unless `stride` is given) on a concrete device."""
    if stride is None and type(shape) in (tuple, L.Size):  # the hot path of every op's output
        size, stride, numel = _contiguous_layout(shape)
        buf = backends.get(device).allocate(numel * dtype.itemsize, device)
        return Tensor._make(UntypedStorage._wrap(buf, device, True), L.Layout(size, stride, 0), dtype)
    shape = L.Size(shape)
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    if stride is None:
        stride = L.contiguous_strides(shape)
    nbytes = L.extent(shape, stride, 0) * dtype.itemsize
    storage = UntypedStorage._wrap(backends.get(device).allocate(nbytes, device), device, True)
    return Tensor._make(storage, L.Layout(shape, tuple(stride), 0), dtype)


def empty_like_layout(t, dtype=None, device=None, memory_format=None):
    """torch's empty_like stride rule: preserve_format keeps a dense layout's strides (or the
    dense strides with the same memory order); the explicit formats pick their strides."""
    from ..tensor import channels_last, channels_last_3d, contiguous_format, preserve_format
    lay = t._meta.layout
    mf = preserve_format if memory_format is None else memory_format
    if mf is preserve_format:
        if L.is_non_overlapping_and_dense(lay.shape, lay.stride):
            stride = lay.stride
        else:
            stride = L.dense_strides_like(lay.shape, lay.stride)
    elif mf is contiguous_format:
        stride = None
    elif mf in (channels_last, channels_last_3d):
        want = 4 if mf is channels_last else 5
        if len(lay.shape) != want:
            raise RuntimeError(f"required rank {want} tensor to use {mf.name} format, got shape {list(lay.shape)}")
        stride = L.channels_last_strides(lay.shape)
    else:
        raise RuntimeError(f"unknown memory_format {mf!r}")
    return empty_tensor(lay.shape, dtype or t._dtype, device or t.device, stride)


def pinned(t):
    """`t` as it is at this instant: its storage and layout from ONE read of `t._meta`, sharing
    the version counter. An op that computes shapes from an input and later reads its values
    works on the pinned tensor, so a concurrent resize_/set_ of the input cannot make the two
    steps see different layouts (DESIGN.md, "Atomic metadata")."""
    storage, lay = t._meta
    return Tensor._make(storage, lay, t._dtype, t._vc)


def device_of(device):
    return canonical(device)


def same_device(op, *tensors):
    """All tensor operands on one device (zero-dim CPU tensors may join a CUDA op, as in torch)."""
    dev = None
    for t in tensors:
        if not isinstance(t, Tensor):
            continue
        d = t._meta.storage.device
        if dev is None:
            dev = d
        elif d != dev:
            if d.type == "cpu" and t.dim() == 0:
                continue
            if dev.type == "cpu" and not any(isinstance(x, Tensor) and x.dim() > 0 and x.device == dev
                                             for x in tensors):
                dev = d
                continue
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {d}! (when checking arguments for {op}; move them with .to(device))")
    return dev


def check_writable(t, op):
    """Refuse writes through a layout whose elements alias each other (expand, as_strided)."""
    lay = t._meta.layout
    if L.has_internal_overlap(lay.shape, lay.stride):
        raise RuntimeError(f"{op}: {_OVERLAP_SELF}")


def byte_range(t):
    storage, lay = t._meta
    start = lay.offset * t._dtype.itemsize
    return start, max(L.extent(lay.shape, lay.stride, lay.offset) * t._dtype.itemsize, start)


def check_no_partial_overlap(out, *inputs, op="op"):
    """An output may be an input exactly (in-place), but may not partly alias one."""
    so = out._meta.storage
    if out.numel() == 0:
        return
    o0 = o1 = None  # out's byte range, computed only when an input shares its storage (rare)
    for x in inputs:
        if not isinstance(x, Tensor) or x._meta.storage is not so or x.numel() == 0:
            continue
        if x._meta.layout == out._meta.layout and x._dtype.itemsize == out._dtype.itemsize:
            continue
        if o0 is None:
            o0, o1 = byte_range(out)
        i0, i1 = byte_range(x)
        if L.ranges_overlap(o0, o1, i0, i1):
            raise RuntimeError(f"{op}: {_OVERLAP_INPUT}")


def check_cast(result_dtype, out_dtype, op):
    if not dtypes.can_cast(result_dtype, out_dtype):
        raise RuntimeError(f"{op}: result type {result_dtype.torch_name} can't be cast to the desired output type "
                           f"{out_dtype.torch_name}")


class Output:
    """Where an op writes its result. Without out=, a fresh tensor. With out=, the validated target,
    or (when out must change shape) a resize plan's private target that `finish()` publishes, so
    a failure before finish() leaves `out` untouched. finish() bumps out's version once."""

    __slots__ = ("tensor", "_out", "_plan")

    def __init__(self, tensor, out=None, plan=None):
        self.tensor = tensor
        self._out = out
        self._plan = plan

    def finish(self):
        out = self._out
        if out is None:
            return self.tensor
        if self._plan is not None:
            self._plan.commit()
        out._vc.bump()
        return out


def output(out, shape, dtype, device, op, inputs=(), stride=None):
    """The Output for an op producing `shape`/`dtype` on `device`, honouring an out= target:
    device, castability (torch's "result type Float can't be cast to the desired output type
    Long"), overlap with inputs, and an atomic resize when the shape differs (torch warns when a
    non-empty out is resized)."""
    if out is None:
        return Output(empty_tensor(shape, dtype, device, stride))
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.device != device:
        raise RuntimeError(f"{op}: Expected out tensor to be on {device} but got {out.device}; "
                           f"allocate out on the inputs' device")
    check_cast(dtype, out._dtype, op)
    if out._requires_grad:
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    target = pinned(out)  # one layout for the checks and the primitive, even while another thread resizes out
    cur = target._meta.layout.shape
    if tuple(cur) != tuple(shape):
        if L.prod(cur) != 0:
            warnings.warn(f"{op}: An output with one or more elements was resized since it had shape "
                          f"{list(cur)}, which does not match the required output shape {list(shape)}. "
                          "This behavior is deprecated, and in a future release it will not resize outputs "
                          "unless they have zero elements. You can explicitly reuse an out tensor t by resizing "
                          "it, inplace, to zero elements with t.resize_(0).", UserWarning, stacklevel=3)
        from .resize import plan_resize
        plan = plan_resize(out, tuple(shape), op=op)
        if plan.new_buf is None:  # resized in place: the result lands in out's storage, maybe under an input
            check_no_partial_overlap(plan.target, *inputs, op=op)
        return Output(plan.target, out, plan)
    check_writable(target, op)
    check_no_partial_overlap(target, *inputs, op=op)
    return Output(target, out)
