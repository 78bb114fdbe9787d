"""`python -m tensorlab.bench` / `tensorlab-bench`: the CPU-vs-GPU benchmark command.

Runs the suite (suite.py) on every available device against the baselines present, prints one
table, and writes tensorlab-bench.json and tensorlab-bench.png into --out."""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

import tensorlab as tl
from tensorlab import backends
from tensorlab.backends.cpu import parallel as _par

from . import models as model_bench
from . import overhead, report, stability, suite
from .. import _build
from . import threads as thread_counts
from .libs import BASELINES, torch_has_cuda, torch_module

DEFAULT_OUT = "tensorlab-bench-results"


def _int_list(text):
    try:
        values = [int(v, 0) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            v = None
        if v is None or not v > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return v
    return parse


def _name_list(choices):
    def parse(text):
        names = [v for v in text.replace(" ", "").split(",") if v]
        bad = [n for n in names if n not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown name(s) {', '.join(bad)}; choose from {', '.join(choices)}")
        return names
    return parse


def parser():
    p = argparse.ArgumentParser(
        prog="tensorlab-bench",
        description="Benchmark tensorlab against NumPy, CuPy and torch on every available device: elementwise "
                    "(contiguous, broadcast), strided copy, cast, sum, cumsum, softmax and matmul over a range of "
                    "sizes. "
                    "Prints a table and writes a JSON file and a PNG plot.")
    p.add_argument("--quick", action="store_true", help="fewer sizes and repetitions: the whole run in under a minute")
    p.add_argument("--tiny", action="store_true",
                   help="a smoke run in seconds (tiny sizes, few repetitions: the numbers mean nothing)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"directory for the JSON and PNG files (default: {DEFAULT_OUT})")
    p.add_argument("--devices", type=_name_list(["cpu", "cuda"] + [f"cuda:{i}" for i in range(16)]),
                   help="comma-separated devices (default: cpu and cuda when available)")
    p.add_argument("--workloads", type=_name_list(list(suite.WORKLOADS)),
                   help=f"comma-separated subset of {','.join(suite.WORKLOADS)}")
    p.add_argument("--baselines", type=_name_list(list(BASELINES) + ["none"]),
                   help="comma-separated baselines to compare with (default: every one installed), or none")
    p.add_argument("--sizes", type=_int_list, help="elements of the memory-bound workloads, e.g. 1024,1048576")
    p.add_argument("--matmul-sizes", type=_int_list, help="n of the n x n matmuls, e.g. 256,1024")
    p.add_argument("--repeat", type=_positive(int), help="most timed repetitions per measurement")
    p.add_argument("--max-time", type=_positive(float), help="seconds of repetitions per measurement")
    p.add_argument("--flush-l2", action="store_true", help="flush the last-level cache before every repetition")
    p.add_argument("--threads", type=_positive(int),
                   help="the default CPU threads of tensorlab (tl.set_num_threads, where it exists) and torch "
                        "(torch.set_num_threads); default: each library's own choice. Large CPU cases also run at 1")
    p.add_argument("--no-overhead", action="store_true", help="skip the per-op host overhead rows")
    p.add_argument("--models", nargs="?", const=",".join(model_bench.MODELS),
                   type=_name_list(list(model_bench.MODELS)), metavar="NAMES",
                   help="also time training steps of small models next to torch (same initial weights; the "
                        f"first-step losses are checked): {','.join(model_bench.MODELS)} (default: all)")
    p.add_argument("--no-plot", action="store_true", help="write the JSON only")
    p.add_argument("--dtype", type=_name_list(list(suite.LOW_DTYPES)), default=[],
                   help="also run add, add_bcast, sum, softmax, matmul, where and lt on these 16-bit dtypes "
                        "(float16,bfloat16); "
                        "rows named add_f16, matmul_bf16, ... (CuPy has no bfloat16 rows)")
    p.add_argument("--compare", metavar="OLD.json", help="a regression table against an earlier run's JSON "
                   "(the same measurements, old and new medians, slower/faster/same beyond the rows' noise)")
    p.add_argument("--collectives", action="store_true", help="benchmark tl.distributed's collectives against "
                   "mpi4py and torch (gloo) instead, over mpiexec: --collectives --help for its options")
    return p


class Progress:
    """One status line on stderr: rewritten in place on a terminal, one line per workload otherwise."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = None
        self.t0 = time.perf_counter()

    def __call__(self, done, total, what):
        text = f"[{done:>{len(str(total))}}/{total}] {time.perf_counter() - self.t0:5.1f}s  {what}"
        if self.tty:
            self.stream.write("\r\033[K" + (text if what != "done" else ""))
        else:
            key = " ".join(what.split()[:2])
            if key == self.last:
                return
            self.last = key
            self.stream.write(text + "\n")
        self.stream.flush()


def _devices(requested):
    """(devices to run, lines to print about CUDA, cuda info for the JSON); SystemExit(2) when CUDA
    was asked for but cannot run."""
    reason = backends.cuda_unavailable_reason()
    available = tl.cuda.is_available()
    emulated = backends.cuda_emulated()
    info = {"available": available, "reason": reason, "emulated": False, "emulated_available": emulated,
            "devices": []}
    lines = []
    wants_cuda = requested is None or any(d.startswith("cuda") for d in requested)
    if available:
        default = f"cuda:{tl.cuda.current_device()}"
    elif emulated and requested is not None and wants_cuda:
        default = "cuda:0"
        info["emulated"] = True
        lines.append("CUDA: EMULATED (TENSORLAB_CUDA_EMULATION=1): the kernels run on the host and the events record "
                     "host time - the CUDA numbers below say nothing about a GPU.")
    else:
        why = reason or "the CUDA emulation driver does not count as a GPU"
        if requested is not None and wants_cuda:
            raise SystemExit(f"tensorlab-bench: CUDA was asked for (--devices) but is not available: {why}")
        lines.append(f"CUDA: not available - {why}\n      Running the CPU part only.")
        default = None
    devices = []
    for d in (requested or (["cpu"] + (["cuda"] if default else []))):
        d = default if d == "cuda" else d
        if d not in devices:
            devices.append(d)
    for d in devices:
        if d.startswith("cuda"):
            try:
                name = tl.cuda.get_device_name(tl.device(d).index)
            except RuntimeError as e:  # e.g. cuda:3 on a machine with one GPU
                raise SystemExit(f"tensorlab-bench: {d}: {e}") from None
            info["devices"].append({"device": d, "name": name})
            if available:
                lines.append(f"CUDA: {d} {name}")
    return devices, lines, info


def _machine():
    info = {"platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
            **stability.machine_identity(),
            "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "tensorlab_threads": thread_counts.tensorlab_threads(),
            "tensorlab_can_set_threads": thread_counts.can_set_tensorlab_threads(),
            "blas_core": _par.blas_core(), "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}
    torch = torch_module()
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
    return info


def _versions():
    torch = torch_module()
    out = {"tensorlab": tl.__version__, "numpy": np.__version__, "torch": getattr(torch, "__version__", None),
           "torch_cuda": torch_has_cuda(torch) if torch is not None else False, "cupy": None}
    if backends.cuda_unavailable_reason() is None:
        import cupy
        out["cupy"] = cupy.__version__
    return out


def _overhead(devices, mode, baselines, progress):
    rounds, number, emulated_number = overhead.settings(mode)
    out = []
    for device in devices:
        n = emulated_number if device != "cpu" and not tl.cuda.is_available() else number
        out += overhead.measure(device, rounds=rounds, number=n, baselines=baselines,
                                progress=lambda what: progress(0, 1, what))
    return out


def main(argv=None):
    if "--collectives" in (sys.argv[1:] if argv is None else argv):  # its own options: bench/collectives.py
        from . import collectives
        return collectives.main([a for a in (sys.argv[1:] if argv is None else argv) if a != "--collectives"])
    args = parser().parse_args(argv)
    old_doc = None
    if args.compare:
        try:
            with open(args.compare) as f:
                old_doc = json.load(f)
        except (OSError, ValueError) as e:
            raise SystemExit(f"tensorlab-bench: --compare {args.compare}: cannot read it as a benchmark JSON ({e})")
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    s = suite.settings(mode, args.sizes, args.matmul_sizes, args.repeat, args.max_time, args.flush_l2)
    s = s._replace(thread_variants=True)
    devices, cuda_lines, cuda_info = _devices(args.devices)
    workloads = args.workloads or list(suite.BASE_WORKLOADS)
    workloads = workloads + [f"{w}_{suite.LOW_SUFFIX[d]}" for d in args.dtype for w in suite.DTYPE_WORKLOADS
                             if w in workloads and f"{w}_{suite.LOW_SUFFIX[d]}" not in workloads]
    baselines = None if args.baselines is None else [b for b in args.baselines if b != "none"]
    versions = _versions()
    torch = torch_module()
    if args.threads is not None:
        thread_counts.set_tensorlab_threads(args.threads)
        if torch is not None:
            torch.set_num_threads(args.threads)

    torch_text = f"torch {versions['torch']} ({torch.get_num_threads()} CPU threads)" if torch else "no torch"
    tl_threads = thread_counts.tensorlab_threads()
    tl_text = f"{tl_threads} CPU thread{'s' if tl_threads != 1 else ''}" + \
        ("" if thread_counts.can_set_tensorlab_threads() else ", no tl.set_num_threads")
    core = _par.blas_core()
    blas_text = "" if core is None else f" (OpenBLAS {core} kernels" + \
        (", set by OPENBLAS_CORETYPE)" if os.environ.get("OPENBLAS_CORETYPE") else ")")
    print(f"tensorlab-bench {tl.__version__} ({mode}; tensorlab {tl_text}): {platform.platform()}, Python "
          f"{platform.python_version()}, numpy {versions['numpy']}{blas_text}, {torch_text}"
          + (f", cupy {versions['cupy']}" if versions["cupy"] else ""))
    print(f"build: {_build.describe()}")  # compiled or pure-Python hot path (tensorlab/_build.py)
    load = stability.load_check()
    print(stability.load_text(load))
    for line in cuda_lines:
        print(line)
    print(f"devices: {', '.join(devices)}; workloads: {', '.join(workloads)}", flush=True)

    t0 = time.perf_counter()
    progress = Progress()
    over = [] if args.no_overhead else _overhead(devices, mode, baselines, progress)
    peaks, results = suite.run(devices, workloads, s, baselines, progress=progress)
    trained = []
    for device in devices if args.models else ():
        trained += model_bench.measure(args.models, mode, device, progress=lambda what: progress(0, 1, what))
    elapsed = time.perf_counter() - t0
    stability.annotate(results, load, lambda r: (r["device"], r["workload"], r["size"], r.get("thread_setting")))

    if over:
        print()
        print(report.overhead_table(over))
        print(report.overhead_footnotes(over))
    print()
    print(report.table(results))
    print()
    print(report.footnotes(results, peaks))
    if trained:
        print()
        print(report.models_table(trained))
        print(report.models_footnotes(trained))
    doc = {"tool": "tensorlab-bench", "version": tl.__version__, "created": suite.timestamp(), "mode": mode,
           "argv": list(sys.argv[1:] if argv is None else argv), "elapsed_s": elapsed,
           "settings": s._asdict(), "machine": _machine(), "libraries": versions, "cuda": cuda_info,
           "build": _build.describe(), "devices": devices, "workloads": workloads, "peaks": peaks, "results": results, "overhead": over,
           "models": trained, "no_plot": args.no_plot, "load": load}
    if old_doc is not None:
        rows = stability.compare(old_doc, doc)
        doc["compare"] = {"against": args.compare, "rows": rows}
        print()
        print(report.compare_table(rows, args.compare))
    note = report.cuda_note(doc)
    if note and any(d != "cpu" for d in devices):
        print(note)
    jpath, ppath, note = report.write(args.out, doc)
    print(f"\nran {len(results)} measurements in {elapsed:.1f} s; wrote {jpath}" + (f" and {ppath}" if ppath else ""))
    if note:
        print(f"no plot: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
