"""torch.cpu: the CPU device module (is_available, device_count, current_device, synchronize,
Stream, stream) and torch.cpu.amp."""
from __future__ import annotations

import contextlib

from . import amp


def is_available():
    """The CPU is always available."""
    return True


def device_count():
    """torch.cpu.device_count(): always 1."""
    return 1


def current_device():
    """torch.cpu.current_device(): "cpu"."""
    return "cpu"


def synchronize(device=None):
    """Nothing to wait for: CPU ops complete before they return."""
    return None


class Stream:
    """torch.cpu.Stream: a no-op stream (CPU work is synchronous)."""

    def __init__(self, priority=-1):
        self.priority = priority

    def wait_stream(self, stream):
        return None

    def synchronize(self):
        return None

    def query(self):
        return True


_DEFAULT = Stream()


def current_stream(device=None):
    """torch.cpu.current_stream(): the (no-op) default stream."""
    return _DEFAULT


@contextlib.contextmanager
def stream(stream):
    """torch.cpu.stream(s): a no-op context, as torch's."""
    yield


__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize", "Stream", "current_stream",
           "stream"]
