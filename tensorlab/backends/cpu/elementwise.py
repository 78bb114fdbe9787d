"""CPU elementwise primitives."""
from __future__ import annotations

__all__ = ()
