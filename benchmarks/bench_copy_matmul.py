"""Strided copy, cast and matmul side by side, one pytest-benchmark group per (device, workload):
tensorlab vs NumPy vs torch on the CPU; tensorlab vs CuPy (its copy kernels, cuBLAS) vs torch on
CUDA. The workloads, inputs and adapters are the benchmark command's (tensorlab/bench), and each
implementation's result is checked against NumPy before it is timed.

CUDA variants are timed with CUDA events - pytest-benchmark reads tl.benchmark.cuda_event_clock,
which records an event on the current stream and waits for it, so a round measures device time,
not the launch - and are skipped without a CUDA GPU. No assertions on time.

    pytest benchmarks/bench_copy_matmul.py --benchmark-only --benchmark-group-by=group
"""
import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends
from tensorlab.bench import suite
from tensorlab.bench.libs import libraries

pytest.importorskip("pytest_benchmark")

SIZES = {"cpu": {"copy_T": 1 << 22, "cast_f16": 1 << 22, "matmul": 512},
         "cuda": {"copy_T": 1 << 26, "cast_f16": 1 << 26, "matmul": 4096}}
LIBS = {"cpu": ["tensorlab", "numpy", "torch"], "cuda": ["tensorlab", "cupy", "torch"]}


def _params():
    gpu = [pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock),
           pytest.mark.skipif(not tl.cuda.is_available(),
                              reason=f"no CUDA GPU: {backends.cuda_unavailable_reason() or 'emulation only'}")]
    return [pytest.param(device, lib, id=f"{device}-{lib}", marks=gpu if device == "cuda" else ())
            for device in LIBS for lib in LIBS[device]]


@pytest.fixture(scope="module")
def inputs():
    cache = {}

    def get(device, workload):
        key = (device, workload)
        if key not in cache:
            w = suite.WORKLOADS[workload]
            host = w.inputs(SIZES[device][workload], np.random.default_rng(0))
            cache[key] = host, w.reference(host)
        return cache[key]
    return get


@pytest.mark.parametrize("device, lib_name", _params())
@pytest.mark.parametrize("workload", ["copy_T", "cast_f16", "matmul"])
def test_copy_cast_matmul(benchmark, inputs, workload, device, lib_name):
    lib = next((lib for lib in libraries(device) if lib.name == lib_name), None)
    if lib is None:
        pytest.skip(f"{lib_name} is not installed or cannot run on {device}")
    w = suite.WORKLOADS[workload]
    host, want = inputs(device, workload)
    fn = w.prepare(lib, host)
    suite.check_result(lib, fn(), want, w.tol(host), f"{lib_name} {workload}")
    benchmark.group = f"{workload} {w.shape(host)} on {device}"
    benchmark.extra_info.update(library=lib_name, device=device, work=w.work(host), unit=w.unit)
    benchmark.pedantic(fn, rounds=20, warmup_rounds=2, iterations=1)
