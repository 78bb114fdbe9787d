"""CPU indexing primitives."""
from __future__ import annotations

__all__ = ()
