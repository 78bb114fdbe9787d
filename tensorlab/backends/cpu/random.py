"""CPU random primitives."""
from __future__ import annotations

__all__ = ()
