"""DistributedDataParallel's gradient reducer (torch's Reducer, c10d/reducer.cpp, in Python).

Parameters that require grad are cut into buckets in reverse registration order (the order
backward usually produces their gradients), one (dtype, device) per bucket, a bucket closing once
it holds `cap` bytes (the first one at `first_cap`: torch's 1 MiB, so the first reduction starts
early). Each bucket owns one flat buffer whose slices are its parameters' gradients.

Every iteration that syncs (DDP.forward with grad enabled, outside no_sync) arms the reducer; a
post-accumulate-grad hook on each parameter then copies the parameter's gradient, divided by the
world size, into its slice and marks it ready. When a bucket's last parameter is ready and every
bucket before it has been launched, its all_reduce (SUM, async_op=True) starts at once, so the
reduction overlaps the rest of backward, and the buckets go out in the same order on every rank.
When the last bucket has gone out, a callback queued on the autograd engine waits on every
reduction at the end of backward and copies the averaged slices back into .grad (with
gradient_as_bucket_view=True the .grad tensors are the slices themselves).

With find_unused_parameters=True, the forward's outputs are traversed to the AccumulateGrad nodes
they reach; the other parameters are marked ready (their slice is their current .grad or zeros)
as soon as backward starts, and a bitmap of the parameters each rank used is all-reduced with the
buckets, so a parameter no rank used keeps its .grad untouched (None stays None), as torch's."""
from __future__ import annotations

import weakref

from ...autograd import engine
from ...autograd.graph import AccumulateGrad, edge_fn
from ...autograd.grad_mode import no_grad
from ...ops.elementwise import mul
from ...tensor import Tensor

_MB = 1024 * 1024
DEFAULT_FIRST_BUCKET_BYTES = 1 * _MB  # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES


def bucket_assignment(params, caps, order=None):
    """Lists of parameter indices, one per bucket, in launch order (torch's
    _compute_bucket_assignment_by_size as DDP uses it). Parameters go into one open bucket per
    (dtype, device), which closes once it holds at least its cap in bytes (caps[0] for a key's first
    bucket, then the next cap, the last one repeating); buckets are listed as they close, then the
    ones left open (newest key first). Without `order` (construction) the parameters go in registration order, the
    buckets are sorted by their smallest index and the list is reversed: the last layers' bucket
    goes out first. With `order` (the order gradients became ready in the first iteration, for the
    rebuild) the parameters go in that order and the buckets stay as listed."""
    open_ = {}
    done = []
    for i in (range(len(params)) if order is None else order):
        p = params[i]
        key = (p.dtype, str(p.device))
        b = open_.get(key)
        if b is None:
            b = open_[key] = {"idx": [], "bytes": 0, "limit": 0}
        b["idx"].append(i)
        b["bytes"] += p.numel() * p.element_size()
        if b["bytes"] >= caps[min(b["limit"], len(caps) - 1)]:
            done.append(b["idx"])
            open_[key] = {"idx": [], "bytes": 0, "limit": b["limit"] + 1}
    # the ones left open: torch lists them in its hash map's order, which for these few keys is the
    # reverse of their first appearance
    done += [b["idx"] for b in reversed(open_.values()) if b["idx"]]
    if order is None:
        done.sort(key=min)
        done.reverse()
    return done


class _Bucket:
    __slots__ = ("indices", "offsets", "buffer", "views", "pending", "work")

    def __init__(self, indices, params):
        from ...ops.creation import zeros
        self.indices = indices
        self.offsets = []
        total = 0
        for i in indices:
            self.offsets.append(total)
            total += params[i].numel()
        p0 = params[indices[0]]
        self.buffer = zeros(total, dtype=p0.dtype, device=p0.device)
        self.views = [self.buffer[o:o + params[i].numel()].view(params[i].shape)
                      for i, o in zip(indices, self.offsets)]
        self.pending = len(indices)
        self.work = None


def _find_tensors(obj):
    """Every tensor in a forward's output (tensors, lists, tuples, dicts, dataclasses), as torch's."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _find_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _find_tensors(o)]
    import dataclasses
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [t for f in dataclasses.fields(obj) for t in _find_tensors(getattr(obj, f.name))]
    return []


def _reached_leaves(outputs):
    """ids of the leaf tensors whose AccumulateGrad nodes the outputs' graphs reach."""
    stack = []
    for t in outputs:
        if t.requires_grad:
            fn = edge_fn(t)
            if fn is not None:
                stack.append(fn)
    seen = set(id(n) for n in stack)
    leaves = set()
    while stack:
        n = stack.pop()
        if isinstance(n, AccumulateGrad):
            leaves.add(id(n.variable))
            continue
        for nxt, _ in n.next_functions:
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return leaves


class Reducer:
    def __init__(self, params, names, group, caps, rebuild_caps, find_unused_parameters, gradient_as_bucket_view,
                 dist):
        self.params = params
        self.names = names
        self.group = group
        self.dist = dist
        self.world_size = dist.get_world_size(group)
        self.rank = dist.get_rank(group)
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.rebuild_caps = rebuild_caps  # None: the construction buckets stay
        self._set_buckets(bucket_assignment(params, caps))
        self.expect_hooks = False
        self.require_finalize = False
        self.next_bucket = 0
        self.ready = set()
        self.unused = []
        self.unused_marked = True
        self.used = None  # find_unused_parameters: 1 for each parameter this rank's backward reached
        self.local_used = None
        self.local_used_work = None
        self.finalize_queued = False
        self.ready_order = []  # the order gradients became ready in the last synced backward
        self.warn_if_all_used = False  # DDP sets it when the user asked for find_unused_parameters
        me = weakref.ref(self)
        handles = [p.register_post_accumulate_grad_hook(_hook(me, i)) for i, p in enumerate(params)]
        # hooks outlive the reducer on the parameters; remove them when it goes away, as torch's ~Reducer
        weakref.finalize(self, _remove, handles)
        if gradient_as_bucket_view:
            with no_grad():
                for i, p in enumerate(params):
                    if p.grad is not None:
                        view = self._view(i)
                        view.copy_(p.grad)
                        p.grad = view

    def _set_buckets(self, bucket_indices):
        self.bucket_indices = bucket_indices
        self.buckets = [_Bucket(idx, self.params) for idx in bucket_indices]
        self.locate = {}
        for b, bucket in enumerate(self.buckets):
            for k, i in enumerate(bucket.indices):
                self.locate[i] = (b, k)

    def _rebuild_buckets(self):
        """After the first synced iteration: buckets in the order the gradients became ready
        (rank 0's order, so every rank launches the same buckets), with the real caps (torch's
        Reducer::rebuild_buckets). Returns whether it rebuilt."""
        if self.rebuild_caps is None or len(self.ready_order) != len(self.params):
            return False
        from ...ops.creation import tensor
        order = tensor(self.ready_order, dtype=_int64(), device=self.params[0].device)
        self.dist.broadcast(order, _global_rank(self.dist, self.group, 0), group=self.group)
        old = {i: self._view(i) for i in range(len(self.params))}
        self._set_buckets(bucket_assignment(self.params, self.rebuild_caps, order.tolist()))
        self.rebuild_caps = None
        if self.gradient_as_bucket_view:
            with no_grad():
                for i, p in enumerate(self.params):
                    if p.grad is not None and p.grad is old[i]:
                        view = self._view(i)
                        view.copy_(p.grad)
                        p.grad = view
        return True

    def _view(self, i):
        b, k = self.locate[i]
        return self.buckets[b].views[k]

    # -- per iteration ---------------------------------------------------------------------------------
    def prepare_for_forward(self):
        if self.require_finalize:
            self._raise_unfinished()
        self._rebuild_buckets()

    def prepare_for_backward(self, outputs):
        """Arm the hooks for the next backward; with find_unused_parameters, `outputs` are the
        forward's tensors and the parameters their graph does not reach are the unused ones."""
        self.expect_hooks = True
        self.next_bucket = 0
        self.ready = set()
        self.ready_order = []
        self.finalize_queued = False
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
            bucket.work = None
        if self.find_unused_parameters:
            reached = _reached_leaves(outputs)
            self.unused = [i for i, p in enumerate(self.params) if id(p) not in reached]
            if not self.unused and self.warn_if_all_used:
                _warn_all_used()
            self.unused_marked = False
            self.used = [0] * len(self.params)
        else:
            self.unused = []
            self.unused_marked = True

    def backward_started(self):
        """Called first in backward (the outputs' sink node): mark the unused parameters ready."""
        if self.expect_hooks and not self.unused_marked:
            self.unused_marked = True
            for i in self.unused:
                self._mark_ready(i, used=False)

    def hook(self, i):
        if not self.expect_hooks:
            return  # no_sync, or a backward DDP did not arm: gradients just accumulate
        if not self.unused_marked:
            self.backward_started()
        self._mark_ready(i, used=True)

    def _mark_ready(self, i, used):
        if i in self.ready:
            raise RuntimeError(
                f"Expected to mark a variable ready only once. This error is caused by one of the following reasons: "
                f"1) Use of a module parameter outside the `forward` function. Please make sure model parameters are "
                f"not shared across multiple concurrent forward-backward passes, or try to use _set_static_graph() "
                f"as a workaround if this module graph does not change during training loop. 2) Reused parameters "
                f"in multiple reentrant backward passes. Parameter at index {i} with name {self.names[i]} has been "
                f"marked as ready twice. This means that multiple autograd engine hooks have fired for this "
                f"particular parameter during this iteration.")
        self.ready.add(i)
        self.ready_order.append(i)
        self.require_finalize = True
        p = self.params[i]
        view = self._view(i)
        # torch's arithmetic: grad * (1 / world_size) written into the slice in one op, or, for a
        # .grad that already is the slice (gradient_as_bucket_view), divided in place
        with no_grad():
            g = p.grad
            if g is None:
                view.zero_()
            elif g is view:
                view.div_(self.world_size)
            else:
                mul(g, 1.0 / self.world_size, out=view)
                if self.gradient_as_bucket_view:
                    p.grad = view
        if used and self.used is not None:
            self.used[i] = 1
        b, _ = self.locate[i]
        self.buckets[b].pending -= 1
        self._launch_ready()

    def _launch_ready(self):
        dist = self.dist
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            bucket.work = dist.all_reduce(bucket.buffer, op=dist.ReduceOp.SUM, group=self.group, async_op=True)
            self.next_bucket += 1
        if self.next_bucket == len(self.buckets) and not self.finalize_queued:
            self.finalize_queued = True
            if self.used is not None:
                from ...ops.creation import tensor
                self.local_used = tensor(self.used, dtype=_int32(), device=self.params[0].device)
                self.local_used_work = dist.all_reduce(self.local_used, op=dist.ReduceOp.SUM, group=self.group,
                                                       async_op=True)
            engine.queue_callback(self.finalize)

    def finalize(self):
        """End of backward: wait for every reduction, then hand the averaged gradients to .grad."""
        self.expect_hooks = False
        try:
            for bucket in self.buckets:
                bucket.work.wait()
            globally_used = None
            if self.local_used_work is not None:
                self.local_used_work.wait()
                globally_used = self.local_used.tolist()
        except BaseException:
            # a failed reduction (a dead rank, the group's timeout) raises from backward; the iteration
            # is over, so the next forward must not report it as parameters that got no gradient
            self.require_finalize = False
            raise
        finally:
            self.local_used_work = None
        with no_grad():
            for bucket in self.buckets:
                for i, view in zip(bucket.indices, bucket.views):
                    p = self.params[i]
                    if globally_used is not None and not globally_used[i]:
                        continue  # no rank used it: its .grad stays as it was
                    if self.gradient_as_bucket_view:
                        if p.grad is None:
                            p.grad = view
                    elif p.grad is None:
                        p.grad = view.clone()
                    else:
                        p.grad.copy_(view)
        self.require_finalize = False

    def _raise_unfinished(self):
        missing = [i for i in range(len(self.params)) if i not in self.ready]
        if not self.find_unused_parameters:
            why = ("You can enable unused parameter detection by passing the keyword argument "
                   "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n")
        else:
            why = ("Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` outputs "
                   "participate in computing loss. You can fix this by ")
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. " + why +
            "making sure all `forward` function outputs participate in calculating loss. \nIf you already have done "
            "the above, then the distributed data parallel module wasn't able to locate the output tensors in the "
            "return value of your module's `forward` function. Please include the loss function and the structure "
            "of the return value of `forward` of your module when reporting this issue (e.g. list, dict, iterable)."
            f"\nParameter indices which did not receive grad for rank {self.rank}: {' '.join(map(str, missing))}"
            f"\nParameters which did not receive grad for rank {self.rank}: "
            f"{', '.join(self.names[i] for i in missing)}")


_WARNED = []


def _warn_all_used():
    """torch's TORCH_WARN_ONCE (once per process) when the graph search found every parameter used."""
    if not _WARNED:
        _WARNED.append(True)
        from ... import _warn
        _warn.warn("find_unused_parameters=True was specified in DDP constructor, but did not find any unused "
                   "parameters in the forward pass. This flag results in an extra traversal of the autograd graph "
                   "every iteration,  which can adversely affect performance. If your model indeed never has any "
                   "unused parameters in the forward pass, consider turning this flag off. Note that this warning "
                   "may be a false positive if your model has flow control causing later iterations to have unused "
                   "parameters.", UserWarning)


def _int64():
    from ... import dtypes
    return dtypes.int64


def _global_rank(dist, group, group_rank):
    get = getattr(dist, "get_global_rank", None)
    if group is None or get is None:
        return group_rank
    return get(group, group_rank)


def _int32():
    from ... import dtypes
    return dtypes.int32


def _hook(ref, i):
    def hook(param):
        reducer = ref()
        # a deepcopy of the module (an EMA copy, say) may carry this hook along: only the
        # reducer's own parameter counts
        if reducer is not None and param is reducer.params[i]:
            reducer.hook(i)
    return hook


def _remove(handles):
    for h in handles:
        h.remove()
