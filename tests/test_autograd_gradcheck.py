"""Every differentiable op's derivative against finite differences (gradcheck) and against
torch's gradients.

Elementwise ops take their sample inputs from tests/op_table.py; every other op (reductions,
linalg, shape ops, views, copies, indexing) has its samples in GRAD_SAMPLES below: functions
written against a module `m` (tensorlab or torch), so the same sample runs in both."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import layout as L
from tensorlab.autograd import derivatives as D
from tensorlab.ops.registry import REGISTRY

from op_table import OPS, samples, to_torch

DIFFERENTIABLE = sorted(n for n, d in REGISTRY.items() if d.differentiable)
ELEMENTWISE = {op.name: op for op in OPS if op.name in REGISTRY and REGISTRY[op.name].differentiable}


# -- sample inputs ------------------------------------------------------------------------------------
class Arg:
    """A sample argument: a float64 tensor that requires grad (values drawn per `kind`), or a
    fixed tensor (indices, masks)."""

    def __init__(self, shape, kind="any", fixed=None, dtype=None):
        self.shape, self.kind, self.fixed, self.dtype = tuple(shape), kind, fixed, dtype

    def make(self, device, rng):
        if self.fixed is not None:
            return tl.tensor(np.asarray(self.fixed), dtype=self.dtype, device=device)
        lo, hi = {"any": (-2.0, 2.0), "positive": (0.5, 2.0)}.get(self.kind, (-2.0, 2.0))
        vals = rng.uniform(lo, hi, self.shape)
        if self.kind == "zeros":  # a few exact zeros (cumprod / prod take another path there)
            vals = np.round(vals * 2) / 2
            vals.reshape(-1)[::3] = 0.0
        return tl.tensor(vals, dtype=tl.float64, device=device, requires_grad=True)


def idx(values, dtype=None):
    return Arg(np.shape(values), fixed=values, dtype=dtype or tl.int64)


def mask(values):
    return Arg(np.shape(values), fixed=values, dtype=tl.bool)


X = Arg((3, 4))
PERM_ROWS = [[2, 0, 1, 3], [1, 3, 0, 2], [3, 2, 1, 0]]  # scatter indices without repeats along dim 1

GRAD_SAMPLES = {
    # reductions
    "sum": [(lambda m, x: x.sum(), X), (lambda m, x: x.sum(1), X), (lambda m, x: x.sum((0, 1), keepdim=True), X),
            (lambda m, x: x.sum(), Arg(()))],
    "mean": [(lambda m, x: x.mean(), X), (lambda m, x: x.mean(0, keepdim=True), X)],
    "prod": [(lambda m, x: x.prod(), X), (lambda m, x: x.prod(1), X), (lambda m, x: x.prod(0, keepdim=True),
                                                                       Arg((3, 4), "zeros")),
             (lambda m, x: x.prod(), Arg((2, 3), "zeros"))],
    "amax": [(lambda m, x: x.amax(), X), (lambda m, x: x.amax(1), X), (lambda m, x: x.amax((0, 1), keepdim=True), X)],
    "amin": [(lambda m, x: x.amin(0), X), (lambda m, x: x.amin(), X)],
    "max": [(lambda m, x: x.max(), X), (lambda m, x: x.max(1)[0], X), (lambda m, x: x.max(0, keepdim=True).values, X)],
    "min": [(lambda m, x: x.min(), X), (lambda m, x: x.min(1).values, X), (lambda m, x: x.min(-1, True)[0], X)],
    "var": [(lambda m, x: x.var(), X), (lambda m, x: x.var(1), X), (lambda m, x: x.var(0, correction=0), X)],
    "std": [(lambda m, x: x.std(), X), (lambda m, x: x.std(1, keepdim=True), X)],
    "norm": [(lambda m, x: x.norm(), X), (lambda m, x: x.norm(dim=1), X), (lambda m, x: x.norm(p=1), X),
             (lambda m, x: x.norm(p=3, dim=0), X), (lambda m, x: x.norm(p=float("inf"), dim=1), X),
             (lambda m, x: x.norm(p=0.5), Arg((3, 4), "positive")), (lambda m, x: x.norm(p=-float("inf")), X)],
    "logsumexp": [(lambda m, x: x.logsumexp(1), X), (lambda m, x: x.logsumexp((0, 1), keepdim=True), X)],
    "cumsum": [(lambda m, x: x.cumsum(1), X), (lambda m, x: x.cumsum(0), X)],
    "cumprod": [(lambda m, x: x.cumprod(1), X), (lambda m, x: x.cumprod(1), Arg((3, 4), "zeros")),
                (lambda m, x: x.cumprod(0), Arg((4, 3), "zeros"))],
    "cumsum_": [(lambda m, x: x.clone().cumsum_(1), X)],
    "cumprod_": [(lambda m, x: x.clone().cumprod_(0), Arg((4, 3), "zeros"))],
    "softmax": [(lambda m, x: x.softmax(1), X), (lambda m, x: x.softmax(0), X)],
    "log_softmax": [(lambda m, x: x.log_softmax(1), X), (lambda m, x: x.log_softmax(-2), X)],
    # matrix products
    "matmul": [(lambda m, a, b: a.matmul(b), Arg((3, 4)), Arg((4, 2))),
               (lambda m, a, b: a.matmul(b), Arg((4,)), Arg((4,))),
               (lambda m, a, b: a.matmul(b), Arg((3, 4)), Arg((4,))),
               (lambda m, a, b: a.matmul(b), Arg((4,)), Arg((4, 2))),
               (lambda m, a, b: a @ b, Arg((2, 3, 4)), Arg((4, 2))),
               (lambda m, a, b: a @ b, Arg((2, 1, 2, 3)), Arg((3, 3, 2))),
               (lambda m, a, b: a @ b, Arg((3,)), Arg((2, 3, 2)))],
    "mm": [(lambda m, a, b: a.mm(b), Arg((3, 4)), Arg((4, 2)))],
    "bmm": [(lambda m, a, b: a.bmm(b), Arg((2, 3, 4)), Arg((2, 4, 2)))],
    "mv": [(lambda m, a, b: a.mv(b), Arg((3, 4)), Arg((4,)))],
    "dot": [(lambda m, a, b: a.dot(b), Arg((4,)), Arg((4,)))],
    "outer": [(lambda m, a, b: a.outer(b), Arg((3,)), Arg((4,)))],
    # shape ops
    "cat": [(lambda m, a, b: m.cat([a, b], 0), Arg((2, 3)), Arg((1, 3))),
            (lambda m, a, b: m.cat([a, b], 1), Arg((2, 3)), Arg((2, 2))),
            (lambda m, a, b: m.cat([a, b]), Arg((2, 3)), Arg((0,)))],
    "stack": [(lambda m, a, b: m.stack([a, b], 1), Arg((2, 3)), Arg((2, 3)))],
    "flip": [(lambda m, x: x.flip(0), X), (lambda m, x: x.flip((0, 1)), X)],
    "roll": [(lambda m, x: x.roll(1, 0), X), (lambda m, x: x.roll(5), X), (lambda m, x: x.roll((1, -1), (0, 1)), X)],
    "gather": [(lambda m, x, i: x.gather(1, i), X, idx([[0, 0], [3, 1], [2, 2]])),
               (lambda m, x, i: x.gather(0, i), X, idx([[0, 2, 1, 0]]))],
    "scatter": [(lambda m, x, i, s: x.scatter(1, i, s), X, idx(PERM_ROWS), Arg((3, 4))),
                (lambda m, x, i, s: x.scatter(1, i, s), X, idx([[2], [0], [3]]), Arg((3, 2))),
                (lambda m, x, i: x.scatter(1, i, 2.5), X, idx([[1, 2], [0, 3], [3, 1]]))],
    "scatter_": [(lambda m, x, i, s: x.clone().scatter_(1, i, s), X, idx(PERM_ROWS), Arg((3, 4)))],
    "scatter_add": [(lambda m, x, i, s: x.scatter_add(1, i, s), X, idx([[0, 0, 1], [3, 3, 3], [1, 2, 1]]),
                     Arg((3, 3)))],
    "scatter_add_": [(lambda m, x, i, s: x.clone().scatter_add_(0, i, s), X, idx([[0, 1, 0, 2], [0, 0, 0, 0]]),
                      Arg((2, 4)))],
    "index_select": [(lambda m, x, i: x.index_select(0, i), X, idx([2, 0, 2])),
                     (lambda m, x, i: x.index_select(1, i), X, idx([3, 1]))],
    "index_fill": [(lambda m, x, i: x.index_fill(1, i, 2.0), X, idx([0, 2]))],
    "index_fill_": [(lambda m, x, i: x.clone().index_fill_(0, i, -1.0), X, idx([1]))],
    "masked_select": [(lambda m, x, k: x.masked_select(k), X, mask([[True, False, True, False]] * 3)),
                      (lambda m, x, k: x.masked_select(k), Arg((4,)), mask([[True, False, True, True],
                                                                            [False, True, False, True]]))],
    "sort": [(lambda m, x: x.sort(1)[0], X), (lambda m, x: x.sort(0, descending=True).values, X)],
    "topk": [(lambda m, x: x.topk(2, 1)[0], X), (lambda m, x: x.topk(1, 0, largest=False).values, X)],
    "tril": [(lambda m, x: x.tril(), X), (lambda m, x: x.tril(-1), X)],
    "triu": [(lambda m, x: x.triu(1), X)],
    "tril_": [(lambda m, x: x.clone().tril_(1), X)],
    "triu_": [(lambda m, x: x.clone().triu_(), X)],
    # in-place fills: the overwritten values get no gradient; a 0-dim value tensor gets their sum
    "fill_": [(lambda m, x, v: (x * 2).fill_(v), X, Arg(())), (lambda m, x: (x * 2).fill_(1.5) + x, X)],
    "zero_": [(lambda m, x: (x * 2).zero_() + x * x, X)],
}

# views, copies and indexing (not registry rows: their derivatives live in the same table)
VIEW_SAMPLES = {
    "view": [(lambda m, x: x.view(4, 3), X), (lambda m, x: x.reshape(-1), X), (lambda m, x: x.t().reshape(12), X),
             (lambda m, x: x.flatten(), X)],
    "alias": [(lambda m, x: x.t(), Arg((4,)))],
    "permute": [(lambda m, x: x.permute(1, 0), X), (lambda m, x: x.permute(2, 0, 1), Arg((2, 3, 2)))],
    "transpose": [(lambda m, x: x.transpose(0, 1), X), (lambda m, x: x.t(), X), (lambda m, x: x.mT, Arg((2, 3, 2)))],
    "expand": [(lambda m, x: x.expand(2, 3, 4), X), (lambda m, x: x.expand(3, 4), Arg((3, 1)))],
    "squeeze": [(lambda m, x: x.squeeze(), Arg((3, 1, 4))), (lambda m, x: x.squeeze(1), Arg((3, 1, 4)))],
    "unsqueeze": [(lambda m, x: x.unsqueeze(1), X), (lambda m, x: x.unsqueeze(-1), X)],
    "select": [(lambda m, x: x.select(1, 2), X), (lambda m, x: x[1], X), (lambda m, x: x.unbind(1)[3], X)],
    "narrow": [(lambda m, x: x.narrow(1, 1, 2), X), (lambda m, x: x.narrow(0, 2, 1), X)],
    "split": [(lambda m, x: x.split(3, 1)[1], X), (lambda m, x: x.chunk(2, 0)[0], X),
              (lambda m, x: x.split([1, 3], 1)[1], X)],
    "unfold": [(lambda m, x: x.unfold(1, 2, 1), X), (lambda m, x: x.unfold(0, 2, 1), X)],
    "diagonal": [(lambda m, x: x.diagonal(), X), (lambda m, x: x.diagonal(1), X),
                 (lambda m, x: x.diagonal(-1, 1, 0), X)],
    "as_strided": [(lambda m, x: x.as_strided((2, 2), (1, 2), 1), X),
                   (lambda m, x: x.t().as_strided((3, 3), (1, 1)), X)],
    "getitem": [(lambda m, x: x[1:, ::2], X), (lambda m, x: x[None, :, 1], X), (lambda m, x: x[..., -1], X),
                (lambda m, x: x.expand(2, 3, 4)[1, 0], X)],
    "index": [(lambda m, x, i: x[i], X, idx([0, 2, 0])), (lambda m, x, i: x[:, i], X, idx([[1, 1], [3, 0]])),
              (lambda m, x, k: x[k], X, mask([[True, False, True, False]] * 3)),
              (lambda m, x, i, j: x[i, 1:, j], Arg((3, 4, 2)), idx([0, 2]), idx([1, 0]))],
    "clone": [(lambda m, x: x.clone(), X), (lambda m, x: x.t().contiguous(), X)],
    "to": [(lambda m, x: x.to(m.float64, copy=True), X), (lambda m, x: x.double() * 1, X)],
    "copy_": [(lambda m, x, s: (x * 1).copy_(s), X, Arg((4,))),
              (lambda m, x: m.zeros(3, 4, dtype=m.float64).copy_(x), X)],
    "index_put_": [(lambda m, x, v, i: _setitem(x, i, v), X, Arg((2, 4)), idx([2, 0])),
                   (lambda m, x, v: _setitem(x, (slice(None), 1), v), X, Arg((3,))),
                   (lambda m, x, v, i: (x * 1).index_put_((i,), v, accumulate=True), X, Arg((4,)), idx([1, 1]))],
}


# convolution and pooling primitives (ops/conv.py, ops/pool.py), through their functional forms
GRAD_SAMPLES.update({
    "im2col": [(lambda m, x: m.nn.functional.unfold(x, (2, 3), padding=1, stride=(2, 1)), Arg((1, 2, 4, 4))),
               (lambda m, x, w: m.nn.functional.conv2d(x, w, padding=1, dilation=(1, 2)), Arg((2, 2, 4, 5)),
                Arg((3, 2, 2, 2)))],
    "col2im": [(lambda m, x: m.nn.functional.fold(x, (4, 5), 2, stride=(2, 1), padding=(1, 0)), Arg((1, 8, 12))),
               (lambda m, x, w: m.nn.functional.conv_transpose2d(x, w, stride=2, output_padding=1),
                Arg((1, 2, 3, 3)), Arg((2, 2, 2, 3)))],
    "max_pool2d": [(lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, ceil_mode=True), Arg((1, 2, 5, 6))),
                   (lambda m, x: m.nn.functional.max_pool1d(x, 2, dilation=2), Arg((2, 7)))],
    "max_pool2d_backward": [(lambda m, x: _max_pool_input_grad(m, x), Arg((1, 2, 5, 5)))],
    "adaptive_max_pool2d": [(lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (3, 2)), Arg((1, 2, 5, 5))),
                            (lambda m, x: m.nn.functional.adaptive_max_pool1d(x, 4), Arg((2, 7)))],
    "adaptive_max_pool2d_backward": [(lambda m, x: _max_pool_input_grad(m, x, adaptive=True), Arg((1, 2, 5, 5)))],
    "take_rows": [(lambda m, x: m.nn.functional.interpolate(x, size=(5, 3)), Arg((1, 2, 3, 4))),
                  (lambda m, x, w: m.nn.functional.conv2d(_reflect_pad(m, x), w), Arg((1, 2, 4, 4)), Arg((3, 2, 2, 2)))],
    "put_rows": [(lambda m, x: _nearest_input_grad(m, x), Arg((1, 2, 3, 4)))],
})

# nn.functional.linear as one op (ops/linear_fused.py)
GRAD_SAMPLES["linear"] = [
    (lambda m, x, w, b: m.nn.functional.linear(x, w, b), Arg((3, 4)), Arg((2, 4)), Arg((2,))),
    (lambda m, x, w: m.nn.functional.linear(x, w), Arg((2, 3, 4)), Arg((2, 4))),
    (lambda m, x, w, b: m.nn.functional.linear(x.mT, w, b), Arg((4, 3)), Arg((2, 4)), Arg((2,))),
]
# the special functions (ops/special_functions.py; derivatives_special.py), inside their domains
_P = Arg((2, 3), "positive")
GRAD_SAMPLES.update({
    "lgamma": [(lambda m, x: m.lgamma(x), _P)],
    "digamma": [(lambda m, x: m.digamma(x), _P)],
    "trigamma": [(lambda m, x: m.polygamma(1, x), _P)],
    "erfc": [(lambda m, x: m.erfc(x), X)],
    "erfinv": [(lambda m, x: m.erfinv(x * 0.4), X)],
    "i0": [(lambda m, x: m.i0(x), X)],
    "igamma": [(lambda m, a, x: m.igamma(a, x), Arg((2, 3), fixed=[[0.5, 1.0, 2.0], [3.0, 1.5, 0.8]],
                                                    dtype=tl.float64), _P)],
    "igammac": [(lambda m, a, x: m.igammac(a, x), Arg((2, 3), fixed=[[0.5, 1.0, 2.0], [3.0, 1.5, 0.8]],
                                                      dtype=tl.float64), _P)],
    "special_erfcx": [(lambda m, x: m.special.erfcx(x), X)],
    "special_i0e": [(lambda m, x: m.special.i0e(x), X)],
    "special_i1": [(lambda m, x: m.special.i1(x), X)],
    "special_i1e": [(lambda m, x: m.special.i1e(x), X)],
    "special_log_ndtr": [(lambda m, x: m.special.log_ndtr(x), X)],
    "special_ndtr": [(lambda m, x: m.special.ndtr(x), X)],
    "special_ndtri": [(lambda m, x: m.special.ndtri(x * 0.2 + 0.5), X)],
    "special_zeta": [(lambda m, s, q: m.special.zeta(s, q), Arg((2, 3), fixed=[[2.0, 3.0, 4.5], [2.5, 3.5, 6.0]],
                                                                dtype=tl.float64), _P)],
})
# cross_entropy / nll_loss over class indices as one node (ops/nll_fused.py)
GRAD_SAMPLES["nll_loss"] = [
    (lambda m, x, t: m.nn.functional.nll_loss(x, t), Arg((4, 3)), idx([2, 0, 1, 1])),
    (lambda m, x, t: m.nn.functional.nll_loss(x, t, reduction="sum", ignore_index=1), Arg((4, 3)), idx([2, 0, 1, 1])),
]
GRAD_SAMPLES["cross_entropy_loss"] = [
    (lambda m, x, t: m.nn.functional.cross_entropy(x, t), Arg((4, 3)), idx([2, 0, 1, 1])),
    (lambda m, x, t: m.nn.functional.cross_entropy(x, t, reduction="sum", ignore_index=0), Arg((4, 3)),
     idx([2, 0, 1, 0])),
]



def _fused_sdpa(m, q, k, v, mask=None, **kw):
    """The fused attention primitives (ops/attention.py) on the sample's device, in float64: the
    blocked NumPy ones on the CPU, kernels/attention.cu on CUDA; torch's sdpa for torch."""
    if m.__name__ == "torch":
        return m.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kw)
    from tensorlab.ops import attention
    assert attention.fused_supported(q, k, v, mask, 0.0, kw.get("enable_gqa", False), devices=(q.device.type,))
    return attention.attention(q, k, v, mask, kw.get("is_causal", False), kw.get("scale"), kw.get("enable_gqa", False))


# the fused scaled_dot_product_attention (ops/attention.py): q, k, v and float-mask gradients
GRAD_SAMPLES.update({
    "attention_fwd": [(lambda m, q, k, v, a: _fused_sdpa(m, q, k, v, a), Arg((1, 2, 5, 4)), Arg((1, 2, 6, 4)),
                       Arg((1, 2, 6, 3)), Arg((5, 6))),
                      (lambda m, q, k, v: _fused_sdpa(m, q, k, v, is_causal=True, enable_gqa=True, scale=0.7),
                       Arg((1, 4, 5, 4)), Arg((1, 2, 5, 4)), Arg((1, 2, 5, 4)))],
})

def _flat_cat(m, outs):
    """Several outputs as one vector (the comparison with torch takes one tensor)."""
    return m.cat([o.reshape(-1) for o in outs])


def _rnn_cell(m, mode, x, h, *rest):
    """One fused recurrent cell step (ops/rnn_fused.py's cell) from the input and state (LSTM: h, c);
    torch's lstm_cell / gru_cell / rnn_*_cell for torch. LSTM's (h', c') as one vector."""
    c, (w_ih, w_hh, b_ih, b_hh) = (rest[0], rest[1:]) if mode == "LSTM" else (None, rest)
    if m.__name__ == "torch":
        if mode == "LSTM":
            return _flat_cat(m, m.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh))
        fn = {"GRU": m.gru_cell, "RNN_TANH": m.rnn_tanh_cell, "RNN_RELU": m.rnn_relu_cell}[mode]
        return fn(x, h, w_ih, w_hh, b_ih, b_hh)
    from tensorlab.ops import rnn_fused
    gi = x.matmul(w_ih.t()) + b_ih
    out = rnn_fused.cell(mode, gi, h.matmul(w_hh.t()), c if mode == "LSTM" else (h if mode == "GRU" else None), b_hh)
    return _flat_cat(m, out) if mode == "LSTM" else out


def _rnn_sequence(m, mode, reverse, x, h, *rest):
    """One layer direction as the fused sequence op (nn/rnn.py's _run_sequence); torch.lstm / gru / rnn_*
    for torch (a reverse direction as the forward one over the time-flipped input). The output and the
    final state(s) as one vector."""
    c, params = (rest[0], list(rest[1:])) if mode == "LSTM" else (None, list(rest))
    if m.__name__ == "torch":
        xs = x.flip(0) if reverse else x
        hx = (h[None], c[None]) if mode == "LSTM" else h[None]
        fn = {"LSTM": m.lstm, "GRU": m.gru, "RNN_TANH": m.rnn_tanh, "RNN_RELU": m.rnn_relu}[mode]
        out, *states = fn(xs, hx, params, True, 1, 0.0, False, False, False)
        return _flat_cat(m, [out.flip(0) if reverse else out] + [st[0] for st in states])
    from tensorlab.nn import rnn
    out, state = rnn._run_sequence(mode, x, (h, c) if mode == "LSTM" else h, *params, None, reverse,
                                   mode == "LSTM")
    return _flat_cat(m, [out] + (list(state) if mode == "LSTM" else [state]))


# the fused recurrences (ops/rnn_fused.py): one cell step, and a whole layer direction (B 2, I 3, H 2, T 3)
def _rnn_args(gates, steps=None):
    x = Arg((steps, 2, 3) if steps else (2, 3))
    state = (Arg((2, 2)), Arg((2, 2))) if gates == 4 else (Arg((2, 2)),)
    return (x,) + state + (Arg((gates * 2, 3)), Arg((gates * 2, 2)), Arg((gates * 2,)), Arg((gates * 2,)))


GRAD_SAMPLES.update({
    "fused_rnn_cell": [(lambda m, *a: _rnn_cell(m, "LSTM", *a), *_rnn_args(4)),
                       (lambda m, *a: _rnn_cell(m, "GRU", *a), *_rnn_args(3)),
                       (lambda m, *a: _rnn_cell(m, "RNN_TANH", *a), *_rnn_args(1))],
    "fused_rnn_sequence": [(lambda m, *a: _rnn_sequence(m, "LSTM", False, *a), *_rnn_args(4, 3)),
                           (lambda m, *a: _rnn_sequence(m, "GRU", True, *a), *_rnn_args(3, 3)),
                           (lambda m, *a: _rnn_sequence(m, "RNN_TANH", False, *a), *_rnn_args(1, 3))],
})


def _reflect_pad(m, x):
    """reflect padding as torch's Conv2d(padding_mode='reflect') applies it: (1, 2) rows, (2, 1) cols."""
    if m.__name__ == "torch":
        return m.nn.functional.pad(x, (2, 1, 1, 2), mode="reflect")
    from tensorlab.ops.conv import pad_nd
    return pad_nd(x, [(1, 2), (2, 1)], "reflect")


def _nearest_input_grad(m, x):
    """The input gradient of nearest upsampling as a function of x: differentiates put_rows."""
    with m.enable_grad():
        x1 = x if x.requires_grad else x.detach().requires_grad_()
        y = m.nn.functional.interpolate(x1, scale_factor=2)
        return m.autograd.grad(y.pow(2).sum(), x1, create_graph=x.requires_grad)[0]


def _max_pool_input_grad(m, x, adaptive=False):
    """The input gradient of a max pool, as a function of x (a function of grad_output: the pooled
    values): gradcheck differentiates max_pool2d_backward through it."""
    with m.enable_grad():
        x1 = x if x.requires_grad else x.detach().requires_grad_()
        y = m.nn.functional.adaptive_max_pool2d(x1, (3, 4)) if adaptive else m.nn.functional.max_pool2d(x1, 3, 2, 1)
        return m.autograd.grad(y.pow(2).sum(), x1, create_graph=True)[0] if x.requires_grad else \
            m.autograd.grad(y.pow(2).sum(), x1)[0]


# where torch itself cannot produce the gradient, tensorlab's is checked by gradcheck only
TORCH_FAILS = {("scatter", 1): "torch's scatter backward returns an index-shaped gradient for a larger src"}


def _setitem(x, key, v):
    y = x * 1
    y[key] = v
    return y


def _sample_cases(table):
    return [pytest.param(name, k, id=f"{name}-{k}") for name, cases in table.items() for k in range(len(cases))]


def _build(case, device, seed=0):
    rng = np.random.default_rng(seed)
    fn, *specs = case
    return fn, [s.make(device, rng) for s in specs]


# -- coverage -----------------------------------------------------------------------------------------
def test_every_differentiable_op_has_a_table_entry():
    missing = [n for n in DIFFERENTIABLE if n not in D.DERIVATIVES]
    assert not missing, f"differentiable ops without a derivative in tensorlab/autograd/derivatives_<family>.py: {missing}"


# ops with no float64 kernel: gradcheck (float64) cannot reach them; their gradients are compared with
# the composites' and torch's in float32/float16/bfloat16 (and double backward) in the named file
NO_FLOAT64 = {"native_layer_norm": "tests/test_norm_embedding_fused.py",
              "native_rms_norm": "tests/test_norm_embedding_fused.py",
              "native_batch_norm": "tests/test_batch_norm_fused.py"}


def test_every_differentiable_op_has_gradcheck_samples():
    missing = [n for n in DIFFERENTIABLE if n not in ELEMENTWISE and n not in GRAD_SAMPLES and n not in NO_FLOAT64]
    assert not missing, f"differentiable ops without gradcheck samples: {missing}"


def test_view_and_copy_ops_have_table_entries():
    missing = [n for n in VIEW_SAMPLES if n not in D.DERIVATIVES]
    assert not missing


def test_view_as_another_dtype_is_not_differentiable(device):
    x = tl.ones(3, dtype=tl.float64, device=device, requires_grad=True)
    assert not x.view(tl.float64).requires_grad and x.view(tl.int64).grad_fn is None  # as torch


# -- gradcheck ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,k", _sample_cases(GRAD_SAMPLES) + _sample_cases(VIEW_SAMPLES))
def test_gradcheck(name, k, device):
    fn, args = _build((GRAD_SAMPLES.get(name) or VIEW_SAMPLES[name])[k], device)
    assert tl.autograd.gradcheck(lambda *a: fn(tl, *a), args)


def _grad_args(sample):
    """A sample's arguments with every floating tensor made a leaf that requires grad (overlapping
    layouts, e.g. expanded tensors, become contiguous: gradcheck cannot perturb them)."""
    out = []
    for a in sample.args:
        if isinstance(a, tl.Tensor) and a.dtype.is_floating_point:
            lay = a._meta.layout
            a = a.detach()
            if L.has_internal_overlap(lay.shape, lay.stride):
                a = a.contiguous()
            a.requires_grad_()
        out.append(a)
    return out


def _finite(x):
    return not isinstance(x, tl.Tensor) or not x.dtype.is_floating_point or bool(x.isfinite().all())


def _usable(op, sample, inplace=False):
    """Finite inputs and outputs, away from kinks where finite differences are not the
    derivative (abs/relu near 0, pow of a negative base), and valid for the in-place form."""
    if not all(_finite(a) for a in sample.args) or not all(_finite(v) for v in sample.kwargs.values()):
        return False
    if not any(isinstance(a, tl.Tensor) and a.dtype.is_floating_point and a.numel() for a in sample.args):
        return False
    try:
        with tl.no_grad():
            args = [a.clone() if isinstance(a, tl.Tensor) else a for a in sample.args]
            out = getattr(args[0], op.name + "_")(*args[1:], **sample.kwargs) if inplace else \
                op.tl_fn()(*args, **sample.kwargs)
    except (RuntimeError, TypeError, NotImplementedError):
        return False
    return _finite(out) and out.dtype.is_floating_point and _continuous(op, sample)


def _continuous(op, sample, eps=1e-6):
    """No jump within +-eps of any input element (rounding ops at an exact integer quotient)."""
    with tl.no_grad():
        for i, a in enumerate(sample.args):
            if not (isinstance(a, tl.Tensor) and a.dtype.is_floating_point):
                continue
            outs = []
            for d in (eps, -eps):
                args = list(sample.args)
                args[i] = a + d
                outs.append(op.tl_fn()(*args, **sample.kwargs))
            if outs[0].numel() and float((outs[0] - outs[1]).abs().max()) > 1e3 * eps:
                return False
    return True


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_gradcheck_elementwise(name, device):
    op = ELEMENTWISE[name]
    checked = 0
    for s in samples(op, tl.float64, device):
        if not _usable(op, s):
            continue
        args = _grad_args(s)
        assert tl.autograd.gradcheck(lambda *a: op.tl_fn()(*a, **s.kwargs), args), s.desc
        checked += 1
    assert checked >= 3, f"only {checked} usable samples for {name}"


@pytest.mark.parametrize("name", sorted(n for n, op in ELEMENTWISE.items() if op.inplace))
def test_gradcheck_elementwise_inplace(name, device):
    """x.clone().op_(...): the in-place form records the same derivative on the rebased tensor."""
    op = ELEMENTWISE[name]
    checked = 0
    for s in samples(op, tl.float64, device):
        if not isinstance(s.args[0], tl.Tensor) or not _usable(op, s, inplace=True):
            continue
        args = _grad_args(s)
        assert tl.autograd.gradcheck(
            lambda x, *rest: getattr(x.clone(), op.name + "_")(*rest, **s.kwargs), args), s.desc
        checked += 1
    assert checked >= 2, f"only {checked} usable in-place samples for {name}"


# -- against torch ------------------------------------------------------------------------------------
def _torch_leaf(a, torch):
    t = to_torch(a.detach(), torch)
    if a.requires_grad:
        t.requires_grad_()
    return t


def _compare_with_torch(fn_tl, fn_torch, args, torch, desc):
    out = fn_tl(*args)
    targs = [_torch_leaf(a, torch) if isinstance(a, tl.Tensor) else a for a in args]
    tout = fn_torch(*targs)
    rng = np.random.default_rng(1)
    w = rng.uniform(-1, 1, tuple(out.shape))
    (out * tl.tensor(w, dtype=out.dtype)).sum().backward()
    (tout * torch.tensor(w, dtype=tout.dtype)).sum().backward()
    for i, (a, t) in enumerate(zip(args, targs)):
        if isinstance(a, tl.Tensor) and a.requires_grad:
            assert a.grad is not None, f"{desc}: no gradient for argument {i}"
            assert a.grad.dtype is a.dtype
            rtol, atol = (1e-9, 1e-12) if a.dtype is tl.float64 else (1e-5, 1e-6)
            np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol,
                                       err_msg=f"{desc}: argument {i}")


@pytest.mark.parametrize("name,k", _sample_cases(GRAD_SAMPLES) + _sample_cases(VIEW_SAMPLES))
def test_gradients_match_torch(name, k, torch):
    if (name, k) in TORCH_FAILS:
        pytest.skip(TORCH_FAILS[name, k])
    fn, args = _build((GRAD_SAMPLES.get(name) or VIEW_SAMPLES[name])[k], "cpu")
    _compare_with_torch(lambda *a: fn(tl, *a), lambda *a: fn(torch, *a), args, torch, f"{name}[{k}]")


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_gradients_match_torch(name, torch):
    op = ELEMENTWISE[name]
    compared = 0
    for s in samples(op, tl.float64, "cpu"):
        if not _usable(op, s):
            continue
        args = _grad_args(s)
        kw_tl = s.kwargs
        kw_t = {k: to_torch(v, torch) for k, v in s.kwargs.items()}
        try:
            _compare_with_torch(lambda *a: op.tl_fn()(*a, **kw_tl), lambda *a: op.torch_fn(torch)(*a, **kw_t), args,
                                torch, s.desc)
        except RuntimeError as e:  # e.g. torch has no derivative for remainder(number, tensor)
            if "derivative for aten::" not in str(e):
                raise
            continue
        compared += 1
    assert compared >= 3


# -- gradcheck itself --------------------------------------------------------------------------------
def test_gradcheck_detects_a_wrong_derivative():
    class Wrong(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 * g * x

    x = tl.tensor([1.0, 2.0, 3.0], dtype=tl.float64, requires_grad=True)
    with pytest.raises(tl.autograd.GradcheckError, match="Jacobian mismatch for output 0 with respect to input 0"):
        tl.autograd.gradcheck(Wrong.apply, (x,))
    assert issubclass(tl.autograd.GradcheckError, RuntimeError)
    assert tl.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_gradcheck_tolerances_and_float32_inputs():
    x = tl.tensor([0.5, 1.5], requires_grad=True)  # float32: checked as a float64 copy
    assert tl.autograd.gradcheck(lambda t: (t.exp() * t).sum(), (x,))
    assert x.dtype is tl.float32 and x.grad is None
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        tl.autograd.gradcheck(lambda t: t * 2, (tl.ones(2),))


def test_gradcheck_with_several_outputs_and_non_tensor_args():
    a = tl.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=tl.float64, requires_grad=True)
    b = tl.tensor([0.25, 2.0], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda x, y, k: (x * y * k, (x - y).sum(0)), (a, b, 3))


def test_gradcheck_finds_an_unimplemented_reentrancy_issue():
    calls = []

    class Flaky(tl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * (2 + 1e-3 * math.sin(len(calls)))

    x = tl.tensor([1.0, 2.0], dtype=tl.float64, requires_grad=True)
    with pytest.raises(tl.autograd.GradcheckError, match="not reentrant"):
        tl.autograd.gradcheck(Flaky.apply, (x,), atol=1e-2)
