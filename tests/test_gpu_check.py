"""python -m tensorlab.gpu_check: the report it writes (CPU-only smoke run), its refusal without a
GPU, and, with the GPU pieces faked, the precompile step, the targets, the time estimate, the test
run's xdist choice and timeout, the report location and the git state."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import tensorlab as tl
from tensorlab import backends, gpu_check
from tensorlab.gpu_check import parse_junit, slug

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k != "TENSORLAB_CUDA_EMULATION"}
    return subprocess.run([sys.executable, "-m", "tensorlab.gpu_check", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_allow_no_gpu_writes_markdown_and_json_report(tmp_path):
    r = _run("--allow-no-gpu", "--quick", "--out", str(tmp_path), "--pytest-args", "tests/test_device.py")
    assert r.returncode == 0, r.stdout + r.stderr
    names = sorted(os.listdir(tmp_path))
    assert len(names) == 2 and names[0].endswith(".json") and names[1].endswith(".md"), names
    assert str(tmp_path / names[0]) in r.stdout and str(tmp_path / names[1]) in r.stdout
    doc = json.loads((tmp_path / names[0]).read_text())
    md = (tmp_path / names[1]).read_text()
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert doc["commit"] == (commit or "unknown") and f"`{doc['commit']}`" in md
    device = doc["environment"]["device"]
    assert names[1] == f"{doc['date']}-{slug(device)}.md"
    if not tl.cuda.is_available():
        assert device == "none" and names[1].endswith("-none.md")
    c = doc["tests"]["counts"]
    assert c["tests"] >= 5 and c["passed"] >= 5 and c["failed"] == c["errors"] == 0
    assert c["tests"] == c["passed"] + c["skipped"] and doc["tests"]["failures"] == []
    assert f"{c['tests']} tests: {c['passed']} passed, 0 failed, 0 errors, {c['skipped']} skipped" in md
    assert "tests/test_device.py" in doc["tests"]["command"]
    for section in ("# GPU check:", "## Tests", "## Benchmark", "git commit:", "CUDA driver:", "NumPy"):
        assert section in md, section
    rows = doc["bench"]["results"]
    assert rows and {r["device"] for r in rows} >= {"cpu"} and all(r["error"] is None for r in rows)
    assert {r["workload"] for r in rows} == {"add", "add_bcast", "add_T", "copy_T", "cast_f16", "sum", "cumsum",
                                             "softmax", "matmul"}
    assert "| device | workload | size | impl | median |" in md
    assert md.count("| cpu | matmul |") == sum(r["device"] == "cpu" and r["workload"] == "matmul" for r in rows)
    # no GPU: nothing precompiled, every target NOT MEASURED, and the report says so
    assert doc["precompile"]["skipped"] == "no GPU" and "## Kernel precompile\n\nskipped: no GPU" in md
    assert [t["key"] for t in doc["targets"]] == [t.key for t in gpu_check.TARGETS]
    assert all(t["status"] == "NOT MEASURED" and t["detail"] == "no GPU in this run" for t in doc["targets"])
    assert "## Targets" in md and "0 PASS, 0 FAIL, 6 NOT MEASURED" in md
    # the git state, as git itself sees it
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                            text=True)
    if status.returncode == 0:
        assert doc["git"]["dirty"] == bool(status.stdout.strip())
        assert ("DIRTY tree" in md) == doc["git"]["dirty"]
    assert doc["tests"]["timed_out"] is False and doc["tests"]["timeout_s"] == gpu_check.TESTS_TIMEOUT_S
    assert doc["estimate"]["total"] >= 0 and "gpu_check: estimated time" in r.stdout
    assert doc["elapsed_s"] > 0


@pytest.mark.skipif(tl.cuda.is_available(), reason="a GPU is present: gpu_check runs instead of refusing")
def test_without_gpu_exits_2_with_reason_and_writes_nothing(tmp_path):
    out = tmp_path / "reports"
    r = _run("--out", str(out))
    assert r.returncode == 2
    assert "no GPU" in r.stderr and backends.cuda_unavailable_reason().splitlines()[0] in r.stderr
    assert not out.exists()


def test_parse_junit_counts_and_failure_first_lines(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text('<testsuites><testsuite><testcase classname="tests.t" name="ok"/>'
                   '<testcase classname="tests.t" name="bad[cuda]"><failure message="AssertionError: x&#10;more"/>'
                   '</testcase><testcase classname="tests.t" name="err"><error message="boom"/></testcase>'
                   '<testcase classname="tests.t" name="s"><skipped message="no CUDA"/></testcase>'
                   '</testsuite></testsuites>')
    counts, failures, skips = parse_junit(xml)
    assert counts == {"tests": 4, "passed": 1, "failed": 1, "errors": 1, "skipped": 1}
    assert failures == [{"id": "tests.t::bad[cuda]", "kind": "failure", "message": "AssertionError: x"},
                        {"id": "tests.t::err", "kind": "error", "message": "boom"}]
    assert skips == {"no CUDA": 1}


# -- the GPU path, faked --------------------------------------------------------------------------------
def _rec(workload, size, impl="tensorlab", device="cuda:0", pct=None, median=1e-3, throughput=100.0, error=None):
    r = {"device": device, "workload": workload, "size": size, "impl": impl, "error": error, "median_s": median,
         "iqr_s": median / 10, "throughput": throughput, "unit": "TFLOP/s" if workload == "matmul" else "GB/s",
         "shape": str(size), "work": 1}
    if pct is not None:
        r["pct_peak"] = pct
    return r


BIG = 1 << 24


def _bench(results, devices=("cpu", "cuda:0"), peak=3000.0):
    return {"mode": "quick", "devices": list(devices), "elapsed_s": 1.5, "results": results,
            "peaks": {d: {"GBps": peak} for d in devices}, "table": "(table)", "footnotes": "(footnotes)"}


def _by_key(targets):
    return {t["key"]: t for t in targets}


def test_targets_pass_fail_and_not_measured_from_the_benchmark_numbers():
    results = [
        _rec("add", 1 << 20, pct=99.0), _rec("add", BIG, pct=86.0, throughput=2580.0),  # the largest size counts
        _rec("add_bcast", BIG, pct=59.9),
        _rec("add_T", BIG, error="RuntimeError: boom"),
        _rec("copy_T", 1 << 20, pct=90.0),  # too small to count
        _rec("sum", BIG, pct=80.0), _rec("sum", BIG, impl="cupy", pct=95.0),
        _rec("matmul", 4096, median=2.0, throughput=20.0),
        _rec("matmul", 4096, impl="cupy", median=1.0, throughput=40.0),
        _rec("add", BIG, device="cpu", pct=1.0),  # other devices do not count
    ]
    t = _by_key(gpu_check.evaluate_targets(_bench(results)))
    assert t["elementwise_contiguous"]["status"] == "PASS" and t["elementwise_contiguous"]["value_pct"] == 86.0
    assert t["elementwise_contiguous"]["size"] == BIG and "86% (2580 GB/s of 3000 GB/s copy)" in \
        t["elementwise_contiguous"]["detail"]
    assert t["elementwise_broadcast"]["status"] == "FAIL" and t["elementwise_broadcast"]["value_pct"] == 59.9
    assert t["elementwise_strided"]["status"] == "FAIL" and "boom" in t["elementwise_strided"]["detail"]
    assert t["copy_strided"]["status"] == "NOT MEASURED" and "needs >= 16Mi" in t["copy_strided"]["detail"]
    assert t["sum"]["status"] == "PASS"  # the threshold itself passes
    assert t["matmul"]["status"] == "PASS" and t["matmul"]["value_pct"] == 50.0
    assert "20.0 TFLOP/s vs cupy 40.0 TFLOP/s" in t["matmul"]["detail"]
    md = gpu_check.targets_markdown(list(t.values()))
    assert md.startswith("3 PASS, 2 FAIL, 1 NOT MEASURED")
    assert "| large contiguous float32 elementwise (c = a + b) (`add`) | >= 85% of the device-to-device copy " in md
    assert "| NOT MEASURED: largest copy_T size" in md


def test_matmul_target_needs_the_4096_case_and_a_cupy_baseline():
    slow = [_rec("matmul", 4096, median=2.1), _rec("matmul", 4096, impl="cupy", median=1.0)]
    assert _by_key(gpu_check.evaluate_targets(_bench(slow)))["matmul"]["status"] == "FAIL"
    alone = [_rec("matmul", 4096)]
    m = _by_key(gpu_check.evaluate_targets(_bench(alone)))["matmul"]
    assert m["status"] == "NOT MEASURED" and "no cupy.matmul baseline" in m["detail"]
    small = [_rec("matmul", 1024), _rec("matmul", 1024, impl="cupy")]
    m = _by_key(gpu_check.evaluate_targets(_bench(small)))["matmul"]
    assert m["status"] == "NOT MEASURED" and "no 4096x4096x4096 matmul" in m["detail"]
    broken = [_rec("matmul", 4096, error="RuntimeError: x"), _rec("matmul", 4096, impl="cupy")]
    assert _by_key(gpu_check.evaluate_targets(_bench(broken)))["matmul"]["status"] == "FAIL"
    none = _by_key(gpu_check.evaluate_targets(_bench([], devices=("cpu",))))
    assert {t["status"] for t in none.values()} == {"NOT MEASURED"}


def test_the_quick_benchmark_has_every_workload_and_size_the_targets_need():
    from tensorlab.bench import suite
    s = suite.settings("quick")
    for t in gpu_check.TARGETS:
        assert t.workload in suite.WORKLOADS
        sizes = suite.sizes_for(t.workload, "cuda:0", s)
        assert (t.size in sizes) if t.kind == "vs_cupy" else (max(sizes) >= t.min_size), t


def test_main_on_a_faked_gpu_precompiles_first_and_reports_duration_and_targets(tmp_path, monkeypatch, capsys):
    from tensorlab.backends.cuda import modules
    calls = []

    def fake_precompile(sources=None, device=None, workers=None, progress=None):
        calls.append(("precompile", device, workers))
        for done in (0, 5, 10):
            progress(done, 10, "fill.cu fill_contiguous<float, int>" if done else "compiling 10 instantiation(s)")
        return {"units": 10, "granularity": "expression", "workers": 3, "elapsed_s": 0.25}

    def fake_tests(root, selection, workers=0, timeout=None):
        calls.append(("tests", tuple(selection), timeout))
        return {"command": "python -m pytest tests -m cuda", "returncode": 0, "elapsed_s": 12.0, "xdist_workers": 0,
                "timeout_s": timeout, "timed_out": False, "skipped": {},
                "counts": {"tests": 3, "passed": 3, "failed": 0, "errors": 0, "skipped": 0}, "failures": []}

    def fake_bench(gpu, mode):
        calls.append(("bench", gpu, mode))
        return _bench([_rec("add", BIG, pct=90.0), _rec("sum", BIG, pct=70.0)])

    env = {"device": "Fake GPU 80GB", "properties": None, "driver": "12.9", "runtime": "12.9", "cupy": "14",
           "numpy": "2", "torch": None, "tensorlab": "0.1.0", "python": "3.11", "platform": "linux"}
    monkeypatch.setattr(gpu_check, "gpu_available", lambda: True)
    monkeypatch.setattr(gpu_check, "environment", lambda gpu: dict(env))
    monkeypatch.setattr(gpu_check, "precompile_units", lambda: 10)
    monkeypatch.setattr(gpu_check, "run_tests", fake_tests)
    monkeypatch.setattr(gpu_check, "run_bench", fake_bench)
    monkeypatch.setattr(modules, "precompile", fake_precompile)
    monkeypatch.setattr(tl.cuda, "current_device", lambda: 0)
    assert gpu_check.main(["--out", str(tmp_path), "--workers", "3", "--tests-timeout", "300"]) == 0
    assert [c[0] for c in calls] == ["precompile", "tests", "bench"]
    assert calls[0] == ("precompile", 0, 3) and calls[1][2] == 300 and calls[2] == ("bench", True, "quick")
    out = capsys.readouterr().out
    assert "gpu_check: estimated time" in out and "precompile: compiling 10 instantiation(s)" in out
    assert "gpu_check: precompile 10/10 (100%)" in out and "gpu_check: precompile took" in out
    assert "gpu_check: target elementwise_contiguous: PASS" in out
    (md_name,) = [n for n in os.listdir(tmp_path) if n.endswith(".md")]
    assert md_name.endswith("-fake-gpu-80gb.md")
    doc = json.loads((tmp_path / md_name.replace(".md", ".json")).read_text())
    md = (tmp_path / md_name).read_text()
    pre = doc["precompile"]
    assert pre["units"] == 10 and pre["workers"] == 3 and pre["error"] is None and pre["skipped"] is None
    assert pre["elapsed_s"] > 0 and f"10 expression compile(s) on 3 thread(s): {pre['elapsed_s']:.1f} s" in md
    t = _by_key(doc["targets"])
    assert t["elementwise_contiguous"]["status"] == "PASS" and t["sum"]["status"] == "FAIL"
    assert t["matmul"]["status"] == "NOT MEASURED"
    assert md.index("## Kernel precompile") < md.index("## Tests") < md.index("## Targets") < md.index("## Benchmark")
    assert doc["estimate"]["precompile"] == pytest.approx(10 * gpu_check.COMPILE_S_PER_UNIT / 3)


def test_main_records_a_failed_precompile_and_still_runs_the_tests(tmp_path, monkeypatch):
    from tensorlab.backends.cuda import modules

    def failing(sources=None, device=None, workers=None, progress=None):
        raise modules.PrecompileError([("fill.cu", "fill_contiguous<float, int>", "RuntimeError: error: boom")], 40)

    ran = []
    monkeypatch.setattr(gpu_check, "gpu_available", lambda: True)
    monkeypatch.setattr(gpu_check, "environment", lambda gpu: {
        "device": "Fake GPU", "properties": None, "driver": None, "runtime": None, "cupy": None, "numpy": "2",
        "torch": None, "tensorlab": "0", "python": "3", "platform": "x"})
    monkeypatch.setattr(gpu_check, "precompile_units", lambda: 40)
    monkeypatch.setattr(modules, "precompile", failing)
    monkeypatch.setattr(modules, "granularity", lambda drv=None: "expression")
    monkeypatch.setattr(tl.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(gpu_check, "run_tests", lambda *a: ran.append(a) or {
        "command": "pytest", "returncode": 0, "elapsed_s": 1.0, "timed_out": False, "timeout_s": None,
        "xdist_workers": 0, "counts": None, "failures": [], "skipped": {}})
    monkeypatch.setattr(gpu_check, "run_bench", lambda gpu, mode: _bench([]))
    assert gpu_check.main(["--out", str(tmp_path)]) == 1  # a kernel that does not compile fails the check
    assert ran
    (name,) = [n for n in os.listdir(tmp_path) if n.endswith(".json")]
    pre = json.loads((tmp_path / name).read_text())["precompile"]
    assert pre["failed"] == 1 and "1 of 40 compile(s) failed" in pre["error"] and "boom" in pre["error"]


def test_estimate_uses_the_last_report_of_the_device(tmp_path):
    assert gpu_check.previous_report(str(tmp_path), "H100") is None
    cold = gpu_check.estimate(True, "quick", 1791, 16, 4, 420)
    assert cold["precompile"] == pytest.approx(1791 * gpu_check.COMPILE_S_PER_UNIT / 16)
    assert cold["tests"] == gpu_check.GUESS_TESTS_S[True] and cold["bench"] == gpu_check.GUESS_BENCH_S["quick"]
    assert cold["total"] == pytest.approx(cold["precompile"] + cold["tests"] + cold["bench"])
    old = {"tool": "tensorlab.gpu_check", "environment": {"device": "NVIDIA H100 80GB HBM3"},
           "precompile": {"elapsed_s": 31.0, "units": 1791}, "tests": {"elapsed_s": 500.0},
           "bench": {"elapsed_s": 70.0, "mode": "quick"}}
    (tmp_path / "2024-01-01-nvidia-h100-80gb-hbm3.json").write_text(json.dumps(old))
    (tmp_path / "2024-01-02-other.json").write_text(json.dumps({**old, "environment": {"device": "other"}}))
    prev = gpu_check.previous_report(str(tmp_path), "NVIDIA H100 80GB HBM3")
    assert prev == old
    est = gpu_check.estimate(True, "quick", 1791, 16, 0, 420, prev)
    assert (est["precompile"], est["tests"], est["bench"]) == (31.0, 420, 70.0)  # tests capped by the timeout
    assert gpu_check.estimate(False, "tiny", 0, 2, 0, None)["precompile"] == 0.0


def test_pytest_uses_xdist_only_when_installed(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "xdist" else real(name, *a))
    assert gpu_check.xdist_workers() == 0
    assert "-n" not in gpu_check.pytest_command(["tests", "-m", "cuda"], 0)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "xdist" else real(name, *a))
    assert 1 <= gpu_check.xdist_workers() <= gpu_check.XDIST_MAX_WORKERS
    cmd = gpu_check.pytest_command(["tests", "-m", "cuda"], 4)
    assert cmd[:5] == ["-m", "pytest", "tests", "-m", "cuda"] and cmd[-2:] == ["-n", "4"]
    assert gpu_check.pytest_command(["tests", "-n", "2"], 4).count("-n") == 1
    assert gpu_check.pytest_command(["tests", "-n2"], 4)[-1] == "-rs"


def test_tests_past_the_timeout_are_stopped_and_counted(tmp_path):
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_fast():\n    pass\n\n"
                                           "def test_slow():\n    time.sleep(120)\n")
    t0 = __import__("time").perf_counter()
    out = gpu_check.run_tests(str(tmp_path), ["test_slow.py"], 0, timeout=5)
    assert __import__("time").perf_counter() - t0 < 60
    assert out["timed_out"] is True and out["timeout_s"] == 5 and out["returncode"] != 0
    if out["counts"] is not None:  # pytest writes its junit XML when interrupted
        assert out["counts"]["passed"] >= 1


def test_reports_go_to_the_checkout_whatever_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert gpu_check.checkout_root() == ROOT
    assert gpu_check.default_out_dir() == os.path.join(ROOT, "reports", "gpu")
    assert gpu_check.repo_root() == ROOT
    monkeypatch.setattr(gpu_check, "checkout_root", lambda: None)  # an installed package
    assert gpu_check.default_out_dir() == os.path.join(str(tmp_path), "reports", "gpu")


def test_git_state_says_whether_tracked_files_changed(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=tmp_path,
                       check=True, capture_output=True)
    assert gpu_check.git_state(str(tmp_path)) == {"commit": "unknown", "dirty": None, "changes": [], "changed": 0}
    git("init", "-q")
    (tmp_path / "a.txt").write_text("1")
    git("add", "a.txt")
    git("commit", "-q", "-m", "one")
    clean = gpu_check.git_state(str(tmp_path))
    assert len(clean["commit"]) == 40 and clean["dirty"] is False
    (tmp_path / "new.txt").write_text("untracked files (reports) do not make the tree dirty")
    assert gpu_check.git_state(str(tmp_path))["dirty"] is False
    (tmp_path / "a.txt").write_text("2")
    dirty = gpu_check.git_state(str(tmp_path))
    assert dirty["dirty"] is True and dirty["changes"] == ["a.txt"] and dirty["changed"] == 1
    doc_git = {**dirty}
    assert gpu_check._git_text(doc_git).startswith("DIRTY tree: 1 tracked file")
