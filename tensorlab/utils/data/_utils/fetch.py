"""Fetchers (the module torch.utils.data._utils.fetch): turn what the sampler yields (one key,
or a list of keys when batching) into a collated sample or batch. A map-style dataset is
indexed; an iterable dataset is read from one iterator, opened when the fetcher is made."""
from __future__ import annotations

import itertools

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
    """dataset[key] for each key (one __getitems__(keys) call when the dataset has it), collated."""

    def fetch(self, keys):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[keys])
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


def make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    """The fetcher for a dataset of `kind` (_MAP_STYLE or _ITERABLE_STYLE)."""
    factory = _StreamFetcher if kind == _ITERABLE_STYLE else _MapStyleFetcher
    return factory(dataset, auto_collation, collate_fn, drop_last)
