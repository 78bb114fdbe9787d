"""tensorlab.nn.utils.weight_norm: the older weight normalization hook (torch.nn.utils.weight_norm,
deprecated in favor of nn.utils.parametrizations.weight_norm). The tensor `name` is replaced by the
parameters name_g (its norms over every dim but `dim`) and name_v (its direction), and a forward
pre-hook recomputes name = name_g * name_v / ||name_v|| before every call."""
from __future__ import annotations

from ... import _warn
from ..parameter import Parameter
from .parametrizations import _norm_except_dim, _weight_norm

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


class WeightNorm:
    """The forward pre-hook of weight_norm (one per parametrized name)."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        """name_g * name_v / ||name_v||."""
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module, name, dim):
        """Install the hook on module.<name> (see the module docstring)."""
        _warn.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                   "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        """Make module.<name> a plain parameter again, holding the current normalized weight."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Apply the weight-normalization hook to module.<name> (dim=None: one norm for the whole
    tensor). Deprecated (FutureWarning) as in torch. Returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Remove the weight_norm hook of module.<name>. Returns module."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")


