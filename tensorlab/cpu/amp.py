"""torch.cpu.amp: the deprecated spellings of tensorlab.amp for the CPU (FutureWarning, as torch's)."""
from __future__ import annotations

from .. import dtypes
from ..amp.deprecated import aliases

autocast, GradScaler = aliases("cpu", dtypes.bfloat16, __name__)

__all__ = ["autocast", "GradScaler"]
