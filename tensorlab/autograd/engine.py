"""The backward pass: tensorlab.autograd.backward / grad and Tensor.backward.

Nodes run in dependency order (a node runs once every gradient for its output has arrived;
among ready nodes the most recently created first, as torch's engine). Gradients for the same
node are summed; each gradient a derivative returns is fitted to its input (summed back over
broadcast dims, cast to the input's dtype and device). Without retain_graph, each node frees
its saved tensors after it ran."""
from __future__ import annotations

import heapq
import itertools
import threading

from ..tensor import Tensor
from . import anomaly
from .derivatives import sum_to
from .graph import AccumulateGrad, edge_fn
from .grad_mode import STATE


def _is_expandable(shape, to):
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


def fit(g, node, i):
    """The gradient `node` returned for input i, made to match that input's shape, dtype and
    device; a shape that cannot come from broadcasting the input is an error."""
    lay, dt, dev = node._metas[i]
    shape = lay.shape
    if g.shape != shape:
        if _is_expandable(shape, g.shape):
            g = sum_to(g, shape)
        elif [n for n in g.shape if n != 1] == [n for n in shape if n != 1]:  # only size-1 dims differ
            g = g.reshape(shape)
        else:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g.shape)} but expected shape compatible with {list(shape)}")
    if g._dtype is not dt or g._meta.storage.device != dev:
        if g._dtype.category == 3 and dt.category != 3:  # a real input of a complex op: the real part (torch)
            g = g.real
        g = g.to(dev, dt)
    return g


def _ones_like(t):
    from ..ops.creation import ones
    return ones(t.shape, dtype=t._dtype, device=t.device)


def _root_grads(tensors, grads, create_graph):
    if grads is None:
        grads = [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"Mismatch in number of gradients: got {len(grads)} gradients for {len(tensors)} outputs")
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not isinstance(t, Tensor):
            raise TypeError(f"backward: expected a Tensor as output {i}, got {type(t).__name__}")
        if g is None:
            if t._requires_grad:
                if t.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not t._dtype.is_floating_point:  # complex too (torch)
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{t._dtype}")
            g = _ones_like(t)
        elif not isinstance(g, Tensor):
            from ..ops.creation import full
            g = full(t.shape, g, dtype=t._dtype, device=t.device)
        elif g.shape != t.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and output[{i}] has a "
                               f"shape of {t.shape}.")
        if not t._requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        out.append(g if create_graph else g.detach())
    return out


def _collect(roots):
    """How many edges reach each node reachable from `roots` (keyed by the node itself: nodes
    hash by identity)."""
    deps = {}
    stack = list(roots)
    get = deps.get
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            c = get(nxt)
            if c is None:
                deps[nxt] = 1
                if nxt.next_functions:
                    stack.append(nxt)
            else:
                deps[nxt] = c + 1
    return deps


def _needed(roots, deps, targets):
    """The nodes through which some target is reached (only they need to run; a target itself
    runs only when another target lies beyond it)."""
    parents = {}
    for n in list(roots) + list(deps):
        for nxt, _ in n.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(n)
    need = set()
    stack = [p for t in targets for p in parents.get(t, ())]
    while stack:
        n = stack.pop()
        if n in need:
            continue
        need.add(n)
        stack.extend(parents.get(n, ()))
    return need


_acc_lock = threading.Lock()  # backward passes in several threads may share leaves


def _accumulate(var, g, create_graph, user):
    """Add g into var.grad, as torch's AccumulateGrad: the first gradient is stored (copied when
    it may be seen elsewhere), later ones are added in place (out of place with create_graph).
    Then the leaf's post-accumulate-grad hooks run (Tensor.register_post_accumulate_grad_hook)."""
    with _acc_lock:
        _accumulate_locked(var, g, create_graph, user)
    hooks = var.__dict__.get("_post_accumulate_grad_hooks")
    if hooks:
        for fn in list(hooks.values()):
            fn(var)


def _accumulate_locked(var, g, create_graph, user):
    if g.is_sparse or (var._grad is not None and var._grad.is_sparse):  # a sparse gradient (tensorlab/sparse)
        from ..sparse._ops import accumulate_grad
        var._grad = accumulate_grad(var._grad, g)
        return
    if var._grad is None:
        if not create_graph:
            shared = g._base is not None or id(g) in user or not g.is_contiguous()
            g = g.clone(memory_format=_contiguous()) if shared else g.detach()
        var._grad = g
    elif create_graph or var._grad._requires_grad:
        var._grad = var._grad + g
    else:
        var._grad.add_(g)


def _contiguous():
    from ..tensor import contiguous_format
    return contiguous_format


def _sum(a, b):
    return b if a is None else a + b


_tasks = threading.local()  # per thread: the final-callback lists of the backward passes running in it


def queue_callback(callback):
    """Run callback() once the backward pass running in this thread has finished (torch's
    Variable._execution_engine.queue_callback): DistributedDataParallel waits on its gradient
    reductions there. Callbacks run in the order queued; one may queue more."""
    stack = getattr(_tasks, "stack", None)
    if not stack:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    stack[-1].append(callback)


def _run_final_callbacks(callbacks):
    i = 0
    while i < len(callbacks):
        callbacks[i]()
        i += 1


def run_backward(tensors, grads, retain_graph, create_graph, inputs=None, allow_unused=False, accumulate=True):
    """The engine. Returns the gradients for `inputs` when accumulate=False (autograd.grad);
    callbacks queued during the pass (queue_callback) run at its end."""
    stack = getattr(_tasks, "stack", None)
    if stack is None:
        stack = _tasks.stack = []
    callbacks = []
    stack.append(callbacks)
    try:
        res = _run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused, accumulate)
        _run_final_callbacks(callbacks)
    finally:
        stack.pop()
    return res


def _run_backward(tensors, grads, retain_graph, create_graph, inputs=None, allow_unused=False, accumulate=True):
    roots_g = _root_grads(tensors, grads, create_graph)
    user = {id(g) for g in roots_g}  # tensors the caller holds: never stored as a .grad without a copy
    if retain_graph is None:
        retain_graph = create_graph
    buffers = {}  # node -> the gradients arrived for its outputs
    roots = []
    for t, g in zip(tensors, roots_g):
        fn = edge_fn(t)
        buf = buffers.get(fn)
        if buf is None:
            buf = buffers[fn] = [None] * fn.n_outputs
            roots.append(fn)
        buf[t._output_nr] = _sum(buf[t._output_nr], g)
    deps = _collect(roots)

    targets = None
    captured = None
    need = None
    if inputs is not None:
        targets = {}
        for i, x in enumerate(inputs):
            if not isinstance(x, Tensor):
                raise TypeError(f"grad(): inputs must be Tensors, got {type(x).__name__} at index {i}")
            if not x._requires_grad:
                raise RuntimeError(f"One of the differentiated Tensors does not require grad (input {i})")
            targets.setdefault(edge_fn(x), []).append((i, x))
        need = _needed(roots, deps, [n for n in targets if n in deps or n in buffers])
        captured = [None] * len(inputs)

    prev = STATE.grad, STATE.backward
    STATE.grad, STATE.backward = bool(create_graph), True
    heappop, heappush = heapq.heappop, heapq.heappush
    try:
        # among nodes of one sequence number (the AccumulateGrads) the one made ready last runs
        # first: a node's edges in reverse, so linear's bias gradient is ready before its
        # weight's, as after torch's AddmmBackward0 (DDP buckets follow this order)
        tick = itertools.count()
        ready = [(-n._seq, -next(tick), n) for n in roots if n not in deps]
        heapq.heapify(ready)
        while ready:
            node = heappop(ready)[2]
            gs = buffers.pop(node, None)
            live = gs is not None
            if not live:
                gs = [None] * node.n_outputs
            is_acc = node.__class__ is AccumulateGrad
            if live and (node._pre_hooks or node._retain is not None or (is_acc and node.variable._hooks)):
                gs = _run_pre_hooks(node, gs, create_graph, user)
            if targets is not None:
                tl = targets.get(node)
                if tl is not None:
                    for i, x in tl:
                        g = gs[0 if is_acc else x._output_nr]
                        if not accumulate:
                            captured[i] = g
                        elif g is not None:
                            _accumulate(x, g, create_graph, user)
                            captured[i] = g
                if node not in need:
                    if live and tl is not None:
                        _release(node, retain_graph)
                    continue
            if is_acc:
                if gs[0] is not None:
                    _accumulate(node.variable, gs[0], create_graph, user)
                continue
            if live:
                outs = _apply(node, gs)
                if not retain_graph:
                    node.release()
            else:  # nothing arrived (every path gave None): still release the dependents
                outs = [None] * len(node.next_functions)
            metas = node._metas
            i = 0
            for (nxt, nr), g in zip(node.next_functions, outs):
                if nxt is not None:
                    if g is not None:
                        lay, dt, dev = metas[i]
                        gm = g._meta
                        if (gm.layout.shape != lay.shape or g._dtype is not dt
                                or (gm.storage.device is not dev and gm.storage.device != dev)):
                            g = fit(g, node, i)
                        buf = buffers.get(nxt)
                        if buf is None:
                            if nxt.n_outputs == 1:
                                buffers[nxt] = [g]
                            else:
                                buf = buffers[nxt] = [None] * nxt.n_outputs
                                buf[nr] = g
                        else:
                            buf[nr] = g if buf[nr] is None else buf[nr] + g
                    left = deps[nxt] - 1
                    deps[nxt] = left
                    if left == 0:
                        heappush(ready, (-nxt._seq, -next(tick), nxt))
                i += 1
    finally:
        STATE.grad, STATE.backward = prev

    if captured is not None and not accumulate:
        for i, (x, g) in enumerate(zip(inputs, captured)):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   f"graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(captured)
    return None


def _run_pre_hooks(node, gs, create_graph, user):
    hooks = node.variable._hooks if isinstance(node, AccumulateGrad) else node._pre_hooks
    if hooks:
        for fn in list(hooks.values()):
            if isinstance(node, AccumulateGrad):
                if gs[0] is None:
                    break
                r = fn(gs[0])
                if r is not None:
                    gs = [r]
                    user.add(id(r))
            else:
                r = fn(gs)
                if r is not None:
                    gs = r
                    user.update(id(g) for g in r)
    ref = node._retain
    if ref is not None:
        t = ref()
        if t is not None and gs[t._output_nr] is not None:
            g = gs[t._output_nr]
            if t._grad is None:
                t._grad = g if create_graph else g.detach().clone()
            else:
                t._grad = t._grad + g
    return gs


def _apply(node, gs):
    if (gs[0] is None if len(gs) == 1 else any(g is None for g in gs)):  # some outputs got no gradient
        from ..ops.creation import zeros
        gs = [g if g is not None else zeros(m[0].shape, dtype=m[1], device=m[2]) for g, m in
              zip(gs, node.output_metas())]
    try:
        outs = node.apply(gs)
    except Exception as e:
        if node._trace is not None:
            anomaly.add_forward_note(e, node)
        raise
    if node._post_hooks:
        for fn in list(node._post_hooks.values()):
            r = fn(tuple(outs), tuple(gs))
            if r is not None:
                outs = list(r)
    if anomaly._enabled:
        anomaly.check_backward(node, outs)
    return outs


def _release(node, retain_graph):
    if not retain_graph:
        node.release()


# -- public entry points ---------------------------------------------------------------------------
def _tensor_seq(x, what):
    if isinstance(x, Tensor):
        return [x]
    if x is None:
        return None
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """tensorlab.autograd.backward: accumulate d(tensors)/d(leaves) into the leaves' .grad (or
    only into `inputs`' .grad when given)."""
    ts = _tensor_seq(tensors, "tensors")
    gs = _tensor_seq(grad_tensors, "grad_tensors")
    ins = _tensor_seq(inputs, "inputs")
    if ins is not None and not ins:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    run_backward(ts, gs, retain_graph, create_graph, inputs=ins, allow_unused=True, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         is_grads_batched=False, materialize_grads=False):
    """tensorlab.autograd.grad: the gradients of `outputs` w.r.t. `inputs`, returned (nothing is
    accumulated into .grad)."""
    if is_grads_batched:
        raise RuntimeError("grad(): is_grads_batched=True needs vmap, which tensorlab does not provide; loop over "
                           "the batch of grad_outputs instead")
    outs = _tensor_seq(outputs, "outputs")
    ins = _tensor_seq(inputs, "inputs")
    gos = _tensor_seq(grad_outputs, "grad_outputs")
    if allow_unused is None:
        allow_unused = materialize_grads
    wrap = None
    if any(x.is_sparse or x.is_sparse_csr for x in ins):  # sparse inputs: through their values (tensorlab/sparse)
        from ..sparse._tensor import grad_inputs
        ins, wrap = grad_inputs(ins)
    res = run_backward(outs, gos, retain_graph, create_graph, inputs=ins, allow_unused=allow_unused,
                       accumulate=False)
    if wrap is not None:
        res = wrap(res)
    if materialize_grads:
        from ..ops.creation import zeros_like
        res = tuple(zeros_like(x) if g is None else g for x, g in zip(ins, res))
    return res
