"""Complex operands on CUDA: the elementwise primitives' complex compute path (kernels/complex.cu,
one functor per kernel name of kernel_table.COMPLEX_ELEMENTWISE) and the helpers that let the
real-dtype kernels move complex data.

A complex tensor's storage is (real, imaginary) pairs, so copies, fills, `where` and `masked_fill`
run the existing real kernels over its (..., 2) real view (`parts`); converting a real operand to
complex writes its real parts and zero imaginary parts. Only arithmetic needs complex.cu.
"""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ...layout import Layout, expand_strides
from . import launch as K

_STRUCT = {}


def is_complex(dtype):
    return dtype.category == 3


def parts(op, extra_dim=True):
    """The (..., 2) float view of a complex launch operand (extra_dim False: the real parts only)."""
    op = K.operand(op)
    lay = op.layout
    shape, stride = tuple(lay.shape), tuple(2 * s for s in lay.stride)
    if extra_dim:
        shape, stride = shape + (2,), stride + (1,)
    return K._operand_of(op.buffer, Layout(shape, stride, 2 * lay.offset), op.dtype.to_real())


def imag_parts(op):
    op = K.operand(op)
    lay = op.layout
    return K._operand_of(op.buffer, Layout(tuple(lay.shape), tuple(2 * s for s in lay.stride), 2 * lay.offset + 1),
                         op.dtype.to_real())


def copy(dst, src, copy_real):
    """dst[...] = src where either is complex; copy_real is memory.copy for real operands."""
    from .memory import fill
    d, s = K.operand(dst), K.operand(src)
    if is_complex(d.dtype) and is_complex(s.dtype):
        copy_real(parts(d), parts(s))
    elif is_complex(d.dtype):  # real -> complex: the real parts, zero imaginary parts
        copy_real(parts(d, False), s)
        fill(imag_parts(d), 0)
    else:  # complex -> real: the real parts (the front end warned)
        copy_real(d, parts(s, False))


def fill(dst, value, fill_real):
    v = complex(value)
    d = K.operand(dst)
    fill_real(parts(d, False), v.real)
    fill_real(imag_parts(d), v.imag)


def _scalar(v, part):
    """A Python number as the kernel's tl::complex<part> argument (a packed struct)."""
    np_part = np.float32 if part == "float" else np.float64
    dt = _STRUCT.get(part)
    if dt is None:
        dt = _STRUCT[part] = np.dtype({"names": ["re", "im"], "formats": [np_part, np_part]}, align=True)
    c = complex(v)
    r = np.zeros((), dt)
    r["re"], r["im"] = c.real, c.imag
    return r[()]


def _layout(p, k):
    return K.strided_layout((), (), p.index) if p.contiguous else K.strided_layout(p.shape, p.strides[k], p.index)


def _at(x, shape, compute, device, temps):
    """Tensor x as a complex launch operand of `compute` broadcast to `shape` (a converted copy when
    its dtype differs)."""
    from .memory import copy as mcopy, temp
    op = K.operand(x)
    if op.dtype is not compute:
        t = temp(tuple(op.layout.shape), compute, device)
        temps.append(t)
        mcopy(t, op)
        op = t
    lay = op.layout
    if tuple(lay.shape) != tuple(shape):
        lay = Layout(tuple(shape), tuple(expand_strides(lay.shape, lay.stride, shape)), lay.offset)
        op = K._operand_of(op.buffer, lay, op.dtype)
    return op


def _result_dtype(prim, op, compute):
    from ...kernel_table import COMPLEX_ELEMENTWISE
    res = COMPLEX_ELEMENTWISE[prim][op][1]
    return compute if res == "C" else (compute.to_real() if res == "R" else dtypes.bool_)


def _launch(prim, op, out, xs, compute):
    """out = op(*xs) over complex `compute`; xs are tensors/operands or Python numbers."""
    from ...kernel_table import COMPLEX_ELEMENTWISE, complex_expr
    from .memory import copy as mcopy, retire, temp
    if op not in COMPLEX_ELEMENTWISE[prim]:
        raise RuntimeError(f"CUDA elementwise {prim} {op!r} has no complex kernel (complex.cu); tensorlab runs "
                           f"{sorted(COMPLEX_ELEMENTWISE[prim])} on complex tensors on CUDA")
    o = K.operand(out)
    shape = tuple(o.layout.shape)
    device = o.buffer.device
    part = "float" if compute is dtypes.complex64 else "double"
    want = _result_dtype(prim, op, compute)
    temps = []
    target = o
    if o.dtype is not want:
        target = temp(shape, want, device)
        temps.append(target)
    try:
        tensors = [_at(x, shape, compute, device, temps) for x in xs if not isinstance(x, (bool, int, float, complex))]
        p = K.plan(target, *tensors)
        if p.n:
            expr = complex_expr(prim, op, part, p.index)
            if prim == "unary":
                args = (p.ptrs[0], p.ptrs[1], p.count, _layout(p, 0), _layout(p, 1))
            else:
                ptrs, scal, flags, lays, k = [], [], [], [], 1
                for x in xs:
                    if isinstance(x, (bool, int, float, complex)):  # by value; its pointer and layout unused
                        ptrs.append(p.ptrs[0])
                        scal.append(_scalar(x, part))
                        flags.append(np.int32(1))
                        lays.append(_layout(p, 0))
                    else:
                        ptrs.append(p.ptrs[k])
                        scal.append(_scalar(0, part))
                        flags.append(np.int32(0))
                        lays.append(_layout(p, k))
                        k += 1
                args = (p.ptrs[0], ptrs[0], ptrs[1], scal[0], scal[1], flags[0], flags[1], p.count,
                        _layout(p, 0), lays[0], lays[1])
            K.launch("complex.cu", expr, p.device, args, n=p.n)
        if target is not o:
            mcopy(o, target)
    finally:
        for t in temps:
            retire(t.buffer)


def unary(out, op, x, compute, **params):
    if params:
        raise RuntimeError(f"CUDA complex unary {op!r}: parameters {sorted(params)} are not supported for complex "
                           "tensors")
    _launch("unary", op, out, (x,), compute)


def binary(out, op, a, b, compute, **params):
    alpha = params.pop("alpha", 1)
    if params:
        raise RuntimeError(f"CUDA complex binary {op!r}: parameters {sorted(params)} are not supported for complex "
                           "tensors")
    if alpha != 1 and op in ("add", "sub"):
        if isinstance(b, (bool, int, float, complex)):
            b = b * alpha
        else:
            from .memory import retire, temp
            o = K.operand(out)
            t = temp(tuple(K.operand(b).layout.shape), compute, o.buffer.device)
            try:
                _launch("binary", "mul", t, (b, alpha), compute)
                _launch("binary", op, out, (a, t), compute)
            finally:
                retire(t.buffer)
            return
    _launch("binary", op, out, (a, b), compute)


def ternary(out, op, a, b, c, compute, ternary_real, **params):
    """where / masked_fill over the real views; addcmul, addcdiv and lerp as complex binary steps."""
    from .memory import retire, temp
    o = K.operand(out)
    shape = tuple(o.layout.shape)
    device = o.buffer.device
    if op in ("where", "masked_fill"):
        temps = []
        try:
            cond, vals = (a, (b, c)) if op == "where" else (b, (a, c))
            vv = []
            for v in vals:
                if isinstance(v, (bool, int, float, complex)):
                    t = temp(shape, compute, device)
                    temps.append(t)
                    fill(t, v, _fill_real())
                    vv.append(t)
                else:
                    vv.append(_at(v, shape, compute, device, temps))
            co = K.operand(cond)
            cl = co.layout
            cexp = tuple(expand_strides(cl.shape, cl.stride, shape)) if tuple(cl.shape) != shape else tuple(cl.stride)
            cond2 = K._operand_of(co.buffer, Layout(shape + (2,), cexp + (0,), cl.offset), co.dtype)
            real = compute.to_real()
            target = o if o.dtype is compute else temp(shape, compute, device)
            if target is not o:
                temps.append(target)
            if op == "where":
                ternary_real(parts(target), "where", cond2, parts(vv[0]), parts(vv[1]), real)
            else:
                ternary_real(parts(target), "where", cond2, parts(vv[1]), parts(vv[0]), real)
            if target is not o:
                from .memory import copy as mcopy
                mcopy(o, target)
        finally:
            for t in temps:
                retire(t.buffer)
        return
    value = params.get("value", 1)
    t = temp(shape, compute, device)
    try:
        if op == "addcmul":  # a + value * b * c
            _launch("binary", "mul", t, (b, c), compute)
            _launch("binary", "mul", t, (t, value), compute)
            _launch("binary", "add", out, (a, t), compute)
        elif op == "addcdiv":  # a + value * b / c
            _launch("binary", "div_true", t, (b, c), compute)
            _launch("binary", "mul", t, (t, value), compute)
            _launch("binary", "add", out, (a, t), compute)
        elif op == "lerp":  # a + c * (b - a)
            _launch("binary", "sub", t, (b, a), compute)
            _launch("binary", "mul", t, (t, c), compute)
            _launch("binary", "add", out, (a, t), compute)
        else:
            raise RuntimeError(f"CUDA ternary {op!r} is not supported for complex tensors (tensorlab runs where, "
                               "masked_fill, addcmul, addcdiv and lerp on complex CUDA tensors)")
    finally:
        retire(t.buffer)


def _fill_real():
    from .memory import fill as f
    return f


# -- data movement: once over the real parts, once over the imaginary parts ------------------------
# These primitives only move (or add) elements, so a complex operand is the pair of its real and
# imaginary part views (same shape, doubled strides): two launches of the real kernels.
SPLIT = ("cat", "stack", "flip", "roll", "triangle", "gather", "scatter", "index_select", "index_fill", "masked_select",
         "index", "index_put")


def _part_of(x, k, value=False):
    """Argument x for the pass over part k (0 real, 1 imaginary): complex operands as that part's
    view; an element value (value=True) as that part of the number; anything else as it is."""
    if isinstance(x, (list, tuple)):
        return type(x)(_part_of(v, k) for v in x)
    if isinstance(x, (bool, int, float, complex)):
        if not value or isinstance(x, bool):
            return x
        return complex(x).imag if k else complex(x).real
    if x is None or isinstance(x, str):
        return x
    op = getattr(x, "_meta", None) is not None or isinstance(x, K.Operand)
    if op:
        o = K.operand(x)
        if is_complex(o.dtype):
            return parts(o, False) if k == 0 else imag_parts(o)
    return x


def _has_complex(x):
    if isinstance(x, (list, tuple)):
        return any(_has_complex(v) for v in x)
    if getattr(x, "_meta", None) is not None or isinstance(x, K.Operand):
        return is_complex(K.operand(x).dtype)
    return False


def _flat_roll(fn, out, x, shifts):
    """roll of the flattened complex tensor: the (n, 2) real view of contiguous data, rolled along dim 0."""
    from ...layout import contiguous_strides
    from .memory import copy as mcopy, retire, temp
    o, a = K.operand(out), K.operand(x)
    shape = tuple(a.layout.shape)
    n = 1
    for v in shape:
        n *= v
    staged = None
    if tuple(a.layout.stride) != tuple(contiguous_strides(shape)):
        a = staged = temp(shape, a.dtype, a.buffer.device)
        mcopy(staged, K.operand(x))
    try:
        real = a.dtype.to_real()
        o2 = K._operand_of(o.buffer, Layout((n, 2), (2, 1), 2 * o.layout.offset), real)
        a2 = K._operand_of(a.buffer, Layout((n, 2), (2, 1), 2 * a.layout.offset), real)
        return fn(o2, a2, [shifts[0]], [0])
    finally:
        if staged is not None:
            retire(staged.buffer)


def _split(name, fn):
    def f(*args, **kwargs):
        if not _has_complex(args[:2]):
            return fn(*args, **kwargs)
        if name == "roll" and (args[3] if len(args) > 3 else kwargs.get("dims")) is None:
            return _flat_roll(fn, args[0], args[1], args[2])
        if name == "scatter" and (kwargs.get("reduce") or (len(args) > 4 and args[4])) not in (None, "add", "sum"):
            raise RuntimeError("scatter: a multiplying reduction is not supported for complex CUDA tensors "
                               "(tensorlab splits complex data movement into real and imaginary parts)")
        r = None
        for k in (0, 1):
            r = fn(*(_part_of(a, k, _scalar_value_arg(name, i)) for i, a in enumerate(args)), **kwargs)
        return r
    f.__name__, f.__doc__ = name, fn.__doc__
    return f


def nonzero_mask(x):
    """A bool scratch operand x != 0 for a complex operand (count_nonzero/all/any; the caller retires it)."""
    from .memory import temp
    a = K.operand(x)
    b = temp(tuple(a.layout.shape), dtypes.bool_, a.buffer.device)
    _launch("binary", "ne", b, (a, 0), a.dtype)
    return b


def _scalar_value_arg(name, i):
    """Whether positional argument i of primitive `name` is an element value (split into parts)."""
    return (name, i) in (("index_fill", 3), ("scatter", 3))


def _masked(name, fn, pos):
    """A primitive reading only whether argument `pos` is nonzero (nonzero, mask_count): over x != 0."""
    def f(*args, **kwargs):
        if len(args) <= pos or not _has_complex(args[pos]):
            return fn(*args, **kwargs)
        from .memory import retire
        b = nonzero_mask(args[pos])
        try:
            return fn(*args[:pos], b, *args[pos + 1:], **kwargs)
        finally:
            retire(b.buffer)
    f.__name__, f.__doc__ = name, fn.__doc__
    return f


def split_complex_primitives(namespace):
    """Wrap the data-movement primitives of the CUDA backend namespace for complex operands."""
    for name, pos in (("nonzero", 1), ("mask_count", 0)):
        fn = namespace.get(name)
        if fn is not None and not getattr(fn, "_complex_split", False):
            w = _masked(name, fn, pos)
            w._complex_split = True
            namespace[name] = w
    for name in SPLIT:
        fn = namespace.get(name)
        if fn is not None and not getattr(fn, "_complex_split", False):
            w = _split(name, fn)
            w._complex_split = True
            namespace[name] = w
