"""SGD's whole step on the CPU as NumPy calls on the tensors' own arrays, all-or-nothing without an
undo copy: new momentum buffers and the work arrays (optim/_adam_cpu.py's Scratch) are made for
every parameter first, then each update is NumPy calls with `out=` into memory that exists, which
cannot fail. The arithmetic is torch's single-tensor SGD term by term, rounded in the parameter's
dtype exactly as the general path's ops (optim/sgd.py: add(alpha), mul_, add_(alpha), add_(alpha))
round it, with the same version-counter moves. It runs where nothing can observe the difference:
CPU float32/float64 parameters whose gradient and buffer have their dtype and shape, nothing
aliased, no fault plan, no autograd hooks, not differentiable, a Python-number lr."""
from __future__ import annotations

import numpy as np

from .. import _faults, autograd_hooks
from ..autograd import grad_mode as _grad_mode
from ..backends.cpu.elementwise import _quiet_off, _quiet_on
from ..backends.cpu.memory import array
from ..dtypes import float32, float64
from ..tensor import Tensor
from ._adam_cpu import Scratch, writeable

_FLOATS = (float32, float64)


def _eligible(param, grad, buf):
    dt, shape = param._dtype, param.shape
    if dt not in _FLOATS or param.device.type != "cpu" or param._inference:
        return False
    if _grad_mode.STATE.grad and param._requires_grad:
        return False
    if not isinstance(grad, Tensor) or grad._dtype is not dt or grad.device.type != "cpu" or grad.shape != shape \
            or grad._requires_grad or grad._meta.storage is param._meta.storage:
        return False
    if buf is not None:
        if not isinstance(buf, Tensor) or buf._dtype is not dt or buf.device.type != "cpu" or buf.shape != shape \
                or buf._requires_grad or buf._inference:
            return False
        if buf._meta.storage is param._meta.storage or buf._meta.storage is grad._meta.storage:
            return False
    return True


def step_all(opt):
    """The whole SGD step when every parameter with a gradient allows it; False: nothing done."""
    from ..ops.creation import empty_like
    from .optimizer import _params_and_grads
    if _faults._plans or autograd_hooks._slow:
        return False
    work = []
    scratch = Scratch(3)
    for group in opt.param_groups:
        if group["differentiable"] or type(group["lr"]) not in (int, float):
            return False
        momentum = group["momentum"]
        for p, param, grad in _params_and_grads(group):
            buf = opt.state[p].get("momentum_buffer") if p in opt.state else None
            if not _eligible(param, grad, buf) or not writeable(param) or (buf is not None and not writeable(buf)):
                return False
            fresh = None
            if momentum != 0 and buf is None:
                fresh = empty_like(grad)
                if not _eligible(param, grad, fresh) or not fresh.is_contiguous():
                    return False
            scratch.want(param)
            work.append((p, param, grad, buf, fresh, group))
    scratch.allocate()
    # -- nothing below can fail: publish
    for p, param, grad, buf, fresh, group in work:
        _update(opt, p, param, grad, buf, fresh, group, scratch)
    return True


def _update(opt, p, param, grad, buf, fresh, group, scratch):
    lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
    weight_decay, nesterov = group["weight_decay"], group["nesterov"]
    pa, g = array(param), array(grad)
    if pa.ndim == 0:  # NumPy's 0-d results are scalars, which `out=` refuses
        pa, g = pa.reshape(1), g.reshape(1)
    f = pa.dtype.type
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        if weight_decay != 0:                                   # grad = grad.add(param, alpha=wd)
            gw = scratch.get(0, pa)
            np.multiply(pa, f(weight_decay), out=gw)
            np.add(g, gw, out=gw)
            g = gw
        if momentum != 0:
            if fresh is not None:                               # buf = grad.clone().detach()
                b = array(fresh)
                b = b.reshape(1) if b.ndim == 0 else b
                np.copyto(b, g)
                opt.state[p]["momentum_buffer"] = fresh
            else:                                               # buf.mul_(momentum).add_(grad, alpha=1 - d)
                b = array(buf)
                b = b.reshape(1) if b.ndim == 0 else b
                np.multiply(b, f(momentum), out=b)
                alpha = 1 - dampening
                if type(alpha) is int and alpha == 1:
                    np.add(b, g, out=b)
                else:
                    t = scratch.get(1, pa)
                    np.multiply(g, f(alpha), out=t)
                    np.add(b, t, out=b)
                buf._vc.value += 2
            if nesterov:                                        # grad = grad.add(buf, alpha=momentum)
                t = scratch.get(1, pa)
                np.multiply(b, f(momentum), out=t)
                np.add(g, t, out=t)
                g = t
            else:
                g = b
        t = scratch.get(2, pa)                                  # param.add_(grad, alpha=-lr)
        np.multiply(g, f(-lr), out=t)
        np.add(pa, t, out=pa)
    finally:
        _quiet_off(token)
    param._vc.value += 1
