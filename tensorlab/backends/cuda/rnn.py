"""CUDA primitives of the fused recurrent cells (the names and operands of backends/cpu/rnn.py), launching
kernels/rnn.cu: one thread per (batch row, hidden unit). Nothing here waits for the device."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr
from .norm import _index, _ops

__all__ = ("rnn_cell_fwd", "rnn_cell_bwd")

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def _dims(gx, mode):
    b, gh = gx.layout.shape
    return b, gh // _GATES[mode]


def rnn_cell_fwd(mode, out, gx, gh, state, bias):
    (oo, xo, ho, so, bo), dev = _ops(out, gx, gh, state, bias)
    b, h = _dims(xo, mode)
    n = b * h
    if not n:
        return
    it = _index(n * _GATES[mode], 2 * n)
    ct = xo.dtype.ctype
    i = K.index_scalar
    hb = np.int32(bo is not None)
    if mode == "LSTM":
        K.launch("rnn.cu", f"lstm_cell_fwd<{ct}, {it}>", dev,
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it), i(h, it), hb), n=n)
    elif mode == "GRU":
        K.launch("rnn.cu", f"gru_cell_fwd<{ct}, {it}>", dev,
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it), i(h, it), hb), n=n)
    else:
        K.launch("rnn.cu", f"rnn_act_cell_fwd<{ct}, {it}>", dev,
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(bo or xo), i(b, it), i(h, it), hb,
                  np.int32(mode == "RNN_RELU")), n=n)


def rnn_cell_bwd(mode, d_gx, d_gh, d_state, grad, gx, gh, state, bias, out):
    (dxo, dho, dso, go, xo, ho, so, bo, oo), dev = _ops(d_gx, d_gh, d_state, grad, gx, gh, state, bias, out)
    b, h = _dims(xo, mode)
    n = b * h
    if not n:
        return
    it = _index(n * _GATES[mode], 2 * n)
    ct = xo.dtype.ctype
    i = K.index_scalar
    hb = np.int32(bo is not None)
    if mode == "LSTM":
        K.launch("rnn.cu", f"lstm_cell_bwd<{ct}, {it}>", dev,
                 (_ptr(dxo), _ptr(dso), _ptr(go), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it), i(h, it),
                  hb), n=n)
    elif mode == "GRU":
        K.launch("rnn.cu", f"gru_cell_bwd<{ct}, {it}>", dev,
                 (_ptr(dxo), _ptr(dho), _ptr(dso), _ptr(go), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it),
                  i(h, it), hb), n=n)
    else:
        K.launch("rnn.cu", f"rnn_act_cell_bwd<{ct}, {it}>", dev,
                 (_ptr(dxo), _ptr(go), _ptr(oo), i(b, it), i(h, it), np.int32(mode == "RNN_RELU")), n=n)
