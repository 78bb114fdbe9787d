"""The NCCL engine (cupy.cuda.nccl): CUDA tensors, each operation enqueued on the current stream.

One NcclCommunicator per (process group, device), made on the group's first CUDA collective on that
device: rank 0's ncclUniqueId travels over the group's MPI control communicator (polled against
the timeout, like every rendezvous). Nothing here waits on the host: a Work records a CUDA event
after the enqueued operation; wait() makes the caller's current stream wait for it (torch's
semantics), is_completed() queries it. Tensors that are not contiguous are communicated through a
contiguous copy made and copied back on the same stream.
"""
from __future__ import annotations

import numpy as np

from ..autograd import no_grad
from .process_group import _nccl_module, nccl_unavailable_reason
from .reduce_op import RedOpType
from .work import Work

_TYPES = {"float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64", "float16": "NCCL_FLOAT16",
          "bfloat16": "NCCL_BFLOAT16", "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
          "int64": "NCCL_INT64", "bool": "NCCL_UINT8"}
_OPS = {RedOpType.SUM: "NCCL_SUM", RedOpType.AVG: "NCCL_AVG", RedOpType.PRODUCT: "NCCL_PROD",
        RedOpType.MIN: "NCCL_MIN", RedOpType.MAX: "NCCL_MAX"}
_BOOL_OPS = {RedOpType.SUM: "NCCL_MAX", RedOpType.PRODUCT: "NCCL_MIN", RedOpType.MIN: "NCCL_MIN",
             RedOpType.MAX: "NCCL_MAX"}  # torch's rule for bool tensors


def nccl_type(nccl, op, dtype):
    name = _TYPES.get(dtype.name)
    if name is None:
        raise TypeError(f"{op}: Input tensor data type is not supported for NCCL process group: {dtype.torch_name} "
                        "(NCCL has no 16-bit integers; use int32)")
    return getattr(nccl, name)


def nccl_op(nccl, op, dtype, red):
    if dtype.name == "bool":
        if red == RedOpType.AVG:
            raise RuntimeError(f"{op}: Cannot use ReduceOp.AVG with boolean inputs")
        table = _BOOL_OPS
    else:
        table = _OPS
    name = table.get(red)
    if name is None:
        raise RuntimeError(f"{op}: Cannot use ReduceOp.{red.name} with NCCL")
    return getattr(nccl, name)


class NcclEngine:
    name = "nccl"

    def __init__(self, pg):
        reason = nccl_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"backend nccl: {reason}")
        self.pg = pg
        self.nccl = _nccl_module()
        self.comms = {}
        self._pending = {}  # device index -> posted point-to-point operations not issued yet

    def close(self):
        for c in self.comms.values():
            try:
                c.destroy()
            except Exception:
                pass
        self.comms.clear()

    # -- plumbing ------------------------------------------------------------------------------------------------------
    def _index(self, dev):
        from ..backends.cuda.active import driver
        return driver.current_device() if dev.index is None else dev.index

    def _comm(self, idx):
        c = self.comms.get(idx)
        if c is not None:
            return c
        from mpi4py import MPI
        pg = self.pg
        uid = np.zeros(128, np.int16)
        if pg.rank() == 0:
            raw = self.nccl.get_unique_id()
            uid[:len(raw)] = raw
        req = pg._ctl.Ibcast([uid, MPI.SHORT], 0)
        pg._wait_control([req], "NCCL communicator setup (ncclUniqueId broadcast)", uid)
        import tensorlab as tl
        with tl.cuda.device(idx):
            c = self.nccl.NcclCommunicator(pg.size(), tuple(int(v) for v in uid), pg.rank())
        self.comms[idx] = c
        return c

    def _stream(self, idx):
        from ..backends.cuda.active import driver
        return driver.current_stream(idx)

    def _enqueue(self, op, dev, outputs, body, copy_back=()):
        """Run `body(comm, stream_ptr)` on the current stream, then the copies back into non-contiguous outputs,
        and return a Work holding an event recorded after them."""
        from ..backends.cuda.active import driver
        idx = self._index(dev)
        self._flush(idx)  # point-to-point operations posted before this one go first, in posting order
        comm = self._comm(idx)
        stream = self._stream(idx)
        body(comm, stream.ptr)
        with no_grad():
            for dst, src in copy_back:
                dst.copy_(src)
        ev = driver.create_event(False, False)
        driver.event_record(ev, stream)
        return Work(self.pg, op, dev, outputs, (), None, (), ev)

    @staticmethod
    def _dense(t, copy_back, write):
        """`t` itself when contiguous, else a contiguous copy (copied back into `t` afterwards when `write`)."""
        if t.is_contiguous():
            return t
        c = t.contiguous()
        if write:
            copy_back.append((t, c))
        return c

    # -- collectives ---------------------------------------------------------------------------------------------------
    def all_reduce(self, t, red):
        nc = self.nccl
        dt, op = nccl_type(nc, "all_reduce", t.dtype), nccl_op(nc, "all_reduce", t.dtype, red)
        back = []
        c = self._dense(t, back, True)
        return self._enqueue("all_reduce", t.device, [t],
                             lambda comm, s: comm.allReduce(c.data_ptr(), c.data_ptr(), c.numel(), dt, op, s), back)

    def broadcast(self, t, root):
        dt = nccl_type(self.nccl, "broadcast", t.dtype)
        back = []
        c = self._dense(t, back, self.pg.rank() != root)
        return self._enqueue("broadcast", t.device, [t],
                             lambda comm, s: comm.broadcast(c.data_ptr(), c.data_ptr(), c.numel(), dt, root, s), back)

    def reduce(self, t, root, red):
        nc = self.nccl
        dt, op = nccl_type(nc, "reduce", t.dtype), nccl_op(nc, "reduce", t.dtype, red)
        back = []
        c = self._dense(t, back, self.pg.rank() == root)
        return self._enqueue("reduce", t.device, [t],
                             lambda comm, s: comm.reduce(c.data_ptr(), c.data_ptr(), c.numel(), dt, op, root, s), back)

    def all_gather(self, outs, t):
        nc = self.nccl
        dt = nccl_type(nc, "all_gather", t.dtype)
        back = []
        src = self._dense(t, back, False)
        dense = [self._dense(o, back, True) for o in outs]
        me = self.pg.rank()

        def body(comm, s):  # one broadcast per rank: outputs of uneven sizes are allowed, as torch's
            nc.groupStart()
            try:
                for r, o in enumerate(dense):
                    comm.broadcast(src.data_ptr() if r == me else o.data_ptr(), o.data_ptr(), o.numel(), dt, r, s)
            finally:
                nc.groupEnd()
        return self._enqueue("all_gather", t.device, outs, body, back)

    def all_gather_into_tensor(self, out, t):
        dt = nccl_type(self.nccl, "all_gather_into_tensor", t.dtype)
        back = []
        src = self._dense(t, back, False)
        dst = self._dense(out, back, True)
        return self._enqueue("all_gather_into_tensor", t.device, [out],
                             lambda comm, s: comm.allGather(src.data_ptr(), dst.data_ptr(), src.numel(), dt, s), back)

    def reduce_scatter_tensor(self, out, t, red):
        nc = self.nccl
        dt, op = nccl_type(nc, "reduce_scatter_tensor", t.dtype), nccl_op(nc, "reduce_scatter_tensor", t.dtype, red)
        back = []
        src = self._dense(t, back, False)
        dst = self._dense(out, back, True)
        return self._enqueue("reduce_scatter_tensor", t.device, [out],
                             lambda comm, s: comm.reduceScatter(src.data_ptr(), dst.data_ptr(), dst.numel(), dt, op, s),
                             back)

    def gather(self, t, outs, root):
        nc = self.nccl
        dt = nccl_type(nc, "gather", t.dtype)
        back = []
        src = self._dense(t, back, False)
        me = self.pg.rank()
        dense = [self._dense(o, back, True) for o in outs] if outs is not None else None

        def body(comm, s):
            nc.groupStart()
            try:
                if me == root:
                    for r, o in enumerate(dense):
                        if r != me:
                            comm.recv(o.data_ptr(), o.numel(), dt, r, s)
                else:
                    comm.send(src.data_ptr(), src.numel(), dt, root, s)
            finally:
                nc.groupEnd()
            if me == root:
                with no_grad():
                    dense[me].copy_(src)
        return self._enqueue("gather", t.device, outs or [], body, back)

    def scatter(self, t, ins, root):
        nc = self.nccl
        dt = nccl_type(nc, "scatter", t.dtype)
        back = []
        dst = self._dense(t, back, True)
        me = self.pg.rank()
        dense = [self._dense(x, back, False) for x in ins] if ins is not None else None

        def body(comm, s):
            nc.groupStart()
            try:
                if me == root:
                    for r, x in enumerate(dense):
                        if r != me:
                            comm.send(x.data_ptr(), x.numel(), dt, r, s)
                else:
                    comm.recv(dst.data_ptr(), dst.numel(), dt, root, s)
            finally:
                nc.groupEnd()
            if me == root:
                with no_grad():
                    dst.copy_(dense[me])
        return self._enqueue("scatter", t.device, [t], body, back)

    def all_to_all_single(self, out, t, out_splits, in_splits):
        nc = self.nccl
        dt = nccl_type(nc, "all_to_all_single", t.dtype)
        back = []
        src = self._dense(t, back, False)
        dst = self._dense(out, back, True)
        isz = t.dtype.itemsize
        row_in = t.numel() // t.shape[0] if t.dim() and t.shape[0] else 0
        row_out = out.numel() // out.shape[0] if out.dim() and out.shape[0] else 0

        def body(comm, s):
            nc.groupStart()
            try:
                off_in = off_out = 0
                for r in range(self.pg.size()):
                    ni, no = in_splits[r] * row_in, out_splits[r] * row_out
                    comm.send(src.data_ptr() + off_in * isz, ni, dt, r, s)
                    comm.recv(dst.data_ptr() + off_out * isz, no, dt, r, s)
                    off_in += ni
                    off_out += no
            finally:
                nc.groupEnd()
        return self._enqueue("all_to_all_single", t.device, [out], body, back)

    def barrier(self, dev):
        from .mpi import MpiEngine
        return MpiEngine(self.pg).barrier(dev)

    # -- point to point: posted, then issued together --------------------------------------------------------------
    # ncclSend/ncclRecv block their stream until the peer's matching call runs, so a ring of isend +
    # irecv issued one by one on one stream would deadlock. Posted operations wait in a batch that is
    # issued as one NCCL group (ncclGroupStart/End, as batch_isend_irecv) when one of their works is
    # waited on or polled, or before the next collective: every rank's sends and receives then progress
    # together, in posting order. Tags are ignored, as torch's NCCL backend ignores them.
    def _post(self, op, t, outputs, call, copy_back=(), source=None):
        from ..backends.cuda.active import driver
        idx = self._index(t.device)
        stream = self._stream(idx)
        ev = driver.create_event(False, False)  # the data is ready once the posting stream reached this point
        driver.event_record(ev, stream)
        work = _PostedWork(self, idx, self.pg, op, t.device, outputs, source)
        self._pending.setdefault(idx, []).append((call, ev, list(copy_back), work))
        return work

    def _flush(self, idx):
        batch = self._pending.pop(idx, None)
        if not batch:
            return
        from ..backends.cuda.active import driver
        comm = self._comm(idx)
        stream = self._stream(idx)
        for _, ev, _, _ in batch:
            driver.stream_wait_event(stream, ev)
        nc = self.nccl
        nc.groupStart()
        try:
            for call, _, _, _ in batch:
                call(comm, stream.ptr)
        finally:
            nc.groupEnd()
        with no_grad():
            for _, _, back, _ in batch:
                for dst, src in back:
                    dst.copy_(src)
        done = driver.create_event(False, False)
        driver.event_record(done, stream)
        for _, _, _, work in batch:
            work._event = done

    def send(self, t, peer, tag):
        dt = nccl_type(self.nccl, "send", t.dtype)
        src = self._dense(t, [], False)
        return self._post("send", t, [t], lambda comm, s: comm.send(src.data_ptr(), src.numel(), dt, peer, s))

    def recv(self, t, peer, tag):
        if peer is None:
            raise RuntimeError("recv: receiving from any source (src=None) is not supported by NCCL; name the sender "
                               "rank, or use backend 'mpi' for this group")
        dt = nccl_type(self.nccl, "recv", t.dtype)
        back = []
        dst = self._dense(t, back, True)
        return self._post("recv", t, [t], lambda comm, s: comm.recv(dst.data_ptr(), dst.numel(), dt, peer, s), back,
                          self.pg._ranks[peer])


class _PostedWork(Work):
    """The work of a posted send/recv: issuing its batch is the first thing wait()/is_completed() do."""

    def __init__(self, engine, idx, pg, op, device, outputs, source):
        super().__init__(pg, op, device, outputs, (), None, (), None, source)
        self._done = False
        self._engine_idx = (engine, idx)

    def _issue(self):
        if self._event is None:
            engine, idx = self._engine_idx
            engine._flush(idx)

    def is_completed(self):
        self._issue()
        return super().is_completed()

    def _wait(self, timeout, explicit):
        self._issue()
        return super()._wait(timeout, explicit)
