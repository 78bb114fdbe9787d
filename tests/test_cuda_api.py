"""tl.cuda, the user API: devices, streams, events, memory statistics, seeding, pinned memory.
Runs on whatever driver is active - a real GPU, or the emulation driver with
TENSORLAB_CUDA_EMULATION=1 - and is skipped when there is neither. The last tests check the
behaviour without CUDA on every machine by hiding the backend."""
from __future__ import annotations

import threading

import pytest

import tensorlab as tl
from tensorlab import backends


# -- devices ------------------------------------------------------------------------------------------
def test_device_queries(cuda):
    n = tl.cuda.device_count()
    assert n >= 1
    cur = tl.cuda.current_device()
    assert 0 <= cur < n
    p = tl.cuda.get_device_properties()
    assert isinstance(p.name, str) and p.name == tl.cuda.get_device_name(cur) == tl.cuda.get_device_name("cuda")
    assert p.total_memory > 0 and p.multi_processor_count > 0 and p.warp_size > 0
    assert tl.cuda.get_device_capability(cur) == (p.major, p.minor)
    assert "_CudaDeviceProperties(name=" in repr(p)
    assert tl.cuda.get_device_properties(tl.device("cuda", cur)).name == p.name
    free, total = tl.cuda.mem_get_info()
    assert 0 <= free <= total


def test_is_available_matches_the_driver(cuda):
    emulated = backends.load_cuda().driver.name == "emulation"
    assert tl.cuda.is_available() is (not emulated)


def test_device_arguments_are_checked(cuda):
    n = tl.cuda.device_count()
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        tl.cuda.get_device_properties(n)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        tl.cuda.set_device(f"cuda:{n}")
    with pytest.raises(ValueError, match="Expected a cuda device, but got: cpu"):
        tl.cuda.get_device_name("cpu")
    with pytest.raises(TypeError):
        tl.cuda.current_stream(1.5)


def test_set_device_and_device_context(cuda):
    cur = tl.cuda.current_device()
    tl.cuda.set_device(-1)  # a negative index is a no-op, as torch
    assert tl.cuda.current_device() == cur
    last = tl.cuda.device_count() - 1
    with tl.cuda.device(last):
        assert tl.cuda.current_device() == last
        assert tl.empty(3, device="cuda").device == tl.device("cuda", last)
        with tl.cuda.device(None):
            assert tl.cuda.current_device() == last
    assert tl.cuda.current_device() == cur
    t = tl.zeros(2, device=f"cuda:{last}")
    with tl.cuda.device_of(t):
        assert tl.cuda.current_device() == last
    with tl.cuda.device_of(tl.zeros(2)):
        assert tl.cuda.current_device() == cur


def test_synchronize_accepts_every_device_spelling(cuda):
    x = tl.ones(1000, device=cuda)
    tl.cuda.synchronize()
    tl.cuda.synchronize(0)
    tl.cuda.synchronize("cuda:0")
    tl.cuda.synchronize(tl.device("cuda"))
    assert x.tolist() == [1.0] * 1000


# -- streams ------------------------------------------------------------------------------------------
def test_current_stream_is_the_default_until_a_stream_is_selected(cuda):
    d = tl.cuda.default_stream()
    assert tl.cuda.current_stream() == d
    assert hash(tl.cuda.current_stream()) == hash(d)
    assert d.device == tl.device("cuda", tl.cuda.current_device()) and d.device_type == "cuda"
    s = tl.cuda.Stream()
    assert s != d and s == s and len({s, d, tl.cuda.current_stream()}) == 2
    with tl.cuda.stream(s) as entered:
        assert entered is s
        assert tl.cuda.current_stream() == s
        assert tl.cuda.default_stream() == d
        with tl.cuda.stream(None):
            assert tl.cuda.current_stream() == s
    assert tl.cuda.current_stream() == d
    assert "tensorlab.cuda.Stream device=cuda:" in repr(s)
    assert isinstance(s.cuda_stream, int)


def test_current_stream_is_per_thread(cuda):
    s = tl.cuda.Stream()
    seen = []
    with tl.cuda.stream(s):
        t = threading.Thread(target=lambda: seen.append(tl.cuda.current_stream()))
        t.start()
        t.join()
        assert tl.cuda.current_stream() == s
    assert seen == [tl.cuda.default_stream()]


def test_stream_context_restores_even_on_error(cuda):
    s = tl.cuda.Stream()
    with pytest.raises(ZeroDivisionError):
        with tl.cuda.stream(s):
            1 / 0
    assert tl.cuda.current_stream() == tl.cuda.default_stream()
    with pytest.raises(TypeError):
        tl.cuda.stream("not a stream")


def test_set_stream_selects_the_stream(cuda):
    s = tl.cuda.Stream()
    try:
        tl.cuda.set_stream(s)
        assert tl.cuda.current_stream() == s
    finally:
        tl.cuda.set_stream(tl.cuda.default_stream())
    assert tl.cuda.current_stream() == tl.cuda.default_stream()


def test_stream_priority_and_work_on_a_side_stream(cuda):
    hi = tl.cuda.Stream(priority=-1)
    assert hi.priority <= 0
    assert tl.cuda.Stream().priority == 0
    with tl.cuda.stream(hi):
        x = tl.full((256,), 3.0, device=cuda)
        y = x.clone()
    tl.cuda.current_stream().wait_stream(hi)
    hi.synchronize()
    assert hi.query()
    assert y.tolist() == [3.0] * 256


def test_record_event_and_wait_event(cuda):
    s1, s2 = tl.cuda.Stream(), tl.cuda.Stream()
    with tl.cuda.stream(s1):
        x = tl.ones(1000, device=cuda)
    e = s1.record_event()
    assert isinstance(e, tl.cuda.Event) and e.device == tl.device("cuda", tl.cuda.current_device())
    s2.wait_event(e)
    with tl.cuda.stream(s2):
        y = x.to(tl.float64)
    s2.synchronize()
    assert e.query()
    assert y.tolist() == [1.0] * 1000
    e2 = tl.cuda.Event()
    assert s1.record_event(e2) is e2
    with pytest.raises(TypeError):
        s1.wait_event(s2)
    with pytest.raises(TypeError):
        s1.wait_stream(e)


# -- events -------------------------------------------------------------------------------------------
def test_event_timing(cuda):
    start, end = tl.cuda.Event(enable_timing=True), tl.cuda.Event(enable_timing=True)
    assert start.enable_timing and not start.blocking
    assert repr(start) == "<tensorlab.cuda.Event uninitialized>" and start.device is None
    assert start.query()  # never recorded: nothing pending
    x = tl.ones(1 << 16, device=cuda)
    start.record()
    for _ in range(5):
        x = x.clone()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float) and ms >= 0.0
    assert end.elapsed_time(start) == pytest.approx(-ms, abs=1e-3)
    assert "tensorlab.cuda.Event" in repr(end) and "uninitialized" not in repr(end)


def test_elapsed_time_errors_as_torch(cuda):
    a, b = tl.cuda.Event(enable_timing=True), tl.cuda.Event(enable_timing=True)
    plain = tl.cuda.Event()
    with pytest.raises(ValueError, match=r"^Both events must be recorded before calculating elapsed time\.$"):
        a.elapsed_time(b)
    a.record()
    with pytest.raises(ValueError, match=r"^Both events must be recorded before calculating elapsed time\.$"):
        a.elapsed_time(b)
    plain.record()
    b.record()
    msg = r"^Both events must be created with argument 'enable_timing=True'\.$"
    with pytest.raises(ValueError, match=msg):
        a.elapsed_time(plain)
    with pytest.raises(ValueError, match=msg):
        plain.elapsed_time(b)
    with pytest.raises(ValueError, match=msg):  # timing is checked first, as torch
        tl.cuda.Event().elapsed_time(tl.cuda.Event(enable_timing=True))
    with pytest.raises(TypeError):
        a.elapsed_time(1.0)
    b.synchronize()
    assert a.elapsed_time(b) >= 0.0


def test_event_wait_and_blocking_event(cuda):
    e = tl.cuda.Event(blocking=True)
    assert e.blocking
    e.wait()  # never recorded: a no-op
    x = tl.ones(10, device=cuda)
    e.record(tl.cuda.current_stream())
    s = tl.cuda.Stream()
    e.wait(s)
    with tl.cuda.stream(s):
        y = x.to(tl.int32)
    e.synchronize()
    s.synchronize()
    assert y.tolist() == [1] * 10
    with pytest.raises(RuntimeError, match="interprocess"):
        tl.cuda.Event(interprocess=True)
    with pytest.raises(TypeError):
        e.record("stream")


# -- memory -------------------------------------------------------------------------------------------
def test_memory_stats_follow_tensors(cuda):
    tl.cuda.synchronize()
    base = tl.cuda.memory_allocated()
    tl.cuda.reset_peak_memory_stats()
    assert tl.cuda.max_memory_allocated() == base
    x = tl.empty(1 << 20, dtype=tl.uint8, device=cuda)
    grown = tl.cuda.memory_allocated()
    assert grown - base >= 1 << 20
    assert tl.cuda.max_memory_allocated() >= grown
    assert tl.cuda.memory_reserved() >= grown and tl.cuda.max_memory_reserved() >= tl.cuda.memory_reserved()
    del x
    tl.cuda.synchronize()
    assert tl.cuda.memory_allocated() == base
    assert tl.cuda.max_memory_allocated() >= grown  # the peak stays until reset
    tl.cuda.reset_peak_memory_stats()
    assert tl.cuda.max_memory_allocated() == base
    s = tl.cuda.memory_stats()
    assert s["allocated_bytes.all.current"] == base and s["allocated_bytes.all.peak"] == base
    assert s["reserved_bytes.all.current"] >= base


def test_empty_cache_keeps_live_tensors(cuda):
    x = tl.full((1000,), 5.0, device=cuda)
    y = tl.empty(1 << 20, dtype=tl.uint8, device=cuda)
    del y
    tl.cuda.synchronize()
    tl.cuda.empty_cache()
    assert tl.cuda.memory_reserved() >= tl.cuda.memory_allocated()
    assert x.tolist() == [5.0] * 1000


def test_out_of_memory_error(cuda):
    total = tl.cuda.get_device_properties().total_memory
    before = tl.cuda.memory_allocated()
    with pytest.raises(tl.cuda.OutOfMemoryError) as e:
        tl.empty(4 * total, dtype=tl.uint8, device=cuda)
    assert isinstance(e.value, RuntimeError)
    assert tl.cuda.memory_allocated() == before
    assert tl.ones(4, device=cuda).tolist() == [1.0] * 4


# -- seeding ------------------------------------------------------------------------------------------
def test_manual_seed_reproduces_and_matches_the_cpu(cuda):
    tl.cuda.manual_seed(1234)
    a = tl.rand(100, device=cuda)
    tl.cuda.manual_seed(1234)
    b = tl.rand(100, device=cuda)
    assert a.tolist() == b.tolist()
    assert tl.cuda.initial_seed() == 1234
    tl.manual_seed(1234)  # the CPU generator, same Philox stream
    assert tl.rand(100).tolist() == a.tolist()
    tl.cuda.manual_seed_all(99)
    c = tl.rand(100, device=cuda)
    state = tl.cuda.get_rng_state()
    d = tl.rand(100, device=cuda)
    tl.cuda.set_rng_state(state)
    assert tl.rand(100, device=cuda).tolist() == d.tolist() != c.tolist()
    assert len(tl.cuda.get_rng_state_all()) == tl.cuda.device_count()
    with pytest.raises(RuntimeError, match="manual_seed expected a long"):
        tl.cuda.manual_seed("seed")


# -- pinned memory and transfers ----------------------------------------------------------------------
def test_pin_memory_copies_into_page_locked_memory(cuda):
    x = tl.arange(12, dtype=tl.float32).reshape(3, 4)
    assert not x.is_pinned()
    p = x.pin_memory()
    assert p.is_pinned() and p.device == tl.device("cpu") and p.tolist() == x.tolist()
    assert p.pin_memory() is p
    assert p.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    t = x.t().pin_memory()  # strides kept, as torch
    assert t.stride() == (1, 4) and t.is_pinned() and t.tolist() == x.t().tolist()
    assert tl.tensor([1, 2], pin_memory=True).is_pinned()
    assert tl.empty(5, pin_memory=True).is_pinned()
    assert not tl.ones(3, device=cuda).is_pinned()
    with pytest.raises(RuntimeError, match="only dense CPU tensors can be pinned"):
        tl.ones(3, device=cuda).pin_memory()


def test_non_blocking_round_trip_through_pinned_memory(cuda):
    src = tl.arange(4096, dtype=tl.float32).pin_memory()
    dev = src.to(cuda, non_blocking=True)
    del src  # the copy may still be running: the driver keeps the pinned source alive
    back = tl.empty(4096, dtype=tl.float32).pin_memory()
    back.copy_(dev, non_blocking=True)
    tl.cuda.current_stream().synchronize()
    assert back.tolist() == [float(i) for i in range(4096)]
    # a non-contiguous or differently typed destination still gets the right values (synchronously)
    back64 = tl.empty(4096, dtype=tl.float64).pin_memory()
    back64.copy_(dev, non_blocking=True)
    assert back64.tolist() == [float(i) for i in range(4096)]


def test_copies_between_devices_keep_values_and_dtypes(cuda):
    x = tl.tensor([[1, 2, 3], [4, 5, 6]], dtype=tl.int32)
    d = x.cuda()
    assert d.device.type == "cuda" and d.dtype == tl.int32
    assert d.t().cpu().tolist() == [[1, 4], [2, 5], [3, 6]]
    assert d.to(tl.float64).cpu().tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    assert x.to(cuda, tl.float16).cpu().dtype == tl.float16


# -- without CUDA (every machine: the backend is hidden) ------------------------------------------------
@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(backends, "_cuda", None)
    monkeypatch.setattr(backends, "cuda_emulated", lambda: False)
    monkeypatch.setattr(backends, "cuda_unavailable_reason", lambda: "CuPy could not be imported (test)")


def test_without_cuda_queries_answer_and_device_calls_raise(no_cuda):
    assert tl.cuda.is_available() is False
    assert tl.cuda.device_count() == 0
    for call in (tl.cuda.current_device, tl.cuda.synchronize, tl.cuda.Stream, tl.cuda.Event,
                 tl.cuda.current_stream, tl.cuda.default_stream, lambda: tl.cuda.memory_allocated(0),
                 lambda: tl.cuda.memory_reserved("cuda:0"), tl.cuda.mem_get_info,
                 tl.cuda.reset_peak_memory_stats, tl.cuda.get_device_properties, tl.cuda.get_device_name,
                 lambda: tl.cuda.set_device(0), lambda: tl.cuda.device(0), tl.cuda.initial_seed):
        with pytest.raises(RuntimeError, match="CUDA was asked for but is not available: CuPy could not"):
            call()


def test_without_cuda_memory_counters_are_zero_as_torch(no_cuda, torch):
    names = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved")
    assert [getattr(tl.cuda, n)() for n in names] == [0, 0, 0, 0]
    if not torch.cuda.is_available():
        assert [getattr(torch.cuda, n)() for n in names] == [0, 0, 0, 0]


def test_without_cuda_seeding_and_empty_cache_are_no_ops_as_torch(no_cuda):
    tl.cuda.manual_seed(0)
    tl.cuda.manual_seed_all(0)
    tl.cuda.seed()
    tl.cuda.seed_all()
    tl.cuda.empty_cache()
    with pytest.raises(RuntimeError, match="manual_seed expected a long"):
        tl.cuda.manual_seed(1.5)


def test_without_cuda_pinning_raises_and_nothing_is_pinned(no_cuda):
    x = tl.ones(3)
    assert x.is_pinned() is False
    with pytest.raises(RuntimeError, match="CUDA was asked for but is not available"):
        x.pin_memory()
    with pytest.raises(RuntimeError, match="CUDA was asked for but is not available"):
        tl.empty(3, pin_memory=True)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_out_of_memory_error_is_exported():
    assert issubclass(tl.cuda.OutOfMemoryError, RuntimeError)
