"""Layer rows for pytest-benchmark, next to torch: conv2d forward + backward (input, weight and bias
gradients) of a float32 (N, C, H, W) batch with a 3x3 kernel, padding 1, on every available device.
Each implementation's forward result is checked against a NumPy reference (a sliding-window
einsum in float64) before it is timed, so a wrong kernel cannot post a fast time. No assertions
on time; the medians and ratios go to the same board as test_kernels.py (its terminal summary).

Sizes follow TENSORLAB_BENCH_MODE like test_kernels.py: "tiny" (a smoke run), "quick" (default) or
"full". CUDA rows use the CUDA event clock and run on a GPU or on the emulation driver (tiny only
there: it runs the kernels on the host). The row plumbing is _layer_bench.py's."""
from __future__ import annotations

import numpy as np
import pytest

from _layer_bench import bench_fwd_bwd, cases

# (N, C_in, H, W, C_out) per mode
SIZES = {"tiny": [(2, 3, 8, 8, 4)], "quick": [(8, 16, 32, 32, 32)],
         "full": [(8, 16, 32, 32, 32), (32, 64, 56, 56, 64)]}


def _reference(x, w, b):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (N, C, H, W, 3, 3)
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64)) + b.astype(np.float64)[None, :, None, None]


def _conv2d(F, x, w, b):
    return F.conv2d(x, w, b, padding=1)


@pytest.mark.parametrize("device, size, impl", cases("conv2d", SIZES))
def test_conv2d_forward_backward(benchmark, ratio_board, device, size, impl):
    n, c, h, wd, o = size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, wd), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32) / 3
    b = rng.standard_normal(o, dtype=np.float32)
    g = rng.standard_normal((n, o, h, wd), dtype=np.float32)
    flops = 3 * 2 * n * o * h * wd * c * 9  # forward + the two gradient products
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="conv2d", forward=_conv2d,
                  inputs=(x, w, b), grad=g, reference=_reference(x, w, b), atol=1e-4 * c * 9,
                  shape=f"{n}x{c}x{h}x{wd} -> {o} ch, 3x3", unit="TFLOP/s", work=flops)
