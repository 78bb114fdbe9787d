"""Adafactor (torch.optim.Adafactor; Shazeer & Stern 2018, with torch's choices): the second
moment of a matrix gradient is kept factored as its row and column means over the last two
dimensions (O(n + m) memory), a vector's in full; the second-moment decay is 1 - t^beta2_decay,
the relative step size min(lr, 1/sqrt(t)) scaled by max(eps2, RMS(param)), and the update is
clipped to an RMS of at most d."""
from __future__ import annotations

from .. import dtypes
from ..ops.creation import zeros
from .optimizer import Optimizer, _grad_mode, _group_defaults, _params_and_grads, _scalar_state, _value


def _check(ok, message):
    if not ok:
        raise ValueError(message)


class Adafactor(Optimizer):
    """torch.optim.Adafactor: lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3) (eps1 None: the
    parameter dtype's machine epsilon), d=1.0 (update clipping threshold), weight_decay=0.0
    (decoupled, lr * weight_decay), maximize."""

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        if hasattr(lr, "numel") and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        _group_defaults(self, foreach=None, maximize=False)

    def step(self, closure=None):
        """Per parameter: t += 1; v <- lerp(v, mean g^2, t^beta2_decay) (factored for matrices);
        u = g / sqrt(max(v, eps1^2)); p <- p (1 - lr wd) - max(eps2, rms(p)) min(lr, t^-1/2) u / max(1, rms(u)/d)."""
        loss = self._closure_loss(closure)
        with _grad_mode(self):
            for group in self.param_groups:
                lr = _value(group["lr"])
                eps1, eps2 = group["eps"]
                for p, param, grad in _params_and_grads(group):
                    if p.is_complex():
                        raise RuntimeError("Adafactor does not support complex parameters")
                    self._update(p, param, grad, group, lr, eps1, eps2)
        return loss

    def _update(self, p, param, grad, group, lr, eps1, eps2):
        state = self.state[p]
        factored = grad.dim() > 1
        if not state:
            state["step"] = _scalar_state(p, {}, 0.0)
            if factored:
                rows, cols = list(grad.shape), list(grad.shape)
                rows[-1] = 1
                cols[-2] = 1
                state["row_var"] = zeros(rows, dtype=grad.dtype, device=grad.device)
                state["col_var"] = zeros(cols, dtype=grad.dtype, device=grad.device)
            else:
                state["variance"] = zeros(tuple(grad.shape), dtype=grad.dtype, device=grad.device)
        if eps1 is None:
            eps1 = dtypes.finfo(param.dtype).eps
        state["step"].add_(1)
        t = state["step"].item()
        decay = t ** group["beta2_decay"]
        rel_step = min(lr, 1 / t ** 0.5)
        scale = max(eps2, param.norm(2).item() / param.numel() ** 0.5) * rel_step
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        if factored:
            row_var, col_var = state["row_var"], state["col_var"]
            # mean of g^2 along a dimension, as a squared norm over the length (no g^2 temporary)
            row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.shape[-1]), decay)
            col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.shape[-2]), decay)
            estimate = row_var @ col_var
            estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            state["variance"].lerp_(grad * grad, decay)
            estimate = state["variance"].clone()
        update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(grad)
        clip = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
        param.add_(update, alpha=-scale / clip)
