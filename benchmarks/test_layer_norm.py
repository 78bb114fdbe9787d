"""Layer norm forward + backward (input, weight and bias gradients) next to torch, for pytest-benchmark:
a float32 (rows, len) batch normalized over its last dim, on every available device. tensorlab's row
runs the fused kernels (kernels/norm.cu on CUDA, backends/cpu/norm.py on the CPU). Each
implementation's forward result is checked against a NumPy float64 reference before it is timed, so a
wrong kernel cannot post a fast time. No assertions on time; the medians and ratios go to the same
board as test_kernels.py (its terminal summary).

Sizes follow TENSORLAB_BENCH_MODE like test_layers.py: "tiny" (a smoke run), "quick" (default) or
"full". CUDA rows use the CUDA event clock and run on a GPU or on the emulation driver (tiny only
there: it runs the kernels on the host). The row plumbing is _layer_bench.py's."""
from __future__ import annotations

import numpy as np
import pytest

from _layer_bench import bench_fwd_bwd, cases

# (rows, len) per mode
SIZES = {"tiny": [(8, 33)], "quick": [(4096, 1024)], "full": [(4096, 1024), (16384, 4096)]}
EPS = 1e-5


def _reference(x, w, b):
    x = x.astype(np.float64)
    xh = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + EPS)
    return xh * w + b


def _layer_norm(F, x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, EPS)


@pytest.mark.parametrize("device, size, impl", cases("layer_norm", SIZES))
def test_layer_norm_forward_backward(benchmark, ratio_board, device, size, impl):
    rows, length = size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, length), dtype=np.float32)
    w = rng.standard_normal(length, dtype=np.float32)
    b = rng.standard_normal(length, dtype=np.float32)
    g = rng.standard_normal((rows, length), dtype=np.float32)
    work = 4 * 5 * rows * length  # bytes: forward reads x, writes y; backward reads dy, x, writes dx (float32)
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="layer_norm",
                  forward=_layer_norm, inputs=(x, w, b), grad=g, reference=_reference(x, w, b), atol=1e-4,
                  shape=f"{rows}x{length}", unit="GB/s", work=work)
