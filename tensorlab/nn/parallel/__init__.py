"""tensorlab.nn.parallel (torch.nn.parallel): DistributedDataParallel over tensorlab.distributed,
DataParallel (one process, one or several CUDA devices)."""
from __future__ import annotations

from .data_parallel import DataParallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
