"""tl.signal.windows: torch.signal.windows' window functions (bartlett, blackman, cosine, exponential,
gaussian, general_cosine, general_hamming, hamming, hann, kaiser, nuttall), computed as torch computes them:
a linspace in the requested dtype, then the elementwise formula, so the values agree to its rounding."""
from __future__ import annotations

import math
from collections.abc import Iterable

from .. import dtypes


def _tl():
    import tensorlab as tl
    return tl


def _checks(name, M, dtype, layout):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and str(layout).split(".")[-1] != "strided":
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (dtypes.float32, dtypes.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _trivial(M, dtype, device, requires_grad):
    tl = _tl()
    if M == 0:
        return tl.empty((0,), dtype=dtype, device=device, requires_grad=requires_grad)
    return tl.ones((1,), dtype=dtype, device=device, requires_grad=requires_grad)


def _linspace(start, end, M, dtype, device):
    return _tl().linspace(start, end, M, dtype=dtype, device=device)


def _done(w, requires_grad):
    return w.requires_grad_(True) if requires_grad else w


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = dtype or dtypes.get_default_dtype()
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    start, c = -center, 1.0 / tau
    k = _linspace(start * c, (start + (M - 1)) * c, M, dtype, device)
    return _done((-k.abs()).exp(), requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = dtype or dtypes.get_default_dtype()
    _checks("cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    start, c = 0.5, math.pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(start * c, (start + (M - 1)) * c, M, dtype, device)
    return _done(k.sin(), requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = dtype or dtypes.get_default_dtype()
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    c = 1 / (std * math.sqrt(2))
    k = _linspace(start * c, (start + (M - 1)) * c, M, dtype, device)
    return _done((-(k ** 2)).exp(), requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    tl = _tl()
    dtype = dtype or dtypes.get_default_dtype()
    _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    c = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * c, M, dtype, device)
    a_i = tl.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, device=device)
    i = tl.arange(a_i.shape[0], dtype=dtype, device=device)
    return _done((a_i.unsqueeze(-1) * (i.unsqueeze(-1) * k).cos()).sum(0), requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = dtype or dtypes.get_default_dtype()
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    dtype = dtype or dtypes.get_default_dtype()
    _checks("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    start, c = -1, 2 / (M if not sym else M - 1)
    k = _linspace(start, start + (M - 1) * c, M, dtype, device)
    return _done(1 - k.abs(), requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    """i0(sqrt(beta^2 - k^2)) / i0(beta) over k = linspace(-beta, beta, M) (periodic: M + 1 points, the
    last dropped), beta and the end point rounded to `dtype` first, as torch does."""
    import numpy as np
    dtype = dtype or dtypes.get_default_dtype()
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    tl = _tl()
    t = dtype.np.type
    b = t(beta)
    start = -b
    constant = t(2.0) * b / t(M if not sym else M - 1)
    end = min(b, start + t(M - 1) * constant)
    with np.errstate(all="ignore"):
        k = _linspace(float(start), float(end), M, dtype, device)
        bt = tl.tensor(float(b), dtype=dtype, device=device)
        w = tl.i0((bt * bt - k.pow(2)).sqrt()) / tl.i0(bt)
    return _done(w, requires_grad)


__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]
