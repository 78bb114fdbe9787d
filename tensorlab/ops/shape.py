"""Shape and index ops that produce new tensors: cat/stack, flip, roll, gather, scatter
(and scatter_add, index_fill), index_select, masked_select, nonzero, sort/argsort, topk,
median/nanmedian/kthvalue, tril/triu, and the one-argument where(cond) (`_where_cond`, exported
by elementwise's where)."""
from __future__ import annotations

import operator

from .. import autograd_hooks, dtypes, layout as L, return_types, sync
from ..errors import IndexOutOfRangeError
from ..tensor import Tensor
from . import registry
from ._common import (check_no_partial_overlap, check_writable, empty_like_layout, empty_tensor, output, outputs,
                      pinned, same_device)
from .creation import full
from .elementwise import _pin, where
from .reduction import (check_nonempty, check_out_dtype, check_tensor, out_pair, reduced_shape, refuse_out_grad,
                        wrap_dims)
from .views import reshape
from .registry import DEFAULT, KEEP, NONE, OpDef

_F = "shape"
registry.register(
    OpDef("cat", _F, "cat", DEFAULT),
    OpDef("stack", _F, "stack", DEFAULT),
    OpDef("flip", _F, "flip", KEEP),
    OpDef("roll", _F, "roll", KEEP),
    OpDef("gather", _F, "gather", KEEP),
    OpDef("scatter", _F, "scatter", KEEP),
    OpDef("scatter_", _F, "scatter", KEEP, inplace=True),
    OpDef("scatter_add", _F, "scatter", KEEP, info={"reduce": "add"}),
    OpDef("scatter_add_", _F, "scatter", KEEP, inplace=True, info={"reduce": "add"}),
    OpDef("index_select", _F, "index_select", KEEP),
    OpDef("index_fill", _F, "index_fill", KEEP),
    OpDef("index_fill_", _F, "index_fill", KEEP, inplace=True),
    OpDef("masked_select", _F, "masked_select", KEEP, info={"sync": "count"}),
    OpDef("nonzero", _F, "nonzero", NONE, differentiable=False, info={"sync": "count", "out": "int64"}),
    OpDef("sort", _F, "sort", KEEP),
    OpDef("argsort", _F, "sort", NONE, differentiable=False, info={"out": "int64"}),
    OpDef("topk", _F, "topk", KEEP),
    OpDef("tril", _F, "triangle", KEEP, info={"upper": False}),
    OpDef("triu", _F, "triangle", KEEP, info={"upper": True}),
    OpDef("tril_", _F, "triangle", KEEP, inplace=True, info={"upper": False}),
    OpDef("triu_", _F, "triangle", KEEP, inplace=True, info={"upper": True}),
)

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)
_tuple_item = tuple.__getitem__


def _restride(t, shape, stride, offset=None, meta=None):
    """A view of t over the storage of `meta` (t's record, read once)."""
    meta = t._meta if meta is None else meta
    lay = meta.layout
    return t._view_of(L.Layout(L.Size(shape), tuple(stride), lay.offset if offset is None else offset), meta=meta)


def _unsqueeze(t, d):
    meta = t._meta
    lay = meta.layout
    return _restride(t, lay.shape[:d] + (1,) + lay.shape[d:], lay.stride[:d] + (0,) + lay.stride[d:], meta=meta)


def _expand(t, shape):
    meta = t._meta
    lay = meta.layout
    if tuple(lay.shape) == tuple(shape):
        return t
    return _restride(t, shape, L.expand_strides(lay.shape, lay.stride, shape), meta=meta)


def _size(t, d):
    """torch's ensure_nonempty_size: a 0-dim tensor counts as one element along dim 0."""
    shape = t._meta.layout.shape
    return shape[d] if shape else 1


def _inplace_checks(self, op, inputs):
    """Checks on the pinned in-place target `self`; `inputs` are the other operands."""
    check_writable(self, op)
    check_no_partial_overlap(self, *inputs, op=op)


def _inplace_done(self, op, inputs, **info):
    self._vc.bump()
    return autograd_hooks.record_inplace(self, op, inputs, **info)


def _tensor_list(tensors, op):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not "
                        f"{type(tensors).__name__}")
    out = []
    for t in tensors:  # each tensor's remembered pin (elementwise's _pin): many small inputs, no new pin each
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {len(out)} in argument 0, but got {type(t).__name__}")
        out.append(_pin(t))
    return out


def _promote_all(ts):
    dt = ts[0]._dtype
    for t in ts:
        if t._dtype is not dt:
            dt = dtypes.promote_types(dt, t._dtype)
    return dt


# -- cat, stack ----------------------------------------------------------------------------------
def _concat(op, src, ts, parts, d, shape, out, mixed):
    """Write `parts` one after another along d into a new or out= result of `shape`, promoted to
    the inputs' common dtype. mixed=False: the caller found every input of the first's dtype and
    Device object (promotion and the device rules then have nothing to do)."""
    dt = _promote_all(ts) if mixed else ts[0]._dtype
    if isinstance(out, Tensor) and not dtypes.can_cast(dt, out._dtype):
        raise TypeError(f"{op}(): input types can't be cast to the desired output type {out._dtype.torch_name}")
    dev = same_device(op, *ts) if mixed else ts[0]._meta.storage.device
    o = output(out, shape, dt, dev, op, ts)
    if o.tensor.numel():
        o.tensor._backend.cat(o.tensor, parts, d)
    return autograd_hooks.record(o.finish(), op, tuple(src), dim=d)


def cat(tensors, dim=0, *, out=None):
    """Concatenate along an existing dim. As torch's legacy rule, 1-D empty tensors are skipped
    whatever the others' shapes (they still take part in dtype promotion)."""
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        _tensor_list(tensors, "cat")  # torch's TypeError
    if out is not None:
        refuse_out_grad("cat", out, *tensors)
    if not tensors:
        raise ValueError("cat(): expected a non-empty list of Tensors")
    # one pass over the inputs (as stack's): each one's remembered pin (elementwise's _pin), its record
    # read once, and whether dtypes or Device objects differ from the first's (then _concat's rules)
    ts, lays = [], []
    mixed = one_layout = False
    for t in tensors:
        if not isinstance(t, Tensor):
            _tensor_list(tensors, "cat")  # torch's TypeError for the element
        p = _pin(t)
        meta = p._meta
        if not ts:
            dt0, dev0, lay0 = p._dtype, meta[0].device, meta[1]
            one_layout = True
        else:
            if p._dtype is not dt0 or meta[0].device is not dev0:
                mixed = True
            if meta[1] is not lay0:
                one_layout = False
        ts.append(p)
        lays.append(meta[1])
    rshape = lay0.shape
    if one_layout and rshape and rshape != (0,):  # the common case: every input of one layout
        d = L.wrap_dim(dim, len(rshape))
        shape = rshape[:d] + (_tuple_item(rshape, d) * len(ts),) + rshape[d + 1:]
        return _concat("cat", tensors, ts, ts, d, shape, out, mixed)
    for i, lay in enumerate(lays):
        if not lay.shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be concatenated; use stack, or "
                               f"unsqueeze it first")
    skip = [lay.shape == (0,) for lay in lays]
    parts = [t for t, s in zip(ts, skip) if not s] if True in skip else ts
    ref = parts[0] if parts else ts[0]
    reflay = ref._meta[1]
    rshape = reflay.shape
    d = L.wrap_dim(dim, len(rshape))
    total = 0
    for i, lay in enumerate(lays):
        shape = lay.shape
        if lay is reflay or shape == rshape:  # the common case: inputs of one layout or one shape
            total += _tuple_item(shape, d)  # a Size's own __getitem__ is Python code
            continue
        if parts and skip[i]:
            continue
        if len(shape) != len(rshape):
            raise RuntimeError(f"Tensors must have same number of dimensions: got {len(rshape)} and {len(shape)}")
        for j, (a, b) in enumerate(zip(rshape, shape)):
            if j != d and a != b:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size {a} but got "
                                   f"size {b} for tensor number {i} in the list.")
        total += shape[d]
    shape = rshape[:d] + (total,) + rshape[d + 1:]
    return _concat("cat", tensors, ts, parts, d, shape, out, mixed)


def stack(tensors, dim=0, *, out=None):
    if isinstance(tensors, Tensor) or not isinstance(tensors, (list, tuple)):
        _tensor_list(tensors, "stack")  # torch's TypeError
    if out is not None:
        refuse_out_grad("stack", out, *tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    # one pass over the inputs (many small ones are the DataLoader's collate): type, each input's
    # remembered pin (elementwise's _pin), its record read once, shape, dtype and device compared
    # with the first's; promotion and the mixed-device rules only when something differs
    first = tensors[0]
    if not isinstance(first, Tensor):
        raise TypeError(f"expected Tensor as element 0 in argument 0, but got {type(first).__name__}")
    p = _pin(first)
    meta = p._meta
    lay0, dt0, dev0 = meta[1], p._dtype, meta[0].device
    shape0 = lay0.shape
    ts = [p]
    mixed = False
    for t in tensors[1:]:
        if not isinstance(t, Tensor):
            raise TypeError(f"expected Tensor as element {len(ts)} in argument 0, but got {type(t).__name__}")
        p = _pin(t)
        meta = p._meta
        lay = meta[1]
        if lay is not lay0 and lay.shape != shape0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape0)} at entry 0 and "
                               f"{list(t.shape)} at entry {len(ts)}")
        if p._dtype is not dt0 or meta[0].device is not dev0:
            mixed = True
        ts.append(p)
    d = L.wrap_dim(dim, len(shape0) + 1)
    # one primitive call over the inputs themselves (no unsqueezed view per input): stack = cat along a new dim
    dt = _promote_all(ts) if mixed else dt0
    if isinstance(out, Tensor) and not dtypes.can_cast(dt, out._dtype):
        raise TypeError(f"stack(): input types can't be cast to the desired output type {out._dtype.torch_name}")
    dev = same_device("stack", *ts) if mixed else dev0
    o = output(out, shape0[:d] + (len(ts),) + shape0[d:], dt, dev, "stack", ts)
    if o.tensor.numel():
        o.tensor._backend.stack(o.tensor, ts, d)
    return autograd_hooks.record(o.finish(), "stack", tuple(tensors), dim=d)


# -- flip, roll ----------------------------------------------------------------------------------
def _int_list(v):
    return [v] if isinstance(v, int) else list(v)


def flip(input, dims):
    """A copy with the order of elements reversed along each of `dims`."""
    x = check_tensor(input, "flip")
    ds = wrap_dims(_int_list(dims), x.dim())  # a 0-dim tensor takes dims -1 and 0, as torch
    if not x.dim():
        ds = []
    res = empty_like_layout(x)  # torch: empty_like(self, preserve_format), so flip keeps x's memory order
    x._backend.flip(res, x, ds)
    return autograd_hooks.record(res, "flip", (input,), dims=ds)


def _flip_method(self, *dims, **kwargs):
    if "dims" in kwargs:  # x.flip(dims=(0,)), torch's keyword
        if dims:
            raise TypeError("flip() got multiple values for argument 'dims'")
        return flip(self, kwargs.pop("dims"))
    if kwargs:
        raise TypeError(f"flip() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return flip(self, dims[0] if len(dims) == 1 and not isinstance(dims[0], int) else dims)


def roll(input, shifts, dims=None):
    """Shift elements along dims, wrapping around; dims=None rolls the flattened tensor."""
    x = check_tensor(input, "roll")
    sh = _int_list(shifts)
    if not sh:
        raise RuntimeError("`shifts` required")
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:0")
        ds = None
    else:
        ds = _int_list(dims)
        if len(sh) != len(ds):
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
        if x.dim() == 0:
            raise IndexError(f"Dimension specified as {ds[0]} but tensor has no dimensions")
        ds = [L.wrap_dim(d, x.dim()) for d in ds]
    res = empty_tensor(x._meta.layout.shape, x._dtype, x.device)
    if res.numel():
        x._backend.roll(res, x, sh, ds)
    return autograd_hooks.record(res, "roll", (input,), shifts=sh, dims=ds)


# -- gather, scatter, index_select, index_fill ---------------------------------------------------
def _index_tensor(index, op, pos=3):
    idx = check_tensor(index, op, "index", pos)
    if idx._dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    return idx


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j] = input[index[i][j]][j] along `dim`; index may be smaller than input off dim."""
    refuse_out_grad("gather", out, input, index)
    x = check_tensor(input, "gather")
    idx = _index_tensor(index, "gather")
    d = L.wrap_dim(dim, x.dim())
    if max(idx.dim(), 1) != max(x.dim(), 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for j in range(x.dim()):
        if j != d and _size(idx, j) > _size(x, j):
            raise RuntimeError(f"Size does not match at dimension {j} expected index {list(idx.shape)} to be no "
                               f"larger than self {list(x.shape)} apart from dimension {d}")
    check_out_dtype(out, x._dtype)
    o = output(out, idx._meta.layout.shape, x._dtype, same_device("gather", x, idx), "gather", (x, idx))
    if o.tensor.numel():
        x._backend.gather(o.tensor, x, d, idx)
    return autograd_hooks.record(o.finish(), "gather", (input, index), dim=d)


def _scatter_checks(self, d, idx, src, op):
    """torch's scatter shape rules; an empty index is a no-op that skips them."""
    if isinstance(src, Tensor) and src._dtype is not self._dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    if idx.numel() == 0:
        return False
    nd = max(self.dim(), 1)
    if max(idx.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    is_t = isinstance(src, Tensor)
    if is_t and max(src.dim(), 1) != nd:
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for j in range(nd):
        if (j != d and _size(idx, j) > _size(self, j)) or (is_t and _size(idx, j) > _size(src, j)):
            tail = f" and to be no larger size than src {list(src.shape)}" if is_t else ""
            raise RuntimeError(f"Expected index {list(idx.shape)} to be no larger than self {list(self.shape)} apart "
                               f"from dimension {d}{tail}")
    return True


def _scatter_source(src, value, op):
    if src is None:
        src = value
    if src is None:
        raise TypeError(f"{op}(): missing the source: pass src (a Tensor) or value (a number)")
    if isinstance(src, Tensor):
        return pinned(src)
    if not isinstance(src, (bool, int, float)):
        raise TypeError(f"{op}(): argument 'src' must be Tensor or a number, not {type(src).__name__}")
    return src


def _reduce_mode(reduce):
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    return reduce


def _scatter_into(self, dim, index, src, reduce, op):
    """Validate, then write into `self` (a fresh copy or the in-place target)."""
    idx = _index_tensor(index, op)
    d = L.wrap_dim(dim, self.dim())
    same_device(op, self, idx, src)
    if _scatter_checks(self, d, idx, src, op):
        self._backend.scatter(self, d, idx, src, reduce)
    return idx


def _copy_of(x):
    res = empty_tensor(x._meta.layout.shape, x._dtype, x.device)
    x._backend.copy(res, x)
    return res


def scatter(input, dim, index, src=None, *, value=None, reduce=None, out=None, _op="scatter"):
    """A copy of input with input[index[i][j]][j] = src[i][j] (dim 0; any dim likewise); src may
    be a number. reduce='add'/'multiply' combines with the existing values. (`_op`: the public
    name errors use, scatter_add's when it calls.)"""
    x = check_tensor(input, _op)
    s = _scatter_source(src, value, _op)
    reduce = _reduce_mode(reduce)
    res = _copy_of(x)
    _scatter_into(res, dim, index, s, reduce, _op)
    res = autograd_hooks.record(res, "scatter", (input, index, src) if isinstance(src, Tensor) else (input, index),
                                dim=dim, reduce=reduce)
    if out is not None:
        from ._composite import to_out
        return to_out(res, out, _op)
    return res


def scatter_(self, dim, index, src=None, *, value=None, reduce=None, _op="scatter_"):
    s = _scatter_source(src, value, _op)
    reduce = _reduce_mode(reduce)
    inputs = (index, s) if isinstance(s, Tensor) else (index,)
    t = pinned(self)
    _inplace_checks(t, _op, inputs)
    autograd_hooks.check_inplace(self, _op)
    _scatter_into(t, dim, index, s, reduce, _op)
    return _inplace_done(self, "scatter_", (index, src) if isinstance(s, Tensor) else (index,), dim=dim,
                         reduce=reduce)


def _add_source(src, op):
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' (position 3) must be Tensor, not {type(src).__name__}")
    return src


def scatter_add(input, dim, index, src, *, out=None):
    """A copy of input with src[i][j] added at input[index[i][j]][j], duplicates accumulating."""
    return scatter(input, dim, index, _add_source(src, "scatter_add"), reduce="add", _op="scatter_add", out=out)


def scatter_add_(self, dim, index, src):
    return scatter_(self, dim, index, _add_source(src, "scatter_add_"), reduce="add", _op="scatter_add_")


def index_select(input, dim, index, *, out=None):
    """The slices of input at positions `index` (1-D or 0-dim) along `dim`."""
    refuse_out_grad("index_select", out, input, index)
    x = check_tensor(input, "index_select")
    idx = check_tensor(index, "index_select", "index", 3)
    if idx._dtype not in _INDEX_DTYPES:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    if idx.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    d = L.wrap_dim(dim, x.dim())
    n = idx.numel()
    if x.dim() == 0:
        if n != 1:
            raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} value(s)")
        shape = ()
    else:
        shape = x._meta.layout.shape[:d] + (n,) + x._meta.layout.shape[d + 1:]
    if isinstance(out, Tensor) and out._dtype is not x._dtype:
        raise RuntimeError("index_select(): self and result must have the same scalar type")
    o = output(out, shape, x._dtype, same_device("index_select", x, idx), "index_select", (x, idx))
    if o.tensor.numel():
        x._backend.index_select(o.tensor, x, d, idx)
    return autograd_hooks.record(o.finish(), "index_select", (input, index), dim=d)


def _fill_value(value, op):
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
        return value.item()
    return value


def _index_fill_args(t, dim, index, value):
    idx = check_tensor(index, "index_fill_", "index", 2)
    if idx._dtype is not dtypes.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if idx.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    same_device("index_fill_", t, idx)
    d = L.wrap_dim(dim, t.dim())
    if t.dim() and t.shape[d] == 0 and idx.numel():  # torch refuses (an index into an empty dim)
        raise IndexOutOfRangeError(f"index_fill_(): every index is out of bounds for dimension {d} with size 0 "
                                   f"(self has shape {list(t.shape)})")
    v = _fill_value(value, "index_fill_")
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        from .elementwise import _checked
        v = _checked(v, t._dtype, "index_fill_")  # torch: "value cannot be converted ... without overflow"
    return d, idx, v


def index_fill_(self, dim, index, value):
    """self[..., index[k], ...] = value along dim (negative indices count from the end)."""
    t = pinned(self)
    d, idx, v = _index_fill_args(t, dim, index, value)
    _inplace_checks(t, "index_fill_", (idx,))
    autograd_hooks.check_inplace(self, "index_fill_")
    if t.numel() and idx.numel():
        t._backend.index_fill(t, d, idx, v)
    return _inplace_done(self, "index_fill_", (index,), dim=d)


def index_fill(input, dim, index, value):
    x = check_tensor(input, "index_fill")
    d, idx, v = _index_fill_args(x, dim, index, value)
    res = _copy_of(x)
    if res.numel() and idx.numel():
        res._backend.index_fill(res, d, idx, v)
    return autograd_hooks.record(res, "index_fill", (input, index), dim=d)


# -- data-dependent sizes: masked_select, nonzero ------------------------------------------------
def _count_nonzero_sync(t, reason):
    """How many elements of t are nonzero, read on the host (a named sync on CUDA)."""
    cnt = empty_tensor((), dtypes.int64, t.device)
    t._backend.reduce(cnt, t, "count_nonzero", tuple(range(t.dim())))
    sync.host_wait(reason, t.device)
    return int(t._backend.to_host(cnt))


def masked_select(input, mask, *, out=None):
    """The elements of input where mask is True (both broadcast), as a 1-D tensor."""
    refuse_out_grad("masked_select", out, input, mask)
    x = check_tensor(input, "masked_select")
    m = check_tensor(mask, "masked_select", "mask", 2)
    if m._dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got {m._dtype}")
    if isinstance(out, Tensor) and out._dtype is not x._dtype:
        raise RuntimeError("masked_select(): self and result must have the same scalar type")
    dev = same_device("masked_select", x, m)
    shape = L.broadcast_shapes(x.shape, m.shape)
    xe, me = _expand(x, shape), _expand(m, shape)
    n = _count_nonzero_sync(me, "masked_select")
    o = output(out, (n,), x._dtype, dev, "masked_select", (x, m))
    if n:
        x._backend.masked_select(o.tensor, xe, me)
    return autograd_hooks.record(o.finish(), "masked_select", (input, mask))


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the nonzero elements: an (n, ndim) int64 tensor in row-major order, or with
    as_tuple=True one 1-D tensor per dim. The size depends on the data: a host sync on CUDA."""
    x = check_tensor(input, "nonzero")
    if as_tuple and out is not None:
        raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
    if isinstance(out, Tensor) and out._dtype is not dtypes.int64:
        raise RuntimeError(f"nonzero: Expected out tensor to have scalar type Long but got scalar type "
                           f"{out._dtype.torch_name}")
    if as_tuple and x.dim() == 0:
        x = _restride(x, (1,), (0,))  # torch: a 0-dim input acts as one element of a 1-D tensor
    n = _count_nonzero_sync(x, "nonzero")
    nd = x.dim()
    o = output(out, (n, nd), dtypes.int64, x.device, "nonzero", (x,))
    if n and nd:
        x._backend.nonzero(o.tensor, x)
    res = autograd_hooks.record(o.finish(), "nonzero", (x,))
    if not as_tuple:
        return res
    off = res._meta.layout.offset
    return tuple(_restride(res, (n,), (nd,), off + j) for j in range(nd))


def _where_cond(condition):
    """where(condition) with one argument: nonzero(condition, as_tuple=True)."""
    return nonzero(condition, as_tuple=True)


# -- sort, argsort, topk -------------------------------------------------------------------------
def _sorted_pair(op, src, x, d, size, out, run, result_type):
    vo, io = out_pair(out, op)
    check_out_dtype(vo, x._dtype)
    check_out_dtype(io, dtypes.int64)
    shape = x._meta.layout.shape
    shape = shape[:d] + (size,) + shape[d + 1:] if shape else ()
    o = outputs(op, [(vo, shape, x._dtype, x.device), (io, shape, dtypes.int64, x.device)], (x,))
    if o.tensors[0].numel():
        run(*o.tensors)
    values, indices = o.finish()
    values = autograd_hooks.record(values, op, (src,), dim=d, indices=indices)
    return result_type(values, indices)


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) sorted along dim; always stable (equal elements keep their order) and
    NaN sorts above every number, as in torch."""
    refuse_out_grad("sort", out, input)
    x = check_tensor(input, "sort")
    d = L.wrap_dim(dim, x.dim())
    size = _size(x, d)
    return _sorted_pair("sort", input, x, d, size, out,
                        lambda v, i: x._backend.sort(v, i, x, d, bool(descending), bool(stable)), return_types.sort)


def argsort(input, dim=-1, descending=False, stable=False, *, out=None):
    x = check_tensor(input, "argsort")
    d = L.wrap_dim(dim, x.dim())
    res = empty_tensor(x._meta.layout.shape, dtypes.int64, x.device)
    if res.numel():
        x._backend.sort(None, res, x, d, bool(descending), bool(stable))
    if out is not None:
        from ._composite import to_out
        return to_out(res, out, "argsort")
    return res


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The k largest (largest=False: smallest) elements along dim with their indices, always
    returned sorted (sorted=False allows any order)."""
    refuse_out_grad("topk", out, input)
    x = check_tensor(input, "topk")
    if x._dtype is dtypes.bool_:
        raise RuntimeError("topk does not support bool dtypes (torch refuses them too); convert first, e.g. "
                           "x.to(tensorlab.uint8)")
    k = operator.index(k)
    d = L.wrap_dim(dim, x.dim())
    if not 0 <= k <= _size(x, d):
        raise RuntimeError(f"selected index k out of range (k={k}, dimension {d} has size {_size(x, d)})")
    return _sorted_pair("topk", input, x, d, k, out,
                        lambda v, i: x._backend.topk(v, i, x, k, d, bool(largest)), return_types.topk)


# -- median, nanmedian, kthvalue -----------------------------------------------------------------


def _rank(sv, d, n, k, skip_nan):
    """int64 positions (size 1 along d) into `sv`, x sorted along d (NaN last): k-1, or for the
    median (k None) the lower middle, or the first NaN of a slice that has one (skip_nan: the
    lower middle of the numbers, 0 when there are none)."""
    shape = tuple(1 if i == d else s for i, s in enumerate(sv._meta.layout.shape))
    if k is None and sv._dtype.is_floating_point:
        nans = sv.isnan().sum(d, keepdim=True) if shape else sv.isnan().long()
        if skip_nan:
            m = n - nans
            return where(m > 0, (m - 1) // 2, 0)
        return where(nans > 0, n - nans, (n - 1) // 2)
    return full(shape, (n - 1) // 2 if k is None else k - 1, dtype=dtypes.int64, device=sv.device)


def _order_stat(op, x, d, keepdim, out, k=None, skip_nan=False):
    """Outputs (values, indices) along d holding x's k-th smallest element (k None: the median)
    and its index, read from one stable sort; written, not yet published."""
    if x._dtype is dtypes.bool_:
        raise RuntimeError(f"{op}(): does not support bool input; convert it first, e.g. x.to(tensorlab.uint8)")
    dims = (d,) if x.dim() else ()
    n = _size(x, d)
    check_nonempty(x, dims, op, False)
    if k is not None and not 1 <= k <= n:
        raise RuntimeError(f"{op}(): selected number k out of range for dimension {d}")
    vo, io = out_pair(out, op)
    check_out_dtype(vo, x._dtype)
    check_out_dtype(io, dtypes.int64)
    shape = reduced_shape(x._meta.layout.shape, dims, keepdim)
    o = outputs(op, [(vo, shape, x._dtype, x.device), (io, shape, dtypes.int64, x.device)], (x,))
    tv, ti = o.tensors
    if tv.numel():
        sv, si = sort(x, d, stable=True)
        pos = _rank(sv, d, n, k, skip_nan)
        if not keepdim and dims:
            tv, ti = _unsqueeze(tv, d), _unsqueeze(ti, d)
        x._backend.gather(tv, sv, d, pos)
        x._backend.gather(ti, si, d, pos)
    return o


def _median(op, input, dim, keepdim, out, skip_nan, result_type):
    """median(x): the lower of the two middle values of all elements (NaN if there is one, unless
    skip_nan), a 0-dim tensor; median(x, dim): (values, indices) along dim."""
    if dim is None and (keepdim or out is not None):
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
    refuse_out_grad(op, out, input)
    x = check_tensor(input, op)
    if dim is not None:
        d = L.wrap_dim(dim, x.dim())
        values, indices = _order_stat(op, x, d, keepdim, out, skip_nan=skip_nan).finish()
        values = autograd_hooks.record(values, op, (input,), dim=(d,) if x.dim() else (), keepdim=keepdim,
                                       indices=indices)
        return result_type(values, indices)
    if x.numel() == 0:
        if not x._dtype.is_floating_point:  # torch returns NaN cast to the integer type (unspecified)
            raise RuntimeError(f"{op}(): cannot compute the median of an empty {x._dtype.torch_name} tensor")
        res = full((), float("nan"), dtype=x._dtype, device=x.device)
    else:
        res = _order_stat(op, reshape(x, -1), 0, False, None, skip_nan=skip_nan).finish()[0]
    return autograd_hooks.record(res, op, (input,), dim=tuple(range(x.dim())), keepdim=False)


def median(input, dim=None, keepdim=False, *, out=None):
    """The lower median (torch's: no averaging of the two middle values); NaN propagates."""
    return _median("median", input, dim, keepdim, out, False, return_types.median)


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """median ignoring NaN (NaN only where a slice is all NaN)."""
    return _median("nanmedian", input, dim, keepdim, out, True, return_types.nanmedian)


def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):
    """(values, indices) of the k-th smallest element along dim (k from 1; NaN counts as largest)."""
    refuse_out_grad("kthvalue", out, input)
    x = check_tensor(input, "kthvalue")
    try:
        k = operator.index(k)
    except TypeError:
        raise TypeError(f"kthvalue(): argument 'k' (position 2) must be int, not {type(k).__name__}") from None
    d = L.wrap_dim(dim, x.dim())
    values, indices = _order_stat("kthvalue", x, d, keepdim, out, k=k).finish()
    values = autograd_hooks.record(values, "kthvalue", (input,), dim=(d,) if x.dim() else (), keepdim=keepdim,
                                   indices=indices)
    return return_types.kthvalue(values, indices)


# -- tril, triu ----------------------------------------------------------------------------------
def _triangle_check(x, op):
    if x.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")


def _triangle(op, upper, input, diagonal, out):
    refuse_out_grad(op, out, input)
    x = check_tensor(input, op)
    _triangle_check(x, op)
    check_out_dtype(out, x._dtype)
    o = output(out, x._meta.layout.shape, x._dtype, x.device, op, (x,))
    if o.tensor.numel():
        x._backend.triangle(o.tensor, x, int(diagonal), upper)
    return autograd_hooks.record(o.finish(), op, (input,), diagonal=diagonal)


def _triangle_(op, upper, self, diagonal):
    t = pinned(self)
    _triangle_check(t, op)
    _inplace_checks(t, op, ())
    autograd_hooks.check_inplace(self, op)
    if t.numel():
        t._backend.triangle(t, t, int(diagonal), upper)
    return _inplace_done(self, op, (), diagonal=diagonal)


def tril(input, diagonal=0, *, out=None):
    """Keep the elements on and below the `diagonal`-th diagonal of the last two dims."""
    return _triangle("tril", False, input, diagonal, out)


def triu(input, diagonal=0, *, out=None):
    """Keep the elements on and above the `diagonal`-th diagonal of the last two dims."""
    return _triangle("triu", True, input, diagonal, out)


def tril_(self, diagonal=0):
    return _triangle_("tril_", False, self, diagonal)


def triu_(self, diagonal=0):
    return _triangle_("triu_", True, self, diagonal)


concatenate = concat = cat
FUNCTIONS = ("cat", "concatenate", "concat", "stack", "flip", "roll", "gather", "scatter", "scatter_add",
             "index_select", "index_fill", "masked_select", "nonzero", "sort", "argsort", "topk", "median", "nanmedian",
             "kthvalue", "tril", "triu")
METHODS = {name: globals()[name] for name in FUNCTIONS if name not in ("cat", "concatenate", "concat", "stack")}
METHODS.update(flip=_flip_method, scatter_=scatter_, scatter_add_=scatter_add_, index_fill_=index_fill_,
               tril_=tril_, triu_=triu_)
