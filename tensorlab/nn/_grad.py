"""Grad-mode glue shared by nn and optim. Updates that autograd must not record (optimizer steps,
init, clipping, load_state_dict) run under no_grad and write through `t.detach()`: same storage and
version counter, so autograd still sees the write, but a leaf that requires grad is not refused."""
from __future__ import annotations

import tensorlab as _tl
from ..autograd import enable_grad, no_grad  # noqa: F401  (re-exported for nn and optim)


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
