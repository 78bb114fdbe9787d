"""Tensor.new_zeros / new_ones / new_full / new_empty / new_tensor: factories whose dtype and
device default to the tensor's (torch's TensorBase constructors). Written over the creation ops."""
from __future__ import annotations

from .. import _warn, layouts
from ..tensor import Tensor
from ._common import sizes_or_keyword
from . import creation


def _like(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


def _sizes(size, op):
    """new_zeros(2, 3) and new_zeros((2, 3)) alike (torch.Size is a tuple)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return tuple(size[0])
    return tuple(size)


def new_zeros(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "new_zeros", "size")
    dt, dev = _like(self, dtype, device)
    return creation.zeros(_sizes(size, "new_zeros"), dtype=dt, device=dev, layout=layout, requires_grad=requires_grad)


def new_ones(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "new_ones", "size")
    dt, dev = _like(self, dtype, device)
    return creation.ones(_sizes(size, "new_ones"), dtype=dt, device=dev, layout=layout, requires_grad=requires_grad)


def new_empty(self, *sizes, size=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    size = sizes if size is None else sizes_or_keyword(sizes, size, "new_empty", "size")
    dt, dev = _like(self, dtype, device)
    return creation.empty(_sizes(size, "new_empty"), dtype=dt, device=dev, layout=layout, requires_grad=requires_grad)


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None,
             pin_memory=False):
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    dt, dev = _like(self, dtype, device)
    return creation.full(tuple(size), fill_value, dtype=dt, device=dev, layout=layout, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A copy of `data` with self's dtype and device by default (a tensor's own dtype is ignored,
    as in torch, unless dtype= is given)."""
    if isinstance(data, Tensor):
        _warn.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                   "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor).")
    dt, dev = _like(self, dtype, device)
    layouts.check(layout, "new_tensor")
    return creation.tensor(data, dtype=dt, device=dev, requires_grad=requires_grad)


FUNCTIONS = ()
METHODS = {"new_zeros": new_zeros, "new_ones": new_ones, "new_empty": new_empty, "new_full": new_full,
           "new_tensor": new_tensor}
