"""tensor[index] derivatives (ops/indexing.py): getitem (basic and advanced), index, index_put_."""
from __future__ import annotations

from ..ops import indexing as IX
from .derivatives import DERIVATIVES, Derivative, _NEVER, embed, strided_like, zeros


def _getitem(ctx, g):
    """Replay the basic part of the index on zeros of the input's shape and write g there."""
    shape = tuple(ctx.shape(0))
    dev = g.device

    def view(z):
        lay, _ = IX._locate(z, [IX._entry(x, dev) for x in IX._as_tuple(ctx.info["index"])])
        return z._view_of(lay)
    return (embed(g, shape, view),)


_BASIC_NAMES = {int: "SelectBackward0", slice: "SliceBackward0", type(None): "UnsqueezeBackward0",
                bool: "UnsqueezeBackward0"}


def _getitem_name(ctx):
    index = ctx.info["index"]
    for x in reversed(index if isinstance(index, tuple) else (index,)):
        if isinstance(x, slice) and x == slice(None):
            continue
        name = _BASIC_NAMES.get(type(x))
        if name is not None:
            return name
    return "AliasBackward0"


def _index(ctx, g):
    z = zeros(ctx.shape(0), g)
    if g.numel():
        z.index_put_(list(ctx.info["indices"]), g, accumulate=True)
    return (z,)


def _index_put(ctx, g):
    """self[view][indices] = value (or += with accumulate): the written region's gradient goes
    to value (summed over its broadcast), and (without accumulate) is zero for old self."""
    info = ctx.info
    sl, vl = ctx.layout(0), info["view"]._meta.layout
    idx = info["indices"]
    adv = any(i is not None for i in idx)
    key = tuple(slice(None) if i is None else i for i in idx)
    res = strided_like(g, sl)
    region = res.as_strided(tuple(vl.shape), tuple(vl.stride), vl.offset - sl.offset)
    gv = None
    if ctx.n_inputs > 1 and ctx.needs(1):
        gv = region[key] if adv else region.clone()
    if not info["accumulate"]:
        if adv:
            region[key] = 0.0
        elif region.numel():
            region.zero_()
    return (res, gv) if ctx.n_inputs > 1 else (res,)


DERIVATIVES.update({
    "getitem": Derivative(_getitem, name=_getitem_name),
    "index": Derivative(_index),
    "index_put_": Derivative(_index_put, self_saved=_NEVER),
})
