"""tensorlab.utils.data against torch.utils.data: datasets, random_split, samplers, default_collate /
default_convert, DataLoader options and errors, len(), worker processes (order, seeding,
get_worker_info, worker_init_fn, IterableDataset sharding, persistent workers, prefetch,
timeout, errors), pin_memory, and shuffle reproducibility from tl.manual_seed / tl.Generator."""
from __future__ import annotations

import collections
import os
import random
import time
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.utils import data as D
from tensorlab.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                                  SequentialSampler, Subset, SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                  default_collate, default_convert, get_worker_info, random_split)

Point = collections.namedtuple("Point", "x y")


def _np(t):
    return t.detach().cpu().numpy()


# -- module paths ---------------------------------------------------------------------------------
def test_module_paths_mirror_torch(torch):
    import importlib
    for mod, names in {"dataset": ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset",
                                   "random_split", "StackDataset", "ChainDataset"],
                       "sampler": ["Sampler", "SequentialSampler", "RandomSampler", "BatchSampler",
                                   "SubsetRandomSampler", "WeightedRandomSampler"],
                       "dataloader": ["DataLoader", "get_worker_info", "default_collate", "default_convert"],
                       "_utils.collate": ["default_collate", "default_convert", "collate", "default_collate_fn_map"],
                       "_utils.worker": ["get_worker_info", "WorkerInfo"]}.items():
        ours = importlib.import_module(f"tensorlab.utils.data.{mod}")
        theirs = importlib.import_module(f"torch.utils.data.{mod}")
        for n in names:
            assert hasattr(ours, n) and hasattr(theirs, n), (mod, n)
    assert tl.utils.data.DataLoader is D.dataloader.DataLoader
    import inspect
    for n in ("DataLoader", "RandomSampler", "WeightedRandomSampler", "BatchSampler", "random_split"):
        assert (list(inspect.signature(getattr(D, n)).parameters)
                == list(inspect.signature(getattr(torch.utils.data, n)).parameters)), n


# -- datasets ----------------------------------------------------------------------------------------
def test_tensor_dataset(device):
    x = tl.arange(12, device=device).reshape(6, 2).float()
    y = tl.arange(6, device=device)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert _np(a).tolist() == [8.0, 9.0] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, tl.arange(5, device=device))


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i

    def __len__(self):
        return self.n


def test_concat_subset_stack_chain():
    a, b = Squares(3), Squares(4)
    c = a + b
    assert isinstance(c, ConcatDataset) and len(c) == 7 and c.cumulative_sizes == [3, 7]
    assert [c[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert c[-1] == 9 and c[-7] == 0
    with pytest.raises(ValueError, match="absolute value of index should not exceed dataset length"):
        c[-8]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    s = Subset(c, [6, 0, 5])
    assert len(s) == 3 and [s[i] for i in range(3)] == [9, 0, 4] and s.__getitems__([0, 2]) == [9, 4]
    st = D.StackDataset(a, Squares(3))
    assert st[2] == (4, 4) and len(st) == 3
    assert D.StackDataset(p=a, q=a).__getitems__([1, 2]) == [{"p": 1, "q": 1}, {"p": 4, "q": 4}]
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(a, b)
    chain = Stream(3) + Stream(2)
    assert isinstance(chain, D.ChainDataset) and list(chain) == [0, 1, 2, 0, 1] and len(chain) == 5
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([a, Stream(2)])


def test_random_split_lengths_and_fractions(torch):
    ds = Squares(10)
    g = tl.Generator().manual_seed(5)
    parts = random_split(ds, [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(ds, [3, 7], generator=tl.Generator().manual_seed(5))
    assert [p.indices for p in again] == [p.indices for p in parts]
    other = random_split(ds, [3, 7], generator=tl.Generator().manual_seed(6))
    assert [p.indices for p in other] != [p.indices for p in parts]
    for fracs in ([0.3, 0.3, 0.4], [0.5, 0.5], [0.25, 0.25, 0.25, 0.25], [1 / 3] * 3):
        ours = random_split(ds, fracs, generator=tl.Generator().manual_seed(0))
        theirs = torch.utils.data.random_split(list(range(10)), fracs, generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in ours] == [len(p) for p in theirs]
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(ds, [1.5, -0.5])
    with pytest.warns(UserWarning) as w:
        random_split(Squares(2), [0.9, 0.05, 0.05])
    assert [str(x.message) for x in w] == [f"Length of split at index {i} is 0. This might result in an empty "
                                           "dataset." for i in (1, 2)]
    tl.manual_seed(11)
    a = [p.indices for p in random_split(ds, [5, 5])]
    tl.manual_seed(11)
    assert [p.indices for p in random_split(ds, [5, 5])] == a


# -- samplers ----------------------------------------------------------------------------------------
def test_sequential_and_batch_sampler_match_torch(torch):
    assert list(SequentialSampler(range(5))) == list(torch.utils.data.SequentialSampler(range(5)))
    for n, bs, dl in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False), (2, 5, True)]:
        ours = BatchSampler(SequentialSampler(range(n)), bs, dl)
        theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), bs, dl)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    for bad in [dict(batch_size=0, drop_last=False), dict(batch_size=True, drop_last=False),
                dict(batch_size=2, drop_last=1)]:
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.BatchSampler(range(3), **bad)
        with pytest.raises(ValueError) as ours:
            BatchSampler(range(3), **bad)
        assert str(ours.value) == str(theirs.value)


def test_random_sampler_is_reproducible_permutation():
    ds = range(20)
    first = list(RandomSampler(ds, generator=tl.Generator().manual_seed(3)))
    assert sorted(first) == list(range(20)) and first != list(range(20))
    assert list(RandomSampler(ds, generator=tl.Generator().manual_seed(3))) == first
    s = RandomSampler(ds, generator=tl.Generator().manual_seed(3))
    e1, e2 = list(s), list(s)
    assert e1 == first and sorted(e2) == list(range(20)) and e2 != e1  # the generator moves on
    # without a generator: a fresh one seeded from the default generator at each iteration
    tl.manual_seed(7)
    s = RandomSampler(ds)
    a1, a2 = list(s), list(s)
    tl.manual_seed(7)
    assert list(s) == a1 and list(s) == a2 and a1 != a2


def test_random_sampler_num_samples_and_replacement(torch):
    s = RandomSampler(range(5), num_samples=12, generator=tl.Generator().manual_seed(0))
    out = list(s)
    assert len(s) == 12 and len(out) == 12
    assert sorted(out[:5]) == list(range(5)) and sorted(out[5:10]) == list(range(5)) and len(set(out[10:])) == 2
    r = RandomSampler(range(4), replacement=True, num_samples=70, generator=tl.Generator().manual_seed(0))
    out = list(r)
    assert len(out) == 70 and set(out) == {0, 1, 2, 3}
    for kw in [dict(replacement=1), dict(num_samples=0), dict(num_samples=2.5)]:
        exc = TypeError if "replacement" in kw else ValueError
        with pytest.raises(exc) as theirs:
            torch.utils.data.RandomSampler(range(3), **kw)
        with pytest.raises(exc) as ours:
            RandomSampler(range(3), **kw)
        assert str(ours.value) == str(theirs.value)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    s = SubsetRandomSampler(idx, generator=tl.Generator().manual_seed(1))
    a, b = list(s), list(s)
    assert sorted(a) == idx and sorted(b) == idx and len(s) == 4
    assert list(SubsetRandomSampler(idx, generator=tl.Generator().manual_seed(1))) == a


def test_weighted_random_sampler_distribution(torch):
    w = [0.1, 0.0, 0.6, 0.3]
    s = WeightedRandomSampler(w, 6000, generator=tl.Generator().manual_seed(0))
    out = np.array(list(s))
    assert len(s) == 6000 and len(out) == 6000
    freq = np.bincount(out, minlength=4) / 6000
    assert freq[1] == 0
    np.testing.assert_allclose(freq, w, atol=0.03)
    assert list(WeightedRandomSampler(w, 50, generator=tl.Generator().manual_seed(0))) == out[:50].tolist()
    no_rep = list(WeightedRandomSampler([1, 1, 5, 0.5, 2], 4, replacement=False,
                                        generator=tl.Generator().manual_seed(2)))
    assert len(set(no_rep)) == 4 and set(no_rep) <= set(range(5))
    # heavy weights come first far more often
    firsts = [next(iter(WeightedRandomSampler([1, 100, 1], 2, replacement=False,
                                              generator=tl.Generator().manual_seed(i)))) for i in range(40)]
    assert firsts.count(1) > 30
    for args, kw in [(([1.0], 0), {}), (([[1.0]], 1), {}), (([1.0], 1), dict(replacement=0))]:
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.WeightedRandomSampler(*args, **kw)
        with pytest.raises(ValueError) as ours:
            WeightedRandomSampler(*args, **kw)
        assert str(ours.value) == str(theirs.value)
    for weights, n, rep in [([1.0, 2.0], 3, False), ([-1.0, 2.0], 1, True), ([0.0, 0.0], 1, True)]:
        with pytest.raises(RuntimeError) as theirs:
            list(torch.utils.data.WeightedRandomSampler(weights, n, rep))
        with pytest.raises(RuntimeError) as ours:
            list(WeightedRandomSampler(weights, n, rep))
        assert str(ours.value) == str(theirs.value)


# -- collate -----------------------------------------------------------------------------------------
def _same(ours, theirs, torch):
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tl.Tensor), (ours, theirs)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert tuple(ours.shape) == tuple(theirs.shape)
        np.testing.assert_array_equal(_np(ours), theirs.numpy())
    elif isinstance(theirs, dict):
        assert type(ours) is type(theirs) and list(ours) == list(theirs)
        for k in theirs:
            _same(ours[k], theirs[k], torch)
    elif isinstance(theirs, (list, tuple)):
        assert type(ours).__name__ == type(theirs).__name__ and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b, torch)
    elif isinstance(theirs, np.ndarray):
        assert isinstance(ours, np.ndarray)
        np.testing.assert_array_equal(ours, theirs)
    else:
        assert ours == theirs and type(ours) is type(theirs)


def _samples(mod, i):
    return {"t": mod.tensor([i, i + 1.0]), "a": np.arange(3, dtype=np.int16) + i, "f": 0.5 * i, "n": i,
            "b": bool(i % 2), "s": f"s{i}", "y": b"x", "np32": np.float32(i), "npb": np.bool_(i),
            "tup": (i, 2.0 * i), "pt": Point(mod.tensor(i), float(i)), "lst": [i, i * 3],
            "od": collections.OrderedDict(k=i)}


def test_default_collate_matches_torch(torch):
    ours = default_collate([_samples(tl, i) for i in range(3)])
    theirs = torch.utils.data.default_collate([_samples(torch, i) for i in range(3)])
    _same(ours, theirs, torch)
    # a batch of (x, y) tuples becomes [xs, ys]; namedtuples keep their type
    assert isinstance(ours["tup"], list) and isinstance(ours["pt"], Point)
    assert ours["f"].dtype == tl.float64 and ours["n"].dtype == tl.int64 and ours["b"].dtype == tl.bool


def test_default_collate_errors_match_torch(torch):
    for batch in ([[1, 2], [3]], [object(), object()], [np.array(["a"]), np.array(["b"])]):
        exc = RuntimeError if isinstance(batch[0], list) else TypeError
        with pytest.raises(exc) as theirs:
            torch.utils.data.default_collate(batch)
        with pytest.raises(exc) as ours:
            default_collate(batch)
        msg = str(theirs.value).replace("torch", "tensorlab")
        assert str(ours.value) == msg or str(ours.value) == str(theirs.value)
    with pytest.raises(RuntimeError):
        default_collate([tl.zeros(2), tl.zeros(3)])


def test_default_convert_matches_torch(torch):
    for sample in (np.arange(4.0), {"a": np.int32(3), "s": "x"}, (np.ones(2), 1), Point(np.zeros(1), 2),
                   [np.float32(1.5), "q"], np.array(["str"]), 7):
        _same(default_convert(sample), torch.utils.data.default_convert(sample), torch)


# -- DataLoader (single process) -----------------------------------------------------------------
def _batches(loader):
    return [[_np(t).tolist() for t in b] if isinstance(b, (list, tuple)) else _np(b).tolist() for b in loader]


def test_dataloader_batching_matches_torch(torch, device):
    x = np.arange(22, dtype=np.float32).reshape(11, 2)
    ours_ds = TensorDataset(tl.tensor(x, device=device), tl.arange(11, device=device))
    theirs_ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.arange(11))
    for kw in [dict(), dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=None),
               dict(batch_size=11), dict(batch_size=20, drop_last=True),
               dict(sampler=[3, 1, 4, 1, 5], batch_size=2),
               dict(batch_sampler=[[0, 1], [5], [10, 2, 3]])]:
        ours, theirs = DataLoader(ours_ds, **kw), torch.utils.data.DataLoader(theirs_ds, **kw)
        assert len(ours) == len(theirs), kw
        got = list(ours)
        for b in got:
            assert all(t.device.type == device for t in b)
        assert _batches(got) == [[t.numpy().tolist() for t in b] for b in theirs], kw


def test_tensor_dataset_batches_gather_rows_as_collate_would(torch, device):
    """A TensorDataset under default_collate is read one gather per field (TensorDataset._collated):
    the batches are torch's, new tensors (writing one leaves the dataset alone); keys it cannot
    gather (negative), a subclass's __getitem__, fields that require grad and a replaced tensor rule
    are read row by row."""
    x = np.arange(40, dtype=np.float32).reshape(10, 4)
    y = np.arange(10) % 3
    ours_ds = TensorDataset(tl.tensor(x, device=device), tl.tensor(y, device=device))
    theirs_ds = torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y))
    for kw in [dict(batch_size=3), dict(batch_sampler=[[9, 0, 9], [-1, -10], [4]]),
               dict(batch_size=4, sampler=[7, 2, 5, 0, 9, 1], drop_last=True)]:
        got = list(DataLoader(ours_ds, **kw))
        want = list(torch.utils.data.DataLoader(theirs_ds, **kw))
        assert [[str(t.dtype).split(".")[-1] for t in b] for b in got] == [[str(t.dtype).split(".")[-1] for t in b]
                                                                         for b in want]
        assert _batches(got) == [[t.numpy().tolist() for t in b] for b in want], kw
    first = next(iter(DataLoader(ours_ds, batch_size=2)))
    first[0].fill_(-1.0)
    assert _np(ours_ds.tensors[0])[:2].tolist() == x[:2].tolist()
    assert ours_ds._collated([0, 10]) is None and ours_ds._collated([-1]) is None and ours_ds._collated([]) is None

    class Doubled(TensorDataset):
        def __getitem__(self, i):
            return tuple(2 * t[i] for t in self.tensors)

    assert _np(next(iter(DataLoader(Doubled(*ours_ds.tensors), batch_size=2)))[0]).tolist() == (2 * x[:2]).tolist()
    w = tl.tensor(x, device=device, requires_grad=True)
    batch = next(iter(DataLoader(TensorDataset(w), batch_size=2)))[0]
    assert batch.grad_fn.name() == "StackBackward0"
    from tensorlab.utils.data._utils import collate as C
    saved = C.default_collate_fn_map[tl.Tensor]
    C.default_collate_fn_map[tl.Tensor] = lambda batch, **kw: len(batch)
    try:
        assert next(iter(DataLoader(ours_ds, batch_size=3))) == [3, 3]
    finally:
        C.default_collate_fn_map[tl.Tensor] = saved


def test_dataloader_collate_fn_and_no_autobatch(torch):
    ds = Squares(5)
    assert list(DataLoader(ds, batch_size=2, collate_fn=lambda b: sum(b))) == [1, 13, 16]
    ours = list(DataLoader(ds, batch_size=None))
    theirs = list(torch.utils.data.DataLoader(ds, batch_size=None))
    assert ours == theirs == [0, 1, 4, 9, 16]  # default_convert leaves Python numbers alone
    ours = list(DataLoader(ds, batch_size=2))
    assert [b.tolist() for b in ours] == [[0, 1], [4, 9], [16]] and ours[0].dtype == tl.int64


@pytest.mark.parametrize("kw", [dict(num_workers=-1), dict(timeout=-1), dict(prefetch_factor=2),
                                dict(persistent_workers=True), dict(shuffle=True, sampler=[0]),
                                dict(batch_sampler=[[0]], batch_size=2), dict(batch_sampler=[[0]], drop_last=True),
                                dict(batch_size=None, drop_last=True), dict(num_workers=1, prefetch_factor=-1),
                                dict(multiprocessing_context="fork")])
def test_dataloader_option_errors_match_torch(torch, kw):
    with pytest.raises(ValueError) as theirs:
        torch.utils.data.DataLoader(Squares(3), **kw)
    with pytest.raises(ValueError) as ours:
        DataLoader(Squares(3), **kw)
    assert str(ours.value) == str(theirs.value)


def test_dataloader_iterable_dataset_option_errors_match_torch(torch):
    for kw in (dict(shuffle=True), dict(sampler=[0]), dict(batch_sampler=[[0]])):
        with pytest.raises(ValueError) as theirs:
            torch.utils.data.DataLoader(TorchStream(3), **kw)
        with pytest.raises(ValueError) as ours:
            DataLoader(Stream(3), **kw)
        assert str(ours.value).split(", but got")[0] == str(theirs.value).split(", but got")[0]


def test_dataloader_attributes_frozen_after_init():
    dl = DataLoader(Squares(3), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 3
    dl.num_workers = 0  # other attributes may change
    assert dl.prefetch_factor is None and dl.timeout == 0 and dl.pin_memory is False and dl.in_order


def test_shuffle_reproducible_from_manual_seed_and_generator():
    ds = Squares(30)
    tl.manual_seed(123)
    dl = DataLoader(ds, batch_size=7, shuffle=True)
    e1, e2 = _flat(dl), _flat(dl)
    assert sorted(e1) == sorted(e2) == sorted(i * i for i in range(30))
    assert e1 != e2
    tl.manual_seed(123)
    assert _flat(dl) == e1 and _flat(dl) == e2
    g = tl.Generator().manual_seed(9)
    dg = DataLoader(ds, batch_size=7, shuffle=True, generator=g)
    f1 = _flat(dg)
    assert _flat(DataLoader(ds, batch_size=7, shuffle=True, generator=tl.Generator().manual_seed(9))) == f1
    assert f1 != e1


def _flat(loader):
    return [v for b in loader for v in b.tolist()]


# -- IterableDataset -------------------------------------------------------------------------------
class Stream(IterableDataset):
    def __init__(self, n, shard=False):
        self.n, self.shard = n, shard

    def __iter__(self):
        info = get_worker_info()
        if self.shard and info is not None:
            return iter(range(info.id, self.n, info.num_workers))
        return iter(range(self.n))

    def __len__(self):
        return self.n


class TorchStream:  # built lazily against torch's IterableDataset
    def __new__(cls, n):
        import torch

        class _S(torch.utils.data.IterableDataset):
            def __iter__(self):
                return iter(range(n))

            def __len__(self):
                return n
        return _S()


def test_iterable_dataset_batches_and_len(torch):
    for kw in (dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None)):
        ours, theirs = DataLoader(Stream(8), **kw), torch.utils.data.DataLoader(TorchStream(8), **kw)
        assert len(ours) == len(theirs)
        assert [b if isinstance(b, int) else b.tolist() for b in ours] == [
            b if isinstance(b, int) else b.tolist() for b in theirs]


def test_iterable_dataset_longer_than_len_warns(torch):
    class Liar(Stream):
        def __len__(self):
            return 2

    dl = DataLoader(Liar(4), batch_size=1)
    assert len(dl) == 2
    with pytest.warns(UserWarning) as w:
        list(dl)
    assert "was reported to be 2(when accessing len(dataloader)), but 3 samples have been fetched" in str(w[0].message)
    assert len(w) == 2 and "but 4 samples have been fetched" in str(w[1].message)
    assert all(x.filename == __file__ for x in w)


# -- worker processes --------------------------------------------------------------------------------
class WorkerEcho(Dataset):
    """Returns (index, worker id, worker seed, a draw from each of random / numpy / tensorlab)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "wid": -1 if info is None else info.id, "seed": -1 if info is None else info.seed,
                "pid": os.getpid(), "py": random.random(), "np": float(np.random.rand()),
                "tl": tl.rand(1).item(), "t": tl.full((2,), float(i))}

    def __len__(self):
        return self.n


def test_workers_match_single_process_order(torch):
    x = tl.arange(40).float().reshape(20, 2)
    ds = TensorDataset(x, tl.arange(20))
    single = _batches(DataLoader(ds, batch_size=3))
    multi = _batches(DataLoader(ds, batch_size=3, num_workers=2))
    assert multi == single
    g1 = _batches(DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, generator=tl.Generator().manual_seed(4)))
    g2 = _batches(DataLoader(ds, batch_size=3, shuffle=True, num_workers=2, generator=tl.Generator().manual_seed(4)))
    assert g1 == g2 and g1 != single
    unordered = _batches(DataLoader(ds, batch_size=3, num_workers=2, in_order=False))
    assert sorted(map(str, unordered)) == sorted(map(str, single))


def test_worker_info_seeds_and_init_fn():
    assert get_worker_info() is None
    dl = DataLoader(WorkerEcho(8), batch_size=2, num_workers=2, generator=tl.Generator().manual_seed(1),
                    worker_init_fn=_init_fn)
    batches = list(dl)
    by_worker = collections.defaultdict(list)
    for b in batches:
        for wid, seed, pid, py, npv, tlv, marker in zip(b["wid"].tolist(), b["seed"].tolist(), b["pid"].tolist(),
                                                        b["py"].tolist(), b["np"].tolist(), b["tl"].tolist(),
                                                        b["i"].tolist()):
            by_worker[wid].append((seed, pid, py, npv, tlv))
    assert set(by_worker) == {0, 1}
    seeds = {w: {s for s, *_ in v} for w, v in by_worker.items()}
    assert len(seeds[0]) == len(seeds[1]) == 1
    assert next(iter(seeds[1])) == next(iter(seeds[0])) + 1  # base_seed + worker_id
    assert {pid for v in by_worker.values() for _, pid, *_ in v}.isdisjoint({os.getpid()})
    # every worker's random streams are seeded differently
    assert by_worker[0][0][2:] != by_worker[1][0][2:]
    # worker_init_fn ran in each worker before its first sample
    assert _batches_tensor(batches) == [[float(i)] * 2 for i in range(8)]
    # the same generator seed gives the same worker seeds and draws
    again = list(DataLoader(WorkerEcho(8), batch_size=2, num_workers=2, generator=tl.Generator().manual_seed(1),
                            worker_init_fn=_init_fn))
    assert [b["tl"].tolist() for b in again] == [b["tl"].tolist() for b in batches]


def _batches_tensor(batches):
    return [row for b in batches for row in _np(b["t"]).tolist()]


def _init_fn(worker_id):
    info = get_worker_info()
    assert info is not None and info.id == worker_id and info.num_workers == 2
    assert isinstance(info.dataset, WorkerEcho)


def test_generate_state_matches_torch(torch):
    from tensorlab.utils.data._utils.worker import _generate_state
    from torch.utils.data._utils.worker import _generate_state as theirs
    for base, wid in [(0, 0), (12345678901234, 3), (2 ** 63 - 1, 7)]:
        assert _generate_state(base, wid) == theirs(base, wid)


def test_iterable_dataset_with_workers_replicates_unless_sharded():
    dup = sorted(DataLoader(Stream(5), batch_size=None, num_workers=2))
    assert dup == sorted(list(range(5)) * 2)  # each worker iterates the whole dataset
    shard = DataLoader(Stream(9, shard=True), batch_size=2, num_workers=2)
    vals = sorted(v for b in shard for v in b.tolist())
    assert vals == list(range(9))


def test_iterable_len_warning_mentions_workers():
    dl = DataLoader(Stream(3), batch_size=None, num_workers=2)
    assert len(dl) == 3
    with pytest.warns(UserWarning, match="For multiprocessing data-loading, this could be caused by not properly"):
        assert len(list(dl)) == 6


def test_persistent_workers_reused_across_epochs():
    dl = DataLoader(WorkerEcho(6), batch_size=3, num_workers=2, persistent_workers=True, prefetch_factor=1)
    p1 = {p for b in dl for p in b["pid"].tolist()}
    it = dl._iterator
    p2 = {p for b in dl for p in b["pid"].tolist()}
    assert p1 == p2 and len(p1) == 2 and dl._iterator is it
    assert [row for b in dl for row in b["i"].tolist()] == list(range(6))
    it._shutdown_workers()
    assert all(not w.is_alive() for w in it._workers)
    # without persistence each epoch starts new processes
    dl = DataLoader(WorkerEcho(4), batch_size=2, num_workers=1)
    assert {p for b in dl for p in b["pid"].tolist()}.isdisjoint({p for b in dl for p in b["pid"].tolist()})


class Slow(Dataset):
    def __getitem__(self, i):
        time.sleep(1)
        return i

    def __len__(self):
        return 2


def test_timeout():
    dl = DataLoader(Slow(), num_workers=1, timeout=0.2)
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        next(iter(dl))


def test_timeout_needs_workers(torch):
    for mod in (torch.utils.data, D):
        with pytest.raises(AssertionError, match="_SingleProcessDataLoaderIter requires timeout == 0"):
            next(iter(mod.DataLoader(Squares(2), timeout=1)))


class Faulty(Dataset):
    def __getitem__(self, i):
        if i == 3:
            raise ValueError("bad sample 3")
        if i == 4:
            raise KeyError("missing")
        return i

    def __len__(self):
        return 6


def test_worker_exceptions_reraised_with_origin():
    it = iter(DataLoader(Faulty(), batch_size=None, num_workers=2))
    assert [next(it) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(ValueError, match=r"Caught ValueError in DataLoader worker process 1\.\nOriginal Traceback") \
            as e:
        next(it)
    assert "bad sample 3" in str(e.value)
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        next(it)
    assert next(it) == 5
    with pytest.raises(StopIteration):
        next(it)


def test_worker_init_fn_exception_reraised():
    def bad_init(worker_id):
        raise RuntimeError(f"init failed in {worker_id}")

    with pytest.raises(RuntimeError, match="Caught RuntimeError in DataLoader worker process 0"):
        list(DataLoader(Squares(2), num_workers=1, worker_init_fn=bad_init))


def test_dead_worker_detected():
    class Dies(Dataset):
        def __getitem__(self, i):
            os._exit(3)

        def __len__(self):
            return 1

    from tensorlab.utils.data import _utils
    old, _utils.MP_STATUS_CHECK_INTERVAL = _utils.MP_STATUS_CHECK_INTERVAL, 0.2
    try:
        dl = DataLoader(Dies(), num_workers=1)
        dl_iter = iter(dl)
        with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
            next(dl_iter)
    finally:
        _utils.MP_STATUS_CHECK_INTERVAL = old


def test_too_many_workers_warns(torch):
    n = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()) + 1
    with pytest.warns(UserWarning, match=f"This DataLoader will create {n} worker processes in total") as ours:
        DataLoader(Squares(2), num_workers=n)
    with pytest.warns(UserWarning) as theirs:
        torch.utils.data.DataLoader(Squares(2), num_workers=n)
    assert str(ours[0].message) == str(theirs[0].message)
    assert ours[0].filename == __file__


def test_iterators_do_not_pickle():
    import pickle
    with pytest.raises(NotImplementedError, match="cannot be pickled"):
        pickle.dumps(iter(DataLoader(Squares(2))))


def test_tensors_pickle_across_processes(device):
    import pickle
    t = tl.arange(6, device=device).float().reshape(2, 3)[:, 1:]
    t.requires_grad_(True)
    back = pickle.loads(pickle.dumps(t))
    assert back.device.type == device and back.requires_grad and back.dtype == tl.float32
    assert _np(back).tolist() == [[1.0, 2.0], [4.0, 5.0]]


# -- pin_memory --------------------------------------------------------------------------------------
def test_pin_memory_without_cuda_warns_like_torch(torch):
    if tl.cuda.device_count() > 0:
        pytest.skip("CUDA (or its emulation) is available: batches are pinned")
    msg = "'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used."
    if not torch.accelerator.is_available():
        with pytest.warns(UserWarning) as w:
            next(iter(torch.utils.data.DataLoader(Squares(2), pin_memory=True)))
        assert msg in [str(x.message) for x in w]
    for workers in (0, 1):
        with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found") as w:
            batches = list(DataLoader(Squares(4), batch_size=2, pin_memory=True, num_workers=workers))
        assert [b.tolist() for b in batches] == [[0, 1], [4, 9]]
        assert not any(b.is_pinned() for b in batches)
        assert w[0].filename == __file__


def test_pin_memory_pins_batches(device):
    if device != "cuda":
        pytest.skip("pinned memory needs CUDA")
    ds = TensorDataset(tl.arange(8).float().reshape(4, 2), tl.arange(4))
    for workers in (0, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            batches = list(DataLoader(ds, batch_size=2, pin_memory=True, num_workers=workers))
        assert all(t.is_pinned() and t.device.type == "cpu" for b in batches for t in b)
        assert [_np(b[1]).tolist() for b in batches] == [[0, 1], [2, 3]]
        moved = batches[0][0].to(device, non_blocking=True)
        tl.cuda.synchronize()
        assert _np(moved).tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_spawn_context_pickles_dataset_and_tensors():
    # spawn: the dataset (tensors included) is pickled into fresh interpreters
    ds = TensorDataset(tl.arange(10).float().reshape(5, 2), tl.arange(5))
    dl = DataLoader(ds, batch_size=2, num_workers=1, multiprocessing_context="spawn")
    assert _batches(dl) == _batches(DataLoader(ds, batch_size=2))
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="teleport")
    with pytest.raises(TypeError, match="multiprocessing_context option should be a valid context object"):
        DataLoader(ds, num_workers=1, multiprocessing_context=3)


def test_prefetch_factor_bounds_outstanding_batches():
    dl = DataLoader(Squares(40), batch_size=2, num_workers=2, prefetch_factor=3)
    it = iter(dl)
    assert it._tasks_outstanding == 6 and it._send_idx == 6
    first = next(it)
    assert first.tolist() == [0, 1] and it._send_idx == 7 and it._send_idx - it._rcvd_idx == 6  # in flight or buffered
    assert [b.tolist() for b in it][-1] == [38 * 38, 39 * 39]
    assert DataLoader(Squares(2), num_workers=2).prefetch_factor == 2


def test_default_collate_keeps_the_device(device):
    batch = [{"x": tl.full((2,), float(i), device=device), "y": (tl.tensor(i, device=device), "s")} for i in range(3)]
    out = default_collate(batch)
    assert out["x"].device.type == device and tuple(out["x"].shape) == (3, 2)
    assert _np(out["x"]).tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    ys, ss = out["y"]
    assert ys.device.type == device and _np(ys).tolist() == [0, 1, 2] and ss == ("s", "s", "s")  # as torch: zip's tuple
    loader = DataLoader(TensorDataset(tl.arange(6, device=device)), batch_size=4, shuffle=True,
                        generator=tl.Generator().manual_seed(0))
    got = [b for (b,) in loader]
    assert all(b.device.type == device for b in got)
    assert sorted(v for b in got for v in _np(b).tolist()) == list(range(6))


def test_training_loop_matches_torch(device, torch):
    """DataLoader (worker processes) + nn + AdamW + OneCycleLR against torch, batch for batch: the same
    explicit batch order on both sides, so the final weights must agree."""
    from tensorlab import nn
    from tensorlab.optim.lr_scheduler import OneCycleLR
    rng = np.random.default_rng(0)
    X = rng.standard_normal((24, 3)).astype("float32")
    Y = rng.standard_normal((24, 2)).astype("float32")
    batches = [rng.permutation(24)[i:i + 6].tolist() for i in range(0, 24, 6)]
    model, tmodel = nn.Linear(3, 2), torch.nn.Linear(3, 2)
    with tl.no_grad():
        model.weight.copy_(tl.tensor(tmodel.weight.detach().numpy()))
        model.bias.copy_(tl.tensor(tmodel.bias.detach().numpy()))
    model.to(device)
    opt = tl.optim.AdamW(model.parameters(), lr=0.01)
    topt = torch.optim.AdamW(tmodel.parameters(), lr=0.01)
    sched = OneCycleLR(opt, max_lr=0.05, total_steps=8)
    tsched = torch.optim.lr_scheduler.OneCycleLR(topt, max_lr=0.05, total_steps=8)
    loader = DataLoader(TensorDataset(tl.tensor(X), tl.tensor(Y)), batch_sampler=batches, num_workers=2)
    tloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.tensor(X), torch.tensor(Y)),
                                          batch_sampler=batches)
    for _ in range(2):
        for (xb, yb), (txb, tyb) in zip(loader, tloader):
            loss = ((model(xb.to(device)) - yb.to(device)) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tloss = ((tmodel(txb) - tyb) ** 2).mean()
            topt.zero_grad()
            tloss.backward()
            topt.step()
            tsched.step()
            assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
            assert sched.get_last_lr() == pytest.approx(tsched.get_last_lr(), rel=1e-12)
    np.testing.assert_allclose(_np(model.weight), tmodel.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(_np(model.bias), tmodel.bias.detach().numpy(), rtol=1e-5, atol=1e-6)
