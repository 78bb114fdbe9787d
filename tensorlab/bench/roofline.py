"""The bandwidth ceiling of a memory-bound workload at its own size: a copy sweep.

One copy peak of a large buffer is the DRAM ceiling; a 64Ki-element add touches 768 KiB, which
lives in L2/L3 and runs far above it. So each device gets a sweep of plain byte copies (the
backend's copy_bytes: a NumPy memcpy on the CPU, cudaMemcpyAsync device-to-device on CUDA) over
buffer sizes from L1 to DRAM. A copy of S bytes touches a footprint of 2S bytes (read S, write S)
and moves 2S bytes; its bandwidth at footprint F is the ceiling a workload touching F bytes is
drawn against (`roof_at`, log-log interpolation between sweep points).

Each point is min-of-repeats of `number` calls, minus the time of a 64-byte copy (the per-call
cost of reaching memcpy from Python, or of queuing a copy on CUDA), so small copies report the
cache's bandwidth rather than the call's overhead. The rates are made non-increasing with the
footprint (a dip below a larger footprint's rate is another process taking the core)."""
from __future__ import annotations

import math

import tensorlab as tl
from tensorlab import backends
from tensorlab.benchmark import Timer

BASE_BYTES = 64


def sweep_bytes(sizes, step=4):
    """Copy sizes S (bytes) covering the footprints of the memory-bound workloads at `sizes` float32
    elements (from 4n to 12n bytes), in powers of two `step` apart. Never empty: workloads whose
    footprints all lie below the 1 KiB floor (a few elements) get the floor's copy, the nearest
    ceiling that is still measurable above a call's own cost."""
    lo = max(1024, 1 << (4 * min(sizes)).bit_length() - 2)
    hi = max(lo, 1 << (8 * max(sizes)).bit_length())
    out, s = [], lo
    while s <= hi:
        out.append(s)
        s *= step
    return out


def _copy_time(be, device, dst, src, nbytes, repeat, target_s):
    """Min seconds per copy of nbytes, calls batched so a repetition lasts about target_s."""
    est = 1e-6 + nbytes / 20e9
    number = max(1, min(20000, int(target_s / est)))
    m = Timer(be.copy_bytes, (dst, src, nbytes), device=device, label=f"copy {nbytes}", warmup=1, repeat=repeat,
              number=number).measure()
    return m.min, number


def copy_sweep(device, sizes_bytes, repeat=5, target_s=5e-4):
    """{"footprint": [2S...], "GBps": [...], "how": text} for copies of each S in sizes_bytes."""
    be = backends.get(tl.device(device))
    top = max(sizes_bytes)
    src = tl.ones(top, dtype=tl.uint8, device=device).untyped_storage()._buf
    dst = tl.empty(top, dtype=tl.uint8, device=device).untyped_storage()._buf
    base, _ = _copy_time(be, device, dst, src, BASE_BYTES, repeat, target_s)
    foot, rate = [], []
    for s in sizes_bytes:
        t, _ = _copy_time(be, device, dst, src, s, repeat, target_s)
        net = t - base
        if net <= 0 or net < 0.05 * t:  # the copy is lost in the call's own cost: no meaningful point
            continue
        foot.append(2 * s)
        rate.append(2 * s / net / 1e9)
    # a larger footprint never copies faster than a smaller one (it lives in the same or a slower
    # level): a dip below a larger footprint's rate is noise (another process took the core)
    for k in range(len(rate) - 2, -1, -1):
        rate[k] = max(rate[k], rate[k + 1])
    how = ("np.copyto memcpy" if device == "cpu" else "cudaMemcpyAsync device-to-device") + \
        (" on the emulated device" if device != "cpu" and backends.cuda_emulated() and not tl.cuda.is_available()
         else "")
    return {"footprint": foot, "GBps": rate, "base_s": base,
            "how": f"{how} of {len(foot)} sizes, min of {repeat}, minus a {BASE_BYTES}-byte copy's time"}


def roof_at(sweep, footprint):
    """The copy bandwidth (GB/s) at a footprint in bytes: log-log interpolation between the sweep's
    points, the end values beyond them; None without points."""
    xs, ys = sweep.get("footprint") or [], sweep.get("GBps") or []
    if not xs:
        return None
    if footprint <= xs[0]:
        return ys[0]
    if footprint >= xs[-1]:
        return ys[-1]
    lx = math.log(footprint)
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x0 <= footprint <= x1:
            f = (lx - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))
    return ys[-1]
