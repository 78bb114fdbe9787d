"""Ternary elementwise ops: where, clamp (clip), lerp, addcmul, addcdiv and masked_fill, with
their in-place forms. Each has its own meta step (argument kinds, dtype rules, torch's messages),
then ops/elementwise.py's shared `_ternary`/`_ternary_` execution: primitive `ternary`
(backends/cpu/elementwise.py, backends/cuda/elementwise.py), kernels in kernels/elementwise.cu with
the functors of kernels/tensorlab/; derivatives in autograd/derivatives_elementwise.py."""
from __future__ import annotations

from .. import _warn, dtypes
from ..tensor import Tensor
from . import registry as R
from ._common import check_cast
from .elementwise import (ANY, FLOATING, NO_BOOL, _BOOL, _DEF, _GENERATED, _KEEP, _NO_PARAMS, _OPS, _Op, _checked,
                          _operand, _promote, _scalar_arg, _tensor_arg, _ternary, _ternary_)

_ADDCDIV_INT = ("Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.")

# name, kernel, promotion, accepted dtypes, in-place form
TERNARY = (
    ("where", "where", _DEF, ANY, False),
    ("clamp", "clamp", _DEF, NO_BOOL, True),
    ("lerp", "lerp", _KEEP, FLOATING, True),
    ("addcmul", "addcmul", _DEF, NO_BOOL, True),
    ("addcdiv", "addcdiv", _DEF, ANY, True),
    ("masked_fill", "masked_fill", _KEEP, ANY, True),
)

ROWS = R.register(
    *(R.OpDef(n, "elementwise", "ternary", p, True, ip, (k,)) for n, k, p, _, ip in TERNARY),
    R.OpDef("clip", "elementwise", "ternary", _DEF, True, True, ("clamp",)),
)
_OPS.update({n: _Op(n, k, "ternary", p, acc) for n, k, p, acc, _ in TERNARY})
WHERE, CLAMP, LERP, ADDCMUL, ADDCDIV, MASKED_FILL = (_OPS[n] for n in ("where", "clamp", "lerp", "addcmul",
                                                                       "addcdiv", "masked_fill"))


# -- meta steps (they run before anything is allocated) --------------------------------------------

def _where_meta(condition, input, other):
    op = "where"
    cond = _tensor_arg(condition, op, "condition", 1)
    if cond._dtype is not _BOOL:
        if cond._dtype is not dtypes.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with dtype "
                               f"{cond._dtype.torch_name}")
        _warn.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in "
                   "a future version. Use a boolean condition instead.", UserWarning)
    x = _operand(op, input, 2, "input", True)
    y = _operand(op, other, 3, "other", True)
    common = _promote(x, y)
    if not isinstance(x, Tensor):
        x = _checked(x, common, op)
    if not isinstance(y, Tensor):
        y = _checked(y, common, op)
    return (cond, x, y), common, _NO_PARAMS


def _clamp_meta(input, min, max):
    op = "clamp"
    x = _tensor_arg(input, op, "input", 1)
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    lo = None if min is None else _operand(op, min, 2, "min", True)
    hi = None if max is None else _operand(op, max, 3, "max", True)
    common = _promote(x, lo, hi)
    if lo is not None and not isinstance(lo, Tensor):
        lo = _checked(lo, common, op)
    if hi is not None and not isinstance(hi, Tensor):
        hi = _checked(hi, common, op)
    return (x, lo, hi), common, _NO_PARAMS


def _lerp_meta(input, end, weight):
    op = "lerp"
    x = _tensor_arg(input, op, "input", 1)
    end = _tensor_arg(end, op, "end", 2)
    dt = x._dtype
    if end._dtype is not dt:
        raise RuntimeError(f"lerp: expected dtype {dt.name} for `end` but got dtype {end._dtype.name}")
    if isinstance(weight, Tensor):
        if weight._dtype is not dt and weight.dim() > 0:
            raise RuntimeError(f"lerp: expected dtype {dt.name} for `weight` but got dtype {weight._dtype.name}")
    else:  # (an integral dtype is refused by the kernel table after this, with torch's NotImplementedError)
        weight = _operand(op, weight, 3, "weight", True)
        weight = _checked(weight, dt, op) if dt.is_floating_point else weight
    return (x, end, weight), dt, _NO_PARAMS


def _addc_meta(d, input, tensor1, tensor2, value):
    op = d.name
    x = _tensor_arg(input, op, "input", 1)
    t1 = _tensor_arg(tensor1, op, "tensor1", 2)
    t2 = _tensor_arg(tensor2, op, "tensor2", 3)
    if d is ADDCDIV and not (t1._dtype.is_floating_point or t1._dtype.category == 3) and \
            not (t2._dtype.is_floating_point or t2._dtype.category == 3):
        raise RuntimeError(_ADDCDIV_INT)
    common = _promote(x, t1, t2)
    if isinstance(value, Tensor):
        value = value.item()
    value = _scalar_arg(value, op, "value")
    params = _NO_PARAMS if value == 1 and type(value) is not bool else {"value": _checked(value, common, op)}
    return (x, t1, t2), common, params


def _masked_fill_meta(input, mask, value):
    op = "masked_fill"
    x = _tensor_arg(input, op, "input", 1)
    mask = _tensor_arg(mask, op, "mask", 2)
    if mask._dtype is not _BOOL:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype.torch_name}")
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
    else:
        value = _checked(_operand(op, value, 3, "value", True), x._dtype, op)
    return (x, mask, value), x._dtype, _NO_PARAMS


_MISSING = object()


def where(condition, input=_MISSING, other=_MISSING, *, out=None):
    """torch.where(condition, input, other); torch.where(condition) is nonzero(as_tuple=True)."""
    if input is _MISSING and other is _MISSING and out is None:
        from .shape import nonzero  # a data-dependent shape: not an elementwise op
        return nonzero(condition, as_tuple=True)
    if input is _MISSING or other is _MISSING:
        raise TypeError("where() takes a condition alone, or a condition, input and other")
    return _ternary(WHERE, _where_meta, (condition, input, other), out)


def _clamp_overload(op, input, lo, hi):
    """torch's two clamp overloads: (Tensor, Number?, Number?) and (Tensor, Tensor?, Tensor?). A
    mix is its argument parser's TypeError; a bool input with one tensor bound is clamp_min/clamp_max
    (maximum/minimum, which bool has), the other bool forms have no kernel."""
    if (isinstance(lo, Tensor) and hi is not None and not isinstance(hi, Tensor)) or \
            (isinstance(hi, Tensor) and lo is not None and not isinstance(lo, Tensor)):
        kinds = ", ".join(type(v).__name__ if not isinstance(v, Tensor) else "Tensor" for v in (input, lo, hi))
        raise TypeError(f"{op}() received an invalid combination of arguments - got ({kinds}), but expected one of:"
                        f" (Tensor input, Number min = None, Number max = None) or (Tensor input, Tensor min = None, "
                        f"Tensor max = None); pass both bounds as numbers or both as tensors")
    if isinstance(input, Tensor) and input._dtype is _BOOL and (lo is None) != (hi is None) \
            and isinstance(lo if hi is None else hi, Tensor):
        return _GENERATED["maximum" if hi is None else "minimum"], lo if hi is None else hi
    return None


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    one = _clamp_overload("clamp", input, min, max)
    if one is not None:
        return one[0](input, one[1], out=out)
    return _ternary(CLAMP, _clamp_meta, (input, min, max), out)


def clamp_(input, min=None, max=None):  # noqa: A002
    one = _clamp_overload("clamp_", input, min, max)
    if one is not None:
        r = one[0](input, one[1])
        if r._dtype is not input._dtype:
            check_cast(r._dtype, input._dtype, "clamp_")
        if r.shape != input.shape:
            raise RuntimeError(f"clamp_: output with shape {list(input.shape)} doesn't match the broadcast shape "
                               f"{list(r.shape)}")
        return input.copy_(r)
    return _ternary_(CLAMP, _clamp_meta, input, (min, max))


clip, clip_ = clamp, clamp_


def lerp(input, end, weight, *, out=None):
    return _ternary(LERP, _lerp_meta, (input, end, weight), out)


def lerp_(self, end, weight):
    return _ternary_(LERP, _lerp_meta, self, (end, weight))


def _addcmul_meta(x, t1, t2, value):
    return _addc_meta(ADDCMUL, x, t1, t2, value)


def _addcdiv_meta(x, t1, t2, value):
    return _addc_meta(ADDCDIV, x, t1, t2, value)


def addcmul(input, tensor1, tensor2, *, value=1, out=None):
    return _ternary(ADDCMUL, _addcmul_meta, (input, tensor1, tensor2, value), out)


def addcmul_(self, tensor1, tensor2, *, value=1):
    return _ternary_(ADDCMUL, _addcmul_meta, self, (tensor1, tensor2, value))


def addcdiv(input, tensor1, tensor2, *, value=1, out=None):
    return _ternary(ADDCDIV, _addcdiv_meta, (input, tensor1, tensor2, value), out)


def addcdiv_(self, tensor1, tensor2, *, value=1):
    return _ternary_(ADDCDIV, _addcdiv_meta, self, (tensor1, tensor2, value))


def masked_fill(input, mask, value, *, out=None):
    return _ternary(MASKED_FILL, _masked_fill_meta, (input, mask, value), out)


def masked_fill_(self, mask, value):
    return _ternary_(MASKED_FILL, _masked_fill_meta, self, (mask, value))


def _tensor_where(self, condition, other):
    return where(condition, self, other)


_PUBLIC = tuple(n for n, *_ in TERNARY) + ("clip",)
FUNCTIONS = _PUBLIC + ("clamp_", "clip_")

METHODS = {n: globals()[n] for n in _PUBLIC}
METHODS.update({n + "_": globals()[n + "_"] for n, *_, ip in TERNARY if ip})
METHODS.update({"clip_": clip_, "where": _tensor_where})
