"""torch.cpu.amp: the deprecated spellings of tensorlab.amp for the CPU (FutureWarning, as torch's)."""
from __future__ import annotations

import warnings

from .. import amp as _amp
from .. import dtypes


class autocast(_amp.autocast):
    """torch.cpu.amp.autocast(enabled=True, dtype=bfloat16, cache_enabled=True): deprecated alias of
    tensorlab.amp.autocast("cpu", ...)."""

    def __init__(self, enabled=True, dtype=dtypes.bfloat16, cache_enabled=True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """torch.cpu.amp.GradScaler: deprecated alias of tensorlab.amp.GradScaler("cpu", ...)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


__all__ = ["autocast", "GradScaler"]
