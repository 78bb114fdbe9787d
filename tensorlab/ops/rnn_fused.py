"""Fused recurrent cells: one op per time step for the gate math of LSTM / GRU / RNN (tanh, relu), over the
`rnn_cell_fwd` and `rnn_cell_bwd` primitives (backends/cpu/rnn.py, backends/cuda/rnn.py with kernels/rnn.cu).

nn/rnn.py's layers and cells call `cell` where `supported` says so (floating inputs of one dtype and device);
the composite step functions there stay the reference and the fallback (ENABLED = False).

cell(mode, gx, gh, state, bias): gx = the input projection of the step (biases folded in by the caller),
gh = h W_hh^T, state = c (LSTM) or h (GRU) or None (RNN), bias = b_hh added to gh's gates (GRU: b_hn inside
r * (h W_hn + b_hn), torch's placement) or None. LSTM returns (h', c') as the two halves of one (2, B, H)
result (both contiguous); the others return h'. Recorded as "fused_rnn_cell": its derivative runs
rnn_cell_bwd (the gates' gradients, recomputing the gates from the saved inputs) unless create_graph is
asked for; then cell_backward_composite gives the same gradients from differentiable ops."""
from __future__ import annotations

from .. import autograd_hooks, dtypes
from ..tensor import Tensor
from . import registry
from ._common import empty_tensor
from .registry import KEEP, OpDef

_F = "rnn_fused"
registry.register(
    OpDef("fused_rnn_cell", _F, "rnn_cell_fwd", KEEP),
    OpDef("fused_rnn_cell_backward", _F, "rnn_cell_bwd", KEEP, differentiable=False),
)
FUNCTIONS = ()

ENABLED = True  # False: nn/rnn.py steps with its composites (tests compare the two paths)
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
    from . import shape
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
