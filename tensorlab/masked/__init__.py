"""tl.masked: torch.masked's reductions and normalizations over strided tensors with a `mask=`
(torch 2.13's torch/masked/_ops.py semantics). Each op replaces the masked-out elements by the
reduction's identity (sum 0, prod 1, amax -inf or the integer minimum, ...) with one `where`, then
calls the plain op, so one body runs on every device and the gradients are where's and the op's.

torch's rules kept: the mask broadcasts to the input (never from a higher rank: IndexError) and is
cast to bool; fully masked slices give the identity (sum, prod, amax, ...), NaN (mean, var, std,
median, softmax) or -inf (logsumexp); the integer sums and products accumulate in int64 unless
dtype= says otherwise; every other op casts its result to dtype= (default: the input's dtype, so
masked.argmax of a float input is float, as torch's). Sparse layouts and MaskedTensor are not
provided (tensorlab tensors are strided)."""
from __future__ import annotations

import math

from .. import dtypes
from ..tensor import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp", "logsumexp",
           "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]

_SMALL_INTS = (dtypes.uint8, dtypes.bool_, dtypes.int8, dtypes.int16, dtypes.int32)


def _tl():
    import tensorlab
    return tensorlab


def _check_input(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"masked.{op}(): argument 'input' must be Tensor, not {type(x).__name__}")
    return x


def _canonical_dim(dim, ndim):
    """torch.masked's dims: None or () -> every dim; otherwise sorted, wrapped, without repeats."""
    if dim is None or (isinstance(dim, tuple) and dim == ()):
        return tuple(range(ndim))
    n = max(ndim, 1)
    seen = []
    for d in ((dim,) if isinstance(dim, int) else tuple(dim)):
        d = int(d)
        if d in seen:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if not -n <= d < n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        seen.append(d % n)
    return tuple(sorted(seen))


def _canonical_mask(x, mask, op):
    """The canonical mask: bool, x's shape (a lower-rank mask broadcasts; a higher-rank one is refused)."""
    tl = _tl()
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if not isinstance(mask, Tensor):
        raise TypeError(f"masked.{op}(): argument 'mask' must be Tensor, not {type(mask).__name__}")
    if mask.device != x.device:
        raise RuntimeError(f"masked.{op}(): expected mask on the input's device {x.device}, but got mask on "
                           f"{mask.device}; move it with mask.to({str(x.device)!r})")
    if tuple(mask.shape) != tuple(x.shape):
        if mask.dim() > x.dim():
            raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                             f"input): masked.{op} got mask of shape {list(mask.shape)} for input of shape "
                             f"{list(x.shape)}")
        mask = tl.broadcast_to(mask, tuple(x.shape))
    return mask.to(dtypes.bool_)


def _input_mask(input, *args, **kwargs):
    """torch.masked._input_mask: the canonical mask (bool, the input's shape) of mask=."""
    return _canonical_mask(input, kwargs.get("mask"), "_input_mask")


_REDUCTIONS = ("sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std", "logsumexp")
_NORMALIZATIONS = ("softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod")


def _output_mask(op, input, *args, **kwargs):
    """torch.masked._output_mask: which output elements of masked op `op` have a masked-in source (a
    reduction's: any masked-in element in the slice; a normalization's: the input mask)."""
    name = getattr(op, "__name__", None)
    if not callable(op) or name not in _REDUCTIONS + _NORMALIZATIONS:
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    if name == "norm" and args:
        args = args[1:]
    dim = args[0] if args else kwargs.get("dim")
    m = _input_mask(input, *args, **kwargs)
    dims = _canonical_dim(dim, input.dim())
    r = m.any(dim=dims, keepdim=bool(kwargs.get("keepdim", False))) if dims else m
    return r


def _identity(op, x, ord=None):
    """The reduction's identity as a 0-dim tensor of x's dtype (torch.masked's _reduction_identity)."""
    tl = _tl()
    dt = x.dtype
    if dt is dtypes.bool_ and op not in ("sum", "cumsum", "prod", "cumprod", "norm", "median"):
        # torch defines no extremum identity for bool (neither signed nor uint8)
        raise NotImplementedError(f"identity of {op} on torch.bool input: masked.{op} takes a numeric input; "
                                  f"convert the bool tensor with .to(torch.uint8)")
    if op in ("sum", "cumsum"):
        v = 0
    elif op in ("prod", "cumprod"):
        v = 1
    elif op in ("amax", "argmax", "logaddexp", "logsumexp"):
        v = -math.inf if dt.is_floating_point else tl.iinfo(dt).min
    elif op in ("amin", "argmin"):
        v = math.inf if dt.is_floating_point else tl.iinfo(dt).max
    elif op == "norm":
        if ord == -math.inf:
            if not dt.is_floating_point:
                raise RuntimeError(f"masked.norm: ord=-inf needs a floating point input, got {dt.torch_name}")
            v = math.inf
        else:
            v = 0
    elif op == "median":
        return tl.tensor(math.nan, dtype=dt if dt.is_floating_point else dtypes.float32, device=x.device)
    else:  # pragma: no cover - every op above names its identity
        raise RuntimeError(f"identity of {op} on {dt.torch_name} input")
    return tl.tensor(v, dtype=dt, device=x.device)


def _combine(op, x, mask, ord=None, name=None):
    """x with the masked-out elements replaced by op's identity (x itself when there is no mask)."""
    if mask is None:
        return x
    m = _canonical_mask(x, mask, name or op)
    return _tl().where(m, x, _identity(op, x, ord))


def _widened(x, dtype):
    if dtype is None:
        return dtypes.int64 if x.dtype in _SMALL_INTS else x.dtype
    return dtype


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.sum: the sum of the masked-in elements (0 where a slice is fully masked)."""
    _check_input(input, "sum")
    dtype = _widened(input, dtype)
    dims = _canonical_dim(dim, input.dim())
    return _tl().sum(_combine("sum", input, mask), dims, bool(keepdim), dtype=dtype)


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.prod: the product of the masked-in elements (1 where a slice is fully masked)."""
    _check_input(input, "prod")
    dtype = _widened(input, dtype)
    dims = _canonical_dim(dim, input.dim())
    r = _combine("prod", input, mask).to(dtype)
    for d in reversed(dims):
        r = r.prod(dim=d, keepdim=bool(keepdim))
    return r


def _no_bool_scan(dtype, op):
    if dtype is dtypes.bool_:  # torch's scans have no bool kernel (the result dtype defaults to the input's)
        raise NotImplementedError(f"\"{op}_out\" not implemented for 'Bool': masked.{op} of a bool tensor needs "
                                  f"dtype= set to a numeric dtype (e.g. torch.int64)")


def cumsum(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumsum: masked-out elements add 0 (the result keeps the input's dtype unless dtype=)."""
    _check_input(input, "cumsum")
    dtype = input.dtype if dtype is None else dtype
    _no_bool_scan(dtype, "cumsum")
    d = _canonical_dim(dim, input.dim())[0]
    return _tl().cumsum(_combine("sum", input, mask, name="cumsum"), d, dtype=dtype).to(dtype)


def cumprod(input, dim, *, dtype=None, mask=None):
    """torch.masked.cumprod: masked-out elements multiply by 1."""
    _check_input(input, "cumprod")
    dtype = input.dtype if dtype is None else dtype
    _no_bool_scan(dtype, "cumprod")
    d = _canonical_dim(dim, input.dim())[0]
    return _tl().cumprod(_combine("prod", input, mask, name="cumprod"), d, dtype=dtype).to(dtype)


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amax: -inf (or the integer minimum) where a slice is fully masked."""
    _check_input(input, "amax")
    dtype = input.dtype if dtype is None else dtype
    x = _combine("amax", input, mask)
    return _tl().amax(x, _canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.amin: +inf (or the integer maximum) where a slice is fully masked."""
    _check_input(input, "amin")
    dtype = input.dtype if dtype is None else dtype
    x = _combine("amin", input, mask)
    return _tl().amin(x, _canonical_dim(dim, x.dim()), bool(keepdim)).to(dtype)


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmax: the index of the largest masked-in element, cast to dtype= (default: the
    input's dtype, as torch's)."""
    _check_input(input, "argmax")
    dtype = input.dtype if dtype is None else dtype
    return _tl().argmax(_combine("argmax", input, mask), dim, bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.argmin: the index of the smallest masked-in element, cast to dtype=."""
    _check_input(input, "argmin")
    dtype = input.dtype if dtype is None else dtype
    return _tl().argmin(_combine("argmin", input, mask), dim, bool(keepdim)).to(dtype)


def _is_float(dt):
    return dt.is_floating_point or getattr(dt, "is_complex", False)


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.mean: the masked-in sum over the masked-in count (NaN where a slice is fully masked);
    the dtype (input's or dtype=) must be floating point."""
    tl = _tl()
    _check_input(input, "mean")
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not _is_float(dtype):
        raise ValueError(f"mean(): Could not infer output dtype. {source} dtype must be either a floating point or "
                         f"complex dtype. Got: {dtype.torch_name}")
    if mask is None:
        count = sum(tl.ones(tuple(input.shape), dtype=dtypes.int64, device=input.device), dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype)
    else:
        inmask = _canonical_mask(input, mask, "mean")
        count = sum(inmask, dim, keepdim=keepdim)
        total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.median: nanmedian over the masked-in elements along one dim; NaN where a slice is
    fully masked, which an integer input refuses (ValueError: no NaN to return)."""
    tl = _tl()
    _check_input(input, "median")
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    is_float = input.dtype.is_floating_point
    x = input if is_float else input.to(dtypes.float32)
    out = tl.nanmedian(_combine("median", x, mask), d, bool(keepdim)).values
    if is_float:
        return out
    if bool(out.isnan().any()):  # torch's own check waits for the device too (bool(): a named host wait)
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return out.to(dtype)


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.logsumexp: -inf where a slice is fully masked."""
    _check_input(input, "logsumexp")
    dtype = input.dtype if dtype is None else dtype
    dims = _canonical_dim(dim, input.dim())
    return _tl().logsumexp(_combine("logsumexp", input, mask), dims, keepdim=bool(keepdim)).to(dtype)


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):
    """torch.masked.logaddexp: elementwise log(exp(input) + exp(other)) with each operand's masked-out
    elements taken as -inf."""
    _check_input(input, "logaddexp")
    if not isinstance(other, Tensor):
        raise TypeError(f"masked.logaddexp(): argument 'other' must be Tensor, not {type(other).__name__}")
    dtype = input.dtype if dtype is None else dtype
    a = _combine("logaddexp", input, input_mask)
    b = _combine("logaddexp", other, other_mask)
    return _tl().logaddexp(a, b).to(dtype)


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):
    """torch.masked.norm: the vector norm of the masked-in elements (masked-out ones are 0, or +inf
    for ord=-inf)."""
    _check_input(input, "norm")
    dtype = input.dtype if dtype is None else dtype
    x = _combine("norm", input, mask, ord)
    return _tl().linalg.vector_norm(x, ord, _canonical_dim(dim, input.dim()), bool(keepdim), dtype=dtype)


def _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt, op):
    tl = _tl()
    _check_input(input, op)
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"masked.{op}: only one of unbiased and correction may be given")
    c = 1.0
    if unbiased is not None:
        c = 1.0 if unbiased else 0.0
    if correction is not None:
        c = float(correction)
    if dtype is None:
        dtype = input.dtype if _is_float(input.dtype) else dtypes.float32
    compute = dtype if _is_float(dtype) else dtypes.float32
    if mask is None:
        inmask = None
        count = sum(tl.ones(tuple(input.shape), dtype=dtypes.int64, device=input.device), dim, keepdim=True)
    else:
        inmask = _canonical_mask(input, mask, op)
        count = sum(inmask, dim, keepdim=True)
    sample_mean = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask) / count
    x = input - sample_mean
    total = sum(x * x, dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(tuple(total.shape))
    if c != 0:
        count = (count.to(compute) - c).clamp_min(0)
    out = (total / count).to(dtype)
    return out.sqrt() if take_sqrt else out


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.var: the variance of the masked-in elements (NaN where a slice is fully masked or
    has no more elements than the correction)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, False, "var")


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):
    """torch.masked.std: the square root of masked.var."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, True, "std")


def softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmax: masked-out elements count as -inf (0 in the result; NaN where a slice is
    fully masked)."""
    _check_input(input, "softmax")
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return _tl().nn.functional.softmax(_combine("amax", input, mask, name="softmax"), d, dtype=dtype)


def log_softmax(input, dim, *, dtype=None, mask=None):
    """torch.masked.log_softmax: masked-out elements count as -inf."""
    _check_input(input, "log_softmax")
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return _tl().nn.functional.log_softmax(_combine("amax", input, mask, name="log_softmax"), d, dtype=dtype)


def softmin(input, dim, *, dtype=None, mask=None):
    """torch.masked.softmin: masked-out elements count as +inf."""
    _check_input(input, "softmin")
    dtype = input.dtype if dtype is None else dtype
    d = _canonical_dim(dim, input.dim())[0]
    return _tl().nn.functional.softmin(_combine("amin", input, mask, name="softmin"), d, dtype=dtype)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):
    """torch.masked.normalize: the masked-in elements over their ord-norm (at least eps); masked-out
    elements are 0."""
    tl = _tl()
    _check_input(input, "normalize")
    dtype = input.dtype if dtype is None else dtype
    x = _combine("sum", input, mask, name="normalize")
    nrm = norm(input, ord, dim, keepdim=True, dtype=dtype, mask=mask)
    denom = tl.maximum(nrm, tl.full((), eps, dtype=nrm.dtype, device=nrm.device))
    return x / denom
