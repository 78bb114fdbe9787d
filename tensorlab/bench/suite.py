"""The benchmark suite: workloads, sizes, the bandwidth peak of each device, and the loop that
checks and times every (device, workload, size, implementation) with tl.benchmark.Timer.

A workload is written once over the library adapters of libs.py. Memory-bound workloads report
GB/s from the bytes an ideal kernel moves (each input read once, each output written once), and
the percent of the device's peak, measured in the same run by a plain copy of a large buffer
(cudaMemcpyAsync device-to-device on CUDA, a NumPy memcpy on the CPU: the backends' copy_bytes).
matmul reports TFLOP/s (2*n^3 flops). Every implementation's result is checked against NumPy
before it is timed, so a wrong kernel cannot post a fast time.
"""
from __future__ import annotations

import math
import time
import traceback
from typing import Callable, NamedTuple

import ml_dtypes
import numpy as np

import tensorlab as tl
from tensorlab import backends
from tensorlab.benchmark import Stopwatch, Timer

from . import roofline
from . import threads as thread_counts
from .libs import libraries

F32 = np.float32


def split(n, width=None):
    """(rows, cols) with rows * cols == n: cols = width when it divides n, else the factor pair
    closest to a square (rows <= cols)."""
    if width is not None and n % width == 0:
        return n // width, width
    r = math.isqrt(n)
    while n % r:
        r -= 1
    return r, n // r


class Workload(NamedTuple):
    name: str
    title: str
    unit: str                    # "GB/s" or "TFLOP/s"
    inputs: Callable             # (size, rng) -> dict of host arrays
    prepare: Callable            # (lib, host) -> fn(); fn returns the result
    reference: Callable          # host -> expected NumPy result
    work: Callable               # host -> bytes moved (GB/s) or flops (TFLOP/s)
    tol: Callable                # host -> (rtol, atol)
    shape: Callable              # host -> short shape text
    dtype: str = "float32"       # what the plot's panel title names


def _normal(rng, *shape):
    return rng.standard_normal(shape, dtype=F32)


def _prep_add(lib, h):
    a, b = lib.put(h["a"]), lib.put(h["b"])
    out = lib.empty(h["a"].shape, h["a"].dtype)
    return lambda: lib.add(a, b, out)


def _prep_add_t(lib, h):
    a, b = lib.put(h["a"]), lib.put(h["b"])
    at = lib.t(a)
    out = lib.empty(h["b"].shape, h["b"].dtype)
    return lambda: lib.add(at, b, out)


def _prep_copy(lib, h):
    src = lib.put(h["src"])
    dst = lib.empty(h["want_shape"], h["dst_dtype"])
    if h["transpose"]:
        return lambda: lib.copyto(dst, lib.t(src))
    return lambda: lib.copyto(dst, src)


def _copy_reference(h):
    src = h["src"].T if h["transpose"] else h["src"]
    return src.astype(h["dst_dtype"])


def _prep_where(lib, h):
    m, a, b = lib.put(h["m"]), lib.put(h["a"]), lib.put(h["b"])
    return lambda: lib.where(m, a, b)


def _prep_lt(lib, h):
    a, b = lib.put(h["a"]), lib.put(h["b"])
    return lambda: lib.lt(a, b)


def _cast_workload(name, src, dst):
    """dst_dtype.copy_(src_dtype), contiguous: the packed copy_cast kernel, read against the device copy."""
    return Workload(name, f"cast dst.copy_(src), {src} -> {dst}, contiguous", "GB/s",
                    lambda n, rng: {"src": _normal(rng, n).astype(LOW_DTYPES.get(src, F32)), "transpose": False,
                                    "dst_dtype": LOW_DTYPES.get(dst, F32), "want_shape": (n,)},
                    _prep_copy, _copy_reference,
                    lambda h: h["src"].nbytes + h["src"].size * np.dtype(h["dst_dtype"]).itemsize, EXACT,
                    lambda h: f"{h['src'].shape[0]}", f"{src}->{dst}")


def _prep_unary(method):
    def prepare(lib, h):
        x = lib.put(h["x"])
        op = getattr(lib, method)
        return lambda: op(x)
    return prepare


def _prep_matmul(lib, h):
    a, b = lib.put(h["a"]), lib.put(h["b"])
    out = lib.empty((h["a"].shape[0], h["b"].shape[1]), h["a"].dtype)
    return lambda: lib.matmul(a, b, out)


def _softmax_reference(h):
    x = h["x"].astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _nbytes(*arrays):
    return sum(a.nbytes for a in arrays)


EXACT = lambda h: (0.0, 0.0)  # noqa: E731  copies and adds of float32 values round the same everywhere

WORKLOADS = {w.name: w for w in [
    Workload("add", "c = a + b, contiguous float32", "GB/s",
             lambda n, rng: {"a": _normal(rng, n), "b": _normal(rng, n)},
             _prep_add, lambda h: h["a"] + h["b"], lambda h: 3 * h["a"].nbytes, EXACT,
             lambda h: f"{h['a'].shape[0]}"),
    Workload("add_bcast", "c = a + b, a (R, 1024) + row b (1024,), float32", "GB/s",
             lambda n, rng: {"a": _normal(rng, *split(n, 1024)), "b": _normal(rng, split(n, 1024)[1])},
             _prep_add, lambda h: h["a"] + h["b"], lambda h: 2 * h["a"].nbytes + h["b"].nbytes, EXACT,
             lambda h: "{}x{} + {}".format(*h["a"].shape, h["b"].shape[0])),
    Workload("add_T", "c = a.t() + b, transposed (strided) a, float32", "GB/s",
             lambda n, rng: {"a": _normal(rng, *split(n)[::-1]), "b": _normal(rng, *split(n))},
             _prep_add_t, lambda h: h["a"].T + h["b"], lambda h: 3 * h["a"].nbytes, EXACT,
             lambda h: "{}x{}.t() + {}x{}".format(*h["a"].shape, *h["b"].shape)),
    Workload("copy_T", "transposed (strided) copy dst.copy_(src.t()), float32", "GB/s",
             lambda n, rng: {"src": _normal(rng, *split(n)[::-1]), "transpose": True, "dst_dtype": F32,
                             "want_shape": split(n)},
             _prep_copy, _copy_reference, lambda h: 2 * h["src"].nbytes, EXACT,
             lambda h: "{}x{}.t()".format(*h["src"].shape)),
    Workload("cast_f16", "cast dst_f16.copy_(src_f32), contiguous", "GB/s",
             lambda n, rng: {"src": _normal(rng, n), "transpose": False, "dst_dtype": np.float16, "want_shape": (n,)},
             _prep_copy, _copy_reference, lambda h: h["src"].nbytes * 6 // 4, EXACT,
             lambda h: f"{h['src'].shape[0]}", "float32->float16"),
    Workload("sum", "full sum of a float32 vector", "GB/s",
             lambda n, rng: {"x": _normal(rng, n)},
             _prep_unary("sum"), lambda h: h["x"].astype(np.float64).sum(), lambda h: h["x"].nbytes,
             lambda h: (1e-4, 1e-5 * float(np.abs(h["x"]).sum())), lambda h: f"{h['x'].shape[0]}"),
    Workload("cumsum", "running sum of one float32 vector (one long row: the multi-block scan)", "GB/s",
             lambda n, rng: {"x": _normal(rng, n)},
             _prep_unary("cumsum"), lambda h: np.cumsum(h["x"].astype(np.float64)), lambda h: 2 * h["x"].nbytes,
             lambda h: (1e-4, 1e-5 * float(np.abs(h["x"]).sum())), lambda h: f"{h['x'].shape[0]}"),
    Workload("softmax", "softmax over the last dim of (R, 1024), float32", "GB/s",
             lambda n, rng: {"x": _normal(rng, *split(n, 1024))},
             _prep_unary("softmax"), _softmax_reference, lambda h: 2 * h["x"].nbytes, lambda h: (1e-4, 1e-6),
             lambda h: "{}x{}".format(*h["x"].shape)),
    Workload("matmul", "C = A @ B, square float32 (cuBLAS for CuPy)", "TFLOP/s",
             lambda n, rng: {"a": _normal(rng, n, n), "b": _normal(rng, n, n)},
             _prep_matmul, lambda h: h["a"].astype(np.float64) @ h["b"].astype(np.float64),
             lambda h: 2 * h["a"].shape[0] ** 3,
             lambda h: (2e-3, 2e-3 * math.sqrt(h["a"].shape[0])), lambda h: "{0}x{0}x{0}".format(h["a"].shape[0])),
]}

# -- 16-bit variants (--dtype): the same workloads on float16 / bfloat16 data ---------------------------
LOW_DTYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16)}
LOW_SUFFIX = {"float16": "f16", "bfloat16": "bf16"}
DTYPE_WORKLOADS = ("add", "add_bcast", "add_T", "sum", "softmax", "matmul", "where", "lt")
# elementwise shapes measured in 16-bit only (the float32 set stays what the GPU check runs): a ternary
# with a bool mask and a comparison with a bool result, both on the type-resolved contiguous kernels
_LOW_ONLY = {w.name: w for w in [
    Workload("where", "c = where(m, a, b), bool mask m, contiguous float32", "GB/s",
             lambda n, rng: {"m": rng.random(n) < 0.5, "a": _normal(rng, n), "b": _normal(rng, n)},
             _prep_where, lambda h: np.where(h["m"], h["a"], h["b"]),
             lambda h: h["m"].nbytes + 3 * h["a"].nbytes, EXACT, lambda h: f"{h['a'].shape[0]}"),
    Workload("lt", "m = a < b, contiguous float32 -> bool", "GB/s",
             lambda n, rng: {"a": _normal(rng, n), "b": _normal(rng, n)},
             _prep_lt, lambda h: h["a"] < h["b"], lambda h: 2 * h["a"].nbytes + h["a"].size, EXACT,
             lambda h: f"{h['a'].shape[0]}"),
]}


def with_dtype(w, dtype):
    """Workload w on `dtype` data: its float32 inputs rounded to dtype, the reference computed in float64 from the
    rounded inputs, tolerances of a few units in dtype's last place (scaled as w's own: sqrt(n) for matmul, the
    sum of |x| for sum)."""
    dt = LOW_DTYPES[dtype]
    eps = 4.0 * float(ml_dtypes.finfo(dt).eps)

    def cast(h, to):
        return {k: (v.astype(to) if isinstance(v, np.ndarray) and v.dtype in (F32, dt) else v) for k, v in h.items()}

    def tol(h):
        rtol, atol = w.tol(cast(h, F32))
        scale = atol / rtol if rtol else 1.0
        return eps, eps * max(scale, 1.0)

    return w._replace(name=f"{w.name}_{LOW_SUFFIX[dtype]}", title=w.title.replace("float32", dtype),
                      inputs=lambda n, rng: cast(w.inputs(n, rng), dt),
                      reference=lambda h: w.reference(cast(h, np.float64)), tol=tol, dtype=dtype)


WORKLOADS.update({v.name: v for v in (with_dtype(WORKLOADS.get(n) or _LOW_ONLY[n], d) for d in LOW_DTYPES
                                       for n in DTYPE_WORKLOADS)})
# casts to and from the 16-bit types (--workloads): GB/s against the same run's device-to-device copy
WORKLOADS.update({w.name: w for w in (_cast_workload("cast_f16_f32", "float16", "float32"),
                                      _cast_workload("cast_f32_bf16", "float32", "bfloat16"),
                                      _cast_workload("cast_bf16_f32", "bfloat16", "float32"))})


# issue 37 item 6 (--workloads cummax lstm; not in the default set): a long 1-D cummax (the multi-block
# index scan) and an LSTM layer's forward over a sequence (one launch per step over hidden x batch tiles)
LSTM_STEPS, LSTM_BATCH = 16, 32


def _lstm_inputs(n, rng):
    """An LSTM layer of hidden size n (input size n), LSTM_STEPS steps of LSTM_BATCH rows, torch's
    parameter layout and a uniform(-1/sqrt(n), 1/sqrt(n)) initialization."""
    k = 1.0 / math.sqrt(n)
    u = lambda *shape: rng.uniform(-k, k, shape).astype(F32)  # noqa: E731
    return {"x": _normal(rng, LSTM_STEPS, LSTM_BATCH, n), "w_ih": u(4 * n, n), "w_hh": u(4 * n, n),
            "b_ih": u(4 * n), "b_hh": u(4 * n)}


def _lstm_reference(h):
    """The layer's output (T, B, H) in float64 from zero states, gates in torch's order (i, f, g, o)."""
    x, w_ih, w_hh = (h[k].astype(np.float64) for k in ("x", "w_ih", "w_hh"))
    gi = x @ w_ih.T + (h["b_ih"].astype(np.float64) + h["b_hh"])
    steps, batch, n = x.shape[0], x.shape[1], w_hh.shape[1]
    hs, c = np.zeros((batch, n)), np.zeros((batch, n))
    out = np.empty((steps, batch, n))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    for t in range(steps):
        i, f, g, o = np.split(gi[t] + hs @ w_hh.T, 4, axis=1)
        c = sig(f) * c + sig(i) * np.tanh(g)
        hs = sig(o) * np.tanh(c)
        out[t] = hs
    return out


def _prep_lstm(lib, h):
    return lib.lstm(h)


def _prep_cummax(lib, h):
    x = lib.put(h["x"])
    return lambda: lib.cummax(x)


OPT_IN_WORKLOADS = ("cummax", "lstm")
WORKLOADS.update({w.name: w for w in [
    Workload("cummax", "running maximum (values and indices) of one float32 vector (the multi-block index scan)",
             "GB/s", lambda n, rng: {"x": _normal(rng, n)}, _prep_cummax, lambda h: np.maximum.accumulate(h["x"]),
             lambda h: 2 * h["x"].nbytes, EXACT, lambda h: f"{h['x'].shape[0]}"),
    Workload("lstm", f"LSTM layer forward, {LSTM_STEPS} steps x {LSTM_BATCH} rows, hidden = input = n, float32",
             "TFLOP/s", _lstm_inputs, _prep_lstm, _lstm_reference,
             lambda h: 2 * LSTM_STEPS * LSTM_BATCH * 4 * h["w_hh"].shape[1] * 2 * h["w_hh"].shape[1],
             lambda h: (1e-4, 1e-4), lambda h: "T{}xB{}xH{}".format(*h["x"].shape)),
]})
BASE_WORKLOADS = tuple(n for n in WORKLOADS if (WORKLOADS[n].dtype == "float32" or n == "cast_f16")
                       and n not in OPT_IN_WORKLOADS)


def is_matmul(workload):
    return WORKLOADS[workload].unit == "TFLOP/s" if workload in WORKLOADS else workload == "matmul"


# sizes: elements of the main operand for memory-bound workloads, n for matmul (n x n)
SIZES = {"cpu": [1 << k for k in range(10, 25, 2)], "cuda": [1 << k for k in range(12, 27, 2)]}
MATMUL_SIZES = {"cpu": [64, 128, 256, 512, 1024], "cuda": [256, 512, 1024, 2048, 4096, 8192]}
QUICK_SIZES = {"cpu": [1 << 12, 1 << 16, 1 << 20, 1 << 22], "cuda": [1 << 12, 1 << 16, 1 << 20, 1 << 24]}
QUICK_MATMUL_SIZES = {"cpu": [64, 256, 512], "cuda": [256, 1024, 4096]}
TINY_SIZES, TINY_MATMUL_SIZES = [1024, 4096], [16, 32]
PEAK_BYTES = {"cpu": 256 << 20, "cuda": 1 << 30}
QUICK_PEAK_BYTES = {"cpu": 64 << 20, "cuda": 256 << 20}
TINY_PEAK_BYTES = 4 << 20


class Settings(NamedTuple):
    sizes: dict            # device type -> sizes of the memory-bound workloads
    matmul_sizes: dict     # device type -> n
    peak_bytes: dict       # device type -> bytes copied for the peak
    warmup: int = 3
    repeat: int = 50
    max_time: float = 1.0  # seconds of repetitions per measurement
    flush_l2: bool = False
    thread_variants: bool = False  # large CPU cases also at 1 thread (when tl.set_num_threads exists)
    sweep_step: int = 4    # the roofline's copy sweep: powers of two this far apart


def settings(mode="full", sizes=None, matmul_sizes=None, repeat=None, max_time=None, flush_l2=False):
    """The Settings of a mode ("full", "quick", "tiny"), with explicit sizes/repeat/max_time on top."""
    if mode == "tiny":
        s = Settings({"cpu": TINY_SIZES, "cuda": TINY_SIZES}, {"cpu": TINY_MATMUL_SIZES, "cuda": TINY_MATMUL_SIZES},
                     {"cpu": TINY_PEAK_BYTES, "cuda": TINY_PEAK_BYTES}, warmup=1, repeat=5, max_time=0.02)
    elif mode == "quick":
        s = Settings(QUICK_SIZES, QUICK_MATMUL_SIZES, QUICK_PEAK_BYTES, warmup=2, repeat=20, max_time=0.1)
    else:
        s = Settings(SIZES, MATMUL_SIZES, PEAK_BYTES, sweep_step=2)
    if sizes:
        s = s._replace(sizes={"cpu": list(sizes), "cuda": list(sizes)})
    if matmul_sizes:
        s = s._replace(matmul_sizes={"cpu": list(matmul_sizes), "cuda": list(matmul_sizes)})
    if repeat:
        s = s._replace(repeat=repeat)
    if max_time:
        s = s._replace(max_time=max_time)
    return s._replace(flush_l2=flush_l2)


def sizes_for(workload, device, s):
    kind = tl.device(device).type
    return s.matmul_sizes[kind] if is_matmul(workload) else s.sizes[kind]


def measure_peak(device, nbytes, s):
    """The device's copy bandwidth (GB/s, read + write) from the backend's raw byte copy of
    `nbytes` (cudaMemcpyAsync device-to-device on CUDA, a NumPy memcpy on the CPU)."""
    be = backends.get(tl.device(device))
    src = tl.ones(nbytes, dtype=tl.uint8, device=device).untyped_storage()._buf
    dst = tl.empty(nbytes, dtype=tl.uint8, device=device).untyped_storage()._buf
    m = Timer(be.copy_bytes, (dst, src, nbytes), device=device, label="peak copy", warmup=s.warmup,
              repeat=max(s.repeat // 2, 3), max_time=s.max_time).measure()
    how = "np.copyto memcpy" if device == "cpu" else "cudaMemcpyAsync device-to-device"
    if m.emulated:
        how += " on the emulated device"
    return {"GBps": 2 * nbytes / m.median / 1e9, "bytes": nbytes, "how": f"{how} of {nbytes >> 20} MiB, median of "
            f"{m.repeat}", "measurement": m.to_dict()}


def _short_error(e):
    text = f"{type(e).__name__}: {e}".splitlines()[0]
    return text if len(text) <= 160 else text[:157] + "..."


def check_result(lib, result, want, tol, what):
    """AssertionError unless lib's result matches the NumPy reference within tol=(rtol, atol)."""
    got = lib.get(result)
    rtol, atol = tol
    if np.shape(got) != np.shape(want):
        raise AssertionError(f"{what}: wrong result shape {np.shape(got)}, expected {np.shape(want)}")
    if not np.allclose(np.asarray(got, dtype=np.float64), want, rtol=rtol, atol=atol, equal_nan=True):
        diff = float(np.max(np.abs(np.asarray(got, dtype=np.float64) - want)))
        raise AssertionError(f"{what}: result differs from NumPy's (max abs diff {diff:.3g}); not timed")


def run_case(lib, workload, host, want, size, s):
    """Check, then time, one implementation on one input; returns the result record."""
    rec = {"device": lib.device, "workload": workload.name, "size": size, "shape": workload.shape(host),
           "impl": lib.name, "unit": workload.unit, "work": workload.work(host), "dtype": workload.dtype,
           "error": None}
    fn = None
    try:
        fn = workload.prepare(lib, host)
        sw = Stopwatch(lib.device).start()
        result = fn()
        sw.stop()
        sw.synchronize()
        rec["first_call_s"] = sw.elapsed_ms() / 1e3
        check_result(lib, result, want, workload.tol(host), f"{lib.name} {workload.name}")
        del result
        m = Timer(fn, device=lib.device, label=f"{workload.name} {size} {lib.name}", warmup=s.warmup,
                  repeat=s.repeat, max_time=s.max_time, flush_l2=s.flush_l2).measure()
    except Exception as e:  # one broken implementation must not stop the suite; the error is reported
        rec["error"] = _short_error(e)
        rec["traceback"] = traceback.format_exc(limit=6)
        return rec
    finally:
        del fn
    rec.update(m.to_dict())
    rate = rec["work"] / m.median
    rec["throughput"] = rate / 1e12 if workload.unit == "TFLOP/s" else rate / 1e9
    return rec


# CPU cases this large also run at one thread (Settings.thread_variants): below, a pool has
# nothing to split
LARGE_SIZE, LARGE_MATMUL = 1 << 20, 256


def is_large(workload, size):
    return size >= (LARGE_MATMUL if is_matmul(workload) else LARGE_SIZE)


def plan(devices, workloads, s, baselines=None):
    """[(device, workload, size, [libs], (thread label, count or None))] in the order they run."""
    out = []
    default = thread_counts.tensorlab_threads()
    for device in devices:
        all_libs = libraries(device, baselines)
        for w in workloads:
            # CuPy has no bfloat16 arrays: its rows are left out of the bfloat16 workloads
            libs = [lib for lib in all_libs if not (lib.name == "cupy" and "bfloat16" in WORKLOADS[w].dtype)]
            for size in sizes_for(w, device, s):
                variants = [("default", None)]
                if s.thread_variants and device == "cpu" and is_large(w, size):
                    variants = thread_counts.variants(default)
                for variant in variants:
                    out.append((device, WORKLOADS[w], size, libs, variant))
    return out


def run(devices, workloads, s, baselines=None, progress=None):
    """Run the suite; returns (peaks {device: peak dict with the copy sweep under "sweep"},
    results [record])."""
    cases = plan(devices, workloads, s, baselines)
    total = sum(len(c[3]) for c in cases)
    done = 0
    peaks, results = {}, []
    for device in devices:
        if progress:
            progress(done, total, f"{device}: measuring the copy peak")
        kind = tl.device(device).type
        peaks[device] = measure_peak(device, s.peak_bytes[kind], s)
        if any(WORKLOADS[w].unit == "GB/s" for w in workloads):
            if progress:
                progress(done, total, f"{device}: copy sweep for the roofline")
            sweep_sizes = roofline.sweep_bytes(s.sizes[kind], s.sweep_step)
            peaks[device]["sweep"] = roofline.copy_sweep(device, sweep_sizes, repeat=3 if s.repeat < 10 else 5)
    rng = np.random.default_rng(0)
    last = None  # the thread variants of one case share its inputs
    for device, w, size, libs, (label, count) in cases:
        if last is None or last[0] != (device, w.name, size):
            host = w.inputs(size, rng)
            last = ((device, w.name, size), host, w.reference(host))
        _, host, want = last
        torch = next((lib.xp for lib in libs if lib.name == "torch"), None) if count is not None else None
        with thread_counts.using(count, torch):
            for lib in libs:
                if progress:
                    progress(done, total, f"{device} {w.name} {size} {lib.name}" + (f" {count} thread" if count else ""))
                rec = run_case(lib, w, host, want, size, s)
                rec["threads"] = lib.threads(w.name)
                rec["thread_setting"] = label
                peak = peaks[device]["GBps"]
                if rec["error"] is None and w.unit == "GB/s":
                    rec["pct_peak"] = 100.0 * rec["throughput"] / peak
                    roof = roofline.roof_at(peaks[device].get("sweep", {}), rec["work"])
                    if roof:
                        rec["roof_GBps"] = roof
                        rec["pct_roof"] = 100.0 * rec["throughput"] / roof
                results.append(rec)
                done += 1
        _ratios(results[-len(libs):])
    if progress:
        progress(done, total, "done")
    return peaks, results


def _ratios(group):
    """On tensorlab's record of one case: each baseline's median over tensorlab's (above 1:
    tensorlab is faster)."""
    ours = next((r for r in group if r["impl"] == "tensorlab"), None)
    if ours is None or ours["error"] is not None:
        return
    ours["ratios"] = {r["impl"]: r["median_s"] / ours["median_s"] for r in group
                      if r is not ours and r["error"] is None}


def timestamp():
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
