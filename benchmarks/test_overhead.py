"""Per-op host overhead on tiny tensors: tensorlab vs NumPy and torch on the CPU, and vs CuPy and
torch on CUDA when a GPU is present, in one run. Each workload is one call on 8-element vectors or
3x4 / 4x4 matrices, so what is timed is the Python front end, allocation, dispatch and (on CUDA)
the launch path, not arithmetic. CUDA rounds are timed on the host without a synchronization per
call: they measure what a launch costs the caller (the kernels of 8 elements finish faster than
they are queued). Libraries that are not installed, and the CUDA rows without a CUDA GPU, are
skipped. No assertions on time.

At the end of the module the ratios are printed and stored in each tensorlab row's extra_info
as `ratios` = {library: its median / tensorlab's median} (as test_kernels.py and the benchmark
command report them: above 1, tensorlab is faster), against NumPy on the CPU, CuPy on CUDA and
torch on both.

    pytest benchmarks/test_overhead.py --benchmark-only --benchmark-group-by=group
"""
import contextlib

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends

pytest.importorskip("pytest_benchmark")

LIBS = {"cpu": ["tensorlab", "numpy", "torch"], "cuda": ["tensorlab", "cupy", "torch"]}
REFERENCES = {"cpu": ("numpy", "torch"), "cuda": ("cupy", "torch")}


def _torch(device):
    try:
        import torch
    except ImportError:
        return None
    if device == "cuda" and not torch.cuda.is_available():
        return None
    return torch


def _cupy():
    if not tl.cuda.is_available():
        return None
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def _module(lib, device):
    """(array module, from-NumPy converter) of `lib` on `device`, or None when it cannot run there."""
    if lib == "tensorlab":
        if device == "cuda" and not tl.cuda.is_available():
            return None
        return tl, lambda a: tl.tensor(a, device=device)
    if lib == "numpy":
        return (np, np.array) if device == "cpu" else None
    if lib == "cupy":
        cp = _cupy() if device == "cuda" else None
        return None if cp is None else (cp, cp.asarray)
    torch = _torch(device)
    return None if torch is None else (torch, lambda a: torch.tensor(a, device=device))


def _inputs(lib, device):
    got = _module(lib, device)
    if got is None:
        return None
    mod, conv = got
    rng = np.random.default_rng(0)
    host = {"a": rng.standard_normal(8), "b": rng.standard_normal(8), "c": rng.standard_normal(8),
            "m": rng.standard_normal((3, 4)), "p": rng.standard_normal((4, 4)), "q": rng.standard_normal((4, 4))}
    return mod, {k: conv(v.astype(np.float32)) for k, v in host.items()}


def _iadd(mod):
    if mod is np:
        return lambda x: np.add(x["c"], x["b"], out=x["c"])
    return lambda x: x["c"].add_(x["b"])


def _flat(mod):
    if mod is np or mod.__name__ == "cupy":
        return lambda x: x["m"].reshape(-1)
    return lambda x: x["m"].view(-1)


def _t(mod):
    if mod is np or mod.__name__ == "cupy":
        return lambda x: x["m"].T
    return lambda x: x["m"].t()


def _clone(mod):
    if mod is np or mod.__name__ == "cupy":
        return lambda x: x["m"].copy()
    return lambda x: x["m"].clone()


def _mul_inplace(mod):
    if mod is np or mod.__name__ == "cupy":
        return lambda x: mod.multiply(x["c"], 1.0, out=x["c"])
    return lambda x: x["c"].mul_(1.0)


def _view_chain(mod):  # issue 20's x.view(2, 4)[1:, None].T on 8 elements
    if mod is np or mod.__name__ == "cupy":
        return lambda x: x["a"].reshape(2, 4)[1:, None].T
    return lambda x: x["a"].view(2, 4)[1:, None].T


# workload -> (array module -> function of the inputs dict)
WORKLOADS = {
    "add": lambda mod: (lambda x: x["a"] + x["b"]),
    "mul_scalar": lambda mod: (lambda x: x["a"] * 2),
    "add_inplace": _iadd,
    "exp": lambda mod: (lambda x: mod.exp(x["a"])),
    "sum_all": lambda mod: (lambda x: x["m"].sum()),
    "sum_dim0": lambda mod: (lambda x: x["m"].sum(0)),
    "matmul_4x4": lambda mod: (lambda x: mod.matmul(x["p"], x["q"])),
    "slice": lambda mod: (lambda x: x["m"][1:3]),
    "view_flat": _flat,
    "transpose": _t,
    "clone": _clone,
    "mul_inplace": _mul_inplace,
    "view_chain": _view_chain,
}


class _Results:
    def __init__(self):
        self.median = {}     # (device, workload, lib) -> seconds
        self.fixtures = {}   # (device, workload) -> the tensorlab row's benchmark fixture


@pytest.fixture(scope="module")
def results(pytestconfig):
    r = _Results()
    yield r
    lines = []
    for device, refs in REFERENCES.items():
        for workload in WORKLOADS:
            ours = r.median.get((device, workload, "tensorlab"))
            if ours is None:
                continue
            parts = [f"tensorlab {ours * 1e6:8.2f} us"]
            ratios = {}
            for ref in refs:
                theirs = r.median.get((device, workload, ref))
                if theirs:
                    ratios[ref] = round(theirs / ours, 4)
                    parts.append(f"{ref} {theirs * 1e6:7.2f} us (x{theirs / ours:.2f})")
            fx = r.fixtures.get((device, workload))
            if fx is not None and ratios:
                fx.extra_info["ratios"] = ratios
            lines.append(f"{device:4s} {workload:12s} " + "   ".join(parts))
    if lines:
        tr = pytestconfig.pluginmanager.getplugin("terminalreporter")
        capman = pytestconfig.pluginmanager.getplugin("capturemanager")
        write = tr.write_line if tr is not None else print
        with capman.global_and_fixture_disabled() if capman is not None else contextlib.nullcontext():
            write("")
            write("per-op overhead, median per call; (xN) = that library's median / tensorlab's "
                  "(below 1: tensorlab is slower)")
            for line in lines:
                write(line)


@pytest.fixture(scope="module")
def inputs():
    cache = {}

    def get(lib, device):
        if (lib, device) not in cache:
            cache[lib, device] = _inputs(lib, device)
        return cache[lib, device]
    return get


def _params():
    out = []
    for device, libs in LIBS.items():
        marks = ()
        if device == "cuda":
            marks = pytest.mark.skipif(not tl.cuda.is_available(),
                                       reason=f"no CUDA GPU: {getattr(backends.cuda_diagnosis(), 'what', 'emulation only')}")
        out += [pytest.param(device, lib, id=f"{device}-{lib}", marks=marks) for lib in libs]
    return out


@pytest.mark.filterwarnings("ignore:The use of `x.T`")  # view_chain's 3-d .T, as the issue writes it
@pytest.mark.parametrize("device, lib", _params())
@pytest.mark.parametrize("workload", list(WORKLOADS))
def test_overhead(benchmark, inputs, results, workload, device, lib):
    got = inputs(lib, device)
    if got is None:
        pytest.skip(f"{lib} is not installed or cannot run on {device}")
    mod, x = got
    fn = WORKLOADS[workload](mod)
    fn(x)  # the first call compiles CUDA kernels, fills caches
    benchmark.group = f"overhead: {workload} on {device}"
    benchmark.extra_info.update(library=lib, device=device)
    benchmark(fn, x)
    stats = getattr(benchmark, "stats", None)
    if stats is not None:  # None under --benchmark-disable
        results.median[device, workload, lib] = stats.stats.median
        if lib == "tensorlab":
            results.fixtures[device, workload] = benchmark


# -- tl.profiler's cost -------------------------------------------------------------------------------
# Off, the profiler adds nothing to the CUDA dispatch path (it wraps the driver's methods only while a
# profile is open) and one dict truth test per CPU allocation (`_faults.alloc_listeners`); the op hooks
# sit behind autograd's existing `_slow` flag. The rows below run the same 100 tiny ops with the
# profiler off and on; extra_info["per_op_us"] is the median per op, and the "on" row's
# extra_info["added_us_per_op"] / ["added_us_per_launch"] is what recording adds to each op / each
# kernel launch (the event pair, the stack walk that finds the user's line, the records).
PROFILER_OPS = 100
_profiler_rows = {}


@pytest.mark.parametrize("device", [pytest.param("cpu", id="cpu"), pytest.param(
    "cuda", id="cuda", marks=pytest.mark.skipif(not tl.cuda.is_available(), reason="no CUDA GPU"))])
@pytest.mark.parametrize("workload", ["add", "sum_all", "add_inplace"])
@pytest.mark.parametrize("mode", ["off", "on"])
def test_profiler_cost(benchmark, inputs, workload, device, mode):
    mod, x = inputs("tensorlab", device)
    fn = WORKLOADS[workload](mod)
    fn(x)
    launches = []

    def off():
        for _ in range(PROFILER_OPS):
            fn(x)

    def on():
        with tl.profiler.profile() as prof:
            for _ in range(PROFILER_OPS):
                fn(x)
        launches.append(len(prof.kernels))

    benchmark.group = f"profiler cost: {workload} on {device}"
    benchmark.extra_info.update(library="tensorlab", device=device, profiler=mode, ops=PROFILER_OPS)
    benchmark.pedantic(on if mode == "on" else off, rounds=30, iterations=1, warmup_rounds=2)
    stats = getattr(benchmark, "stats", None)
    if stats is None:
        return
    per_op = stats.stats.median / PROFILER_OPS
    benchmark.extra_info["per_op_us"] = round(per_op * 1e6, 3)
    _profiler_rows[workload, device, mode] = per_op
    base = _profiler_rows.get((workload, device, "off"))
    if mode == "on" and base is not None:
        added = per_op - base
        benchmark.extra_info["added_us_per_op"] = round(added * 1e6, 3)
        per_launch = launches[-1] / PROFILER_OPS if launches and launches[-1] else 0
        if per_launch:
            benchmark.extra_info["added_us_per_launch"] = round(added / per_launch * 1e6, 3)
