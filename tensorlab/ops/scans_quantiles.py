"""Scans and order statistics: cummax/cummin (value and index, ties and NaN as torch: the latest
maximum wins, a NaN wins over everything after it; the indices from the `cumulative` primitive's index
scan, the values gathered), logcumsumexp (logaddexp scan, stable at +-inf), quantile/nanquantile (sort,
then torch's rank and interpolation rules), and ldexp. logcumsumexp's scan is Hillis-Steele: log2(n)
whole-tensor steps, so it runs on every device without a host loop over elements; gradients come from
gather and logaddexp."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ..tensor import Tensor
from ._common import empty_tensor
from ._composite import tensor_arg, tl, to_out, to_outs, wrap_dim


_tl = tl
_tensor = tensor_arg


def _wrap(dim, n, op):
    return wrap_dim(dim, n)


def _scan(x, d, combine):
    """Inclusive scan of `x` along d by doubling: combine(earlier, later) -> tuple, on tuples of tensors."""
    tl = _tl()
    n = x[0].shape[d]
    s = 1
    while s < n:
        prev = tuple(t.narrow(d, 0, n - s) for t in x)
        cur = tuple(t.narrow(d, s, n - s) for t in x)
        new = combine(prev, cur)
        x = tuple(tl.cat([t.narrow(d, 0, s), u], d) for t, u in zip(x, new))
        s *= 2
    return x


cummax_result = namedtuple("cummax", ("values", "indices"))
cummin_result = namedtuple("cummin", ("values", "indices"))


def _cum_extreme(name, input, dim, is_max):
    """(values, indices): the positions from the backends' index scan (the `cumulative` primitive's
    "argmax"/"argmin"), the values gathered from them (so autograd is gather's)."""
    _tensor(input, name)
    x = input if input.dim() else input.reshape(1)
    d = _wrap(dim, x.dim(), name)
    best = empty_tensor(tuple(x.shape), dtypes.int64, x.device)
    x._backend.cumulative(best, x.detach(), "argmax" if is_max else "argmin", d)
    values = x.gather(d, best)
    if not input.dim():
        values, best = values.reshape(()), best.reshape(())
    return values, best


def cummax(input, dim, *, out=None):
    v, i = _cum_extreme("cummax", input, dim, True)
    return _outs(cummax_result(v, i), out)


def cummin(input, dim, *, out=None):
    v, i = _cum_extreme("cummin", input, dim, False)
    return _outs(cummin_result(v, i), out)


_outs = to_outs


def logcumsumexp(input, dim, *, out=None):
    from .math_composites import logaddexp
    _tensor(input, "logcumsumexp")
    x = input if input.dim() else input.reshape(1)
    if not x.dtype.is_floating_point:
        x = x.to(dtypes.get_default_dtype())
    d = _wrap(dim, x.dim(), "logcumsumexp")
    (r,) = _scan((x,), d, lambda a, b: (logaddexp(a[0], b[0]),))
    r = r if input.dim() else r.reshape(())
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, out, ignore_nan):
    tl = _tl()
    _tensor(input, name)
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation}")
    scalar_q = not isinstance(q, Tensor)
    qt = tl.tensor([float(q)], dtype=input.dtype, device=input.device) if scalar_q else q
    if not scalar_q:
        if qt.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if qt.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qt = qt.reshape(-1)
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if bool(((qt < 0) | (qt > 1)).any()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if dim is None:
        x = input.reshape(-1)
        d = 0
        out_shape = [1] * input.dim() if keepdim else []
    else:
        d = _wrap(dim, input.dim(), name)
        x = input if input.dim() else input.reshape(1)
        out_shape = list(input.shape)
        if input.dim():
            if keepdim:
                out_shape[d] = 1
            else:
                del out_shape[d]
    x = x.movedim(d, -1)
    srt = x.sort(-1).values  # NaN last
    n = srt.shape[-1]
    valid = (~srt.isnan()).sum(-1, keepdim=True)
    if ignore_nan:
        last = (valid - 1).to(input.dtype)
    else:  # a row with a NaN: every rank lands on the last (NaN) entry
        last = tl.where(valid == n, valid - 1, tl.full_like(valid, n - 1)).to(input.dtype)
    ranks = qt * last  # (..., k)
    if interpolation == "lower":
        ranks = ranks.floor()
    elif interpolation == "higher":
        ranks = ranks.ceil()
    elif interpolation == "nearest":
        ranks = ranks.round()
    below = ranks.floor().clamp(min=0).to(dtypes.int64)
    above = ranks.ceil().clamp(min=0).to(dtypes.int64)
    below = below.clamp(max=max(n - 1, 0))
    above = above.clamp(max=max(n - 1, 0))
    vb, va = srt.gather(-1, below), srt.gather(-1, above)
    if interpolation == "midpoint":
        w = tl.full_like(ranks, 0.5)
    else:
        w = ranks - below.to(ranks.dtype)
    r = vb + (va - vb) * w
    if ignore_nan:
        r = tl.where(valid == 0, tl.full_like(r, math.nan), r)
    # r: (..., k) -> (k, out_shape) or out_shape for a scalar q
    r = r.movedim(-1, 0)
    r = r.reshape([r.shape[0]] + out_shape)
    if scalar_q:
        r = r.reshape(out_shape)
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("quantile", input, q, dim, keepdim, interpolation, out, False)


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, out, True)


def ldexp(input, other, *, out=None):
    """input * 2 ** other (a float result, as torch's)."""
    tl = _tl()
    _tensor(input, "ldexp")
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    e = other if isinstance(other, Tensor) else tl.tensor(other, device=input.device)
    dt = dtypes.result_type(x, e)
    if not dt.is_floating_point:
        dt = dtypes.get_default_dtype()
    r = x.to(dt) * tl.pow(tl.tensor(2.0, dtype=dt, device=x.device), e.to(dt))
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def ldexp_(self, other):
    r = ldexp(self, other)
    return self.copy_(r)


FUNCTIONS = ("cummax", "cummin", "logcumsumexp", "quantile", "nanquantile", "ldexp")
METHODS = {"cummax": cummax, "cummin": cummin, "logcumsumexp": logcumsumexp, "quantile": quantile,
           "nanquantile": nanquantile, "ldexp": ldexp, "ldexp_": ldexp_}
