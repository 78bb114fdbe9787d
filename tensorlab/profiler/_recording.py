"""Recording: one Recorder per profiled thread, fed from the points every program already passes.

- Ops: `autograd_hooks.profiler` (called by record/record_op/record_inplace/created, the calls every
  op makes when it finishes; `_slow` is set while a profiler is on, so every op reaches them).
- Fault points: the Recorder is the thread's `_faults` plan (chaining the one it replaced), so each
  allocation, copy and launch marks the moment the op's work begins (the CPU backend's NumPy
  primitives included).
- CUDA: the driver instance's launch/memcpy/malloc/free/empty_cache are wrapped while a profiler is
  on (nothing is wrapped, nothing is checked, when none is): each kernel and copy gets a pair of
  timing events on its stream, read once when the profile ends (cuda_events.DeviceClock).
- CPU allocations: `_faults.alloc_listeners`.
- Host waits: a listener in `sync._traces`, the list sync.host_wait already reports to.
- Host clocks: time.perf_counter/time/monotonic called from the user's code are noted, to find
  timings taken with a host clock around asynchronous work.

Which op caused an event: every event notes the tensorlab frame the user's code called (the
"entry"); an op's record claims the events pending with its entry. Events whose entry records no
op (x.item(), print(x), tolist(): host reads) become a derived op named for the method.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import weakref
from threading import get_ident

from .. import _faults, autograd_hooks, sync
from . import _records as R
from .cuda_events import DeviceClock

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_clock = time.perf_counter  # captured before any wrapping of the time module

_recorders = {}  # thread id -> Recorder (one per thread)
_lock = threading.RLock()
_driver_patch = None  # (driver, {name: original}) while wrapped
_time_patch = None  # {name: original} while wrapped


def _where():
    """(entry frame, user file, user line): the outermost tensorlab frame of the current call and
    the user's frame that called it."""
    f = sys._getframe(1)
    entry = None
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        entry = f
        f = f.f_back
    if f is None:
        return entry, "", 0
    return entry, f.f_code.co_filename, f.f_lineno


def _user_stack(limit=64):
    """The Python stack outside tensorlab, innermost first, as torch's FunctionEvent.stack writes it:
    "file(line): function" (only with with_stack: walking the frames costs a few microseconds)."""
    f = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    out = []
    while f is not None and len(out) < limit:
        if not f.f_code.co_filename.startswith(_PKG):
            out.append(f"{f.f_code.co_filename}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _call_name(entry):
    """The name of the tensorlab function the user called (operators: the op's name)."""
    name = entry.f_code.co_name
    if name == "dunder":  # ops/elementwise's operator closures: the op they run
        loc = entry.f_locals
        d = loc.get("d")
        name = getattr(d, "name", None) or getattr(loc.get("fn"), "__name__", None) or "operator"
    return name


def _name(entry):
    return None if entry is None else entry.f_code.co_name


def _key(entry):
    return None if entry is None else (id(entry), entry.f_code)


class Recorder:
    def __init__(self, prof):
        self.prof = prof
        self.thread = get_ident()
        self.native_thread = threading.get_native_id()  # the OS thread id (the Chrome trace's tid)
        self.thread_name = threading.current_thread().name
        self.cpu = prof._cpu
        self.cuda = prof._cuda
        self.shapes = prof.record_shapes
        self.stack = prof.with_stack
        self.active = False
        self.lock = threading.RLock()
        self.t0 = None
        self.t1 = None
        self.ids = 0
        self.ranges, self.ops, self.kernels, self.copies, self.mems, self.waits = [], [], [], [], [], []
        self.clocks, self.empty_caches = [], []
        self.open = []  # open record_function ranges, innermost last
        self.pending = []  # (key, entry's name, t, record or None) since the last op claimed its events
        # (names, not frames: a frame kept here would keep its locals, tensors included, alive)
        self.last_work = {}  # device index -> the last Kernel/Copy queued (what a wait waits for)
        self.clock = DeviceClock()  # CUDA event pairs, read when the profile stops
        self.cpu_bytes = [0, 0]  # allocated, peak (bytes this profile saw allocated on the CPU)
        self.refs = {}  # id(weakref) -> weakref to a buffer allocated while recording (its callback records the free)
        self.prev_plan = None
        self.tap = None
        self.nvtx = None  # the nvtx module on a real GPU: op ranges (named by the call) and record_function ranges
        self.nvtx_key = False  # the key of the open op NVTX range (False: none open)
        self.last = (None, 0.0)  # (key, end) of the last op: the next op of the same call starts there

    def next_id(self):
        self.ids += 1
        return self.ids

    # -- fault plan: marks where work begins -------------------------------------------------------
    def hit(self, kind):
        p = self.prev_plan
        if p is not None:
            p.hit(kind)
        if self.active:
            entry, _, _ = _where()
            key = _key(entry)
            if self.nvtx is not None and self.nvtx_key is False:
                self.nvtx.push_range(message=_call_name(entry) if entry is not None else kind)
                self.nvtx_key = key
            self.pending.append((key, _name(entry), _clock(), None))

    def _nvtx_close(self):
        if self.nvtx_key is not False:
            self.nvtx_key = False
            self.nvtx.pop_range()

    # -- ops and ranges ----------------------------------------------------------------------------
    def op(self, name, inputs, out):
        now = _clock()
        entry, file, line = _where()
        if name is None:  # a factory (created): named by the function that called the hook's caller
            f = sys._getframe(2)
            while f is not None and (f.f_code.co_name == "created" or f.f_code.co_name.startswith("_")):
                f = f.f_back
            name = f.f_code.co_name if f is not None else "tensor"
        key = _key(entry)
        self._nvtx_close()
        mine, rest = [], []
        for item in self.pending:
            (mine if item[0] == key else rest).append(item)
        self.pending = []
        if rest:
            self._derive(rest)
        start = min((it[2] for it in mine), default=now)
        lk, lend = self.last
        if lk == key and key is not None and not rest and lend < start:
            start = lend  # an op inside one call (a composite, backward): its front end ran since the last op
        self.last = (key, now)
        op = R.Op(self.next_id(), name, start, now, self.open[-1].id if self.open else None, self.thread_name,
                  file if self.stack else "", line if self.stack else 0)
        if self.stack:
            op.stack = _user_stack()
        if self.shapes:
            ts = [t for t in inputs if hasattr(t, "_meta")]
            op.shapes = [list(t._meta.layout.shape) for t in ts]
            op.dtypes = [t._dtype.name for t in ts]
            op.devices = [str(t._meta.storage.device) for t in ts]
        self._claim(op, [it[3] for it in mine if it[3] is not None])
        if self.cpu:
            self.ops.append(op)

    def _claim(self, op, records):
        for r in records:
            r.op = op.id
            k = r.kind
            if k == "kernel":
                op.kernels.append(r)
            elif k == "copy":
                op.copies.append(r)
            elif k == "mem":
                op.mems.append(r)
            elif k == "wait":
                op.waits.append(r)
                for c in op.copies:  # the host waited for the op's earlier copies on that device
                    if c.device == r.device.index and c.start <= r.start:
                        c.blocking = True

    def _derive(self, items):
        """Events no op claimed: consecutive runs with one entry become one derived op (a host read
        such as item() or print()); runs with only marks or memory records stay unattributed."""
        runs = []
        for it in items:
            if runs and runs[-1][0][0] == it[0] and not (it[3] is not None and it[3].kind == "wait"
                                                          and any(x[3] is not None and x[3].kind == "wait"
                                                                  for x in runs[-1])):
                runs[-1].append(it)
            else:
                runs.append([it])
        for run in runs:
            recs = [it[3] for it in run if it[3] is not None]
            if not any(r.kind in ("kernel", "copy", "wait") for r in recs):
                continue
            name = run[0][1] or "<host>"
            ends = [getattr(r, "end", None) or getattr(r, "t", None) for r in recs]
            file, line = next(((r.file, r.line) for r in recs if r.file), ("", 0))
            op = R.Op(self.next_id(), name, run[0][2], max([run[-1][2], *ends]),
                      self.open[-1].id if self.open else None, self.thread_name,
                      file if self.stack else "", line if self.stack else 0, derived=True)
            self._claim(op, recs)
            if self.cpu:
                self.ops.append(op)

    def flush(self):
        self._nvtx_close()
        self.last = (None, 0.0)
        items, self.pending = self.pending, []
        if items:
            self._derive(items)

    def push_range(self, name):
        self.flush()
        _, file, line = _where()
        r = R.Range(self.next_id(), name, _clock(), self.open[-1].id if self.open else None, self.thread_name,
                    file, line)
        self.open.append(r)
        if self.cpu:
            self.ranges.append(r)
        return r

    def pop_range(self, r):
        self.flush()
        r.end = _clock()
        if r in self.open:  # ranges closed out of order close what they enclose
            while self.open:
                x = self.open.pop()
                if x.end is None:
                    x.end = r.end
                if x is r:
                    break

    # -- host waits (from sync.host_wait through the tap) -----------------------------------------
    def wait(self, rec):
        end = _clock()
        entry, _, _ = _where()
        dev = rec.device
        target = self.last_work.get(dev.index) if getattr(dev, "type", None) == "cuda" else None
        w = R.Wait(end - rec.blocked_ms / 1e3, end, rec.reason, dev, rec.explicit, rec.file, rec.line,
                   target.id if target is not None else None)
        self.waits.append(w)
        self.pending.append((_key(entry), _name(entry), w.start, w))

    # -- memory ------------------------------------------------------------------------------------
    def _mem(self, device, nbytes, stats, buf):
        t = _clock()
        mine = get_ident() == self.thread
        entry, file, line = _where() if mine else (None, "", 0)
        m = R.Mem(t, device, nbytes, *stats, file, line)
        with self.lock:
            self.mems.append(m)
        if mine and nbytes > 0:
            self.pending.append((_key(entry), _name(entry), t, m))
        elif mine and self.pending:
            self.pending.append((self.pending[-1][0], self.pending[-1][1], t, m))
        return m

    def cpu_alloc(self, buf, nbytes):
        if not self.active or not nbytes:
            return
        with self.lock:
            c = self.cpu_bytes
            c[0] += nbytes
            c[1] = max(c[1], c[0])
            stats = (c[0], c[0], c[1])
        self._mem("cpu", nbytes, stats, buf)
        self._watch(buf, self._cpu_free, (nbytes,))

    def _watch(self, buf, fn, args):
        """Call fn(*args) when `buf` dies (weakref callbacks: cheaper than weakref.finalize)."""
        refs = self.refs

        def gone(ref):
            if refs.pop(id(ref), None) is not None:
                fn(*args)
        ref = weakref.ref(buf, gone)
        refs[id(ref)] = ref
        return ref

    def _cpu_free(self, nbytes):
        if not self.active:
            return
        with self.lock:
            c = self.cpu_bytes
            c[0] -= nbytes
            stats = (c[0], c[0], c[1])
        self._mem("cpu", -nbytes, stats, None)

    # -- CUDA (called by the driver wrappers for this thread) --------------------------------------
    def launch(self, drv, orig, function, grid, block, args, shared_mem, stream):
        dev = stream.device
        e0 = self.clock.begin(drv, dev, stream)
        t0 = _clock()
        orig(function, grid, block, args, shared_mem, stream)
        t1 = _clock()
        entry, file, line = _where()
        k = R.Kernel(self.next_id(), getattr(function, "name", repr(function)), tuple(grid), tuple(block), dev,
                     _stream_id(stream), t0, t1, None, file, line)
        self.clock.end(drv, stream, e0, k)
        self.kernels.append(k)
        self.last_work[dev] = k
        self.pending.append((_key(entry), _name(entry), t0, k))

    def copy(self, drv, orig, direction, host, nbytes, stream, non_blocking, args):
        dev = stream.device
        pinned = bool(drv.is_pinned(host)) if host is not None else False
        e0 = self.clock.begin(drv, dev, stream)
        t0 = _clock()
        orig(*args)
        t1 = _clock()
        entry, file, line = _where()
        c = R.Copy(self.next_id(), direction, int(nbytes), pinned, not non_blocking, dev, _stream_id(stream), t0, t1,
                   None, file, line)
        self.clock.end(drv, stream, e0, c)
        self.copies.append(c)
        self.last_work[dev] = c
        self.pending.append((_key(entry), _name(entry), t0, c))

    def malloc(self, drv, buf, nbytes, device):
        st = drv.memory_stats(device)
        self._mem(f"cuda:{device}", int(nbytes), (st["allocated"], st["reserved"], st["max_allocated"]), buf)
        args = (drv, device, int(nbytes), _Freed())
        self._watch(buf, self._cuda_free, args)
        return args

    def _cuda_free(self, drv, device, nbytes, tracker):
        if tracker.done or not self.active:
            return
        tracker.done = True
        try:
            st = drv.memory_stats(device)
            stats = (st["allocated"], st["reserved"], st["max_allocated"])
        except Exception:  # a free during interpreter shutdown
            return
        self._mem(f"cuda:{device}", -nbytes, stats, None)

    def clock_read(self, name, file, line):
        self.clocks.append(R.ClockRead(_clock(), name, file, line))

    def empty_cache(self, file, line):
        self.empty_caches.append(R.EmptyCache(_clock(), file, line))

class _Freed:
    __slots__ = ("done",)

    def __init__(self):
        self.done = False


def _stream_id(stream):
    p = getattr(stream, "ptr", None)
    return int(p) if isinstance(p, int) else id(stream)


# -- the listeners, installed while any profiler is on --------------------------------------------
def _on_op(op, inputs, out):
    r = _recorders.get(get_ident())
    if r is not None and r.active:
        r.op(op, inputs, out)


def _on_cpu_alloc(buf, nbytes):
    r = _recorders.get(get_ident())
    if r is not None:
        r.cpu_alloc(buf, nbytes)


class _Tap(sync.SyncTrace):
    """Receives sync.host_wait's records for the recorder's thread."""

    def __init__(self, recorder):
        super().__init__(False)
        self.recorder = recorder

    def _listens(self, ident):
        return ident == self.recorder.thread and self.recorder.active

    def append(self, rec):
        self.recorder.wait(rec)


def _cuda_driver():
    """The CUDA driver when CUDA can be used (loading it if needed), else None."""
    try:
        from .. import backends
        if not backends.cuda_emulated() and backends.cuda_unavailable_reason() is not None:
            return None
        from ..backends.cuda.active import driver
        return driver
    except Exception:
        return None


def _wrap_driver(drv):
    cls = type(drv)
    orig = {n: getattr(drv, n) for n in ("launch", "memcpy_htod", "memcpy_dtoh", "memcpy_dtod", "malloc", "free",
                                         "empty_cache")}

    def rec():
        r = _recorders.get(get_ident())
        return r if r is not None and r.active and r.cuda else None

    def launch(function, grid, block, args, shared_mem, stream):
        r = rec()
        if r is None:
            return orig["launch"](function, grid, block, args, shared_mem, stream)
        r.launch(drv, orig["launch"], function, grid, block, args, shared_mem, stream)

    def host_copy(name, kind, host_at):
        """memcpy_htod(dst, host, ...) / memcpy_dtoh(host, src, ...): recorded with its host array."""
        def copy(a, b, nbytes, stream, non_blocking):
            r = rec()
            if r is None:
                return orig[name](a, b, nbytes, stream, non_blocking)
            r.copy(drv, orig[name], kind, (a, b)[host_at], nbytes, stream, non_blocking,
                   (a, b, nbytes, stream, non_blocking))
        copy.__name__ = name
        return copy

    memcpy_htod = host_copy("memcpy_htod", "HtoD", 1)
    memcpy_dtoh = host_copy("memcpy_dtoh", "DtoH", 0)

    def memcpy_dtod(dst, src, nbytes, stream):
        r = rec()
        if r is None:
            return orig["memcpy_dtod"](dst, src, nbytes, stream)
        r.copy(drv, orig["memcpy_dtod"], "DtoD", None, nbytes, stream, True, (dst, src, nbytes, stream))

    def malloc(nbytes, device, stream):
        buf = orig["malloc"](nbytes, device, stream)
        r = rec()
        if r is not None:
            _trackers[id(buf)] = (weakref.ref(buf), r, r.malloc(drv, buf, nbytes, device))
        return buf

    def free(buffer, stream):
        orig["free"](buffer, stream)
        hit = _trackers.pop(id(buffer), None)
        if hit is not None and hit[0]() is buffer:
            hit[1]._cuda_free(*hit[2])  # recorded now (the buffer object may live on until its queue ran)

    def empty_cache():
        r = rec()
        if r is not None:
            _, file, line = _where()
            r.empty_cache(file, line)
        return orig["empty_cache"]()

    for n, fn in (("launch", launch), ("memcpy_htod", memcpy_htod), ("memcpy_dtoh", memcpy_dtoh),
                  ("memcpy_dtod", memcpy_dtod), ("malloc", malloc), ("free", free), ("empty_cache", empty_cache)):
        setattr(drv, n, fn)
    del cls
    return orig


_trackers = {}  # id(buffer) -> (weakref, recorder) for CUDA buffers allocated while profiling

_CLOCKS = ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns")


def _wrap_time():
    orig = {n: getattr(time, n) for n in _CLOCKS}

    def make(name, fn):
        def clock():
            f = sys._getframe(1)
            if not f.f_code.co_filename.startswith(_PKG):
                r = _recorders.get(get_ident())
                if r is not None and r.active:
                    r.clock_read(name, f.f_code.co_filename, f.f_lineno)
            return fn()
        clock.__name__ = name
        clock.__doc__ = fn.__doc__
        return clock

    for n, fn in orig.items():
        setattr(time, n, make(n, fn))
    return orig


def start(recorder):
    """Make `recorder` this thread's; install the listeners if it is the first."""
    global _driver_patch, _time_patch
    tid = recorder.thread
    with _lock:
        if tid in _recorders:
            raise RuntimeError("tl.profiler.profile: a profiler is already enabled on this thread (profiles "
                               "do not nest; close the outer one first)")
        drv = _cuda_driver() if recorder.cuda else None
        _recorders[tid] = recorder
        if len(_recorders) == 1:
            autograd_hooks.profiler = _on_op
            from ..autograd import grad_mode
            with grad_mode._lock:  # inference_mode recomputes _slow under this lock too
                grad_mode._refresh_slow()
            _time_patch = _wrap_time()
        if drv is not None and _driver_patch is None:
            _driver_patch = (drv, _wrap_driver(drv))
        _faults.alloc_listeners[tid] = _on_cpu_alloc
        recorder.prev_plan = _faults.install(recorder)
        recorder.tap = _Tap(recorder)
        with sync._traces_lock:
            sync._traces.append(recorder.tap)
        recorder.t0 = _clock()
        recorder.active = True


def stop(recorder):
    global _driver_patch, _time_patch
    recorder.flush()
    while recorder.open:
        recorder.pop_range(recorder.open[0])
    recorder.t1 = _clock()
    recorder.active = False
    tid = recorder.thread
    with _lock:
        with sync._traces_lock:
            if recorder.tap in sync._traces:
                sync._traces.remove(recorder.tap)
        if _faults.current() is recorder:
            _faults.install(recorder.prev_plan)
        _faults.alloc_listeners.pop(tid, None)
        _recorders.pop(tid, None)
        drv = _driver_patch[0] if _driver_patch is not None else None
        if not _recorders:
            autograd_hooks.profiler = None
            from ..autograd import grad_mode
            with grad_mode._lock:  # inference_mode recomputes _slow under this lock too
                grad_mode._refresh_slow()
            if _time_patch is not None:
                for n, fn in _time_patch.items():
                    setattr(time, n, fn)
                _time_patch = None
            if _driver_patch is not None:
                for n in _driver_patch[1]:
                    try:
                        delattr(drv, n)  # back to the class's methods
                    except AttributeError:
                        pass
                _driver_patch = None
            _trackers.clear()
    recorder.refs.clear()  # frees after the profile are not its business
    if recorder.clock:
        recorder.clock.resolve(drv if drv is not None else _cuda_driver())


def current():
    return _recorders.get(get_ident())
