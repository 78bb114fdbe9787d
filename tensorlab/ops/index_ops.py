"""index_add(_), index_copy(_), masked_scatter(_): written over index_put_ (with and without
accumulate) and boolean-mask assignment, so both devices and autograd come from those ops."""
from __future__ import annotations

from .. import dtypes, layout as L
from ..tensor import Tensor
from .repeats import _wrap


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _index_args(self, dim, index, source, op):
    _tensor(self, op, "self", 0)
    _tensor(index, op, "index", 2)
    _tensor(source, op, "source", 3)
    d = _wrap(dim, self.dim(), op)
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector (got a {index.dim()}-D index)")
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index (got {index._dtype.torch_name})")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"{op}(): self ({self._dtype.torch_name}) and source ({source._dtype.torch_name}) must "
                           f"have the same scalar type")
    for t in (index, source):
        if t.device != self.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self.device} and {t.device}! ({op})")
    n = index.numel()
    if self.dim() == 0:
        ok = source.numel() == 1 and n == 1
        want = ()
    else:
        want = list(self.shape)
        want[d] = n
        ok = tuple(source.shape) == tuple(want) or (source.dim() == 0 and tuple(want) == (1,))
    if not ok and source.dim() == self.dim():
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    if not ok:
        raise IndexError(f"{op}(): Number of indices ({n}) should be equal to source.size(dim) "
                         f"({source.shape[d] if source.dim() > d else source.numel()}) (source shape "
                         f"{list(source.shape)}, self shape {list(self.shape)}, dim {d})")
    return d, index.reshape(-1).to(dtypes.int64)


def _bounds(self, d, idx, op):
    size = self.shape[d] if self.dim() else 1
    if idx.numel() and bool(((idx < 0) | (idx >= size)).any()):
        raise IndexError(f"{op}(): index out of range in self (dim {d} has size {size}; indices must be in "
                         f"[0, {size}))")


def _put(self, d, idx, values, accumulate):
    if self.dim() == 0:
        return self.index_put_((), values.reshape(()), accumulate) if idx.numel() else self
    return self.index_put_([None] * d + [idx], values, accumulate)


def index_add_(self, dim, index, source, *, alpha=1):
    """self[..., index[i], ...] += alpha * source[..., i, ...] along `dim` (duplicates accumulate)."""
    d, idx = _index_args(self, dim, index, source, "index_add_")
    _bounds(self, d, idx, "index_add_")
    if alpha != 1:
        if not self._dtype.is_floating_point and isinstance(alpha, float):
            raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
        source = source * alpha
    return _put(self, d, idx, source, True)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    r = index_add_(input.clone(), dim, index, source, alpha=alpha)
    return _to_out(r, out)


def index_copy_(self, dim, index, source):
    """self[..., index[i], ...] = source[..., i, ...] along `dim`."""
    d, idx = _index_args(self, dim, index, source, "index_copy_")
    _bounds(self, d, idx, "index_copy_")
    return _put(self, d, idx, source, False)


def index_copy(input, dim, index, source, *, out=None):
    return _to_out(index_copy_(input.clone(), dim, index, source), out)


def masked_scatter_(self, mask, source):
    """The True positions of `mask` (broadcast to self), in row-major order, take source's first
    elements (flattened)."""
    _tensor(self, "masked_scatter_", "self", 0)
    _tensor(mask, "masked_scatter_", "mask", 1)
    _tensor(source, "masked_scatter_", "source", 2)
    if mask._dtype is not dtypes.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype.torch_name}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"masked_scatter_: expected self and source to have same dtypes but got "
                           f"{self._dtype.torch_name} and {source._dtype.torch_name}")
    for t in (mask, source):
        if t.device != self.device:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{self.device} and {t.device}! (masked_scatter_)")
    try:
        L.broadcast_shapes(tuple(self.shape), tuple(mask.shape))
        m = mask.expand(self.shape)
    except (RuntimeError, ValueError):
        raise RuntimeError(f"masked_scatter_: the shape of the mask {list(mask.shape)} must be broadcastable to the "
                           f"shape of self {list(self.shape)}") from None
    k = int(m.sum().item())
    if k > source.numel():
        raise RuntimeError(f"masked_scatter: expected source to have at least {k} elements (the mask's number of "
                           f"True values), got {source.numel()}")
    if k == 0:
        return self
    self[m] = source.reshape(-1)[:k]
    return self


def masked_scatter(input, mask, source):
    _tensor(input, "masked_scatter", "input", 1)
    _tensor(mask, "masked_scatter", "mask", 2)
    shape = L.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    return masked_scatter_(input.expand(shape).clone(), mask, source)


def _to_out(r, out):
    if out is None:
        return r
    from .copy import copy_
    out.resize_(r.shape)
    copy_(out, r)
    return out


FUNCTIONS = ("index_add", "index_copy", "masked_scatter")
METHODS = {"index_add_": index_add_, "index_add": index_add, "index_copy_": index_copy_, "index_copy": index_copy,
           "masked_scatter_": masked_scatter_, "masked_scatter": masked_scatter}
