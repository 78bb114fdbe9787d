"""Batch norm and an LSTM layer, forward + backward, next to torch, for pytest-benchmark, on every available
device. tensorlab's rows run the fused paths: batch norm's kernels (kernels/batch_norm.cu on CUDA,
backends/cpu/batch_norm.py on the CPU) and the LSTM's fused cells (kernels/rnn.cu; one matmul and one
cell op per time step). Each implementation's forward result is checked against a NumPy float64
reference before it is timed, so a wrong kernel cannot post a fast time. No assertions on time; the
medians and ratios go to the board of test_kernels.py's terminal summary.

Sizes follow TENSORLAB_BENCH_MODE ("tiny", "quick" (default), "full"); CUDA rows use the CUDA event clock
and run on a GPU or on the emulation driver (tiny only). The row plumbing is _layer_bench.py's."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl
from _layer_bench import bench_fwd_bwd, cases

EPS = 1e-5

# batch norm: (N, C, H, W) per mode
BN_SIZES = {"tiny": [(2, 3, 4, 5)], "quick": [(32, 64, 28, 28)], "full": [(32, 64, 28, 28), (64, 256, 14, 14)]}


def _bn_reference(x, w, b):
    x = x.astype(np.float64)
    mean = x.mean((0, 2, 3), keepdims=True)
    var = x.var((0, 2, 3), keepdims=True)
    return (x - mean) / np.sqrt(var + EPS) * w[None, :, None, None] + b[None, :, None, None]


def _batch_norm(F, x, w, b):
    return F.batch_norm(x, None, None, w, b, training=True, eps=EPS)


@pytest.mark.parametrize("device, size, impl", cases("batch_norm", BN_SIZES))
def test_batch_norm_forward_backward(benchmark, ratio_board, device, size, impl):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(size, dtype=np.float32)
    c = size[1]
    w = rng.standard_normal(c, dtype=np.float32)
    b = rng.standard_normal(c, dtype=np.float32)
    g = rng.standard_normal(size, dtype=np.float32)
    n = x.size
    work = 4 * 6 * n  # bytes: forward reads x twice (statistics, y) and writes y; backward reads dy, x twice, writes dx
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="batch_norm",
                  forward=_batch_norm, inputs=(x, w, b), grad=g, reference=_bn_reference(x, w, b), atol=1e-3,
                  shape="x".join(map(str, size)), unit="GB/s", work=work)


# LSTM: (T, B, input, hidden) per mode
LSTM_SIZES = {"tiny": [(3, 2, 4, 8)], "quick": [(32, 16, 64, 128)], "full": [(32, 16, 64, 128), (64, 64, 256, 512)]}
_MODULES = {}


def _lstm_weights(inp, hidden):
    rng = np.random.default_rng(1)
    k = 1 / np.sqrt(hidden)
    shapes = {"weight_ih_l0": (4 * hidden, inp), "weight_hh_l0": (4 * hidden, hidden), "bias_ih_l0": (4 * hidden,),
              "bias_hh_l0": (4 * hidden,)}
    return {n: rng.uniform(-k, k, s).astype(np.float32) for n, s in shapes.items()}


def _lstm_reference(x, ws):
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    w_ih, w_hh = ws["weight_ih_l0"].astype(np.float64), ws["weight_hh_l0"].astype(np.float64)
    bias = (ws["bias_ih_l0"] + ws["bias_hh_l0"]).astype(np.float64)
    t, b, _ = x.shape
    hidden = w_hh.shape[1]
    h, c = np.zeros((b, hidden)), np.zeros((b, hidden))
    out = []
    for step in range(t):
        i, f, g, o = np.split(x[step].astype(np.float64) @ w_ih.T + h @ w_hh.T + bias, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        h = sig(o) * np.tanh(c)
        out.append(h)
    return np.stack(out)


def _lstm(F, x):
    """The layer of x's library (tensorlab's or torch's), built once per library and device with the same
    weights; its parameters' gradients accumulate from round to round (alike for both)."""
    ours = F is tl.nn.functional
    key = (ours, str(x.device))
    m = _MODULES.get(key)
    if m is None:
        if ours:
            lib = tl
        else:
            import torch as lib
        t, b, inp = x.shape
        hidden = _MODULES["hidden"]
        m = lib.nn.LSTM(inp, hidden).to("cuda" if str(x.device).startswith("cuda") else "cpu")
        m.load_state_dict({n: lib.tensor(a) for n, a in _lstm_weights(inp, hidden).items()})
        m.to("cuda" if str(x.device).startswith("cuda") else "cpu")
        _MODULES[key] = m
    return m(x)[0]


@pytest.mark.parametrize("device, size, impl", cases("lstm", LSTM_SIZES))
def test_lstm_forward_backward(benchmark, ratio_board, device, size, impl):
    t, b, inp, hidden = size
    _MODULES.clear()
    _MODULES["hidden"] = hidden
    rng = np.random.default_rng(0)
    x = rng.standard_normal((t, b, inp), dtype=np.float32)
    g = rng.standard_normal((t, b, hidden), dtype=np.float32)
    flops = 3 * 2 * t * b * 4 * hidden * (inp + hidden)  # forward matmuls and twice as much backward
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="lstm", forward=_lstm,
                  inputs=(x,), grad=g, reference=_lstm_reference(x, _lstm_weights(inp, hidden)), atol=1e-4,
                  shape=f"T{t}xB{b}x{inp}->{hidden}", unit="TFLOP/s", work=flops)
