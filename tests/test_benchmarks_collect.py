"""The pytest-benchmark suites in benchmarks/ cannot rot: the whole directory runs with
--benchmark-disable (every row runs its function once, after the result check against NumPy)
at the benchmark command's --tiny sizes (TENSORLAB_BENCH_MODE=tiny), and one small group runs
timed to exercise the ratios in extra_info and the terminal summary. On the emulation pass the
CUDA rows run on the emulation driver. Nothing here looks at how long anything took."""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tensorlab.bench import models, suite
from tensorlab.bench.libs import libraries

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"

pytest.importorskip("pytest_benchmark")


def _run(*args, emulation=False):
    env = dict(os.environ, TENSORLAB_BENCH_MODE="tiny")
    if not emulation:
        env.pop("TENSORLAB_CUDA_EMULATION", None)
    proc = subprocess.run([sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", "-rA"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc.stdout


def _outcomes(out):
    """{test id: PASSED/SKIPPED/...} from -rA's short summary (skips are reported per location, so
    only PASSED rows are listed by id)."""
    return dict((m.group(2), m.group(1)) for m in re.finditer(r"^(PASSED|FAILED|ERROR|XFAIL) \S+::(\S+)", out, re.M))


def _kernel_rows(device, lib_names):
    """The ids of benchmarks/test_kernels.py's rows on `device` in tiny mode: every workload of the
    benchmark command (suite.WORKLOADS) and the file's extras, for each implementation."""
    spec = importlib.util.spec_from_file_location("_tensorlab_bench_kernels", BENCH / "test_kernels.py")
    tk = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tk)
    assert set(suite.BASE_WORKLOADS) <= set(tk.WORKLOADS)
    return {f"test_kernel[{device}-{w}-{n}-{lib}]" for w in tk.WORKLOADS for n in tk.sizes(w, device, "tiny")
            for lib in lib_names}


def test_every_benchmark_runs_once_on_the_cpu():
    out = _run(str(BENCH), "--benchmark-disable")
    passed = {k for k, v in _outcomes(out).items() if v == "PASSED"}
    want = _kernel_rows("cpu", [lib.name for lib in libraries("cpu")])
    assert want <= passed, sorted(want - passed)[:10]
    assert any(k.startswith("test_overhead[") for k in passed) or not (BENCH / "test_overhead.py").exists()
    assert {f"test_overhead[{w}-cpu-tensorlab]" for w in ("mul_inplace", "view_chain")} <= passed
    trained = {f"test_train_step[{m}-cpu-tensorlab-default]" for m, info in models.MODELS.items() if "cpu" in info.devices}
    assert trained <= passed, sorted(trained - passed)


def test_timed_rows_report_throughput_and_ratios(tmp_path):
    path = tmp_path / "bench.json"
    out = _run(str(BENCH / "test_kernels.py"), "-k", "cpu-add-1024-", "--benchmark-min-rounds=1",
               "--benchmark-max-time=0.001", f"--benchmark-json={path}")
    rows = json.loads(path.read_text())["benchmarks"]
    names = [lib.name for lib in libraries("cpu")]
    assert {r["extra_info"]["library"] for r in rows} == set(names)
    for r in rows:
        info = r["extra_info"]
        assert (info["device"], info["workload"], info["size"], info["unit"]) == ("cpu", "add", 1024, "GB/s")
        assert info["emulated"] is False and info["work"] == 3 * 4 * 1024
        assert info["throughput"] == pytest.approx(info["work"] / r["stats"]["median"] / 1e9)
    ours = next(r for r in rows if r["extra_info"]["library"] == "tensorlab")
    assert set(ours["extra_info"]["ratios"]) == set(names) - {"tensorlab"}
    for r in rows:
        if r is not ours:
            ratio = ours["extra_info"]["ratios"][r["extra_info"]["library"]]
            assert ratio == pytest.approx(r["stats"]["median"] / ours["stats"]["median"], rel=1e-3)
    assert "tensorlab vs baselines" in out and re.search(r"cpu add 1024 +tensorlab .*GB/s", out), out[-2000:]


def test_cuda_rows_run_on_the_cuda_device(cuda):
    out = _run(str(BENCH / "test_kernels.py"), "-k", "cuda", "--benchmark-disable", emulation=True)
    passed = {k for k, v in _outcomes(out).items() if v == "PASSED"}
    want = _kernel_rows("cuda", ["tensorlab"])
    assert want <= passed, sorted(want - passed)[:10]
