"""python -m tensorlab.gpu_check: the report it writes (CPU-only smoke run) and its refusal without a GPU."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import tensorlab as tl
from tensorlab import backends
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
    assert {r["workload"] for r in rows} == {"add", "add_bcast", "copy_T", "cast_f16", "sum", "softmax", "matmul"}
    assert "| device | workload | size | impl | median |" in md
    assert md.count("| cpu | matmul |") == sum(r["device"] == "cpu" and r["workload"] == "matmul" for r in rows)


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
