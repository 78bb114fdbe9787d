"""Run under mpiexec (2 ranks): DistributedDataParallel training of a small MLP, each rank on its
half of every batch, must give the parameters one process gets on the whole batch (float32
tolerance), for several SGD steps; with every parameter in its own bucket (tiny bucket_cap_mb) and
with gradient_as_bucket_view=True the parameters must be bit-identical to the default run. Also
checks the broadcast of rank 0's parameters at construction, that reductions start during
backward (a bucket's all_reduce is launched before the last gradient is ready), state_dict, and
(on 4 ranks) two DDPs over two process groups side by side.
Usage: ddp_train.py DEVICE"""
from __future__ import annotations

import sys

import numpy as np

import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.nn.parallel import DistributedDataParallel as DDP

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
STEPS, BATCH = 4, 8


def mlp(seed):
    tl.manual_seed(seed)
    return tl.nn.Sequential(tl.nn.Linear(6, 16), tl.nn.Tanh(), tl.nn.Linear(16, 16), tl.nn.Tanh(),
                            tl.nn.Linear(16, 3)).to(DEVICE)


def data(step):
    rng = np.random.default_rng(100 + step)
    return (tl.tensor(rng.standard_normal((BATCH, 6)).astype(np.float32), device=DEVICE),
            tl.tensor(rng.standard_normal((BATCH, 3)).astype(np.float32), device=DEVICE))


def params(m):
    return [p.detach().cpu().numpy().copy() for p in m.parameters()]


def reference():
    model = mlp(0)
    opt = tl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    out = []
    for step in range(STEPS):
        x, y = data(step)
        opt.zero_grad()
        tl.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        out.append(params(model))
    return out


def train(rank, world, **kw):
    model = mlp(rank)  # rank 1 starts from other weights: DDP must broadcast rank 0's
    ddp = DDP(model, **kw)
    opt = tl.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    out = []
    share = BATCH // world
    for step in range(STEPS):
        x, y = data(step)
        opt.zero_grad()
        mine = slice(rank * share, (rank + 1) * share)
        tl.nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()
        opt.step()
        out.append(params(model))
    return ddp, out


def check_overlap(rank, world):
    """With one parameter per bucket, bucket 0's all_reduce must start before the last gradient
    of the backward pass is ready: communication overlaps the rest of backward."""
    model = mlp(0)
    events = []
    for p in model.parameters():  # registered before DDP's hooks: "ready" comes before DDP reacts
        p.register_post_accumulate_grad_hook(lambda p: events.append("ready"))
    ddp = DDP(model, bucket_cap_mb=1e-9)
    real = ddp.reducer.dist

    class Spy:
        ReduceOp = real.ReduceOp

        def __getattr__(self, name):
            return getattr(real, name)

        def all_reduce(self, t, **kw):
            events.append("launch")
            return real.all_reduce(t, **kw)
    ddp.reducer.dist = Spy()
    n = len(list(model.parameters()))
    for step in range(3):
        events.clear()
        x, y = data(0)
        tl.nn.functional.mse_loss(ddp(x), y).backward()
        if step == 0:  # torch 2.13: one bucket in the first iteration, then buckets in the ready order
            assert events == ["ready"] * n + ["launch"], events
        else:
            assert events == ["ready", "launch"] * n, events
    assert ddp.reducer.bucket_indices == [[i] for i in reversed(range(n))], ddp.reducer.bucket_indices


class Cast(tl.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x):
        return x.to(self.dtype)


def check_mixed_dtypes(rank, world):
    """float64 and float32 parameters: one bucket per dtype (and several per dtype with a small
    cap), each reduced in its own dtype; DDP on half batches == one process on the whole batch."""
    def build():
        tl.manual_seed(3)
        return tl.nn.Sequential(tl.nn.Linear(6, 16).double(), tl.nn.Tanh(), Cast(tl.float32), tl.nn.Linear(16, 16),
                                tl.nn.Tanh(), Cast(tl.float64), tl.nn.Linear(16, 3).double()).to(DEVICE)
    for cap in (None, 0.0005):
        model, ref = build(), build()
        ddp = DDP(model, bucket_cap_mb=cap)
        opt, ref_opt = tl.optim.SGD(ddp.parameters(), lr=0.1), tl.optim.SGD(ref.parameters(), lr=0.1)
        share = BATCH // world
        for step in range(3):
            x, y = data(step)
            x, y = x.double(), y.double()
            mine = slice(rank * share, (rank + 1) * share)
            opt.zero_grad()
            tl.nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()
            opt.step()
            ref_opt.zero_grad()
            tl.nn.functional.mse_loss(ref(x), y).backward()
            ref_opt.step()
        buckets = ddp.reducer.bucket_indices
        kinds = [{str(list(model.parameters())[i].dtype) for i in b} for b in buckets]
        assert all(len(k) == 1 for k in kinds), kinds  # one dtype per bucket
        assert len(buckets) == (2 if cap is None else 3), buckets  # 524 B: [[3, 2], [5, 4, 1], [0]]
        for k, (p, q) in enumerate(zip(model.parameters(), ref.parameters())):
            assert p.dtype == q.dtype
            np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"mixed dtypes rank {rank} cap {cap} param {k}")


def check_subgroups(rank, world):
    """Two DDPs side by side on 4 ranks: {0, 1} and {2, 3}, each over its own process group, each
    trained on its own data; a group's rank 0 (global rank 0 or 2) is the source of its weights."""
    groups = [dist.new_group([0, 1]), dist.new_group([2, 3])]  # every rank creates every group, as torch
    pair = rank // 2
    model = mlp(rank)
    ddp = DDP(model, process_group=groups[pair])
    ref = mlp(2 * pair)  # the group's first rank's initial weights
    opt = tl.optim.SGD(ddp.parameters(), lr=0.1)
    ref_opt = tl.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        x, y = data(10 * pair + step)
        half = slice((rank % 2) * 4, (rank % 2) * 4 + 4)
        opt.zero_grad()
        tl.nn.functional.mse_loss(ddp(x[half]), y[half]).backward()
        opt.step()
        ref_opt.zero_grad()
        tl.nn.functional.mse_loss(ref(x), y).backward()
        ref_opt.step()
    for k, (p, q) in enumerate(zip(params(model), params(ref))):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6, err_msg=f"subgroup rank {rank} param {k}")


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ref = reference()
    base_ddp, base = train(rank, world)
    for step, (a, b) in enumerate(zip(base, ref)):
        for k, (p, q) in enumerate(zip(a, b)):
            np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6, err_msg=f"rank {rank} step {step} param {k}")
    assert len(base_ddp.reducer.buckets) == 1  # small model: one bucket (25 MiB cap) after the rebuild
    for kw in ({"bucket_cap_mb": 1e-9}, {"bucket_cap_mb": 0.0005}, {"gradient_as_bucket_view": True},
               {"gradient_as_bucket_view": True, "bucket_cap_mb": 1e-9}, {"find_unused_parameters": True},
               {"static_graph": True}):
        ddp, got = train(rank, world, **kw)
        for step, (a, b) in enumerate(zip(got, base)):
            for k, (p, q) in enumerate(zip(a, b)):
                assert np.array_equal(p, q), f"rank {rank} {kw} step {step} param {k}: {np.abs(p - q).max()}"
        if kw.get("bucket_cap_mb") == 1e-9:
            assert len(ddp.reducer.buckets) == 6
        if kw.get("bucket_cap_mb") == 0.0005:  # 524 bytes: several parameters per bucket, not all
            assert 1 < len(ddp.reducer.buckets) < 6, ddp.reducer.bucket_indices
        if kw.get("gradient_as_bucket_view"):
            for i, p in enumerate(ddp.module.parameters()):
                assert p.grad.untyped_storage().data_ptr() == ddp.reducer._view(i).untyped_storage().data_ptr()
    # every rank ends with the same parameters
    for p in base_ddp.module.parameters():
        gathered = [tl.zeros_like(p) for _ in range(world)]
        dist.all_gather(gathered, p.detach())
        assert all(tl.equal(g, gathered[0]) for g in gathered)
    check_overlap(rank, world)
    check_mixed_dtypes(rank, world)
    if world == 4:
        check_subgroups(rank, world)
    sd = base_ddp.state_dict()
    assert list(sd) == ["module." + k for k in base_ddp.module.state_dict()], list(sd)
    plain = mlp(5)
    plain.load_state_dict({k[len("module."):]: v for k, v in sd.items()})
    assert all(tl.equal(a, b) for a, b in zip(plain.parameters(), base_ddp.module.parameters()))
    dist.barrier()
    print(f"rank {rank}: ddp_train OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
