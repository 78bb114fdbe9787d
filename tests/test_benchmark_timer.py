"""tl.benchmark: Timer (warm-up, repetitions, per-device timing method, cache flush, time budget),
Measurement statistics, Stopwatch and cuda_event_clock, and the mistakes they refuse. Nothing
here asserts how long anything took: durations come from a fake clock where exact values matter
(the CPU path reads time.perf_counter through the module's `time` name), and are only checked
for sanity on CUDA (real or emulated)."""
from __future__ import annotations

import functools
import gc
import json
import math
import threading
import types

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import _faults
from tensorlab import benchmark as B


class FakeClock:
    """Stands in for the `time` module inside tensorlab.benchmark: perf_counter returns `now`,
    which the timed functions advance."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now

    def advance(self, dt):
        self.now += dt


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(B, "time", c)
    return c


# -- Measurement ----------------------------------------------------------------------------------
@pytest.mark.parametrize("times", [[3.0], [5.0, 1.0], [4.0, 1.0, 3.0, 2.0, 10.0], list(np.linspace(1e-6, 2e-3, 37))])
def test_measurement_statistics_match_numpy(times):
    m = B.Measurement(times, label="x", device="cpu")
    a = np.asarray(times)
    assert m.median == pytest.approx(np.median(a))
    assert m.q1 == pytest.approx(np.percentile(a, 25)) and m.q3 == pytest.approx(np.percentile(a, 75))
    assert m.iqr == pytest.approx(np.percentile(a, 75) - np.percentile(a, 25))
    assert (m.min, m.max) == (a.min(), a.max())
    assert m.mean == pytest.approx(a.mean())
    assert m.std == pytest.approx(a.std(ddof=1) if len(a) > 1 else 0.0)
    assert m.times == tuple(times) and m.repeat == len(times)


def test_median_resists_an_outlier_that_moves_the_mean():
    m = B.Measurement([1.0] * 9 + [100.0])
    assert m.median == 1.0 and m.mean == pytest.approx(10.9)


def test_measurement_needs_times():
    with pytest.raises(ValueError, match="at least one time"):
        B.Measurement([])


def test_measurement_to_dict_is_json_and_repr_names_the_method():
    m = B.Measurement([2e-6, 3e-6, 4e-6], label="add", device="cuda:0", method="cuda_event", number=2, warmup=3,
                      first_call=0.5, flush_l2=True, notes=("n1",))
    d = json.loads(json.dumps(m.to_dict()))
    assert d["median_s"] == pytest.approx(3e-6) and d["times_s"] == [2e-6, 3e-6, 4e-6]
    assert d["method"] == "cuda_event" and d["number"] == 2 and d["flush_l2"] is True and d["notes"] == ["n1"]
    text = repr(m)
    assert "add on cuda:0" in text and "median 3 us" in text and "CUDA events" in text
    assert "first took 500 ms" in text and "cache flushed" in text and "note: n1" in text


# -- Timer on every device ------------------------------------------------------------------------
def test_timer_runs_warmup_then_repeat_times_number_calls(device):
    x = tl.zeros(64, device=device)
    calls = []

    def fn():
        calls.append(1)
        return x.fill_(1.0)

    m = B.Timer(fn, device=device, warmup=2, repeat=7, number=3).measure()
    assert len(calls) == 2 + 7 * 3
    assert m.repeat == 7 and m.number == 3 and m.warmup == 2
    assert m.device == str(tl.device(device) if device == "cpu" else x.device)
    assert m.method == ("perf_counter" if device == "cpu" else "cuda_event")
    assert all(math.isfinite(t) and t >= 0 for t in m.times)
    assert m.first_call is not None and m.first_call >= 0


def test_timer_infers_the_device_from_the_arguments(device):
    x = tl.zeros(4, device=device)
    assert B.Timer(tl.neg, (x,)).device == x.device
    assert B.Timer(lambda t: t, kwargs={"t": x}).device == x.device
    assert B.Timer(lambda a: a, ([np.zeros(3), x],)).device == x.device
    assert B.Timer(np.negative, (np.zeros(3),)).device == tl.device("cpu")
    assert B.Timer(lambda: None).device == tl.device("cpu")


def test_timer_rejects_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        B.Timer(3)
    for kw in ({"repeat": 0}, {"warmup": 0}, {"number": 0}, {"repeat": 2.5}, {"repeat": True}):
        with pytest.raises(ValueError, match="must be an integer"):
            B.Timer(lambda: None, **kw)
    with pytest.raises(ValueError, match="max_time"):
        B.Timer(lambda: None, max_time=0)
    with pytest.raises(ValueError, match="stream= needs a CUDA device"):
        B.Timer(lambda: None, device="cpu", stream=object())


# -- CPU path with a fake clock: exact values ---------------------------------------------------------
def test_first_call_is_kept_out_of_the_times(clock):
    costs = iter([50.0] + [2.0] * 100)  # the first call "compiles"
    m = B.Timer(lambda: clock.advance(next(costs)), warmup=3, repeat=5).measure()
    assert m.first_call == 50.0
    assert m.times == (2.0,) * 5


def test_times_are_per_call_when_a_repetition_runs_several(clock):
    m = B.Timer(lambda: clock.advance(0.5), warmup=1, repeat=4, number=8).measure()
    assert m.times == (0.5,) * 4 and m.median == 0.5


def test_max_time_stops_early_but_keeps_three_repetitions(clock):
    m = B.Timer(lambda: clock.advance(1.0), warmup=1, repeat=100, max_time=2.5).measure()
    assert m.repeat == 3
    m = B.Timer(lambda: clock.advance(1.0), warmup=1, repeat=100, max_time=5.5).measure()
    assert m.repeat == 6
    m = B.Timer(lambda: clock.advance(1.0), warmup=1, repeat=2, max_time=0.1).measure()
    assert m.repeat == 2


def test_flush_runs_before_each_repetition_and_is_not_timed(clock, monkeypatch):
    events = []

    def fake_flush(self):
        events.append("flush")
        clock.advance(100.0)

    monkeypatch.setattr(B._Flusher, "__call__", fake_flush)

    def fn():
        events.append("call")
        clock.advance(1.0)

    m = B.Timer(fn, warmup=2, repeat=3, number=2, flush_l2=1 << 20).measure()
    assert events == ["call", "call"] + ["flush", "call", "call"] * 3
    assert m.times == (1.0,) * 3 and m.flush_l2


def test_flush_l2_overwrites_a_buffer_beyond_the_cache(device):
    f = B._Flusher(tl.device(device) if device == "cpu" else tl.zeros(1, device=device).device, True)
    assert f.nbytes >= 1 << 20
    f()
    f()
    m = B.Timer(lambda: None, device=device, warmup=1, repeat=3, flush_l2=2 << 20).measure()
    assert m.flush_l2 and m.repeat == 3


def test_gc_is_disabled_while_timing_and_restored_even_on_error(clock):
    seen = []
    n = iter(range(100))

    def fn():
        seen.append(gc.isenabled())
        if next(n) == 3:
            raise ValueError("boom")

    assert gc.isenabled()
    with pytest.raises(ValueError, match="boom"):
        B.Timer(fn, warmup=1, repeat=10).measure()
    assert gc.isenabled()
    assert seen[0] is True and seen[1:] == [False] * 3  # warm-up with gc on, repetitions with gc off


def test_stopwatch_on_the_cpu(clock):
    sw = B.Stopwatch("cpu")
    assert sw.method == "perf_counter" and not sw.query()
    with pytest.raises(RuntimeError, match="start"):
        sw.elapsed_ms()
    with pytest.raises(RuntimeError, match="start\\(\\) was never called"):
        B.Stopwatch("cpu").stop()
    with sw:
        clock.advance(0.25)
    assert sw.query() and sw.elapsed_ms() == 250.0
    sw.synchronize()  # nothing to wait for on the CPU
    assert "250.0000 ms" in repr(sw)


# -- refused mistakes ---------------------------------------------------------------------------------
class _FakeCudaTensor:
    """Looks like a torch CUDA tensor to the device probe (no GPU needed)."""

    is_cuda = True
    device = types.SimpleNamespace(index=0)


_FakeCudaTensor.__module__ = "torch"


def test_host_clock_around_a_cuda_result_is_refused():
    with pytest.raises(RuntimeError, match="measures only the launch.*device='cuda:0'"):
        B.Timer(lambda: _FakeCudaTensor(), device="cpu").measure()
    with pytest.raises(RuntimeError, match="host clock"):
        B.Timer(lambda: (1, [_FakeCudaTensor()])).measure()


def test_host_clock_around_host_results_is_fine(torch):
    x = torch.ones(8)
    m = B.Timer(lambda: x + 1, warmup=1, repeat=3).measure()
    assert m.method == "perf_counter" and not m.notes


def test_host_clock_refusal_with_a_real_cuda_tensor(cuda):
    x = tl.zeros(8, device=cuda)
    with pytest.raises(RuntimeError, match="host clock"):
        B.Timer(x.fill_, (1.0,), device="cpu").measure()
    assert B.Timer(x.fill_, (1.0,), warmup=1, repeat=2).measure().method == "cuda_event"


def test_stopwatch_refuses_an_event_pair_on_two_streams(cuda):
    dev = tl.zeros(1, device=cuda).device
    sw = B.Stopwatch(dev).start()
    side = tl.cuda.Stream(dev)
    with tl.cuda.stream(side):
        with pytest.raises(RuntimeError, match="two streams"):
            sw.stop()
    sw.stop()  # back on the start stream: fine
    sw.synchronize()
    assert sw.elapsed_ms() >= 0
    with tl.cuda.stream(side):  # the whole region on the side stream is one timeline too
        with B.Stopwatch(dev) as sw2:
            tl.zeros(4, device=dev)
    sw2.synchronize()
    assert sw2.elapsed_ms() >= 0


def test_timer_refuses_a_function_that_leaves_another_stream_current(cuda):
    dev = tl.zeros(1, device=cuda).device
    side = tl.cuda.Stream(dev)
    try:
        with pytest.raises(RuntimeError, match="two streams"):
            B.Timer(tl.cuda.set_stream, (side,), device=dev).measure()
    finally:
        tl.cuda.set_stream(tl.cuda.default_stream(dev))


def test_elapsed_before_the_end_event_completed_is_refused(cuda, monkeypatch):
    dev = tl.zeros(1, device=cuda).device
    sw = B.Stopwatch(dev)
    with pytest.raises(RuntimeError, match="start\\(\\) and stop\\(\\) first"):
        sw.elapsed_ms()
    with sw:
        tl.zeros(16, device=dev)
    monkeypatch.setattr(tl.cuda.Event, "query", lambda self: False)  # a device still busy
    with pytest.raises(RuntimeError, match="has not completed.*synchronize"):
        sw.elapsed_ms()
    assert not sw.query()
    monkeypatch.undo()
    sw.synchronize()
    assert sw.query() and sw.elapsed_ms() >= 0


def test_stopwatch_stream_must_match_its_device(cuda):
    s = tl.cuda.current_stream()
    with pytest.raises(ValueError, match="does not belong"):
        B.Stopwatch("cpu", stream=s)


def test_a_hidden_sync_inside_the_timed_function_is_noted(cuda):
    x = tl.ones(8, device=cuda)
    m = B.Timer(lambda: x.fill_(2.0).cpu(), device=x.device, warmup=2, repeat=3).measure()
    assert any("made the host wait" in n and "copy to cpu" in n for n in m.notes), m.notes
    quiet = B.Timer(x.fill_, (2.0,), warmup=2, repeat=3).measure()
    assert not any("made the host wait" in n for n in quiet.notes)


def test_cuda_event_clock_readings_bracket_device_work(cuda):
    x = tl.zeros(1 << 12, device=cuda)
    t0 = B.cuda_event_clock()
    x.fill_(1.0)
    t1 = B.cuda_event_clock()
    t2 = B.cuda_event_clock()
    assert t0 <= t1 <= t2 and all(math.isfinite(t) for t in (t0, t1, t2))
    with tl.cuda.sync_trace() as trace:
        B.cuda_event_clock()
    assert trace and all(r.explicit for r in trace)  # it waits, and says it does


def test_timer_runs_and_times_on_the_stream_it_is_given(cuda):
    dev = tl.zeros(1, device=cuda).device
    side = tl.cuda.Stream(dev)
    seen = []

    def fn():
        seen.append(tl.cuda.current_stream(dev))
        return tl.zeros(8, device=dev)

    m = B.Timer(fn, stream=side, warmup=1, repeat=3, flush_l2=1 << 20).measure()
    assert m.repeat == 3 and set(seen) == {side}
    assert tl.cuda.current_stream(dev) == tl.cuda.default_stream(dev)  # restored afterwards


# -- device inference from what fn holds ------------------------------------------------------------
def test_timer_infers_the_device_from_closures_defaults_and_partials(device):
    x = tl.zeros(4, device=device)

    def step():
        x.mul_(1.0)

    def with_default(t=x):
        return t

    def with_kwdefault(*, t=x):
        return t

    def calls_a_closure():
        return step()

    assert B.Timer(step).device == x.device
    assert B.Timer(lambda: step() or None).device == x.device  # two levels: a lambda calling a closure
    assert B.Timer(with_default).device == x.device
    assert B.Timer(with_kwdefault).device == x.device
    assert B.Timer(calls_a_closure).device == x.device
    assert B.Timer(functools.partial(tl.neg, x)).device == x.device
    assert B.Timer(x.neg).device == x.device  # a bound method's tensor, as before


def test_device_inference_tolerates_an_unfilled_cell():
    def make():
        fn = lambda: later  # noqa: E731,F821  the cell is empty when the Timer looks at it
        timer = B.Timer(fn)
        later = 1  # noqa: F841
        return timer

    assert make().device == tl.device("cpu")


# -- the launch observer seam (tensorlab._faults) ---------------------------------------------------
def test_launch_observers_are_per_thread_and_nest():
    seen_outer, seen_inner = [], []

    def outer(d, s):
        seen_outer.append((d, s))

    prev = _faults.observe(outer)
    try:
        inner_prev = _faults.observe(lambda d, s: (seen_inner.append((d, s)), inner_prev(d, s)))
        assert inner_prev is outer
        _faults.launched(0, "s")
        t = threading.Thread(target=_faults.launched, args=(1, "other thread"))
        t.start()
        t.join()
        _faults.observe(inner_prev)
        _faults.launched(2, "t")
    finally:
        assert _faults.observe(prev) is outer
    assert seen_inner == [(0, "s")] and seen_outer == [(0, "s"), (2, "t")]
    _faults.launched(3, "nobody")  # no observer: nothing happens


def _fake_cuda_launch():
    """What the CUDA launch path reports for one kernel on cuda:0's stream `_FAKE_STREAM`."""
    if _faults.observers:
        _faults.launched(0, _FAKE_STREAM)


_FAKE_STREAM = types.SimpleNamespace(ptr=0xABC)


def test_host_clock_around_cuda_launches_is_refused_before_timing(clock):
    calls = []

    def fn():  # returns nothing on a device: only the launch report tells
        calls.append(1)
        _fake_cuda_launch()
        _fake_cuda_launch()

    with pytest.raises(RuntimeError, match=r"queued 2 CUDA kernel launches per call on cuda:0 .*cuda_stream=0xabc"
                                           r".*host clock.*device='cuda:0'.*tl.cuda.synchronize\(\)"):
        B.Timer(fn, device="cpu", warmup=3, repeat=5).measure()
    assert len(calls) == 3  # the warm-up calls only: refused before any repetition
    assert _faults.observers.get(threading.get_ident()) is None  # the observer is gone


def test_the_timer_observes_only_its_warm_up_and_restores_an_outer_observer(clock):
    heard = []
    prev = _faults.observe(lambda d, s: heard.append(d))
    try:
        with pytest.raises(RuntimeError, match="host clock"):
            B.Timer(_fake_cuda_launch, device="cpu", warmup=2).measure()
        assert heard == [0, 0]  # the outer observer heard them too
        _fake_cuda_launch()
        assert heard == [0, 0, 0]  # and is installed again
    finally:
        _faults.observe(prev)
    m = B.Timer(lambda: clock.advance(1.0), warmup=2, repeat=3).measure()  # no launches: nothing to refuse
    assert m.times == (1.0,) * 3


def test_the_observer_is_removed_when_fn_raises():

    def boom():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        B.Timer(boom).measure()
    assert _faults.observers.get(threading.get_ident()) is None


# -- on a CUDA device: the real launch path ----------------------------------------------------------
@pytest.fixture
def launch_hook(cuda):
    """The CUDA launch path (launch.launch) reports every kernel launch to _faults.launched."""
    yield True
    assert _faults.observers.get(threading.get_ident()) is None


def test_the_cuda_launch_path_reports_each_launch_with_its_stream(launch_hook):
    dev = tl.zeros(1, device="cuda").device
    side = tl.cuda.Stream(dev)
    x = tl.zeros(16, device=dev)
    seen = []
    prev = _faults.observe(lambda d, s: seen.append((d, s)))
    try:
        x.fill_(1.0)
        with tl.cuda.stream(side):
            x.fill_(2.0)
    finally:
        _faults.observe(prev)
    main = tl.cuda.current_stream(dev)
    assert [(d, tl.cuda.streams.Stream._wrap(s, d)) for d, s in seen] == [(dev.index, main), (dev.index, side)]


def test_closure_held_cuda_tensor_is_timed_with_events_not_the_host_clock(launch_hook):
    x = tl.ones(64, device="cuda")

    def step():  # returns None: the result says nothing about the device
        x.mul_(1.0)

    m = B.Timer(step, warmup=2, repeat=3).measure()
    assert m.method == "cuda_event" and m.device == str(x.device)
    with pytest.raises(RuntimeError, match=r"queued 1 CUDA kernel launch per call on cuda:0.*host clock.*"
                                           r"device='cuda:0'"):
        B.Timer(step, device="cpu", warmup=2, repeat=3).measure()


def test_host_clock_is_fine_when_fn_waits_for_its_kernels(launch_hook):
    x = tl.ones(64, device="cuda")

    def step_and_wait():
        x.mul_(1.0)
        tl.cuda.synchronize()

    def step_and_read():
        return x.sum().item()  # an implicit wait: noted, not refused

    assert B.Timer(step_and_wait, device="cpu", warmup=2, repeat=3).measure().method == "perf_counter"
    m = B.Timer(step_and_read, device="cpu", warmup=2, repeat=3).measure()
    assert m.method == "perf_counter"


def test_work_queued_on_a_side_stream_is_refused(launch_hook):
    dev = tl.zeros(1, device="cuda").device
    side = tl.cuda.Stream(dev)
    x = tl.ones(64, device=dev)
    calls = []

    def on_side():
        calls.append(1)
        x.mul_(1.0)  # on the timed stream: fine
        with tl.cuda.stream(side):
            x.mul_(1.0)
            x.add_(1.0)

    with pytest.raises(RuntimeError) as info:
        B.Timer(on_side, warmup=2, repeat=5, label="side").measure()
    text = str(info.value)
    assert f"queued 2 CUDA kernel launches per call on {side!r}" in text
    assert f"recorded on {tl.cuda.current_stream(dev)!r}" in text
    assert "Timer(..., stream=that_stream)" in text and "synchronize()" in text and "joined_streams=True" in text
    assert text.startswith("Timer 'side':") and len(calls) == 2  # refused after the warm-up
    assert tl.cuda.current_stream(dev) == tl.cuda.default_stream(dev)


def test_side_stream_work_that_is_timed_there_waited_for_or_joined_is_accepted(launch_hook):
    dev = tl.zeros(1, device="cuda").device
    side = tl.cuda.Stream(dev)
    x = tl.ones(64, device=dev)

    def on_side():
        with tl.cuda.stream(side):
            x.mul_(1.0)

    def waited():
        on_side()
        side.synchronize()

    def joined():
        on_side()
        tl.cuda.current_stream(dev).wait_stream(side)

    assert B.Timer(on_side, stream=side, warmup=2, repeat=3).measure().method == "cuda_event"
    assert B.Timer(waited, device=dev, warmup=2, repeat=3).measure().method == "cuda_event"
    with pytest.raises(RuntimeError, match="joined_streams=True"):
        B.Timer(joined, device=dev, warmup=2, repeat=3).measure()  # the join is invisible to the Timer
    assert B.Timer(joined, device=dev, warmup=2, repeat=3, joined_streams=True).measure().repeat == 3


def test_timed_stream_work_followed_by_a_side_sync_is_still_checked(launch_hook):
    """A wait for the device before the side-stream launches does not cover them."""
    dev = tl.zeros(1, device="cuda").device
    side = tl.cuda.Stream(dev)
    x = tl.ones(64, device=dev)

    def sync_then_side():
        tl.cuda.synchronize(dev)
        with tl.cuda.stream(side):
            x.mul_(1.0)

    with pytest.raises(RuntimeError, match="per call on <tensorlab.cuda.Stream"):
        B.Timer(sync_then_side, device=dev, warmup=2, repeat=3).measure()
