"""Work handles (what `async_op=True` returns) and the deadline-polled wait every MPI request goes through.

MPI requests are never waited on with a blocking MPI call: `poll` tests them against a deadline
(the process group's timeout), so a rank that died or never called the collective turns into a
DistBackendError on the others instead of a hang. A timed-out operation leaves its requests
pending inside MPI; the buffers they may still write are private ones (never a tensor's memory),
kept alive by the process group, so a late message cannot land in a tensor.

Waits are host waits: they are recorded in `tl.cuda.sync_trace()` and the profiler (both hear
sync's listeners) with the operation's name, explicit when the user called `Work.wait()`.
"""
from __future__ import annotations

import threading
import time

from .. import sync
from .errors import DistBackendError


def _record_wait(reason, device, t0, explicit):
    if sync._traces:
        sync._record(reason, device, (time.perf_counter() - t0) * 1e3, explicit)


def test_all(reqs):
    """True when every request completed (non-blocking)."""
    from mpi4py import MPI
    return MPI.Request.Testall(reqs)


def poll(test, deadline):
    """Call `test()` until it returns True or `deadline` (time.monotonic) passes; False on timeout.
    Spins briefly, then backs off to millisecond sleeps so waiting ranks leave the cores to the
    ranks that still compute."""
    n = 0
    while not test():
        now = time.monotonic()
        if now >= deadline:
            return test()
        n += 1
        if n < 64:
            time.sleep(0)
        else:
            time.sleep(min(2e-3, max(0.0, deadline - now), 1e-5 * n))
    return True


class Work:
    """A collective or point-to-point operation in flight (torch.distributed's Work).

    wait(timeout=None): block until it finished (for NCCL: make the current stream wait for it,
    no host sync); raises DistBackendError after the process group's timeout, or `timeout`.
    is_completed(): non-blocking. is_success(), exception(), source_rank() (irecv from any
    source), result() (the output tensors), synchronize() (wait, then the device is idle)."""

    def __init__(self, pg, name, device, outputs=(), reqs=(), finish=None, keep=(), event=None, source=None,
                 statuses=None):
        self._pg = pg
        self._name = name
        self._device = device
        self._outputs = list(outputs)
        self._reqs = list(reqs)
        self._finish = finish
        self._keep = keep
        self._event = event  # NCCL: a CUDA event recorded after the enqueued work
        self._source = source
        self._statuses = statuses
        self._done = not self._reqs and event is None
        self._exc = None
        self._lock = threading.Lock()
        if self._done and finish is not None:
            self._complete()

    def __repr__(self):
        state = "completed" if self._done else ("failed" if self._exc else "pending")
        return f"<Work {self._name} on {self._device} ({state})>"

    # -- completion --------------------------------------------------------------------------------------------------
    def _complete(self):
        fin, self._finish = self._finish, None
        if fin is not None:
            try:
                fin()
            except BaseException as e:
                self._exc = e
                raise
        self._done = True
        self._keep = ()

    def _test(self):
        try:
            return self._test_raw()
        except RuntimeError as e:
            if type(e).__module__.split(".")[0] != "mpi4py" or self._exc is not None:
                raise
            self._exc = self._pg._failed(self._name, e, self._keep)
            raise self._exc from None

    def _test_raw(self):
        if self._event is not None:
            from ..backends.cuda.active import driver
            return driver.event_query(self._event)
        if self._statuses is None:
            return test_all(self._reqs)
        # one request whose status we need: test it alone (testing it again once complete, as a null
        # request, would overwrite the status with an empty one)
        if self._reqs[0].Test(self._statuses[0]):
            self._statuses = None
            self._reqs = []
            return True
        return False

    def is_completed(self):
        """True once the operation finished, successfully or not (for MPI work that succeeded, its result is then
        in the output tensors)."""
        with self._lock:
            if self._done or self._exc is not None:
                return self._done
            try:
                if not self._test():
                    return False
            except RuntimeError:
                if self._exc is None:
                    raise
                return True  # completed, with a failure: is_success() is False, exception() says why
            if self._event is not None:
                self._done = True
                return True
            self._complete()
            return True

    def is_success(self):
        return self.is_completed() and self._exc is None and self._done

    def exception(self):
        return self._exc

    def wait(self, timeout=None):
        """Wait for the operation (see the class doc); returns True, as torch's."""
        return self._wait(timeout, explicit=True)

    def _wait(self, timeout, explicit):
        with self._lock:
            if self._exc is not None:
                raise self._exc
            if self._done:
                return True
            if self._event is not None:  # NCCL: the current stream waits, the host does not
                from ..backends.cuda.active import driver
                idx = self._device.index
                driver.stream_wait_event(driver.current_stream(idx), self._event)
                self._done = True
                return True
            limit = self._pg._timeout_s if timeout is None else _seconds(timeout)
            t0 = time.perf_counter()
            ok = poll(self._test, time.monotonic() + limit)
            _record_wait(f"distributed {self._name} (waiting for the other ranks)", self._device, t0, explicit)
            if not ok:
                self._exc = self._pg._timed_out(self._name, limit, self._keep)
                raise self._exc
            self._complete()
            return True

    def synchronize(self):
        self.wait()
        if self._device.type == "cuda":
            import tensorlab as tl
            tl.cuda.synchronize(self._device)

    def result(self):
        return list(self._outputs)

    def source_rank(self):
        """The global rank a recv/irecv got its message from (torch: only for recv from any source)."""
        if self._source is None:
            raise RuntimeError("source_rank(): only a recv/irecv work has a source rank")
        self.wait()
        return self._source() if callable(self._source) else self._source


def _seconds(timeout):
    if hasattr(timeout, "total_seconds"):
        return float(timeout.total_seconds())
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        return float(timeout)
    raise TypeError(f"Work.wait(): timeout must be a datetime.timedelta, not {type(timeout).__name__}")
