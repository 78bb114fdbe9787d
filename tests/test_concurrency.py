"""Readers racing a writer that resizes, re-points (set_) and shrinks storage: every read sees one
consistent (storage, layout) record - never a mix of old and new metadata, never bytes past the
end of a buffer. See docs/exception-safety.md for why this holds.

Values are designed so every legal snapshot is recognisable: the storage starts as arange(K0)
and memory the allocator hands out is pre-filled with 0xFF (int64 -1), so a tensor of any of
the writer's shapes must read as [0, 1, ..., K0-1, -1, -1, ...] (truncated to its numel). A
layout mixing one shape with another's strides reads a different pattern and is caught."""
import sys
import threading
import time
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import backends
from tensorlab.testing import InjectedFault, inject_fault

K0 = 24
# alternating row lengths, so mixing any shape with another's strides changes the values read;
# numels 24 -> 30 -> 36 -> 42 -> 48 each grow the storage, the rest fit
CYCLE = [(4, 6), (3, 10), (4, 9), (6, 7), (4, 12), (2, 12), (8, 3), (24,), (3, 8)]
SHAPES = {tuple(s) for s in CYCLE}
DURATION = 1.0


def expected(numel):
    return np.where(np.arange(numel) < K0, np.arange(numel), -1)


@pytest.fixture
def patterned_alloc(monkeypatch, device):
    """Fresh memory reads as 0xFF bytes instead of whatever the allocator left there."""
    be = backends.get(tl.device(device))
    real = be.allocate

    def allocate(nbytes, dev=None):
        buf = real(nbytes, dev)
        if device == "cpu":
            buf.fill(255)
        else:
            from tensorlab.backends.cuda.driver import Pointer
            be.driver.memset(Pointer(buf, 0), 255, nbytes, be.driver.current_stream(buf.device))
        return buf
    monkeypatch.setattr(be, "allocate", allocate)


@pytest.fixture
def fast_switching():
    """Switch threads every few microseconds instead of 5 ms, so races actually interleave."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


def run_threads(writer, readers, duration=DURATION, until=lambda: True, max_duration=3.0):
    """Run writer and readers in loops for `duration` seconds, longer (up to max_duration) until
    `until()` holds, so a loaded machine still gets the iterations the test asks for."""
    stop = threading.Event()
    errors = []

    def guard(fn):
        def body():
            try:
                while not stop.is_set():
                    fn()
            except BaseException as e:  # reported below with its traceback
                errors.append(e)
                stop.set()
        return body

    threads = [threading.Thread(target=guard(f)) for f in [writer, *readers]]
    for th in threads:
        th.start()
    start = time.monotonic()
    time.sleep(duration)
    while not until() and not stop.is_set() and time.monotonic() - start < max_duration:
        time.sleep(0.05)
    stop.set()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]


def check_values(arr):
    arr = np.asarray(arr)
    assert arr.shape in SHAPES, f"read a shape no writer step produced: {arr.shape}"
    np.testing.assert_array_equal(arr.ravel(), expected(arr.size))


def test_readers_never_see_mixed_metadata(device, patterned_alloc, fast_switching):
    t = tl.arange(K0, dtype=tl.int64, device=device).resize_(*CYCLE[-1])
    counts = {"resize_": 0, "clone": 0, "tolist": 0, "sum": 0}
    sums = {int(expected(int(np.prod(s))).sum()) for s in SHAPES}

    def writer():
        t.set_(tl.arange(K0, dtype=tl.int64, device=device).untyped_storage(), 0, CYCLE[0])  # back to K0
        for shape in CYCLE[1:]:
            t.resize_(*shape)
            counts["resize_"] += 1

    def cloner():
        c = t.clone()
        assert c.is_contiguous()
        check_values(c.cpu().numpy())
        counts["clone"] += 1

    def lister():
        check_values(t.tolist())
        counts["tolist"] += 1

    def summer():
        if not hasattr(tl.Tensor, "sum"):
            return time.sleep(0.01)
        s = t.sum().item()
        assert s in sums, f"sum {s} matches no single snapshot"
        counts["sum"] += 1

    run_threads(writer, [cloner, lister, summer], until=lambda: counts["resize_"] >= 2000)
    assert counts["resize_"] >= 2000, counts
    assert counts["clone"] > 50 and counts["tolist"] > 50, counts


def test_shrinking_storage_under_readers_raises_or_reads_consistently(device, patterned_alloc, fast_switching):
    t = tl.arange(K0, dtype=tl.int64, device=device)
    s = t.untyped_storage()
    outcome = {"ok": 0, "refused": 0, "cycles": 0}

    def writer():
        s.resize_(K0 * 4)  # half the elements
        s.resize_(K0 * 8)  # back: the second half is now fresh (-1) memory
        outcome["cycles"] += 1

    def reader(read):
        def body():
            try:
                arr = np.asarray(read()).ravel()
            except RuntimeError as e:
                assert "storage was shrunk" in str(e), e
                outcome["refused"] += 1
                return
            assert arr.shape == (K0,)
            np.testing.assert_array_equal(arr[:K0 // 2], np.arange(K0 // 2))
            assert np.all((arr[K0 // 2:] == np.arange(K0 // 2, K0)) | (arr[K0 // 2:] == -1)), arr
            outcome["ok"] += 1
        return body

    run_threads(writer, [reader(t.tolist), reader(lambda: t.clone().cpu().numpy())], until=lambda: outcome["cycles"] >= 1000)
    assert outcome["cycles"] >= 1000 and outcome["ok"] + outcome["refused"] > 50, outcome


def test_concurrent_writers_leave_a_consistent_tensor(device, fast_switching):
    t = tl.arange(K0, dtype=tl.int64, device=device)

    def writer(shapes):
        def body():
            for shape in shapes:
                t.resize_(*shape)
        return body

    run_threads(writer([(4, 6), (50,)]), [writer([(3, 8), (7, 9)]), writer([(24,), (2, 2, 20)])], duration=0.3)
    arr = t.cpu().numpy()  # whatever the last writer published, it fits its storage
    assert arr.shape in {(4, 6), (50,), (3, 8), (7, 9), (24,), (2, 2, 20)}
    assert np.asarray(t.tolist()).ravel()[:K0].tolist() == list(range(K0))


def test_out_resizes_from_two_threads_apply_whole_or_not_at_all(device, fast_switching):
    """Two threads resize one out= target: each call either publishes completely or is refused by
    the commit's compare-and-swap; the target always reads as one call's full result."""
    out = tl.zeros(0, dtype=tl.int64, device=device)
    done = {"ok": 0, "refused": 0}

    def filler(n):
        def body():
            try:
                tl.arange(n, out=out)
                done["ok"] += 1
            except RuntimeError as e:
                assert "another thread changed" in str(e), e
                done["refused"] += 1
        return body

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_threads(filler(10), [filler(40), lambda: check_prefix(out.tolist())], duration=0.3)
    assert done["ok"] > 0, done


def check_prefix(values):
    assert len(values) in (0, 10, 40)
    # writes of a same-size call land in place and may race each other, but both write arange
    assert values == list(range(len(values))), values


def test_fault_plan_in_one_thread_does_not_affect_another(device):
    t = tl.arange(K0, dtype=tl.int64, device=device)
    seen = []

    def worker():
        for i in range(200):
            seen.append(t.clone().tolist()[-1])

    with inject_fault("alloc", 1) as plan:
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        assert not plan.fired
        with pytest.raises(InjectedFault):
            t.clone()
    assert seen == [K0 - 1] * 200
