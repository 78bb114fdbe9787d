"""Cross entropy over class indices as two primitives, for ops/nll_fused.py's plain case (every
target in range and counted, float32/float64): the forward writes log_softmax(x) along dim 1 and
the loss, the backward the gradient s * (onehot - softmax) from the saved log-probabilities. Each
computes what the ops it replaces (log_softmax, gather, sum, div_; exp, mul_, scatter_ add) compute,
in the same order, without their dispatch."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .elementwise import _quiet_off, _quiet_on
from .memory import array
from .reduction import softmax

__all__ = ("cross_entropy", "cross_entropy_backward")


def cross_entropy(loss, logp, x, index, divisor):
    """logp = log_softmax(x, 1) for x [N, C]; loss (0-d) = sum_i logp[i, index[i, 0]] / divisor.
    index: int64 [N, 1] with every entry in [0, C) (the caller checked them on the host)."""
    softmax(logp, x, 1, True)  # the softmax primitive itself: the same log-probabilities
    lp = array(logp)
    idx = array(index).reshape(-1)
    o = array(loss)
    _faults.hit("launch")
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        picked = lp[_rows(lp.shape[0]), idx]
        s = np.add.reduce(picked)
        np.copyto(o, np.true_divide(s, lp.dtype.type(divisor)))
    finally:
        _quiet_off(token)


def cross_entropy_backward(grad_input, logp, index, s):
    """grad_input = exp(logp) * -s, then s added at each row's target (index int64 [N, 1])."""
    gi = array(grad_input)
    lp = array(logp)
    idx = array(index).reshape(-1)
    _faults.hit("launch")
    f = gi.dtype.type
    token = _quiet_on()
    try:
        np.exp(lp, out=gi)
        gi *= f(-s)
        gi[_rows(gi.shape[0]), idx] += f(s)  # one target a row: no position repeats
    finally:
        _quiet_off(token)


_ROWS = {}  # n -> arange(n), read-only: the row index of a batch size seen before


def _rows(n):
    r = _ROWS.get(n)
    if r is None:
        r = np.arange(n)
        r.flags.writeable = False
        if len(_ROWS) < 64:
            _ROWS[n] = r
    return r
