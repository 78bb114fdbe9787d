"""`python -m tensorlab.gpu_check`: what to run first on a machine with a GPU.

Compiles every kernel instantiation in parallel (tensorlab.backends.cuda.modules.precompile: fills
the on-disk cubin cache of backends/cuda/nvrtc.py, so the test processes load kernels instead of
compiling them), runs
the CUDA tests (`pytest tests -m cuda`, on pytest-xdist workers when it is installed) in a
subprocess, then a quick CPU-vs-GPU benchmark through tensorlab.bench, and writes one dated report
(Markdown + JSON) with the device, the driver/runtime and library versions, the git commit (and
whether the tree was dirty), the precompile time, the test counts and failures, the benchmark table
and the performance targets (PASS / FAIL / NOT MEASURED from this run's numbers), so a lent GPU's
results can be committed as evidence. It prints a time estimate first and stops the tests after
--tests-timeout seconds, so the whole run fits a 10-minute slot. Without a GPU it exits with status
2 and says why, writing nothing (`--allow-no-gpu` runs a CPU-only smoke version, for the tests)."""
from __future__ import annotations

import argparse
import glob
import importlib.util
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from typing import NamedTuple

import numpy as np

import tensorlab as tl
from tensorlab import backends
from tensorlab.bench import report, suite
from tensorlab.bench.libs import BASELINES, torch_module
from tensorlab.distributed import nccl_check

DEFAULT_PYTEST = ["tests", "-m", "cuda"]
TESTS_TIMEOUT_S = 360   # the tests stop (SIGINT: pytest still writes its junit XML) after this long
XDIST_MAX_WORKERS = 8   # workers share one GPU: enough to hide Python overhead, few enough for its memory
# rough costs for the estimate when no earlier report of the device says better
COMPILE_S_PER_UNIT = 0.3   # NVRTC, one instantiation, one core (0.1-0.55 s measured for sm_90)
GUESS_TESTS_S = {False: 240.0, True: 120.0}  # plain / pytest-xdist
GUESS_BENCH_S = {"quick": 90.0, "tiny": 10.0}


def checkout_root():
    """The source checkout this tensorlab was imported from (the package's parent directory holds
    tests/, kernels/ and pyproject.toml), or None for an installed package."""
    d = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if all(os.path.exists(os.path.join(d, n)) for n in ("tests", "kernels", "pyproject.toml")):
        return d
    return None


def repo_root():
    """Where the tests run from: the checkout, else the working directory if it holds tests/."""
    for d in (checkout_root(), os.getcwd()):
        if d and os.path.isdir(os.path.join(d, "tests")):
            return d
    raise SystemExit("gpu_check: cannot find the repository's tests/ directory (run it from the checkout)")


def default_out_dir():
    """reports/gpu of the checkout (whatever the working directory), else of the working directory."""
    return os.path.join(checkout_root() or os.getcwd(), "reports", "gpu")


def _git(root, *args):
    try:
        r = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None


def git_state(root):
    """{"commit", "dirty", "changes"}: HEAD, whether tracked files differ from it (None outside a
    git checkout), and up to 50 of the changed paths (`git status --porcelain`, untracked files
    not counted: the reports this tool writes would make every second run dirty)."""
    head = (_git(root, "rev-parse", "HEAD") or "").strip()
    status = _git(root, "status", "--porcelain", "--untracked-files=no") if head else None
    changes = [line[3:] for line in status.splitlines() if line.strip()] if status is not None else []
    return {"commit": head or "unknown", "dirty": None if status is None else bool(changes),
            "changes": changes[:50], "changed": len(changes)}


def git_commit(root):
    return git_state(root)["commit"]


def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "unknown"


def _cuda_version(v):
    return f"{v // 1000}.{v % 1000 // 10}"


def environment(gpu):
    """Device, driver/runtime and library versions for the report header."""
    torch = torch_module()
    env = {"device": "none", "properties": None, "driver": None, "runtime": None, "cupy": None,
           "numpy": np.__version__, "torch": getattr(torch, "__version__", None), "tensorlab": tl.__version__,
           "python": platform.python_version(), "platform": platform.platform()}
    if gpu:
        import cupy
        idx = tl.cuda.current_device()
        props = tl.cuda.get_device_properties(idx)
        env["device"] = props.name
        env["properties"] = {"index": idx, **{k: getattr(props, k) for k in type(props).__slots__}}
        env["driver"] = _cuda_version(cupy.cuda.runtime.driverGetVersion())
        env["runtime"] = _cuda_version(cupy.cuda.runtime.runtimeGetVersion())
        env["cupy"] = cupy.__version__
    return env


def parse_junit(path):
    """Counts and failures (test id, first line of the message) from a pytest junit XML file."""
    counts = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failures, skips = [], {}
    for case in ET.parse(path).getroot().iter("testcase"):
        counts["tests"] += 1
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        if outcome is None:
            counts["passed"] += 1
            continue
        message = (outcome.get("message") or outcome.text or "").strip().splitlines()
        first = message[0] if message else ""
        if outcome.tag == "skipped":
            counts["skipped"] += 1
            skips[first] = skips.get(first, 0) + 1
            continue
        counts["failed" if outcome.tag == "failure" else "errors"] += 1
        tid = f"{case.get('classname', '')}::{case.get('name', '')}"
        failures.append({"id": tid, "kind": outcome.tag, "message": first})
    return counts, failures, skips


def xdist_workers():
    """pytest-xdist workers for the test run: 0 (plain pytest) unless xdist is installed already;
    gpu_check installs nothing."""
    if importlib.util.find_spec("xdist") is None:
        return 0
    return max(1, min(XDIST_MAX_WORKERS, _cpus()))


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pytest_command(selection, workers=0):
    """The pytest arguments (after `python`) for `selection`, on `workers` xdist workers (0: plain;
    a selection that chooses -n/--numprocesses itself keeps its choice)."""
    cmd = ["-m", "pytest", *selection, "-p", "no:cacheprovider", "-q", "-rs"]
    if workers and not any(a == "-n" or a.startswith(("-n", "--numprocesses")) for a in selection):
        cmd += ["-n", str(workers)]
    return cmd


def _interrupt(proc, grace=30):
    """Stop the pytest process group as Ctrl-C would (pytest then writes its junit XML), killing
    it if it is still there after `grace` seconds."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 30)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def run_tests(root, selection, workers=0, timeout=None):
    """Run pytest on `selection` in a subprocess from the repository root (its output goes to the
    terminal, the outcome comes from the junit XML), stopping it after `timeout` seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        cmd = pytest_command(selection, workers)
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *cmd, f"--junitxml={xml}"], cwd=root, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            print(f"gpu_check: the tests ran past {timeout:.0f} s: stopping them", file=sys.stderr, flush=True)
            _interrupt(proc)
        except BaseException:  # Ctrl-C here: the tests run in their own session, stop them too
            _interrupt(proc, grace=10)
            raise
        out = {"command": shlex.join(["python", *cmd]), "returncode": proc.returncode,
               "elapsed_s": time.perf_counter() - t0, "xdist_workers": workers, "timeout_s": timeout,
               "timed_out": timed_out}
        if os.path.exists(xml):
            out["counts"], out["failures"], out["skipped"] = parse_junit(xml)
        else:  # pytest stopped before writing it (usage error, crash): say so instead of counts
            out["counts"], out["failures"], out["skipped"] = None, [], {}
    return out


def precompile_units():
    """How many compiles modules.precompile() will run on the active driver."""
    from tensorlab.backends.cuda import modules
    return len(modules.units())


def run_precompile(gpu, workers=None):
    """modules.precompile() on the current GPU with progress lines; the record for the report."""
    if not gpu:
        return {"skipped": "no GPU", "elapsed_s": 0.0, "units": 0, "workers": 0, "granularity": None, "error": None}
    from tensorlab.backends.cuda import modules
    t0 = time.perf_counter()
    state = {"next": 0.0}

    def progress(done, total, what):
        now = time.perf_counter() - t0
        if done == 0:
            print(f"gpu_check: precompile: {what}", flush=True)
        elif done == total or now >= state["next"]:
            state["next"] = now + 5.0
            print(f"gpu_check: precompile {done}/{total} ({100.0 * done / max(total, 1):.0f}%) {now:.1f} s",
                  flush=True)

    rec = {"skipped": None, "error": None, "failed": 0}
    try:
        rec.update(modules.precompile(device=tl.cuda.current_device(), workers=workers, progress=progress))
    except modules.PrecompileError as e:
        rec.update(error=str(e), failed=len(e.failures), units=precompile_units(), workers=workers,
                   granularity=modules.granularity())
    except Exception as e:  # the driver failed before compiling anything: the tests will say more
        rec.update(error=f"{type(e).__name__}: {e}", units=0, workers=workers, granularity=None)
    rec["elapsed_s"] = time.perf_counter() - t0
    return rec


def run_bench(gpu, mode):
    """The suite on cpu (and the GPU) against every baseline installed."""
    devices = ["cpu", f"cuda:{tl.cuda.current_device()}"] if gpu else ["cpu"]
    t0 = time.perf_counter()
    peaks, results = suite.run(devices, list(suite.BASE_WORKLOADS), suite.settings(mode), None)
    return {"mode": mode, "devices": devices, "elapsed_s": time.perf_counter() - t0,
            "peaks": peaks, "results": [{k: v for k, v in r.items() if k != "traceback"} for r in results],
            "table": report.table(results), "footnotes": report.footnotes(results, peaks)}


# -- targets ------------------------------------------------------------------------------------------
class Target(NamedTuple):
    key: str
    title: str
    workload: str
    threshold: float       # percent
    kind: str              # "pct_peak": % of the device-to-device copy bandwidth; "vs_cupy": % of CuPy's speed
    size: int = 0          # "vs_cupy": the exact size (n of n x n x n) the target is about
    min_size: int = 1 << 24  # "pct_peak": the smallest size that counts (elements; 64 MiB of float32)


TARGETS = (
    Target("elementwise_contiguous", "large contiguous float32 elementwise (c = a + b)", "add", 85.0, "pct_peak"),
    Target("elementwise_broadcast", "broadcast float32 elementwise (a (R, 1024) + b (1024,))", "add_bcast", 60.0,
           "pct_peak"),
    Target("elementwise_strided", "strided float32 elementwise (c = a.t() + b)", "add_T", 60.0, "pct_peak"),
    Target("copy_strided", "strided float32 copy (dst.copy_(src.t()))", "copy_T", 60.0, "pct_peak"),
    Target("sum", "full float32 sum", "sum", 80.0, "pct_peak"),
    Target("matmul", "float32 matmul 4096x4096x4096", "matmul", 50.0, "vs_cupy", size=4096),
)
PASS, FAIL, NOT_MEASURED = "PASS", "FAIL", "NOT MEASURED"


def _required(t):
    if t.kind == "pct_peak":
        return f">= {t.threshold:.0f}% of the device-to-device copy bandwidth (size >= {report.fmt_size(t.min_size)})"
    return f">= {t.threshold:.0f}% of cupy.matmul's throughput"


def evaluate_target(t, results, peaks, device):
    """One target's verdict from the benchmark records of `device` (None: no GPU in the run)."""
    row = {"key": t.key, "target": t.title, "workload": t.workload, "required": _required(t),
           "threshold_pct": t.threshold, "device": device, "size": None, "value_pct": None,
           "status": NOT_MEASURED, "detail": ""}
    if device is None:
        row["detail"] = "no GPU in this run"
        return row
    ours = [r for r in results if r["device"] == device and r["workload"] == t.workload and r["impl"] == "tensorlab"]
    if not ours:
        row["detail"] = f"{t.workload} was not benchmarked on {device}"
        return row
    if t.kind == "pct_peak":
        r = max(ours, key=lambda r: r["size"])
        row["size"] = r["size"]
        if r["size"] < t.min_size:
            row["detail"] = (f"largest {t.workload} size run is {report.fmt_size(r['size'])} elements; the target "
                             f"needs >= {report.fmt_size(t.min_size)} (run without --quick)")
            return row
        if r["error"] is not None:
            row.update(status=FAIL, detail=f"tensorlab failed: {r['error']}")
            return row
        peak = (peaks.get(device) or {}).get("GBps")
        value = r.get("pct_peak")
        if value is None or not peak:
            row["detail"] = "no copy-bandwidth peak measured"
            return row
        row.update(value_pct=value, status=PASS if value >= t.threshold else FAIL,
                   detail=f"{value:.0f}% ({r['throughput']:.0f} GB/s of {peak:.0f} GB/s copy) at "
                          f"{report.fmt_size(r['size'])} elements")
        return row
    r = next((r for r in ours if r["size"] == t.size), None)
    if r is None:
        row["detail"] = f"no {t.size}x{t.size}x{t.size} {t.workload} in this run (run without --quick)"
        return row
    row["size"] = t.size
    if r["error"] is not None:
        row.update(status=FAIL, detail=f"tensorlab failed: {r['error']}")
        return row
    c = next((c for c in results if c["device"] == device and c["workload"] == t.workload and c["size"] == t.size
              and c["impl"] == "cupy"), None)
    if c is None or c["error"] is not None:
        row["detail"] = "no cupy.matmul baseline" + (f" (it failed: {c['error']})" if c else " (CuPy baseline absent)")
        return row
    value = 100.0 * c["median_s"] / r["median_s"]
    row.update(value_pct=value, status=PASS if value >= t.threshold else FAIL,
               detail=f"{value:.0f}% ({r['throughput']:.1f} TFLOP/s vs cupy {c['throughput']:.1f} TFLOP/s)")
    return row


def evaluate_targets(bench):
    gpus = [d for d in bench["devices"] if d.startswith("cuda")]
    device = gpus[0] if gpus else None
    return [evaluate_target(t, bench["results"], bench["peaks"], device) for t in TARGETS]


# -- time estimate ------------------------------------------------------------------------------------
def previous_report(out_dir, device):
    """The newest earlier JSON report of `device` in `out_dir`, or None."""
    paths = sorted(glob.glob(os.path.join(out_dir, f"*-{slug(device)}.json")))
    for p in reversed(paths):
        try:
            with open(p) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if doc.get("tool") == "tensorlab.gpu_check" and doc.get("environment", {}).get("device") == device:
            return doc
    return None


def estimate(gpu, mode, units, compile_workers, xdist, tests_timeout, previous=None):
    """{"precompile", "tests", "bench", "total"} seconds and a line saying how they were guessed."""
    prev = previous or {}
    notes = []
    if not gpu:
        pre = 0.0
    elif (prev.get("precompile") or {}).get("elapsed_s") is not None and prev["precompile"].get("units"):
        pre = prev["precompile"]["elapsed_s"]
        notes.append("precompile as in the last report (seconds when the cubin cache is warm)")
    else:
        pre = units * COMPILE_S_PER_UNIT / max(compile_workers, 1)
        notes.append(f"precompile cold: {units} x ~{COMPILE_S_PER_UNIT} s / {compile_workers} threads")
    if (prev.get("tests") or {}).get("elapsed_s") is not None:
        tests = prev["tests"]["elapsed_s"]
        notes.append("tests as in the last report")
    else:
        tests = GUESS_TESTS_S[bool(xdist)]
        notes.append("tests: a guess (no earlier report for this device)")
    if tests_timeout:
        tests = min(tests, tests_timeout)
    bench = (prev.get("bench") or {}).get("elapsed_s") if (prev.get("bench") or {}).get("mode") == mode else None
    if bench is None:
        bench = GUESS_BENCH_S.get(mode, 90.0)
    return {"precompile": pre, "tests": tests, "bench": bench, "total": pre + tests + bench, "how": "; ".join(notes)}


def _minutes(s):
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.1f} min"


# -- the report ---------------------------------------------------------------------------------------
def markdown_table(results):
    present = [b for b in BASELINES if any(r["impl"] == b for r in results)]
    head = ["device", "workload", "size", "impl", "median", "IQR", "throughput", "% peak"] + [f"vs {b}" for b in present]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 4 + "---:|" * (len(head) - 4)]
    for r in results:
        ok = r["error"] is None
        pct = r.get("pct_peak")
        ratios = r.get("ratios", {})
        row = [r["device"], r["workload"], report.size_text(r), r["impl"],
               report.fmt_time(r["median_s"]) if ok else "error", report.fmt_time(r["iqr_s"]) if ok else "-",
               report.throughput_text(r), "-" if pct is None else f"{pct:.0f}%"]
        row += [f"{ratios[b]:.2f}x" if b in ratios else "" for b in present]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def targets_markdown(targets):
    counts = {s: sum(t["status"] == s for t in targets) for s in (PASS, FAIL, NOT_MEASURED)}
    lines = [", ".join(f"{n} {s}" for s, n in counts.items()), "",
             "| target | required | measured | status |", "|---|---|---|---|"]
    for t in targets:
        measured = t["detail"] if t["value_pct"] is not None else "-"
        status = t["status"] if t["value_pct"] is not None else f"{t['status']}: {t['detail']}"
        lines.append(f"| {t['target']} (`{t['workload']}`) | {t['required']} | {measured} | {status} |")
    return "\n".join(lines)


def _git_text(git):
    if git["dirty"] is None:
        return "not a git checkout"
    if not git["dirty"]:
        return "clean tree"
    return f"DIRTY tree: {git['changed']} tracked file(s) differ from the commit"


def markdown(doc):
    env, tests, bench = doc["environment"], doc.get("tests"), doc.get("bench")
    git = doc.get("git") or {"dirty": None}
    lines = [f"# GPU check: {env['device']} ({doc['date']})", "",
             f"- created: {doc['created']}", f"- git commit: `{doc['commit']}` ({_git_text(git)})",
             f"- device: {env['device']}"]
    if git.get("dirty"):
        shown = git["changes"][:10]
        lines.append("- changed: " + ", ".join(f"`{p}`" for p in shown) +
                     (f" and {git['changed'] - len(shown)} more" if git["changed"] > len(shown) else ""))
    if env["properties"]:
        lines.append("- properties: " + ", ".join(f"{k}={v}" for k, v in env["properties"].items()))
    lines += [f"- CUDA driver: {env['driver']}, CUDA runtime: {env['runtime']}",
              f"- CuPy {env['cupy']}, NumPy {env['numpy']}, torch {env['torch'] or 'not installed'}, "
              f"tensorlab {env['tensorlab']}, Python {env['python']}", f"- platform: {env['platform']}"]
    if doc["note"]:
        lines.append(f"- note: {doc['note']}")
    if doc.get("elapsed_s") is not None:
        est = doc.get("estimate") or {}
        lines.append(f"- run time: {doc['elapsed_s']:.0f} s" +
                     (f" (estimated {est['total']:.0f} s)" if est.get("total") is not None else ""))
    pre = doc.get("precompile")
    if pre is not None:
        lines += ["", "## Kernel precompile", ""]
        if pre["skipped"]:
            lines.append(f"skipped: {pre['skipped']}")
        else:
            lines.append(f"{pre['units']} {pre['granularity'] or 'kernel'} compile(s) on {pre['workers']} thread(s): "
                         f"{pre['elapsed_s']:.1f} s (modules.precompile; fills the on-disk cubin cache)")
            if pre["error"]:
                lines += ["", "```", pre["error"], "```"]
    if doc.get("stage"):
        lines += ["", f"**PARTIAL REPORT**: written after the {doc['stage']} stage; the stages after it had not "
                  "run (or the run was cut short) when this file was written."]
    if tests is None:
        return "\n".join(lines + [""])
    lines += ["", "## Tests", "", f"`{tests['command']}` (exit status {tests['returncode']}, "
              f"{tests['elapsed_s']:.1f} s)", ""]
    if tests.get("timed_out"):
        lines += [f"STOPPED after {tests['timeout_s']:.0f} s (--tests-timeout): the counts cover only the tests "
                  "that ran (the one interrupted counts as passed in pytest's junit XML)", ""]
    c = tests["counts"]
    if c is None:
        lines.append("pytest wrote no junit XML: no counts (see its exit status)")
    else:
        lines.append(f"{c['tests']} tests: {c['passed']} passed, {c['failed']} failed, {c['errors']} errors, "
                     f"{c['skipped']} skipped")
    if tests["failures"]:
        lines += ["", "### Failures", ""] + [f"- `{f['id']}` ({f['kind']}): {f['message']}" for f in tests["failures"]]
    if tests["skipped"]:
        lines += ["", "### Skip reasons", ""] + [f"- {n} x {why}" for why, n in tests["skipped"].items()]
    if doc.get("targets") is not None:
        lines += ["", "## Targets", "", targets_markdown(doc["targets"])]
    if bench is None:
        return "\n".join(lines + [""])
    lines += ["", "## Benchmark", "", f"{bench['mode']} mode on {', '.join(bench['devices'])} "
              f"({bench['elapsed_s']:.1f} s)", "", markdown_table(bench["results"]), "", "```", bench["footnotes"],
              "```", ""]
    if doc.get("nccl") is not None:
        lines.append(nccl_check.markdown(doc["nccl"]))
    return "\n".join(lines)


def parser():
    p = argparse.ArgumentParser(prog="python -m tensorlab.gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None,
                   help="report directory (default: reports/gpu of the checkout, whatever the working directory)")
    p.add_argument("--quick", action="store_true",
                   help="the benchmark's tiny mode (seconds; the numbers mean little, targets NOT MEASURED) "
                        "instead of its quick mode")
    p.add_argument("--allow-no-gpu", action="store_true",
                   help="without a GPU, still write a report (device none, tiny CPU benchmark): for tests")
    p.add_argument("--workers", type=int, default=None,
                   help="threads compiling kernels before the tests (default: one per CPU)")
    p.add_argument("--no-xdist", action="store_true", help="run the tests without pytest-xdist even if installed")
    p.add_argument("--no-precompile", action="store_true",
                   help="skip compiling every kernel first (a rerun of a few tests: each kernel they launch "
                        "compiles on first use instead)")
    p.add_argument("--tests-timeout", type=float, default=TESTS_TIMEOUT_S,
                   help=f"stop the tests after this many seconds (default {TESTS_TIMEOUT_S}; 0: no limit)")
    p.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=None,
                   help=f"pytest selection instead of '{' '.join(DEFAULT_PYTEST)}' (must come last)")
    return p


def gpu_available():
    return tl.cuda.is_available()


def main(argv=None):
    t_start = time.perf_counter()
    args = parser().parse_args(argv)
    gpu = gpu_available()
    note = None
    if not gpu:
        reason = backends.cuda_unavailable_reason() or (
            "the CUDA emulation driver is on (TENSORLAB_CUDA_EMULATION=1); it is not a GPU")
        if not args.allow_no_gpu:
            print(f"gpu_check: no GPU: {reason}", file=sys.stderr)
            return 2
        note = f"no GPU ({reason}); --allow-no-gpu: tiny CPU benchmark only"
        print(f"gpu_check: {note}", file=sys.stderr)
    root = repo_root()
    out_dir = args.out or default_out_dir()
    env = environment(gpu)
    print(f"gpu_check: device {env['device']}, driver {env['driver']}, runtime {env['runtime']}", flush=True)
    git = git_state(root)
    if git["dirty"]:
        print(f"gpu_check: the git tree is dirty ({git['changed']} tracked file(s) differ from "
              f"{git['commit'][:12]}); the report says so", flush=True)
    mode = "quick" if gpu and not args.quick else "tiny"
    xdist = 0 if args.no_xdist else xdist_workers()
    compile_workers = args.workers or _cpus()
    units = precompile_units() if gpu and not args.no_precompile else 0
    timeout = args.tests_timeout or None
    est = estimate(gpu, mode, units, compile_workers, xdist, timeout, previous_report(out_dir, env["device"]))
    print(f"gpu_check: estimated time {_minutes(est['total'])}: precompile {_minutes(est['precompile'])}, tests "
          f"{_minutes(est['tests'])} ({f'pytest-xdist, {xdist} workers' if xdist else 'plain pytest'}"
          f"{f', stopped after {timeout:.0f} s' if timeout else ''}), benchmark {_minutes(est['bench'])} "
          f"({est['how']})", flush=True)
    date = time.strftime("%Y-%m-%d", time.gmtime())
    os.makedirs(out_dir, exist_ok=True)
    base = os.path.join(out_dir, f"{date}-{slug(env['device'])}")
    doc = {"tool": "tensorlab.gpu_check", "date": date, "argv": list(sys.argv[1:] if argv is None else argv),
           "commit": git["commit"], "git": git, "note": note, "environment": env, "estimate": est,
           "precompile": None, "tests": None, "targets": None, "bench": None, "nccl": None}

    def write(stage):
        """The report as it stands: after each stage, so a run cut short (a lent GPU's time running
        out) still leaves what it measured; `stage` None marks the complete report."""
        doc.update(stage=stage, created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   elapsed_s=time.perf_counter() - t_start)
        with open(base + ".md", "w") as f:
            f.write(markdown(doc))
        report.write_json(base + ".json", doc)

    pre = doc["precompile"] = (run_precompile(gpu, args.workers) if not args.no_precompile else
                               {"skipped": "--no-precompile", "elapsed_s": 0.0, "units": 0, "workers": 0,
                                "granularity": None, "error": None})
    if not pre["skipped"]:
        print(f"gpu_check: precompile took {pre['elapsed_s']:.1f} s" +
              (f"; FAILED: {pre['error']}" if pre["error"] else ""), flush=True)
    write("precompile")
    tests = doc["tests"] = run_tests(root, args.pytest_args or DEFAULT_PYTEST, xdist, timeout)
    write("tests")
    bench = doc["bench"] = run_bench(gpu, mode)
    print(bench["table"])
    targets = doc["targets"] = evaluate_targets(bench)
    write("benchmark")
    nccl = doc["nccl"] = nccl_check.section(timeout or 300.0)  # every collective over NCCL, one rank per GPU
    print("gpu_check: NCCL: " + (f"skipped: {nccl['skipped']}" if nccl["skipped"] else
                                 ("PASS" if nccl["passed"] else "FAIL")), flush=True)
    for t in targets:
        print(f"gpu_check: target {t['key']}: {t['status']}" + (f" ({t['detail']})" if t["detail"] else ""))
    write(None)
    print(f"gpu_check: wrote {base}.md and {base}.json ({doc['elapsed_s']:.0f} s)")
    c = tests["counts"]
    failed = tests["returncode"] != 0 or (c is not None and c["failed"] + c["errors"] > 0) or bool(pre["error"])
    failed = failed or nccl["passed"] is False
    return 1 if failed or any(r["error"] for r in bench["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
