"""`python -m tensorlab.bench --collectives`: a tiny run on 2 ranks measures all_reduce, all_gather and
reduce_scatter for tensorlab, mpi4py and (with torch) gloo, checks every result against the exact
answer, and writes a table, a JSON file and a PNG whose numbers follow nccl-tests' definitions.
Times are never asserted, only their consistency."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tensorlab.bench import collectives as C

ROOT = Path(__file__).resolve().parents[1]


def test_definitions():
    assert C.bus_factor("all_reduce", 2) == 1.0 and C.bus_factor("all_reduce", 4) == 1.5
    assert C.bus_factor("all_gather", 4) == 0.75 and C.bus_factor("reduce_scatter", 8) == 7 / 8
    assert C.element_count(1024, 2) == 256 and C.element_count(1000, 3) == 249 and C.element_count(4, 4) == 4


def test_bad_arguments():
    for argv in (["--ops", "all_to_all"], ["--libs", "nccl2"], ["--nproc", "0"], ["--sizes", "1,x"]):
        with pytest.raises(SystemExit) as e:
            C.main(argv)
        assert e.value.code == 2


def test_table_from_a_document():
    doc = {"world_size": 2, "settings": {"ops": ["all_reduce"], "libs": ["tensorlab", "mpi4py"]}, "skipped": {},
           "results": [{"lib": "tensorlab", "op": "all_reduce", "size": 1024, "time_s": 1e-5, "error": None,
                        "algbw_GBps": 0.1024, "busbw_GBps": 0.1024},
                       {"lib": "mpi4py", "op": "all_reduce", "size": 1024, "time_s": None, "error": "X: y",
                        "algbw_GBps": None, "busbw_GBps": None}]}
    text = C.table(doc)
    assert "1 KiB" in text and "10.0" in text and "0.102" in text and "n/a: mpi4py all_reduce: X: y" in text


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed")
    out = tmp_path_factory.mktemp("collectives")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-m", "tensorlab.bench", "--collectives", "--tiny", "--sizes", "1024,4104",
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc, out, json.loads((out / C.JSON_NAME).read_text())


def test_every_case_measured_and_consistent(run):
    proc, out, doc = run
    libs = ["tensorlab", "mpi4py"] + (["torch-gloo"] if importlib.util.find_spec("torch") else [])
    assert doc["world_size"] == 2 and doc["skipped"] == {}
    # 4104 bytes = 1026 floats: rounded down to 1026 // 2 * 2 elements
    want = {(lib, op, size) for lib in libs for op in C.OPS for size in (1024, 4104)}
    assert {(r["lib"], r["op"], r["size"]) for r in doc["results"]} == want
    for r in doc["results"]:
        assert r["error"] is None and not r["wrong"], r
        assert r["count"] * 4 == r["size"]
        assert r["algbw_GBps"] == pytest.approx(r["size"] / r["time_s"] / 1e9)
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * C.bus_factor(r["op"], 2))
    for op in C.OPS:
        assert f"{op} (2 ranks, float32" in proc.stdout
    assert "tensorlab" in proc.stdout and "mpi4py" in proc.stdout


def test_plot_written(run):
    _, out, _ = run
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib is not installed")
    png = out / C.PNG_NAME
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_lists_the_mode():
    proc = subprocess.run([sys.executable, "-m", "tensorlab.bench", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert "--collectives" in proc.stdout


def test_tensorlab_on_cuda_tensors(cuda, tmp_path):
    """--device cuda: tensorlab's collectives on CUDA tensors (NCCL where installed, else MPI through
    the host; on the emulation driver the latter)."""
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-m", "tensorlab.bench", "--collectives", "--tiny", "--device", "cuda",
                           "--libs", "tensorlab", "--sizes", "1024", "--no-plot", "--out", str(tmp_path)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    doc = json.loads((tmp_path / C.JSON_NAME).read_text())
    assert doc["skipped"] == {} and doc["settings"]["device"] == "cuda"
    assert {r["op"] for r in doc["results"]} == set(C.OPS)
    assert all(r["error"] is None and not r["wrong"] for r in doc["results"]), doc["results"]
