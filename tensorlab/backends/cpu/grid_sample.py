"""grid_sample as two primitives (backends/cuda/grid_sample.py's names, kernels/grid_sample.cu's
formulas), vectorized over the output points with NumPy: each point's taps (flat positions, inside
flags, weights and the weights' derivatives per coordinate) are computed once for every channel;
the input's gradient is a scatter-add of the taps (np.add.at), the grid's the sum over channels of
grad_out * value * the weight's derivative times d(source)/d(grid). The coordinates, weights and the forward's sums
are computed in the tensor's dtype (NumPy rounds float16/bfloat16 after every operation, as torch's
kernels do); the backward accumulates in float32 for float16/bfloat16 and returns the input's
gradient in float32, as the CUDA accumulator does.""" 
from __future__ import annotations

import itertools

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("grid_sampler_fwd", "grid_sampler_bwd")


def _acc(dt):
    return np.float64 if dt == np.float64 else np.float32


def _unnormalize(c, size, align, factored):
    n = c.dtype.type(size)
    one, two = c.dtype.type(1), c.dtype.type(2)
    if factored:
        if align:
            return (c + one) * ((n - one) / two), (n - one) / two
        return (c + one) * (n / two) - c.dtype.type(0.5), n / two
    if align:
        return (c + one) / two * (n - one), (n - one) / two
    return ((c + one) * n - one) / two, n / two


def _pad(src, mult, size, padding, align):
    """(padded coordinate, d padded / d grid) arrays; mult is the incoming derivative."""
    t = src.dtype.type
    mult = np.broadcast_to(np.asarray(mult, src.dtype), src.shape).copy()
    if padding == 0:
        return src, mult
    if padding == 2:
        lo2, hi2 = (0, 2 * (size - 1)) if align else (-1, 2 * size - 1)
        if lo2 == hi2:
            return np.zeros_like(src), np.zeros_like(src)
        lo, span = t(lo2 / 2), t((hi2 - lo2) / 2)
        v = src - lo
        sign = np.where(v < 0, t(-1), t(1))
        v = np.abs(v)
        extra = np.fmod(v, span)
        even = np.fmod(np.floor(v / span), t(2)) == 0
        src = np.where(even, extra + lo, span - extra + lo)
        mult = mult * np.where(even, sign, -sign)
    top = t(size - 1)
    low, high = src <= 0, src >= top
    src = np.where(low, t(0), np.where(high, top, src))
    mult = np.where(low | high, t(0), mult)
    return src, mult


def _cubic(t):
    a = t.dtype.type(-0.75)
    x0, x1, x2 = t + 1, t, 1 - t
    x3 = x2 + 1
    w = [((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a, ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1,
         ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1, ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a]
    dw = [(3 * a * x0 - 10 * a) * x0 + 8 * a, (3 * (a + 2) * x1 - 2 * (a + 3)) * x1,
          -((3 * (a + 2) * x2 - 2 * (a + 3)) * x2), -((3 * a * x3 - 10 * a) * x3 + 8 * a)]
    return w, dw


class _Taps:
    """One output point's taps, vectorized over the points: per tap the flat position (0 where
    outside), the inside flag, the weight in the math dtype (forward) and, in the accumulation
    dtype, the weight and its derivative per source coordinate (backward); `mult` per coordinate
    d source / d grid; bicubic keeps its per-coordinate weights `cw` (the forward sums row by row)."""

    def __init__(self, g, sizes, mode, padding, align, acc):
        nd = g.shape[-1]
        strides = [int(np.prod(sizes[:d])) for d in range(nd)]
        self.pos, self.inside, self.w, self.w_acc, self.dw = [], [], [], [], []
        self.cw = None

        def add(off, inside, w, w_acc, dw):
            self.pos.append(np.where(inside, off, 0)), self.inside.append(inside)
            self.w.append(w), self.w_acc.append(w_acc), self.dw.append(dw)

        with np.errstate(all="ignore"):
            if mode == 2:
                base, cw, cdw, self.mult = [], [], [], []
                for d in range(2):
                    u, m = _unnormalize(g[..., d], sizes[d], align, True)
                    f = np.floor(u)
                    w, dw = _cubic(u - f)
                    base.append(f), cw.append(w), cdw.append(dw), self.mult.append(np.broadcast_to(m, f.shape))
                self.cw = cw
                for j, i in itertools.product(range(4), range(4)):
                    off, inside = 0, True
                    for d, k in ((0, i), (1, j)):
                        x = _pad(base[d] + (k - 1), 1, sizes[d], padding, align)[0].astype(np.float32)
                        inside = inside & (x > -1) & (x < sizes[d])
                        off = off + np.where(inside, x, 0).astype(np.int64) * strides[d]
                    wx, wy, dx, dy = (v.astype(acc) for v in (cw[0][i], cw[1][j], cdw[0][i], cdw[1][j]))
                    add(off, inside, None, wx * wy, [dx * wy, wx * dy])
                return
            src, self.mult = [], []
            for d in range(nd):
                u, m = _unnormalize(g[..., d], sizes[d], align, nd == 2)
                s, m = _pad(u, m, sizes[d], padding, align)
                src.append(s), self.mult.append(m)
            if mode == 1:
                off, inside = 0, True
                for d in range(nd):
                    r = np.rint(src[d]).astype(np.float32)
                    inside = inside & (r > -1) & (r < sizes[d])
                    off = off + np.where(inside, r, 0).astype(np.int64) * strides[d]
                one = np.ones(src[0].shape, src[0].dtype)
                add(off, inside, one, one.astype(acc), [np.zeros(src[0].shape, acc)] * nd)
                return
            lo = [np.floor(s) for s in src]
            factors = [((f + 1) - s, s - f) for s, f in zip(src, lo)]  # torch's form: (lower, upper) weights
            for k in range(1 << nd):
                bits = [(k >> d) & 1 for d in range(nd)]
                off, inside, w = 0, True, 1
                for d in range(nd):
                    p = lo[d].astype(np.float32) + bits[d]
                    inside = inside & (p >= 0) & (p < sizes[d])
                    off = off + np.where(inside, p, 0).astype(np.int64) * strides[d]
                    w = w * factors[d][bits[d]]
                dw = []
                for d in range(nd):
                    p = 1 if bits[d] else -1
                    for e in range(nd):
                        if e != d:
                            p = p * factors[e][bits[e]].astype(acc)
                    dw.append(np.broadcast_to(np.asarray(p, acc), src[0].shape))
                add(off, inside, w, w.astype(acc), dw)


def _prepare(input, grid):
    x, g = array(input), array(grid)
    acc = _acc(x.dtype)
    N, C = x.shape[:2]
    nd = g.shape[-1]
    sizes = tuple(x.shape[2:])[::-1]
    return x, acc, N, C, nd, sizes, x.reshape(N, C, -1), g.reshape(N, -1, nd)


def grid_sampler_fwd(out, input, grid, mode, padding, align_corners):
    """out (N, C, *grid's spatial) = input sampled at grid (all contiguous, one dtype); the sums in the
    tensor's dtype, as torch's kernels (and kernels/grid_sample.cu) add them."""
    _faults.hit("launch")
    x, acc, N, C, nd, sizes, flat, gp = _prepare(input, grid)
    o = array(out)
    res = np.zeros((N, C, gp.shape[1]), x.dtype)
    if gp.shape[1] and flat.shape[2]:
        tp = _Taps(gp, sizes, mode, padding, bool(align_corners), acc)
        rows = np.arange(N)[:, None, None]
        chans = np.arange(C)[None, :, None]

        def read(k):
            return np.where(tp.inside[k][:, None, :], flat[rows, chans, tp.pos[k][:, None, :]], 0)

        with np.errstate(all="ignore"):
            if mode == 2:
                for j in range(4):
                    row = np.zeros_like(res)
                    for i in range(4):
                        row = row + read(j * 4 + i) * tp.cw[0][i][:, None, :]
                    res = res + row * tp.cw[1][j][:, None, :]
            else:
                for k in range(len(tp.pos)):
                    res = res + np.where(tp.inside[k][:, None, :], read(k) * tp.w[k][:, None, :], 0)
    np.copyto(o, res.reshape(o.shape).astype(o.dtype))


def grid_sampler_bwd(grad_input, grad_grid, grad_out, input, grid, mode, padding, align_corners):
    """grad_input (input's shape; float32 for a float16/bfloat16 input, else its dtype) and
    grad_grid (grid's shape and dtype); either may be None."""
    _faults.hit("launch")
    x, acc, N, C, nd, sizes, flat, gp = _prepare(input, grid)
    flat = flat.astype(acc, copy=False)
    go = array(grad_out).reshape(N, C, -1).astype(acc, copy=False)
    P, Q = gp.shape[1], flat.shape[2]
    gi = np.zeros((N, C, Q), acc)
    gg = np.zeros((N, P, nd), acc)
    if P and Q:
        tp = _Taps(gp, sizes, mode, padding, bool(align_corners), acc)
        rows = np.arange(N)[:, None, None]
        chans = np.arange(C)[None, :, None]
        with np.errstate(all="ignore"):
            for off, inside, w, dw in zip(tp.pos, tp.inside, tp.w_acc, tp.dw):
                contrib = np.where(inside[:, None, :], w[:, None, :] * go, 0)
                if grad_input is not None:
                    np.add.at(gi, (np.broadcast_to(rows, contrib.shape), np.broadcast_to(chans, contrib.shape),
                                   np.broadcast_to(off[:, None, :], contrib.shape)), contrib)
                if grad_grid is not None and mode != 1:
                    v = np.where(inside[:, None, :], flat[rows, chans, off[:, None, :]] * go, 0).sum(1)
                    for d in range(nd):
                        gg[..., d] += v * dw[d]
            for d in range(nd):
                gg[..., d] *= np.asarray(tp.mult[d]).astype(acc)
    if grad_input is not None:
        t = array(grad_input)
        np.copyto(t, gi.reshape(t.shape).astype(t.dtype))
    if grad_grid is not None:
        t = array(grad_grid)
        np.copyto(t, gg.reshape(t.shape).astype(t.dtype))
