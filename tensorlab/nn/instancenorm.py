"""InstanceNorm1d/2d/3d: each (sample, channel) plane normalized by its own statistics
(F.instance_norm), torch's defaults (affine=False, track_running_stats=False), unbatched input, the
num_features check (an error with affine weights, a warning without) and torch's state_dict names."""
from __future__ import annotations

import warnings

from . import functional as F
from .normalization import _NormBase


class _InstanceNorm(_NormBase):
    _NO_BATCH_DIM = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input_dim(self, input):
        n = self._NO_BATCH_DIM
        if input.dim() not in (n, n + 1):
            raise ValueError(f"expected {n}D or {n + 1}D input (got {input.dim()}D input)")

    def _apply_instance_norm(self, input):
        use_input_stats = self.training or not self.track_running_stats
        return F.instance_norm(input, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                               self.momentum if self.momentum is not None else 0.0, self.eps)

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.dim() - self._NO_BATCH_DIM
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          f"warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=2)
        if input.dim() == self._NO_BATCH_DIM:  # unbatched: a batch of one
            return self._apply_instance_norm(input.unsqueeze(0)).squeeze(0)
        return self._apply_instance_norm(input)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over (N, C, L) or unbatched (C, L) input."""
    _NO_BATCH_DIM = 2


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over (N, C, H, W) or unbatched (C, H, W) input."""
    _NO_BATCH_DIM = 3


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over (N, C, D, H, W) or unbatched (C, D, H, W) input."""
    _NO_BATCH_DIM = 4
