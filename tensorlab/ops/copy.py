"""copy_, clone, contiguous, to / cpu / cuda and the dtype shorthands (float(), long(), ...)."""
from __future__ import annotations

from .. import backends, dtypes, layout as L
from ..device import Device, canonical
from ..tensor import Tensor, contiguous_format, preserve_format
from ._common import check_writable, empty_like_layout, pinned
from .transfer import copy_across_devices


def _broadcast_view(src, shape, op):
    """src broadcast to `shape`, pinned: storage and layout from one read of src._meta."""
    storage, lay = src._meta
    if tuple(lay.shape) != tuple(shape):
        L.broadcast_shapes(shape, lay.shape)  # torch's "must match ... at non-singleton dimension" error
        lay = L.Layout(L.Size(shape), L.expand_strides(lay.shape, lay.stride, shape, op), lay.offset)
    return Tensor._make(storage, lay, src._dtype, src._vc)


def copy_into(dst, src, non_blocking=False):
    """Write src (broadcast to dst's shape, cast to dst's dtype, any device) into dst. No checks
    beyond the transfer itself, no version bump: the building block of copy_ and conversions.
    Both operands are pinned, so the backend reads the layouts the shapes were checked on."""
    if src._dtype.category == 3 and dst._dtype.category != 3:  # complex -> real: the real parts, as torch
        from .. import _warn
        _warn.warn("Casting complex values to real discards the imaginary part", UserWarning)
        from .complex_ops import _part_view
        src = _part_view(src, 0)
    dst = pinned(dst)
    src = _broadcast_view(src, dst._meta.layout.shape, "copy_")
    dd = dst._meta.storage.device
    if src._meta.storage.device == dd:
        backends.get(dd).copy(dst, src)
    else:
        copy_across_devices(dst, src, non_blocking)


def copy_(self, other, non_blocking=False):
    """In-place copy with broadcasting and casting across devices; refuses aliasing targets."""
    if not isinstance(other, Tensor):
        raise TypeError(f"copy_(): argument 'other' must be Tensor, not {type(other).__name__}")
    check_writable(self, "copy_")
    from .. import autograd_hooks
    autograd_hooks.check_inplace(self, "copy_")
    shape = tuple(self.shape)
    if tuple(other.shape) != shape and tuple(L.broadcast_shapes(shape, other.shape)) != shape:
        raise RuntimeError(f"output with shape {list(shape)} doesn't match the broadcast shape "
                           f"{list(L.broadcast_shapes(shape, other.shape))} (copy_: the source must broadcast to "
                           f"the destination's shape)")
    if self.numel():
        copy_into(self, other, non_blocking)
    self._vc.bump()
    autograd_hooks.record_inplace(self, "copy_", (other,))
    return self


def clone(input, *, memory_format=preserve_format):
    src = pinned(input)
    out = empty_like_layout(src, memory_format=memory_format)
    copy_into(out, src)
    from .. import autograd_hooks
    return autograd_hooks.record(out, "clone", (input,))


def contiguous(self, memory_format=contiguous_format):
    if self.is_contiguous(memory_format):
        return self
    return clone(self, memory_format=memory_format)


def parse_to(args, kwargs, flags=None):
    """(device, dtype) of a to() call's arguments; torch's positional non_blocking and copy (bools
    after the device/dtype/other: to('cpu', torch.float64, True, True)) go into `flags` in that
    order when a list is given."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    other = None
    for a in args:
        if isinstance(a, bool) and flags is not None and len(flags) < 2:
            flags.append(a)
        elif isinstance(a, Tensor):
            other = a
        elif isinstance(a, dtypes.DType):
            dtype = a
        elif isinstance(a, (str, Device, int)) and not isinstance(a, bool):
            device = a
        elif a is None:
            continue
        else:
            try:
                dtype = dtypes.as_dtype(a)
            except TypeError:
                raise TypeError(f"to() received an invalid combination of arguments: {a!r}; expected "
                                "to(dtype), to(device, dtype=None), or to(other_tensor)") from None
    if other is not None:
        device, dtype = other.device, other.dtype
    return device, dtype


def to(self, *args, non_blocking=False, copy=False, memory_format=preserve_format, **kwargs):
    """Convert dtype and/or device; returns self when nothing changes and copy=False."""
    flags = []
    device, dtype = parse_to(args, dict(kwargs), flags)
    if flags:  # positional, as torch's signatures allow: to(device, dtype, non_blocking, copy)
        non_blocking = flags[0]
        copy = flags[1] if len(flags) > 1 else copy
    unknown = set(kwargs) - {"device", "dtype"}
    if unknown:
        raise TypeError(f"to() got an unexpected keyword argument {sorted(unknown)[0]!r}")
    dev = self.device if device is None else canonical(device)
    dt = self._dtype if dtype is None else dtypes.as_dtype(dtype)
    fmt_ok = memory_format is preserve_format or self.is_contiguous(memory_format)
    if dev == self.device and dt is self._dtype and not copy and fmt_ok:
        return self
    src = pinned(self)
    if non_blocking and dev.type == "cpu" and src.device.type == "cuda" and fmt_ok and src.is_contiguous():
        # torch's _to_copy: an asynchronous download lands in pinned memory (dtype converted on
        # the device first), valid once the stream is synchronized
        from .transfer import pinned_empty_like
        if dt is not src._dtype:
            src = to(src, dt)
        out = pinned_empty_like(src, dt)
    else:
        out = empty_like_layout(src, dt, dev, memory_format)
    copy_into(out, src, non_blocking)
    from .. import autograd_hooks
    return autograd_hooks.record(out, "to", (self,))


def cpu(self, memory_format=preserve_format):
    return to(self, "cpu", memory_format=memory_format)


def cuda(self, device=None, non_blocking=False, memory_format=preserve_format):
    dev = Device("cuda") if device is None else Device(device if not isinstance(device, int) else f"cuda:{device}")
    if dev.type != "cuda":
        raise RuntimeError(f"Invalid device, must be cuda device (got {dev}); use .to('{dev}') or .cpu() instead")
    return to(self, dev, non_blocking=non_blocking, memory_format=memory_format)


def type_(self, dtype=None, non_blocking=False):
    if dtype is None:
        return f"tensorlab.{_TYPE_NAMES[self._dtype.name]}"
    if isinstance(dtype, str) or getattr(type(dtype), "legacy_tensor_type", False):
        from ..legacy_tensors import resolve_type  # t.type("torch.LongTensor") / t.type(tl.LongTensor)
        dt, dev = resolve_type(dtype)
        return to(self, device=dev if self.device.type != dev else None, dtype=dt, non_blocking=non_blocking)
    return to(self, dtypes.as_dtype(dtype), non_blocking=non_blocking)


_TYPE_NAMES = {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
               "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
               "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}


def _caster(dt):
    def cast(self, memory_format=preserve_format):
        return to(self, dt, memory_format=memory_format)
    cast.__name__ = dt.name
    return cast


def type_as(self, other):
    return to(self, other.dtype)


FUNCTIONS = ("clone",)
METHODS = {"copy_": copy_, "clone": clone, "contiguous": contiguous, "to": to, "cpu": cpu, "cuda": cuda,
           "type": type_, "type_as": type_as,
           "float": _caster(dtypes.float32), "double": _caster(dtypes.float64), "half": _caster(dtypes.float16),
           "bfloat16": _caster(dtypes.bfloat16), "int": _caster(dtypes.int32), "long": _caster(dtypes.int64),
           "short": _caster(dtypes.int16), "char": _caster(dtypes.int8), "byte": _caster(dtypes.uint8),
           "bool": _caster(dtypes.bool_)}
