"""torch.cuda.amp: the deprecated spellings of tensorlab.amp for CUDA (each warns FutureWarning
as torch's and forwards to tensorlab.amp with device_type "cuda")."""
from __future__ import annotations

import warnings

from .. import amp as _amp
from .. import dtypes
from ..amp.deprecated import aliases


autocast, GradScaler = aliases("cuda", dtypes.float16, __name__)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: deprecated alias of tensorlab.amp.custom_fwd(device_type="cuda")."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """torch.cuda.amp.custom_bwd: deprecated alias of tensorlab.amp.custom_bwd(device_type="cuda")."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning, stacklevel=2)
    return _amp.custom_bwd(bwd, device_type="cuda")


__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]
