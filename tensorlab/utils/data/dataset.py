"""Datasets (the module torch.utils.data.dataset): the map-style Dataset and the IterableDataset
protocols, and the ready-made ones built on them (TensorDataset, StackDataset, ConcatDataset,
ChainDataset, Subset), with random_split."""
from __future__ import annotations

import bisect
import itertools
import math

import numpy as np

from ... import _warn
from ...ops.random import Generator, default_generator, randperm

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
           "random_split"]


class Dataset:
    """A map-style dataset: __getitem__(key) returns one sample; the default samplers also need
    __len__. A subclass may define __getitems__(keys) to read a whole batch in one call. `a + b`
    concatenates two datasets."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])

    def __class_getitem__(cls, item):  # allows Dataset[T] in annotations, like torch's Generic base
        return cls


class IterableDataset(Dataset):
    """A dataset read as a stream: __iter__ yields the samples. With num_workers > 0 each worker
    reads its own copy; use get_worker_info() to split the stream between workers. `a + b`
    chains two streams."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Tensors of equal first dimension read together: sample i is (t[i] for each tensor t)."""

    def __init__(self, *tensors):
        rows = tensors[0].size(0)
        if any(t.size(0) != rows for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)

    def _collated(self, keys):
        """default_collate([self[k] for k in keys]) -- one tensor per field, the rows at `keys`
        stacked -- as one index_select per field instead of a view per row and a stack of them
        (the DataLoader's fetcher asks, see _utils/fetch.py). None, and the caller reads row by
        row, unless `keys` are in-range non-negative ints and the fields plain tensors that do
        not require grad (whose batches would record a different graph)."""
        from ...ops.creation import from_numpy
        from ...tensor import Tensor
        fields = self.tensors
        for t in fields:
            if type(t) is not Tensor or t._requires_grad:
                return None
        try:
            rows = np.asarray(keys)
        except (TypeError, ValueError):
            return None
        if rows.ndim != 1 or rows.dtype.kind not in "iu" or not rows.size or rows.min() < 0 or \
                rows.max() >= len(self):
            return None
        index = from_numpy(rows.astype(np.int64, copy=False))
        cpu = index.device
        moved = {}
        out = []
        for t in fields:
            dev = t.device
            if dev != cpu and dev not in moved:
                moved[dev] = index.to(dev)
            out.append(t.index_select(0, index if dev == cpu else moved[dev]))
        return out


def _read_batch(dataset, indices):
    """dataset's samples at `indices`, through its __getitems__ when it has one."""
    read_many = getattr(dataset, "__getitems__", None)
    if not callable(read_many):
        return [dataset[i] for i in indices]
    samples = read_many(indices)
    if len(samples) != len(indices):
        raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(samples)}")
    return samples


class StackDataset(Dataset):
    """Datasets of one length read side by side: StackDataset(a, b)[i] is (a[i], b[i]) and
    StackDataset(x=a, y=b)[i] is {"x": a[i], "y": b[i]}."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not (args or kwargs):
            raise ValueError("At least one dataset should be passed")
        self.datasets = args or kwargs
        parts = args or tuple(kwargs.values())
        self._length = len(parts[0])
        if any(len(part) != self._length for part in parts):
            raise ValueError("Size mismatch between datasets")

    def _named(self):
        return isinstance(self.datasets, dict)

    def __getitem__(self, index):
        if self._named():
            return {name: part[index] for name, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __getitems__(self, indices):
        parts = self.datasets.values() if self._named() else self.datasets
        rows = zip(*(_read_batch(part, indices) for part in parts))
        if self._named():
            return [dict(zip(self.datasets, row)) for row in rows]
        return list(rows)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another: index i falls in the dataset whose range of
    cumulative sizes holds it (negative indices count from the end)."""

    @staticmethod
    def cumsum(sequence):
        """Running totals of the lengths of `sequence`'s datasets."""
        return list(itertools.accumulate(len(part) for part in sequence))

    def __init__(self, datasets):
        super().__init__()
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(part, IterableDataset) for part in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        total = len(self)
        if idx < 0:
            if idx < -total:
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += total
        part = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[part - 1] if part else 0
        return self.datasets[part][idx - start]

    @property
    def cummulative_sizes(self):
        _warn.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning)
        return self.cumulative_sizes


def _iterable_parts(datasets):
    """`datasets`, each checked to be an IterableDataset (as it is reached)."""
    for part in datasets:
        if not isinstance(part, IterableDataset):
            raise AssertionError("ChainDataset only supports IterableDataset")
        yield part


class ChainDataset(IterableDataset):
    """Streams read one after another (each opened only when the previous one ends)."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for part in _iterable_parts(self.datasets):
            yield from part

    def __len__(self):
        return sum(len(part) for part in _iterable_parts(self.datasets))


class Subset(Dataset):
    """The samples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        kind = type(self)
        if kind.__getitem__ is not Subset.__getitem__ and kind.__getitems__ is Subset.__getitems__:
            # the DataLoader reads a Subset through __getitems__, which would bypass the override
            raise NotImplementedError(
                f"{kind.__name__} overrides __getitem__ but not __getitems__. When subclassing Subset and "
                "overriding __getitem__, you must also override __getitems__ to ensure DataLoader works correctly "
                "with your custom logic. A simple implementation:\n\n"
                "def __getitems__(self, indices):\n    return [self.__getitem__(idx) for idx in indices]")

    def _source_indices(self, positions):
        return [self.indices[p] for p in positions]

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[self._source_indices(idx)]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        source = self._source_indices(indices)
        read_many = getattr(self.dataset, "__getitems__", None)
        return read_many(source) if callable(read_many) else [self.dataset[i] for i in source]

    def __len__(self):
        return len(self.indices)


def _split_sizes(total, fractions):
    """Sizes for splitting `total` items by `fractions` (summing to 1): floor(total * f) each,
    the items left over given one at a time to the splits in turn. Warns about empty splits."""
    for position, fraction in enumerate(fractions):
        if not 0 <= fraction <= 1:
            raise ValueError(f"Fraction at index {position} is not between 0 and 1")
    sizes = [math.floor(total * fraction) for fraction in fractions]
    for extra in range(total - sum(sizes)):
        sizes[extra % len(sizes)] += 1
    for position, size in enumerate(sizes):
        if size == 0:
            _warn.warn(f"Length of split at index {position} is 0. This might result in an empty dataset.")
    return sizes


def random_split(dataset, lengths, generator=default_generator):
    """Split `dataset` into non-overlapping Subsets of the given lengths (or of the given fractions
    of its length, when they sum to 1), over an order drawn with randperm from `generator`."""
    requested = sum(lengths)
    if math.isclose(requested, 1) and requested <= 1:
        lengths = _split_sizes(len(dataset), lengths)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    if generator is not None and not isinstance(generator, Generator):
        raise TypeError(f"random_split(): argument 'generator' must be tensorlab.Generator, not "
                        f"{type(generator).__name__}")
    order = randperm(sum(lengths), generator=generator).tolist()
    ends = itertools.accumulate(lengths)
    return [Subset(dataset, order[end - size:end]) for end, size in zip(ends, lengths)]
