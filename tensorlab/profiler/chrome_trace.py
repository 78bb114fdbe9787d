"""export_chrome_trace: the Chrome trace-event JSON format (the "JSON Object Format": traceEvents,
phases X/M/C/s/f) that Perfetto and chrome://tracing open. Host thread: op and record_function
slices, host waits, the launch calls; one track per (device, stream) with kernels and copies; flow
arrows that run forward in time: launch -> kernel, and the end of the work a host wait waited for ->
the end of the wait; counters for allocated memory."""
from __future__ import annotations

import json
import os


def _us(t, t0):
    return round((t - t0) * 1e6, 3)


def events(rec):
    t0 = rec.t0
    pid = os.getpid()
    tid = rec.native_thread  # the OS thread id, as torch's traces carry
    out = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "host"}},
           {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {rec.thread_name}"}}]
    for r in rec.ranges:
        out.append({"ph": "X", "cat": "user_annotation", "name": r.name, "pid": pid, "tid": tid,
                    "ts": _us(r.start, t0), "dur": _us(r.end, r.start), "args": {}})
    for o in rec.ops:
        args = {}
        if o.shapes is not None:
            args["Input Dims"], args["Input type"], args["Input devices"] = o.shapes, o.dtypes, o.devices
        if o.file:
            args["Call stack"] = ";".join(o.stack) if o.stack else f"{o.file}({o.line})"
        out.append({"ph": "X", "cat": "cpu_op", "name": o.name, "pid": pid, "tid": tid, "ts": _us(o.start, t0),
                    "dur": _us(o.end, o.start), "args": args})
    streams = {}
    for d in (*rec.kernels, *rec.copies):
        streams.setdefault((d.device, d.stream), len(streams) + 1)
    devices = sorted({d for d, _ in streams})
    for d in devices:
        out.append({"ph": "M", "name": "process_name", "pid": _dev_pid(d), "tid": 0, "args": {"name": f"cuda:{d}"}})
    for (d, s), n in streams.items():
        out.append({"ph": "M", "name": "thread_name", "pid": _dev_pid(d), "tid": n,
                    "args": {"name": f"stream {s}" if s < 1 << 20 else f"stream #{n}"}})
    flow = 0
    for d in (*rec.kernels, *rec.copies):
        track = streams[(d.device, d.stream)]
        is_k = d.kind == "kernel"
        call = "cudaLaunchKernel" if is_k else "cudaMemcpyAsync"
        out.append({"ph": "X", "cat": "cuda_runtime", "name": call, "pid": pid, "tid": tid, "ts": _us(d.start, t0),
                    "dur": _us(d.end, d.start), "args": {"correlation": d.id}})
        if d.dev_start is None:
            continue
        args = {"correlation": d.id, "device": d.device, "stream": d.stream}
        if is_k:
            args.update(grid=list(d.grid), block=list(d.block))
        else:
            args.update(bytes=d.nbytes, pinned=d.pinned, blocking=d.blocking)
        out.append({"ph": "X", "cat": "kernel" if is_k else "gpu_memcpy", "name": d.name, "pid": _dev_pid(d.device),
                    "tid": track, "ts": _us(d.dev_start, t0), "dur": _us(d.dev_end, d.dev_start), "args": args})
        flow += 1
        out.append({"ph": "s", "cat": "ac2g", "name": "ac2g", "id": flow, "pid": pid, "tid": tid,
                    "ts": _us(d.start, t0)})
        # the device cannot start before the launch: where the clock mapping (the origin event's host time)
        # puts it a fraction of a microsecond earlier, the arrow ends at the launch
        out.append({"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": flow, "pid": _dev_pid(d.device),
                    "tid": track, "ts": max(_us(d.dev_start, t0), _us(d.start, t0))})
    work = {d.id: d for d in (*rec.kernels, *rec.copies)}
    for w in rec.waits:
        out.append({"ph": "X", "cat": "sync", "name": f"host wait: {w.reason}", "pid": pid, "tid": tid,
                    "ts": _us(w.start, t0), "dur": _us(w.end, w.start),
                    "args": {"reason": w.reason, "explicit": w.explicit, "where": f"{w.file}:{w.line}",
                             "device": str(w.device)}})
        target = work.get(w.target)
        if target is not None and target.dev_end is not None:
            # the work's end releases the wait: the arrow runs forward, from the end of the work the host
            # waited for to the end of the wait
            flow += 1
            out.append({"ph": "s", "cat": "wait", "name": "releases", "id": flow, "pid": _dev_pid(target.device),
                        "tid": streams[(target.device, target.stream)], "ts": _us(target.dev_end, t0)})
            out.append({"ph": "f", "bp": "e", "cat": "wait", "name": "releases", "id": flow, "pid": pid, "tid": tid,
                        "ts": max(_us(w.end, t0), _us(target.dev_end, t0))})
    for m in rec.mems:
        out.append({"ph": "C", "name": f"{m.device} memory", "pid": pid if m.device == "cpu" else
                    _dev_pid(int(m.device.split(":")[1])), "tid": 0, "ts": _us(m.t, t0),
                    "args": {"allocated": m.allocated, "reserved": m.reserved}})
    return out


def _dev_pid(device):
    return 1_000_000 + int(device)  # distinct from the host's pid track


def export(rec, path):
    doc = {"traceEvents": events(rec), "displayTimeUnit": "ms",
           "otherData": {"producer": "tensorlab.profiler", "clock": "time.perf_counter, microseconds from the "
                         "profile's start"}}
    with open(path, "w") as f:
        json.dump(doc, f)
