"""Run with TORCH_DISTRIBUTED_DEBUG=DETAIL (or TENSORLAB_DISTRIBUTED_DEBUG): rank 0 disagrees with the
others on a shape, then a dtype, then the collective itself; every rank raises RuntimeError naming
the ranks. A matching collective afterwards still works."""
import tensorlab as tl
import tensorlab.distributed as dist

dist.init_process_group("mpi")
R, N = dist.get_rank(), dist.get_world_size()
assert dist.get_debug_level() == dist.DebugLevel.DETAIL
cases = [
    ("shape", lambda: dist.all_reduce(tl.ones(4 if R == 0 else 5))),
    ("dtype", lambda: dist.all_reduce(tl.ones(3, dtype=tl.float32 if R == 0 else tl.int64))),
    ("op", lambda: dist.all_reduce(tl.ones(3)) if R == 0 else dist.broadcast(tl.ones(3), src=0)),
]
for what, call in cases:
    try:
        call()
    except RuntimeError as e:
        msg = str(e).replace("\n", " ")
        print("RAISED", R, what, msg, flush=True)
        assert "Detected mismatch between collectives on ranks" in msg, msg
    else:
        raise AssertionError(f"{what} mismatch did not raise")
t = tl.ones(3) * R
dist.all_reduce(t)
assert t.tolist() == [float(sum(range(N)))] * 3
dist.destroy_process_group()
print("OK", R, flush=True)
