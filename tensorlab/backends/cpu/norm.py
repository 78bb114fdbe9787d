"""CPU primitives of the fused normalization and embedding-gradient ops (the names of
backends/cuda/norm.py): the same math as kernels/norm.cu and kernels/embedding.cu in NumPy.

layer_norm_fwd / layer_norm_bwd take a contiguous (rows, len) input; statistics and sums are computed
in float32 (float16/bfloat16/float32 inputs), mean and rstd are float32 (rows,) vectors (RMSNorm: mean
0, rstd = 1 / sqrt(mean(x^2) + eps)). embedding_bwd sums the grad rows of each index over the sorted
indices (a segmented sum in sorted order), zeroes the padding row and optionally divides by the count."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array
from .reduction import HALF

__all__ = ("layer_norm_fwd", "layer_norm_bwd", "embedding_bwd")

_F32 = np.float32


def _f32(t):
    return array(t).astype(_F32, copy=False)


def layer_norm_fwd(y, mean, rstd, x, weight, bias, eps, rms):
    _faults.hit("launch")
    a = _f32(x)
    if rms:
        mu = np.zeros(a.shape[0], _F32)
        var = np.mean(a * a, axis=1, dtype=_F32)
    else:
        mu = np.mean(a, axis=1, dtype=_F32)
        d = a - mu[:, None]
        var = np.mean(d * d, axis=1, dtype=_F32)
    r = (_F32(1) / np.sqrt(var + _F32(eps))).astype(_F32)
    out = (a - mu[:, None]) * r[:, None]
    if weight is not None:
        out = out * _f32(weight)
    if bias is not None:
        out = out + _f32(bias)
    yo = array(y)
    np.copyto(yo, out.astype(yo.dtype))
    np.copyto(array(mean), mu)
    np.copyto(array(rstd), r)


def layer_norm_bwd(grad_input, grad_weight, grad_bias, grad_output, x, mean, rstd, weight, rms):
    """dx = rstd * (dy*w - mean(dy*w) - xhat * mean(dy*w*xhat)) (RMSNorm: without the first mean);
    dweight = sum over rows of dy * xhat, dbias = sum over rows of dy."""
    _faults.hit("launch")
    g = _f32(grad_output)
    r = array(rstd)[:, None]
    xh = (_f32(x) - array(mean)[:, None]) * r
    if grad_input is not None:
        gw = g * _f32(weight) if weight is not None else g
        n = _F32(g.shape[1])
        ma = _F32(0) if rms else np.sum(gw, axis=1, dtype=_F32, keepdims=True) / n
        mb = np.sum(gw * xh, axis=1, dtype=_F32, keepdims=True) / n
        gi = array(grad_input)
        np.copyto(gi, (r * (gw - ma - xh * mb)).astype(gi.dtype))
    if grad_weight is not None:
        gwt = array(grad_weight)
        np.copyto(gwt, np.sum(g * xh, axis=0, dtype=_F32).astype(gwt.dtype))
    if grad_bias is not None:
        gb = array(grad_bias)
        np.copyto(gb, np.sum(g, axis=0, dtype=_F32).astype(gb.dtype))


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
