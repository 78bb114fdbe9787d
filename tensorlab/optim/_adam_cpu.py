"""Adam/AdamW's per-parameter update on the CPU as a few NumPy calls on the tensors' own arrays.

The update is torch's single-tensor Adam term by term (torch.optim.adam._single_tensor_adam),
each term rounded in the parameter's dtype exactly as the elementwise ops the general path calls
(mul_, lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_) round it, so the two paths give the same
bits; it only skips the per-op dispatch. It runs only where nothing can observe that difference:
a CPU float32/float64 parameter whose gradient and moments have its dtype and shape, none of them
sharing storage with the gradient, not amsgrad, no fault plan installed, no autograd hooks active
(the slow path) and no inference tensor; everything else takes the general path, which raises
whatever the ops raise. Checks come first: nothing is written until all of them passed."""
from __future__ import annotations

import numpy as np

from .. import _faults, autograd_hooks
from ..autograd import grad_mode as _grad_mode
from ..backends.cpu.memory import array
from ..dtypes import float32, float64

_FLOATS = (float32, float64)


def eligible(param, grad, exp_avg, exp_avg_sq, step):
    """True when `update` may run for these tensors (see the module's docstring); `step` is the
    state's step count, a one-element float32 CPU tensor."""
    return eligible_states(param, grad, (exp_avg, exp_avg_sq), step)


def eligible_states(param, grad, states, step):
    """True when a NumPy update of `param` and its optimizer `states` (tensors of its shape) from
    `grad` may replace the op path: see the module's docstring (Adadelta's update uses it too)."""
    if _faults._plans or autograd_hooks._slow:
        return False
    if step.device.type != "cpu" or step._dtype is not float32 or step.numel() != 1 or step._inference \
            or step._requires_grad:
        return False
    dt = param._dtype
    shape = param.shape
    if dt not in _FLOATS or param.device.type != "cpu":
        return False
    for t in (grad,) + tuple(states):
        if t._dtype is not dt or t.device.type != "cpu" or t.shape != shape:
            return False
    gs = grad._meta.storage
    grad_on = _grad_mode.STATE.grad  # the optimizer steps under no_grad: a leaf parameter is updated in place
    for t in (param,) + tuple(states):
        if t._inference or (t._requires_grad and (grad_on or t is not param)) or t._meta.storage is gs:
            return False
    if grad._requires_grad:
        return False
    ss = {id(t._meta.storage) for t in (param,) + tuple(states)}
    return len(ss) == 1 + len(states)


def update(param, grad, exp_avg, exp_avg_sq, beta1, beta2, lr, eps, weight_decay, decoupled, step_t):
    """One Adam step for a parameter that `eligible` accepted, counting the step first (step_t += 1
    in float32, as the general path's add_)."""
    p, g, m, v, s = array(param), array(grad), array(exp_avg), array(exp_avg_sq), array(step_t)
    if not (p.flags.writeable and m.flags.writeable and v.flags.writeable and s.flags.writeable):
        return False
    np.add(s, np.float32(1), out=s)
    step_t._vc.value += 1
    step = float(s.reshape(-1)[0])
    if p.ndim == 0:  # NumPy's 0-d results are scalars, which `out=` refuses
        p, g, m, v = p.reshape(1), g.reshape(1), m.reshape(1), v.reshape(1)
    f = p.dtype.type
    with np.errstate(all="ignore"):
        if weight_decay != 0:
            if decoupled:
                np.multiply(p, f(1 - lr * weight_decay), out=p)                 # param.mul_(1 - lr wd)
            else:
                g = np.add(g, np.multiply(p, f(weight_decay)))                   # grad.add(param, alpha=wd)
        w = 1 - beta1                                                            # exp_avg.lerp_(grad, 1 - beta1)
        t = np.subtract(g, m)
        if abs(f(w)) < f(0.5):
            t *= f(w)
            m += t
        else:
            t *= f(1) - f(w)
            np.subtract(g, t, out=m)
        np.multiply(v, f(beta2), out=v)                                          # exp_avg_sq.mul_(beta2)
        np.multiply(g, f(1 - beta2), out=t)                                      # .addcmul_(grad, grad, 1 - beta2)
        t *= g
        v += t
        bias_correction1 = 1 - beta1 ** step
        bias_correction2 = 1 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        d = np.sqrt(v)                                                           # (exp_avg_sq.sqrt()
        d /= f(bias_correction2_sqrt)                                            #  / bias_correction2_sqrt)
        d += f(eps)                                                              # .add_(eps)
        np.multiply(m, f(-step_size), out=t)                                     # param.addcdiv_(exp_avg, denom,
        t /= d                                                                   #               value=-step_size)
        p += t
    # the version counters move as the general path's in-place ops move them
    param._vc.value += 2 if weight_decay != 0 and decoupled else 1
    exp_avg._vc.value += 1
    exp_avg_sq._vc.value += 2
    return True
