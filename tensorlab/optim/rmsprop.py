"""RMSprop with momentum and the centered variant; torch's update, term by term
(torch.optim.rmsprop._single_tensor_rmsprop)."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .optimizer import (Optimizer, _check_lr, _check_nonnegative, _count_step, _decay, _grad_mode, _group_defaults,
                        _params_and_grads, _scalar_state, _value)


class RMSprop(Optimizer):
    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                              capturable=False)

    def _tl_fast_step(self):
        """The whole step on the CPU in NumPy calls, all-or-nothing without an undo copy, when every
        parameter allows it (optim/_cpu_steps.py); False: nothing done."""
        from . import _cpu_steps
        with _grad_mode(self):
            return _cpu_steps.rmsprop_step_all(self)

    def step(self, closure=None):
        """v = alpha v + (1 - alpha) g^2; avg = sqrt(v - gbar^2) (centered, gbar the running mean
        of g) or sqrt(v), plus eps; with momentum buf = momentum buf + g / avg, p -= lr buf, else
        p -= lr g / avg (g += wd * p first)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, alpha, eps = _value(group["lr"]), group["alpha"], group["eps"]
                weight_decay, momentum, centered = group["weight_decay"], group["momentum"], group["centered"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = _scalar_state(p, group, 0.0)
                        state["square_avg"] = zeros_like(p)
                        if momentum > 0:
                            state["momentum_buffer"] = zeros_like(p)
                        if centered:
                            state["grad_avg"] = zeros_like(p)
                    step, square_avg = state["step"], state["square_avg"]
                    _count_step(p, group, step)
                    grad = _decay(grad, param, weight_decay)
                    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                    if centered:
                        grad_avg = state["grad_avg"]
                        grad_avg.lerp_(grad, 1 - alpha)
                        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
                    else:
                        avg = square_avg.sqrt()
                    avg = avg.add(eps) if group["differentiable"] else avg.add_(eps)
                    if momentum > 0:
                        buf = state["momentum_buffer"]
                        buf.mul_(momentum).addcdiv_(grad, avg)
                        param.add_(buf, alpha=-lr)
                    else:
                        param.addcdiv_(grad, avg, value=-lr)
        return loss
