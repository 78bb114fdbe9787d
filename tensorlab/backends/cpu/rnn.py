"""CPU primitives of the fused recurrent cells (the names of backends/cuda/rnn.py): the gate math of
kernels/rnn.cu in NumPy, float32 for float16/bfloat16/float32, float64 for float64. Operands are contiguous:
gx / gh (B, G*H) with torch's gate order, states (B, H); mode is "LSTM", "GRU", "RNN_TANH" or "RNN_RELU".

rnn_cell_fwd(mode, out, gx, gh, state, bias): LSTM out (2, B, H) = (h', c') from c = state; GRU out (B, H)
from h = state; RNN out (B, H) (state None). bias (G*H) or None is added to gh (GRU: b_hn inside r * (.)).
rnn_cell_bwd(mode, d_gx, d_gh, d_state, grad, gx, gh, state, bias, out): LSTM d_gx = the gates' gradient
(gx's and gh's alike; d_gh None), d_state = dc; GRU d_gx, d_gh, d_state = dh; RNN d_gx (d_gh, d_state None).

rnn_seq_fwd / rnn_seq_bwd run a whole layer direction (kernels/rnn.cu's rnn_seq_fwd / rnn_seq_bwd): gi (T, B, G*H)
with the biases folded in (GRU: b_ih; b_hh as `b_hh`), w_hh (G*H, H); hs / cs (T, B, H) the hidden and cell
states, ws (T, B, 4H, float32 or float64) the gate workspace the backward reads (LSTM i, f, g, o; GRU r, z, n,
h W_hn + b_hn). States are rounded through the tensors' dtype every step, as the per-step cells store them."""
from __future__ import annotations

import numpy as np

from ... import _faults
from . import parallel as _par
from .memory import array

__all__ = ("rnn_cell_fwd", "rnn_cell_bwd", "rnn_seq_fwd", "rnn_seq_bwd")


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


def _round(v, dt):
    return v.astype(dt).astype(v.dtype, copy=False) if dt != v.dtype else v


def rnn_seq_fwd(mode, hs, cs, ws, gi, w_hh, b_hh, h0, c0, reverse):
    """Its products on OpenBLAS's threads or held at one thread (parallel.blas_product: the largest
    is the batch by W_hh)."""
    return _par.blas_product(array(hs).shape[1] * array(w_hh).size, _rnn_seq_fwd, mode, hs, cs, ws, gi, w_hh, b_hh,
                             h0, c0, reverse)


def _rnn_seq_fwd(mode, hs, cs, ws, gi, w_hh, b_hh, h0, c0, reverse):
    _faults.hit("launch")
    hso = array(hs)
    steps, batch, hidden = hso.shape
    if not (steps and batch and hidden):
        return
    if mode == "LSTM":
        with np.errstate(all="ignore"):
            _lstm_seq_fwd(hso, array(cs), array(ws), _acc(gi), _acc(w_hh), _acc(h0), _acc(c0), reverse)
        return
    _seq_fwd(mode, hso, ws, gi, w_hh, b_hh, h0, reverse)


# The LSTM workspace of the CPU backend (its own layout: only rnn_seq_bwd below reads it) holds each
# step's gates gate-major, (4, B, H) in the slot order i, f, o, g: a step's gate product is one batched
# product h (B, H) @ W_k^T (H, H) per gate (four 128-wide GEMMs beat one (B, 4H) product in OpenBLAS by
# a third), every per-step NumPy call works on contiguous blocks (the three sigmoids are one), and the
# input projections, states and gradients keep the tensors' (T, B, .) layout: no transposed copies.
_LSTM_WS = (0, 1, 3, 2)  # torch's gate (i, f, g, o) slot of each workspace slot
_LSTM_SIGN = (-1, -1, -1, 1)  # per workspace slot: i, f, o negated, g as is


def _lstm_seq_fwd(hso, cso, wso, g_all, w, h0, c0, reverse):
    """A whole LSTM layer direction, a handful of NumPy calls per step into preallocated buffers.
    The sigmoid gates' pre-activations are negated once up front (the input projections and
    W_hh's rows; exact), so each step's product already holds -s for i, f, o and the sigmoid is
    1 / (1 + exp(-s)) in three in-place calls; the same bits as computing it from s."""
    steps, batch, H = hso.shape
    dt = hso.dtype
    acc = g_all.dtype
    w4 = w.reshape(4, H, H)
    wq = np.empty((4, H, H), acc)  # per slot W_k^T, the sigmoid gates' negated
    g4 = g_all.reshape(steps, batch, 4, H)
    work = wso.reshape(steps, 4, batch, H)  # the input projections in slot order, then the gates
    for slot, gate in enumerate(_LSTM_WS):
        np.multiply(w4[gate].T, _LSTM_SIGN[slot], out=wq[slot])
        np.multiply(g4[:, :, gate], _LSTM_SIGN[slot], out=work[:, slot])
    direct = dt == acc  # states straight into hs / cs; else rounded through dt every step, as the cells store them
    out_h = hso if direct else np.empty((steps, batch, H), acc)
    out_c = cso if direct else np.empty((steps, batch, H), acc)
    prod = np.empty((4, batch, H), acc)
    ig = np.empty((batch, H), acc)
    h, c = h0, c0
    for step in range(steps):
        t = steps - 1 - step if reverse else step
        wt = work[t]
        np.matmul(h, wq, out=prod)
        wt += prod
        sig = wt[0:3]
        np.exp(sig, out=sig)
        sig += 1
        np.reciprocal(sig, out=sig)
        gg = wt[3]
        np.tanh(gg, out=gg)
        cn, hn = out_c[t], out_h[t]
        np.multiply(wt[1], c, out=cn)
        np.multiply(wt[0], gg, out=ig)
        cn += ig
        if not direct:
            cn[...] = cn.astype(dt)
        np.tanh(cn, out=hn)
        hn *= wt[2]
        if not direct:
            hn[...] = hn.astype(dt)
        h, c = hn, cn
    if not direct:
        np.copyto(hso, out_h, casting="unsafe")
        np.copyto(cso, out_c, casting="unsafe")


def _seq_fwd(mode, hso, ws, gi, w_hh, b_hh, h0, reverse):
    """GRU and the plain RNNs, step by step."""
    steps, batch, hidden = hso.shape
    dt = hso.dtype
    g_all = _acc(gi)
    acc = g_all.dtype
    w = _acc(w_hh)
    bias = _acc(b_hh) if b_hh is not None else None
    h = _acc(h0).copy()
    out_h = np.empty((steps, batch, hidden), acc)
    work = np.empty((steps, batch, 4, hidden), acc) if mode == "GRU" else None
    for step in range(steps):
        t = steps - 1 - step if reverse else step
        pre = (h @ w.T).reshape(batch, -1, hidden)
        g = g_all[t].reshape(batch, -1, hidden)
        if mode == "GRU":
            if bias is not None:
                pre = pre + bias.reshape(3, hidden)
            r = _sigmoid(g[:, 0] + pre[:, 0])
            z = _sigmoid(g[:, 1] + pre[:, 1])
            n = np.tanh(g[:, 2] + r * pre[:, 2])
            h = n + z * (h - n)
            work[t] = np.stack([r, z, n, pre[:, 2]], 1)
        else:
            v = (g + pre)[:, 0]
            h = np.where(v < 0, 0, v) if mode == "RNN_RELU" else np.tanh(v)
        h = _round(h, dt)
        out_h[t] = h
    np.copyto(hso, out_h.astype(dt))
    if work is not None:
        np.copyto(array(ws), work.reshape(steps, batch, 4 * hidden))


def rnn_seq_bwd(mode, d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0, reverse):
    """Its products on OpenBLAS's threads or held at one thread (parallel.blas_product: the largest
    is the batch by W_hh)."""
    return _par.blas_product(array(grad_h).shape[1] * array(w_hh).size, _rnn_seq_bwd, mode, d_gi, d_gh, d_h0, d_c0,
                             grad_h, grad_c, ws, hs, cs, w_hh, h0, c0, reverse)


def _rnn_seq_bwd(mode, d_gi, d_gh, d_h0, d_c0, grad_h, grad_c, ws, hs, cs, w_hh, h0, c0, reverse):
    _faults.hit("launch")
    gho = _acc(grad_h)
    steps, batch, hidden = gho.shape
    if not (steps and batch and hidden):
        return
    if mode == "LSTM":
        with np.errstate(all="ignore"):
            _lstm_seq_bwd(d_gi, d_h0, d_c0, gho, _acc(grad_c), array(ws), _acc(cs), _acc(w_hh), _acc(c0), reverse)
        return
    _seq_bwd(mode, d_gi, d_gh, d_h0, gho, ws, hs, w_hh, h0, reverse)


def _lstm_seq_bwd(d_gi, d_h0, d_c0, gho, gca, wsa, csa, w, c0, reverse):
    """Backpropagation through time of _lstm_seq_fwd, in its gate-major layout. Everything that
    does not depend on the recurrence (tanh(c), the gates' derivative factors) is computed for all
    steps at once; a step is then a few in-place calls on contiguous blocks and the batched product
    with W_hh's gate blocks; the gate gradients go into d_gi in torch's layout in one copy at the end."""
    steps, batch, H = gho.shape
    dgo = array(d_gi).reshape(steps, batch, 4, H)
    dt = dgo.dtype
    acc = gho.dtype
    work = wsa.reshape(steps, 4, batch, H)
    i, f, o, g = (work[:, k] for k in range(4))  # the workspace's slot order (_LSTM_WS), each (T, B, H)
    prev_c = np.empty_like(csa)  # the cell state each step read
    if reverse:
        prev_c[:-1], prev_c[-1] = csa[1:], c0
    else:
        prev_c[1:], prev_c[0] = csa[:-1], c0
    tc = np.tanh(csa)
    a = 1 - tc * tc
    a *= o                              # dc += dh * o * (1 - tanh(c)^2)
    fac = np.empty((steps, 4, batch, H), acc)  # torch's gate order: d(pre-activation) = dc * fac[:, 0:3], dh * fac[:, 3]
    np.multiply(g, i * (1 - i), out=fac[:, 0])
    np.multiply(prev_c, f * (1 - f), out=fac[:, 1])
    np.multiply(i, 1 - g * g, out=fac[:, 2])
    np.multiply(tc, o * (1 - o), out=fac[:, 3])
    use_gc = bool(gca.any())
    w4 = w.reshape(4, H, H)
    out = np.empty((steps, 4, batch, H), acc)  # the gates' gradients, torch's gate order
    prod = np.empty((4, batch, H), acc)
    dh = np.zeros((batch, H), acc)
    dc = np.zeros((batch, H), acc)
    dht = np.empty((batch, H), acc)
    dct = np.empty((batch, H), acc)
    for step in range(steps):
        t = step if reverse else steps - 1 - step
        dg = out[t]
        np.add(gho[t], dh, out=dht)
        np.multiply(dht, a[t], out=dct)
        if use_gc:
            dct += gca[t]
        dct += dc
        np.multiply(dct, fac[t, 0:3], out=dg[0:3])
        np.multiply(dht, fac[t, 3], out=dg[3])
        np.multiply(dct, f[t], out=dc)
        if dt != acc:
            dg[...] = dg.astype(dt)
        np.matmul(dg, w4, out=prod)  # dh = sum over the gates of dg_k @ W_k
        np.add(prod[0], prod[1], out=dh)
        dh += prod[2]
        dh += prod[3]
    np.copyto(dgo, out.transpose(0, 2, 1, 3), casting="unsafe")
    _store(d_h0, dh)
    _store(d_c0, dc)


def _seq_bwd(mode, d_gi, d_gh, d_h0, gho, ws, hs, w_hh, h0, reverse):
    """GRU and the plain RNNs, step by step."""
    steps, batch, hidden = gho.shape
    dt = array(d_gi).dtype
    acc = gho.dtype
    w = _acc(w_hh)
    hsa = _acc(hs)
    work = array(ws).reshape(steps, batch, 4, hidden) if mode == "GRU" else None
    gates = w.shape[0] // hidden
    out_gi = np.empty((steps, batch, gates, hidden), acc)
    out_gh = np.empty((steps, batch, gates, hidden), acc) if mode == "GRU" else None
    dh = np.zeros((batch, hidden), acc)
    for step in range(steps):
        t = step if reverse else steps - 1 - step
        tp = t + 1 if reverse else t - 1
        first = tp < 0 or tp >= steps
        dht = gho[t] + dh
        direct = 0
        if mode == "GRU":
            r, z, n, hn = (work[t, :, k] for k in range(4))
            hp = _acc(h0) if first else hsa[tp]
            dn = dht * (1 - z) * (1 - n * n)
            dr = dn * hn * r * (1 - r)
            dz = dht * (hp - n) * z * (1 - z)
            out_gi[t] = np.stack([dr, dz, dn], 1)
            dgate = np.stack([dr, dz, dn * r], 1)
            out_gh[t] = dgate
            direct = dht * z
        else:
            y = hsa[t]
            dgate = (np.where(y > 0, dht, 0) if mode == "RNN_RELU" else dht * (1 - y * y))[:, None]
            out_gi[t] = dgate
        dh = direct + _round(dgate.reshape(batch, -1), dt) @ w
    _store(d_gi, out_gi)
    if out_gh is not None:
        _store(d_gh, out_gh)
    _store(d_h0, dh)
