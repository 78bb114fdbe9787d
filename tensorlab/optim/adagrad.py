"""Adagrad with lr_decay and initial_accumulator_value; torch's update, term by term
(torch.optim.adagrad._single_tensor_adagrad). As torch, the state of every parameter is
created by the constructor (step 0, sum filled with initial_accumulator_value)."""
from __future__ import annotations

from ..ops.creation import full_like
from .optimizer import (Optimizer, _check_fused_flags, _check_fused_param, _check_lr, _check_nonnegative, _decay,
                        _grad_mode, _group_defaults, _params_and_grads, _scalar_state, _value)


class Adagrad(Optimizer):
    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        _check_nonnegative(lr_decay=lr_decay, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        _check_fused_flags(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group):
        state = self.state[p]
        state["step"] = _scalar_state(p, {"fused": group["fused"]}, 0.0)
        state["sum"] = full_like(p, self.defaults["initial_accumulator_value"])
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False, differentiable=False, fused=None)

    def _sparse_grads_ok(self, group):
        return True

    def _tl_fast_step(self):
        """The whole step on the CPU in NumPy calls, all-or-nothing without an undo copy, when every
        parameter allows it (optim/_cpu_steps.py); False: nothing done."""
        from . import _cpu_steps
        if any(p._grad is not None and p._grad.is_sparse for g in self.param_groups for p in g["params"]):
            return False  # sparse gradients: step() (tensorlab/sparse)
        with _grad_mode(self):
            return _cpu_steps.adagrad_step_all(self)

    def step(self, closure=None):
        """sum += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps) (g += wd * p first)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, lr_decay = _value(group["lr"]), group["lr_decay"]
                weight_decay, eps = group["weight_decay"], group["eps"]
                for p, param, grad in _params_and_grads(group):
                    if group["fused"]:
                        _check_fused_param(p)
                    state = self.state[p]
                    if not state:
                        state = self._init_state(p, group)
                    state_sum, step_t = state["sum"], state["step"]
                    step_t.add_(1)
                    step = step_t.item()
                    clr = lr / (1 + (step - 1) * lr_decay)
                    if grad.is_sparse:  # torch's sparse update: only the gradient's rows
                        _sparse_step(param, grad, state_sum, clr, eps, weight_decay)
                        continue
                    grad = _decay(grad, param, weight_decay)
                    state_sum.addcmul_(grad, grad, value=1)
                    std = state_sum.sqrt() + eps if group["differentiable"] else state_sum.sqrt().add_(eps)
                    param.addcdiv_(grad, std, value=-clr)
        return loss


def _sparse_step(param, grad, state_sum, clr, eps, weight_decay):
    """sum[r] += g^2; p[r] -= clr * g / (sqrt(sum[r]) + eps) over the coalesced gradient's rows r."""
    if weight_decay != 0:
        raise RuntimeError("weight_decay option is not compatible with sparse gradients")
    g = grad.coalesce()
    idx, vals = g._indices(), g._values()
    if vals.shape[0] == 0:
        return
    rows = tuple(idx[d] for d in range(idx.shape[0]))
    state_sum.index_put_(rows, vals.pow(2), accumulate=True)
    std = state_sum[rows].sqrt_().add_(eps)
    param.index_put_(rows, (vals / std).mul_(-clr), accumulate=True)
