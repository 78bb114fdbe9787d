"""tl.profiler.profile and record_function, with torch.profiler's names and defaults."""
from __future__ import annotations

import enum
import functools
import os

from . import _recording


class ProfilerActivity(enum.Enum):
    """What a profile records: CPU (op dispatches, record_function ranges, host waits, CPU memory)
    and CUDA (kernels, copies, CUDA allocations, timed with CUDA events)."""

    CPU = "CPU"
    CUDA = "CUDA"


class ProfilerAction(enum.Enum):
    """What a schedule asks of a profiler step (torch.profiler.ProfilerAction)."""

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait, warmup, active, repeat=0, skip_first=0):
    """torch.profiler.schedule: skip `skip_first` steps, then cycles of `wait` idle steps, `warmup`
    steps (not recorded: the first calls compile and allocate) and `active` recorded steps, the last
    of which hands the profile to on_trace_ready; `repeat` cycles (0: until the profile closes)."""
    if not (wait >= 0 and warmup >= 0 and active > 0 and repeat >= 0 and skip_first >= 0):
        raise AssertionError("Invalid profiler schedule arguments")
    if warmup == 0:
        import warnings
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", UserWarning, stacklevel=2)

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"schedule: step must be >= 0, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step // num_steps >= repeat:
            return ProfilerAction.NONE
        mod = step % num_steps
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE
    return schedule_fn


_RECORDING = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)


def supported_activities():
    """The activities this machine can record: CPU always, CUDA where a CUDA device can be used (the
    emulation driver's included)."""
    from .. import backends
    acts = {ProfilerActivity.CPU}
    if backends.cuda_emulated() or backends.cuda_unavailable_reason() is None:
        acts.add(ProfilerActivity.CUDA)
    return acts


class profile:
    """Record a program's ops, kernels, copies, allocations and host waits::

        with tl.profiler.profile(record_shapes=True, with_stack=True) as prof:
            train_step()
        print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=20))
        prof.export_chrome_trace("trace.json")
        print(prof.pitfalls())

    A profile records the thread that opens it (another thread's work goes to that thread's own
    profile, if it has one); profiles do not nest on one thread. Allocations are always recorded (the
    trace's memory counters, the churn pitfalls); `profile_memory=True` adds the memory columns to
    key_averages().table(), as in torch. Kernel and copy device times come
    from a pair of CUDA events around each, read when the profile closes (one wait per device)."""

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, use_cuda=None):
        acts = set(activities) if activities is not None else supported_activities()
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"profile(): activities must be ProfilerActivity members, got {a!r}")
        self.activities = acts
        self._cpu = ProfilerActivity.CPU in acts
        self._cuda = ProfilerActivity.CUDA in acts
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self._action = None
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self._rec = None
        self._nvtx = None

    # -- recording -------------------------------------------------------------------------------
    def start(self):
        if self._action is not None:
            raise RuntimeError("profile.start(): this profile is already started")
        self.step_num = 0
        self._action = ProfilerAction.RECORD if self.schedule is None else self.schedule(0)
        if self._action in _RECORDING:
            self._begin()

    def stop(self):
        if self._action is None:
            raise RuntimeError("profile.stop(): this profile is not started (call start() or use it as a "
                               "context manager)")
        action, self._action = self._action, None
        if self._rec is not None and self._rec.active:
            self._end()
            if action in _RECORDING and self.on_trace_ready is not None:
                self.on_trace_ready(self)

    def step(self):
        """Mark the end of a step for the schedule: recording starts, stops, and hands each finished
        cycle to on_trace_ready (each cycle's records replace the last)."""
        if self._action is None:
            raise RuntimeError("profile.step(): this profile is not started")
        prev = self._action
        self.step_num += 1
        self._action = ProfilerAction.RECORD if self.schedule is None else self.schedule(self.step_num)
        if prev == ProfilerAction.RECORD_AND_SAVE or (prev in _RECORDING and self._action not in _RECORDING):
            if self._rec is not None and self._rec.active:
                self._end()
                if self.on_trace_ready is not None:
                    self.on_trace_ready(self)
        if self._action in _RECORDING and (self._rec is None or not self._rec.active):
            self._begin()

    def _begin(self):
        self._rec = _recording.Recorder(self)
        self._nvtx = _nvtx_module() if self._cuda else None
        self._rec.nvtx = self._nvtx
        _recording.start(self._rec)

    def _end(self):
        _recording.stop(self._rec)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _done(self, what):
        if self._rec is None:
            raise RuntimeError(f"profile.{what}(): nothing was recorded (use the profile as a context manager "
                               "first)")
        if self._rec.active:
            raise RuntimeError(f"profile.{what}(): the profile is still recording; call it after the `with` block")
        return self._rec

    # -- what was recorded -----------------------------------------------------------------------
    @property
    def ops(self):
        """The op records (tl.profiler records: name, start, end, shapes, kernels, copies, ...)."""
        return list(self._done("ops").ops)

    @property
    def ranges(self):
        return list(self._done("ranges").ranges)

    @property
    def kernels(self):
        return list(self._done("kernels").kernels)

    @property
    def copies(self):
        return list(self._done("copies").copies)

    @property
    def memory_records(self):
        return list(self._done("memory_records").mems)

    @property
    def waits(self):
        return list(self._done("waits").waits)

    def events(self):
        """Every op and record_function range in start order, each a row of its own (an EventList of
        count-1 rows with .key, .cpu_time_total, .device_time_total, ..., and .table())."""
        from .key_averages import events
        return events(self._done("events"))

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0):
        """Totals per name (and input shapes / call site when asked): an EventList of FunctionEventAvg
        with .table(sort_by=..., row_limit=...)."""
        from .key_averages import key_averages
        return key_averages(self._done("key_averages"), group_by_input_shape, group_by_stack_n)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Write collapsed stacks (one "frame;...;op value" line per op call, the value in microseconds
        of `metric`: "self_cpu_time_total" or "self_cuda_time_total") for flame graph tools; needs
        with_stack=True."""
        from .key_averages import export_stacks
        rec = self._done("export_stacks")
        if not self.with_stack:
            raise RuntimeError("export_stacks() needs a profile recorded with with_stack=True: "
                               "tl.profiler.profile(with_stack=True)")
        export_stacks(rec, os.fspath(path), metric)
        return path

    def export_chrome_trace(self, path):
        """Write the Chrome trace-event JSON (Perfetto, chrome://tracing) to `path`."""
        from .chrome_trace import export
        export(self._done("export_chrome_trace"), os.fspath(path))
        return path

    def pitfalls(self):
        """What slows the program, with counts, time and the user's lines (a Pitfalls list; str() is
        the short report)."""
        from .pitfalls import find
        return find(self._done("pitfalls"))

    def plot_timeline(self, path=None, *, max_ms=None):
        """A matplotlib rendering of the timeline (host thread, streams, memory) to `path` (PNG, SVG,
        ...); returns the matplotlib Figure. Needs matplotlib."""
        from .plot import plot
        return plot(self._done("plot_timeline"), path, max_ms)


class record_function:
    """A named range in the profile (and an NVTX range on a real GPU, when `nvtx` is importable);
    a context manager and a decorator, as torch.profiler.record_function."""

    def __init__(self, name, args=None):
        if not isinstance(name, str):
            raise TypeError(f"record_function(): name must be a str, not {type(name).__name__}")
        self.name = name if args is None else f"{name}({args})"
        self._range = None
        self._nvtx = None

    def __enter__(self):
        r = _recording.current()
        if r is not None and r.active:
            self._range = r.push_range(self.name)
            nv = r.prof._nvtx
            if nv is not None:
                nv.push_range(self.name)
                self._nvtx = nv
        return self

    def __exit__(self, *exc):
        rg, self._range = self._range, None
        if rg is not None:
            r = _recording.current()
            if r is not None and r.active:
                r.pop_range(rg)  # closes an op's NVTX range still open inside this one first
            elif rg.end is None:
                from ._recording import _clock
                rg.end = _clock()
        if self._nvtx is not None:
            self._nvtx.pop_range()
            self._nvtx = None
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper


def _nvtx_module():
    """The `nvtx` package on a real GPU (never on the emulation driver), else None."""
    from ..backends.cuda import emulation
    if emulation.enabled():
        return None
    try:
        import nvtx
    except ImportError:
        return None
    return nvtx
