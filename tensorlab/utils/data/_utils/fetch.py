"""Fetchers (the module torch.utils.data._utils.fetch): turn what the sampler yields (one key,
or a list of keys when batching) into a collated sample or batch. A map-style dataset is
indexed; an iterable dataset is read from one iterator, opened when the fetcher is made."""
from __future__ import annotations

import itertools

from ....tensor import Tensor
from ..dataset import TensorDataset
from .collate import collate_tensor_fn, default_collate, default_collate_fn_map

_MAP_STYLE = 0
_ITERABLE_STYLE = 1


class _Fetcher:
    """What both kinds of fetcher know: the dataset, whether keys come in batches, the collate_fn,
    and drop_last."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last


class _MapStyleFetcher(_Fetcher):
    """dataset[key] for each key (one __getitems__(keys) call when the dataset has it), collated.
    A TensorDataset read as it is (no __getitem__ or __getitems__ of a subclass) and collated by
    default_collate (its tensor rule unchanged) gives its batch in one gather per field
    (TensorDataset._collated): the same tensors, without a view per row and a stack of them."""

    def fetch(self, keys):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[keys])
        if self.collate_fn is default_collate and _reads_plain_rows(self.dataset):
            batch = self.dataset._collated(keys)
            if batch is not None:
                return batch
        read_many = getattr(self.dataset, "__getitems__", None)
        samples = read_many(keys) if read_many else [self.dataset[key] for key in keys]
        return self.collate_fn(samples)


class _StreamFetcher(_Fetcher):
    """The next sample of the dataset's iterator, or the next len(keys) of them when batching (the
    keys themselves are placeholders). StopIteration once the stream is spent; a short last batch
    counts as spent under drop_last."""

    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        super().__init__(dataset, auto_collation, collate_fn, drop_last)
        self.stream = iter(dataset)
        self.spent = False

    def fetch(self, keys):
        if self.spent:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        wanted = len(keys)
        samples = list(itertools.islice(self.stream, wanted))
        if len(samples) < wanted:
            self.spent = True
            if not samples or self.drop_last:
                raise StopIteration
        return self.collate_fn(samples)


def _reads_plain_rows(dataset):
    kind = type(dataset)
    return kind.__getitem__ is TensorDataset.__getitem__ and getattr(kind, "__getitems__", None) is None and \
        default_collate_fn_map.get(Tensor) is collate_tensor_fn


def make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    """The fetcher for a dataset of `kind` (_MAP_STYLE or _ITERABLE_STYLE)."""
    factory = _StreamFetcher if kind == _ITERABLE_STYLE else _MapStyleFetcher
    return factory(dataset, auto_collation, collate_fn, drop_last)
