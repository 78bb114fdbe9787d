"""ONNX mappings of the reductions (HOOK rows): sum/mean/amax/amin/prod/max/min/logsumexp, any/all,
var/std, softmax/log_softmax, cumsum, argmax/argmin, norm."""
from __future__ import annotations

import math
import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ._symbolic_common import _as, _axes, _norm_dim, _onnx_type
from ._symbolic_elementwise import _bool


_REDUCE = {"sum": "ReduceSum", "mean": "ReduceMean", "amax": "ReduceMax", "amin": "ReduceMin", "prod": "ReduceProd",
           "max": "ReduceMax", "min": "ReduceMin", "logsumexp": "ReduceLogSumExp"}


def _reduce_dims(x, info):
    dim = info.get("dim")
    if dim is None or dim == ():
        return list(range(x.dim()))
    if isinstance(dim, int):
        dim = (dim,)
    return [_norm_dim(d, x.dim()) for d in dim]


def _reduce(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    if x.dim() == 0:
        return g.node("Identity", [_as(g, x, out._dtype)])
    r = _axes(g, _as(g, x, out._dtype), dims, _REDUCE[op], keepdims=keep)
    idx = info.get("indices")
    if op in ("max", "min") and isinstance(idx, Tensor) and len(dims) == 1:
        am = g.node("ArgMax" if op == "max" else "ArgMin", [g.val(x)], axis=dims[0], keepdims=keep)
        g.bind(idx, am)
    return r


def _any_all(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    xb = _bool(g, x)
    if op == "all":  # all(x) = not any(not x); Reduce* over int32 (bool reductions need opset 20)
        xb = g.node("Not", [xb])
    r = _axes(g, g.node("Cast", [xb], to=g.onnx.TensorProto.INT32), dims, "ReduceMax", keepdims=keep)
    r = g.node("Cast", [r], to=g.onnx.TensorProto.BOOL)
    r = g.node("Not", [r], hint=op) if op == "all" else r
    return r if out._dtype is dtypes.bool_ else g.node("Cast", [r], to=_onnx_type(g, out._dtype))


def _var(g, op, inputs, out, info):
    x = inputs[0]
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    corr = info.get("arg", 1)
    corr = 1 if corr is None else corr
    dt = out._dtype
    xn = _as(g, x, dt)
    mean = _axes(g, xn, dims, "ReduceMean", keepdims=1)
    d = g.node("Sub", [xn, mean])
    s = _axes(g, g.node("Mul", [d, d]), dims, "ReduceSum", keepdims=keep)
    n = int(np.prod([x.shape[i] for i in dims])) - corr
    v = g.node("Div", [s, g.const(np.asarray(max(n, 0), dt.np))])
    return g.node("Sqrt", [v], hint=op) if op == "std" else v


def _softmax(g, op, inputs, out, info):
    x = inputs[0]
    return g.node("Softmax" if op in ("softmax", "_softmax") else "LogSoftmax", [_as(g, x, out._dtype)],
                  axis=_norm_dim(info["dim"], max(x.dim(), 1)), hint=op)


def _cumsum(g, op, inputs, out, info):
    x = inputs[0]
    axis = g.const(np.asarray(_norm_dim(info["dim"], max(x.dim(), 1)), np.int64), "axis")
    return g.node("CumSum", [_as(g, x, out._dtype), axis], hint=op)


def _arg_dim(x, out):
    """The dim argmax/argmin reduced (not recorded): the one whose removal (or size 1) gives out's shape."""
    ins, outs = tuple(x.shape), tuple(out.shape)
    hits = [d for d in range(len(ins)) if ins[:d] + ins[d + 1:] == outs or ins[:d] + (1,) + ins[d + 1:] == outs]
    return hits


def _argmax(g, op, inputs, out, info):
    x = inputs[0]
    onnx_op = "ArgMax" if op == "argmax" else "ArgMin"
    if out.dim() == 0:
        flat = g.node("Reshape", [g.val(x), g.ints([-1])])
        return g.node(onnx_op, [flat], axis=0, keepdims=0, hint=op)
    hits = _arg_dim(x, out)
    if len(set(x.shape[d] for d in hits)) != 1 or not hits:
        raise g.unsupported(op, "the reduced dim cannot be told from the shapes")
    d = hits[0]
    keep = int(out.dim() == x.dim())
    if len(hits) > 1:  # several dims fit: they have the same size, the values decide
        xs, want = g.host(x), g.host(out)
        fn = np.argmax if op == "argmax" else np.argmin
        ok = [h for h in hits if np.array_equal(fn(xs, axis=h).reshape(want.shape), want)]
        if not ok:
            raise g.unsupported(op, "the reduced dim cannot be told from the shapes")
        d = ok[0]
    return g.node(onnx_op, [g.val(x)], axis=d, keepdims=keep, select_last_index=0, hint=op)


def _norm(g, op, inputs, out, info):
    x = inputs[0]
    p = info.get("arg", 2.0)
    p = 2.0 if p is None else p
    dims = _reduce_dims(x, info)
    keep = 1 if info.get("keepdim") else 0
    xn = _as(g, x, out._dtype)
    if p == 2:
        return _axes(g, xn, dims, "ReduceL2", keepdims=keep)
    if p == 1:
        return _axes(g, xn, dims, "ReduceL1", keepdims=keep)
    if p == math.inf:
        return _axes(g, g.node("Abs", [xn]), dims, "ReduceMax", keepdims=keep)
    raise g.unsupported(op, f"p={p}")


# the HOOK rows of this family (op name -> mapping), merged into _symbolic.HOOK
HOOK = {}
for _n in _REDUCE:
    HOOK[_n] = _reduce
HOOK.update({
    "cumsum": _cumsum, "argmax": _argmax, "argmin": _argmax, "norm": _norm, "var": _var, "std": _var, "any": _any_all,
    "all": _any_all, "softmax": _softmax, "_softmax": _softmax, "log_softmax": _softmax,
})
del _n
