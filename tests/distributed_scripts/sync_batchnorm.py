"""Run under mpiexec (2 ranks): SyncBatchNorm on each rank's half of a batch == BatchNorm on the whole
batch in one process: the outputs, the input gradients (of a loss summed over the whole batch), the
weight/bias gradients (summed over the ranks, as DDP would), the running statistics and the counter;
momentum=None (cumulative average) too, and eval mode (the running statistics, no communication).
Usage: sync_batchnorm.py DEVICE"""
from __future__ import annotations

import sys

import numpy as np

import tensorlab as tl
import tensorlab.distributed as dist

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "cpu"


def close(a, b, what):
    np.testing.assert_allclose(a.detach().cpu().numpy(), b.detach().cpu().numpy(), rtol=1e-9, atol=1e-9,
                               err_msg=what)


def check(rank, world, shape, momentum, affine):
    rng = np.random.default_rng(7)
    full = rng.standard_normal(shape) * 2 + 1
    g = rng.standard_normal(shape)
    c = shape[1]
    ref = tl.nn.BatchNorm1d(c, momentum=momentum, affine=affine).to(device=DEVICE, dtype=tl.float64)
    syn = tl.nn.SyncBatchNorm(c, momentum=momentum, affine=affine).to(device=DEVICE, dtype=tl.float64)
    if affine:
        with tl.no_grad():
            for m in (ref, syn):
                m.weight.copy_(tl.tensor(np.linspace(0.5, 1.5, c)))
                m.bias.copy_(tl.tensor(np.linspace(-0.3, 0.3, c)))
    n = shape[0] // world
    lo = rank * n
    for step in range(2):
        x = tl.tensor(full * (step + 1), device=DEVICE).requires_grad_(True)
        y = ref(x)
        y.backward(tl.tensor(g, device=DEVICE))
        xl = tl.tensor(full[lo:lo + n] * (step + 1), device=DEVICE).requires_grad_(True)
        yl = syn(xl)
        yl.backward(tl.tensor(g[lo:lo + n], device=DEVICE))
        close(yl, y[lo:lo + n], f"output, step {step}")
        close(xl.grad, x.grad[lo:lo + n], f"input gradient, step {step}")
        close(syn.running_mean, ref.running_mean, "running_mean")
        close(syn.running_var, ref.running_var, "running_var")
        assert int(syn.num_batches_tracked) == int(ref.num_batches_tracked) == step + 1
        if affine:
            for name in ("weight", "bias"):
                gsum = getattr(syn, name).grad.clone()
                dist.all_reduce(gsum)
                close(gsum, getattr(ref, name).grad, f"{name} gradient summed over ranks")
                getattr(syn, name).grad = None
                getattr(ref, name).grad = None
    syn.eval()
    ref.eval()
    x = tl.tensor(full[lo:lo + n], device=DEVICE)
    close(syn(x), ref(x), "eval mode")


def main():
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    assert world == 2
    for shape, momentum, affine in (((8, 3), 0.1, True), ((4, 3, 5), None, True), ((6, 2, 4), 0.3, False)):
        check(rank, world, shape, momentum, affine)
        dist.barrier()
    print(f"rank {rank}: sync_batchnorm OK", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
