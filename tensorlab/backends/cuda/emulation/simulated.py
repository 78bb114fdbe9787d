"""SimulatedDriver: the emulation driver made asynchronous, for teaching on a machine without a GPU. A SIMULATION:
the kernels are the real kernels/*.cu built for the host (as in the emulation), but each device has a device
thread that runs the queued work in order, so a launch (or copy, or event record) returns to the host before
the work is done - as on a GPU - and the host waits only where it asks (synchronize, item(), a blocking copy
to the host). Events are stamped by the device thread when it reaches them, so Event.elapsed_time measures the
simulated device's time, and an event or stream query before the work ran says "not ready".

Switched on with TENSORLAB_CUDA_EMULATION_ASYNC=1 beside TENSORLAB_CUDA_EMULATION=1 (the launcher:
`python -m tensorlab.backends.cuda.emulation --async ...`). Semantics kept from CUDA: one in-order queue per
device (stricter than CUDA's independent streams, which only ever allows more overlap); pageable copies to the
device are staged at the call (the host array may be reused at once), copies to pageable host memory wait for
the queue, pinned copies with non_blocking=True do not; an error in queued work is reported by the next call
that synchronizes or launches, as CUDA's asynchronous errors are. What it does not model: a GPU's speed (the
device thread runs kernels at host-CPU speed) and overlap between streams."""
from __future__ import annotations

import collections
import contextlib
import ctypes
import threading
import time

import numpy as np

from .driver import FREED_BYTE, EmulatedBuffer, EmulatedEvent, EmulationDriver

ENV = "TENSORLAB_CUDA_EMULATION_ASYNC"


class SimulatedEvent(EmulatedEvent):
    __slots__ = ("done", "device")

    def __init__(self, enable_timing, blocking):
        super().__init__(enable_timing, blocking)
        self.done = True  # never recorded: complete, as cudaEventQuery of a fresh event
        self.device = None


class _Device:
    """One device's in-order work queue and the thread that runs it."""

    def __init__(self, index):
        self.index = index
        self.cond = threading.Condition()
        self.queue = collections.deque()
        self.submitted = 0
        self.completed = 0
        self.error = None      # the first error of queued work, raised by the next synchronizing call
        self.held = 0          # hold(): the device thread starts nothing while > 0
        self.thread = threading.Thread(target=self._run, name=f"tensorlab-simulated-cuda:{index}", daemon=True)
        self.thread.start()

    def submit(self, fn):
        with self.cond:
            self.submitted += 1
            ticket = self.submitted
            self.queue.append(fn)
            self.cond.notify_all()
        return ticket

    def _run(self):
        while True:
            with self.cond:
                while not self.queue or self.held:
                    self.cond.wait()
                fn = self.queue.popleft()
            try:
                if self.error is None:  # after an error the context is unusable: queued work is dropped
                    fn()
            except BaseException as e:  # noqa: BLE001 (reported to the host at its next synchronizing call)
                if self.error is None:
                    self.error = e
            with self.cond:
                self.completed += 1
                self.cond.notify_all()

    def wait(self, ticket=None):
        with self.cond:
            target = self.submitted if ticket is None else ticket
            while self.completed < target:
                self.cond.wait()

    def raise_error(self):
        e = self.error
        if e is not None:
            raise RuntimeError(f"CUDA error (simulated device {self.index}, raised by work queued earlier): "
                               f"{type(e).__name__}: {e}") from e


class SimulatedDriver(EmulationDriver):
    """See the module docstring."""

    name = "emulation (simulated asynchronous device)"

    def __init__(self, asan=None):
        super().__init__(asan)
        self._devices = [None] * self._count
        self._devices_lock = threading.Lock()

    def _dev(self, index):
        d = self._devices[index]
        if d is None:
            with self._devices_lock:
                d = self._devices[index]
                if d is None:
                    d = self._devices[index] = _Device(index)
        return d

    def _enqueue(self, device, fn):
        d = self._dev(device)
        d.raise_error()
        return d.submit(fn)

    def _sync(self, device, ticket=None):
        d = self._dev(device)
        d.wait(ticket)
        d.raise_error()

    @contextlib.contextmanager
    def hold(self, device=0):
        """Keep device `device` from starting queued work while the block runs (tests and demos: what the host
        sees before the device has run anything)."""
        d = self._dev(self._check(device))
        with d.cond:
            d.held += 1
        try:
            yield
        finally:
            with d.cond:
                d.held -= 1
                d.cond.notify_all()

    # -- synchronization --------------------------------------------------------------------------
    def device_synchronize(self, index):
        self._sync(self._check(index))

    def stream_synchronize(self, stream):
        self._sync(stream.device)

    def stream_query(self, stream):
        d = self._dev(stream.device)
        with d.cond:
            return d.completed == d.submitted

    def stream_wait_event(self, stream, event):
        pass  # one in-order queue per device: work queued later already runs after the event's

    def create_event(self, enable_timing, blocking):
        return SimulatedEvent(bool(enable_timing), bool(blocking))

    def event_record(self, event, stream):
        event.done = False
        event.time = None
        event.device = stream.device

        def stamp():
            event.time = time.perf_counter()
            event.done = True
        self._enqueue(stream.device, stamp)

    def event_query(self, event):
        return bool(getattr(event, "done", True))

    def event_synchronize(self, event):
        if getattr(event, "device", None) is None:
            return
        d = self._dev(event.device)
        with d.cond:
            while not event.done and d.error is None:
                d.cond.wait()
        d.raise_error()

    def event_elapsed_ms(self, start, end):
        if start.enable_timing and end.enable_timing and not (self.event_query(start) and self.event_query(end)):
            raise RuntimeError("CUDA error: device not ready (an event's work has not run yet on the simulated "
                               "device: synchronize on the end event first)")
        return super().event_elapsed_ms(start, end)

    # -- memory and copies ------------------------------------------------------------------------
    def free(self, buffer, stream):
        """Counted free at once (as the caching allocator's statistics); the bytes are poisoned when the device
        reaches this point of its queue (work queued before still reads them intact)."""
        self._uncount(buffer)
        if type(buffer) is EmulatedBuffer and buffer.nbytes:
            self._enqueue(stream.device, lambda b=buffer: ctypes.memset(b.ptr, FREED_BYTE, b.nbytes))

    def memcpy_htod(self, dst, host, nbytes, stream, non_blocking):
        if not nbytes:
            return
        self._address(dst, nbytes, "memcpy_htod")  # checked at the call, as CUDA's argument errors are
        pinned = self.is_pinned(host)
        src = host if pinned else np.array(host.reshape(-1).view(np.uint8)[:nbytes], copy=True)  # staged now
        parent = super().memcpy_htod
        ticket = self._enqueue(stream.device, lambda: parent(dst, src, nbytes, stream, non_blocking))
        if pinned and not non_blocking:
            self._sync(stream.device, ticket)

    def memcpy_dtoh(self, host, src, nbytes, stream, non_blocking):
        if not nbytes:
            return
        self._address(src, nbytes, "memcpy_dtoh")
        parent = super().memcpy_dtoh
        ticket = self._enqueue(stream.device, lambda: parent(host, src, nbytes, stream, non_blocking))
        if not (non_blocking and self.is_pinned(host)):  # pageable (or a blocking copy): the host waits for it
            self._sync(stream.device, ticket)

    def memcpy_dtod(self, dst, src, nbytes, stream):
        parent = super().memcpy_dtod
        self._address(dst, nbytes, "memcpy_dtod")
        self._address(src, nbytes, "memcpy_dtod")
        self._enqueue(stream.device, lambda: parent(dst, src, nbytes, stream))

    def memset(self, dst, value, nbytes, stream):
        parent = super().memset
        self._address(dst, nbytes, "memset")
        self._enqueue(stream.device, lambda: parent(dst, value, nbytes, stream))

    def gemm(self, *args, **kw):
        parent = super().gemm
        stream = args[-1]
        self._enqueue(stream.device, lambda: parent(*args, **kw))

    def gemm_epilogue(self, *args, **kw):
        parent = super().gemm_epilogue
        stream = args[-1]
        self._enqueue(stream.device, lambda: parent(*args, **kw))

    def csrmm(self, *args):
        parent = super().csrmm
        stream = args[-1]
        self._enqueue(stream.device, lambda: parent(*args))

    # -- launches ---------------------------------------------------------------------------------
    def launch(self, function, grid, block, args, shared_mem, stream):
        if len(args) != len(function.kinds):  # argument errors surface at the call, as CUDA's launch errors
            raise TypeError(f"kernel {function.name}: takes {len(function.kinds)} arguments, got {len(args)}")
        parent = super().launch
        if getattr(self._local, "kernel_log", None) is not None:  # kernel_timing() open here: run it inline
            self._sync(stream.device)
            return parent(function, grid, block, args, shared_mem, stream)
        args = tuple(args)  # the queued launch holds the buffers its pointers name
        self._enqueue(stream.device, lambda: parent(function, grid, block, args, shared_mem, stream))


def enabled():
    import os
    return os.environ.get(ENV) == "1"
