"""TORCH_DISTRIBUTED_DEBUG=DETAIL: before each collective, every rank of the group exchanges the
collective's fingerprint (sequence number, kind, shapes, dtypes, device types, root, reduce op)
with every other, within the group's timeout, and a mismatch raises on each rank naming the ranks
that disagree (torch's ProcessGroupWrapper message); ranks that never arrive are named too."""
from __future__ import annotations

import time

import numpy as np

from . import work as W
from .errors import DistBackendError

_TAG = 0x7E120
_SIZE = 2048


_OP_TYPES = {"all_reduce": "ALLREDUCE", "broadcast": "BROADCAST", "reduce": "REDUCE", "all_gather": "ALLGATHER",
             "all_gather_into_tensor": "_ALLGATHER_BASE", "reduce_scatter_tensor": "_REDUCE_SCATTER_BASE",
             "gather": "GATHER", "scatter": "SCATTER", "all_to_all_single": "ALLTOALL_BASE", "barrier": "BARRIER"}


def fingerprint(pg, op, tensors, extra=""):
    pg._seq += 1
    shapes = [list(t.shape) for t in tensors]
    dts = [t.dtype.torch_name for t in tensors]
    devs = [t.device.type for t in tensors]
    return (f"CollectiveFingerPrint(SequenceNumber={pg._seq}, OpType={_OP_TYPES.get(op, op.upper())}, TensorShape={shapes}, "
            f"TensorDtypes={dts}, TensorDeviceTypes={devs}{extra})")


def check(pg, op, fp, device):
    from .process_group import _mpi, get_rank
    MPI = _mpi()
    comm = pg._ctl
    me, n = comm.Get_rank(), pg.size()
    raw = fp.encode()
    if len(raw) > _SIZE:
        raw = raw[:_SIZE - 20] + b"...(truncated)"
    mine = np.zeros(_SIZE, np.uint8)
    mine[:len(raw)] = np.frombuffer(raw, np.uint8)
    peers = [p for p in range(n) if p != me]
    bufs = {p: np.zeros(_SIZE, np.uint8) for p in peers}
    sends = [comm.Isend([mine, MPI.BYTE], dest=p, tag=_TAG) for p in peers]
    recvs = {p: comm.Irecv([bufs[p], MPI.BYTE], source=p, tag=_TAG) for p in peers}
    reqs = sends + list(recvs.values())
    pg._check_usable(op)
    t0 = time.perf_counter()
    ok = W.poll(lambda: MPI.Request.Testall(reqs), time.monotonic() + pg._timeout_s)
    W._record_wait(f"distributed {op} (TORCH_DISTRIBUTED_DEBUG=DETAIL metadata check)",
                   device, t0, False)
    if not ok:
        missing = [pg._ranks[p] for p, q in recvs.items() if not q.Test()]
        pg._timed_out(op, pg._timeout_s, (mine, bufs, reqs))
        raise DistBackendError(f"[Rank {get_rank()}] {op}: ranks {missing} did not reach this collective within "
                               f"{pg._timeout_s:g} s (TORCH_DISTRIBUTED_DEBUG=DETAIL check; this rank is running "
                               f"{fp}); a rank may have exited, crashed or be stuck. The process group is unusable now")
    theirs = {p: bytes(b).rstrip(b"\0").decode(errors="replace") for p, b in bufs.items()}
    bad = [p for p in peers if theirs[p] != mine.tobytes().rstrip(b"\0").decode(errors="replace")]
    if bad:
        first = bad[0]
        others = "".join(f" Rank {pg._ranks[p]} is running collective: {theirs[p]}." for p in bad[1:])
        raise RuntimeError(f"Detected mismatch between collectives on ranks. Rank {pg._ranks[me]} is running "
                           f"collective: {fp}, but Rank {pg._ranks[first]} is running collective: {theirs[first]}."
                           f"{others} (mismatching ranks: {[pg._ranks[p] for p in bad]}; found by "
                           "TORCH_DISTRIBUTED_DEBUG=DETAIL)")
