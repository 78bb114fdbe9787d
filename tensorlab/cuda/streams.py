"""tl.cuda.Stream, tl.cuda.Event and the current-stream API, over the driver's stream and event
handles. The current stream is per thread and per device (kept by the driver)."""
from __future__ import annotations

import threading

from ..device import Device
from ..sync import host_wait
from ._devices import _driver, _index

_defaults = {}  # device index -> the driver's default stream handle
_defaults_lock = threading.Lock()


def _default_handle(idx):
    """The driver's default stream of a device: what current_stream answers in a thread that
    never set one, so it is asked in a fresh thread (the driver interface has no other name for it)."""
    h = _defaults.get(idx)
    if h is None:
        drv = _driver()
        box = []
        t = threading.Thread(target=lambda: box.append(drv.current_stream(idx)), name="tensorlab-default-stream")
        t.start()
        t.join()
        with _defaults_lock:
            h = _defaults.setdefault(idx, box[0])
    return h


class Stream:
    """A CUDA stream on one device (torch.cuda.Stream): `Stream(device=None, priority=0)` creates
    a new stream; lower priority numbers run first."""

    __slots__ = ("_handle", "_idx", "__weakref__")

    def __init__(self, device=None, priority=0):
        idx = _index(device)
        self._idx = idx
        self._handle = _driver().create_stream(idx, int(priority))

    @classmethod
    def _wrap(cls, handle, idx):
        s = object.__new__(cls)
        s._handle = handle
        s._idx = idx
        return s

    @property
    def device(self):
        return Device("cuda", self._idx)

    @property
    def device_index(self):
        return self._idx

    @property
    def device_type(self):
        return "cuda"

    @property
    def priority(self):
        return getattr(self._handle, "priority", 0)

    @property
    def cuda_stream(self):
        """The raw cudaStream_t as an int (0 for the legacy default stream)."""
        return int(getattr(self._handle, "ptr", 0))

    def query(self):
        """True when all work queued on this stream has completed."""
        return bool(_driver().stream_query(self._handle))

    def synchronize(self):
        """Wait for all work queued on this stream (an explicit sync: traced, never refused)."""
        drv, h = _driver(), self._handle
        host_wait("Stream.synchronize", self.device, wait=lambda: drv.stream_synchronize(h), explicit=True)

    def wait_event(self, event):
        """Make future work on this stream wait for `event` (the host does not wait)."""
        if not isinstance(event, Event):
            raise TypeError(f"wait_event(): expected a tensorlab.cuda.Event, got {type(event).__name__}")
        _driver().stream_wait_event(self._handle, event._handle)

    def wait_stream(self, stream):
        """Make future work on this stream wait for the work queued on `stream` so far."""
        if not isinstance(stream, Stream):
            raise TypeError(f"wait_stream(): expected a tensorlab.cuda.Stream, got {type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Record `event` (a new Event when None) on this stream and return it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __eq__(self, other):
        if isinstance(other, Stream):
            return self._idx == other._idx and self._handle is other._handle
        return NotImplemented

    def __hash__(self):
        return hash((self._idx, id(self._handle)))

    def __repr__(self):
        return f"<tensorlab.cuda.Stream device=cuda:{self._idx} cuda_stream={self.cuda_stream:#x}>"


def current_stream(device=None):
    """The stream this thread queues work on for `device` (the current device when None)."""
    idx = _index(device)
    return Stream._wrap(_driver().current_stream(idx), idx)


def default_stream(device=None):
    """The default stream of `device` (the current device when None)."""
    idx = _index(device)
    return Stream._wrap(_default_handle(idx), idx)


def set_stream(stream):
    """Make `stream` this thread's current stream for its device, and its device the current
    device (as torch.cuda.set_stream). None: no change."""
    if stream is None:
        return
    if not isinstance(stream, Stream):
        raise TypeError(f"set_stream(): expected a tensorlab.cuda.Stream, got {type(stream).__name__}")
    drv = _driver()
    drv.set_current_stream(stream._idx, stream._handle)
    if drv.current_device() != stream._idx:
        drv.set_device(stream._idx)


class StreamContext:
    """`with tl.cuda.stream(s):` queues this thread's work on `s` (and selects its device); on exit
    the previous stream of that device and the previous device come back. `stream(None)` does nothing."""

    def __init__(self, stream):
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"stream(): expected a tensorlab.cuda.Stream or None, got {type(stream).__name__}")
        self.stream = stream
        self._saved = None

    def __enter__(self):
        s = self.stream
        if s is None:
            return s
        drv = _driver()
        self._saved = (drv.current_device(), drv.current_stream(s._idx))
        set_stream(s)
        return s

    def __exit__(self, *exc):
        if self._saved is not None:
            prev_dev, prev_stream = self._saved
            self._saved = None
            drv = _driver()
            drv.set_current_stream(self.stream._idx, prev_stream)
            if drv.current_device() != prev_dev:
                drv.set_device(prev_dev)
        return False


def stream(stream):
    return StreamContext(stream)


class Event:
    """A CUDA event (torch.cuda.Event): a marker in a stream that the host or other streams can
    wait on, and, with enable_timing=True, a timestamp for elapsed_time()."""

    __slots__ = ("_handle", "_enable_timing", "_blocking", "_idx", "__weakref__")

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise RuntimeError("tensorlab.cuda.Event: interprocess events are not supported; create the event "
                               "with interprocess=False")
        self._enable_timing = bool(enable_timing)
        self._blocking = bool(blocking)
        self._idx = None  # the device of the first stream it was recorded on
        self._handle = _driver().create_event(self._enable_timing, self._blocking)

    @property
    def enable_timing(self):
        return self._enable_timing

    @property
    def blocking(self):
        return self._blocking

    @property
    def device(self):
        """The device of the stream it was recorded on (None before the first record)."""
        return None if self._idx is None else Device("cuda", self._idx)

    @property
    def cuda_event(self):
        return int(getattr(self._handle, "ptr", 0) or 0)

    def record(self, stream=None):
        """Record the event on `stream` (this thread's current stream when None)."""
        if stream is None:
            stream = current_stream()
        elif not isinstance(stream, Stream):
            raise TypeError(f"record(): expected a tensorlab.cuda.Stream, got {type(stream).__name__}")
        if self._idx is not None and self._idx != stream._idx:
            raise RuntimeError(f"Event device index {self._idx} does not match recording stream's device index "
                               f"{stream._idx}; record it on a stream of cuda:{self._idx} or use a new Event")
        _driver().event_record(self._handle, stream._handle)
        self._idx = stream._idx

    def wait(self, stream=None):
        """Make future work on `stream` (the current stream when None) wait for this event."""
        if stream is None:
            stream = current_stream()
        stream.wait_event(self)

    def query(self):
        """True when the work captured by the last record() has completed (or never recorded)."""
        return bool(_driver().event_query(self._handle))

    def synchronize(self):
        """Wait until the work captured by the last record() completed (an explicit sync)."""
        if self._idx is None:
            return
        drv, h = _driver(), self._handle
        host_wait("Event.synchronize", self.device, wait=lambda: drv.event_synchronize(h), explicit=True)

    def elapsed_time(self, end_event):
        """Milliseconds between this event and `end_event` (both recorded, completed, with timing)."""
        if not isinstance(end_event, Event):
            raise TypeError(f"elapsed_time(): expected a tensorlab.cuda.Event, got {type(end_event).__name__}")
        if not (self._enable_timing and end_event._enable_timing):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._idx is None or end_event._idx is None:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed time. Call "
                               "end_event.synchronize() (or tl.cuda.synchronize()) first.")
        return float(_driver().event_elapsed_ms(self._handle, end_event._handle))

    def __repr__(self):
        if self._idx is None:
            return "<tensorlab.cuda.Event uninitialized>"
        return f"<tensorlab.cuda.Event {self.cuda_event:#x} on cuda:{self._idx}>"
