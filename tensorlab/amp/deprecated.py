"""torch.cuda.amp and torch.cpu.amp: the deprecated spellings of tensorlab.amp's autocast and GradScaler for one
device type, made once here (each warns FutureWarning with torch's text, then forwards with the device type)."""
from __future__ import annotations

import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def aliases(device_type, default_dtype, module):
    """(autocast, GradScaler) classes for torch.<device_type>.amp, named as that module's."""

    class autocast(_autocast):
        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            warnings.warn(f"`torch.{device_type}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(_GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warnings.warn(f"`torch.{device_type}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device_type}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    autocast.__doc__ = (f"torch.{device_type}.amp.autocast(enabled=True, dtype={default_dtype.name}, "
                        f"cache_enabled=True): deprecated alias of tensorlab.amp.autocast('{device_type}', ...).")
    GradScaler.__doc__ = (f"torch.{device_type}.amp.GradScaler: deprecated alias of "
                          f"tensorlab.amp.GradScaler('{device_type}', ...).")
    for cls in (autocast, GradScaler):
        cls.__module__, cls.__qualname__ = module, cls.__name__
    return autocast, GradScaler
