"""resize_ and the resize plan behind out= targets: the four-step rule of DESIGN.md.

1. compute the new layout and the bytes it needs; 2. validate (resizable, requires_grad);
3. acquire the grown buffer with the old bytes copied in (may fail: nothing is visible yet);
4. publish: the storage's buffer, then the tensor's metadata record, each a single assignment.
"""
from __future__ import annotations

from .. import backends, layout as L
from ..storage import UntypedStorage
from ..tensor import Tensor, meta_write_lock


class ResizePlan:
    """A resize computed and with its memory acquired, not yet visible. `target` is a private tensor
    over the new buffer that an op may write its result into before `commit()`."""

    __slots__ = ("tensor", "layout", "new_buf", "target")

    def __init__(self, tensor, lay, new_buf):
        self.tensor = tensor
        self.layout = lay
        self.new_buf = new_buf
        storage = tensor._meta.storage
        if new_buf is not None:
            storage = UntypedStorage._wrap(new_buf, storage.device, True)
        self.target = Tensor._make(storage, lay, tensor._dtype)

    def commit(self):
        t = self.tensor
        storage = t._meta.storage
        with meta_write_lock:
            if self.new_buf is not None:
                old = storage._buf
                storage._buf = self.new_buf
                backends.get(storage.device).retire(old)
            t._publish(storage, self.layout)


def _new_layout(t, shape, memory_format):
    from ..tensor import channels_last, channels_last_3d, contiguous_format, preserve_format
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    lay = t._meta.layout
    if memory_format is None or memory_format is contiguous_format:
        stride = L.contiguous_strides(shape)
    elif memory_format in (channels_last, channels_last_3d):
        stride = L.channels_last_strides(shape)
    elif memory_format is preserve_format:
        raise RuntimeError("resize_: preserve memory format is unsupported by resize_; pass contiguous_format "
                           "or channels_last")
    else:
        raise RuntimeError(f"resize_: unknown memory_format {memory_format!r}")
    return L.Layout(L.Size(shape), stride, lay.offset)


def plan_resize(t, shape, memory_format=None):
    """Steps 1-3 for resizing `t` to `shape`: returns a ResizePlan (nothing visible changed)."""
    storage, lay = t._meta
    new = _new_layout(t, shape, memory_format)
    numel = L.prod(shape)
    need = (new.offset + numel) * t._dtype.itemsize if numel else 0
    have = storage.nbytes()
    new_buf = None
    if need > have:
        if not storage.resizable():
            raise RuntimeError("Trying to resize storage that is not resizable")
        be = backends.get(storage.device)
        new_buf = be.allocate(need, storage.device)
        be.copy_bytes(new_buf, storage._buf, have)
    return ResizePlan(t, new, new_buf)


def resize_(self, *sizes, memory_format=None):
    """Tensor.resize_: new contiguous (or channels_last) shape, storage grown only when needed,
    and on any failure the tensor and its storage are exactly as they were."""
    shape = L.normalize_shape(sizes, "resize_")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if tuple(self.shape) == shape and memory_format is None:
        return self
    with meta_write_lock:
        plan_resize(self, shape, memory_format).commit()
    return self


def resize_as_(self, other, memory_format=None):
    return resize_(self, *other.shape, memory_format=memory_format)


FUNCTIONS = ()
METHODS = {"resize_": resize_, "resize_as_": resize_as_}
