"""torch's legacy typed constructors (tl.FloatTensor, tl.LongTensor, ...): called with data they
build a tensor of their dtype (as tl.tensor(data, dtype=...)), called with sizes (ints or a Size)
an uninitialized one, with no argument an empty one, with a tensor of their dtype an alias of it.
They make CPU tensors only, as torch's (torch.cuda.FloatTensor is not provided). isinstance(x,
tl.FloatTensor) is true for CPU float32 tensors, as in torch."""
from __future__ import annotations

import numbers

from . import dtypes
from .device import device as _device
from .layout import Size
from .ops.creation import empty, tensor
from .tensor import Tensor


class _LegacyTensorType(type):
    legacy_tensor_type = True  # Tensor.type() recognizes these classes by it

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        if device is not None and _device(device).type != "cpu":
            raise RuntimeError(f"legacy constructor expects device type: cpu but device type: {_device(device).type} "
                               f"was passed")
        dtype = cls.dtype
        if not args:
            return empty(0, dtype=dtype)
        if len(args) == 1:
            (arg,) = args
            if isinstance(arg, Tensor):
                if arg.dtype != dtype or arg.device.type != "cpu":
                    raise TypeError(f"{cls.__name__}(): expected a cpu {dtype} tensor (got a {arg.device.type} "
                                    f"{arg.dtype} tensor); convert it with .to({dtype}) first")
                return arg.detach()
            if isinstance(arg, Size):
                return empty(tuple(arg), dtype=dtype)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return empty(tuple(int(a) for a in args), dtype=dtype)
        if len(args) == 1:
            return tensor(args[0], dtype=dtype)
        bad = next(a for a in args if not isinstance(a, numbers.Integral) or isinstance(a, bool))
        raise TypeError(f"{cls.__name__}(): sizes must be ints, but got {type(bad).__name__} ({bad!r}); pass data "
                        f"as one sequence, e.g. {cls.__name__}([...])")

    def __repr__(cls):
        return f"<class 'tensorlab.{cls.__name__}'>"


def _make(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "__module__": "tensorlab",
                                        "__doc__": f"Legacy constructor of CPU {dtype} tensors (torch.{name})."})


FloatTensor = _make("FloatTensor", dtypes.float32)
DoubleTensor = _make("DoubleTensor", dtypes.float64)
HalfTensor = _make("HalfTensor", dtypes.float16)
BFloat16Tensor = _make("BFloat16Tensor", dtypes.bfloat16)
ByteTensor = _make("ByteTensor", dtypes.uint8)
CharTensor = _make("CharTensor", dtypes.int8)
ShortTensor = _make("ShortTensor", dtypes.int16)
IntTensor = _make("IntTensor", dtypes.int32)
LongTensor = _make("LongTensor", dtypes.int64)
BoolTensor = _make("BoolTensor", dtypes.bool_)

_BY_NAME = {cls.__name__: cls for cls in (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor,
                                          ShortTensor, IntTensor, LongTensor, BoolTensor)}


def resolve_type(t):
    """Tensor.type(t)'s target: a legacy class (a CPU tensor) or its name, "torch.LongTensor" /
    "tensorlab.LongTensor" (CPU) or "torch.cuda.LongTensor" (CUDA): (dtype, device type)."""
    if isinstance(t, _LegacyTensorType):
        return t.dtype, "cpu"
    prefix, _, name = t.rpartition(".")
    device = "cuda" if prefix.endswith(".cuda") else "cpu"
    if prefix not in ("torch", "tensorlab", "torch.cuda", "tensorlab.cuda") or name not in _BY_NAME:
        raise ValueError(f"invalid type: '{t}'")
    return _BY_NAME[name].dtype, device


__all__ = ["BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
           "IntTensor", "LongTensor", "ShortTensor"]
