"""Samplers (torch.utils.data.sampler): which indices a DataLoader fetches, and in which order.

Random samplers draw from a tensorlab Generator: RandomSampler without a generator seeds a fresh
one from the default generator at each iteration (so tl.manual_seed makes every epoch's order
reproducible and consecutive epochs differ), as torch's does."""
from __future__ import annotations

import itertools

from ... import dtypes
from ...ops.creation import as_tensor, empty
from ...ops.random import Generator, rand, randint, randperm

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


class Sampler:
    """Base class: __iter__ yields dataset indices (or lists of them for batch samplers); __len__
    is optional."""

    def __iter__(self):
        raise NotImplementedError

    def __class_getitem__(cls, item):  # Sampler[int] in annotations, as torch's Generic
        return cls


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


def _fresh_generator():
    """torch's RandomSampler without a generator: a new Generator seeded with a 63-bit integer
    drawn from the default generator."""
    seed = int(empty((), dtype=dtypes.int64).random_().item())
    g = Generator()
    g.manual_seed(seed)
    return g


class RandomSampler(Sampler):
    """A random permutation of the indices (num_samples of them: repeated whole permutations and
    a partial one), or num_samples indices drawn uniformly with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # the dataset size might change at runtime
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = _fresh_generator() if self.generator is None else self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from randint(high=n, size=(32,), dtype=dtypes.int64, generator=generator).tolist()
            yield from randint(high=n, size=(self.num_samples % 32,), dtype=dtypes.int64, generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=generator).tolist()
            yield from randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a fresh permutation each iteration)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in [0, len(weights)) drawn with probabilities proportional to
    `weights` (torch.multinomial's rules: with replacement by inverting the cumulative
    distribution, without replacement by the exponential-race trick torch uses)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=dtypes.float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        yield from iter(_multinomial(self.weights, self.num_samples, self.replacement, self.generator).tolist())

    def __len__(self):
        return self.num_samples


_CHUNK = 1 << 22  # elements of the (samples x categories) comparison evaluated at once


def _multinomial(weights, num_samples, replacement, generator):
    """torch.multinomial(weights, num_samples, replacement, generator=...) for a 1-d float64
    tensor of weights, with torch's errors."""
    n = weights.numel()
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if n == 0:
        raise RuntimeError("multinomial(): prob_dist cannot be empty: WeightedRandomSampler needs at least one weight")
    if bool((weights < 0).any()) or not bool(weights.isfinite().all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    total = weights.sum().item()
    if total <= 0:
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement:
        # each category's arrival time in an exponential race (rate = its weight): the first
        # num_samples to arrive are a weighted sample without replacement
        q = empty(n, dtype=dtypes.float64).exponential_(1, generator=generator)
        return (weights / q).topk(num_samples).indices
    cdf = (weights / total).cumsum(0)
    u = rand(num_samples, dtype=dtypes.float64, generator=generator)
    rows = max(1, _CHUNK // n)
    parts = []
    for start in range(0, num_samples, rows):
        uu = u[start:start + rows]
        # the index of the first category whose cumulative probability exceeds u
        parts.append((cdf.unsqueeze(0) <= uu.unsqueeze(1)).sum(1).clamp_(max=n - 1))
    from ...ops.shape import cat
    return cat(parts) if len(parts) > 1 else parts[0]


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of batch_size (the last one shorter unless
    drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            args = [sampler_iter] * self.batch_size
            for batch_droplast in zip(*args):
                yield [*batch_droplast]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
