"""Collectives of picklable Python objects (torch's all_gather_object, broadcast_object_list, gather_object,
scatter_object_list, send_object_list, recv_object_list), the list forms reduce_scatter and all_to_all,
and monitored_barrier: all written over the tensor collectives, as a user's code would.

Objects travel pickled (as torch's: only exchange objects with ranks you trust; unpickling runs
code). The byte tensors live on the CPU when the group serves CPU tensors, else on the current CUDA
device (an NCCL-only group), as torch picks the device."""
from __future__ import annotations

import pickle
import time

import numpy as np

from . import collectives as C
from . import work as W
from .process_group import _mpi, get_rank, resolve_group
from .reduce_op import RedOpType
from .work import Work


def _device(pg):
    import tensorlab as tl
    if "cpu" in pg._devices:
        return tl.device("cpu")
    return tl.device("cuda", tl.cuda.current_device())


def _to_tensor(obj, dev):
    import tensorlab as tl
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8).copy()
    return tl.from_numpy(data).to(dev), data.size


def _from_bytes(t, size):
    return pickle.loads(t[:size].cpu().numpy().tobytes())


def _sizes_tensor(sizes, dev):
    import tensorlab as tl
    return tl.tensor(list(sizes), dtype=tl.int64, device=dev)


def all_gather_object(object_list, obj, group=None):
    """object_list[i] <- group rank i's `obj` (object_list has one slot per rank)."""
    pg = resolve_group(group, "all_gather_object")
    if pg is None:
        return
    import tensorlab as tl
    dev = _device(pg)
    n = pg.size()
    t, size = _to_tensor(obj, dev)
    sizes = tl.zeros(n, dtype=tl.int64, device=dev)
    C.all_gather_into_tensor(sizes, _sizes_tensor([size], dev), group=group)
    all_sizes = [int(s) for s in sizes.tolist()]
    longest = max(all_sizes)
    padded = tl.zeros(longest, dtype=tl.uint8, device=dev)
    padded[:size] = t
    out = tl.zeros(n * longest, dtype=tl.uint8, device=dev)
    C.all_gather_into_tensor(out, padded, group=group)
    for i in range(n):
        object_list[i] = _from_bytes(out[i * longest:(i + 1) * longest], all_sizes[i])


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Every rank's object_list <- rank src's (the lists have the same length on every rank)."""
    pg = resolve_group(group, "broadcast_object_list")
    if pg is None:
        return
    import tensorlab as tl
    root = C._group_rank(pg, "broadcast_object_list", src, group_src, "src")
    dev = tl.device(device) if device is not None else _device(pg)
    if pg.rank() == root:
        parts = [_to_tensor(o, dev) for o in object_list]
        sizes = _sizes_tensor([s for _, s in parts], dev)
        payload = tl.cat([p for p, _ in parts]) if parts else tl.zeros(0, dtype=tl.uint8, device=dev)
    else:
        sizes = tl.zeros(len(object_list), dtype=tl.int64, device=dev)
    C.broadcast(sizes, group=group, group_src=root)
    counts = [int(s) for s in sizes.tolist()]
    if pg.rank() != root:
        payload = tl.zeros(sum(counts), dtype=tl.uint8, device=dev)
    C.broadcast(payload, group=group, group_src=root)
    if pg.rank() != root:
        off = 0
        for i, c in enumerate(counts):
            object_list[i] = _from_bytes(payload[off:off + c], c)
            off += c


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """object_gather_list[i] on rank dst <- group rank i's `obj`."""
    pg = resolve_group(group, "gather_object")
    if pg is None:
        return
    import tensorlab as tl
    root = C._group_rank(pg, "gather_object", dst, group_dst, "dst", default=0)
    if pg.rank() == root and object_gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    if pg.rank() != root and object_gather_list is not None:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    dev = _device(pg)
    n = pg.size()
    t, size = _to_tensor(obj, dev)
    sizes = tl.zeros(n, dtype=tl.int64, device=dev)
    C.all_gather_into_tensor(sizes, _sizes_tensor([size], dev), group=group)
    all_sizes = [int(s) for s in sizes.tolist()]
    longest = max(all_sizes)
    padded = tl.zeros(longest, dtype=tl.uint8, device=dev)
    padded[:size] = t
    outs = [tl.zeros(longest, dtype=tl.uint8, device=dev) for _ in range(n)] if pg.rank() == root else None
    C.gather(padded, outs, group=group, group_dst=root)
    if pg.rank() == root:
        for i in range(n):
            object_gather_list[i] = _from_bytes(outs[i], all_sizes[i])


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None, group=None,
                        group_src=None):
    """scatter_object_output_list[0] on group rank i <- scatter_object_input_list[i] of rank src."""
    pg = resolve_group(group, "scatter_object_list")
    if pg is None:
        return
    import tensorlab as tl
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    root = C._group_rank(pg, "scatter_object_list", src, group_src, "src", default=0)
    dev = _device(pg)
    n = pg.size()
    me = pg.rank()
    if me == root:
        if scatter_object_input_list is None or len(scatter_object_input_list) != n:
            raise ValueError(f"scatter_object_list: scatter_object_input_list must hold one object per rank ({n}) on "
                             "the source rank")
        parts = [_to_tensor(o, dev) for o in scatter_object_input_list]
        longest = tl.tensor([max(s for _, s in parts)], dtype=tl.int64, device=dev)
    else:
        longest = tl.zeros(1, dtype=tl.int64, device=dev)
    C.broadcast(longest, group=group, group_src=root)
    m = int(longest.item())
    ins = sizes_in = None
    if me == root:
        ins = []
        for p, s in parts:
            buf = tl.zeros(m, dtype=tl.uint8, device=dev)
            buf[:s] = p
            ins.append(buf)
        sizes_in = [_sizes_tensor([s], dev) for _, s in parts]
    out = tl.zeros(m, dtype=tl.uint8, device=dev)
    size = tl.zeros(1, dtype=tl.int64, device=dev)
    C.scatter(size, sizes_in, group=group, group_src=root)
    C.scatter(out, ins, group=group, group_src=root)
    scatter_object_output_list[0] = _from_bytes(out, int(size.item()))


def send_object_list(object_list, dst=None, group=None, device=None, group_dst=None):
    """Send the objects of object_list to rank dst (which calls recv_object_list with a list of the same length)."""
    pg = resolve_group(group, "send_object_list")
    if pg is None:
        return
    import tensorlab as tl
    dev = tl.device(device) if device is not None else _device(pg)
    parts = [_to_tensor(o, dev) for o in object_list]
    C.send(_sizes_tensor([s for _, s in parts], dev), dst, group, group_dst=None if dst is not None else group_dst)
    payload = tl.cat([p for p, _ in parts]) if parts else tl.zeros(0, dtype=tl.uint8, device=dev)
    C.send(payload, dst, group, group_dst=None if dst is not None else group_dst)


def recv_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Fill object_list with the objects rank src sent with send_object_list; returns the sender's rank."""
    pg = resolve_group(group, "recv_object_list")
    if pg is None:
        return -1
    import tensorlab as tl
    dev = tl.device(device) if device is not None else _device(pg)
    sizes = tl.zeros(len(object_list), dtype=tl.int64, device=dev)
    sender = C.recv(sizes, src, group, group_src=None if src is not None else group_src)
    counts = [int(s) for s in sizes.tolist()]
    payload = tl.zeros(sum(counts), dtype=tl.uint8, device=dev)
    C.recv(payload, sender, group)
    off = 0
    for i, c in enumerate(counts):
        object_list[i] = _from_bytes(payload[off:off + c], c)
        off += c
    return sender


# -- list forms --------------------------------------------------------------------------------------------------------
class _Then(Work):
    """A work whose result needs one more step (copying out of a staging tensor) once `inner` is done."""

    def __init__(self, inner, then, outputs):
        super().__init__(inner._pg, inner._name, inner._device, outputs)
        self._inner, self._then = inner, then
        self._done = False

    def is_completed(self):
        if not self._done and self._inner.is_completed():
            if self._inner.exception() is not None:
                self._exc = self._inner.exception()
                return True
            self._run()
        return self._done

    def _run(self):
        then, self._then = self._then, None
        if then is not None:
            then()
        self._done = True

    def _wait(self, timeout, explicit):
        if not self._done:
            self._inner._wait(timeout, explicit)
            self._run()
        return True


def reduce_scatter(output, input_list, op=RedOpType.SUM, group=None, async_op=False):
    """output on group rank i <- the reduction over ranks of input_list[i]."""
    C._check_single_tensor(output, "output")
    C._check_tensor_list(input_list, "input_list")
    pg = resolve_group(group, "reduce_scatter")
    if pg is None:
        return None
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors but the group has {pg.size()} ranks")
    for i, x in enumerate(input_list):
        if x.numel() != output.numel():
            raise ValueError(f"reduce_scatter: input_list[{i}] has shape {list(x.shape)} but the output has "
                             f"{list(output.shape)}; every input must have the output's size")
    import tensorlab as tl
    flat = tl.cat([x.reshape(-1) for x in input_list])
    return C.reduce_scatter_tensor(output, flat, op=op, group=group, async_op=async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """output_tensor_list[i] <- group rank i's input_tensor_list[this rank] (sizes may differ per pair)."""
    C._check_tensor_list(output_tensor_list, "output_tensor_list")
    C._check_tensor_list(input_tensor_list, "input_tensor_list")
    pg = resolve_group(group, "all_to_all")
    if pg is None:
        return None
    n = pg.size()
    if len(output_tensor_list) != n or len(input_tensor_list) != n:
        raise ValueError(f"all_to_all: the tensor lists need one tensor per rank ({n}), got "
                         f"{len(output_tensor_list)} outputs and {len(input_tensor_list)} inputs")
    import tensorlab as tl
    flat_in = tl.cat([x.reshape(-1) for x in input_tensor_list])
    outs = list(output_tensor_list)
    dt = outs[0].dtype
    flat_out = tl.empty(sum(o.numel() for o in outs), dtype=dt, device=outs[0].device)
    work = C.all_to_all_single(flat_out, flat_in, [o.numel() for o in outs], [x.numel() for x in input_tensor_list],
                               group=group, async_op=True)

    def copy_out():
        off = 0
        with tl.no_grad():
            for o in outs:
                o.copy_(flat_out[off:off + o.numel()].reshape(o.shape))
                off += o.numel()
    chained = _Then(work, copy_out, outs)
    if async_op:
        return chained
    chained._wait(None, False)
    return None


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier in which rank 0 names the ranks that did not reach it within `timeout` (default: the group's):
    RuntimeError "Rank 1 failed to pass monitoredBarrier in 2000 ms" (all of them with wait_all_ranks=True)."""
    pg = resolve_group(group, "monitored_barrier")
    if pg is None:
        return
    from .process_group import _timeout_arg
    limit = float(_timeout_arg(timeout, pg._timeout, "monitored_barrier").total_seconds())
    MPI = _mpi()
    comm, me, n = pg._ctl, pg.rank(), pg.size()
    tag = 0x7E130
    one = np.zeros(1, np.uint8)
    deadline = time.monotonic() + limit
    t0 = time.perf_counter()
    if me == 0:
        bufs = {p: np.zeros(1, np.uint8) for p in range(1, n)}
        recvs = {p: comm.Irecv([bufs[p], MPI.BYTE], source=p, tag=tag) for p in range(1, n)}
        late = []
        for p, q in recvs.items():
            if not W.poll(q.Test, deadline):
                late.append(pg._ranks[p])
                if not wait_all_ranks:
                    break
        W._record_wait("distributed monitored_barrier (waiting for the other ranks)", _cpu(), t0, True)
        if late:
            pg._abandoned.append((bufs, recvs))
            ms = int(limit * 1000)
            if len(late) == 1 and not wait_all_ranks:
                raise RuntimeError(f"Rank {late[0]} failed to pass monitoredBarrier in {ms} ms")
            raise RuntimeError(f"Ranks {', '.join(map(str, late))} failed to pass monitoredBarrier in {ms} ms")
        acks = [comm.Isend([one, MPI.BYTE], dest=p, tag=tag + 1) for p in range(1, n)]
        W.poll(lambda: MPI.Request.Testall(acks), time.monotonic() + limit)
        return
    send = comm.Isend([one, MPI.BYTE], dest=0, tag=tag)
    ack = np.zeros(1, np.uint8)
    req = comm.Irecv([ack, MPI.BYTE], source=0, tag=tag + 1)
    ok = W.poll(lambda: MPI.Request.Testall([send, req]), deadline)
    W._record_wait("distributed monitored_barrier (waiting for rank 0)", _cpu(), t0, True)
    if not ok:
        pg._abandoned.append((one, ack, send, req))
        raise RuntimeError(f"[Rank {get_rank()}] monitored_barrier: rank 0 did not release the barrier within "
                           f"{limit:g} s (another rank did not reach it, or rank 0 is gone)")


def _cpu():
    from ..device import Device
    return Device("cpu")
