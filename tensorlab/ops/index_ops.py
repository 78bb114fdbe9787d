"""index_add(_), index_copy(_), masked_scatter(_): written over index_put_ (with and without
accumulate) and boolean-mask assignment, so both devices and autograd come from those ops."""
from __future__ import annotations

from .. import dtypes, layout as L, sync
from . import elementwise as _ew
from ..tensor import Tensor
from ._common import strictly_same_device
from .repeats import _to_out, _wrap


def _tensor(x, op, name, pos):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _index_args(self, dim, index, source, op):
    _tensor(self, op, "self", 0)
    _tensor(index, op, "index", 2)
    _tensor(source, op, "source", 3)
    d = _wrap(dim, self.dim(), op)
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{index._dtype.torch_name} and size: {list(index.shape)}")
    if index._dtype not in (dtypes.int64, dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {index._dtype.torch_name}")
    if self._dtype is not source._dtype:
        raise RuntimeError(f"{op}(): self ({self._dtype.torch_name}) and source ({source._dtype.torch_name}) must "
                           f"have the same scalar type")
    strictly_same_device(self, (index, source), op)
    n = index.numel()
    if op == "index_add_":
        if source.dim() == 0 and n != 1:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        src_n = source.shape[d] if source.dim() > d else 1
        if src_n != n:
            raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): "
                               f"({src_n}), for dim: {d}")
        want = tuple(self.shape[:d]) + (n,) + tuple(self.shape[d + 1:]) if self.dim() else ()
        if tuple(source.shape) != want:
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                               f"Got self.shape = {list(self.shape)} source.shape = {list(source.shape)}")
    else:  # index_copy_'s checks, in torch's order
        if self.dim() and source.dim() and self.dim() != source.dim():
            raise IndexError(f"index_copy_(): When source and destination are not scalars, their dimensionality must "
                             f"match. Source dimensionality ({source.dim()}), destination dimensionality "
                             f"({self.dim()})")
        src_n = source.shape[d] if source.dim() > d else 1
        if src_n != n:
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({src_n})")
        if self.dim() and source.dim():
            ds = [s for i, s in enumerate(self.shape) if i != d]
            ss = [s for i, s in enumerate(source.shape) if i != d]
            for i, (a, b) in enumerate(zip(ds, ss)):
                if a != b:
                    raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                                       f"Destination slice shape: {a} at dimension {i} and source slice shape: {b} at "
                                       f"dimension {i}.")
    return d, index.reshape(-1).to(dtypes.int64)


_NEGATIVE = 1 << 62  # a negative index v travels as _NEGATIVE - v: out of any range, and decodable


def _device_bounds(self, d, idx, op):
    """On CUDA: the index to write with, and the error to report, for index_put_'s own device-side
    check (no host wait; the write does nothing when it fails). index_put_ takes [-size, size), these
    ops [0, size): a negative index is sent as _NEGATIVE - v, which that check refuses too."""
    size = self.shape[d] if self.dim() else 1
    sent = _ew.where(idx < 0, _NEGATIVE - idx, idx)

    def error(inner, value):  # the CPU path's error (_bounds) for the index as the user gave it
        v = _NEGATIVE - value if value >= _NEGATIVE else value
        msg = f"index {v} is out of bounds for dimension {d} with size {size}"
        return IndexError(f"index_copy_(): {msg}") if op == "index_copy_" else RuntimeError(msg)
    return sent, sync.reported_as(op, error)


def _bounds(self, d, idx, op):
    size = self.shape[d] if self.dim() else 1
    if idx.numel():
        bad = (idx < 0) | (idx >= size)
        if bool(bad.any()):
            if self.dim() == 0:
                raise IndexError("index out of range in self")
            i = int(idx[bad][0].item())
            msg = f"index {i} is out of bounds for dimension {d} with size {size}"
            if op == "index_copy_":
                raise IndexError(f"index_copy_(): {msg}")
            raise RuntimeError(msg)


def _put(self, d, idx, values, accumulate):
    if self.dim() == 0:
        if not idx.numel():
            return self
        if accumulate:  # index_add_: the checks left one index and a 0-dim source
            values = values.reshape(())
        else:  # index_copy_ copies the source elements in order: the last one stays
            values = values.reshape(-1)[-1:].reshape(())
        return self.index_put_((), values, accumulate)
    return self.index_put_([None] * d + [idx], values.reshape(values.shape if values.dim() else (1,)), accumulate)


def index_add_(self, dim, index, source, *, alpha=1):
    """self[..., index[i], ...] += alpha * source[..., i, ...] along `dim` (duplicates accumulate)."""
    d, idx = _index_args(self, dim, index, source, "index_add_")
    if not self._dtype.is_floating_point and self._dtype is not dtypes.bool_:
        alpha = int(alpha)  # torch truncates alpha for integer tensors
    if alpha != 1:
        source = source * alpha
    if self.device.type == "cpu" or not idx.numel() or self.dim() == 0:
        _bounds(self, d, idx, "index_add_")
        return _put(self, d, idx, source, True)
    sent, reporting = _device_bounds(self, d, idx, "index_add_")
    with reporting:
        return _put(self, d, sent, source, True)


def index_add(input, dim, index, source, *, alpha=1, out=None):
    r = index_add_(input.clone(), dim, index, source, alpha=alpha)
    return _to_out(r, out)


def index_copy_(self, dim, index, source):
    """self[..., index[i], ...] = source[..., i, ...] along `dim`."""
    d, idx = _index_args(self, dim, index, source, "index_copy_")
    if self.device.type == "cpu" or not idx.numel() or self.dim() == 0:
        _bounds(self, d, idx, "index_copy_")
        return _put(self, d, idx, source, False)
    sent, reporting = _device_bounds(self, d, idx, "index_copy_")
    with reporting:
        return _put(self, d, sent, source, False)


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
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got "
                           f"{self._dtype.torch_name} and {source._dtype.torch_name}")
    strictly_same_device(self, (mask, source), "masked_scatter_")
    L.broadcast_shapes(tuple(mask.shape), tuple(self.shape))  # torch's error when they do not broadcast
    m = mask.expand(self.shape)
    k = int(m.sum().item())
    if k > source.numel():
        raise RuntimeError(f"Number of elements of source < number of ones in mask (source has {source.numel()}, the "
                           f"mask {k})")
    if k == 0:
        return self
    self[m] = source.reshape(-1)[:k]
    return self


def masked_scatter(input, mask, source):
    _tensor(input, "masked_scatter", "input", 1)
    _tensor(mask, "masked_scatter", "mask", 2)
    shape = L.broadcast_shapes(tuple(mask.shape), tuple(input.shape))
    return masked_scatter_(input.expand(shape).clone(), mask, source)


FUNCTIONS = ("index_add", "index_copy", "masked_scatter")
METHODS = {"index_add_": index_add_, "index_add": index_add, "index_copy_": index_copy_, "index_copy": index_copy,
           "masked_scatter_": masked_scatter_, "masked_scatter": masked_scatter}
