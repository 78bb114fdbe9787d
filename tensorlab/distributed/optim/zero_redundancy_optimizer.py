"""ZeroRedundancyOptimizer (torch.distributed.optim.ZeroRedundancyOptimizer; ZeRO stage 1): every
rank holds the optimizer state of its shard of the parameters only.

- Sharding: parameter group by group, largest parameter first, each parameter goes to the rank with
  the fewest elements so far (ties: the lowest rank), as torch assigns them, so a state_dict is
  portable between the two. Every rank computes the same assignment without communicating.
- step(): the hyperparameters of the global groups (what schedulers and users change) are copied
  to the local optimizer, it steps its shard, then each rank broadcasts its shard (parameter by
  parameter, or one flat buffer per rank and dtype with parameters_as_bucket_view=True), so every
  rank ends with every parameter updated: the same values a plain optimizer over all parameters
  gives when every rank holds the same gradients (after DDP's all-reduce).
- consolidate_state_dict(to): the local state dicts (copied to the CPU) are gathered on rank `to`;
  state_dict() there returns the state in a plain optimizer's layout (global parameter indices).
  load_state_dict() takes such a dict on every rank; each keeps its shard's entries.
- add_param_group() (on every rank): the new group is sharded after the existing ones, whose
  assignment does not change."""
from __future__ import annotations

import copy
from itertools import chain

from ... import distributed as dist  # noqa: F401 (the package, for its collectives)
from ...nn._grad import typename
from ...optim.optimizer import Optimizer
from ...tensor import Tensor


def _to_device(value, device):
    """A copy of `value` (state dict nesting) with its tensors on `device`."""
    if isinstance(value, Tensor):
        return value.detach().to(device, copy=True)
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _copy_hyperparameters(src_groups, dst_groups):
    for src, dst in zip(src_groups, dst_groups):
        for k, v in src.items():
            if k != "params":
                dst[k] = v


class ZeroRedundancyOptimizer(Optimizer):
    """Wrap `optimizer_class` (e.g. tl.optim.Adam) so that each rank of `process_group` (default:
    the world) keeps the state of its shard only; `**defaults` go to optimizer_class. Every rank
    must call step(), consolidate_state_dict(), load_state_dict() and add_param_group()."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view=False,
                 overlap_with_ddp=False, **defaults):
        if isinstance(params, Tensor):
            raise TypeError(f"`params` argument should be an iterable of Tensors, but got {typename(params)}")
        try:
            params = list(params)
        except TypeError:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts, but got "
                            f"{typename(params)}") from None
        if not params:
            raise ValueError("ZeroRedundancyOptimizer got an empty parameter list")
        if all(isinstance(p, dict) for p in params):
            for g in params:
                if "params" not in g:
                    raise ValueError("Each parameter group passed-in via `params` must have a 'params' key "
                                     "mapping to the parameters in the group")
            flat = [p for g in params for p in ([g["params"]] if isinstance(g["params"], Tensor) else g["params"])]
        elif all(isinstance(p, Tensor) for p in params):
            flat = params
        else:
            raise TypeError("`params` argument should be an iterable of Tensors or dicts")
        kinds = {(type(p), p.dtype, p.device.type) for p in flat}
        if len({k[0] for k in kinds}) > 1:
            raise ValueError("ZeroRedundancyOptimizer only supports using the same dense type for all parameters "
                             f"but got {sorted(k[0].__name__ for k in kinds)}")
        if overlap_with_ddp:
            raise RuntimeError("ZeroRedundancyOptimizer(overlap_with_ddp=True): tensorlab's DistributedDataParallel "
                               "has no communication hook to run the optimizer step in; use overlap_with_ddp=False "
                               "(step() after backward(), with the same result)")
        if not dist.is_initialized():
            raise RuntimeError("ZeroRedundancyOptimizer: the default process group has not been initialized; call "
                               "tl.distributed.init_process_group() first (every rank builds the optimizer)")
        self.initialized = False
        super().__init__(params, defaults)
        self.process_group = process_group if process_group is not None else dist.group.WORLD
        self.world_size = dist.get_world_size(self.process_group)
        self.rank = dist.get_rank(self.process_group)
        self.global_rank = dist.get_global_rank(self.process_group, self.rank)
        self.parameters_as_bucket_view = bool(parameters_as_bucket_view)
        self._overlap_with_ddp = False
        self._optim_defaults = defaults
        self._optim_constructor = optimizer_class
        self._partition = None
        self._all_state_dicts = []
        self.optim = optimizer_class(self._partition_parameters()[self.rank], **defaults)
        self.initialized = True

    # -- sharding ----------------------------------------------------------------------------------
    def _partition_parameters(self):
        """For each rank, its param groups: copies of the global groups holding the rank's share."""
        if self._partition is None:
            per_rank = [[] for _ in range(self.world_size)]
            load = [0] * self.world_size
            for group in self.param_groups:
                shares = [[] for _ in range(self.world_size)]
                for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                    r = min(range(self.world_size), key=lambda i: (load[i], i))
                    shares[r].append(p)
                    load[r] += p.numel()
                for r in range(self.world_size):
                    g = copy.copy(group)
                    g["params"] = shares[r]
                    per_rank[r].append(g)
            self._partition = per_rank
        return self._partition

    def _owner(self):
        return {p: r for r, groups in enumerate(self._partition_parameters()) for g in groups for p in g["params"]}

    def _global_params(self):
        return list(chain.from_iterable(g["params"] for g in self.param_groups))

    def add_param_group(self, param_group):
        """Add a group (on every rank): it is sharded after the existing groups."""
        super().add_param_group(param_group)
        if getattr(self, "initialized", False):
            self._partition = None
            mine = self._partition_parameters()[self.rank]
            if len(mine) == len(self.optim.param_groups) + 1:
                self.optim.add_param_group(mine[-1])

    # -- stepping -----------------------------------------------------------------------------------
    def step(self, closure=None, **kwargs):
        """The local optimizer steps this rank's shard, then every shard is broadcast from its owner."""
        _copy_hyperparameters(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(**kwargs) if closure is None else self.optim.step(closure=closure, **kwargs)
        _copy_hyperparameters(self.optim.param_groups, self.param_groups)
        self._sync_params()
        return loss

    step._tl_atomic = True  # the local optimizer's step is atomic; the broadcasts that follow are collectives

    def _sync_params(self):
        for r, groups in enumerate(self._partition_parameters()):
            src = dist.get_global_rank(self.process_group, r)
            params = [p for g in groups for p in g["params"]]
            if not self.parameters_as_bucket_view:
                for p in params:
                    dist.broadcast(p.detach(), src=src, group=self.process_group)
                continue
            # one flat buffer per (device, dtype) of this rank's shard
            kinds = {}
            for p in params:
                kinds.setdefault((str(p.device), p.dtype), []).append(p)
            for _, ps in sorted(kinds.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
                from ...ops.shape import cat
                flat = cat([p.detach().reshape(-1) for p in ps])
                dist.broadcast(flat, src=src, group=self.process_group)
                if self.rank != r:
                    offset = 0
                    for p in ps:
                        n = p.numel()
                        p.detach().copy_(flat[offset:offset + n].view(p.shape))
                        offset += n

    def zero_grad(self, set_to_none=True):
        """Clear the gradients of every parameter (not only this rank's shard)."""
        super().zero_grad(set_to_none)

    # -- state --------------------------------------------------------------------------------------
    def consolidate_state_dict(self, to=0):
        """Gather every rank's local optimizer state on rank `to` (call on every rank)."""
        _copy_hyperparameters(self.param_groups, self.optim.param_groups)
        local = _to_device(self.optim.state_dict(), "cpu")
        gathered = [None] * self.world_size if self.rank == to else None
        dist.gather_object(local, gathered, dst=dist.get_global_rank(self.process_group, to),
                           group=self.process_group)
        self._all_state_dicts = gathered if self.rank == to else []

    def state_dict(self):
        """The consolidated state in a plain optimizer's layout (only on the rank consolidated to)."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save the global state.")
        index = {p: i for i, p in enumerate(self._global_params())}
        groups = []
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["params"] = [index[p] for p in g["params"]]
            groups.append(packed)
        state = {}
        for r, local in enumerate(self._all_state_dicts):
            for local_group, shard in zip(local["param_groups"], self._partition_parameters()[r]):
                for i, p in zip(local_group["params"], shard["params"]):
                    if i in local["state"]:
                        state[index[p]] = local["state"][i]
        return {"state": dict(sorted(state.items())), "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Load a state_dict() (call on every rank): the hyperparameters of every group, and the
        state of this rank's shard into the local optimizer."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, self.param_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        params = self._global_params()
        owner = self._owner()
        local_state = {}
        for i, value in state_dict["state"].items():
            p = params[i]
            if owner[p] == self.rank:
                moved = _to_device(value, p.device)
                # 0-dim states (step counters) stay on the CPU, as a plain optimizer keeps them
                local_state[p] = {k: (v.cpu() if isinstance(v, Tensor) and v.dim() == 0 else v)
                                  for k, v in moved.items()} if isinstance(moved, dict) else moved
        _copy_hyperparameters(saved_groups, self.param_groups)
        _copy_hyperparameters(self.param_groups, self.optim.param_groups)
        self.optim.state.clear()
        self.optim.state.update(local_state)

    def __repr__(self):
        return f"ZeroRedundancyOptimizer (rank {self.rank} of {self.world_size}) over {self.optim!r}"
