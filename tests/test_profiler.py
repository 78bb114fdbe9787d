"""tl.profiler: a known program gives exactly the expected records, nesting, counts and pitfalls on
every device; exceptions leave a valid profile; threads keep their records apart; the Chrome trace
follows the trace-event format; the pitfall rules on constructed timelines."""
import gc
import json
import os
import threading
import time

import pytest

import tensorlab as tl
from tensorlab import autograd_hooks
from tensorlab.profiler import ProfilerActivity, profile, record_function
from tensorlab.profiler import _records as R
from tensorlab.profiler import pitfalls as P

HERE = os.path.basename(__file__)


def _line(marker):
    with open(__file__) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith(f"# {marker}") and "def _line" not in text:
                return i
    raise AssertionError(marker)


def _known_program(dev):
    x = tl.ones(4, 3, device=dev)
    host = tl.arange(12.0).reshape(4, 3)  # pageable host memory
    # garbage from earlier tests (reference cycles holding device buffers) collected now, not by a collection
    # inside the profiled region: its frees would change the pool between the recorded events
    gc.collect()
    gc.disable()
    try:
        with profile(record_shapes=True, with_stack=True) as prof:
            with record_function("step"):
                y = x * 2  # MUL
                for _ in range(3):
                    y.sum().item()  # ITEM
                w = host.to(dev)  # COPY
    finally:
        gc.enable()
    return prof, w


def test_known_program_records(device):
    prof, w = _known_program(device)
    mul, item, copy = _line("MUL"), _line("ITEM"), _line("COPY")
    ops = prof.ops
    (step,) = prof.ranges
    assert step.name == "step" and step.end >= step.start
    if device == "cpu":
        # on the CPU .item() does not wait and .to("cpu") returns the tensor itself: no records for them
        assert [o.name for o in ops] == ["mul", "sum", "sum", "sum"]
        assert prof.kernels == [] and prof.copies == [] and prof.waits == []
    else:
        assert [o.name for o in ops] == ["mul", "sum", "item", "sum", "item", "sum", "item", "to"]
        assert [o.derived for o in ops] == [False, False, True, False, True, False, True, False]
    assert all(o.parent == step.id for o in ops)
    assert all(step.start <= o.start <= o.end <= step.end for o in ops)
    assert [o.where for o in ops] == [f"{HERE}:{mul}"] + [f"{HERE}:{item}"] * (len(ops) - 1 - (device != "cpu")) + (
        [f"{HERE}:{copy}"] if device != "cpu" else [])
    assert ops[0].shapes == [[4, 3]] and ops[0].dtypes == ["float32"] and ops[0].devices == ["cpu" if device == "cpu" else "cuda:0"]
    sums = [o for o in ops if o.name == "sum"]
    assert all(o.shapes == [[4, 3]] for o in sums)
    # memory: the output of mul (48 bytes) and of each sum (4 bytes), with the pool's state after each
    allocs = [m for m in prof.memory_records if m.nbytes > 0]
    assert [m.nbytes for m in allocs][:4] == [48, 4, 4, 4]
    assert [m.op for m in allocs][:4] == [ops[0].id] + [o.id for o in sums]
    devname = "cpu" if device == "cpu" else "cuda:0"
    assert all(m.device == devname for m in allocs[:4])
    recs = [m for m in prof.memory_records if m.device == devname]
    # a CUDA pool counts whole 512-byte blocks (CuPy's and torch's allocators; the emulation too)
    block = (lambda n: n) if device == "cpu" else (lambda n: (1 if n > 0 else -1) * (-(-abs(n) // 512) * 512))
    for a, b in zip(recs, recs[1:]):
        assert b.allocated - a.allocated == block(b.nbytes)  # every change of the pool is one recorded event
        assert b.peak >= b.allocated
    if device == "cpu":
        return
    # kernels: one per mul and sum, attributed to the op that launched it, with device times
    ks = prof.kernels
    assert [k.op for k in ks] == [ops[0].id] + [o.id for o in sums]
    assert ks[0].name.startswith("binary_vec<tl::op::Mul, float") and ks[1].name.startswith("reduce_kernel<tl::Sum")
    assert all(k.dev_start is not None and k.dev_end >= k.dev_start and len(k.grid) == 1 for k in ks)
    assert all(k.block == (256,) for k in ks)
    # copies: three 4-byte reads for item() and the 48-byte upload, all from/to pageable memory, blocking
    cs = prof.copies
    assert [(c.direction, c.nbytes, c.pinned, c.blocking) for c in cs] == [("DtoH", 4, False, True)] * 3 + [
        ("HtoD", 48, False, True)]
    assert [c.op for c in cs] == [o.id for o in ops if o.name in ("item", "to")]
    assert cs[3].name == "Memcpy HtoD (Pageable -> Device)"
    # host waits: named, at the user's line, on the same clock, pointing at the work they waited for
    ws = prof.waits
    assert [(wt.reason, wt.line, wt.explicit) for wt in ws] == [("item", item, False)] * 3 + [
        ("copy to cuda", copy, False)]
    assert [wt.target for wt in ws] == [ks[1].id, ks[2].id, ks[3].id, cs[3].id]
    assert all(step.start <= wt.start <= wt.end <= step.end for wt in ws)
    assert w.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [6.0, 7.0, 8.0], [9.0, 10.0, 11.0]]


def test_known_program_pitfalls(device):
    prof, _ = _known_program(device)
    found = prof.pitfalls()
    if device == "cpu":
        assert list(found) == [] and str(found) == "no pitfalls found"
        return
    # launch-bound needs real device times: the emulation's kernels run inside the launch call
    got = sorted((p.kind, p.count, tuple(p.lines)) for p in found if p.kind != "launch-bound")
    assert got == [("host wait in a loop", 3, (f"{HERE}:{_line('ITEM')}",)),
                   ("pageable copy", 1, (f"{HERE}:{_line('COPY')}",))]
    text = str(found)
    assert "item" in text and "pin_memory" in text


def test_key_averages_table(device):
    prof, _ = _known_program(device)
    avg = prof.key_averages()
    rows = {r.key: r for r in avg}
    assert rows["sum"].count == 3 and rows["mul"].count == 1 and rows["step"].count == 1
    step = rows["step"]
    kids = sum(r.cpu_time_total for k, r in rows.items() if r.kind == "op")
    assert step.cpu_time_total >= kids
    assert step.self_cpu_time_total == pytest.approx(step.cpu_time_total - kids, abs=1e-3)
    table = avg.table(sort_by="cpu_time_total", row_limit=20)
    header = table.splitlines()[1]
    for col in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert col in header
    assert "Self CPU time total:" in table
    if device != "cpu":
        assert rows["Memcpy DtoH (Device -> Pageable)"].count == 3 and rows["item"].count == 3
        assert rows["sum"].device_time_total > 0
        dev_table = avg.table(sort_by="cuda_time_total", row_limit=3)
        assert "Self CUDA" in dev_table and "Self CUDA time total:" in dev_table
        # as torch: kernels and copies own the self device time, an op's device total is its kernels' sum
        assert rows["sum"].self_device_time_total == 0.0
        full = avg.table(row_limit=None).splitlines()
        col = full[1].index("Self CUDA %")
        pcts = [float(ln[:col + len("Self CUDA %")].split()[-1].rstrip("%")) for ln in full[3:]
                if ln and not ln.startswith(("-", "Self"))]
        assert sum(pcts) == pytest.approx(100.0, abs=0.05 * len(pcts))
        assert len([ln for ln in dev_table.splitlines()[3:] if not ln.startswith(("-", "Self"))]) == 3
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert {tuple(map(tuple, r.input_shapes)) for r in by_shape if r.key == "sum"} == {((4, 3),)}
    assert "Input Shapes" in by_shape.table()
    with pytest.raises(AttributeError, match="sort_by"):
        avg.table(sort_by="nonsense")


def test_no_shapes_no_stack(device):
    x = tl.ones(2, device=device)
    with profile() as prof:
        tl.zeros(3, device=device)
        x.add_(1)
    assert [o.name for o in prof.ops] == ["zeros", "add_"]
    assert all(o.shapes is None and o.where == "" for o in prof.ops)


def _validate_trace(doc):
    assert set(doc) >= {"traceEvents"}
    flows = {}
    for e in doc["traceEvents"]:
        ph = e["ph"]
        assert ph in ("X", "M", "C", "s", "f"), e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
        if ph == "M":
            assert e["name"] in ("process_name", "thread_name") and isinstance(e["args"]["name"], str)
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
        if ph == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0 and isinstance(e.get("cat", ""), str)
        elif ph == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values())
        else:
            assert isinstance(e["id"], int) and e["cat"]
            flows.setdefault((e["cat"], e["id"]), []).append((ph, e["ts"]))
            if ph == "f":
                assert e["bp"] == "e"
    assert all(sorted(p for p, _ in v) == ["f", "s"] for v in flows.values())  # every arrow has both ends
    for key, ends in flows.items():  # and runs forward in time: launch -> kernel, work's end -> wait's end
        t = dict(ends)
        assert t["f"] >= t["s"], (key, t)
    return flows


def test_chrome_trace(device, tmp_path):
    prof, _ = _known_program(device)
    path = tmp_path / "trace.json"
    assert prof.export_chrome_trace(str(path)) == str(path)
    doc = json.loads(path.read_text())
    flows = _validate_trace(doc)
    evs = doc["traceEvents"]
    ops = [e for e in evs if e.get("cat") == "cpu_op"]
    assert [e["name"] for e in ops] == [o.name for o in prof.ops]
    assert ops[0]["args"]["Input Dims"] == [[4, 3]]
    assert [e["name"] for e in evs if e.get("cat") == "user_annotation"] == ["step"]
    counters = [e for e in evs if e["ph"] == "C"]
    assert len(counters) == len(prof.memory_records)
    if device == "cpu":
        assert flows == {}
        return
    kernels = [e for e in evs if e.get("cat") == "kernel"]
    copies = [e for e in evs if e.get("cat") == "gpu_memcpy"]
    assert len(kernels) == len(prof.kernels) and len(copies) == 4
    assert len({(e["pid"], e["tid"]) for e in kernels + copies}) == 1  # one stream track
    assert sum(1 for c, _ in flows if c == "ac2g") == 8 and sum(1 for c, _ in flows if c == "wait") == 4
    assert len([e for e in evs if e.get("cat") == "sync"]) == 4


def test_exception_leaves_valid_profile(device, tmp_path):
    a, b = tl.ones(2, device=device), tl.ones(3, device=device)
    with pytest.raises(RuntimeError):
        with profile() as prof:
            with record_function("bad"):
                c = a * 3
                a + b
    assert autograd_hooks.profiler is None and not autograd_hooks._slow
    assert [o.name for o in prof.ops] == ["mul"]
    (rg,) = prof.ranges
    assert rg.end is not None and rg.end >= prof.ops[0].end
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    _validate_trace(json.loads((tmp_path / "t.json").read_text()))
    assert "mul" in prof.key_averages().table()
    with profile() as again:  # the next profile starts clean
        c - 1
    assert [o.name for o in again.ops] == ["sub"]


def test_threads_keep_records_apart(device):
    barrier = threading.Barrier(2)
    results = {}

    def work(name, fn):
        x = tl.ones(8, device=device)
        barrier.wait()
        with profile() as prof:
            for _ in range(20):
                fn(x)
        results[name] = prof

    ts = [threading.Thread(target=work, args=("a", lambda x: x * 2), name="prof-a"),
          threading.Thread(target=work, args=("b", lambda x: x - 1), name="prof-b")]
    for t in ts:
        t.start()
    with profile() as main:  # the main thread's own profile sees none of theirs
        for t in ts:
            t.join()
    assert [o.name for o in results["a"].ops] == ["mul"] * 20
    assert [o.name for o in results["b"].ops] == ["sub"] * 20
    assert {o.thread for o in results["a"].ops} == {"prof-a"}
    assert main.ops == []
    if device != "cpu":
        assert [k.op for k in results["a"].kernels] == [o.id for o in results["a"].ops]
        assert all(k.name.startswith("binary_vec<tl::op::Sub") or "Sub" in k.name for k in results["b"].kernels)


def test_profiles_do_not_nest_and_off_restores(device):
    clocks = {n: getattr(time, n) for n in ("perf_counter", "time", "monotonic", "perf_counter_ns")}
    with profile():
        assert time.perf_counter is not clocks["perf_counter"]  # wrapped while open
        with pytest.raises(RuntimeError, match="already enabled on this thread"):
            with profile():
                pass
    assert autograd_hooks.profiler is None and not autograd_hooks._slow
    assert all(getattr(time, n) is fn for n, fn in clocks.items())
    if device != "cpu":
        from tensorlab.backends.cuda.active import driver
        assert not {"launch", "malloc", "memcpy_htod"} & set(getattr(driver, "__dict__", {}))
    with pytest.raises(RuntimeError, match="still recording"):
        with profile() as p:
            p.key_averages()
    with pytest.raises(TypeError):
        profile(activities=["CPU"])


def test_cpu_activity_only_and_record_function_decorator(device):
    @record_function("helper")
    def helper(x):
        return x + 1

    x = tl.ones(2, device=device)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        helper(x)
    assert [r.name for r in prof.ranges] == ["helper"] and [o.name for o in prof.ops] == ["add"]
    assert prof.ops[0].parent == prof.ranges[0].id
    assert prof.kernels == [] and prof.copies == []  # CUDA activity off: no device records


def test_training_step_backward(device):
    lin = tl.nn.Linear(3, 2).to(device)
    x = tl.ones(4, 3, device=device)
    with profile() as prof:
        with record_function("forward"):
            loss = lin(x).sum()
        with record_function("backward"):
            loss.backward()
    fwd, bwd = prof.ranges
    in_fwd = [o.name for o in prof.ops if o.parent == fwd.id]
    in_bwd = [o.name for o in prof.ops if o.parent == bwd.id]
    assert in_fwd and in_fwd[-1] == "sum" and in_bwd
    assert lin.weight.grad is not None


# -- the pitfall rules on constructed timelines (device times are what a real GPU would give) ------
def _kernel(i, start, dur_dev, launch_cost, op=None, stream=7):
    k = R.Kernel(i, f"k{i}", (1,), (256,), 0, stream, start, start + launch_cost, None, "train.py", 10 + i)
    k.dev_start, k.dev_end, k.op = start + 1e-6, start + 1e-6 + dur_dev, op
    return k


def test_launch_bound_rule():
    us = 1e-6
    ks = [_kernel(i, i * 12 * us, 2 * us, 10 * us) for i in range(5)]  # 2 us kernels, a launch every 12 us
    (p,) = P.launch_bound(ks, {})
    assert p.kind == "launch-bound" and p.count == 5 and p.lines[:2] == ["train.py:10", "train.py:11"]
    # one long kernel in the middle breaks the stretch into two runs too short to report
    long = _kernel(2, 24 * us, 500 * us, 10 * us)
    ks2 = ks[:2] + [long] + [_kernel(i, 600 * us + i * 12 * us, 2 * us, 10 * us) for i in range(3, 5)]
    assert P.launch_bound(ks2, {}) == []
    # back-to-back kernels (no idle gap) are not launch-bound even when short
    busy = [_kernel(i, i * 2 * us, 2 * us, 10 * us) for i in range(6)]
    for i, k in enumerate(busy):
        k.dev_start, k.dev_end = i * 2 * us, (i + 1) * 2 * us
    assert P.launch_bound(busy, {}) == []


def test_host_clock_rule():
    k = _kernel(1, 0.5e-3, 2.5e-3, 1e-5)  # launched at 0.5 ms, done on the device at ~3 ms
    reads = [R.ClockRead(0.0, "perf_counter", "bench.py", 3), R.ClockRead(1e-3, "perf_counter", "bench.py", 5)]
    (p,) = P.host_clock_timing(reads, [k])
    assert p.kind == "host clock around async work" and p.lines == ["bench.py:3", "bench.py:5"]
    assert p.time_ms == pytest.approx(2.0, abs=0.01)
    k.dev_end = 0.9e-3  # finished before the second read: that measurement is right
    assert P.host_clock_timing(reads, [k]) == []


def test_allocator_churn_rule():
    mb = 1 << 20
    mems = [R.Mem(i, "cuda:0", mb, a, r, a, "train.py", 20) for i, (a, r) in enumerate(
        [(mb, 2 * mb), (mb, 2 * mb), (mb, mb), (8 * mb, 8 * mb), (mb, 8 * mb), (mb, 8 * mb)])]
    found = P.allocator_churn(mems, [R.EmptyCache(4.2, "train.py", 30), R.EmptyCache(4.6, "train.py", 30)])
    kinds = [(p.count, p.detail.split(" ")[0]) for p in found]
    assert kinds == [(2, "empty_cache()"), (1, "the"), (1, "peak")]
    assert found[0].lines == ["train.py:30"]
    # the shrink between t=1 and t=2 made by an empty_cache() call: that call's pitfall only (a real pool
    # regrows at the next allocation; on an H200 the rule reported the same churn twice)
    found = P.allocator_churn(mems, [R.EmptyCache(1.5, "train.py", 30)])
    assert [(p.count, p.detail.split(" ")[0]) for p in found] == [(1, "empty_cache()"), (1, "peak")]


def test_waits_rule_ignores_explicit_and_single():
    ws = [R.Wait(0, 1e-3, "item", tl.device("cpu"), False, "a.py", 1, None),
          R.Wait(0, 1e-3, "synchronize", tl.device("cpu"), True, "a.py", 2, None),
          R.Wait(0, 1e-3, "synchronize", tl.device("cpu"), True, "a.py", 2, None),
          R.Wait(0, 2e-3, "tolist", tl.device("cpu"), False, "a.py", 3, None),
          R.Wait(0, 2e-3, "tolist", tl.device("cpu"), False, "a.py", 3, None)]
    (p,) = P.host_waits_in_loop(ws)
    assert (p.count, p.lines, round(p.time_ms, 6)) == (2, ["a.py:3"], 4.0)


def test_nvtx_ranges(device, monkeypatch):
    """On a real GPU with `nvtx` importable, record_function and each op's work are NVTX ranges (a
    stand-in module records the calls here); without CUDA activity nothing is emitted."""
    calls = []

    class FakeNvtx:
        @staticmethod
        def push_range(message=None):
            calls.append(("push", message))

        @staticmethod
        def pop_range():
            calls.append(("pop",))

    import sys
    monkeypatch.setattr(sys.modules["tensorlab.profiler.profile"], "_nvtx_module", lambda: FakeNvtx)
    x = tl.ones(3, device=device)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        with record_function("region"):
            y = x * 2
            x.add_(1)
    assert calls == [("push", "region"), ("push", "mul"), ("pop",), ("push", "add_"), ("pop",), ("pop",)]
    assert [o.name for o in prof.ops] == ["mul", "add_"] and y.tolist() == [2.0, 2.0, 2.0]
    calls.clear()
    with profile(activities=[ProfilerActivity.CPU]):
        with record_function("region"):
            x * 2
    assert calls == []


def test_schedule_cycles(device):
    from tensorlab.profiler import ProfilerAction, schedule
    fn = schedule(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    assert [fn(s).name for s in range(10)] == ["NONE", "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE",
                                               "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE"]
    assert fn(100) is ProfilerAction.NONE
    with pytest.raises(AssertionError, match="Invalid profiler schedule arguments"):
        schedule(wait=0, warmup=0, active=0)
    x = tl.ones(2, device=device)
    traces = []
    with profile(schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                 on_trace_ready=lambda p: traces.append([(o.name, o.shapes) for o in p.ops])) as prof:
        for k in range(6):
            x * (k + 1) if k % 2 else x - k  # steps 2 (sub) and 3 (mul) are recorded
            prof.step()
    assert traces == [[("sub", None), ("mul", None)]]


def test_host_clock_reads_are_noted(device):
    x = tl.ones(4, device=device)
    orig = time.perf_counter
    with profile() as prof:
        t0 = time.perf_counter()  # CLOCK0
        x * 2
        t1 = time.perf_counter()  # CLOCK1
    assert time.perf_counter is orig and t1 >= t0
    assert [(c.clock, c.line) for c in prof._rec.clocks] == [("perf_counter", _line("CLOCK0")),
                                                              ("perf_counter", _line("CLOCK1"))]
    # the work between them had finished by the second read (CPU; the emulation runs kernels in the call)
    assert "host clock around async work" not in prof.pitfalls().kinds()


def test_plot_timeline(device, tmp_path):
    prof, _ = _known_program(device)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="plot_timeline\\(\\) needs matplotlib"):
            prof.plot_timeline(str(tmp_path / "t.png"))
        return
    fig = prof.plot_timeline(str(tmp_path / "t.png"))
    assert (tmp_path / "t.png").stat().st_size > 0
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "host ops" in labels and (device == "cpu" or any(lb.startswith("cuda:0 stream") for lb in labels))


def test_ops_of_one_call_are_back_to_back_and_memory_columns(device, monkeypatch):
    from tensorlab.ops import linear_fused
    x, w, b = tl.ones(4, 3, device=device), tl.ones(2, 3, device=device), tl.ones(2, device=device)
    monkeypatch.setattr(linear_fused, "ENABLED", False)  # the composite: three ops of one call
    with profile(with_stack=True, profile_memory=True) as prof:
        tl.nn.functional.linear(x, w, b)  # LINEAR
    ops = prof.ops
    assert [o.name for o in ops] == ["transpose", "matmul", "add"]
    assert {o.where for o in ops} == {f"{HERE}:{_line('LINEAR')}"}
    for a, c in zip(ops, ops[1:]):  # one call: each op starts where the previous one ended
        assert c.start == a.end
    table = prof.key_averages().table()
    mem = "CPU Mem" if device == "cpu" else "CUDA Mem"
    assert mem in table and f"Self {mem}" in table
    row = next(ln for ln in table.splitlines() if ln.startswith("matmul"))
    assert "32 b" in row  # the 4x2 float32 output
    monkeypatch.setattr(linear_fused, "ENABLED", True)
    with profile() as plain:
        tl.nn.functional.linear(x, w, b)  # one op (ops/linear_fused.py)
    assert [o.name for o in plain.ops] == ["linear"]
    assert "Mem" not in plain.key_averages().table()  # profile_memory=False: torch's columns only


def test_pitfalls_printing_masks_pinned_and_empty_cache(device):
    y = tl.arange(6.0, device=device) - 2
    host = tl.ones(16)
    pinned = host.pin_memory() if device != "cpu" else host
    with profile(with_stack=True) as prof:
        for _ in range(2):
            repr(y)  # PRINT
            y[y > 0]  # MASK
            tl.cuda.empty_cache()  # EMPTY
        d = pinned.to(device, non_blocking=True)  # PINNED
    found = prof.pitfalls()
    if device == "cpu":
        # nothing waits on the CPU; empty_cache() is still a real call where CUDA can be used
        from tensorlab import backends
        cuda_usable = backends.cuda_emulated() or tl.cuda.is_available()
        assert found.kinds() == (["allocator churn"] if cuda_usable else [])
        return
    waits = sorted((p.detail.split("'")[1], p.count, p.lines[0]) for p in found if p.kind == "host wait in a loop")
    assert waits == [("boolean mask indexing", 2, f"{HERE}:{_line('MASK')}"), ("repr", 2, f"{HERE}:{_line('PRINT')}")]
    churn = [p for p in found if p.kind == "allocator churn"]
    assert [(p.count, p.lines) for p in churn] == [(2, [f"{HERE}:{_line('EMPTY')}"])]
    assert "pageable copy" not in found.kinds()  # the pinned upload is not one
    (up,) = [c for c in prof.copies if c.direction == "HtoD"]
    assert (up.pinned, up.blocking, up.nbytes) == (True, False, 64)
    assert [o.name for o in prof.ops if o.name == "repr" or o.name == "__repr__"] != []
    tl.cuda.synchronize()
    assert d.tolist() == [1.0] * 16


def test_cuda_activity_only_and_sync_trace_alongside(device):
    x = tl.ones(5, device=device)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        with tl.cuda.sync_trace() as trace:
            for _ in range(2):
                (x + 1).sum().item()
    assert prof.ops == [] and prof.ranges == []  # CPU activity off: no op rows
    assert [(w.reason, w.line) for w in prof.waits] == [(r.reason, r.line) for r in trace]
    if device == "cpu":
        assert prof.kernels == [] and len(trace) == 0
    else:
        assert len(trace) == 2 and [k.name.split("<")[0] for k in prof.kernels] == ["binary_vec", "reduce_kernel"] * 2
        assert all(k.dev_dur is not None for k in prof.kernels)


def test_events_in_order(device):
    prof, _ = _known_program(device)
    evs = prof.events()
    assert [e.key for e in evs] == ["step"] + [o.name for o in prof.ops]
    assert all(e.count == 1 for e in evs) and evs[1].input_shapes == [[4, 3]]
    assert [e.start_us for e in evs] == sorted(e.start_us for e in evs)
    assert "Input Shapes" in evs.table()


@pytest.mark.parametrize("call, names", [
    (lambda x, m: x.argmax(), ["argmax"]),
    (lambda x, m: x.argmin(1), ["argmin"]),
    (lambda x, m: x.nonzero(), ["nonzero"]),
    (lambda x, m: x.softmax(1), ["softmax"]),
    (lambda x, m: tl.cat([x, x]), ["cat"]),
    (lambda x, m: x.permute(1, 0), ["permute"]),
    (lambda x, m: x.masked_fill(m, 0), ["masked_fill"]),
    (lambda x, m: x.sort(1), ["sort"]),
    (lambda x, m: x.cumsum(1), ["cumsum"]),
    (lambda x, m: x.to(tl.float64), ["to"]),
])
def test_every_op_has_a_row(device, call, names):
    x = tl.arange(20.0, device=device).reshape(4, 5) - 7
    m = x > 0
    with profile() as prof:
        call(x, m)
    assert [o.name for o in prof.ops if not o.derived] == names


def _inner_step(x):
    return (x * 3).sum()  # INNER


def test_full_stack_os_thread_export_stacks_and_total(device, tmp_path):
    """with_stack records the whole user stack (torch's "file(line): function", innermost first); the
    Chrome trace's host tid is the OS thread id; export_stacks writes collapsed stacks; total_average
    sums the rows."""
    x = tl.ones(8, device=device)
    with profile(with_stack=True) as prof:
        _inner_step(x)  # OUTER
    mul = next(o for o in prof.ops if o.name == "mul")
    assert mul.stack[0] == f"{__file__}({_line('INNER')}): _inner_step"
    assert mul.stack[1] == f"{__file__}({_line('OUTER')}): test_full_stack_os_thread_export_stacks_and_total"
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    evs = json.loads(path.read_text())["traceEvents"]
    ops = [e for e in evs if e.get("cat") == "cpu_op"]
    assert {e["tid"] for e in ops} == {threading.get_native_id()}
    assert ops[0]["args"]["Call stack"].split(";")[:2] == mul.stack[:2]
    stacks = tmp_path / "stacks.txt"
    prof.export_stacks(str(stacks))
    lines = stacks.read_text().splitlines()
    assert lines and all(ln.rsplit(" ", 1)[1].isdigit() for ln in lines)
    frames = lines[0].rsplit(" ", 1)[0].split(";")
    assert frames[-1] in ("mul", "sum") and "_inner_step" in frames[-2]
    with pytest.raises(ValueError, match="metric"):
        prof.export_stacks(str(stacks), metric="wall")
    avg = prof.key_averages()
    total = avg.total_average()
    assert total.key == "Total" and total.count == sum(r.count for r in avg)
    assert total.self_cpu_time_total == pytest.approx(sum(r.self_cpu_time_total for r in avg))
    with profile() as plain:
        x.sum()
    with pytest.raises(RuntimeError, match="with_stack=True"):
        plain.export_stacks(str(stacks))
