"""Matrix products' derivatives (ops/linalg.py): matmul/mm/bmm/mv/dot and outer."""
from __future__ import annotations

from .derivatives import DERIVATIVES, Derivative, sum_to


# -- matrix products -------------------------------------------------------------------------------
def _matmul(ctx, g):
    """torch.matmul's rules: 1-D operands gain a dim that the result drops; batch dims broadcast
    (their gradient is summed back)."""
    sa, sb = ctx.shape(0), ctx.shape(1)
    s = list(g.shape)
    if len(sb) == 1:
        s.append(1)
    if len(sa) == 1:
        s.insert(len(s) - 1, 1)
    g1 = g.reshape(s)
    ga = gb = None
    if ctx.needs(0):
        b = ctx.saved(1)
        b1 = b.unsqueeze(-1) if len(sb) == 1 else b
        a1_shape = (1,) + tuple(sa) if len(sa) == 1 else tuple(sa)
        ga = _as_shape(sum_to(g1.matmul(b1.mT), a1_shape), sa)
    if ctx.needs(1):
        a = ctx.saved(0)
        a1 = a.unsqueeze(0) if len(sa) == 1 else a
        b1_shape = tuple(sb) + (1,) if len(sb) == 1 else tuple(sb)
        gb = _as_shape(sum_to(a1.mT.matmul(g1), b1_shape), sb)
    return ga, gb


def _as_shape(g, shape):
    """g reshaped to `shape` only where it differs: a fresh product stays a non-view, which
    AccumulateGrad stores as the .grad without a copy."""
    shape = tuple(shape)
    return g if tuple(g.shape) == shape else g.reshape(shape)


def _matmul_name(ctx):
    na, nb = len(ctx.shape(0)), len(ctx.shape(1))
    return {(2, 2): "MmBackward0", (1, 1): "DotBackward0", (2, 1): "MvBackward0",
            (3, 3): "BmmBackward0"}.get((na, nb), "MatmulBackward0")


def _outer(ctx, g):
    ga = g.mv(ctx.saved(1).to(g._dtype)) if ctx.needs(0) else None
    gb = g.t().mv(ctx.saved(0).to(g._dtype)) if ctx.needs(1) else None
    return ga, gb


_MM_SAVE = (lambda c: ([1] if c._needs[0] else []) + ([0] if c._needs[1] else []))
DERIVATIVES.update({
    "matmul": Derivative(_matmul, save=_MM_SAVE, name=_matmul_name),
    "mm": Derivative(_matmul, save=_MM_SAVE),
    "bmm": Derivative(_matmul, save=_MM_SAVE),
    "mv": Derivative(_matmul, save=_MM_SAVE),
    "dot": Derivative(_matmul, save=_MM_SAVE),
    "outer": Derivative(_outer, save=_MM_SAVE),
})
