"""torch.nn.parallel.DistributedDataParallel over tensorlab.distributed.

Construction checks that every rank holds the same parameters (count and shapes, naming the ranks
that differ) and broadcasts parameters and buffers from the group's rank 0; backward all-reduces
the averaged gradients in buckets from autograd hooks (nn/parallel/_reducer.py); each synced
forward broadcasts the buffers from rank 0 first (broadcast_buffers / forward_sync_buffers).
The wrapped module is `.module`, so state_dict keys carry the `module.` prefix, as torch's."""
from __future__ import annotations

import contextlib
import sys

from ... import _warn
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor
from ..module import Module
from ._reducer import DEFAULT_FIRST_BUCKET_BYTES, Reducer, _find_tensors, _global_rank

__all__ = ["DistributedDataParallel"]

_MB = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
_BROADCAST_BUCKET_BYTES = 250 * _MB  # torch's broadcast_bucket_size for the initial sync


def _dist():
    from ... import distributed
    return distributed


def _device_index(d):
    from ...device import device as _device
    if isinstance(d, int):
        return d
    dev = _device(d)
    return dev.index if dev.index is not None else 0


def _to_device(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_to_device(o, device) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to_device(o, device) for o in obj)
    if isinstance(obj, dict):
        return {k: _to_device(v, device) for k, v in obj.items()}
    return obj


def _coalesced_broadcast(tensors, src, group, dist, cap=_BROADCAST_BUCKET_BYTES):
    """Broadcast `tensors` from global rank `src`: one flat buffer per (dtype, device) and up to
    `cap` bytes, copied back into each tensor (torch's _broadcast_coalesced)."""
    from ...ops.shape import cat
    groups = {}
    for t in tensors:
        groups.setdefault((t.dtype, str(t.device)), []).append(t)
    with no_grad():
        for ts in groups.values():
            chunk, size = [], 0
            for t in ts + [None]:
                if t is not None:
                    chunk.append(t)
                    size += t.numel() * t.element_size()
                if chunk and (t is None or size >= cap):
                    flat = cat([c.reshape(-1) for c in chunk])
                    dist.broadcast(flat, src, group=group)
                    o = 0
                    for c in chunk:
                        c.copy_(flat[o:o + c.numel()].view(c.shape))
                        o += c.numel()
                    chunk, size = [], 0


def _verify_param_shapes(params, group, dist, rank):
    """torch's _verify_param_shape_across_processes: every rank must hold as many parameters, of
    the same shapes, or DDP would pair the wrong gradients (or hang)."""
    from ...ops.creation import tensor
    world = dist.get_world_size(group)
    dev = params[0].device

    def gather(values):
        mine = tensor(values, dtype=_int64(), device=dev)
        out = [tensor([0] * len(values), dtype=_int64(), device=dev) for _ in range(world)]
        dist.all_gather(out, mine, group=group)
        return [o.tolist() for o in out]
    counts = [c[0] for c in gather([len(params)])]
    for r, c in enumerate(counts):
        if c != counts[rank]:
            raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has {counts[rank]} params, "
                               f"while rank {r} has inconsistent {c} params.")
    ndims = gather([p.dim() for p in params])
    dims = gather([n for p in params for n in p.shape] or [0])
    for r in range(world):
        if ndims[r] != ndims[rank] or dims[r] != dims[rank]:
            at = 0
            for k, p in enumerate(params):
                theirs = dims[r][at:at + ndims[r][k]] if ndims[r][k] == p.dim() else None
                if theirs is None or theirs != list(p.shape):
                    shape = dims[r][at:at + ndims[r][k]]
                    raise RuntimeError(f"DDP expects same model across all ranks, but Rank {rank} has parameter {k} "
                                       f"of shape {list(p.shape)}, while rank {r} has inconsistent shape {shape}.")
                at += p.dim()


def _int64():
    from ... import dtypes
    return dtypes.int64


class DistributedDataParallel(Module):
    """Data parallelism across processes: wrap a module on each rank (after
    tl.distributed.init_process_group); each rank runs forward/backward on its own batch and
    backward leaves every rank with the gradients averaged over all ranks, so identical optimizer
    steps keep the replicas identical."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=None, init_sync=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, delay_all_reduce_named_params=None,
                 param_to_hook_all_reduce=None, mixed_precision=None, device_mesh=None,
                 skip_all_reduce_unused_params=False, bucket_cap_mb_list=None, batched_grad_copy=False,
                 forward_sync_buffers=None):
        super().__init__()
        dist = _dist()
        if (delay_all_reduce_named_params is not None) != (param_to_hook_all_reduce is not None):
            raise ValueError("delay_all_reduce_named_params and param_to_hook_all_reduce need to be set at the same "
                             "time.")
        unsupported = [n for n, v in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                                      ("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                                      ("bucket_cap_mb_list", bucket_cap_mb_list)) if v is not None]
        if skip_all_reduce_unused_params:
            unsupported.append("skip_all_reduce_unused_params=True")
        if unsupported:
            raise ValueError(f"DistributedDataParallel: tensorlab does not support {', '.join(unsupported)}; leave "
                             f"{'it' if len(unsupported) == 1 else 'them'} None (cast the module yourself for mixed "
                             f"precision; pass process_group instead of a device mesh)")
        self.process_group = process_group if process_group is not None else _default_group(dist)
        ignore = set(getattr(module, "_ddp_params_and_buffers_to_ignore", ()))
        self.parameters_to_ignore = ignore
        named = [(n, p) for n, p in module.named_parameters() if n not in ignore]
        self._module_parameters = [p for _, p in named]
        if not any(p.requires_grad for p in self._module_parameters):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        if device_ids is not None and len(device_ids) > 1:
            raise ValueError("device_ids can only be None or contain a single element.")
        devices = {str(p.device) for p in self._module_parameters}
        types = {p.device.type for p in self._module_parameters}
        if len(types) != 1:
            raise ValueError(f"DistributedDataParallel's input module must be on the same type of devices, but input "
                             f"module parameters locate in {types}.")
        self.device_type = next(iter(types))
        self.is_multi_device_module = len(devices) > 1
        if not device_ids or self.device_type == "cpu" or self.is_multi_device_module:
            if device_ids or output_device:
                raise ValueError(f"DistributedDataParallel device_ids and output_device arguments only work with "
                                 f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                                 f"{device_ids}, output_device {output_device}, and module parameters "
                                 f"{{{', '.join(sorted(devices))}}}.")
            self.device_ids = None
            self.output_device = None
        else:
            self.device_ids = [_device_index(d) for d in device_ids]
            self.output_device = _device_index(output_device if output_device is not None else device_ids[0])
        self.dim = dim
        self.module = module
        self.device = self._module_parameters[0].device
        if broadcast_buffers is not None:
            if forward_sync_buffers is not None:
                _warn.warn("Both `broadcast_buffers` and `forward_sync_buffers` were specified. `broadcast_buffers` "
                              "is deprecated and its value is ignored when `forward_sync_buffers` is provided.",
                              FutureWarning)
            else:
                _warn.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` instead. IMPORTANT: "
                              "unlike `broadcast_buffers=False`, `forward_sync_buffers=False` still syncs buffers at "
                              "init. If you rely on buffers NOT being synced at init (e.g. rank-local buffers), keep "
                              "using `broadcast_buffers=False` until `init_sync_buffers` is available.",
                              FutureWarning)
        if forward_sync_buffers is not None:
            self.forward_sync_buffers = forward_sync_buffers
            init_sync_buffers = True
        else:
            self.forward_sync_buffers = broadcast_buffers if broadcast_buffers is not None else True
            init_sync_buffers = self.forward_sync_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.skip_all_reduce_unused_params = skip_all_reduce_unused_params
        self.batched_grad_copy = batched_grad_copy
        self.mixed_precision = None
        if check_reduction:
            _warn.warn("The `check_reduction` argument in `DistributedDataParallel` module is deprecated. Please "
                          "avoid using it.", FutureWarning)
        self.broadcast_bucket_size = _BROADCAST_BUCKET_BYTES
        cap_mb = _DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap_mb * _MB)
        first = DEFAULT_FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self._rank = dist.get_rank(self.process_group)
        self._src = _global_rank(dist, self.process_group, 0)

        trainable = [(n, p) for n, p in named if p.requires_grad]
        params = [p for _, p in trainable]
        if init_sync:
            _verify_param_shapes(params, self.process_group, dist, self._rank)
            states = [p for _, p in named] + (self._buffers_to_sync() if init_sync_buffers else [])
            _coalesced_broadcast([t.detach() for t in states], self._src, self.process_group, dist,
                                 self.broadcast_bucket_size)
        # static_graph: torch's optimisation for graphs that never change; its guarantee (unused
        # parameters allowed) is what find_unused_parameters gives, so that is how it runs here
        self.static_graph = bool(static_graph)
        caps = [first, self.bucket_bytes_cap] if first < self.bucket_bytes_cap else [self.bucket_bytes_cap]
        # torch 2.13: without unused-parameter detection the first iteration runs one bucket per
        # dtype and device, and the buckets are rebuilt in the gradients' ready order after it
        rebuild = not find_unused_parameters or self.static_graph
        self.reducer = Reducer(params, [n for n, _ in trainable], self.process_group,
                               [sys.maxsize] if rebuild else caps, caps if rebuild else None,
                               find_unused_parameters or self.static_graph, gradient_as_bucket_view, dist)
        self.reducer.warn_if_all_used = bool(find_unused_parameters) and not self.static_graph

    # -- buffers ---------------------------------------------------------------------------------------
    @property
    def broadcast_buffers(self):
        return self.forward_sync_buffers

    @broadcast_buffers.setter
    def broadcast_buffers(self, value):
        self.forward_sync_buffers = value

    def _buffers_to_sync(self):
        return [b for n, b in self.module.named_buffers() if n not in self.parameters_to_ignore]

    def will_sync_module_buffers(self):
        return self.require_forward_param_sync and self.forward_sync_buffers and len(self._buffers_to_sync()) > 0

    def _sync_buffers(self):
        _coalesced_broadcast([b.detach() for b in self._buffers_to_sync()], self._src, self.process_group, _dist())

    # -- forward ---------------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        grad = is_grad_enabled()
        if grad:
            self.reducer.prepare_for_forward()
        if self.will_sync_module_buffers():
            self._sync_buffers()
        if self.device_ids:
            from ...device import device as _device
            dev = _device(self.device_type, self.device_ids[0])
            inputs, kwargs = _to_device(inputs, dev), _to_device(kwargs, dev)
        output = self.module(*inputs, **kwargs)
        if grad and self.require_backward_grad_sync:
            self.require_forward_param_sync = True
            self.reducer.prepare_for_backward(_find_tensors(output) if self.reducer.find_unused_parameters else [])
        else:
            self.require_forward_param_sync = False
        return output

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, forward/backward passes accumulate gradients locally without communicating; the
        first synced backward after it reduces the accumulated gradients. The forward pass must run
        inside the context for its backward to skip the reduction."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def _set_static_graph(self):
        self.static_graph = True
        self.reducer.find_unused_parameters = True


def _default_group(dist):
    from ...distributed.process_group import default_group
    return default_group("DistributedDataParallel")  # ValueError, torch's message, before init_process_group
