"""The benchmark command: `python -m tensorlab.bench --quick --out DIR` with tiny sizes runs the
suite on the available devices, prints one table, and writes a JSON file and a PNG plot whose
numbers agree with each other; without CUDA it says why; without matplotlib it skips the plot
with a note. Times are never asserted, only their consistency."""
from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.backends.diagnosis import DIST
from tensorlab import backends
from tensorlab.bench import cli, overhead, report, roofline, suite
from tensorlab.bench import threads as thread_counts
from tensorlab.bench.libs import NumpyLib, TensorlabLib, libraries, torch_module

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
    want = {(w, s, n) for w in suite.BASE_WORKLOADS for s in (MATMUL_SIZES if w == "matmul" else SIZES) for n in names}
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
    head = next(line for line in lines if line.split()[:3] == ["device", "workload", "size"])
    for col in ("workload", "size", "impl", "threads", "median", "IQR", "throughput", "% peak", "% roof", "vs numpy"):
        assert col in head
    for r in doc["results"]:
        row = [line for line in lines if line.split()[:5] == [r["device"], r["workload"], report.size_text(r),
                                                              r["impl"], report.threads_text(r)]]
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


# -- threads, roofline, overhead rows (issue 20) ----------------------------------------------------------
def test_every_row_has_its_thread_count_and_roofline(run):
    _, _, doc = run
    torch = torch_module()
    sweep = doc["peaks"]["cpu"]["sweep"]
    assert sweep["footprint"] == sorted(sweep["footprint"]) and len(sweep["footprint"]) == len(sweep["GBps"])
    assert all(b <= a for a, b in zip(sweep["GBps"], sweep["GBps"][1:]))  # non-increasing with the footprint
    for r in doc["results"]:
        assert r["thread_setting"] == "default"  # these sizes are below suite.LARGE_SIZE / LARGE_MATMUL
        want = {"tensorlab": thread_counts.tensorlab_threads(), "numpy": None if r["workload"] == "matmul" else 1,
                "torch": torch.get_num_threads() if torch is not None else None}[r["impl"]]
        assert r["threads"] == want, r
        if r["unit"] == "GB/s":
            assert r["roof_GBps"] == pytest.approx(roofline.roof_at(sweep, r["work"]))
            assert r["pct_roof"] == pytest.approx(100 * r["throughput"] / r["roof_GBps"])
            assert r["dtype"] == ("float32->float16" if r["workload"] == "cast_f16" else "float32")
        else:
            assert "pct_roof" not in r
    assert doc["machine"]["tensorlab_threads"] == thread_counts.tensorlab_threads()


def test_the_overhead_rows_are_present_with_ratios_and_targets(run):
    proc, _, doc = run
    rows = doc["overhead"]
    names = [impl.name for impl in overhead.impls("cpu")]
    assert {(r["workload"], r["impl"]) for r in rows} == {(w, n) for w in overhead.WORKLOADS for n in names}
    for w in overhead.WORKLOADS:
        group = {r["impl"]: r for r in rows if r["workload"] == w}
        for r in group.values():
            assert r["error"] is None and r["device"] == "cpu" and len(r["times_s"]) == r["rounds"]
            assert r["median_s"] == pytest.approx(float(np.median(r["times_s"]))) and r["min_s"] == min(r["times_s"])
        ours = group["tensorlab"]
        assert ours["target_s"] == overhead.TARGETS["cpu"][w]
        assert ours["threads"] == thread_counts.tensorlab_threads() and group["numpy"]["threads"] == 1
        assert set(ours["ratios"]) == set(group) - {"tensorlab"}
        for name, ratio in ours["ratios"].items():
            assert ratio == pytest.approx(group[name]["median_s"] / ours["median_s"])
    lines = proc.stdout.splitlines()
    head = next(line for line in lines if line.split()[:4] == ["device", "workload", "impl", "threads"])
    assert "min" in head and "target" in head
    for r in rows:
        row = [line for line in lines if line.split()[:4] == [r["device"], r["workload"], r["impl"], r["threads"] and
                                                              str(r["threads"])]]
        assert len(row) == 1 and report.fmt_time(r["median_s"]) in row[0], r
        if r["impl"] == "tensorlab":
            assert ("met" if r["median_s"] <= r["target_s"] else "MISSED") in row[0]


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
@pytest.mark.parametrize("workload", list(overhead.WORKLOADS))
def test_overhead_workloads_compute_what_numpy_does(workload):
    for impl in overhead.impls("cpu"):
        fn = impl.make(workload)
        overhead._check(impl, workload, fn)  # raises on a wrong result
    wrong = overhead.Impl("wrong", "cpu", np.array, {workload: lambda a, b: (lambda: a * 3)}, np.asarray)
    with pytest.raises(AssertionError, match="differs from NumPy"):
        overhead._check(wrong, workload, wrong.make(workload))


def test_a_broken_overhead_implementation_is_reported_not_timed(monkeypatch):
    real = overhead.impls

    def impls(device, baselines=None):
        out = real(device, ["numpy"])
        out.append(overhead.Impl("broken", device, np.array, {"add": lambda a, b: (lambda: 1 / 0)}, np.asarray))
        return out
    monkeypatch.setattr(overhead, "impls", impls)
    rows = overhead.measure("cpu", ["add"], rounds=2, number=3)
    broken = next(r for r in rows if r["impl"] == "broken")
    assert broken["error"].startswith("ZeroDivisionError") and "median_s" not in broken
    ours = next(r for r in rows if r["impl"] == "tensorlab")
    assert set(ours["ratios"]) == {"numpy"}


@pytest.fixture
def fake_threads(monkeypatch):
    """tl.get_num_threads/set_num_threads as another engineer adds them: a count of 2 by default."""
    state = {"n": 2, "calls": []}

    def set_num_threads(n):
        state["calls"].append(n)
        state["n"] = n
    monkeypatch.setattr(tl, "get_num_threads", lambda: state["n"], raising=False)
    monkeypatch.setattr(tl, "set_num_threads", set_num_threads, raising=False)
    return state


def test_large_cases_run_at_one_thread_and_the_default(tmp_path, fake_threads, capsys):
    assert cli.main(["--tiny", "--devices", "cpu", "--workloads", "add,sum", "--sizes", f"1024,{suite.LARGE_SIZE}",
                     "--baselines", "numpy", "--no-plot", "--no-overhead", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / report.JSON_NAME).read_text())
    got = {(r["workload"], r["size"], r["impl"], r["thread_setting"]): r["threads"] for r in doc["results"]}
    want = {}
    for w in ("add", "sum"):
        want.update({(w, 1024, "tensorlab", "default"): 2, (w, 1024, "numpy", "default"): 1})
        for setting, n in (("1", 1), ("default", 2)):
            want.update({(w, suite.LARGE_SIZE, "tensorlab", setting): n, (w, suite.LARGE_SIZE, "numpy", setting): 1})
    assert got == want
    assert fake_threads["n"] == 2 and 1 in fake_threads["calls"]  # set to 1, then restored
    for r in doc["results"]:  # the ratios compare rows of the same setting
        if r["impl"] == "tensorlab":
            theirs = next(o for o in doc["results"] if o["impl"] == "numpy" and
                          (o["workload"], o["size"], o["thread_setting"]) ==
                          (r["workload"], r["size"], r["thread_setting"]))
            assert r["ratios"]["numpy"] == pytest.approx(theirs["median_s"] / r["median_s"])
    text = capsys.readouterr().out
    assert "at 1 thread and at the default count" in text
    assert "(quick" not in text and "tensorlab 2 CPU threads)" in text


def test_threads_option_sets_tensorlab_and_torch(tmp_path, fake_threads):
    torch = torch_module()
    before = torch.get_num_threads() if torch is not None else None
    try:
        cli.main(["--tiny", "--devices", "cpu", "--workloads", "add", "--threads", "1", "--no-plot", "--no-overhead",
                  "--out", str(tmp_path)])
        doc = json.loads((tmp_path / report.JSON_NAME).read_text())
        assert {r["threads"] for r in doc["results"] if r["impl"] in ("tensorlab", "torch")} == {1}
        assert fake_threads["n"] == 1
    finally:
        if torch is not None:
            torch.set_num_threads(before)


def test_without_set_num_threads_only_the_default_runs(monkeypatch):
    monkeypatch.delattr(tl, "set_num_threads", raising=False)
    monkeypatch.delattr(tl, "get_num_threads", raising=False)
    assert thread_counts.tensorlab_threads() == 1 and not thread_counts.can_set_tensorlab_threads()
    assert thread_counts.variants(4) == [("default", None)]
    s = suite.settings("tiny", sizes=[suite.LARGE_SIZE])._replace(thread_variants=True)
    assert {c[4] for c in suite.plan(["cpu"], ["add"], s, ["numpy"])} == {("default", None)}


# -- report formatting and the plot ---------------------------------------------------------------------
def test_tick_and_size_labels_are_plain():
    assert [report.plain_number(v) for v in (0.05, 0.2, 1.0, 2.0, 20.0, 2000.0, 0.0005, 1.5, 0)] == \
        ["0.05", "0.2", "1", "2", "20", "2000", "0.0005", "1.5", "0"]
    assert [report.size_tick(v) for v in (4096, 65536, 1 << 20, 4 << 20, 1000)] == ["4Ki", "64Ki", "1Mi", "4Mi", "1000"]
    assert [report.size_tick(v, matmul=True) for v in (64, 256.0)] == ["64", "256"]
    assert report.log_subs(1, 100) == (1.0, 2.0, 5.0) and report.log_subs(0.01, 1000) == (1.0,)


def _rec(device, workload, size, impl, median_s, **kw):
    r = {"device": device, "workload": workload, "size": size, "impl": impl, "median_s": median_s, "error": None,
         "unit": "GB/s", "work": 12 * size, "throughput": 12 * size / median_s / 1e9, "dtype": "float32",
         "thread_setting": "default", "threads": 1 if device == "cpu" else None, "iqr_s": 0.0}
    r.update(kw)
    return r


SIZES_X = [1 << 12, 1 << 16, 1 << 20, 1 << 22]


def _fake_results():
    """CPU time is 1 us + 1 ns per element, CUDA's 100 us + 0.1 ns per element: CUDA wins from 1Mi (add);
    the CPU's sum (0.1 ns per element) wins everywhere."""
    out = []
    for n in SIZES_X:
        out.append(_rec("cpu", "add", n, "tensorlab", 1e-6 + n * 1e-9))
        out.append(_rec("cpu", "add", n, "numpy", 1e-6 + n * 1e-9))
        out.append(_rec("cuda:0", "add", n, "tensorlab", 100e-6 + n * 1e-10))
        out.append(_rec("cpu", "sum", n, "tensorlab", 1e-6 + n * 1e-10))
        out.append(_rec("cuda:0", "sum", n, "tensorlab", 20e-6 + n * 1e-10))
    return out


def test_crossover_is_the_size_from_which_cuda_wins():
    got = {c["workload"]: c for c in report.crossovers(_fake_results())}
    assert got["add"]["size"] == 1 << 20 and got["add"]["text"] == "add: cuda:0 wins from 1Mi on"
    assert got["sum"]["size"] is None and "the CPU wins at every size" in got["sum"]["text"]
    assert report.crossovers([r for r in _fake_results() if r["device"] == "cpu"]) == []
    assert "crossover: add: cuda:0 wins from 1Mi on" in report.footnotes(_fake_results(), {})


def test_cuda_note_says_why_rows_are_missing():
    reason = "no NVIDIA driver on this machine (libcuda.so.1 not found)"
    cpu_only = [r for r in _fake_results() if r["device"] == "cpu"]
    doc = {"results": cpu_only, "devices": ["cpu"], "cuda": {"available": False, "reason": reason}}
    assert report.cuda_note(doc) == f"No CUDA rows: {reason}"
    doc["cuda"] = {"available": False, "reason": None, "emulated_available": True}
    assert "emulation driver does not count as a GPU" in report.cuda_note(doc)
    doc["cuda"] = {"available": True, "reason": None}
    assert "limited to the CPU (--devices)" in report.cuda_note(doc)
    doc = {"results": _fake_results(), "devices": ["cpu", "cuda:0"], "cuda": {"available": True}}
    assert report.cuda_note(doc) is None
    doc["cuda"] = {"available": False, "emulated": True}
    assert "EMULATED" in report.cuda_note(doc)
    libs = {"torch": "2.13.0+cpu", "torch_cuda": False}
    assert report.torch_notes({"libraries": libs, "devices": ["cpu", "cuda:0"]}) == \
        ["torch 2.13.0+cpu is installed without CUDA: no torch line on cuda:0."]
    assert report.torch_notes({"libraries": dict(libs, torch_cuda=True), "devices": ["cpu", "cuda:0"]}) == []


def test_the_figure_has_plain_labels_titles_roofline_crossover_and_note():
    pytest.importorskip("matplotlib")
    results = _fake_results()
    sweep = {"footprint": [1 << 14, 1 << 20, 1 << 26], "GBps": [200.0, 100.0, 30.0]}
    peaks = {"cpu": {"GBps": 30.0, "sweep": sweep}}
    over = [{"device": "cpu", "workload": "add", "impl": n, "median_s": t, "target_s": 2e-6 if n == "tensorlab" else None}
            for n, t in (("tensorlab", 4e-6), ("numpy", 3e-7))]
    results.append(_rec("cpu", "add", 1 << 22, "tensorlab", 2e-3, thread_setting="1"))  # a 1-thread row
    note = "No CUDA rows: because"
    fig = report.figure(results, peaks, "title", [note], over)
    fig.canvas.draw()
    axes = fig.axes
    titles = [ax.get_title() for ax in axes]
    assert titles[:2] == ["add: float32, cpu + cuda:0", "sum: float32, cpu + cuda:0"]
    assert titles[2].startswith("per-op host overhead")
    sizes = {report.fmt_size(n) for n in SIZES_X} | {report.fmt_size(1 << k) for k in range(8, 26)}
    for ax in axes[:2]:
        xlabels = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        assert xlabels and set(xlabels) <= sizes, xlabels
        ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert ylabels and all(lab.replace(".", "").isdigit() for lab in ylabels), ylabels
        labels = [line.get_label() for line in ax.get_lines()]
        assert "copy at same footprint (cpu)" in labels and "tensorlab (cuda:0)" in labels
    roof = next(line for line in axes[0].get_lines() if line.get_label() == "copy at same footprint (cpu)")
    xs, ys = roof.get_data()
    assert ys[0] == pytest.approx(roofline.roof_at(sweep, 12 * xs[0]))
    assert any(t.get_text() == "cuda:0 wins ->" for t in axes[0].texts)
    assert any(t.get_text() == "CPU wins at every size" for t in axes[1].texts)
    assert any(t.get_text() == note for t in fig.texts)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert {"tensorlab (cpu)", "tensorlab (cpu, 1 thread)", "tensorlab (cuda:0)", "copy at same footprint (cpu)"} <= \
        set(legend) and len(legend) == len(set(legend))
    one = next(line for line in axes[0].get_lines() if line.get_label() == "tensorlab (cpu, 1 thread)")
    assert list(one.get_xdata()) == [1 << 22]


def test_roof_at_interpolates_in_log_log():
    sweep = {"footprint": [1 << 10, 1 << 20], "GBps": [100.0, 10.0]}
    assert roofline.roof_at(sweep, 1 << 5) == 100.0 and roofline.roof_at(sweep, 1 << 30) == 10.0
    assert roofline.roof_at(sweep, 1 << 15) == pytest.approx(math.sqrt(100.0 * 10.0))
    assert roofline.roof_at({"footprint": [], "GBps": []}, 1024) is None
    got = roofline.sweep_bytes([1024, 4096], step=4)  # copies of S bytes touch 2S: cover sum's 4n to add's 12n
    assert got == [2048, 8192, 32768] and 2 * got[0] <= 4 * 1024 and 2 * got[-1] >= 12 * 4096
    # workloads of a few elements lie below the 1 KiB floor: the floor's copy, never an empty sweep
    assert roofline.sweep_bytes([8]) == [1024] and roofline.sweep_bytes([1, 8, 16], step=2) == [1024]


# -- the emulation driver's kernel record and the CUDA overhead rows -----------------------------------------
def test_emulation_driver_records_each_kernel_launch(cuda):
    from tensorlab.backends.cuda.active import driver
    if getattr(driver, "name", "") != "emulation":
        pytest.skip("a real GPU: the kernel record is the emulation driver's")
    a = tl.ones(8, device="cuda")
    (a + a).sum()  # compile first
    with driver.kernel_timing() as outer:
        b = a + a
        with driver.kernel_timing() as inner:
            s = b.sum()
    assert [r[0] for r in inner] and all("reduce" in r[0].lower() or "sum" in r[0].lower() for r in inner), inner
    assert "Add" in outer[0][0] and outer[1:] == inner
    assert all(0 < k <= launch for _, k, launch in outer)
    assert s.item() == 16.0
    assert getattr(driver._local, "kernel_log", None) is None


def test_emulation_dry_launches_check_and_pack_but_run_nothing(cuda):
    from tensorlab.backends.cuda.active import driver
    if getattr(driver, "name", "") != "emulation":
        pytest.skip("a real GPU: dry launches are the emulation driver's")
    a = tl.ones(8, device="cuda")
    out = a + a  # compiled, run for real: 2.0 everywhere
    with driver.kernel_timing(dry=True) as log:
        out.add_(a)  # a launch that would make it 3.0
        with driver.kernel_timing() as inner:  # a nested plain record inherits nothing: kernels run
            out.mul_(2.0)
    assert [r[1] for r in log] == [0.0, pytest.approx(inner[0][1])] and inner[0][1] > 0
    assert all(launch > 0 for _, _, launch in log)
    assert out.tolist() == [4.0] * 8  # the dry add_ never ran, the nested mul_ did
    from tensorlab.backends.cuda import launch as K
    source, expr = next(k for k in K.LAUNCHES if k[0] == "elementwise.cu" and "Mul" in k[1])
    with driver.kernel_timing(dry=True):
        with pytest.raises(TypeError, match="arguments, got 1"):  # argument checks still run
            K.launch(source, expr, 0, (np.float32(1.0),), n=8)


def test_cuda_overhead_rows_time_dry_launches(cuda):
    rows = overhead.measure("cuda:0", ["add", "sum"], rounds=2, number=3, baselines=[])
    for r in rows:
        assert r["error"] is None and r["impl"] == "tensorlab"
        assert r["target_s"] == overhead.TARGETS["cuda"][r["workload"]]
        assert "kernel_s" not in r
        if tl.cuda.is_available():
            assert "launch_s" not in r
            continue
        assert r["emulated"] and 0 < r["launch_s"] < r["median_s"]
        assert r["front_s"] == pytest.approx(r["median_s"] - r["launch_s"])
    text = report.overhead_table(rows)
    assert "emu launch()" in text or tl.cuda.is_available()


# -- when not to trust a number (bench/stability.py) ------------------------------------------------------
def test_the_run_says_the_load_and_identifies_machine_and_code(run):
    proc, _, doc = run
    assert "load: " in proc.stdout and "usable CPU" in proc.stdout
    load = doc["load"]
    assert load["cpus"] >= 1 and isinstance(load["busy"], bool)
    m = doc["machine"]
    assert m["cpu_model"] and m["commit"] and len(m["commit"]) == 40 and m["dirty"] in (True, False)
    for r in doc["results"]:
        assert isinstance(r["unstable"], list)
        assert set(r["unstable"]) <= {"spread", "oversubscribed", "busy"}
        for b in r.get("unreliable_ratios", ()):
            assert b in r["ratios"] and f"{r['ratios'][b]:.2f}x?" in proc.stdout


def test_marks_and_unreliable_ratios():
    from tensorlab.bench import stability
    calm = {"cpus": 4, "loadavg_1m": 1.0, "steal_pct": 0.0, "busy": False}
    spread = _rec("cpu", "add", 1024, "torch", 1e-5, iqr_s=5e-6, threads=1)
    tight = _rec("cpu", "add", 1024, "tensorlab", 1e-5, iqr_s=1e-6, threads=2, ratios={"torch": 1.0, "numpy": 2.0})
    numpy_row = _rec("cpu", "add", 1024, "numpy", 2e-5, iqr_s=1e-6, threads=1)
    stability.annotate([spread, tight, numpy_row], calm, lambda r: (r["device"], r["workload"], r["size"]))
    assert spread["unstable"] == ["spread"] and tight["unstable"] == [] and numpy_row["unstable"] == []
    assert tight["unreliable_ratios"] == ["torch"]  # its torch partner is marked, its numpy partner is not
    assert stability.ratio_text(tight, "torch") == "1.00x?" and stability.ratio_text(tight, "numpy") == "2.00x"
    loaded = dict(calm, loadavg_1m=4.0)  # three CPUs busy with other work: one left
    assert stability.marks(_rec("cpu", "add", 1024, "torch", 1e-5, iqr_s=0.0, threads=2), loaded) == [
        "oversubscribed"]
    assert stability.marks(_rec("cpu", "add", 1024, "torch", 1e-5, iqr_s=0.0, threads=2),
                           dict(calm, busy=True)) == ["busy"]
    assert stability.marks(_rec("cuda:0", "add", 1024, "torch", 1e-5, iqr_s=0.0, threads=None),
                           dict(calm, busy=True)) == []
    assert "BUSY" in stability.load_text(dict(calm, busy=True)) and "BUSY" not in stability.load_text(calm)


def test_compare_with_an_earlier_run(run, tmp_path, capsys):
    from tensorlab.bench import stability
    _, out, doc = run
    old = json.loads(json.dumps(doc))
    for r in old["results"]:  # the earlier run: tensorlab's add twice as slow, everything else the same
        if r["impl"] == "tensorlab" and r["workload"] == "add" and r.get("median_s"):
            r["median_s"] *= 2
            r["iqr_s"] = 0.0
            r["unstable"] = []
    rows = stability.compare(old, doc)
    assert rows and all(r["verdict"] in ("slower", "faster", "same", "unreliable") for r in rows)
    adds = [r for r in rows if r["impl"] == "tensorlab" and r["workload"] == "add"]
    assert adds and all(r["change"] == pytest.approx(0.5) for r in adds)
    assert all(r["verdict"] in ("faster", "unreliable") for r in adds)
    assert [r for r in rows if r["impl"] != "tensorlab"] and all(
        r["change"] == pytest.approx(1.0) for r in rows if r["impl"] != "tensorlab")
    text = report.compare_table(rows, "old.json")
    assert "new/old" in text and "0.50x" in text and "against old.json" in text
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    assert cli.main(COMMAND + ["--workloads", "add", "--baselines", "none", "--no-overhead", "--no-plot",
                               "--out", str(tmp_path / "o"), "--compare", str(path)]) == 0
    assert "against " + str(path) in capsys.readouterr().out
    with pytest.raises(SystemExit, match="cannot read"):
        cli.main(COMMAND + ["--compare", str(tmp_path / "missing.json")])


def test_16_bit_rows_with_dtype(tmp_path, capsys):
    """--dtype float16,bfloat16: add/sum/matmul rows on 16-bit data, every implementation checked against the
    float64 reference of the rounded inputs before it is timed (CuPy sits out bfloat16)."""
    assert cli.main(COMMAND + ["--workloads", "add,sum,matmul", "--dtype", "float16,bfloat16", "--no-overhead",
                               "--no-plot", "--out", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / report.JSON_NAME).read_text())
    rows = [r for r in doc["results"] if r["dtype"] in ("float16", "bfloat16")]
    names = {r["workload"] for r in rows}
    assert names == {"add_f16", "sum_f16", "matmul_f16", "add_bf16", "sum_bf16", "matmul_bf16"}
    assert all(r["error"] is None for r in rows), [(r["workload"], r["impl"], r["error"]) for r in rows if r["error"]]
    assert not any(r["impl"] == "cupy" and r["dtype"] == "bfloat16" for r in rows)
    out = capsys.readouterr().out
    assert "matmul_bf16" in out and "n=8" in out
    w = suite.WORKLOADS["add_bf16"]
    h = w.inputs(16, np.random.default_rng(0))
    assert h["a"].dtype.name == "bfloat16" and w.title.endswith("bfloat16")
    with pytest.raises(SystemExit):
        cli.main(COMMAND + ["--dtype", "float8"])
