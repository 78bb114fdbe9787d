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
from ..tensor import Tensor

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


class Scratch:
    """Work arrays for a whole step, allocated before anything is written: `k` flat arrays per
    dtype, as long as the step's largest parameter; `get(i, like)` is the i-th shaped as `like`."""

    def __init__(self, k):
        self.k = k
        self.need = {}
        self.bufs = {}

    def want(self, t):
        """Room for a tensor `t` (float32/float64) of the step."""
        dt = _NP[t._dtype]
        n = t.numel()
        if n > self.need.get(dt, 0):
            self.need[dt] = max(n, 1)

    def allocate(self):
        try:
            self.bufs = {dt: [np.empty(n, dt) for _ in range(self.k)] for dt, n in self.need.items()}
        except MemoryError:
            nbytes = sum(n * dt.itemsize * self.k for dt, n in self.need.items())
            raise RuntimeError(f"DefaultCPUAllocator: not enough memory: you tried to allocate {nbytes} bytes. "
                               "(the optimizer's work arrays; no parameter was updated)") from None

    def get(self, i, like):
        return self.bufs[like.dtype][i][:like.size].reshape(like.shape)


_NP = {float32: np.dtype(np.float32), float64: np.dtype(np.float64)}


def writeable(*tensors):
    return not any(t._meta.storage._readonly for t in tensors)


def step_all(opt):
    """The whole step of an Adam/AdamW optimizer through `update`, when every parameter with a
    gradient is `eligible`: new states and the work arrays are made first, so nothing can fail
    once the first parameter is written (the step is all-or-nothing without an undo copy).
    False (nothing done) when some parameter needs the general path."""
    from ..ops.creation import zeros_like
    from .optimizer import _params_and_grads, _scalar_state
    if _faults._plans or autograd_hooks._slow:
        return False
    work = []
    scratch = Scratch(3)
    for group in opt.param_groups:
        if group["amsgrad"] or group["capturable"] or group["differentiable"] or type(group["lr"]) not in (int, float):
            return False
        for p, param, grad in _params_and_grads(group):
            state = opt.state.get(p)
            fresh = None
            if not state:
                if not (param.device.type == "cpu" and param.is_floating_point()):
                    return False
                fresh = {"step": _scalar_state(p, group, 0.0), "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}
                state = fresh
            try:
                step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
            except KeyError:
                return False
            if not isinstance(step_t, Tensor) or not eligible(param, grad, exp_avg, exp_avg_sq, step_t) \
                    or not writeable(param, exp_avg, exp_avg_sq, step_t):
                return False
            scratch.want(param)
            work.append((p, fresh, param, grad, exp_avg, exp_avg_sq, step_t, group))
    scratch.allocate()
    # -- nothing below can fail: publish
    for p, fresh, param, grad, exp_avg, exp_avg_sq, step_t, group in work:
        if fresh is not None:
            opt.state[p] = fresh
        beta1, beta2 = group["betas"]
        update(param, grad, exp_avg, exp_avg_sq, beta1, beta2, group["lr"], group["eps"], group["weight_decay"],
               group["decoupled_weight_decay"], step_t, scratch)
    return True


def update(param, grad, exp_avg, exp_avg_sq, beta1, beta2, lr, eps, weight_decay, decoupled, step_t, scratch=None):
    """One Adam step for a parameter that `eligible` accepted, counting the step first (step_t += 1
    in float32, as the general path's add_). `scratch`: the step's work arrays (else allocated)."""
    p, g, m, v, s = array(param), array(grad), array(exp_avg), array(exp_avg_sq), array(step_t)
    if not (p.flags.writeable and m.flags.writeable and v.flags.writeable and s.flags.writeable):
        return False
    if scratch is None:
        scratch = Scratch(3)
        scratch.want(param)
        scratch.allocate()
    np.add(s, np.float32(1), out=s)
    step_t._vc.value += 1
    step = float(s.reshape(-1)[0])
    if p.ndim == 0:  # NumPy's 0-d results are scalars, which `out=` refuses
        p, g, m, v = p.reshape(1), g.reshape(1), m.reshape(1), v.reshape(1)
    t, d = scratch.get(0, p), scratch.get(1, p)
    f = p.dtype.type
    with np.errstate(all="ignore"):
        if weight_decay != 0:
            if decoupled:
                np.multiply(p, f(1 - lr * weight_decay), out=p)                 # param.mul_(1 - lr wd)
            else:
                gw = scratch.get(2, p)                                           # grad.add(param, alpha=wd)
                np.multiply(p, f(weight_decay), out=gw)
                g = np.add(g, gw, out=gw)
        w = 1 - beta1                                                            # exp_avg.lerp_(grad, 1 - beta1)
        np.subtract(g, m, out=t)
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
        np.sqrt(v, out=d)                                                        # (exp_avg_sq.sqrt()
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
