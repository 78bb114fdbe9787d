"""CPU shape primitives."""
from __future__ import annotations

__all__ = ()
