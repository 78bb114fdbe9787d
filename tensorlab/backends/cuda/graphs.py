"""CUDA graph capture and replay for the CUDA backend (the user API is tensorlab/cuda/graphs.py).

While a stream captures, the driver instance's work methods (every method that queues work on a
stream: launch, the copies and memset, the cuBLAS/cuSOLVER/cuFFT calls, event record/wait) are
wrapped, as the profiler wraps them:

- work queued on the capturing stream is recorded into the graph: on a real GPU CUDA's own stream
  capture records it (CuPy's Stream.begin_capture, relaxed mode, so the allocator may still call
  cudaMalloc) and the wrapper only notes the buffers it touches; under the emulation driver, which
  runs work when it is queued, the wrapper records the call (method, arguments) instead of running it
  and replay calls it again, on the replay stream;
- every buffer the captured work names (the Pointer arguments), and every buffer freed while
  capturing, stays alive with the graph (the graph bakes addresses in: memory it touches must not be
  handed to anyone else while it may replay); reset() lets them go;
- a host wait while capturing is refused (sync.host_wait calls `refuse_wait`) with CUDA's error, and
  the capture is invalidated, as CUDA's global capture mode does.

Work on other streams is not captured and runs as usual."""
from __future__ import annotations

import inspect
import threading

from ... import sync
from .active import driver
from .driver import Pointer

__all__ = ("Capture", "begin", "capturing", "end", "refuse_wait", "replay")

# driver methods that take a stream but queue no work (or are host queries)
_NOT_WORK = {"malloc", "free", "release", "stream_synchronize", "stream_query", "set_current_stream",
             "current_stream", "create_stream", "external_stream"}
_lock = threading.RLock()
_active = {}  # id(capturing stream handle) -> Capture
_patch = None  # {name: original bound method} while any capture is open


class Capture:
    """One capture in progress or finished: the recorded work (emulation) or CUDA graph (CuPy),
    and the buffers it keeps alive."""

    def __init__(self, stream, device):
        self.stream = stream
        self.device = device
        self.calls = []  # emulation: (method name, args, kwargs, stream parameter's position/name)
        self.keep = {}  # id(buffer) -> buffer the graph touches or that was freed while capturing
        self.deferred_frees = []  # (method name, buffer, stream): freed only at reset
        self.native = None  # CuPy's Graph
        self.invalid = None  # why the capture was invalidated

    def hold(self, value):
        if isinstance(value, Pointer):
            self.keep[id(value.buffer)] = value.buffer
        elif isinstance(value, (tuple, list)):
            for v in value:
                self.hold(v)

    def release(self):
        """Let go of the graph's memory (reset): the deferred frees happen now."""
        frees, self.deferred_frees = self.deferred_frees, []
        for name, buf, stream in frees:
            getattr(driver, name)(buf, stream)
        self.keep.clear()
        self.calls = []
        self.native = None


def _emulated():
    return driver.name.startswith("emulation")


def _work_methods():
    names = []
    for name, fn in inspect.getmembers(type(driver), inspect.isfunction):
        if name.startswith("_") or name in _NOT_WORK or name.endswith("_buffer_size"):
            continue
        params = list(inspect.signature(fn).parameters)
        if "stream" in params:
            names.append((name, params.index("stream") - 1))  # position among the call's arguments
    return names


def _install():
    global _patch
    if _patch is not None:
        return
    orig = {}

    def wrap(name, pos):
        real = getattr(driver, name)
        orig[name] = (real, name in vars(driver))  # an instance attribute already (the profiler's wrapper)?

        def call(*args, **kwargs):
            stream = kwargs.get("stream", args[pos] if pos < len(args) else None)
            cap = _active.get(id(stream)) if stream is not None else None
            if cap is None:
                return real(*args, **kwargs)
            cap.hold(args)
            cap.hold(tuple(kwargs.values()))
            if cap.native is False:  # emulation: record, run at replay
                cap.calls.append((name, args, kwargs, pos))
                return None
            return real(*args, **kwargs)

        call.__name__ = name
        setattr(driver, name, call)

    for name, pos in _work_methods():
        wrap(name, pos)

    def deferring(name):
        real = getattr(driver, name)
        orig[name] = (real, name in vars(driver))

        def free(buffer, stream):
            cap = _capture_of_device(getattr(buffer, "device", None))
            if cap is None:
                return real(buffer, stream)
            cap.keep[id(buffer)] = buffer
            cap.deferred_frees.append((name, buffer, stream))

        free.__name__ = name
        setattr(driver, name, free)

    deferring("free")
    deferring("release")
    _patch = orig


def _uninstall():
    global _patch
    if _patch is None or _active:
        return
    for name, (real, was_instance_attr) in _patch.items():
        if was_instance_attr:
            setattr(driver, name, real)
        else:
            vars(driver).pop(name, None)  # the class's method shows again
    _patch = None


def _capture_of_device(device):
    for cap in list(_active.values()):
        if device is None or cap.device == device:
            return cap
    return None


def capturing(device=None):
    """The open capture on `device` (any device when None), or None."""
    return _capture_of_device(device) if _active else None


def begin(stream, device):
    """Start capturing the work queued on `stream` (a driver stream handle)."""
    with _lock:
        if id(stream) in _active:
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing (this stream already "
                               "captures a graph; end that capture first)")
        cap = Capture(stream, device)
        _install()
        if _emulated():
            cap.native = False
        else:
            from .cupy_driver import _cupy
            rt = _cupy().cuda.runtime
            stream.cp.begin_capture(rt.streamCaptureModeRelaxed)
        _active[id(stream)] = cap
        if refuse_wait not in sync._before_wait:
            sync._before_wait.append(refuse_wait)
        return cap


def end(cap):
    """Finish the capture: returns cap, now replayable (raises if it was invalidated)."""
    with _lock:
        _active.pop(id(cap.stream), None)
        if not _active and refuse_wait in sync._before_wait:
            sync._before_wait.remove(refuse_wait)
        try:
            if cap.native is not False:
                cap.native = cap.stream.cp.end_capture()
        finally:
            _uninstall()
    if cap.invalid is not None:
        cap.release()
        raise RuntimeError(f"CUDA error: operation not permitted when stream is capturing: the capture was "
                           f"invalidated by {cap.invalid}; nothing was recorded (keep host reads out of the captured "
                           f"region)")
    return cap


def replay(cap, stream):
    """Queue the captured work once more on `stream`."""
    if cap.native is False:
        real = _patch or {}
        for name, args, kwargs, pos in cap.calls:
            fn = real[name][0] if name in real else getattr(driver, name)
            if pos < len(args):
                args = args[:pos] + (stream,) + args[pos + 1:]
            else:
                kwargs = dict(kwargs, stream=stream)
            fn(*args, **kwargs)
    else:
        cap.native.launch(stream=stream.cp)


def refuse_wait(reason, device):
    """sync.host_wait's check: a host wait while `device` captures invalidates the capture."""
    cap = _capture_of_device(device.index if device.index is not None else None) if _active else None
    if cap is None:
        return
    cap.invalid = f"a host wait ({reason})"
    raise RuntimeError(f"CUDA error: operation not permitted when stream is capturing: {reason} on {device} waits "
                       f"for the device, which a CUDA graph capture cannot record (the capture is invalidated; "
                       f"move the host read out of the captured region)")
