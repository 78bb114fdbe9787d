"""UntypedStorage: bytes on one device, with an atomic resize_ (DESIGN.md, "Atomic metadata")."""
from __future__ import annotations

import operator
import threading

from . import backends
from .device import canonical


class UntypedStorage:
    """A byte buffer on one device. `resize_` builds the new buffer completely, then publishes it
    with one assignment, so a failure leaves the storage untouched and readers see old or new."""

    __slots__ = ("_buf", "device", "_resizable", "_lock", "__weakref__")

    def __init__(self, nbytes=0, *, device=None):
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise RuntimeError(f"UntypedStorage: size must be non-negative, got {nbytes}")
        dev = canonical(device)
        self._init(backends.get(dev).allocate(nbytes, dev), dev, True)

    @classmethod
    def _wrap(cls, buf, device, resizable):
        self = object.__new__(cls)
        self._init(buf, device, resizable)
        return self

    def _init(self, buf, device, resizable):
        self._buf = buf
        self.device = device
        self._resizable = resizable
        self._lock = threading.Lock()

    @property
    def _backend(self):
        return backends.get(self.device)

    def nbytes(self):
        return self._backend.buffer_nbytes(self._buf)

    size = nbytes

    def __len__(self):
        return self.nbytes()

    def element_size(self):
        return 1

    def data_ptr(self):
        return self._backend.buffer_ptr(self._buf)

    def resizable(self):
        return self._resizable

    @property
    def is_cuda(self):
        return self.device.type == "cuda"

    def resize_(self, nbytes):
        """Resize to `nbytes` bytes, keeping the leading bytes. Not resizable -> RuntimeError."""
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise RuntimeError(f"UntypedStorage.resize_: size must be non-negative, got {nbytes}")
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        with self._lock:
            be = self._backend
            old = self._buf
            new = be.allocate(nbytes, self.device)
            be.copy_bytes(new, old, min(nbytes, be.buffer_nbytes(old)))
            be.retire(old)
            self._buf = new
        return self

    def _grow_to(self, nbytes):
        """Grow (never shrink) to at least `nbytes`; the step tensor.resize_ and set_ rely on."""
        if nbytes > self.nbytes():
            self.resize_(nbytes)

    def tolist(self):
        return self._backend.buffer_tolist(self._buf)

    def __repr__(self):
        return f"tensorlab.UntypedStorage(nbytes={self.nbytes()}, device='{self.device}', resizable={self._resizable})"
