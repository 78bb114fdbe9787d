"""Run under mpiexec (1, 2 or 4 ranks): ZeroRedundancyOptimizer against a plain optimizer over
the same parameters, every rank holding the same full-batch gradients (the state after DDP's
all-reduce): the parameters must be bit-identical after every step, for Adam, SGD with momentum
and AdamW, with and without parameters_as_bucket_view, with an lr scheduler driving the ZeRO
groups; consolidate_state_dict + state_dict on rank 0 gives the plain optimizer's state_dict;
loading it into a fresh ZeRO continues identically; add_param_group mid-run; DDP on half batches
+ ZeRO == one process on the full batch (float32 tolerance); the sharding is torch's.
Usage: zero_optimizer.py DEVICE"""
from __future__ import annotations

import sys

import numpy as np

import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.distributed.optim import ZeroRedundancyOptimizer
from tensorlab.nn.parallel import DistributedDataParallel as DDP

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"
BATCH = 8


def mlp(seed=0):
    tl.manual_seed(seed)
    return tl.nn.Sequential(tl.nn.Linear(6, 16), tl.nn.Tanh(), tl.nn.Linear(16, 8), tl.nn.Tanh(),
                            tl.nn.Linear(8, 3)).to(DEVICE)


def data(step):
    rng = np.random.default_rng(100 + step)
    return (tl.tensor(rng.standard_normal((BATCH, 6)).astype(np.float32), device=DEVICE),
            tl.tensor(rng.standard_normal((BATCH, 3)).astype(np.float32), device=DEVICE))


def same(a, b, what):
    for k, (p, q) in enumerate(zip(a.parameters(), b.parameters())):
        pa, qa = p.detach().cpu().numpy(), q.detach().cpu().numpy()
        assert np.array_equal(pa, qa), f"{what}: param {k} differs by {np.abs(pa - qa).max()}"


def train_step(model, opt, step, sched=None):
    x, y = data(step)
    opt.zero_grad()
    tl.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    if sched is not None:
        sched.step()


def check_equivalence(rank, world, cls, kw, bucket_view):
    model, ref = mlp(), mlp()
    zero = ZeroRedundancyOptimizer(model.parameters(), cls, parameters_as_bucket_view=bucket_view, **kw)
    plain = cls(ref.parameters(), **kw)
    sched = tl.optim.lr_scheduler.StepLR(zero, step_size=2, gamma=0.5)
    ref_sched = tl.optim.lr_scheduler.StepLR(plain, step_size=2, gamma=0.5)
    for step in range(5):
        train_step(model, zero, step, sched)
        train_step(ref, plain, step, ref_sched)
        same(model, ref, f"rank {rank} {cls.__name__} {kw} bucket_view={bucket_view} step {step}")
    assert zero.param_groups[0]["lr"] == plain.param_groups[0]["lr"]
    # each rank holds state for its shard only
    owned = [p for g in zero.optim.param_groups for p in g["params"]]
    assert set(zero.optim.state) <= set(owned)
    counts = [None] * world
    dist.all_gather_object(counts, len(owned))
    assert sum(counts) == len(list(model.parameters())), counts
    # consolidated state == the plain optimizer's
    zero.consolidate_state_dict(to=0)
    if rank == 0:
        sd, ref_sd = zero.state_dict(), plain.state_dict()
        assert sd["param_groups"] == ref_sd["param_groups"], (sd["param_groups"], ref_sd["param_groups"])
        assert sorted(sd["state"]) == sorted(ref_sd["state"])
        for i, st in ref_sd["state"].items():
            assert sorted(sd["state"][i]) == sorted(st)
            for k, v in st.items():
                got = sd["state"][i][k]
                if isinstance(v, tl.Tensor):
                    assert got.device.type == "cpu"
                    assert np.array_equal(got.numpy(), v.detach().cpu().numpy()), (i, k)
                else:
                    assert got == v, (i, k)
    else:
        try:
            zero.state_dict()
        except RuntimeError as e:
            assert "consolidate_state_dict(to=" in str(e), e
        else:
            raise AssertionError("state_dict() on a rank that was not consolidated to did not raise")
    # round trip: rank 0's dict to every rank, into a fresh ZeRO over copies; both continue identically
    box = [zero.state_dict() if rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    twin_model = mlp(7)
    twin_model.load_state_dict(model.state_dict())
    twin = ZeroRedundancyOptimizer(twin_model.parameters(), cls, **kw)
    twin.load_state_dict(box[0])
    assert twin.param_groups[0]["lr"] == zero.param_groups[0]["lr"]
    for step in range(5, 7):
        train_step(model, zero, step)
        train_step(twin_model, twin, step)
        train_step(ref, plain, step)
        same(twin_model, model, f"rank {rank} round trip step {step}")
        same(model, ref, f"rank {rank} after reload step {step}")


def check_add_param_group(rank, world):
    model, ref = mlp(), mlp()
    head, ref_head = tl.nn.Linear(3, 2).to(DEVICE), tl.nn.Linear(3, 2).to(DEVICE)
    ref_head.load_state_dict(head.state_dict())
    layers = list(model.children())
    zero = ZeroRedundancyOptimizer(layers[0].parameters(), tl.optim.Adam, lr=0.01)
    plain = tl.optim.Adam(list(ref.children())[0].parameters(), lr=0.01)
    for opt, m in ((zero, model), (plain, ref)):
        opt.add_param_group({"params": list(m[2].parameters()) + list(m[4].parameters()), "lr": 0.02})
    for step in range(3):
        for m, h, opt in ((model, head, zero), (ref, ref_head, plain)):
            x, y = data(step)
            opt.zero_grad()
            h.zero_grad()
            tl.nn.functional.mse_loss(h(m(x)), y[:, :2]).backward()
            opt.step()
        same(model, ref, f"rank {rank} add_param_group step {step}")
    zero.add_param_group({"params": list(head.parameters()), "lr": 0.03})
    plain.add_param_group({"params": list(ref_head.parameters()), "lr": 0.03})
    assert len(zero.optim.param_groups) == 3
    for step in range(3, 6):
        for m, h, opt in ((model, head, zero), (ref, ref_head, plain)):
            x, y = data(step)
            opt.zero_grad()
            tl.nn.functional.mse_loss(h(m(x)), y[:, :2]).backward()
            opt.step()
        same(model, ref, f"rank {rank} add_param_group step {step}")
        same(head, ref_head, f"rank {rank} add_param_group head step {step}")


def check_with_ddp(rank, world):
    model, ref = mlp(rank), mlp(0)  # DDP broadcasts rank 0's weights
    ddp = DDP(model)
    zero = ZeroRedundancyOptimizer(ddp.parameters(), tl.optim.Adam, lr=0.01)
    plain = tl.optim.Adam(ref.parameters(), lr=0.01)
    share = BATCH // world
    for step in range(4):
        x, y = data(step)
        mine = slice(rank * share, (rank + 1) * share)
        zero.zero_grad()
        tl.nn.functional.mse_loss(ddp(x[mine]), y[mine]).backward()
        zero.step()
        plain.zero_grad()
        tl.nn.functional.mse_loss(ref(x), y).backward()
        plain.step()
        for p, q in zip(model.parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


def check_partition(rank, world):
    model = mlp()
    zero = ZeroRedundancyOptimizer(model.parameters(), tl.optim.SGD, lr=0.1)
    sizes = [p.numel() for p in model.parameters()]
    # torch's rule, recomputed here: largest first, to the least loaded rank (lowest on ties)
    load, expected = [0] * world, [[] for _ in range(world)]
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        r = load.index(min(load))
        expected[r].append(i)
        load[r] += sizes[i]
    params = list(model.parameters())
    ids = [id(p) for p in params]
    got = [[ids.index(id(p)) for p in g[0]["params"]] for g in zero._partition_parameters()]
    assert got == expected, (got, expected)


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    for cls, kw in ((tl.optim.Adam, {"lr": 0.01}), (tl.optim.SGD, {"lr": 0.1, "momentum": 0.9}),
                    (tl.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1})):
        for bucket_view in (False, True):
            check_equivalence(rank, world, cls, kw, bucket_view)
    check_add_param_group(rank, world)
    check_partition(rank, world)
    if BATCH % world == 0:
        check_with_ddp(rank, world)
    dist.barrier()
    print(f"rank {rank}: zero_optimizer OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
