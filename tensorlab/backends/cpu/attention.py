"""CPU attention primitives (the names of backends/cuda/attention.py): the fused
scaled_dot_product_attention forward and backward, blocked over keys in NumPy with the kernels'
math (online softmax, backward from the saved per-row log-sum-exp), so no L x S matrix is ever
held: each step holds one [B, Hq, L, block] tile. float16/bfloat16 accumulate in float32.

Operands as ops/attention.py prepares them: q [B, Hq, L, E], k [B, Hk, S, E], v [B, Hk, S, Ev],
out / dout [B, Hq, L, Ev], lse [B, Hq, L] float32 (float64 for float64); `mask` None or a bool / float tensor of shape
(*batch, Hq, L, S) with broadcast strides (read one key block at a time); `dropout` None or (p, seed,
offset): the probabilities [B, Hq, L, S] dropped as `bernoulli_(1 - p)` draws them at the generator
state (seed, offset) (element n keeps when the 53-bit uniform of words 2 (n % 2), +1 of Philox block
n / 2 is below 1 - p), the kept ones scaled by 1 / (1 - p): the CUDA kernels' mask, key block by key block."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
from .memory import array
from .random import _LO, _S32, philox4x32_10
from .reduction import _SHORT_ROW, HALF, _row_max

__all__ = ("attention_fwd", "attention_bwd")

BLOCK = 128  # keys per step


def _acc(dt):
    return np.dtype(np.float32) if dt in HALF or dt == np.float32 else np.dtype(np.float64)


def _heads(x, hq):
    """[B, Hk, ...] repeated to [B, Hq, ...] (head h reads head h // (Hq / Hk))."""
    hk = x.shape[1]
    return x if hk == hq else np.repeat(x, hq // hk, axis=1)


def _scores(q, kb, j0, mask, is_causal, scale, L, B, H):
    """Masked, scaled scores of every query against keys j0 .. j0 + kb.shape[2]: [B, H, L, n]."""
    n = kb.shape[2]
    s = np.matmul(q, kb.swapaxes(-1, -2)) * scale
    if is_causal:
        s = np.where(np.arange(j0, j0 + n)[None, :] > np.arange(L)[:, None], -np.inf, s)
    elif mask is not None:
        m = mask[..., j0:j0 + n].reshape(B, H, L, n)
        s = np.where(m, s, -np.inf) if m.dtype == np.bool_ else s + m.astype(s.dtype)
    return s


def _drop_factors(dropout, B, H, L, S, j0, n, acc):
    """The dropout factors (0 or 1 / (1 - p)) of keys j0 .. j0 + n of every row: [B, H, L, n]."""
    p, seed, offset = dropout
    idx = (np.arange(B * H * L, dtype=np.uint64)[:, None] * np.uint64(S)
           + np.arange(j0, j0 + n, dtype=np.uint64)[None, :]).reshape(-1)
    ctr = (idx >> np.uint64(1)) + np.uint64(offset & 0xFFFFFFFFFFFFFFFF)  # wraps mod 2^64
    zero = np.zeros(ctr.shape, np.uint32)
    w = philox4x32_10((ctr & _LO).astype(np.uint32), (ctr >> _S32).astype(np.uint32), zero, zero,
                      seed & 0xFFFFFFFF, (seed >> 32) & 0xFFFFFFFF)
    odd = (idx & np.uint64(1)).astype(bool)
    lo = np.where(odd, w[2], w[0]).astype(np.uint64)
    hi = np.where(odd, w[3], w[1]).astype(np.uint64)
    u = ((lo | (hi << _S32)) >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    keep = 1.0 - p
    return np.where(u < keep, acc.type(1.0 / keep), acc.type(0.0)).reshape(B, H, L, n)


def _inputs(q, k, v, mask):
    a = array(q)
    acc = _acc(a.dtype)
    B, H = a.shape[:2]
    m = None if mask is None else array(mask)
    return a.astype(acc), _heads(array(k).astype(acc), H), _heads(array(v).astype(acc), H), m, acc


def _row_sums(x):
    """Sums along the last dim as one BLAS matrix-vector product (each row its own dot product)."""
    n = x.shape[-1]
    return _par.row_sums(x.reshape(-1, n)).reshape(x.shape[:-1] + (1,))


def _one_block_scores(q, k, m, is_causal, scale, L, S, B, H):
    """All the scores at once (S <= BLOCK): [B, H, L, S], masked with -inf, in q's dtype."""
    s = np.matmul(q, k.swapaxes(-1, -2))
    s *= s.dtype.type(scale)
    if is_causal:
        s += np.triu(np.full((L, S), -np.inf, s.dtype), 1)
    elif m is not None:
        mm = m.reshape(B, H, L, S) if m.shape != (B, H, L, S) else m
        if mm.dtype == np.bool_:
            np.copyto(s, -np.inf, where=~mm)
        else:
            s += mm.astype(s.dtype, copy=False)
    return s


def _one_block_fwd(out, lse, qa, ka, va, m, is_causal, scale):
    """The forward in one step when every key fits one block: no running max or rescaling."""
    B, H, L, _ = qa.shape
    S = ka.shape[2]
    p = _one_block_scores(qa, ka, m, is_causal, scale, L, S, B, H)
    mx = (_row_max(p.reshape(-1, S)) if S <= _SHORT_ROW else p.reshape(-1, S).max(-1, keepdims=True)).reshape(
        B, H, L, 1)
    dead = mx == -np.inf  # rows that keep no key: zeros out, lse -inf (as the blocked path)
    any_dead = bool(dead.any())
    if any_dead:
        mx[dead] = 0.0
    p -= mx
    np.exp(p, out=p)
    sm = _row_sums(p)
    o = np.matmul(p, va)
    if any_dead:
        sm[dead] = 1.0
    o /= sm
    if any_dead:
        o[np.broadcast_to(dead, o.shape)] = 0.0
    np.copyto(array(out), o, casting="unsafe")
    ls = np.log(sm)
    ls += mx
    if any_dead:
        ls[dead] = -np.inf
    np.copyto(array(lse), ls[..., 0], casting="unsafe")


def _one_block_bwd(dq, dk, dv, gm, go, qa, ka, va, oa, ls, m, is_causal, scale):
    B, H, L, _ = qa.shape
    S = ka.shape[2]
    dead = ls == -np.inf
    if dead.any():
        ls = np.where(dead, 0.0, ls).astype(ls.dtype)
    p = _one_block_scores(qa, ka, m, is_causal, scale, L, S, B, H)
    p -= ls
    np.exp(p, out=p)  # masked scores (-inf) give 0; a dead row is all -inf: 0 too
    delta = _row_sums(go * oa)
    ds = np.matmul(go, va.swapaxes(-1, -2))
    ds -= delta
    ds *= p
    np.copyto(array(dv), np.matmul(p.swapaxes(-1, -2), go), casting="unsafe")
    sc = ds.dtype.type(scale)
    gk = np.matmul(ds.swapaxes(-1, -2), qa)
    gk *= sc
    np.copyto(array(dk), gk, casting="unsafe")
    gq = np.matmul(ds, ka)
    gq *= sc
    np.copyto(array(dq), gq, casting="unsafe")
    if gm is not None:
        np.copyto(gm, ds, casting="unsafe")


def _per_head(q, k):
    """Multiply-adds of a head's score product q @ k^T."""
    qa, ka = array(q), array(k)
    return qa.shape[-2] * qa.shape[-1] * ka.shape[-2]


def attention_fwd(out, lse, q, k, v, mask, is_causal, scale, dropout=None):
    """Its products on OpenBLAS's threads or held at one thread (parallel.blas_product: the largest
    is a head's scores)."""
    return _par.blas_product(_per_head(q, k), _attention_fwd, out, lse, q, k, v, mask, is_causal, scale, dropout)


def _attention_fwd(out, lse, q, k, v, mask, is_causal, scale, dropout):
    _faults.hit("launch")
    qa, ka, va, m, acc = _inputs(q, k, v, mask)
    B, H, L, _ = qa.shape
    S = ka.shape[2]
    if 0 < S <= BLOCK and array(k).shape[1] == H and dropout is None:
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            _one_block_fwd(out, lse, qa, ka, va, m, is_causal, scale)
        return
    o = np.zeros(qa.shape[:3] + (va.shape[3],), acc)
    mx = np.full((B, H, L, 1), -np.inf, acc)
    sm = np.zeros((B, H, L, 1), acc)
    with np.errstate(invalid="ignore", over="ignore"):
        for j0 in range(0, S, BLOCK):
            s = _scores(qa, ka[:, :, j0:j0 + BLOCK], j0, m, is_causal, scale, L, B, H)
            new = np.maximum(mx, s.max(-1, keepdims=True))
            live = new != -np.inf  # rows with some key kept so far
            alpha = np.where(live & (mx != -np.inf), np.exp(mx - new), 0.0)
            p = np.where(live, np.exp(s - np.where(live, new, 0.0)), 0.0)
            sm = sm * alpha + p.sum(-1, keepdims=True)
            if dropout is not None:
                p = p * _drop_factors(dropout, B, H, L, S, j0, p.shape[-1], acc)
            o = o * alpha + np.matmul(p, va[:, :, j0:j0 + BLOCK])
            mx = np.where(live, new, mx)
    dead = sm == 0
    np.copyto(array(out), np.where(dead, 0.0, o / np.where(dead, 1.0, sm)).astype(array(out).dtype))
    with np.errstate(divide="ignore"):
        np.copyto(array(lse), np.where(dead, -np.inf, mx + np.log(np.where(dead, 1.0, sm)))[..., 0]
                  .astype(array(lse).dtype))


def attention_bwd(dq, dk, dv, dmask, dout, q, k, v, out, lse, mask, is_causal, scale, dropout=None):
    """Its products on OpenBLAS's threads or held at one thread (parallel.blas_product: the largest
    is a head's scores)."""
    return _par.blas_product(_per_head(q, k), _attention_bwd, dq, dk, dv, dmask, dout, q, k, v, out, lse, mask,
                             is_causal, scale, dropout)


def _attention_bwd(dq, dk, dv, dmask, dout, q, k, v, out, lse, mask, is_causal, scale, dropout):
    _faults.hit("launch")
    qa, ka, va, m, acc = _inputs(q, k, v, mask)
    B, H, L, _ = qa.shape
    S = ka.shape[2]
    hk = array(k).shape[1]
    go = array(dout).astype(acc)
    if 0 < S <= BLOCK and hk == H and dropout is None:  # every key in one block
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
            _one_block_bwd(dq, dk, dv, None if dmask is None else array(dmask), go, qa, ka, va,
                           array(out).astype(acc, copy=False), array(lse).astype(acc)[..., None], m, is_causal, scale)
        return
    ls = array(lse).astype(acc)[..., None]
    delta = (go * array(out).astype(acc)).sum(-1, keepdims=True)
    dead = ls == -np.inf
    ls = np.where(dead, 0.0, ls)
    gq = np.zeros(qa.shape, acc)
    gk = np.zeros(ka.shape, acc)
    gv = np.zeros(va.shape, acc)
    gm = None if dmask is None else array(dmask)
    with np.errstate(invalid="ignore", over="ignore"):
        for j0 in range(0, S, BLOCK):
            kb, vb = ka[:, :, j0:j0 + BLOCK], va[:, :, j0:j0 + BLOCK]
            s = _scores(qa, kb, j0, m, is_causal, scale, L, B, H)
            p = np.where(dead | (s == -np.inf), 0.0, np.exp(s - ls))
            dp = np.matmul(go, vb.swapaxes(-1, -2))
            if dropout is not None:
                z = _drop_factors(dropout, B, H, L, S, j0, p.shape[-1], acc)
                dp *= z
                ds = p * (dp - delta)
                p = p * z
            else:
                ds = p * (dp - delta)
            gv[:, :, j0:j0 + BLOCK] = np.matmul(p.swapaxes(-1, -2), go)
            gk[:, :, j0:j0 + BLOCK] = np.matmul(ds.swapaxes(-1, -2), qa) * scale
            gq += np.matmul(ds, kb) * scale
            if gm is not None:
                gm[..., j0:j0 + BLOCK] = ds.astype(gm.dtype)
    if hk != H:  # GQA: a key/value head's gradient sums its group of query heads
        gk = gk.reshape(B, hk, H // hk, S, -1).sum(2)
        gv = gv.reshape(B, hk, H // hk, S, -1).sum(2)
    for dst, src in ((dq, gq), (dk, gk), (dv, gv)):
        a = array(dst)
        np.copyto(a, src.astype(a.dtype))
