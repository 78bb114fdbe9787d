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

_ORIG, _LEFT, _RIGHT = "_orig", "_u", "_v"


def _unit(vec, eps):
    return F.normalize(vec, dim=0, eps=eps)


def _owner_hook(module, name):
    """(key, hook) of the SpectralNorm pre-hook that owns module.<name>, or (None, None)."""
    for key, candidate in list(module._forward_pre_hooks.items()):
        if isinstance(candidate, SpectralNorm) and candidate.name == name:
            return key, candidate
    return None, None


def _drop_companion_hook(module, table, kind, name):
    """Remove the first `kind` hook for `name` from the module's hook dict `table` (if it has one)."""
    registry = module.__dict__.get(table) or {}
    for key in [k for k, h in registry.items() if isinstance(h, kind) and h.fn.name == name][:1]:
        del registry[key]


class SpectralNorm:
    """The forward pre-hook of spectral_norm (one per normalized name)."""

    _version = 1

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.eps = name, dim, eps
        self.n_power_iterations = n_power_iterations

    def _key(self, suffix):
        return self.name + suffix

    def reshape_weight_to_matrix(self, weight):
        """The weight with `dim` first and the other dims flattened: [size(dim), -1]."""
        lead = self.dim
        if lead:
            rest = [axis for axis in range(weight.dim()) if axis != lead]
            weight = weight.permute(lead, *rest)
        rows = weight.shape[0]
        return weight.reshape(rows, -1)

    def _iterate(self, mat, left, right):
        """n_power_iterations in-place steps of the power method on the detached matrix."""
        frozen = mat.detach()
        frozen_t = frozen.t()
        steps = self.n_power_iterations
        while steps:
            right.copy_(_unit(_tl.mv(frozen_t, left), self.eps))
            left.copy_(_unit(_tl.mv(frozen, right), self.eps))
            steps -= 1

    def compute_weight(self, module, do_power_iteration):
        """name_orig / sigma, sigma = u . (W v) after n_power_iterations steps when asked."""
        raw = getattr(module, self._key(_ORIG))
        left = getattr(module, self._key(_LEFT))
        right = getattr(module, self._key(_RIGHT))
        mat = self.reshape_weight_to_matrix(raw)
        if do_power_iteration:
            with no_grad():
                self._iterate(mat, left, right)
                # snapshot: backward must not see the next call's in-place updates
                left, right = left.clone(), right.clone()
        sigma = _tl.dot(left, _tl.mv(mat, right))
        return raw / sigma

    def remove(self, module):
        """Make module.<name> a plain parameter holding the current normalized weight."""
        with no_grad():
            final = self.compute_weight(module, do_power_iteration=False).detach()
        for attr in (self.name, self._key(_LEFT), self._key(_RIGHT), self._key(_ORIG)):
            delattr(module, attr)
        module.register_parameter(self.name, Parameter(final))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    def _v_for_sigma(self, mat, left, sigma):
        """The right vector with u . (W v) = sigma that a version-0 checkpoint implies (least squares)."""
        mat_t = mat.t()
        gram_pinv = mat_t.mm(mat).pinverse()
        right = gram_pinv.mm(mat_t.mm(left.reshape(-1, 1))).reshape(-1)
        scale = sigma / _tl.dot(left, _tl.mv(mat, right))
        return right.mul_(scale)

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        """Install the hook on module.<name> (see the module docstring)."""
        if _owner_hook(module, name)[1] is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        hook = SpectralNorm(name, n_power_iterations, dim, eps)
        param = module._parameters.get(name)
        if param is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            rows, cols = hook.reshape_weight_to_matrix(param).shape
            start_u = _unit(param.new_empty(rows).normal_(0, 1), eps)
            start_v = _unit(param.new_empty(cols).normal_(0, 1), eps)
        delattr(module, name)
        module.register_parameter(hook._key(_ORIG), param)
        setattr(module, name, param.data)  # a plain attribute, rewritten by every forward
        module.register_buffer(hook._key(_LEFT), start_u)
        module.register_buffer(hook._key(_RIGHT), start_v)
        module.register_forward_pre_hook(hook)
        # the checkpoint-version hooks, where the Module has state_dict hooks
        add_save = getattr(module, "_register_state_dict_hook", None)
        add_load = getattr(module, "_register_load_state_dict_pre_hook", None)
        if add_save and add_load:
            add_save(SpectralNormStateDictHook(hook))
            add_load(SpectralNormLoadStateDictPreHook(hook))
        return hook


class SpectralNormLoadStateDictPreHook:
    """Load pre-hook: a version-0 checkpoint (weight, weight_orig, weight_u, no weight_v) gets its
    weight_v solved from sigma = mean(weight_orig / weight)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        hook = self.fn
        saved_version = (local_metadata.get("spectral_norm") or {}).get(hook.name + ".version")
        if saved_version is not None and saved_version >= 1:
            return
        base = prefix + hook.name
        if saved_version is None and base not in state_dict and \
                all(base + s in state_dict for s in (_ORIG, _LEFT, _RIGHT)):
            return  # a current checkpoint saved without metadata
        needed = [base + _ORIG, base, base + _LEFT]
        absent = [k for k in needed if k not in state_dict]
        if absent:
            if strict:
                missing_keys.extend(absent)
            return
        with no_grad():
            unnormalized = state_dict[base + _ORIG]
            sigma = (unnormalized / state_dict.pop(base)).mean()
            state_dict[base + _RIGHT] = hook._v_for_sigma(hook.reshape_weight_to_matrix(unnormalized),
                                                          state_dict[base + _LEFT], sigma)


class SpectralNormStateDictHook:
    """State-dict hook: records the spectral_norm version (1) in the checkpoint's metadata."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, module, state_dict, prefix, local_metadata):
        section = local_metadata.setdefault("spectral_norm", {})
        entry = f"{self.fn.name}.version"
        if entry in section:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {entry}")
        section[entry] = self.fn._version


def _default_dim(module):
    from ..conv import ConvTranspose1d, ConvTranspose2d
    from ..conv3d_layers import ConvTranspose3d
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Apply the spectral-normalization hook to module.<name> (dim defaults to 1 for transposed
    convolutions, else 0). Returns module."""
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Remove the spectral_norm hook of module.<name>. Returns module."""
    key, hook = _owner_hook(module, name)
    if hook is None:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    _drop_companion_hook(module, "_state_dict_hooks", SpectralNormStateDictHook, name)
    _drop_companion_hook(module, "_load_state_dict_pre_hooks", SpectralNormLoadStateDictPreHook, name)
    return module
