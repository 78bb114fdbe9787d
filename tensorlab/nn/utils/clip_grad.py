"""tensorlab.nn.utils.clip_grad: gradient clipping (torch.nn.utils.clip_grad). `foreach` selects torch's
list kernels; tensorlab computes the same values either way (one backend call per one-dtype,
one-device list where it can), so it is checked (True on a device without them raises as torch
does) and otherwise only chooses the path."""
from __future__ import annotations

import types

from ... import _warn
from ...ops.creation import tensor as _tensor
from ... import dtypes as _dtypes
from ...ops.reduction import foreach_norm as _foreach_norm
from ...ops.reduction import norm as _norm
from ...ops.shape import stack as _stack
from ...tensor import Tensor
from .._grad import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

_INF = float("inf")
_F32 = _dtypes.float32


def _as_list(tensors):
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _check_foreach(foreach, tensors):
    if foreach:
        for t in tensors:
            if t.device.type not in ("cpu", "cuda"):
                raise RuntimeError(f"foreach=True was passed, but can't use the foreach API on {t.device.type} "
                                   "tensors")


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The norm_type-norm of all `tensors` viewed as one vector: the norm of their norms."""
    tensors = _as_list(tensors)
    _check_foreach(foreach, tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _tensor(0.0)
    first = tensors[0]
    first_device = first.device
    with no_grad():  # (nothing is recorded: no detach needed)
        if norm_type >= 0 and (norm_type != _INF or all(t.numel() for t in tensors)) and \
                first.dtype.is_floating_point and all(t.dtype is first.dtype and t.device == first_device
                                                      for t in tensors):
            norms = _foreach_norm(tensors, norm_type)  # one backend call for the list
        else:
            norms = [_norm(t, norm_type) for t in tensors]
            norms = _stack([n if n.device == first_device else n.to(first_device) for n in norms])
        total = _norm(norms, norm_type)
    if error_if_nonfinite and total.isnan().logical_or(total.isinf()).item():
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scale every .grad by min(max_norm / (total_norm + 1e-6), 1), in place."""
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    _check_foreach(foreach, grads)
    if not grads:
        return
    from ..._journal import Journal
    with no_grad(), Journal() as journal:  # all gradients scaled, or (on any failure) none
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        journal.tensors(grads)
        if coef.device.type == "cpu" and coef.dtype is _F32 and all(g.device.type == "cpu" and g.dtype is _F32
                                                                   for g in grads):
            # a host number, read without a sync: the same float32 factor, on mul_'s scalar path
            c = coef.item()
            for g in grads:
                (g.detach() if g.requires_grad else g).mul_(c)
            return
        on = {coef.device: coef}  # the coefficient once per device
        for g in grads:
            c = on.get(g.device)
            if c is None:
                c = on[g.device] = coef.to(g.device)
            (g.detach() if g.requires_grad else g).mul_(c)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Clip the gradients' total norm (all gradients as one vector) to max_norm, in place, and
    return the total norm before clipping as a tensor. norm_type may be float('inf')."""
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = _as_list(parameters)
    if is_generator and not parameters:
        _warn.warn("`parameters` is an empty generator, no gradient clipping will occur.")
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated alias of clip_grad_norm_ (FutureWarning, as torch)."""
    _warn.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
               FutureWarning)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every .grad to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    from ..._journal import Journal
    parameters = _as_list(parameters)
    _check_foreach(foreach, [p.grad for p in parameters if p.grad is not None])
    with no_grad(), Journal() as journal:  # all gradients clamped, or (on any failure) none
        journal.tensors(p.grad for p in parameters)
        for p in parameters:
            if p.grad is not None:
                p.grad.detach().clamp_(min=-clip_value, max=clip_value)
