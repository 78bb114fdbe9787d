"""Fault-injection points. Every allocation ("alloc"), data copy ("copy": memcpy, host<->device
transfer, copy kernel) and every other kernel launch ("launch": one NumPy primitive on the CPU,
one CUDA kernel launch on a GPU) calls `hit(kind)` once, before it changes anything.
`tensorlab.testing` installs a plan for the calling thread only, so other threads (concurrency
tests, a notebook's background work) never see it. With no plan installed the cost is one
global read and a truth test.

Launch observers ride the same per-thread pattern: after the CUDA launch path queued a kernel it
reports where (`launched(device index, driver stream handle)`, guarded by `if observers:`), and
an observer installed with `observe` for the calling thread hears of that thread's launches only.
tl.benchmark.Timer uses it during warm-up to see which streams the timed function queued work on."""
from __future__ import annotations

from threading import get_ident

KINDS = ("alloc", "copy", "launch")

_plans = {}  # thread id -> object with .hit(kind); only that thread's events reach it
observers = {}  # thread id -> callable(device index, stream handle); only that thread's launches reach it


def hit(kind):
    if _plans:
        p = _plans.get(get_ident())
        if p is not None:
            p.hit(kind)


def install(plan):
    """Route this thread's events to `plan` (None: to nobody); returns the plan it replaced."""
    tid = get_ident()
    prev = _plans.get(tid)
    if plan is None:
        _plans.pop(tid, None)
    else:
        _plans[tid] = plan
    return prev


def current():
    return _plans.get(get_ident())


def launched(device, stream):
    """The CUDA launch path calls this (when `observers` is non-empty) after it queued a kernel on
    `stream` (the driver's handle) of `device` (an index)."""
    o = observers.get(get_ident())
    if o is not None:
        o(device, stream)


def observe(observer):
    """Route this thread's launch reports to `observer(device, stream)` (None: to nobody); returns
    the observer it replaced, which the new one should call too (observers nest)."""
    tid = get_ident()
    prev = observers.get(tid)
    if observer is None:
        observers.pop(tid, None)
    else:
        observers[tid] = observer
    return prev


# tensorlab.profiler's CPU allocation records ride the same pattern (CUDA allocations it sees at the
# driver): the CPU backend's allocate reports each buffer when `alloc_listeners` is non-empty.
alloc_listeners = {}  # thread id -> callable(buffer, nbytes); only that thread's allocations reach it


def allocated(buf, nbytes):
    o = alloc_listeners.get(get_ident())
    if o is not None:
        o(buf, nbytes)
