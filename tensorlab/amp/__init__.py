"""tensorlab.amp: automatic mixed precision, as torch.amp.

- policy.py: the per-op table (lower precision / float32 / promote, per device type)
- autocast_mode.py: autocast (context manager and decorator, per thread, nesting), the op wrappers
- grad_scaler.py: GradScaler (dynamic loss scaling with the inf/NaN check on the device)
"""
from __future__ import annotations

import functools

from .autocast_mode import (autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_available,
                            is_autocast_enabled)
from .grad_scaler import GradScaler


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """torch.amp.custom_fwd: run a custom Function's forward with cast_inputs (autocast off inside),
    or in the caller's autocast state when cast_inputs is None."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_context = is_autocast_enabled(device_type)
        args[0]._fwd_used_autocast = False
        if autocast_context:
            def cast(x):
                from ..tensor import Tensor
                if isinstance(x, Tensor) and x.is_floating_point() and x.device.type == device_type:
                    return x.to(cast_inputs)
                return x
            with autocast(device_type=device_type, enabled=False):
                return fwd(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """torch.amp.custom_bwd: run backward in the autocast state its forward ran in."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=getattr(args[0], "_fwd_used_autocast", False),
                      dtype=getattr(args[0], "_dtype", None)):
            return bwd(*args, **kwargs)
    return decorate_bwd


__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "is_autocast_available", "is_autocast_enabled",
           "get_autocast_dtype", "clear_autocast_cache"]
