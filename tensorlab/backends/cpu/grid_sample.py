"""grid_sample as two primitives (backends/cuda/grid_sample.py's names, kernels/grid_sample.cu's
formulas), vectorized over the output points with NumPy: each point's taps (flat positions, inside
flags, weights and the weights' derivatives per coordinate) are computed once for every channel;
the input's gradient is a scatter-add of the taps (np.add.at), the grid's the sum over channels of
grad_out * value * the weight's derivative times d(source)/d(grid). float16/bfloat16 compute in
float32 and return the input's gradient in float32, as the CUDA accumulator does."""
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
    one = t.dtype.type(1)
    x = (t + one, t, one - t, 2 - t)
    w = [((a * x[0] - 5 * a) * x[0] + 8 * a) * x[0] - 4 * a, ((a + 2) * x[1] - (a + 3)) * x[1] * x[1] + one,
         ((a + 2) * x[2] - (a + 3)) * x[2] * x[2] + one, ((a * x[3] - 5 * a) * x[3] + 8 * a) * x[3] - 4 * a]
    dw = [(3 * a * x[0] - 10 * a) * x[0] + 8 * a, (3 * (a + 2) * x[1] - 2 * (a + 3)) * x[1],
          -((3 * (a + 2) * x[2] - 2 * (a + 3)) * x[2]), -((3 * a * x[3] - 10 * a) * x[3] + 8 * a)]
    return w, dw


def _taps(g, sizes, mode, padding, align):
    """g (N, P, nd) in the compute dtype; sizes per coordinate (W, H[, D]). Returns the taps as
    [(flat position (N, P) int64, inside (N, P) bool, weight, [d weight / d src_d])] and the
    per-coordinate factors d src / d grid."""
    nd = g.shape[-1]
    strides = [int(np.prod(sizes[:d])) for d in range(nd)]
    taps = []
    with np.errstate(all="ignore"):
        if mode == 2:
            base, wv, dwv, mult = [], [], [], []
            for d in range(2):
                u, m = _unnormalize(g[..., d], sizes[d], align, True)
                f = np.floor(u)
                w, dw = _cubic(u - f)
                base.append(f), wv.append(w), dwv.append(dw), mult.append(np.broadcast_to(m, f.shape))
            for j, i in itertools.product(range(4), range(4)):
                off, inside = 0, True
                for d, k in ((0, i), (1, j)):
                    x = _pad(base[d] + (k - 1), 1, sizes[d], padding, align)[0]
                    p = np.where(np.isfinite(x), x, -1).astype(np.int64)
                    inside = inside & (x > -1) & (p >= 0) & (p < sizes[d])
                    off = off + p * strides[d]
                taps.append((np.where(inside, off, 0), inside, wv[0][i] * wv[1][j],
                             [dwv[0][i] * wv[1][j], wv[0][i] * dwv[1][j]]))
            return taps, mult
        src, mult = [], []
        for d in range(nd):
            u, m = _unnormalize(g[..., d], sizes[d], align, nd == 2)
            s, m = _pad(u, m, sizes[d], padding, align)
            src.append(s), mult.append(m)
        if mode == 1:
            off, inside = 0, True
            for d in range(nd):
                r = np.rint(src[d])
                inside = inside & (r > -1) & (r < sizes[d])
                off = off + np.where(inside, r, 0).astype(np.int64) * strides[d]
            zero = np.zeros_like(src[0])
            return [(np.where(inside, off, 0), inside, np.ones_like(src[0]), [zero] * nd)], mult
        lo = [np.floor(s) for s in src]
        fr = [s - f for s, f in zip(src, lo)]
        for k in range(1 << nd):
            bits = [(k >> d) & 1 for d in range(nd)]
            off, inside, w = 0, True, 1
            for d in range(nd):
                p = lo[d] + bits[d]
                ok = (p >= 0) & (p < sizes[d])
                inside = inside & ok
                off = off + np.where(ok, p, 0).astype(np.int64) * strides[d]
                w = w * (fr[d] if bits[d] else 1 - fr[d])
            dw = []
            for d in range(nd):
                p = 1 if bits[d] else -1
                for e in range(nd):
                    if e != d:
                        p = p * (fr[e] if bits[e] else 1 - fr[e])
                dw.append(p)
            taps.append((np.where(inside, off, 0), inside, w, dw))
    return taps, mult


def _prepare(input, grid):
    x, g = array(input), array(grid)
    acc = _acc(x.dtype)
    N, C = x.shape[:2]
    nd = g.shape[-1]
    sizes = tuple(x.shape[2:])[::-1]
    flat = x.reshape(N, C, -1).astype(acc, copy=False)
    gp = g.reshape(N, -1, nd).astype(acc, copy=False)
    return x, g, acc, N, C, nd, sizes, flat, gp


def grid_sampler_fwd(out, input, grid, mode, padding, align_corners):
    """out (N, C, *grid's spatial) = input sampled at grid (all contiguous, one dtype)."""
    _faults.hit("launch")
    x, g, acc, N, C, nd, sizes, flat, gp = _prepare(input, grid)
    o = array(out)
    res = np.zeros((N, C, gp.shape[1]), acc)
    if gp.shape[1] and flat.shape[2]:
        taps, _ = _taps(gp, sizes, mode, padding, bool(align_corners))
        rows = np.arange(N)[:, None, None]
        chans = np.arange(C)[None, :, None]
        with np.errstate(all="ignore"):
            for off, inside, w, _ in taps:
                v = flat[rows, chans, off[:, None, :]]
                res += np.where(inside[:, None, :], w[:, None, :] * v, 0)
    np.copyto(o, res.reshape(o.shape).astype(o.dtype))


def grid_sampler_bwd(grad_input, grad_grid, grad_out, input, grid, mode, padding, align_corners):
    """grad_input (input's shape; float32 for a float16/bfloat16 input, else its dtype) and
    grad_grid (grid's shape and dtype); either may be None."""
    _faults.hit("launch")
    x, g, acc, N, C, nd, sizes, flat, gp = _prepare(input, grid)
    go = array(grad_out).reshape(N, C, -1).astype(acc, copy=False)
    P, Q = gp.shape[1], flat.shape[2]
    gi = np.zeros((N, C, Q), acc)
    gg = np.zeros((N, P, nd), acc)
    if P and Q:
        taps, mult = _taps(gp, sizes, mode, padding, bool(align_corners))
        rows = np.arange(N)[:, None, None]
        chans = np.arange(C)[None, :, None]
        with np.errstate(all="ignore"):
            for off, inside, w, dw in taps:
                contrib = np.where(inside[:, None, :], w[:, None, :] * go, 0)
                if grad_input is not None:
                    np.add.at(gi, (np.broadcast_to(rows, contrib.shape), np.broadcast_to(chans, contrib.shape),
                                   np.broadcast_to(off[:, None, :], contrib.shape)), contrib)
                if grad_grid is not None and mode != 1:
                    v = np.where(inside[:, None, :], flat[rows, chans, off[:, None, :]] * go, 0).sum(1)
                    for d in range(nd):
                        gg[..., d] += v * dw[d]
            for d in range(nd):
                gg[..., d] *= mult[d]
    if grad_input is not None:
        t = array(grad_input)
        np.copyto(t, gi.reshape(t.shape).astype(t.dtype))
    if grad_grid is not None:
        t = array(grad_grid)
        np.copyto(t, gg.reshape(t.shape).astype(t.dtype))
