"""tensorlab.nn.utils.weight_norm: the older weight normalization hook (torch.nn.utils.weight_norm,
deprecated in favor of nn.utils.parametrizations.weight_norm). The tensor `name` is replaced by the
parameters name_g (its norms over every dim but `dim`) and name_v (its direction), and a forward
pre-hook recomputes name = name_g * name_v / ||name_v|| before every call."""
from __future__ import annotations

from ... import _warn
from ..parameter import Parameter
from .parametrizations import _magnitudes, _rescaled

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

_DEPRECATION = ("`torch.nn.utils.weight_norm` is deprecated in favor of "
                "`torch.nn.utils.parametrizations.weight_norm`.")


def _find_hook(module, name):
    """(key, hook) of the WeightNorm pre-hook that owns module.<name>, or (None, None)."""
    for key, candidate in list(module._forward_pre_hooks.items()):
        if isinstance(candidate, WeightNorm) and candidate.name == name:
            return key, candidate
    return None, None


class WeightNorm:
    """The forward pre-hook of weight_norm (one per parametrized name)."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = dim if dim is not None else -1

    @property
    def _g_name(self):
        return f"{self.name}_g"

    @property
    def _v_name(self):
        return f"{self.name}_v"

    def compute_weight(self, module):
        """name_g * name_v / ||name_v||."""
        direction = getattr(module, self._v_name)
        magnitude = getattr(module, self._g_name)
        return _rescaled(direction, magnitude, self.dim)

    @staticmethod
    def apply(module, name, dim):
        """Install the hook on module.<name> (see the module docstring)."""
        _warn.warn(_DEPRECATION, FutureWarning)
        if _find_hook(module, name)[1] is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        hook = WeightNorm(name, dim)
        raw = getattr(module, name).data
        module._parameters.pop(name)
        module.register_parameter(hook._g_name, Parameter(_magnitudes(raw, hook.dim).data))
        module.register_parameter(hook._v_name, Parameter(raw))
        hook(module, None)
        module.register_forward_pre_hook(hook)
        return hook

    def remove(self, module):
        """Make module.<name> a plain parameter again, holding the current normalized weight."""
        current = self.compute_weight(module).data
        delattr(module, self.name)
        for suffix_name in (self._g_name, self._v_name):
            module._parameters.pop(suffix_name)
        setattr(module, self.name, Parameter(current))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Apply the weight-normalization hook to module.<name> (dim=None: one norm for the whole
    tensor). Deprecated (FutureWarning) as in torch. Returns module."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Remove the weight_norm hook of module.<name>. Returns module."""
    key, hook = _find_hook(module, name)
    if hook is None:
        raise ValueError(f"weight_norm of '{name}' not found in {module}")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module
