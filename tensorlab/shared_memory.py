"""CPU storages in shared memory: Tensor.share_memory_(), UntypedStorage.share_memory_(),
Module.share_memory() (Hogwild training: several processes updating one model's parameters).

share_memory_() moves a CPU storage's bytes into a POSIX shared-memory segment
(multiprocessing.shared_memory; /dev/shm on Linux) and publishes the new buffer with the storage's
one-assignment install, so a tensor is never seen half-moved. Pickling a tensor whose storage is
shared (what multiprocessing does with a Process's arguments and queue items under "spawn" and
"forkserver") sends the segment's name and the tensor's layout instead of its bytes: the receiving
process maps the same segment, so writes on either side are seen by the other, views included. Under
"fork" the child inherits the mapping itself. The process that created a segment unlinks its name when
the storage's buffer is garbage collected there; processes that attached keep their mapping until
they drop it. A shared storage cannot be resized (its segment has a fixed size): torch crashes the
interpreter there, tensorlab raises RuntimeError. CUDA storages are left where they are (torch
shares CUDA memory between processes by IPC handles; tensorlab's CUDA tensors cross processes by
value)."""
from __future__ import annotations

import threading
import weakref
from multiprocessing import resource_tracker, shared_memory

import numpy as np

__all__ = ("share", "is_shared", "segment_name", "attach", "rebuild_shared")

_lock = threading.Lock()
_segments = {}  # id(buffer) -> (segment name, SharedMemory): the live shared buffers of this process
_by_name = {}  # segment name -> weak reference to its buffer here (one mapping per process and name)


def _forget(key, shm, owner):
    with _lock:
        _segments.pop(key, None)
        _by_name.pop(shm.name, None)
    try:
        shm.close()
    except BufferError:  # a view of the buffer is still exported somewhere: the mapping goes with the process
        pass
    if owner:
        try:
            shm.unlink()
        except FileNotFoundError:
            pass


def _register(buf, shm, owner):
    key = id(buf)
    with _lock:
        _segments[key] = (shm.name, shm)
        _by_name[shm.name] = weakref.ref(buf)
    weakref.finalize(buf, _forget, key, shm, owner)


def is_shared(buf):
    return id(buf) in _segments


def segment_name(buf):
    entry = _segments.get(id(buf))
    return None if entry is None else entry[0]


def share(storage):
    """Move a CPU storage's bytes into a new shared-memory segment (no-op when already shared)."""
    from .storage import write_lock
    with write_lock:
        old = storage._buf
        if is_shared(old):
            return storage
        nbytes = old.nbytes
        shm = shared_memory.SharedMemory(create=True, size=max(nbytes, 1))
        try:
            new = np.ndarray((nbytes,), np.uint8, shm.buf)
            new[...] = old
        except BaseException:
            shm.close()
            shm.unlink()
            raise
        _register(new, shm, owner=True)
        storage._install(new)
        storage._resizable = False
    return storage


def attach(name, nbytes):
    """The buffer of segment `name` in this process (mapped once per process and name)."""
    with _lock:
        ref = _by_name.get(name)
        buf = None if ref is None else ref()
    if buf is not None:
        return buf
    shm = shared_memory.SharedMemory(name=name)
    # Python < 3.13 registers an attached segment with this process's resource tracker, which would
    # unlink it when this process exits: the creating process owns the name
    try:
        resource_tracker.unregister(shm._name, "shared_memory")
    except Exception:  # noqa: BLE001 - a tracker that does not know the name: nothing to undo
        pass
    if shm.size < nbytes:
        shm.close()
        raise RuntimeError(f"shared memory segment {name!r} holds {shm.size} bytes, the tensor needs {nbytes}")
    buf = np.ndarray((nbytes,), np.uint8, shm.buf)
    _register(buf, shm, owner=False)
    return buf


def rebuild_shared(name, nbytes, shape, stride, offset, dtype_name, requires_grad):
    """The unpickling side of a tensor over a shared storage: the same segment mapped here, the
    tensor's layout over it."""
    from . import dtypes
    from .device import canonical
    from .layout import Layout, Size
    from .storage import UntypedStorage
    from .tensor import Meta, Tensor, _new
    storage = UntypedStorage._wrap(attach(name, nbytes), canonical("cpu"), False)
    t = _new(Tensor, Meta(storage, Layout(Size(shape), tuple(stride), offset)), dtypes.by_name(dtype_name), None,
             False)
    if requires_grad:
        t.requires_grad_()
    return t
