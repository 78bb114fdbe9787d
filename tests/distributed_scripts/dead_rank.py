"""The last rank exits after the groups are made. The others: monitored_barrier names it; an
all_reduce with different sizes on a group of ranks 0 and 1 (no debug mode) raises DistBackendError
(MPI's error, or the timeout) on both; the next collective on a group of every rank raises
DistBackendError within the timeout (argv[1] seconds). Tensors stay untouched, and failed groups
refuse further work. Prints "BARRIER", "MISMATCH", "RAISED" lines and "OK <rank>" on each survivor."""
import datetime
import sys

import tensorlab as tl
import tensorlab.distributed as dist

# a generous rendezvous (ranks of a loaded CI machine start seconds apart), then groups with the short timeout
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
R, N = dist.get_rank(), dist.get_world_size()
short = datetime.timedelta(seconds=float(sys.argv[1]))
world = dist.new_group(timeout=short)
pair = dist.new_group([0, 1], timeout=short)
if R == N - 1:
    sys.exit(0)
try:
    dist.monitored_barrier(world, timeout=datetime.timedelta(seconds=2), wait_all_ranks=True)
except RuntimeError as e:
    print("BARRIER", R, str(e), flush=True)
else:
    raise AssertionError("monitored_barrier with a dead rank did not raise")
m = tl.full((4 + R,), 2.0)
try:
    dist.all_reduce(m, group=pair)
except dist.DistBackendError as e:
    print("MISMATCH", R, str(e).replace("\n", " "), flush=True)
    assert "failed in MPI" in str(e) or "timed out" in str(e), e
else:
    raise AssertionError("all_reduce of different sizes did not raise")
assert m.tolist() == [2.0] * (4 + R), "a failed collective changed its tensor"
try:
    dist.all_reduce(m, group=pair)
except dist.DistBackendError as e:
    assert "unusable" in str(e), e
else:
    raise AssertionError("a failed group accepted more work")
t = tl.arange(4, dtype=tl.float32) + R
v = t._version
try:
    dist.all_reduce(t, group=world)
except dist.DistBackendError as e:
    print("RAISED", R, str(e).replace("\n", " "), flush=True)
    assert isinstance(e, RuntimeError)
else:
    raise AssertionError("all_reduce with a dead rank did not raise")
assert t.tolist() == [float(k + R) for k in range(4)] and t._version == v, "a failed collective changed its tensor"
try:
    dist.broadcast(t, src=0, group=world)
except dist.DistBackendError as e:
    assert "unusable" in str(e), e
else:
    raise AssertionError("a timed-out group accepted more work")
print("OK", R, flush=True)
