"""tensorlab.nn.parallel (torch.nn.parallel): DistributedDataParallel over tensorlab.distributed."""
from __future__ import annotations

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
