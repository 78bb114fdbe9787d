"""Run under mpiexec (2 ranks): DistributedDataParallel's no_sync, find_unused_parameters (globally
unused, used on one rank only, torch's error without detection and when an output is left out of
the loss), buffer broadcast before each forward, and the construction checks (parameter shapes
that differ across ranks, device_ids on a CPU module, no trainable parameter), and
DistributedSampler's defaults from the process group.
Usage: ddp_features.py DEVICE"""
from __future__ import annotations

import copy
import sys
import warnings

import numpy as np

import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.nn.parallel import DistributedDataParallel as DDP

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
F = tl.nn.functional


def batch(seed, n=8):
    rng = np.random.default_rng(seed)
    return (tl.tensor(rng.standard_normal((n, 5)).astype(np.float32), device=DEVICE),
            tl.tensor(rng.standard_normal((n, 2)).astype(np.float32), device=DEVICE))


class TwoHeads(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = tl.nn.Linear(5, 8)
        self.a = tl.nn.Linear(8, 2)
        self.b = tl.nn.Linear(8, 2)

    def forward(self, x, heads=("a",)):
        h = tl.tanh(self.trunk(x))
        outs = [getattr(self, k)(h) for k in heads]
        return outs[0] if len(outs) == 1 else tuple(outs)


def model(seed=0):
    tl.manual_seed(seed)
    return TwoHeads().to(DEVICE)


def grads(m):
    return {n: None if p.grad is None else p.grad.detach().cpu().numpy().copy() for n, p in m.named_parameters()}


def local_grads(m, x, y, heads=("a",)):
    """What one process gets for this batch (no communication)."""
    m = copy.deepcopy(m)
    out = m(x, heads)
    loss = sum(F.mse_loss(o, y) for o in (out if isinstance(out, tuple) else (out,)))
    loss.backward()
    return grads(m)


def close(a, b, what):
    assert (a is None) == (b is None), f"{what}: {a} vs {b}"
    if a is not None:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=what)


AB = ("a", "b")


def check_no_sync(rank, world):
    base = model()
    ddp = DDP(copy.deepcopy(base))
    (xa, ya), (xb, yb) = batch(1), batch(2)
    half = slice(rank * 4, rank * 4 + 4)
    with ddp.no_sync():
        sum(F.mse_loss(o, ya[half]) for o in ddp(xa[half], AB)).backward()
    mine = local_grads(base, xa[half], ya[half], AB)
    got = grads(ddp.module)
    for n in mine:  # inside no_sync: this rank's own gradient, no reduction
        close(got[n], mine[n], f"no_sync rank {rank} {n}")
    sum(F.mse_loss(o, yb[half]) for o in ddp(xb[half], AB)).backward()  # the synced step reduces the accumulated sums
    full_a, full_b = local_grads(base, xa, ya, AB), local_grads(base, xb, yb, AB)
    got = grads(ddp.module)
    for n in full_a:
        close(got[n], full_a[n] + full_b[n], f"after no_sync rank {rank} {n}")
    # a forward inside no_sync whose backward runs outside it still does not sync (torch's rule)
    ddp.zero_grad()
    with ddp.no_sync():
        out = ddp(xa[half], AB)
    sum(F.mse_loss(o, ya[half]) for o in out).backward()
    for n, g in grads(ddp.module).items():
        close(g, mine[n], f"forward in no_sync rank {rank} {n}")


def check_unused(rank, world):
    base = model()
    x, y = batch(3)
    half = slice(rank * 4, rank * 4 + 4)
    # b unused on every rank: its .grad stays None, the rest is averaged
    ddp = DDP(copy.deepcopy(base), find_unused_parameters=True)
    for step in range(2):
        ddp.zero_grad()
        F.mse_loss(ddp(x[half]), y[half]).backward()
        full = local_grads(base, x, y)
        got = grads(ddp.module)
        for n in full:
            close(got[n], full[n], f"unused everywhere, rank {rank} {n}")
        assert got["b.weight"] is None and got["b.bias"] is None
    # every parameter used although detection is on: torch's warning, once per process
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ddp_all = DDP(copy.deepcopy(base), find_unused_parameters=True)
        for step in range(2):
            sum(F.mse_loss(o, y[half]) for o in ddp_all(x[half], ("a", "b"))).backward()
    msgs = [i for i in w if "did not find any unused parameters" in str(i.message)]
    assert len(msgs) == 1 and issubclass(msgs[0].category, UserWarning), [str(i.message) for i in w]
    assert msgs[0].filename == __file__, msgs[0].filename  # attributed to the caller's line
    # b used on rank 1 only: every rank gets rank 1's gradient of b divided by the world size
    ddp = DDP(copy.deepcopy(base), find_unused_parameters=True)
    heads = ("a", "b") if rank == 1 else ("a",)
    out = ddp(x[half], heads)
    sum(F.mse_loss(o, y[half]) for o in (out if isinstance(out, tuple) else (out,))).backward()
    r1 = local_grads(base, x[4:8], y[4:8], ("a", "b"))
    got = grads(ddp.module)
    close(got["b.weight"], r1["b.weight"] / world, f"b used on rank 1 only, rank {rank}")
    close(got["b.bias"], r1["b.bias"] / world, f"b used on rank 1 only, rank {rank}")
    # without detection, an unused parameter: backward finishes, the next forward raises torch's error
    ddp = DDP(copy.deepcopy(base))
    F.mse_loss(ddp(x[half]), y[half]).backward()
    try:
        ddp(x[half])
    except RuntimeError as e:
        msg = str(e)
        assert "Expected to have finished reduction in the prior iteration" in msg, msg
        assert "find_unused_parameters=True" in msg, msg
        assert f"Parameter indices which did not receive grad for rank {rank}: 4 5" in msg, msg
        assert "b.weight, b.bias" in msg, msg
    else:
        raise AssertionError("no error for an unused parameter without find_unused_parameters")
    # with detection, an output left out of the loss: its parameters never get a gradient
    ddp = DDP(copy.deepcopy(base), find_unused_parameters=True)
    a, b = ddp(x[half], ("a", "b"))
    F.mse_loss(a, y[half]).backward()
    try:
        ddp(x[half])
    except RuntimeError as e:
        assert "Since `find_unused_parameters=True` is enabled" in str(e), str(e)
    else:
        raise AssertionError("no error for an output left out of the loss")


class WithNorm(tl.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tl.nn.Linear(5, 4)
        self.bn = tl.nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x))


def check_buffers(rank, world):
    tl.manual_seed(0)
    m = WithNorm().to(DEVICE)
    with tl.no_grad():
        m.bn.running_mean.fill_(float(rank + 1))  # rank 1 disagrees before wrapping
    seen = []
    m.register_forward_pre_hook(lambda mod, args: seen.append(mod.bn.running_mean.cpu().tolist()))
    ddp = DDP(m)
    assert m.bn.running_mean.cpu().tolist() == [1.0] * 4, "buffers not broadcast at construction"
    for step in range(3):
        x, _ = batch(10 + rank)  # each rank its own data: the running stats drift apart in forward
        ddp(x).sum().backward()
    pre = [tl.tensor(s, device=DEVICE) for s in seen]
    for s in pre:  # but every forward starts from rank 0's buffers
        gathered = [tl.zeros_like(s) for _ in range(world)]
        dist.all_gather(gathered, s)
        assert all(tl.equal(g, gathered[0]) for g in gathered), "buffers not synced before forward"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        tl.manual_seed(0)
        m2 = WithNorm().to(DEVICE)
        with tl.no_grad():
            m2.bn.running_mean.fill_(float(rank + 1))
        DDP(m2, broadcast_buffers=False)
    fw = [i for i in w if issubclass(i.category, FutureWarning) and "broadcast_buffers" in str(i.message)]
    assert len(fw) == 1 and fw[0].filename == __file__, [(str(i.message), i.filename) for i in w]
    assert m2.bn.running_mean.cpu().tolist() == [float(rank + 1)] * 4  # broadcast_buffers=False: not at init either
    tl.manual_seed(0)
    m3 = WithNorm().to(DEVICE)
    with tl.no_grad():
        m3.bn.running_mean.fill_(float(rank + 1))
    d3 = DDP(m3, forward_sync_buffers=False)
    assert m3.bn.running_mean.cpu().tolist() == [1.0] * 4  # forward_sync_buffers=False still syncs at init
    assert d3.broadcast_buffers is False


def check_construction(rank, world):
    tl.manual_seed(0)
    m = tl.nn.Linear(4, 3 + rank).to(DEVICE)  # the ranks disagree on the shape
    try:
        DDP(m)
    except RuntimeError as e:
        other = 1 - rank
        assert "DDP expects same model across all ranks" in str(e), str(e)
        assert f"rank {other}" in str(e) and f"Rank {rank}" in str(e), str(e)
    else:
        raise AssertionError("no error for parameters whose shapes differ across ranks")
    extra = tl.nn.Sequential(*[tl.nn.Linear(2, 2) for _ in range(1 + rank)]).to(DEVICE)
    try:
        DDP(extra)
    except RuntimeError as e:
        assert f"Rank {rank} has {2 * (1 + rank)} params, while rank {1 - rank} has inconsistent " \
               f"{2 * (2 - rank)} params." in str(e), str(e)
    else:
        raise AssertionError("no error for parameter counts that differ across ranks")
    frozen = tl.nn.Linear(2, 2).to(DEVICE).requires_grad_(False)
    try:
        DDP(frozen)
    except RuntimeError as e:
        assert "doesn't have any parameter that requires a gradient" in str(e)
    else:
        raise AssertionError("no error for a module without trainable parameters")
    if DEVICE == "cuda":  # device_ids: inputs are moved to the module's device, as torch's _to_kwargs
        tl.manual_seed(0)
        ddp = DDP(tl.nn.Linear(2, 2).to(DEVICE), device_ids=[0])
        assert ddp.device_ids == [0] and ddp.output_device == 0
        out = ddp(tl.ones(3, 2))
        assert out.device.type == "cuda", out.device
        out.sum().backward()
    if DEVICE == "cpu":
        try:
            DDP(tl.nn.Linear(2, 2), device_ids=[0])
        except ValueError as e:
            assert "device_ids and output_device arguments only work with" in str(e), str(e)
        else:
            raise AssertionError("no error for device_ids on a CPU module")


def check_sampler(rank, world):
    from tensorlab.utils.data import DistributedSampler
    s = DistributedSampler(list(range(11)), shuffle=False)  # rank and world size from the default group
    assert (s.rank, s.num_replicas) == (rank, world)
    mine = list(s)
    gathered = [tl.zeros(len(mine), dtype=tl.int64) for _ in range(world)]
    dist.all_gather(gathered, tl.tensor(mine))
    assert sorted(sum((g.tolist() for g in gathered), [])) == sorted(list(range(11)) + [0])


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2
    for check in (check_no_sync, check_unused, check_buffers, check_construction, check_sampler):
        check(rank, world)
        dist.barrier()
    print(f"rank {rank}: ddp_features OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
