"""tensorlab.utils: torch.utils's data loading (tensorlab.utils.data)."""
from __future__ import annotations

from . import data

__all__ = ["data"]
