"""CPU primitives of the fused recurrent cells (the names of backends/cuda/rnn.py): the gate math of
kernels/rnn.cu in NumPy, float32 for float16/bfloat16/float32, float64 for float64. Operands are contiguous:
gx / gh (B, G*H) with torch's gate order, states (B, H); mode is "LSTM", "GRU", "RNN_TANH" or "RNN_RELU".

rnn_cell_fwd(mode, out, gx, gh, state, bias): LSTM out (2, B, H) = (h', c') from c = state; GRU out (B, H)
from h = state; RNN out (B, H) (state None). bias (G*H) or None is added to gh (GRU: b_hn inside r * (.)).
rnn_cell_bwd(mode, d_gx, d_gh, d_state, grad, gx, gh, state, bias, out): LSTM d_gx = the gates' gradient
(gx's and gh's alike; d_gh None), d_state = dc; GRU d_gx, d_gh, d_state = dh; RNN d_gx (d_gh, d_state None)."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("rnn_cell_fwd", "rnn_cell_bwd")


def _acc(t):
    a = array(t)
    return a.astype(np.float64 if a.dtype == np.float64 else np.float32, copy=False)


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _gates(gx, gh, bias, g):
    """(B, G, H) pre-activations x part and h part (bias added to the h part)."""
    a, b = _acc(gx), _acc(gh)
    hdim = a.shape[1] // g
    a = a.reshape(a.shape[0], g, hdim)
    b = b.reshape(b.shape[0], g, hdim)
    if bias is not None:
        b = b + _acc(bias).reshape(g, hdim)
    return a, b


def _store(t, v):
    o = array(t)
    np.copyto(o, v.reshape(o.shape).astype(o.dtype))


def _lstm(gx, gh, c, bias):
    a, b = _gates(gx, gh, bias, 4)
    s = a + b
    i, f, o = _sigmoid(s[:, 0]), _sigmoid(s[:, 1]), _sigmoid(s[:, 3])
    g = np.tanh(s[:, 2])
    cp = _acc(c)
    c2 = f * cp + i * g
    return i, f, g, o, cp, c2, np.tanh(c2)


def _gru(gx, gh, h, bias):
    a, b = _gates(gx, gh, bias, 3)
    r = _sigmoid(a[:, 0] + b[:, 0])
    z = _sigmoid(a[:, 1] + b[:, 1])
    hn = b[:, 2]
    n = np.tanh(a[:, 2] + r * hn)
    return r, z, hn, n, _acc(h)


def rnn_cell_fwd(mode, out, gx, gh, state, bias):
    _faults.hit("launch")
    if mode == "LSTM":
        i, f, g, o, cp, c2, tc = _lstm(gx, gh, state, bias)
        _store(out, np.stack([o * tc, c2]))
    elif mode == "GRU":
        r, z, hn, n, hp = _gru(gx, gh, state, bias)
        _store(out, n + z * (hp - n))
    else:
        a, b = _gates(gx, gh, bias, 1)
        v = (a + b)[:, 0]
        _store(out, np.where(v < 0, 0, v) if mode == "RNN_RELU" else np.tanh(v))


def rnn_cell_bwd(mode, d_gx, d_gh, d_state, grad, gx, gh, state, bias, out):
    _faults.hit("launch")
    gr = _acc(grad)
    if mode == "LSTM":
        i, f, g, o, cp, c2, tc = _lstm(gx, gh, state, bias)
        dh, dc = gr[0], gr[1]
        dc2 = dc + dh * o * (1 - tc * tc)
        dg = np.stack([dc2 * g * i * (1 - i), dc2 * cp * f * (1 - f), dc2 * i * (1 - g * g), dh * tc * o * (1 - o)], 1)
        _store(d_gx, dg)
        _store(d_state, dc2 * f)
    elif mode == "GRU":
        r, z, hn, n, hp = _gru(gx, gh, state, bias)
        dn = gr * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = gr * (hp - n) * z * (1 - z)
        _store(d_gx, np.stack([dr, dz, dn], 1))
        _store(d_gh, np.stack([dr, dz, dn * r], 1))
        _store(d_state, gr * z)
    else:
        y = _acc(out)
        _store(d_gx, np.where(y > 0, gr, 0) if mode == "RNN_RELU" else gr * (1 - y * y))
