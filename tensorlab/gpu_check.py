"""`python -m tensorlab.gpu_check`: what to run first on a machine with a GPU.

Runs the CUDA tests (`pytest tests -m cuda`) in a subprocess, a quick CPU-vs-GPU benchmark through
tensorlab.bench, and writes one dated report (Markdown + JSON) with the device, the driver/runtime
and library versions, the git commit, the test counts and failures, and the benchmark table, so
a lent GPU's results can be committed as evidence. Without a GPU it exits with status 2 and says
why, writing nothing (`--allow-no-gpu` runs a CPU-only smoke version, for the tests)."""
from __future__ import annotations

import argparse
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

import numpy as np

import tensorlab as tl
from tensorlab import backends
from tensorlab.bench import report, suite
from tensorlab.bench.libs import BASELINES, torch_module

DEFAULT_PYTEST = ["tests", "-m", "cuda"]


def repo_root():
    """The checkout holding tests/: the package's parent directory, else the working directory."""
    for d in (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.getcwd()):
        if os.path.isdir(os.path.join(d, "tests")):
            return d
    raise SystemExit("gpu_check: cannot find the repository's tests/ directory (run it from the checkout)")


def git_commit(root):
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


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


def run_tests(root, selection):
    """Run pytest on `selection` in a subprocess from the repository root; its output goes to the
    terminal, the outcome comes from the junit XML."""
    with tempfile.TemporaryDirectory() as tmp:
        xml = os.path.join(tmp, "junit.xml")
        cmd = ["-m", "pytest", *selection, "-p", "no:cacheprovider", "-q", "-rs"]
        t0 = time.perf_counter()
        rc = subprocess.run([sys.executable, *cmd, f"--junitxml={xml}"], cwd=root).returncode
        out = {"command": shlex.join(["python", *cmd]), "returncode": rc, "elapsed_s": time.perf_counter() - t0}
        if os.path.exists(xml):
            out["counts"], out["failures"], out["skipped"] = parse_junit(xml)
        else:  # pytest stopped before writing it (usage error, crash): say so instead of counts
            out["counts"], out["failures"], out["skipped"] = None, [], {}
    return out


def run_bench(gpu, mode):
    """The suite on cpu (and the GPU) against every baseline installed."""
    devices = ["cpu", f"cuda:{tl.cuda.current_device()}"] if gpu else ["cpu"]
    t0 = time.perf_counter()
    peaks, results = suite.run(devices, list(suite.WORKLOADS), suite.settings(mode), None)
    return {"mode": mode, "devices": devices, "elapsed_s": time.perf_counter() - t0,
            "peaks": peaks, "results": [{k: v for k, v in r.items() if k != "traceback"} for r in results],
            "table": report.table(results), "footnotes": report.footnotes(results, peaks)}


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


def markdown(doc):
    env, tests, bench = doc["environment"], doc["tests"], doc["bench"]
    lines = [f"# GPU check: {env['device']} ({doc['date']})", "",
             f"- created: {doc['created']}", f"- git commit: `{doc['commit']}`", f"- device: {env['device']}"]
    if env["properties"]:
        lines.append("- properties: " + ", ".join(f"{k}={v}" for k, v in env["properties"].items()))
    lines += [f"- CUDA driver: {env['driver']}, CUDA runtime: {env['runtime']}",
              f"- CuPy {env['cupy']}, NumPy {env['numpy']}, torch {env['torch'] or 'not installed'}, "
              f"tensorlab {env['tensorlab']}, Python {env['python']}", f"- platform: {env['platform']}"]
    if doc["note"]:
        lines.append(f"- note: {doc['note']}")
    lines += ["", "## Tests", "", f"`{tests['command']}` (exit status {tests['returncode']}, "
              f"{tests['elapsed_s']:.1f} s)", ""]
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
    lines += ["", "## Benchmark", "", f"{bench['mode']} mode on {', '.join(bench['devices'])} "
              f"({bench['elapsed_s']:.1f} s)", "", markdown_table(bench["results"]), "", "```", bench["footnotes"],
              "```", ""]
    return "\n".join(lines)


def parser():
    p = argparse.ArgumentParser(prog="python -m tensorlab.gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.path.join("reports", "gpu"), help="report directory (default: reports/gpu)")
    p.add_argument("--quick", action="store_true",
                   help="the benchmark's tiny mode (seconds; the numbers mean little) instead of its quick mode")
    p.add_argument("--allow-no-gpu", action="store_true",
                   help="without a GPU, still write a report (device none, tiny CPU benchmark): for tests")
    p.add_argument("--pytest-args", nargs=argparse.REMAINDER, default=None,
                   help=f"pytest selection instead of '{' '.join(DEFAULT_PYTEST)}' (must come last)")
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    gpu = tl.cuda.is_available()
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
    env = environment(gpu)
    print(f"gpu_check: device {env['device']}, driver {env['driver']}, runtime {env['runtime']}", flush=True)
    tests = run_tests(root, args.pytest_args or DEFAULT_PYTEST)
    bench = run_bench(gpu, "quick" if gpu and not args.quick else "tiny")
    print(bench["table"])
    date = time.strftime("%Y-%m-%d", time.gmtime())
    doc = {"tool": "tensorlab.gpu_check", "date": date, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "argv": list(sys.argv[1:] if argv is None else argv), "commit": git_commit(root), "note": note,
           "environment": env, "tests": tests, "bench": bench}
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, f"{date}-{slug(env['device'])}")
    with open(base + ".md", "w") as f:
        f.write(markdown(doc))
    report.write_json(base + ".json", doc)
    print(f"gpu_check: wrote {base}.md and {base}.json")
    c = tests["counts"]
    failed = tests["returncode"] != 0 or (c is not None and c["failed"] + c["errors"] > 0)
    return 1 if failed or any(r["error"] for r in bench["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
