"""CTC loss as two primitives over kernels/ctc.cu (backends/cpu/ctc.py has the same names and
results): ctc_loss_fwd runs the alpha recursion, one block per batch element with the time loop
inside (one launch for the whole sequence); ctc_loss_bwd fills the gradient's dense part, runs the
beta recursion (one block per batch element), then writes the labels' entries (three launches).
Lengths and target offsets are int64 device tensors: nothing here waits for the device."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr
from .memory import retire, temp
from .norm import _index, _ops
from ... import dtypes

__all__ = ("ctc_loss_fwd", "ctc_loss_bwd")


def _block(states):
    """Threads per block: the states of the longest sample, rounded up to warps, at most 256."""
    return max(32, min(256, -(-states // 32) * 32))


def ctc_loss_fwd(nll, alpha, log_probs, targets, target_offsets, input_lengths, target_lengths, blank):
    """nll (N,) and alpha (N, T, Lx) from log_probs (T, N, C), all contiguous; alpha is written for
    t < input_lengths[n] only."""
    (no, ao, lo, to, oo, io, so), dev = _ops(nll, alpha, log_probs, targets, target_offsets, input_lengths,
                                             target_lengths)
    T, N, C = lo.layout.shape
    Lx = ao.layout.shape[2]
    if not N:
        return
    it = _index(T * N * C, N * T * Lx)
    i = K.index_scalar
    K.launch("ctc.cu", f"ctc_alpha<{lo.dtype.ctype}, {it}>", dev,
             (_ptr(ao), _ptr(no), _ptr(lo), _ptr(to), _ptr(oo), _ptr(io), _ptr(so), i(T, it), i(N, it), i(C, it),
              i(Lx, it), np.int64(blank)), grid=(N,), block=_block(Lx))


def ctc_loss_bwd(grad, log_probs, alpha, nll, targets, target_offsets, input_lengths, target_lengths, blank,
                 zero_infinity):
    """grad (T, N, C) of the per-sample nll with respect to log_probs (ATen's formula)."""
    (go, lo, ao, no, to, oo, io, so), dev = _ops(grad, log_probs, alpha, nll, targets, target_offsets,
                                                 input_lengths, target_lengths)
    T, N, C = lo.layout.shape
    Lx = ao.layout.shape[2]
    total = T * N * C
    if not total:
        return
    it = _index(total, N * T * Lx)
    i = K.index_scalar
    ct = lo.dtype.ctype
    K.launch("ctc.cu", f"ctc_grad_fill<{ct}, {it}>", dev,
             (_ptr(go), _ptr(lo), _ptr(no), _ptr(io), i(N, it), i(C, it), i(total, it), np.int32(bool(zero_infinity))),
             n=total)
    beta = temp((N, T, Lx), lo.dtype, dev)
    links = temp((N, 2, Lx), dtypes.int32, dev)
    try:
        K.launch("ctc.cu", f"ctc_beta<{ct}, {it}>", dev,
                 (_ptr(beta), _ptr(links), _ptr(no), _ptr(lo), _ptr(to), _ptr(oo), _ptr(io), _ptr(so), i(T, it),
                  i(N, it), i(C, it), i(Lx, it), np.int64(blank), np.int32(bool(zero_infinity))),
                 grid=(N,), block=_block(Lx))
        K.launch("ctc.cu", f"ctc_grad_labels<{ct}, {it}>", dev,
                 (_ptr(go), _ptr(ao), _ptr(beta), _ptr(links), _ptr(no), _ptr(lo), _ptr(to), _ptr(oo), _ptr(io),
                  _ptr(so), i(T, it), i(N, it), i(C, it), i(Lx, it), np.int64(blank), np.int32(bool(zero_infinity))),
                 n=N * T * Lx)
    finally:
        retire(beta.buffer)
        retire(links.buffer)
