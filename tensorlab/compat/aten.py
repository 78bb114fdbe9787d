"""torch.ops.aten's operators that have no `torch.X` name, as tensorlab functions of the same name and
signature (the overload torch's OpInfo calls): slice (aten.slice.Tensor), _softmax_backward_data,
_safe_softmax, _batch_norm_with_update, _upsample_bilinear2d_aa. Each is built on tensorlab's
public ops, so it runs on every device, with autograd."""
from __future__ import annotations

import sys as _sys

from .. import ops as _ops  # noqa: F401  (the op modules installed before these refer to them)
from ..tensor import Tensor

__all__ = ("slice", "_safe_softmax", "_softmax_backward_data", "_batch_norm_with_update", "_upsample_bilinear2d_aa")


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


def _safe_softmax(self, dim, dtype=None):
    """aten._safe_softmax: softmax along dim, with 0 (not NaN) where every entry of the row is -inf (the
    rows a fully masked attention produces)."""
    from .. import ops as _o  # noqa: F401
    import tensorlab as tl
    _tensor(self, "_safe_softmax")
    if not self.dtype.is_floating_point:
        return tl.softmax(self, dim, dtype=dtype)
    masked = (self == float("-inf")).all(dim, keepdim=True)
    zero = tl.zeros((), dtype=self.dtype, device=self.device)
    out = tl.softmax(tl.where(masked, zero, self), dim, dtype=dtype)  # no NaN row (nor NaN gradient)
    return tl.where(masked, zero.to(out.dtype), out)


def _softmax_backward_data(grad_output, output, dim, input_dtype):
    """aten._softmax_backward_data: the gradient of softmax's input from its output y and the gradient
    g: y * (g - sum(g * y, dim)), in input_dtype."""
    _tensor(grad_output, "_softmax_backward_data", "grad_output")
    _tensor(output, "_softmax_backward_data", "output")
    import tensorlab as tl
    low = (tl.float16, tl.bfloat16)
    if grad_output.dtype in low or output.dtype in low:  # torch's kernel accumulates in float32
        grad_output, output = grad_output.float(), output.float()
    g = grad_output * output
    res = g - output * g.sum(dim, keepdim=True)
    return res if res.dtype is input_dtype else res.to(input_dtype)


def _batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps):
    """aten._batch_norm_with_update: training-mode batch norm that updates running_mean/running_var in
    place -> (output, save_mean, save_invstd, reserve); reserve is the empty uint8 tensor torch's CPU
    kernel returns (cuDNN's workspace elsewhere)."""
    import tensorlab as tl
    _tensor(input, "_batch_norm_with_update", "input")
    out, mean, invstd = tl.native_batch_norm(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return out, mean, invstd, tl.empty(0, dtype=tl.uint8, device=input.device)


def _upsample_bilinear2d_aa(input, output_size, align_corners, scale_factors=None, *, scales_h=None, scales_w=None):
    """aten._upsample_bilinear2d_aa (.vec: output_size or scale_factors; the default overload: output_size
    with scales_h/scales_w mapping the coordinates): antialiased bilinear resampling of a 4-D input,
    F.interpolate(mode="bilinear", antialias=True)'s arithmetic."""
    import math
    from ..ops import upsample
    _tensor(input, "_upsample_bilinear2d_aa", "input")
    if input.dim() != 4:
        raise RuntimeError(f"_upsample_bilinear2d_aa: expected a 4-D (N, C, H, W) input, got shape {tuple(input.shape)}")
    if output_size is not None:
        sizes = [int(v) for v in output_size]
        scales = list(scale_factors) if scale_factors is not None else [scales_h, scales_w]
    elif scale_factors is not None:
        scales = [float(v) for v in scale_factors]
        sizes = [int(math.floor(n * f)) for n, f in zip(input.shape[2:], scales)]
    else:
        raise RuntimeError("_upsample_bilinear2d_aa: give either output_size or scale_factors (both are None)")
    if len(sizes) != 2 or len(scales) != 2:
        raise RuntimeError(f"_upsample_bilinear2d_aa: expected 2 output sizes / scales, got {sizes} / {scales}")
    return upsample.resample(input, "bilinear", sizes, scales, bool(align_corners), True)
