"""CPU elementwise ops side by side: tensorlab vs NumPy vs torch (when installed), one
pytest-benchmark group per workload so a single run prints them together. Two regimes:

- large contiguous float32 tensors (4M elements, 16 MiB each): memory bandwidth, where tensorlab
  should match NumPy (it is one NumPy ufunc per op) up to the cost of the fresh output buffer;
- 8-element tensors: the per-op overhead of the Python front end (dtype promotion, broadcasting,
  allocation, one backend call), which is what dominates small-tensor code.

No assertions on time.

    pytest benchmarks/bench_elementwise_cpu.py --benchmark-only --benchmark-group-by=group
"""
import numpy as np
import pytest

import tensorlab as tl

pytest.importorskip("pytest_benchmark")

LARGE = 4 * 1024 * 1024
SMALL = 8
LIBS = ["tensorlab", "numpy", "torch"]


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _inputs(n):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(n).astype(np.float32) for _ in range(2))
    out = np.empty(n, dtype=np.float32)
    torch = _torch()
    return {"numpy": (a, b, out), "tensorlab": tuple(tl.tensor(x) for x in (a, b, out)),
            "torch": tuple(torch.from_numpy(x.copy()) for x in (a, b, out)) if torch else None}


@pytest.fixture(scope="module")
def large():
    return _inputs(LARGE)


@pytest.fixture(scope="module")
def small():
    return _inputs(SMALL)


def _add_out(lib):
    if lib == "numpy":
        return lambda a, b, o: np.add(a, b, out=o)
    mod = tl if lib == "tensorlab" else _torch()
    return lambda a, b, o: mod.add(a, b, out=o)


def _exp(lib):
    if lib == "numpy":
        return lambda a, b, o: np.exp(a)
    mod = tl if lib == "tensorlab" else _torch()
    return lambda a, b, o: mod.exp(a)


WORKLOADS = {
    "add": lambda lib: (lambda a, b, o: a + b),
    "mul": lambda lib: (lambda a, b, o: a * b),
    "exp": _exp,
    "add_out": _add_out,
    "add_scalar": lambda lib: (lambda a, b, o: a + 2.0),
    "iadd": lambda lib: (lambda a, b, o: a.__iadd__(b)),
}


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("workload", ["add", "mul", "exp", "add_out"])
def test_elementwise_large(benchmark, large, workload, lib):
    if large[lib] is None:
        pytest.skip(f"{lib} is not installed")
    benchmark.group = f"{workload} float32 {LARGE} elements"
    benchmark.extra_info["library"] = lib
    benchmark.pedantic(WORKLOADS[workload](lib), args=large[lib], rounds=20, warmup_rounds=2, iterations=1)


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("workload", sorted(WORKLOADS))
def test_elementwise_overhead(benchmark, small, workload, lib):
    """Per-op overhead: `a + b` and friends on 8 float32 elements (target: ~10 us for tensorlab)."""
    if small[lib] is None:
        pytest.skip(f"{lib} is not installed")
    benchmark.group = f"overhead: {workload} float32 {SMALL} elements"
    benchmark.extra_info["library"] = lib
    benchmark(WORKLOADS[workload](lib), *small[lib])
