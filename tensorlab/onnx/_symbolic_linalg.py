"""ONNX mappings of the matrix products (HOOK rows): matmul/mm/bmm, linear, addmm, outer."""
from __future__ import annotations

from ._symbolic_common import _as, _axes


def _matmul(g, op, inputs, out, info):
    a, b = inputs[:2]
    return g.node("MatMul", [_as(g, a, out._dtype), _as(g, b, out._dtype)], hint=op)


def _linear_node(g, x, w, b, dt):
    if x.dim() == 2:
        ins = [_as(g, x, dt), _as(g, w, dt)] + ([_as(g, b, dt)] if b is not None else [])
        return g.node("Gemm", ins, transB=1, hint="linear")
    wt = g.node("Transpose", [_as(g, w, dt)], perm=[1, 0])
    y = g.node("MatMul", [_as(g, x, dt), wt], hint="linear")
    if b is not None:
        y = g.node("Add", [y, _as(g, b, dt)], hint="linear")
    return y


def _linear(g, op, inputs, out, info):
    x, w = inputs[0], inputs[1]
    b = inputs[2] if len(inputs) > 2 else None
    if w.dim() == 1:
        y = g.node("MatMul", [_as(g, x, out._dtype), _as(g, w, out._dtype)])
        return y if b is None else g.node("Add", [y, _as(g, b, out._dtype)])
    return _linear_node(g, x, w, b, out._dtype)


def _addmm(g, op, inputs, out, info):
    bias, a, b = inputs[:3]
    dt = out._dtype
    return g.node("Gemm", [_as(g, a, dt), _as(g, b, dt), _as(g, bias, dt)], alpha=float(info.get("alpha", 1.0)),
                  beta=float(info.get("beta", 1.0)), hint=op)


def _outer(g, op, inputs, out, info):
    a, b = inputs[:2]
    dt = out._dtype
    return g.node("Mul", [_axes(g, _as(g, a, dt), [1], "Unsqueeze"), _axes(g, _as(g, b, dt), [0], "Unsqueeze")],
                  hint=op)


# the HOOK rows of this family (op name -> mapping), merged into _symbolic.HOOK
HOOK = {
    "outer": _outer, "ger": _outer, "matmul": _matmul, "mm": _matmul, "bmm": _matmul, "linear": _linear,
    "addmm": _addmm,
}
