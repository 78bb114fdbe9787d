"""Reductions: sum, mean, prod, amax/amin, max/min (values and indices), argmax/argmin,
var/std, norm, logsumexp, all/any, count_nonzero, cumsum/cumprod, softmax/log_softmax.

The composites (mean, var/std, norm, logsumexp, softmax) are ops of the fused `reduce` and
`softmax` primitives rather than chains of elementwise ops: one pass over the input with no
input-sized temporaries on the device, as torch's own kernels do (MeanOps, WelfordOps, NormOps,
the softmax kernels), and max-subtraction inside the kernel keeps softmax/logsumexp stable."""
from __future__ import annotations

import builtins as _b
import operator

from .. import autograd_hooks, backends, dtypes, layout as L, return_types
from ..tensor import Tensor
from . import registry
from ._common import check_cast, check_writable, empty_tensor, output, outputs, pinned
from .elementwise import _grad_enabled, _pin_of
from .registry import ALWAYS_BOOL, INT_TO_FLOAT, KEEP, NONE, OpDef

_F = "reduction"
_cpu = backends.cpu
registry.register(
    OpDef("sum", _F, "reduce", NONE, info={"op": "sum", "integral": "int64"}),
    OpDef("prod", _F, "reduce", NONE, info={"op": "prod", "integral": "int64"}),
    OpDef("mean", _F, "reduce", NONE, info={"op": "mean", "requires": "floating"}),
    OpDef("amax", _F, "reduce", KEEP, info={"op": "amax"}),
    OpDef("amin", _F, "reduce", KEEP, info={"op": "amin"}),
    OpDef("max", _F, "arg_reduce", KEEP, info={"op": "max", "full": "reduce:amax", "other": "maximum"}),
    OpDef("min", _F, "arg_reduce", KEEP, info={"op": "min", "full": "reduce:amin", "other": "minimum"}),
    OpDef("argmax", _F, "arg_reduce", NONE, differentiable=False, info={"op": "max", "out": "int64"}),
    OpDef("argmin", _F, "arg_reduce", NONE, differentiable=False, info={"op": "min", "out": "int64"}),
    OpDef("var", _F, "reduce", KEEP, info={"op": "var", "requires": "floating"}),
    OpDef("std", _F, "reduce", KEEP, info={"op": "std", "requires": "floating"}),
    OpDef("norm", _F, "reduce", KEEP, info={"op": "norm", "requires": "floating"}),
    OpDef("foreach_norm", _F, "foreach_norm", KEEP, differentiable=False, info={"requires": "floating"}),
    OpDef("logsumexp", _F, "reduce", INT_TO_FLOAT, info={"op": "logsumexp"}),
    OpDef("all", _F, "reduce", ALWAYS_BOOL, differentiable=False, info={"op": "all", "uint8": "uint8"}),
    OpDef("any", _F, "reduce", ALWAYS_BOOL, differentiable=False, info={"op": "any", "uint8": "uint8"}),
    OpDef("count_nonzero", _F, "reduce", NONE, differentiable=False, info={"op": "count_nonzero", "out": "int64"}),
    OpDef("cumsum", _F, "cumulative", NONE, info={"op": "sum", "integral": "int64"}),
    OpDef("cumprod", _F, "cumulative", NONE, info={"op": "prod", "integral": "int64"}),
    OpDef("cumsum_", _F, "cumulative", KEEP, inplace=True, info={"op": "sum"}),
    OpDef("cumprod_", _F, "cumulative", KEEP, inplace=True, info={"op": "prod"}),
    OpDef("softmax", _F, "softmax", KEEP, info={"log": False, "requires": "floating"}),
    OpDef("log_softmax", _F, "softmax", KEEP, info={"log": True, "requires": "floating"}),
)

# torch's C++ type names, as its "Expected out tensor to have dtype ..." messages print them
C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
            "uint8": "unsigned char", "bool": "bool"}
_INF = float("inf")


# -- helpers shared with linalg.py and shape.py ----------------------------------------------
def check_tensor(x, op, name="input", pos=1):
    """`x` pinned (storage and layout from one read of its metadata, so a concurrent resize_
    cannot change it between the shape checks and the kernel). Ops compute on the pinned
    tensor and record autograd with the caller's tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(x).__name__}")
    return pinned(x)


def refuse_out_grad(op, out, *inputs):
    """torch refuses out= while grad mode is on and an input (or out) requires grad, before any
    other check and so before anything is written: out keeps its values, shape and version."""
    if out is None:
        return
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if _grad_enabled() and _b.any(isinstance(t, Tensor) and t._requires_grad for t in inputs + outs):
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")


def check_out_dtype(out, dtype):
    """Ops whose out= must have exactly the result's dtype (torch refuses a cast there)."""
    if isinstance(out, Tensor) and out._dtype is not dtype:
        raise RuntimeError(f"Expected out tensor to have dtype {C_NAMES[dtype.name]}, but got "
                           f"{C_NAMES[out._dtype.name]} instead")


def wrap_dims(dims, ndim):
    """A sequence of dims wrapped, with torch's error for a repeated dim (in list order)."""
    seen = []
    for d in dims:
        w = L.wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return seen


def reduce_dims(x, dim):
    """`dim` (None, an int, or a sequence; empty means every dim) as a sorted tuple. A 0-dim
    tensor accepts dim 0 / -1 and has nothing to reduce."""
    nd = len(x._meta.layout.shape)
    if dim is None:
        return tuple(range(nd))
    if isinstance(dim, (tuple, list)):
        if not dim:
            return tuple(range(nd))
        dims = wrap_dims(dim, nd)
    else:
        dims = (L.wrap_dim(dim, nd),)
    return tuple(sorted(dims)) if nd else ()


def reduced_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _run(op, name, src, x, dims, keepdim, dtype, out, arg=None):
    """Reduce the pinned `x` into a new or out= result; autograd sees the caller's `src`."""
    o = output(out, reduced_shape(x._meta.layout.shape, dims, keepdim), dtype, x.device, name, (x,))
    x._backend.reduce(o.tensor, x, op, dims, arg)
    return autograd_hooks.record(o.finish(), name, (src,), dim=dims, keepdim=keepdim, arg=arg)


def _accumulating_dtype(x, dtype, out):
    """sum/prod/cumsum: dtype=, else out's dtype, else int64 for integral and bool inputs."""
    if dtype is not None:
        dt = dtypes.as_dtype(dtype)
        check_out_dtype(out, dt)
        return dt
    if isinstance(out, Tensor):
        return out._dtype
    return x._dtype if x._dtype.is_floating_point or x._dtype.category == 3 else dtypes.int64


def _cast_first(input, x, dt):
    """torch's sum/prod/cumsum/cumprod with dtype=: the input is cast to dtype before the op (its
    docs: 65536 summed in float16 is inf, not 65504). Returns (autograd source, pinned operand)."""
    if dt is x._dtype:
        return input, x
    c = input.to(dt)  # from the caller's tensor, so autograd reaches it; the op reads only c after this
    return c, pinned(c)


def check_nonempty(x, dims, name, full, exc=RuntimeError):
    """Reductions without an identity (amax, max, argmax, ...) refuse empty slices."""
    if x.numel() == 0:
        if full:
            raise exc(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. Specify the "
                      "reduction dim with the 'dim' argument.")
        shape = x._meta.layout.shape
        for d in dims:
            if shape[d] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


# -- sum, prod, mean ---------------------------------------------------------------------------
_ALL_DIMS = tuple(tuple(range(n)) for n in range(L.MAX_DIMS + 1))  # reduce_dims(x, None) by rank
_KEPT = tuple((1,) * n for n in range(L.MAX_DIMS + 1))  # a full reduction's keepdim shape by rank
_I64 = dtypes.int64


def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001
    if dim is None and dtype is None and out is None and isinstance(input, Tensor):
        # the full sum as one straight line: what the general path below does for these arguments
        meta = input._meta
        dims = _ALL_DIMS[len(meta[1][0])]
        dt = input._dtype
        if not (dt.is_floating_point or dt.category == 3):
            dt = _I64
        dev = meta[0].device
        t = empty_tensor(_KEPT[len(dims)] if keepdim else (), dt, dev)
        x = input._pin  # pinned(input, meta), remembered (elementwise._pin_of)
        if x is None or x._meta is not meta or x._vc is not input._vc or x._dtype is not input._dtype:
            x = _pin_of(input, meta)
        (_cpu if dev.type == "cpu" else backends.get(dev)).reduce(t, x, "sum", dims, None)
        if input._requires_grad or autograd_hooks._slow:
            return autograd_hooks.record(t, "sum", (input,), dim=dims, keepdim=keepdim, arg=None)
        return t
    refuse_out_grad("sum", out, input)
    x = check_tensor(input, "sum")
    dt = _accumulating_dtype(x, dtype, out)
    src, x = _cast_first(input, x, dt) if dtype is not None else (input, x)
    return _run("sum", "sum", src, x, reduce_dims(x, dim), keepdim, dt, out)


def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    refuse_out_grad("prod", out, input)
    x = check_tensor(input, "prod")
    dt = _accumulating_dtype(x, dtype, out)
    src, x = _cast_first(input, x, dt) if dtype is not None else (input, x)
    if dt.category == 3 and x.device.type != "cpu":  # complex on CUDA: a tree of complex products
        from .complex_ops import prod_tree
        return prod_tree(src, reduce_dims(x, dim), keepdim, out)
    return _run("prod", "prod", src, x, reduce_dims(x, dim), keepdim, dt, out)


def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    refuse_out_grad("mean", out, input)
    x = check_tensor(input, "mean")
    dt = x._dtype if dtype is None else dtypes.as_dtype(dtype)
    if not (dt.is_floating_point or dt.category == 3):
        which = "Input" if dtype is None else "Optional"
        raise RuntimeError(f"mean(): could not infer output dtype. {which} dtype must be either a floating point or "
                           f"complex dtype. Got: {dt.torch_name}")
    return _run("mean", "mean", input, x, reduce_dims(x, dim), keepdim, dt, out)


# -- amax, amin, max, min, argmax, argmin ------------------------------------------------------
def _extreme_all(op, name, src, x, dim, keepdim, out):
    refuse_out_grad(name, out, src)
    if isinstance(out, Tensor) and out._dtype is not x._dtype:
        raise RuntimeError(f"Expected the dtype for input and out to match, but got {x._dtype.torch_name} for "
                           f"input's dtype and {out._dtype.torch_name} for out's dtype.")
    full = dim is None or (isinstance(dim, (tuple, list)) and not dim)
    dims = reduce_dims(x, dim)
    check_nonempty(x, dims, name, full)
    return _run(op, name, src, x, dims, keepdim, x._dtype, out)


def amax(input, dim=(), keepdim=False, *, out=None):
    return _extreme_all("amax", "amax", input, check_tensor(input, "amax"), dim, keepdim, out)


def amin(input, dim=(), keepdim=False, *, out=None):
    return _extreme_all("amin", "amin", input, check_tensor(input, "amin"), dim, keepdim, out)


def out_pair(out, op):
    if out is None:
        return None, None
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(f"{op}(): argument 'out' must be a tuple of two Tensors (values, indices)")
    return out


def _with_indices(op, src, x, dim, keepdim, out, result_type):
    """max/min along one dim: (values, indices) of the first extreme, NaN counting as extreme."""
    refuse_out_grad(op, out, src)
    dims = reduce_dims(x, operator.index(dim))
    check_nonempty(x, dims, op, False)
    vo, io = out_pair(out, op)
    check_out_dtype(vo, x._dtype)
    check_out_dtype(io, dtypes.int64)
    shape = reduced_shape(x._meta.layout.shape, dims, keepdim)
    o = outputs(op, [(vo, shape, x._dtype, x.device), (io, shape, dtypes.int64, x.device)], (x,))
    x._backend.arg_reduce(*o.tensors, x, op, dims[0] if dims else 0)
    values, indices = o.finish()
    values = autograd_hooks.record(values, op, (src,), dim=dims, keepdim=keepdim, indices=indices)
    return result_type(values, indices)


def _elementwise(name, a, b, out):
    from . import elementwise  # the binary max(a, b) is elementwise maximum/minimum
    fn = getattr(elementwise, name)
    return fn(a, b) if out is None else fn(a, b, out=out)


def max(input, dim=None, keepdim=False, *, other=None, out=None):  # noqa: A001
    """max(x) -> the largest value; max(x, dim, keepdim) -> (values, indices); max(x, other) ->
    elementwise maximum."""
    x = check_tensor(input, "max")
    if other is not None:  # max(x, other=y): torch's elementwise overload by keyword
        if dim is not None:
            raise TypeError("max() received an invalid combination of arguments: dim and other")
        dim = other
    if isinstance(dim, Tensor):
        return _elementwise("maximum", input, dim, out)
    if dim is None:
        return _extreme_all("amax", "max", input, x, None, False, out)
    return _with_indices("max", input, x, dim, keepdim, out, return_types.max)


def min(input, dim=None, keepdim=False, *, other=None, out=None):  # noqa: A001
    """min(x) -> the smallest value; min(x, dim, keepdim) -> (values, indices); min(x, other) ->
    elementwise minimum."""
    x = check_tensor(input, "min")
    if other is not None:  # min(x, other=y): torch's elementwise overload by keyword
        if dim is not None:
            raise TypeError("min() received an invalid combination of arguments: dim and other")
        dim = other
    if isinstance(dim, Tensor):
        return _elementwise("minimum", input, dim, out)
    if dim is None:
        return _extreme_all("amin", "min", input, x, None, False, out)
    return _with_indices("min", input, x, dim, keepdim, out, return_types.min)


def _arg(op, name, x, dim, keepdim, out):
    if x._dtype is dtypes.bool_:
        raise RuntimeError(f"{name}(): does not support bool input; convert it first, e.g. x.to(tensorlab.uint8)")
    check_out_dtype(out, dtypes.int64)
    nd = x.dim()
    if dim is None:
        check_nonempty(x, (), name, True, IndexError)
        shape = (1,) * nd if keepdim else ()
        o = output(out, shape, dtypes.int64, x.device, name, (x,))
        x._backend.arg_reduce(None, o.tensor, x, op, None)
        return autograd_hooks.record(o.finish(), name, (x,))
    dims = reduce_dims(x, operator.index(dim))
    check_nonempty(x, dims, name, False)
    o = output(out, reduced_shape(x._meta.layout.shape, dims, keepdim), dtypes.int64, x.device, name, (x,))
    x._backend.arg_reduce(None, o.tensor, x, op, dims[0] if dims else 0)
    return autograd_hooks.record(o.finish(), name, (x,))


def argmax(input, dim=None, keepdim=False, *, out=None):
    return _arg("max", "argmax", check_tensor(input, "argmax"), dim, keepdim, out)


def argmin(input, dim=None, keepdim=False, *, out=None):
    return _arg("min", "argmin", check_tensor(input, "argmin"), dim, keepdim, out)


# -- var, std ------------------------------------------------------------------------------------
def _correction(dim, unbiased, correction, op):
    if isinstance(dim, _b.bool):  # var(x, unbiased)
        if unbiased is not None:
            raise TypeError(f"{op}(): unbiased given twice")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}(): pass either unbiased or correction, not both")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    return dim, correction


def _moment(op, input, dim, unbiased, keepdim, correction, out, what="std and var"):
    """var/std (and var_mean/std_mean, which add the mean over the same dims): x, dims, result."""
    refuse_out_grad(op, out, input)
    x = check_tensor(input, op)
    if x._dtype.category == 3:  # complex: var(real) + var(imag), a real result (torch's mean |x - mean|^2)
        v = (_moment("var", input.real, dim, unbiased, keepdim, correction, None)[2]
             + _moment("var", input.imag, dim, unbiased, keepdim, correction, None)[2])
        r = v.sqrt() if op == "std" else v
        if out is not None:
            from ._composite import to_out
            r = to_out(r, out, op)
        return x, reduce_dims(x, _correction(dim, unbiased, correction, op)[0]), r
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"{what} only support floating point and complex dtypes; got {x._dtype.torch_name}"
                           f" (convert with .float())")
    dim, corr = _correction(dim, unbiased, correction, op)
    dims = reduce_dims(x, dim)
    return x, dims, _run(op, op, input, x, dims, keepdim, x._dtype, out, corr)


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance with Bessel's `correction` (default 1); `unbiased=False` means correction=0."""
    return _moment("var", input, dim, unbiased, keepdim, correction, out)[2]


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    return _moment("std", input, dim, unbiased, keepdim, correction, out)[2]


def _with_mean(op, input, dim, unbiased, keepdim, correction):
    x, dims, r = _moment(op, input, dim, unbiased, keepdim, correction, None, f"{op}_mean")
    return r, _run("mean", "mean", input, x, dims, keepdim, x._dtype, None)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over the same dims, a plain tuple as torch's; two passes of the reduce
    primitive, each differentiable on its own."""
    return _with_mean("var", input, dim, unbiased, keepdim, correction)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _with_mean("std", input, dim, unbiased, keepdim, correction)


# -- norm, logsumexp -----------------------------------------------------------------------------
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """Vector p-norm over `dim` (all dims when None): p = 2, 1, inf, -inf, 0 (count of nonzeros),
    any other float; 'fro' is the 2-norm over at most two dims."""
    refuse_out_grad("linalg_vector_norm", out, input)  # torch's name: norm is linalg.vector_norm there
    x = check_tensor(input, "norm")
    if x._dtype.category == 3 and p != "nuc":  # complex: the norm of the moduli (a real result, as torch)
        dt = None if dtype is None else dtypes.as_dtype(dtype)
        return norm(input.abs(), p, dim, keepdim, out=out, dtype=None if dt is None else dt.to_real())
    if isinstance(dim, int):
        dim = (dim,)
    if isinstance(p, str):
        if p == "nuc":  # the nuclear norm needs the SVD (tl.linalg, CPU): torch.norm's matrix_norm path
            from .linalg_composites import matrix_norm
            return matrix_norm(input, "nuc", (-2, -1) if dim is None else tuple(dim), keepdim, dtype=dtype, out=out)
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if dim is not None and len(dim) > 2:
            raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(str(d) for d in dim)}")
        p = 2
    elif isinstance(p, Tensor):
        p = p.item()
    p = float(p)
    if not x._dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {x._dtype.torch_name}")
    dt = x._dtype if dtype is None else dtypes.as_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: dtype should be floating point or complex, but got {dt.torch_name}")
    check_out_dtype(out, dt)
    dims = reduce_dims(x, dim)
    if p < 0 or p == _INF:
        shape = x._meta.layout.shape
        what = "inf" if p == _INF else ("-inf" if p == -_INF else f"{p:g}")
        if dim is None and x.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {what} norm on an empty tensor because the "
                               "operation does not have an identity")
        for d in dims:
            if shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {what} norm on the dimension {d} because "
                                   "this dimension is empty and the operation does not have an identity")
    return _run("norm", "norm", input, x, dims, keepdim, dt, out, p)


def foreach_norm(tensors, p=2.0):
    """The p-norm of each tensor, all of it, as one 1-D tensor (torch._foreach_norm, stacked):
    one backend call for the list, each norm computed exactly as norm(t, p). Every tensor must
    be a floating tensor of one dtype on one device (clip_grad_norm_'s common case); p a
    non-negative finite number, or inf with no empty tensor. Not recorded by autograd."""
    ts = list(tensors)
    if not ts:
        raise RuntimeError("foreach_norm: expected at least one tensor")
    ts = [check_tensor(t, "foreach_norm") for t in ts]  # pinned: one read of each one's metadata
    p = float(p)
    first = ts[0]
    dt, dev = first._dtype, first.device
    if not dt.is_floating_point:
        raise RuntimeError(f"foreach_norm: Expected a floating point tensor, got {dt.torch_name}")
    for t in ts:
        if t._dtype is not dt or t.device != dev:
            raise RuntimeError(f"foreach_norm: expected all tensors to have dtype {dt.torch_name} on {dev}, got "
                               f"{t._dtype.torch_name} on {t.device}: call norm() per tensor for mixed lists")
    if not (p >= 0) or (p == _INF and _b.any(t.numel() == 0 for t in ts)):
        raise RuntimeError(f"foreach_norm: order {p} needs p >= 0 (and no empty tensor for inf): call norm() "
                           "per tensor for the error torch gives there")
    res = empty_tensor((len(ts),), dt, dev)
    first._backend.foreach_norm(res, ts, p)
    return res


def logsumexp(input, dim, keepdim=False, *, out=None):
    """log(sum(exp(x))) over `dim`, computed as max + log(sum(exp(x - max))) so large inputs do
    not overflow; integral inputs give the default float dtype."""
    refuse_out_grad("logsumexp", out, input)
    x = check_tensor(input, "logsumexp")
    if isinstance(out, Tensor):
        if not out._dtype.is_floating_point:
            raise RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: "
                               f"{out._dtype.torch_name}")
        dt = out._dtype
    else:
        dt = x._dtype if x._dtype.is_floating_point else dtypes.get_default_dtype()
    return _run("logsumexp", "logsumexp", input, x, reduce_dims(x, dim), keepdim, dt, out)


# -- all, any, count_nonzero ---------------------------------------------------------------------
def _logical(op, input, dim, keepdim, out):
    x = check_tensor(input, op)
    if isinstance(out, Tensor):
        if out._dtype not in (dtypes.bool_, dtypes.uint8):
            raise RuntimeError(f"{op} only supports bool tensor for result, got: {out._dtype.torch_name}")
        dt = out._dtype
    else:
        dt = dtypes.uint8 if x._dtype is dtypes.uint8 else dtypes.bool_  # torch keeps uint8 for uint8 inputs
    return _run(op, op, input, x, reduce_dims(x, dim), keepdim, dt, out)


def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    return _logical("all", input, dim, keepdim, out)


def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    return _logical("any", input, dim, keepdim, out)


def count_nonzero(input, dim=None):
    x = check_tensor(input, "count_nonzero")
    return _run("count_nonzero", "count_nonzero", input, x, reduce_dims(x, dim), False, dtypes.int64, None)


# -- cumsum, cumprod -----------------------------------------------------------------------------
def _cumulative(op, name, input, dim, dtype, out):
    refuse_out_grad(name, out, input)
    x = check_tensor(input, name)
    d = L.wrap_dim(dim, x.dim())
    dt = _accumulating_dtype(x, dtype, out)
    src, x = _cast_first(input, x, dt) if dtype is not None else (input, x)
    if op == "prod" and dt.category == 3 and x.device.type != "cpu":  # complex on CUDA: a product scan
        from .complex_ops import cumprod_scan
        return cumprod_scan(src, d, out)
    o = output(out, x._meta.layout.shape, dt, x.device, name, (x,))
    x._backend.cumulative(o.tensor, x, op, d)
    return autograd_hooks.record(o.finish(), name, (src,), dim=d)


def _cumulative_(op, name, self, dim, dtype):
    if dtype is not None and dtypes.as_dtype(dtype) is not self._dtype:
        raise RuntimeError(f"Bad in-place call: input tensor dtype {C_NAMES[self._dtype.name]} and output tensor "
                           f"dtype {C_NAMES[dtypes.as_dtype(dtype).name]} should match")
    t = pinned(self)
    d = L.wrap_dim(dim, t.dim())
    if op == "prod" and t._dtype.category == 3 and t.device.type != "cpu":  # complex on CUDA: a product scan
        from .complex_ops import cumprod_scan
        return self.copy_(cumprod_scan(self.detach() if not self.requires_grad else self.clone(), d))
    if t._dtype is dtypes.bool_:  # torch: cumsum_ works in self's dtype, which has no kernel for bool...
        if t.dim():
            raise NotImplementedError(f'"{name[:-1]}" not implemented for \'Bool\' (convert first, e.g. '
                                      f'x.to(tensorlab.int64).{name}({dim}))')
        check_writable(t, name)  # ...but a 0-dim tensor is its own cumulative sum/product
        autograd_hooks.check_inplace(self, name)
        self._vc.bump()
        return autograd_hooks.record_inplace(self, name, (self,), dim=d)
    check_cast(_accumulating_dtype(t, None, None), t._dtype, name)
    check_writable(t, name)
    autograd_hooks.check_inplace(self, name)
    t._backend.cumulative(t, t, op, d)
    self._vc.bump()
    return autograd_hooks.record_inplace(self, name, (self,), dim=d)


def cumsum(input, dim, *, dtype=None, out=None):
    return _cumulative("sum", "cumsum", input, dim, dtype, out)


def cumprod(input, dim, *, dtype=None, out=None):
    return _cumulative("prod", "cumprod", input, dim, dtype, out)


def cumsum_(self, dim, *, dtype=None):
    return _cumulative_("sum", "cumsum_", self, dim, dtype)


def cumprod_(self, dim, *, dtype=None):
    return _cumulative_("prod", "cumprod_", self, dim, dtype)


# -- softmax, log_softmax ------------------------------------------------------------------------
def _softmax(name, log, input, dim, dtype):
    x = check_tensor(input, name)
    dt = x._dtype if dtype is None else dtypes.as_dtype(dtype)
    if not dt.is_floating_point:  # torch: its kernel has no integral instantiation
        raise NotImplementedError(f'"{name}" not implemented for \'{dt.torch_name}\' (compute in floating point: '
                                  f'pass dtype=tensorlab.float32)')
    d = L.wrap_dim(dim, x.dim())
    res = empty_tensor(x._meta.layout.shape, dt, x.device)
    x._backend.softmax(res, x, d, log)
    return autograd_hooks.record(res, name, (input,), dim=d)


def softmax(input, dim, dtype=None, *, out=None):
    """exp(x) / sum(exp(x)) along `dim`, stable for large inputs (the max is subtracted first)."""
    r = _softmax("softmax", False, input, dim, dtype)
    return r if out is None else _to_out(r, out, "softmax")


def log_softmax(input, dim, dtype=None, *, out=None):
    r = _softmax("log_softmax", True, input, dim, dtype)
    return r if out is None else _to_out(r, out, "log_softmax")


def _to_out(r, out, op):
    from ._composite import to_out
    return to_out(r, out, op)


FUNCTIONS = ("sum", "prod", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "std", "norm",
             "logsumexp", "all", "any", "count_nonzero", "cumsum", "cumprod", "softmax", "log_softmax", "var_mean",
             "std_mean")
METHODS = {name: globals()[name] for name in FUNCTIONS if not name.endswith("_mean")}  # torch: no x.var_mean()
METHODS.update(cumsum_=cumsum_, cumprod_=cumprod_)
