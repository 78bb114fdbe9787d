"""Adadelta; torch's update, term by term (torch.optim.adadelta._single_tensor_adadelta)."""
from __future__ import annotations

from . import _adadelta_cpu
from .optimizer import (Optimizer, _check_lr, _check_nonnegative, _count_step, _decay, _first_state, _grad_mode,
                        _group_defaults, _params_and_grads, _value)


class Adadelta(Optimizer):
    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)

    def _tl_fast_step(self):
        """The whole step on the CPU in NumPy calls, all-or-nothing without an undo copy, when every
        parameter allows it (optim/_adadelta_cpu.py's step_all); False: nothing done."""
        with _grad_mode(self):
            return _adadelta_cpu.step_all(self)

    def step(self, closure=None):
        """v = rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) * g;
        u = rho u + (1 - rho) delta^2; p -= lr * delta (g += wd * p first)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, rho, eps, weight_decay = _value(group["lr"]), group["rho"], group["eps"], group["weight_decay"]
                fast = not (group["capturable"] or group["differentiable"]) and type(lr) in (int, float)
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    _first_state(state, p, group, "square_avg", "acc_delta")
                    square_avg, acc_delta, step = state["square_avg"], state["acc_delta"], state["step"]
                    if fast and _adadelta_cpu.eligible(param, grad, square_avg, acc_delta, step) \
                            and _adadelta_cpu.update(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay,
                                                     step):
                        continue  # the same update as below (step count included), in a few NumPy calls
                    _count_step(p, group, step)
                    grad = _decay(grad, param, weight_decay)
                    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                    std = square_avg.add(eps).sqrt_()
                    delta = acc_delta.add(eps).sqrt_()
                    if group["differentiable"]:
                        delta = delta.clone()
                    delta.div_(std).mul_(grad)
                    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                    param.add_(delta, alpha=-lr)
        return loss

