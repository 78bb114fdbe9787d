"""Rprop (resilient backpropagation); torch's update, term by term
(torch.optim.rprop._single_tensor_rprop): per-element step sizes grow by etaplus while the
gradient keeps its sign and shrink by etaminus when it flips (then that element skips the step)."""
from __future__ import annotations

from ..ops import elementwise as _ew
from ..ops.creation import full_like, zeros_like
from .optimizer import (Optimizer, _check_lr, _count_step, _grad_mode, _group_defaults, _params_and_grads,
                        _scalar_state, _value)


class Rprop(Optimizer):
    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, capturable=False)

    def step(self, closure=None):
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                etaminus, etaplus = group["etas"]
                step_size_min, step_size_max = group["step_sizes"]
                for p, param, grad in _params_and_grads(group):
                    state = self.state[p]
                    if not state:
                        state["step"] = _scalar_state(p, group, 0.0)
                        state["prev"] = zeros_like(p)
                        state["step_size"] = full_like(grad, _value(group["lr"]))
                    prev, step_size = state["prev"], state["step_size"]
                    _count_step(p, group, state["step"])
                    sign = grad.mul(prev.clone() if group["differentiable"] else prev).sign()
                    # torch's capturable arithmetic (where instead of boolean-mask writes): the same
                    # values, and no data-dependent shapes on the device
                    sign = _ew.where(sign.gt(0), etaplus, sign)
                    sign = _ew.where(sign.lt(0), etaminus, sign)
                    sign = _ew.where(sign.eq(0), 1, sign)
                    step_size.mul_(sign).clamp_(step_size_min, step_size_max)
                    grad = _ew.where(sign.eq(etaminus), 0, grad)
                    param.addcmul_(grad.sign(), step_size, value=-1)
                    prev.copy_(grad)
        return loss
