"""ONNX mappings of the elementwise ops (HOOK rows): unary, binary, comparisons, logical ops, where,
masked_fill, clamp, casts and identities."""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ._symbolic_common import _as, _onnx_type, _operand


_UNARY = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
          "abs": "Abs", "neg": "Neg", "erf": "Erf", "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil",
          "reciprocal": "Reciprocal", "sign": "Sign", "logical_not": "Not", "isnan": "IsNaN", "round": "Round",
          "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
          "bitwise_not": "Not"}


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "pow": "Pow", "maximum": "Max",
           "minimum": "Min", "fmod": "Mod"}


_COMPARE = {"eq": "Equal", "lt": "Less", "gt": "Greater", "le": "LessOrEqual", "ge": "GreaterOrEqual", "ne": "Equal"}


_LOGICAL = {"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"}


def _unary(g, op, inputs, out, info):
    (x,) = [v for v in info["operands"] if v is not None][:1]
    a = _as(g, x, out._dtype) if op not in ("isnan", "logical_not") else g.val(x)
    if op == "logical_not" and x._dtype is not dtypes.bool_:
        a = g.node("Cast", [a], to=g.onnx.TensorProto.BOOL)
    if op == "bitwise_not" and out._dtype is not dtypes.bool_:
        raise g.unsupported("bitwise_not", "integer operands (ONNX BitwiseNot: bool only here)")
    return g.node(_UNARY[op], [a], hint=op)


def _expm1_log1p(g, op, inputs, out, info):
    dt = out._dtype
    x = _as(g, info["operands"][0], dt)
    one = g.const(np.asarray(1, dt.np))
    if op == "expm1":
        return g.node("Sub", [g.node("Exp", [x]), one], hint=op)
    return g.node("Log", [g.node("Add", [x, one])], hint=op)


def _rsqrt(g, op, inputs, out, info):
    x = info["operands"][0]
    return g.node("Reciprocal", [g.node("Sqrt", [_as(g, x, out._dtype)])], hint=op)


def _silu(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return g.node("Mul", [x, g.node("Sigmoid", [x])], hint=op)


def _gelu_expand(g, x, dt, approximate):
    half = g.const(np.asarray(0.5, dt.np))
    one = g.const(np.asarray(1.0, dt.np))
    if approximate == "tanh":
        x3 = g.node("Mul", [g.node("Mul", [x, x]), x])
        inner = g.node("Add", [x, g.node("Mul", [x3, g.const(np.asarray(0.044715, dt.np))])])
        inner = g.node("Mul", [inner, g.const(np.asarray(math.sqrt(2.0 / math.pi), dt.np))])
        t = g.node("Tanh", [inner])
    else:
        t = g.node("Erf", [g.node("Div", [x, g.const(np.asarray(math.sqrt(2.0), dt.np))])])
    return g.node("Mul", [g.node("Mul", [x, half]), g.node("Add", [t, one])], hint="gelu")


def _gelu_node(g, x, dt, approximate):
    if g.opset >= 20:
        return g.node("Gelu", [x], approximate=approximate, hint="gelu")
    return _gelu_expand(g, x, dt, approximate)


def _gelu(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return _gelu_node(g, x, out._dtype, info.get("approximate", "none"))


def _binary(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    dt = out._dtype
    if op == "div" and info.get("rounding_mode") not in (None, "true"):
        mode = info["rounding_mode"]
        if not dt.is_floating_point:
            raise g.unsupported(f"div(rounding_mode={mode!r})", "integer operands")
        q = g.node("Div", [_operand(g, a, dt), _operand(g, b, dt)])
        if mode == "floor":
            return g.node("Floor", [q], hint="div")
        return g.node("Mul", [g.node("Sign", [q]), g.node("Floor", [g.node("Abs", [q])])], hint="div")
    if op == "div" and not dt.is_floating_point:
        raise g.unsupported("div", f"{dt.name} result")
    an, bn = _operand(g, a, dt), _operand(g, b, dt)
    alpha = info.get("alpha")
    if alpha is not None and alpha != 1:
        bn = g.node("Mul", [bn, g.const(np.asarray(alpha, dt.np))])
    if op == "fmod":
        return g.node("Mod", [an, bn], fmod=1 if dt.is_floating_point else 0, hint=op)
    return g.node(_BINARY[op], [an, bn], hint=op)


def _common(a, b):
    ta = a if isinstance(a, Tensor) else None
    tb = b if isinstance(b, Tensor) else None
    from .. import result_type
    return result_type(a if ta is not None else a, b if tb is not None else b)


def _compare(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    dt = _common(a, b)
    r = g.node(_COMPARE[op], [_operand(g, a, dt), _operand(g, b, dt)], hint=op)
    return g.node("Not", [r], hint=op) if op == "ne" else r


def _bool(g, x):
    if isinstance(x, Tensor):
        return _as(g, x, dtypes.bool_)
    return g.const(np.asarray(bool(x)), "scalar")


def _logical(g, op, inputs, out, info):
    a, b = info["operands"][:2]
    return g.node(_LOGICAL[op], [_bool(g, a), _bool(g, b)], hint=op)


def _where(g, op, inputs, out, info):
    c, a, b = info["operands"][:3]
    dt = out._dtype
    return g.node("Where", [_bool(g, c), _operand(g, a, dt), _operand(g, b, dt)], hint=op)


def _masked_fill(g, op, inputs, out, info):
    x, mask, value = info["operands"][:3]
    dt = out._dtype
    return g.node("Where", [_bool(g, mask), _operand(g, value, dt), _operand(g, x, dt)], hint=op)


def _clamp(g, op, inputs, out, info):
    ops_ = list(info["operands"]) + [None, None]
    x, lo, hi = ops_[0], ops_[1], ops_[2]
    lo = info.get("min", lo) if lo is None else lo
    hi = info.get("max", hi) if hi is None else hi
    dt = out._dtype
    r = _as(g, x, dt)
    if isinstance(lo, Tensor) or isinstance(hi, Tensor):
        if lo is not None:
            r = g.node("Max", [r, _operand(g, lo, dt)])
        if hi is not None:
            r = g.node("Min", [r, _operand(g, hi, dt)])
        return r
    return g.node("Clip", [r, "" if lo is None else _operand(g, lo, dt), "" if hi is None else _operand(g, hi, dt)],
                  hint=op)


def _cast(g, op, inputs, out, info):
    x = inputs[0]
    if x._dtype is out._dtype:
        return g.node("Identity", [g.val(x)], hint=op)
    return g.node("Cast", [g.val(x)], to=_onnx_type(g, out._dtype), hint=op)


def _identity(g, op, inputs, out, info):
    return g.node("Identity", [g.val(inputs[0])], hint=op)


def _log_base(g, op, inputs, out, info):
    dt = out._dtype
    x = _as(g, info["operands"][0], dt)
    if op == "exp2":
        return g.node("Pow", [g.const(np.asarray(2.0, dt.np)), x], hint=op)
    base = 2.0 if op == "log2" else 10.0
    return g.node("Div", [g.node("Log", [x]), g.const(np.asarray(math.log(base), dt.np))], hint=op)


def _square(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    return g.node("Mul", [x, x], hint=op)


def _trunc(g, op, inputs, out, info):
    x = _as(g, info["operands"][0], out._dtype)
    if not out._dtype.is_floating_point:
        return g.node("Identity", [x])
    return g.node("Mul", [g.node("Sign", [x]), g.node("Floor", [g.node("Abs", [x])])], hint=op)


def _floor_ops(g, op, inputs, out, info):
    """floor_divide and remainder (Python's sign rules) over floating results: a - b * floor(a / b)."""
    a, b = info["operands"][:2]
    dt = out._dtype
    if not dt.is_floating_point:
        raise g.unsupported(op, f"{dt.name} operands (ONNX's integer Div truncates)")
    an, bn = _operand(g, a, dt), _operand(g, b, dt)
    q = g.node("Floor", [g.node("Div", [an, bn])])
    if op == "floor_divide":
        return g.node("Identity", [q], hint=op)
    return g.node("Sub", [an, g.node("Mul", [bn, q])], hint=op)


# the HOOK rows of this family (op name -> mapping), merged into _symbolic.HOOK
HOOK = {}
for _n in _UNARY:
    HOOK[_n] = _unary
for _n in _BINARY:
    HOOK[_n] = _binary
for _n in _COMPARE:
    HOOK[_n] = _compare
for _n in _LOGICAL:
    HOOK[_n] = _logical
HOOK.update({
    "log2": _log_base, "log10": _log_base, "exp2": _log_base, "square": _square, "trunc": _trunc,
    "floor_divide": _floor_ops, "remainder": _floor_ops, "rsqrt": _rsqrt, "expm1": _expm1_log1p, "log1p": _expm1_log1p,
    "silu": _silu, "gelu": _gelu, "where": _where, "masked_fill": _masked_fill, "clamp": _clamp, "to": _cast,
    "_to_copy": _cast, "type": _cast, "clone": _identity, "contiguous": _identity, "alias": _identity,
    "detach": _identity,
})
del _n
