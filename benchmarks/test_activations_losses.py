"""GELU and cross entropy rows for pytest-benchmark, next to torch: forward + backward of exact GELU on a
float32 (N, D) activation and of cross_entropy over class indices on float32 (N, C) logits, on every
available device. The training steps' non-matmul costs (tensorlab/bench/models.py's GPT and MLP
steps) come down to these two on the CPU. Each implementation's forward result is checked against
a NumPy float64 reference before it is timed; no assertions on time; the medians and ratios go to
the board of test_kernels.py. Sizes follow TENSORLAB_BENCH_MODE; the row plumbing is _layer_bench.py's."""
from __future__ import annotations

import math

import numpy as np
import pytest

from _layer_bench import bench_fwd_bwd, cases

GELU_SIZES = {"tiny": [(4, 8)], "quick": [(512, 256)], "full": [(512, 256), (4096, 1024)]}  # (N, D)
CE_SIZES = {"tiny": [(4, 5)], "quick": [(128, 10)], "full": [(128, 10), (512, 65), (4096, 1000)]}  # (N, C)


def _gelu(F, x):
    return F.gelu(x)


@pytest.mark.parametrize("device, size, impl", cases("gelu", GELU_SIZES))
def test_gelu_forward_backward(benchmark, ratio_board, device, size, impl):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(size) * 2).astype(np.float32)
    g = rng.standard_normal(size).astype(np.float32)
    xd = x.astype(np.float64)
    ref = xd * 0.5 * np.vectorize(math.erfc)(-xd / math.sqrt(2))
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="gelu", forward=_gelu,
                  inputs=(x,), grad=g, reference=ref, atol=1e-6, shape="x".join(map(str, size)), unit="GB/s",
                  work=4 * x.size * 4)  # x and y forward; g, x, (y) and dx backward: about four passes


def _cross_entropy(targets):
    def forward(F, x):
        lib = type(x).__module__.split(".")[0]
        t = __import__(lib).as_tensor(targets, device=x.device)
        return F.cross_entropy(x, t)
    return forward


@pytest.mark.parametrize("device, size, impl", cases("cross_entropy", CE_SIZES))
def test_cross_entropy_forward_backward(benchmark, ratio_board, device, size, impl):
    n, c = size
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(size) * 3).astype(np.float32)
    t = rng.integers(0, c, n)
    xd = x.astype(np.float64)
    m = xd.max(1, keepdims=True)
    lp = xd - m - np.log(np.exp(xd - m).sum(1, keepdims=True))
    ref = np.asarray(-lp[np.arange(n), t].mean())
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="cross_entropy",
                  forward=_cross_entropy(t), inputs=(x,), grad=np.asarray(1.0, np.float32), reference=ref, atol=1e-5,
                  shape=f"{n}x{c}", unit="GB/s", work=3 * x.size * 4)  # logits in, log-probabilities, gradient
