"""Adadelta's per-parameter update on the CPU as a few NumPy calls on the tensors' own arrays.

torch's single-tensor Adadelta (torch.optim.adadelta._single_tensor_adadelta) term by term, each
term rounded in the parameter's dtype exactly as the ops of the general path (optim/adadelta.py:
mul_, addcmul_, add, sqrt_, div_, mul_, add_) round it, so the two paths give the same bits and
move the same version counters; it only skips the per-op dispatch. It runs where _adam_cpu's
eligibility rule allows (CPU float32/float64, no fault plan, no autograd hooks, no aliasing);
everything else takes the general path. Checks come first: nothing is written before they pass."""
from __future__ import annotations

import numpy as np

from .. import _faults, autograd_hooks
from ..backends.cpu.memory import array
from ..tensor import Tensor
from ._adam_cpu import Scratch, eligible_states, writeable


def eligible(param, grad, square_avg, acc_delta, step):
    return eligible_states(param, grad, (square_avg, acc_delta), step)


def step_all(opt):
    """The whole Adadelta step through `update` when every parameter with a gradient is
    `eligible`: new states and the work arrays are made first, so nothing can fail once the first
    parameter is written (no undo copy). False (nothing done) when some parameter needs the
    general path."""
    from ..ops.creation import zeros_like
    from .optimizer import _params_and_grads, _scalar_state
    if _faults._plans or autograd_hooks._slow:
        return False
    work = []
    scratch = Scratch(4)
    for group in opt.param_groups:
        if group["capturable"] or group["differentiable"] or type(group["lr"]) not in (int, float):
            return False
        for p, param, grad in _params_and_grads(group):
            state = opt.state.get(p)
            fresh = None
            if not state:
                if not (param.device.type == "cpu" and param.is_floating_point()):
                    return False
                fresh = state = {"step": _scalar_state(p, group, 0.0), "square_avg": zeros_like(p),
                                 "acc_delta": zeros_like(p)}
            try:
                step_t, square_avg, acc_delta = state["step"], state["square_avg"], state["acc_delta"]
            except KeyError:
                return False
            if not isinstance(step_t, Tensor) or not eligible(param, grad, square_avg, acc_delta, step_t) \
                    or not writeable(param, square_avg, acc_delta, step_t):
                return False
            scratch.want(param)
            work.append((p, fresh, param, grad, square_avg, acc_delta, step_t, group))
    scratch.allocate()
    for p, fresh, param, grad, square_avg, acc_delta, step_t, group in work:  # nothing below can fail
        if fresh is not None:
            opt.state[p] = fresh
        update(param, grad, square_avg, acc_delta, group["lr"], group["rho"], group["eps"], group["weight_decay"],
               step_t, scratch)
    return True


def update(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay, step_t, scratch=None):
    """One Adadelta step for a parameter that `eligible` accepted, counting the step first.
    `scratch`: the step's work arrays (else allocated here)."""
    p, g, v, u, s = array(param), array(grad), array(square_avg), array(acc_delta), array(step_t)
    if not (p.flags.writeable and v.flags.writeable and u.flags.writeable and s.flags.writeable):
        return False
    if scratch is None:
        scratch = Scratch(4)
        scratch.want(param)
        scratch.allocate()
    np.add(s, np.float32(1), out=s)                       # step.add_(1)
    step_t._vc.value += 1
    if p.ndim == 0:  # NumPy's 0-d results are scalars, which `out=` refuses
        p, g, v, u = p.reshape(1), g.reshape(1), v.reshape(1), u.reshape(1)
    f = p.dtype.type
    t, std, d = scratch.get(0, p), scratch.get(1, p), scratch.get(2, p)
    with np.errstate(all="ignore"):
        if weight_decay != 0:
            gw = scratch.get(3, p)                         # grad.add(param, alpha=wd)
            np.multiply(p, f(weight_decay), out=gw)
            g = np.add(g, gw, out=gw)
        np.multiply(v, f(rho), out=v)                      # square_avg.mul_(rho)
        np.multiply(g, f(1 - rho), out=t)                  # .addcmul_(grad, grad, value=1 - rho)
        t *= g
        v += t
        np.add(v, f(eps), out=std)                         # square_avg.add(eps).sqrt_()
        np.sqrt(std, out=std)
        np.add(u, f(eps), out=d)                           # acc_delta.add(eps).sqrt_()
        np.sqrt(d, out=d)
        d /= std                                           # delta.div_(std)
        d *= g                                             # .mul_(grad)
        np.multiply(u, f(rho), out=u)                      # acc_delta.mul_(rho)
        np.multiply(d, f(1 - rho), out=t)                  # .addcmul_(delta, delta, value=1 - rho)
        t *= d
        u += t
        d *= f(-lr)                                        # param.add_(delta, alpha=-lr)
        p += d
    param._vc.value += 1
    square_avg._vc.value += 2
    acc_delta._vc.value += 2
    return True
