"""CUDA primitives of the fused normalization and embedding-gradient ops (the names of
backends/cpu/norm.py): kernels/norm.cu (layer norm / RMSNorm forward, backward, and the fixed-order
sum of the backward's per-block partials of dweight/dbias) and kernels/embedding.cu (the segmented
sum over sorted indices). Operands are contiguous; nothing here waits for the device."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from . import launch as K
from .conv import _ptr
from .memory import retire, temp

__all__ = ("layer_norm_fwd", "layer_norm_bwd", "embedding_bwd")

_PARTS = 512  # blocks of the layer-norm backward (about 4 per SM on an H100; a fixed split, so sums are reproducible)


def _ops(*ts):
    ops = [None if t is None else K.operand(t) for t in ts]
    dev = None
    for op in ops:
        if op is None:
            continue
        if dev is None:
            dev = op.buffer.device
        elif op.buffer.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{dev} and cuda:{op.buffer.device}!")
        n = 1
        for s in op.layout.shape:
            n *= s
        if n:
            K.check_bounds(op, sum((d - 1) * st for d, st in zip(op.layout.shape, op.layout.stride)))
    return ops, dev


def _index(*counts):
    if K.wide_forced() or max(counts) + K.MAX_GRID_THREADS > K.INT_MAX:
        return "long long"
    return "int"


def layer_norm_fwd(y, mean, rstd, x, weight, bias, eps, rms):
    (yo, mo, ro, xo, wo, bo), dev = _ops(y, mean, rstd, x, weight, bias)
    rows, length = xo.layout.shape
    if not rows or not length:
        return
    it = _index(rows * length)
    i = K.index_scalar
    K.launch("norm.cu", f"layer_norm_fwd<{xo.dtype.ctype}, {it}>", dev,
             (_ptr(yo), _ptr(mo), _ptr(ro), _ptr(xo), _ptr(wo or xo), _ptr(bo or xo), i(rows, it), i(length, it),
              np.float32(eps), np.int32(bool(rms)), np.int32(wo is not None), np.int32(bo is not None)),
             grid=(min(rows, 65535),))


def layer_norm_bwd(grad_input, grad_weight, grad_bias, grad_output, x, mean, rstd, weight, rms):
    (gi, gw, gb, go, xo, mo, ro, wo), dev = _ops(grad_input, grad_weight, grad_bias, grad_output, x, mean, rstd,
                                                 weight)
    rows, length = xo.layout.shape
    if not length:
        return
    ct = xo.dtype.ctype
    i = K.index_scalar
    want_partials = gw is not None or gb is not None
    parts = max(1, min(rows, _PARTS))
    it = _index(max(rows, parts) * length)
    part_w = part_b = None
    try:
        if want_partials:
            part_w = temp((parts, length), dtypes.float32, dev)
            part_b = temp((parts, length), dtypes.float32, dev)
        scratch = part_w or mo
        if want_partials or (gi is not None and rows):  # with no rows the kernel only zeroes the partials
            K.launch("norm.cu", f"layer_norm_bwd<{ct}, {it}>", dev,
                     (_ptr(gi or go), _ptr(scratch), _ptr(part_b or mo), _ptr(go), _ptr(xo), _ptr(mo), _ptr(ro),
                      _ptr(wo or xo), i(rows, it), i(length, it), np.int32(bool(rms)), np.int32(wo is not None),
                      np.int32(gi is not None), np.int32(want_partials)), grid=(parts,))
        if want_partials:
            K.launch("norm.cu", f"layer_norm_bwd_reduce<{ct}, {it}>", dev,
                     (_ptr(gw or gb), _ptr(gb or gw), _ptr(part_w), _ptr(part_b), i(parts, it), i(length, it),
                      np.int32(gw is not None), np.int32(gb is not None)), n=length)
    finally:
        for t in (part_w, part_b):
            if t is not None:
                retire(t.buffer)


def embedding_bwd(grad_weight, grad_output, sorted_indices, order, padding_idx, scale_grad_by_freq):
    """Zero-fill grad_weight, then one thread per (sorted position, column) sums each segment."""
    from .memory import fill
    fill(grad_weight, 0)
    (gw, go, si, oi), dev = _ops(grad_weight, grad_output, sorted_indices, order)
    num, dim = gw.layout.shape
    n_idx = si.layout.shape[0]
    n = n_idx * dim
    if not n:
        return
    it = _index(n, num * dim)
    i = K.index_scalar
    K.launch("embedding.cu", f"embedding_bwd<{gw.dtype.ctype}, {it}>", dev,
             (_ptr(gw), _ptr(go), _ptr(si), _ptr(oi), i(num, it), K.divisor(dim, it), i(n_idx, it),
              np.int64(-1 if padding_idx is None else padding_idx), np.int32(bool(scale_grad_by_freq))), n=n)
