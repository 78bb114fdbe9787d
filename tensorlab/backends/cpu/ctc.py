"""CTC loss as two primitives (backends/cuda/ctc.py's names, kernels/ctc.cu's results): the
log-space alpha and beta recursions over each sample's extended label sequence, vectorized over the
batch and the states, one NumPy step per time step; the gradient is ATen's ctc_loss_backward formula
(the gradient through the log_softmax that produced log_probs). A target outside [0, C) is an
impossible label (log-probability -inf), as the kernels read it."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("ctc_loss_fwd", "ctc_loss_bwd")


def _lse3(a, b, c):
    m = np.maximum(np.maximum(a, b), c)
    finite = m != -np.inf
    ms = np.where(finite, m, 0)
    with np.errstate(all="ignore"):
        s = ms + np.log(np.exp(a - ms) + np.exp(b - ms) + np.exp(c - ms))
    return np.where(finite, s, -np.inf)


def _geometry(lp, targets, offsets, in_lens, tgt_lens, blank, Lx):
    """Per sample: the extended labels (N, Lx), their log-probabilities at every step (T, N, Lx),
    the states in range, the skip masks, and the lengths."""
    T, N, C = lp.shape
    tl_ = array(tgt_lens).astype(np.int64)
    Tn = array(in_lens).astype(np.int64)
    tg = array(targets)
    off = array(offsets)
    s = np.arange(Lx)
    ln = 2 * tl_ + 1
    ok = s[None, :] < ln[:, None]
    j = np.where(ok & (s[None, :] % 2 == 1), off[:, None] + s[None, :] // 2, -1)
    ext = np.where(j >= 0, tg[np.clip(j, 0, max(tg.size - 1, 0))] if tg.size else blank, blank)
    inside = (ext >= 0) & (ext < C)
    with np.errstate(all="ignore"):
        lpe = np.where(inside[None], lp[:, np.arange(N)[:, None], np.clip(ext, 0, C - 1)], -np.inf) if C \
            else np.full((T, N, Lx), -np.inf, lp.dtype)
    lpe = lpe.astype(lp.dtype, copy=False)
    skip = np.zeros((N, Lx), bool)  # state s may come from s - 2
    if Lx > 2:
        skip[:, 2:] = (ext[:, 2:] != blank) & (ext[:, 2:] != ext[:, :-2]) & (s[None, 2:] % 2 == 1)
    return ext, lpe, ok, skip, Tn, ln


def _shift(a, k, neg):  # a[:, s - k] (k > 0) or a[:, s - k] read forward (k < 0), -inf outside
    out = np.full_like(a, neg)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


def ctc_loss_fwd(nll, alpha, log_probs, targets, target_offsets, input_lengths, target_lengths, blank):
    """nll (N,) and alpha (N, T, Lx) (written for t < input_lengths[n]; the rest -inf)."""
    _faults.hit("launch")
    lp = array(log_probs)
    a_out = array(alpha)
    T, N, _ = lp.shape
    Lx = a_out.shape[2]
    ext, lpe, ok, skip, Tn, ln = _geometry(lp, targets, target_offsets, input_lengths, target_lengths, blank, Lx)
    neg = lp.dtype.type(-np.inf)
    res = np.full((N, T, Lx), neg, lp.dtype)
    if T:
        a = np.where(ok & (np.arange(Lx)[None, :] < 2), lpe[0], neg)
        res[:, 0] = a
        for t in range(1, T):
            s2 = np.where(skip, _shift(a, 2, neg), neg)
            lse = _lse3(a, _shift(a, 1, neg), s2)
            a = np.where(ok & (lse != -np.inf), lse + lpe[t], neg)
            res[:, t] = a
    last = res[np.arange(N), np.clip(Tn - 1, 0, max(T - 1, 0))] if T else np.full((N, Lx), neg, lp.dtype)
    rows = np.arange(N)
    x = last[rows, ln - 1]
    y = np.where(ln > 1, last[rows, np.maximum(ln - 2, 0)], neg)
    loss = -_lse3(x, y, np.full_like(x, neg))
    loss = np.where(Tn > 0, loss, np.where(ln == 1, 0, np.inf)).astype(lp.dtype)
    np.copyto(a_out, res)
    np.copyto(array(nll), loss)


def ctc_loss_bwd(grad, log_probs, alpha, nll, targets, target_offsets, input_lengths, target_lengths, blank,
                 zero_infinity):
    """grad (T, N, C) = exp(lp) - exp(lse_{s: l'_s = c}(alpha + beta) + nll - lp) for t < T_n, else 0."""
    _faults.hit("launch")
    lp = array(log_probs)
    a = array(alpha)
    loss = array(nll)
    T, N, C = lp.shape
    Lx = a.shape[2]
    ext, lpe, ok, skip, Tn, ln = _geometry(lp, targets, target_offsets, input_lengths, target_lengths, blank, Lx)
    neg = lp.dtype.type(-np.inf)
    beta = np.full((T, N, Lx), neg, lp.dtype)
    rows = np.arange(N)
    s = np.arange(Lx)
    last_ok = ok & ((s[None, :] == ln[:, None] - 1) | (s[None, :] == ln[:, None] - 2))
    skip_from = np.zeros((N, Lx), bool)  # state s may go to s + 2
    if Lx > 2:
        skip_from[:, :-2] = skip[:, 2:]
    b = np.full((N, Lx), neg, lp.dtype)
    for t in range(T - 1, -1, -1):
        s2 = np.where(skip_from, _shift(b, -2, neg), neg)
        lse = _lse3(b, _shift(b, -1, neg), s2)
        rec = np.where(ok & (lse != -np.inf), lse + lpe[t], neg)
        start = np.where(last_ok, lpe[t], neg)
        b = np.where((Tn == t + 1)[:, None], start, np.where((Tn > t + 1)[:, None], rec, neg))
        beta[t] = b
    with np.errstate(all="ignore"):
        ab = np.transpose(a, (1, 0, 2)) + beta  # (T, N, Lx); alpha past T_n is masked by beta's -inf
        ab = np.where(ok[None] & (np.arange(T)[:, None, None] < Tn[None, :, None]), ab, neg)
        lcab = np.full((T, N, C), neg, lp.dtype)
        inside = ok & (ext >= 0) & (ext < C)
        for n in range(N):
            cls = ext[n][inside[n]]
            v = ab[:, n][:, inside[n]]
            if not cls.size:
                continue
            m = np.full((T, C), neg, lp.dtype)
            np.maximum.at(m.T, cls, v.T)
            ms = np.where(m != -np.inf, m, 0)
            acc = np.zeros((T, C), lp.dtype)
            np.add.at(acc.T, cls, np.exp(v - ms[:, cls]).T)
            lcab[:, n] = np.where(m != -np.inf, ms + np.log(acc), neg)
        g = np.exp(lp) - np.exp(lcab + loss[None, :, None] - lp)
    dead = np.arange(T)[:, None] >= Tn[None, :]
    if zero_infinity:
        dead = dead | (loss == np.inf)[None, :]
    g = np.where(dead[:, :, None], 0, g).astype(lp.dtype)
    np.copyto(array(grad), g)
