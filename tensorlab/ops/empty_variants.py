"""The empty factories with a chosen memory layout: empty_permuted (a physical dimension order) and
Tensor.new_empty_strided (self's dtype and device by default). Both allocate through empty_strided."""
from __future__ import annotations

import operator

from .. import layout as L
from ..tensor import Tensor
from . import creation
from .constructors import _like


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialized tensor of shape `size` whose dims lie in memory in the order `physical_layout`
    (outermost first): empty(size[p] for p in physical_layout) permuted back to `size`'s order."""
    shape = tuple(L.normalize_shape((size,), "empty_permuted"))
    if isinstance(physical_layout, Tensor) or not isinstance(physical_layout, (tuple, list)):
        raise TypeError("empty_permuted(): argument 'physical_layout' (position 2) must be tuple of ints, not "
                        f"{type(physical_layout).__name__}")
    perm = [operator.index(p) for p in physical_layout]
    n = len(shape)
    if len(perm) != n:
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {n} is not equal to len(physical_layout) = {len(perm)}")
    seen = set()
    for k, p in enumerate(perm):
        if not 0 <= p < n:  # torch takes no negative dims here
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {n - 1}, but got {p} at index "
                               f"{k}).  NB: negative dims not currently supported (empty_permuted's physical_layout)")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    physical = L.contiguous_strides(tuple(shape[p] for p in perm))
    stride = [0] * n
    for k, p in enumerate(perm):
        stride[p] = physical[k]
    t = creation.empty_strided(shape, tuple(stride), dtype=dtype, device=device, requires_grad=requires_grad)
    return t.pin_memory() if pin_memory else t


def new_empty_strided(self, size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                      pin_memory=False):
    dt, dev = _like(self, dtype, device)
    t = creation.empty_strided(size, stride, dtype=dt, device=dev, requires_grad=requires_grad)
    return t.pin_memory() if pin_memory else t


FUNCTIONS = ("empty_permuted",)
METHODS = {"new_empty_strided": new_empty_strided}
