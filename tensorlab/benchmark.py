"""tl.benchmark: time a callable the way each device needs it.

    m = tl.benchmark.Timer(lambda: a @ b, device="cuda", label="matmul").measure()
    m.median, m.iqr, m.min, m.mean, m.times, m.method

- Warm-up first: the first call pays for kernel compilation and allocation, so it is timed on its
  own (`Measurement.first_call`) and kept out of the statistics.
- Many repetitions, each timed on its own: CUDA events around each repetition on a CUDA device
  (the host clock only sees when work was *queued*), `time.perf_counter` on the CPU. Events are
  recorded for a block of repetitions before the host waits once, so the device stays busy and
  the host's launch latency is not counted where the device is the bottleneck.
- Optionally the last-level cache is flushed before each repetition (`flush_l2=True`), so a
  kernel that re-reads the same buffer is not timed from a warm cache.
- Statistics a skewed distribution needs: median and IQR first, min and mean beside them.

Mistakes it can see are refused loudly (RuntimeError naming the mistake and the fix): a pair of
timing events recorded on different streams (a function that leaves another stream current),
reading the elapsed time before the end event completed, timing with the host clock a function
whose result lives on a CUDA device or that queues CUDA kernels, and timing with events on one
stream a function that queues kernels on another (`with tl.cuda.stream(side):` inside it). The
last two come from watching the warm-up calls: every CUDA kernel launch reports its device and
stream to a per-thread observer (`tensorlab._faults.observe`), and work the function itself
waits for before returning (`side.synchronize()`, `tl.cuda.synchronize()`, `.item()`) is not a
mistake. A timed function that makes the host wait for the device (`.item()`, printing, ...) is
measured but the Measurement says so in `notes`.

`Stopwatch` is the single-region building block (`with Stopwatch("cuda") as sw: ...`), and
`cuda_event_clock` a clock on the device's timeline for tools that take a timer function
(pytest-benchmark: `@pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock)`).
"""
from __future__ import annotations

import functools
import gc
import math
import os
import threading
import time
import types

import numpy as np

from . import _faults
from .device import CPU, Device, canonical
from .sync import sync_trace

__all__ = ["Measurement", "Stopwatch", "Timer", "cuda_event_clock"]

_BLOCK = 10  # CUDA repetitions queued before the host waits (and checks the time budget)
_EVENT_RESOLUTION_S = 5e-7  # CUDA event timestamps are about half a microsecond apart


def _on_cuda(device):
    return device.type == "cuda"


def _emulated():
    from . import backends
    be = backends._cuda
    return be is not None and getattr(be.driver, "name", "") == "emulation"


# -- where data lives -----------------------------------------------------------------------------
def _data_device(obj, depth=0):
    """The CUDA device of a tensor/array (tensorlab, CuPy or torch) found in obj or one level of
    containers inside it; CPU when it holds host data only; None when it holds no array at all."""
    from .tensor import Tensor
    if isinstance(obj, Tensor):
        return obj.device
    root = type(obj).__module__.partition(".")[0]
    if root == "cupy" and hasattr(obj, "device") and hasattr(obj, "shape"):
        return Device("cuda", int(obj.device.id))
    if root == "torch" and hasattr(obj, "is_cuda"):
        return Device("cuda", obj.device.index or 0) if obj.is_cuda else CPU
    if isinstance(obj, np.ndarray):
        return CPU
    if depth < 2:
        items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
        found = None
        for item in items:
            d = _data_device(item, depth + 1)
            if d is not None and d.type == "cuda":
                return d
            found = found or d
        return found
    return None


def _captured(fn, depth=0):
    """What `fn` reaches without being called: a bound method's object, a functools.partial's
    function and arguments, a function's closure cells and default arguments - and, two levels
    deep, those of the functions among them (a lambda calling a local closure)."""
    found = []
    self_ = getattr(fn, "__self__", None)
    if self_ is not None and not isinstance(self_, types.ModuleType):
        found.append(self_)
    if isinstance(fn, functools.partial):
        found += [fn.func, fn.args, fn.keywords]
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if isinstance(fn, types.FunctionType):
        for cell in fn.__closure__ or ():
            try:
                found.append(cell.cell_contents)
            except ValueError:  # a cell not filled yet
                pass
        found += [fn.__defaults__ or (), fn.__kwdefaults__ or {}]
    if depth < 2:
        for obj in list(found):
            if isinstance(obj, (types.FunctionType, types.MethodType, functools.partial)) and obj is not fn:
                found += _captured(obj, depth + 1)
    return found


def _stream_name(device, handle):
    from .cuda.streams import Stream
    return repr(Stream._wrap(handle, device))


# -- which streams the timed function queued work on ----------------------------------------------
class _LaunchLog:
    """Counts, per (device, stream), the CUDA kernels this thread queues while installed (a
    `_faults` launch observer), and how many calls left them un-waited-for: a call that launched
    on a stream and then made the host wait for that device (a sync in `trace`) is complete when
    it returns, whatever stream its work was on."""

    class Entry:
        __slots__ = ("device", "stream", "launches", "unwaited", "last")

        def __init__(self, device, stream):
            self.device, self.stream = device, stream
            self.launches = self.unwaited = 0
            self.last = None  # the trace length at this call's last launch; None: none this call

    def __init__(self, trace):
        self.trace = trace
        self.entries = {}  # (device index, id(stream handle)) -> Entry
        self._prev = None

    def __call__(self, device, stream):
        if self._prev is not None:
            self._prev(device, stream)
        e = self.entries.get((device, id(stream)))
        if e is None:
            e = self.entries[device, id(stream)] = self.Entry(device, stream)
        e.launches += 1
        e.last = len(self.trace)

    def end_call(self):
        """After each call: did the host wait for the device after the call's last launch there?"""
        for e in self.entries.values():
            if e.last is not None:
                if not any(r.device.type == "cuda" and r.device.index == e.device for r in self.trace[e.last:]):
                    e.unwaited += 1
                e.last = None

    def __enter__(self):
        self._prev = _faults.observe(self)
        return self

    def __exit__(self, *exc):
        _faults.observe(self._prev)
        return False


# -- one timed region -----------------------------------------------------------------------------
class Stopwatch:
    """Times one region on one device: `start()`, the work, `stop()`, then `elapsed_ms()`.

    On a CUDA device it records a pair of timing events on one stream (the current stream at
    start() unless `stream` is given) and refuses (RuntimeError) a stop() on another stream, and
    an elapsed_ms() before the end event completed - call synchronize() first. On the CPU it reads
    time.perf_counter. Also a context manager: `with Stopwatch("cuda") as sw: ...`."""

    __slots__ = ("device", "_stream", "_fixed", "_start", "_end", "_t0", "_t1")

    def __init__(self, device=None, stream=None):
        self.device = canonical(device)
        self._fixed = stream is not None
        self._stream = stream
        self._start = self._end = None
        self._t0 = self._t1 = None
        if stream is not None and (not _on_cuda(self.device) or stream.device != self.device):
            raise ValueError(f"Stopwatch: stream {stream!r} does not belong to device {self.device}")

    @property
    def method(self):
        return "cuda_event" if _on_cuda(self.device) else "perf_counter"

    def start(self):
        if _on_cuda(self.device):
            from . import cuda
            if not self._fixed:
                self._stream = cuda.current_stream(self.device)
            self._start = cuda.Event(enable_timing=True)
            self._end = cuda.Event(enable_timing=True)
            self._start.record(self._stream)
        else:
            self._t1 = None
            self._t0 = time.perf_counter()
        return self

    def stop(self):
        if not _on_cuda(self.device):
            if self._t0 is None:
                raise RuntimeError("Stopwatch.stop(): start() was never called")
            self._t1 = time.perf_counter()
            return self
        if self._start is None:
            raise RuntimeError("Stopwatch.stop(): start() was never called")
        if not self._fixed:
            from . import cuda
            now = cuda.current_stream(self.device)
            if now != self._stream:
                raise RuntimeError(
                    f"Stopwatch: the start event was recorded on {self._stream!r} but the current stream at stop() "
                    f"is {now!r}. Events on two streams measure two unrelated timelines; record both on one stream "
                    "(leave the `with tl.cuda.stream(...)` block before stop(), or pass stream= to Stopwatch).")
        self._end.record(self._stream)
        return self

    def synchronize(self):
        """Wait until the timed work has finished (an explicit sync; nothing to do on the CPU)."""
        if self._end is not None:
            self._end.synchronize()

    def query(self):
        """True once the region has been stopped and its work completed."""
        if _on_cuda(self.device):
            return self._end is not None and self._end.device is not None and self._end.query()
        return self._t1 is not None

    def elapsed_ms(self):
        """Milliseconds between start() and stop(), as the device saw them."""
        if not _on_cuda(self.device):
            if self._t1 is None:
                raise RuntimeError("Stopwatch.elapsed_ms(): call start() and stop() first")
            return (self._t1 - self._t0) * 1e3
        if self._end is None or self._end.device is None:
            raise RuntimeError("Stopwatch.elapsed_ms(): call start() and stop() first")
        if not self._end.query():
            raise RuntimeError(
                "Stopwatch.elapsed_ms(): the end event has not completed - the device is still running the timed "
                "work, so there is no end time yet. Call .synchronize() (or tl.cuda.synchronize()) first.")
        return self._start.elapsed_time(self._end)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if exc[0] is None:
            self.stop()
        return False

    def __repr__(self):
        state = f"{self.elapsed_ms():.4f} ms" if self.query() else "running" if self._t0 or self._start else "idle"
        return f"<tensorlab.benchmark.Stopwatch {self.device} {self.method}: {state}>"


# -- a clock on the device's timeline ------------------------------------------------------------
_clock = threading.local()  # .refs: device index -> [reference event, its time in seconds]
_REBASE_MS = 1000.0  # elapsed_time is a float32 of milliseconds: keep it small to keep it precise


def cuda_event_clock():
    """Seconds on the current CUDA device's timeline: records an event on the current stream,
    waits for it (an explicit sync), and returns its time since this thread's first reading on
    that device. The difference of two readings is the device time of the work queued between
    them, measured by CUDA events - a drop-in for time.perf_counter in tools that take a timer
    function, e.g. `@pytest.mark.benchmark(timer=tl.benchmark.cuda_event_clock)`."""
    from . import cuda
    ev = cuda.Event(enable_timing=True)
    ev.record()
    ev.synchronize()
    refs = getattr(_clock, "refs", None)
    if refs is None:
        refs = _clock.refs = {}
    ref = refs.get(ev.device.index)
    if ref is None:
        refs[ev.device.index] = [ev, 0.0]
        return 0.0
    ms = ref[0].elapsed_time(ev)
    now = ref[1] + ms / 1e3
    if ms > _REBASE_MS:
        ref[0], ref[1] = ev, now
    return now


# -- the result -----------------------------------------------------------------------------------
def _fmt_time(s):
    if s is None or not math.isfinite(s):
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return f"{s / scale:.4g} {unit}"
    return f"{s / 1e-9:.4g} ns"


class Measurement:
    """What Timer.measure returns. `times` holds one duration per repetition, in seconds per call
    (a repetition of `number` calls is divided by `number`), in the order they ran."""

    __slots__ = ("label", "device", "method", "times", "number", "warmup", "first_call", "flush_l2", "emulated",
                 "notes", "_sorted")

    def __init__(self, times, *, label="", device="cpu", method="perf_counter", number=1, warmup=0, first_call=None,
                 flush_l2=False, emulated=False, notes=()):
        if not times:
            raise ValueError("Measurement needs at least one time")
        self.times = tuple(float(t) for t in times)
        self.label = label
        self.device = str(device)
        self.method = method
        self.number = int(number)
        self.warmup = int(warmup)
        self.first_call = first_call
        self.flush_l2 = bool(flush_l2)
        self.emulated = bool(emulated)
        self.notes = tuple(notes)
        self._sorted = np.sort(np.asarray(self.times, dtype=np.float64))

    def _q(self, q):
        return float(np.quantile(self._sorted, q))

    @property
    def median(self):
        return self._q(0.5)

    @property
    def q1(self):
        return self._q(0.25)

    @property
    def q3(self):
        return self._q(0.75)

    @property
    def iqr(self):
        return self.q3 - self.q1

    @property
    def min(self):
        return float(self._sorted[0])

    @property
    def max(self):
        return float(self._sorted[-1])

    @property
    def mean(self):
        return float(self._sorted.mean())

    @property
    def std(self):
        return float(self._sorted.std(ddof=1)) if len(self.times) > 1 else 0.0

    @property
    def repeat(self):
        return len(self.times)

    def to_dict(self):
        return {"label": self.label, "device": self.device, "method": self.method, "emulated": self.emulated,
                "median_s": self.median, "iqr_s": self.iqr, "q1_s": self.q1, "q3_s": self.q3, "min_s": self.min,
                "max_s": self.max, "mean_s": self.mean, "std_s": self.std, "repeat": self.repeat,
                "number": self.number, "warmup": self.warmup, "first_call_s": self.first_call,
                "flush_l2": self.flush_l2, "times_s": list(self.times), "notes": list(self.notes)}

    def __repr__(self):
        how = "CUDA events" if self.method == "cuda_event" else "time.perf_counter"
        if self.emulated:
            how += " (emulated device: the events record host time)"
        lines = [f"<tensorlab.benchmark.Measurement{' ' + self.label if self.label else ''} on {self.device}>",
                 f"  median {_fmt_time(self.median)}   IQR {_fmt_time(self.iqr)} ({_fmt_time(self.q1)} to "
                 f"{_fmt_time(self.q3)})   min {_fmt_time(self.min)}   mean {_fmt_time(self.mean)}",
                 f"  {self.repeat} repetitions x {self.number} call{'s' if self.number != 1 else ''}, "
                 f"timed with {how}; "
                 f"{self.warmup} warm-up call{'s' if self.warmup != 1 else ''}"
                 + (f" (the first took {_fmt_time(self.first_call)})" if self.first_call is not None else "")
                 + ("; cache flushed before each repetition" if self.flush_l2 else "")]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# -- the timer ------------------------------------------------------------------------------------
def _cpu_cache_bytes():
    """The largest CPU cache (sysfs), or 32 MiB when the system does not say."""
    best = 0
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            with open(os.path.join(base, entry, "size")) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * scale)
    except (OSError, ValueError):
        pass
    return best or 32 << 20


class _Flusher:
    """Overwrites a buffer twice the size of the device's last-level cache, queued on the timed
    stream before each repetition, so the timed work starts from a cold cache."""

    def __init__(self, device, nbytes):
        if nbytes is True:
            if _on_cuda(device):
                from . import cuda
                nbytes = 2 * cuda.get_device_properties(device).L2_cache_size
            else:
                nbytes = 2 * _cpu_cache_bytes()
        nbytes = max(int(nbytes), 1 << 20)
        if _on_cuda(device):
            from .ops.creation import empty
            from .dtypes import uint8
            self._fill = empty(nbytes, dtype=uint8, device=device).fill_
        else:
            self._fill = np.empty(nbytes, dtype=np.uint8).fill
        self.nbytes = nbytes
        self._n = 0

    def __call__(self):
        self._n = (self._n + 1) & 0xFF  # a new value each time: no layer can skip the write
        self._fill(self._n)


def _positive_int(name, v, minimum=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < minimum:
        raise ValueError(f"Timer: {name} must be an integer >= {minimum}, got {v!r}")
    return int(v)


class Timer:
    """Times `fn(*args, **kwargs)` on `device`.

    device: where the work runs ("cpu", "cuda", "cuda:1", a Device); None: the device of the first
        CUDA tensor/array (tensorlab, CuPy or torch) that args/kwargs hold, or that fn reaches
        without being called (the object of a bound method, a partial's arguments, a closure's
        cells, default arguments), else the CPU (with stream= given: the stream's device).
    warmup: calls before timing (at least 1; the first is timed alone as `first_call`).
    repeat: timed repetitions; number: calls per repetition (the time is divided by it).
    max_time: stop after this many seconds of repetitions (at least 3 repetitions run).
    flush_l2: overwrite a buffer twice the last-level cache before each repetition (True), or one
        of this many bytes (an int); the flush is not timed.
    stream: on CUDA, the stream to run on: it is made current while measuring and the events are
        recorded there (default: the current stream). `fn` must queue its work on the current
        stream, as tensorlab does (CuPy and torch use the legacy default stream unless told).
    joined_streams: fn queues tensorlab work on other streams but makes the timed stream wait for
        it before returning (`tl.cuda.current_stream().wait_stream(side)`), so the end event
        follows that work: do not refuse it (default False: work left on another stream is refused).

    Refused (RuntimeError) after the warm-up calls, before any repetition is timed: a host-clock
    timer whose fn queued CUDA kernels (or returned CUDA data) without waiting for them, and a
    CUDA timer whose fn queued kernels on a stream other than the timed one without waiting for
    them. (Kernel launches are seen for tensorlab's own kernels; CuPy's and torch's are not.)
    """

    def __init__(self, fn, args=(), kwargs=None, *, device=None, label="", warmup=3, repeat=30, number=1,
                 max_time=None, flush_l2=False, stream=None, joined_streams=False):
        if not callable(fn):
            raise TypeError(f"Timer: fn must be callable, got {type(fn).__name__}")
        self.fn = fn
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        if device is None and stream is not None:
            device = stream.device
        if device is None:  # the first CUDA data among args, kwargs and what fn holds
            found = (_data_device(x) for x in (self.args, self.kwargs, *_captured(fn)))
            device = next((d for d in found if d is not None and d.type == "cuda"), CPU)
        self.device = canonical(device)
        self.label = label
        self.warmup = _positive_int("warmup", warmup)
        self.repeat = _positive_int("repeat", repeat)
        self.number = _positive_int("number", number)
        if max_time is not None and not max_time > 0:
            raise ValueError(f"Timer: max_time must be a positive number of seconds, got {max_time!r}")
        self.max_time = max_time
        self.flush_l2 = flush_l2
        self.stream = stream
        self.joined_streams = bool(joined_streams)
        if stream is not None and not _on_cuda(self.device):
            raise ValueError(f"Timer: stream= needs a CUDA device, but the timed device is {self.device}")

    def _call(self):
        return self.fn(*self.args, **self.kwargs)

    def _check_result(self, result):
        where = _data_device(result)
        if where is not None and where.type == "cuda" and not _on_cuda(self.device):
            raise RuntimeError(
                f"Timer{' ' + repr(self.label) if self.label else ''}: the timed function returned data on {where} "
                f"but is timed on {self.device} with the host clock. CUDA work is queued asynchronously, so a host "
                f"clock measures only the launch. Time it with device='{where}' (CUDA events).")

    def _check_launches(self, log, timed):
        """Refuse CUDA work the timing cannot see: on the host clock, kernels fn did not wait for;
        on CUDA events, kernels fn did not wait for on a stream other than the timed one."""
        left = [e for e in log.entries.values() if e.unwaited]
        if not left:
            return
        name = f"Timer{' ' + repr(self.label) if self.label else ''}"

        def per_call(e):
            n = e.launches / self.warmup
            return f"{n:g} CUDA kernel launch{'' if n == 1 else 'es'}"

        if not _on_cuda(self.device):
            e = left[0]
            where = f"cuda:{e.device}"
            raise RuntimeError(
                f"{name}: the timed function queued {per_call(e)} per call on {where} "
                f"({_stream_name(e.device, e.stream)}) and returned without waiting for them, but it is timed on "
                f"{self.device} with the host clock (time.perf_counter). CUDA kernels run asynchronously, so the "
                f"host clock measures only the launches. Time it with device='{where}' (CUDA events), or end fn "
                f"with tl.cuda.synchronize() if the host's round trip is what you mean to measure.")
        if self.joined_streams:
            return
        other = [e for e in left if (e.device, id(e.stream)) != (timed._idx, id(timed._handle))]
        if other:
            e = other[0]
            raise RuntimeError(
                f"{name}: the timed function queued {per_call(e)} per call on {_stream_name(e.device, e.stream)}, "
                f"but the timing events are recorded on {timed!r}. Events on one stream do not wait for work on "
                f"another, so the times would not contain that work (a `with tl.cuda.stream(...)` block inside "
                f"fn?). Time on that stream (Timer(..., stream=that_stream), with fn queuing on the current stream), "
                f"or wait for it inside fn (that_stream.synchronize() or tl.cuda.synchronize()); if fn makes the "
                f"timed stream wait for it before returning (tl.cuda.current_stream().wait_stream(that_stream)), "
                f"pass joined_streams=True.")

    def _warm_up(self):
        """Run the warm-up calls, watching which streams they queue kernels on; returns (seconds
        of the first call, notes)."""
        notes = []
        cuda = _on_cuda(self.device)
        with sync_trace() as trace:
            with _LaunchLog(trace) as log:
                sw = Stopwatch(self.device, self.stream).start()
                result = self._call()
                sw.stop()
                log.end_call()
                self._check_result(result)
                del result
                for _ in range(self.warmup - 1):
                    self._call()
                    log.end_call()
            self._check_launches(log, sw._stream)
            if cuda:
                sw.synchronize()
            first = sw.elapsed_ms() / 1e3
            if cuda:
                from . import cuda as tl_cuda
                tl_cuda.synchronize(self.device)
        implicit = [r for r in trace if not r.explicit]
        if implicit:
            per_call = len(implicit) / self.warmup
            where = sorted({f"{r.reason} at {os.path.basename(r.file)}:{r.line}" for r in implicit})
            notes.append(f"the timed function made the host wait for the device {per_call:g}x per call "
                         f"({'; '.join(where)}): the times include those round trips")
        return first, notes

    def measure(self):
        """Warm up, then time the repetitions; returns a Measurement."""
        if self.stream is None:
            return self._measure()
        from . import cuda
        with cuda.stream(self.stream):
            return self._measure()

    def _measure(self):
        cuda = _on_cuda(self.device)
        flush = _Flusher(self.device, self.flush_l2) if self.flush_l2 else None
        first, notes = self._warm_up()
        times = []
        budget_end = None if self.max_time is None else time.perf_counter() + self.max_time
        min_reps = min(self.repeat, 3)
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            while len(times) < self.repeat:
                block = min(_BLOCK if cuda else 1, self.repeat - len(times))
                watches = []
                for _ in range(block):
                    if flush is not None:
                        flush()
                    sw = Stopwatch(self.device, self.stream).start()
                    for _ in range(self.number):
                        self._call()
                    watches.append(sw.stop())
                if cuda:
                    watches[-1].synchronize()
                times.extend(w.elapsed_ms() / 1e3 / self.number for w in watches)
                if budget_end is not None and len(times) >= min_reps and time.perf_counter() > budget_end:
                    break
        finally:
            if gc_was_enabled:
                gc.enable()
        rep = float(np.median(times)) * self.number
        if cuda and rep < 10 * _EVENT_RESOLUTION_S:
            notes.append(f"a repetition takes {_fmt_time(rep)}, close to the CUDA event resolution (~0.5 us): raise "
                         "number= to time several calls per repetition")
        return Measurement(times, label=self.label, device=self.device, method="cuda_event" if cuda else "perf_counter",
                           number=self.number, warmup=self.warmup, first_call=first, flush_l2=flush is not None,
                           emulated=cuda and _emulated(), notes=notes)

    def __repr__(self):
        return (f"<tensorlab.benchmark.Timer {self.label or getattr(self.fn, '__name__', 'fn')} on {self.device} "
                f"warmup={self.warmup} repeat={self.repeat} number={self.number}>")
