"""CUDA primitives of the fused recurrent cells and sequences (the names and operands of backends/cpu/rnn.py),
launching kernels/rnn.cu: the cells one thread per (batch row, hidden unit); the sequences one launch per time
step over a grid of hidden-unit slices x batch tiles (kernels/rnn.cu says why). Nothing here waits for the
device."""
from __future__ import annotations

import numpy as np

from . import launch as K
from .conv import _ptr
from .memory import retire, temp
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
_ROWS = 8   # kSeqRows: batch rows per forward block (and per backward block, at most)
_UNITS = 8  # kSeqUnits: hidden units per forward block, one per warp of 256 threads


def _seq_index(mode, steps, batch, hidden):
    """The index type of the sequence kernels: offsets reach T*B*4H (workspace) and G*H*H (W_hh)."""
    return _index(steps * batch * 4 * hidden, _GATES[mode] * hidden * hidden)


def seq_fwd_geometry(batch, hidden):
    """(grid, block) of rnn_seq_step_fwd: ceil(H / 8) unit slices x ceil(B / 8) batch tiles."""
    tiles = -(-batch // _ROWS)
    return (-(-hidden // _UNITS), min(tiles, 65535)), 32 * _UNITS, tiles


def seq_bwd_geometry(batch, hidden):
    """(grid, block) of rnn_seq_step_bwd: 32 units x up to 8 batch rows (one per warp) per block."""
    rows = min(batch, _ROWS)
    tiles = -(-batch // rows)
    return (-(-hidden // 32), min(tiles, 65535)), 32 * rows, tiles


def _prev_step(t, steps, reverse):
    """The step whose state step t reads (-1: the initial state)."""
    tp = t + 1 if reverse else t - 1
    return tp if 0 <= tp < steps else -1


def rnn_seq_fwd(mode, hs, cs, ws, gi, w_hh, b_hh, h0, c0, reverse):
    (hso, cso, wso, gio, wo, bo, h0o, c0o), dev = _ops(hs, cs, ws, gi, w_hh, b_hh, h0, c0)
    steps, batch, hidden = hso.layout.shape
    if not (steps and batch and hidden):
        return
    it = _seq_index(mode, steps, batch, hidden)
    ix = np.int32 if it == "int" else np.int64
    grid, block, tiles = seq_fwd_geometry(batch, hidden)
    name = f"rnn_seq_step_fwd<{gio.dtype.ctype}, {_MODES[mode]}, {it}>"
    head = (_ptr(hso), _ptr(cso or hso), _ptr(wso), _ptr(gio), _ptr(wo), _ptr(bo or gio), _ptr(h0o), _ptr(c0o or h0o))
    tail = (ix(batch), ix(hidden), ix(tiles), np.int32(bo is not None))
    for step in range(steps):
        t = steps - 1 - step if reverse else step
        K.launch("rnn.cu", name, dev, head + (ix(t), ix(_prev_step(t, steps, reverse))) + tail, grid=grid,
                 block=block)


def rnn_seq_bwd(mode, d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0, reverse):
    (dgio, dgho, dh0o, dc0o, gho, gco, wso, hso, cso, wo, h0o, c0o), dev = _ops(
        d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0)
    steps, batch, hidden = hso.layout.shape
    if not (steps and batch and hidden):
        return
    it = _seq_index(mode, steps, batch, hidden)
    ix = np.int32 if it == "int" else np.int64
    grid, block, tiles = seq_bwd_geometry(batch, hidden)
    name = f"rnn_seq_step_bwd<{dgio.dtype.ctype}, {_MODES[mode]}, {it}>"
    # LSTM's dc * f or GRU's dh * z from one launch to the next (the RNN modes carry nothing)
    carry = temp((batch, hidden), wso.dtype, dev) if mode in ("LSTM", "GRU") else None
    try:
        head = (_ptr(dgio), _ptr(dgho or dgio), _ptr(dh0o), _ptr(dc0o or dh0o), _ptr(carry or wso), _ptr(gho),
                _ptr(gco or gho), _ptr(wso), _ptr(hso), _ptr(cso or hso), _ptr(wo), _ptr(h0o), _ptr(c0o or h0o))
        tail = (ix(batch), ix(hidden), ix(tiles))
        order = [s if reverse else steps - 1 - s for s in range(steps)] + [-1]  # the forward's steps, backwards
        tq = -1
        for t in order:
            tp = _prev_step(t, steps, reverse) if t >= 0 else -1
            K.launch("rnn.cu", name, dev, head + (ix(t), ix(tq), ix(tp)) + tail, grid=grid, block=block)
            tq = t
    finally:
        if carry is not None:
            retire(carry.buffer)
