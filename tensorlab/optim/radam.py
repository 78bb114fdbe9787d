"""RAdam (Adam with a rectified adaptive learning rate), with decoupled weight decay; torch's
update, term by term (torch.optim.radam._single_tensor_radam)."""
from __future__ import annotations

from ..ops.elementwise import where
from .optimizer import (Optimizer, _adam_moments, _check_betas, _check_lr, _check_nonnegative, _count_step, _decay,
                        _first_state, _grad_mode, _group_defaults, _params_and_grads, _value)


class RAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, decoupled_weight_decay=False,
                              capturable=False)

    def step(self, closure=None):
        """Adam's moments; rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t), rho_inf = 2 / (1 - beta2) - 1;
        when rho_t > 5, p -= lr m_hat r_t sqrt(1 - beta2^t) / (sqrt(v) + eps) with the rectification
        r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)), else p -= lr m_hat."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, weight_decay = _value(group["lr"]), group["eps"], group["weight_decay"]
                decoupled = group["decoupled_weight_decay"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    _first_state(state, p, group, "exp_avg", "exp_avg_sq")
                    exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
                    _count_step(p, group, step_t)
                    # capturable: the step stays a tensor (no host read), as in torch
                    step = step_t if group["capturable"] else step_t.item()
                    grad = _decay(grad, param, weight_decay, lr, decoupled)
                    _adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
                    bias_correction1 = 1 - beta1 ** step
                    bias_correction2 = 1 - beta2 ** step
                    bias_corrected_exp_avg = exp_avg / bias_correction1
                    rho_inf = 2 / (1 - beta2) - 1
                    rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                    if group["capturable"]:
                        adaptive = _rect(rho_t, rho_inf) * _adaptive_lr(exp_avg_sq, eps, bias_correction2, group)
                        update = where(rho_t > 5.0, adaptive, 1.0)
                        param.add_(bias_corrected_exp_avg * lr * update, alpha=-1.0)
                    elif rho_t > 5.0:
                        param.add_(bias_corrected_exp_avg * lr * _adaptive_lr(exp_avg_sq, eps, bias_correction2, group)
                                   * _rect(rho_t, rho_inf), alpha=-1.0)
                    else:
                        param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)
        return loss


def _rect(rho_t, rho_inf):
    """The variance rectification term r_t (NaN where rho_t <= 4: only used where rho_t > 5)."""
    return ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5


def _adaptive_lr(exp_avg_sq, eps, bias_correction2, group):
    exp_avg_sq_sqrt = exp_avg_sq.sqrt()
    exp_avg_sq_sqrt = exp_avg_sq_sqrt.add(eps) if group["differentiable"] else exp_avg_sq_sqrt.add_(eps)
    return (bias_correction2 ** 0.5) / exp_avg_sq_sqrt
