"""torch.utils.data.distributed: DistributedSampler, the sampler that gives each rank of a
distributed job its own share of a dataset.

Indexing and padding are torch's exactly: the index list (a permutation when shuffle=True, else
0..n-1) is padded by repeating its start up to a multiple of num_replicas (or cut to one with
drop_last=True), and rank r takes every num_replicas-th index from position r. The permutation
comes from a tensorlab Generator seeded with seed + epoch, so every rank draws the same one and
set_epoch changes it; tensorlab's randperm is not torch's bit for bit, so a shuffled order differs
from torch's while keeping every property above (tests/test_distributed_sampler.py)."""
from __future__ import annotations

import math
import operator

from ...ops.random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


def _default(what):
    from ... import distributed as dist
    if not dist.is_available():
        raise RuntimeError("Requires distributed package to be available")
    return dist.get_world_size() if what == "world_size" else dist.get_rank()


class DistributedSampler(Sampler):
    """Restricts data loading to the share of the dataset that belongs to `rank` among
    `num_replicas` processes (by default the default process group's rank and world size).
    Call set_epoch(epoch) at the start of every epoch, before iterating, for a new shuffle."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = _default("world_size")
        if rank is None:
            rank = _default("rank")
        num_replicas, rank = operator.index(num_replicas), operator.index(rank)
        if num_replicas < 1:
            raise ValueError(f"DistributedSampler: num_replicas should be a positive integer, got {num_replicas}")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if self.drop_last and n % self.num_replicas != 0:
            self.num_samples = math.ceil((n - self.num_replicas) / self.num_replicas)
        else:
            self.num_samples = math.ceil(n / self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose shuffle the next iteration uses (seed + epoch seeds the permutation)."""
        self.epoch = epoch
