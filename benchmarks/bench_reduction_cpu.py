"""CPU reductions side by side: tensorlab vs NumPy vs torch (when installed), one pytest-benchmark
group per workload so a single run prints them together. No assertions on time.

    pytest benchmarks/bench_reduction_cpu.py --benchmark-only --benchmark-group-by=group
"""
import numpy as np
import pytest

import tensorlab as tl

pytest.importorskip("pytest_benchmark")

SHAPE = (4096, 4096)  # 64 MiB of float32: past the last-level cache on most machines


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


@pytest.fixture(scope="module")
def data():
    arr = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    torch = _torch()
    return {"numpy": arr, "tensorlab": tl.from_numpy(arr), "torch": torch.from_numpy(arr) if torch else None}


def _softmax_numpy(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    e /= e.sum(axis=dim, keepdims=True)
    return e


WORKLOADS = {
    "sum_full": {"numpy": lambda a: a.sum(), "tensorlab": lambda t: t.sum(), "torch": lambda t: t.sum()},
    "sum_dim0": {"numpy": lambda a: a.sum(axis=0), "tensorlab": lambda t: t.sum(0), "torch": lambda t: t.sum(0)},
    "sum_dim1": {"numpy": lambda a: a.sum(axis=1), "tensorlab": lambda t: t.sum(1), "torch": lambda t: t.sum(1)},
    "softmax_dim1": {"numpy": lambda a: _softmax_numpy(a, 1), "tensorlab": lambda t: tl.softmax(t, 1),
                     "torch": lambda t: t.softmax(1)},
}


@pytest.mark.parametrize("lib", ["tensorlab", "numpy", "torch"])
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_reduction_cpu(benchmark, data, workload, lib):
    if data[lib] is None:
        pytest.skip(f"{lib} is not installed")
    benchmark.group = f"{workload} float32 {SHAPE[0]}x{SHAPE[1]}"
    benchmark.extra_info["library"] = lib
    fn, x = WORKLOADS[workload][lib], data[lib]
    benchmark.pedantic(fn, args=(x,), rounds=10, warmup_rounds=2, iterations=1)
