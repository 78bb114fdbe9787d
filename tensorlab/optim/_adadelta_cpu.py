"""Adadelta's per-parameter update on the CPU as a few NumPy calls on the tensors' own arrays.

torch's single-tensor Adadelta (torch.optim.adadelta._single_tensor_adadelta) term by term, each
term rounded in the parameter's dtype exactly as the ops of the general path (optim/adadelta.py:
mul_, addcmul_, add, sqrt_, div_, mul_, add_) round it, so the two paths give the same bits and
move the same version counters; it only skips the per-op dispatch. It runs where _adam_cpu's
eligibility rule allows (CPU float32/float64, no fault plan, no autograd hooks, no aliasing);
everything else takes the general path. Checks come first: nothing is written before they pass."""
from __future__ import annotations

import numpy as np

from ..backends.cpu.memory import array
from ._adam_cpu import eligible_states


def eligible(param, grad, square_avg, acc_delta, step):
    return eligible_states(param, grad, (square_avg, acc_delta), step)


def update(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay, step_t):
    """One Adadelta step for a parameter that `eligible` accepted, counting the step first."""
    p, g, v, u, s = array(param), array(grad), array(square_avg), array(acc_delta), array(step_t)
    if not (p.flags.writeable and v.flags.writeable and u.flags.writeable and s.flags.writeable):
        return False
    np.add(s, np.float32(1), out=s)                       # step.add_(1)
    step_t._vc.value += 1
    if p.ndim == 0:  # NumPy's 0-d results are scalars, which `out=` refuses
        p, g, v, u = p.reshape(1), g.reshape(1), v.reshape(1), u.reshape(1)
    f = p.dtype.type
    with np.errstate(all="ignore"):
        if weight_decay != 0:
            g = np.add(g, np.multiply(p, f(weight_decay)))  # grad.add(param, alpha=wd)
        np.multiply(v, f(rho), out=v)                      # square_avg.mul_(rho)
        t = np.multiply(g, f(1 - rho))                     # .addcmul_(grad, grad, value=1 - rho)
        t *= g
        v += t
        std = np.add(v, f(eps))                            # square_avg.add(eps).sqrt_()
        np.sqrt(std, out=std)
        d = np.add(u, f(eps))                              # acc_delta.add(eps).sqrt_()
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
