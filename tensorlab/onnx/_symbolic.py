"""op -> ONNX node mappings (written from the ONNX operator specification).

HOOK: ops heard through autograd_hooks.tracer, fn(g, op, inputs, out, info) -> output name(s).
LEAF: functions the export wraps, fn(g, arguments by parameter name, out) -> output name(s).
Opsets 13 and later are supported; where an opset changed an operator (Reduce* axes become an
input at 18, LayerNormalization from 17, Gelu from 20, Pad's wrap mode from 19), both forms exist.

The mappings live in one file per op family: _symbolic_elementwise.py, _symbolic_shape.py,
_symbolic_reduction.py, _symbolic_linalg.py (HOOK rows), _symbolic_nn.py (LEAF rows), over the helpers
in _symbolic_common.py; this file holds the two tables.
"""
from __future__ import annotations

from . import (_symbolic_common, _symbolic_elementwise, _symbolic_linalg, _symbolic_nn, _symbolic_reduction,
               _symbolic_shape)

MIN_OPSET = 13
_onnx_type = _symbolic_common._onnx_type  # a dtype as its ONNX element type (onnx/__init__.py uses it too)

# ops heard through the tracer: every family's rows (no two families map one op)
HOOK = {}
for _family in (_symbolic_elementwise, _symbolic_shape, _symbolic_reduction, _symbolic_linalg):
    HOOK.update(_family.HOOK)
del _family
LEAF = _symbolic_nn.LEAF  # the functions the export wraps whole


def leaf_methods():
    """(class, attribute, LEAF name) of the methods the export wraps."""
    from ..nn.rnn import RNNBase
    return [(RNNBase, "_stack_layers", "rnn_stack")]


def leaf_functions():
    """{name: the function object} for every LEAF name tensorlab defines (nn.functional's bindings)."""
    from ..nn import functional as F
    from ..ops import conv as _conv_ops, creation as _creation
    out = {}
    for name in LEAF:
        fn = getattr(F, name, None) or getattr(_conv_ops, name, None) or getattr(_creation, name, None)
        if fn is not None and callable(fn):
            out[name] = getattr(fn, "__wrapped_by_onnx__", fn)
    return out
