"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize; torch's
update, term by term (torch.optim.sgd._single_tensor_sgd)."""
from __future__ import annotations

from .optimizer import (Optimizer, _check_fused_flags, _check_fused_param, _check_lr, _decay, _grad_mode,
                        _params_and_grads, _value)


class SGD(Optimizer):
    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused}
        super().__init__(params, defaults)
        _check_fused_flags(fused, foreach, differentiable)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)

    def _sparse_grads_ok(self, group):
        return True

    def _tl_fast_step(self):
        """The whole step on the CPU in NumPy calls, all-or-nothing without an undo copy, when every
        parameter allows it (optim/_sgd_cpu.py); False: nothing done."""
        from . import _sgd_cpu
        if any(p._grad is not None and p._grad.is_sparse for g in self.param_groups for p in g["params"]):
            return False  # sparse gradients: step() (tensorlab/sparse)
        with _grad_mode(self):
            return _sgd_cpu.step_all(self)

    def step(self, closure=None):
        """g = grad (negated when maximizing) + weight_decay * p; with momentum,
        buf = momentum * buf + (1 - dampening) * g (buf = g on the first step) and
        g = g + momentum * buf (Nesterov) or buf; then p -= lr * g."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr, momentum, dampening = _value(group["lr"]), group["momentum"], group["dampening"]
                weight_decay, nesterov = group["weight_decay"], group["nesterov"]
                for p, param, grad in _params_and_grads(group):
                    if group["fused"]:
                        _check_fused_param(p)
                    if grad.is_sparse:  # p -= lr * g at the gradient's entries (torch's add_ of a sparse tensor)
                        if momentum == 0 or weight_decay != 0:
                            _sparse_step(param, grad, lr, weight_decay)
                            continue
                        grad = grad.to_dense()  # momentum: a dense buffer (torch keeps a sparse one; same values)
                    grad = _decay(grad, param, weight_decay)
                    if momentum != 0:
                        state = self.state[p]
                        buf = state.get("momentum_buffer")
                        if buf is None:
                            buf = state["momentum_buffer"] = grad.clone().detach()
                        else:
                            buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                        grad = grad.add(buf, alpha=momentum) if nesterov else buf
                    param.add_(grad, alpha=-lr)
        return loss


def _sparse_step(param, grad, lr, weight_decay):
    if weight_decay != 0:
        raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead. (SGD with "
                           "weight_decay and a sparse gradient, as torch; set weight_decay=0)")
    idx, vals = grad._indices(), grad._values()
    if vals.shape[0]:
        param.index_put_(tuple(idx[d] for d in range(idx.shape[0])), vals * (-lr), accumulate=True)
