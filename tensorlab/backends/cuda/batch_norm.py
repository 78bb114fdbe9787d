"""CUDA primitives of the fused batch norm (the names of backends/cpu/batch_norm.py), launching
kernels/batch_norm.cu. x / y / dy / dx are (N, C, S) tensors dense in one of two orders: contiguous
("rows") or channels innermost ("cols": channels_last inputs, and every S == 1 input). Statistics are
float32 (C,) vectors. Nothing here waits for the device; scratch is retired on the stream."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from . import launch as K
from .conv import _ptr
from .memory import retire, temp
from .norm import _index, _ops

__all__ = ("batch_norm_fwd", "batch_norm_bwd")

_ITEMS = 1024  # (channel tile, chunk) work items aimed at: several blocks per SM on an H100; a function of the shape


def _mode(op):
    """cols (channels innermost) or rows (contiguous) for a dense (N, C, S) operand."""
    n, c, s = op.layout.shape
    st = op.layout.stride
    if all(st[d] == want for d, want in enumerate((c * s, s, 1)) if op.layout.shape[d] > 1) and s > 1:
        return 0
    if all(st[d] == want for d, want in enumerate((s * c, 1, c)) if op.layout.shape[d] > 1):
        return 1
    if all(st[d] == want for d, want in enumerate((c * s, s, 1)) if op.layout.shape[d] > 1):
        return 0
    raise RuntimeError(f"batch_norm: expected a contiguous or channels-last (N, C, S) operand, got strides {st} "
                       f"for shape {op.layout.shape}")


def _geometry(n, c, s, cols):
    """(channel tiles, chunks per channel) of the reduction kernels."""
    width = 32 if cols else 1
    lanes = 256 // width
    tiles = -(-c // width)
    m = n * s
    parts = max(1, min(-(-_ITEMS // tiles), -(-m // (lanes * 4))))
    return tiles, parts


def _free(*ts):
    for t in ts:
        if t is not None:
            retire(t.buffer)


def batch_norm_fwd(y, save_mean, save_invstd, x, weight, bias, running_mean, running_var, training, momentum, eps):
    (yo, smo, sio, xo, wo, bo, rmo, rvo), dev = _ops(y, save_mean, save_invstd, x, weight, bias, running_mean,
                                                     running_var)
    n, c, s = xo.layout.shape
    if not (n and c and s):
        return
    cols = _mode(xo)
    if _mode(yo) != cols:
        raise RuntimeError("batch_norm: the output must have the input's memory format")
    ct = xo.dtype.ctype
    params = next((o for o in (wo, bo, rmo, rvo) if o is not None), None)
    pt = params.dtype.ctype if params is not None else ct
    tiles, parts = _geometry(n, c, s, cols)
    it = _index(n * c * s, c * parts * 3)
    i = K.index_scalar
    part = var_u = None
    try:
        var_u = temp((c,), dtypes.float32, dev)
        if training:
            part = temp((c, parts, 3), dtypes.float32, dev)
            K.launch("batch_norm.cu", f"batch_norm_stats<{ct}, {it}>", dev,
                     (_ptr(part), _ptr(xo), i(n, it), i(c, it), i(s, it), i(parts, it), np.int32(cols)),
                     grid=(min(tiles * parts, 65535),))
        K.launch("batch_norm.cu", f"batch_norm_finalize<{pt}, {it}>", dev,
                 (_ptr(smo), _ptr(sio), _ptr(var_u), _ptr(part or var_u), _ptr(rmo or var_u), _ptr(rvo or var_u),
                  i(c, it), i(parts, it), np.float32(eps), np.int32(bool(training))), n=c)
        update = (1 if rmo is not None else 0) | (2 if rvo is not None else 0) if training else 0
        K.launch("batch_norm.cu", f"batch_norm_apply<{ct}, {pt}, {it}>", dev,
                 (_ptr(yo), _ptr(rmo or var_u), _ptr(rvo or var_u), _ptr(xo), _ptr(smo), _ptr(sio), _ptr(var_u),
                  _ptr(wo or var_u), _ptr(bo or var_u), i(n, it), K.divisor(c, it), K.divisor(s, it),
                  np.float32(momentum),
                  np.int32(cols), np.int32(wo is not None), np.int32(bo is not None), np.int32(update)),
                 n=n * c * s)
    finally:
        _free(part, var_u)


def batch_norm_bwd(grad_input, grad_weight, grad_bias, grad_output, x, save_mean, save_invstd, weight, training):
    (gi, gw, gb, go, xo, smo, sio, wo), dev = _ops(grad_input, grad_weight, grad_bias, grad_output, x, save_mean,
                                                   save_invstd, weight)
    n, c, s = xo.layout.shape
    if not (n and c and s):
        return
    cols = _mode(xo)
    if _mode(go) != cols or (gi is not None and _mode(gi) != cols):
        raise RuntimeError("batch_norm_backward: grad_output and grad_input must have the input's memory format")
    ct = xo.dtype.ctype
    params = next((o for o in (gw, gb, wo) if o is not None), None)
    pt = params.dtype.ctype if params is not None else ct
    tiles, parts = _geometry(n, c, s, cols)
    it = _index(n * c * s, c * parts * 2)
    i = K.index_scalar
    want_sums = gw is not None or gb is not None or (gi is not None and training)
    part = sums = None
    try:
        if want_sums:
            part = temp((c, parts, 2), dtypes.float32, dev)
            sums = temp((c, 2), dtypes.float32, dev)
            K.launch("batch_norm.cu", f"batch_norm_bwd_reduce<{ct}, {it}>", dev,
                     (_ptr(part), _ptr(go), _ptr(xo), _ptr(smo), i(n, it), i(c, it), i(s, it), i(parts, it),
                      np.int32(cols)), grid=(min(tiles * parts, 65535),))
            K.launch("batch_norm.cu", f"batch_norm_bwd_finalize<{pt}, {it}>", dev,
                     (_ptr(gw or sums), _ptr(gb or sums), _ptr(sums), _ptr(part), _ptr(sio), i(c, it), i(parts, it),
                      np.int32(gw is not None), np.int32(gb is not None)), n=c)
        if gi is not None:
            K.launch("batch_norm.cu", f"batch_norm_bwd_dx<{ct}, {pt}, {it}>", dev,
                     (_ptr(gi), _ptr(go), _ptr(xo), _ptr(smo), _ptr(sio), _ptr(sums or sio), _ptr(wo or sio),
                      i(n, it), K.divisor(c, it), K.divisor(s, it), np.int32(cols), np.int32(wo is not None),
                      np.int32(bool(training))), n=n * c * s)
    finally:
        _free(part, sums)
