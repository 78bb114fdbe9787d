"""The benchmark command: `python -m tensorlab.bench --quick --out DIR` with tiny sizes runs the
suite on the available devices, prints one table, and writes a JSON file and a PNG plot whose
numbers agree with each other; without CUDA it says why; without matplotlib it skips the plot
with a note. Times are never asserted, only their consistency."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends.diagnosis import DIST
from tensorlab import backends
from tensorlab.bench import cli, report, suite
from tensorlab.bench.libs import NumpyLib, TensorlabLib, libraries

ROOT = Path(__file__).resolve().parents[1]
SIZES, MATMUL_SIZES = [1024, 2048], [8, 16]
COMMAND = ["--quick", "--sizes", "1024,2048", "--matmul-sizes", "8,16", "--repeat", "4", "--max-time", "0.01"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    proc = subprocess.run([sys.executable, "-m", "tensorlab.bench", *COMMAND, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((out / report.JSON_NAME).read_text())
    return proc, out, doc


def test_json_holds_every_case_with_consistent_numbers(run):
    _, _, doc = run
    assert doc["mode"] == "quick" and doc["devices"][0] == "cpu"
    cpu = [r for r in doc["results"] if r["device"] == "cpu"]
    names = [lib.name for lib in libraries("cpu")]
    want = {(w, s, n) for w in suite.WORKLOADS for s in (MATMUL_SIZES if w == "matmul" else SIZES) for n in names}
    assert {(r["workload"], r["size"], r["impl"]) for r in cpu} == want
    peak = doc["peaks"]["cpu"]["GBps"]
    assert peak > 0 and "np.copyto" in doc["peaks"]["cpu"]["how"]
    by_case = {}
    for r in cpu:
        assert r["error"] is None, r
        assert r["method"] == "perf_counter" and 1 <= r["repeat"] <= 4 and len(r["times_s"]) == r["repeat"]
        assert r["median_s"] == pytest.approx(float(np.median(r["times_s"])))
        scale = 1e12 if r["workload"] == "matmul" else 1e9
        assert r["throughput"] == pytest.approx(r["work"] / r["median_s"] / scale)
        if r["workload"] == "matmul":
            assert r["unit"] == "TFLOP/s" and r["work"] == 2 * r["size"] ** 3 and "pct_peak" not in r
        else:
            assert r["unit"] == "GB/s" and r["pct_peak"] == pytest.approx(100 * r["throughput"] / peak)
        by_case.setdefault((r["workload"], r["size"]), {})[r["impl"]] = r
    for case in by_case.values():
        ours = case["tensorlab"]
        assert set(ours["ratios"]) == set(case) - {"tensorlab"}
        for name, ratio in ours["ratios"].items():
            assert ratio == pytest.approx(case[name]["median_s"] / ours["median_s"])
    add = by_case[("add", 1024)]["tensorlab"]
    assert add["work"] == 3 * 1024 * 4 and add["shape"] == "1024"
    assert by_case[("add_bcast", 2048)]["tensorlab"]["shape"] == "2x1024 + 1024"
    assert by_case[("copy_T", 2048)]["tensorlab"]["shape"] == "64x32.t()"
    assert by_case[("cast_f16", 1024)]["tensorlab"]["work"] == 1024 * 6


def test_the_table_shows_what_the_json_holds(run):
    proc, _, doc = run
    lines = proc.stdout.splitlines()
    head = next(line for line in lines if line.split()[:2] == ["device", "workload"])
    for col in ("workload", "size", "impl", "median", "IQR", "throughput", "% peak", "vs numpy"):
        assert col in head
    for r in doc["results"]:
        row = [line for line in lines if line.split()[:4] == [r["device"], r["workload"], report.size_text(r),
                                                              r["impl"]]]
        assert len(row) == 1, (r["workload"], r["size"], r["impl"])
        assert report.fmt_time(r["median_s"]) in row[0]
        if r["impl"] == "tensorlab":
            assert f"{r['ratios']['numpy']:.2f}x" in row[0]
    assert "% peak: throughput over the cpu copy peak" in proc.stdout
    assert "[" in proc.stderr and "done" in proc.stderr  # the progress line


def test_without_cuda_it_says_so_and_why(run):
    proc, _, doc = run
    if tl.cuda.is_available():
        assert any(d.startswith("cuda") for d in doc["devices"])
        return
    reason = backends.cuda_unavailable_reason()
    assert "CUDA: not available" in proc.stdout and "CPU part only" in proc.stdout
    if reason:
        assert reason in proc.stdout and doc["cuda"]["reason"] == reason
    assert doc["devices"] == ["cpu"] and doc["cuda"]["available"] is False


def test_the_plot_is_written(run):
    proc, out, _ = run
    png = out / report.PNG_NAME
    if importlib.util.find_spec("matplotlib") is None:
        assert "no plot" in proc.stdout and not png.exists()
        return
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(png) in proc.stdout


def test_without_matplotlib_the_plot_is_skipped_with_a_note(tmp_path, monkeypatch, capsys):
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.backends.backend_agg"):
        monkeypatch.setitem(sys.modules, name, None)  # `import` of these now raises ImportError
    assert cli.main(["--tiny", "--devices", "cpu", "--workloads", "add", "--baselines", "none", "--out",
                     str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "no plot: matplotlib is not installed" in text and f"pip install '{DIST}[bench]'" in text
    assert (tmp_path / report.JSON_NAME).is_file() and not (tmp_path / report.PNG_NAME).exists()


def test_baselines_and_workloads_can_be_chosen(tmp_path, capsys):
    cli.main(["--tiny", "--devices", "cpu", "--workloads", "sum,matmul", "--baselines", "numpy", "--no-plot",
              "--out", str(tmp_path)])
    doc = json.loads((tmp_path / report.JSON_NAME).read_text())
    assert {r["workload"] for r in doc["results"]} == {"sum", "matmul"}
    assert {r["impl"] for r in doc["results"]} == {"tensorlab", "numpy"}
    assert "plot not requested" in capsys.readouterr().out


def test_asking_for_cuda_without_it_fails_with_the_reason():
    if tl.cuda.is_available() or backends.cuda_emulated():
        pytest.skip("CUDA (or its emulation) is available here")
    with pytest.raises(SystemExit, match="CUDA was asked for .* not available"):
        cli.main(["--tiny", "--devices", "cuda", "--out", "unused"])


@pytest.mark.parametrize("argv, what", [(["--sizes", "12,x"], "comma-separated integers"),
                                        (["--sizes", "0"], "positive integers"),
                                        (["--repeat", "0"], "positive number"),
                                        (["--max-time", "-1"], "positive number"),
                                        (["--workloads", "add,conv"], "unknown name"),
                                        (["--baselines", "jax"], "unknown name")])
def test_bad_arguments_are_usage_errors(argv, what, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2 and what in capsys.readouterr().err


def test_a_wrong_result_is_reported_not_timed():
    class Wrong(NumpyLib):
        name = "wrong"

        def add(self, a, b, out):
            return np.subtract(a, b, out=out)

    w = suite.WORKLOADS["add"]
    host = w.inputs(64, np.random.default_rng(0))
    rec = suite.run_case(Wrong(), w, host, w.reference(host), 64, suite.settings("tiny"))
    assert "differs from NumPy" in rec["error"] and "median_s" not in rec
    ok = suite.run_case(TensorlabLib("cpu"), w, host, w.reference(host), 64, suite.settings("tiny"))
    assert ok["error"] is None and ok["median_s"] > 0


@pytest.mark.parametrize("n, width, want", [(4096, 1024, (4, 1024)), (2048, None, (32, 64)), (1000, 1024, (25, 40)),
                                            (13, None, (1, 13)), (1, None, (1, 1))])
def test_split(n, width, want):
    assert suite.split(n, width) == want


def test_formatting():
    assert [report.fmt_size(n) for n in (1000, 1024, 3 << 20, 1 << 30)] == ["1000", "1Ki", "3Mi", "1Gi"]
    assert [report.fmt_time(t) for t in (2.5, 1.5e-3, 2e-6, 3e-8, None)] == ["2.5 s", "1.5 ms", "2 us", "30 ns", "-"]


def test_cuda_rows_are_timed_with_events(tmp_path, capsys):
    """On a GPU, or on the emulation driver when asked for explicitly (its numbers are host time
    and say so)."""
    if not (tl.cuda.is_available() or backends.cuda_emulated()):
        pytest.skip(f"no CUDA device (real or emulated): {backends.cuda_diagnosis().what}")
    cli.main(["--tiny", "--devices", "cpu,cuda", "--workloads", "copy_T,cast_f16", "--no-plot", "--out", str(tmp_path)])
    doc = json.loads((tmp_path / report.JSON_NAME).read_text())
    cuda = [r for r in doc["results"] if r["device"].startswith("cuda")]
    ours = [r for r in cuda if r["impl"] == "tensorlab"]
    assert len(ours) == 2 * len(suite.TINY_SIZES)
    for r in ours:
        assert r["error"] is None, r["error"]
        assert r["method"] == "cuda_event" and r["emulated"] is (not tl.cuda.is_available())
    assert "cudaMemcpyAsync" in doc["peaks"][cuda[0]["device"]]["how"]
    if not tl.cuda.is_available():
        assert "EMULATED" in capsys.readouterr().out
