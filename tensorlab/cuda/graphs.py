"""CUDA graphs with torch.cuda's API: CUDAGraph, graph(...), graph_pool_handle(),
make_graphed_callables(...). A launch-bound loop (many small kernels) is captured once and replayed
with one launch per replay instead of one per kernel.

How capture works (backends/cuda/graphs.py): the work queued on the capturing stream is recorded
(CUDA's stream capture on a GPU; the emulation driver records the calls and runs them again at each
replay), the memory the graph touches stays alive with the graph, a host wait inside the captured
region is refused with CUDA's error (and invalidates the capture), and so is a random op (tensorlab's
generators pass (seed, offset) by value: a replay would repeat the captured draws).

Pools: each graph keeps the buffers it touched (its private pool) until reset(); graphs captured
with one `pool` handle are listed under it (`graph.pool()`), as torch's shared pools are, but each
keeps its own memory (tensorlab does not share allocations between graphs)."""
from __future__ import annotations

import itertools

from ._devices import _driver, _index, synchronize
from .streams import Stream, _default_handle, stream as stream_context

__all__ = ["CUDAGraph", "graph", "graph_pool_handle", "make_graphed_callables"]

_pool_ids = itertools.count(1)
_MODES = ("global", "thread_local", "relaxed")


def graph_pool_handle():
    """An opaque handle naming a memory pool that several graphs may be captured into (torch's
    graph_pool_handle)."""
    return (0, next(_pool_ids))


def _backend_graphs():
    from ..backends.cuda import graphs
    return graphs


class CUDAGraph:
    """A CUDA graph (torch.cuda.CUDAGraph): capture_begin()/capture_end() around the work to record
    (on a non-default stream), then replay() queues all of it again on the current stream; reset()
    frees what the graph holds."""

    def __init__(self, keep_graph=False):
        self._capture = None
        self._captured = False
        self._pool = None
        self._device = None
        self._keep_graph = bool(keep_graph)
        self._debug = False

    def capture_begin(self, pool=None, capture_error_mode="global"):
        if capture_error_mode not in _MODES:
            raise RuntimeError(f"capture_begin(): capture_error_mode must be one of {', '.join(_MODES)}, not "
                               f"{capture_error_mode!r}")
        if self._capture is not None or self._captured:
            raise RuntimeError("This CUDAGraph instance already owns a captured graph (or is capturing one). "
                               "To capture a new graph, create a new instance or call reset() first.")
        idx = _index(None)
        handle = _driver().current_stream(idx)
        if handle is _default_handle(idx):
            raise RuntimeError("CUDA graphs must be captured on a non-default stream. (However, after capture, it's "
                               "ok to replay them on the default stream.) Use `with tl.cuda.graph(g):`, which "
                               "captures on a side stream, or `with tl.cuda.stream(tl.cuda.Stream()):`.")
        self._pool = pool if pool is not None else graph_pool_handle()
        self._device = idx
        self._capture = _backend_graphs().begin(handle, idx)

    def capture_end(self):
        if self._capture is None:
            raise RuntimeError("Called CUDAGraph::capture_end without a preceding capture_begin")
        cap, self._capture = self._capture, None
        _backend_graphs().end(cap)  # raises (and frees) when the capture was invalidated
        self._capture_done = cap
        self._captured = True

    def replay(self):
        if not self._captured:
            raise RuntimeError("Called CUDAGraph::replay without a preceding successful capture.")
        _backend_graphs().replay(self._capture_done, _driver().current_stream(self._device))

    def reset(self):
        """Free the graph's memory and forget the capture (a new capture may follow)."""
        if self._capture is not None:
            raise RuntimeError("CUDAGraph.reset(): the graph is still capturing; call capture_end() first")
        if self._captured:
            self._capture_done.release()
            self._capture_done = None
        self._captured = False

    def pool(self):
        """The handle of the memory pool this graph was captured into (pass it to another capture)."""
        if self._pool is None:
            raise RuntimeError("CUDAGraph.pool(): the graph has not been captured yet")
        return self._pool

    def instantiate(self):
        """With keep_graph=True torch instantiates here; tensorlab's graphs are ready at capture_end."""
        if not self._captured:
            raise RuntimeError("Called CUDAGraph::instantiate without a preceding successful capture.")

    def enable_debug_mode(self):
        self._debug = True

    def debug_dump(self, debug_path):
        """Write what the graph holds: the recorded calls (emulation) or CUDA's DOT description."""
        if not self._debug:
            raise RuntimeError("CUDAGraph.debug_dump(): call enable_debug_mode() before capturing")
        if not self._captured:
            raise RuntimeError("CUDAGraph.debug_dump(): the graph has not been captured")
        cap = self._capture_done
        if cap.native is False:
            text = "\n".join(f"{name}{_describe(args)}" for name, args, _, _ in cap.calls) + "\n"
        else:
            text = cap.native.debug_dot_str()
        with open(debug_path, "w") as f:
            f.write(text)

    def __del__(self):
        try:
            if self._captured and self._capture_done is not None:
                self._capture_done.release()
        except Exception:  # noqa: BLE001 (interpreter shutdown)
            pass


def _describe(args):
    fn = args[0] if args else None
    return f"({getattr(fn, 'name', '')}, grid={args[1]}, block={args[2]})" if hasattr(fn, "name") else ""


class graph:
    """`with tl.cuda.graph(g):` captures the block into CUDAGraph g, on a side stream (`stream`, or a
    fresh one), after a synchronize (torch.cuda.graph)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode="global"):
        if not isinstance(cuda_graph, CUDAGraph):
            raise TypeError(f"graph(): expected a tensorlab.cuda.CUDAGraph, got {type(cuda_graph).__name__}")
        if stream is not None and not isinstance(stream, Stream):
            raise TypeError(f"graph(): stream must be a tensorlab.cuda.Stream or None, got {type(stream).__name__}")
        self.cuda_graph = cuda_graph
        self.pool = pool
        self.capture_stream = stream if stream is not None else Stream()
        self.mode = capture_error_mode
        self._ctx = None

    def __enter__(self):
        synchronize()  # what ran before the capture is done (explicit: the user asked for a capture)
        self._ctx = stream_context(self.capture_stream)
        self._ctx.__enter__()
        try:
            self.cuda_graph.capture_begin(pool=self.pool, capture_error_mode=self.mode)
        except BaseException:
            self._ctx.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            if self.cuda_graph._capture is not None:
                try:
                    self.cuda_graph.capture_end()
                except RuntimeError:
                    if exc_type is None:
                        raise
                    self.cuda_graph.reset()
        finally:
            self._ctx.__exit__(exc_type, exc, tb)
        return False


def _flat_tensors(args):
    from ..tensor import Tensor
    return [a for a in args if isinstance(a, Tensor)]


def make_graphed_callables(callables, sample_args, num_warmup_iters=3, allow_unused_input=False, pool=None):
    """Graphed versions of callables (functions or Modules): each one's forward and backward are
    captured into CUDA graphs on its sample_args and replayed at every call (torch.cuda.
    make_graphed_callables). A call copies its tensor arguments into the graph's static inputs,
    replays the forward graph and returns the static outputs (detached, wired to autograd); backward
    copies the incoming gradients into the static grad outputs and replays the backward graph.
    Requirements as torch's: the arguments keep sample_args' shapes, dtypes and devices, a Module's
    parameters stay where they were, nothing inside reads device data on the host, and a Module
    called in another training mode than at capture runs eagerly."""
    from .. import autograd
    from ..nn import Module
    single = not isinstance(callables, tuple)
    if single:
        callables, sample_args = (callables,), (sample_args,)
    if len(callables) != len(sample_args):
        raise ValueError(f"make_graphed_callables(): {len(callables)} callables but {len(sample_args)} sample_args")
    out = []
    for fn, args in zip(callables, sample_args):
        if not isinstance(args, tuple):
            raise TypeError("make_graphed_callables(): sample_args must be a tuple of tensors (one tuple per callable)")
        tensors = _flat_tensors(args)
        if len(tensors) != len(args):
            raise TypeError("make_graphed_callables(): sample_args may hold only tensors (torch's rule)")
        if isinstance(fn, Module):
            if fn._forward_hooks or fn._forward_pre_hooks or fn._backward_hooks:
                raise RuntimeError("make_graphed_callables(): modules must not have hooks registered at the time "
                                   "they are passed (hooks would not run at replay)")
            params = tuple(p for p in fn.parameters() if p.requires_grad)
        else:
            params = ()
        out.append(_graph_one(fn, args, params, num_warmup_iters, allow_unused_input, pool, autograd))
    return out[0] if single else tuple(out)


def _graph_one(fn, static_in, params, warmup, allow_unused, pool, autograd):
    from ..nn import Module
    from ..ops.creation import empty_like
    diff_in = tuple(t for t in static_in + params if t.requires_grad)
    side = Stream()
    synchronize()
    with stream_context(side):
        for _ in range(warmup):  # the first calls allocate, build kernels, warm caches: never captured
            outs = _as_tuple(fn(*static_in))
            need = [o for o in outs if o.requires_grad]
            if need and diff_in:
                autograd.grad(need, diff_in, grad_outputs=[empty_like(o).fill_(1) for o in need],
                              allow_unused=allow_unused)
        del outs
    synchronize()
    fwd, bwd = CUDAGraph(), CUDAGraph()
    with graph(fwd, pool=pool, stream=side):
        static_out = _as_tuple(fn(*static_in))
    grad_needed = [o for o in static_out if o.requires_grad]
    static_grad_out = [empty_like(o) for o in grad_needed]
    with graph(bwd, pool=fwd.pool(), stream=side):
        if grad_needed and diff_in:
            grads = autograd.grad(grad_needed, diff_in, grad_outputs=static_grad_out,
                                  allow_unused=allow_unused)
        else:
            grads = (None,) * len(diff_in)
    static_grads = tuple(grads)
    training = fn.training if isinstance(fn, Module) else None
    single_out = len(static_out) == 1 and not isinstance(static_out, list)

    class Graphed(autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, given in zip(static_in, inputs[:len(static_in)]):
                if static.data_ptr() != given.data_ptr():
                    static.copy_(given)
            fwd.replay()
            return tuple(o.detach() for o in static_out)

        @staticmethod
        def backward(ctx, *grads_out):
            for static, g in zip(static_grad_out, [g for g, o in zip(grads_out, static_out) if o.requires_grad]):
                if g is None:
                    static.zero_()
                elif static.data_ptr() != g.data_ptr():
                    static.copy_(g)
            bwd.replay()
            it = iter(static_grads)
            res = []
            for t in static_in + params:
                g = next(it) if t.requires_grad else None
                # a copy: the next replay overwrites the static buffer, which .grad would otherwise alias
                # (tensorlab's accumulation keeps the first gradient it receives as .grad itself)
                res.append(None if g is None else g.detach().clone())
            return tuple(res)

    def graphed(*args, **kwargs):
        if kwargs:
            raise TypeError("a graphed callable takes its tensors positionally (as its sample_args)")
        if isinstance(fn, Module) and fn.training != training:
            return fn.forward_eager(*args)
        outs = Graphed.apply(*args, *params)
        return outs[0] if single_out else outs

    if isinstance(fn, Module):
        fn.forward_eager = fn.forward
        fn.forward = graphed
        fn._graphs = (fwd, bwd)
        return fn
    graphed._graphs = (fwd, bwd)
    return graphed


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)

