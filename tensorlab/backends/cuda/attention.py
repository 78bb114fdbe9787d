"""CUDA attention primitives (the names of backends/cpu/attention.py): the fused
scaled_dot_product_attention forward and backward of kernels/attention.cu: tensor-core kernels
(kernels/tensorlab/flash_attention.cuh) for float16 / bfloat16 with head dims up to 256, the scalar
kernels for float32 / float64.

Operands (the front end, ops/attention.py, prepares them): q [B, Hq, L, E], k [B, Hk, S, E],
v [B, Hk, S, Ev], out / dout [B, Hq, L, Ev] contiguous, lse [B, Hq, L] float32 (float64 for float64); `mask` None or a
bool / float tensor of shape (*batch, Hq, L, S) with broadcast (zero) strides, read in place;
`dropout` None or (p, seed, offset): the probabilities [B, Hq, L, S] dropped as `bernoulli_(1 - p)`
draws at the generator state (seed, offset) (kernels/tensorlab/attention_args.cuh)."""
from __future__ import annotations

import math

import numpy as np

from ... import kernel_table as _kt
from . import launch as K
from .conv import _ptr

__all__ = ("attention_fwd", "attention_bwd")

_BM = _BN = 16  # the scalar kernels' kBM / kBN
_FLASH_ROWS = 64  # the tensor-core kernels' query rows (keys for dK/dV) per block
_WIDE = 256  # the bucket whose tiles live in dynamic shared memory and whose dK / dV are two passes
_THREADS = 128
_TENSOR_CORE = ("float16", "bfloat16")
# struct MaskArgs {int mode; int causal; long long ms_l; long long ms_s;}
_MASK_ARGS = np.dtype({"names": ["mode", "causal", "ms_l", "ms_s"],
                       "formats": [np.int32, np.int32, np.int64, np.int64]}, align=True)
# struct DropArgs {unsigned long long threshold, seed, offset; double inv_keep_d; float inv_keep; int on;}
_DROP_ARGS = np.dtype({"names": ["threshold", "seed", "offset", "inv_keep_d", "inv_keep", "on"],
                       "formats": [np.uint64, np.uint64, np.uint64, np.float64, np.float32, np.int32]}, align=True)


def drop_args(dropout):
    """The kernels' DropArgs for dropout None or (p, seed, offset), 0 < p < 1: keep element n when its
    53-bit uniform integer is below ceil((1 - p) 2^53), i.e. when U_n < 1 - p exactly."""
    rec = np.zeros((), _DROP_ARGS)
    if dropout is not None:
        p, seed, offset = dropout
        keep = 1.0 - float(p)
        rec["threshold"] = math.ceil(keep * 2.0 ** 53)
        rec["seed"], rec["offset"] = seed, offset
        rec["inv_keep_d"] = 1.0 / keep
        rec["inv_keep"] = np.float32(1.0) / np.float32(keep)
        rec["on"] = 1
    return rec[()]


def _bucket(q_op, E, Ev):
    """The tensor-core head-dim bucket for these operands, or None (the scalar kernels)."""
    if q_op.dtype.name not in _TENSOR_CORE:
        return None
    return next((d for d in _kt.ATTENTION_HEAD_DIMS if max(E, Ev) <= d), None)


def _flash_smem(name, bucket, itemsize):
    """Dynamic shared memory bytes of a tensor-core kernel: FlashTile<256>'s kFwdSmem / kDqSmem /
    kDkdvSmem (flash_attention.cuh), rows of bucket + 8 elements; 0 for the other buckets (static)."""
    if bucket != _WIDE:
        return 0
    rows = {"attention_fwd": _FLASH_ROWS + 4 * 16, "attention_bwd_dq": 2 * _FLASH_ROWS + 2 * 16,
            "attention_bwd_dkdv": 2 * _FLASH_ROWS + 2 * 16}[name]
    return rows * (bucket + 8) * itemsize


def _kernel(name, q_op, bucket):
    return _kt.attention_expr(name, q_op.dtype.ctype, bucket) if bucket else f"{name}<{q_op.dtype.ctype}>"


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


def attention_fwd(out, lse, q, k, v, mask, is_causal, scale, dropout=None):
    (o, ls, a, b, c), dev = _ops(out, lse, q, k, v)
    B, Hq, Hk, L, S, E, Ev = _geometry(a, b, c)
    if not (B * Hq * L):
        return
    bm, fm, margs, lead = _mask_args(mask, is_causal, a)
    bucket = _bucket(a, E, Ev)
    rows = _FLASH_ROWS if bucket else _BM
    K.launch("attention.cu", _kernel("attention_fwd", a, bucket), dev,
             (_ptr(o), _ptr(ls), _ptr(a), _ptr(b), _ptr(c), bm, fm, np.int64(L), np.int64(S), np.int32(E),
              np.int32(Ev), np.int32(Hq // Hk), np.int32(Hq), _acc_scalar(scale, a), margs, lead,
              drop_args(dropout)),
             grid=(B * Hq, -(-L // rows)), block=_THREADS,
             shared_mem=_flash_smem("attention_fwd", bucket, a.dtype.itemsize))


def attention_bwd(dq, dk, dv, dmask, dout, q, k, v, out, lse, mask, is_causal, scale, dropout=None):
    """dq, dk, dv (and dmask, the float mask's gradient [B, Hq, L, S], unless None) of the fused
    forward (with the same `dropout`: its mask is drawn again); delta = rowsum(dout * out) goes
    through a scratch like lse."""
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
              _acc_scalar(scale, a), margs, lead, drop_args(dropout))
    bucket = _bucket(a, E, Ev)
    block_rows = _FLASH_ROWS if bucket else _BM
    if S and B * Hk:
        if dmask is not None:
            (gm,), _ = _ops(dmask)
            gmp, want = _ptr(gm), 1
        else:
            gmp, want = _ptr(gk), 0
        K.launch("attention.cu", _kernel("attention_bwd_dkdv", a, bucket), dev,
                 (_ptr(gk), _ptr(gv), gmp, _ptr(a), _ptr(b), _ptr(c), _ptr(go), _ptr(ls), _ptr(dl), bm, fm)
                 + common + (np.int32(want),), grid=(B * Hk, -(-S // block_rows), 2 if bucket == _WIDE else 1),
                 block=_THREADS, shared_mem=_flash_smem("attention_bwd_dkdv", bucket, a.dtype.itemsize))
    if rows:
        K.launch("attention.cu", _kernel("attention_bwd_dq", a, bucket), dev,
                 (_ptr(gq), _ptr(a), _ptr(b), _ptr(c), _ptr(go), _ptr(ls), _ptr(dl), bm, fm) + common,
                 grid=(B * Hq, -(-L // block_rows)), block=_THREADS,
                 shared_mem=_flash_smem("attention_bwd_dq", bucket, a.dtype.itemsize))
