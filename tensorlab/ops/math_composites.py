"""Math ops written once over existing primitives (so they run on every device and take their
gradients from those ops): the inverse trigonometric and hyperbolic functions, hypot, copysign,
logaddexp/logaddexp2, xlogy, logit, sinc, heaviside, fmax/fmin, clamp_min/clamp_max, float_power,
deg2rad/rad2deg, frac, signbit/sgn/isposinf/isneginf/isreal, nansum/nanmean, diff, inner, vdot,
dist, msort, ravel, fliplr/flipud, hsplit/vsplit/dsplit, aminmax, trapezoid/trapz,
cumulative_trapezoid, cov and corrcoef. Each formula is chosen for float accuracy where the direct
one cancels (sinh via expm1, asinh/acosh/atanh via log1p, asin/acos via atan2, hypot scaled)."""
from __future__ import annotations

import math
from collections import namedtuple

from .. import dtypes
from ..tensor import Tensor
from ._composite import overwrite, tensor_arg, to_out, to_outs

_LN2 = math.log(2.0)
_BIG = 1e8  # beyond it asinh/acosh are log(2|x|): their x*x would overflow float32


# -- helpers ------------------------------------------------------------------------------------------
_tensor = tensor_arg


def _as_tensor(x, like):
    if isinstance(x, Tensor):
        return x
    import tensorlab as tl
    return tl.tensor(x, device=like.device)


def _floating(x):
    """x as a floating tensor (integers and bool go to the default dtype, as torch's float ops)."""
    return x if x.dtype.is_floating_point or x.dtype.is_complex else x.to(dtypes.get_default_dtype())


def _finish(r, out, op):
    return to_out(r, out, op)


def _inplace(self, r, op):
    return overwrite(self, r, op)


def _unary(name, fn, floats_only=False):
    def f(input, *, out=None):
        _tensor(input, name)
        if floats_only and not input.dtype.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{input.dtype.torch_name}'")
        return _finish(fn(_floating(input)), out, name)

    def f_(input):
        _tensor(input, name + "_", "self")
        src = input.clone() if input.requires_grad else input
        return _inplace(input, f(src), name + "_")
    f.__name__, f_.__name__ = name, name + "_"
    f.__doc__ = f"torch.{name}"
    return f, f_


def _binary(name, fn, floats_only=False):
    def f(input, other, *, out=None):
        _tensor(input, name)
        x, y = input, _as_tensor(other, input)
        if floats_only and not (x.dtype.is_floating_point or y.dtype.is_floating_point):
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{x.dtype.torch_name}'")
        dt = dtypes.result_type(x, y)
        if not dt.is_floating_point:
            dt = dtypes.get_default_dtype()
        return _finish(fn(x.to(dt), y.to(dt)), out, name)

    def f_(self, other):
        _tensor(self, name + "_", "self")
        src = self.clone() if self.requires_grad else self
        return _inplace(self, f(src, other), name + "_")
    f.__name__, f_.__name__ = name, name + "_"
    f.__doc__ = f"torch.{name}"
    return f, f_


def _where(c, a, b):
    import tensorlab as tl
    return tl.where(c, a, b)


# -- inverse trigonometric and hyperbolic ----------------------------------------------------------------
def _asin(x):
    return x.atan2(((1 - x) * (1 + x)).sqrt())


def _acos(x):
    return ((1 - x) * (1 + x)).sqrt().atan2(x)


def _atan(x):
    return x.atan2(x.new_ones(()).expand(x.shape))


def _sinh(x):
    return (x.expm1() - (-x).expm1()) * 0.5


def _cosh(x):
    return (x.exp() + (-x).exp()) * 0.5


def _asinh(x):
    a = x.abs()
    small = a < _BIG
    a_s = _where(small, a, a.new_zeros(()))
    near = (a_s + a_s * a_s / (1 + (1 + a_s * a_s).sqrt())).log1p()
    far = a.log() + _LN2
    return x.sign() * _where(small, near, far)


def _acosh(x):
    small = x < _BIG
    xs = _where(small, x, x.new_ones(()))
    near = ((xs - 1) + ((xs - 1) * (xs + 1)).sqrt()).log1p()
    return _where(small, near, x.log() + _LN2)


def _atanh(x):
    return (2 * x / (1 - x)).log1p() * 0.5


asin, asin_ = _unary("asin", _asin)
acos, acos_ = _unary("acos", _acos)
atan, atan_ = _unary("atan", _atan)
sinh, sinh_ = _unary("sinh", _sinh)
cosh, cosh_ = _unary("cosh", _cosh)
asinh, asinh_ = _unary("asinh", _asinh)
acosh, acosh_ = _unary("acosh", _acosh)
atanh, atanh_ = _unary("atanh", _atanh)
deg2rad, deg2rad_ = _unary("deg2rad", lambda x: x * (math.pi / 180.0))
rad2deg, rad2deg_ = _unary("rad2deg", lambda x: x * (180.0 / math.pi))
sinc, sinc_ = _unary("sinc", lambda x: _where(x == 0, x.new_ones(()), (x * math.pi).sin() / (x * math.pi)))
frac, frac_ = _unary("frac", lambda x: x - x.trunc(), floats_only=True)


# -- binary --------------------------------------------------------------------------------------------
def _hypot(x, y):
    ax, ay = x.abs(), y.abs()
    hi, lo = ax.maximum(ay), ax.minimum(ay)
    safe = _where(hi == 0, hi.new_ones(()), hi)
    r = hi * (1 + (lo / safe) ** 2).sqrt()
    return _where(ax.isinf() | ay.isinf(), hi, r)  # hypot(inf, nan) is inf


def _signbit(x):
    if not x.dtype.is_floating_point:
        return x < 0
    return (x < 0) | ((x == 0) & ((1 / x) < 0))


def _copysign(x, y):
    return _where(_signbit(y), -x.abs(), x.abs())


def _logaddexp(x, y, log1p_exp):
    m = x.maximum(y)
    d = (x - y).abs()
    tied = (x == y) & x.isinf()  # both infinite of one sign: x itself, no inf - inf (finite ties take the
    # general formula, whose gradient splits evenly between x and y as torch's does)
    return _where(tied, x + (_LN2 if log1p_exp is None else 1.0), m + _finite_part(d, log1p_exp))


def _finite_part(d, log1p_exp):
    return (-d).exp().log1p() if log1p_exp is None else log1p_exp(d)


def _logaddexp2_part(d):
    return (-d * _LN2).exp().log1p() / _LN2


hypot, hypot_ = _binary("hypot", _hypot, floats_only=True)
copysign, copysign_ = _binary("copysign", _copysign)
logaddexp, _ = _binary("logaddexp", lambda x, y: _logaddexp(x, y, None))
logaddexp2, _ = _binary("logaddexp2", lambda x, y: _logaddexp(x, y, _logaddexp2_part))
def _nan_ignoring(name, pick):
    def f(input, other, *, out=None):
        _tensor(input, name)
        _tensor(other, name, "other", 2)
        if input.dtype.is_floating_point or other.dtype.is_floating_point:
            r = _where(input.isnan(), other, _where(other.isnan(), input, pick(input, other)))
        else:  # integers keep their promoted dtype, as torch's
            r = pick(input, other)
        return _finish(r, out, name)
    f.__name__ = name
    return f


fmax = _nan_ignoring("fmax", lambda x, y: x.maximum(y))
fmin = _nan_ignoring("fmin", lambda x, y: x.minimum(y))


def _xlogy(x, y, log):
    r = _where(x == 0, x.new_zeros(()), x * log(y))
    return _where(y.isnan(), y, r)


xlogy, xlogy_ = _binary("xlogy", lambda x, y: _xlogy(x, y, lambda t: t.log()))
xlog1py, _ = _binary("xlog1py", lambda x, y: _xlogy(x, y, lambda t: t.log1p()))


def logit(input, eps=None, *, out=None):
    """log(z / (1 - z)) with z = input clamped to [eps, 1 - eps] when eps is given."""
    _tensor(input, "logit")
    z = _floating(input)
    if eps is not None:
        z = z.clamp(eps, 1 - eps)
    return _finish((z / (1 - z)).log(), out, "logit")


def logit_(input, eps=None):
    src = input.clone() if input.requires_grad else input
    return _inplace(input, logit(src, eps), "logit_")


def heaviside(input, values, *, out=None):
    _tensor(input, "heaviside")
    _tensor(values, "heaviside", "values", 2)
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes (got "
                           f"{input.dtype.torch_name} and {values.dtype.torch_name})")
    r = _where(input == 0, values, (input > 0).to(input.dtype))
    return _finish(r.to(input.dtype), out, "heaviside")


def heaviside_(self, values):
    return _inplace(self, heaviside(self, values), "heaviside_")


def clamp_min(input, min, *, out=None):  # noqa: A002 (torch's name)
    return input.clamp(min=min) if out is None else input.clamp(min=min, out=out)


def clamp_max(input, max, *, out=None):  # noqa: A002
    return input.clamp(max=max) if out is None else input.clamp(max=max, out=out)


def clamp_min_(input, min):  # noqa: A002
    return input.clamp_(min=min)


def clamp_max_(input, max):  # noqa: A002
    return input.clamp_(max=max)


def float_power(input, exponent, *, out=None):
    """input ** exponent in float64, whatever the operands' dtypes (torch's contract)."""
    if not isinstance(input, Tensor):
        _tensor(exponent, "float_power", "exponent", 2)
        x = _as_tensor(float(input), exponent).double()
    else:
        x = input.double()
    y = exponent.double() if isinstance(exponent, Tensor) else float(exponent)
    return _finish(x ** y, out, "float_power")


def float_power_(self, exponent):
    if self.dtype is not dtypes.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {self.dtype.name.capitalize()} but the "
                           "operation's result requires dtype Double")
    return _inplace(self, float_power(self, exponent), "float_power_")


# -- predicates ----------------------------------------------------------------------------------------
def signbit(input, *, out=None):
    _tensor(input, "signbit")
    return _finish(_signbit(input), out, "signbit")


def sgn(input, *, out=None):
    _tensor(input, "sgn")
    return _finish(input.sign(), out, "sgn")


def sgn_(self):
    return self.sign_()


def isposinf(input, *, out=None):
    _tensor(input, "isposinf")
    return _finish(input.isinf() & (input > 0), out, "isposinf")


def isneginf(input, *, out=None):
    _tensor(input, "isneginf")
    return _finish(input.isinf() & (input < 0), out, "isneginf")


def isreal(input):
    _tensor(input, "isreal")
    return input.new_ones(input.shape, dtype=dtypes.bool_)


# -- reductions and differences ------------------------------------------------------------------------
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    _tensor(input, "nansum")
    x = input if not input.dtype.is_floating_point else _where(input.isnan(), input.new_zeros(()), input)
    r = x.sum(dim=dim, keepdim=keepdim, dtype=dtype) if dim is not None else x.sum(dtype=dtype)
    return _finish(r, out, "nansum")


def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    _tensor(input, "nanmean")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{input.dtype.torch_name}")
    keep = ~input.isnan()
    total = nansum(input, dim, keepdim, dtype=dtype)
    count = keep.sum(dim=dim, keepdim=keepdim) if dim is not None else keep.sum()
    return _finish(total / count.to(total.dtype), out, "nanmean")


def diff(input, n=1, dim=-1, prepend=None, append=None, *, out=None):
    """The n-th forward difference along dim, after concatenating prepend and append."""
    import tensorlab as tl
    _tensor(input, "diff")
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = dim % input.dim() if -input.dim() <= dim < input.dim() else None
    if d is None:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {dim})")
    if n == 0:  # torch returns the input itself, prepend and append unused
        return to_out(input, out, "diff")
    parts = [p if isinstance(p, Tensor) and p.dim() else _scalar_slab(p, input, d)
             for p in (prepend, input, append) if p is not None]
    x = tl.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        a, b = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = (a ^ b) if x.dtype is dtypes.bool_ else a - b
    return to_out(x, out, "diff")


def _scalar_slab(p, like, d):
    t = _as_tensor(p, like)
    shape = list(like.shape)
    shape[d] = 1
    return t.to(like.dtype).expand(shape)


def inner(input, other, *, out=None):
    import tensorlab as tl
    _tensor(input, "inner")
    _tensor(other, "inner", "other", 2)
    if input.dim() == 0 or other.dim() == 0:
        return _finish(input * other, out, "inner")
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _finish(tl.tensordot(input, other, dims=([-1], [-1])), out, "inner")


def vdot(input, other, *, out=None):
    _tensor(input, "vdot")
    _tensor(other, "vdot", "other", 2)
    if input.dim() != 1 or other.dim() != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.dim()}D and {other.dim()}D tensors")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"vdot : expected both vectors to have same dtype, but found {input.dtype.torch_name} "
                           f"and {other.dtype.torch_name}")
    if input.shape[0] != other.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{other.shape[0]}] to have the same number of elements, but got {input.shape[0]} and "
                           f"{other.shape[0]} elements respectively")
    return _finish(input.dot(other), out, "vdot")


def dist(input, other, p=2):
    import tensorlab as tl
    _tensor(input, "dist")
    _tensor(other, "dist", "other", 2)
    return tl.linalg.vector_norm(input - other, p)


def msort(input, *, out=None):
    _tensor(input, "msort")
    return _finish(input.sort(0).values, out, "msort")


def ravel(input):
    _tensor(input, "ravel")
    return input.reshape(-1)


def fliplr(input):
    _tensor(input, "fliplr")
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input):
    _tensor(input, "flipud")
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def _dir_split(name, dim, min_dim):
    def f(input, sections=None, indices=None):
        """torch's two overloads: (input, sections: int) and (input, indices: list), positionally alike."""
        import tensorlab as tl
        if (sections is None) == (indices is None):
            raise TypeError(f"{name}() takes one of sections (an int) or indices (a list of ints)")
        indices_or_sections = sections if indices is None else indices
        _tensor(input, name)
        if input.dim() < min_dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, but got a tensor "
                               f"with {input.dim()} dimensions!")
        d = dim if not (name == "hsplit" and input.dim() == 1) else 0
        if isinstance(indices_or_sections, int) and input.shape[d] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the dimension "
                               f"{input.shape[d]} is not divisible by the split_size {indices_or_sections}!")
        return tl.tensor_split(input, indices_or_sections, d)
    f.__name__ = name
    return f


hsplit = _dir_split("hsplit", 1, 1)
vsplit = _dir_split("vsplit", 0, 2)
dsplit = _dir_split("dsplit", 2, 3)

aminmax_result = namedtuple("aminmax", ("min", "max"))


def aminmax(input, *, dim=None, keepdim=False, out=None):
    _tensor(input, "aminmax")
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                               "identity.")
        lo, hi = input.amin(), input.amax()
        if keepdim:
            lo, hi = lo.reshape((1,) * input.dim()), hi.reshape((1,) * input.dim())
        return to_outs(aminmax_result(lo, hi), out)
    return to_outs(aminmax_result(input.amin(dim, keepdim), input.amax(dim, keepdim)), out)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    _tensor(y, "trapezoid", "y")
    n = y.shape[dim] if y.dim() else 0
    if n == 0:
        return y.sum(dim) * 0
    a, b = y.narrow(dim, 1, n - 1), y.narrow(dim, 0, n - 1)
    if x is None:
        return ((a + b) * ((1.0 if dx is None else dx) / 2)).sum(dim)
    if isinstance(x, Tensor):
        dxs = diff(x, dim=dim if x.dim() == y.dim() else -1)
        return ((a + b) * dxs / 2).sum(dim)
    return ((a + b) * (float(x) / 2)).sum(dim)


def trapz(y, x=None, *, dx=None, dim=-1):
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    _tensor(y, "cumulative_trapezoid", "y")
    n = y.shape[dim]
    a, b = y.narrow(dim, 1, max(n - 1, 0)), y.narrow(dim, 0, max(n - 1, 0))
    if isinstance(x, Tensor):
        area = (a + b) * diff(x, dim=dim if x.dim() == y.dim() else -1) / 2
    else:
        area = (a + b) * ((1.0 if dx is None and x is None else (dx if dx is not None else float(x))) / 2)
    return area.cumsum(dim)


def cov(input, *, correction=1, fweights=None, aweights=None):
    """torch.cov: rows are variables, columns observations (a 1-D input is one variable)."""
    _tensor(input, "cov")
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    x = _floating(input.reshape(1, -1) if input.dim() < 2 else input)
    n = x.shape[1]
    w = None
    if fweights is not None:
        w = fweights.to(x.dtype)
    if aweights is not None:
        w = aweights.to(x.dtype) if w is None else w * aweights.to(x.dtype)
    if w is None:
        wsum = x.new_full((), float(n))
        mean = x.mean(1, keepdim=True)
        norm = wsum - correction
    else:
        wsum = w.sum()
        mean = (x * w).sum(1, keepdim=True) / wsum
        norm = wsum - correction * ((w * aweights.to(x.dtype)).sum() / wsum if aweights is not None else 1)
    xc = x - mean
    xw = xc if w is None else xc * w
    c = xw @ xc.mT
    c = c / norm.clamp(min=0)
    return c.reshape(()) if c.shape[0] == 1 else c  # one variable: a scalar, as torch's


def corrcoef(input):
    c = cov(input)
    if c.dim() == 0:
        return c / c
    d = c.diagonal()
    s = d.sqrt()
    r = c / s[:, None] / s[None, :]
    return r.clamp(-1, 1)


FUNCTIONS = ("asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "deg2rad", "rad2deg", "sinc", "frac",
             "hypot", "copysign", "logaddexp", "logaddexp2", "fmax", "fmin", "xlogy", "logit", "heaviside",
             "clamp_min", "clamp_max", "float_power", "signbit", "sgn", "isposinf", "isneginf", "isreal", "nansum",
             "nanmean", "diff", "inner", "vdot", "dist", "msort", "ravel", "fliplr", "flipud", "hsplit", "vsplit",
             "dsplit", "aminmax", "trapezoid", "trapz", "cumulative_trapezoid", "cov", "corrcoef",
             "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "acosh_", "atanh_", "deg2rad_", "rad2deg_",
             "sinc_", "frac_", "logit_", "clamp_min_", "clamp_max_")
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
           "arctanh": "atanh"}
METHODS = {n: globals()[n] for n in FUNCTIONS if not n.endswith("_") and n not in (
    "trapezoid", "trapz", "cumulative_trapezoid", "isreal", "float_power")}
METHODS.update({n: globals()[n] for n in (
    "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "acosh_", "atanh_", "deg2rad_", "rad2deg_", "sinc_",
    "frac_", "hypot_", "copysign_", "xlogy_", "logit_", "heaviside_", "clamp_min_", "clamp_max_", "float_power_",
    "sgn_")})
METHODS.update({"isreal": isreal, "float_power": float_power})
for _alias, _name in ALIASES.items():
    globals()[_alias] = globals()[_name]
    globals()[_alias + "_"] = globals()[_name + "_"]
    METHODS[_alias] = globals()[_name]
    METHODS[_alias + "_"] = globals()[_name + "_"]
FUNCTIONS = FUNCTIONS + tuple(ALIASES) + tuple(a + "_" for a in ALIASES)


# -- floating-point representation ------------------------------------------------------------------------
frexp_result = namedtuple("frexp", ("mantissa", "exponent"))
_BIT_INT = {"float16": "int16", "bfloat16": "int16", "float32": "int32", "float64": "int64"}


def frexp(input, *, out=None):
    """mantissa in [0.5, 1) (sign kept) and int32 exponent with input = mantissa * 2 ** exponent; 0, inf
    and NaN give themselves and exponent 0, as torch."""
    import tensorlab as tl
    _tensor(input, "frexp")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes")
    x = input.to(dtypes.float64)
    a = x.abs()
    finite = x.isfinite() & (x != 0)
    safe = tl.where(finite, a, tl.ones_like(a))
    e = safe.log2().floor() + 1
    m = safe / tl.pow(tl.tensor(2.0, dtype=dtypes.float64, device=x.device), e)
    hi, lo = m >= 1, m < 0.5  # log2's rounding at powers of two
    e = tl.where(hi, e + 1, tl.where(lo, e - 1, e))
    m = tl.where(hi, m / 2, tl.where(lo, m * 2, m))
    mant = tl.where(finite, m * x.sign(), x).to(input.dtype)
    expo = tl.where(finite, e, tl.zeros_like(e)).to(dtypes.int32)
    return to_outs(frexp_result(mant, expo), out)


def nextafter(input, other, *, out=None):
    """The next representable value after input towards other (the bits stepped by one)."""
    import tensorlab as tl
    _tensor(input, "nextafter")
    y = _as_tensor(other, input)
    dt = dtypes.result_type(input, y)
    if not dt.is_floating_point:
        raise RuntimeError(f"\"nextafter_cpu\" not implemented for '{dt.torch_name}'")
    x, y = input.to(dt), y.to(dt)
    x, y = x.expand(tl.broadcast_shapes(x.shape, y.shape)), y.expand(tl.broadcast_shapes(x.shape, y.shape))
    it = getattr(dtypes, _BIT_INT[dt.name])
    bits = x.contiguous().view(it)
    up = (y > x) == (x > 0)  # away from zero when moving in the sign's direction
    stepped = tl.where(up, bits + 1, bits - 1).view(dt)
    tiny = tl.ones_like(bits).view(dt)  # the smallest subnormal
    at_zero = tl.where(y > 0, tiny, -tiny)
    r = tl.where(x == 0, at_zero, stepped)
    r = tl.where(x == y, y, r)
    r = tl.where(x.isnan() | y.isnan(), x + y, r).detach()
    if input.requires_grad:  # torch's derivative: 1 for input, 0 for other
        xg = input.to(dt).expand(r.shape)
        r = r + (xg - xg.detach())
    if out is not None:
        out.resize_(r.shape)
        return out.copy_(r)
    return r


def nextafter_(self, other):
    return _inplace(self, nextafter(self, other), "nextafter_")


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """numpy.gradient's (and torch's) second-order central differences inside, first- or second-order
    one-sided ones at the edges; spacing a number, numbers per dim, or coordinate tensors per dim."""
    import tensorlab as tl
    _tensor(input, "gradient")
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2.")
    nd = input.dim()
    dims = list(range(nd)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [d % nd for d in dims]
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (int, float)) or (isinstance(spacing, Tensor) and spacing.dim() == 0):
        spacing = [spacing] * len(dims)
    elif isinstance(spacing, (list, tuple)) and len(spacing) == 1 and len(dims) > 1 and not isinstance(
            spacing[0], Tensor):
        spacing = list(spacing) * len(dims)
    if len(spacing) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {len(dims)}.")
    x = input if input.dtype.is_floating_point else input.to(dtypes.get_default_dtype())
    outs = []
    for d, h in zip(dims, spacing):
        n = x.shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1")

        def sl(a, b, t=x, d=d):
            return t.narrow(d, a, b - a)
        shape = [1] * nd
        shape[d] = -1
        if isinstance(h, Tensor) and h.dim() == 1:  # coordinates along d
            c = h.to(x.dtype)
            dx = (c[1:] - c[:-1])
            h1, h2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
            inner = -(h2 / (h1 * (h1 + h2))) * sl(0, n - 2) + ((h2 - h1) / (h1 * h2)) * sl(1, n - 1) + (
                h1 / (h2 * (h1 + h2))) * sl(2, n)
            if edge_order == 1:
                first = (sl(1, 2) - sl(0, 1)) / dx[0]
                last = (sl(n - 1, n) - sl(n - 2, n - 1)) / dx[-1]
            else:
                a0, a1 = dx[0], dx[1]
                first = (-(2 * a0 + a1) / (a0 * (a0 + a1)) * sl(0, 1) + (a0 + a1) / (a0 * a1) * sl(1, 2)
                         - a0 / (a1 * (a0 + a1)) * sl(2, 3))
                b0, b1 = dx[-1], dx[-2]
                last = (b0 / (b1 * (b1 + b0)) * sl(n - 3, n - 2) - (b1 + b0) / (b1 * b0) * sl(n - 2, n - 1)
                        + (2 * b0 + b1) / (b0 * (b1 + b0)) * sl(n - 1, n))
        else:
            hv = float(h.item() if isinstance(h, Tensor) else h)
            inner = (sl(2, n) - sl(0, n - 2)) / (2 * hv)
            if edge_order == 1:
                first = (sl(1, 2) - sl(0, 1)) / hv
                last = (sl(n - 1, n) - sl(n - 2, n - 1)) / hv
            else:
                first = (-1.5 * sl(0, 1) + 2 * sl(1, 2) - 0.5 * sl(2, 3)) / hv
                last = (0.5 * sl(n - 3, n - 2) - 2 * sl(n - 2, n - 1) + 1.5 * sl(n - 1, n)) / hv
        outs.append(tl.cat([first, inner, last], d))
    return tuple(outs)


FUNCTIONS = FUNCTIONS + ("frexp", "nextafter", "gradient")
METHODS.update({"frexp": frexp, "nextafter": nextafter, "nextafter_": nextafter_})
