"""LPPool1d/2d/3d: power-average pooling modules over F.lp_pool1d/2d/3d (nn/functional_lppool.py)."""
from __future__ import annotations

from . import functional_lppool as _lp
from .module import Module


class _LPPoolNd(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return ("norm_type={norm_type}, kernel_size={kernel_size}, stride={stride}, "
                "ceil_mode={ceil_mode}".format(**self.__dict__))


class LPPool1d(_LPPoolNd):
    """(sum over each window of x^p) ** (1/p) over (N, C, L) or (C, L) input."""

    def forward(self, input):
        return _lp.lp_pool1d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPoolNd):
    """(sum over each window of x^p) ** (1/p) over (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        return _lp.lp_pool2d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPoolNd):
    """(sum over each window of x^p) ** (1/p) over (N, C, D, H, W) or (C, D, H, W) input."""

    def forward(self, input):
        return _lp.lp_pool3d(input, float(self.norm_type), self.kernel_size, self.stride, self.ceil_mode)
