"""Fused recurrent cells: one op per time step for the gate math of LSTM / GRU / RNN (tanh, relu), over the
`rnn_cell_fwd` and `rnn_cell_bwd` primitives (backends/cpu/rnn.py, backends/cuda/rnn.py with kernels/rnn.cu).

nn/rnn.py's layers and cells call `cell` where `supported` says so (floating inputs of one dtype and device);
the composite step functions there stay the reference and the fallback (ENABLED = False).

cell(mode, gx, gh, state, bias): gx = the input projection of the step (biases folded in by the caller),
gh = h W_hh^T, state = c (LSTM) or h (GRU) or None (RNN), bias = b_hh added to gh's gates (GRU: b_hn inside
r * (h W_hn + b_hn), torch's placement) or None. LSTM returns (h', c') as the two halves of one (2, B, H)
result (both contiguous); the others return h'. Recorded as "fused_rnn_cell": its derivative runs
rnn_cell_bwd (the gates' gradients, recomputing the gates from the saved inputs) unless create_graph is
asked for; then cell_backward_composite gives the same gradients from differentiable ops.

sequence(mode, gi, w_hh, b_hh, h0, c0, reverse): a whole layer direction in one op (no Python-level op per
time step): gi (T, B, G*H) the input projections of every step with the biases folded in (GRU: b_ih only,
b_hh given as b_hh). Its result R (S, T, B, H) holds the hidden states (S = 2 for LSTM: and the cell states);
the layer's output is R[0], h_n / c_n are R[0][last] / R[1][last] (views). Recorded as
"fused_rnn_sequence": the derivative runs rnn_seq_bwd (backpropagation through time from the saved gate
workspace) and one matmul for W_hh's gradient; under create_graph it steps cell_backward_composite."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor
from . import registry, shape
from ._common import empty_tensor
from .registry import KEEP, OpDef

_F = "rnn_fused"
registry.register(
    OpDef("fused_rnn_cell", _F, "rnn_cell_fwd", KEEP),
    OpDef("fused_rnn_cell_backward", _F, "rnn_cell_bwd", KEEP, differentiable=False),
    OpDef("fused_rnn_sequence", _F, "rnn_seq_fwd", KEEP),
    OpDef("fused_rnn_sequence_backward", _F, "rnn_seq_bwd", KEEP, differentiable=False),
)
FUNCTIONS = ()

ENABLED = True  # False: nn/rnn.py steps with its composites (tests compare the two paths)
SEQUENCE = True  # False: the layers step with `cell` (one op per time step) instead of `sequence`
GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def supported(x, *params):
    if not ENABLED or not x._dtype.is_floating_point or x._dtype not in dtypes.FLOATING:
        return False
    return all(p is None or (isinstance(p, Tensor) and p._dtype is x._dtype and p.device == x.device)
               for p in params)


def _c(t):
    return None if t is None else t.detach().contiguous()


def cell(mode, gx, gh, state, bias):
    b, h = gx.shape[0], gx.shape[1] // GATES[mode]
    out = empty_tensor((2, b, h) if mode == "LSTM" else (b, h), gx._dtype, gx.device)
    gx._backend.rnn_cell_fwd(mode, out, _c(gx), _c(gh), _c(state), _c(bias))
    inputs = (gx, gh) + ((state,) if state is not None else ()) + ((bias,) if bias is not None else ())
    out = autograd_hooks.record(out, "fused_rnn_cell", inputs, mode=mode, has_state=state is not None,
                                has_bias=bias is not None)
    return (out[0], out[1]) if mode == "LSTM" else out


def cell_backward(mode, grad, gx, gh, state, bias, out):
    """(d_gx, d_gh, d_state) from the fused backward (d_state None for RNN)."""
    g = grad.detach()
    if g._dtype is not gx._dtype:
        g = g.to(gx._dtype)
    g = g.contiguous()
    b, h = gx.shape[0], gx.shape[1] // GATES[mode]
    d_gx = empty_tensor(tuple(gx.shape), gx._dtype, gx.device)
    d_gh = empty_tensor(tuple(gx.shape), gx._dtype, gx.device) if mode == "GRU" else None
    d_state = empty_tensor((b, h), gx._dtype, gx.device) if state is not None else None
    gx._backend.rnn_cell_bwd(mode, d_gx, d_gh, d_state, g, _c(gx), _c(gh), _c(state), _c(bias),
                             None if mode == "LSTM" or mode == "GRU" else _c(out))
    return d_gx, (d_gx if d_gh is None else d_gh), d_state


def cell_backward_composite(mode, grad, gx, gh, state, bias):
    """The same gradients with differentiable ops (for create_graph)."""
    low = gx._dtype in (dtypes.float16, dtypes.bfloat16)
    up = (lambda t: None if t is None else t.float()) if low else (lambda t: t)  # noqa: E731
    down = (lambda t: t.to(gx._dtype)) if low else (lambda t: t)  # noqa: E731
    gxf, ghf, sf, g = up(gx), up(gh), up(state), up(grad)
    if bias is not None:
        ghf = ghf + up(bias)
    if mode == "LSTM":
        i, f, gg, o = (gxf + ghf).chunk(4, -1)
        i, f, gg, o = i.sigmoid(), f.sigmoid(), gg.tanh(), o.sigmoid()
        tc = (f * sf + i * gg).tanh()
        dh, dc = g[0], g[1]
        dc2 = dc + dh * o * (1 - tc * tc)
        dg = shape.cat([dc2 * gg * i * (1 - i), dc2 * sf * f * (1 - f), dc2 * i * (1 - gg * gg),
                        dh * tc * o * (1 - o)], -1)
        return down(dg), down(dg), down(dc2 * f)
    if mode == "GRU":
        x_r, x_z, x_n = gxf.chunk(3, -1)
        h_r, h_z, hn = ghf.chunk(3, -1)
        r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
        n = (x_n + r * hn).tanh()
        dn = g * (1 - z) * (1 - n * n)
        dr = dn * hn * r * (1 - r)
        dz = g * (sf - n) * z * (1 - z)
        return down(shape.cat([dr, dz, dn], -1)), down(shape.cat([dr, dz, dn * r], -1)), down(g * z)
    v = gxf + ghf
    if mode == "RNN_RELU":
        dp = g * (v > 0).to(g.dtype)
    else:
        y = v.tanh()
        dp = g * (1 - y * y)
    return down(dp), down(dp), None


def _acc_dtype(dt):
    return dtypes.float64 if dt is dtypes.float64 else dtypes.float32


def sequence_supported(x, hidden, mode, *params):
    """Whether a layer direction runs as one `sequence` op (any hidden size: the CUDA kernels stage h in
    fixed-size shared-memory chunks)."""
    return bool(SEQUENCE and supported(x, *params))


def sequence(mode, gi, w_hh, b_hh, h0, c0, reverse):
    steps, batch = gi.shape[0], gi.shape[1]
    hidden = w_hh.shape[1]
    lstm = mode == "LSTM"
    res = empty_tensor((2 if lstm else 1, steps, batch, hidden), gi._dtype, gi.device)
    wshape = (steps, batch, 4 * hidden) if mode in ("LSTM", "GRU") else (1,)
    ws = empty_tensor(wshape, _acc_dtype(gi._dtype), gi.device)
    gi._backend.rnn_seq_fwd(mode, res[0], res[1] if lstm else None, ws, _c(gi), _c(w_hh), _c(b_hh), _c(h0),
                            _c(c0) if lstm else None, bool(reverse))
    inputs = (gi, w_hh, h0) + ((c0,) if lstm else ()) + ((b_hh,) if b_hh is not None else ())
    res = autograd_hooks.record(res, "fused_rnn_sequence", inputs, mode=mode, reverse=bool(reverse), ws=ws,
                                has_bias=b_hh is not None)
    last = 0 if reverse else steps - 1
    return res[0], res[0][last], (res[1][last] if lstm else None)


def _prev_states(hs, h0, reverse):
    """The state each step read: h0 for the first processed step, else the neighbouring output."""
    if reverse:
        return shape.cat([hs[1:], h0.unsqueeze(0)], 0)
    return shape.cat([h0.unsqueeze(0), hs[:-1]], 0)


def sequence_backward(grad, gi, w_hh, h0, c0, res, ws, mode, reverse, needs_w):
    """(d_gi, d_w_hh, d_h0, d_c0, d_b_hh) from the saved workspace; d_c0 None unless LSTM, d_b_hh None
    unless GRU. Not differentiable (see sequence_backward_composite)."""
    g = grad.detach()
    if g._dtype is not gi._dtype:
        g = g.to(gi._dtype)
    g = g.contiguous()
    lstm, gru = mode == "LSTM", mode == "GRU"
    steps, batch, gh = gi.shape
    hidden = w_hh.shape[1]
    d_gi = empty_tensor((steps, batch, gh), gi._dtype, gi.device)
    d_gh = empty_tensor((steps, batch, gh), gi._dtype, gi.device) if gru else None
    d_h0 = empty_tensor((batch, hidden), gi._dtype, gi.device)
    d_c0 = empty_tensor((batch, hidden), gi._dtype, gi.device) if lstm else None
    r = res.detach()
    gi._backend.rnn_seq_bwd(mode, d_gi, d_gh, d_h0, d_c0, g[0], g[1] if lstm else None, ws, r[0],
                            r[1] if lstm else None, _c(w_hh), _c(h0), _c(c0) if lstm else None, bool(reverse))
    dg = d_gi if d_gh is None else d_gh
    d_w = None
    if needs_w:
        prev = _prev_states(r[0], h0.detach(), reverse)
        d_w = dg.reshape(steps * batch, gh).t().matmul(prev.reshape(steps * batch, hidden))
    d_b = dg.sum((0, 1)) if gru else None
    return d_gi, d_w, d_h0, d_c0, d_b


def sequence_backward_composite(grad, gi, w_hh, b_hh, h0, c0, res, mode, reverse):
    """The same gradients from differentiable ops (for create_graph): backpropagation through time with
    cell_backward_composite at every step."""
    lstm = mode == "LSTM"
    steps = gi.shape[0]
    hs = res[0]
    prev_h = _prev_states(hs, h0, reverse)
    prev_c = _prev_states(res[1], c0, reverse) if lstm else None
    order = range(steps) if reverse else range(steps - 1, -1, -1)
    dh = dc = None
    d_gi = [None] * steps
    d_w = d_b = None
    for t in order:
        gh_t = prev_h[t].matmul(w_hh.t())
        dht = grad[0][t] if dh is None else grad[0][t] + dh
        if lstm:
            dct = grad[1][t] if dc is None else grad[1][t] + dc
            gx, gh, dstate = cell_backward_composite(mode, shape.stack([dht, dct]), gi[t], gh_t, prev_c[t], None)
            dc = dstate
        else:
            gx, gh, dstate = cell_backward_composite(mode, dht, gi[t], gh_t, prev_h[t] if mode == "GRU" else None,
                                                     b_hh)
        d_gi[t] = gx
        dh = gh.matmul(w_hh) if dstate is None or lstm else gh.matmul(w_hh) + dstate
        step_w = gh.t().matmul(prev_h[t])
        d_w = step_w if d_w is None else d_w + step_w
        if b_hh is not None:
            d_b = gh.sum(0) if d_b is None else d_b + gh.sum(0)
    return shape.stack(d_gi, 0), d_w, dh, dc, d_b
