"""CPU indexing primitives: advanced-index gather and scatter, and boolean masks to index tensors.

`indices` is a tuple with one entry per dimension of the indexed tensor: None (the whole dim) or
an int64 tensor; all the tensors have one (already broadcast) shape. The result layout follows
NumPy's rule for such a tuple, which is torch's: adjacent indexed dims keep their place, separated
ones go first. Indices are bounds-checked before anything is written."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("check_flag", "index", "index_put", "mask_count", "nonzero_indices")


def _np_index(arr, indices):
    out = []
    for d, t in enumerate(indices):
        if t is None:
            out.append(slice(None))
            continue
        a = array(t)
        n = arr.shape[d]
        if a.size and (a.max() >= n or a.min() < -n):
            bad = a[(a >= n) | (a < -n)].flat[0]
            raise IndexError(f"index {int(bad)} is out of bounds for dimension {d} with size {n}")
        out.append(a)
    return tuple(out)


def check_flag(flag, op, fail):
    """Raise fail(0, 1) when the one-element bool tensor `flag` is True (the CPU reads it at once;
    the CUDA backend checks on the device and raises at the next host wait)."""
    if bool(array(flag).reshape(-1)[0]):
        raise fail(0, 1)


def index(out, src, indices, in_range=False):
    """out[...] = src[indices]. `in_range` (indices known to be in range) saves the CUDA backend a
    bounds check; NumPy checks anyway at no extra cost."""
    s = array(src)
    idx = _np_index(s, indices)
    _faults.hit("launch")
    np.copyto(array(out), s[idx], casting="unsafe")


def index_put(dst, indices, values, accumulate, in_range=False):
    """dst[indices] = values (values broadcast to the indexing result, dst's dtype); with
    accumulate, duplicate indices add up. Operands that alias dst are read before any write.
    `in_range` as for index()."""
    d = array(dst)
    idx = tuple(a.copy() if isinstance(a, np.ndarray) and np.may_share_memory(d, a) else a
                for a in _np_index(d, indices))
    v = array(values)
    if np.may_share_memory(d, v):
        v = v.copy()
    _faults.hit("launch")
    if accumulate:
        np.add.at(d, idx, v)
    else:
        d[idx] = v


def mask_count(mask):
    """Number of nonzero elements: the host needs it to size the indices of a boolean mask."""
    _faults.hit("launch")
    return int(np.count_nonzero(array(mask)))


def nonzero_indices(out, mask):
    """out[j] = the j-th coordinate of every nonzero element of mask, in row-major order; out has
    shape (mask.dim(), mask_count(mask)) and dtype int64."""
    nz = np.nonzero(array(mask))
    _faults.hit("launch")
    o = array(out)
    for j, coords in enumerate(nz):
        o[j] = coords
