"""View ops: new layouts over the same storage and version counter, computed from metadata alone
(no backend call), plus reshape/flatten, which copy only when no view can express the result."""
from __future__ import annotations

import operator

from .. import _warn
from .. import autograd_hooks, dtypes, layout as L
from ..layout import Layout, Size
from ..tensor import Meta, Tensor, contiguous_format, meta_write_lock
from ..tensor import _meta_new, _new
from ._common import interned, sizes_or_keyword, snapshot

_VIEW_HINT = ("view size is not compatible with input tensor's size and stride (at least one dimension spans across "
              "two contiguous subspaces). Use .reshape(...) instead.")


def _view(self, meta, shape, stride, offset, op, /, **info):
    """A view of `self` computed from `meta`, the one record of self the op read."""
    out = self._view_of(interned(Layout(Size(shape), tuple(stride), offset)), meta=meta)
    return autograd_hooks.record(out, op, (self,), **info)


# -- reshaping ----------------------------------------------------------------------------------
# Layouts of views already computed, keyed on the input's Layout and the op's arguments when they
# are exact ints (a float or bool equal to an int must still reach the general path's TypeError):
# a view is a pure function of the two, and only results that passed every check are kept.
_MEMO = {}
_MEMO_LIMIT = 4096


def _remember(key, lay):
    if len(_MEMO) >= _MEMO_LIMIT:
        _MEMO.clear()
    _MEMO[key] = lay


def _ints(args):
    for a in args:
        if type(a) is not int:
            return False
    return True


def _memo_view(self, meta, lay):
    """A view over `meta`'s storage with the memoized `lay`: what _view does when autograd has
    nothing to record (the caller checked), without recomputing the layout."""
    t = _new(Tensor, _meta_new(Meta, (meta[0], lay)), self._dtype, self._vc, False)
    base = self._base
    t._base = self if base is None else base
    return t


# -- memoized entry points --------------------------------------------------------------------------
def _plain(args):
    """Whether every argument is an exact int or a tuple (Size) of exact ints (hashable, and nothing whose
    equality could hide a bool or float the general path must refuse)."""
    for a in args:
        if type(a) is not int and not ((type(a) is tuple or type(a) is Size) and _ints(a)):
            return False
    return True


def _memoized(name, fn):
    """fn (a view op of a tensor and int arguments) with its result's layout(s) memoized per (input
    layout, arguments), as view/permute/reshape/transpose do inline: a repeated call with autograd
    having nothing to record makes the view(s) from the remembered layout(s). Only calls that returned
    new views of the input's storage are remembered; keywords, other argument types, subclasses and
    recorded calls always take fn."""
    def memoized(input, *args, **kwargs):
        if kwargs or type(input) is not Tensor or input._requires_grad or autograd_hooks._slow or not _plain(args):
            return fn(input, *args, **kwargs)
        meta = input._meta
        key = (name, meta[1], args)
        hit = _MEMO.get(key)
        if hit is not None:
            if type(hit) is tuple:
                return tuple([_memo_view(input, meta, lay) for lay in hit])
            return _memo_view(input, meta, hit)
        out = fn(input, *args)
        storage = meta[0]
        if type(out) is Tensor:
            if out is not input and out._meta[0] is storage and out._dtype is input._dtype:
                _remember(key, out._meta[1])
        elif type(out) is tuple and all(type(o) is Tensor and o is not input and o._meta[0] is storage for o in out):
            _remember(key, tuple([o._meta[1] for o in out]))
        return out
    memoized.__name__ = memoized.__qualname__ = fn.__name__
    memoized.__doc__ = fn.__doc__
    memoized.__wrapped__ = fn
    return memoized


def view(self, *shape, dtype=None, size=None):
    """Same elements, new shape (strides must allow it), or the same bytes as another dtype."""
    return _view_general(self, shape, dtype, size)


view = _memoized("view", view)


def _view_general(self, shape, dtype, size, meta=None):
    if size is not None:
        shape = (size,)
    if dtype is not None or (len(shape) == 1 and isinstance(shape[0], dtypes.DType)):
        return _view_dtype(self, dtype if dtype is not None else shape[0])
    if meta is None:
        meta = self._meta
    lay = meta.layout
    shape = L.infer_size(L.normalize_shape(shape, "view"), L.prod(lay.shape))
    stride = L.view_strides(lay.shape, lay.stride, shape)
    if stride is None:
        raise RuntimeError(_VIEW_HINT)
    return _view(self, meta, shape, stride, lay.offset, "view", shape=shape)


def _view_dtype(self, dtype):
    """torch's view(dtype): same itemsize keeps the layout; otherwise the last dim (stride 1)
    is rescaled by the itemsize ratio, and every other stride and the offset must divide."""
    dtype = dtypes.as_dtype(dtype)
    meta = self._meta
    lay = meta.layout
    old, new = self._dtype.itemsize, dtype.itemsize
    if dtype is self._dtype or old == new:
        out = self._view_of(lay, dtype, meta)
        return autograd_hooks.record(out, "view_dtype", (self,), dtype=dtype)
    what = f"to view {self._dtype.torch_name} as {dtype.torch_name} (different element sizes)"
    if not lay.shape:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    shape, stride = list(lay.shape), list(lay.stride)
    last_stride_error = RuntimeError(f"self.stride(-1) must be 1 {what}, but got {stride[-1]}")
    if old > new:
        if stride[-1] != 1:
            raise last_stride_error
        r = old // new
        shape[-1] *= r
        stride = [s * r for s in stride[:-1]] + [1]
        offset = lay.offset * r
    else:
        r = new // old
        if shape[-1] % r:
            raise RuntimeError(f"self.size(-1) must be divisible by {r} {what}, but got {shape[-1]}")
        if lay.offset % r:
            raise RuntimeError(f"self.storage_offset() must be divisible by {r} {what}, but got {lay.offset}")
        if stride[-1] != 1:
            raise last_stride_error
        for d, s in enumerate(stride[:-1]):
            if s % r:
                raise RuntimeError(f"self.stride({d}) must be divisible by {r} {what}, but got {s}")
        shape[-1] //= r
        stride = [s // r for s in stride[:-1]] + [1]
        offset = lay.offset // r
    out = self._view_of(Layout(Size(shape), tuple(stride), offset), dtype, meta)
    return autograd_hooks.record(out, "view_dtype", (self,), dtype=dtype)


def view_as(self, other):
    return view(self, other.shape)


def reshape(input, *shape_args, shape=None):
    """A view when the strides allow one, else a contiguous copy viewed with the new shape."""
    shape = shape_args if shape is None else sizes_or_keyword(shape_args, shape, "reshape", "shape")
    return _reshape(input, shape, input._meta)


reshape = _memoized("reshape", reshape)


def _reshape(input, shape, meta):
    lay = meta.layout
    shape = L.infer_size(L.normalize_shape(shape, "reshape"), L.prod(lay.shape))
    stride = L.view_strides(lay.shape, lay.stride, shape)
    if stride is not None:
        return _view(input, meta, shape, stride, lay.offset, "view", shape=shape)
    from .copy import clone
    flat = clone(snapshot(input, meta), memory_format=contiguous_format)  # the values of the record read above
    return _view(flat, flat._meta, shape, L.contiguous_strides(shape), 0, "view", shape=shape)


def reshape_as(self, other):
    return reshape(self, other.shape)


def flatten(input, start_dim=0, end_dim=-1):
    start_dim, end_dim = _index_args("flatten", (start_dim, "start_dim"), (end_dim, "end_dim"))
    ndim = input.dim()
    s = L.wrap_dim(start_dim, ndim)
    e = L.wrap_dim(end_dim, ndim)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if ndim == 0:
        return reshape(input, 1)
    if s == e:
        return input
    shape = input.shape
    return reshape(input, tuple(shape[:s]) + (L.prod(shape[s:e + 1]),) + tuple(shape[e + 1:]))


def unflatten(input, dim, sizes):
    shape = input.shape
    sizes = L.normalize_shape((sizes,), "unflatten")
    if not sizes:  # torch checks the sizes, then the dim's range, then that there is a dim
        raise RuntimeError("unflatten: sizes must be non-empty")
    d = L.wrap_dim(dim, len(shape))
    if not shape:
        raise RuntimeError("unflatten: Dimension specified as 0 but tensor has no dimensions")
    known = L.prod(s for s in sizes if s != -1)
    if sizes.count(-1) == 1 and known and shape[d] % known == 0:
        sizes = tuple(shape[d] // known if s == -1 else s for s in sizes)
    if any(s < 0 for s in sizes) or L.prod(sizes) != shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {d} "
                           f"({shape[d]}) in the input tensor")
    return view(input, tuple(shape[:d]) + sizes + tuple(shape[d + 1:]))


# -- reordering dims ----------------------------------------------------------------------------
def permute(input, *dims_args, dims=None):
    dims = dims_args if dims is None else sizes_or_keyword(dims_args, dims, "permute", "dims")
    return _permute(input, dims)


permute = _memoized("permute", permute)


def _permute(self, dims, meta=None):
    if meta is None:
        meta = self._meta
    lay = meta.layout
    ndim = len(lay.shape)
    dims = L.normalize_shape(dims, "permute")  # permute(0, 1), permute((0, 1)) or permute([0, 1])
    if len(dims) != ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the length "
                           f"of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal to "
                           f"len(dims) = {len(dims)}")
    dims = tuple(L.wrap_dim(d, ndim) for d in dims)
    if len(set(dims)) != ndim:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _view(self, meta, [lay.shape[d] for d in dims], [lay.stride[d] for d in dims], lay.offset, "permute",
                 dims=dims)


def transpose(input, dim0, dim1):
    return _transpose(input, input._meta, dim0, dim1)


transpose = _memoized("transpose", transpose)


def _transpose(self, meta, dim0, dim1):
    dim0, dim1 = _index_args("transpose", (dim0, "dim0"), (dim1, "dim1"))
    lay = meta.layout
    ndim = len(lay.shape)
    a, b = L.wrap_dim(dim0, ndim), L.wrap_dim(dim1, ndim)
    shape, stride = list(lay.shape), list(lay.stride)
    if ndim:
        shape[a], shape[b] = shape[b], shape[a]
        stride[a], stride[b] = stride[b], stride[a]
    return _view(self, meta, shape, stride, lay.offset, "transpose", dim0=a, dim1=b)


def t(input):
    meta = input._meta
    lay = meta.layout
    n = len(lay.shape)
    if n > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {n}D")
    return _transpose(input, meta, 0, 1) if n == 2 else _view(input, meta, lay.shape, lay.stride, lay.offset, "alias")


def _identity_0d(self, name, hint):
    """torch: .T/.mT/.mH of a 0-D tensor is the identity, with a deprecation warning."""
    _warn.warn(f"Tensor.{name} is deprecated on 0-D tensors. {hint}", UserWarning)
    return permute(self, ())


_REVERSED = tuple(tuple(range(n - 1, -1, -1)) for n in range(L.MAX_DIMS + 1))


def _T(self):
    n = len(self._meta[1][0])
    if n == 0:
        return _identity_0d(self, "T", "This function is the identity in these cases.")
    if n != 2:
        _warn.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and "
                   "it will throw an error in a future release. Consider `x.mT` to transpose batches of matrices "
                   "or `x.permute(*tensorlab.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor.",
                   UserWarning)
    return permute(self, _REVERSED[n])


def _mT(self):
    if self.dim() == 0:
        return _identity_0d(self, "mT", "This function is the identity in these cases.")
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return transpose(self, -2, -1)


def _conj(x):
    """x's conjugate for the conjugate transposes: complex values conjugated (eagerly, a new tensor:
    tensorlab has no lazy conjugate bit), real tensors as they are."""
    if x.dtype.is_complex:
        from .complex_ops import conj
        return conj(x)
    return x


def _H(self):
    if self.dim() not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.")
    return t(_conj(self))


def _mH(self):
    if self.dim() == 0:
        return _identity_0d(self, "mH", "Consider using x.conj().")
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. "
                           f"Got {self.dim()}-D tensor.")
    return transpose(_conj(self), -2, -1)


def adjoint(input):
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. "
                           f"Got {input.dim()}-D tensor.")
    return transpose(_conj(input), -2, -1)


def _dim_list(x, ndim, op, what):
    dims = tuple(x) if isinstance(x, (list, tuple)) else (_index_arg(x, op, what),)  # an int or a 0-dim tensor
    dims = tuple(L.wrap_dim(d, ndim) for d in dims)
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"{op}: repeated dim in `{what}` ({list(dims)})")
    return dims


def movedim(input, source, destination):
    ndim = input.dim()
    _index_args("movedim", *((d, what) for x, what in ((source, "source"), (destination, "destination"))
                             for d in (x if isinstance(x, (list, tuple)) else (x,))))  # all parsed before any wraps
    src = _dim_list(source, ndim, "movedim", "source")
    dst = _dim_list(destination, ndim, "movedim", "destination")
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain "
                           f"the same number of dims as destination ({list(dst)} dims)")
    order = [-1] * ndim
    if not ndim:  # dims 0 and -1 of a 0-dim tensor name no dim
        src = dst = ()
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return permute(input, order)


# -- adding / removing dims ---------------------------------------------------------------------
def unsqueeze(input, dim):
    meta = input._meta
    lay = meta.layout
    ndim = len(lay.shape)
    d = L.wrap_dim(dim, ndim + 1)
    s = lay.shape[d] * lay.stride[d] if d < ndim else 1
    shape = lay.shape[:d] + (1,) + lay.shape[d:]
    stride = lay.stride[:d] + (s,) + lay.stride[d:]
    return _view(input, meta, shape, stride, lay.offset, "unsqueeze", dim=d)


_EVERY_DIM = object()  # squeeze()'s default: torch refuses an explicit dim=None


def squeeze(input, dim=_EVERY_DIM):
    meta = input._meta
    lay = meta.layout
    ndim = len(lay.shape)
    if dim is _EVERY_DIM:
        drop = {d for d in range(ndim) if lay.shape[d] == 1}
    else:
        if dim is None or isinstance(dim, (bool, float, str)):
            raise TypeError(f"squeeze(): argument 'dim' must be int or tuple of ints, not {type(dim).__name__}")
        dims = [L.wrap_dim(operator.index(x), ndim) for x in (dim if isinstance(dim, (list, tuple)) else (dim,))]
        for i, d in enumerate(dims):
            if d in dims[:i]:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        drop = {d for d in dims if ndim and lay.shape[d] == 1}
    keep = [d for d in range(ndim) if d not in drop]
    return _view(input, meta, [lay.shape[d] for d in keep], [lay.stride[d] for d in keep], lay.offset, "squeeze",
                 dims=tuple(sorted(drop)))


def expand(self, *sizes, size=None, implicit=False):
    if size is not None:
        sizes = sizes_or_keyword(sizes, size, "expand", "size")
    meta = self._meta
    lay = meta.layout
    sizes = L.normalize_shape(sizes, "expand")
    for n in sizes:
        if n < -1:
            raise RuntimeError(f"expand: the expanded size of the tensor ({n}) is negative; sizes must be >= 0, or -1 "
                               f"to keep a dimension's size (got {list(sizes)})")
    stride = L.expand_strides(lay.shape, lay.stride, sizes)
    off = len(sizes) - len(lay.shape)
    shape = tuple(lay.shape[i - off] if n == -1 else n for i, n in enumerate(sizes))
    return _view(self, meta, shape, stride, lay.offset, "expand", shape=shape)


def expand_as(self, other):
    return expand(self, other.shape)


def broadcast_to(input, size):
    return expand(input, size)


def broadcast_tensors(*tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = L.broadcast_shapes(*(x.shape for x in tensors))
    return tuple(expand(x, shape) for x in tensors)


# -- sub-ranges of dims -------------------------------------------------------------------------
def as_strided(input, size, stride, storage_offset=None):
    size = L.normalize_shape((size,), "as_strided")
    stride = L.normalize_shape((stride,), "as_strided")
    meta = input._meta
    storage, lay = meta
    offset = lay.offset if storage_offset is None else _index_arg(storage_offset, "as_strided", "storage_offset")
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    for s in stride:
        if s < 0:
            raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                               f"{list(stride)}")
    L.check_bounds(size, stride, offset, input._dtype.itemsize, storage.nbytes(), "as_strided")
    return _view(input, meta, size, stride, offset, "as_strided", size=size, stride=stride, storage_offset=offset)


def _index_arg(x, op, name):
    """An int argument as torch parses it: every argument is checked (type, int64) before any value
    is used, so a bad type names itself before another argument's range error."""
    if type(x) is int and -(1 << 63) <= x < (1 << 63):
        return x
    if isinstance(x, bool):
        raise TypeError(f"{op}(): argument '{name}' must be int, not bool")
    try:
        x = operator.index(x)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' must be int, not {type(x).__name__}") from None
    return L.check_long(x, f"{op}(): argument '{name}'")


def _index_args(op, *named):
    """Several int arguments: every one's type first, then their int64 range (torch's order)."""
    for x, name in named:
        if isinstance(x, bool) or not hasattr(type(x), "__index__"):
            _index_arg(x, op, name)
    return tuple(_index_arg(x, op, name) for x, name in named)


def narrow(input, dim, start, length):
    meta = input._meta
    lay = meta.layout
    dim, start, length = _index_args("narrow", (dim, "dim"), (start, "start"), (length, "length"))
    if not lay.shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = L.wrap_dim(dim, len(lay.shape))
    n = lay.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(input, d, start, length, 1, "narrow", meta)


def _slice(self, d, start, length, step, op, meta=None):
    meta = self._meta if meta is None else meta
    lay = meta.layout
    shape = lay.shape[:d] + (length,) + lay.shape[d + 1:]
    stride = lay.stride[:d] + (lay.stride[d] * step,) + lay.stride[d + 1:]
    return _view(self, meta, shape, stride, lay.offset + start * lay.stride[d], op, dim=d, start=start, step=step)


def select(input, dim, index):
    meta = input._meta
    lay = meta.layout
    dim, i = _index_args("select", (dim, "dim"), (index, "index"))
    if not lay.shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = L.wrap_dim(dim, len(lay.shape))
    n = lay.shape[d]
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size {list(lay.shape)} at dimension {d}")
    return select_at(input, d, i % n if n else i, meta)


def select_at(self, d, i, meta=None):
    meta = self._meta if meta is None else meta
    lay = meta.layout
    return _view(self, meta, lay.shape[:d] + lay.shape[d + 1:], lay.stride[:d] + lay.stride[d + 1:],
                 lay.offset + i * lay.stride[d], "select", dim=d, index=i)


def unbind(input, dim=0):
    meta = input._meta
    shape = meta.layout.shape
    if not shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = L.wrap_dim(dim, len(shape))
    return tuple(select_at(input, d, i, meta) for i in range(shape[d]))


def unfold(self, dimension, size, step):
    meta = self._meta
    lay = meta.layout
    ndim = len(lay.shape)
    d = L.wrap_dim(dimension, ndim)
    n = lay.shape[d] if ndim else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    inner = lay.stride[d] if ndim else 1
    shape, stride = list(lay.shape), list(lay.stride)
    if ndim:
        shape[d] = (n - size) // step + 1
        stride[d] = step * inner
    return _view(self, meta, shape + [size], stride + [inner], lay.offset, "unfold", dimension=d, size=size, step=step)


def diagonal(input, offset=0, dim1=0, dim2=1):
    meta = input._meta
    lay = meta.layout
    ndim = len(lay.shape)
    a, b = L.wrap_dim(dim1, ndim), L.wrap_dim(dim2, ndim)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    if offset >= 0:
        n = max(min(lay.shape[a], lay.shape[b] - offset), 0)
    else:
        n = max(min(lay.shape[a] + offset, lay.shape[b]), 0)
    start = lay.offset
    if n:
        start += offset * lay.stride[b] if offset >= 0 else -offset * lay.stride[a]
    keep = [d for d in range(ndim) if d not in (a, b)]
    shape = [lay.shape[d] for d in keep] + [n]
    stride = [lay.stride[d] for d in keep] + [lay.stride[a] + lay.stride[b]]
    return _view(input, meta, shape, stride, start, "diagonal", offset=offset, dim1=a, dim2=b)


# -- splitting ----------------------------------------------------------------------------------
def _split_method(self, split_size=None, dim=0, **kwargs):
    """Tensor.split: torch's method names its first argument `split_size` (torch.split's is
    `split_size_or_sections`; both are accepted)."""
    if "split_size_or_sections" in kwargs:
        if split_size is not None:
            raise TypeError("split() got multiple values for argument 'split_size'")
        split_size = kwargs.pop("split_size_or_sections")
    if kwargs:
        raise TypeError(f"split() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if split_size is None:
        raise TypeError("split() missing 1 required positional argument: 'split_size'")
    return split(self, split_size, dim)


def split(self, split_size_or_sections, dim=0, meta=None):
    if not isinstance(split_size_or_sections, int):
        return split_with_sizes(self, split_size_or_sections, dim)
    meta = self._meta if meta is None else meta  # one record for every piece
    shape = meta.layout.shape
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = L.wrap_dim(dim, len(shape))
    size = split_size_or_sections
    if size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    n = shape[d]
    if size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    count = max(-(-n // size), 1) if size else 1
    last = size - (size * count - n)
    return tuple(_slice(self, d, i * size, size if i < count - 1 else last, 1, "split", meta) for i in range(count))


def split_with_sizes(input, split_sizes, dim=0, meta=None):
    meta = input._meta if meta is None else meta
    shape = meta.layout.shape
    if not shape:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = L.wrap_dim(dim, len(shape))
    sizes = [operator.index(s) for s in split_sizes]
    n = shape[d]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={sizes}")
    if sum(sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(_slice(input, d, start, s, 1, "split", meta))
        start += s
    return tuple(out)


def chunk(input, chunks, dim=0):
    meta = input._meta
    shape = meta.layout.shape
    if not shape:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = L.wrap_dim(dim, len(shape))
    n = shape[d]
    size = -(-n // chunks)
    if size == 0 and n == 0:
        return split_with_sizes(input, [0] * chunks, d, meta)
    return split(input, size, d, meta)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None,
                 tensor_indices_or_sections=None):
    """Views along dim: `sections` parts as equal as possible (the first n % sections one longer),
    or the pieces between `indices` (Python slice rules: negative counts from the end, clamped,
    empty where an index goes backwards). A tensor argument must be an int64 CPU tensor: 0-dim
    for sections, 1-D for indices."""
    arg = next((a for a in (indices_or_sections, sections, indices, tensor_indices_or_sections) if a is not None),
               None)
    if isinstance(arg, Tensor):
        what = "tensor_split expected tensor_indices_or_sections to"
        if arg.device.type != "cpu":
            raise RuntimeError(f"{what} be on cpu, but it's on {arg.device}")
        if arg._dtype is not dtypes.int64:
            raise RuntimeError(f"{what} have dtype of long, but got {arg._dtype.torch_name}")
        if arg.dim() > 1:
            raise RuntimeError(f"{what} be a zero-dimensional or one-dimensional tensor, but got a tensor with "
                               f"{arg.dim()} dims")
        arg = arg.item() if arg.dim() == 0 else arg.tolist()
    if isinstance(arg, (list, tuple)):
        arg = [_index_arg(i, "tensor_split", "indices") for i in arg]
    elif not isinstance(arg, int) or isinstance(arg, bool):
        raise TypeError(f"tensor_split(): argument 'indices_or_sections' must be int, tuple of ints or Tensor, not "
                        f"{type(arg).__name__}")
    meta = input._meta
    shape = meta.layout.shape
    if not shape:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    d = L.wrap_dim(dim, len(shape))
    n = shape[d]
    if isinstance(arg, int):
        if arg <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {arg}")
        q, r = divmod(n, arg)
        ends = [(i + 1) * q + min(i + 1, r) for i in range(arg - 1)]
    else:
        ends = arg
    out, start = [], 0
    for end in ends + [n]:
        s0, s1 = (min(max(i + n if i < 0 else i, 0), n) for i in (start, end))
        out.append(_slice(input, d, s0, max(s1 - s0, 0), 1, "narrow", meta))
        start = end
    return tuple(out)


# -- in-place metadata ops ----------------------------------------------------------------------
def _inplace_view(self, op, view_fn, *args):
    """squeeze_/unsqueeze_/t_/transpose_: the layout of the out-of-place view, computed and
    validated in full, then published onto self with one assignment (docs/exception-safety.md);
    the storage, bytes and other views are untouched. As torch: refused where an in-place op is
    (a leaf that requires grad, an inference tensor outside inference mode), the version moves
    once, and self takes the view's place in the graph."""
    autograd_hooks.check_inplace(self, op)
    meta = self._meta
    v = view_fn(self, *args)  # reads self's record once; records autograd against self
    with meta_write_lock:
        if self._meta is not meta:  # another writer published in between: v may be from either record
            from .resize import _RACE
            raise RuntimeError(_RACE.format(op=op))
        self._publish(meta.storage, v._meta.layout)
    self._vc.bump()
    if v._grad_fn is not None:
        self._grad_fn = v._grad_fn
        self.__dict__.pop("_output_nr", None)  # the view's node has one output
    return self


def squeeze_(self, dim=_EVERY_DIM):
    return _inplace_view(self, "squeeze_", squeeze, dim)


def unsqueeze_(self, dim):
    return _inplace_view(self, "unsqueeze_", unsqueeze, dim)


def transpose_(self, dim0, dim1):
    return _inplace_view(self, "transpose_", transpose, dim0, dim1)


def t_(self):
    n = self.dim()
    if n > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is {n}D")
    return _inplace_view(self, "t_", t)


# -- aliases without a graph --------------------------------------------------------------------
def detach(input):
    """Same storage, layout and version counter; outside any autograd graph."""
    storage, lay = input._meta
    return Tensor._make(storage, lay, input._dtype, input._vc)


swapdims = transpose
swapdims_ = transpose_


def swapaxes(input, axis0, axis1):
    """torch.swapaxes (NumPy's name for transpose, with its keyword names)."""
    return transpose(input, axis0, axis1)


def swapaxes_(self, axis0, axis1):
    return transpose_(self, axis0, axis1)
moveaxis = movedim

unsqueeze = _memoized("unsqueeze", unsqueeze)
squeeze = _memoized("squeeze", squeeze)
expand = _memoized("expand", expand)
narrow = _memoized("narrow", narrow)
select = _memoized("select", select)
unbind = _memoized("unbind", unbind)
chunk = _memoized("chunk", chunk)
split = _memoized("split", split)
t = _memoized("t", t)
flatten = _memoized("flatten", flatten)
movedim = _memoized("movedim", movedim)
moveaxis = movedim
unfold = _memoized("unfold", unfold)
diagonal = _memoized("diagonal", diagonal)


FUNCTIONS = ("reshape", "permute", "transpose", "swapaxes", "swapdims", "t", "adjoint", "movedim", "moveaxis",
             "squeeze", "unsqueeze", "flatten", "unflatten", "broadcast_to", "broadcast_tensors", "as_strided",
             "narrow", "select", "unbind", "diagonal", "split", "split_with_sizes", "chunk", "tensor_split", "detach")
METHODS = {
    "view": view, "view_as": view_as, "reshape": reshape, "reshape_as": reshape_as, "flatten": flatten,
    "unflatten": unflatten, "permute": permute, "transpose": transpose, "swapaxes": swapaxes,
    "swapdims": swapdims, "t": t, "adjoint": adjoint, "movedim": movedim, "moveaxis": moveaxis,
    "unsqueeze": unsqueeze, "squeeze": squeeze, "expand": expand, "expand_as": expand_as,
    "broadcast_to": broadcast_to, "as_strided": as_strided, "narrow": narrow, "select": select, "unbind": unbind,
    "unfold": unfold, "diagonal": diagonal, "split": _split_method, "split_with_sizes": split_with_sizes, "chunk": chunk,
    "tensor_split": tensor_split, "detach": detach,
    "squeeze_": squeeze_, "unsqueeze_": unsqueeze_, "transpose_": transpose_, "t_": t_, "swapaxes_": swapaxes_,
    "swapdims_": swapdims_,
    "T": property(_T), "mT": property(_mT), "H": property(_H), "mH": property(_mH),
}
