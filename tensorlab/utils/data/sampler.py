"""Samplers (torch.utils.data.sampler): which indices a DataLoader fetches, and in which order.

Random samplers draw from a tensorlab Generator: RandomSampler without a generator seeds a fresh
one from the default generator at each iteration (so tl.manual_seed makes every epoch's order
reproducible and consecutive epochs differ), as torch's does."""
from __future__ import annotations

from ... import dtypes
from ...ops.creation import as_tensor, empty
from ...ops.random import Generator, rand, randint, randperm

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
           "WeightedRandomSampler"]


class Sampler:
    """What a sampler is: an iterable of dataset keys (of lists of keys, for a batch sampler),
    with a __len__ where the count is known."""

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
    generator = Generator()
    generator.manual_seed(int(empty((), dtype=dtypes.int64).random_().item()))
    return generator


class RandomSampler(Sampler):
    """The indices in a random order: num_samples of them, as whole permutations followed by the
    start of one more; or, with replacement, num_samples indices drawn uniformly (in blocks of 32
    draws, as torch draws them)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        count = self.num_samples
        if not isinstance(count, int) or count <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={count}")

    @property
    def num_samples(self):
        """num_samples as given, else the dataset's length at the time of asking."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        size = len(self.data_source)
        generator = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            blocks, last = divmod(self.num_samples, 32)
            for block in [32] * blocks + [last]:
                yield from randint(high=size, size=(block,), dtype=dtypes.int64, generator=generator).tolist()
            return
        passes, last = divmod(self.num_samples, size)
        for pass_number in range(passes + 1):  # the final, partial permutation is drawn in full
            order = randperm(size, generator=generator).tolist()
            yield from order if pass_number < passes else order[:last]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, a fresh permutation at each pass."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for position in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[position]

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
        yield from _multinomial(self.weights, self.num_samples, self.replacement, self.generator).tolist()

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
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        whole, partial = divmod(len(self.sampler), self.batch_size)
        return whole + (1 if partial and not self.drop_last else 0)
