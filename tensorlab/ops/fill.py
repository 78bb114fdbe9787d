"""fill_ and zero_: every element of a tensor set to one value (a number, or a 0-dim tensor's),
aliased elements allowed. Primitive `fill` (backends/cpu/memory.py, backends/cuda/memory.py), kernel
kernels/fill.cu; derivative in autograd/derivatives_elementwise.py (_overwritten)."""
from __future__ import annotations

from .. import autograd_hooks
from ..tensor import Tensor
from . import registry as R
from ._common import check_writable, pinned, same_device
from .elementwise import _BOOL, _checked, _scalar_arg

ROWS = R.register(
    R.OpDef("fill_", "elementwise", "fill", R.NONE, True, True),
    R.OpDef("zero_", "elementwise", "fill", R.NONE, True, True),
)


def _fill_target(self, op, inputs=()):
    """self pinned, after the checks every fill runs: a tensor, writable (aliased elements allowed,
    as torch: every one gets the same value), allowed by autograd."""
    if not isinstance(self, Tensor):
        raise TypeError(f"{op}(): argument 'self' must be Tensor, not {type(self).__name__}")
    t = pinned(self)
    check_writable(t, op, overlap_ok=True)
    autograd_hooks.check_inplace(self, op, inputs)
    return t


def fill_(input, value):
    """Every element of self set to `value` (a number, or a 0-dim tensor whose value is cast)."""
    t = _fill_target(input, "fill_", (value,) if isinstance(value, Tensor) else ())
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.dim()} "
                               "dimensions.")
        same_device("fill_", t, value)
        if value._meta.storage is t._meta.storage:
            value = value.clone()  # the value is one of self's elements: read it before writing
        if t.numel():
            from .copy import copy_into
            copy_into(t, value)
        inputs = (input, value)
    else:
        v = _checked(_scalar_arg(value, "fill_", "value"), t._dtype, "fill_")
        if t.numel():
            t._backend.fill(t, v)
        inputs = (input,)
    input._vc.bump()
    autograd_hooks.record_inplace(input, "fill_", inputs)
    return input


def zero_(input):
    t = _fill_target(input, "zero_")
    if t.numel():
        t._backend.fill(t, False if t._dtype is _BOOL else 0)
    input._vc.bump()
    autograd_hooks.record_inplace(input, "zero_", (input,))
    return input


FUNCTIONS = ("fill_", "zero_")
METHODS = {"fill_": fill_, "zero_": zero_}
