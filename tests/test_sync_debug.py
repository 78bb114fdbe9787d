"""Host/device synchronization: every sync names its reason; the per-thread sync debug mode
(default / warn / error, also 0 / 1 / 2, also as a context manager) and sync_trace, which records
reason, the caller's file:line, the device and the time the host was blocked. CUDA parts run on
a real GPU or on the emulation driver (TENSORLAB_CUDA_EMULATION=1); CPU parts run everywhere."""
from __future__ import annotations

import inspect
import os
import threading
import warnings

import numpy as np
import pytest

import tensorlab as tl


def _line():
    """The line number of the caller's next line: where the sync under test is written."""
    return inspect.currentframe().f_back.f_lineno + 1


@pytest.fixture(autouse=True)
def _mode_reset():
    yield
    tl.cuda.set_sync_debug_mode(0)


# -- the mode itself (no device needed) ---------------------------------------------------------------
@pytest.mark.parametrize("arg, want", [("default", 0), ("warn", 1), ("error", 2), (0, 0), (1, 1), (2, 2)])
def test_set_and_get_mode_accept_names_and_ints(arg, want):
    tl.cuda.set_sync_debug_mode(arg)
    assert tl.cuda.get_sync_debug_mode() == want


@pytest.mark.parametrize("bad", ["warning", "", "ERROR", 3, -1])
def test_invalid_mode_is_refused_and_the_mode_kept(bad):
    tl.cuda.set_sync_debug_mode("warn")
    with pytest.raises(RuntimeError, match="invalid value of debug_mode"):
        tl.cuda.set_sync_debug_mode(bad)
    assert tl.cuda.get_sync_debug_mode() == 1


@pytest.mark.parametrize("bad", [None, 1.0, True, ["warn"]])
def test_mode_of_the_wrong_type_is_a_type_error(bad):
    with pytest.raises(TypeError, match="debug_mode must be a str or an int"):
        tl.cuda.set_sync_debug_mode(bad)


def test_mode_as_context_manager_restores_the_previous_mode_even_on_error():
    tl.cuda.set_sync_debug_mode("warn")
    with tl.cuda.set_sync_debug_mode("error") as m:
        assert tl.cuda.get_sync_debug_mode() == 2
        assert "'error'" in repr(m) and "'warn'" in repr(m)
        with tl.cuda.set_sync_debug_mode(0):
            assert tl.cuda.get_sync_debug_mode() == 0
        assert tl.cuda.get_sync_debug_mode() == 2
    assert tl.cuda.get_sync_debug_mode() == 1
    with pytest.raises(KeyError):
        with tl.cuda.set_sync_debug_mode("error"):
            raise KeyError("boom")
    assert tl.cuda.get_sync_debug_mode() == 1


def test_mode_is_per_thread():
    tl.cuda.set_sync_debug_mode("error")
    seen = []

    def other():
        seen.append(tl.cuda.get_sync_debug_mode())
        tl.cuda.set_sync_debug_mode("warn")
        seen.append(tl.cuda.get_sync_debug_mode())

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [0, 1]
    assert tl.cuda.get_sync_debug_mode() == 2


def test_cpu_never_syncs_and_nothing_is_recorded():
    x = tl.tensor([[1.0, -2.0], [0.0, 4.0]])
    with tl.cuda.set_sync_debug_mode("error"), tl.cuda.sync_trace() as trace:
        x.sum().item()
        x.tolist()
        bool(x[0, 0])
        float(x[1, 1])
        repr(x)
        tl.nonzero(x)
        x[x > 0]
        tl.masked_select(x, x > 0)
        x.cpu()
        x.numpy()
        x.to(tl.float64)
    assert list(trace) == []
    assert trace.total_ms == 0
    assert trace.summary() == "no host/device synchronizations"


# -- on a CUDA device (real or emulated) --------------------------------------------------------------
def test_error_mode_raises_before_waiting_naming_reason_and_call_site(cuda):
    x = tl.tensor([1.5, 2.5], device=cuda)
    with tl.cuda.set_sync_debug_mode("error"):
        line = _line()
        with pytest.raises(RuntimeError, match="called a synchronizing CUDA operation: item") as e:
            x[0].item()
    assert f"{os.path.basename(__file__)}:{line + 1}" in str(e.value)
    assert x[0].item() == 1.5  # outside the block the default mode is back


def test_warn_mode_warns_once_per_sync_with_the_users_line(cuda):
    x = tl.tensor([3, 4], device=cuda)
    with tl.cuda.set_sync_debug_mode("warn"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        line = _line()
        v = x.tolist()
    assert v == [3, 4]
    msgs = [str(m.message) for m in w if issubclass(m.category, UserWarning)]
    assert len(msgs) == 1 and "called a synchronizing CUDA operation: tolist" in msgs[0]
    assert w[0].filename == __file__ and w[0].lineno == line
    assert f"{os.path.basename(__file__)}:{line}" in msgs[0]


def test_default_mode_is_silent(cuda):
    x = tl.tensor([1.0], device=cuda)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.item() == 1.0


def test_debug_mode_of_one_thread_does_not_reach_another(cuda):
    x = tl.tensor([7], device=cuda)
    out = []
    with tl.cuda.set_sync_debug_mode("error"):
        t = threading.Thread(target=lambda: out.append(x.item()))
        t.start()
        t.join()
        with pytest.raises(RuntimeError):
            x.item()
    assert out == [7]


def _reasons_of(fn):
    with tl.cuda.sync_trace() as trace:
        fn()
    return trace.reasons()


@pytest.mark.parametrize("op, reason", [
    (lambda x, m: x[0].item(), "item"),
    (lambda x, m: x.tolist(), "tolist"),
    (lambda x, m: bool(x[0]), "bool"),
    (lambda x, m: bool(m[1]), "bool"),
    (lambda x, m: float(x[1]), "float"),
    (lambda x, m: int(x[1]), "int"),
    (lambda x, m: [10, 20, 30][x.long()[0]], "index"),
    (lambda x, m: repr(x), "repr"),
    (lambda x, m: x.cpu(), "copy to cpu"),
    (lambda x, m: x.to("cpu", non_blocking=False), "copy to cpu"),
    (lambda x, m: np.asarray(x), "copy to cpu"),
    (lambda x, m: x.untyped_storage().tolist(), "tolist"),
])
def test_each_sync_point_names_its_reason_once(cuda, op, reason):
    x = tl.tensor([1.0, -2.0, 3.0], device=cuda)
    m = tl.tensor([True, False, True], device=cuda)
    assert _reasons_of(lambda: op(x, m)) == [reason]


@pytest.mark.parametrize("op, reason", [
    (lambda x, m: tl.nonzero(x), "nonzero"),
    (lambda x, m: tl.masked_select(x, m), "masked_select"),
    (lambda x, m: x[m], "boolean mask indexing"),
    (lambda x, m: x[m[0]], "boolean mask indexing"),
    (lambda x, m: x[tl.ones((), dtype=tl.int64, device="cuda")], "integer tensor index"),
])
def test_data_dependent_shapes_name_their_sync(cuda, op, reason):
    x = tl.tensor([1.0, -2.0, 3.0], device=cuda)
    m = tl.tensor([True, False, True], device=cuda)
    # one sync each: mask-derived indices are in range by construction, so boolean indexing
    # skips the index primitive's bounds check (and its sync)
    assert _reasons_of(lambda: op(x, m)) == [reason]


@pytest.mark.parametrize("write", [
    lambda x, m: x.__setitem__(m, 0.0),
    lambda x, m: x.__setitem__(m, tl.full((2,), 7.0, device=x.device)),
    lambda x, m: x.index_put_((m,), tl.ones((), device=x.device), accumulate=True),
])
def test_mask_writes_sync_once(cuda, write):
    x = tl.tensor([1.0, -2.0, 3.0], device=cuda)
    m = tl.tensor([True, False, True], device=cuda)
    assert _reasons_of(lambda: write(x, m)) == ["boolean mask indexing"]


def test_integer_index_tensors_are_checked_on_the_device(cuda):
    x = tl.tensor([1.0, -2.0, 3.0], device=cuda)
    i = tl.tensor([2, 0], device=cuda)
    assert _reasons_of(lambda: x[i]) == []
    j = tl.tensor([0, 3], device=cuda)
    assert _reasons_of(lambda: x[j]) == []  # launched; the device finds the bad index
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        tl.cuda.synchronize()


def test_async_work_records_nothing(cuda):
    x = tl.tensor([1.0, -2.0, 3.0], device=cuda)
    with tl.cuda.sync_trace() as trace:
        y = x.to(tl.float64).t()
        z = x[1:].clone()
        z.fill_(5.0)
        w = tl.zeros(4, device=cuda)
        w[1:3] = x[:2]
        tl.arange(10, device=cuda)
    assert list(trace) == []
    assert y.tolist() == [1.0, -2.0, 3.0] and z.tolist() == [5.0, 5.0] and w.tolist() == [0.0, 1.0, -2.0, 0.0]


def test_trace_records_file_line_device_and_blocked_time(cuda):
    x = tl.tensor([1.0, 2.0], device=cuda)
    with tl.cuda.sync_trace() as trace:
        line = _line()
        x[1].item()
        tl.cuda.synchronize()
    assert len(trace) == 2
    r = trace[0]
    assert (r.reason, r.file, r.line, r.explicit) == ("item", __file__, line, False)
    assert r.device == tl.device("cuda", tl.cuda.current_device())
    assert r.blocked_ms >= 0.0 and r.thread == threading.current_thread().name
    assert trace[1].reason == "synchronize" and trace[1].explicit and trace[1].line == line + 1
    assert trace.total_ms == pytest.approx(r.blocked_ms + trace[1].blocked_ms)
    text = trace.summary()
    assert "2 host/device synchronizations" in text and f"{os.path.basename(__file__)}:{line}" in text
    assert "item" in text and "synchronize (explicit)" in text
    assert str(trace) == text and "SyncRecord" in repr(trace)


def test_summary_groups_repeated_syncs_at_one_line(cuda):
    x = tl.tensor([1.0, 2.0], device=cuda)
    with tl.cuda.sync_trace() as trace:
        for _ in range(3):
            x[0].item()
    assert len(trace) == 3 and len({(r.file, r.line) for r in trace}) == 1
    assert "   3x" in trace.summary()


def test_explicit_waits_are_traced_but_never_refused(cuda):
    s = tl.cuda.Stream()
    e = tl.cuda.Event()
    with tl.cuda.set_sync_debug_mode("error"), tl.cuda.sync_trace() as trace:
        tl.cuda.synchronize()
        s.synchronize()
        e.synchronize()  # never recorded: nothing to wait for, nothing recorded
        e.record()
        e.synchronize()
    assert trace.reasons() == ["synchronize", "Stream.synchronize", "Event.synchronize"]
    assert all(r.explicit for r in trace)


def test_trace_listens_to_its_own_thread_unless_asked(cuda):
    x = tl.tensor([1.0], device=cuda)

    def run():
        t = threading.Thread(target=x.item, name="worker")
        t.start()
        t.join()

    with tl.cuda.sync_trace() as mine:
        run()
    with tl.cuda.sync_trace(all_threads=True) as every:
        run()
    assert list(mine) == []
    assert [(r.reason, r.thread) for r in every] == [("item", "worker")]


def test_nested_traces_both_record(cuda):
    x = tl.tensor([1.0], device=cuda)
    with tl.cuda.sync_trace() as outer:
        x.item()
        with tl.cuda.sync_trace() as inner:
            x.tolist()
    assert outer.reasons() == ["item", "tolist"] and inner.reasons() == ["tolist"]


def test_non_blocking_copy_from_pinned_memory_does_not_sync(cuda):
    src = tl.arange(1000, dtype=tl.float32).pin_memory()
    with tl.cuda.set_sync_debug_mode("error"), tl.cuda.sync_trace() as trace:
        dev = src.to(cuda, non_blocking=True)
    assert list(trace) == []
    tl.cuda.synchronize()
    assert dev.cpu().tolist() == list(range(1000))


@pytest.mark.parametrize("pin", [False, True], ids=["pageable", "pinned"])
def test_blocking_upload_is_a_named_sync(cuda, pin):
    # torch's memcpy_and_sync: a non_blocking=False upload waits for the stream, and the debug
    # mode flags it, from pageable and from pinned memory alike
    src = tl.arange(10, dtype=tl.float32)
    src = src.pin_memory() if pin else src
    assert _reasons_of(lambda: src.to(cuda)) == ["copy to cuda"]
    assert _reasons_of(lambda: tl.tensor([1.0, 2.0], device=cuda)) == ["copy to cuda"]
    with tl.cuda.set_sync_debug_mode("error"), pytest.raises(RuntimeError, match="copy to cuda"):
        src.to(cuda)


def test_non_blocking_pageable_upload_never_waits(cuda):
    src = tl.arange(10, dtype=tl.float32)
    with tl.cuda.set_sync_debug_mode("error"):
        dev = src.to(cuda, non_blocking=True)
    assert dev.tolist() == list(range(10))


@pytest.mark.parametrize("dtype", [tl.float32, tl.float64])
def test_non_blocking_to_cpu_lands_in_pinned_memory_without_a_sync(cuda, dtype):
    # torch's _to_copy pins the output of an asynchronous download; a dtype change happens on the device
    x = tl.arange(0, 64, dtype=tl.float32, device=cuda)
    with tl.cuda.set_sync_debug_mode("error"), tl.cuda.sync_trace() as trace:
        y = x.to("cpu", dtype, non_blocking=True)
    assert list(trace) == []
    assert y.device.type == "cpu" and y.is_pinned() and y.dtype is dtype and y.is_contiguous()
    tl.cuda.current_stream().synchronize()
    assert y.tolist() == [float(i) for i in range(64)]
    # a non-contiguous source keeps torch's strides and takes the synchronous path
    assert _reasons_of(lambda: x.view(8, 8).t().to("cpu", non_blocking=True)) == ["copy to cpu"]


def test_non_blocking_download_into_pinned_memory_waits_only_when_asked(cuda):
    x = tl.arange(0, 128, 2, dtype=tl.float32, device=cuda)
    dst = tl.empty(64, dtype=tl.float32).pin_memory()
    with tl.cuda.set_sync_debug_mode("error"), tl.cuda.sync_trace() as trace:
        dst.copy_(x, non_blocking=True)
    assert list(trace) == []
    tl.cuda.current_stream().synchronize()
    assert dst.tolist() == [2.0 * i for i in range(64)]
    # into pageable memory, non_blocking cannot be honoured: a named sync
    assert _reasons_of(lambda: tl.empty(64).copy_(x, non_blocking=True)) == ["copy to cpu"]
