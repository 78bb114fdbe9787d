"""Complex numbers: the accessors and constructors over complex64/complex128 tensors.

A complex tensor is an ordinary tensor whose dtype is complex64 or complex128: its storage holds
interleaved (real, imaginary) pairs of float32/float64, so `real`, `imag` and `view_as_real` are
views (the real dtype over the same storage, every stride doubled, the offset doubled, +1 for the
imaginary part) and `x.real = ...` writes through. `conj` is eager (a new tensor; tensorlab has no
lazy conjugate bit: `is_conj()` is always False and `resolve_conj()` returns its input).

Gradients follow torch's convention for complex autograd: the gradient a node receives and returns
is the conjugate Wirtinger derivative (dL/d conj(z), times 2 as torch's documentation counts it),
so for a holomorphic op the backward multiplies by conj(f'(z)). `_install_derivatives` adds the
non-holomorphic rules (real, imag, view_as_real, view_as_complex, complex, polar, angle, abs, sgn,
conj) and wraps the holomorphic ones of the derivative table (mul, div, exp, matmul, ...) so their
real formulas run on conj(grad) and the result is conjugated back.
"""
from __future__ import annotations

import functools


from .. import autograd_hooks, dtypes
from ..layout import Layout, Size
from ..tensor import Tensor
from ._composite import tensor_arg, tl, to_out

_COMPLEX = 3  # dtypes._COMPLEX


def _is_c(x):
    return isinstance(x, Tensor) and x._dtype.category == _COMPLEX


def _part_view(x, part, extra_dim=False):
    """The float view of complex `x`'s storage: part 0 the real parts, 1 the imaginary parts;
    extra_dim: both, as a trailing dimension of size 2 (view_as_real)."""
    meta = x._meta
    lay = meta.layout
    stride = tuple(2 * s for s in lay.stride)
    shape = tuple(lay.shape)
    if extra_dim:
        shape, stride = shape + (2,), stride + (1,)
    return x._view_of(Layout(Size(shape), stride, 2 * lay.offset + part), x._dtype.to_real(), meta)


# -- views ----------------------------------------------------------------------------------------

def real(input):
    """torch.real: a view of the real parts (a real tensor: itself)."""
    tensor_arg(input, "real")
    _install_derivatives()
    if not _is_c(input):
        return input
    return autograd_hooks.record(_part_view(input, 0), "complex_real", (input,))


def imag(input):
    """torch.imag: a view of the imaginary parts; real tensors have none (RuntimeError, as torch)."""
    tensor_arg(input, "imag")
    _install_derivatives()
    if not _is_c(input):
        raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes. (tensorlab.imag got a "
                           f"{input.dtype} tensor; only complex64/complex128 tensors have imaginary parts)")
    return autograd_hooks.record(_part_view(input, 1), "complex_imag", (input,))


def _set_real(self, value):
    real(self).copy_(value if isinstance(value, Tensor) else tl().tensor(value, dtype=self.dtype.to_real(),
                                                                           device=self.device))


def _set_imag(self, value):
    imag(self).copy_(value if isinstance(value, Tensor) else tl().tensor(value, dtype=self.dtype.to_real(),
                                                                           device=self.device))


def view_as_real(input):
    """torch.view_as_real: complex (..., ) as real (..., 2), sharing storage."""
    tensor_arg(input, "view_as_real")
    _install_derivatives()
    if not _is_c(input):
        raise RuntimeError(f"view_as_real is only supported for complex tensors (got {input.dtype}; use "
                           "tensorlab.complex(real, imag) or x.to(tensorlab.complex64) first)")
    return autograd_hooks.record(_part_view(input, 0, extra_dim=True), "view_as_real", (input,))


def view_as_complex(input):
    """torch.view_as_complex: float (..., 2) with last stride 1 as complex (...), sharing storage."""
    tensor_arg(input, "view_as_complex")
    _install_derivatives()
    dt = input._dtype
    if dt not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(f"view_as_complex is only supported for float and double tensors, but got a tensor of "
                           f"scalar type: {dt.torch_name}")
    meta = input._meta
    lay = meta.layout
    if not lay.shape or lay.shape[-1] != 2:
        raise RuntimeError(f"Tensor must have a last dimension of size 2 (view_as_complex got shape "
                           f"{list(lay.shape)})")
    if lay.stride[-1] != 1:
        raise RuntimeError(f"Tensor must have a last dimension with stride 1 (view_as_complex got strides "
                           f"{list(lay.stride)}; call .contiguous() first)")
    if any(s % 2 for s in lay.stride[:-1]):
        raise RuntimeError(f"Tensor must have a stride divisible by 2 for all but last dimension (view_as_complex "
                           f"got strides {list(lay.stride)}; call .contiguous() first)")
    if lay.offset % 2:
        raise RuntimeError(f"Tensor must have a storage_offset divisible by 2 (view_as_complex got "
                           f"{lay.offset}; call .clone() first)")
    cdt = dt.to_complex()
    out = input._view_of(Layout(Size(lay.shape[:-1]), tuple(s // 2 for s in lay.stride[:-1]), lay.offset // 2),
                         cdt, meta)
    return autograd_hooks.record(out, "view_as_complex", (input,))


# -- constructors ---------------------------------------------------------------------------------

def complex(real, imag, *, out=None):  # noqa: A001
    """torch.complex: real + i*imag from two float tensors of one dtype (float32 -> complex64,
    float64 -> complex128), broadcasting."""
    t = tl()
    tensor_arg(real, "complex", "real", 1)
    tensor_arg(imag, "complex", "imag", 2)
    _install_derivatives()
    for x in (real, imag):
        if x._dtype not in (dtypes.float32, dtypes.float64):
            raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got {real.dtype.torch_name} "
                               f"and {imag.dtype.torch_name} (tensorlab.complex takes float32 or float64 parts; "
                               "tensorlab has no complex32)")
    if real._dtype is not imag._dtype:
        raise RuntimeError(f"Expected object of scalar type {real.dtype.torch_name} but got scalar type "
                           f"{imag.dtype.torch_name} for second argument (tensorlab.complex: convert both parts to "
                           "one dtype first)")
    if real.device != imag.device:
        raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                           f"{real.device} and {imag.device}! (tensorlab.complex)")
    shape = t.broadcast_shapes(real.shape, imag.shape)
    r = t.empty(shape, dtype=real._dtype.to_complex(), device=real.device)
    with t.no_grad():
        rv = _part_view(r, 0, extra_dim=True)
        rv[..., 0].copy_(real)
        rv[..., 1].copy_(imag)
    r = autograd_hooks.record(r, "complex", (real, imag))
    return to_out(r, out, "complex")


def polar(abs, angle, *, out=None):  # noqa: A002
    """torch.polar: abs * (cos(angle) + i sin(angle))."""
    t = tl()
    tensor_arg(abs, "polar", "abs", 1)
    tensor_arg(angle, "polar", "angle", 2)
    _install_derivatives()
    if abs._dtype is not angle._dtype:
        raise RuntimeError(f"Expected object of scalar type {abs.dtype.torch_name} but got scalar type "
                           f"{angle.dtype.torch_name} for second argument (tensorlab.polar)")
    with t.no_grad():
        r = complex(abs * angle.cos(), abs * angle.sin())
    r = autograd_hooks.record(r, "polar", (abs, angle))
    return to_out(r, out, "polar")


# -- elementwise accessors -------------------------------------------------------------------------

def angle(input, *, out=None):
    """torch.angle: the argument atan2(imag, real) of complex values (a real result); for real
    inputs 0 or pi (NaN stays NaN)."""
    tensor_arg(input, "angle")
    if not _is_c(input):
        from . import copy_variants
        return copy_variants.angle(input, out=out)
    _install_derivatives()
    t = tl()
    with t.no_grad():
        r = t.atan2(_part_view(input, 1), _part_view(input, 0))
    r = autograd_hooks.record(r, "complex_angle", (input,))
    return to_out(r, out, "angle")


def _conj_values(x):
    t = tl()
    r = t.empty(x.shape, dtype=x.dtype, device=x.device)
    with t.no_grad():
        rv = _part_view(r, 0, extra_dim=True)
        xv = _part_view(x, 0, extra_dim=True)
        rv[..., 0].copy_(xv[..., 0])
        t.neg(xv[..., 1], out=rv[..., 1])
    return r


def conj(input):
    """torch.conj: the complex conjugate, computed eagerly (tensorlab has no lazy conjugate bit);
    a real tensor is returned as is."""
    tensor_arg(input, "conj")
    if not _is_c(input):
        return input
    _install_derivatives()
    return autograd_hooks.record(_conj_values(input), "complex_conj", (input,))


def conj_physical(input, *, out=None):
    tensor_arg(input, "conj_physical")
    if not _is_c(input):
        from . import copy_variants
        return copy_variants.conj_physical(input, out=out)
    _install_derivatives()
    r = autograd_hooks.record(_conj_values(input), "complex_conj", (input,))
    return to_out(r, out, "conj_physical")


def conj_physical_(input):
    tensor_arg(input, "conj_physical_")
    if _is_c(input):
        imag(input).neg_()
    return input


def resolve_conj(input):
    """Conjugation is eager in tensorlab: nothing to resolve."""
    return tensor_arg(input, "resolve_conj")


def is_conj(input):
    """Always False: tensorlab's conj computes a new tensor (no lazy conjugate bit)."""
    tensor_arg(input, "is_conj")
    return False


def sgn(input, *, out=None):
    """torch.sgn: z / |z| for complex (0 where z == 0), sign(x) for real tensors."""
    tensor_arg(input, "sgn")
    t = tl()
    if not _is_c(input):
        return t.sign(input, out=out)
    _install_derivatives()
    with t.no_grad():
        a = input.abs()
        r = t.where((a == 0).unsqueeze(-1), 0.0, view_as_real(input) / a.unsqueeze(-1))
        r = view_as_complex(r.contiguous())
    r = autograd_hooks.record(r, "complex_sgn", (input,))
    return to_out(r, out, "sgn")


def sgn_(self):
    tensor_arg(self, "sgn_")
    return self.copy_(sgn(self)) if _is_c(self) else self.sign_()


def is_complex(input):
    return tensor_arg(input, "is_complex").is_complex()


def prod_tree(input, dims, keepdim, out=None):
    """prod of a complex tensor over `dims` as a pairwise tree of complex products (CUDA: the
    reduce kernels have no complex product); differentiable through the products."""
    t = tl()
    dims = sorted(dims)
    x = input.to(input.dtype) if input.dtype.category == 3 else input.to(dtypes.get_default_complex_dtype())
    keep = [d for d in range(x.dim()) if d not in dims]
    kept_shape = [x.shape[d] for d in keep]
    y = x.permute(keep + dims).reshape(kept_shape + [-1])
    if y.shape[-1] == 0:
        y = t.ones(kept_shape + [1], dtype=x.dtype, device=x.device)
    while y.shape[-1] > 1:
        n = y.shape[-1]
        h = n // 2
        p = y.narrow(-1, 0, h) * y.narrow(-1, h, h)
        y = t.cat([p, y.narrow(-1, 2 * h, 1)], -1) if n % 2 else p
    r = y.reshape(kept_shape)
    if keepdim:
        for d in dims:
            r = r.unsqueeze(d)
    return to_out(r, out, "prod")


def cumprod_scan(input, dim, out=None):
    """cumprod of a complex tensor along `dim` as a Hillis-Steele scan of complex products (CUDA:
    the scan kernels have no complex product); differentiable through the products."""
    t = tl()
    y = input
    n = y.shape[dim] if y.dim() else 1
    k = 1
    while k < n:
        y = t.cat([y.narrow(dim, 0, k), y.narrow(dim, k, n - k) * y.narrow(dim, 0, n - k)], dim)
        k *= 2
    return to_out(y if y is not input else y.clone(), out, "cumprod")


# -- dtype shorthands ------------------------------------------------------------------------------

def cfloat(self, memory_format=None):
    return self.to(dtypes.complex64) if memory_format is None else self.to(dtypes.complex64,
                                                                             memory_format=memory_format)


def cdouble(self, memory_format=None):
    return self.to(dtypes.complex128) if memory_format is None else self.to(dtypes.complex128,
                                                                              memory_format=memory_format)


def chalf(self, memory_format=None):
    raise TypeError("chalf(): tensorlab has no complex32 (ComplexHalf) dtype (torch's is experimental); use "
                    "x.cfloat() for complex64 or x.cdouble() for complex128")


# -- gradients ------------------------------------------------------------------------------------

_INSTALLED = False
# derivative-table rows whose formula is f'(x) * grad with a holomorphic f: for complex values
# torch's backward is conj(f'(x)) * grad = conj(f'(x) * conj(grad))
HOLOMORPHIC = ("neg", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "square",
               "reciprocal", "sin", "cos", "tan", "tanh", "sigmoid", "mul", "div", "true_divide", "pow", "matmul",
               "mm", "bmm", "mv", "dot", "prod", "cumprod", "addcmul", "addcdiv", "addmm", "baddbmm", "addmv",
               "linear", "einsum", "outer", "kron", "lerp")


def _conj_wrapped(bw):
    def backward(ctx, g):
        if not _is_c(g):
            return bw(ctx, g)
        res = bw(ctx, conj(g))
        return tuple(conj(r) if _is_c(r) else r for r in res)
    return backward


def _install_derivatives():
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    from ..autograd import derivatives as D
    t = tl()

    def real_bw(c, g):
        return (t.complex(g, t.zeros_like(g)),)

    def imag_bw(c, g):
        return (t.complex(t.zeros_like(g), g),)

    def angle_bw(c, g):
        z = D._x(c)
        a2 = view_as_real(z).pow(2).sum(-1)
        # grad * i z / |z|^2, 0 where z == 0 (torch's angle_backward)
        iz = t.complex(-imag(z), real(z))
        gg = t.where(a2 == 0, 0.0, g / t.where(a2 == 0, 1.0, a2))
        return (iz * gg,)

    def abs_bw(c, g):
        x = D._x(c)
        if _is_c(x):
            return (sgn(x) * g,)
        return (g * x.sign(),)

    def sgn_bw(c, g):
        # torch's sgn_backward: (grad - Re(grad * conj(sgn)) * sgn) / |x|, 0 where x == 0
        x = D._x(c)
        s = c.result()
        a = x.abs()
        r = (g - real(g * conj(s)) * s) / t.where(a == 0, 1.0, a)
        return (_zero_where(r, a == 0),)

    D.DERIVATIVES.update({
        "complex_real": D.Derivative(real_bw),
        "complex_imag": D.Derivative(imag_bw),
        "view_as_real": D.Derivative(lambda c, g: (view_as_complex(g.contiguous()),)),
        "view_as_complex": D.Derivative(lambda c, g: (view_as_real(g).clone(),)),
        "complex": D.Derivative(lambda c, g: (real(g).clone(), imag(g).clone())),
        "complex_conj": D.Derivative(lambda c, g: (conj(g),)),
        "complex_angle": D.Derivative(angle_bw, save=(0,)),
        "complex_sgn": D.Derivative(sgn_bw, save=(0,), result=True),
        "polar": D.Derivative(_polar_bw, result=True),
    })
    old_abs = D.DERIVATIVES["abs"]
    D.DERIVATIVES["abs"] = D.Derivative(abs_bw, save=old_abs.save, name=old_abs.name)
    for name in HOLOMORPHIC:
        d = D.DERIVATIVES.get(name)
        if d is not None and not getattr(d.backward, "_complex_wrapped", False):
            d.backward = _conj_wrapped(d.backward)
            d.backward._complex_wrapped = True


def _zero_where(r, mask):
    t = tl()
    return view_as_complex(t.where(mask.unsqueeze(-1), 0.0, view_as_real(r)).contiguous())


def _polar_bw(c, g):
    # z = abs * e^{i angle}: dz/d abs = sgn(z) (e^{i angle}), dz/d angle = i z; a real input's
    # gradient is Re(grad * conj(dz/dx)): Re(grad * conj(sgn z)) and Im(grad * conj(z))
    r = c.result()
    return (real(g * conj(sgn(r))).clone(), imag(g * conj(r)).clone())


METHODS = {
    "real": property(real, _set_real), "imag": property(imag, _set_imag),
    "conj": conj, "conj_physical": conj_physical, "conj_physical_": conj_physical_, "resolve_conj": resolve_conj,
    "is_conj": is_conj, "angle": angle, "sgn": sgn, "sgn_": sgn_, "cfloat": cfloat, "cdouble": cdouble,
    "chalf": chalf,
}
FUNCTIONS = ("real", "imag", "view_as_real", "view_as_complex", "complex", "polar", "angle", "conj",
             "conj_physical", "conj_physical_", "resolve_conj", "is_conj", "sgn", "is_complex")


# -- ops torch refuses on complex inputs (ordering, extremes, sorting): torch's exception and words --
_NI = NotImplementedError
_REFUSED = {
    # name: (module, exception class, torch's message)
    "max": ("reduction", _NI, '"max_all" not implemented for \'{t}\''),
    "min": ("reduction", _NI, '"min_all" not implemented for \'{t}\''),
    "amax": ("reduction", _NI, '"max_values_cpu" not implemented for \'{t}\''),
    "amin": ("reduction", _NI, '"min_values_cpu" not implemented for \'{t}\''),
    "argmax": ("reduction", RuntimeError, "argmax(): does not support complex input"),
    "argmin": ("reduction", RuntimeError, "argmin(): does not support complex input"),
    "sort": ("shape", RuntimeError, "Sort does not support complex dtypes on CPU"),
    "argsort": ("shape", RuntimeError, "Sort does not support complex dtypes on CPU"),
    "msort": ("math_composites", RuntimeError, "Sort does not support complex dtypes on CPU"),
    "topk": ("shape", RuntimeError, "topk does not support complex dtypes on CPU"),
    "kthvalue": ("shape", _NI, '"kthvalue_cpu" not implemented for \'{t}\''),
    "median": ("shape", _NI, '"median_cpu" not implemented for \'{t}\''),
    "nanmedian": ("shape", _NI, '"median_cpu" not implemented for \'{t}\''),
    "cummax": ("scans_quantiles", _NI, '"cummax_cpu" not implemented for \'{t}\''),
    "cummin": ("scans_quantiles", _NI, '"cummin_cpu" not implemented for \'{t}\''),
    "aminmax": ("math_composites", _NI, '"aminmax_cpu" not implemented for \'{t}\''),
    "fmax": ("math_composites", RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": ("math_composites", RuntimeError, "fmin not implemented for complex tensors."),
    "heaviside": ("math_composites", RuntimeError, "heaviside is not yet implemented for complex tensors."),
    "signbit": ("math_composites", _NI, "signbit is not implemented for complex tensors."),
    "isneginf": ("math_composites", RuntimeError, "isneginf does not support complex inputs."),
    "isposinf": ("math_composites", RuntimeError, "isposinf does not support complex inputs."),
    "frac": ("math_composites", _NI, '"frac_cpu" not implemented for \'{t}\''),
    "unique": ("combinatorics", _NI, '"unique" not implemented for \'{t}\''),
    "searchsorted": ("combinatorics", _NI, '"searchsorted_out_cpu" not implemented for \'{t}\''),
    "histc": ("combinatorics", _NI, '"aminmax_cpu" not implemented for \'{t}\''),
    "bincount": ("combinatorics", _NI, '"bincount_cpu" not implemented for \'{t}\''),
}


def _refusing(name, fn, cls, msg):
    @functools.wraps(fn)  # fn's signature for inspect (stubs, the keyword audit); its docstring via _docs
    def f(*args, **kwargs):
        for x in args[:2]:
            if _is_c(x):
                raise cls(msg.format(t=x._dtype.torch_name) + f" (tensorlab.{name} got a tensorlab.{x._dtype.name} "
                          "tensor; order the values by .abs() or .real first)")
        return fn(*args, **kwargs)
    f.__name__ = name
    return f


def _install_refusals():
    import importlib
    from ..tensor import Tensor as _T
    for name, (mod, cls, msg) in _REFUSED.items():
        m = importlib.import_module(f"{__package__}.{mod}")
        fn = getattr(m, name, None)
        if fn is None:
            continue
        g = _refusing(name, fn, cls, msg)
        globals()[name] = g
        FUNCTIONS_REFUSING.append(name)
        meth = getattr(_T, name, None) or getattr(m, "METHODS", {}).get(name)
        if meth is not None:
            METHODS[name] = _refusing(name, meth, cls, msg)


FUNCTIONS_REFUSING = []
_install_refusals()
FUNCTIONS = FUNCTIONS + tuple(FUNCTIONS_REFUSING)
