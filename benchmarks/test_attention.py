"""Attention rows for pytest-benchmark, next to torch: F.scaled_dot_product_attention forward +
backward (q, k and v gradients) of float32 and bfloat16 (B, H, L, E) inputs, causal, on every
available device (the fused kernels of kernels/attention.cu on CUDA: the scalar ones for float32,
the tensor-core ones for bfloat16; the composite on the CPU). Each implementation's
forward result is checked against a NumPy reference (softmax in float64) before it is timed, so a
wrong kernel cannot post a fast time. No assertions on time; the medians and ratios go to the same
board as test_kernels.py (its terminal summary).

Sizes follow TENSORLAB_BENCH_MODE like test_kernels.py: "tiny" (a smoke run), "quick" (default) or
"full". CUDA rows use the CUDA event clock and run on a GPU or on the emulation driver (tiny only
there: it runs the kernels on the host). The row plumbing is _layer_bench.py's."""
from __future__ import annotations

import numpy as np
import pytest

from _layer_bench import bench_fwd_bwd, cases

# (B, H, L, E) per mode
SIZES = {"tiny": [(1, 2, 40, 16)], "quick": [(4, 8, 512, 64)],
         "full": [(4, 8, 512, 64), (2, 16, 2048, 64), (1, 8, 4096, 128)]}


def _reference(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    L, S = s.shape[-2:]
    s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _sdpa(F, q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


@pytest.mark.parametrize("device, size, impl", cases("sdpa", SIZES))
def test_attention_forward_backward(benchmark, ratio_board, device, size, impl):
    b, h, n, e = size
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((b, h, n, e), dtype=np.float32) for _ in range(4))
    flops = 7 * b * h * n * n * e  # causal: forward 2bhn^2e (half of two n x n x e products), backward 2.5x that
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="sdpa", forward=_sdpa,
                  inputs=(q, k, v), grad=g, reference=_reference(q, k, v), atol=1e-4,
                  shape=f"{b}x{h}x{n}x{e} causal", unit="TFLOP/s", work=flops)


@pytest.mark.parametrize("device, size, impl", cases("sdpa_bf16", SIZES))
def test_attention_forward_backward_bf16(benchmark, ratio_board, device, size, impl):
    """bfloat16 operands (the tensor-core kernels on CUDA; torch's SDPA picks its flash kernel), the
    reference from the same rounded inputs."""
    import ml_dtypes
    b, h, n, e = size
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((b, h, n, e), dtype=np.float32).astype(ml_dtypes.bfloat16).astype(np.float32)
                  for _ in range(4))
    flops = 7 * b * h * n * n * e
    bench_fwd_bwd(benchmark, ratio_board, device=device, size=size, impl=impl, name="sdpa_bf16", forward=_sdpa,
                  inputs=(q, k, v), grad=g, reference=_reference(q, k, v), atol=2e-2, rtol=2e-2,
                  shape=f"{b}x{h}x{n}x{e} causal bf16", unit="TFLOP/s", work=flops, dtype="bfloat16")
