"""The benchmark command's kernels as pytest-benchmark rows, for regression tracking: every workload
of tensorlab/bench/suite.py (contiguous and broadcast add, strided copy, cast, sum, softmax,
matmul) plus a few kernels the command's table leaves out (mul, exp, sum over one dim), on every
available device, for tensorlab and the baselines present in the same run - NumPy and torch on
the CPU, CuPy (its ufuncs and reductions, cuBLAS) and torch on CUDA. The workloads, inputs,
adapters, NumPy references and sizes are the command's (suite.WORKLOADS, libs.libraries,
suite.settings), and each implementation's result is checked against NumPy before it is timed,
so a wrong kernel cannot post a fast time. No assertions on time.

CUDA rows are timed on the device's timeline: pytest-benchmark reads tl.benchmark.cuda_event_clock,
which records a CUDA event on the current stream and waits for it, so a round measures the device
time of the work queued between two readings, not the launch. They run on a CUDA GPU, or on the
emulation driver under TENSORLAB_CUDA_EMULATION=1 (numbers about the host, marked emulated), and
are skipped otherwise.

Sizes come from TENSORLAB_BENCH_MODE: "quick" (default: the smallest and the largest size of the
command's --quick run, per device), "full" (every size of the command's full run) or "tiny" (the
command's --tiny sizes: a smoke run, tests/test_benchmarks_collect.py).

Each row's extra_info holds library, device, workload, size, shape, unit, work (bytes or flops),
throughput (GB/s or TFLOP/s from the median) and emulated; the tensorlab row also holds `ratios`
(each baseline's median / tensorlab's: above 1, tensorlab is faster), which the terminal summary
prints at the end.

    pytest benchmarks/test_kernels.py --benchmark-only
    TENSORLAB_BENCH_MODE=full pytest benchmarks/test_kernels.py --benchmark-only --benchmark-autosave
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends
from tensorlab.bench import suite
from tensorlab.bench.libs import libraries

pytest.importorskip("pytest_benchmark")

MODES = ("tiny", "quick", "full")
MODE = os.environ.get("TENSORLAB_BENCH_MODE", "quick")
if MODE not in MODES:
    raise pytest.UsageError(f"TENSORLAB_BENCH_MODE must be one of {', '.join(MODES)}, got {MODE!r}")

F32 = np.float32


# -- kernels the command's table leaves out, written like suite.WORKLOADS --------------------------
def _xp_out(fn_name):
    """fn(a[, b], out=out) through the library's array module (numpy.multiply / torch.mul / ...)."""
    def prepare(lib, h):
        args = [lib.put(h[k]) for k in ("a", "b") if k in h]
        out = lib.empty(h["a"].shape, F32)
        xp = lib.xp
        op = getattr(xp, fn_name, None) or getattr(xp, {"multiply": "mul"}[fn_name])
        return lambda: op(*args, out=out)
    return prepare


def _prep_sum_dim(dim):
    def prepare(lib, h):
        x = lib.put(h["a"])
        return lambda: x.sum(dim)  # positional: axis for NumPy/CuPy, dim for tensorlab/torch
    return prepare


def _rows(n, rng):
    return {"a": rng.standard_normal(suite.split(n, 1024), dtype=F32)}



def _sum_tol(dim):
    return lambda h: (1e-4, 1e-5 * float(np.abs(h["a"]).sum(dim).max()))


EXTRA_WORKLOADS = {w.name: w for w in [
    suite.Workload("mul", "c = a * b, contiguous float32", "GB/s",
                   lambda n, rng: {"a": rng.standard_normal(n, dtype=F32), "b": rng.standard_normal(n, dtype=F32)},
                   _xp_out("multiply"), lambda h: h["a"] * h["b"], lambda h: 3 * h["a"].nbytes, suite.EXACT,
                   lambda h: f"{h['a'].shape[0]}"),
    suite.Workload("exp", "y = exp(x), contiguous float32", "GB/s",
                   lambda n, rng: {"a": rng.standard_normal(n, dtype=F32)},
                   _xp_out("exp"), lambda h: np.exp(h["a"].astype(np.float64)), lambda h: 2 * h["a"].nbytes,
                   lambda h: (1e-5, 1e-6), lambda h: f"{h['a'].shape[0]}"),
    suite.Workload("sum_dim0", "sum over dim 0 of (R, 1024), float32", "GB/s",
                   _rows, _prep_sum_dim(0), lambda h: h["a"].astype(np.float64).sum(0),
                   lambda h: h["a"].nbytes + h["a"].shape[1] * 4, _sum_tol(0), lambda h: "{}x{}".format(*h["a"].shape)),
    suite.Workload("sum_dim1", "sum over dim 1 of (R, 1024), float32", "GB/s",
                   _rows, _prep_sum_dim(1), lambda h: h["a"].astype(np.float64).sum(1),
                   lambda h: h["a"].nbytes + h["a"].shape[0] * 4, _sum_tol(1), lambda h: "{}x{}".format(*h["a"].shape)),
]}
WORKLOADS = {**{n: suite.WORKLOADS[n] for n in suite.BASE_WORKLOADS}, **EXTRA_WORKLOADS}


# -- devices, sizes, implementations ----------------------------------------------------------------
def _cuda_state():
    """(runs, emulated, why not)."""
    if tl.cuda.is_available():
        return True, False, None
    if backends.cuda_emulated():
        return True, True, None
    return False, False, backends.cuda_unavailable_reason() or "the emulation driver is off"


CUDA_RUNS, CUDA_EMULATED, CUDA_WHY_NOT = _cuda_state()
# every implementation the command could compare on each device; those not installed are skipped
IMPLS = {"cpu": ("tensorlab", "numpy", "torch"), "cuda": ("tensorlab", "cupy", "torch")}


def sizes(workload, device_type, mode=MODE):
    """The sizes of one workload's rows on a device type in a mode (elements, or n for matmul)."""
    got = suite.sizes_for("matmul" if workload == "matmul" else "add", device_type, suite.settings(mode))
    if mode == "quick":
        got = sorted({min(got), max(got)})
    return got


def _cases():
    cuda_marks = [pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock),
                  pytest.mark.skipif(not CUDA_RUNS, reason=f"no CUDA GPU: {CUDA_WHY_NOT}")]
    out = []
    for device in ("cpu", "cuda"):
        for name in WORKLOADS:
            for size in sizes(name, device):
                for impl in IMPLS[device]:
                    out.append(pytest.param(device, name, size, impl, id=f"{device}-{name}-{size}-{impl}",
                                            marks=cuda_marks if device == "cuda" else ()))
    return out


def _device_string(device):
    return "cpu" if device == "cpu" else f"cuda:{tl.cuda.current_device()}"


@pytest.fixture(scope="module")
def case_inputs():
    """Host inputs and the NumPy reference of the last case asked for (consecutive rows share one
    case, and only one case's arrays are kept alive)."""
    last = {}

    def get(device, name, size):
        key = (device, name, size)
        if key not in last:
            last.clear()
            w = WORKLOADS[name]
            host = w.inputs(size, np.random.default_rng(0))
            last[key] = host, w.reference(host)
        return last[key]
    return get


@pytest.fixture(scope="module")
def impls():
    cache = {}

    def get(device):
        if device not in cache:
            cache[device] = {lib.name: lib for lib in libraries(_device_string(device))}
        return cache[device]
    return get


@pytest.mark.parametrize("device, workload, size, impl", _cases())
def test_kernel(benchmark, case_inputs, impls, ratio_board, device, workload, size, impl):
    lib = impls(device).get(impl)
    if lib is None:
        pytest.skip(f"{impl} is not installed or cannot run on {device}")
    w = WORKLOADS[workload]
    host, want = case_inputs(device, workload, size)
    fn = w.prepare(lib, host)
    suite.check_result(lib, fn(), want, w.tol(host), f"{impl} {workload}")  # also the first (compiling) call
    emulated = device == "cuda" and CUDA_EMULATED
    where = lib.device + (" (emulated)" if emulated else "")
    benchmark.group = f"{workload} {w.shape(host)} on {where}"
    benchmark.extra_info.update(library=impl, device=lib.device, workload=workload, size=size, shape=w.shape(host),
                                unit=w.unit, work=w.work(host), emulated=emulated)
    benchmark(fn)
    stats = getattr(benchmark, "stats", None)
    if stats is None:  # --benchmark-disable: fn ran once, nothing was timed
        return
    median = stats.stats.median
    rate = w.work(host) / median / (1e12 if w.unit == "TFLOP/s" else 1e9)
    benchmark.extra_info["throughput"] = rate
    ratio_board.post((where, workload, size), f"{where} {workload} {w.shape(host)}", impl, median, rate, w.unit,
                     benchmark)
