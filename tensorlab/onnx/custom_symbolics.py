"""Custom-op symbolics: torch.onnx.register_custom_op_symbolic("ns::op", fn, opset) makes the export write
fn's nodes for a call of the torch.library operator ns::op (tensorlab/library.py) instead of tracing into
its kernel. fn(g, *inputs) gets a GraphContext `g` (g.op(type, *inputs, **attributes) with torch's
attribute suffixes: _i int, _f float, _s str, _is ints, _fs floats, _t / value_t a tensor) and the op's
arguments in schema order: tensors as graph value names, everything else as the Python values passed.
The symbolic registered for the highest opset not above the export's is used."""
from __future__ import annotations

import enum
import inspect
import threading

import numpy as np

__all__ = ["register_custom_op_symbolic", "unregister_custom_op_symbolic", "GraphContext", "TensorProtoDataType"]

_lock = threading.Lock()
_SYMBOLICS = {}  # "ns::op" -> {opset: fn}


class TensorProtoDataType(enum.IntEnum):
    """ONNX's TensorProto element types (torch.onnx.TensorProtoDataType)."""
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16


def _qualname(name):
    if not isinstance(name, str) or "::" not in name:
        raise ValueError(f"Failed to register operator {name}. The symbolic name must match the format "
                         f"domain::name, and should start with a letter and contain only alphanumerical characters")
    return name


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version):
    """Export calls of torch.library operator `symbolic_name` ("ns::op") with symbolic_fn from
    `opset_version` on."""
    if not callable(symbolic_fn):
        raise TypeError(f"register_custom_op_symbolic: symbolic_fn must be callable, got {type(symbolic_fn).__name__}")
    with _lock:
        _SYMBOLICS.setdefault(_qualname(symbolic_name), {})[int(opset_version)] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name, opset_version):
    """Forget the symbolic registered for `symbolic_name` at `opset_version` (exports trace its kernel again)."""
    with _lock:
        _SYMBOLICS.get(_qualname(symbolic_name), {}).pop(int(opset_version), None)


def symbolic_for(qualname, opset):
    versions = _SYMBOLICS.get(qualname)
    if not versions:
        return None
    usable = [v for v in versions if v <= opset]
    return versions[max(usable)] if usable else None


class GraphContext:
    """The `g` a symbolic function receives: g.op appends a node to the export's graph."""

    def __init__(self, graph):
        self._g = graph
        self.opset = graph.opset

    def op(self, op_type, *inputs, outputs=1, **attrs):
        g = self._g
        onnx = g.onnx
        names = [("" if x is None else x if isinstance(x, str) else g.val(x)) for x in inputs]
        converted = {}
        for key, v in attrs.items():
            if key == "value_t" or key.endswith("_t"):
                arr = v.detach().cpu().numpy() if hasattr(v, "detach") else np.asarray(v)
                converted["value" if key == "value_t" else key[:-2]] = onnx.numpy_helper.from_array(np.asarray(arr))
            elif key.endswith(("_i", "_f", "_s")):
                kind = key[-1]
                converted[key[:-2]] = {"i": int, "f": float, "s": str}[kind](v)
            elif key.endswith(("_is", "_fs", "_ss")):
                kind = key[-2]
                converted[key[:-3]] = [{"i": int, "f": float, "s": str}[kind](x) for x in v]
            else:
                converted[key] = v
        return g.node(op_type, names, n_out=outputs, **converted)


def install(tracer):
    """For every torch.library operator with a symbolic usable at the export's opset: its calls go
    through the tracer's leaf wrapper, which writes the symbolic's nodes (undone by the tracer's
    uninstall)."""
    from .. import library
    g = tracer.g
    for qualname, op in list(library._REGISTRY.items()):
        fn = symbolic_for(qualname, g.opset)
        if fn is None:
            continue
        call = op.call_kernel
        sig = inspect.Signature([inspect.Parameter(a.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                 for a in op.args])

        def kernel(*args, _call=call, **kwargs):
            return _call(*args, **kwargs)
        kernel.__signature__ = sig
        kernel.__name__ = op.name

        def conv(graph, arguments, out, _fn=fn, _names=[a.name for a in op.args]):
            values = [arguments[n] for n in _names]
            values = [graph.val(v) if hasattr(v, "_meta") else v for v in values]
            return _fn(GraphContext(graph), *values)
        tracer.patched.append((op, "_export_leaf", None))
        op._export_leaf = tracer._wrap(qualname, kernel, conv)
