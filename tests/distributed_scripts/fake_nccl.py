"""A stand-in for cupy.cuda.nccl on the CUDA emulation driver (device memory is host memory there): the
same calls, constants and semantics, carried out with mpi4py on the buffers' addresses. It lets the
tests drive tensorlab's NCCL engine (pointers, offsets, counts, datatypes, roots, groups, posted
point-to-point batches, events) without a GPU; gpu_check runs the real library on one."""
import ctypes

import ml_dtypes
import numpy as np
from mpi4py import MPI

available = True
NCCL_INT8, NCCL_UINT8, NCCL_INT32, NCCL_UINT32, NCCL_INT64, NCCL_UINT64 = 0, 1, 2, 3, 4, 5
NCCL_FLOAT16, NCCL_FLOAT32, NCCL_FLOAT64, NCCL_BFLOAT16 = 6, 7, 8, 9
NCCL_SUM, NCCL_PROD, NCCL_MAX, NCCL_MIN, NCCL_AVG = 0, 1, 2, 3, 4
_NP = {NCCL_INT8: np.int8, NCCL_UINT8: np.uint8, NCCL_INT32: np.int32, NCCL_UINT32: np.uint32, NCCL_INT64: np.int64,
       NCCL_UINT64: np.uint64, NCCL_FLOAT16: np.float16, NCCL_FLOAT32: np.float32, NCCL_FLOAT64: np.float64,
       NCCL_BFLOAT16: ml_dtypes.bfloat16}
_OPS = {NCCL_SUM: MPI.SUM, NCCL_PROD: MPI.PROD, NCCL_MAX: MPI.MAX, NCCL_MIN: MPI.MIN, NCCL_AVG: MPI.SUM}
calls = []  # (name, count, datatype) of every call, for the script's checks
_group = []  # the calls between groupStart and groupEnd (None outside a group)
_in_group = [False]


def _arr(ptr, count, dt):
    npdt = np.dtype(_NP[dt])
    if count == 0:
        return np.empty(0, npdt)
    raw = (ctypes.c_char * (count * npdt.itemsize)).from_address(ptr)
    return np.frombuffer(raw, dtype=np.uint8).view(npdt)


def _reduce_in(a):
    return a.astype(np.float32) if a.dtype in (np.float16, ml_dtypes.bfloat16) else a.copy()


def _reduce_out(res, dst, op, n):
    if op == NCCL_AVG:
        res = res / n if res.dtype.kind == "f" else np.where(res < 0, -(np.abs(res) // n), res // n)
    dst[...] = res.astype(dst.dtype)


def get_unique_id():
    rng = np.random.default_rng()
    return tuple(int(v) for v in rng.integers(-128, 128, 128))


def groupStart():
    _in_group[0] = True
    _group.clear()


def groupEnd():
    _in_group[0] = False
    reqs = []
    keep = []
    for comm, kind, buf, peer in _group:
        if kind == "send":
            data = buf.copy()
            keep.append(data)
            reqs.append(comm.Isend(data, dest=peer, tag=99))
        else:
            reqs.append(comm.Irecv(buf, source=peer, tag=99))
    MPI.Request.Waitall(reqs)
    _group.clear()


class NcclCommunicator:
    def __init__(self, ndev, commId, rank):
        assert len(commId) == 128, commId
        self.comm = MPI.COMM_WORLD.Dup()
        assert self.comm.Get_size() == ndev and self.comm.Get_rank() == rank, (ndev, rank)
        ids = self.comm.allgather(tuple(commId))
        assert all(i == ids[0] for i in ids), "the ncclUniqueId differs across ranks"
        self.n = ndev
        self._sends = []

    def destroy(self):
        MPI.Request.Waitall(self._sends)
        self.comm.Free()

    def allReduce(self, sendbuf, recvbuf, count, datatype, op, stream):
        calls.append(("allReduce", count, datatype))
        out = np.empty_like(_reduce_in(_arr(sendbuf, count, datatype)))
        self.comm.Allreduce(_reduce_in(_arr(sendbuf, count, datatype)), out, _OPS[op])
        _reduce_out(out, _arr(recvbuf, count, datatype), op, self.n)

    def reduce(self, sendbuf, recvbuf, count, datatype, op, root, stream):
        calls.append(("reduce", count, datatype))
        a = _reduce_in(_arr(sendbuf, count, datatype))
        out = np.empty_like(a)
        self.comm.Reduce(a, out, _OPS[op], root)
        if self.comm.Get_rank() == root:
            _reduce_out(out, _arr(recvbuf, count, datatype), op, self.n)

    def broadcast(self, sendbuf, recvbuf, count, datatype, root, stream):
        calls.append(("broadcast", count, datatype))
        buf = _arr(sendbuf, count, datatype).copy()
        self.comm.Bcast(buf.view(np.uint8), root)
        _arr(recvbuf, count, datatype)[...] = buf

    def allGather(self, sendbuf, recvbuf, count, datatype, stream):
        calls.append(("allGather", count, datatype))
        out = np.empty(count * self.n, _NP[datatype])
        self.comm.Allgather(_arr(sendbuf, count, datatype).copy().view(np.uint8), out.view(np.uint8))
        _arr(recvbuf, count * self.n, datatype)[...] = out

    def reduceScatter(self, sendbuf, recvbuf, recvcount, datatype, op, stream):
        calls.append(("reduceScatter", recvcount, datatype))
        a = _reduce_in(_arr(sendbuf, recvcount * self.n, datatype))
        out = np.empty(recvcount, a.dtype)
        self.comm.Reduce_scatter_block(a, out, _OPS[op])
        _reduce_out(out, _arr(recvbuf, recvcount, datatype), op, self.n)

    def send(self, sendbuf, count, datatype, peer, stream):
        calls.append(("send", count, datatype))
        buf = _arr(sendbuf, count, datatype).view(np.uint8)
        assert _in_group[0], "a send outside a group would block its stream until the peer's recv runs"
        _group.append((self.comm, "send", buf, peer))

    def recv(self, recvbuf, count, datatype, peer, stream):
        calls.append(("recv", count, datatype))
        assert _in_group[0], "a recv outside a group would block its stream until the peer's send runs"
        _group.append((self.comm, "recv", _arr(recvbuf, count, datatype).view(np.uint8), peer))
