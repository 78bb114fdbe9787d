"""Per-op host overhead: what one call on a tiny tensor costs the caller before any real work.

The four workloads of issue 20, on 8 float32 elements: `a + b`, `x.mul_(1.0)`, `x.sum()` and the
view chain `x.view(2, 4)[1:, None].T`, for tensorlab next to NumPy and torch (when installed) on
the CPU, and next to CuPy and torch on a CUDA GPU, in one process. Each round times `number`
calls of every implementation back to back (the order rotates from round to round, so no library
always runs first or after another's garbage); per-call times are the round's total / number,
reported as median and min over the rounds.

On CUDA the cost of a call is what the host spends queuing it: on a GPU, `number` calls and one
synchronize at the end (the tiny kernels finish faster than they are queued). On the emulation
driver the kernels would run on the host inside the call, so the timed rounds launch dry
(driver.kernel_timing(dry=True): every launch checks and packs its arguments, the kernel is not
run; the results were checked against NumPy's before, with the kernels run): what is timed is the
host path a GPU would also pay (front end, planning, argument packing, the launch call), without
the kernels' time or what running them on the host does to its caches. `launch_s` says how much
of it was the emulation's own launch() (which CuPy's launch replaces on a GPU), `front_s` the
rest: tensorlab's front end and CUDA backend.

What the CUDA rows' host path caches (issue 39; docs/ARCHITECTURE.md, "CUDA launch path"): a launch
record per (kernel, layout class) - binary without parameters (`a + b`, `x.mul_(1.0)`:
backends/cuda/elementwise._run2), unary without parameters (_run1) and a one-launch reduce
(`x.sum()`: reduction._reduce1) find the driver function, grid, block, dtype codes, packed layouts,
reaches, pack widths and constant arguments by the identity of the operands' Layout records, so a
repeated call allocates the output, checks bounds/devices/alignment, builds the argument tuple and
calls the driver once. `front_s` still holds the emulation's malloc/free (~2.8 us an output: two
ctypes calls into AddressSanitizer's allocator and their bookkeeping), which CuPy's pool replaces on
a GPU as its launch replaces launch()."""
from __future__ import annotations

import statistics
import time
import warnings

import numpy as np

import tensorlab as tl
from tensorlab import backends

from .libs import _optional, torch_has_cuda, torch_module
from .threads import tensorlab_threads

N = 8
# the issues' targets for tensorlab's per-call host overhead (seconds); CUDA: issue 39's "host path per
# small op (emulated, kernel execution excluded) <= 4 us", judged on front_s where emulated
TARGETS = {"cpu": {"add": 2.0e-6, "mul_": 2.0e-6, "sum": 3.0e-6, "view_chain": 4.0e-6},
           "cuda": {"add": 4e-6, "mul_": 4e-6, "sum": 4e-6, "view_chain": 4e-6}}


class Workload:
    def __init__(self, name, title, reference):
        self.name, self.title, self.reference = name, title, reference


def _host():
    return np.arange(1, N + 1, dtype=np.float32) / 8


def _numpy_like(xp):
    return {"add": lambda a, b: (lambda: a + b),
            "mul_": lambda a, b: (lambda: xp.multiply(a, 1.0, out=a)),
            "sum": lambda a, b: (lambda: a.sum()),
            "view_chain": lambda a, b: (lambda: a.reshape(2, 4)[1:, None].T)}


def _torch_like():
    return {"add": lambda a, b: (lambda: a + b),
            "mul_": lambda a, b: (lambda: a.mul_(1.0)),
            "sum": lambda a, b: (lambda: a.sum()),
            "view_chain": lambda a, b: (lambda: a.view(2, 4)[1:, None].T)}


WORKLOADS = {w.name: w for w in [
    Workload("add", "a + b, 8 float32", lambda a, b: a + b),
    Workload("mul_", "x.mul_(1.0), 8 float32", lambda a, b: a),
    Workload("sum", "x.sum(), 8 float32", lambda a, b: a.astype(np.float64).sum()),
    Workload("view_chain", "x.view(2, 4)[1:, None].T, 8 float32",
             lambda a, b: a.reshape(2, 4)[1:, None].T),
]}


class Impl:
    """One library on one device: `fns(workload)` -> a no-argument callable, `get` -> NumPy,
    `sync()` waits for its device, `threads` its CPU thread count (None: not a CPU library)."""

    def __init__(self, name, device, put, table, get, sync=None, threads=None):
        self.name, self.device, self._put, self._table, self.get = name, device, put, table, get
        self.sync = sync or (lambda: None)
        self.threads = threads or (lambda: None)

    def make(self, workload):
        a, b = self._put(_host()), self._put(_host()[::-1].copy())
        return self._table[workload](a, b)


def impls(device, baselines=None):
    """[tensorlab, baselines...] on `device` ("cpu" or "cuda:N"), the baselines installed and able
    to run there (`baselines`: names to include, None: all)."""
    want = (lambda n: True) if baselines is None else (lambda n: n in baselines)
    out = []
    torch = torch_module() if want("torch") else None
    if device == "cpu":
        out.append(Impl("tensorlab", device, lambda h: tl.tensor(h), _torch_like(), lambda x: x.numpy(),
                        threads=tensorlab_threads))
        if want("numpy"):
            out.append(Impl("numpy", device, lambda h: np.array(h), _numpy_like(np), np.asarray, threads=lambda: 1))
        if torch is not None:
            out.append(Impl("torch", device, lambda h: torch.from_numpy(h.copy()), _torch_like(),
                            lambda x: x.numpy(), threads=torch.get_num_threads))
        return out
    index = tl.device(device).index or 0
    out.append(Impl("tensorlab", device, lambda h: tl.tensor(h, device=device), _torch_like(),
                    lambda x: x.cpu().numpy(), sync=lambda: tl.cuda.synchronize(device)))
    if tl.cuda.is_available():
        cupy = _optional("cupy") if want("cupy") else None
        if cupy is not None:
            def put(h):
                with cupy.cuda.Device(index):
                    return cupy.asarray(h)
            out.append(Impl("cupy", device, put, _numpy_like(cupy), cupy.asnumpy,
                            sync=lambda: cupy.cuda.Device(index).synchronize()))
        if torch is not None and torch_has_cuda(torch):
            out.append(Impl("torch", device, lambda h: torch.from_numpy(h.copy()).to(f"cuda:{index}"), _torch_like(),
                            lambda x: x.cpu().numpy(), sync=lambda: torch.cuda.synchronize(index)))
    return out


def _emulated(device):
    return device != "cpu" and not tl.cuda.is_available() and backends.cuda_emulated()


def _timed_round(fn, number, sync, emulated):
    """(seconds per call, emulated launch() seconds per call or None) of one round; on the
    emulation driver the launches are dry (checked and packed, the kernel not run)."""
    if emulated:
        from tensorlab.backends.cuda.active import driver
        with driver.kernel_timing(dry=True) as log:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            sync()
            t = time.perf_counter() - t0
        return t / number, sum(r[2] for r in log) / number
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    sync()
    return (time.perf_counter() - t0) / number, None


def _check(impl, workload, fn):
    w = WORKLOADS[workload]
    got = np.asarray(impl.get(fn()), dtype=np.float64)
    want = np.asarray(w.reference(_host(), _host()[::-1].copy()), dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-6, atol=1e-6):
        raise AssertionError(f"{impl.name} {workload} on {impl.device}: result {got.tolist()} differs from NumPy's "
                             f"{want.tolist()}; not timed")


def measure(device, workloads=None, rounds=7, number=1000, baselines=None, progress=None):
    """The overhead records of `device`: one per (workload, implementation), with median_s/min_s per
    call over `rounds` interleaved rounds of `number` calls, `times_s`, `threads`, and on the
    tensorlab record `ratios` ({baseline: its median / tensorlab's}, as the benchmark table's) and
    `target_s` (the issue's target, where it names one), judged against `judged_s`: the median, or
    on the emulated device `front_s` (the emulation's launch() stands in for CuPy's launch call)."""
    with warnings.catch_warnings():  # the view chain's 3-d `.T` warns (torch's deprecation), once
        warnings.simplefilter("ignore", UserWarning)
        return _measure(device, workloads, rounds, number, baselines, progress)


def _measure(device, workloads, rounds, number, baselines, progress):
    emulated = _emulated(device)
    kind = tl.device(device).type
    out = []
    for workload in workloads or list(WORKLOADS):
        group = []
        fns = {}
        for impl in impls(device, baselines):
            rec = {"kind": "overhead", "device": device, "workload": workload, "impl": impl.name,
                   "title": WORKLOADS[workload].title, "threads": impl.threads(), "rounds": rounds,
                   "number": number, "emulated": emulated, "error": None}
            try:
                fn = impl.make(workload)
                _check(impl, workload, fn)
                for _ in range(3):  # warm-up: compiles CUDA kernels, fills caches
                    fn()
                impl.sync()
                fns[impl.name] = (fn, impl)
            except Exception as e:  # one broken implementation must not stop the others
                rec["error"] = f"{type(e).__name__}: {e}".splitlines()[0][:160]
            group.append(rec)
        if progress:
            progress(f"{device} overhead {workload}")
        times = {name: [] for name in fns}
        launch = {name: [] for name in fns}
        names = list(fns)
        for r in range(rounds):
            k = r % len(names) if names else 0
            for name in names[k:] + names[:k]:
                fn, impl = fns[name]
                t, ls = _timed_round(fn, number, impl.sync, emulated and name == "tensorlab")
                times[name].append(t)
                if ls is not None:
                    launch[name].append(ls)
        for rec in group:
            ts = times.get(rec["impl"])
            if not ts:
                continue
            rec.update(times_s=ts, median_s=statistics.median(ts), min_s=min(ts))
            if launch.get(rec["impl"]):
                rec["launch_s"] = statistics.median(launch[rec["impl"]])
                # without the emulation's own launch() (argument packing CuPy does on a GPU)
                rec["front_s"] = rec["median_s"] - rec["launch_s"]
                rec["judged_s"] = rec["front_s"]  # the target is tensorlab's path's: not the stand-in driver's packing
        ours = next((r for r in group if r["impl"] == "tensorlab" and "median_s" in r), None)
        if ours is not None:
            ours["ratios"] = {r["impl"]: r["median_s"] / ours["median_s"] for r in group
                              if r is not ours and "median_s" in r}
            target = TARGETS.get(kind, {}).get(workload)
            if target is not None:
                ours["target_s"] = target
        out += group
    return out


def settings(mode):
    """(rounds, calls per round on the CPU, calls per round on CUDA) of a benchmark mode; the
    emulated CUDA path costs tens of microseconds a call (dry launches), so it gets fewer."""
    return {"tiny": (3, 50, 5), "quick": (7, 1000, 300), "full": (15, 5000, 2000)}[mode]
