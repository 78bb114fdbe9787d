"""Tensor indexing: __getitem__, __setitem__ and index_put_.

An index is split in two: its basic part (ints, slices, None, Ellipsis, a lone bool) becomes a
view, computed from metadata alone; its advanced part (integer tensors, lists, boolean masks)
becomes int64 index tensors over the dims of that view, which one backend primitive gathers
(`index`) or scatters (`index_put`). Integers select before advanced indexing, as in torch (so
x[0, :, [0, 1]] has shape (3, 2) for x of shape (2, 3, 4), where NumPy gives (2, 3))."""
from __future__ import annotations

import numbers
import operator

from .. import _warn
from .. import autograd_hooks, dtypes, layout as L
from ..layout import Layout, Size
from ..tensor import Tensor
from ._common import check_no_partial_overlap, check_writable, empty_tensor, same_device
from .creation import tensor as _tensor, zeros
from .views import select_at, expand, select
from .views import _MEMO as _VIEW_MEMO, _memo_view, _remember

_INT, _SLICE, _NONE, _ELLIPSIS, _BOOL, _TENSOR, _MASK = range(7)  # kinds of index entries
_CONSUMES_ONE = (_INT, _SLICE, _TENSOR)
_INDEX_DTYPES = (dtypes.int64, dtypes.int32)
_MASK_DTYPES = (dtypes.bool_, dtypes.uint8)
_DTYPE_ERROR = "tensors used as indices must be long, int, byte or bool tensors"


# -- parsing ------------------------------------------------------------------------------------
def _as_tuple(index):
    """torch's treatSequenceAsTuple: a short list holding a slice, None, Ellipsis, a tensor or a
    sequence is read as a tuple of indices (deprecated in torch; a warning says so)."""
    if isinstance(index, tuple):
        return index
    if type(index) is list and len(index) < 32:
        for x in index:
            if x is None or x is Ellipsis or isinstance(x, (Tensor, list, tuple, slice)):
                _warn.warn("Using a non-tuple sequence for multidimensional indexing is deprecated (as in torch); "
                           "use x[tuple(seq)] instead of x[seq].", UserWarning)
                return tuple(index)
    return (index,)


def _entries(index, device, meta):
    items = _as_tuple(index)
    if not meta.layout.shape:  # torch counts a 0-dim tensor's dims before parsing: 0-d["a"] is too many indices
        for item in items:
            if isinstance(item, (str, bytes, float, complex)):
                raise IndexError("too many indices for tensor of dimension 0")
    return [_entry(x, device) for x in items]


def _entry(item, device):
    if item is None:
        return _NONE, None
    if item is Ellipsis:
        return _ELLIPSIS, None
    kind = type(item)
    if kind is int:
        return _INT, item
    if kind is slice:
        if item.step is not None and not 0 < operator.index(item.step):  # torch: at parse, before counting dims
            raise ValueError("slice step cannot be zero" if item.step == 0 else "step must be greater than zero")
        return _SLICE, item
    if kind is bool:
        return _BOOL, item
    if isinstance(item, Tensor):
        return _tensor_entry(item)
    if isinstance(item, (list, tuple)):
        return _tensor_entry(_list_index(item, device))
    if kind is range:  # x[range(n), y]: a sequence of ints, as torch takes it
        return _tensor_entry(_list_index(list(item), device))
    if hasattr(item, "__array__") and hasattr(item, "dtype"):  # NumPy arrays and scalars
        return _tensor_entry(_tensor(item))
    if isinstance(item, (str, bytes)):  # torch tries to make an index tensor of it
        raise TypeError(f"new(): invalid data type '{type(item).__name__}': a tensor index must be an int, slice, "
                        "None, Ellipsis, bool, sequence or tensor")
    try:
        return _INT, operator.index(item)
    except TypeError:
        raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         f"indices (got {type(item).__name__})") from None


def _tensor_entry(t):
    dt = t._dtype
    if dt in _MASK_DTYPES:
        if dt is dtypes.uint8:
            _warn.warn("indexing with dtype tensorlab.uint8 is now deprecated, please use a dtype tensorlab.bool "
                       "instead.", UserWarning)
        if t.dim() == 0:
            return _BOOL, bool(t._item("boolean mask indexing"))
        return _MASK, t
    if t.dim() == 0 and dt.category == dtypes.int64.category:
        return _INT, int(t._item("integer tensor index"))  # a 0-dim integer tensor selects, like an int (torch)
    if dt not in _INDEX_DTYPES:
        raise IndexError(_DTYPE_ERROR)
    return _TENSOR, t


def _list_index(seq, device):
    if not seq:
        return empty_tensor((0,), dtypes.int64, device)
    t = _tensor(seq, device=device)
    if t._dtype.is_floating_point:
        raise IndexError(_DTYPE_ERROR)
    return t


def _locate(self, entries, meta=None):
    """The basic part of an index: (layout of the view it selects, [(view dim, advanced entry)]),
    computed from `meta`, self's record read once by the caller (the view must use its storage)."""
    lay = (self._meta if meta is None else meta).layout
    shape, stride = lay.shape, lay.stride
    ndim = len(shape)
    consumed = ellipses = bools = 0
    tensors = False
    for kind, v in entries:
        if kind in _CONSUMES_ONE:
            consumed += 1
        elif kind == _MASK:
            consumed += v.dim()
        elif kind == _ELLIPSIS:
            ellipses += 1
        elif kind == _BOOL:
            bools += 1
        tensors = tensors or kind == _TENSOR or kind == _MASK
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    # a bool is an advanced index, as in torch: an index tensor ([0] for True, [] for False) on a new
    # size-1 dim, broadcast with the others, so x[True] and x[False] are copies, not views
    bool_adv = bools > 0
    oshape, ostride, adv = [], [], []
    offset, d = lay.offset, 0
    for kind, v in entries:
        if kind == _INT:
            n = shape[d]
            if not -n <= v < n:
                L.check_long(v, "index")  # torch: past counting the dims, an index beyond int64 is a ValueError
                raise IndexError(f"index {v} is out of bounds for dimension {d} with size {n}")
            offset += (v + n if v < 0 else v) * stride[d]
            d += 1
        elif kind == _SLICE:
            step = 1 if v.step is None else operator.index(v.step)
            if step <= 0:
                raise ValueError("slice step cannot be zero" if step == 0 else "step must be greater than zero")
            start, stop, _ = v.indices(shape[d])
            oshape.append(max(0, (stop - start + step - 1) // step))
            ostride.append(stride[d] * step)
            offset += start * stride[d]
            d += 1
        elif kind == _NONE or kind == _BOOL:
            if kind == _BOOL and bool_adv:
                adv.append((len(oshape), v))
            oshape.append(0 if kind == _BOOL and not v and not bool_adv else 1)
            ostride.append(shape[d] * stride[d] if d < ndim else 1)  # torch's unsqueeze stride
        elif kind == _ELLIPSIS:
            m = ndim - consumed
            oshape.extend(shape[d:d + m])
            ostride.extend(stride[d:d + m])
            d += m
        else:
            m = 1 if kind == _TENSOR else v.dim()
            if kind == _MASK:
                for j in range(m):
                    if v.shape[j] != shape[d + j]:
                        raise IndexError(f"The shape of the mask {list(v.shape)} at index {j} does not match the "
                                         f"shape of the indexed tensor {list(shape)} at index {d + j}")
            adv.append((len(oshape), v))
            oshape.extend(shape[d:d + m])
            ostride.extend(stride[d:d + m])
            d += m
    oshape.extend(shape[d:])
    ostride.extend(stride[d:])
    return Layout(Size(oshape), tuple(ostride), offset), adv


def _advanced(view, adv):
    """(indices, result shape, in range) for advanced entries over `view`'s dims: one int64
    tensor or None per dim, all broadcast to one shape. Masks become their nonzero coordinates
    (a host sync). `in range` is True when every index came from a mask or a bool: such indices
    are in range by construction, so the backend skips its bounds check (on CUDA, a second sync)."""
    dev = view.device
    be = view._backend
    dims, tensors = [], []
    in_range = True
    for pos, v in adv:
        if type(v) is bool:
            dims.append(pos)
            tensors.append(zeros(1, dtype=dtypes.int64, device=dev) if v else empty_tensor((0,), dtypes.int64, dev))
        elif v._dtype in _MASK_DTYPES:
            m = v if v.device == dev else v.to(dev)
            coords = empty_tensor((m.dim(), be.mask_count(m)), dtypes.int64, dev)  # mask_count is the sync
            be.nonzero_indices(coords, m)
            for j in range(m.dim()):
                dims.append(pos + j)
                tensors.append(select(coords, 0, j))
        else:
            in_range = False
            dims.append(pos)
            tensors.append(v if v._dtype is dtypes.int64 and v.device == dev else v.to(dev, dtypes.int64))
    vshape = view.shape
    if not dims:
        return (None,) * len(vshape), vshape, True
    try:
        bshape = tensors[0].shape if len(tensors) == 1 else L.broadcast_shapes(*(t.shape for t in tensors))
    except RuntimeError:
        shapes = ", ".join(str(list(t.shape)) for t in tensors)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}") \
            from None
    indices = [None] * len(vshape)
    for d, t in zip(dims, tensors):
        indices[d] = t if t.shape == bshape else expand(t, bshape)
    first, k = dims[0], len(dims)
    if dims == list(range(first, first + k)):
        shape = vshape[:first] + bshape + vshape[first + k:]
    else:
        shape = bshape + Size(n for d, n in enumerate(vshape) if d not in dims)
    return tuple(indices), shape, in_range


# -- reading ------------------------------------------------------------------------------------
def _basic_key(index):
    """A hashable stand-in for an index made only of ints, slices of ints, None and Ellipsis (a
    plain view, a function of the layout alone), or None. Exact ints only: a bool or a float
    equal to an int is another index (or an error)."""
    kind = type(index)
    if kind is int:
        return index
    if kind is tuple:
        items = index
    elif kind is slice or index is None or index is Ellipsis:
        items = (index,)
    else:
        return None
    key = []
    for x in items:
        kind = type(x)
        if kind is int or x is None or x is Ellipsis:
            key.append(x)
        elif kind is slice:
            a, b, c = x.start, x.stop, x.step
            if (a is None or type(a) is int) and (b is None or type(b) is int) and (c is None or type(c) is int):
                key.append((a, b, c))
            else:
                return None
        else:
            return None
    return tuple(key)


def getitem(self, index):
    meta = self._meta  # one record for the parse, the view and its storage
    key = None
    if not (self._requires_grad or autograd_hooks._slow):  # a basic index of a layout seen before: its view
        key = _basic_key(index)
        if key is not None:
            key = ("getitem", meta[1], key)
            lay = _VIEW_MEMO.get(key)
            if lay is not None:
                return _memo_view(self, meta, lay)
    if type(index) is int:  # the common case, without building the general parse
        shape = meta.layout.shape
        if shape and -shape[0] <= index < shape[0]:
            out = select_at(self, 0, index + shape[0] if index < 0 else index, meta)
            if key is not None:
                _remember(key, out._meta[1])
            return out
    dev = meta.storage.device
    lay, adv = _locate(self, _entries(index, dev, meta), meta)
    view = autograd_hooks.record(self._view_of(lay, meta=meta), "getitem", (self,), index=index)
    if not adv:
        if key is not None:
            _remember(key, lay)
        return view
    indices, shape, in_range = _advanced(view, adv)
    out = empty_tensor(shape, self._dtype, dev)
    self._backend.index(out, view, indices, in_range)
    return autograd_hooks.record(out, "index", (view,), indices=indices)


# -- writing ------------------------------------------------------------------------------------
_CTYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "float32": "float"}
_LIMITS = {d: (dtypes.iinfo(d).min, dtypes.iinfo(d).max) for d in dtypes.INTEGRAL}
_FLOAT32_MAX = dtypes.finfo(dtypes.float32).max


def _scalar(value, dtype):
    """A Python number ready to store in `dtype`, refusing overflow as torch does (uint8 wraps
    negative ints; infinities and NaN only fit floating types)."""
    if isinstance(value, bool) or dtype is dtypes.bool_:
        return value
    if dtype.category == 3:  # complex
        return complex(value)
    if dtype.is_floating_point:
        if dtype is dtypes.float32 and isinstance(value, float) and _FLOAT32_MAX < abs(value) < float("inf"):
            raise RuntimeError("value cannot be converted to type float without overflow")
        return value
    lo, hi = _LIMITS[dtype]
    if dtype is dtypes.uint8 and isinstance(value, numbers.Integral):
        lo = -hi
    if not (lo <= value <= hi):  # False for NaN too
        raise RuntimeError(f"value cannot be converted to type {_CTYPES[dtype.name]} without overflow")
    if dtype is dtypes.uint8 and value < 0:
        value = int(value) & 0xFF
    return value


def _value_tensor(value, dst, cast):
    """`value` (tensor, number or list) as a tensor on dst's device (of dst's dtype with cast)."""
    if isinstance(value, Tensor):
        same_device("index_put_", dst, value)
        if (value._dtype is dst._dtype or not cast) and value.device == dst.device:
            return value
        return value.to(dst.device, dst._dtype if cast else value._dtype)
    if isinstance(value, numbers.Number):
        t = empty_tensor((), dst._dtype, dst.device)
        t._backend.fill(t, _scalar(value, dst._dtype))
        return t
    if isinstance(value, (list, tuple)):
        return _tensor(value, dtype=dst._dtype, device=dst.device)
    raise TypeError(f"can't assign a {type(value).__name__} to a tensorlab.{dst._dtype.torch_name}Tensor")


def _broadcast_value(v, shape):
    """v expanded to `shape`, after dropping leading size-1 dims it has beyond shape's (torch)."""
    while v.dim() > len(shape) and v.shape[0] == 1:
        v = select_at(v, 0, 0)
    lay = v._meta.layout
    if tuple(lay.shape) == tuple(shape):
        return v
    if len(lay.shape) > len(shape) or any(a != b and a != 1 for a, b in zip(reversed(lay.shape), reversed(shape))):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(lay.shape)} cannot be broadcast to indexing "
                           f"result of shape {list(shape)}")
    return expand(v, shape)


def _put(self, view, indices, shape, value, accumulate, op, in_range=False):
    """Write `value` at `indices` of `view` (a view of self): every check first, then one
    backend call, then one version bump."""
    check_writable(view, op)
    is_tensor = isinstance(value, Tensor)
    if is_tensor:
        check_no_partial_overlap(view, value, op=op)
    autograd_hooks.check_inplace(self, op)
    be = view._backend
    if accumulate or any(i is not None for i in indices):
        be.index_put(view, indices, _broadcast_value(_value_tensor(value, view, True), shape), accumulate, in_range)
    elif not is_tensor and isinstance(value, numbers.Number):
        v = _scalar(value, view._dtype)
        if view.numel():
            be.fill(view, v)
    else:  # a plain copy: the backend casts
        v = _broadcast_value(_value_tensor(value, view, False), shape)
        if view.numel():
            be.copy(view, v)
    self._vc.bump()
    autograd_hooks.record_inplace(self, op, (value,) if is_tensor else (), indices=indices, view=view,
                                  accumulate=accumulate)
    return self


def setitem(self, index, value):
    meta = self._meta
    dev = meta.storage.device
    if isinstance(value, numbers.Number) and not isinstance(value, Tensor):
        _scalar(value, self._dtype)  # torch converts the value before it reads the index (overflow first)
    if index is False or index is True:  # torch's set_item: a lone bool is no advanced index
        if index is False:  # nothing is written (the value is still checked), the version stays
            if not isinstance(value, Tensor):
                _value_tensor(value, self, True)
            return
        entries = [(_NONE, None)]  # True: a copy into self.unsqueeze(0)
    else:
        entries = _entries(index, dev, meta)
    lay, adv = _locate(self, entries, meta)
    view = self._view_of(lay, meta=meta)
    if adv and isinstance(value, Tensor) and value._dtype is not self._dtype and not _masked_fill_form(adv, value):
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self._dtype.torch_name} for the destination and {value._dtype.torch_name} for "
                           f"the source.")
    indices, shape, in_range = _advanced(view, adv)
    _put(self, view, indices, shape, value, False, "index_put_" if adv else "copy_", in_range)


def _masked_fill_form(adv, value):
    """torch writes x[mask] = v as masked_fill_ (casting v) when the advanced part is one boolean mask
    and v is one element on the CPU; every other advanced assignment needs v of x's dtype."""
    return (value.numel() == 1 and value.device.type == "cpu" and len(adv) == 1
            and type(adv[0][1]) is not bool and adv[0][1]._dtype in _MASK_DTYPES)


def index_put_(self, indices, values, accumulate=False):
    """self[indices] = values (or += with accumulate=True); `indices` is a tuple of index tensors
    (None: the whole dim), `values` a tensor of self's dtype broadcastable to the result."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put_(): argument 'indices' must be tuple of Tensors, not {type(indices).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put_(): argument 'values' must be Tensor, not {type(values).__name__}")
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self._dtype.torch_name} for the destination and {values._dtype.torch_name} for "
                           f"the source.")
    entries = []
    for i, t in enumerate(indices):
        if t is None:
            entries.append((_SLICE, slice(None)))
        elif not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        elif t._dtype in _INDEX_DTYPES:
            entries.append((_TENSOR, t))  # a 0-dim index stays a tensor here, broadcast with the others
        elif t._dtype in _MASK_DTYPES:
            entries.append(_tensor_entry(t))
        else:
            raise IndexError(_DTYPE_ERROR)
    used = sum(1 if k in _CONSUMES_ONE else v.dim() if k == _MASK else 0 for k, v in entries)
    meta = self._meta
    ndim = len(meta.layout.shape)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim} (got {used})")
    lay, adv = _locate(self, entries, meta)
    view = self._view_of(lay, meta=meta)
    idx, shape, in_range = _advanced(view, adv)
    return _put(self, view, idx, shape, values, bool(accumulate), "index_put_", in_range)


def index_put(input, indices, values, accumulate=False):
    from .copy import clone
    return index_put_(clone(input), indices, values, accumulate)


FUNCTIONS = ("index_put",)
METHODS = {"__getitem__": getitem, "__setitem__": setitem, "index_put_": index_put_, "index_put": index_put}
