"""The fused scaled_dot_product_attention: the `attention_fwd` / `attention_bwd` primitive pair
(kernels/attention.cu on CUDA, a blocked NumPy version of the same math on the CPU) and the
front end that prepares their operands, records the autograd node and runs the derivative.

nn/functional_attention.py's composite (matmul, softmax) stays the reference and the fallback:
`fused_supported` says when the fused path applies (CUDA; float16/bfloat16/float32/float64; head
dims 1..256 for float16/bfloat16, 1..128 for float32, 1..64 for float64; dropout_p < 1; q/k/v with one batch shape; equal heads or enable_gqa
with a multiple; a mask broadcastable to the scores without growing them); on the CPU it runs from
CPU_BLOCKED_MIN_SCORES scores on, where the blocked NumPy primitives hold one key block of scores
at a time instead of the composite's L x S matrices. The forward keeps the output and the per-row
log-sum-exp (float32; float64 for float64), never the L x S probabilities; the backward recomputes
them tile by tile. A float mask that requires grad gets dS, written once per (row, key) (its
gradient is as large as the scores anyway). Under create_graph (double backward) the derivative
is written with differentiable ops instead (the composite's memory, torch's math).

Dropout draws the composite's mask (`bernoulli_(1 - p)` on the [*batch, Hq, L, S] probabilities,
from the device's default generator, which advances by as many Philox blocks as that call would),
inside the kernels: the backward draws it again from the saved (seed, offset), so the same seed
gives the same result on the CPU composite, the CPU blocked primitives and the CUDA kernels."""
from __future__ import annotations

import math

from .. import autograd_hooks, dtypes
from . import random as _random
from . import registry
from ._common import empty_tensor
from .elementwise import _grad_enabled
from .registry import KEEP, OpDef

_F = "attention"
registry.register(
    OpDef("attention_fwd", _F, "attention_fwd", KEEP),
    OpDef("attention_bwd", _F, "attention_bwd", KEEP, differentiable=False),
)

MAX_HEAD_DIM = 128  # float32: the scalar kernels' Acc<float>::kMaxE
MAX_HEAD_DIM_16BIT = 256  # float16 / bfloat16: the largest tensor-core bucket (kernel_table.ATTENTION_HEAD_DIMS)
MAX_HEAD_DIM_FLOAT64 = 64  # double tiles are twice as wide in the kernels' shared memory
FUSED_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)
CPU_BLOCKED_MIN_SCORES = 1 << 24  # B * H * L * S from which the CPU runs the blocked primitives
_MAX_LEAD_DIMS = 8  # the kernels' StridedLayout of the mask's (batch..., head) dims
_MAX_SEQ = 65535 * 16  # the kernels' grid: 16-row blocks along gridDim.y


def _lead(t):
    """(batch dims, heads) of a [..., H, N, E] tensor ([N, E]: no batch, one head)."""
    sh = tuple(t.shape)
    return (sh[:-3], sh[-3]) if len(sh) >= 3 else ((), 1)


def _broadcastable(mask_shape, target):
    if len(mask_shape) > len(target):
        return False
    return all(m in (1, t) for m, t in zip(reversed(mask_shape), reversed(target)))


def fused_supported(query, key, value, attn_mask=None, dropout_p=0.0, enable_gqa=False, devices=None):
    """Whether the fused kernels run this call (else the composite does, with the same result).
    `devices`: the device types to run it on; by default CUDA, and the CPU from
    CPU_BLOCKED_MIN_SCORES scores on (where the composite's L x S matrices grow large)."""
    if devices is None:
        devices = ("cuda", "cpu") if query.numel() // max(query.shape[-1], 1) * key.shape[-2] >= \
            CPU_BLOCKED_MIN_SCORES else ("cuda",)
    if dropout_p >= 1.0 or query.device.type not in devices:
        return False
    if query.dtype not in FUSED_DTYPES or not (query.dtype == key.dtype == value.dtype):
        return False
    if not (query.device == key.device == value.device) or not (query.dim() == key.dim() == value.dim() >= 2):
        return False
    E, Ev = query.shape[-1], value.shape[-1]
    most = (MAX_HEAD_DIM_FLOAT64 if query.dtype is dtypes.float64 else
            MAX_HEAD_DIM_16BIT if query.dtype in (dtypes.float16, dtypes.bfloat16) else MAX_HEAD_DIM)
    if not (1 <= E <= most and 1 <= Ev <= most) or key.shape[-1] != E:
        return False
    (bq, hq), (bk, hk), (bv, hv) = _lead(query), _lead(key), _lead(value)
    if not (bq == bk == bv) or key.shape[-2] != value.shape[-2] or hk != hv:
        return False
    if hq != hk and not (enable_gqa and hq % hk == 0):
        return False
    if max(query.shape[-2], key.shape[-2]) > _MAX_SEQ:
        return False
    if attn_mask is not None:
        if attn_mask.device != query.device or (attn_mask.dtype is not dtypes.bool and attn_mask.dtype != query.dtype):
            return False
        target = bq + (hq, query.shape[-2], key.shape[-2])
        if not _broadcastable(tuple(attn_mask.shape), target) or len(target) - 2 > _MAX_LEAD_DIMS:
            return False
    return True


def _draw_dropout(dropout_p, n, device):
    """(p, seed, offset) for the kernels, advancing the device's default generator as the
    composite's bernoulli_ over the n probabilities would (2 words each); None without dropout."""
    if not dropout_p > 0.0 or n == 0:
        return None
    gen = _random._default_for(device)
    with gen._lock:
        seed, offset = gen._seed, gen._offset
        gen._offset = (offset + (2 * n + 3) // 4) & ((1 << 64) - 1)
    return (float(dropout_p), seed, offset)


def attention(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False, dropout_p=0.0):
    """softmax(q k^T scale + mask) v, dropout_p of the probabilities dropped, by the fused primitives
    (F.scaled_dot_product_attention's arguments); the caller checked fused_supported."""
    batch, hq = _lead(query)
    _, hk = _lead(key)
    if hq != hk and not enable_gqa:
        raise RuntimeError(f"scaled_dot_product_attention: query has {hq} heads and key/value {hk}: pass "
                           f"enable_gqa=True to share each key/value head among {hq // max(hk, 1)} query heads")
    L, E, S, Ev = query.shape[-2], query.shape[-1], key.shape[-2], value.shape[-1]
    B = math.prod(batch)
    s = 1.0 / math.sqrt(E) if scale is None else float(scale)
    q = query.contiguous().reshape(B, hq, L, E)
    k = key.contiguous().reshape(B, hk, S, E)
    v = value.contiguous().reshape(B, hk, S, Ev)
    mask = None if attn_mask is None else attn_mask.expand(*batch, hq, L, S)
    out = empty_tensor((B, hq, L, Ev), query.dtype, query.device)
    lse = empty_tensor((B, hq, L), dtypes.float64 if query.dtype is dtypes.float64 else dtypes.float32,
                       query.device)
    drop = _draw_dropout(dropout_p, B * hq * L * S, query.device)
    q._backend.attention_fwd(out, lse, q, k, v, mask, bool(is_causal), s, drop)
    float_mask = mask is not None and mask.dtype is not dtypes.bool
    inputs = (q, k, v, mask) if float_mask else (q, k, v)
    out = autograd_hooks.record(out, "attention_fwd", inputs, lse=lse, mask=mask, is_causal=bool(is_causal),
                                scale=s, float_mask=float_mask, dropout=drop)
    return out.reshape(*batch, hq, L, Ev) if len(query.shape) >= 3 else out.reshape(L, Ev)


def attention_backward(grad, q, k, v, out, lse, mask, is_causal, scale, need_mask_grad, dropout=None):
    """(dq, dk, dv, dmask or None) of attention_fwd for the gradient `grad` of its output."""
    if _grad_enabled():  # create_graph: gradients that are themselves differentiable
        return _differentiable_backward(grad, q, k, v, mask, is_causal, scale, need_mask_grad, dropout)
    g = grad.contiguous()
    dq = empty_tensor(tuple(q.shape), q.dtype, q.device)
    dk = empty_tensor(tuple(k.shape), k.dtype, k.device)
    dv = empty_tensor(tuple(v.shape), v.dtype, v.device)
    B, hq, L, _ = q.shape
    dmask = empty_tensor((B, hq, L, k.shape[2]), q.dtype, q.device) if need_mask_grad else None
    q._backend.attention_bwd(dq, dk, dv, dmask, g, q, k, v, out, lse, mask, is_causal, scale, dropout)
    return dq, dk, dv, (None if dmask is None else dmask.reshape(tuple(mask.shape)))


def _dropout_factors(dropout, shape, like):
    """The forward's dropout factors as a tensor of the probabilities' shape: its mask drawn again
    by bernoulli_ from a generator at the saved (seed, offset)."""
    p, seed, offset = dropout
    gen = _random._rebuild_generator(str(like.device), seed, offset)
    return empty_tensor(tuple(shape), like.dtype, like.device).bernoulli_(1.0 - p, generator=gen).div_(1.0 - p)


def _differentiable_backward(g, q, k, v, mask, is_causal, scale, need_mask_grad, dropout=None):
    import tensorlab as tl
    hq, hk = q.shape[1], k.shape[1]
    group = hq // hk
    kr = k.repeat_interleave(group, dim=1) if group > 1 else k
    vr = v.repeat_interleave(group, dim=1) if group > 1 else v
    s = q.matmul(kr.transpose(-2, -1)) * scale
    L, S = s.shape[-2], s.shape[-1]
    if is_causal:
        s = s.masked_fill(tl.ones((L, S), dtype=dtypes.bool, device=q.device).tril().logical_not(), float("-inf"))
    elif mask is not None:
        m = mask.reshape(s.shape) if tuple(mask.shape) != tuple(s.shape) else mask
        s = s.masked_fill(m.logical_not(), float("-inf")) if mask.dtype is dtypes.bool else s + m
    dead = (s == float("-inf")).all(-1, keepdim=True)
    p = tl.where(dead, 0.0, s.softmax(-1))
    z = None if dropout is None else _dropout_factors(dropout, s.shape, s)
    dv = (p if z is None else p * z).transpose(-2, -1).matmul(g)
    dp = g.matmul(vr.transpose(-2, -1))
    if z is not None:
        dp = dp * z
    ds = p * (dp - (p * dp).sum(-1, keepdim=True))
    dq = ds.matmul(kr) * scale
    dk = ds.transpose(-2, -1).matmul(q) * scale
    if group > 1:
        B = q.shape[0]
        dk = dk.reshape(B, hk, group, S, -1).sum(2)
        dv = dv.reshape(B, hk, group, S, -1).sum(2)
    return dq, dk, dv, (ds.reshape(tuple(mask.shape)) if need_mask_grad else None)


__all__ = ["attention", "attention_backward", "fused_supported"]
