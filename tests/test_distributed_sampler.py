"""DistributedSampler: torch's padding and indexing exactly (unshuffled index lists equal torch's;
shuffled ones are torch's positions mapped through tensorlab's permutation), set_epoch, seeds,
drop_last, the rank checks, and use inside a DataLoader."""
from __future__ import annotations

import pytest

import tensorlab as tl
from tensorlab.utils.data import DataLoader, DistributedSampler, TensorDataset


class Sized:
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


CASES = [(n, r, drop) for n in (0, 1, 2, 3, 5, 7, 10, 16, 17) for r in (1, 2, 3, 4, 8) for drop in (False, True)
         if n > 0 or drop]


def _all(n, replicas, **kw):
    return [list(DistributedSampler(Sized(n), num_replicas=replicas, rank=r, **kw)) for r in range(replicas)]


@pytest.mark.parametrize("n,replicas,drop_last", CASES)
def test_unshuffled_matches_torch(torch, n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    for r in range(replicas):
        ours = DistributedSampler(Sized(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(Sized(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs) == len(list(ours))
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)


@pytest.mark.parametrize("n,replicas,drop_last", [c for c in CASES if c[0] > 0])
def test_shuffled_is_torchs_indexing_over_our_permutation(torch, n, replicas, drop_last):
    from torch.utils.data.distributed import DistributedSampler as TorchSampler
    seed, epoch = 3, 2
    g = tl.Generator()
    g.manual_seed(seed + epoch)
    perm = tl.randperm(n, generator=g).tolist()
    for r in range(replicas):
        ours = DistributedSampler(Sized(n), num_replicas=replicas, rank=r, seed=seed, drop_last=drop_last)
        ours.set_epoch(epoch)
        positions = list(TorchSampler(Sized(n), num_replicas=replicas, rank=r, shuffle=False, drop_last=drop_last))
        assert list(ours) == [perm[p] for p in positions]


def test_exact_values_without_torch():
    # torch's documented scheme: pad by repeating the start, then rank r takes r, r + R, r + 2R, ...
    assert _all(10, 4, shuffle=False) == [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]]
    assert _all(10, 4, shuffle=False, drop_last=True) == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert _all(2, 5, shuffle=False) == [[0], [1], [0], [1], [0]]
    assert _all(3, 8, shuffle=False) == [[0], [1], [2], [0], [1], [2], [0], [1]]


@pytest.mark.parametrize("n,replicas", [(10, 3), (17, 4), (64, 8)])
def test_shuffled_shares_partition_the_padded_dataset(n, replicas):
    parts = _all(n, replicas, seed=7)
    assert all(len(p) == -(-n // replicas) for p in parts)
    flat = [i for p in parts for i in p]
    assert set(flat) == set(range(n))  # every sample is seen
    assert len(flat) - len(set(flat)) == len(flat) - n  # only the padding repeats
    dropped = _all(n, replicas, seed=7, drop_last=True)
    flat = [i for p in dropped for i in p]
    assert len(flat) == len(set(flat)) == (n // replicas) * replicas  # disjoint, the tail dropped


def test_epochs_and_seeds():
    a = DistributedSampler(Sized(50), num_replicas=2, rank=0, seed=1)
    b = DistributedSampler(Sized(50), num_replicas=2, rank=1, seed=1)
    e0 = list(a)
    assert list(a) == e0  # same epoch, same order
    assert sorted(e0 + list(b)) == list(range(50))  # the two ranks draw the same permutation
    a.set_epoch(1)
    b.set_epoch(1)
    e1 = list(a)
    assert e1 != e0 and sorted(e1 + list(b)) == list(range(50))
    other = DistributedSampler(Sized(50), num_replicas=2, rank=0, seed=2)
    assert list(other) != e0
    assert a.epoch == 1 and len(a) == 25


@pytest.mark.parametrize("rank", [-1, 2, 5])
def test_bad_rank(rank):
    with pytest.raises(ValueError, match=r"Invalid rank .*interval \[0, 1\]"):
        DistributedSampler(Sized(4), num_replicas=2, rank=rank)


def test_in_a_dataloader(device):
    x = tl.arange(12, dtype=tl.float32, device=device)
    ds = TensorDataset(x)
    seen = []
    for r in range(3):
        loader = DataLoader(ds, batch_size=2, sampler=DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False))
        batches = [b[0] for b in loader]
        assert [len(b) for b in batches] == [2, 2]
        assert all(b.device.type == tl.device(device).type for b in batches)
        seen += [v for b in batches for v in b.tolist()]
    assert sorted(seen) == list(map(float, range(12)))
    assert tl.utils.data.distributed.DistributedSampler is DistributedSampler


def test_defaults_need_a_process_group():
    import tensorlab.distributed as dist
    if dist.is_initialized():
        pytest.skip("a process group is open in this process")
    with pytest.raises((ValueError, RuntimeError), match="process group|distributed package"):
        DistributedSampler(Sized(4))
    # with rank and world size given, no process group is needed
    assert list(DistributedSampler(Sized(4), num_replicas=2, rank=1, shuffle=False)) == [1, 3]
