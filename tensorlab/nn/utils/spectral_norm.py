"""tensorlab.nn.utils.spectral_norm: the older spectral normalization hook (torch.nn.utils.spectral_norm).
The parameter `name` becomes name_orig, the buffers name_u and name_v hold the power iteration's
vectors, and a forward pre-hook sets module.<name> = name_orig / sigma before every call (one power
iteration step per call in training mode, updating name_u / name_v in place)."""
from __future__ import annotations

import tensorlab as _tl

from .. import functional as F
from .._grad import no_grad
from ..parameter import Parameter

__all__ = ["SpectralNorm", "SpectralNormLoadStateDictPreHook", "SpectralNormStateDictHook", "spectral_norm",
           "remove_spectral_norm"]


class SpectralNorm:
    """The forward pre-hook of spectral_norm (one per normalized name)."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight):
        """The weight with `dim` first and the other dims flattened: [size(dim), -1]."""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module, do_power_iteration):
        """name_orig / sigma, sigma = u . (W v) after n_power_iterations steps when asked."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                w = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(_tl.mv(w.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(_tl.mv(w, v), dim=0, eps=self.eps))
                # clones: the in-place updates of the next call must not touch what backward saved
                u = u.clone()
                v = v.clone()
        sigma = _tl.dot(u, _tl.mv(weight_mat, v))
        return weight / sigma

    def remove(self, module):
        """Make module.<name> a plain parameter holding the current normalized weight."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _solve_v_and_rescale(self, weight_mat, u, target_sigma):
        """The v with u . (W v) = target_sigma that a version-0 checkpoint implies (least squares)."""
        v = _tl.linalg.multi_dot([weight_mat.t().mm(weight_mat).pinverse(), weight_mat.t(), u.unsqueeze(1)]).squeeze(1)
        return v.mul_(target_sigma / _tl.dot(u, _tl.mv(weight_mat, v)))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        """Install the hook on module.<name> (see the module docstring)."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.data)  # a plain attribute, rewritten by every forward
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        # the checkpoint-version hooks, where the Module has state_dict hooks
        register_sd = getattr(module, "_register_state_dict_hook", None)
        register_load = getattr(module, "_register_load_state_dict_pre_hook", None)
        if register_sd is not None and register_load is not None:
            register_sd(SpectralNormStateDictHook(fn))
            register_load(SpectralNormLoadStateDictPreHook(fn))
        return fn


class SpectralNormLoadStateDictPreHook:
    """Load pre-hook: a version-0 checkpoint (weight, weight_orig, weight_u, no weight_v) gets its
    weight_v solved from sigma = mean(weight_orig / weight)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        fn = self.fn
        version = local_metadata.get("spectral_norm", {}).get(fn.name + ".version", None)
        if version is not None and version >= 1:
            return
        weight_key = prefix + fn.name
        if version is None and all(weight_key + s in state_dict for s in ("_orig", "_u", "_v")) and \
                weight_key not in state_dict:
            return  # a current checkpoint saved without metadata
        missing = False
        for suffix in ("_orig", "", "_u"):
            if weight_key + suffix not in state_dict:
                missing = True
                if strict:
                    missing_keys.append(weight_key + suffix)
        if missing:
            return
        with no_grad():
            weight_orig = state_dict[weight_key + "_orig"]
            weight = state_dict.pop(weight_key)
            sigma = (weight_orig / weight).mean()
            weight_mat = fn.reshape_weight_to_matrix(weight_orig)
            state_dict[weight_key + "_v"] = fn._solve_v_and_rescale(weight_mat, state_dict[weight_key + "_u"], sigma)


class SpectralNormStateDictHook:
    """State-dict hook: records the spectral_norm version (1) in the checkpoint's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        meta = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in meta:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        meta[key] = self.fn._version


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply the spectral-normalization hook to module.<name> (dim defaults to 1 for transposed
    convolutions, else 0). Returns module."""
    if dim is None:
        from ..conv import ConvTranspose1d, ConvTranspose2d
        from ..conv3d_layers import ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Remove the spectral_norm hook of module.<name>. Returns module."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for table, kind in (("_state_dict_hooks", SpectralNormStateDictHook),
                        ("_load_state_dict_pre_hooks", SpectralNormLoadStateDictPreHook)):
        hooks = module.__dict__.get(table)
        for k, hook in list((hooks or {}).items()):
            if isinstance(hook, kind) and hook.fn.name == name:
                del hooks[k]
                break
    return module
