"""Attention rows for pytest-benchmark, next to torch: F.scaled_dot_product_attention forward +
backward (q, k and v gradients) of float32 (B, H, L, E) inputs, causal, on every available device
(the fused kernels of kernels/attention.cu on CUDA, the composite on the CPU). Each implementation's
forward result is checked against a NumPy reference (softmax in float64) before it is timed, so a
wrong kernel cannot post a fast time. No assertions on time; the medians and ratios go to the same
board as test_kernels.py (its terminal summary).

Sizes follow TENSORLAB_BENCH_MODE like test_kernels.py: "tiny" (a smoke run), "quick" (default) or
"full". CUDA rows use the CUDA event clock and run on a GPU or on the emulation driver (tiny only
there: it runs the kernels on the host)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends

pytest.importorskip("pytest_benchmark")

MODE = os.environ.get("TENSORLAB_BENCH_MODE", "quick")
# (B, H, L, E) per mode
SIZES = {"tiny": [(1, 2, 40, 16)], "quick": [(4, 8, 512, 64)],
         "full": [(4, 8, 512, 64), (2, 16, 2048, 64), (1, 8, 4096, 128)]}[MODE]


def _cuda_runs():
    if tl.cuda.is_available():
        return True, False
    return backends.cuda_emulated(), backends.cuda_emulated()


CUDA_RUNS, CUDA_EMULATED = _cuda_runs()


def _reference(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    L, S = s.shape[-2:]
    s = np.where(np.tril(np.ones((L, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def _tensorlab(device, q, k, v, g):
    qt, kt, vt = (tl.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    gt = tl.tensor(g, device=device)

    def run():
        qt.grad = kt.grad = vt.grad = None
        y = tl.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        y.backward(gt)
        return y
    return run, lambda y: y.detach().cpu().numpy()


def _torch(device, q, k, v, g):
    torch = pytest.importorskip("torch")
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    dev = "cpu" if device == "cpu" else "cuda"
    qt, kt, vt = (torch.tensor(a, device=dev, requires_grad=True) for a in (q, k, v))
    gt = torch.tensor(g, device=dev)

    def run():
        qt.grad = kt.grad = vt.grad = None
        y = torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=True)
        y.backward(gt)
        return y
    return run, lambda y: y.detach().cpu().numpy()


IMPLS = {"tensorlab": _tensorlab, "torch": _torch}


def _cases():
    cuda_marks = [pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock),
                  pytest.mark.skipif(not CUDA_RUNS, reason="no CUDA GPU and the emulation driver is off")]
    out = []
    for device in ("cpu", "cuda"):
        for size in SIZES:
            for impl in IMPLS:
                marks = cuda_marks if device == "cuda" else ()
                if device == "cuda" and CUDA_EMULATED and MODE != "tiny":
                    marks = marks + [pytest.mark.skip(reason="the emulation driver runs only the tiny size")]
                out.append(pytest.param(device, size, impl, id=f"{device}-sdpa_fwd_bwd-{'x'.join(map(str, size))}-"
                                                               f"{impl}", marks=marks))
    return out


@pytest.mark.parametrize("device, size, impl", _cases())
def test_attention_forward_backward(benchmark, ratio_board, device, size, impl):
    b, h, n, e = size
    rng = np.random.default_rng(0)
    q, k, v, g = (rng.standard_normal((b, h, n, e), dtype=np.float32) for _ in range(4))
    run, to_np = IMPLS[impl](device, q, k, v, g)
    np.testing.assert_allclose(to_np(run()), _reference(q, k, v), rtol=1e-4, atol=1e-4)
    shape = f"{b}x{h}x{n}x{e} causal"
    where = device + (" (emulated)" if device == "cuda" and CUDA_EMULATED else "")
    flops = 7 * b * h * n * n * e  # causal: forward 2bhn^2e (half of two n x n x e products), backward 2.5x that
    benchmark.group = f"sdpa fwd+bwd {shape} on {where}"
    benchmark.extra_info.update(library=impl, device=device, workload="sdpa_fwd_bwd", shape=shape, unit="TFLOP/s",
                                work=flops, emulated=device == "cuda" and CUDA_EMULATED)
    benchmark(run)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    median = stats.stats.median
    rate = flops / median / 1e12
    benchmark.extra_info["throughput"] = rate
    ratio_board.post((where, "sdpa_fwd_bwd", size), f"{where} sdpa fwd+bwd {shape}", impl, median, rate,
                     "TFLOP/s", benchmark)
