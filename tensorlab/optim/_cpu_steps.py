"""Adagrad's and RMSprop's whole step on the CPU as NumPy calls on the tensors' own arrays,
all-or-nothing without an undo copy, as optim/_sgd_cpu.py does for SGD: every parameter is checked
and the work arrays (optim/_adam_cpu.py's Scratch) allocated first, then each update is NumPy calls
with `out=` into memory that exists, which cannot fail. Each term is rounded in the parameter's
dtype as the general path's ops round it (backends/cpu/elementwise.py: addcmul is (t1 * value) * t2
added, addcdiv (t1 * value) / t2 added, lerp torch's two-sided formula), with the same version-
counter moves, so the two paths give the same bits. Only for CPU float32/float64 parameters whose
gradient and states have their dtype and shape, nothing aliased, no fault plan, no autograd hooks,
not capturable or differentiable, a Python-number lr."""
from __future__ import annotations

import numpy as np

from .. import _faults, autograd_hooks
from ..autograd import grad_mode as _grad_mode
from ..backends.cpu.memory import array
from ..dtypes import float32, float64
from ..tensor import Tensor
from ._adam_cpu import Scratch, writeable

_FLOATS = (float32, float64)


def _ok(param, grad, tensors, step):
    dt, shape = param._dtype, param.shape
    if dt not in _FLOATS or param.device.type != "cpu" or param._inference:
        return False
    if _grad_mode.STATE.grad and param._requires_grad:
        return False
    if not isinstance(step, Tensor) or step.device.type != "cpu" or step._dtype is not float32 or step.numel() != 1 \
            or step._requires_grad or step._inference:
        return False
    storages = {id(param._meta.storage), id(step._meta.storage)}
    for t in (grad,) + tuple(tensors):
        if not isinstance(t, Tensor) or t._dtype is not dt or t.device.type != "cpu" or t.shape != shape \
                or t._requires_grad or t._inference:
            return False
    for t in tensors:
        storages.add(id(t._meta.storage))
    if len(storages) != 2 + len(tensors) or id(grad._meta.storage) in storages:
        return False
    return writeable(param, step, *tensors)


def _arrays(*ts):
    out = [array(t) for t in ts]
    return [a.reshape(1) if a.ndim == 0 else a for a in out]


def adagrad_step_all(opt):
    from .optimizer import _params_and_grads
    if _faults._plans or autograd_hooks._slow:
        return False
    work = []
    scratch = Scratch(3)
    for group in opt.param_groups:
        if group["differentiable"] or type(group["lr"]) not in (int, float):
            return False
        for p, param, grad in _params_and_grads(group):
            state = opt.state.get(p)
            if not state or "sum" not in state or "step" not in state:
                return False
            if not _ok(param, grad, (state["sum"],), state["step"]):
                return False
            scratch.want(param)
            work.append((param, grad, state["sum"], state["step"], group))
    scratch.allocate()
    for param, grad, state_sum, step_t, group in work:   # nothing below can fail
        p, g, v = _arrays(param, grad, state_sum)
        s = array(step_t)
        f = p.dtype.type
        np.add(s, np.float32(1), out=s)                               # step_t.add_(1)
        step_t._vc.value += 1
        step = float(s.reshape(-1)[0])
        lr, lr_decay, wd, eps = group["lr"], group["lr_decay"], group["weight_decay"], group["eps"]
        with np.errstate(all="ignore"):
            if wd != 0:                                               # grad.add(param, alpha=wd)
                gw = scratch.get(0, p)
                np.multiply(p, f(wd), out=gw)
                g = np.add(g, gw, out=gw)
            clr = lr / (1 + (step - 1) * lr_decay)
            t, d = scratch.get(1, p), scratch.get(2, p)
            np.multiply(g, f(1), out=t)                               # sum.addcmul_(grad, grad, value=1)
            t *= g
            v += t
            np.sqrt(v, out=d)                                         # sum.sqrt().add_(eps)
            d += f(eps)
            np.multiply(g, f(-clr), out=t)                            # param.addcdiv_(grad, std, value=-clr)
            t /= d
            p += t
        state_sum._vc.value += 1
        param._vc.value += 1
    return True


def rmsprop_step_all(opt):
    from .optimizer import _params_and_grads
    if _faults._plans or autograd_hooks._slow:
        return False
    work = []
    scratch = Scratch(3)
    for group in opt.param_groups:
        if group["differentiable"] or group["capturable"] or type(group["lr"]) not in (int, float):
            return False
        for p, param, grad in _params_and_grads(group):
            state = opt.state.get(p)
            if not state:
                return False  # the first step (states created) takes the general path
            names = ["square_avg"] + (["momentum_buffer"] if group["momentum"] > 0 else []) \
                + (["grad_avg"] if group["centered"] else [])
            if any(n not in state for n in names) or "step" not in state:
                return False
            tensors = tuple(state[n] for n in names)
            if not _ok(param, grad, tensors, state["step"]):
                return False
            scratch.want(param)
            work.append((param, grad, state, group))
    scratch.allocate()
    for param, grad, state, group in work:               # nothing below can fail
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        wd, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
        step_t, square_avg = state["step"], state["square_avg"]
        p, g, v = _arrays(param, grad, square_avg)
        s = array(step_t)
        f = p.dtype.type
        np.add(s, np.float32(1), out=s)                               # step.add_(1)
        step_t._vc.value += 1
        with np.errstate(all="ignore"):
            if wd != 0:                                               # grad.add(param, alpha=wd)
                gw = scratch.get(0, p)
                np.multiply(p, f(wd), out=gw)
                g = np.add(g, gw, out=gw)
            t, avg = scratch.get(1, p), scratch.get(2, p)
            np.multiply(v, f(alpha), out=v)                           # square_avg.mul_(alpha)
            np.multiply(g, f(1 - alpha), out=t)                       # .addcmul_(grad, grad, value=1 - alpha)
            t *= g
            v += t
            square_avg._vc.value += 2
            if centered:
                (ga,) = _arrays(state["grad_avg"])
                w = 1 - alpha                                         # grad_avg.lerp_(grad, 1 - alpha)
                np.subtract(g, ga, out=t)
                if abs(f(w)) < f(0.5):
                    t *= f(w)
                    ga += t
                else:
                    t *= f(1) - f(w)
                    np.subtract(g, t, out=ga)
                state["grad_avg"]._vc.value += 1
                np.multiply(ga, f(-1), out=t)                         # square_avg.addcmul(ga, ga, value=-1)
                t *= ga
                np.add(v, t, out=avg)
                np.sqrt(avg, out=avg)                                 # .sqrt_()
            else:
                np.sqrt(v, out=avg)                                   # square_avg.sqrt()
            avg += f(eps)                                             # avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                (b,) = _arrays(buf)
                np.multiply(b, f(momentum), out=b)                    # buf.mul_(momentum).addcdiv_(grad, avg)
                np.multiply(g, f(1), out=t)
                t /= avg
                b += t
                buf._vc.value += 2
                np.multiply(b, f(-lr), out=t)                         # param.add_(buf, alpha=-lr)
                p += t
            else:
                np.multiply(g, f(-lr), out=t)                         # param.addcdiv_(grad, avg, value=-lr)
                t /= avg
                p += t
        param._vc.value += 1
    return True
