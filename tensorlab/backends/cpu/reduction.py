"""CPU reduction primitives. `reduce` covers every full/partial reduction (one op name per
functor of the CUDA reduce kernel). Outputs arrive with the reduced dims either kept (size 1)
or dropped; the primitive sees them with the input's rank either way.

Accumulation: the output's dtype, except float16/bfloat16 which accumulate in float32 and
round once when the result is stored. Inputs are converted to the output's dtype first, as
torch does for dtype= (sum(x, dtype=int64) truncates floats before adding)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

from ... import _faults
from .elementwise import _quiet_off, _quiet_on
from .memory import array

__all__ = ("reduce", "arg_reduce", "cumulative", "softmax")

_F32 = np.dtype(np.float32)
HALF = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


def _acc(dt):
    return _F32 if dt in HALF else dt


def _convert(a, dt):
    """`a` as the op's dtype `dt`, computed in its accumulation type. Returns (array, dtype= to
    pass to a NumPy reduction): safe casts happen inside the reduction, without a copy."""
    acc = _acc(dt)
    if a.dtype == acc:
        return a, None
    if a.dtype != dt and dt != acc:
        a = a.astype(dt)  # round to float16/bfloat16 first, like torch's cast to dtype=
    if np.can_cast(a.dtype, acc, "same_kind"):
        return a, acc
    return a.astype(acc), None


def _floating(a, dt):
    return a.astype(_acc(dt), copy=False) if a.dtype == dt else a.astype(dt).astype(_acc(dt), copy=False)


def _wide(a, dt):
    """norm/var/std operands: float32 is accumulated in float64, as torch's CPU kernels do, so a
    square or squared deviation past float32's range does not overflow a finite result
    (tensor([1e30, 1., 2., 3.]).std() is 5e29, tensor([3e20]).norm() is 3e20)."""
    b = _floating(a, dt)
    return b.astype(np.float64) if b.dtype == np.float32 else b


def _count(a, dims):
    n = 1
    for d in dims:
        n *= a.shape[d]
    return n


def _ufunc_reduce(ufunc, a, dims, o):
    """Written straight into `o` when it has the accumulation dtype, else returned to be cast."""
    a, acc = _convert(a, o.dtype)
    if (a.dtype if acc is None else acc) == o.dtype:
        return ufunc.reduce(a, axis=dims, dtype=acc, out=o, keepdims=True)
    return ufunc.reduce(a, axis=dims, dtype=acc, keepdims=True)


def _sum(a, dims, o, arg):
    return _ufunc_reduce(np.add, a, dims, o)


def _prod(a, dims, o, arg):
    return _ufunc_reduce(np.multiply, a, dims, o)


def _mean(a, dims, o, arg):
    a, acc = _convert(a, o.dtype)
    s = np.add.reduce(a, axis=dims, dtype=acc, keepdims=True)
    return s / s.dtype.type(_count(a, dims))


def _amax(a, dims, o, arg):
    return np.max(a, axis=dims, keepdims=True)


def _amin(a, dims, o, arg):
    return np.min(a, axis=dims, keepdims=True)


def _all(a, dims, o, arg):
    return np.all(a, axis=dims, keepdims=True)


def _any(a, dims, o, arg):
    return np.any(a, axis=dims, keepdims=True)


def _count_nonzero(a, dims, o, arg):
    return np.count_nonzero(a, axis=dims, keepdims=True)


def _norm(a, dims, o, p):
    b = np.abs(_wide(a, o.dtype))
    if p == 0:
        return np.count_nonzero(b, axis=dims, keepdims=True).astype(b.dtype)
    if p == float("inf"):
        return np.max(b, axis=dims, keepdims=True)
    if p == float("-inf"):
        return np.min(b, axis=dims, keepdims=True)
    if p == 1:
        return np.sum(b, axis=dims, keepdims=True)
    if p == 2:
        return np.sqrt(np.sum(b * b, axis=dims, keepdims=True))
    return np.sum(b ** b.dtype.type(p), axis=dims, keepdims=True) ** b.dtype.type(1.0 / p)


def _var(a, dims, o, correction):
    b = _wide(a, o.dtype)
    n = _count(a, dims)
    d = b - np.sum(b, axis=dims, keepdims=True) / b.dtype.type(n)
    return np.sum(d * d, axis=dims, keepdims=True) / b.dtype.type(max(n - correction, 0))


def _std(a, dims, o, correction):
    return np.sqrt(_var(a, dims, o, correction))


def _logsumexp(a, dims, o, arg):
    b = _floating(a, o.dtype)
    if _count(a, dims) == 0:
        return np.float64(-np.inf)
    m = np.max(b, axis=dims, keepdims=True)
    m = np.where(np.isinf(m), b.dtype.type(0), m)  # an all -inf (or +inf) slice gives -inf (+inf), not nan
    return np.log(np.sum(np.exp(b - m), axis=dims, keepdims=True)) + m


_REDUCERS = {"sum": _sum, "prod": _prod, "mean": _mean, "amax": _amax, "amin": _amin, "all": _all, "any": _any,
             "count_nonzero": _count_nonzero, "norm": _norm, "var": _var, "std": _std, "logsumexp": _logsumexp}


def _kept(o, a, dims):
    """The output with the input's rank (reduced dims of size 1): a view, never a copy (setting
    .shape raises rather than copy)."""
    if o.ndim == a.ndim:
        return o
    if not o.ndim:  # a full reduction's 0-dim output: all ones, which reshape always views
        return o.reshape((1,) * a.ndim)
    v = o.view()
    v.shape = tuple(1 if i in dims else n for i, n in enumerate(a.shape))
    return v


def reduce(out, x, op, dims, arg=None):
    """out = op over the sorted `dims` of x. `arg`: p for norm, correction for var/std."""
    a = array(x)
    dims = tuple(dims)
    o = _kept(array(out), a, dims)
    fn = _REDUCERS[op]
    _faults.hit("launch")
    token = _quiet_on()  # np.errstate(all="ignore") without its ~1.5 us of Python
    try:
        r = fn(a, dims, o, arg)
        if r is not o:
            np.copyto(o, r, casting="unsafe")
    finally:
        _quiet_off(token)


def arg_reduce(values, indices, x, op, dim):
    """Index of the first max/min along `dim` (NaN counts as the extreme, as in torch), and its
    value when `values` is given; outputs keep or drop dim. dim=None: flat row-major index over
    the whole tensor."""
    a = array(x)
    idx_out = array(indices)
    _faults.hit("launch")
    find = np.argmax if op == "max" else np.argmin
    if dim is None:
        idx_out[...] = find(a.reshape(-1))
        return
    if a.ndim == 0:
        idx = np.zeros((), dtype=np.int64)
    else:
        idx = find(a, axis=dim, keepdims=True)
    dims = () if a.ndim == 0 else (dim,)
    _kept(idx_out, a, dims)[...] = idx
    if values is not None:  # the extreme itself (NaN when a NaN was found, like the index)
        v = a if a.ndim == 0 else (np.max if op == "max" else np.min)(a, axis=dim, keepdims=True)
        np.copyto(_kept(array(values), a, dims), v, casting="unsafe")


def cumulative(out, x, op, dim):
    """Running sum/prod along `dim` in the output's dtype (float32 for float16/bfloat16)."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    if a.ndim == 0:
        np.copyto(o, a, casting="unsafe")
        return
    a, acc = _convert(a, o.dtype)
    fn = np.cumsum if op == "sum" else np.cumprod
    with np.errstate(all="ignore"):
        np.copyto(o, fn(a, axis=dim, dtype=acc), casting="unsafe")


def softmax(out, x, dim, log):
    """exp(x - max) / sum(exp(x - max)) along `dim` (or its log), computed in the output's
    dtype (float32 for float16/bfloat16): subtracting the max keeps exp from overflowing."""
    o = array(out)
    a = array(x)
    _faults.hit("launch")
    if o.size == 0:
        return
    b = _floating(a, o.dtype)
    if b.ndim == 0:
        b = b.reshape(1)
        dim = 0
    with np.errstate(all="ignore"):
        shifted = b - np.max(b, axis=dim, keepdims=True)
        if log:
            shifted -= np.log(np.sum(np.exp(shifted), axis=dim, keepdims=True))
            r = shifted
        else:
            r = np.exp(shifted, out=shifted)
            r /= np.sum(r, axis=dim, keepdims=True)
    np.copyto(o, r.reshape(o.shape), casting="unsafe")
