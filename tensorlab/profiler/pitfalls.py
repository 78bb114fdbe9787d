"""prof.pitfalls(): what slows the program, each with counts, time and the user's lines.

The rules (each exact over the recorded events, no sampling):
- "host wait in a loop": one implicit host wait (item, tolist, printing, boolean indexing, ...) at
  the same file:line with the same reason two or more times.
- "pageable copy": a host<->device copy whose host side is pageable memory: the DMA goes through a
  staging buffer and cannot overlap. Not the read-backs of host reads (item(), printing, a mask's
  count: the waits rule reports them; pinning would not help a blocking read of a few bytes).
- "launch-bound": three or more consecutive kernels on one stream, each shorter on the device than
  the median host cost of a launch call, with the GPU idle longer than it was busy between them.
- "allocator churn": empty_cache() calls; the reserved pool shrinking and growing again; a peak of
  allocated memory at least twice the median (steady state) and 1 MiB above it.
- "host clock around async work": two reads of a host clock (time.perf_counter, time.time, ...) in
  the user's code with device work launched between them that was still running at the second read.
"""
from __future__ import annotations

import bisect
import os
import statistics

_ADVICE = {
    "item": "accumulate into a device tensor and read it once after the loop",
    "tolist": "keep the values on the device; read them once after the loop",
    "bool": "compare on the device (torch.where, masks) instead of branching on a tensor",
    "boolean mask indexing": "use a fixed-shape masked op (torch.where, multiplication by the mask)",
    "nonzero": "avoid data-dependent shapes inside the loop",
    "repr": "print every N steps, or collect the values on the device and print after the loop",
    "copy to cpu": "copy to pinned memory with non_blocking=True and synchronize once, after the loop",
    "copy to cuda": "upload from pinned memory with non_blocking=True (DataLoader(pin_memory=True))",
}


class Pitfall:
    __slots__ = ("kind", "count", "time_ms", "lines", "detail", "advice")

    def __init__(self, kind, count, time_ms, lines, detail, advice):
        self.kind, self.count, self.time_ms, self.lines, self.detail, self.advice = (kind, count, time_ms, lines,
                                                                                       detail, advice)

    def __str__(self):
        where = ", ".join(self.lines) if self.lines else "(no user line)"
        return f"{self.kind}: {self.detail} [{self.count}x, {self.time_ms:.3f} ms] at {where}\n    fix: {self.advice}"

    def __repr__(self):
        return f"Pitfall({self.kind!r}, count={self.count}, time_ms={self.time_ms:.3f}, lines={self.lines})"


class Pitfalls(list):
    """The pitfalls found, worst (most time) first; str() is the report."""

    def kinds(self):
        return [p.kind for p in self]

    def __str__(self):
        if not self:
            return "no pitfalls found"
        return "\n".join(f"{i + 1}. {p}" for i, p in enumerate(self))


def _site(file, line):
    return f"{os.path.basename(file)}:{line}" if file else ""


def host_waits_in_loop(waits):
    groups = {}
    for w in waits:
        if not w.explicit:
            groups.setdefault((w.reason, w.file, w.line), []).append(w)
    out = []
    for (reason, file, line), ws in groups.items():
        if len(ws) >= 2:
            ms = sum(w.end - w.start for w in ws) * 1e3
            out.append(Pitfall("host wait in a loop", len(ws), ms, [_site(file, line)],
                               f"the host waited for the device {len(ws)} times for '{reason}' at one line",
                               _ADVICE.get(reason, "move the read out of the loop")))
    return out


def pageable_copies(copies, reads):
    """`reads`: ids of the ops whose device-to-host copies are host reads (item, printing, a mask's
    count, ...): the waits rule reports those."""
    groups = {}
    for c in copies:
        if c.direction == "DtoD" or c.pinned or (c.direction == "DtoH" and c.op in reads):
            continue
        groups.setdefault((c.direction, c.file, c.line), []).append(c)
    out = []
    for (direction, file, line), cs in groups.items():
        ms = sum((c.dev_dur or (c.end - c.start)) for c in cs) * 1e3
        nbytes = sum(c.nbytes for c in cs)
        blocking = sum(1 for c in cs if c.blocking)
        side = "from" if direction == "HtoD" else "to"
        out.append(Pitfall("pageable copy", len(cs), ms, [_site(file, line)],
                           f"{direction} copy of {nbytes} bytes {side} pageable host memory ({blocking} blocking)",
                           "pin the host tensor (pin_memory(), DataLoader(pin_memory=True)) and pass "
                           "non_blocking=True"))
    return out


def launch_bound(kernels, ops_by_id, min_run=3):
    timed = [k for k in kernels if k.dev_start is not None]
    if not timed:
        return []
    overhead = statistics.median(k.end - k.start for k in timed)
    streams = {}
    for k in timed:
        streams.setdefault((k.device, k.stream), []).append(k)
    out = []
    for ks in streams.values():
        ks.sort(key=lambda k: k.dev_start)
        run = []

        def close(run):
            if len(run) >= min_run:
                busy = sum(k.dev_dur for k in run)
                span = run[-1].dev_end - run[0].dev_start
                idle = span - busy
                if idle > busy:
                    sites = []
                    for k in run:
                        o = ops_by_id.get(k.op)
                        s = _site(*(o.file, o.line) if o is not None and o.file else (k.file, k.line))
                        if s and s not in sites:
                            sites.append(s)
                    out.append(Pitfall("launch-bound", len(run), span * 1e3, sites[:5],
                                       f"{len(run)} kernels shorter than a launch ({overhead * 1e6:.1f} us); the GPU "
                                       f"was idle {100 * idle / span:.0f}% of {span * 1e3:.3f} ms",
                                       "fuse the small ops (fewer, larger kernels), batch the work, or capture it "
                                       "in a CUDA graph"))

        for k in ks:
            if k.dev_dur < overhead and (not run or k.dev_start - run[-1].dev_end > run[-1].dev_dur):
                run.append(k)
            else:
                close(run)
                run = [k] if k.dev_dur < overhead else []
        close(run)
    return out


def allocator_churn(mems, empty_caches):
    out = []
    if empty_caches:
        sites = []
        for e in empty_caches:
            s = _site(e.file, e.line)
            if s not in sites:
                sites.append(s)
        out.append(Pitfall("allocator churn", len(empty_caches), 0.0, sites,
                           f"empty_cache() called {len(empty_caches)} times: the next allocations go back to the "
                           "device allocator", "do not call empty_cache() in a loop; the cached pool is reused"))
    by_dev = {}
    for m in mems:
        by_dev.setdefault(m.device, []).append(m)
    cleared = sorted(e.t for e in empty_caches)
    for dev, ms in by_dev.items():
        regrow, low = 0, None
        for a, b in zip(ms, ms[1:]):
            if b.reserved < a.reserved:
                # a shrink an empty_cache() call made is that call's pitfall, reported above (a real pool
                # shrinks there and regrows at the next allocation: seen on an H200)
                i = bisect.bisect_left(cleared, a.t)
                low = None if i < len(cleared) and cleared[i] <= b.t else b.reserved
            elif low is not None and b.reserved > low:
                regrow += 1
                low = None
        pooled = any(m.reserved != m.allocated for m in ms)  # no caching pool (CPU, emulation): nothing to churn
        if regrow and pooled:
            out.append(Pitfall("allocator churn", regrow, 0.0, [],
                               f"the reserved pool on {dev} shrank and grew again {regrow} times",
                               "keep memory cached (no empty_cache between steps)"))
        allocated = [m.allocated for m in ms]
        steady = statistics.median(allocated)
        peak = max(allocated)
        if peak >= 2 * steady and peak - steady >= 1 << 20:
            top = max(ms, key=lambda m: m.allocated)
            out.append(Pitfall("allocator churn", 1, 0.0, [_site(top.file, top.line)] if top.file else [],
                               f"peak allocated on {dev} is {peak} bytes, {peak / max(steady, 1):.1f}x the steady "
                               f"state ({int(steady)} bytes)", "free or reuse the large temporaries at the peak "
                               "(in-place ops, smaller chunks)"))
    return out


def host_clock_timing(clocks, work):
    out = []
    reads = sorted(clocks, key=lambda c: c.t)
    timed = [w for w in work if w.dev_start is not None]
    for a, b in zip(reads, reads[1:]):
        if a.file != b.file:
            continue
        between = [w for w in timed if a.t <= w.start <= b.t]
        if not between:
            continue
        late = max(w.dev_end for w in between) - b.t
        if late > 0:
            out.append(Pitfall("host clock around async work", len(between), late * 1e3,
                               [_site(a.file, a.line), _site(b.file, b.line)],
                               f"{b.clock}() read {late * 1e3:.3f} ms before the {len(between)} kernels/copies "
                               "launched since the previous read finished on the device",
                               "time with tl.cuda.Event(enable_timing=True) pairs or tl.benchmark.Timer, or call "
                               "tl.cuda.synchronize() before reading the clock"))
    return out


def find(rec):
    ops_by_id = {o.id: o for o in rec.ops}
    reads = {o.id for o in rec.ops if o.derived or any(not w.explicit and not w.reason.startswith("copy ")
                                                        for w in o.waits)}
    found = (host_waits_in_loop(rec.waits) + pageable_copies(rec.copies, reads)
             + launch_bound(rec.kernels, ops_by_id) + allocator_churn(rec.mems, rec.empty_caches)
             + host_clock_timing(rec.clocks, [*rec.kernels, *rec.copies]))
    found.sort(key=lambda p: -p.time_ms)
    return Pitfalls(found)
