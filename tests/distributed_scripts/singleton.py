"""Without an MPI launcher: a world of one works (every collective is the identity), and asking for
more ranks (torchrun's WORLD_SIZE) raises at once with the launcher to use."""
import os

import tensorlab as tl
import tensorlab.distributed as dist

os.environ["WORLD_SIZE"] = "2"
try:
    dist.init_process_group("mpi")
except RuntimeError as e:
    assert "not started by an MPI launcher" in str(e) and "tensorlab.distributed.run" in str(e), e
else:
    raise AssertionError("WORLD_SIZE=2 in a world of one did not raise")
os.environ["WORLD_SIZE"] = "1"
os.environ["RANK"] = "3"
try:
    dist.init_process_group("mpi")
except ValueError as e:
    assert "RANK=3" in str(e), e
else:
    raise AssertionError("RANK=3 did not raise")
del os.environ["RANK"]
assert not dist.is_initialized()
for round_ in range(2):  # init, destroy, init again
    dist.init_process_group(init_method="env://")
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = tl.tensor([1.0, 2.0])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 2.0]
    out = tl.zeros(2)
    dist.all_gather_into_tensor(out, t)
    assert out.tolist() == [1.0, 2.0]
    dist.barrier()
    dist.destroy_process_group()
dist.init_process_group("mpi", init_method="tcp://127.0.0.1:29500", world_size=1, rank=0)
assert dist.get_world_size() == 1
dist.destroy_process_group()
try:
    dist.init_process_group("mpi", init_method="tcp://127.0.0.1:29500", world_size=3)
except RuntimeError as e:
    assert "world_size=3" in str(e), e
else:
    raise AssertionError("world_size=3 in a world of one did not raise")
print("OK 0", flush=True)
