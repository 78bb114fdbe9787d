"""CPU shape and index primitives: cat, flip, roll, gather, scatter, index_select, index_fill,
masked_select, nonzero, sort, topk, triangle (tril/triu). Each validates index values before
it writes anything, so a bad index leaves the output untouched."""
from __future__ import annotations

import numpy as np

from ... import _faults
from ...errors import index_out_of_range
from .elementwise import _quiet_off, _quiet_on
from .memory import array, arrays
from .reduction import HALF

__all__ = ("cat", "stack", "flip", "roll", "gather", "scatter", "index_select", "index_fill", "masked_select", "nonzero",
           "sort", "topk", "triangle")

_F32 = np.dtype(np.float32)


def _check_index(idx, size, op, dim, low=0):
    if idx.size and (idx.min() < low or idx.max() >= size):
        bad = idx[(idx < low) | (idx >= size)].flat[0]
        raise index_out_of_range(op, bad, dim, size)


def _at_least_1d(a):
    return a.reshape(1) if a.ndim == 0 else a


def _joined(o, out, tensors, parts):
    """The parts' bytes one after another (b"".join: one buffer read per part, no NumPy view or
    iterator per part) when that is exactly `o`'s contents: `o` C-contiguous, every input of
    `o`'s dtype, every part C-contiguous (the join refuses any other), the byte counts adding
    up. The caller joins along the leading dim only. None otherwise."""
    if not o.flags.c_contiguous:
        return None
    dt = out._dtype
    for t in tensors:
        if t._dtype is not dt:
            return None
    try:
        data = b"".join(parts)
    except (BufferError, TypeError):  # a strided part (bytes.join reports a refused buffer as TypeError)
        return None
    return data if len(data) == o.nbytes else None


def _write_bytes(o, data):
    np.copyto(o.reshape(-1).view(np.uint8), np.frombuffer(data, np.uint8))


def cat(out, tensors, dim):
    o = array(out)
    parts = arrays(tensors)
    data = _joined(o, out, tensors, parts) if dim == 0 else None
    _faults.hit("launch")
    if data is not None:
        _write_bytes(o, data)
        return
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        np.concatenate(parts, axis=dim, out=o, casting="unsafe")
    finally:
        _quiet_off(token)


def stack(out, tensors, dim):
    """out = the tensors (all of one shape) stacked along the new dim `dim` of out: along the
    leading dim one byte join of the inputs' own views (their cached arrays), else one NumPy call
    over them; no unsqueezed view per input."""
    o = array(out)
    parts = arrays(tensors)
    data = _joined(o, out, tensors, parts) if dim == 0 else None
    _faults.hit("launch")
    if data is not None:
        _write_bytes(o, data)
        return
    token = _quiet_on()
    try:
        np.stack(parts, axis=dim, out=o, casting="unsafe")
    finally:
        _quiet_off(token)


def flip(out, x, dims):
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    np.copyto(o, np.flip(a, axis=tuple(dims)) if dims else a)


def roll(out, x, shifts, dims):
    """np.roll semantics; dims=None rolls the flattened (row-major) tensor."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    if dims is None:
        np.copyto(o, np.roll(a.reshape(-1), shifts[0]).reshape(a.shape))
    else:
        np.copyto(o, np.roll(a, tuple(shifts), axis=tuple(dims)))


def _leading(a, shape, dim):
    """The part of `a` an index of `shape` addresses: index sizes may be smaller off `dim`."""
    return a[tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(shape))]


def gather(out, x, dim, index):
    """out[i][j] = x[index[i][j]][j] (for dim 0), and likewise along any dim."""
    o = array(out)
    a = _at_least_1d(array(x))
    idx = _at_least_1d(array(index))
    _check_index(idx, a.shape[dim], "gather", dim)
    _faults.hit("launch")
    if idx.size:  # index arrays for every axis (the others' aranges span the index's sizes only)
        np.copyto(o, a[_scatter_positions(idx, dim)].reshape(o.shape))


def _scatter_positions(idx, dim):
    return tuple(idx.astype(np.intp, copy=False) if d == dim else
                 np.arange(n).reshape((-1,) + (1,) * (idx.ndim - d - 1))
                 for d, n in enumerate(idx.shape))


def scatter(out, dim, index, src, reduce=None, in_range=False):
    """out[index[i][j]][j] = src[i][j] (dim 0; any dim likewise), where `src` is a tensor or a
    number; reduce="add"/"multiply"/"amax"/"amin" combines with the existing value, duplicates included.
    `in_range`: the caller already checked this index against this dim."""
    o = _at_least_1d(array(out))
    idx = _at_least_1d(array(index))
    if not in_range:
        _check_index(idx, o.shape[dim], "scatter", dim)
    if hasattr(src, "_meta"):
        v = _leading(_at_least_1d(array(src)), idx.shape, -1)
        if np.may_share_memory(v, o):  # src is the target itself (x.scatter_(d, i, x))
            v = v.copy()
    else:
        v = np.asarray(src).astype(o.dtype)
    _faults.hit("launch")
    if not idx.size:
        return
    pos = _scatter_positions(idx, dim)
    with np.errstate(all="ignore"):
        if reduce is None:
            o[pos] = v
        elif o.dtype in HALF:  # accumulate duplicates in float32, round once
            acc = o.astype(_F32)
            _UFUNC[reduce].at(acc, pos, np.broadcast_to(v, idx.shape).astype(_F32))
            np.copyto(o, acc, casting="unsafe")
        else:
            _UFUNC[reduce].at(o, pos, np.broadcast_to(v, idx.shape))


# scatter's reductions (amax/amin: scatter_reduce's; NaN propagates, as torch's)
_UFUNC = {"add": np.add, "multiply": np.multiply, "amax": np.maximum, "amin": np.minimum}


def index_select(out, x, dim, index):
    o = array(out)
    a = _at_least_1d(array(x))
    idx = array(index).reshape(-1)
    _check_index(idx, a.shape[dim], "index_select", dim)
    _faults.hit("launch")
    np.copyto(o, np.take(a, idx, axis=dim).reshape(o.shape))


def index_fill(out, dim, index, value):
    o = _at_least_1d(array(out))
    idx = array(index).reshape(-1)
    _check_index(idx, o.shape[dim], "index_fill", dim, low=-o.shape[dim])  # negatives count from the end
    _faults.hit("launch")
    with np.errstate(all="ignore"):
        np.moveaxis(o, dim, 0)[idx] = value


def masked_select(out, x, mask):
    """The elements of x where mask (same shape) is true, in row-major order."""
    o = array(out)
    a = array(x)
    m = array(mask)
    _faults.hit("launch")
    o[...] = a[m]


def nonzero(out, x):
    """Row-major indices (n, ndim) of the nonzero elements; the front end sized out by counting."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    np.copyto(o, np.argwhere(a != 0))


def _stable_order(a, dim, descending):
    """Indices that sort `a` along dim, stable, NaN after everything ascending and before
    everything descending (torch's order). Descending sorts the reversed slice ascending and
    maps back, so equal elements keep their original order."""
    keys = a.astype(_F32) if a.dtype in HALF else a
    if not descending:
        return np.argsort(keys, axis=dim, kind="stable")
    order = np.argsort(np.flip(keys, axis=dim), axis=dim, kind="stable")
    return (a.shape[dim] - 1) - np.flip(order, axis=dim)


def sort(values, indices, x, dim, descending, stable):
    """Sorted values (when `values` is given) and their source indices along `dim`. The CPU sort
    is always stable, which satisfies stable=False too."""
    a = array(x)
    i_out = array(indices)
    _faults.hit("launch")
    if a.ndim == 0:
        i_out[...] = 0
        if values is not None:
            np.copyto(array(values), a)
        return
    order = _stable_order(a, dim, descending)
    i_out[...] = order
    if values is not None:
        np.copyto(array(values), np.take_along_axis(a, order, axis=dim))


def topk(values, indices, x, k, dim, largest):
    """The k largest (or smallest) along dim, sorted, ties in index order."""
    a = array(x)
    v_out = array(values)
    i_out = array(indices)
    _faults.hit("launch")
    if a.ndim == 0:
        i_out[...] = 0
        np.copyto(v_out, a)
        return
    order = np.take(_stable_order(a, dim, largest), np.arange(k), axis=dim)
    i_out[...] = order
    np.copyto(v_out, np.take_along_axis(a, order, axis=dim))


def triangle(out, x, diagonal, upper):
    """tril (upper=False) keeps j <= i + diagonal of the last two dims; triu keeps j >= i + diagonal."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    n, m = a.shape[-2:]
    keep = np.tri(n, m, diagonal - 1, dtype=bool) if upper else np.tri(n, m, diagonal, dtype=bool)
    if upper:
        keep = ~keep
    np.copyto(o, np.where(keep, a, np.zeros((), a.dtype)))
