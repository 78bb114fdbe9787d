"""Layer norm forward + backward (input, weight and bias gradients) next to torch, for pytest-benchmark:
a float32 (rows, len) batch normalized over its last dim, on every available device. tensorlab's row
runs the fused kernels (kernels/norm.cu on CUDA, backends/cpu/norm.py on the CPU). Each
implementation's forward result is checked against a NumPy float64 reference before it is timed, so a
wrong kernel cannot post a fast time. No assertions on time; the medians and ratios go to the same
board as test_kernels.py (its terminal summary).

Sizes follow TENSORLAB_BENCH_MODE like test_layers.py: "tiny" (a smoke run), "quick" (default) or
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
# (rows, len) per mode
SIZES = {"tiny": [(8, 33)], "quick": [(4096, 1024)], "full": [(4096, 1024), (16384, 4096)]}[MODE]
EPS = 1e-5


def _cuda_runs():
    if tl.cuda.is_available():
        return True, False
    return backends.cuda_emulated(), backends.cuda_emulated()


CUDA_RUNS, CUDA_EMULATED = _cuda_runs()


def _reference(x, w, b):
    x = x.astype(np.float64)
    xh = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + EPS)
    return xh * w + b


def _tensorlab(device, x, w, b, g):
    xt, wt, bt = (tl.tensor(a, device=device, requires_grad=True) for a in (x, w, b))
    gt = tl.tensor(g, device=device)

    def run():
        xt.grad = wt.grad = bt.grad = None
        y = tl.nn.functional.layer_norm(xt, (x.shape[-1],), wt, bt, EPS)
        y.backward(gt)
        return y
    return run, lambda y: y.detach().cpu().numpy()


def _torch(device, x, w, b, g):
    torch = pytest.importorskip("torch")
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    dev = "cpu" if device == "cpu" else "cuda"
    xt, wt, bt = (torch.tensor(a, device=dev, requires_grad=True) for a in (x, w, b))
    gt = torch.tensor(g, device=dev)

    def run():
        xt.grad = wt.grad = bt.grad = None
        y = torch.nn.functional.layer_norm(xt, (x.shape[-1],), wt, bt, EPS)
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
                name = f"{device}-layer_norm_fwd_bwd-{'x'.join(map(str, size))}-{impl}"
                out.append(pytest.param(device, size, impl, id=name, marks=marks))
    return out


@pytest.mark.parametrize("device, size, impl", _cases())
def test_layer_norm_forward_backward(benchmark, ratio_board, device, size, impl):
    rows, length = size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, length), dtype=np.float32)
    w = rng.standard_normal(length, dtype=np.float32)
    b = rng.standard_normal(length, dtype=np.float32)
    g = rng.standard_normal((rows, length), dtype=np.float32)
    run, to_np = IMPLS[impl](device, x, w, b, g)
    np.testing.assert_allclose(to_np(run()), _reference(x, w, b), rtol=1e-4, atol=1e-4)
    shape = f"{rows}x{length}"
    where = device + (" (emulated)" if device == "cuda" and CUDA_EMULATED else "")
    work = 4 * 5 * rows * length  # bytes: forward reads x, writes y; backward reads dy, x, writes dx (float32)
    benchmark.group = f"layer_norm fwd+bwd {shape} on {where}"
    benchmark.extra_info.update(library=impl, device=device, workload="layer_norm_fwd_bwd", shape=shape, unit="GB/s",
                                work=work, emulated=device == "cuda" and CUDA_EMULATED)
    benchmark(run)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    median = stats.stats.median
    rate = work / median / 1e9
    benchmark.extra_info["throughput"] = rate
    ratio_board.post((where, "layer_norm_fwd_bwd", size), f"{where} layer_norm fwd+bwd {shape}", impl, median, rate,
                     "GB/s", benchmark)
