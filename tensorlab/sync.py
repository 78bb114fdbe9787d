"""The one function through which the host waits for a device, and what watches it.

Every sync point names its reason (`item`, `tolist`, `copy to cpu`, `nonzero`, ...). Per thread,
the sync debug mode decides what an *implicit* sync does before it waits: nothing ("default",
0), a UserWarning ("warn", 1) or a RuntimeError ("error", 2), both naming the reason and the
user's file:line. Explicit waits (tl.cuda.synchronize, Stream/Event.synchronize) are what the
user asked for: the mode never refuses them, but traces record them too. An active
`sync_trace` records each sync with the reason, the user's call site (the first stack frame
outside the tensorlab package), the device and how long the host was blocked.

On the CPU nothing is asynchronous: host_wait returns at once and nothing is recorded.

After each wait the `_after_wait` hooks run: an error a device-side check found since the host last
looked (an out-of-range index, backends/cuda/device_checks.py) is raised there, at the first point
where the host waits anyway.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from typing import NamedTuple

from . import backends

_MODES = {"default": 0, "warn": 1, "error": 2}
_NAMES = {v: k for k, v in _MODES.items()}
_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep

_local = threading.local()  # .mode: this thread's debug mode (absent: 0)
_traces = []  # the open SyncTrace objects; each decides which threads it listens to
# called after every wait as hook(device, whole_device): raise what the device found while the host was
# not looking (backends/cuda/device_checks.py's raise_pending: index bounds checked on the device)
_after_wait = []
# called before every wait as hook(reason, device): refuse a wait that cannot happen now (a CUDA graph
# capture is open: backends/cuda/graphs.py)
_before_wait = []
_errors_as = threading.local()  # .stack: (op, wrap) of the enclosing reported_as blocks


class reported_as:
    """`with sync.reported_as(op, wrap):` an op built over other ops (index_reduce over scatter,
    nll_loss over gather) names itself in the errors a device-side check finds inside the block:
    the error raised later, at the next host wait, is wrap(error, bad_value) and names `op` as the
    launching op. On the CPU errors are raised at the call and the op handles them itself."""

    def __init__(self, op, wrap):
        self.entry = (op, wrap)

    def __enter__(self):
        stack = getattr(_errors_as, "stack", None)
        if stack is None:
            stack = _errors_as.stack = []
        stack.append(self.entry)
        return self

    def __exit__(self, *exc):
        _errors_as.stack.pop()
        return False


def error_wrapper():
    """The innermost reported_as (op, wrap) of this thread, or None."""
    stack = getattr(_errors_as, "stack", None)
    return stack[-1] if stack else None
_traces_lock = threading.Lock()


def host_wait(reason, device, wait=None, explicit=False):
    """Block the host until `device` finished its queued work (or until `wait()` returned, for a
    narrower wait such as one stream or event). `reason` names the operation for the debug mode
    and traces; `explicit` marks a wait the user asked for by name (never warned about)."""
    if device.type == "cpu":
        return
    if _before_wait:
        for hook in _before_wait:
            hook(reason, device)
    if not explicit and getattr(_local, "mode", 0):
        _complain(reason, device)
    t0 = time.perf_counter()
    if wait is None:
        backends.get(device).synchronize(device)
    else:
        wait()
    if _traces:
        _record(reason, device, (time.perf_counter() - t0) * 1e3, explicit)
    for hook in _after_wait:
        hook(device, wait is None)


# -- debug mode -------------------------------------------------------------------------------------
def _as_mode(debug_mode):
    if isinstance(debug_mode, str):
        mode = _MODES.get(debug_mode)
        if mode is None:
            raise RuntimeError(f"invalid value of debug_mode {debug_mode!r}, expected one of `default`, `warn`, "
                               "`error` (or 0, 1, 2)")
        return mode
    if isinstance(debug_mode, int) and not isinstance(debug_mode, bool):
        if debug_mode not in _NAMES:
            raise RuntimeError(f"invalid value of debug_mode {debug_mode}, expected 0 (default), 1 (warn) or "
                               "2 (error)")
        return debug_mode
    raise TypeError(f"set_sync_debug_mode(): debug_mode must be a str or an int, not {type(debug_mode).__name__}")


class SyncDebugMode:
    """What set_sync_debug_mode returns: the mode is already set for this thread; used as a context
    manager, the previous mode comes back on exit."""

    __slots__ = ("mode", "previous")

    def __init__(self, mode, previous):
        self.mode = mode
        self.previous = previous

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _local.mode = self.previous
        return False

    def __repr__(self):
        return f"sync debug mode {_NAMES[self.mode]!r} for this thread (was {_NAMES[self.previous]!r})"


def set_sync_debug_mode(debug_mode):
    """Set this thread's sync debug mode: "default"/0, "warn"/1 or "error"/2."""
    mode = _as_mode(debug_mode)
    previous = getattr(_local, "mode", 0)
    _local.mode = mode
    return SyncDebugMode(mode, previous)


def get_sync_debug_mode():
    """This thread's sync debug mode as an int (0 default, 1 warn, 2 error), as torch returns it."""
    return getattr(_local, "mode", 0)


def _call_site():
    """(filename, lineno, level) of the first frame outside tensorlab; level counts frames from the
    caller (1), as warnings.warn's stacklevel does."""
    f = sys._getframe(1)
    level = 1
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
        level += 1
    if f is None:
        return "<unknown>", 0, 1
    return f.f_code.co_filename, f.f_lineno, level


def _complain(reason, device):
    file, line, level = _call_site()
    where = f"{os.path.basename(file)}:{line}"
    if get_sync_debug_mode() >= 2:
        raise RuntimeError(f"called a synchronizing CUDA operation: {reason} on {device} at {where} (sync debug mode "
                           "is 'error'; keep the value on the device, or use tl.cuda.set_sync_debug_mode('default') "
                           "around code that must read it on the host)")
    # _call_site counted from this frame, as warnings.warn's stacklevel does
    warnings.warn(f"called a synchronizing CUDA operation: {reason} on {device} at {where}", UserWarning,
                  stacklevel=level)


# -- tracing ----------------------------------------------------------------------------------------
class SyncRecord(NamedTuple):
    reason: str
    device: object
    file: str
    line: int
    blocked_ms: float
    explicit: bool
    thread: str

    def __str__(self):
        kind = " (explicit)" if self.explicit else ""
        return (f"{self.reason}{kind} on {self.device} at {os.path.basename(self.file)}:{self.line}: "
                f"blocked {self.blocked_ms:.3f} ms")


class SyncTrace(list):
    """The syncs recorded while a `sync_trace()` block was open: a list of SyncRecord
    (reason, device, file, line, blocked_ms, explicit, thread)."""

    def __init__(self, all_threads=False):
        super().__init__()
        self.all_threads = all_threads
        self.thread = threading.get_ident()
        self._lock = threading.Lock()

    @property
    def total_ms(self):
        return sum(r.blocked_ms for r in self)

    def reasons(self):
        return [r.reason for r in self]

    def summary(self):
        """One line per (reason, call site): how often and how long the host waited."""
        if not len(self):
            return "no host/device synchronizations"
        groups = {}
        for r in self:
            key = (r.reason, os.path.basename(r.file), r.line, r.explicit)
            n, ms = groups.get(key, (0, 0.0))
            groups[key] = (n + 1, ms + r.blocked_ms)
        rows = sorted(groups.items(), key=lambda kv: -kv[1][1])
        width = max(len(f"{k[1]}:{k[2]}") for k, _ in rows)
        lines = [f"{len(self)} host/device synchronization{'s' if len(self) != 1 else ''}, "
                 f"host blocked {self.total_ms:.3f} ms in total:"]
        for (reason, file, line, explicit), (n, ms) in rows:
            site = f"{file}:{line}"
            lines.append(f"  {site:<{width}}  {n:>4}x  {ms:9.3f} ms  {reason}{' (explicit)' if explicit else ''}")
        return "\n".join(lines)

    def __str__(self):
        return self.summary()

    def __repr__(self):
        return f"SyncTrace({list.__repr__(self)})"

    def _listens(self, ident):
        return self.all_threads or ident == self.thread


class _TraceContext:
    def __init__(self, all_threads):
        self.trace = SyncTrace(all_threads)

    def __enter__(self):
        with _traces_lock:
            _traces.append(self.trace)
        return self.trace

    def __exit__(self, *exc):
        with _traces_lock:
            _traces.remove(self.trace)
        return False


def sync_trace(all_threads=False):
    """Context manager recording every host/device sync (of this thread, or of every thread with
    `all_threads=True`) into the SyncTrace it yields."""
    return _TraceContext(all_threads)


def _record(reason, device, blocked_ms, explicit):
    ident = threading.get_ident()
    listeners = [t for t in list(_traces) if t._listens(ident)]
    if not listeners:
        return
    file, line, _ = _call_site()
    rec = SyncRecord(reason, device, file, line, blocked_ms, explicit, threading.current_thread().name)
    for t in listeners:
        with t._lock:
            t.append(rec)
