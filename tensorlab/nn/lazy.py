"""Lazy modules (torch.nn.modules.lazy): LazyModuleMixin and LazyLinear, LazyConv1d/2d/3d,
LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d, LazyInstanceNorm1d/2d/3d. Their parameters and
buffers start as UninitializedParameter/UninitializedBuffer; the first forward reads the input's
feature size (and the placeholders' device/dtype), materializes them in place, runs torch's
reset_parameters, and the module becomes its cls_to_become (LazyLinear -> Linear, ...).
load_state_dict into a lazy module materializes each placeholder with the shape it loads."""
from __future__ import annotations

import itertools
import warnings

from .. import dtypes
from ..ops.creation import tensor as _tensor
from ._grad import no_grad
from .conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from .conv3d_layers import Conv3d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .uninitialized import UninitializedBuffer, UninitializedParameter, is_lazy


class LazyModuleMixin:
    """A module whose parameters' shapes come from its first input (see the module docstring).
    Subclasses define initialize_parameters(*inputs) and set cls_to_become."""

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)
        warnings.warn("Lazy modules are a new feature under heavy development so changes to the API or "
                      "functionality can happen at any moment.", stacklevel=2)

    def has_uninitialized_params(self):
        """Whether any parameter or buffer of this module (not its children) is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs):
        """Materialize the placeholders from the forward's arguments (each lazy class defines it)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {type(self).__name__}")

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        out = super().state_dict(destination=destination, prefix=prefix, keep_vars=keep_vars)
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            if is_lazy(t) and prefix + name in out:
                out[prefix + name] = t  # placeholders are saved as themselves, as torch does
        return out

    def _plan_load(self, state_dict, prefix, plan, missing, unexpected, errors):
        # torch's _lazy_load_hook: a placeholder that receives a real tensor takes its shape first
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if t is not None and is_lazy(t) and key in state_dict:
                src = state_dict[key]
                if not is_lazy(src) and hasattr(src, "_meta"):
                    with no_grad():
                        t.materialize(tuple(src._meta[1].shape))
        # a placeholder loaded from a placeholder: nothing to copy, and neither missing nor unexpected
        skip = {prefix + n for n, t in itertools.chain(self._parameters.items(), self._buffers.items())
                if t is not None and is_lazy(t) and is_lazy(state_dict.get(prefix + n))}
        sd = {k: v for k, v in state_dict.items() if k not in skip}
        before = len(missing)
        super()._plan_load(sd, prefix, plan, missing, unexpected, errors)
        missing[before:] = [k for k in missing[before:] if k not in skip]

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")


# -- Linear -------------------------------------------------------------------------------------------
class LazyLinear(LazyModuleMixin, Linear):
    """Linear whose in_features is inferred from the first input's last dim."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """in_features = input.shape[-1]; weight (out, in) and bias (out,) materialized and initialized."""
        if self.has_uninitialized_params():
            with no_grad():
                in_features = input.shape[-1]
                self.in_features = in_features
                self.weight.materialize((self.out_features, in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


# -- convolutions ---------------------------------------------------------------------------------------
class _LazyConvXdMixin(LazyModuleMixin):
    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_num_spatial_dims(self):
        return self._nd

    def _get_in_channels(self, input):
        nd = self._get_num_spatial_dims()
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {input.shape}")
        return input.shape[1] if input.dim() == nd + 2 else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs):
        """in_channels from the input (dim 1, or dim 0 unbatched); weight and bias materialized."""
        if self.has_uninitialized_params():
            in_channels = self._get_in_channels(input)
            if in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            self.in_channels = in_channels
            with no_grad():
                if self.transposed:
                    self.weight.materialize((in_channels, self.out_channels // self.groups, *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, in_channels // self.groups, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _lazy_placeholders(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)


class _LazyConv(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._lazy_placeholders(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._lazy_placeholders(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """Conv1d whose in_channels is inferred from the first input."""
    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """Conv2d whose in_channels is inferred from the first input."""
    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """Conv3d whose in_channels is inferred from the first input."""
    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """ConvTranspose1d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """ConvTranspose2d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """ConvTranspose3d whose in_channels is inferred from the first input."""
    cls_to_become = ConvTranspose3d


# -- normalization --------------------------------------------------------------------------------------
class _LazyNormBase(LazyModuleMixin):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None, *,
                 bias=True):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = _tensor(0, dtype=dtypes.int64, device=device)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """num_features = input.shape[1] (torch's rule); affine parameters and running statistics
        materialized and reset."""
        if self.has_uninitialized_params():
            num_features = input.shape[1]
            self.num_features = num_features
            with no_grad():
                if self.affine:
                    self.weight.materialize((num_features,))
                    if self.bias is not None:
                        self.bias.materialize((num_features,))
                if self.track_running_stats:
                    self.running_mean.materialize((num_features,))
                    self.running_var.materialize((num_features,))
                self.reset_parameters()


class LazyBatchNorm1d(_LazyNormBase, BatchNorm1d):
    """BatchNorm1d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm1d


class LazyBatchNorm2d(_LazyNormBase, BatchNorm2d):
    """BatchNorm2d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm2d


class LazyBatchNorm3d(_LazyNormBase, BatchNorm3d):
    """BatchNorm3d whose num_features is inferred from the first input."""
    cls_to_become = BatchNorm3d


class LazyInstanceNorm1d(_LazyNormBase, InstanceNorm1d):
    """InstanceNorm1d whose num_features is inferred from the first input."""
    cls_to_become = InstanceNorm1d


class LazyInstanceNorm2d(_LazyNormBase, InstanceNorm2d):
    """InstanceNorm2d whose num_features is inferred from the first input."""
    cls_to_become = InstanceNorm2d


class LazyInstanceNorm3d(_LazyNormBase, InstanceNorm3d):
    """InstanceNorm3d whose num_features is inferred from the first input."""
    cls_to_become = InstanceNorm3d
