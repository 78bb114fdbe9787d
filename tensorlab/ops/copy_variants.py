"""The *_copy ops (a view op's result as a new tensor: expand_copy, permute_copy, ...), the
real-valued meaning of the complex accessors (real, conj, resolve_conj, resolve_neg: the tensor itself
for real dtypes, as torch), and small composites over views, indexing and creation: take, put,
argwhere, diagflat, sum_to_size, constant_pad_nd, fill, scalar_tensor, angle, unsafe_split/chunk,
unravel_index, isin, logspace. Every one over existing ops, so it runs on every device with autograd."""
from __future__ import annotations

import math

from .. import dtypes, layouts
from ..tensor import Tensor, contiguous_format
from ._common import sizes_or_keyword
from ._composite import tensor_arg, tl, to_out, wrap_negative


_tl = tl
_tensor = tensor_arg


def _copied(name, view):
    """name(input, *args, out=None): view(input, *args) as a new contiguous tensor."""
    def f(input, *args, out=None, **kwargs):
        _tensor(input, name)
        r = view(input, *args, **kwargs)
        if isinstance(r, (tuple, list)):
            return tuple(t.clone(memory_format=contiguous_format) for t in r)
        r = r.clone(memory_format=contiguous_format)
        if out is not None:
            out.resize_(r.shape)
            return out.copy_(r)
        return r
    f.__name__ = name
    f.__doc__ = f"torch.{name}: a new tensor holding what the view op returns"
    return f


alias_copy = _copied("alias_copy", lambda x: x)
as_strided_copy = _copied("as_strided_copy", lambda x, size, stride, storage_offset=None:
                          x.as_strided(size, stride, storage_offset))
diagonal_copy = _copied("diagonal_copy", lambda x, offset=0, dim1=0, dim2=1: x.diagonal(offset, dim1, dim2))
expand_copy = _copied("expand_copy", lambda x, size, *, implicit=False: x.expand(size))
narrow_copy = _copied("narrow_copy", lambda x, dim, start, length: x.narrow(dim, start, length))
permute_copy = _copied("permute_copy", lambda x, dims: x.permute(dims))
squeeze_copy = _copied("squeeze_copy", lambda x, *dim: x.squeeze(*dim))
t_copy = _copied("t_copy", lambda x: x.t())
transpose_copy = _copied("transpose_copy", lambda x, dim0, dim1: x.transpose(dim0, dim1))
unbind_copy = _copied("unbind_copy", lambda x, dim=0: x.unbind(dim))
unfold_copy = _copied("unfold_copy", lambda x, dimension, size, step: x.unfold(dimension, size, step))
unsqueeze_copy = _copied("unsqueeze_copy", lambda x, dim: x.unsqueeze(dim))
view_copy = _copied("view_copy", lambda x, *size: x.view(*size))
split_with_sizes_copy = _copied("split_with_sizes_copy", lambda x, split_sizes, dim=0: x.split(list(split_sizes), dim))


def unsafe_split(input, split_size, dim=0):
    _tensor(input, "unsafe_split")
    return tuple(input.split(split_size, dim))


def unsafe_chunk(input, chunks, dim=0):
    _tensor(input, "unsafe_chunk")
    return tuple(input.chunk(chunks, dim))


# -- complex accessors on real tensors -----------------------------------------------------------------
def real(input):
    """The tensor itself: tensorlab's dtypes are real (complex dtypes are not built yet)."""
    return _tensor(input, "real")


def conj(input):
    return _tensor(input, "conj")


def conj_physical(input, *, out=None):
    _tensor(input, "conj_physical")
    if out is not None:
        out.resize_(input.shape)
        return out.copy_(input)
    return input.clone()


def resolve_conj(input):
    return _tensor(input, "resolve_conj")


def resolve_neg(input):
    return _tensor(input, "resolve_neg")


def angle(input, *, out=None):
    """0 for x >= 0, pi for x < 0 (NaN stays NaN); integer inputs give the default float dtype."""
    tl = _tl()
    _tensor(input, "angle")
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    r = tl.where(x < 0, x.new_full((), math.pi), x.new_zeros(()))
    r = tl.where(x.isnan(), x, r)
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


# -- indexing and creation composites ------------------------------------------------------------------
def take(input, index, *, out=None):
    """input viewed flat, indexed by `index` (negative indices count from the end)."""
    _tensor(input, "take")
    _tensor(index, "take", "index", 2)
    if index.dtype is not dtypes.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index.dtype.torch_name}")
    # gather refuses an index out of range itself (IndexError), with no host wait for the check
    idx = wrap_negative(index, input.numel()).reshape(-1)
    return to_out(input.reshape(-1).gather(0, idx).reshape(index.shape), out)


def put(input, index, source, accumulate=False):
    """A copy of input with the flat positions `index` set to (or, accumulate=True, increased by)
    source's values."""
    _tensor(input, "put")
    r = input.clone()
    return put_(r, index, source, accumulate)


def put_(self, index, source, accumulate=False):
    _tensor(index, "put_", "index", 2)
    _tensor(source, "put_", "source", 3)
    if index.numel() != source.numel():
        raise RuntimeError(f"put_(): Expected source and index to have the same number of elements, but got "
                           f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = self.numel()
    idx = wrap_negative(index, n).reshape(-1)
    flat = self.view(-1) if self.is_contiguous() else None
    if flat is None:
        raise RuntimeError("put_: tensorlab writes through a flat view: call .contiguous() first")
    flat.index_put_((idx,), source.reshape(-1).to(self.dtype), accumulate=accumulate)
    return self


def argwhere(input):
    return _tensor(input, "argwhere").nonzero()


def diagflat(input, offset=0):
    _tensor(input, "diagflat")
    return _tl().diag(input.reshape(-1), offset)


def sum_to_size(self, *size_args, size=None):
    """self summed down to `size` (which self must expand from)."""
    size = size_args if size is None else sizes_or_keyword(size_args, size, "sum_to_size", "size")
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != n for s, n in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    r = self.sum(tuple(range(lead))) if lead else self
    dims = tuple(i for i, (s, n) in enumerate(zip(size, shape[lead:])) if s == 1 and n != 1)
    if dims:
        r = r.sum(dims, keepdim=True)
    return r


def constant_pad_nd(input, pad, value=0):
    return _tl().nn.functional.pad(input, pad, mode="constant", value=value)


def fill(input, value):
    """A new tensor of input's shape, dtype and device filled with value (torch.fill)."""
    _tensor(input, "fill")
    v = value.item() if isinstance(value, Tensor) else value
    if isinstance(value, Tensor) and value.dim():
        raise RuntimeError(f"fill only supports 0-dimension value tensor but got tensor with {value.dim()} dimensions.")
    return _tl().full_like(input, v)


def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    layouts.check(layout, "scalar_tensor")
    return _tl().tensor(float(s) if not isinstance(s, (bool, complex)) else s,
                        dtype=dtype or dtypes.get_default_dtype(), device=device, requires_grad=requires_grad)


def unravel_index(indices, shape):
    """The coordinates in `shape` of flat (C-order) `indices`, as a tuple of int64 tensors."""
    tl = _tl()
    if not isinstance(indices, Tensor):
        indices = tl.tensor(indices)
    if indices.dtype.is_floating_point or indices.dtype is dtypes.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.torch_name}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    total = math.prod(shape)
    idx = indices.to(dtypes.int64)
    if idx.numel() and (bool((idx < -total).any()) or bool((idx >= total).any())):
        raise ValueError("'indices' must be in range [-%d, %d), but got out of range values" % (total, total))
    idx = wrap_negative(idx, total)
    out = []
    for s in reversed(shape):
        out.append(idx % s if s else idx * 0)
        idx = idx // s if s else idx
    return tuple(reversed(out))


def isin(elements, test_elements, *, assume_unique=False, invert=False, out=None):
    """Whether each element of `elements` is in `test_elements` (either may be a Python scalar)."""
    tl = _tl()
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: elements and test_elements are "
                        "both scalars")
    e = elements if isinstance(elements, Tensor) else tl.tensor(elements, device=test_elements.device)
    t = test_elements if isinstance(test_elements, Tensor) else tl.tensor(test_elements, device=e.device)
    dt = dtypes.result_type(e, t)
    e2, t2 = e.to(dt), t.reshape(-1).to(dt)
    if t2.numel() == 0:
        r = tl.zeros(e.shape, dtype=dtypes.bool_, device=e.device)
    else:
        r = (e2.reshape(e.shape + (1,)) == t2).any(-1)
    return to_out(~r if invert else r, out, "isin")


def logspace(start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False, out=None):
    tl = _tl()
    layouts.check(layout, "logspace")
    if isinstance(start, Tensor):
        start = start.item()
    if isinstance(end, Tensor):
        end = end.item()
    dt = dtype or dtypes.get_default_dtype()
    exps = tl.linspace(start, end, steps, dtype=dtypes.float64, device=device)
    r = (tl.tensor(float(base), dtype=dtypes.float64, device=device) ** exps)
    r = r.to(dt)  # an integer dtype truncates, as torch
    if requires_grad:
        r.requires_grad_(True)
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


FUNCTIONS = ("alias_copy", "as_strided_copy", "diagonal_copy", "expand_copy", "narrow_copy", "permute_copy",
             "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy", "unsqueeze_copy", "view_copy",
             "split_with_sizes_copy", "unsafe_split", "unsafe_chunk", "real", "conj", "conj_physical", "resolve_conj",
             "resolve_neg", "angle", "take", "put", "argwhere", "diagflat", "constant_pad_nd", "fill",
             "scalar_tensor", "unravel_index", "isin", "logspace")
METHODS = {"unsafe_split": unsafe_split, "unsafe_chunk": unsafe_chunk, "conj": conj, "conj_physical": conj_physical,
           "resolve_conj": resolve_conj, "resolve_neg": resolve_neg, "angle": angle, "take": take, "put": put,
           "put_": put_, "argwhere": argwhere, "diagflat": diagflat, "sum_to_size": sum_to_size}
