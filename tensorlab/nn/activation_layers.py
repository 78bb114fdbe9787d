"""Activation modules over nn.functional (torch.nn.modules.activation's remaining classes): CELU, GLU,
Hardshrink, Hardsigmoid, Hardswish, PReLU, RReLU, SELU, Softmax2d, Softmin, Softshrink, Threshold.
Attribute names, defaults and reprs are torch's, so state_dicts and pickled models carry over."""
from __future__ import annotations

from ..ops.creation import empty
from . import functional as F, init
from .module import Module
from .parameter import Parameter


def _inplace_suffix(inplace, lead=", "):
    return f"{lead}inplace=True" if inplace else ""


class Threshold(Module):
    """y = x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        """Apply F.threshold with the module's threshold, value and inplace flag."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        """threshold, value and inplace=True when set (torch's repr)."""
        return f"threshold={self.threshold}, value={self.value}{_inplace_suffix(self.inplace)}"


class RReLU(Module):
    """Randomized leaky ReLU: a slope drawn from U(lower, upper) per element while training, the mean
    slope (lower + upper) / 2 in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        """Apply F.rrelu (random slopes only while self.training)."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        """lower, upper and inplace=True when set (torch's repr)."""
        return f"lower={self.lower}, upper={self.upper}{_inplace_suffix(self.inplace)}"


class Hardsigmoid(Module):
    """relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.hardsigmoid."""
        return F.hardsigmoid(input, self.inplace)


class Hardswish(Module):
    """x * relu6(x + 3) / 6."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.hardswish."""
        return F.hardswish(input, self.inplace)


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        """Apply F.celu with the module's alpha."""
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        """alpha and inplace=True when set (torch's repr)."""
        return f"alpha={self.alpha}{_inplace_suffix(self.inplace)}"


class SELU(Module):
    """scale * (max(0, x) + min(0, alpha * (exp(x) - 1))) with torch's fixed alpha and scale."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """Apply F.selu."""
        return F.selu(input, self.inplace)

    def extra_repr(self):
        """inplace=True when set, else empty (torch's repr)."""
        return _inplace_suffix(self.inplace, lead="")


class GLU(Module):
    """Gated linear unit: the first half of `dim` times the sigmoid of the second half."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """Apply F.glu along self.dim."""
        return F.glu(input, self.dim)

    def extra_repr(self):
        """dim=... (torch's repr)."""
        return f"dim={self.dim}"


class Hardshrink(Module):
    """x where |x| > lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Apply F.hardshrink."""
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        """The bare lambd (torch's repr)."""
        return f"{self.lambd}"


class Softshrink(Module):
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """Apply F.softshrink."""
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        """The bare lambd (torch's repr)."""
        return str(self.lambd)


class PReLU(Module):
    """Parametric ReLU: max(0, x) + weight * min(0, x), with one learnable slope (num_parameters=1) or one
    per channel (dim 1 of the input); `weight` is initialized to `init`."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        self.num_parameters = num_parameters
        super().__init__()
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Set every slope back to self.init."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        """Apply F.prelu with the learnable weight."""
        return F.prelu(input, self.weight)

    def extra_repr(self):
        """num_parameters=... (torch's repr)."""
        return f"num_parameters={self.num_parameters}"


class Softmin(Module):
    """softmax(-x) along dim (dim=None picks torch's legacy implicit dim, with its warning)."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input):
        """Apply F.softmin along self.dim."""
        return F.softmin(input, self.dim)

    def extra_repr(self):
        """dim=... (torch's repr)."""
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channel dimension (dim -3) of a 3-D (C, H, W) or 4-D (N, C, H, W) input."""

    def forward(self, input):
        """Softmax along dim -3; ValueError for any other rank, as torch."""
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)
