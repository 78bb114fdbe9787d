"""resize_, resize_as_, set_ and the resize plan behind out= targets: the four-step rule of DESIGN.md.

1. compute the new layout and the bytes it needs; 2. validate (bounds, resizable, device, dtype,
requires_grad); 3. acquire the grown buffer with the old bytes copied in (may fail: nothing is
visible yet); 4. publish: the storage's buffer, then the tensor's metadata record, each a single
assignment, under the one writers' lock. A failure in steps 1-3 leaves every tensor and storage
exactly as it was; readers (who never lock) see the old record or the new one.

Version counter: as torch 2.x, resize_ bumps it when the shape changes (not for a re-stride to
the same shape) and set_ bumps it on every call.
"""
from __future__ import annotations

import operator

from .. import autograd_hooks, layout as L
from ..storage import UntypedStorage, check_nbytes
from ..tensor import Tensor, channels_last, channels_last_3d, contiguous_format, meta_write_lock, preserve_format
from ._common import sizes_or_keyword

_NOT_RESIZABLE = "Trying to resize storage that is not resizable"
_RACE = ("{op}: another thread changed this tensor's storage or metadata while the operation ran, so nothing was "
         "changed; serialize writers of one tensor (for example with a threading.Lock)")


class ResizePlan:
    """A resize computed and with its memory acquired, not yet visible. `target` is a private tensor
    over the new buffer (or over the unchanged storage when it is big enough) that an op may write
    its result into before `commit()`."""

    __slots__ = ("tensor", "layout", "new_buf", "target", "_src_meta", "_src_buf", "_op")

    def __init__(self, tensor, src_meta, src_buf, lay, new_buf, op):
        self.tensor = tensor
        self.layout = lay
        self.new_buf = new_buf
        self._src_meta = src_meta
        self._src_buf = src_buf
        self._op = op
        storage = src_meta.storage
        if new_buf is not None:
            storage = UntypedStorage._wrap(new_buf, storage.device, True)
        self.target = Tensor._make(storage, lay, tensor._dtype)

    def commit(self):
        """Step 4. Compare-and-swap: if another thread replaced the tensor's record or the storage's
        buffer since the plan was made, publishing would drop that thread's change (or bytes it
        wrote), so the plan is refused instead and nothing changes."""
        t = self.tensor
        storage = self._src_meta.storage
        with meta_write_lock:
            if t._meta is not self._src_meta or storage._buf is not self._src_buf:
                raise RuntimeError(_RACE.format(op=self._op))
            if self.new_buf is not None:
                storage._install(self.new_buf)
            t._publish(storage, self.layout)


def _strides_for(shape, memory_format, op):
    if memory_format is None or memory_format is contiguous_format:
        return L.contiguous_strides(shape)
    if memory_format is channels_last or memory_format is channels_last_3d:
        want = 4 if memory_format is channels_last else 5
        if len(shape) != want:
            raise RuntimeError(f"{op}: required rank {want} tensor to use {memory_format.name} format, got shape "
                               f"{list(shape)}")
        return L.channels_last_strides(shape)
    if memory_format is preserve_format:
        raise RuntimeError(f"{op}: Unsupported memory format preserve_format; pass contiguous_format, channels_last "
                           "or channels_last_3d")
    raise RuntimeError(f"{op}: unknown memory_format {memory_format!r}")


def plan_resize(t, shape, memory_format=None, op="resize_", expect=None, stride=None):
    """Steps 1-3 for resizing `t` to `shape` (contiguous or channels_last strides, or `stride`:
    an elementwise op's out= takes its inputs' memory order, as torch restrides it; same storage
    offset): returns a ResizePlan; nothing visible has changed. `expect`: the record the caller
    read and checked; another one now means another thread published in between (refused)."""
    for n in shape:
        if n < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {n}: {list(shape)}")
    if stride is None:
        stride = _strides_for(shape, memory_format, op)
    with meta_write_lock:
        if expect is not None and t._meta is not expect:
            raise RuntimeError(_RACE.format(op=op))
        return _plan(t, lambda lay: L.Layout(L.Size(shape), stride, lay.offset), op)


def _plan(t, make_layout, op):
    """Steps 1-3 for giving `t` the layout `make_layout(current layout)` over its storage, grown
    to fit when needed. Callers hold the writers' lock, so the record and buffer read here are one
    consistent pair to copy from (and to compare against at commit)."""
    meta = t._meta
    storage, lay = meta
    src_buf = storage._buf
    new = make_layout(lay)
    need = check_nbytes(L.extent(new.shape, new.stride, new.offset) * t._dtype.itemsize, op)
    new_buf = None
    if need > storage.nbytes():
        if not storage.resizable():
            raise RuntimeError(_NOT_RESIZABLE)
        new_buf = storage._acquire(need)
    return ResizePlan(t, meta, src_buf, new, new_buf, op)


def resize_(self, *sizes, size=None, memory_format=None):
    """Tensor.resize_: new contiguous (or channels_last) shape, storage grown only when needed,
    and on any failure the tensor and its storage are exactly as they were. The same shape with
    no memory_format keeps the strides (as torch) and only grows a storage someone shrank."""
    if size is not None:
        sizes = sizes_or_keyword(sizes, size, "resize_", "size")
    shape = L.normalize_shape(sizes, "resize_")
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    with meta_write_lock:
        storage, lay = self._meta
        old_shape = lay.shape
        if memory_format is None and tuple(old_shape) == shape:
            if L.extent(lay.shape, lay.stride, lay.offset) * self._dtype.itemsize > storage.nbytes():
                _plan(self, lambda cur: cur, "resize_").commit()
            return self
        plan_resize(self, shape, memory_format).commit()
        if tuple(old_shape) != shape:
            self._vc.bump()
    return self


def _suggest_memory_format(t):
    lay = t._meta.layout
    if L.is_channels_last(lay.shape, lay.stride):
        return channels_last if len(lay.shape) == 4 else channels_last_3d
    return contiguous_format


def resize_as_(input, the_template, memory_format=None):
    """resize_ to the template's shape; preserve_format takes the template's memory format."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' must be Tensor, not {type(the_template).__name__}")
    if memory_format is preserve_format:
        memory_format = _suggest_memory_format(the_template)
    return resize_(input, *the_template._meta.layout.shape, memory_format=memory_format)


def _int(x, name):
    try:
        return operator.index(x)
    except TypeError:
        raise TypeError(f"set_(): argument '{name}' must be int, not {type(x).__name__}") from None


def _explicit_layout(storage_offset, size, stride):
    if size is None:
        raise TypeError("set_(): a storage_offset or stride needs a size: set_(source, storage_offset, size, "
                        "stride=None)")
    if isinstance(size, int) or not hasattr(size, "__iter__"):
        raise TypeError(f"set_(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    shape = L.Size(L.normalize_shape((size,), "set_"))
    if stride is None or len(stride) == 0 and len(shape) != 0:
        stride = L.contiguous_strides(shape)  # torch: an empty stride means contiguous
    else:
        stride = L.normalize_shape((stride,), "set_")
        if len(stride) != len(shape):
            raise RuntimeError(f"set_: unequal size length ({len(shape)}) and stride length ({len(stride)})")
        stride = L.unit_dims_restrided(shape, stride)
    return L.Layout(shape, tuple(stride), _int(storage_offset, "storage_offset"))


def _set_source(self, source, storage_offset, size, stride):
    """Step 1 of set_: the (storage, layout) the call asks for, read from `source` once."""
    explicit = size is not None or stride is not None or storage_offset != 0
    if source is None:
        if explicit:
            raise TypeError("set_(): storage_offset, size and stride need a source storage or tensor")
        return UntypedStorage(0, device=self._meta.storage.device), L.Layout(L.Size((0,)), (1,), 0)
    if isinstance(source, Tensor):
        storage, lay = source._meta
        if explicit:
            return storage, _explicit_layout(storage_offset, size, stride)
        if source._dtype is not self._dtype:
            raise RuntimeError(f"set_: Could not set tensor of type {source._dtype.name} to a tensor of type "
                               f"{self._dtype.name}; convert the source first with source.to({self._dtype.name})")
        return storage, lay
    if isinstance(source, UntypedStorage):
        if explicit:
            return source, _explicit_layout(storage_offset, size, stride)
        n = source.nbytes() // self._dtype.itemsize
        return source, L.Layout(L.Size((n,)), (1,), 0)
    raise TypeError(f"set_(): argument 'source' must be Tensor or UntypedStorage, not {type(source).__name__}")


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """Tensor.set_: point this tensor at another storage (or another tensor's storage and layout).
    set_() -> an empty storage; set_(tensor) -> share its storage and layout (same dtype);
    set_(storage[, storage_offset, size, stride]) -> that layout over the storage. The layout is
    bounds-checked; a storage too small grows when it is resizable (as torch), otherwise the
    call raises with nothing changed."""
    autograd_hooks.check_inplace(self, "set_")
    storage, lay = _set_source(self, source, storage_offset, size, stride)
    device = self._meta.storage.device
    if storage.device != device:
        raise RuntimeError(f'Attempted to set the storage of a tensor on device "{device}" to a storage on different '
                           f'device "{storage.device}".  This is no longer allowed; the devices must match.')
    itemsize = self._dtype.itemsize
    with meta_write_lock:
        have = storage.nbytes()
        # torch grows the storage only through a change of geometry: a layout whose sizes and strides
        # are the tensor's own is checked against the storage as it is (torch 2.13's set_ quirk)
        cur = self._meta.layout
        same_geometry = tuple(lay.shape) == tuple(cur.shape) and tuple(lay.stride) == tuple(cur.stride)
        if storage.resizable() and not same_geometry:
            L.check_bounds(lay.shape, lay.stride, lay.offset, itemsize, L.extent(lay.shape, lay.stride, lay.offset)
                           * itemsize, "setStorage")  # signs only: a resizable storage grows to fit
        else:
            try:
                L.check_bounds(lay.shape, lay.stride, lay.offset, itemsize, have, "setStorage")
            except RuntimeError as e:
                if "out of bounds" not in str(e):
                    raise
                if storage.resizable():
                    raise RuntimeError(f"{e}. set_ grows a storage only when the sizes or strides change (as "
                                       "torch); resize the storage first (storage.resize_) or pass a layout "
                                       "that fits") from None
                raise RuntimeError(f"{e}. {_NOT_RESIZABLE} (its memory is not owned by tensorlab, e.g. from_numpy); "
                                   "pass a layout that fits") from None
        need = check_nbytes(L.extent(lay.shape, lay.stride, lay.offset) * itemsize, "set_")
        new_buf = storage._acquire(need) if need > have else None
        if new_buf is not None:
            storage._install(new_buf)
        self._publish(storage, lay)
        self._vc.bump()
    return self


FUNCTIONS = ("resize_as_",)  # torch.resize_as_ (torch has no torch.resize_ or torch.set_)
METHODS = {"resize_": resize_, "resize_as_": resize_as_, "set_": set_}


class JointPlan:
    """The out= tensors of one op with several results, resized together: one grown buffer per
    storage they share (all of them written through it), published in one step under the writers'
    lock after a compare-and-swap of every record and buffer, or not at all."""

    __slots__ = ("entries", "storages", "targets", "_op")

    def __init__(self, entries, storages, targets, op):
        self.entries = entries      # [(tensor, record read, new layout or None)]
        self.storages = storages    # [(storage, buffer read, new buffer or None)]
        self.targets = targets      # where the op writes each result before commit()
        self._op = op

    def commit(self):
        with meta_write_lock:
            if any(t._meta is not m for t, m, _ in self.entries) or any(s._buf is not b for s, b, _ in self.storages):
                raise RuntimeError(_RACE.format(op=self._op))
            for s, _, new in self.storages:
                if new is not None:
                    s._install(new)
            for t, m, lay in self.entries:
                if lay is not None:
                    t._publish(m.storage, lay)


def _nbytes(lay, dtype):
    return L.extent(lay.shape, lay.stride, lay.offset) * dtype.itemsize


def plan_joint(tensors, metas, shapes, op):
    """Steps 1-3 for several out= tensors of one op (`metas`: the records the op checked). Out
    tensors over one storage get one buffer that fits all of their new layouts, so a result written
    for one is not lost when another's resize installs its buffer."""
    with meta_write_lock:
        if any(t._meta is not m for t, m in zip(tensors, metas)):
            raise RuntimeError(_RACE.format(op=op))
        layouts = []
        for m, shape in zip(metas, shapes):
            lay = m.layout
            layouts.append(None if tuple(lay.shape) == tuple(shape) else
                           L.Layout(L.Size(shape), L.contiguous_strides(shape), lay.offset))
        grown, storages = {}, []
        for m in metas:
            s = m.storage
            if id(s) in grown:
                continue
            need = max(check_nbytes(_nbytes(new or mm.layout, t._dtype), op)
                       for t, mm, new in zip(tensors, metas, layouts) if mm.storage is s)
            new_buf = None
            if need > s.nbytes():
                if not s.resizable():
                    raise RuntimeError(_NOT_RESIZABLE)
                new_buf = s._acquire(need)
            grown[id(s)] = s if new_buf is None else UntypedStorage._wrap(new_buf, s.device, True)
            storages.append((s, s._buf, new_buf))
        targets = [Tensor._make(grown[id(m.storage)], new or m.layout, t._dtype)
                   for t, m, new in zip(tensors, metas, layouts)]
    return JointPlan(list(zip(tensors, metas, layouts)), storages, targets, op)
