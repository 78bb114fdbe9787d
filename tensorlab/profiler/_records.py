"""What a profile holds: one small record class per kind of activity. Host times are seconds on
time.perf_counter's clock (the clock sync.host_wait measures with); device times are filled in from
CUDA events when the profile ends (`dev_start`/`dev_end`, seconds on the same clock)."""
from __future__ import annotations

import os


class Range:
    """A tl.profiler.record_function range (torch's "user_annotation")."""

    __slots__ = ("id", "name", "start", "end", "parent", "thread", "file", "line")
    kind = "range"

    def __init__(self, id, name, start, parent, thread, file, line):
        self.id, self.name, self.start, self.end, self.parent = id, name, start, None, parent
        self.thread, self.file, self.line = thread, file, line


class Op:
    """One op dispatch: its name, inputs (with record_shapes), host start/end, the user's line
    (with with_stack), the record_function range it ran in, and what it caused."""

    __slots__ = ("id", "name", "start", "end", "parent", "thread", "shapes", "dtypes", "devices", "file", "line",
                 "kernels", "copies", "mems", "waits", "derived", "stack")
    kind = "op"

    def __init__(self, id, name, start, end, parent, thread, file, line, derived=False):
        self.id, self.name, self.start, self.end, self.parent, self.thread = id, name, start, end, parent, thread
        self.file, self.line = file, line
        self.shapes = self.dtypes = self.devices = None
        self.kernels, self.copies, self.mems, self.waits = [], [], [], []
        self.derived = derived  # a host read (item, tolist, repr, ...) that records no op of its own
        self.stack = []  # with_stack: the user's Python stack, "file(line): function", innermost first

    @property
    def where(self):
        return f"{os.path.basename(self.file)}:{self.line}" if self.file else ""


class Kernel:
    """One kernel launch: instantiation, grid, block, stream, the op that launched it, the host time of
    the launch call and the device interval from the event pair around it."""

    __slots__ = ("id", "name", "grid", "block", "device", "stream", "op", "start", "end", "events", "dev_start",
                 "dev_end", "file", "line")
    kind = "kernel"

    def __init__(self, id, name, grid, block, device, stream, start, end, events, file, line):
        self.id, self.name, self.grid, self.block, self.device, self.stream = id, name, grid, block, device, stream
        self.op, self.start, self.end, self.events = None, start, end, events
        self.dev_start = self.dev_end = None
        self.file, self.line = file, line

    @property
    def dev_dur(self):
        return None if self.dev_start is None else self.dev_end - self.dev_start


class Copy:
    """One copy: "HtoD", "DtoH" or "DtoD", bytes, pinned (host side page-locked), blocking (the host
    waits for it), device/stream and the device interval."""

    __slots__ = ("id", "direction", "nbytes", "pinned", "blocking", "device", "stream", "op", "start", "end",
                 "events", "dev_start", "dev_end", "file", "line")
    kind = "copy"

    def __init__(self, id, direction, nbytes, pinned, blocking, device, stream, start, end, events, file, line):
        self.id, self.direction, self.nbytes, self.pinned, self.blocking = id, direction, nbytes, pinned, blocking
        self.device, self.stream, self.op, self.start, self.end, self.events = device, stream, None, start, end, events
        self.dev_start = self.dev_end = None
        self.file, self.line = file, line

    @property
    def dev_dur(self):
        return None if self.dev_start is None else self.dev_end - self.dev_start

    @property
    def name(self):
        if self.direction == "DtoD":
            return "Memcpy DtoD (Device -> Device)"
        mem = "Pinned" if self.pinned else "Pageable"
        return (f"Memcpy HtoD ({mem} -> Device)" if self.direction == "HtoD"
                else f"Memcpy DtoH (Device -> {mem})")


class Mem:
    """One allocation (nbytes > 0) or free (nbytes < 0) on `device` ("cpu" or "cuda:N"), with the
    pool's state after it: allocated, reserved, peak (max allocated)."""

    __slots__ = ("t", "device", "nbytes", "allocated", "reserved", "peak", "op", "file", "line")
    kind = "mem"

    def __init__(self, t, device, nbytes, allocated, reserved, peak, file, line):
        self.t, self.device, self.nbytes = t, device, nbytes
        self.allocated, self.reserved, self.peak = allocated, reserved, peak
        self.op, self.file, self.line = None, file, line


class Wait:
    """One host wait, from sync.host_wait: reason, the user's file:line, blocked time, and the device
    work queued last before it (what it waited for)."""

    __slots__ = ("start", "end", "reason", "device", "explicit", "file", "line", "op", "target")
    kind = "wait"

    def __init__(self, start, end, reason, device, explicit, file, line, target):
        self.start, self.end, self.reason, self.device, self.explicit = start, end, reason, device, explicit
        self.file, self.line, self.op, self.target = file, line, None, target


class ClockRead:
    """A host clock read (time.perf_counter, time.time, ...) in the user's code while profiling."""

    __slots__ = ("t", "clock", "file", "line")
    kind = "clock"

    def __init__(self, t, clock, file, line):
        self.t, self.clock, self.file, self.line = t, clock, file, line


class EmptyCache:
    __slots__ = ("t", "file", "line")
    kind = "empty_cache"

    def __init__(self, t, file, line):
        self.t, self.file, self.line = t, file, line
