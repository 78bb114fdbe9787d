"""Composites that stack along a dim after raising each input's rank (hstack, vstack/row_stack,
dstack, column_stack, atleast_1d/2d/3d) and rot90: written over reshape, cat, flip and transpose,
so they run on every device and take their gradients from those ops. torch's contracts: the
stacks and rot90 return new tensors; atleast_*d return views."""
from __future__ import annotations

from ..tensor import Tensor, contiguous_format
from . import shape


def _seq(tensors, op):
    shape._tensor_list(tensors, op)  # torch's type errors (its pinned copies are cat's, not ours)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return list(tensors)


def _at_least(tensors, rank, op):
    """torch's atleast_Nd: one tensor -> one tensor, several (or a sequence) -> a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(_raise_rank(t, rank, op) for t in _seq(tensors[0], op))
    if len(tensors) == 1:
        return _raise_rank(tensors[0], rank, op)
    return tuple(_raise_rank(t, rank, op) for t in tensors)


def _raise_rank(t, rank, op):
    if not isinstance(t, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(t).__name__}")
    n = t.dim()
    if n >= rank:
        return t
    s = tuple(t.shape)
    if rank == 1:
        return t.reshape(1)
    if rank == 2:
        return t.reshape(1, 1) if n == 0 else t.unsqueeze(0)
    return t.reshape(1, 1, 1) if n == 0 else t.reshape(1, s[0], 1) if n == 1 else t.unsqueeze(-1)


def atleast_1d(*tensors):
    return _at_least(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    return _at_least(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    return _at_least(tensors, 3, "atleast_3d")


def hstack(tensors, *, out=None):
    ts = [_raise_rank(t, 1, "hstack") for t in _seq(tensors, "hstack")]
    return shape.cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    ts = [_raise_rank(t, 2, "vstack") for t in _seq(tensors, "vstack")]
    return shape.cat(ts, 0, out=out)


def row_stack(tensors, *, out=None):
    return vstack(tensors, out=out)


def dstack(tensors, *, out=None):
    ts = [_raise_rank(t, 3, "dstack") for t in _seq(tensors, "dstack")]
    return shape.cat(ts, 2, out=out)


def column_stack(tensors, *, out=None):
    ts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in _seq(tensors, "column_stack")]
    return shape.cat(ts, 1, out=out)


def rot90(input, k=1, dims=(0, 1)):
    """input rotated by 90 degrees k times in the plane of dims, from the first towards the second."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rot90(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    n = input.dim()
    if n < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {n}")
    d0, d1 = (int(d) for d in dims)
    for d in (d0, d1):
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    d0, d1 = d0 % n, d1 % n
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}")
    k = int(k) % 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip((d0, d1))
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone(memory_format=contiguous_format)


FUNCTIONS = ("atleast_1d", "atleast_2d", "atleast_3d", "hstack", "vstack", "row_stack", "dstack", "column_stack",
             "rot90")
METHODS = {"rot90": rot90}
