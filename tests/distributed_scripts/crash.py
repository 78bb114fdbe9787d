"""Rank 1 crashes (exit status 3, no MPI_Finalize) while rank 0 waits in an all_reduce with the default
30-minute timeout: mpiexec sees the crash and stops the whole job at once (as torchrun stops its
workers), so nothing hangs. Rank 0 must never print "OK"."""
import os
import time

import tensorlab as tl
import tensorlab.distributed as dist

dist.init_process_group("mpi")
if dist.get_rank() == 1:
    time.sleep(0.5)
    os._exit(3)
dist.all_reduce(tl.ones(2))
print("OK", dist.get_rank(), flush=True)
