"""Reductions' derivatives (ops/reduction.py): sum/mean/prod, the extremes (amax/amin/max/min/median/
kthvalue), var/std/norm/logsumexp, the scans cumsum/cumprod, softmax/log_softmax."""
from __future__ import annotations

import math

from .. import layout as L
from ..ops import creation as C, elementwise as E, shape as S
from .derivatives import DERIVATIVES, Derivative, _x, unreduce, zeros


# -- reductions ------------------------------------------------------------------------------------
def _n_reduced(shape, dims):
    return L.prod(shape[d] for d in dims)


def _full(ctx, op):
    full = len(ctx.info["dim"]) == len(ctx.shape(0)) and not ctx.info.get("keepdim")
    return f"{op}Backward{0 if full else 1}"


def _sum(ctx, g):
    return (unreduce(g, ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]),)


def _mean(ctx, g):
    shape, dims = ctx.shape(0), ctx.info["dim"]
    n = _n_reduced(shape, dims)
    return (unreduce(g, shape, dims, ctx.info["keepdim"]) / n if n else unreduce(g, shape, dims,
                                                                                  ctx.info["keepdim"]) * math.nan,)


def _prod(ctx, g):
    """d prod / d x_i = product of the others: exclusive products from both ends (exact with
    zeros, no division)."""
    x = _x(ctx).to(g._dtype)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    ge = unreduce(g, shape, dims, ctx.info["keepdim"])
    if not dims:
        return (ge,)
    keep = [d for d in range(len(shape)) if d not in dims]
    perm = keep + list(dims)
    n = _n_reduced(shape, dims)
    if n == 0:
        return (zeros(shape, g),)
    xf = x.permute(perm).reshape([shape[d] for d in keep] + [n])
    one = C.ones(tuple(xf.shape[:-1]) + (1,), dtype=g._dtype, device=g.device)
    left = S.cat([one, xf.narrow(-1, 0, n - 1)], -1).cumprod(-1)
    right = S.cat([one, xf.flip(-1).narrow(-1, 0, n - 1)], -1).cumprod(-1).flip(-1)
    inv = [0] * len(perm)
    for i, d in enumerate(perm):
        inv[d] = i
    others = (left * right).reshape([shape[d] for d in perm]).permute(inv)
    return (ge * others,)


def _evenly(ctx, g, nan=False):
    """amax / amin / max() / min() / median(): the gradient split evenly between the tied
    extremes; with `nan` (torch's evenly_distribute_backward) a NaN result's ties are the NaNs."""
    x = _x(ctx)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    r = unreduce(ctx.result(), shape, dims, keepdim)
    mask = x == r
    if nan and x._dtype.is_floating_point:
        mask = mask | (x.isnan() & r.isnan())
    count = mask.sum(list(dims), keepdim=True) if dims else mask.to(g._dtype)
    return (E.where(mask, unreduce(g, shape, dims, keepdim) / count, 0.0),)


def _select_extreme(ctx, g):
    """max / min / median / kthvalue along a dim: the gradient goes to the returned index."""
    if "indices" not in ctx.info:
        return _evenly(ctx, g, nan=True)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    if not shape:
        return (g,)
    d = dims[0]
    idx = ctx.info["indices"]
    if not ctx.info["keepdim"]:
        g, idx = g.unsqueeze(d), idx.unsqueeze(d)
    return (zeros(shape, g).scatter(d, idx, g),)


def _extreme_name(op):
    def name(ctx):
        return f"{op}Backward{0 if 'indices' in ctx.info else 1}"
    return name


def _median_name(op):
    def name(ctx):
        return f"{op}Backward{1 if 'indices' in ctx.info else 0}"
    return name


def _var_grad(ctx, g):
    x = _x(ctx).to(g._dtype)
    shape, dims = ctx.shape(0), ctx.info["dim"]
    n = _n_reduced(shape, dims) - ctx.info["arg"]
    mean = x.mean(list(dims), keepdim=True) if dims else x
    scale = 2.0 / n if n else math.inf
    return scale * (x - mean) * unreduce(g, shape, dims, ctx.info["keepdim"])


def _std(ctx, g):
    r = ctx.result()
    return (_var_grad(ctx, (g / (2 * r)).masked_fill(r == 0, 0.0)),)


def _norm(ctx, g):
    p = ctx.info["arg"]
    x = _x(ctx).to(g._dtype)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    ge = unreduce(g, shape, dims, keepdim)
    if p == 0:
        return (zeros(shape, g),)
    if p == 1:
        return (ge * x.sign(),)
    r = unreduce(ctx.result(), shape, dims, keepdim)
    if p == 2:
        return (E.where(r == 0, 0.0, ge * x / r),)
    if math.isinf(p):
        mask = x.abs() == r
        count = mask.sum(list(dims), keepdim=True) if dims else mask.to(g._dtype)
        return (E.where(mask, ge * x.sign() / count, 0.0),)
    if p < 1:
        scaled = (x.sign() * x.abs().pow(p - 1)).masked_fill(x == 0, 0.0)
        return (scaled * ge / r.pow(p - 1),)
    return (x * x.abs().pow(p - 2) * (ge / r.pow(p - 1)).masked_fill(r == 0, 0.0),)


def _logsumexp(ctx, g):
    x = _x(ctx)
    shape, dims, keepdim = ctx.shape(0), ctx.info["dim"], ctx.info["keepdim"]
    return (unreduce(g, shape, dims, keepdim) * (x - unreduce(ctx.result(), shape, dims, keepdim)).exp(),)


def _rev_cumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


def _cumsum(ctx, g):
    if g.dim() == 0:
        return (g,)
    return (_rev_cumsum(g, ctx.info["dim"]),)


def _cumprod(ctx, g):
    """Exact with zeros: before the first zero of a slice, sum_{j>=i} g_j out_j / x_i; at the
    first zero, the same with that zero replaced by one; after it, nothing."""
    if g.dim() == 0 or g.numel() == 0:
        return (g,)
    d = ctx.info["dim"]
    x = _x(ctx).to(g._dtype)
    out = ctx.result()
    zero = x == 0
    nz = zero.cumsum(d)
    before = nz == 0
    first = zero & (nz == 1)
    grad = E.where(before, _rev_cumsum(g * out, d) / E.where(before, x, 1.0), 0.0)
    ones_at_first = E.where(first, 1.0, x)
    return (grad + E.where(first, _rev_cumsum(g * ones_at_first.cumprod(d), d), 0.0),)


def _softmax(ctx, g):
    r = ctx.result()
    return (r * (g - (g * r).sum(ctx.info["dim"], keepdim=True)),)


def _log_softmax(ctx, g):
    return (g - ctx.result().exp() * g.sum(ctx.info["dim"], keepdim=True),)


DERIVATIVES.update({
    "sum": Derivative(_sum, name=lambda c: _full(c, "Sum")),
    "mean": Derivative(_mean, name=lambda c: _full(c, "Mean")),
    "prod": Derivative(_prod, save=(0,)),
    "amax": Derivative(_evenly, save=(0,), result=True),
    "amin": Derivative(_evenly, save=(0,), result=True),
    "max": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                      name=_extreme_name("Max")),
    "min": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                      name=_extreme_name("Min")),
    "median": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                         name=_median_name("Median")),
    "nanmedian": Derivative(_select_extreme, save=(0,), result=lambda c: "indices" not in c.info,
                            name=_median_name("Nanmedian")),
    "kthvalue": Derivative(_select_extreme),
    "var": Derivative(lambda c, g: (_var_grad(c, g),), save=(0,)),
    "std": Derivative(_std, save=(0,), result=True),
    "norm": Derivative(_norm, save=(0,), result=lambda c: c.info["arg"] not in (0, 1),
                       name="LinalgVectorNormBackward0"),
    "logsumexp": Derivative(_logsumexp, save=(0,), result=True),
    "cumsum": Derivative(_cumsum),
    "cumprod": Derivative(_cumprod, save=(0,), result=True),
    "softmax": Derivative(_softmax, result=True),
    "log_softmax": Derivative(_log_softmax, result=True),
})
DERIVATIVES["cumsum_"] = DERIVATIVES["cumsum"]
DERIVATIVES["cumprod_"] = DERIVATIVES["cumprod"]
