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

    # inputs first (creating a CUDA tensor from host data waits for the copy): the trace then holds the
    # collectives alone
    big = [np.concatenate([v + k for k in range(n)]) for v in vals]
    a2a = [np.stack([v[0] * 0 + 10 * src + dst for dst in range(n)]).astype(np.float32) for src, v in enumerate(vals)]
    ins = {name: t(a) for name, a in (("sum", vals[r]), ("avg", vals[r]), ("min", vals[r]), ("max", vals[r]),
                                      ("int", ints[r]), ("f64", vals[r].astype(np.float64)), ("bcast", vals[r]),
                                      ("reduce", vals[r]), ("gather_in", vals[r]), ("big", big[r]), ("a2a", a2a[r]),
                                      ("send", vals[r]), ("send2", vals[r]))}
    scatter_in = [t(v) for v in vals] if r == 0 else None
    outs = [tl.zeros((4, 8), device=dev) for _ in range(n)]
    cat = tl.zeros((4 * n, 8), device=dev)
    rs = tl.zeros((4, 8), device=dev)
    gl = [tl.zeros((4, 8), device=dev) for _ in range(n)] if r == 0 else None
    sc = tl.zeros((4, 8), device=dev)
    a2a_out = tl.zeros((n, 8), device=dev)
    got, got2 = tl.zeros((4, 8), device=dev), tl.zeros((4, 8), device=dev)
    stacked = np.stack(vals)
    checks = []  # (tensor, expected, what): read after the trace
    with tl.cuda.sync_trace() as trace:
        for op, ref in (("SUM", np.sum), ("AVG", np.mean), ("MIN", np.min), ("MAX", np.max)):
            x = ins[op.lower()]
            dist.all_reduce(x, op=getattr(dist.ReduceOp, op))
            checks.append((x, ref(stacked, 0), f"all_reduce {op} float32"))
        dist.all_reduce(ins["int"])
        checks.append((ins["int"], np.sum(ints, 0), "all_reduce SUM int64"))
        w = dist.all_reduce(ins["f64"], op=dist.ReduceOp.PRODUCT, async_op=True)
        w.wait()
        checks.append((ins["f64"], np.prod(stacked.astype(np.float64), 0), "async all_reduce PRODUCT float64"))
        dist.broadcast(ins["bcast"], src=n - 1)
        checks.append((ins["bcast"], vals[n - 1], "broadcast"))
        dist.reduce(ins["reduce"], dst=0)
        checks.append((ins["reduce"], np.sum(vals, 0) if r == 0 else vals[r], "reduce"))
        dist.all_gather(outs, ins["gather_in"])
        checks += [(outs[k], vals[k], f"all_gather[{k}]") for k in range(n)]
        dist.all_gather_into_tensor(cat, ins["gather_in"])
        checks.append((cat, np.concatenate(vals), "all_gather_into_tensor"))
        dist.reduce_scatter_tensor(rs, ins["big"])
        checks.append((rs, np.sum(big, 0)[4 * r:4 * r + 4], "reduce_scatter_tensor"))
        dist.gather(ins["gather_in"], gl, dst=0)
        if r == 0:
            checks += [(gl[k], vals[k], f"gather[{k}]") for k in range(n)]
        dist.scatter(sc, scatter_in, src=0)
        checks.append((sc, vals[r], "scatter"))
        dist.all_to_all_single(a2a_out, ins["a2a"])
        checks.append((a2a_out, np.stack([a2a[k][r] for k in range(n)]), "all_to_all_single"))
        if n > 1:
            ws = [dist.isend(ins["send"], dst=(r + 1) % n), dist.irecv(got, src=(r - 1) % n)]
            for w in ws:
                w.wait()
            checks.append((got, vals[(r - 1) % n], "isend/irecv ring"))
            ops = [dist.P2POp(dist.irecv, got2, (r + 1) % n), dist.P2POp(dist.isend, ins["send2"], (r - 1) % n)]
            for w in dist.batch_isend_irecv(ops):
                w.wait()
            checks.append((got2, vals[(r + 1) % n], "batch_isend_irecv ring"))
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
