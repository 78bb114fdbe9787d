"""lp_pool1d/2d/3d: the power-average pool (sum over each window of x^p) ** (1/p), torch's formula: an
average pool of x^p times the window size, its sign kept through relu(|.|) before the root."""
from __future__ import annotations

from ..ops.pool import avg_pool1d, avg_pool2d


def _ntuple(v, n):
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"lp_pool{n}d: kernel_size must be an int or {n} ints, got {tuple(v)}")
        return tuple(int(x) for x in v)
    return (int(v),) * n


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n, pool):
    from .functional import relu
    ks = _ntuple(kernel_size, n)
    if stride is not None:
        out = pool(input.pow(norm_type), ks if n > 1 else ks[0], stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), ks if n > 1 else ks[0], padding=0, ceil_mode=ceil_mode)
    count = 1
    for k in ks:
        count *= k
    return (out.sign() * relu(out.abs())).mul(count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """1-D power-average pooling: (sum over each window of x^p) ** (1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling: (sum over each window of x^p) ** (1/p)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling: (sum over each window of x^p) ** (1/p)."""
    from .functional_conv3d import avg_pool3d
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d)


__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d"]
