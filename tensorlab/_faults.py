"""Fault-injection points. Every allocation ("alloc"), data copy ("copy": memcpy, host<->device
transfer, copy kernel) and every other kernel launch ("launch": one NumPy primitive on the CPU,
one CUDA kernel launch on a GPU) calls `hit(kind)` once, before it changes anything.
`tensorlab.testing` installs a plan for the calling thread only, so other threads (concurrency
tests, a notebook's background work) never see it. With no plan installed the cost is one
global read and a truth test."""
from __future__ import annotations

from threading import get_ident

KINDS = ("alloc", "copy", "launch")

_plans = {}  # thread id -> object with .hit(kind); only that thread's events reach it


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
