"""ASGD (averaged stochastic gradient descent); torch's update, term by term
(torch.optim.asgd._single_tensor_asgd): eta, mu and the running average ax live in the state."""
from __future__ import annotations

from .. import dtypes
from ..ops.creation import tensor, zeros_like
from .optimizer import (Optimizer, _check_capturable, _check_lr, _check_nonnegative, _decay, _grad_mode,
                        _group_defaults, _params_and_grads, _value)


class ASGD(Optimizer):
    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)

    def step(self, closure=None):
        """p = p (1 - lambd eta) - eta g; ax += mu (p - ax); eta = lr / (1 + lambd lr t)^alpha;
        mu = 1 / max(1, t - t0)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, lambd, alpha, t0 = _value(group["lr"]), group["lambd"], group["alpha"], group["t0"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    if not state:
                        # torch keeps all three scalars on the parameter's device
                        state["step"] = tensor(0.0, dtype=dtypes.float32, device=p.device)
                        state["eta"] = tensor(float(lr), dtype=dtypes.float32, device=p.device)
                        state["mu"] = tensor(1.0, dtype=dtypes.float32, device=p.device)
                        state["ax"] = zeros_like(p)
                    mu, ax, eta, step_t = state["mu"], state["ax"], state["eta"], state["step"]
                    if group["capturable"]:
                        _check_capturable(p, mu, eta, step_t, what="params, mus, etas, and state_steps")
                    step_t.add_(1)
                    grad = _decay(grad, param, group["weight_decay"])
                    if group["capturable"]:
                        param.mul_(1 - lambd * eta)
                        param.addcmul_(grad, eta, value=-1)
                        ax.add_(param.sub(ax).mul_(mu))
                        eta.copy_(lr / ((1 + lambd * lr * step_t) ** alpha))
                        mu.copy_(1 / (step_t - t0).clamp(min=1))
                        continue
                    eta_value = eta.item()
                    param.mul_(1 - lambd * eta_value)
                    param.add_(grad, alpha=-eta_value)
                    if mu.item() != 1:
                        ax.add_(param.sub(ax).mul_(mu))
                    else:
                        ax.copy_(param)
                    step = step_t.item()
                    eta.copy_(tensor(lr / ((1 + lambd * lr * step) ** alpha)))
                    mu.copy_(tensor(1 / max(1, step - t0)))
        return loss
