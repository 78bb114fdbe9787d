"""Run under mpiexec (2 ranks): rank 1 exits after DistributedDataParallel was built. Rank 0's
backward must raise the group's timeout error (not hang) from the end-of-backward wait, and the
DDP must not then blame unused parameters: the next iteration raises the group's "unusable" error.
Usage: ddp_dead_rank.py TIMEOUT_SECONDS; prints "RAISED 0 ..." and "rank 0: ddp_dead_rank OK"."""
from __future__ import annotations

import datetime
import sys

import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.nn.parallel import DistributedDataParallel as DDP

# a generous rendezvous (the ranks of a loaded machine start seconds apart), the short timeout on DDP's group
dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
group = dist.new_group(timeout=datetime.timedelta(seconds=float(sys.argv[1])))
tl.manual_seed(0)
ddp = DDP(tl.nn.Sequential(tl.nn.Linear(4, 8), tl.nn.Tanh(), tl.nn.Linear(8, 1)), process_group=group)
dist.barrier()
if rank == 1:
    sys.exit(0)
x = tl.ones(3, 4)
try:
    ddp(x).sum().backward()
except dist.DistBackendError as e:
    print("RAISED", rank, str(e).replace("\n", " "), flush=True)
else:
    raise AssertionError("backward with a dead rank did not raise")
try:
    ddp(x).sum().backward()
except dist.DistBackendError as e:
    assert "unusable" in str(e), e
else:
    raise AssertionError("the DDP's failed group accepted more work")
print(f"rank {rank}: ddp_dead_rank OK", flush=True)
