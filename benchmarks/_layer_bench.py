"""Shared by the layer rows of this directory (test_attention.py, test_layer_norm.py, test_layers.py):
one layer's forward + backward through torch.nn.functional's API, for tensorlab and torch, on every
available device. A layer file gives its sizes per mode, the functional call, its inputs and a NumPy
float64 reference; this module builds the rows, checks each implementation's forward result
against the reference before it is timed (so a wrong kernel cannot post a fast time), times it,
and posts the median and throughput to the ratio board of conftest.py (test_kernels.py's terminal
summary). No assertions on time.

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
UNIT_SCALE = {"GB/s": 1e9, "TFLOP/s": 1e12}


def _cuda_runs():
    if tl.cuda.is_available():
        return True, False
    return backends.cuda_emulated(), backends.cuda_emulated()


CUDA_RUNS, CUDA_EMULATED = _cuda_runs()


def _tensorlab(device, inputs, grad, dtype="float32"):
    dt = getattr(tl, dtype)
    return [tl.tensor(a, device=device).to(dt).requires_grad_() for a in inputs], \
        tl.tensor(grad, device=device).to(dt), tl.nn.functional


def _torch(device, inputs, grad, dtype="float32"):
    torch = pytest.importorskip("torch")
    if device != "cpu" and not torch.cuda.is_available():
        pytest.skip("torch has no CUDA here")
    dev = "cpu" if device == "cpu" else "cuda"
    dt = getattr(torch, dtype)
    return [torch.tensor(a, device=dev).to(dt).requires_grad_() for a in inputs], \
        torch.tensor(grad, device=dev).to(dt), torch.nn.functional


IMPLS = {"tensorlab": _tensorlab, "torch": _torch}


def fwd_bwd(impl, device, forward, inputs, grad, dtype="float32"):
    """run() for one round of `forward(F, *inputs)` (F: the library's nn.functional) and its backward
    from `grad`, every input a leaf of `dtype` that requires grad (its .grad cleared each round); and
    to_np, the forward result as a float32 NumPy array."""
    leaves, gt, functional = IMPLS[impl](device, inputs, grad, dtype)

    def run():
        for t in leaves:
            t.grad = None
        y = forward(functional, *leaves)
        y.backward(gt)
        return y
    return run, lambda y: y.detach().cpu().float().numpy()


def cases(name, sizes):
    """The rows of one layer, `{device}-{name}_fwd_bwd-{size}-{impl}`, for every device, size and
    implementation; the CUDA rows on the CUDA event clock (emulated: tiny only)."""
    cuda_marks = [pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock),
                  pytest.mark.skipif(not CUDA_RUNS, reason="no CUDA GPU and the emulation driver is off")]
    out = []
    for device in ("cpu", "cuda"):
        for size in sizes[MODE]:
            for impl in IMPLS:
                marks = cuda_marks if device == "cuda" else ()
                if device == "cuda" and CUDA_EMULATED and MODE != "tiny":
                    marks = marks + [pytest.mark.skip(reason="the emulation driver runs only the tiny size")]
                name_id = f"{device}-{name}_fwd_bwd-{'x'.join(map(str, size))}-{impl}"
                out.append(pytest.param(device, size, impl, id=name_id, marks=marks))
    return out


def bench_fwd_bwd(benchmark, ratio_board, *, device, size, impl, name, forward, inputs, grad, reference, atol,
                  shape, unit, work, dtype="float32", rtol=1e-4):
    """Check `forward` of `impl` on `device` (inputs of `dtype`) against `reference` (`rtol`, `atol`), then time its
    forward + backward: group, extra_info (library, device, workload, shape, unit, work, emulated,
    throughput from the median in `unit`) and the ratio board's row."""
    run, to_np = fwd_bwd(impl, device, forward, inputs, grad, dtype)
    np.testing.assert_allclose(to_np(run()), reference, rtol=rtol, atol=atol)
    workload = f"{name}_fwd_bwd"
    emulated = device == "cuda" and CUDA_EMULATED
    where = device + (" (emulated)" if emulated else "")
    benchmark.group = f"{name} fwd+bwd {shape} on {where}"
    benchmark.extra_info.update(library=impl, device=device, workload=workload, shape=shape, unit=unit,
                                work=work, emulated=emulated)
    benchmark(run)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable
        return
    median = stats.stats.median
    rate = work / median / UNIT_SCALE[unit]
    benchmark.extra_info["throughput"] = rate
    ratio_board.post((where, workload, size), f"{where} {name} fwd+bwd {shape}", impl, median, rate, unit,
                     benchmark)
