"""tensorlab.utils.data: torch.utils.data's datasets, samplers and DataLoader (single-process and
multiprocessing workers), with torch 2.13's module layout, names, defaults, warnings and errors."""
from __future__ import annotations

from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from ._utils.worker import WorkerInfo, get_worker_info
from ._utils.collate import default_collate, default_convert
from .dataloader import DataLoader, _DatasetKind
from .distributed import DistributedSampler

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
           "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert", "get_worker_info",
           "random_split"]
__all__ += ["DistributedSampler"]
