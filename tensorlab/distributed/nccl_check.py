"""The NCCL section of `python -m tensorlab.gpu_check`: every collective over NCCL on a world of one
rank per GPU, checked against NumPy, and a check that none of them made the host wait.

`section(timeout)` launches the ranks (`python -m tensorlab.distributed.run --nproc-per-node
<GPUs>`, each rank on GPU LOCAL_RANK) and returns a dict for the report; without a GPU, NCCL or
MPI it returns at once with `skipped` saying why. The rank body (`python -m
tensorlab.distributed.nccl_check --body --backend B --device D`) also runs over MPI on CPU tensors,
which is how the tests check the checker itself on a machine without a GPU."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np


def skip_reason():
    from . import process_group as P
    if not P.is_available():
        return f"mpi4py is not installed ({P.INSTALL_HINT})"
    return P.nccl_unavailable_reason()


def section(timeout=300.0, nproc=None):
    """Run the NCCL check on one rank per GPU; a dict: skipped (reason or None), ranks, returncode,
    passed, elapsed_s, output (the tail)."""
    reason = skip_reason()
    if reason is not None:
        return {"skipped": reason, "ranks": 0, "returncode": None, "passed": None, "elapsed_s": 0.0, "output": ""}
    import tensorlab as tl
    n = nproc or tl.cuda.device_count()
    cmd = [sys.executable, "-m", "tensorlab.distributed.run", "--nproc-per-node", str(n), "-m",
           "tensorlab.distributed.nccl_check", "--body", "--backend", "nccl", "--device", "cuda"]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = None, f"stopped after {timeout:.0f} s\n{e.stdout or ''}{e.stderr or ''}"
    passed = rc == 0 and all(f"NCCL CHECK OK {r}" in out for r in range(n))
    return {"skipped": None, "ranks": n, "returncode": rc, "passed": passed, "elapsed_s": time.perf_counter() - t0,
            "command": " ".join(cmd), "output": out[-4000:]}


def markdown(sec):
    lines = ["## NCCL", ""]
    if sec["skipped"]:
        return "\n".join(lines + [f"skipped: {sec['skipped']}", ""])
    lines.append(f"{sec['ranks']} rank(s), one per GPU: {'PASS' if sec['passed'] else 'FAIL'} (exit status "
                 f"{sec['returncode']}, {sec['elapsed_s']:.1f} s)")
    if not sec["passed"]:
        lines += ["", "```", sec["output"], "```"]
    return "\n".join(lines + [""])


# -- the rank body -------------------------------------------------------------------------------------------------------
def body(backend, device):
    import tensorlab as tl
    import tensorlab.distributed as dist
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if device == "cuda":
        tl.cuda.set_device(local % tl.cuda.device_count())
    dist.init_process_group(backend)
    r, n = dist.get_rank(), dist.get_world_size()
    dev = tl.device(device) if device == "cpu" else tl.device("cuda", tl.cuda.current_device())
    rng = [np.random.default_rng(k) for k in range(n)]
    vals = [g.standard_normal((4, 8)).astype(np.float32) for g in rng]
    ints = [g.integers(-20, 20, (4, 8)) for g in rng]

    def t(a):
        return tl.tensor(a, device=dev)

    def same(x, want, what, tol=1e-5):
        got = x.cpu().numpy()
        if not np.allclose(got, want, rtol=tol, atol=tol):
            raise AssertionError(f"rank {r}: {what}: got {got.ravel()[:6]}..., want {np.asarray(want).ravel()[:6]}...")

    checks = []  # (tensor, expected, what): read after the trace, so the trace holds the collectives alone
    with tl.cuda.sync_trace() as trace:
        for op, ref in (("SUM", np.sum), ("AVG", np.mean), ("MIN", np.min), ("MAX", np.max)):
            x = t(vals[r])
            dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
            checks.append((x, ref(np.stack(vals), 0), f"all_reduce {op} float32"))
        x = t(ints[r])
        dist.all_reduce(x)
        checks.append((x, np.sum(ints, 0), "all_reduce SUM int64"))
        x = t(vals[r].astype(np.float64))
        w = dist.all_reduce(x, op=dist.ReduceOp.PRODUCT, async_op=True)
        w.wait()
        checks.append((x, np.prod(np.stack(vals).astype(np.float64), 0), "async all_reduce PRODUCT float64"))
        x = t(vals[r])
        dist.broadcast(x, src=n - 1)
        checks.append((x, vals[n - 1], "broadcast"))
        x = t(vals[r])
        dist.reduce(x, dst=0)
        checks.append((x, np.sum(vals, 0) if r == 0 else vals[r], "reduce"))
        outs = [tl.zeros((4, 8), device=dev) for _ in range(n)]
        dist.all_gather(outs, t(vals[r]))
        checks += [(outs[k], vals[k], f"all_gather[{k}]") for k in range(n)]
        cat = tl.zeros((4 * n, 8), device=dev)
        dist.all_gather_into_tensor(cat, t(vals[r]))
        checks.append((cat, np.concatenate(vals), "all_gather_into_tensor"))
        big = [np.concatenate([v + k for k in range(n)]) for v in vals]
        out = tl.zeros((4, 8), device=dev)
        dist.reduce_scatter_tensor(out, t(big[r]))
        checks.append((out, np.sum(big, 0)[4 * r:4 * r + 4], "reduce_scatter_tensor"))
        gl = [tl.zeros((4, 8), device=dev) for _ in range(n)] if r == 0 else None
        dist.gather(t(vals[r]), gl, dst=0)
        if r == 0:
            checks += [(gl[k], vals[k], f"gather[{k}]") for k in range(n)]
        out = tl.zeros((4, 8), device=dev)
        dist.scatter(out, [t(v) for v in vals] if r == 0 else None, src=0)
        checks.append((out, vals[r], "scatter"))
        a2a = [np.stack([v[0] * 0 + 10 * src + dst for dst in range(n)]) for src, v in enumerate(vals)]
        out = tl.zeros((n, 8), device=dev)
        dist.all_to_all_single(out, t(a2a[r].astype(np.float32)))
        checks.append((out, np.stack([a2a[k][r] for k in range(n)]), "all_to_all_single"))
        if n > 1:
            got = tl.zeros((4, 8), device=dev)
            ws = [dist.isend(t(vals[r]), dst=(r + 1) % n), dist.irecv(got, src=(r - 1) % n)]
            for w in ws:
                w.wait()
            checks.append((got, vals[(r - 1) % n], "isend/irecv ring"))
    implicit = [rec for rec in trace if not rec.explicit and device == "cuda"]
    if backend == "nccl" and implicit:
        raise AssertionError(f"rank {r}: NCCL collectives made the host wait: {[str(x) for x in implicit]}")
    for x, want, what in checks:
        same(x, want, what)
    dist.barrier()
    dist.destroy_process_group()
    print(f"NCCL CHECK OK {r} ({backend}, {device}, {n} rank(s), {len(checks)} checks)", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tensorlab.distributed.nccl_check")
    p.add_argument("--body", action="store_true", help="run one rank's checks (under the launcher)")
    p.add_argument("--backend", default="nccl")
    p.add_argument("--device", default="cuda")
    p.add_argument("--timeout", type=float, default=300.0)
    args = p.parse_args(argv)
    if args.body:
        body(args.backend, args.device)
        return 0
    sec = section(args.timeout)
    print(markdown(sec))
    return 0 if sec["skipped"] or sec["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
