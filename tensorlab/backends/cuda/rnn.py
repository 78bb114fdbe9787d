"""CUDA primitives of the fused recurrent cells and sequences (the names and operands of backends/cpu/rnn.py),
launching kernels/rnn.cu: the cells one thread per (batch row, hidden unit); the sequences one block per batch
row running every time step. Nothing here waits for the device."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr
from .norm import _index, _ops

__all__ = ("rnn_cell_fwd", "rnn_cell_bwd", "rnn_seq_fwd", "rnn_seq_bwd")

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
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it), K.divisor(h, it), hb), n=n)
    elif mode == "GRU":
        K.launch("rnn.cu", f"gru_cell_fwd<{ct}, {it}>", dev,
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it), K.divisor(h, it), hb), n=n)
    else:
        K.launch("rnn.cu", f"rnn_act_cell_fwd<{ct}, {it}>", dev,
                 (_ptr(oo), _ptr(xo), _ptr(ho), _ptr(bo or xo), i(b, it), K.divisor(h, it), hb,
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
                 (_ptr(dxo), _ptr(dso), _ptr(go), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it),
                  K.divisor(h, it), hb), n=n)
    elif mode == "GRU":
        K.launch("rnn.cu", f"gru_cell_bwd<{ct}, {it}>", dev,
                 (_ptr(dxo), _ptr(dho), _ptr(dso), _ptr(go), _ptr(xo), _ptr(ho), _ptr(so), _ptr(bo or xo), i(b, it),
                  K.divisor(h, it), hb), n=n)
    else:
        K.launch("rnn.cu", f"rnn_act_cell_bwd<{ct}, {it}>", dev,
                 (_ptr(dxo), _ptr(go), _ptr(oo), i(b, it), i(h, it), np.int32(mode == "RNN_RELU")), n=n)


_MODES = {"LSTM": 0, "GRU": 1, "RNN_TANH": 2, "RNN_RELU": 3}
_SEQ_BLOCK = 256


def seq_shared_bytes(mode, hidden, acc_itemsize):
    """Dynamic shared memory of the sequence kernels: h, c and the G*H gate values."""
    return (2 + _GATES[mode]) * hidden * acc_itemsize


def _seq_geometry(mode, xo, hidden, batch):
    acc = 8 if xo.dtype.itemsize == 8 else 4
    return (max(1, min(batch, 65535)),), seq_shared_bytes(mode, hidden, acc)


def rnn_seq_fwd(mode, hs, cs, ws, gi, w_hh, b_hh, h0, c0, reverse):
    (hso, cso, wso, gio, wo, bo, h0o, c0o), dev = _ops(hs, cs, ws, gi, w_hh, b_hh, h0, c0)
    steps, batch, hidden = hso.layout.shape
    if not (steps and batch and hidden):
        return
    grid, shared = _seq_geometry(mode, gio, hidden, batch)
    K.launch("rnn.cu", f"rnn_seq_fwd<{gio.dtype.ctype}, {_MODES[mode]}>", dev,
             (_ptr(hso), _ptr(cso or hso), _ptr(wso), _ptr(gio), _ptr(wo), _ptr(bo or gio), _ptr(h0o),
              _ptr(c0o or h0o), np.int64(steps), np.int64(batch), np.int64(hidden), np.int32(bo is not None),
              np.int32(bool(reverse))), grid=grid, block=_SEQ_BLOCK, shared_mem=shared)


def rnn_seq_bwd(mode, d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0, reverse):
    (dgio, dgho, dh0o, dc0o, gho, gco, wso, hso, cso, wo, h0o, c0o), dev = _ops(
        d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0)
    steps, batch, hidden = hso.layout.shape
    if not (steps and batch and hidden):
        return
    grid, shared = _seq_geometry(mode, dgio, hidden, batch)
    K.launch("rnn.cu", f"rnn_seq_bwd<{dgio.dtype.ctype}, {_MODES[mode]}>", dev,
             (_ptr(dgio), _ptr(dgho or dgio), _ptr(dh0o), _ptr(dc0o or dh0o), _ptr(gho), _ptr(gco or gho),
              _ptr(wso), _ptr(hso), _ptr(cso or hso), _ptr(wo), _ptr(h0o), _ptr(c0o or h0o), np.int64(steps),
              np.int64(batch), np.int64(hidden), np.int32(bool(reverse))),
             grid=grid, block=_SEQ_BLOCK, shared_mem=shared)
