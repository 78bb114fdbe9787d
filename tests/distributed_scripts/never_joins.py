"""The last rank never calls init_process_group (it exits); the others' init_process_group raises
DistStoreError naming it within the timeout (argv[1] seconds)."""
import datetime
import sys

from mpi4py import MPI

import tensorlab.distributed as dist

R, N = MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
if R == N - 1:
    sys.exit(0)
try:
    dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=float(sys.argv[1])))
except dist.DistStoreError as e:
    print("RAISED", R, str(e).replace("\n", " "), flush=True)
    assert not dist.is_initialized()
else:
    raise AssertionError("init_process_group did not raise")
print("OK", R, flush=True)
