"""Adamax (Adam with the infinity norm); torch's update, term by term
(torch.optim.adamax._single_tensor_adamax)."""
from __future__ import annotations

from ..ops import elementwise as _ew
from ..ops.creation import zeros_like
from .optimizer import (Optimizer, _check_betas, _check_lr, _check_nonnegative, _count_step, _decay, _grad_mode,
                        _group_defaults, _params_and_grads, _scalar_state, _value)


class Adamax(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)

    def step(self, closure=None):
        """m = lerp(m, g, 1 - b1); u = max(b2 u, |g| + eps); p -= lr / (1 - b1^t) * m / u."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, wd = _value(group["lr"]), group["eps"], group["weight_decay"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = _scalar_state(p, group, 0.0)
                        state["exp_avg"] = zeros_like(p)
                        state["exp_inf"] = zeros_like(p)
                    exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
                    _count_step(p, group, step_t)
                    grad = _decay(grad, param, wd)
                    exp_avg.lerp_(grad, 1 - beta1)
                    exp_inf.copy_(_ew.maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                    if group["capturable"]:
                        neg_bias_correction = (beta1 ** step_t - 1) / lr
                        param.addcdiv_(exp_avg, exp_inf * neg_bias_correction)
                    else:
                        clr = lr / (1 - beta1 ** step_t.item())
                        param.addcdiv_(exp_avg, exp_inf, value=-clr)
        return loss
