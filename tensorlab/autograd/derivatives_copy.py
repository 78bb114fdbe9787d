"""Copies' derivatives (ops/copy.py, ops/transfer.py): clone, pin_memory, to (device and dtype), copy_
(which x[basic index] = value also records, with the written view: derivatives_indexing._index_put)."""
from __future__ import annotations

from .derivatives import DERIVATIVES, Derivative, _NEVER, zeros
from .derivatives_indexing import _index_put


def _to(ctx, g):
    if g._dtype.category == 3 and ctx.dtype(0).category != 3:  # real -> complex cast: the real part (torch)
        g = g.real
    return (g.to(ctx.device(0), ctx.dtype(0)),)


def _copy(ctx, g):
    if "view" in ctx.info:  # x[basic index] = value records copy_ on x, with the written view
        return _index_put(ctx, g)
    return (zeros(ctx.shape(0), g) if ctx.needs(0) else None, g if ctx.needs(1) else None)


DERIVATIVES.update({
    "clone": Derivative(lambda c, g: (g,)),
    "pin_memory": Derivative(lambda c, g: (g,)),
    "to": Derivative(_to, name="ToCopyBackward0"),
    "copy_": Derivative(_copy, name="CopyBackwards", self_saved=_NEVER),
})
