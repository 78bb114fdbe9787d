"""tensorboard_trace_handler (torch.profiler's): an on_trace_ready callback writing each finished
profile to `dir_name` as `<worker>.<time_ns>.pt.trace.json[.gz]`, the file name and format the
PyTorch TensorBoard profiler plugin (torch-tb-profiler) reads from a log directory: the trace
events of export_chrome_trace (categories cpu_op, user_annotation, kernel, gpu_memcpy,
cuda_runtime) plus schemaVersion, deviceProperties of the CUDA devices in the trace, the
distributed rank and world size when a process group is initialized, and a `ProfilerStep#N`
annotation spanning the cycle (the plugin's unit of a step)."""
from __future__ import annotations

import gzip
import json
import os
import socket
import time

from . import chrome_trace


def _device_properties(events):
    pids = {e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
            and str(e.get("args", {}).get("name", "")).startswith("cuda:")}
    out = []
    for name in sorted(pids):
        idx = int(name.partition(":")[2])
        entry = {"id": idx}
        try:
            from .. import cuda
            p = cuda.get_device_properties(idx)
            entry.update(name=p.name, totalGlobalMem=p.total_memory, computeMajor=p.major, computeMinor=p.minor,
                         maxThreadsPerBlock=p.max_threads_per_block, numSms=p.multi_processor_count,
                         sharedMemPerBlock=p.shared_memory_per_block, warpSize=p.warp_size)
        except Exception:  # noqa: BLE001 - a trace read back on a machine without that device: the id alone
            pass
        out.append(entry)
    return out


def _distributed_info():
    try:
        from .. import distributed as dist
        if dist.is_available() and dist.is_initialized():
            return {"backend": str(dist.get_backend()), "rank": dist.get_rank(), "world_size": dist.get_world_size()}
    except Exception:  # noqa: BLE001 - no process group: the key is left out
        pass
    return None


def trace_document(prof):
    """The JSON document the handler writes for a finished profile `prof`."""
    rec = prof._done("tensorboard_trace_handler")
    events = chrome_trace.events(rec)
    host = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    if host:
        start = min(e["ts"] for e in host)
        end = max(e["ts"] + e["dur"] for e in host)
        first = next(e for e in host)
        # called from step() (a schedule's cycle ended) the step counter has already moved past the cycle
        last = prof.step_num - 1 if prof._action is not None and prof.step_num else prof.step_num
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{last}",
                       "pid": first["pid"], "tid": first["tid"], "ts": start, "dur": round(end - start, 3),
                       "args": {}})
    doc = {"schemaVersion": 1, "deviceProperties": _device_properties(events), "traceEvents": events,
           "displayTimeUnit": "ms", "traceName": "", "otherData": {"producer": "tensorlab.profiler"}}
    info = _distributed_info()
    if info is not None:
        doc["distributedInfo"] = info
    return doc


def tensorboard_trace_handler(dir_name, worker_name=None, use_gzip=False, use_python_export=False):
    """on_trace_ready callback: write each finished cycle to `dir_name` for TensorBoard
    (`tensorboard --logdir dir_name` with the torch-tb-profiler plugin). worker_name defaults to
    '<hostname>_<pid>' (give each rank its own)."""
    def handler_fn(prof):
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json"
        data = json.dumps(trace_document(prof)).encode()
        path = os.path.join(dir_name, file_name + (".gz" if use_gzip else ""))
        tmp = path + ".partial"
        with (gzip.open(tmp, "wb") if use_gzip else open(tmp, "wb")) as f:
            f.write(data)
        os.replace(tmp, path)  # the plugin never sees half a file
    return handler_fn
