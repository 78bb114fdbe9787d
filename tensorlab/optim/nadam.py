"""NAdam (Adam with Nesterov momentum and a momentum schedule), with decoupled weight decay;
torch's update, term by term (torch.optim.nadam._single_tensor_nadam)."""
from __future__ import annotations

from ..ops.creation import zeros_like
from .optimizer import (Optimizer, _adam_moments, _check_betas, _check_capturable, _check_lr, _check_nonnegative,
                        _decay, _grad_mode, _group_defaults, _params_and_grads, _scalar_state, _value)


class NAdam(Optimizer):
    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_lr(lr)
        _check_nonnegative(eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, maximize=False, foreach=None, capturable=False, differentiable=False,
                              decoupled_weight_decay=False)

    def step(self, closure=None):
        """mu_t = beta1 (1 - 0.96^(t psi) / 2) (psi = momentum_decay), mu_product *= mu_t; Adam's
        moments; p -= lr (1 - mu_t) / (1 - mu_product) g / denom + lr mu_{t+1} / (1 - mu_product
        mu_{t+1}) m / denom with denom = sqrt(v / (1 - beta2^t)) + eps."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr, eps, weight_decay = _value(group["lr"]), group["eps"], group["weight_decay"]
                momentum_decay, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = _scalar_state(p, group, 0.0)
                        state["mu_product"] = _scalar_state(p, group, 1.0)
                        state["exp_avg"] = zeros_like(p)
                        state["exp_avg_sq"] = zeros_like(p)
                    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                    mu_product, step_t = state["mu_product"], state["step"]
                    if group["capturable"]:
                        _check_capturable(p, mu_product, step_t, what="params, mu_products and state_steps")
                    step_t.add_(1)
                    # capturable: the step stays a tensor (no host read), as in torch
                    step = step_t if group["capturable"] else step_t.item()
                    bias_correction2 = 1 - beta2 ** step
                    grad = _decay(grad, param, weight_decay, lr, decoupled)
                    mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
                    mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
                    mu_product.mul_(mu)
                    _adam_moments(exp_avg, exp_avg_sq, grad, beta1, beta2)
                    denom = exp_avg_sq.div(bias_correction2).sqrt()
                    if group["differentiable"] or group["capturable"]:
                        denom = denom.add(eps)
                        mu_product_next = mu_product * mu_next
                        grad = grad * (-lr * (1.0 - mu) / (1.0 - mu_product))
                        exp_avg = exp_avg * (-lr * mu_next / (1.0 - mu_product_next))
                        param.addcdiv_(grad, denom)
                        param.addcdiv_(exp_avg, denom)
                    else:
                        mu_prod = mu_product.item()
                        mu_product_next = mu_prod * mu_next
                        denom.add_(eps)
                        param.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - mu_prod)))
                        param.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))
        return loss
