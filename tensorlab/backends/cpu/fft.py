"""CPU FFT primitive: torch's three transform kinds (_fft_c2c, _fft_r2c, _fft_c2r) through
scipy.fft (pocketfft: float32/complex64 stay single precision), imported on first use."""
from __future__ import annotations

import numpy as np

from ... import _faults
from .memory import array

__all__ = ("fft",)

_SCIPY = None


def _scipy_fft():
    global _SCIPY
    if _SCIPY is None:
        import scipy.fft
        _SCIPY = scipy.fft
    return _SCIPY


def fft(out, x, kind, dims, forward, onesided, last_size, scale):
    """out = scale * transform of x over `dims` (unnormalized, then scaled once).
    kind "c2c": complex -> complex, forward or inverse; "r2c": real -> complex, out's last dim
    n//2+1 (onesided) or n; "c2r": complex Hermitian -> real, out's last transformed dim `last_size`."""
    _faults.hit("launch")
    sp = _scipy_fft()
    a = array(x)
    o = array(out)
    axes = tuple(dims)
    if kind == "c2c":
        r = (sp.fftn if forward else sp.ifftn)(a, axes=axes, norm="backward" if forward else "forward")
    elif kind == "r2c":
        r = (sp.rfftn if onesided else sp.fftn)(a, axes=axes, norm="backward")
    else:  # c2r
        s = [a.shape[d] for d in axes[:-1]] + [last_size]
        r = sp.irfftn(a, s=s, axes=axes, norm="forward")
    if scale != 1.0:
        r = r * np.asarray(scale, dtype=r.real.dtype)
    np.copyto(o, r, casting="unsafe")
