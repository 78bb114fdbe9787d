"""tensorlab.fft: torch.fft's discrete Fourier transforms.

Every transform is a composite over torch's three primitives, as ATen builds them: `_c2c`
(complex -> complex, forward or inverse), `_r2c` (real -> complex, onesided or two-sided) and
`_c2r` (Hermitian complex -> real). Each runs the backend primitive `fft` (CPU: scipy.fft; CUDA:
cuFFT through the driver's `fft`), unnormalized and scaled once by the norm mode ("backward":
the inverse scales by 1/n, "forward": the forward one, "ortho": both by 1/sqrt(n)). n/s resize
the input first (zero padding or slicing, ordinary differentiable ops). Gradients are torch's
formulas: c2c's backward is the opposite-direction c2c with the same scaling; r2c's pads a
onesided gradient back to full length and takes the real part of the inverse c2c; c2r's is a
onesided r2c whose interior (non-DC, non-Nyquist) bins are doubled.
"""
from __future__ import annotations

import math

from . import backends, dtypes
from .ops._common import empty_tensor
from .ops._composite import tensor_arg, to_out

_NONE, _ROOT, _BY_N = 0, 1, 2

__all__ = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift")


def _tl():
    import tensorlab
    return tensorlab


def _norm_mode(norm, forward):
    if norm is None or norm == "backward":
        return _NONE if forward else _BY_N
    if norm == "forward":
        return _BY_N if forward else _NONE
    if norm == "ortho":
        return _ROOT
    raise RuntimeError(f'Invalid normalization mode: "{norm}" (tensorlab.fft: norm is "backward", "ortho" or '
                       '"forward")')


def _scale(mode, n):
    if mode == _NONE or n == 0:
        return 1.0
    return 1.0 / math.sqrt(n) if mode == _ROOT else 1.0 / n


def _prim(kind, x, dims, forward, onesided, last_size, mode, out_shape, out_dtype):
    """The backend primitive into a fresh tensor (nothing else is touched)."""
    sig = out_shape if kind == "c2r" else tuple(x.shape)
    n = 1
    for d in dims:
        n *= sig[d]
    out = empty_tensor(tuple(out_shape), out_dtype, x.device)
    if out.numel():
        dev = x.device
        be = backends.cpu if dev.type == "cpu" else backends.get(dev)
        be.fft(out, x, kind, tuple(dims), forward, onesided, last_size, _scale(mode, n))
    return out


# -- the three primitives with their gradients ------------------------------------------------------

def _raw_c2c(x, dims, mode, forward):
    return _prim("c2c", x, dims, forward, False, 0, mode, x.shape, x.dtype)


def _raw_r2c(x, dims, mode, onesided):
    shape = list(x.shape)
    if onesided:
        shape[dims[-1]] = shape[dims[-1]] // 2 + 1
    return _prim("r2c", x, dims, True, onesided, 0, mode, shape, x.dtype.to_complex())


def _raw_c2r(x, dims, mode, last_size):
    shape = list(x.shape)
    shape[dims[-1]] = last_size
    return _prim("c2r", x, dims, False, False, last_size, mode, shape, x.dtype.to_real())


_FN = None


def _functions():
    global _FN
    if _FN is not None:
        return _FN
    from .autograd.function import Function

    class FftC2CBackward0(Function):
        @staticmethod
        def forward(ctx, x, dims, mode, forward):
            ctx.args = (dims, mode, forward)
            return _raw_c2c(x, dims, mode, forward)

        @staticmethod
        def backward(ctx, g):
            dims, mode, forward = ctx.args
            return _c2c(g, dims, mode, not forward), None, None, None

    class FftR2CBackward0(Function):
        @staticmethod
        def forward(ctx, x, dims, mode, onesided):
            ctx.args = (dims, mode, onesided, x.shape[dims[-1]])
            return _raw_r2c(x, dims, mode, onesided)

        @staticmethod
        def backward(ctx, g):
            dims, mode, onesided, last = ctx.args
            if onesided and g.shape[dims[-1]] < last:  # zero-pad the gradient back to the full length
                g = _tl().constant_pad_nd(g, _pad_spec(g.dim(), dims[-1], last - g.shape[dims[-1]]))
            return _c2c(g, dims, mode, False).real, None, None, None

    class FftC2RBackward0(Function):
        @staticmethod
        def forward(ctx, x, dims, mode, last_size):
            ctx.args = (dims, mode, x.shape[dims[-1]])
            return _raw_c2r(x, dims, mode, last_size)

        @staticmethod
        def backward(ctx, g):
            dims, mode, half = ctx.args
            gi = _r2c(g, dims, mode, True)
            double = g.shape[dims[-1]] - gi.shape[dims[-1]]
            if double > 0:
                tl = _tl()
                d = dims[-1]
                w = tl.ones(gi.shape[d], dtype=gi.dtype.to_real(), device=gi.device)
                w[1:1 + double] = 2.0
                gi = gi * w.reshape([-1] + [1] * (gi.dim() - 1 - d))
            return gi, None, None, None

    _FN = (FftC2CBackward0, FftR2CBackward0, FftC2RBackward0)
    return _FN


def _pad_spec(ndim, d, extra):
    """constant_pad_nd's pad list (last dim first) adding `extra` zeros at the end of dim d."""
    spec = [0, 0] * (ndim - d)
    spec[-1] = extra
    return spec


def _needs_graph(x):
    from . import autograd_hooks
    return x.requires_grad and autograd_hooks._impl is not None and _tl().is_grad_enabled()


def _c2c(x, dims, mode, forward):
    if _needs_graph(x):
        return _functions()[0].apply(x, tuple(dims), mode, forward)
    return _raw_c2c(x, dims, mode, forward)


def _r2c(x, dims, mode, onesided):
    if _needs_graph(x):
        return _functions()[1].apply(x, tuple(dims), mode, onesided)
    return _raw_r2c(x, dims, mode, onesided)


def _c2r(x, dims, mode, last_size):
    if _needs_graph(x):
        return _functions()[2].apply(x, tuple(dims), mode, last_size)
    return _raw_c2r(x, dims, mode, last_size)


# -- argument handling --------------------------------------------------------------------------------

def _promote(x, op, require_complex=False):
    dt = x.dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(f"Unsupported dtype {dt.torch_name} (tensorlab.fft.{op} computes in float32/float64 and "
                           "complex64/complex128; convert the input with .float() first)")
    if not (dt.is_floating_point or dt.is_complex):
        x = x.to(dtypes.get_default_dtype())
    if require_complex and not x.dtype.is_complex:
        x = x.to(x.dtype.to_complex())
    return x


def _wrap(d, ndim):
    m = max(ndim, 1)
    if not isinstance(d, int) or isinstance(d, bool):
        raise TypeError(f"fft: dim must be an int or a sequence of ints, not {type(d).__name__}")
    if not -m <= d < m:
        if ndim == 0:
            raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
        raise IndexError(f"Dimension out of range (expected to be in range of [{-m}, {m - 1}], but got {d})")
    return d + m if d < 0 else d


def _resize(x, dims, sizes):
    """x zero-padded or sliced at the end of each dim in dims to sizes (differentiable ops)."""
    tl = _tl()
    for d, n in zip(dims, sizes):
        cur = x.shape[d]
        if n < cur:
            x = x.narrow(d, 0, n)
        elif n > cur:
            x = tl.constant_pad_nd(x, _pad_spec(x.dim(), d, n - cur))
    return x


def _check_n(n):
    if n is not None and n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def _one_dim(x, n, dim):
    d = _wrap(dim, x.dim())
    _check_n(n)
    return d, (x.shape[d] if n is None else n)


def _shape_and_dims(x, s, dim, op):
    """torch's canonicalize_fft_shape_and_dim_args: (dims, sizes)."""
    ndim = x.dim()
    if dim is not None:
        dims = [_wrap(d, ndim) for d in ([dim] if isinstance(dim, int) else list(dim))]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"FFT dims must be unique (tensorlab.fft.{op} got dim={tuple(dim)})")
    if s is not None:
        s = [int(v) for v in s]
        if dim is not None and len(s) != len(dims):
            raise RuntimeError(f"When given, dim and shape arguments must have the same length (tensorlab.fft.{op} "
                               f"got s={tuple(s)}, dim={tuple(dims)})")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {ndim} dimensions.")
        if dim is None:
            dims = list(range(ndim - len(s), ndim))
        sizes = [x.shape[d] if v == -1 else v for d, v in zip(dims, s)]
        for v in sizes:
            _check_n(v)
    else:
        if dim is None:
            dims = list(range(ndim))
        sizes = [x.shape[d] for d in dims]
    return dims, sizes


def _finish(r, out, op):
    return to_out(r, out, op) if out is not None else r


# -- one-dimensional transforms -------------------------------------------------------------------------

def _c2c_or_r2c(input, n, dim, norm, forward, out, op):
    tensor_arg(input, op)
    x = _promote(input, op)
    d, n = _one_dim(x, n, dim)
    x = _resize(x, [d], [n])
    mode = _norm_mode(norm, forward)
    if x.dtype.is_complex:
        r = _c2c(x, [d], mode, forward)
    else:
        r = _r2c(x, [d], mode, False)
        if not forward:
            r = r.conj()
    return _finish(r, out, op)


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.fft: the one-dimensional discrete Fourier transform."""
    return _c2c_or_r2c(input, n, dim, norm, True, out, "fft")


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.ifft: the one-dimensional inverse discrete Fourier transform."""
    return _c2c_or_r2c(input, n, dim, norm, False, out, "ifft")


def _real_only(x, op):
    if x.dtype.is_complex:
        raise RuntimeError(f"{op} expects a real input tensor, but got {x.dtype.torch_name} (tensorlab.fft.{op}: "
                           "use fft for complex input, or pass .real)")


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.rfft: the onesided transform of a real signal (n//2+1 frequencies)."""
    tensor_arg(input, "rfft")
    _real_only(input, "rfft")
    x = _promote(input, "rfft")
    d, n = _one_dim(x, n, dim)
    x = _resize(x, [d], [n])
    return _finish(_r2c(x, [d], _norm_mode(norm, True), True), out, "rfft")


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.ihfft: the inverse of hfft (a real signal's onesided inverse transform)."""
    tensor_arg(input, "ihfft")
    _real_only(input, "ihfft")
    x = _promote(input, "ihfft")
    d, n = _one_dim(x, n, dim)
    x = _resize(x, [d], [n])
    return _finish(_r2c(x, [d], _norm_mode(norm, False), True).conj(), out, "ihfft")


def _c2r_1d(input, n, dim, norm, forward, op):
    tensor_arg(input, op)
    x = _promote(input, op, require_complex=True)
    d = _wrap(dim, x.dim())
    _check_n(n)
    last = 2 * (x.shape[d] - 1) if n is None else n
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    x = _resize(x, [d], [last // 2 + 1])
    if forward:
        x = x.conj()
    return _c2r(x, [d], _norm_mode(norm, forward), last)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.irfft: the inverse of rfft (a real signal of n points, 2*(m-1) by default)."""
    return _finish(_c2r_1d(input, n, dim, norm, False, "irfft"), out, "irfft")


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """torch.fft.hfft: the transform of a Hermitian-symmetric signal given by its onesided half (real result)."""
    return _finish(_c2r_1d(input, n, dim, norm, True, "hfft"), out, "hfft")


# -- n-dimensional transforms ---------------------------------------------------------------------------

def _c2c_nd(input, s, dim, norm, forward, out, op):
    tensor_arg(input, op)
    x = _promote(input, op)
    dims, sizes = _shape_and_dims(x, s, dim, op)
    x = _resize(x, dims, sizes)
    mode = _norm_mode(norm, forward)
    if not dims:
        r = x if x.dtype.is_complex else x.to(x.dtype.to_complex())
        return _finish(r.clone(), out, op)
    if x.dtype.is_complex:
        r = _c2c(x, dims, mode, forward)
    else:
        r = _r2c(x, dims, mode, False)
        if not forward:
            r = r.conj()
    return _finish(r, out, op)


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.fftn: the n-dimensional transform over `dim` (every dim by default)."""
    return _c2c_nd(input, s, dim, norm, True, out, "fftn")


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.ifftn: the n-dimensional inverse transform."""
    return _c2c_nd(input, s, dim, norm, False, out, "ifftn")


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c_nd(input, s, dim, norm, True, out, "fft2")


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _c2c_nd(input, s, dim, norm, False, out, "ifft2")


def _nonempty(dims, op):
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")


def _rfftn(input, s, dim, norm, out, op):
    tensor_arg(input, op)
    _real_only(input, op)
    x = _promote(input, op)
    dims, sizes = _shape_and_dims(x, s, dim, op)
    _nonempty(dims, op)
    x = _resize(x, dims, sizes)
    return _finish(_r2c(x, dims, _norm_mode(norm, True), True), out, op)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.rfftn: the n-dimensional transform of a real signal, onesided in the last dim."""
    return _rfftn(input, s, dim, norm, out, "rfftn")


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _rfftn(input, s, dim, norm, out, "rfft2")


def _c2r_nd(input, s, dim, norm, forward, op):
    tensor_arg(input, op)
    x = _promote(input, op, require_complex=True)
    dims, sizes = _shape_and_dims(x, s, dim, op)
    _nonempty(dims, op)
    last = sizes[-1] if s is not None and list(s)[-1] != -1 else 2 * (x.shape[dims[-1]] - 1)
    if last < 1:
        raise RuntimeError(f"Invalid number of data points ({last}) specified")
    sizes = sizes[:-1] + [last // 2 + 1]
    x = _resize(x, dims, sizes)
    mode = _norm_mode(norm, forward)
    if forward:  # hfftn: c2c over the leading dims, then c2r of the conjugate over the last
        if len(dims) > 1:
            x = _c2c(x, dims[:-1], mode, True)
        return _c2r(x.conj(), [dims[-1]], mode, last)
    return _c2r(x, dims, mode, last)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.irfftn: the inverse of rfftn."""
    return _finish(_c2r_nd(input, s, dim, norm, False, "irfftn"), out, "irfftn")


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _finish(_c2r_nd(input, s, dim, norm, False, "irfft2"), out, "irfft2")


def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.hfftn: the n-dimensional transform of a Hermitian signal given by its onesided half."""
    return _finish(_c2r_nd(input, s, dim, norm, True, "hfftn"), out, "hfftn")


def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _finish(_c2r_nd(input, s, dim, norm, True, "hfft2"), out, "hfft2")


def _ihfftn(input, s, dim, norm, out, op):
    tensor_arg(input, op)
    _real_only(input, op)
    x = _promote(input, op)
    dims, sizes = _shape_and_dims(x, s, dim, op)
    _nonempty(dims, op)
    x = _resize(x, dims, sizes)
    mode = _norm_mode(norm, False)
    r = _r2c(x, [dims[-1]], mode, True).conj()
    if len(dims) > 1:
        r = _c2c(r, dims[:-1], mode, False)
    return _finish(r, out, op)


def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """torch.fft.ihfftn: the inverse of hfftn."""
    return _ihfftn(input, s, dim, norm, out, "ihfftn")


def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _ihfftn(input, s, dim, norm, out, "ihfft2")


# -- helpers ------------------------------------------------------------------------------------------------

def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """torch.fft.fftfreq: the sample frequencies [0, 1, ..., n/2-1, -n/2, ..., -1] / (d*n)."""
    tl = _tl()
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"fftfreq: n must be a non-negative int, got {n!r}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype, "fftfreq")
    r = tl.arange(n, dtype=dtypes.int64, device=device)
    r = tl.where(r < (n + 1) // 2, r, r - n).to(dt) * (1.0 / (n * d) if n else 1.0)
    r = r.to(dt)
    if requires_grad:
        r.requires_grad_(True)
    return _finish(r, out, "fftfreq")


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """torch.fft.rfftfreq: the sample frequencies of rfft: [0, 1, ..., n//2] / (d*n)."""
    tl = _tl()
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"rfftfreq: n must be a non-negative int, got {n!r}")
    dt = dtypes.get_default_dtype() if dtype is None else dtypes.as_dtype(dtype, "rfftfreq")
    r = (tl.arange(n // 2 + 1, dtype=dtypes.int64, device=device).to(dt) * (1.0 / (n * d) if n else 1.0)).to(dt)
    if requires_grad:
        r.requires_grad_(True)
    return _finish(r, out, "rfftfreq")


def _shift(input, dim, inverse, op):
    tensor_arg(input, op)
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [_wrap(d, input.dim()) for d in ([dim] if isinstance(dim, int) else list(dim))]
    if not dims:
        return input.clone() if input.dim() == 0 else input
    shifts = [(input.shape[d] + 1) // 2 if inverse else input.shape[d] // 2 for d in dims]
    return _tl().roll(input, shifts, dims)


def fftshift(input, dim=None):
    """torch.fft.fftshift: the zero frequency moved to the centre."""
    return _shift(input, dim, False, "fftshift")


def ifftshift(input, dim=None):
    """torch.fft.ifftshift: the inverse of fftshift."""
    return _shift(input, dim, True, "ifftshift")
