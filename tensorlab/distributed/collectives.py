"""The collectives' front end: torch.distributed's signatures, argument checks and errors, then one
engine call (MPI or NCCL, by the tensors' device and the group's backend).

Each call pins its tensors' metadata once (ops._common.pinned), so the engine reads and writes one
consistent (storage, layout) record even if another thread resizes a tensor meanwhile; results
reach the outputs only when the operation succeeded (see mpi.py and nccl.py). With
`async_op=True` the Work is returned; otherwise it is waited for here. Each call is a
`record_function` range named "<engine>:<collective>" in the profiler (torch's naming).
"""
from __future__ import annotations

from ..ops import _common
from ..profiler import record_function
from ..tensor import Tensor
from . import _detail
from .process_group import DebugLevel, get_debug_level, get_rank, resolve_group
from .reduce_op import RedOpType, as_red_op


# -- argument checks (torch's messages) ---------------------------------------------------------------------------------
def _check_single_tensor(param, name):
    if not isinstance(param, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type torch.Tensor\n"
                        f"             but got {type(param)} instead.")


def _check_tensor_list(param, name):
    if not isinstance(param, list) or not all(isinstance(p, Tensor) for p in param):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type List[torch.Tensor]\n"
                        f"             but got {type(param)} instead.")


def _group_rank(pg, op, global_rank, group_rank, what, default=None):
    """torch's _canonicalize_group_rank: the group rank of a src/dst given as a global rank or a group rank."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        r = int(group_rank)
    else:
        if global_rank is None:
            if default is None:
                raise ValueError("Must specify global_rank or group_rank")
            global_rank = default
        from .process_group import _world
        if pg is _world.default_pg:
            r = int(global_rank)
        else:
            try:
                r = pg._ranks.index(int(global_rank))
            except ValueError:
                raise ValueError(f"Global rank {global_rank} is not part of group {pg}") from None
    if not 0 <= r < pg.size():
        raise ValueError(f"{op}: {what} rank {r} is out of range for a group of {pg.size()} ranks (ranks 0 to "
                         f"{pg.size() - 1})")
    return r


def _same_device(op, tensors):
    dev = tensors[0].device
    for t in tensors[1:]:
        if t.device != dev:
            raise RuntimeError(f"{op}: Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {t.device}!")
    return dev


def _same_dtype(op, out, inp):
    if out.dtype is not inp.dtype:
        raise TypeError(f"{op}: output tensor must have the same type as input tensor (output {out.dtype.torch_name}, "
                        f"input {inp.dtype.torch_name})")


def _writable(op, *tensors):
    for t in tensors:
        _common.check_writable(t, op)


def _pin(t):
    return _common.pinned(t)


def _begin(pg, op, tensors, extra=""):
    pg._check_usable(op)
    if get_debug_level() == DebugLevel.DETAIL:
        _detail.check(pg, op, _detail.fingerprint(pg, op, tensors, extra), tensors[0].device if tensors else _cpu())


def _cpu():
    from ..device import Device
    return Device("cpu")


def _done(work, async_op):
    if async_op:
        return work
    work._wait(None, explicit=False)
    return None


def _run(pg, dev, op, call, async_op=True):
    """Issue the operation on the engine for `dev` inside its profiler range; a blocking call also waits there."""
    eng = pg._engine(dev, op)
    with record_function(f"{eng.name}:{op}"):
        work = call(eng)
        if async_op:
            return work
        work._wait(None, explicit=False)
        return None


# -- collectives ---------------------------------------------------------------------------------------------------------
def all_reduce(tensor, op=RedOpType.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group with `op`; every rank gets the result in `tensor`."""
    _check_single_tensor(tensor, "tensor")
    red = as_red_op(op, "all_reduce")
    pg = resolve_group(group, "all_reduce")
    if pg is None:
        return None
    t = _pin(tensor)
    _writable("all_reduce", t)
    _begin(pg, "all_reduce", [t], f", ReduceOp={red.name}")
    return _run(pg, t.device, "all_reduce", lambda e: e.all_reduce(t, red), async_op)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy `tensor` of rank `src` (global rank; or `group_src`, a group rank) into `tensor` on every rank."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group, "broadcast")
    if pg is None:
        return None
    root = _group_rank(pg, "broadcast", src, group_src, "src")
    t = _pin(tensor)
    if pg.rank() != root:
        _writable("broadcast", t)
    _begin(pg, "broadcast", [t], f", Root={root}")
    return _run(pg, t.device, "broadcast", lambda e: e.broadcast(t, root), async_op)


def reduce(tensor, dst=None, op=RedOpType.SUM, group=None, async_op=False, group_dst=None):
    """Reduce `tensor` across the group into `tensor` of rank `dst` (the others' tensors are unchanged)."""
    _check_single_tensor(tensor, "tensor")
    red = as_red_op(op, "reduce")
    pg = resolve_group(group, "reduce")
    if pg is None:
        return None
    root = _group_rank(pg, "reduce", dst, group_dst, "dst", default=0)
    t = _pin(tensor)
    if pg.rank() == root:
        _writable("reduce", t)
    _begin(pg, "reduce", [t], f", Root={root}, ReduceOp={red.name}")
    return _run(pg, t.device, "reduce", lambda e: e.reduce(t, root, red), async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[i] <- `tensor` of group rank i, on every rank (tensor_list[i] sized as rank i's tensor)."""
    _check_tensor_list(tensor_list, "tensor_list")
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group, "all_gather")
    if pg is None:
        return None
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors but the group has {pg.size()} ranks; "
                         "pass one output tensor per rank")
    t = _pin(tensor)
    outs = [_pin(o) for o in tensor_list]
    for i, o in enumerate(outs):
        _same_dtype("all_gather", o, t)
    me = pg.rank()
    if outs[me].numel() != t.numel():
        raise RuntimeError(f"all_gather: tensor_list[{me}] (this rank's slot) has {outs[me].numel()} elements (shape "
                           f"{list(outs[me].shape)}) but the input tensor has {t.numel()} (shape {list(t.shape)})")
    dev = _same_device("all_gather", [t] + outs)
    _writable("all_gather", *outs)
    _begin(pg, "all_gather", [t])
    return _run(pg, dev, "all_gather", lambda e: e.all_gather(outs, t), async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor <- the concatenation (or stack) of every rank's input_tensor, in group-rank order."""
    _check_single_tensor(output_tensor, "output_tensor")
    _check_single_tensor(input_tensor, "input_tensor")
    pg = resolve_group(group, "all_gather_into_tensor")
    if pg is None:
        return None
    out, t = _pin(output_tensor), _pin(input_tensor)
    _same_dtype("all_gather_into_tensor", out, t)
    if out.numel() != t.numel() * pg.size():
        raise ValueError(f"all_gather_into_tensor: output tensor size must be equal to world_size times input tensor "
                         f"size (output shape {list(out.shape)}, input shape {list(t.shape)}, world_size "
                         f"{pg.size()})")
    dev = _same_device("all_gather_into_tensor", [out, t])
    _writable("all_gather_into_tensor", out)
    _begin(pg, "all_gather_into_tensor", [out, t])
    return _run(pg, dev, "all_gather_into_tensor", lambda e: e.all_gather_into_tensor(out, t), async_op)


def reduce_scatter_tensor(output, input, op=RedOpType.SUM, group=None, async_op=False):  # noqa: A002 (torch's name)
    """Reduce `input` across the group and give group rank i the i-th of size(group) equal chunks in `output`."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    red = as_red_op(op, "reduce_scatter_tensor")
    pg = resolve_group(group, "reduce_scatter_tensor")
    if pg is None:
        return None
    out, t = _pin(output), _pin(input)
    _same_dtype("reduce_scatter_tensor", out, t)
    if t.numel() != out.numel() * pg.size():
        raise ValueError(f"reduce_scatter_tensor: input tensor must be the same size as output size times world size "
                         f"(input shape {list(t.shape)}, output shape {list(out.shape)}, world_size {pg.size()})")
    dev = _same_device("reduce_scatter_tensor", [out, t])
    _writable("reduce_scatter_tensor", out)
    _begin(pg, "reduce_scatter_tensor", [out, t], f", ReduceOp={red.name}")
    return _run(pg, dev, "reduce_scatter_tensor", lambda e: e.reduce_scatter_tensor(out, t, red), async_op)


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather_list[i] on rank `dst` <- `tensor` of group rank i; gather_list only on `dst`."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group, "gather")
    if pg is None:
        return None
    root = _group_rank(pg, "gather", dst, group_dst, "dst", default=0)
    t = _pin(tensor)
    outs = None
    if pg.rank() == root:
        if not gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
        _check_tensor_list(gather_list, "gather_list")
        if len(gather_list) != pg.size():
            raise ValueError(f"gather: gather_list has {len(gather_list)} tensors but the group has {pg.size()} ranks")
        outs = [_pin(o) for o in gather_list]
        for o in outs:
            _same_dtype("gather", o, t)
        if outs[root].numel() != t.numel():
            raise RuntimeError(f"gather: gather_list[{root}] has {outs[root].numel()} elements but the input tensor has "
                               f"{t.numel()}")
        _same_device("gather", [t] + outs)
        _writable("gather", *outs)
    elif gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    _begin(pg, "gather", [t], f", Root={root}")
    return _run(pg, t.device, "gather", lambda e: e.gather(t, outs, root), async_op)


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """`tensor` of group rank i <- scatter_list[i] of rank `src`; scatter_list only on `src`."""
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group, "scatter")
    if pg is None:
        return None
    root = _group_rank(pg, "scatter", src, group_src, "src", default=0)
    t = _pin(tensor)
    ins = None
    if pg.rank() == root:
        if not scatter_list:
            raise ValueError("Argument ``scatter_list`` must be specified on source rank.")
        _check_tensor_list(scatter_list, "scatter_list")
        if len(scatter_list) != pg.size():
            raise ValueError(f"scatter: scatter_list has {len(scatter_list)} tensors but the group has {pg.size()} "
                             "ranks")
        ins = [_pin(x) for x in scatter_list]
        for x in ins:
            _same_dtype("scatter", t, x)
        if ins[root].numel() != t.numel():
            raise RuntimeError(f"scatter: scatter_list[{root}] has {ins[root].numel()} elements but the output tensor "
                               f"has {t.numel()}")
        _same_device("scatter", [t] + ins)
    elif scatter_list:
        raise ValueError("Argument ``scatter_list`` must NOT be specified on non-source ranks.")
    _writable("scatter", t)
    _begin(pg, "scatter", [t], f", Root={root}")
    return _run(pg, t.device, "scatter", lambda e: e.scatter(t, ins, root), async_op)


def _splits(op, name, splits, t, n):
    rows = t.shape[0] if t.dim() else 1
    if splits is None or len(splits) == 0:
        if rows % n:
            raise ValueError(f"{op}: Tensor's dim 0 does not divide equally across group size ({name} tensor of shape "
                             f"{list(t.shape)}, group size {n}); pass {name}_split_sizes")
        return [rows // n] * n
    splits = [int(s) for s in splits]
    if len(splits) != n or any(s < 0 for s in splits):
        raise ValueError(f"{op}: {name}_split_sizes must have one non-negative size per rank ({n}), got {splits}")
    if sum(splits) != rows:
        raise ValueError(f"{op}: {name}_split_sizes {splits} add up to {sum(splits)} but the {name} tensor's dim 0 is "
                         f"{rows}")
    return splits


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,  # noqa: A002
                      async_op=False):
    """Split `input` along dim 0 and send piece i to group rank i; `output` receives the pieces in rank order."""
    _check_single_tensor(output, "output")
    _check_single_tensor(input, "input")
    pg = resolve_group(group, "all_to_all_single")
    if pg is None:
        return None
    out, t = _pin(output), _pin(input)
    _same_dtype("all_to_all_single", out, t)
    n = pg.size()
    in_splits = _splits("all_to_all_single", "input", input_split_sizes, t, n)
    out_splits = _splits("all_to_all_single", "output", output_split_sizes, out, n)
    if t.dim() > 1 and out.dim() > 1 and tuple(t.shape[1:]) != tuple(out.shape[1:]):
        raise ValueError(f"all_to_all_single: input and output must have the same size after dim 0 (input "
                         f"{list(t.shape)}, output {list(out.shape)})")
    dev = _same_device("all_to_all_single", [out, t])
    _writable("all_to_all_single", out)
    _begin(pg, "all_to_all_single", [], f", TensorDtypes=[{t.dtype.torch_name}], TensorDeviceTypes=[{dev.type}]")
    return _run(pg, dev, "all_to_all_single", lambda e: e.all_to_all_single(out, t, out_splits, in_splits), async_op)


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier (within the group's timeout)."""
    pg = resolve_group(group, "barrier")
    if pg is None:
        return None
    _begin(pg, "barrier", [])
    dev = _cpu()
    eng = pg._mpi_engine()  # a host-level barrier over MPI, whatever engine serves the group's tensors
    with record_function("mpi:barrier"):
        work = eng.barrier(dev)
        return _done(work, async_op)


# -- point to point -------------------------------------------------------------------------------------------------------
def _tag(tag, op):
    if not isinstance(tag, int) or isinstance(tag, bool) or tag < 0:
        raise ValueError(f"{op}: tag must be a non-negative int, got {tag!r}")
    from .process_group import _mpi
    ub = _mpi().COMM_WORLD.Get_attr(_mpi().TAG_UB)
    if ub is not None and tag > ub:
        raise ValueError(f"{op}: tag {tag} is larger than the MPI library's largest tag ({ub})")
    return tag


def _p2p(op, tensor, peer, group, tag, group_peer, what):
    _check_single_tensor(tensor, "tensor")
    pg = resolve_group(group, op)
    if pg is None:
        return None, None, None
    if op in ("recv", "irecv") and peer is None and group_peer is None:
        r = None
    else:
        r = _group_rank(pg, op, peer, group_peer, what)
        if r == pg.rank():
            kind = "destination" if what == "dst" else "source"
            raise ValueError(f"Invalid {kind} rank: {kind} rank should not be the same as the rank of the current "
                             "process.")
    t = _pin(tensor)
    pg._check_usable(op)
    return pg, t, r


def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst` without waiting; returns a Work."""
    pg, t, r = _p2p("isend", tensor, dst, group, _tag(tag, "isend"), group_dst, "dst")
    if pg is None:
        return None
    return _run(pg, t.device, "send", lambda e: e.send(t, r, tag))


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (any rank when None) without waiting; returns a Work."""
    pg, t, r = _p2p("irecv", tensor, src, group, _tag(tag, "irecv"), group_src, "src")
    if pg is None:
        return None
    _writable("irecv", t)
    return _run(pg, t.device, "recv", lambda e: e.recv(t, r, tag))


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    """Send `tensor` to rank `dst` and wait until the send buffer is free (within the timeout)."""
    work = isend(tensor, dst, group, tag, group_dst)
    if work is not None:
        work._wait(None, explicit=False)


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receive into `tensor` from rank `src` (any rank when None); returns the sender's global rank (-1 outside
    the group)."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work._wait(None, explicit=False)
    return work.source_rank()


class P2POp:
    """One operation of batch_isend_irecv: `op` is isend or irecv (torch.distributed.P2POp)."""

    __slots__ = ("op", "tensor", "peer", "group", "tag", "group_peer")

    def __init__(self, op, tensor, peer=None, group=None, tag=0, group_peer=None):
        if op not in (isend, irecv):
            raise ValueError("Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                             "``torch.distributed.irecv``.")
        _check_single_tensor(tensor, "tensor")
        self.op, self.tensor, self.peer, self.group, self.tag, self.group_peer = op, tensor, peer, group, tag, group_peer

    def __repr__(self):
        return f"P2POp({self.op.__name__}, peer={self.peer}, group_peer={self.group_peer}, tag={self.tag})"


def batch_isend_irecv(p2p_op_list):
    """Post every send and receive of the list together and return their works. Over NCCL they are issued as
    one NCCL group, so rings and exchanges where every rank both sends and receives cannot deadlock."""
    if not isinstance(p2p_op_list, list) or not p2p_op_list or not all(isinstance(p, P2POp) for p in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    groups = {id(p.group) for p in p2p_op_list}
    if len(groups) > 1:
        raise ValueError("All ops need to use the same group.")
    works = []
    for p in p2p_op_list:
        if p.op is isend:
            works.append(isend(p.tensor, p.peer, p.group, p.tag, p.group_peer))
        else:
            works.append(irecv(p.tensor, p.peer, p.group, p.tag, p.group_peer))
    return works
