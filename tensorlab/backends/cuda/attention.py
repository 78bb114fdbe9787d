"""CUDA attention primitives (the names of backends/cpu/attention.py): the fused
scaled_dot_product_attention forward and backward of kernels/attention.cu.

Operands (the front end, ops/attention.py, prepares them): q [B, Hq, L, E], k [B, Hk, S, E],
v [B, Hk, S, Ev], out / dout [B, Hq, L, Ev] contiguous, lse [B, Hq, L] float32 (float64 for float64); `mask` None or a
bool / float tensor of shape (*batch, Hq, L, S) with broadcast (zero) strides, read in place."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr

__all__ = ("attention_fwd", "attention_bwd")

_BM = _BN = 16  # the kernels' kBM / kBN
_THREADS = 128
# struct MaskArgs {int mode; int causal; long long ms_l; long long ms_s;}
_MASK_ARGS = np.dtype({"names": ["mode", "causal", "ms_l", "ms_s"],
                       "formats": [np.int32, np.int32, np.int64, np.int64]}, align=True)


def _ops(*tensors):
    ops = [K.operand(t) for t in tensors]
    dev = ops[0].buffer.device
    for op in ops:
        if op.buffer.device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"cuda:{dev} and cuda:{op.buffer.device}!")
        lay = op.layout
        if all(lay.shape):  # an empty operand reaches nothing
            K.check_bounds(op, sum((s - 1) * st for s, st in zip(lay.shape, lay.stride)))
    return ops, dev


def _mask_args(mask, is_causal, q_op):
    """(bool pointer, float pointer, MaskArgs, leading layout) for the kernels; unused pointers
    point at q (never read)."""
    rec = np.zeros((), _MASK_ARGS)
    rec["causal"] = int(bool(is_causal))
    if mask is None:
        return _ptr(q_op), _ptr(q_op), rec[()], K.strided_layout((1,), (0,), "long long")
    (m,), _ = _ops(mask)
    lay = m.layout
    rec["mode"] = 1 if m.dtype.name == "bool" else 2
    rec["ms_l"], rec["ms_s"] = lay.stride[-2], lay.stride[-1]
    lead = K.strided_layout(tuple(lay.shape[:-2]) or (1,), tuple(lay.stride[:-2]) or (0,), "long long")
    p = _ptr(m)
    return (p, _ptr(q_op), rec[()], lead) if rec["mode"] == 1 else (_ptr(q_op), p, rec[()], lead)


def _acc_scalar(x, q_op):
    """A value of the kernels' accumulation type (AccT<T>: double for double, else float)."""
    return np.float64(x) if q_op.dtype.name == "float64" else np.float32(x)


def _geometry(q, k, v):
    B, Hq, L, E = q.layout.shape
    Hk, S = k.layout.shape[1], k.layout.shape[2]
    Ev = v.layout.shape[3]
    return B, Hq, Hk, L, S, E, Ev


def attention_fwd(out, lse, q, k, v, mask, is_causal, scale):
    (o, ls, a, b, c), dev = _ops(out, lse, q, k, v)
    B, Hq, Hk, L, S, E, Ev = _geometry(a, b, c)
    if not (B * Hq * L):
        return
    bm, fm, margs, lead = _mask_args(mask, is_causal, a)
    K.launch("attention.cu", f"attention_fwd<{o.dtype.ctype}>", dev,
             (_ptr(o), _ptr(ls), _ptr(a), _ptr(b), _ptr(c), bm, fm, np.int64(L), np.int64(S), np.int32(E),
              np.int32(Ev), np.int32(Hq // Hk), np.int32(Hq), _acc_scalar(scale, a), margs, lead),
             grid=(B * Hq, -(-L // _BM)), block=_THREADS)


def attention_bwd(dq, dk, dv, dmask, dout, q, k, v, out, lse, mask, is_causal, scale):
    """dq, dk, dv (and dmask, the float mask's gradient [B, Hq, L, S], unless None) of the fused
    forward; delta = rowsum(dout * out) goes through a scratch like lse."""
    from ...ops._common import empty_tensor
    (gq, gk, gv, go, a, b, c, o, ls), dev = _ops(dq, dk, dv, dout, q, k, v, out, lse)
    B, Hq, Hk, L, S, E, Ev = _geometry(a, b, c)
    ct = a.dtype.ctype
    delta = empty_tensor(tuple(lse.shape), lse.dtype, lse.device)
    (dl,), _ = _ops(delta)
    rows = B * Hq * L
    if rows:
        K.launch("attention.cu", f"attention_bwd_delta<{ct}>", dev, (_ptr(dl), _ptr(go), _ptr(o), np.int64(rows),
                                                                     np.int32(Ev)), n=rows)
    bm, fm, margs, lead = _mask_args(mask, is_causal, a)
    common = (np.int64(L), np.int64(S), np.int32(E), np.int32(Ev), np.int32(Hq // Hk), np.int32(Hq),
              _acc_scalar(scale, a), margs, lead)
    if S and B * Hk:
        if dmask is not None:
            (gm,), _ = _ops(dmask)
            gmp, want = _ptr(gm), 1
        else:
            gmp, want = _ptr(gk), 0
        K.launch("attention.cu", f"attention_bwd_dkdv<{ct}>", dev,
                 (_ptr(gk), _ptr(gv), gmp, _ptr(a), _ptr(b), _ptr(c), _ptr(go), _ptr(ls), _ptr(dl), bm, fm)
                 + common + (np.int32(want),), grid=(B * Hk, -(-S // _BN)), block=_THREADS)
    if rows:
        K.launch("attention.cu", f"attention_bwd_dq<{ct}>", dev,
                 (_ptr(gq), _ptr(a), _ptr(b), _ptr(c), _ptr(go), _ptr(ls), _ptr(dl), bm, fm) + common,
                 grid=(B * Hq, -(-L // _BM)), block=_THREADS)
