"""The MPI engine (mpi4py): CPU tensors directly from their memory, CUDA tensors staged through the host.

Every operation is a nonblocking MPI request (Iallreduce, Ibcast, Isend, ...) wrapped in a Work
whose wait polls it against the group's timeout (work.py). Inputs are sent straight from the
tensor's memory when it is contiguous (a NumPy view, no copy); results are received into private
buffers and copied into the output tensors only after the request completed (the atomic-metadata
rule: a failed or timed-out collective changes no tensor, and a message that arrives after a
timeout lands in a buffer nobody reads). The front end hands in tensors whose metadata it pinned
once (ops._common.pinned), so a concurrent resize_ cannot change what is sent or written.

CUDA tensors: read with a named host wait (the sync trace and the profiler see it) and written
back with a host-to-device copy on the current stream.
"""
from __future__ import annotations

import numpy as np

from .. import backends, dtypes
from ..autograd import no_grad
from .process_group import _mpi
from .reduce_op import RedOpType
from .work import Work

_RED_TYPES = {  # tensorlab dtype name -> (NumPy dtype reduced in, MPI datatype name)
    "float32": (np.float32, "FLOAT"), "float64": (np.float64, "DOUBLE"),
    "float16": (np.float32, "FLOAT"), "bfloat16": (np.float32, "FLOAT"),  # MPI has no 16-bit floats: float32
    "int8": (np.int8, "INT8_T"), "int16": (np.int16, "INT16_T"), "int32": (np.int32, "INT32_T"),
    "int64": (np.int64, "INT64_T"), "uint8": (np.uint8, "UINT8_T"), "bool": (np.uint8, "UINT8_T"),
}
_BOOL_OPS = {RedOpType.SUM: "MAX", RedOpType.PRODUCT: "MIN", RedOpType.MIN: "MIN", RedOpType.MAX: "MAX",
             RedOpType.BAND: "BAND", RedOpType.BOR: "BOR", RedOpType.BXOR: "BXOR"}  # torch's bool rule (NCCL)
_OPS = {RedOpType.SUM: "SUM", RedOpType.AVG: "SUM", RedOpType.PRODUCT: "PROD", RedOpType.MIN: "MIN",
        RedOpType.MAX: "MAX", RedOpType.BAND: "BAND", RedOpType.BOR: "BOR", RedOpType.BXOR: "BXOR"}


def reduce_plan(op_name, dtype, red):
    """(NumPy dtype, MPI datatype name, MPI op name) for reducing `dtype` with `red`, or torch's error."""
    name = dtype.torch_name if hasattr(dtype, "torch_name") else str(dtype)
    if red in (RedOpType.PREMUL_SUM, RedOpType.UNUSED):
        raise ValueError(f"{op_name}: ReduceOp.{red.name} is not supported; use SUM, AVG, PRODUCT, MIN, MAX, BAND, "
                         "BOR or BXOR")
    npdt, mdt = _RED_TYPES[dtype.name]
    if dtype.name == "bool":
        if red == RedOpType.AVG:
            raise RuntimeError(f"{op_name}: Cannot use ReduceOp.AVG with boolean inputs")
        return npdt, mdt, _BOOL_OPS[red]
    if dtype.is_floating_point and red in (RedOpType.BAND, RedOpType.BOR, RedOpType.BXOR):
        raise RuntimeError(f"{op_name}: Cannot use ReduceOp.{red.name} with floating point tensors ({name}); "
                           "bitwise reductions need integer or bool tensors")
    return npdt, mdt, _OPS[red]


def finish_reduce(res, dtype, red, n):
    """The reduced values as `dtype`: AVG divides by the group size (integers: truncating, as
    NCCL's integer average), float16/bfloat16 round back from float32, bool from uint8."""
    if red == RedOpType.AVG:
        if dtype.is_floating_point:
            res = res / res.dtype.type(n)
        else:
            q = np.abs(res) // n
            res = np.where(res < 0, -q, q)
    if dtype.name == "bool":
        return res.astype(np.bool_)
    return res.astype(dtype.np, copy=False)


def host_array(t, op):
    """The tensor's values on the host: a view of a CPU tensor's memory (no copy), a staged copy of
    a CUDA tensor's (a host wait named for the collective)."""
    if t.device.type == "cpu":
        return backends.cpu.array(t)
    return t._host(f"distributed {op}: copy to host for MPI")


def as_bytes(a):
    """A contiguous uint8 view of the array's bytes (a copy only when it is not contiguous)."""
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def from_bytes(buf, t):
    return buf.view(t.dtype.np).reshape(tuple(t.shape))


def write(t, values):
    """Publish a result into a (pinned) output tensor: one copy_, which bumps its version."""
    from ..ops.creation import from_numpy
    arr = np.ascontiguousarray(values)
    if arr.dtype != t.dtype.np:
        arr = arr.astype(t.dtype.np)
    with no_grad():
        t.copy_(from_numpy(arr.reshape(tuple(t.shape))))


def _nbytes(t):
    return t.numel() * t.dtype.itemsize


def _displs(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


class MpiEngine:
    name = "mpi"

    def __init__(self, pg):
        self.pg = pg
        self.comm = pg._comm
        self.MPI = _mpi()

    def close(self):
        pass

    def _work(self, op, dev, outputs, reqs, finish=None, keep=(), source=None, statuses=None):
        return Work(self.pg, op, dev, outputs, reqs, finish, keep, None, source, statuses)

    def _red(self, op, t, red):
        npdt, mdt, mop = reduce_plan(op, t.dtype, red)
        a = host_array(t, op)
        send = np.ascontiguousarray(a, dtype=npdt) if t.dtype.name != "bool" else as_bytes(a)
        return send, getattr(self.MPI, mdt), getattr(self.MPI, mop)

    # -- collectives ---------------------------------------------------------------------------------------------------
    def all_reduce(self, t, red):
        send, mdt, mop = self._red("all_reduce", t, red)
        recv = np.empty_like(send)
        req = self.comm.Iallreduce([send, mdt], [recv, mdt], mop)
        n = self.pg.size()
        return self._work("all_reduce", t.device, [t], [req],
                          lambda: write(t, finish_reduce(recv, t.dtype, red, n)), (send, recv))

    def broadcast(self, t, root):
        MPI = self.MPI
        if self.comm.Get_rank() == root:
            buf = as_bytes(host_array(t, "broadcast"))
            req = self.comm.Ibcast([buf, MPI.BYTE], root)
            return self._work("broadcast", t.device, [t], [req], None, (buf,))
        buf = np.empty(_nbytes(t), np.uint8)
        req = self.comm.Ibcast([buf, MPI.BYTE], root)
        return self._work("broadcast", t.device, [t], [req], lambda: write(t, from_bytes(buf, t)), (buf,))

    def reduce(self, t, root, red):
        send, mdt, mop = self._red("reduce", t, red)
        if self.comm.Get_rank() != root:
            req = self.comm.Ireduce([send, mdt], None, mop, root)
            return self._work("reduce", t.device, [t], [req], None, (send,))
        recv = np.empty_like(send)
        req = self.comm.Ireduce([send, mdt], [recv, mdt], mop, root)
        n = self.pg.size()
        return self._work("reduce", t.device, [t], [req], lambda: write(t, finish_reduce(recv, t.dtype, red, n)),
                          (send, recv))

    def all_gather(self, outs, t):
        MPI = self.MPI
        send = as_bytes(host_array(t, "all_gather"))
        counts = [_nbytes(o) for o in outs]
        displs = _displs(counts)
        recv = np.empty(sum(counts), np.uint8)
        req = self.comm.Iallgatherv([send, MPI.BYTE], [recv, (counts, displs), MPI.BYTE])

        def finish():
            for o, c, d in zip(outs, counts, displs):
                write(o, from_bytes(recv[d:d + c], o))
        return self._work("all_gather", t.device, outs, [req], finish, (send, recv))

    def all_gather_into_tensor(self, out, t):
        MPI = self.MPI
        send = as_bytes(host_array(t, "all_gather_into_tensor"))
        recv = np.empty(_nbytes(out), np.uint8)
        req = self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE])
        return self._work("all_gather_into_tensor", t.device, [out], [req], lambda: write(out, from_bytes(recv, out)),
                          (send, recv))

    def reduce_scatter_tensor(self, out, t, red):
        send, mdt, mop = self._red("reduce_scatter_tensor", t, red)
        recv = np.empty(out.numel(), send.dtype)
        req = self.comm.Ireduce_scatter_block([send, mdt], [recv, mdt], mop)
        n = self.pg.size()
        return self._work("reduce_scatter_tensor", t.device, [out], [req],
                          lambda: write(out, finish_reduce(recv, out.dtype, red, n)), (send, recv))

    def gather(self, t, outs, root):
        MPI = self.MPI
        send = as_bytes(host_array(t, "gather"))
        if self.comm.Get_rank() != root:
            req = self.comm.Igatherv([send, MPI.BYTE], None, root)
            return self._work("gather", t.device, [], [req], None, (send,))
        counts = [_nbytes(o) for o in outs]
        displs = _displs(counts)
        recv = np.empty(sum(counts), np.uint8)
        req = self.comm.Igatherv([send, MPI.BYTE], [recv, (counts, displs), MPI.BYTE], root)

        def finish():
            for o, c, d in zip(outs, counts, displs):
                write(o, from_bytes(recv[d:d + c], o))
        return self._work("gather", t.device, outs, [req], finish, (send, recv))

    def scatter(self, t, ins, root):
        MPI = self.MPI
        recv = np.empty(_nbytes(t), np.uint8)
        keep = [recv]
        if self.comm.Get_rank() != root:
            req = self.comm.Iscatterv(None, [recv, MPI.BYTE], root)
        else:
            parts = [as_bytes(host_array(x, "scatter")) for x in ins]
            counts = [p.size for p in parts]
            send = np.concatenate(parts) if parts else np.empty(0, np.uint8)
            keep.append(send)
            req = self.comm.Iscatterv([send, (counts, _displs(counts)), MPI.BYTE], [recv, MPI.BYTE], root)
        return self._work("scatter", t.device, [t], [req], lambda: write(t, from_bytes(recv, t)), tuple(keep))

    def all_to_all_single(self, out, t, out_splits, in_splits):
        MPI = self.MPI
        send = as_bytes(host_array(t, "all_to_all_single"))
        row_in = _nbytes(t) // t.shape[0] if t.dim() and t.shape[0] else 0
        row_out = _nbytes(out) // out.shape[0] if out.dim() and out.shape[0] else 0
        scounts = [s * row_in for s in in_splits]
        rcounts = [s * row_out for s in out_splits]
        recv = np.empty(_nbytes(out), np.uint8)
        req = self.comm.Ialltoallv([send, (scounts, _displs(scounts)), MPI.BYTE],
                                   [recv, (rcounts, _displs(rcounts)), MPI.BYTE])
        return self._work("all_to_all_single", t.device, [out], [req], lambda: write(out, from_bytes(recv, out)),
                          (send, recv))

    def barrier(self, dev):
        req = self.comm.Ibarrier()
        return self._work("barrier", dev, [], [req])

    # -- point to point ------------------------------------------------------------------------------------------------
    def send(self, t, peer, tag):
        MPI = self.MPI
        buf = as_bytes(host_array(t, "send"))
        req = self.comm.Isend([buf, MPI.BYTE], dest=peer, tag=tag)
        return self._work("send", t.device, [t], [req], None, (buf,))

    def recv(self, t, peer, tag):
        MPI = self.MPI
        buf = np.empty(_nbytes(t), np.uint8)
        status = MPI.Status()
        src = MPI.ANY_SOURCE if peer is None else peer
        req = self.comm.Irecv([buf, MPI.BYTE], source=src, tag=tag)
        ranks = self.pg._ranks

        def finish():
            got = status.Get_count(MPI.BYTE)
            if got != buf.size:
                raise RuntimeError(f"recv: the message from rank {ranks[status.Get_source()]} has {got} bytes, but the "
                                   f"tensor of shape {list(t.shape)} and dtype {t.dtype.torch_name} holds {buf.size}; "
                                   "send and recv need tensors of the same size")
            write(t, from_bytes(buf, t))
        return self._work("recv", t.device, [t], [req], finish, (buf,), lambda: ranks[status.Get_source()], [status])
