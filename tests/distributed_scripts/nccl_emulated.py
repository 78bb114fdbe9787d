"""tensorlab's NCCL engine on the CUDA emulation driver, over fake_nccl (cupy.cuda.nccl's calls carried
out by MPI on the emulated device memory): gpu_check's NCCL body, then non-contiguous tensors, a
subgroup-free error set, and the calls the engine made. Prints "OK <rank>"."""
import numpy as np

import fake_nccl
import tensorlab as tl
import tensorlab.distributed as dist
from tensorlab.distributed import nccl, nccl_check, process_group

process_group._NCCL[:] = [fake_nccl]
process_group.nccl_unavailable_reason = lambda: None
nccl.nccl_unavailable_reason = lambda: None

nccl_check.body("nccl", "cuda")  # inits, checks every collective and that none made the host wait, destroys
names = {c[0] for c in fake_nccl.calls}
assert {"allReduce", "broadcast", "reduce", "allGather", "reduceScatter", "send", "recv"} <= names, names

dist.init_process_group("nccl")
R, N = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "nccl"
base = tl.arange(12, dtype=tl.float32, device="cuda").reshape(3, 4) * (R + 1)
dist.all_reduce(base[:, 1::2])  # not contiguous: through a contiguous copy, written back on the stream
want = np.arange(12, dtype=np.float32).reshape(3, 4) * (R + 1)
want[:, 1::2] = np.arange(12, dtype=np.float32).reshape(3, 4)[:, 1::2] * sum(range(1, N + 1))
assert np.array_equal(base.cpu().numpy(), want), base
h = tl.tensor([1.5, -2.0], dtype=tl.bfloat16, device="cuda")
dist.all_reduce(h, op=dist.ReduceOp.AVG)
assert h.float().cpu().tolist() == [1.5, -2.0]
b = tl.tensor([R % 2 == 0, False], device="cuda")
dist.all_reduce(b)  # bool SUM is a logical or (NCCL_MAX), as torch
assert b.cpu().tolist() == [True, False]
for call, exc, text in (
        (lambda: dist.all_reduce(tl.ones(2, dtype=tl.int16, device="cuda")), TypeError, "not supported for NCCL"),
        (lambda: dist.all_reduce(tl.ones(2, dtype=tl.int64, device="cuda"), op=dist.ReduceOp.BAND), RuntimeError,
         "Cannot use ReduceOp.BAND with NCCL"),
        (lambda: dist.all_reduce(tl.ones(2)), RuntimeError, "No backend type associated with device type cpu"),
        (lambda: dist.irecv(tl.ones(2, device="cuda")), RuntimeError, "any source"),
):
    try:
        call()
    except exc as e:
        assert text in str(e), (text, e)
    else:
        raise AssertionError(f"no {exc.__name__} ({text})")
dist.barrier()
dist.destroy_process_group()
print("OK", R, flush=True)
