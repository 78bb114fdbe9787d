"""torch's top-level window functions (torch.hann_window, hamming_window, blackman_window,
bartlett_window; kaiser_window lives with i0 in ops/special_functions.py), computed in the
requested dtype in the order torch computes them, so values agree to rounding (about one window in
ten differs from torch's in the last bit somewhere: NumPy's cosine against torch's vectorized one):
k = 0..N-1 (N = window_length + 1 when periodic, the last point then dropped), scaled by the
window's angular step, then the cosine terms."""
from __future__ import annotations

import math

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window"]


def _start(name, window_length, periodic, dtype, layout, device):
    """(N or None for the trivial lengths 0 and 1 with the tensor to return, arange(N), tl)."""
    import tensorlab as tl

    from . import dtypes, layouts
    layouts.check(layout, name)
    dtype = dtype or dtypes.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype.torch_name}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    if window_length == 0:
        return None, tl.empty((0,), dtype=dtype, device=device)
    if window_length == 1:
        return None, tl.ones((1,), dtype=dtype, device=device)
    n = window_length + 1 if periodic else window_length
    return n, tl.arange(n, dtype=dtype, device=device)


def _finish(w, window_length, periodic, requires_grad):
    if periodic:
        w = w[:window_length].contiguous()
    return w.requires_grad_(True) if requires_grad else w


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi k / (N - 1))."""
    n, k = _start("hamming_window", window_length, periodic, dtype, layout, device)
    if n is None:
        return k.requires_grad_(True) if requires_grad else k
    w = k.mul_(2 * math.pi / (n - 1)).cos_().mul_(-beta).add_(alpha)
    return _finish(w, window_length, periodic, requires_grad)


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                requires_grad=False):
    """0.5 - 0.5 cos(2 pi k / (N - 1)) (the Hamming form with alpha = beta = 1/2)."""
    from . import layouts
    layouts.check(layout, "hann_window")
    try:
        return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, layout=layout, device=device,
                              requires_grad=requires_grad)
    except RuntimeError as e:
        raise RuntimeError(str(e).replace("hamming_window", "hann_window")) from None


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """0.42 - 0.5 cos(2 pi k / (N - 1)) + 0.08 cos(4 pi k / (N - 1))."""
    n, k = _start("blackman_window", window_length, periodic, dtype, layout, device)
    if n is None:
        return k.requires_grad_(True) if requires_grad else k
    x = k.mul_(math.pi / (n - 1))
    w = x.mul(4).cos_().mul_(0.08) - x.mul(2).cos_().mul_(0.5) + 0.42
    return _finish(w, window_length, periodic, requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, pin_memory=False,
                    requires_grad=False):
    """The triangle 2k / (N - 1) rising to the middle, 2 - 2k / (N - 1) after it."""
    n, k = _start("bartlett_window", window_length, periodic, dtype, layout, device)
    if n is None:
        return k.requires_grad_(True) if requires_grad else k
    w = k.mul_(2.0 / (n - 1))
    half = ((n - 1) >> 1) + 1
    w[half:].mul_(-1).add_(2)
    return _finish(w, window_length, periodic, requires_grad)
