"""Data-parallel training of a small MLP with DistributedDataParallel: every rank holds a replica of
the model and trains on its own share of each epoch (DistributedSampler); backward averages the
gradients over the ranks, so the replicas stay identical.

    python -m tensorlab.distributed.run --nproc-per-node 2 examples/ddp_mlp.py
    python -m tensorlab.distributed.run --nproc-per-node 4 examples/ddp_mlp.py --epochs 20 --accumulate 2
    python -m tensorlab.distributed.run --nproc-per-node gpu examples/ddp_mlp.py --device cuda   # NCCL, a GPU per rank
    mpiexec -n 2 python examples/ddp_mlp.py                                                       # the same, by hand

Rank 0 prints the loss (averaged over the ranks) per epoch and the final accuracy; every rank
checks that its parameters equal rank 0's. Exits with status 1 if the loss did not fall to half
its first value or the replicas differ, so the script doubles as a smoke test. See
docs/distributed-running.md."""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

try:
    import tensorlab as tl
except ImportError:  # run from a source checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import tensorlab as tl
import tensorlab.distributed as dist
import tensorlab.nn as nn
from tensorlab.nn.parallel import DistributedDataParallel as DDP
from tensorlab.utils.data import DataLoader, DistributedSampler, TensorDataset


def two_moons(n, noise, generator):
    """n points on two interleaved half circles (labels 0 and 1) plus Gaussian noise; the same on
    every rank (one seed), as a dataset read from shared storage would be."""
    half = n // 2
    t = tl.rand(half, generator=generator) * math.pi
    upper = tl.stack([t.cos(), t.sin()], dim=1)
    lower = tl.stack([1.0 - t.cos(), 0.5 - t.sin()], dim=1)
    x = tl.cat([upper, lower]) + noise * tl.randn(2 * half, 2, generator=generator)
    y = tl.cat([tl.zeros(half, dtype=tl.int64), tl.ones(half, dtype=tl.int64)])
    return x, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--backend", choices=["mpi", "nccl"], default=None,
                    help="default: nccl for --device cuda, mpi for cpu")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=32, help="per rank")
    ap.add_argument("--accumulate", type=int, default=1,
                    help="micro-batches per optimizer step (the first ones under no_sync: no communication)")
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save", help="rank 0 writes the trained model's state_dict here (tl.save)")
    args = ap.parse_args(argv)

    dist.init_process_group(args.backend or ("nccl" if args.device == "cuda" else "mpi"))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", rank % max(1, tl.cuda.device_count())))
        tl.cuda.set_device(local)
        device = f"cuda:{local}"
    else:
        device = "cpu"

    x, y = two_moons(args.n, 0.1, tl.Generator().manual_seed(args.seed))
    dataset = TensorDataset(x, y)
    sampler = DistributedSampler(dataset, shuffle=True, seed=args.seed)  # rank and world size from the group
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler, drop_last=True)

    tl.manual_seed(args.seed + rank)  # different on purpose: DDP broadcasts rank 0's initial weights
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    ddp = DDP(model, device_ids=[device] if args.device == "cuda" else None)
    opt = tl.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    losses = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        total = tl.zeros((), device=device)
        count = 0
        for i, (xb, yb) in enumerate(loader):
            xb, yb = xb.to(device), yb.to(device)
            last = (i + 1) % args.accumulate == 0
            if last:
                loss = loss_fn(ddp(xb), yb) / args.accumulate
                loss.backward()  # the averaged gradient arrives here, reduced bucket by bucket
                opt.step()
                opt.zero_grad()
            else:
                with ddp.no_sync():  # accumulate locally; the next synced backward reduces the sum
                    loss = loss_fn(ddp(xb), yb) / args.accumulate
                    loss.backward()
            total += loss.detach() * args.accumulate
            count += 1
        dist.all_reduce(total)
        losses.append(total.item() / (count * world))
        if rank == 0:
            print(f"epoch {epoch:3d}  loss {losses[-1]:.4f}", flush=True)

    with tl.no_grad():
        acc = (model(x.to(device)).argmax(1) == y.to(device)).float().mean().item()
    ok = True
    for p in model.parameters():  # the replicas must be identical
        ref = p.detach().clone()
        dist.broadcast(ref, 0)
        if not tl.equal(ref, p.detach()):
            print(f"rank {rank}: parameters differ from rank 0's", flush=True)
            ok = False
    if rank == 0:
        print(f"{world} ranks, {args.epochs} epochs: final loss {losses[-1]:.4f} (from {losses[0]:.4f}), "
              f"accuracy {acc:.3f}", flush=True)
        if args.save:
            tl.save(model.state_dict(), args.save)  # model, not ddp: keys without the "module." prefix
            print(f"saved {args.save}", flush=True)
    ok = ok and losses[-1] < 0.5 * losses[0]
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
