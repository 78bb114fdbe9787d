"""Adam and AdamW (Adam with decoupled weight decay), with amsgrad and maximize; torch's
update, term by term (torch.optim.adam._single_tensor_adam)."""
from __future__ import annotations

from ..ops.creation import zeros_like
from ..ops.elementwise import maximum
from . import _adam_cpu
from .optimizer import (Optimizer, _adam_moments, _check_betas, _check_fused_flags, _check_fused_param, _check_lr,
                        _check_nonnegative, _count_step, _decay, _grad_mode, _group_defaults, _params_and_grads,
                        _scalar_state)


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": (float(betas[0]), float(betas[1])), "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "decoupled_weight_decay": decoupled_weight_decay,
                    "foreach": foreach, "capturable": capturable, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_flags(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, amsgrad=False, maximize=False, decoupled_weight_decay=False, foreach=None,
                              capturable=False, differentiable=False, fused=None)

    def _state_for(self, p, amsgrad, group=None):
        state = self.state[p]
        if not state:
            # step is a float32 CPU tensor, as torch keeps it (reading it never syncs a GPU), on the
            # parameter's device when the group is capturable or fused
            if group is not None and group["fused"]:
                _check_fused_param(p)
            state["step"] = _scalar_state(p, group or {}, 0.0)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _tl_fast_step(self):
        """The whole step on the CPU in NumPy calls, all-or-nothing without an undo copy, when
        every parameter allows it (optim/_adam_cpu.py's step_all); False: nothing done."""
        with _grad_mode(self):
            return _adam_cpu.step_all(self)

    def step(self, closure=None):
        """m = beta1-lerp toward g, v = beta2 * v + (1 - beta2) g^2, then
        p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps), with v replaced by
        its running maximum for amsgrad. weight_decay adds wd * p to g, or (decoupled, AdamW)
        first scales p by 1 - lr * wd."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
                amsgrad, decoupled = group["amsgrad"], group["decoupled_weight_decay"]
                for p, param, grad in _params_and_grads(group):
                    state = self._state_for(p, amsgrad, group)
                    step_t, exp_avg, exp_avg_sq = state["step"], state["exp_avg"], state["exp_avg_sq"]
                    if not (amsgrad or group["capturable"] or group["differentiable"]) and type(lr) in (int, float) \
                            and _adam_cpu.eligible(param, grad, exp_avg, exp_avg_sq, step_t) \
                            and _adam_cpu.update(param, grad, exp_avg, exp_avg_sq, beta1, beta2, lr, eps,
                                                 weight_decay, decoupled, step_t):
                        continue  # the same update as below (step count included), in a few NumPy calls
                    _count_step(p, group, step_t)
                    grad = _decay(grad, param, weight_decay, lr, decoupled)
                    _adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
                    if group["capturable"] or group["differentiable"] or step_t.device.type != "cpu":
                        # (a fused group's step lives on the parameter's device: read as a tensor, not synced)
                        _tensor_step_update(param, state, step_t, exp_avg, exp_avg_sq, group)
                        continue
                    step = step_t.item()
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2 = 1 - beta2 ** step
                    step_size = lr / bias_correction1
                    bias_correction2_sqrt = bias_correction2 ** 0.5
                    if amsgrad:
                        max_sq = state["max_exp_avg_sq"]
                        maximum(max_sq, exp_avg_sq, out=max_sq)
                        denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                    else:
                        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                    param.addcdiv_(exp_avg, denom, value=-step_size)
        return loss


def _tensor_step_update(param, state, step_t, exp_avg, exp_avg_sq, group):
    """torch's capturable / differentiable tail of the update: the bias corrections stay tensors
    computed from the step tensor (no host read), folded into the denominator."""
    beta1, beta2 = group["betas"]
    lr, eps, differentiable = group["lr"], group["eps"], group["differentiable"]
    bias_correction1 = 1 - beta1 ** step_t
    bias_correction2 = 1 - beta2 ** step_t
    step_size_neg = (lr / bias_correction1).neg()
    bias_correction2_sqrt = bias_correction2.sqrt()
    if group["amsgrad"]:
        max_sq = state["max_exp_avg_sq"]
        max_sq.copy_(maximum(max_sq.clone() if differentiable else max_sq, exp_avg_sq))
        denom = (max_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
    else:
        denom = (exp_avg_sq.sqrt() / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
    param.addcdiv_(exp_avg.clone() if differentiable else exp_avg, denom)


class AdamW(Adam):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
