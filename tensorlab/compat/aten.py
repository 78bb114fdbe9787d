"""torch.ops.aten's operators that have no `torch.X` name, as tensorlab functions of the same name and
signature (the overload torch's OpInfo calls): slice (aten.slice.Tensor), _softmax_backward_data,
_safe_softmax, _batch_norm_with_update, _upsample_bilinear2d_aa. Each is built on tensorlab's
public ops, so it runs on every device, with autograd."""
from __future__ import annotations

import sys as _sys

from .. import ops as _ops  # noqa: F401  (the op modules installed before these refer to them)
from ..tensor import Tensor

__all__ = ("slice",)


def _tensor(x, op, arg="self"):
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' must be Tensor, not {type(x).__name__}")
    return x


def slice(self, dim=0, start=None, end=None, step=1):  # noqa: A001  (aten's name)
    """aten.slice.Tensor: the view self[..., start:end:step, ...] along dim (end clamped as Python's
    slice clamps it; step must be positive, as torch's)."""
    _tensor(self, "slice")
    if self.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor; unsqueeze it or index it with [...] "
                         "instead")
    nd = self.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"slice: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got "
                         f"{dim})")
    if step is None:
        step = 1
    if step <= 0:
        raise RuntimeError(f"slice step must be positive (got {step}); use flip() for a reversed view")
    d = dim % nd
    idx = (_sys.modules["builtins"].slice(None),) * d + (_sys.modules["builtins"].slice(start, end, step),)
    return self[idx]
