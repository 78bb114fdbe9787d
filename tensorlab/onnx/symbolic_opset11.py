"""torch.onnx.symbolic_opset11's graph helpers that custom-op symbolics call (custom_symbolics.py). They
write the node forms of the export's opset (tensorlab exports opset 13 and later, where Squeeze and
Unsqueeze take their axes as an input)."""
from __future__ import annotations

import numpy as np

__all__ = ["unsqueeze", "squeeze", "select", "reshape", "cast"]


def _axes(g, dims):
    return g.op("Constant", value_t=np.asarray(list(dims), dtype=np.int64))


def unsqueeze(g, x, dim):
    return g.op("Unsqueeze", x, _axes(g, [int(dim)]))


def squeeze(g, x, dim):
    return g.op("Squeeze", x, _axes(g, [int(dim)]))


def select(g, x, dim, index):
    """x's entries at `index` (a graph value of int64 indices, or ints) along dim: ONNX Gather."""
    if not isinstance(index, str):
        index = g.op("Constant", value_t=np.asarray(index, dtype=np.int64))
    return g.op("Gather", x, index, axis_i=int(dim))


def reshape(g, x, shape):
    if not isinstance(shape, str):
        shape = _axes(g, shape)
    return g.op("Reshape", x, shape)


def cast(g, x, to):
    return g.op("Cast", x, to_i=int(to))
