"""An unmodified torch.distributed script (Gloo on the CPU), run by `python -m tensorlab.compat` under the
launcher: prints "OK <rank>" when its all_reduce and all_gather_object gave torch's answers."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
assert int(os.environ["RANK"]) == rank and int(os.environ["WORLD_SIZE"]) == world
assert int(os.environ["LOCAL_RANK"]) == rank  # one node: torchrun's LOCAL_RANK
x = torch.arange(4, dtype=torch.float32) * (rank + 1)
dist.all_reduce(x, op=dist.ReduceOp.SUM)
assert x.tolist() == [k * world * (world + 1) / 2 for k in range(4)], x
names = [None] * world
dist.all_gather_object(names, f"rank{rank}")
assert names == [f"rank{k}" for k in range(world)], names
dist.barrier()
dist.destroy_process_group()
print("OK", rank, flush=True)
