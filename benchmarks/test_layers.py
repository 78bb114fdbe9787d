"""Layer rows for pytest-benchmark, next to torch: conv2d forward + backward (input, weight and bias
gradients) of a float32 (N, C, H, W) batch with a 3x3 kernel, padding 1, on every available device.
Each implementation's forward result is checked against a NumPy reference (a sliding-window
einsum in float64) before it is timed, so a wrong kernel cannot post a fast time. No assertions
on time; the medians and ratios go to the same board as test_kernels.py (its terminal summary).

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
# (N, C_in, H, W, C_out) per mode
SIZES = {"tiny": [(2, 3, 8, 8, 4)], "quick": [(8, 16, 32, 32, 32)],
         "full": [(8, 16, 32, 32, 32), (32, 64, 56, 56, 64)]}[MODE]


def _cuda_runs():
    if tl.cuda.is_available():
        return True, False
    return backends.cuda_emulated(), backends.cuda_emulated()


CUDA_RUNS, CUDA_EMULATED = _cuda_runs()


def _reference(x, w, b):
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (N, C, H, W, 3, 3)
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64)) + b.astype(np.float64)[None, :, None, None]


def _tensorlab(device, x, w, b, g):
    xt = tl.tensor(x, device=device, requires_grad=True)
    wt = tl.tensor(w, device=device, requires_grad=True)
    bt = tl.tensor(b, device=device, requires_grad=True)
    gt = tl.tensor(g, device=device)

    def run():
        xt.grad = wt.grad = bt.grad = None
        y = tl.nn.functional.conv2d(xt, wt, bt, padding=1)
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
        y = torch.nn.functional.conv2d(xt, wt, bt, padding=1)
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
                out.append(pytest.param(device, size, impl, id=f"{device}-conv2d_fwd_bwd-{'x'.join(map(str, size))}-"
                                                               f"{impl}", marks=marks))
    return out


@pytest.mark.parametrize("device, size, impl", _cases())
def test_conv2d_forward_backward(benchmark, ratio_board, device, size, impl):
    n, c, h, wd, o = size
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c, h, wd), dtype=np.float32)
    w = rng.standard_normal((o, c, 3, 3), dtype=np.float32) / 3
    b = rng.standard_normal(o, dtype=np.float32)
    g = rng.standard_normal((n, o, h, wd), dtype=np.float32)
    run, to_np = IMPLS[impl](device, x, w, b, g)
    np.testing.assert_allclose(to_np(run()), _reference(x, w, b), rtol=1e-4, atol=1e-4 * c * 9)
    shape = f"{n}x{c}x{h}x{wd} -> {o} ch, 3x3"
    where = device + (" (emulated)" if device == "cuda" and CUDA_EMULATED else "")
    flops = 3 * 2 * n * o * h * wd * c * 9  # forward + the two gradient products
    benchmark.group = f"conv2d fwd+bwd {shape} on {where}"
    benchmark.extra_info.update(library=impl, device=device, workload="conv2d_fwd_bwd", shape=shape, unit="TFLOP/s",
                                work=flops, emulated=device == "cuda" and CUDA_EMULATED)
    benchmark(run)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    median = stats.stats.median
    rate = flops / median / 1e12
    benchmark.extra_info["throughput"] = rate
    ratio_board.post((where, "conv2d_fwd_bwd", size), f"{where} conv2d fwd+bwd {shape}", impl, median, rate,
                     "TFLOP/s", benchmark)
