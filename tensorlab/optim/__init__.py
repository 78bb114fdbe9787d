"""tensorlab.optim: torch.optim's Optimizer base class, SGD, Adam and AdamW."""
from __future__ import annotations

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]
