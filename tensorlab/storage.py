"""UntypedStorage: bytes on one device, with an atomic resize_ (DESIGN.md, "Atomic metadata")."""
from __future__ import annotations

import operator
import threading

from . import backends
from .device import canonical

# Serializes every writer of a storage's buffer or a tensor's metadata (UntypedStorage.resize_,
# Tensor.resize_/set_, out= resizes). Readers never take it: they rely on single-assignment publish.
write_lock = threading.RLock()

_MAX_NBYTES = 2 ** 63 - 1


def check_nbytes(nbytes, op):
    """A byte count any allocator could be asked for: RuntimeError (as torch) past int64."""
    if nbytes > _MAX_NBYTES:
        raise RuntimeError(f"{op}: storage size calculation overflowed: {nbytes} bytes is more than the "
                           f"largest possible storage ({_MAX_NBYTES} bytes)")
    return nbytes


class UntypedStorage:
    """A byte buffer on one device. `resize_` builds the new buffer completely, then publishes it
    with one assignment, so a failure leaves the storage untouched and readers see old or new."""

    __slots__ = ("_buf", "device", "_resizable", "__weakref__")
    _readonly = False  # a class attribute: ReadOnlyStorage says True, at no cost to every other storage

    def __init__(self, nbytes=0, *, device=None):
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise RuntimeError(f"UntypedStorage: size must be non-negative, got {nbytes}")
        check_nbytes(nbytes, "UntypedStorage")
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
        """Resize to `nbytes` bytes, keeping the leading bytes (new bytes are uninitialized, as in
        torch). Not resizable or out of memory -> RuntimeError with the storage unchanged.
        Shrinking can leave tensors over this storage reaching past its end: reading them then
        raises RuntimeError (the backends' bounds check) instead of reading freed memory."""
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise RuntimeError(f"UntypedStorage.resize_: size must be non-negative, got {nbytes}")
        check_nbytes(nbytes, "UntypedStorage.resize_")
        if not self._resizable:
            raise RuntimeError("Trying to resize storage that is not resizable")
        with write_lock:
            if nbytes != self.nbytes():
                self._install(self._acquire(nbytes))
        return self

    def _acquire(self, nbytes):
        """A new buffer of `nbytes` holding this storage's leading bytes; nothing visible changes
        (an allocation or copy failure here leaves the storage as it was)."""
        be = self._backend
        old = self._buf
        new = be.allocate(nbytes, self.device)
        be.copy_bytes(new, old, min(nbytes, be.buffer_nbytes(old)))
        return new

    def _install(self, buf):
        """Publish `buf` as this storage's bytes: one assignment. Callers hold write_lock."""
        old = self._buf
        self._buf = buf
        self._backend.release(old)  # not retire(): a reader thread may still hold `old`

    def tolist(self):
        return self._backend.buffer_tolist(self._buf)

    def share_memory_(self):
        """Move a CPU storage's bytes into shared memory (tensorlab/shared_memory.py); it is then no
        longer resizable. CUDA storages are left as they are. Returns self."""
        if self.device.type == "cpu":
            from .shared_memory import share
            share(self)
            self._resizable = False
        return self

    def is_shared(self):
        if self.device.type == "cuda":
            return True
        from .shared_memory import is_shared
        return is_shared(self._buf)

    def __repr__(self):
        return f"tensorlab.UntypedStorage(nbytes={self.nbytes()}, device='{self.device}', resizable={self._resizable})"


class ReadOnlyStorage(UntypedStorage):
    """Memory tensorlab may read but not write (from_numpy of a non-writable array): every write
    path's check (ops/_common.check_writable) refuses it with a RuntimeError before anything runs.
    torch writes anyway (undefined behaviour: the memory may really be read-only)."""

    __slots__ = ()
    _readonly = True
