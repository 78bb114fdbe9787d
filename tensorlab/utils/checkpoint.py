"""torch.utils.checkpoint: activation checkpointing. The checkpointed function runs without
recording a graph; backward runs it again with grad enabled (same RNG state when
preserve_rng_state, same autocast state) and backpropagates through the recomputed graph.

Both modes recompute in backward. use_reentrant=True is torch's CheckpointFunction (positional
tensor arguments, gradients reach the inputs and, by accumulation, the parameters the function
uses). use_reentrant=False adds what torch's non-reentrant mode allows: keyword arguments,
inputs that need no gradient while the function's parameters do, non-tensor outputs.
Divergence: with use_reentrant=False, torch.autograd.grad(out, params) does not see the
parameters used inside the checkpoint (their gradients are accumulated into .grad as in the
reentrant mode); gradients with respect to the checkpoint's tensor inputs are returned."""
from __future__ import annotations

import contextlib
import warnings

from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "check_backward_validity", "detach_variable"]


def detach_variable(inputs):
    """Each tensor of `inputs` detached, with its requires_grad kept (non-tensors as they are)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs):
    if not any(isinstance(inp, Tensor) and inp.requires_grad for inp in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _devices(args):
    return sorted({str(a.device) for a in args if isinstance(a, Tensor) and a.device.type == "cuda"})


def _get_rng(devices):
    from .. import cuda
    from ..ops.random import get_rng_state
    return get_rng_state(), [cuda.get_rng_state(d) for d in devices]


@contextlib.contextmanager
def _forked_rng(devices, state):
    """Run the block with the RNG states `state`, then put back the states it had."""
    from .. import cuda
    from ..ops.random import set_rng_state
    current = _get_rng(devices)
    set_rng_state(state[0])
    for d, s in zip(devices, state[1]):
        cuda.set_rng_state(s, d)
    try:
        yield
    finally:
        set_rng_state(current[0])
        for d, s in zip(devices, current[1]):
            cuda.set_rng_state(s, d)


def _autocast_state():
    from ..amp import autocast_mode as am
    return [(dev, am.is_autocast_enabled(dev), am.get_autocast_dtype(dev)) for dev in ("cpu", "cuda")]


@contextlib.contextmanager
def _autocast_as(state):
    from ..amp import autocast
    with contextlib.ExitStack() as stack:
        for dev, enabled, dtype in state:
            if enabled:
                stack.enter_context(autocast(dev, dtype=dtype))
        yield


def _make_function():
    from ..autograd import Function
    from ..autograd.engine import backward as _backward
    from ..autograd.grad_mode import enable_grad

    class CheckpointFunction(Function):
        @staticmethod
        def forward(ctx, run_function, preserve_rng_state, kwargs, *args):
            ctx.run_function = run_function
            ctx.kwargs = kwargs
            ctx.preserve_rng_state = preserve_rng_state
            ctx.autocast_state = _autocast_state()
            ctx.devices = _devices(args)
            if preserve_rng_state:
                ctx.rng_state = _get_rng(ctx.devices)
            ctx.inputs = [None if isinstance(a, Tensor) else a for a in args]
            ctx.tensor_indices = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
            ctx.save_for_backward(*[a for a in args if isinstance(a, Tensor)])
            out = run_function(*args, **kwargs)
            ctx.many = isinstance(out, tuple)
            return out

        @staticmethod
        def backward(ctx, *grads):
            inputs = list(ctx.inputs)
            for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
                inputs[i] = t
            detached = detach_variable(tuple(inputs))
            rng = _forked_rng(ctx.devices, ctx.rng_state) if ctx.preserve_rng_state else contextlib.nullcontext()
            with rng, enable_grad(), _autocast_as(ctx.autocast_state):
                outputs = ctx.run_function(*detached, **ctx.kwargs)
            if not isinstance(outputs, tuple):
                outputs = (outputs,)
            outs, gos = [], []
            for o, g in zip(outputs, grads):
                if isinstance(o, Tensor) and o.requires_grad and g is not None:
                    outs.append(o)
                    gos.append(g)
            if not outs:
                raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
            _backward(outs, gos)
            res = tuple(x.grad if isinstance(x, Tensor) else None for x in detached)
            return (None, None, None) + res

    return CheckpointFunction


_FN = None


def _function():
    global _FN
    if _FN is None:
        _FN = _make_function()
    return _FN


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               early_stop=True, **kwargs):
    """Run function(*args, **kwargs) without keeping its intermediate activations; backward
    recomputes them (preserve_rng_state=True replays the RNG so dropout draws the same masks)."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in "
                      "PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default behavior, "
                      "you can pass use_reentrant=True. Refer to docs for more details on the differences between "
                      "the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if use_reentrant:
        if context_fn is not None or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        check_backward_validity(args)
        return _function().apply(function, preserve, {}, *args)
    from ..autograd.grad_mode import is_grad_enabled
    if not is_grad_enabled():
        ctx_fwd = context_fn()[0] if context_fn is not None else contextlib.nullcontext()
        with ctx_fwd:
            return function(*args, **kwargs)
    from ..ops.creation import empty
    # a leaf that needs grad makes the node record even when no input needs a gradient (the
    # function's parameters may)
    anchor = empty(0, requires_grad=True)
    run = function
    if context_fn is not None:
        fwd_ctx, recompute_ctx = context_fn()
        state = {"first": True}

        def run(*a, **k):
            cm = fwd_ctx if state["first"] else recompute_ctx
            state["first"] = False
            with cm:
                return function(*a, **k)
    return _function().apply(lambda _anchor, *a, **k: run(*a, **k), preserve, kwargs, anchor, *args)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Split `functions` (a Sequential or a list of modules/functions) into `segments` runs of
    equal length; all but the last run under checkpoint()."""
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed "
                      "explicitly. In version 2.9 we will raise an exception if use_reentrant is not passed. "
                      "use_reentrant=False is recommended, but if you need to preserve the current default "
                      "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
                      "differences between the two variants.", stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    from ..nn.container import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
