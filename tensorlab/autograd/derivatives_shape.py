"""Derivatives of ops/shape.py's ops: cat/stack/flip/roll, gather/scatter/index_select/index_fill/
masked_select, sort/topk, tril/triu."""
from __future__ import annotations

from .. import layout as L
from .derivatives import DERIVATIVES, Derivative, _NEVER, embed, zeros


# -- shape ops -------------------------------------------------------------------------------------
def _cat(ctx, g):
    d = ctx.info["dim"]
    grads, off = [], 0
    for i in range(ctx.n_inputs):
        sh = ctx.shape(i)
        if sh == (0,) and g.dim() != 1:  # torch's legacy rule: 1-D empty inputs were skipped
            grads.append(zeros(sh, g) if ctx.needs(i) else None)
            continue
        n = sh[d]
        grads.append(g.narrow(d, off, n) if ctx.needs(i) else None)
        off += n
    return tuple(grads)


def _stack(ctx, g):
    d = ctx.info["dim"]
    return tuple(g.select(d, i) if ctx.needs(i) else None for i in range(ctx.n_inputs))


def _roll(ctx, g):
    dims = ctx.info["dims"]
    return (g.roll([-s for s in ctx.info["shifts"]], dims),)


def _gather(ctx, g):
    return (zeros(ctx.shape(0), g).scatter_add(ctx.info["dim"], ctx.saved(1), g), None)


def _scatter(ctx, g):
    reduce = ctx.info.get("reduce")
    d, index = ctx.info["dim"], ctx.saved(1)
    if reduce == "multiply":
        raise RuntimeError("the derivative of scatter with reduce='multiply' is not implemented (as in torch); use "
                           "reduce=None or 'add', or compute the product with differentiable ops")
    gx = None
    if ctx.needs(0):
        gx = g if reduce == "add" else g.scatter(d, index, 0.0)
    if ctx.n_inputs < 3:
        return gx, None
    gs = None
    if ctx.needs(2):
        gs = g.gather(d, index)
        src_shape = ctx.shape(2)
        if tuple(gs.shape) != tuple(src_shape):  # src larger than index: its other elements are unused
            gs = embed(gs, src_shape, lambda z: _leading_block(z, gs.shape))
    return gx, None, gs


def _leading_block(z, shape):
    for d, n in enumerate(shape):
        z = z.narrow(d, 0, n)
    return z


def _scatter_name(ctx):
    if ctx.info.get("reduce") == "add":
        return "ScatterAddBackward0"
    return "ScatterBackward0" if ctx.n_inputs == 3 else "ScatterBackward1"


def _index_select(ctx, g):
    shape = ctx.shape(0)
    if not shape:
        return g.reshape(()), None
    d = ctx.info["dim"]
    z = zeros(shape, g)
    if g.numel():
        z.index_put_([None] * d + [ctx.saved(1).reshape(-1)], g, accumulate=True)
    return z, None


def _masked_select(ctx, g):
    mask = ctx.saved(1)
    shape = L.broadcast_shapes(ctx.shape(0), ctx.shape(1))
    z = zeros(shape, g)
    if g.numel():
        z.index_put_((mask.expand(tuple(shape)),), g)
    return z, None


def _sorted(ctx, g):
    shape = ctx.shape(0)
    if not shape:
        return (g,)
    return (zeros(shape, g).scatter(ctx.info["dim"], ctx.info["indices"], g),)


DERIVATIVES.update({
    "cat": Derivative(_cat),
    "stack": Derivative(_stack),
    "flip": Derivative(lambda c, g: (g.flip(c.info["dims"]),)),
    "roll": Derivative(_roll),
    "gather": Derivative(_gather, save=(1,)),
    "scatter": Derivative(_scatter, save=(1,), name=_scatter_name, self_saved=_NEVER),
    "index_select": Derivative(_index_select, save=(1,)),
    "index_fill": Derivative(lambda c, g: (g.index_fill(c.info["dim"], c.saved(1), 0.0), None), save=(1,),
                             self_saved=_NEVER),
    "masked_select": Derivative(_masked_select, save=(1,)),
    "sort": Derivative(_sorted),
    "topk": Derivative(_sorted),
    "tril": Derivative(lambda c, g: (g.tril(c.info["diagonal"]),)),
    "triu": Derivative(lambda c, g: (g.triu(c.info["diagonal"]),)),
})
DERIVATIVES["scatter_add"] = DERIVATIVES["scatter"]
for _n in ("scatter", "scatter_add", "index_fill", "tril", "triu"):
    DERIVATIVES[_n + "_"] = DERIVATIVES[_n]
