"""tensorlab.utils.data's worker-process iterator and its helpers, beyond tests/test_data.py:
batch order with sharded IterableDatasets against torch's workers, persistent workers across
restarted and abandoned epochs, in_order=False, worker-init failures, container rebuilding in
default_collate / default_convert / pin_memory, ExceptionWrapper and the datasets against torch."""
from __future__ import annotations

import collections
import os
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab.utils import data as D
from tensorlab.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info
from tensorlab.utils.data._utils import ExceptionWrapper
from tensorlab.utils.data._utils.pin_memory import pin_memory


def _rows(batches):
    return [b if isinstance(b, int) else b.tolist() for b in batches]


class Shards(IterableDataset):
    """0..n-1, split between workers by stride (worker k reads k, k + W, ...)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


def _torch_shards(torch, n):
    class TorchShards(torch.utils.data.IterableDataset):
        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            start, step = (0, 1) if info is None else (info.id, info.num_workers)
            return iter(range(start, n, step))
    return TorchShards()


@pytest.mark.parametrize("kw", [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
                                dict(batch_size=2, prefetch_factor=1)])
def test_sharded_stream_order_matches_torch_workers(torch, kw):
    # the workers' streams have different lengths (6 and 5): the order in which batches
    # come out, and where each worker's stream ends, must be torch's
    ours = _rows(DataLoader(Shards(11), num_workers=2, **kw))
    theirs = _rows(torch.utils.data.DataLoader(_torch_shards(torch, 11), num_workers=2, **kw))
    assert ours == theirs
    assert sorted(v for b in ours for v in ([b] if isinstance(b, int) else b)) == (
        list(range(11)) if not kw.get("drop_last") else sorted(v for b in theirs for v in b))


def test_persistent_workers_restart_streams_each_epoch(torch):
    dl = DataLoader(Shards(7), batch_size=2, num_workers=2, persistent_workers=True)
    tdl = torch.utils.data.DataLoader(_torch_shards(torch, 7), batch_size=2, num_workers=2, persistent_workers=True)
    expected = _rows(tdl)
    for _ in range(3):
        assert _rows(dl) == expected
    it = dl._iterator
    assert all(w.is_alive() for w in it._workers)  # exhausted but kept for the next epoch
    it._shutdown_workers()
    assert not any(w.is_alive() for w in it._workers)


class Pids(Dataset):
    def __getitem__(self, i):
        return {"i": i, "pid": os.getpid()}

    def __len__(self):
        return 12


def test_persistent_workers_after_an_abandoned_epoch():
    dl = DataLoader(Pids(), batch_size=2, num_workers=2, persistent_workers=True)
    first = next(iter(dl))  # leave the epoch with orders still in flight
    assert first["i"].tolist() == [0, 1]
    full = list(dl)  # the stale answers of the abandoned epoch must not leak into this one
    assert [v for b in full for v in b["i"].tolist()] == list(range(12))
    pids = {p for b in full for p in b["pid"].tolist()}
    assert len(pids) == 2 and set(first["pid"].tolist()) <= pids  # the same two processes
    dl._iterator._shutdown_workers()


class Flaky(Dataset):
    def __getitem__(self, i):
        if i % 4 == 3:
            raise ValueError(f"bad {i}")
        return i

    def __len__(self):
        return 10


def test_unordered_delivery_keeps_every_batch_and_error():
    it = iter(DataLoader(Flaky(), batch_size=None, num_workers=2, in_order=False, prefetch_factor=1))
    values, errors = [], 0
    while True:
        try:
            values.append(next(it))
        except ValueError as e:
            assert "Caught ValueError in DataLoader worker process" in str(e)
            errors += 1
        except StopIteration:
            break
    assert sorted(values) == [0, 1, 2, 4, 5, 6, 8, 9] and errors == 2
    unordered = _rows(DataLoader(Shards(9), batch_size=2, num_workers=2, in_order=False))
    assert sorted(v for b in unordered for v in b) == list(range(9))


def _failing_init(worker_id):
    raise OSError(f"cannot open shard {worker_id}")


def test_worker_init_failure_answers_every_order():
    # our choice where torch is unclear: the failure answers every order of that worker, so no
    # batch is ever read from a worker that did not initialise
    it = iter(DataLoader(Pids(), batch_size=3, num_workers=1, worker_init_fn=_failing_init))
    for _ in range(2):
        with pytest.raises(OSError, match=r"Caught OSError in DataLoader worker process 0\.\nOriginal Traceback"):
            next(it)
    it._shutdown_workers()


def test_shut_down_iterator_refuses_to_wait():
    it = iter(DataLoader(Pids(), batch_size=2, num_workers=1))
    next(it)
    it._shutdown_workers()
    with pytest.raises(RuntimeError, match="its worker processes have been shut down"):
        next(it)


# -- containers ------------------------------------------------------------------------------------
class _Holder:
    """Read-only access to a stored container (the part Frozen and Row share)."""

    def __init__(self, items):
        self._items = items

    def __getitem__(self, key):
        return self._items[key]

    def __len__(self):
        return len(self._items)


class Frozen(_Holder, collections.abc.Mapping):
    """An immutable mapping built from a dict."""

    def __init__(self, items):
        super().__init__(dict(items))

    def __iter__(self):
        return iter(self._items)


class Stubborn(Frozen):
    """A mapping whose constructor does not take a dict: rebuilt as a plain dict."""

    def __init__(self, a, b):
        super().__init__({"a": a, "b": b})


class Row(_Holder, collections.abc.Sequence):
    """An immutable sequence built from a list."""

    def __init__(self, items):
        super().__init__(list(items))


def _plain(value):
    """A comparable description of a (nested) result: container type names and leaf values."""
    if hasattr(value, "numpy") or isinstance(value, np.ndarray):
        array = value.numpy() if hasattr(value, "numpy") else value
        return ("array", str(array.dtype), array.tolist())
    if isinstance(value, collections.abc.Mapping):
        extra = getattr(value, "default_factory", None)
        return (type(value).__name__, extra, [(k, _plain(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple, Row, collections.UserList)):
        return (type(value).__name__, [_plain(v) for v in value])
    return (type(value).__name__, value)


def _container_samples(i):
    dd = collections.defaultdict(list)
    dd["x"] = np.float32(i)
    return {"frozen": Frozen({"v": i}), "stubborn": Stubborn(i, 2.0 * i), "row": Row([i, np.int16(i)]),
            "user": collections.UserList([np.arange(2) + i]), "dd": dd}


def test_collate_and_convert_rebuild_containers_like_torch(torch):
    ours = D.default_collate([_container_samples(i) for i in range(3)])
    theirs = torch.utils.data.default_collate([_container_samples(i) for i in range(3)])
    assert _plain(ours) == _plain(theirs)
    assert isinstance(ours["frozen"], Frozen) and type(ours["stubborn"]) is dict
    assert ours["dd"].default_factory is list
    sample = _container_samples(5)
    assert _plain(D.default_convert(sample)) == _plain(torch.utils.data.default_convert(sample))


class Pinnable:
    def __init__(self, v):
        self.v = v

    def pin_memory(self):
        return ("pinned", self.v)


Pair = collections.namedtuple("Pair", "left right")


def test_pin_memory_walks_containers_like_torch(torch):
    from torch.utils.data._utils.pin_memory import pin_memory as torch_pin
    dd = collections.defaultdict(int, k=Pinnable(1))
    data = {"t": (Pinnable(2), "s", b"b"), "p": Pair(Pinnable(3), 4), "l": [Pinnable(5), [6]], "frozen":
            Frozen({"z": Pinnable(7)}), "stubborn": Stubborn(Pinnable(8), 9), "row": Row([Pinnable(10)]), "dd": dd}
    assert _plain(pin_memory(data)) == _plain(torch_pin(data))
    assert isinstance(pin_memory(data)["p"], Pair)


class TwoArgError(Exception):
    def __init__(self, code, text):
        super().__init__(code, text)


class MessageOnly(Exception):
    message = "keyword"

    def __init__(self, *, message):
        super().__init__(message)


@pytest.mark.parametrize("error", [ValueError("v"), KeyError("k\nline"), TwoArgError(3, "t"),
                                   MessageOnly(message="m")])
def test_exception_wrapper_reraises_like_torch(torch, error):
    from torch._utils import ExceptionWrapper as TorchWrapper
    try:
        raise error
    except Exception:
        ours = ExceptionWrapper(where="in DataLoader worker process 4")
        theirs = TorchWrapper(where="in DataLoader worker process 4")
    with pytest.raises(Exception) as got:
        ours.reraise()
    with pytest.raises(Exception) as want:
        theirs.reraise()
    assert type(got.value) is type(want.value)
    assert str(got.value) == str(want.value)
    assert str(got.value).startswith(f"Caught {type(error).__name__} in DataLoader worker process 4.\nOriginal "
                                     "Traceback")


# -- datasets ----------------------------------------------------------------------------------------
class Items(Dataset):
    def __init__(self, values):
        self.values = list(values)

    def __getitem__(self, i):
        return self.values[i]

    def __len__(self):
        return len(self.values)


def test_datasets_match_torch(torch):
    parts = [Items("abc"), Items(""), Items("de"), Items("f")]
    ours, theirs = D.ConcatDataset(parts), torch.utils.data.ConcatDataset(parts)
    assert ours.cumulative_sizes == theirs.cumulative_sizes == D.ConcatDataset.cumsum(parts)
    assert [ours[i] for i in range(-6, 6)] == [theirs[i] for i in range(-6, 6)]
    for bad in (6, -7):
        with pytest.raises((IndexError, ValueError)) as t:
            theirs[bad]
        with pytest.raises(type(t.value)) as o:
            ours[bad]
        assert str(o.value) == str(t.value)
    x, y = Items(range(5)), Items("vwxyz")
    for args, kwargs in (((x, y), {}), ((), {"x": x, "y": y})):
        o, t = D.StackDataset(*args, **kwargs), torch.utils.data.StackDataset(*args, **kwargs)
        assert o[3] == t[3] and o.__getitems__([4, 0, 0]) == t.__getitems__([4, 0, 0]) and len(o) == len(t)
        assert o.__getitems__([]) == t.__getitems__([])
    for args, kwargs in (((x,), {"y": y}), ((), {})):
        with pytest.raises(ValueError) as t:
            torch.utils.data.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError) as o:
            D.StackDataset(*args, **kwargs)
        assert str(o.value) == str(t.value)
    sub, tsub = D.Subset(ours, [5, 0, 3]), torch.utils.data.Subset(theirs, [5, 0, 3])
    assert sub.__getitems__([2, 0]) == tsub.__getitems__([2, 0]) and sub[1] == tsub[1]
    chained = D.ChainDataset([Shards(3), Shards(2)])
    assert list(chained) == [0, 1, 2, 0, 1]
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(D.ChainDataset([Shards(1), Items("a")]))


def test_batch_sampler_and_random_split_sizes_match_torch(torch):
    for n in range(0, 12):
        for bs in (1, 3, 5):
            for drop in (False, True):
                o = D.BatchSampler(range(n), bs, drop)
                t = torch.utils.data.BatchSampler(range(n), bs, drop)
                assert list(o) == list(t) and len(o) == len(t)
    for n, fracs in [(7, [0.5, 0.5]), (10, [0.1, 0.2, 0.7]), (3, [0.2] * 5), (13, [1.0])]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ours = D.random_split(Items(range(n)), fracs, generator=tl.Generator().manual_seed(0))
        assert [str(w.message) for w in caught] == [f"Length of split at index {i} is 0. This might result in an "
                                                    "empty dataset." for i in ((3, 4) if n == 3 else ())]
        theirs = torch.utils.data.random_split(Items(range(n)), fracs, generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in ours] == [len(p) for p in theirs]
        assert sorted(i for p in ours for i in p.indices) == list(range(n))


# -- pinning with workers ----------------------------------------------------------------------------
class Unpinnable:
    def pin_memory(self):
        raise MemoryError("no page-locked memory left")


class PinMix(Dataset):
    """Tensor rows, and at index 3 an object whose pinning fails."""

    def __getitem__(self, i):
        return Unpinnable() if i == 3 else tl.full((2,), float(i))

    def __len__(self):
        return 6


def test_pinning_thread_with_persistent_unordered_workers(device):
    dl = DataLoader(D.TensorDataset(tl.arange(12).float().reshape(6, 2)), batch_size=2, num_workers=2,
                    pin_memory=True, persistent_workers=True, in_order=False)
    pinning = tl.cuda.device_count() > 0
    for epoch in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batches = [b for (b,) in dl]
        # Python 3.12+ warns when a process with threads forks its workers (on a GPU the CUDA driver's
        # own threads, as under torch's DataLoader: seen on an H200); that one is not ours to count
        caught = [w for w in caught if "use of fork() may lead to deadlocks" not in str(w.message)]
        # without CUDA: torch's "no accelerator" warning when the (persistent) iterator is made, no pinning
        assert len(caught) == (0 if pinning or epoch else 1)
        assert all(b.is_pinned() == pinning and b.device.type == "cpu" for b in batches)
        moved = sorted(_rows(b.to(device, non_blocking=pinning).cpu() for b in batches))
        assert moved == [[[0.0, 1.0], [2.0, 3.0]], [[4.0, 5.0], [6.0, 7.0]], [[8.0, 9.0], [10.0, 11.0]]]
    dl._iterator._shutdown_workers()
    if pinning:
        it = iter(DataLoader(PinMix(), batch_size=None, num_workers=2, pin_memory=True))
        assert [next(it).tolist() for _ in range(3)] == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
        with pytest.raises(MemoryError, match="Caught MemoryError in pin memory thread for device 0"):
            next(it)
        assert next(it).tolist() == [4.0, 4.0]
