"""CPU primitives of the fused normalization and embedding-gradient ops (the names of
backends/cuda/norm.py): the same math as kernels/norm.cu and kernels/embedding.cu in NumPy.

layer_norm_fwd / layer_norm_bwd take a contiguous (rows, len) input; statistics and sums are computed
in float32 (float16/bfloat16/float32 inputs), mean and rstd are float32 (rows,) vectors (RMSNorm: mean
0, rstd = 1 / sqrt(mean(x^2) + eps)). embedding_bwd sums the grad rows of each index over the sorted
indices (a segmented sum in sorted order), zeroes the padding row and optionally divides by the count."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
from .elementwise import row_buffered
from .memory import array
from .reduction import HALF

__all__ = ("layer_norm_fwd", "layer_norm_bwd", "embedding_bwd")

_F32 = np.float32


def _f32(t):
    return array(t).astype(_F32, copy=False)


def layer_norm_fwd(y, mean, rstd, x, weight, bias, eps, rms):
    """A large input goes through in blocks of whole rows (about parallel.BLOCK_BYTES each, a
    fixed function of the shape) on the CPU pool: every row is computed exactly as alone, and
    its temporaries stay in cache."""
    _faults.hit("launch")
    xa, ya, ma, ra = array(x), array(y), array(mean), array(rstd)
    w = None if weight is None else _f32(weight)
    b = None if bias is None else _f32(bias)
    if xa.size < _par.elem_min or xa.ndim != 2:
        row_buffered(xa, _ln_rows, ya, ma, ra, xa, w, b, eps, rms)
        return
    pieces = _par.row_blocks(xa.shape[0], xa.shape[1] * 4)

    def task(i):
        s, e = pieces[i]
        row_buffered(xa[s:e], _ln_rows, ya[s:e], ma[s:e], ra[s:e], xa[s:e], w, b, eps, rms)
    _par.run(len(pieces), task)


def _row_sums(a):
    return _par.row_sums(a.astype(_F32, copy=False))


def _ln_rows(yo, mo, ro, xa, w, b, eps, rms):
    a = xa.astype(_F32, copy=False)
    n = _F32(a.shape[1])
    if rms:
        mu = np.zeros(a.shape[0], _F32)
        var = _row_sums(a * a) / n
        d = a  # a - 0 is a, bit for bit (-0.0 - 0.0 is -0.0); never written: it may be x itself
    else:
        mu = _row_sums(a) / n
        d = a - mu[:, None]
        var = _row_sums(d * d) / n
    r = var
    r += _F32(eps)
    np.sqrt(r, out=r)
    np.divide(_F32(1), r, out=r)
    if yo.dtype == _F32 and not np.may_share_memory(yo, xa):
        out = yo  # computed in the output's own memory
    else:
        out = d if d is not a else None
    out = np.multiply(d, r[:, None], out=out)
    if w is not None:
        out *= w
    if b is not None:
        out += b
    if out is not yo:
        np.copyto(yo, out.astype(yo.dtype, copy=False))
    np.copyto(mo, mu)
    np.copyto(ro, r)


def layer_norm_bwd(grad_input, grad_weight, grad_bias, grad_output, x, mean, rstd, weight, rms):
    """dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat)) (RMSNorm: without the first mean);
    dweight = sum over rows of dy * xhat, dbias = sum over rows of dy. A large input goes
    through in row blocks on the CPU pool (a fixed blocking by shape); dweight/dbias add the
    blocks' column sums in block order, so the result does not depend on the thread count."""
    _faults.hit("launch")
    ga, xa, ma, ra = array(grad_output), array(x), array(mean), array(rstd)
    w = None if weight is None else _f32(weight)
    gi = None if grad_input is None else array(grad_input)
    want_w, want_b = grad_weight is not None, grad_bias is not None
    if ga.size < _par.elem_min or ga.ndim != 2:
        pw, pb = row_buffered(ga, _ln_bwd_rows, gi, ga, xa, ma, ra, w, rms, want_w, want_b)
    else:
        pieces = _par.row_blocks(ga.shape[0], ga.shape[1] * 4)
        parts = [None] * len(pieces)

        def task(i):
            s, e = pieces[i]
            parts[i] = row_buffered(ga[s:e], _ln_bwd_rows, None if gi is None else gi[s:e], ga[s:e], xa[s:e],
                                    ma[s:e], ra[s:e], w, rms, want_w, want_b)
        _par.run(len(pieces), task)
        pw = np.sum(np.stack([p[0] for p in parts]), axis=0, dtype=_F32) if want_w else None
        pb = np.sum(np.stack([p[1] for p in parts]), axis=0, dtype=_F32) if want_b else None
    if want_w:
        gwt = array(grad_weight)
        np.copyto(gwt, pw.astype(gwt.dtype))
    if want_b:
        gb = array(grad_bias)
        np.copyto(gb, pb.astype(gb.dtype))


def _ln_bwd_rows(gi, ga, xa, ma, ra, w, rms, want_w, want_b):
    """grad_input of these rows (written into gi) and their column sums for dweight and dbias."""
    g = ga.astype(_F32, copy=False)
    r = ra[:, None]
    xh = xa.astype(_F32, copy=False) - ma[:, None]
    xh *= r
    if gi is not None:
        gw = g * w if w is not None else g
        n = _F32(g.shape[1])
        out = gi if gi.dtype == _F32 and gi.flags.c_contiguous and not (
            np.may_share_memory(gi, g) or np.may_share_memory(gi, xa)) else np.empty(g.shape, _F32)
        np.multiply(gw, xh, out=out)
        mb = _row_sums(out)
        mb /= n
        np.multiply(xh, mb[:, None], out=out)
        if rms:
            np.subtract(gw, out, out=out)
        else:  # (gw - mean(gw)) - xhat * mean(gw xhat), in this order
            mean_a = _row_sums(gw)
            mean_a /= n
            np.subtract(gw - mean_a[:, None], out, out=out)
        out *= r
        if out is not gi:
            np.copyto(gi, out.astype(gi.dtype, copy=False))
    return (_par.col_sums(np.multiply(g, xh, out=xh)) if want_w else None,
            _par.col_sums(g) if want_b else None)


def embedding_bwd(grad_weight, grad_output, sorted_indices, order, padding_idx, scale_grad_by_freq):
    """grad_weight[k] = sum of grad_output's rows whose index is k (in sorted, stable order);
    grad_output: contiguous (n, dim); sorted_indices / order: int64 (n,), the sort's values and positions."""
    _faults.hit("launch")
    gw = array(grad_weight)
    acc = _F32 if gw.dtype in HALF else gw.dtype
    out = np.zeros(gw.shape, acc)
    s = array(sorted_indices)
    if s.size:
        rows = array(grad_output)[array(order)].astype(acc, copy=False)
        starts = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))
        sums = np.add.reduceat(rows, starts, axis=0)
        if scale_grad_by_freq:
            counts = np.diff(np.concatenate((starts, [s.size])))
            sums = sums / counts.astype(acc)[:, None]
        keys = s[starts]
        inside = (keys >= 0) & (keys < gw.shape[0])  # as the kernel: never write outside grad_weight
        out[keys[inside]] = sums[inside]
        if padding_idx >= 0:
            out[padding_idx] = 0
    np.copyto(gw, out.astype(gw.dtype))
