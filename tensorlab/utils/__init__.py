"""tensorlab.utils: torch.utils's data loading (tensorlab.utils.data) and activation checkpointing
(tensorlab.utils.checkpoint)."""
from __future__ import annotations

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
