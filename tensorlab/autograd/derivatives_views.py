"""Views' derivatives (ops/views.py): view/permute/transpose/expand/squeeze/unsqueeze/as_strided/
narrow/split/select/unfold/diagonal. Each gradient is the inverse placement of g into the input's shape."""
from __future__ import annotations

from .. import dtypes, layout as L
from ..ops import creation as C
from .derivatives import (DERIVATIVES, NOT_DIFFERENTIABLE, Derivative, embed, pad, positions, scatter_layout, sum_to,
                          zeros)


# -- views ------------------------------------------------------------------------------------------
def _permute(ctx, g):
    dims = ctx.info["dims"]
    inv = [0] * len(dims)
    for i, d in enumerate(dims):
        inv[d] = i
    return (g.permute(inv),)


def _squeeze(ctx, g):
    for d in ctx.info["dims"]:
        g = g.unsqueeze(d)
    return (g,)


def _as_strided(ctx, g):
    """Scatter-add the gradient at the storage positions the result addresses, then read it at
    the positions the input addresses (inputs whose own elements overlap are refused)."""
    il = ctx.layout(0)
    size, stride, off = ctx.info["size"], ctx.info["stride"], ctx.info["storage_offset"]
    if L.has_internal_overlap(il.shape, il.stride):
        raise RuntimeError("as_strided backward: the input's own elements overlap (e.g. an expand()ed tensor), so "
                           "the gradient of each is ambiguous; clone() the input before as_strided")
    lo = min(il.offset, off)
    n = max(L.extent(il.shape, il.stride, il.offset), L.extent(size, stride, off)) - lo
    flat = zeros((max(n, 0),), g)
    if g.numel():
        pos = positions(size, stride, off - lo, g.device)
        flat.index_put_((pos.reshape(-1),), g.reshape(-1), accumulate=True)
    return (flat[positions(il.shape, il.stride, il.offset - lo, g.device)],)


def _narrow(ctx, g):
    d = ctx.info["dim"]
    return (pad(g, tuple(ctx.shape(0)), d, ctx.info["start"]),)


def _select(ctx, g):
    d = ctx.info["dim"]
    return (pad(g.unsqueeze(d), tuple(ctx.shape(0)), d, ctx.info["index"]),)


def _unfold(ctx, g):
    shape = tuple(ctx.shape(0))
    i = ctx.info
    probe = C.empty(shape, dtype=dtypes.bool_, device=g.device).unfold(i["dimension"], i["size"], i["step"])
    return (scatter_layout(g, shape, probe._meta.layout),)


def _diagonal(ctx, g):
    i = ctx.info
    return (embed(g, tuple(ctx.shape(0)), lambda z: z.diagonal(i["offset"], i["dim1"], i["dim2"])),)


DERIVATIVES.update({
    "view": Derivative(lambda c, g: (g.reshape(tuple(c.shape(0))),)),
    "view_dtype": NOT_DIFFERENTIABLE,  # as torch: reinterpreting bytes has no gradient (use .to(dtype))
    "permute": Derivative(_permute),
    "transpose": Derivative(lambda c, g: (g.transpose(c.info["dim0"], c.info["dim1"]),)),
    "alias": Derivative(lambda c, g: (g,)),
    "expand": Derivative(lambda c, g: (sum_to(g, tuple(c.shape(0))),)),
    "squeeze": Derivative(_squeeze),
    "unsqueeze": Derivative(lambda c, g: (g.squeeze(c.info["dim"]),)),
    "as_strided": Derivative(_as_strided),
    "narrow": Derivative(_narrow, name="SliceBackward0"),
    "split": Derivative(_narrow),
    "select": Derivative(_select),
    "unfold": Derivative(_unfold),
    "diagonal": Derivative(_diagonal),
})
