"""Grad-mode glue shared by nn and optim. The autograd package provides tl.no_grad and
tl.enable_grad; these wrappers look them up at call time so nn and optim also work (without
recording anything) when autograd is absent. Updates that autograd must not record (optimizer
steps, init, clipping, load_state_dict) write through `t.detach()`: same storage and version
counter, so autograd still sees the write, but a leaf that requires grad is not refused."""
from __future__ import annotations

import contextlib

import tensorlab as _tl


def no_grad():
    ctx = getattr(_tl, "no_grad", None)
    return contextlib.nullcontext() if ctx is None else ctx()


def enable_grad():
    ctx = getattr(_tl, "enable_grad", None)
    return contextlib.nullcontext() if ctx is None else ctx()


def zero_grads(params, set_to_none=True):
    """Module.zero_grad / Optimizer.zero_grad: drop each .grad, or zero it in place (detached
    from any graph first, as torch does)."""
    for p in params:
        g = p.grad
        if g is None:
            continue
        if set_to_none:
            p.grad = None
            continue
        if g.grad_fn is not None:
            g = g.detach()
            p.grad = g
        elif g.requires_grad:
            g.requires_grad_(False)
        g.zero_()


def typename(obj):
    """torch.typename: 'tensorlab.FloatTensor' for tensors, 'module.Qualname' for other objects."""
    if isinstance(obj, _tl.Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"
