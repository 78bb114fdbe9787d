"""The helpers every family's ONNX mappings use: dtypes as ONNX types, casts, operands, axes inputs."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor


def _onnx_type(g, dt):
    if dt.np.kind == "c" or dt.name == "bfloat16" and g.opset < 13:
        raise g.unsupported(f"dtype {dt.name}")
    if dt.name == "bfloat16":
        return g.onnx.TensorProto.BFLOAT16
    return g.onnx.helper.np_dtype_to_tensor_dtype(dt.np)


def _as(g, t, dt):
    """t's value name, cast to dtype dt where t has another dtype."""
    name = g.val(t)
    if t._dtype is not dt:
        name = g.node("Cast", [name], to=_onnx_type(g, dt))
    return name


def _operand(g, x, dt):
    """A tensor (cast to dt) or a Python number (a constant of dtype dt)."""
    if isinstance(x, Tensor):
        return _as(g, x, dt)
    return g.const(np.asarray(x, dtype=dt.np), "scalar")


def _norm_dim(d, n):
    return d + n if d < 0 else d


def _axes(g, name, axes, op_type, **attrs):
    """A node taking `axes` (Squeeze/Unsqueeze from 13; Reduce* from 18) as an input."""
    if op_type.startswith("Reduce") and g.opset < 18:
        return g.node(op_type, [name], axes=list(axes), **attrs)
    return g.node(op_type, [name, g.ints(axes, "axes")], **attrs)
